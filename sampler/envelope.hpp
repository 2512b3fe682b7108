#pragma once
// The memory envelope: upper bounds of every sampler buffer, planned before the first batch.

#include <cstdint>
#include <vector>

#include <halo/kernels/types.hpp>
#include <halo/kernels/views.hpp>
#include <halo/sampler/sampler_types.hpp>

namespace halo::sampler {

/// Nodes, edges and the largest row length of `graph` (host CSR). O(num_nodes), thread-safe.
DegreeStats degree_stats(kernels::CsrView<kernels::NodeId, float> graph);

/// Upper bounds for batches of at most `batch_size` distinct seeds sampled with `fanouts`
/// (input layer first) from a graph with `stats`. Hop by hop from the seeds (layer L-1 first):
///   num_dst   = min(batch_size, num_nodes) for the seeds, else the previous hop's num_src;
///   per_dst   = max_degree (fan-out -1), fanout if replace and max_degree > 0 (0 if not),
///               min(fanout, max_degree) otherwise;
///   num_edges = num_dst * per_dst, capped by num_edges of the graph unless drawing with
///               replacement (distinct destinations take distinct edges);
///   num_src   = min(num_nodes, num_dst + num_edges).
/// The table, scratch and scan sizes follow from the largest layer (see SamplerEnvelope).
/// halo::LogicError on batch_size < 1, no fan-outs, a fan-out below -1 or negative stats.
SamplerEnvelope plan_envelope(const DegreeStats& stats, std::int64_t batch_size,
                              const std::vector<int>& fanouts, bool replace);

/// The capacity to allocate for batches like those measured in `largest` (the field-wise
/// maxima of their sizes, NeighborSampler::largest): every layer size times (1 + margin), rounded
/// up, at most `bound`'s; the table for the layers' destinations + edges at load < 1/2 (at least
/// the largest measured, at most the bound's); scratch and scan from the layers. halo::LogicError
/// when the two envelopes have different layers or margin < 0.
SamplerEnvelope provision_envelope(const SamplerEnvelope& largest, const SamplerEnvelope& bound,
                                   double margin);

/// Raises every field of `into` to at least `e`'s (the same layers), in place: nothing is
/// allocated (NeighborSampler keeps its largest sizes so, batch after batch).
void raise_envelope(SamplerEnvelope& into, const SamplerEnvelope& e);

/// The fields as a flat list (batch_size, per layer num_dst, num_edges, num_src, then
/// table_slots, scratch, scan_blocks), for reductions across ranks, and back.
std::vector<std::int64_t> envelope_words(const SamplerEnvelope& e);
SamplerEnvelope envelope_from_words(const std::vector<std::int64_t>& words);

namespace detail {
/// Entries per block of the sampler's CPU scans (kernels::inclusive_scan): large enough that the
/// serial pass over block sums is negligible, small enough that 1M entries give every thread
/// many blocks.
inline constexpr std::int64_t kScanBlock = std::int64_t{1} << 14;

/// Hash table slots for at most `max_keys` distinct ids: a power of two > 2 * max_keys.
std::int64_t table_slots_for(std::int64_t max_keys);

/// Sets scratch and scan_blocks of `e` from its layers. The sampler measures each batch with
/// the same function, so a batch within the layer bounds is within these bounds too.
void size_scratch(SamplerEnvelope& e);
}  // namespace detail

}  // namespace halo::sampler
