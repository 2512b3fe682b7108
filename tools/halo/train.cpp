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

#include <halo/datasets/hetero.hpp>
#include <halo/kernels/atomic_file.hpp>
#include <halo/kernels/log.hpp>
#include <halo/runtime/comm/comm.hpp>
#include <halo/runtime/trainer.hpp>
#include <halo/tools/halo/commands.hpp>
#include <halo/tools/halo/dataset_options.hpp>
#include <halo/tools/halo/run_support.hpp>
#include <halo/tools/halo/train_hetero.hpp>

namespace halo::cli {
namespace {

namespace fs = std::filesystem;

struct TrainOptions {
  DatasetOptions data;
  std::string model = "gcn";
  int layers = 2;
  std::int64_t hidden = 16;
  float dropout = 0.5f;
  double lr = 0.01;
  double weight_decay = 5e-4;
  int epochs = 200;
  std::uint64_t seed = 0;
  int threads = 0;
  std::string device = "cpu";
  bool no_normalize = false;
  std::string json;
  std::string save_model;
  std::string partitions;
  bool no_overlap = false;
  std::string mode = "full-graph";
  runtime::MiniBatchConfig mb;
  std::string cache_policy = "degree";
  // Heterogeneous datasets (train_hetero.hpp): --split, --num-bases, and the flags given (the
  // others take the heterogeneous task's defaults).
  int split = 0;
  int num_bases = 0;
  std::string featureless = "zero";
  std::vector<std::string> given;
};

bool was_given(const TrainOptions& o, const char* flag) {
  return std::find(o.given.begin(), o.given.end(), flag) != o.given.end();
}

/// The heterogeneous task's options: the flags given, its defaults for the others.
HeteroTrainOptions hetero_options(const TrainOptions& o) {
  for (const char* flag : {"--save-model", "--features"})
    if (was_given(o, flag))
      throw UsageError(std::string(flag) + ": not supported for heterogeneous datasets");
  if (was_given(o, "--model") && o.model != "rgcn")
    throw UsageError("--model " + o.model + ": '" + o.data.dataset +
                     "' is heterogeneous (a typed directory); use --model rgcn");
  HeteroTrainOptions h;
  h.dataset = o.data.dataset;
  if (was_given(o, "--split")) h.split = o.split;
  if (was_given(o, "--layers")) h.layers = o.layers;
  if (was_given(o, "--hidden")) h.hidden = o.hidden;
  if (was_given(o, "--dropout")) h.dropout = o.dropout;
  if (was_given(o, "--lr")) h.lr = o.lr;
  if (was_given(o, "--weight-decay")) h.weight_decay = o.weight_decay;
  if (was_given(o, "--epochs")) h.epochs = o.epochs;
  h.num_bases = o.num_bases;
  h.featureless = o.featureless;
  h.seed = o.seed;
  h.threads = o.threads;
  h.device = o.device;
  h.normalize_features = !o.no_normalize;
  h.json = o.json;
  return h;
}

/// Progress: one line rewritten in place on a terminal, a plain line every 10 epochs otherwise.
void print_progress(const runtime::EpochStats& s, bool tty) {
  const bool plain_line = !tty && (s.epoch % 10 == 0 || s.epoch == s.epochs || s.epoch == 1);
  if (!tty && !plain_line) return;
  std::fprintf(stderr,
               "%sepoch %4d/%d  loss %.4f  train %.3f  val %.3f  test %.3f  %.2f ms/epoch%s",
               tty ? "\r" : "", s.epoch, s.epochs, s.train_loss, s.train_accuracy, s.val_accuracy,
               s.test_accuracy, s.epoch_time_s * 1e3, tty ? "\033[K" : "\n");
  if (tty && s.epoch == s.epochs) std::fputc('\n', stderr);
  std::fflush(stderr);
}

runtime::TrainConfig train_config(const TrainOptions& o) {
  runtime::TrainConfig config;
  config.model.kind = nn::parse_model_kind(o.model);
  config.model.num_layers = o.layers;
  config.model.hidden = o.hidden;
  config.model.dropout = o.dropout;
  config.epochs = o.epochs;
  config.lr = o.lr;
  config.weight_decay = o.weight_decay;
  config.seed = o.seed;
  config.normalize_features = !o.no_normalize;
  config.overlap = !o.no_overlap;
  if (o.mode == "mini-batch") {
    config.mini_batch = o.mb;
    config.mini_batch->cache_policy = runtime::parse_cache_policy(o.cache_policy);
  }
  return config;
}

std::string device_name(const kernels::Resources& res) {
  return res.device() == kernels::Device::Cuda ? "cuda:" + std::to_string(res.cuda_exec().device_id)
                                               : std::string("cpu");
}

nlohmann::json result_json(const TrainOptions& o, const runtime::Shard& shard,
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
      {"test_accuracy", r.test_accuracy},
      {"val_accuracy", json_number(r.val_accuracy)},
      {"best_epoch", r.best_epoch},
      {"final_train_loss", r.final_train_loss},
      {"epoch_time_median_s", r.epoch_time_median_s},
      {"preprocess_time_s", r.preprocess_time_s},
      {"train_time_s", r.train_time_s},
      {"peak_host_memory_bytes", runtime::peak_host_memory_bytes()},
      {"allreduce_time_s", r.allreduce_time_s},
  };
  if (!o.partitions.empty()) j["partitions"] = o.partitions;
  if (o.mode == "mini-batch") {
    const runtime::MiniBatchConfig& mb = o.mb;
    j.update({{"batch_size", mb.batch_size},
              {"fanouts", mb.fanouts},
              {"replace", mb.replace},
              {"prefetch", res.device() == kernels::Device::Cpu ? mb.prefetch : 0},
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
              {"compute_time_s", r.compute_time_s},
              {"exchange_hidden_fraction", r.exchange_hidden_fraction}});
  }
  return j;
}

void print_summary(const TrainOptions& o, const runtime::TrainResult& r) {
  std::printf(
      "best epoch %d: val accuracy %.4f, test accuracy %.4f; median epoch %.3f ms; "
      "trained in %.2f s\n",
      r.best_epoch, r.val_accuracy, r.test_accuracy, r.epoch_time_median_s * 1e3, r.train_time_s);
  if (o.mode == "mini-batch")
    std::printf(
        "sampler: envelope %.1f MB allocated once, peak batch %.1f MB; remote rows: %.1f KB "
        "fetched per epoch, cache hit rate %.0f%%, %.3f ms not hidden\n",
        static_cast<double>(r.sampler_envelope_bytes) / 1e6,
        static_cast<double>(r.sampler_peak_bytes) / 1e6,
        static_cast<double>(r.feature_bytes_per_epoch) / 1e3, r.cache_hit_rate * 100,
        r.batch_wait_s * 1e3);
  else if (r.world_size > 1)
    std::printf(
        "exchange: %.1f KB per epoch, %.3f ms per rank, %.0f%% hidden; all-reduce %.3f ms\n",
        static_cast<double>(r.exchange_bytes_per_epoch) / 1e3, r.exchange_time_s * 1e3,
        r.exchange_hidden_fraction * 100, r.allreduce_time_s * 1e3);
}

int run_train(const TrainOptions& o) {
  if (o.partitions.empty() && datasets::is_hetero_directory(o.data.dataset)) {
    if (o.mode != "full-graph")
      throw UsageError("--mode " + o.mode +
                       ": heterogeneous datasets train on the full graph (mini-batch is not "
                       "implemented for them)");
    return run_hetero_train(hetero_options(o));
  }
  for (const char* flag : {"--split", "--num-bases", "--featureless"})
    if (was_given(o, flag))
      throw UsageError(std::string(flag) +
                       ": applies to heterogeneous datasets (typed directories)");
  if (o.model == "rgcn")
    throw UsageError(
        "--model rgcn: needs a heterogeneous dataset (a typed directory, "
        "docs/formats.md), trained on the full graph in one process");
  // The ranks the launcher started (one without a launcher): one per part of --partitions.
  const std::unique_ptr<runtime::Comm> world = world_comm(o.partitions, "train");
  check_output(o.json, "--json");
  check_output(o.save_model, "--save-model");
  const kernels::Resources res = make_resources(o.device, o.threads, world->size());
  const runtime::TrainConfig config = train_config(o);
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
                 "%s, %s, %s, %d rank%s, %d threads\n",
                 shard.dataset.c_str(), static_cast<long long>(shard.part.book().num_nodes()),
                 static_cast<long long>(shard.part.training_edges),
                 static_cast<long long>(shard.num_features), shard.part.num_classes,
                 o.model.c_str(), o.mode.c_str(), device_name(res).c_str(), shard.comm->size(),
                 shard.comm->size() > 1 ? "s" : "", res.cpu_exec().num_threads);
  const bool tty = isatty(fileno(stderr)) != 0;
  runtime::EpochCallback progress;
  if (rank == 0) progress = [tty](const runtime::EpochStats& s) { print_progress(s, tty); };
  runtime::TrainRun run = runtime::train(res, shard, config, progress);
  // Every rank's peak resident set, for rank 0's report.
  std::vector<std::int64_t> peaks(static_cast<std::size_t>(shard.comm->size()), 0);
  peaks[static_cast<std::size_t>(rank)] = runtime::peak_host_memory_bytes();
  shard.comm->allreduce(
      kernels::Span<std::int64_t>(peaks.data(), static_cast<std::int64_t>(peaks.size())),
      runtime::ReduceOp::Sum);
  if (rank == 0) {
    print_summary(o, run.result);
    // The ranks hold the same parameters (the gradients are summed before every step).
    if (!o.save_model.empty())
      run.model.save(res, o.save_model,
                     runtime::model_file_info(config, run.result, shard.dataset,
                                              o.partitions.empty() ? o.data.features : ""));
    if (!o.json.empty()) {
      nlohmann::json j = result_json(o, shard, run.result, res);
      j["peak_host_memory_bytes_per_rank"] = peaks;
      j["peak_host_memory_bytes_max"] = *std::max_element(peaks.begin(), peaks.end());
      kernels::write_file_atomically(o.json, j.dump(2) + "\n");
    }
  }
  shard.comm->barrier();  // no rank exits (finalising MPI) before rank 0 has written its results
  return 0;
}

}  // namespace

Command add_train_command(CLI::App& app) {
  auto o = std::make_shared<TrainOptions>();
  CLI::App* sub = app.add_subcommand(
      "train",
      "Train a GNN on a dataset (full graph or mini-batches; CPU or GPU; one process, or one rank "
      "per part of a partition)");
  add_dataset_options(sub, o->data);
  sub->add_option("--model", o->model, "Model kind")
      ->check(CLI::IsMember({"gcn", "sage", "rgcn"}))
      ->capture_default_str();
  sub->add_option("--split", o->split,
                  "Heterogeneous datasets: the split splits/{train,val,test}_K.txt to use "
                  "(default: the smallest K)")
      ->check(CLI::Range(0, 1000000));
  sub->add_option("--num-bases", o->num_bases,
                  "R-GCN: basis matrices the relation weights are combined from (0 = one weight "
                  "per relation)")
      ->check(CLI::Range(0, 4096))
      ->capture_default_str();
  sub->add_option("--featureless", o->featureless,
                  "Heterogeneous datasets: the input of a node type without features: embedding "
                  "(a learnable row per node, updated by SparseAdam) or zero (represented by what "
                  "it aggregates)")
      ->check(CLI::IsMember({"embedding", "zero"}))
      ->capture_default_str();
  sub->add_option("--layers", o->layers, "Number of graph convolutions")
      ->check(CLI::Range(1, 16))
      ->capture_default_str();
  sub->add_option("--hidden", o->hidden, "Hidden layer width")
      ->check(CLI::Range(std::int64_t{1}, std::int64_t{1} << 20))
      ->capture_default_str();
  sub->add_option("--dropout", o->dropout, "Dropout probability in [0, 1)")
      ->check(finite_range(0.0, 0.999))
      ->capture_default_str();
  sub->add_option("--lr", o->lr, "Adam learning rate (a finite number > 0)")
      ->check(finite_range(1e-12, 1e6))
      ->capture_default_str();
  sub->add_option("--weight-decay", o->weight_decay, "L2 weight decay (added to the gradient)")
      ->check(finite_range(0.0, 1e6))
      ->capture_default_str();
  sub->add_option("--epochs", o->epochs, "Training epochs")
      ->check(CLI::Range(1, 1000000))
      ->capture_default_str();
  sub->add_option("--seed", o->seed,
                  "Seed of the run's random choices (initialisation, dropout, "
                  "sampling, batch order); datasets have their own seeds")
      ->check(seed_value())
      ->capture_default_str();
  sub->add_option("--threads", o->threads,
                  "CPU threads (default: all cores, shared by the ranks started on one host)")
      ->check(CLI::Range(1, 4096));
  sub->add_option("--device", o->device,
                  "cpu, or cuda: train on a GPU (device 0; with --partitions one GPU per rank, "
                  "by local rank)")
      ->check(CLI::IsMember({"cpu", "cuda"}))
      ->capture_default_str();
  sub->add_flag("--no-normalize-features", o->no_normalize,
                "Keep sparse features raw (default: divide each row by its L1 norm)");
  sub->add_option("--json", o->json, "Write the results as one JSON object to FILE");
  sub->add_option("--save-model", o->save_model,
                  "Save the kept epoch's model to FILE (a self-describing model file: "
                  "architecture, preprocessing, training record, parameters; docs/formats.md)");
  auto* mode = sub->add_option("--mode", o->mode,
                               "full-graph, or mini-batch (sampled blocks, docs/sampler.md)")
                   ->check(CLI::IsMember({"full-graph", "mini-batch"}))
                   ->capture_default_str();
  (void)mode;
  runtime::MiniBatchConfig& mb = o->mb;
  std::vector<CLI::Option*> mini_batch_only = {
      sub->add_option("--batch-size", mb.batch_size,
                      "Mini-batch: training nodes per batch (over all ranks)")
          ->check(CLI::Range(std::int64_t{1}, std::int64_t{1} << 30))
          ->capture_default_str(),
      sub->add_option("--fanouts", mb.fanouts,
                      "Mini-batch: neighbours sampled per node and layer, input layer first, "
                      "one per layer (-1 = all), e.g. 25,10")
          ->delimiter(',')
          ->check(CLI::Range(-1, 1 << 20))
          ->capture_default_str(),
      sub->add_option("--prefetch", mb.prefetch,
                      "Mini-batch: batches prepared ahead by a producer thread (0 = none)")
          ->check(CLI::Range(0, 16))
          ->capture_default_str(),
      sub->add_flag("--replace", mb.replace, "Mini-batch: sample neighbours with replacement"),
      sub->add_option("--cache-mb", mb.cache_mb,
                      "Mini-batch with --partitions: MiB per rank of remote feature rows kept "
                      "(halo nodes, chosen by --cache-policy)")
          ->check(finite_range(0.0, 1e6))
          ->capture_default_str(),
      sub->add_option("--cache-policy", o->cache_policy,
                      "Mini-batch with --partitions: degree (highest-degree halo nodes, fetched "
                      "before training) or access (most fetched in epoch 1, fetched after it)")
          ->check(CLI::IsMember({"degree", "access"}))
          ->capture_default_str()};
  auto* partitions =
      sub->add_option("--partitions", o->partitions,
                      "Train on the partition directory DIR written by `halo partition`, one rank "
                      "per part: mpiexec -n P halo train --partitions DIR (docs/distributed.md)")
          ->check(CLI::ExistingDirectory);
  partitions->excludes(sub->get_option("--dataset"));
  auto* no_overlap = sub->add_flag(
      "--no-overlap", o->no_overlap,
      "Full graph with --partitions: wait for the halo exchange before aggregating (for "
      "comparison; default: overlap it with the owned rows' aggregation)");
  // Checks across flags, during parsing: usage errors (exit code 2). A flag of one mode is
  // refused in the other.
  sub->callback([o, sub, mini_batch_only, no_overlap, partitions] {
    check_dataset_options(o->data);
    o->given.clear();
    for (const char* flag :
         {"--model", "--split", "--num-bases", "--featureless", "--layers", "--hidden", "--dropout",
          "--lr", "--weight-decay", "--epochs", "--save-model", "--features"})
      if (sub->get_option(flag)->count() > 0) o->given.emplace_back(flag);
    const bool mini = o->mode == "mini-batch";
    for (CLI::Option* opt : mini_batch_only)
      if (!mini && opt->count() > 0)
        throw CLI::ValidationError(opt->get_name(), "applies to --mode mini-batch only");
    if (mini && no_overlap->count() > 0)
      throw CLI::ValidationError("--no-overlap", "applies to full-graph training only");
    if (no_overlap->count() > 0 && partitions->count() == 0)
      throw CLI::ValidationError("--no-overlap",
                                 "needs --partitions (one process exchanges "
                                 "nothing)");
    for (const char* flag : {"--cache-mb", "--cache-policy"})
      if (sub->get_option(flag)->count() > 0 && partitions->count() == 0)
        throw CLI::ValidationError(flag, "needs --partitions (one process has no remote rows)");
    if (mini && static_cast<int>(o->mb.fanouts.size()) != o->layers)
      throw CLI::ValidationError("--fanouts", "one fan-out per layer expected (" +
                                                  std::to_string(o->layers) + " layers, " +
                                                  std::to_string(o->mb.fanouts.size()) + " given)");
  });
  return {sub, [o] {
            try {
              return run_train(*o);
            } catch (const UsageError& e) {
              std::fprintf(stderr, "halo train: %s\n", e.what());
              return 2;
            }
          }};
}

}  // namespace halo::cli
