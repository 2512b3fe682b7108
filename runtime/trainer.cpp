#include <sys/resource.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <limits>
#include <nlohmann/json.hpp>

#include <halo/datasets/preprocess.hpp>
#include <halo/kernels/log.hpp>
#include <halo/kernels/loss.hpp>
#include <halo/runtime/batches.hpp>
#include <halo/runtime/checkpoint.hpp>
#include <halo/runtime/comm/nccl_comm.hpp>
#include <halo/runtime/feature_store.hpp>
#include <halo/runtime/halo_exchange.hpp>
#include <halo/runtime/trainer.hpp>

namespace halo::runtime {

using kernels::NodeId;
using kernels::Tensor;

namespace {

using Clock = std::chrono::steady_clock;
double seconds_since(Clock::time_point t) {
  return std::chrono::duration<double>(Clock::now() - t).count();
}

double median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  const std::size_t n = v.size();
  return n % 2 == 1 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

bool finite_positive(double x) { return std::isfinite(x) && x > 0; }

}  // namespace

std::string to_string(CachePolicy p) { return p == CachePolicy::Degree ? "degree" : "access"; }

CachePolicy parse_cache_policy(const std::string& s) {
  if (s == "degree") return CachePolicy::Degree;
  if (s == "access") return CachePolicy::Access;
  HALO_FAIL("cache policy '" + s + "': expected degree or access");
}

void check_config(const TrainConfig& c, int ranks) {
  HALO_EXPECTS(c.epochs >= 1, "train: epochs must be >= 1, got " + std::to_string(c.epochs));
  HALO_EXPECTS(finite_positive(c.lr), "train: the learning rate must be a finite number > 0");
  HALO_EXPECTS(std::isfinite(c.weight_decay) && c.weight_decay >= 0,
               "train: the weight decay must be a finite number >= 0");
  HALO_EXPECTS(std::isfinite(c.model.dropout) && c.model.dropout >= 0 && c.model.dropout < 1,
               "train: dropout must be in [0, 1)");
  HALO_EXPECTS(c.model.num_layers >= 1 && c.model.hidden >= 1,
               "train: layers and hidden width must be >= 1");
  HALO_EXPECTS(c.checkpoint.every >= 0 && c.checkpoint.keep >= 1,
               "train: checkpoint every must be >= 0 and keep >= 1");
  if (!c.mini_batch) return;
  const MiniBatchConfig& mb = *c.mini_batch;
  HALO_EXPECTS(mb.batch_size >= 1, "train: the batch size must be >= 1");
  HALO_EXPECTS(static_cast<int>(mb.fanouts.size()) == c.model.num_layers,
               "train: one fan-out per layer expected (" + std::to_string(c.model.num_layers) +
                   " layers, " + std::to_string(mb.fanouts.size()) + " fan-outs)");
  for (const int k : mb.fanouts) HALO_EXPECTS(k >= -1, "train: fan-outs must be -1 or >= 0");
  HALO_EXPECTS(mb.prefetch >= 0 && mb.prefetch <= 16, "train: prefetch must be in [0, 16]");
  HALO_EXPECTS(std::isfinite(mb.cache_mb) && mb.cache_mb >= 0,
               "train: the cache size must be a finite number >= 0");
  HALO_EXPECTS(mb.cache_mb == 0 || ranks > 1,
               "train: the feature cache holds remote rows: it needs a partition (several ranks)");
  HALO_EXPECTS(c.overlap, "train: overlap applies to full-graph training");
}

kernels::Resources host_resources(const kernels::Resources& res) {
  return kernels::Resources(kernels::Device::Cpu, res.cpu_exec().num_threads);
}

kernels::FeatureMatrix<float> prepare_features(const kernels::Resources& res,
                                               const kernels::FeatureMatrix<float>& features,
                                               bool normalize) {
  const kernels::Resources host = host_resources(res);
  auto f = std::visit([&](const auto& m) -> kernels::FeatureMatrix<float> { return m.clone(host); },
                      features);
  if (normalize && std::holds_alternative<kernels::CsrMatrix<std::int32_t, float>>(f))
    datasets::row_normalize(host, f);
  if (res.device() == kernels::Device::Cpu) return f;
  return std::visit(
      [&](const auto& m) -> kernels::FeatureMatrix<float> { return m.copy_to(res, res.device()); },
      f);
}

nn::Model<float> make_model(const kernels::Resources& res, std::int64_t in_features,
                            std::int32_t num_classes, const TrainConfig& config) {
  nn::ModelConfig mc = config.model;
  mc.in_features = in_features;
  mc.num_classes = num_classes;
  return nn::Model<float>(res, mc, config.seed);
}

// ---- shards ------------------------------------------------------------------------------------

Shard local_shard(const kernels::Resources& res, datasets::Dataset&& ds) {
  Shard s;
  s.dataset = ds.name;
  if (!ds.graph.values.empty())
    HALO_LOG_WARN("train: '" + ds.name + "' has edge weights; the models train on its structure");
  s.num_features = ds.num_features();
  s.num_edges = ds.graph.num_edges();
  s.part = partition::make_local_part(host_resources(res), std::move(ds));
  // The dataset's identity for checkpoints: its name, structure, labels, splits and width.
  const partition::Part& p = s.part;
  std::uint64_t h = partition::fnv1a64(&s.num_features, sizeof s.num_features);
  const auto mix = [&h](const auto& t) { h = partition::fnv1a64(t.data(), t.bytes(), h); };
  mix(p.graph.indptr), mix(p.graph.indices), mix(p.labels);
  mix(p.train_idx), mix(p.val_idx), mix(p.test_idx);
  char hex[24];
  std::snprintf(hex, sizeof hex, "0x%016llx", static_cast<unsigned long long>(h));
  s.identity = "dataset " + s.dataset + " fnv1a64 " + hex;
  s.own_comm = std::make_unique<SelfComm>();
  s.comm = s.own_comm.get();
  return s;
}

Shard open_shard(const kernels::Resources& res, Comm& comm, const std::filesystem::path& dir) {
  const partition::PartitionMeta meta = partition::read_partition_meta(dir);
  if (meta.book.num_parts() != comm.size())
    throw IoError((dir / "meta.json").string() + ": the partition has " +
                  std::to_string(meta.book.num_parts()) + " parts but " +
                  std::to_string(comm.size()) + " ranks run; start one rank per part (mpiexec -n " +
                  std::to_string(meta.book.num_parts()) + ")");
  // The one collective of the start-up: every rank read the same meta.json.
  const auto mine = static_cast<std::int64_t>(meta.checksum >> 1);
  std::vector<std::int64_t> v = {mine, -mine};
  comm.allreduce(kernels::Span<std::int64_t>(v.data(), 2), ReduceOp::Max);
  if (v[0] != mine || -v[1] != mine)
    throw IoError((dir / "meta.json").string() +
                  ": the ranks opened different partitions (meta.json differs between ranks)");
  Shard s;
  s.dataset = meta.dataset;
  s.part = partition::read_part(host_resources(res), dir, comm.rank(), &meta);
  s.num_features = meta.num_features;
  s.num_edges = meta.num_edges;
  s.comm = &comm;
  char hex[24];
  std::snprintf(hex, sizeof hex, "0x%016llx", static_cast<unsigned long long>(meta.checksum));
  s.identity = std::string("partition meta.json fnv1a64 ") + hex;
  return s;
}

// ---- the trainer
// ---------------------------------------------------------------------------------

/// The task's data on res's device: node classification's labels and splits, and the global
/// sizes of the splits.
struct Trainer::Targets {
  Tensor<std::int32_t> labels;
  Tensor<NodeId> train_idx, val_idx, test_idx;
  std::int64_t num_train = 0;
  Tensor<float> loss_total;     // a device epoch's summed loss (one process on a GPU)
  Tensor<NodeId> dropout_keys;  // the owned nodes' original ids (empty in one process)
};

kernels::Span<const NodeId> Trainer::dropout_keys() const { return m_targets->dropout_keys.span(); }

namespace {
/// `config` with the model fields the network decides (a custom network has no ModelConfig).
TrainConfig with_shape(TrainConfig config, const nn::NetworkShape& shape) {
  config.model.kind = shape.aggregation;
  config.model.num_layers = shape.num_layers;
  config.model.in_features = shape.in_features;
  config.model.num_classes = shape.num_classes;
  return config;
}
}  // namespace

Trainer::Trainer(const kernels::Resources& res, Shard& shard, const TrainConfig& config,
                 nn::Network<float>& model)
    : m_res(res),
      m_shard(shard),
      m_config(with_shape(config, model.shape())),
      m_model(model),
      m_params(model.parameters()),
      m_optimizer(res, m_params, [&] {
        kernels::AdamConfig c;
        c.lr = config.lr;
        c.weight_decay = config.weight_decay;
        return c;
      }()) {
  Comm& comm = *shard.comm;
  partition::Part& part = shard.part;
  check_config(m_config, comm.size());
  HALO_EXPECTS(m_config.model.in_features == shard.num_features &&
                   m_config.model.num_classes == part.num_classes,
               "train: the model was not built for this dataset");
  for (const auto* p : m_params)
    HALO_EXPECTS(p->value.device() == res.device(),
                 "train: the model's parameters live on another device than the Resources");
  HALO_EXPECTS(part.all_train.numel() > 0, "train: the dataset has no training nodes");
  const auto start = Clock::now();
  // GPU ranks move halo rows and gradients device to device over NCCL when the build has it.
  m_data_comm = &comm;
  if (res.device() == kernels::Device::Cuda && comm.size() > 1) {
    if (nccl_available()) {
      m_nccl = make_nccl_comm(comm, res);
      m_data_comm = m_nccl.get();
    } else {
      HALO_LOG_WARN("train: built without NCCL: GPU ranks exchange through host memory over MPI");
    }
  }
  const nn::ModelKind kind = m_config.model.kind;
  m_graph = std::make_unique<HaloExchange>(res, part, kind, config.overlap, *m_data_comm);
  m_features = std::make_unique<FeatureStore>(res, part, config.normalize_features);
  // One process keys dropout by row (original = local ids); a part by its original ids.
  Tensor<NodeId> keys;
  if (!part.ids.identity())
    keys = Tensor<NodeId>::from_host(
        res, std::vector<NodeId>(part.ids.original_ids().data,
                                 part.ids.original_ids().data + part.num_owned()));
  m_targets = std::make_unique<Targets>(Targets{part.labels.copy_to(res, res.device()),
                                                part.train_idx.copy_to(res, res.device()),
                                                part.val_idx.copy_to(res, res.device()),
                                                part.test_idx.copy_to(res, res.device()),
                                                part.all_train.numel(),
                                                {},
                                                std::move(keys)});
  if (config.mini_batch) {
    m_batches =
        std::make_unique<SampledBatches>(res, part, comm, *m_features, m_targets->labels.span(),
                                         *config.mini_batch, kind, config.seed);
    if (res.device() != kernels::Device::Cpu && comm.size() == 1)
      m_targets->loss_total = Tensor<float>(res, 1);
    // Every buffer of a step sized for the envelope: no batch allocates.
    const auto bounds = static_cast<const SampledBatches&>(*m_batches).layer_bounds();
    model.reserve(res, bounds, m_features->max_input_entries());
    kernels::reserve(res, m_dlogits, bounds.back().second * m_config.model.num_classes);
  } else {
    m_batches = std::make_unique<FullGraphBatches>(
        m_graph->adjacency(dropout_keys()), m_features->owned(), m_targets->labels.span(),
        m_targets->train_idx.span(), m_targets->num_train);
  }
  m_preprocess_time_s = seconds_since(start);
}

Trainer::~Trainer() = default;

std::int64_t Trainer::batches_per_epoch() const { return m_batches->batches_per_epoch(); }

namespace {

/// Sums every parameter's gradient and `loss` over the ranks of `comm` in one all-reduce
/// through `flat` (device) / `host` (host-memory comm with device gradients), allocated once.
double allreduce_gradients(const kernels::Resources& res, Comm& comm,
                           const std::vector<nn::Parameter<float>*>& params, double loss,
                           Tensor<float>& flat, std::vector<float>& host) {
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
  return total;
}

void expect_finite(double loss, std::uint64_t epoch, std::int64_t batch) {
  if (std::isfinite(loss)) return;
  throw Error("train: the loss became " + std::string(std::isnan(loss) ? "nan" : "infinite") +
              " in epoch " + std::to_string(epoch) + ", batch " + std::to_string(batch + 1) +
              ": the run diverged (try a lower --lr)");
}

}  // namespace

bool Trainer::stop_agreed() {
  if (m_config.checkpoint.dir.empty()) return false;
  const auto t = Clock::now();
  const bool stop = m_shard.comm->sum<std::int64_t>(preemption_requested() ? 1 : 0) > 0;
  m_stop_check_s += seconds_since(t);
  ++m_stop_checks;
  return stop;
}

bool Trainer::train_epoch(std::uint64_t epoch, EpochStats& s, const StepCallback& on_step) {
  Comm& comm = *m_shard.comm;
  const bool distributed = comm.size() > 1;
  const bool device_sum = m_targets->loss_total.numel() > 0;  // one process on a GPU
  m_graph->reset_stats();
  const auto start = Clock::now();
  // A stopped epoch continues at its next step with its running sums.
  const Partial from = m_partial.epoch == epoch ? m_partial : Partial{};
  m_partial = {};
  m_batches->begin_epoch(epoch, from.step);
  double loss_sum = from.loss_sum, allreduce_s = from.allreduce_s;
  std::int64_t loss_rows = from.loss_rows;
  if (device_sum) {
    const auto sum = static_cast<float>(loss_sum);  // a float sum: exact both ways
    kernels::copy_bytes(m_res, m_targets->loss_total.data(), m_res.device(), &sum,
                        kernels::Device::Cpu, sizeof sum);
  }
  const std::int64_t batches = m_batches->batches_per_epoch();
  bool stopped = false;
  for (std::int64_t b = from.step; b < batches && !stopped; ++b) {
    const Batch& batch = m_batches->next();
    const nn::Context ctx{&m_res, /*training=*/true, m_config.seed, batch.dropout_key, 0};
    const Tensor<float>& logits = m_model.forward(ctx, batch.graphs, *batch.x);
    kernels::ensure_shape(m_res, m_dlogits, logits.rows(), logits.cols());
    double loss = 0;  // this rank's share of the step's mean loss
    if (device_sum)
      kernels::log_softmax_nll_accumulate(m_res, logits.view(), batch.labels, batch.rows,
                                          m_targets->loss_total.span());
    else
      loss =
          kernels::log_softmax_nll(m_res, logits.view(), batch.labels, batch.rows, batch.loss_rows);
    kernels::log_softmax_nll_backward(m_res, logits.view(), batch.labels, batch.rows,
                                      m_dlogits.view(), batch.loss_rows);
    m_model.backward(ctx, batch.graphs, m_dlogits);
    if (distributed) {
      m_res.synchronize();  // the backward pass belongs to compute, not to the all-reduce
      const auto t = Clock::now();
      loss = allreduce_gradients(m_res, *m_data_comm, m_params, loss, m_grad_flat, m_grad_host);
      allreduce_s += seconds_since(t);
    }
    if (!device_sum) expect_finite(loss, epoch, b);
    m_optimizer.step(m_res);
    loss_sum += loss * static_cast<double>(batch.loss_rows);
    loss_rows += batch.loss_rows;
    if (on_step) on_step(b);
    // After the epoch's last step run() asks, after the evaluation.
    if (b + 1 < batches && stop_agreed()) {
      stopped = true;
      m_partial = {epoch, b + 1, 0, loss_rows, allreduce_s};
    }
  }
  m_batches->end_epoch(s);
  if (device_sum) loss_sum = m_targets->loss_total.to_vector(m_res)[0];  // one read an epoch
  if (stopped) m_partial.loss_sum = loss_sum;
  m_res.synchronize();
  s.epoch_time_s = seconds_since(start);
  s.train_loss = loss_sum / static_cast<double>(loss_rows);
  if (device_sum) expect_finite(s.train_loss, epoch, batches - 1);
  const ExchangeStats& x = m_graph->stats();
  s.exchange_bytes = x.bytes_sent;
  s.exchange_time_s = x.exchange_s;
  s.exchange_exposed_s = x.exposed_s;
  s.allreduce_time_s = allreduce_s;
  if (!distributed) return !stopped;
  // Bytes summed over the ranks, times averaged.
  std::vector<double> v = {static_cast<double>(s.exchange_bytes),
                           s.exchange_time_s,
                           s.exchange_exposed_s,
                           s.allreduce_time_s,
                           static_cast<double>(s.sampling_bytes),
                           static_cast<double>(s.feature_bytes),
                           static_cast<double>(s.remote_rows),
                           static_cast<double>(s.cache_hits),
                           s.fetch_time_s,
                           s.batch_wait_s};
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
  return !stopped;
}

Trainer::Evaluation Trainer::evaluate() {
  const Targets& t = *m_targets;
  const nn::Context ctx{&m_res, /*training=*/false, m_config.seed, 0, 0};
  const nn::Adjacency<float> graph = m_graph->adjacency(dropout_keys());
  const Tensor<float>& logits =
      m_model.forward(ctx, std::span<const nn::Adjacency<float>>(&graph, 1), m_features->owned());
  auto correct = [&](const Tensor<NodeId>& rows) {
    return rows.numel() == 0 ? 0.0
                             : static_cast<double>(kernels::count_correct(
                                   m_res, logits.view(), t.labels.span(), rows.span()));
  };
  // Sums over the ranks: correct counts, the validation loss's sum and the split sizes.
  std::vector<double> v = {correct(t.train_idx),
                           correct(t.val_idx),
                           correct(t.test_idx),
                           t.val_idx.numel() == 0
                               ? 0.0
                               : static_cast<double>(kernels::log_softmax_nll(
                                     m_res, logits.view(), t.labels.span(), t.val_idx.span(), 1)),
                           static_cast<double>(t.val_idx.numel()),
                           static_cast<double>(t.test_idx.numel())};
  m_shard.comm->allreduce(kernels::Span<double>(v.data(), 6), ReduceOp::Sum);
  auto ratio = [](double a, double b) { return b > 0 ? a / b : 0.0; };
  const double nan = std::numeric_limits<double>::quiet_NaN();
  return {ratio(v[0], static_cast<double>(t.num_train)), v[4] > 0 ? v[3] / v[4] : nan,
          v[4] > 0 ? v[1] / v[4] : nan, ratio(v[2], v[5])};
}

TrainState Trainer::capture(const TrainResult& result, const std::vector<Tensor<float>>& best,
                            double best_val_loss, int epochs_done) {
  TrainState st;
  st.epoch = epochs_done;
  if (m_partial.step > 0) {
    st.step = m_partial.step;
    st.loss_sum = m_partial.loss_sum;
    st.loss_rows = m_partial.loss_rows;
    st.allreduce_s = m_partial.allreduce_s;
  }
  st.optimizer_steps = m_optimizer.steps();
  st.best_val_loss = best_val_loss;
  st.result.best_epoch = result.best_epoch;
  st.result.val_accuracy = result.val_accuracy;
  st.result.test_accuracy = result.test_accuracy;
  st.result.final_train_loss = result.final_train_loss;
  st.result.history = result.history;
  const auto add = [&](const std::string& name, const Tensor<float>& t) {
    st.arrays.push_back({name, t.rows(), t.cols(), t.to_vector(m_res)});
  };
  for (std::size_t i = 0; i < m_params.size(); ++i) {
    const std::string& name = m_params[i]->name;
    add("param/" + name, m_params[i]->value);
    add("adam.m/" + name, m_optimizer.first_moment(i));
    add("adam.v/" + name, m_optimizer.second_moment(i));
    add("best/" + name, best[i]);
  }
  return st;
}

void Trainer::restore(const TrainState& st, TrainResult& result, std::vector<Tensor<float>>& best,
                      double& best_val_loss) {
  HALO_EXPECTS(st.arrays.size() == 4 * m_params.size(),
               "checkpoint: it holds " + std::to_string(st.arrays.size()) +
                   " arrays, this model needs " + std::to_string(4 * m_params.size()));
  std::size_t at = 0;
  const auto load = [&](const std::string& name, Tensor<float>& t) {
    const TrainState::Array& a = st.arrays[at++];
    if (a.name != name || a.rows != t.rows() || a.cols != t.cols())
      throw IoError("checkpoint: array " + a.name + " (" + std::to_string(a.rows) + " x " +
                    std::to_string(a.cols) + ") where the model has " + name + " (" +
                    std::to_string(t.rows()) + " x " + std::to_string(t.cols()) + ")");
    kernels::copy_bytes(m_res, t.data(), t.device(), a.values.data(), kernels::Device::Cpu,
                        t.bytes());
  };
  for (std::size_t i = 0; i < m_params.size(); ++i) {
    const std::string& name = m_params[i]->name;
    load("param/" + name, m_params[i]->value);
    load("adam.m/" + name, m_optimizer.first_moment(i));
    load("adam.v/" + name, m_optimizer.second_moment(i));
    load("best/" + name, best[i]);
  }
  m_optimizer.set_steps(st.optimizer_steps);
  best_val_loss = st.best_val_loss;
  result.best_epoch = st.result.best_epoch;
  result.val_accuracy = st.result.val_accuracy;
  result.test_accuracy = st.result.test_accuracy;
  result.final_train_loss = st.result.final_train_loss;
  result.history = st.result.history;
  for (EpochStats& s : result.history) s.epochs = m_config.epochs;
  m_partial = {};
  if (st.step > 0)
    m_partial = {static_cast<std::uint64_t>(st.epoch) + 1, st.step, st.loss_sum, st.loss_rows,
                 st.allreduce_s};
}

TrainResult Trainer::run(const EpochCallback& on_epoch, const StepCallback& on_step) {
  TrainResult result;
  // Parameter values of the best epoch so far, on the parameters' device: snapshots are
  // stream-ordered device copies, never a trip through the host.
  std::vector<Tensor<float>> best;
  for (const auto* p : m_params) best.push_back(p->value.clone(m_res));
  double best_val_loss = 0;
  const int epochs = m_config.epochs;
  Comm& comm = *m_shard.comm;
  const CheckpointConfig& ck = m_config.checkpoint;
  const bool checkpoints = !ck.dir.empty();
  const CheckpointIdentity identity =
      checkpoints ? checkpoint_identity(m_config, m_shard) : CheckpointIdentity{};
  int done = 0;  // epochs completed
  if (checkpoints && ck.resume) {
    if (auto found = read_newest_checkpoint(comm, ck.dir, identity)) {
      const TrainState& st = found->state;
      if (st.epoch + (st.step > 0 ? 1 : 0) > epochs)
        throw IoError(found->dir.string() + ": the checkpoint is at epoch " +
                      std::to_string(st.epoch) + ", step " + std::to_string(st.step) +
                      ", past the " + std::to_string(epochs) + " epochs of this run (--epochs)");
      restore(found->state, result, best, best_val_loss);
      done = found->state.epoch;
      result.resumed_from = found->dir.string();
      HALO_LOG_INFO(
          "train: resuming from " + result.resumed_from + " (" + std::to_string(done) + " epochs" +
          (m_partial.step > 0 ? " and " + std::to_string(m_partial.step) + " steps" : "") +
          " completed)");
    } else {
      HALO_LOG_INFO("train: no complete checkpoint in " + ck.dir.string() + ": starting fresh");
    }
  }
  const auto save = [&](int epochs_done) {
    result.checkpoint =
        write_checkpoint(comm, ck, identity, capture(result, best, best_val_loss, epochs_done))
            .string();
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
    const Evaluation e = evaluate();
    s.train_accuracy = e.train_accuracy;
    s.val_loss = e.val_loss;
    s.val_accuracy = e.val_accuracy;
    s.test_accuracy = e.test_accuracy;
    // Without validation nodes there is nothing to select by: the last epoch is kept.
    const bool no_val = std::isnan(e.val_accuracy);
    if (result.best_epoch == 0 || no_val || e.val_accuracy > result.val_accuracy ||
        (e.val_accuracy == result.val_accuracy && e.val_loss < best_val_loss)) {
      result.best_epoch = epoch;
      result.val_accuracy = e.val_accuracy;
      result.test_accuracy = e.test_accuracy;
      best_val_loss = e.val_loss;
      for (std::size_t i = 0; i < m_params.size(); ++i)
        kernels::copy_async(m_res, best[i], m_params[i]->value);
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
  result.train_time_s = seconds_since(start);
  result.preprocess_time_s = m_preprocess_time_s;
  result.world_size = comm.size();
  result.preemption_checks = m_stop_checks;
  result.preemption_check_s = m_stop_check_s;
  // The medians and totals over the epochs completed (those before a resume included).
  std::vector<double> times, exchange, exposed, allreduce, compute, fetch, wait;
  std::vector<std::int64_t> bytes, sampling, features;
  double exchange_total = 0, exposed_total = 0;
  std::int64_t remote = 0, hits = 0, syncs = 0;
  for (const EpochStats& s : result.history) {
    times.push_back(s.epoch_time_s);
    exchange.push_back(s.exchange_time_s);
    exposed.push_back(s.exchange_exposed_s);
    allreduce.push_back(s.allreduce_time_s);
    compute.push_back(s.epoch_time_s - s.exchange_exposed_s - s.allreduce_time_s);
    fetch.push_back(s.fetch_time_s);
    wait.push_back(s.batch_wait_s);
    bytes.push_back(s.exchange_bytes);
    sampling.push_back(s.sampling_bytes);
    features.push_back(s.feature_bytes);
    exchange_total += s.exchange_time_s;
    exposed_total += s.exchange_exposed_s;
    remote += s.remote_rows;
    hits += s.cache_hits;
    syncs += s.host_syncs;
  }
  result.epoch_time_median_s = median(times);
  result.exchange_time_s = median(exchange);
  result.exchange_exposed_s = median(exposed);
  result.allreduce_time_s = median(allreduce);
  result.compute_time_s = median(compute);
  result.fetch_time_s = median(fetch);
  result.batch_wait_s = median(wait);
  auto median_int = [](std::vector<std::int64_t> v) {
    std::sort(v.begin(), v.end());
    return v.empty() ? std::int64_t{0} : v[v.size() / 2];
  };
  result.exchange_bytes_per_epoch = median_int(bytes);
  result.sampling_bytes_per_epoch = median_int(sampling);
  result.feature_bytes_per_epoch = median_int(features);
  result.exchange_hidden_fraction =
      exchange_total > 0 ? std::max(0.0, 1.0 - exposed_total / exchange_total) : 0.0;
  result.cache_hit_rate = remote > 0 ? static_cast<double>(hits) / static_cast<double>(remote) : 0;
  result.batches_per_epoch = m_batches->batches_per_epoch();
  const auto epochs_run = static_cast<double>(std::max<std::size_t>(1, result.history.size()));
  result.host_syncs_per_batch =
      static_cast<double>(syncs) / (epochs_run * static_cast<double>(result.batches_per_epoch));
  if (const auto* sampled = dynamic_cast<const SampledBatches*>(m_batches.get())) {
    result.sampler_envelope_bytes = sampled->envelope_bytes();
    result.sampler_peak_bytes = sampled->peak_bytes();
  }
  for (std::size_t i = 0; i < m_params.size(); ++i)
    kernels::copy_async(m_res, m_params[i]->value, best[i]);
  m_res.synchronize();  // the model is final when run returns
  return result;
}

TrainRun train(const kernels::Resources& res, Shard& shard, const TrainConfig& config,
               const EpochCallback& on_epoch, const Trainer::StepCallback& on_step) {
  check_config(config, shard.comm->size());
  TrainRun run{make_model(res, shard.num_features, shard.part.num_classes, config), {}};
  Trainer trainer(res, shard, config, run.model);
  run.result = trainer.run(on_epoch, on_step);
  return run;
}

nn::ModelFileInfo model_file_info(const TrainConfig& config, const TrainResult& result,
                                  const std::string& dataset,
                                  const std::string& structural_features) {
  nn::ModelFileInfo info;
  info.config = config.model;
  info.dataset = dataset;
  info.normalize_features = config.normalize_features;
  info.structural_features = structural_features;
  const auto number = [](double v) { return std::isnan(v) ? nlohmann::json() : nlohmann::json(v); };
  nlohmann::json t = {{"mode", config.mini_batch ? "mini-batch" : "full-graph"},
                      {"epochs", config.epochs},
                      {"lr", config.lr},
                      {"weight_decay", config.weight_decay},
                      {"seed", config.seed},
                      {"optimizer", "adam"},
                      {"world_size", result.world_size},
                      {"best_epoch", result.best_epoch},
                      {"val_accuracy", number(result.val_accuracy)},
                      {"test_accuracy", number(result.test_accuracy)},
                      {"final_train_loss", number(result.final_train_loss)}};
  if (config.mini_batch)
    t.update({{"batch_size", config.mini_batch->batch_size},
              {"fanouts", config.mini_batch->fanouts},
              {"replace", config.mini_batch->replace}});
  info.training = t.dump();
  return info;
}

std::int64_t peak_host_memory_bytes() {
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  return static_cast<std::int64_t>(usage.ru_maxrss) * 1024;  // Linux reports KiB
}

}  // namespace halo::runtime
