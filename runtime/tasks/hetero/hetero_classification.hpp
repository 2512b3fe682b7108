#pragma once
// Heterogeneous node classification: R-GCN and HGT (nn::HeteroModel) on a typed graph, full
// graph or sampled typed blocks, one process or one rank per part of a heterogeneous partition.

#include <cstdint>
#include <filesystem>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include <halo/datasets/hetero.hpp>
#include <halo/kernels/resources.hpp>
#include <halo/nn/hetero_model.hpp>
#include <halo/runtime/config.hpp>
#include <halo/runtime/data/shard.hpp>
#include <halo/runtime/engine/trainer.hpp>

namespace halo::runtime {

/// The task: `model` (config.hetero) on the full graph of `shard` or on sampled typed blocks
/// (config.mini_batch; CPU), in one process or across the ranks of a partition (each rank its
/// seeds of every global batch, the relations' rows and the input features fetched from their
/// owners, per-type feature caches), mean NLL over the training nodes of the target type;
/// scores "train_accuracy", "val_loss", "val_accuracy", "val_macro_f1", "test_accuracy",
/// "test_macro_f1", "test_micro_f1"; the kept epoch: the highest validation accuracy, ties to
/// the lower validation loss. Adam on the dense parameters and SparseAdam (nn::SparseAdam, no
/// weight decay) on the embeddings of the featureless types; the HGNN stages timed per epoch
/// (EpochStats::stage_times: "subgraph_build_s", "feature_projection_s",
/// "neighbor_aggregation_s", "semantic_aggregation_s"). Sparse features are row-normalised as
/// config.normalize_features says. Checkpoints hold the parameters, the embeddings, both
/// optimizers' moments and step counts; mini-batch epochs stop and resume between batches.
std::unique_ptr<Task> hetero_classification(const kernels::Resources& res, HeteroShard& shard,
                                            const TrainConfig& config,
                                            nn::HeteroModel<float>& model);

/// What a HeteroModel needs to know about `g`: types, node counts, feature widths (0 for the
/// featureless types, which get embeddings), relations, target type and classes.
nn::HeteroSchema hetero_schema(const datasets::HeteroGraph& g);

/// A trained heterogeneous model and what its run measured.
struct HeteroTrainRun {
  nn::HeteroModel<float> model;
  TrainResult result;
};

/// Builds config.hetero's model for `shard` and trains it; the model keeps the kept epoch's
/// parameters and embeddings. Collective over shard.comm.
HeteroTrainRun train(const kernels::Resources& res, HeteroShard& shard, const TrainConfig& config,
                     const EpochCallback& on_epoch = {}, const StepCallback& on_step = {});

/// The schema of the whole graph `shard` is part of (hetero_schema of its graph, with every
/// type's nodes of the whole graph on a partition).
nn::HeteroSchema hetero_schema(const HeteroShard& shard);

/// What a trained model gives on `shard`: its scores (as evaluate() after an epoch:
/// "test_accuracy", "test_macro_f1", ...; over every rank of a partition) and the target type's
/// logits, one row per node (on a partition, per owned target row; collective).
struct HeteroPrediction {
  Metrics metrics;
  kernels::Tensor<float> logits;  // host
};
HeteroPrediction predict_hetero(const kernels::Resources& res, HeteroShard& shard,
                                const TrainConfig& config, nn::HeteroModel<float>& model);

/// Type `type`'s rows (every node of the type, type-local id order, host; on a partition its
/// owned rows, collective) after heterogeneous layer `layer` of `model` on the full graph of
/// `shard`, as the evaluation's
/// forward computes them: below the last layer the hidden representation, its ReLU included;
/// `layer` = the model's layers gives the logits, of the target type only (the last layer
/// computes no other).
kernels::Tensor<float> embed_hetero(const kernels::Resources& res, HeteroShard& shard,
                                    const TrainConfig& config, nn::HeteroModel<float>& model,
                                    int layer, std::int32_t type);

/// Writes `model`, trained with `config` on `shard` (one process, or any rank of a partition:
/// the ranks hold the same parameters, and training ends with the embedding rows gathered on
/// every rank), to `path` as a model file of task "heterogeneous-node-classification": its
/// architecture, the schema of the whole dataset, the dataset and its split (the shard's), the
/// preprocessing and `result`'s record; the parameters and embedding tables by name. halo::
/// IoError for a partition that does not record its split.
void save_hetero_model(const kernels::Resources& res, const std::filesystem::path& path,
                       nn::HeteroModel<float>& model, const TrainConfig& config,
                       const HeteroShard& shard, const TrainResult& result);

/// A saved heterogeneous model and what it needs to be applied again: the configuration it was
/// trained with (the architecture, the seed, the preprocessing), its dataset and split.
struct HeteroModelFile {
  nn::HeteroModel<float> model;
  TrainConfig config;
  std::string dataset;
  int split = 0;
  nn::HeteroSchema schema;
};

/// Reads a model save_hetero_model wrote. halo::IoError naming `path` for another task's
/// model, a damaged file or arrays that do not fit the architecture.
HeteroModelFile load_hetero_model(const kernels::Resources& res, const std::filesystem::path& path);

/// halo::IoError naming `path` unless `schema` (the data the model is applied to) is the one the
/// model was built for: types, their node counts and feature widths, relations, target, classes.
void check_hetero_schema(const std::filesystem::path& path, const nn::HeteroSchema& model,
                         const nn::HeteroSchema& data);

/// Per class c of `num_classes`: counts[3c] true positives, counts[3c + 1] false positives,
/// counts[3c + 2] false negatives of the predictions `pred` (one class per row) over `rows`
/// against `labels`. Host memory. Sums over processes add up (all-reduce them).
std::vector<double> class_counts(std::span<const std::int32_t> pred,
                                 std::span<const std::int32_t> labels,
                                 std::span<const kernels::NodeId> rows, std::int32_t num_classes);

/// Macro-F1 (the unweighted mean over the classes present in the labels or the predictions
/// of 2 tp / (2 tp + fp + fn), scikit-learn's `f1_score(average="macro")`) and Micro-F1 (the
/// same ratio over the summed counts: the accuracy, when every row has one label and one
/// prediction), from class_counts. NaN for both without rows.
struct F1Scores {
  double macro = 0, micro = 0;
};
F1Scores f1_scores(std::span<const double> counts);

}  // namespace halo::runtime
