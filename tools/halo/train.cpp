// `halo train`: the one driver of every task. Flags -> the task's registration (train_task.hpp)
// -> its run; progress on stderr, summary on stdout, --json, --save-model, checkpoints, metrics.
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include <halo/kernels/atomic_file.hpp>
#include <halo/kernels/log.hpp>
#include <halo/runtime/comm/comm.hpp>
#include <halo/runtime/runtime.hpp>
#include <halo/tools/halo/checkpoint_options.hpp>
#include <halo/tools/halo/commands.hpp>
#include <halo/tools/halo/metrics_options.hpp>
#include <halo/tools/halo/run_support.hpp>
#include <halo/tools/halo/train_options.hpp>
#include <halo/tools/halo/train_task.hpp>

namespace halo::cli {
namespace {

/// The tasks, in the order a command line is matched against them.
const std::vector<TaskRegistration>& tasks() {
  static const std::vector<TaskRegistration> all = {
      link_prediction_task(), hetero_classification_task(), node_classification_task()};
  return all;
}

/// Progress: one line rewritten in place on a terminal, a plain line every 10 epochs otherwise.
void print_progress(const runtime::EpochStats& s, const TaskRun& run, bool tty) {
  const bool plain_line = !tty && (s.epoch % 10 == 0 || s.epoch == s.epochs || s.epoch == 1);
  if (!tty && !plain_line) return;
  std::string scores;
  char field[96];
  for (const auto& [label, name] : run.progress()) {
    std::snprintf(field, sizeof field, "  %s %.3f", label.c_str(), s.metrics.at(name));
    scores += field;
  }
  std::fprintf(stderr, "%sepoch %4d/%d  loss %.4f%s  %.2f ms/epoch%s", tty ? "\r" : "", s.epoch,
               s.epochs, s.train_loss, scores.c_str(), s.epoch_time_s * 1e3, tty ? "\033[K" : "\n");
  if (tty && s.epoch == s.epochs) std::fputc('\n', stderr);
  std::fflush(stderr);
}

/// --profile: the median epoch's phases and kernels against the machine's limits.
nlohmann::json profile_json(const runtime::TrainResult& r, const runtime::MachineLimits& m) {
  const runtime::EpochProfile& p = r.profile;
  nlohmann::json kernels = nlohmann::json::object();
  double seconds = 0, limit = 0;
  for (int k = 0; k < kernels::kNumOps; ++k) {
    const kernels::OpCounters& c = p.ops.ops[static_cast<std::size_t>(k)];
    const double l = runtime::limit_seconds(c, m);
    seconds += c.seconds;
    limit += l;
    kernels[kernels::to_string(static_cast<kernels::Op>(k))] = {{"seconds", c.seconds},
                                                                {"calls", c.calls},
                                                                {"bytes", c.bytes},
                                                                {"flops", c.flops},
                                                                {"limit_s", l}};
  }
  return {
      {"sample_s", p.sample_s},
      {"gather_s", p.gather_s},
      {"copy_s", p.copy_s},
      {"wait_s", p.wait_s},
      {"forward_s", p.forward_s},
      {"loss_s", p.loss_s},
      {"backward_s", p.backward_s},
      {"optimizer_s", p.optimizer_s},
      {"kernels", kernels},
      {"kernels_s", seconds},
      {"kernels_limit_s", limit},
      {"epoch_fraction_of_limit", r.epoch_time_median_s > 0 ? limit / r.epoch_time_median_s : 0.0},
      {"triad_bytes_per_s", m.triad_bytes_per_s},
      {"sgemm_flops_per_s", m.sgemm_flops_per_s}};
}

/// The resident set of this process once its threads exist, before the data are read: the
/// libraries' and the runtime's own memory, beside what the run's parts hold (--json "memory").
std::int64_t g_process_start_bytes = 0;
/// Seconds from the process's start to the end of this run's first training step (start-up,
/// data, a resumed checkpoint and one step; --json "first_step_after_start_s"); -1: none.
double g_first_step_s = -1;

/// The --json keys every task writes (its own follow, TaskRun::json).

nlohmann::json common_json(const TrainCommandOptions& o, const TaskRegistration& task,
                           const runtime::TrainResult& r, const kernels::Resources& res) {
  const bool cuda = res.device() == kernels::Device::Cuda;
  nlohmann::json j = {{"task", task.id},
                      {"device", cuda ? "cuda" : "cpu"},
                      {"cuda_device", cuda ? res.cuda_exec().device_id : -1},
                      {"world_size", r.world_size},
                      {"threads", res.cpu_exec().num_threads},
                      {"seed", o.seed},
                      {"best_epoch", r.best_epoch},
                      {"final_train_loss", r.final_train_loss},
                      {"epoch_time_median_s", r.epoch_time_median_s},
                      {"preprocess_time_s", r.preprocess_time_s},
                      {"train_time_s", r.train_time_s},
                      {"peak_host_memory_bytes", runtime::peak_host_memory_bytes()},
                      {"allreduce_time_s", r.allreduce_time_s}};
  for (const auto& [name, value] : r.metrics) j[name] = json_number(value);
  if (!r.memory.empty()) {
    nlohmann::json m = {{"process_start", g_process_start_bytes}};
    for (const auto& [name, bytes] : r.memory) m[name] = bytes;
    j["memory"] = m;
  }
  if (!o.partitions.empty()) j["partitions"] = o.partitions;
  if (!o.checkpoint.dir.empty())
    j.update({{"checkpoint", r.checkpoint},
              {"resumed_from",
               r.resumed_from.empty() ? nlohmann::json() : nlohmann::json(r.resumed_from)},
              {"preemption_checks", r.preemption_checks},
              {"preemption_check_time_s", r.preemption_check_s}});
  if (g_first_step_s >= 0) j["first_step_after_start_s"] = g_first_step_s;
  return j;
}

int run_train(const TrainCommandOptions& o) {
  set_stall_timeout(o.stall_timeout);
  const TaskRegistration* task = nullptr;
  for (const TaskRegistration& t : tasks())
    if (t.selects(o)) {
      task = &t;
      break;
    }
  for (const Refusal& r : task->refusals)
    if (r.given(o))
      throw UsageError(r.flag + ": not supported for " + task->name + " (" + r.why + ")");
  task->check(o);
  // The ranks the launcher started (one without a launcher): one per part of --partitions.
  const std::unique_ptr<runtime::Comm> world = world_comm(o.partitions, "train");
  prepare_checkpoints(o.checkpoint, world->rank());
  check_output(o.json, "--json");
  check_output(o.save_model, "--save-model");
  check_output(o.metrics.file, "--metrics-file");
  check_output_directory(o.checkpoint.dir, "--checkpoint-dir");
  const kernels::Resources res = make_resources(o.device, o.threads, world->size());
  g_process_start_bytes = runtime::current_host_memory_bytes();
  // The data: a dataset in one process, or this rank's part of a partition.
  const std::unique_ptr<TaskRun> run = task->open(o, *world, res);
  run->config().checkpoint = checkpoint_config(o.checkpoint);
  run->config().profile = o.profile;
  runtime::Comm& comm = run->comm();
  const int rank = comm.rank();
  if (rank == 0) std::fputs(run->banner().c_str(), stderr);
  const bool tty = isatty(fileno(stderr)) != 0;
  // Live metrics (--metrics-file, --metrics-port): each rank publishes its own.
  const std::unique_ptr<TrainMetrics> metrics = run->start_metrics(o.metrics, res);
  const runtime::EpochCallback on_epoch = [&](const runtime::EpochStats& s) {
    if (rank == 0) print_progress(s, *run, tty);
    if (metrics) metrics->on_epoch(s);
  };
  const runtime::StepCallback on_step = [&metrics](std::int64_t) {
    if (g_first_step_s < 0) g_first_step_s = runtime::seconds_since_process_start();
    if (metrics) metrics->on_step();
  };
  // --profile: the machine's limits, measured before the run (rank 0 reports).
  const runtime::MachineLimits limits =
      o.profile && rank == 0 ? runtime::measure_machine_limits(res) : runtime::MachineLimits{};
  const runtime::TrainResult result = run->train(on_epoch, on_step);
  if (metrics) metrics->finish();
  if (result.preempted) {  // the requeued run writes the results
    if (rank == 0) report_preemption(result);
    comm.barrier();
    return runtime::kExitPreempted;
  }
  // Every rank's peak resident set, for rank 0's report.
  std::vector<std::int64_t> peaks(static_cast<std::size_t>(comm.size()), 0);
  peaks[static_cast<std::size_t>(rank)] = runtime::peak_host_memory_bytes();
  comm.allreduce(kernels::Span<std::int64_t>(peaks.data(), static_cast<std::int64_t>(peaks.size())),
                 runtime::ReduceOp::Sum);
  if (rank == 0) {
    std::fputs(run->summary(result).c_str(), stdout);
    if (o.profile)
      std::fputs(runtime::profile_table(result.profile, result.epoch_time_median_s, limits,
                                        o.mode == "mini-batch" || result.profile.sample_s > 0)
                     .c_str(),
                 stdout);
    // The ranks hold the same parameters (the gradients are summed before every step).
    if (!o.save_model.empty()) run->save_model(o.save_model, result);
    if (!o.json.empty()) {
      nlohmann::json j = common_json(o, *task, result, res);
      j.update(run->json(result));
      j["peak_host_memory_bytes_per_rank"] = peaks;
      j["peak_host_memory_bytes_max"] = *std::max_element(peaks.begin(), peaks.end());
      if (o.profile) j["profile"] = profile_json(result, limits);
      kernels::write_file_atomically(o.json, j.dump(2) + "\n");
    }
  }
  comm.barrier();  // no rank exits (finalising MPI) before rank 0 has written its results
  return 0;
}

}  // namespace

Command add_train_command(CLI::App& app) {
  auto o = std::make_shared<TrainCommandOptions>();
  CLI::App* sub = app.add_subcommand(
      "train",
      "Train a GNN on a dataset (full graph or mini-batches; CPU or GPU; one process, or one rank "
      "per part of a partition)");
  const std::function<void()> check_run = add_train_options(sub, *o);
  sub->add_option("--json", o->json, "Write the results as one JSON object to FILE");
  sub->add_flag("--profile", o->profile,
                "Time the phases of every step and the kernels they call; print the median "
                "epoch's table (with the kernels' bytes and FLOPs against the triad bandwidth and "
                "sgemm rate measured before the run) and add it to --json as \"profile\"");
  sub->add_option("--save-model", o->save_model,
                  "Save the kept epoch's model to FILE (a self-describing model file: "
                  "architecture, preprocessing, training record, parameters; docs/formats.md)");
  sub->add_option("--stall-timeout", o->stall_timeout,
                  "With several ranks: a rank that waits this many seconds in a collective or an "
                  "exchange for a rank that sends no heartbeat either (stopped or hung, not just "
                  "slow) ends the job with an error naming it, exit code 1; 0 waits forever")
      ->check(finite_range(0.0, 1e6))
      ->capture_default_str();
  add_metrics_options(sub, o->metrics);
  add_checkpoint_options(sub, o->checkpoint);
  sub->callback([check_run, sub] {
    check_run();
    check_checkpoint_options(sub);
  });
  return {sub, [o] { return run_train(*o); }};
}

}  // namespace halo::cli
