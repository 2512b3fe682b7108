// `halo train`: flags -> runtime::TrainConfig, progress on stderr, summary on stdout, --json.
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <thread>
#include <vector>

#include <halo/kernels/log.hpp>
#include <halo/runtime/comm/comm.hpp>
#include <halo/runtime/distributed.hpp>
#include <halo/runtime/minibatch.hpp>
#include <halo/runtime/trainer.hpp>
#include <halo/tools/halo/commands.hpp>
#include <halo/tools/halo/dataset_options.hpp>

namespace halo::cli {
namespace {

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
  std::int64_t batch_size = 1024;
  std::vector<int> fanouts = {25, 10};
  int prefetch = 1;
  bool replace = false;
  double cache_mb = 0;
};

/// Writes `text` to `path` through a temporary name and a rename: never half-written.
void write_atomically(const std::filesystem::path& path, const std::string& text) {
  const std::filesystem::path tmp = path.string() + ".tmp";
  {
    std::ofstream out(tmp, std::ios::trunc);
    if (!out || !(out << text) || !out.flush()) throw IoError(tmp.string() + ": cannot write");
  }
  std::filesystem::rename(tmp, path);
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
  return config;
}

runtime::MiniBatchConfig mini_batch_config(const TrainOptions& o) {
  runtime::MiniBatchConfig mb;
  mb.batch_size = o.batch_size;
  mb.fanouts = o.fanouts;
  mb.prefetch = o.prefetch;
  mb.replace = o.replace;
  mb.cache_mb = o.cache_mb;
  return mb;
}

void print_summary(const runtime::TrainResult& r) {
  std::printf(
      "best epoch %d: val accuracy %.4f, test accuracy %.4f; median epoch %.3f ms; "
      "trained in %.2f s\n",
      r.best_epoch, r.val_accuracy, r.test_accuracy, r.epoch_time_median_s * 1e3, r.train_time_s);
}

/// The Resources of `--device`: the CPU, or a CUDA device (device 0 in one process, the rank's
/// local GPU when `distributed`; the CPU thread count still applies to the host-side
/// preprocessing). A clear error when no CUDA device is usable
/// (no GPU, no driver, a CPU-only build).
kernels::Resources make_resources(const TrainOptions& o, int threads, bool distributed) {
  if (o.device == "cpu") return kernels::Resources(kernels::Device::Cpu, threads);
  if (kernels::cuda_device_count() == 0) throw LogicError("--device cuda: no usable CUDA device");
  // One process: device 0. Distributed: one GPU per rank, by local rank.
  const int id = distributed ? runtime::local_cuda_device() : 0;
  return kernels::Resources(kernels::Device::Cuda, threads, id);
}

nlohmann::json result_json(const TrainOptions& o, const runtime::TrainResult& r,
                           const kernels::Resources& res) {
  const bool cuda = res.device() == kernels::Device::Cuda;
  return {
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
      {"val_accuracy", r.val_accuracy},
      {"best_epoch", r.best_epoch},
      {"final_train_loss", r.final_train_loss},
      {"epoch_time_median_s", r.epoch_time_median_s},
      {"preprocess_time_s", r.preprocess_time_s},
      {"train_time_s", r.train_time_s},
      {"peak_host_memory_bytes", runtime::peak_host_memory_bytes()},
  };
}

/// "cpu" or "cuda:ID": for the progress header.
std::string device_name(const kernels::Resources& res) {
  return res.device() == kernels::Device::Cuda ? "cuda:" + std::to_string(res.cuda_exec().device_id)
                                               : std::string("cpu");
}

int run_train(const TrainOptions& o) {
  const kernels::Resources res = make_resources(o, o.threads, /*distributed=*/false);
  // Datasets are read and generated on the host; the trainers upload what they need.
  const kernels::Resources host(kernels::Device::Cpu, o.threads);
  const datasets::Dataset data = load_dataset(host, o.data, o.seed);
  const runtime::TrainConfig config = train_config(o);

  std::fprintf(
      stderr,
      "halo train: %s (%lld nodes, %lld edges, %lld features, %d classes), %s, %s, %d threads\n",
      data.name.c_str(), static_cast<long long>(data.num_nodes()),
      static_cast<long long>(data.graph.num_edges()), static_cast<long long>(data.num_features()),
      data.num_classes, o.model.c_str(), device_name(res).c_str(), res.cpu_exec().num_threads);
  nn::Model<float> model = runtime::make_model(res, data, config);
  const bool tty = isatty(fileno(stderr)) != 0;
  const runtime::EpochCallback progress = [tty](const runtime::EpochStats& s) {
    print_progress(s, tty);
  };
  nlohmann::json extra;
  runtime::TrainResult r;
  if (o.mode == "mini-batch") {
    runtime::MiniBatchTrainer trainer(res, data, config, mini_batch_config(o), model);
    r = runtime::run_epochs(res, trainer, config.epochs, model, progress);
    // On a GPU batches are prepared in stream order: one sampler, no prefetching thread.
    const int prefetch = res.device() == kernels::Device::Cpu ? o.prefetch : 0;
    extra = {{"batch_size", o.batch_size},
             {"fanouts", o.fanouts},
             {"prefetch", prefetch},
             {"replace", o.replace},
             {"batches_per_epoch", trainer.batches_per_epoch()},
             {"sampler_envelope_bytes", trainer.sampler_envelope_bytes()},
             {"sampler_peak_bytes", trainer.sampler_peak_bytes()},
             {"host_syncs_per_batch", trainer.host_syncs_per_batch()}};
    std::printf("sampler: envelope %.1f MB allocated once (%d slots), peak batch %.1f MB\n",
                static_cast<double>(trainer.sampler_envelope_bytes()) / 1e6, prefetch + 1,
                static_cast<double>(trainer.sampler_peak_bytes()) / 1e6);
  } else {
    r = runtime::train_full_graph(res, data, config, model, progress);
  }

  print_summary(r);
  if (!o.save_model.empty()) model.save(res, o.save_model);
  if (!o.json.empty()) {
    nlohmann::json j = result_json(o, r, res);
    j["dataset"] = data.name;
    j["num_nodes"] = data.num_nodes();
    j["num_edges"] = data.graph.num_edges();
    for (const auto& [k, v] : extra.items()) j[k] = v;
    write_atomically(o.json, j.dump(2) + "\n");
  }
  return 0;
}

/// Threads per rank: --threads, else OMP_NUM_THREADS, else the cores shared by the ranks the
/// launcher started on this host.
int rank_threads(int requested) {
  if (requested > 0) return requested;
  if (std::getenv("OMP_NUM_THREADS") != nullptr) return 0;  // the OpenMP runtime's choice
  const int local = std::max(1, runtime::launcher_local_size());
  return std::max(1, static_cast<int>(std::thread::hardware_concurrency()) / local);
}

/// `--partitions DIR`: one rank per part, under mpiexec (or alone for a one-part partition).
int run_distributed(const TrainOptions& o) {
  std::unique_ptr<runtime::Comm> comm;
  if (runtime::launcher_world_size() > 0)
    comm = runtime::make_world_comm();
  else
    comm = std::make_unique<runtime::SelfComm>();
  const int rank = comm->rank();
  if (comm->size() > 1) {
    detail::set_error_rank(rank);
    set_log_rank(rank);
  }
  const kernels::Resources res = make_resources(o, rank_threads(o.threads), /*distributed=*/true);
  const runtime::TrainConfig config = train_config(o);
  const partition::PartitionMeta meta = partition::read_partition_meta(o.partitions);
  if (rank == 0)
    std::fprintf(stderr,
                 "halo train: %s partitioned into %d parts (%s), %d ranks, %s, %s, %d threads "
                 "per rank, overlap %s\n",
                 meta.dataset.c_str(), meta.book.num_parts(),
                 std::string(partition::to_string(meta.config.method)).c_str(), comm->size(),
                 o.model.c_str(), device_name(res).c_str(), res.cpu_exec().num_threads,
                 o.no_overlap ? "off" : "on");
  const bool tty = isatty(fileno(stderr)) != 0;
  runtime::EpochCallback progress;
  if (rank == 0) progress = [tty](const runtime::EpochStats& s) { print_progress(s, tty); };
  runtime::DistributedOptions options;
  options.overlap = !o.no_overlap;
  if (o.mode == "mini-batch") options.mini_batch = mini_batch_config(o);
  runtime::DistributedRun run =
      runtime::train_distributed(res, *comm, o.partitions, config, options, progress);
  if (rank == 0) {
    const runtime::TrainResult& r = run.result;
    print_summary(r);
    if (o.mode == "mini-batch")  // sampling and feature traffic; overlap is not measured there
      std::printf("exchange: %.1f KB per epoch\n",
                  static_cast<double>(r.exchange_bytes_per_epoch) / 1e3);
    else
      std::printf(
          "exchange: %.1f KB per epoch, %.3f ms per rank, %.0f%% hidden; all-reduce %.3f ms\n",
          static_cast<double>(r.exchange_bytes_per_epoch) / 1e3, r.exchange_time_s * 1e3,
          r.exchange_hidden_fraction * 100, r.allreduce_time_s * 1e3);
    if (!o.save_model.empty()) run.model.save(res, o.save_model);
    if (!o.json.empty()) {
      nlohmann::json j = result_json(o, r, res);
      j["dataset"] = meta.dataset;
      j["num_nodes"] = meta.num_nodes;
      j["num_edges"] = meta.num_edges;
      j["partitions"] = o.partitions;
      j["partition_method"] = partition::to_string(meta.config.method);
      j["overlap"] = !o.no_overlap;
      if (o.mode == "mini-batch") {
        j["batch_size"] = o.batch_size;
        j["fanouts"] = o.fanouts;
        j["cache_mb"] = o.cache_mb;
      }
      j["exchange_bytes_per_epoch"] = r.exchange_bytes_per_epoch;
      j["exchange_time_s"] = r.exchange_time_s;
      j["exchange_exposed_s"] = r.exchange_exposed_s;
      j["compute_time_s"] = r.compute_time_s;
      j["exchange_hidden_fraction"] = r.exchange_hidden_fraction;
      j["allreduce_time_s"] = r.allreduce_time_s;
      write_atomically(o.json, j.dump(2) + "\n");
    }
  }
  comm->barrier();  // no rank exits (finalising MPI) before rank 0 has written its results
  return 0;
}

/// Rejects a path whose directory does not exist, before any training time is spent.
const CLI::Validator kWritablePath(
    [](std::string& path) -> std::string {
      const auto dir = std::filesystem::path(path).parent_path();
      if (!dir.empty() && !std::filesystem::is_directory(dir))
        return "directory '" + dir.string() + "' does not exist";
      return {};
    },
    "PATH", "WritablePath");

}  // namespace

Command add_train_command(CLI::App& app) {
  auto o = std::make_shared<TrainOptions>();
  CLI::App* sub = app.add_subcommand(
      "train",
      "Train a GNN on a dataset (full graph or mini-batches; CPU or GPU; one process, or one rank "
      "per partition)");
  add_dataset_options(sub, o->data);
  sub->add_option("--model", o->model, "Model kind")
      ->check(CLI::IsMember({"gcn", "sage"}))
      ->capture_default_str();
  sub->add_option("--layers", o->layers, "Number of graph convolutions")
      ->check(CLI::Range(1, 16))
      ->capture_default_str();
  sub->add_option("--hidden", o->hidden, "Hidden layer width")
      ->check(CLI::Range(std::int64_t{1}, std::int64_t{1} << 20))
      ->capture_default_str();
  sub->add_option("--dropout", o->dropout, "Dropout probability in [0, 1)")
      ->check(CLI::Range(0.0f, 0.999f))
      ->capture_default_str();
  sub->add_option("--lr", o->lr, "Adam learning rate")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  sub->add_option("--weight-decay", o->weight_decay, "L2 weight decay (added to the gradient)")
      ->check(CLI::NonNegativeNumber)
      ->capture_default_str();
  sub->add_option("--epochs", o->epochs, "Training epochs")
      ->check(CLI::Range(1, 1000000))
      ->capture_default_str();
  sub->add_option("--seed", o->seed, "Seed of every random choice (init, dropout, synthetic data)")
      ->capture_default_str();
  sub->add_option("--threads", o->threads, "CPU threads (default: all cores)")
      ->check(CLI::Range(1, 4096));
  sub->add_option("--device", o->device,
                  "cpu, or cuda: train on a GPU (device 0; with --partitions one GPU per rank, "
                  "by local rank)")
      ->check(CLI::IsMember({"cpu", "cuda"}))
      ->capture_default_str();
  sub->add_flag("--no-normalize-features", o->no_normalize,
                "Keep sparse features raw (default: divide each row by its L1 norm)");
  sub->add_option("--json", o->json, "Write the results as one JSON object to FILE")
      ->check(kWritablePath);
  sub->add_option("--save-model", o->save_model, "Save the best model's parameters to FILE")
      ->check(kWritablePath);
  sub->add_option("--mode", o->mode,
                  "full-graph, or mini-batch (sampled blocks; with --partitions: --model sage)")
      ->check(CLI::IsMember({"full-graph", "mini-batch"}))
      ->capture_default_str();
  sub->add_option("--batch-size", o->batch_size, "Mini-batch: training nodes per batch")
      ->check(CLI::Range(std::int64_t{1}, std::int64_t{1} << 30))
      ->capture_default_str();
  sub->add_option("--fanouts", o->fanouts,
                  "Mini-batch: neighbours sampled per node and layer, input layer first, one per "
                  "layer (-1 = all), e.g. 25,10")
      ->delimiter(',')
      ->check(CLI::Range(-1, 1 << 20))
      ->capture_default_str();
  sub->add_option("--prefetch", o->prefetch,
                  "Mini-batch: batches sampled ahead on a background thread (0 = none)")
      ->check(CLI::Range(0, 16))
      ->capture_default_str();
  sub->add_flag("--replace", o->replace, "Mini-batch: sample neighbours with replacement");
  sub->add_option("--cache-mb", o->cache_mb,
                  "Distributed mini-batch: MiB per rank of feature rows of the highest-degree "
                  "remote nodes, fetched once")
      ->check(CLI::Range(0.0, 1e6))
      ->capture_default_str();
  auto* partitions =
      sub->add_option("--partitions", o->partitions,
                      "Train on the partition directory DIR written by `halo partition`, one rank "
                      "per part: mpiexec -n P halo train --partitions DIR (docs/distributed.md)")
          ->check(CLI::ExistingDirectory);
  partitions->excludes(sub->get_option("--dataset"));
  sub->add_flag("--no-overlap", o->no_overlap,
                "With --partitions: wait for the halo exchange before aggregating (for "
                "comparison; default: overlap it with the owned rows' aggregation)")
      ->needs(partitions);
  // Checks across flags, during parsing: usage errors (exit code 2).
  sub->callback([o] {
    if (o->mode != "mini-batch") return;
    if (!o->partitions.empty() && o->model != "sage")
      throw CLI::ValidationError(
          "--mode", "distributed mini-batch training (--partitions) needs --model sage");
    if (static_cast<int>(o->fanouts.size()) != o->layers)
      throw CLI::ValidationError("--fanouts", "one fan-out per layer expected (" +
                                                  std::to_string(o->layers) + " layers, " +
                                                  std::to_string(o->fanouts.size()) + " given)");
  });
  return {sub, [o] { return o->partitions.empty() ? run_train(*o) : run_distributed(*o); }};
}

}  // namespace halo::cli
