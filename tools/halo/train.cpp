// `halo train`: flags -> runtime::TrainConfig, progress on stderr, summary on stdout, --json.
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
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
#include <halo/tools/halo/dataset_options.hpp>
#include <halo/tools/halo/metrics_options.hpp>
#include <halo/tools/halo/run_support.hpp>
#include <halo/tools/halo/train_hetero.hpp>
#include <halo/tools/halo/train_link.hpp>
#include <halo/tools/halo/train_options.hpp>

namespace halo::cli {
namespace {

namespace fs = std::filesystem;

/// `halo train`'s options: the run (shared with `halo plan`) and its outputs.
struct TrainCommandOptions : TrainOptions {
  std::string json;
  std::string save_model;
  MetricsOptions metrics;
  CheckpointOptions checkpoint;
  bool profile = false;
  double stall_timeout = 300;
};

/// The heterogeneous task's options: the flags given, its defaults for the others.
HeteroTrainOptions hetero_options(const TrainCommandOptions& o) {
  if (!o.save_model.empty())
    throw UsageError("--save-model: not supported for heterogeneous datasets");
  if (was_given(o, "--features"))
    throw UsageError("--features: not supported for heterogeneous datasets");
  if (!o.metrics.file.empty() || o.metrics.port >= 0)
    throw UsageError("--metrics-file, --metrics-port: not supported for heterogeneous datasets");
  if (o.profile) throw UsageError("--profile: not supported for heterogeneous datasets");
  if (was_given(o, "--model") && o.model != "rgcn" && o.model != "hgt")
    throw UsageError("--model " + o.model + ": '" + o.data.dataset +
                     "' is heterogeneous (a typed directory); use --model rgcn or hgt");
  HeteroTrainOptions h;
  if (was_given(o, "--model")) h.model = o.model;
  h.dataset = o.data.dataset;
  h.offline = o.data.offline;
  h.mag = o.data.mag;
  if (o.mode == "mini-batch") {
    if (o.mb.prefetch > 0)
      throw UsageError(
          "--prefetch: heterogeneous mini-batches are prepared on the training thread");
    h.mini_batch = o.mb;
    h.mini_batch->cache_policy = runtime::parse_cache_policy(o.cache_policy);
    h.fanouts = o.fanouts;
  }
  h.partitions = o.partitions;
  if (!o.partitions.empty() && was_given(o, "--split"))
    throw UsageError(
        "--split: a partition holds the split it was written with (halo partition "
        "--split)");
  if (was_given(o, "--split")) h.split = o.split;
  if (was_given(o, "--layers")) h.layers = o.layers;
  if (was_given(o, "--hidden")) h.hidden = o.hidden;
  if (was_given(o, "--dropout")) h.dropout = o.dropout;
  if (was_given(o, "--lr")) h.lr = o.lr;
  if (was_given(o, "--weight-decay")) h.weight_decay = o.weight_decay;
  if (was_given(o, "--epochs")) h.epochs = o.epochs;
  h.num_bases = o.num_bases;
  h.heads = o.heads;
  h.featureless = o.featureless;
  h.seed = o.seed;
  h.threads = o.threads;
  h.device = o.device;
  h.normalize_features = !o.no_normalize;
  h.json = o.json;
  h.checkpoint = o.checkpoint;
  return h;
}

/// Progress: one line rewritten in place on a terminal, a plain line every 10 epochs otherwise.
void print_progress(const runtime::EpochStats& s, bool tty) {
  const bool plain_line = !tty && (s.epoch % 10 == 0 || s.epoch == s.epochs || s.epoch == 1);
  if (!tty && !plain_line) return;
  std::fprintf(stderr,
               "%sepoch %4d/%d  loss %.4f  train %.3f  val %.3f  test %.3f  %.2f ms/epoch%s",
               tty ? "\r" : "", s.epoch, s.epochs, s.train_loss, s.metrics.at("train_accuracy"),
               s.metrics.at("val_accuracy"), s.metrics.at("test_accuracy"), s.epoch_time_s * 1e3,
               tty ? "\033[K" : "\n");
  if (tty && s.epoch == s.epochs) std::fputc('\n', stderr);
  std::fflush(stderr);
}

std::string device_name(const kernels::Resources& res) {
  return res.device() == kernels::Device::Cuda ? "cuda:" + std::to_string(res.cuda_exec().device_id)
                                               : std::string("cpu");
}

nlohmann::json result_json(const TrainCommandOptions& o, const runtime::Shard& shard,
                           const runtime::TrainResult& r, const kernels::Resources& res) {
  const bool cuda = res.device() == kernels::Device::Cuda;
  nlohmann::json j = {
      {"dataset", shard.dataset},
      {"num_nodes", shard.part.book().num_nodes()},
      {"num_edges", shard.num_edges},
      {"training_edges", shard.part.training_edges},
      {"model", o.model},
      {"mode", o.mode},
      {"device", cuda ? "cuda" : "cpu"},
      {"cuda_device", cuda ? res.cuda_exec().device_id : -1},
      {"world_size", r.world_size},
      {"threads", res.cpu_exec().num_threads},
      {"epochs", o.epochs},
      {"seed", o.seed},
      {"layers", o.layers},
      {"hidden", o.hidden},
      {"dropout", o.dropout},
      {"lr", o.lr},
      {"weight_decay", o.weight_decay},
      {"test_accuracy", r.metrics.at("test_accuracy")},
      {"val_accuracy", json_number(r.metrics.at("val_accuracy"))},
      {"best_epoch", r.best_epoch},
      {"final_train_loss", r.final_train_loss},
      {"epoch_time_median_s", r.epoch_time_median_s},
      {"preprocess_time_s", r.preprocess_time_s},
      {"train_time_s", r.train_time_s},
      {"peak_host_memory_bytes", runtime::peak_host_memory_bytes()},
      {"allreduce_time_s", r.allreduce_time_s},
  };
  if (!o.partitions.empty()) j["partitions"] = o.partitions;
  if (!o.checkpoint.dir.empty())
    j.update({{"checkpoint", r.checkpoint},
              {"resumed_from",
               r.resumed_from.empty() ? nlohmann::json() : nlohmann::json(r.resumed_from)},
              {"preemption_checks", r.preemption_checks},
              {"preemption_check_time_s", r.preemption_check_s}});
  if (o.mode == "mini-batch") {
    const runtime::MiniBatchConfig& mb = o.mb;
    j.update({{"batch_size", mb.batch_size},
              {"fanouts", mb.fanouts},
              {"replace", mb.replace},
              {"prefetch", r.prefetch},
              {"cache_mb", mb.cache_mb},
              {"cache_policy", o.cache_policy},
              {"batches_per_epoch", r.batches_per_epoch},
              {"sampler_envelope_bytes", r.sampler_envelope_bytes},
              {"sampler_peak_bytes", r.sampler_peak_bytes},
              {"host_syncs_per_batch", r.host_syncs_per_batch},
              {"sampling_bytes_per_epoch", r.sampling_bytes_per_epoch},
              {"feature_bytes_per_epoch", r.feature_bytes_per_epoch},
              {"cache_hit_rate", r.cache_hit_rate},
              {"fetch_time_s", r.fetch_time_s},
              {"batch_wait_s", r.batch_wait_s}});
  } else {
    j.update({{"overlap", !o.no_overlap},
              {"exchange_bytes_per_epoch", r.exchange_bytes_per_epoch},
              {"exchange_time_s", r.exchange_time_s},
              {"exchange_exposed_s", r.exchange_exposed_s},
              {"exchange_window_s", r.exchange_window_s},
              {"compute_time_s", r.compute_time_s},
              {"exchange_hidden_fraction", r.exchange_hidden_fraction}});
  }
  return j;
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

void print_summary(const TrainOptions& o, const runtime::TrainResult& r) {
  std::printf(
      "best epoch %d: val accuracy %.4f, test accuracy %.4f; median epoch %.3f ms; "
      "trained in %.2f s\n",
      r.best_epoch, r.metrics.at("val_accuracy"), r.metrics.at("test_accuracy"),
      r.epoch_time_median_s * 1e3, r.train_time_s);
  if (o.mode == "mini-batch") {
    std::printf("sampler: envelope %.1f MB allocated once, peak batch %.1f MB; ",
                static_cast<double>(r.sampler_envelope_bytes) / 1e6,
                static_cast<double>(r.sampler_peak_bytes) / 1e6);
    if (r.world_size > 1)
      std::printf(
          "remote rows: %.1f KB fetched per epoch, cache hit rate %.0f%%, %.3f ms not hidden\n",
          static_cast<double>(r.feature_bytes_per_epoch) / 1e3, r.cache_hit_rate * 100,
          r.batch_wait_s * 1e3);
    else  // one process: every row is its own, nothing is fetched
      std::printf("batches waited %.3f ms for their inputs per epoch\n", r.batch_wait_s * 1e3);
  } else if (r.world_size > 1)
    std::printf(
        "exchange: %.1f KB per epoch, %.3f ms per rank, %.0f%% hidden; all-reduce %.3f ms\n",
        static_cast<double>(r.exchange_bytes_per_epoch) / 1e3, r.exchange_time_s * 1e3,
        r.exchange_hidden_fraction * 100, r.allreduce_time_s * 1e3);
}

int run_train(const TrainCommandOptions& o) {
  set_stall_timeout(o.stall_timeout);
  if (o.task == "link") {
    if (!o.save_model.empty() || !o.metrics.file.empty() || o.metrics.port >= 0)
      throw UsageError(
          "--save-model, --metrics-file, --metrics-port: not supported with --task link");
    return run_link_train(o, o.json, o.checkpoint);
  }
  check_task(o);
  if (is_hetero_run(o)) return run_hetero_train(hetero_options(o));
  check_homogeneous_run(o);
  // The ranks the launcher started (one without a launcher): one per part of --partitions.
  const std::unique_ptr<runtime::Comm> world = world_comm(o.partitions, "train");
  prepare_checkpoints(o.checkpoint, world->rank());
  check_output(o.json, "--json");
  check_output(o.save_model, "--save-model");
  check_output(o.metrics.file, "--metrics-file");
  check_output_directory(o.checkpoint.dir, "--checkpoint-dir");
  const kernels::Resources res = make_resources(o.device, o.threads, world->size());
  runtime::TrainConfig config = train_config(o);
  config.profile = o.profile;
  config.checkpoint = checkpoint_config(o.checkpoint);
  // The data: a dataset in one process, or this rank's part of a partition.
  runtime::Shard shard = open_data(res, *world, o.data, o.partitions);
  if (shard.part.all_train.numel() == 0)
    throw UsageError("dataset '" + shard.dataset +
                     "' has no training nodes (its train split is "
                     "empty): nothing to train on");
  const int rank = shard.comm->rank();
  if (rank == 0)
    std::fprintf(stderr,
                 "halo train: %s (%lld nodes, %lld training edges, %lld features, %d classes), "
                 "%s, %s, %s, %d rank%s, %d thread%s\n",
                 shard.dataset.c_str(), static_cast<long long>(shard.part.book().num_nodes()),
                 static_cast<long long>(shard.part.training_edges),
                 static_cast<long long>(shard.num_features), shard.part.num_classes,
                 o.model.c_str(), o.mode.c_str(), device_name(res).c_str(), shard.comm->size(),
                 shard.comm->size() > 1 ? "s" : "", res.cpu_exec().num_threads,
                 res.cpu_exec().num_threads > 1 ? "s" : "");
  const bool tty = isatty(fileno(stderr)) != 0;
  // Live metrics (--metrics-file, --metrics-port): each rank publishes its own.
  const std::unique_ptr<TrainMetrics> metrics = start_metrics(o.metrics, shard, config, res);
  runtime::EpochCallback on_epoch = [&](const runtime::EpochStats& s) {
    if (rank == 0) print_progress(s, tty);
    if (metrics) metrics->on_epoch(s);
  };
  runtime::StepCallback on_step;
  if (metrics) on_step = [&metrics](std::int64_t) { metrics->on_step(); };
  // --profile: the machine's limits, measured before the run (rank 0 reports).
  const runtime::MachineLimits limits =
      o.profile && rank == 0 ? runtime::measure_machine_limits(res) : runtime::MachineLimits{};
  runtime::TrainRun run = runtime::train(res, shard, config, on_epoch, on_step);
  if (metrics) metrics->finish();
  if (run.result.preempted) {  // the requeued run writes the results
    if (rank == 0) report_preemption(run.result);
    shard.comm->barrier();
    return runtime::kExitPreempted;
  }
  // Every rank's peak resident set, for rank 0's report.
  std::vector<std::int64_t> peaks(static_cast<std::size_t>(shard.comm->size()), 0);
  peaks[static_cast<std::size_t>(rank)] = runtime::peak_host_memory_bytes();
  shard.comm->allreduce(
      kernels::Span<std::int64_t>(peaks.data(), static_cast<std::int64_t>(peaks.size())),
      runtime::ReduceOp::Sum);
  if (rank == 0) {
    print_summary(o, run.result);
    if (o.profile)
      std::fputs(runtime::profile_table(run.result.profile, run.result.epoch_time_median_s, limits,
                                        o.mode == "mini-batch")
                     .c_str(),
                 stdout);
    // The ranks hold the same parameters (the gradients are summed before every step).
    if (!o.save_model.empty())
      run.model.save(res, o.save_model,
                     runtime::model_file_info(config, run.result, shard.dataset,
                                              o.partitions.empty() ? o.data.features : ""));
    if (!o.json.empty()) {
      nlohmann::json j = result_json(o, shard, run.result, res);
      j["peak_host_memory_bytes_per_rank"] = peaks;
      if (o.profile) j["profile"] = profile_json(run.result, limits);
      j["peak_host_memory_bytes_max"] = *std::max_element(peaks.begin(), peaks.end());
      kernels::write_file_atomically(o.json, j.dump(2) + "\n");
    }
  }
  shard.comm->barrier();  // no rank exits (finalising MPI) before rank 0 has written its results
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
