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
};

struct TrainResult {
  int best_epoch = 0;        // highest validation accuracy (ties: lower validation loss)
  double val_accuracy = 0;   // at best_epoch
  double test_accuracy = 0;  // at best_epoch
  double final_train_loss = 0;
  double preprocess_time_s = 0;  // graph symmetrisation / normalisation, feature normalisation
  double train_time_s = 0;       // all epochs, evaluation included
  double epoch_time_median_s = 0;
  std::vector<EpochStats> history;
};

using EpochCallback = std::function<void(const EpochStats&)>;

/// The inputs of a full-graph model: the graph prepared for its layers (GCN: symmetric
/// D^-1/2 (A + I) D^-1/2; SAGE: symmetric, no self-loops, unweighted) and the features (row-
/// row-normalised when sparse and asked).
struct FullGraphInputs {
  kernels::CsrMatrix<kernels::NodeId, float> graph;
  kernels::FeatureMatrix<float> features;
};
FullGraphInputs prepare_full_graph(const kernels::Resources& res, const datasets::Dataset& data,
                                   nn::ModelKind kind, bool normalize_features);

/// One full-graph training set-up: prepared inputs, model, Adam. `train_full_graph` drives it;
/// benchmarks and embedding programs can call the steps directly. Keeps references to `data` and
/// `model`, which must outlive it.
class FullGraphTrainer {
 public:
  FullGraphTrainer(const kernels::Resources& res, const datasets::Dataset& data,
                   const TrainConfig& config, nn::Model<float>& model);
  /// Forward (dropout on), loss on the training nodes, backward, one Adam step. Returns the loss.
  double train_epoch(std::uint64_t epoch);
  struct Evaluation {
    double train_accuracy = 0, val_loss = 0, val_accuracy = 0, test_accuracy = 0;
  };
  /// A forward pass without dropout, scored on every split.
  Evaluation evaluate();
  double preprocess_time_s() const { return m_preprocess_time_s; }

 private:
  const kernels::Resources& m_res;
  const datasets::Dataset& m_data;
  TrainConfig m_config;
  nn::Model<float>& m_model;
  double m_preprocess_time_s = 0;  // set while m_inputs is built: declared before it
  FullGraphInputs m_inputs;
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

/// The process's peak resident set size so far, in bytes.
std::int64_t peak_host_memory_bytes();

}  // namespace halo::runtime
