#pragma once
// Uniform neighbour sampling into blocks (message-flow graphs), inside a preallocated envelope.

#include <cstddef>
#include <cstdint>
#include <vector>

#include <halo/datasets/dataset.hpp>
#include <halo/kernels/resources.hpp>
#include <halo/kernels/tensor.hpp>
#include <halo/kernels/views.hpp>
#include <halo/sampler/sampler_types.hpp>

namespace halo::sampler {

/// One layer's bipartite graph. Row i lists, as local source ids, the sampled neighbours that
/// send messages to destination i. The destinations are the first sources: local id i < num_dst
/// names the same node as destination and as source (DGL's message-flow graph).
struct Block {
  /// num_dst x num_src; values == nullptr (unweighted: normalisation is the trainer's job).
  kernels::CsrView<kernels::NodeId, float> csr;
  /// Global ids of the num_src sources; the first num_dst are the destinations, the others
  /// follow in order of first occurrence in `csr.indices`.
  kernels::Span<const kernels::NodeId> src_ids;

  std::int64_t num_dst() const { return csr.num_rows; }
  std::int64_t num_src() const { return csr.num_cols; }
  /// Global ids of the destinations (a prefix of src_ids).
  kernels::Span<const kernels::NodeId> dst_ids() const { return {src_ids.data, num_dst()}; }
};

/// The blocks of one batch, input layer first: blocks[l].dst_ids() equals
/// blocks[l + 1].src_ids, and blocks.back().dst_ids() equals the seeds.
struct MiniBatch {
  std::vector<Block> blocks;
  /// Global ids of blocks[0]'s sources: the nodes whose features the first layer reads.
  kernels::Span<const kernels::NodeId> input_nodes;
  kernels::Span<const kernels::NodeId> seeds;
};

/// The key of every draw of hop `hop` (0: the seeds' hop) of batch (epoch, batch) under `seed`:
/// what NeighborSampler uses, for samplers that draw the same neighbours elsewhere (a rank
/// sampling its owned rows for another rank).
std::uint64_t hop_key(std::uint64_t seed, std::uint64_t epoch, std::uint64_t batch,
                      std::size_t hop);

/// Samples blocks for batches of seeds from one graph. Every buffer is allocated once, in the
/// constructor, to the bounds of `plan_envelope`; `sample` allocates nothing and cannot exceed
/// them. CPU only for now (the bodies are single-source; the CUDA launches come later).
/// Not thread-safe: one sampler per thread of control.
class NeighborSampler {
 public:
  /// Borrows `graph` (a host CSR; row v lists the nodes messages to v come from), which must
  /// outlive the sampler, and plans the envelope for batches of up to `batch_size` seeds.
  /// halo::LogicError when res is not a CPU Resources, the graph is not square or well formed,
  /// a row has 2^31 or more entries, the config is invalid (see plan_envelope), or a layer's
  /// bound of destinations + edges reaches 2^31.
  NeighborSampler(const kernels::Resources& res, const datasets::Graph& graph,
                  std::int64_t batch_size, SamplerConfig config);

  /// Samples the blocks of `seeds` (distinct node ids, at most batch_size of them) for
  /// (epoch, batch) of this sampler's seed: the same arguments give the same blocks for any
  /// thread count of `res`. The result and all its views live in the sampler's buffers and
  /// stay valid until the next call. Synchronous; runs on res's OpenMP threads.
  /// halo::LogicError on too many seeds, an id out of range or a repeated seed.
  const MiniBatch& sample(const kernels::Resources& res, kernels::Span<const kernels::NodeId> seeds,
                          std::uint64_t epoch, std::uint64_t batch);

  const SamplerEnvelope& envelope() const { return m_envelope; }
  /// Bytes the constructor allocated (envelope().bytes()).
  std::size_t envelope_bytes() const { return m_envelope.bytes(); }
  /// The most bytes any batch so far has used, measured as SamplerEnvelope::bytes() of that
  /// batch's actual sizes; 0 before the first batch. Never above envelope_bytes().
  std::size_t peak_bytes() const { return m_peak; }

 private:
  struct LayerBuffers {
    kernels::Tensor<std::int64_t> indptr;
    kernels::Tensor<kernels::NodeId> indices;
    kernels::Tensor<kernels::NodeId> src_ids;
  };
  /// Runs one hop: samples for `dst`, fills block l and its buffers.
  void sample_hop(const kernels::Resources& res, kernels::Span<const kernels::NodeId> dst,
                  std::uint64_t hop_key, std::size_t l, bool check_distinct);

  kernels::CsrView<kernels::NodeId, float> m_graph;
  SamplerConfig m_config;
  SamplerEnvelope m_envelope;
  SamplerEnvelope m_used;  // this batch's sizes; preallocated like everything else
  kernels::Tensor<kernels::NodeId> m_seeds;
  std::vector<LayerBuffers> m_layers;
  kernels::Tensor<std::uint64_t> m_table;
  kernels::Tensor<std::int64_t> m_scratch;
  kernels::Tensor<std::int64_t> m_scan;
  MiniBatch m_batch;
  std::size_t m_peak = 0;
};

}  // namespace halo::sampler
