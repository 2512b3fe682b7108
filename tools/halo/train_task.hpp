#pragma once
// `halo train`'s tasks. train.cpp is the one driver (ranks, outputs, checkpoints, progress,
// metrics, the summary's frame and the common --json keys); each task registers once which
// command lines are its own, the flags it refuses and why, its other checks, and how it opens
// its data and model (train_node.cpp, train_hetero.cpp, train_link.cpp).

#include <functional>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <utility>
#include <vector>

#include <halo/kernels/resources.hpp>
#include <halo/runtime/runtime.hpp>
#include <halo/tools/halo/checkpoint_options.hpp>
#include <halo/tools/halo/metrics_options.hpp>
#include <halo/tools/halo/train_options.hpp>

namespace halo::cli {

/// `halo train`'s options: the run (shared with `halo plan`) and its outputs.
struct TrainCommandOptions : TrainOptions {
  std::string json;
  std::string save_model;
  MetricsOptions metrics;
  CheckpointOptions checkpoint;
  bool profile = false;
  double stall_timeout = 300;
};

/// One task's run on this rank, as its registration opened it: the data, the model, the
/// configuration; the engine trains it.
class TaskRun {
 public:
  virtual ~TaskRun() = default;
  virtual runtime::Comm& comm() = 0;
  /// What rank 0 says on stderr before training: the data and the model, one line or more.
  virtual std::string banner() const = 0;
  /// The run's configuration (the driver adds the checkpoint settings before train()).
  virtual runtime::TrainConfig& config() = 0;
  /// Live metrics of the run (--metrics-file, --metrics-port): the measured values, and a
  /// task that halo plan models adds its predictions.
  virtual std::unique_ptr<TrainMetrics> start_metrics(const MetricsOptions& o,
                                                      const kernels::Resources& res) {
    return cli::start_metrics(o, comm(), config(), res);
  }
  /// Trains (collective over comm()), calling on_epoch and on_step; the model keeps the kept
  /// epoch's parameters.
  virtual runtime::TrainResult train(const runtime::EpochCallback& on_epoch,
                                     const runtime::StepCallback& on_step) = 0;
  /// The scores the progress line shows after the loss: (label, metric name).
  virtual std::vector<std::pair<std::string, std::string>> progress() const = 0;
  /// Rank 0's summary on stdout after training.
  virtual std::string summary(const runtime::TrainResult& r) const = 0;
  /// The task's own --json keys (the driver writes the common ones: the result's metrics, times,
  /// ranks, checkpoints, memory).
  virtual nlohmann::json json(const runtime::TrainResult& r) const = 0;
  /// --save-model FILE (rank 0, after training); a task registered with a refusal of
  /// --save-model is never asked.
  virtual void save_model(const std::string& path, const runtime::TrainResult& r) {
    (void)path, (void)r;
  }
};

/// A flag (or flags) of `halo train` a task does not take, when the command line gave it, and
/// why: a usage error "FLAG: not supported for TASK (WHY)".
struct Refusal {
  std::string flag;
  std::function<bool(const TrainCommandOptions&)> given;
  std::string why;
};

/// A task as `halo train` knows it.
struct TaskRegistration {
  std::string id;    // --json's "task": "node", "heterogeneous-node-classification", "link"
  std::string name;  // as messages name it: "heterogeneous datasets", "--task link", ...
  /// Whether a command line is this task's (the first registration that says so takes it).
  std::function<bool(const TrainCommandOptions&)> selects;
  std::vector<Refusal> refusals;
  /// The task's other checks of the flags, before any data is read (UsageError).
  std::function<void(const TrainCommandOptions&)> check;
  /// Opens the task's data on this rank of `world` (collective) and builds its model.
  std::function<std::unique_ptr<TaskRun>(const TrainCommandOptions&, runtime::Comm& world,
                                         const kernels::Resources& res)>
      open;
};

TaskRegistration node_classification_task();
TaskRegistration hetero_classification_task();
TaskRegistration link_prediction_task();

}  // namespace halo::cli
