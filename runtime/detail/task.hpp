#pragma once
// The Trainer's task part (Trainer::Task), shared by the files that define tasks.

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include <halo/runtime/trainer.hpp>

namespace halo::runtime {

namespace detail {
/// A tensor a checkpoint saves and restores, by name.
struct NamedTensor {
  std::string name;
  kernels::Tensor<float>* tensor = nullptr;
};
}  // namespace detail

/// The part a Trainer composes: one task with its graph, batches, features and optimizers.
class Trainer::Task {
 public:
  virtual ~Task() = default;
  /// The steps of `epoch` from at.step on, the running sums starting at at's; after every step
  /// but the last asks `stop` (the ranks' agreement, collective) and, when it says so, returns
  /// false with `at` where the epoch continues. Fills s as Trainer::train_epoch says.
  virtual bool train_epoch(std::uint64_t epoch, EpochStats& s, const StepCallback& on_step,
                           Partial& at, const std::function<bool()>& stop) = 0;
  virtual Evaluation evaluate() = 0;
  /// The tensors the best epoch's snapshot keeps (parameter values, embedding tables), by
  /// name: a checkpoint holds them as "param/NAME" and their best copies as "best/NAME".
  virtual std::vector<detail::NamedTensor> state() = 0;
  /// The optimizer's state a checkpoint holds besides state(): its moments by name and its step
  /// count. The defaults are a task without checkpoints; it refuses checkpoint.dir.
  virtual std::vector<detail::NamedTensor> optimizer_state() { return {}; }
  virtual std::int64_t optimizer_steps() const { return 0; }
  virtual void set_optimizer_steps(std::int64_t steps) { (void)steps; }
  virtual std::int64_t batches_per_epoch() const = 0;
  /// Adds what the task's parts measured over the run (the sampler's envelope, link
  /// prediction's test metrics) to `result`, after the kept epoch's parameters are restored.
  virtual void finish(TrainResult& result) { (void)result; }
  double preprocess_time_s = 0;
};

}  // namespace halo::runtime
