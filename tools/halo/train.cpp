// `halo train`: flags -> runtime::TrainConfig, progress on stderr, summary on stdout, --json.
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>

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
  bool no_normalize = false;
  std::string json;
  std::string save_model;
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

int run_train(const TrainOptions& o) {
  const kernels::Resources res(kernels::Device::Cpu, o.threads);
  const datasets::Dataset data = load_dataset(res, o.data, o.seed);

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

  std::fprintf(
      stderr,
      "halo train: %s (%lld nodes, %lld edges, %lld features, %d classes), %s, %d threads\n",
      data.name.c_str(), static_cast<long long>(data.num_nodes()),
      static_cast<long long>(data.graph.num_edges()), static_cast<long long>(data.num_features()),
      data.num_classes, o.model.c_str(), res.cpu_exec().num_threads);
  nn::Model<float> model = runtime::make_model(res, data, config);
  const bool tty = isatty(fileno(stderr)) != 0;
  const runtime::TrainResult r = runtime::train_full_graph(
      res, data, config, model, [tty](const runtime::EpochStats& s) { print_progress(s, tty); });

  std::printf(
      "best epoch %d: val accuracy %.4f, test accuracy %.4f; median epoch %.3f ms; "
      "trained in %.2f s\n",
      r.best_epoch, r.val_accuracy, r.test_accuracy, r.epoch_time_median_s * 1e3, r.train_time_s);
  if (!o.save_model.empty()) model.save(o.save_model);
  if (!o.json.empty()) {
    const nlohmann::json j = {
        {"dataset", data.name},
        {"model", o.model},
        {"mode", "full-graph"},
        {"device", "cpu"},
        {"world_size", 1},
        {"threads", res.cpu_exec().num_threads},
        {"epochs", o.epochs},
        {"seed", o.seed},
        {"layers", o.layers},
        {"hidden", o.hidden},
        {"dropout", o.dropout},
        {"lr", o.lr},
        {"weight_decay", o.weight_decay},
        {"num_nodes", data.num_nodes()},
        {"num_edges", data.graph.num_edges()},
        {"test_accuracy", r.test_accuracy},
        {"val_accuracy", r.val_accuracy},
        {"best_epoch", r.best_epoch},
        {"final_train_loss", r.final_train_loss},
        {"epoch_time_median_s", r.epoch_time_median_s},
        {"preprocess_time_s", r.preprocess_time_s},
        {"train_time_s", r.train_time_s},
        {"peak_host_memory_bytes", runtime::peak_host_memory_bytes()},
    };
    write_atomically(o.json, j.dump(2) + "\n");
  }
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
  CLI::App* sub = app.add_subcommand("train", "Train a GNN on a dataset (full graph, one process)");
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
  sub->add_flag("--no-normalize-features", o->no_normalize,
                "Keep sparse features raw (default: divide each row by its L1 norm)");
  sub->add_option("--json", o->json, "Write the results as one JSON object to FILE")
      ->check(kWritablePath);
  sub->add_option("--save-model", o->save_model, "Save the best model's parameters to FILE")
      ->check(kWritablePath);
  return {sub, [o] { return run_train(*o); }};
}

}  // namespace halo::cli
