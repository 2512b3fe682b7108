#pragma once
// Uniform neighbour sampling on a heterogeneous graph: fan-outs per layer and relation, typed
// blocks relabelled per node type, inside a preallocated envelope.

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include <halo/datasets/hetero.hpp>
#include <halo/kernels/resources.hpp>
#include <halo/kernels/tensor.hpp>
#include <halo/kernels/views.hpp>
#include <halo/sampler/neighbor_source.hpp>

namespace halo::sampler {

/// How HeteroNeighborSampler draws.
struct HeteroSamplerConfig {
  /// fanouts[l][r]: the neighbours each destination of block l draws over relation r (input
  /// layer first, DGL's order: the seeds draw fanouts.back()); -1 every neighbour, 0 none.
  std::vector<std::vector<int>> fanouts;
  /// Draw with replacement (exactly `fanout` draws per relation where the degree is > 0).
  bool replace = false;
  std::uint64_t seed = 0;
};

/// Parses `--fanouts` for a graph's relations (names as in HeteroGraph::relations): layers
/// separated by ':' (input layer first, the homogeneous order; a ',' list without ':' and
/// without '=' is one fan-out per layer for every relation, DGL's `[10, 5]`), each layer
/// either one number for every relation or `rel=N` pairs separated by ',' plus an optional
/// `*=N` for the relations not named (unnamed relations without `*` take -1, every
/// neighbour). Examples: `10,5`; `writes=5,cites=10,*=3:writes=2,*=2`. halo::LogicError naming
/// the token for a malformed count (below -1), an unknown relation or a relation named twice.
std::vector<std::vector<int>> parse_hetero_fanouts(const std::string& text,
                                                   const std::vector<std::string>& relations);

/// One layer's typed bipartite graph. Per node type t: num_src[t] sources with type-local ids
/// src_ids[t] (the first num_dst[t] are the destinations, the others in order of first
/// occurrence, relation by relation). Per relation r: adj[r] is num_dst[dst_type] x
/// num_src[src_type], row i listing the sampled sources (local ids of src_type) of
/// destination i (no values).
struct HeteroBlock {
  std::vector<std::int64_t> num_dst, num_src;
  std::vector<kernels::Span<const kernels::NodeId>> src_ids;
  std::vector<kernels::CsrView<kernels::NodeId, float>> adj;
};

/// The blocks of one batch, input layer first: blocks[l].num_dst equals blocks[l + 1].num_src
/// (and the destination ids are their source prefixes); blocks.back() has only the seeds (of
/// the target type) as destinations.
struct HeteroMiniBatch {
  std::vector<HeteroBlock> blocks;
  kernels::Span<const kernels::NodeId> seeds;
  /// Sampled edges per relation summed over the blocks (for edges/s figures).
  std::vector<std::int64_t> sampled_edges;
};

/// Upper bounds of one block, from degree statistics: per type destinations and sources, per
/// relation edges. Planned from the seeds outwards as plan_envelope does for one relation:
/// num_dst = min(batch, n_target) for the seeds' type (0 for the others), per relation
/// edges = min(num_dst[dst] * per_dst, edges of the relation) (per_dst = max degree, or
/// min(fanout, max degree); fanout with replacement), num_src[t] = min(n_t, num_dst[t] + the
/// edges of the relations out of t); the next block's destinations are these sources.
struct HeteroLayerEnvelope {
  std::vector<std::int64_t> num_dst, num_src, num_edges;
};
std::vector<HeteroLayerEnvelope> plan_hetero_envelope(const datasets::HeteroGraph& g,
                                                      std::int64_t batch_size,
                                                      const HeteroSamplerConfig& config);
/// The same from counts alone: per relation its (source type, destination type) and its
/// statistics (edges, largest in-degree), per type its nodes, and the seeds' type (what a
/// partition's ranks know of the whole graph).
std::vector<HeteroLayerEnvelope> plan_hetero_envelope(
    const std::vector<std::pair<std::int32_t, std::int32_t>>& relations,
    const std::vector<DegreeStats>& stats, const std::vector<std::int64_t>& num_nodes,
    std::int32_t target_type, std::int64_t batch_size, const HeteroSamplerConfig& config);

/// Where a HeteroNeighborSampler reads the rows of a graph whose rows it does not hold (a
/// partition, runtime::RemoteNeighbors): per type the nodes of the whole graph, per relation a
/// source over type-local ids of its destination type whose draws are type-local ids of its
/// source type and whose stats() are the whole relation's (the envelope is planned from them).
struct HeteroNeighborSources {
  std::vector<std::int64_t> num_nodes;
  std::vector<NeighborSource*> relations;
};

/// Samples typed blocks for batches of target-type seeds. Every buffer is allocated in the
/// constructor to plan_hetero_envelope's bounds (plus one id map per node type, 4 bytes per
/// node); sample() allocates nothing. Counting and drawing run the homogeneous sampler's
/// single-source bodies (sample_body.hpp) per relation on res's threads, keyed by (seed, epoch,
/// batch, hop, relation, node), so the same arguments give the same blocks for any thread
/// count; the relabelling is a serial pass. CPU only. Borrows `g`, which must outlive it. Not
/// thread-safe.
class HeteroNeighborSampler {
 public:
  /// halo::LogicError when the fan-outs do not have one entry per relation per layer, a
  /// fan-out is below -1, batch_size < 1, or `res` is not a CPU Resources.
  HeteroNeighborSampler(const kernels::Resources& res, const datasets::HeteroGraph& g,
                        std::int64_t batch_size, HeteroSamplerConfig config);
  /// The relations' rows from `sources` (borrowed; `g` gives only the types of the relations
  /// and the target type). A source that communicates is collective: every rank samples the
  /// same batches, each with its own seeds (possibly none).
  HeteroNeighborSampler(const kernels::Resources& res, const datasets::HeteroGraph& g,
                        std::int64_t batch_size, HeteroSamplerConfig config,
                        HeteroNeighborSources sources);

  /// The blocks of `seeds` (distinct target-type ids, at most batch_size) for (epoch, batch).
  /// Views into the sampler's buffers, valid until the next call. halo::LogicError on too many
  /// seeds, an id out of range or a repeated seed.
  const HeteroMiniBatch& sample(const kernels::Resources& res,
                                kernels::Span<const kernels::NodeId> seeds, std::uint64_t epoch,
                                std::uint64_t batch);

  const std::vector<HeteroLayerEnvelope>& envelope() const { return m_envelope; }
  /// Bytes the constructor allocated (buffers and id maps).
  std::size_t envelope_bytes() const { return m_bytes; }

 private:
  struct LayerBuffers {
    std::vector<kernels::Tensor<kernels::NodeId>> src_ids;  // per type
    std::vector<kernels::Tensor<std::int64_t>> indptr;      // per relation
    std::vector<kernels::Tensor<kernels::NodeId>> indices;  // per relation
  };
  void sample_hop(const kernels::Resources& res, std::size_t l, std::uint64_t hop_key);

  const datasets::HeteroGraph* m_graph;
  HeteroNeighborSources m_sources;  // empty relations: m_graph's own rows
  HeteroSamplerConfig m_config;
  std::int64_t m_batch_size;
  std::vector<HeteroLayerEnvelope> m_envelope;
  std::vector<LayerBuffers> m_layers;
  std::vector<kernels::Tensor<kernels::NodeId>> m_map;  // per type: local id + 1, 0 when unset
  kernels::Tensor<std::int64_t> m_scan;
  HeteroMiniBatch m_batch;
  std::size_t m_bytes = 0;
};

}  // namespace halo::sampler
