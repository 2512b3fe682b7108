#pragma once
// The resource plan of heterogeneous node classification (R-GCN, HGT), in one process or over a
// partition's ranks: memory
// from the model's inventory of its buffers (nn::HeteroFootprint) and the data's sizes, epoch
// time from the calibrated costs of the step's products (docs/scheduler.md, "Heterogeneous
// classification"). The counts come from the dataset (hetero_counts), the prices from CostModel.

#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include <halo/cluster/plan.hpp>
#include <halo/datasets/hetero.hpp>
#include <halo/nn/hetero_model.hpp>
#include <halo/runtime/config.hpp>
#include <halo/runtime/data/shard.hpp>
#include <halo/sampler/hetero_sampler.hpp>

namespace halo::cluster {

/// One rank's part of a heterogeneous partition: per type its owned and local (owned + halo)
/// rows and the rows it sends its peers per exchange, per relation the entries of its owned
/// destinations, per type the sparse features' entries of its local rows (-1: dense or none),
/// and its split.
struct HeteroPartCounts {
  std::vector<std::int64_t> num_owned, num_local, num_send, entries, feature_nnz;
  std::int64_t num_train = 0, num_val = 0, num_test = 0;
};

/// What the plan of a heterogeneous run needs to know about its data.
struct HeteroCounts {
  std::string dataset;
  nn::HeteroSchema schema;
  /// Per relation (reverses included): stored entries.
  std::vector<std::int64_t> entries;
  /// Per type: stored entries of its sparse features; -1 for dense features or none.
  std::vector<std::int64_t> feature_nnz;
  std::int64_t num_train = 0, num_val = 0, num_test = 0;
  /// Mini-batch (the config's fan-outs): the sampler's bounds per layer, input layer first
  /// (sampler::plan_hetero_envelope), and the expected blocks of a full batch: per layer and
  /// relation the mean draws of a destination (min(fan-out, in-degree), the in-degree for -1).
  std::vector<sampler::HeteroLayerEnvelope> envelope;
  std::vector<std::vector<double>> mean_draws;
  /// A partition's parts, one per rank (hetero_partition_counts); empty: one process.
  std::vector<HeteroPartCounts> parts;
};

/// The counts of `g` for `config` (its mini-batch fan-outs, when it has them).
HeteroCounts hetero_counts(const datasets::HeteroGraph& g, const runtime::TrainConfig& config);

/// The counts of the heterogeneous partition in `dir` for `config`, read part by part (each
/// rank's exact sizes; the whole graph's schema and relation entries from meta.json; with
/// mini-batches the sampler's envelope and mean draws from the whole relations' statistics,
/// summed over the parts' owned rows). halo::IoError as partition::read_hetero_part.
HeteroCounts hetero_partition_counts(const std::filesystem::path& dir,
                                     const runtime::TrainConfig& config);

/// The counts of the run `shard` is one rank of, from the shard itself (what `halo train`
/// predicts its own peak and epoch time from, the live metrics' predicted gauges): one
/// process's dataset (hetero_counts), or this rank's part, every other rank's taken to be like it
/// (a rank knows only its own).
HeteroCounts hetero_shard_counts(const runtime::HeteroShard& shard,
                                 const runtime::TrainConfig& config);

/// The plan of `config` (config.hetero's model) on `c`, in one process or one rank per part of
/// c.parts (full graph or mini-batches), with `threads` threads per rank on the CPU.
/// halo::LogicError for a device other than "cpu" or counts that do not fit.
Plan make_hetero_plan(const HeteroCounts& c, const runtime::TrainConfig& config,
                      const CostModel& costs, const std::string& device, int threads);

}  // namespace halo::cluster
