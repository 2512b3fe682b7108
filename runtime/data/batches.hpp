#pragma once
// Batch sources: what each training step of an epoch computes on. The full graph (one batch an
// epoch) or sampled blocks, prepared ahead by a producer thread.

#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <span>
#include <utility>
#include <vector>

#include <halo/kernels/features.hpp>
#include <halo/kernels/tensor.hpp>
#include <halo/nn/module.hpp>
#include <halo/partition/formats/partition_format.hpp>
#include <halo/runtime/comm/comm.hpp>
#include <halo/runtime/config.hpp>
#include <halo/runtime/engine/results.hpp>
#include <halo/sampler/sampler_types.hpp>

namespace halo::runtime {

class FeatureStore;
class RemoteNeighbors;

/// The order in which epoch `epoch` of a run seeded `seed` takes the training nodes whose
/// original ids are `original`: `order` (resized to original.size()) lists positions into it,
/// ascending by a keyed draw of each original id (ties by id). Every rank orders the whole
/// graph's training nodes so (SampledBatches), and `halo plan`'s batch probe samples the same
/// first batches. `keys` is scratch, reused between calls.
void epoch_order(std::uint64_t seed, std::uint64_t epoch, std::span<const kernels::NodeId> original,
                 std::vector<std::uint64_t>& keys, std::vector<std::int64_t>& order);

/// One training step's inputs, on the device of the run.
struct Batch {
  /// One graph (every layer), or one block per layer, input layer first.
  std::span<const nn::Adjacency<float>> graphs;
  const kernels::FeatureMatrix<float>* x = nullptr;
  /// labels[r] for logit row r; `rows` the logit rows that carry the loss.
  kernels::Span<const std::int32_t> labels;
  kernels::Span<const kernels::NodeId> rows;
  /// The loss's divisor: the step's rows over all ranks.
  std::int64_t loss_rows = 0;
  /// nn::Context::epoch of the step: keys its dropout masks.
  std::uint64_t dropout_key = 0;
  /// x already holds the model's input dropout (nn::Context::input_dropped).
  bool input_dropped = false;
};

/// Contract: begin_epoch(e, first), then next() for batches first .. batches_per_epoch() - 1
/// (each batch valid until the following call; fewer when the epoch stops early, a checkpoint's
/// resume continuing at the next one), then end_epoch(). With several ranks every call is
/// collective (ranks step through the same batches).
class BatchSource {
 public:
  virtual ~BatchSource() = default;
  virtual std::int64_t batches_per_epoch() const = 0;
  virtual void begin_epoch(std::uint64_t epoch, std::int64_t first_batch) = 0;
  virtual const Batch& next() = 0;
  /// Adds what the epoch's preparation measured to `s`.
  virtual void end_epoch(EpochStats& s) = 0;
};

/// The whole graph as one batch per epoch: `graph` for every layer, the owned features, the
/// loss over the training nodes of all ranks.
class FullGraphBatches final : public BatchSource {
 public:
  FullGraphBatches(nn::Adjacency<float> graph, const kernels::FeatureMatrix<float>& x,
                   kernels::Span<const std::int32_t> labels,
                   kernels::Span<const kernels::NodeId> train_rows, std::int64_t num_train);
  std::int64_t batches_per_epoch() const override { return 1; }
  void begin_epoch(std::uint64_t epoch, std::int64_t) override { m_batch.dropout_key = epoch; }
  const Batch& next() override { return m_batch; }
  void end_epoch(EpochStats&) override {}

 private:
  nn::Adjacency<float> m_graph;
  Batch m_batch;
};

/// GraphSAGE-style batches. Every epoch orders the training nodes of the whole graph by a key
/// drawn per (seed, epoch, original id) (ties by id), cuts them into batches of
/// config.batch_size (the first config.max_batches when > 0) and gives each rank the seeds it
/// owns. A batch's blocks come from a
/// sampler::NeighborSampler (the part's own rows in one process, RemoteNeighbors with several
/// ranks), its input rows from the FeatureStore, its seeds' labels from the part; GCN blocks get
/// their self-loops and weights (sampler::gcn_block_weights), GAT blocks (SelfLoops) their
/// self-loops (sampler::self_loop_block). Dropout masks are keyed by (seed,
/// epoch << 32 | batch, layer, original id); with `input_dropout` > 0 (training) the input
/// layer's mask (nn::kInputDropoutLayer) is applied as the rows are gathered, off the training
/// thread, and the batch says so (Batch::input_dropped). On the CPU, a producer thread (its own
/// Resources of one thread and its own communicator, a duplicate of `comm`) prepares batch i + 1 ..
/// i + prefetch (--prefetch auto: resolved by auto_prefetch on every rank, the same on all) while
/// batch i computes, each in its own slot (sampler and buffers sized once from the envelope); on a
/// device batches are prepared in stream order on `res`, one slot. Nothing is allocated per batch.
///
/// With `seeds` (partition ids of the whole graph, the same list on every rank, no repeats) the
/// batches cut that list in its order, every epoch the same (inference on sampled
/// neighbourhoods, runtime::Inference; node classification's --eval-fanouts), the first
/// config.max_batches when > 0; the training nodes are then not used.
class SampledBatches final : public BatchSource {
 public:
  SampledBatches(const kernels::Resources& res, const partition::Part& part, Comm& comm,
                 FeatureStore& features, kernels::Span<const std::int32_t> labels,
                 const MiniBatchConfig& config, nn::GraphPreparation graph, std::uint64_t seed,
                 float input_dropout, std::vector<kernels::NodeId> seeds = {});
  /// This rank's seeds of batch b (partition ids), in the order of the batch's logit rows.
  kernels::Span<const kernels::NodeId> seeds_of(std::int64_t b) const {
    const auto at = m_mine_at[static_cast<std::size_t>(b)];
    return {m_mine.data() + at, m_mine_at[static_cast<std::size_t>(b) + 1] - at};
  }
  ~SampledBatches() override;
  std::int64_t batches_per_epoch() const override { return m_batches; }
  void begin_epoch(std::uint64_t epoch, std::int64_t first_batch) override;
  const Batch& next() override;
  void end_epoch(EpochStats& s) override;

  /// (sources, destinations) of every layer's block, input layer first, as the slots' buffers
  /// hold them now: what the model reserves its buffers for (nn::Model::reserve). Larger after
  /// a growth (growths()). Thread-safe.
  std::vector<std::pair<std::int64_t, std::int64_t>> layer_bounds() const;
  /// Times a slot's buffers grew because a batch exceeded the measured envelope (the caller
  /// reserves again for layer_bounds()). Thread-safe.
  std::int64_t growths() const { return m_growths.load(); }
  /// Bytes every sampler's buffers hold, summed (after growths); the most one batch used.
  std::size_t envelope_bytes() const;
  std::size_t peak_bytes() const;
  /// Bytes of the sampler's bound (plan_envelope) for as many slots: what an unmeasured
  /// envelope would hold.
  std::size_t bound_bytes() const;
  /// Batches the producer thread prepares ahead, as applied (0: none, on the training thread).
  int prefetch() const { return m_prefetch; }

 private:
  struct Slot;
  class Pipeline;
  void prepare(Slot& slot, std::int64_t batch);
  /// This rank's seeds of every batch of `epoch` (m_mine, m_mine_at), on the host.
  void order(std::uint64_t epoch);
  /// The envelope the run measures (CPU sampling): the largest blocks of the first
  /// kProbeBatches batches of epoch 0, the field-wise maximum over the ranks, widened by
  /// config.envelope_margin within the bound. Collective with several ranks.
  sampler::SamplerEnvelope measure_envelope(const kernels::Resources& sampling,
                                            const sampler::SamplerConfig& sc);
  /// Sizes the slot's buffers that follow its sampler's envelope (gathered rows, GCN blocks,
  /// device copies), and m_bounds.
  void size_slot(Slot& slot);

  const kernels::Resources& m_res;
  int m_prefetch = 0;                       // MiniBatchConfig::prefetch as applied
  const kernels::Resources m_producer_res;  // the producer thread's (one thread)
  const partition::Part& m_part;
  Comm& m_comm;
  std::unique_ptr<Comm> m_producer_comm;  // a duplicate, for the producer thread
  FeatureStore& m_features;
  kernels::Span<const std::int32_t> m_labels;  // the part's labels, on res's device
  MiniBatchConfig m_config;
  nn::GraphPreparation m_graph;
  std::uint64_t m_seed;
  float m_input_dropout;
  bool m_sample_on_host = false;  // a device run with several ranks: blocks copied over
  std::int64_t m_batch_size = 0, m_batches = 0;
  std::uint64_t m_epoch = 0;
  std::int64_t m_first = 0;  // the epoch's first batch (a resumed epoch starts later)
  std::int64_t m_next = 0;   // the next batch next() returns
  int m_in_use = -1;         // the slot of the batch being computed (with a producer)
  std::unique_ptr<RemoteNeighbors> m_source;  // with several ranks
  std::vector<std::unique_ptr<Slot>> m_slots;
  std::unique_ptr<Pipeline> m_pipeline;
  // This epoch's order: keys and the training nodes (partition ids) sorted by them; this
  // rank's seeds batch after batch (m_mine[m_mine_at[b] .. m_mine_at[b + 1]]).
  std::vector<kernels::NodeId> m_fixed;  // the given seeds, or empty: the training nodes
  std::vector<std::uint64_t> m_keys;
  std::vector<std::int64_t> m_order;
  std::vector<kernels::NodeId> m_mine;
  std::vector<std::int64_t> m_mine_at;
  kernels::Tensor<kernels::NodeId> m_mine_d;  // the same on a device (one part)
  kernels::Tensor<kernels::NodeId> m_iota;    // 0 .. batch size - 1: the loss rows
  EpochStats m_stats;                         // the epoch's preparation counters
  std::atomic<std::int64_t> m_growths{0};
  mutable std::mutex m_bounds_mutex;  // m_bounds: the producer grows, the trainer reads
  std::vector<std::pair<std::int64_t, std::int64_t>> m_bounds;
};

}  // namespace halo::runtime
