// The engine: runtime::Trainer (epochs, evaluation, selection, checkpoints, preemption, the
// run's statistics) and what every task's step shares (engine/detail/task_support.hpp).
#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <fstream>
#include <iterator>
#include <limits>
#include <span>
#include <sstream>
#include <thread>
#include <utility>

#include <halo/kernels/buffer.hpp>
#include <halo/kernels/error.hpp>
#include <halo/kernels/log.hpp>
#include <halo/runtime/detail/timing.hpp>
#include <halo/runtime/engine/checkpoint.hpp>
#include <halo/runtime/engine/detail/task_support.hpp>
#include <halo/runtime/engine/trainer.hpp>

namespace halo::runtime {

namespace {
/// The test hook of the stall watchdog's healthy case (docs/distributed.md):
/// HALO_TEST_SLOW_EPOCH=RANK:EPOCH:SECONDS makes rank RANK sleep SECONDS after training epoch
/// EPOCH, a long but healthy step the others wait for. Read here only.
void slow_epoch_hook(int rank, int epoch) {
  const char* v = std::getenv("HALO_TEST_SLOW_EPOCH");
  int r = -1, e = -1;
  double seconds = 0;
  if (v != nullptr && std::sscanf(v, "%d:%d:%lf", &r, &e, &seconds) == 3 && r == rank && e == epoch)
    std::this_thread::sleep_for(std::chrono::duration<double>(seconds));
}

using detail::Clock;
using detail::median;
using detail::seconds_since;
using kernels::Tensor;

}  // namespace

double Metrics::at(const std::string& name) const {
  if (const double* v = find(name)) return *v;
  std::string names;
  for (const Entry& e : m_entries) names += (names.empty() ? "" : ", ") + e.first;
  HALO_FAIL("metrics: no '" + name + "' (this task reports " + (names.empty() ? "none" : names) +
            ")");
}

void Task::unknown_counter(const std::string& name) {
  throw IoError("checkpoint: counter '" + name + "' is not this task's");
}

// ---- shared by the tasks (engine/detail/task.hpp) ----------------------------------------------

namespace detail {

/// Sums every parameter's gradient and `loss` over the ranks of `comm` in one all-reduce
/// through `flat` (device) / `host` (host-memory comm with device gradients), allocated once.
double allreduce_gradients(const kernels::Resources& res, Comm& comm,
                           const std::vector<nn::Parameter<float>*>& params, double loss,
                           Tensor<float>& flat, std::vector<float>& host, double& seconds) {
  if (comm.size() == 1) return loss;  // one rank: the sums are what it holds
  res.synchronize();
  const auto start = std::chrono::steady_clock::now();
  const kernels::Device dev = res.device();
  std::int64_t n = 1;
  for (const auto* p : params) n += p->grad.numel();
  kernels::ensure_shape(res, flat, n, 1);  // allocates on the first call only
  float* f = flat.data();
  std::int64_t at = 0;
  for (const auto* p : params) {
    kernels::copy_bytes_async(res, f + at, dev, p->grad.data(), dev, p->grad.bytes());
    at += p->grad.numel();
  }
  float total = static_cast<float>(loss);
  kernels::copy_bytes(res, f + at, dev, &total, kernels::Device::Cpu, sizeof total);
  if (comm.memory_device() == dev) {
    comm.allreduce(kernels::Span<float>(f, n), ReduceOp::Sum);  // in stream order on a device
  } else {
    host.resize(static_cast<std::size_t>(n));
    kernels::copy_bytes(res, host.data(), kernels::Device::Cpu, f, dev, flat.bytes());
    comm.allreduce(kernels::Span<float>(host.data(), n), ReduceOp::Sum);
    kernels::copy_bytes(res, f, dev, host.data(), kernels::Device::Cpu, flat.bytes());
  }
  at = 0;
  for (auto* p : params) {
    kernels::copy_bytes_async(res, p->grad.data(), dev, f + at, dev, p->grad.bytes());
    at += p->grad.numel();
  }
  kernels::copy_bytes(res, &total, kernels::Device::Cpu, f + at, dev, sizeof total);
  seconds += std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return total;
}

void reduce_epoch_counters(Comm& comm, EpochStats& s) {
  if (comm.size() == 1) return;
  std::vector<double> v = {static_cast<double>(s.exchange_bytes),
                           s.exchange_time_s,
                           s.exchange_exposed_s,
                           s.allreduce_time_s,
                           static_cast<double>(s.sampling_bytes),
                           static_cast<double>(s.feature_bytes),
                           static_cast<double>(s.remote_rows),
                           static_cast<double>(s.cache_hits),
                           s.fetch_time_s,
                           s.batch_wait_s,
                           s.exchange_window_s,
                           static_cast<double>(s.disk_rows),
                           static_cast<double>(s.disk_hits),
                           static_cast<double>(s.disk_bytes),
                           s.disk_read_s};
  comm.allreduce(kernels::Span<double>(v.data(), static_cast<std::int64_t>(v.size())),
                 ReduceOp::Sum);
  const double p = comm.size();
  s.exchange_bytes = static_cast<std::int64_t>(v[0]);
  s.exchange_time_s = v[1] / p;
  s.exchange_exposed_s = v[2] / p;
  s.allreduce_time_s = v[3] / p;
  s.sampling_bytes = static_cast<std::int64_t>(v[4]);
  s.feature_bytes = static_cast<std::int64_t>(v[5]);
  s.remote_rows = static_cast<std::int64_t>(v[6]);
  s.cache_hits = static_cast<std::int64_t>(v[7]);
  s.fetch_time_s = v[8] / p;
  s.batch_wait_s = v[9] / p;
  s.exchange_window_s = v[10] / p;
  s.disk_rows = static_cast<std::int64_t>(v[11]);
  s.disk_hits = static_cast<std::int64_t>(v[12]);
  s.disk_bytes = static_cast<std::int64_t>(v[13]);
  s.disk_read_s = v[14] / p;
}

void expect_finite(double loss, std::uint64_t epoch, std::int64_t batch) {
  if (std::isfinite(loss)) return;
  throw Error("train: the loss became " + std::string(std::isnan(loss) ? "nan" : "infinite") +
              " in epoch " + std::to_string(epoch) + ", batch " + std::to_string(batch + 1) +
              ": the run diverged (try a lower --lr)");
}

std::vector<NamedTensor> parameter_state(const std::vector<nn::Parameter<float>*>& params) {
  std::vector<NamedTensor> v;
  for (auto* p : params) v.push_back({p->name, &p->value});
  return v;
}

std::vector<NamedTensor> adam_state(nn::Adam<float>& adam,
                                    const std::vector<nn::Parameter<float>*>& params) {
  std::vector<NamedTensor> v;
  for (std::size_t i = 0; i < params.size(); ++i) {
    v.push_back({"adam.m/" + params[i]->name, &adam.first_moment(i)});
    v.push_back({"adam.v/" + params[i]->name, &adam.second_moment(i)});
  }
  return v;
}

kernels::AdamConfig adam_config(double lr, double weight_decay) {
  kernels::AdamConfig a;
  a.lr = lr;
  a.weight_decay = weight_decay;
  return a;
}

}  // namespace detail

Trainer::Trainer(const kernels::Resources& res, std::unique_ptr<Task> task, int epochs,
                 const CheckpointConfig& checkpoint)
    : m_res(res),
      m_task(std::move(task)),
      m_comm(&m_task->comm()),
      m_epochs(epochs),
      m_checkpoint(checkpoint),
      m_selection(m_task->selection()) {
  HALO_EXPECTS(epochs >= 1, "train: epochs must be >= 1, got " + std::to_string(epochs));
  HALO_EXPECTS(checkpoint.every >= 0 && checkpoint.keep >= 1,
               "train: checkpoint every must be >= 0 and keep >= 1");
  if (!m_checkpoint.dir.empty()) m_identity = m_task->identity();
}

Trainer::~Trainer() = default;

std::int64_t Trainer::batches_per_epoch() const { return m_task->batches_per_epoch(); }
double Trainer::preprocess_time_s() const { return m_task->preprocess_time_s(); }

bool Trainer::stop_agreed() {
  if (m_checkpoint.dir.empty()) return false;
  const auto t = Clock::now();
  const bool stop = m_comm->sum<std::int64_t>(preemption_requested() ? 1 : 0) > 0;
  m_stop_check_s += seconds_since(t);
  ++m_stop_checks;
  return stop;
}

bool Trainer::train_epoch(std::uint64_t epoch, EpochStats& s, const StepCallback& on_step) {
  kernels::check_mapped_files();
  // A stopped epoch continues at its next step with its running sums.
  Partial at = m_partial.epoch == epoch ? m_partial : Partial{epoch};
  m_partial = {};
  // Every step: a store file replaced or cut short under the run stops it (one line, exit 1).
  const auto should_stop = [this] {
    kernels::check_mapped_files();
    return stop_agreed();
  };
  if (m_task->train_epoch(epoch, s, on_step, at, should_stop)) return true;
  m_partial = at;
  return false;
}

Metrics Trainer::evaluate() { return m_task->evaluate(); }

namespace {

/// What a checkpoint holds of `task`, in the order it stores them: the state as "param/NAME",
/// the optimizer's state, and the best epoch's copies of the state (`best`) as "best/NAME".
std::vector<NamedTensor> checkpoint_arrays(Task& task, std::vector<Tensor<float>>& best) {
  const std::vector<NamedTensor> state = task.state();
  std::vector<NamedTensor> v;
  for (const NamedTensor& t : state) v.push_back({"param/" + t.name, t.tensor});
  for (NamedTensor& t : task.optimizer_state()) v.push_back(std::move(t));
  for (std::size_t i = 0; i < state.size(); ++i) v.push_back({"best/" + state[i].name, &best[i]});
  return v;
}

}  // namespace

TrainState Trainer::capture(const TrainResult& result, std::vector<Tensor<float>>& best,
                            int epochs_done) {
  TrainState st;
  st.epoch = epochs_done;
  if (m_partial.step > 0) {
    st.step = m_partial.step;
    st.loss_sum = m_partial.loss_sum;
    st.loss_rows = m_partial.loss_rows;
    st.allreduce_s = m_partial.allreduce_s;
  }
  st.counters = m_task->counters();
  st.result.best_epoch = result.best_epoch;
  st.result.metrics = result.metrics;
  st.result.final_train_loss = result.final_train_loss;
  st.result.history = result.history;
  for (const NamedTensor& a : checkpoint_arrays(*m_task, best)) {
    const Tensor<float>& t = *a.tensor;
    st.arrays.push_back({a.name, t.rows(), t.cols(), t.to_vector(m_res)});
  }
  return st;
}

void Trainer::restore(const TrainState& st, TrainResult& result, std::vector<Tensor<float>>& best) {
  const std::vector<NamedTensor> arrays = checkpoint_arrays(*m_task, best);
  HALO_EXPECTS(st.arrays.size() == arrays.size(),
               "checkpoint: it holds " + std::to_string(st.arrays.size()) +
                   " arrays, this model needs " + std::to_string(arrays.size()));
  for (std::size_t i = 0; i < arrays.size(); ++i) {
    const TrainState::Array& a = st.arrays[i];
    const std::string& name = arrays[i].name;
    Tensor<float>& t = *arrays[i].tensor;
    if (a.name != name || a.rows != t.rows() || a.cols != t.cols())
      throw IoError("checkpoint: array " + a.name + " (" + std::to_string(a.rows) + " x " +
                    std::to_string(a.cols) + ") where the model has " + name + " (" +
                    std::to_string(t.rows()) + " x " + std::to_string(t.cols()) + ")");
    kernels::copy_bytes(m_res, t.data(), t.device(), a.values.data(), kernels::Device::Cpu,
                        t.bytes());
  }
  const auto counters = m_task->counters();
  if (st.counters.size() != counters.size())
    throw IoError("checkpoint: it holds " + std::to_string(st.counters.size()) +
                  " optimizer counters, this run has " + std::to_string(counters.size()));
  for (const auto& [name, value] : st.counters) m_task->set_counter(name, value);
  result.best_epoch = st.result.best_epoch;
  result.metrics = st.result.metrics;
  result.final_train_loss = st.result.final_train_loss;
  result.history = st.result.history;
  for (EpochStats& s : result.history) s.epochs = m_epochs;
  m_partial = {};
  if (st.step > 0)
    m_partial = {static_cast<std::uint64_t>(st.epoch) + 1, st.step, st.loss_sum, st.loss_rows,
                 st.allreduce_s};
}

bool Trainer::better(const Metrics& e, const TrainResult& result) const {
  const double score = e.at(m_selection.score);
  // Without validation data there is nothing to select by: the last epoch is kept.
  if (result.best_epoch == 0 || std::isnan(score)) return true;
  const double kept = result.metrics.at(m_selection.score);
  if (score != kept) return score > kept;
  return !m_selection.tie_break.empty() &&
         e.at(m_selection.tie_break) < result.metrics.at(m_selection.tie_break);
}

TrainResult Trainer::run(const EpochCallback& on_epoch, const StepCallback& on_step) {
  TrainResult result;
  // Parameter values of the best epoch so far, on the parameters' device: snapshots are
  // stream-ordered device copies, never a trip through the host.
  const std::vector<NamedTensor> state = m_task->state();
  std::vector<Tensor<float>> best;
  for (const NamedTensor& t : state) best.push_back(t.tensor->clone(m_res));
  const int epochs = m_epochs;
  Comm& comm = *m_comm;
  const CheckpointConfig& ck = m_checkpoint;
  const bool checkpoints = !ck.dir.empty();
  int done = 0;  // epochs completed
  if (checkpoints && ck.resume) {
    if (auto found = read_newest_checkpoint(comm, ck.dir, m_identity)) {
      const TrainState& st = found->state;
      if (st.epoch + (st.step > 0 ? 1 : 0) > epochs)
        throw IoError(found->dir.string() + ": the checkpoint is at epoch " +
                      std::to_string(st.epoch) + ", step " + std::to_string(st.step) +
                      ", past the " + std::to_string(epochs) + " epochs of this run (--epochs)");
      restore(found->state, result, best);
      done = found->state.epoch;
      result.resumed_from = found->dir.string();
      HALO_LOG_INFO(
          "train: resuming from " + result.resumed_from + " (" + std::to_string(done) + " epochs" +
          (m_partial.step > 0 ? " and " + std::to_string(m_partial.step) + " steps" : "") +
          " completed)");
    } else {
      HALO_LOG_INFO("train: no complete checkpoint in " + ck.dir.string() + ": starting fresh");
    }
  } else if (checkpoints) {
    // A fresh run never shares its directory with another run's checkpoints (rank 0 decides).
    std::string problem = comm.rank() == 0 ? fresh_start_problem(ck.dir) : std::string();
    std::int64_t refused = problem.empty() ? 0 : 1;
    comm.broadcast(&refused, sizeof refused, 0);
    if (refused != 0)
      throw IoError(comm.rank() == 0 ? problem
                                     : ck.dir.string() +
                                           ": holds another run's checkpoints "
                                           "(see rank 0's message)");
  }
  const auto save = [&](int epochs_done) {
    result.checkpoint =
        write_checkpoint(comm, ck, m_identity, capture(result, best, epochs_done)).string();
  };
  const auto start = Clock::now();
  for (int epoch = done + 1; epoch <= epochs; ++epoch) {
    EpochStats s;
    s.epoch = epoch;
    s.epochs = epochs;
    if (!train_epoch(static_cast<std::uint64_t>(epoch), s, on_step)) {
      save(epoch - 1);  // mid-epoch: the next step and the epoch's running sums
      result.preempted = true;
      break;
    }
    slow_epoch_hook(comm.rank(), epoch);
    s.metrics = evaluate();
    if (better(s.metrics, result)) {
      result.best_epoch = epoch;
      result.metrics = s.metrics;
      for (std::size_t i = 0; i < state.size(); ++i)
        kernels::copy_async(m_res, best[i], *state[i].tensor);
    }
    result.final_train_loss = s.train_loss;
    result.history.push_back(s);
    if (on_epoch) on_epoch(s);
    const bool stop = stop_agreed();
    if (checkpoints && (stop || epoch == epochs || (ck.every > 0 && epoch % ck.every == 0)))
      save(epoch);
    if (stop) {
      result.preempted = true;
      break;
    }
  }
  if (result.preempted) {  // from the first rank's signal to the committed checkpoint
    double age = preemption_age_s();
    comm.allreduce(kernels::Span<double>(&age, 1), ReduceOp::Max);
    result.checkpoint_after_signal_s = age;
  }
  result.train_time_s = seconds_since(start);
  result.preprocess_time_s = m_task->preprocess_time_s();
  result.world_size = comm.size();
  result.preemption_checks = m_stop_checks;
  result.preemption_check_s = m_stop_check_s;
  // The medians and totals over the epochs completed (those before a resume included).
  std::vector<double> times, exchange, exposed, window, allreduce, compute, fetch, wait, reading;
  std::vector<std::int64_t> bytes, sampling, features, disk;
  double exchange_total = 0, exposed_total = 0;
  std::int64_t remote = 0, hits = 0, syncs = 0, disk_rows = 0, disk_hits = 0;
  std::vector<std::string> stages;  // the names of the task's stage times, first seen first
  for (const EpochStats& s : result.history) {
    times.push_back(s.epoch_time_s);
    exchange.push_back(s.exchange_time_s);
    exposed.push_back(s.exchange_exposed_s);
    window.push_back(s.exchange_window_s);
    allreduce.push_back(s.allreduce_time_s);
    compute.push_back(s.epoch_time_s - s.exchange_exposed_s - s.allreduce_time_s);
    fetch.push_back(s.fetch_time_s);
    wait.push_back(s.batch_wait_s);
    bytes.push_back(s.exchange_bytes);
    sampling.push_back(s.sampling_bytes);
    features.push_back(s.feature_bytes);
    disk.push_back(s.disk_bytes);
    reading.push_back(s.disk_read_s);
    disk_rows += s.disk_rows;
    disk_hits += s.disk_hits;
    exchange_total += s.exchange_time_s;
    exposed_total += s.exchange_exposed_s;
    remote += s.remote_rows;
    hits += s.cache_hits;
    syncs += s.host_syncs;
    for (const auto& [name, seconds] : s.stage_times)
      if (std::find(stages.begin(), stages.end(), name) == stages.end()) stages.push_back(name);
  }
  result.epoch_time_median_s = median(times);
  result.exchange_time_s = median(exchange);
  result.exchange_exposed_s = median(exposed);
  result.exchange_window_s = median(window);
  result.allreduce_time_s = median(allreduce);
  result.compute_time_s = median(compute);
  result.fetch_time_s = median(fetch);
  result.batch_wait_s = median(wait);
  result.disk_read_s = median(reading);
  for (const std::string& name : stages) {
    std::vector<double> v;
    for (const EpochStats& s : result.history)
      if (s.stage_times.contains(name)) v.push_back(s.stage_times.at(name));
    result.stage_times.set(name, median(v));
  }
  std::vector<EpochProfile> profiles;  // the epochs this run trained (a checkpoint holds none)
  for (std::size_t e = std::min(static_cast<std::size_t>(done), result.history.size());
       e < result.history.size(); ++e)
    profiles.push_back(result.history[e].profile);
  result.profile = median_profile(profiles);
  auto median_int = [](std::vector<std::int64_t> v) {
    std::sort(v.begin(), v.end());
    return v.empty() ? std::int64_t{0} : v[v.size() / 2];
  };
  result.exchange_bytes_per_epoch = median_int(bytes);
  result.sampling_bytes_per_epoch = median_int(sampling);
  result.feature_bytes_per_epoch = median_int(features);
  result.disk_bytes_per_epoch = median_int(disk);
  result.disk_cache_hit_rate =
      disk_rows > 0 ? static_cast<double>(disk_hits) / static_cast<double>(disk_rows) : 0;
  result.exchange_hidden_fraction =
      exchange_total > 0 ? std::max(0.0, 1.0 - exposed_total / exchange_total) : 0.0;
  result.cache_hit_rate = remote > 0 ? static_cast<double>(hits) / static_cast<double>(remote) : 0;
  result.batches_per_epoch = m_task->batches_per_epoch();
  const auto epochs_run = static_cast<double>(std::max<std::size_t>(1, result.history.size()));
  result.host_syncs_per_batch =
      static_cast<double>(syncs) / (epochs_run * static_cast<double>(result.batches_per_epoch));
  for (std::size_t i = 0; i < state.size(); ++i)
    kernels::copy_async(m_res, *state[i].tensor, best[i]);
  m_res.synchronize();     // the model is final when run returns
  m_task->finish(result);  // with the kept parameters
  return result;
}

std::int64_t current_host_memory_bytes() {
  std::ifstream in("/proc/self/statm");
  std::int64_t pages_total = 0, pages_resident = 0;
  in >> pages_total >> pages_resident;
  return pages_resident * static_cast<std::int64_t>(::sysconf(_SC_PAGESIZE));
}

double seconds_since_process_start() {
  // Field 22 of /proc/self/stat, after the command name in parentheses (which may hold spaces).
  std::ifstream in("/proc/self/stat");
  const std::string stat((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  std::istringstream fields(stat.substr(stat.rfind(')') + 2));
  std::string field;
  for (int i = 3; i <= 22 && fields >> field; ++i) {
  }
  timespec now{};
  clock_gettime(CLOCK_BOOTTIME, &now);
  const double started = std::stod(field) / static_cast<double>(::sysconf(_SC_CLK_TCK));
  return static_cast<double>(now.tv_sec) + 1e-9 * static_cast<double>(now.tv_nsec) - started;
}

std::int64_t peak_host_memory_bytes() {
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  // The kernel's high-water mark is sampled from per-thread counters that it syncs now and
  // then, so it can lag the resident size /proc/self/statm reports: a peak is never below it.
  return std::max(static_cast<std::int64_t>(usage.ru_maxrss) * 1024,  // Linux reports KiB
                  current_host_memory_bytes());
}

}  // namespace halo::runtime
