#pragma once
// Full-graph training in one process: epochs, evaluation, best-validation model selection.

#include <cstdint>
#include <functional>
#include <vector>

#include <halo/datasets/dataset.hpp>
#include <halo/nn/model.hpp>
#include <halo/nn/optimizer.hpp>

namespace halo::runtime {

struct TrainConfig {
  nn::ModelConfig model;  // in_features and num_classes are taken from the dataset
  int epochs = 200;
  double lr = 0.01;
  double weight_decay = 5e-4;
  std::uint64_t seed = 0;
  /// Divide each row of sparse (bag-of-words) features by its L1 norm, as Kipf & Welling do for
  /// Cora; dense features (embeddings, the synthetic generator's) are used as given.
  bool normalize_features = true;
};

/// What one epoch measured. Accuracies and losses come from an evaluation pass (no dropout)
/// after the epoch's update, except train_loss, which is the loss the update was computed from.
struct EpochStats {
  int epoch = 0;  // 1-based
  int epochs = 0;
  double train_loss = 0;
  double train_accuracy = 0;
  double val_loss = 0;
  double val_accuracy = 0;
  double test_accuracy = 0;
  double epoch_time_s = 0;  // forward + loss + backward + optimizer step
  // Distributed runs (zero otherwise), over the training step of this epoch:
  std::int64_t exchange_bytes = 0;  // halo rows sent by all ranks together
  double exchange_time_s = 0;       // per rank (mean): packing until the messages completed
  double exchange_exposed_s = 0;    // per rank (mean): the part not hidden behind computation
  double allreduce_time_s = 0;      // per rank (mean): the gradient all-reduce
};

struct TrainResult {
  int best_epoch = 0;        // highest validation accuracy (ties: lower validation loss)
  double val_accuracy = 0;   // at best_epoch
  double test_accuracy = 0;  // at best_epoch
  double final_train_loss = 0;
  double preprocess_time_s = 0;  // graph symmetrisation / normalisation, feature normalisation
  double train_time_s = 0;       // all epochs, evaluation included
  double epoch_time_median_s = 0;
  int world_size = 1;
  // Medians over the epochs of the EpochStats fields of the same names (distributed runs).
  std::int64_t exchange_bytes_per_epoch = 0;
  double exchange_time_s = 0;
  double exchange_exposed_s = 0;
  /// Epoch time minus the exposed exchange and the all-reduce: the rank's own work.
  double compute_time_s = 0;
  /// 1 - exposed / exchange time over all epochs: the share of the exchange hidden behind the
  /// aggregation of owned rows (0 without overlap or without exchange).
  double exchange_hidden_fraction = 0;
  double allreduce_time_s = 0;
  std::vector<EpochStats> history;
};

using EpochCallback = std::function<void(const EpochStats&)>;

/// The inputs of a full-graph model: the graph prepared for its layers (GCN: symmetric
/// D^-1/2 (A + I) D^-1/2; SAGE: symmetric, no self-loops, unweighted) and the features
/// (prepare_features), on res's device. `data` is host data; the preparation always runs on
/// the host (a CPU Resources with res's thread count), and for a CUDA `res` the result is then
/// uploaded once (synchronously).
struct FullGraphInputs {
  kernels::CsrMatrix<kernels::NodeId, float> graph;
  kernels::FeatureMatrix<float> features;
};
FullGraphInputs prepare_full_graph(const kernels::Resources& res, const datasets::Dataset& data,
                                   nn::ModelKind kind, bool normalize_features);

/// A CPU Resources with res's thread count: where host-only steps (datasets::, preprocessing)
/// of a run on res's device take place.
kernels::Resources host_resources(const kernels::Resources& res);

/// A deep copy of `x` (dense or sparse) on res's device; synchronous.
kernels::FeatureMatrix<float> features_to(const kernels::Resources& res,
                                          const kernels::FeatureMatrix<float>& x);

/// A dataset's labels and split node ids on one device: what the losses and the accuracies
/// read. Uploaded once per run.
struct Targets {
  kernels::Tensor<std::int32_t> labels;
  kernels::Tensor<kernels::NodeId> train_idx, val_idx, test_idx;
};
/// Copies `data`'s labels and splits (host tensors) to res's device; synchronous.
Targets upload_targets(const kernels::Resources& res, const datasets::Dataset& data);

/// A copy of `features`, sparse rows divided by their L1 norm when `normalize` (dense ones are
/// used as given): what every trainer feeds its first layer.
kernels::FeatureMatrix<float> prepare_features(const kernels::Resources& res,
                                               const kernels::FeatureMatrix<float>& features,
                                               bool normalize);

/// halo::LogicError unless `model` was built for `data` (features, classes) on res's device.
void check_model(const kernels::Resources& res, nn::Model<float>& model,
                 const datasets::Dataset& data);

/// Adam with the config's learning rate and weight decay (PyTorch defaults otherwise).
kernels::AdamConfig adam_config(const TrainConfig& config);

/// A training set-up that run_epochs drives: one process (FullGraphTrainer) or one rank of
/// several (DistributedTrainer, runtime/distributed.hpp).
class EpochTrainer {
 public:
  virtual ~EpochTrainer() = default;
  /// Forward (dropout on), loss on the training nodes, backward, one optimizer step. Returns
  /// the loss (over every rank's training nodes).
  virtual double train_epoch(std::uint64_t epoch) = 0;
  struct Evaluation {
    double train_accuracy = 0, val_loss = 0, val_accuracy = 0, test_accuracy = 0;
  };
  /// A forward pass without dropout, scored on every split.
  virtual Evaluation evaluate() = 0;
  /// Adds the communication counters of the last train_epoch to `s` (nothing in one process).
  virtual void add_comm_stats(EpochStats& s) { (void)s; }
  /// Seconds the set-up spent preparing the graph and features (TrainResult::preprocess_time_s).
  virtual double preprocess_time_s() const { return 0; }
};

/// Accuracy on every split and the validation loss of full-graph logits (one row per node).
/// logits and `targets` live on res's device; reads four scalars back (synchronises).
EpochTrainer::Evaluation score_splits(const kernels::Resources& res,
                                      const kernels::Tensor<float>& logits, const Targets& targets);
/// The same with the dataset's own (host) tensors: for a CPU `res` only.
EpochTrainer::Evaluation score_splits(const kernels::Resources& res,
                                      const kernels::Tensor<float>& logits,
                                      const datasets::Dataset& data);

/// Runs `epochs` epochs of `trainer` (each: train_epoch timed, then evaluate), calling
/// `on_epoch` after every epoch, and leaves the parameters of the best validation epoch in
/// `model`. The best parameters are kept on the model's device (stream-ordered copies on res's
/// stream, no host round-trip); `res` is the Resources the model's parameters live on.
TrainResult run_epochs(const kernels::Resources& res, EpochTrainer& trainer, int epochs,
                       nn::Model<float>& model, const EpochCallback& on_epoch = {});

/// One full-graph training set-up: prepared inputs, model, Adam. `train_full_graph` drives it;
/// benchmarks and embedding programs can call the steps directly. Keeps a reference to `model`,
/// which must outlive it (what it needs of `data` it copies). On a CUDA `res` (`model` built on
/// it): the graph, features, labels and splits are prepared on the host and uploaded once; an epoch
/// then runs on the device and reads back only the loss (train_epoch) or the four scores
/// (evaluate).
class FullGraphTrainer final : public EpochTrainer {
 public:
  FullGraphTrainer(const kernels::Resources& res, const datasets::Dataset& data,
                   const TrainConfig& config, nn::Model<float>& model);
  double train_epoch(std::uint64_t epoch) override;
  Evaluation evaluate() override;
  double preprocess_time_s() const override { return m_preprocess_time_s; }

 private:
  const kernels::Resources& m_res;
  TrainConfig m_config;
  nn::Model<float>& m_model;
  double m_preprocess_time_s = 0;  // set while m_inputs is built: declared before it
  FullGraphInputs m_inputs;
  Targets m_targets;
  nn::Adam<float> m_optimizer;
  kernels::Tensor<float> m_dlogits;
};

/// Trains `model` (built for `data`) for config.epochs with Adam, calling `on_epoch` after every
/// epoch, and leaves the parameters of the best validation epoch in the model.
TrainResult train_full_graph(const kernels::Resources& res, const datasets::Dataset& data,
                             const TrainConfig& config, nn::Model<float>& model,
                             const EpochCallback& on_epoch = {});

/// Builds the model `config.model` describes for `data` (in_features, num_classes filled in).
nn::Model<float> make_model(const kernels::Resources& res, const datasets::Dataset& data,
                            const TrainConfig& config);
nn::Model<float> make_model(const kernels::Resources& res, std::int64_t in_features,
                            std::int32_t num_classes, const TrainConfig& config);

/// The process's peak resident set size so far, in bytes.
std::int64_t peak_host_memory_bytes();

}  // namespace halo::runtime
