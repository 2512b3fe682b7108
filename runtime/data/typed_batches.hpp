#pragma once
// Typed batch sources: what each training step of a heterogeneous task computes on, as
// BatchSource is for a homogeneous one. The whole typed graph (one batch an epoch) or sampled
// typed blocks (sampler::HeteroNeighborSampler) on a rank's part of a heterogeneous partition
// (one process: the one part): the relations' rows drawn by their owners (RemoteNeighbors), the
// input rows from per-type FeatureStores with their caches.

#include <cstdint>
#include <memory>
#include <span>
#include <utility>
#include <vector>

#include <halo/kernels/features.hpp>
#include <halo/kernels/resources.hpp>
#include <halo/kernels/tensor.hpp>
#include <halo/nn/hetero.hpp>
#include <halo/partition/formats/partition_format.hpp>
#include <halo/runtime/comm/comm.hpp>
#include <halo/runtime/config.hpp>
#include <halo/runtime/data/feature_store.hpp>
#include <halo/runtime/data/shard.hpp>
#include <halo/runtime/engine/results.hpp>

namespace halo::sampler {
class HeteroNeighborSampler;
class LocalNeighbors;
class NeighborSource;
}  // namespace halo::sampler

namespace halo::runtime {

class RemoteNeighbors;

/// Per node type of a heterogeneous partition: the rank owning every node of the whole graph
/// (type-local ids) and its row there, and `book`, P + 1 offsets numbering each type's nodes by
/// owner (a node's partition id of its type: book[owner] + row).
struct TypeOwners {
  std::vector<std::vector<std::int32_t>> owner;
  std::vector<std::vector<kernels::NodeId>> row;
  std::vector<std::vector<std::int64_t>> book;
  kernels::NodeId partition_id(std::size_t type, kernels::NodeId u) const {
    const auto v = static_cast<std::size_t>(u);
    return static_cast<kernels::NodeId>(book[type][static_cast<std::size_t>(owner[type][v])] +
                                        row[type][v]);
  }
};

/// The owners of `layout`'s partition: every rank's owned ids, gathered once. Collective.
TypeOwners gather_type_owners(const partition::HeteroPartLayout& layout, Comm& comm);

/// One training step's inputs of a heterogeneous task, on the device of the run.
struct TypedBatch {
  /// One graph (every layer), or one block per layer, input layer first.
  std::span<const nn::HeteroGraphView<float>> graphs;
  /// Per node type, the input rows of graphs[0]'s sources (empty matrices for featureless types).
  std::span<const kernels::FeatureMatrix<float>* const> x;
  /// labels[r] for logit row r; `rows` the logit rows that carry the loss.
  kernels::Span<const std::int32_t> labels;
  kernels::Span<const kernels::NodeId> rows;
  /// The loss's divisor: the step's rows over all ranks.
  std::int64_t loss_rows = 0;
  /// nn::Context::epoch of the step: keys its dropout masks.
  std::uint64_t dropout_key = 0;
};

/// Contract as BatchSource's: begin_epoch(e, first, stages), then next() for batches first ..
/// batches_per_epoch() - 1 (each valid until the following call), then end_epoch(), or
/// stop_epoch() when the epoch stops early (a checkpoint's resume continues at the next batch).
/// The layers of the epoch's batches add their HGNN stage times to `stages` (sampling and
/// gathering to subgraph_build_s). With several ranks every call is collective.
class TypedBatchSource {
 public:
  virtual ~TypedBatchSource() = default;
  virtual std::int64_t batches_per_epoch() const = 0;
  virtual void begin_epoch(std::uint64_t epoch, std::int64_t first_batch,
                           nn::HeteroStageTimes* stages) = 0;
  virtual const TypedBatch& next() = 0;
  virtual void stop_epoch() = 0;
  /// Adds what the epoch's preparation measured on this rank to `s` (the sampled edges summed
  /// over the ranks; the fetch counters are the task's to reduce: detail::reduce_epoch_counters).
  virtual void end_epoch(EpochStats& s) = 0;
};

/// The whole typed graph `view` (borrowed) as one batch per epoch: the inputs `x`, the loss over
/// the training rows `train_rows` of this rank and `num_train` of all ranks.
class FullTypedGraph final : public TypedBatchSource {
 public:
  FullTypedGraph(nn::HeteroGraphView<float>& view,
                 std::span<const kernels::FeatureMatrix<float>* const> x,
                 kernels::Span<const std::int32_t> labels,
                 kernels::Span<const kernels::NodeId> train_rows, std::int64_t num_train);
  std::int64_t batches_per_epoch() const override { return 1; }
  void begin_epoch(std::uint64_t epoch, std::int64_t first_batch,
                   nn::HeteroStageTimes* stages) override;
  const TypedBatch& next() override { return m_batch; }
  void stop_epoch() override { m_view.times = nullptr; }
  void end_epoch(EpochStats&) override { m_view.times = nullptr; }

 private:
  nn::HeteroGraphView<float>& m_view;
  TypedBatch m_batch;
};

/// Typed mini-batches (CPU) on a rank's part (one process: the one part). Every epoch orders the
/// training nodes of the whole graph (the target type's) by a key drawn per (seed, epoch, id),
/// ties by id, cuts them into batches of config.batch_size (the first config.max_batches when
/// > 0) and gives each rank the seeds it owns; a batch's typed blocks come from a
/// sampler::HeteroNeighborSampler over every relation's owned rows served to every rank
/// (RemoteNeighbors; the one part of one process: the relations as stored), its input rows per
/// featured type from a FeatureStore of the owned rows
/// with config.cache_mb of cache, its seeds' labels from `labels` (the shard's local target
/// rows). Dropout keys: epoch x batches + batch. Every buffer is sized once from the sampler's
/// envelope; nothing is allocated per batch. `view` gives the type offsets and relation names
/// of the blocks; `owners` is the part's (gather_type_owners). Borrows its arguments.
class SampledTypedBatches final : public TypedBatchSource {
 public:
  SampledTypedBatches(const kernels::Resources& res, const HeteroShard& shard,
                      const TypeOwners& owners, const nn::HeteroGraphView<float>& view,
                      std::span<const std::int32_t> labels, const TrainConfig& config);
  ~SampledTypedBatches() override;
  std::int64_t batches_per_epoch() const override { return m_batches; }
  void begin_epoch(std::uint64_t epoch, std::int64_t first_batch,
                   nn::HeteroStageTimes* stages) override;
  const TypedBatch& next() override;
  void stop_epoch() override;
  void end_epoch(EpochStats& s) override;

 private:
  /// The sampler's source per relation: the owned rows with global source ids, served to every
  /// rank (RemoteNeighbors); the one part of one process: the relations as stored.
  std::vector<sampler::NeighborSource*> neighbor_sources();
  /// The feature stores of the featured types, for batches of up to `rows` rows per type.
  void open_stores(const std::vector<std::int64_t>& rows);

  const kernels::Resources& m_res;
  const HeteroShard& m_shard;
  const TypeOwners& m_owners;
  std::span<const std::int32_t> m_labels;
  MiniBatchConfig m_config;
  std::uint64_t m_seed = 0;
  bool m_normalize = true;
  bool m_profile = false;  // TrainConfig::profile: the preparation's times in EpochStats::profile
  std::int64_t m_batches = 0;
  std::unique_ptr<sampler::HeteroNeighborSampler> m_sampler;
  std::vector<nn::HeteroGraphView<float>> m_blocks;                        // per layer
  std::vector<std::vector<kernels::Tensor<kernels::NodeId>>> m_block_ids;  // per layer, type
  kernels::FeatureMatrix<float> m_no_features;                 // a featureless type's input
  std::vector<const kernels::FeatureMatrix<float>*> m_inputs;  // what the batch reads
  kernels::Tensor<std::int32_t> m_batch_labels;
  kernels::Tensor<kernels::NodeId> m_batch_rows;  // 0 .. batch_size - 1
  std::vector<kernels::NodeId> m_train, m_seeds;  // every rank's training nodes; a batch's own
  // Per relation the owned rows by global id and their RemoteNeighbors; per type with features
  // a FeatureStore of its owned rows (null: featureless) and its batch inputs.
  std::vector<datasets::Graph> m_owned_rows;
  // The one part of one process: per relation its own rows as the sampler's source.
  std::vector<std::unique_ptr<sampler::LocalNeighbors>> m_local;
  std::vector<const datasets::Graph*> m_sources_by_id;  // per relation: m_owned_rows' or its own
  std::vector<std::unique_ptr<RemoteNeighbors>> m_remote;
  std::vector<std::unique_ptr<partition::Part>> m_type_parts;
  std::vector<std::unique_ptr<FeatureStore>> m_stores;
  std::vector<BatchInputs> m_store_inputs;
  std::vector<kernels::NodeId> m_pids;
  // The epoch: the training nodes in its order, the next batch, where stage times go, and what
  // its preparation measured.
  std::uint64_t m_epoch = 0;
  std::vector<std::pair<std::uint64_t, kernels::NodeId>> m_order;
  std::int64_t m_next = 0;
  nn::HeteroStageTimes* m_stages = nullptr;
  std::vector<std::int64_t> m_sampled_edges;
  FetchStats m_fetch;
  std::int64_t m_syncs = 0;
  double m_sample_s = 0, m_gather_s = 0;
  TypedBatch m_batch;
};

}  // namespace halo::runtime
