#pragma once
// The Trainer's task part (Trainer::Task), shared by the files that define tasks.

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include <halo/kernels/optim.hpp>
#include <halo/nn/optimizer.hpp>
#include <halo/runtime/engine/trainer.hpp>

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
  /// The optimizers' state a checkpoint holds besides state(): their moments by name, and their
  /// step counts by name (counters(), restored by set_counter). The defaults are a task without
  /// checkpoints; it refuses checkpoint.dir.
  virtual std::vector<detail::NamedTensor> optimizer_state() { return {}; }
  virtual std::vector<std::pair<std::string, std::int64_t>> counters() const { return {}; }
  /// halo::IoError naming the counter when this task has none of that name.
  virtual void set_counter(const std::string& name, std::int64_t /*value*/) {
    throw IoError("checkpoint: counter '" + name + "' is not this task's");
  }
  virtual std::int64_t batches_per_epoch() const = 0;
  /// Adds what the task's parts measured over the run (the sampler's envelope, link
  /// prediction's test metrics) to `result`, after the kept epoch's parameters are restored.
  virtual void finish(TrainResult& result) { (void)result; }
  double preprocess_time_s = 0;
};

namespace detail {

/// The tasks the Trainer's constructors compose (runtime/tasks/node, runtime/tasks/hetero).
std::unique_ptr<Trainer::Task> make_node_classification(const kernels::Resources& res, Shard& shard,
                                                        const TrainConfig& config,
                                                        nn::Network<float>& model);
std::unique_ptr<Trainer::Task> make_hetero_classification(const kernels::Resources& res,
                                                          HeteroShard& shard,
                                                          const TrainConfig& config,
                                                          nn::HeteroModel<float>& model);

/// Sums every parameter's gradient and `loss` over the ranks of `comm` in one all-reduce
/// through `flat` (device) / `host` (host-memory comm with device gradients), allocated once.
double allreduce_gradients(const kernels::Resources& res, Comm& comm,
                           const std::vector<nn::Parameter<float>*>& params, double loss,
                           kernels::Tensor<float>& flat, std::vector<float>& host);
/// The parameters' values by name (what a task's state() starts with).
std::vector<NamedTensor> parameter_state(const std::vector<nn::Parameter<float>*>& params);
/// Adam's moments of `params` as "adam.m/NAME" and "adam.v/NAME" (a task's optimizer_state()).
std::vector<NamedTensor> adam_state(nn::Adam<float>& adam,
                                    const std::vector<nn::Parameter<float>*>& params);
/// halo::Error naming the epoch and batch (1-based) when `loss` is not finite: the run diverged.
void expect_finite(double loss, std::uint64_t epoch, std::int64_t batch);
/// Adam of `c`: its learning rate, and its weight decay when `weight_decay` (SparseAdam and
/// the embeddings take none).
kernels::AdamConfig adam_config(const TrainConfig& c, bool weight_decay);

}  // namespace detail

}  // namespace halo::runtime
