#pragma once
// The task interface: what the engine (runtime::Trainer) trains. A task owns its data path
// (shard, feature stores, batch sources), its model and optimizers, its loss, its targets and
// metrics, and its state for checkpoints; it declares the score that selects the kept epoch and
// what a checkpoint of it must match. The engine owns the epochs, evaluation order, selection,
// checkpoints, preemption and the run's statistics. Tasks: runtime/tasks/ (docs/architecture.md).

#include <cstdint>
#include <functional>
#include <string>
#include <utility>
#include <vector>

#include <halo/kernels/tensor.hpp>
#include <halo/runtime/comm/comm.hpp>
#include <halo/runtime/engine/checkpoint_types.hpp>
#include <halo/runtime/engine/results.hpp>

namespace halo::runtime {

/// Called after every optimizer step with the 0-based batch index of the epoch.
using StepCallback = std::function<void(std::int64_t batch)>;

/// A tensor a checkpoint saves and restores, by name.
struct NamedTensor {
  std::string name;
  kernels::Tensor<float>* tensor = nullptr;
};

/// Where an epoch stopped between two steps continues, with its running sums (a fresh epoch:
/// step 0, zero sums).
struct Partial {
  std::uint64_t epoch = 0;
  std::int64_t step = 0;
  double loss_sum = 0;
  std::int64_t loss_rows = 0;
  double allreduce_s = 0;
};

/// What selects the epoch a run keeps: the highest `score` of the evaluation (a Metrics name),
/// among equal scores the lowest `tie_break` (empty: the earlier epoch). An epoch whose score is
/// NaN (no validation data) is kept over the ones before it: the last epoch then.
struct Selection {
  std::string score;
  std::string tie_break;
};

/// One task, with its data, model and optimizers, as the Trainer drives it. Collective where
/// the comment says so (every rank calls it in the same order).
class Task {
 public:
  virtual ~Task() = default;
  /// The ranks this task trains across (a SelfComm in one process).
  virtual Comm& comm() = 0;
  virtual Selection selection() const = 0;
  /// What a checkpoint of this run must match (data, ranks, model, training configuration).
  virtual CheckpointIdentity identity() const = 0;
  /// The steps of `epoch` from at.step on, the running sums starting at at's; after every step
  /// but the last asks `stop` (the ranks' agreement, collective) and, when it says so, returns
  /// false with `at` where the epoch continues. Fills s's loss, time and communication fields.
  /// halo::Error when the loss stops being finite (the run diverged).
  virtual bool train_epoch(std::uint64_t epoch, EpochStats& s, const StepCallback& on_step,
                           Partial& at, const std::function<bool()>& stop) = 0;
  /// The scores of the current parameters (no dropout; collective), at least selection()'s.
  virtual Metrics evaluate() = 0;
  /// The tensors the best epoch's snapshot keeps (parameter values, embedding tables), by
  /// name: a checkpoint holds them as "param/NAME" and their best copies as "best/NAME".
  virtual std::vector<NamedTensor> state() = 0;
  /// The optimizers' state a checkpoint holds besides state(): their moments by name, and
  /// their step counts by name (counters(), restored by set_counter).
  virtual std::vector<NamedTensor> optimizer_state() = 0;
  virtual std::vector<std::pair<std::string, std::int64_t>> counters() const = 0;
  /// halo::IoError naming the counter when this task has none of that name.
  virtual void set_counter(const std::string& name, std::int64_t value) = 0;
  virtual std::int64_t batches_per_epoch() const = 0;
  /// Adds what the task's parts measured over the run (the sampler's envelope, scores computed
  /// once, such as scores on test data) to `result`, after the kept epoch's
  /// parameters are restored. Collective.
  virtual void finish(TrainResult& result) { (void)result; }
  /// Seconds the task's set-up took (graph preparation, features, exchange plans).
  virtual double preprocess_time_s() const = 0;

 protected:
  /// halo::IoError for a counter `name` this task does not have (set_counter's refusal).
  [[noreturn]] static void unknown_counter(const std::string& name);
};

}  // namespace halo::runtime
