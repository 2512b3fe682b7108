#pragma once
// Node classification: the task of the homogeneous datasets. Any nn::Network (the built-in
// nn::Model: GCN, GraphSAGE; or one composed from Halo's layers) on a Shard, full graph or
// sampled mini-batches, one process or one rank per part of a partition, CPU or GPU.

#include <cstdint>
#include <memory>
#include <string>

#include <halo/kernels/resources.hpp>
#include <halo/nn/model.hpp>
#include <halo/nn/network.hpp>
#include <halo/runtime/config.hpp>
#include <halo/runtime/data/shard.hpp>
#include <halo/runtime/engine/trainer.hpp>

namespace halo::runtime {

/// The task on `shard` with `model` and the parts `config` chooses:
///   - graph: the shard's HaloExchange (a local product in one process), prepared as the
///     network's shape declares (nn::GraphPreparation);
///   - batches: the full graph, or sampled blocks (FullGraphBatches / SampledBatches);
///   - features: a FeatureStore of the owned rows (and remote ones, cached or fetched);
///   - loss: mean NLL over the batch's seeds; scores "train_accuracy", "val_loss",
///     "val_accuracy", "test_accuracy"; the kept epoch: the highest validation accuracy, ties
///     to the lower validation loss;
///   - sync: the gradients summed over the ranks; optimizer: Adam (PyTorch semantics).
/// Every rank computes what one process computes on the whole graph, up to the order of
/// floating-point sums: the loss of a step is divided by its seeds over all ranks, dropout and
/// sampling are keyed by original node ids. Collective over shard.comm for P > 1. Keeps
/// references to its arguments. On a CUDA `res` (model built on it) the data are uploaded once
/// and the steps run on the device; the gradients travel over NCCL when the build has it.
/// config.model's kind, layers and widths are not used: the network's shape() decides.
std::unique_ptr<Task> node_classification(const kernels::Resources& res, Shard& shard,
                                          const TrainConfig& config, nn::Network<float>& model);

/// The model `config.model` describes for data of `in_features` and `num_classes`.
nn::Model<float> make_model(const kernels::Resources& res, std::int64_t in_features,
                            std::int32_t num_classes, const TrainConfig& config);

/// A trained model and what its run measured.
struct TrainRun {
  nn::Model<float> model;
  TrainResult result;
};

/// Builds config.model's model for `shard`, trains it (config.epochs, config.checkpoint) and
/// returns it with the parameters of the kept epoch. Collective over shard.comm.
TrainRun train(const kernels::Resources& res, Shard& shard, const TrainConfig& config,
               const EpochCallback& on_epoch = {}, const StepCallback& on_step = {});

/// What a model file records about a run (nn::ModelFileInfo): the dataset, the preprocessing
/// (`config.normalize_features`; `structural_features` as the data were loaded) and, as one
/// JSON object, the training configuration and `result`'s summary (best epoch, its scores,
/// final loss, ranks). Model::save stores it beside the architecture and parameters.
nn::ModelFileInfo model_file_info(const TrainConfig& config, const TrainResult& result,
                                  const std::string& dataset,
                                  const std::string& structural_features = "");

}  // namespace halo::runtime
