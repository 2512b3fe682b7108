#pragma once
// Plain parameter structs of the neighbour sampler: its config, the graph's degree statistics
// and the memory envelope planned from them.

#include <cstddef>
#include <cstdint>
#include <vector>

namespace halo::sampler {

/// How `NeighborSampler` draws.
struct SamplerConfig {
  /// One fan-out per GNN layer, input layer first (DGL's order): fanouts[l] is the number of
  /// neighbours each destination of block l draws, so the seeds draw fanouts.back(). -1 takes
  /// every neighbour; 0 takes none.
  std::vector<int> fanouts;
  /// Draw with replacement (a neighbour may repeat; exactly `fanout` draws when degree > 0).
  /// Without replacement (the default) a destination takes a uniform min(fanout, degree)-subset.
  bool replace = false;
  /// Base seed of the draws (see docs/sampler.md for the keying).
  std::uint64_t seed = 0;
};

/// What the envelope needs to know about a graph.
struct DegreeStats {
  std::int64_t num_nodes = 0;
  std::int64_t num_edges = 0;
  std::int64_t max_degree = 0;
};

/// Upper bounds for one block (one layer).
struct LayerEnvelope {
  std::int64_t num_dst = 0;
  std::int64_t num_edges = 0;
  std::int64_t num_src = 0;
};

/// Upper bounds of every sampler buffer for batches of at most `batch_size` seeds. The same
/// struct, filled with a batch's actual sizes, measures what that batch used.
struct SamplerEnvelope {
  std::int64_t batch_size = 0;
  /// One entry per block, input layer first (like SamplerConfig::fanouts).
  std::vector<LayerEnvelope> layers;
  /// Slots of the relabelling hash table: a power of two > 2 * max num_src (load < 1/2). On the
  /// CPU a hop uses the prefix sized for min(num_nodes, its num_dst + num_edges) ids, so small
  /// batches probe a table that fits in cache; the GPU pipeline, whose sizes stay on the
  /// device, probes the whole table.
  std::int64_t table_slots = 0;
  /// 64-bit scratch entries: first-occurrence prefix sums (num_edges + 1) and table slots of
  /// the sources (num_src), for the largest layer.
  std::int64_t scratch = 0;
  /// 8-byte words of scan storage: the block sums of kernels::inclusive_scan on the CPU, CUB's
  /// temporary storage on a GPU.
  std::int64_t scan_blocks = 0;

  /// Bytes of all buffers: seeds (4 B), per layer indptr (8 B x (num_dst + 1)), indices and
  /// source ids (4 B each), table, scratch and scan blocks (8 B each).
  std::size_t bytes() const;
};

}  // namespace halo::sampler
