#pragma once
// Single-source bodies of uniform neighbour sampling: per-destination counts, then the draws.

#include <cstdint>

#include <halo/kernels/hd.hpp>
#include <halo/kernels/rng.hpp>
#include <halo/kernels/types.hpp>
#include <halo/kernels/views.hpp>

namespace halo::sampler::detail {

using kernels::NodeId;

/// Uniform integer in [0, n), n >= 1, from a keyed draw (Lemire's multiply-shift).
HALO_HD inline std::int64_t below_keyed(std::uint64_t key, std::uint64_t index, std::int64_t n) {
  return static_cast<std::int64_t>(
      kernels::rng::mul_hi64(kernels::rng::draw_keyed(key, index), static_cast<std::uint64_t>(n)));
}

/// How many neighbours a destination of degree d draws.
HALO_HD inline std::int64_t sample_count(std::int64_t d, int fanout, bool replace) {
  if (fanout < 0) return d;
  if (replace) return d > 0 ? fanout : 0;
  return fanout < d ? fanout : d;
}

/// counts[i] = the number of neighbours destination dst[i] draws.
///
/// `sizes`, in every hop body: null on the CPU, where the launch covers exactly the hop's work.
/// On the GPU the host does not know a hop's sizes (they stay on the device), so the launch
/// covers the envelope's bound and the body reads the hop's actual {num_dst, num_edges,
/// num_src} from `sizes` (device memory); indices past them do nothing, except that bodies
/// feeding a scan write 0 there, so the scan over the bound is exact.
struct CountBody {
  kernels::CsrView<NodeId, float> graph;
  kernels::Span<const NodeId> dst;
  int fanout;
  bool replace;
  std::int64_t* counts;
  const std::int64_t* sizes = nullptr;
  HALO_HD void operator()(std::int64_t i) const {
    if (sizes != nullptr && i >= sizes[0]) {
      counts[i] = 0;
      return;
    }
    counts[i] = sample_count(graph.degree(dst[i]), fanout, replace);
  }
};

/// The positions in its row (in [0, d)) of the k neighbours a destination of degree d draws,
/// its draws keyed by `key`, into o[0 .. k): with replacement k uniform positions; without, all
/// d in order when k == d, else a uniform k-subset. Positions fit NodeId: the sampler rejects
/// degrees >= 2^31.
HALO_HD inline void draw_positions(std::uint64_t key, std::int64_t d, std::int64_t k,
                                   bool with_replacement, NodeId* o) {
  if (with_replacement) {
    for (std::int64_t j = 0; j < k; ++j) o[j] = static_cast<NodeId>(below_keyed(key, j, d));
  } else if (k == d) {
    for (std::int64_t j = 0; j < k; ++j) o[j] = static_cast<NodeId>(j);
  } else {
    // Floyd's algorithm (Bentley & Floyd 1987): for r = d-k .. d-1 draw t in [0, r] and take
    // t, or r if t is taken already. Every k-subset of positions is equally likely, with k
    // draws; the membership test scans them, O(k^2) compares, cheap for GNN fan-outs.
    for (std::int64_t j = 0; j < k; ++j) {
      const std::int64_t r = d - k + j;
      auto t = static_cast<NodeId>(below_keyed(key, j, r + 1));
      for (std::int64_t q = 0; q < j; ++q)
        if (o[q] == t) {
          t = static_cast<NodeId>(r);
          break;
        }
      o[j] = t;
    }
  }
}

/// Writes the global ids of the neighbours destination dst[i] draws to out[offsets[i] ..
/// offsets[i + 1]). Every draw of node v is keyed by (hop_key, v) only, so a node samples the
/// same neighbours wherever it sits in the batch and whichever thread runs it. When the rows
/// are a part of a graph (a rank's owned rows, dst[i] a local row), row_keys[dst[i]] is the
/// node's global (original) id that keys its draws.
struct FillBody {
  kernels::CsrView<NodeId, float> graph;
  kernels::Span<const NodeId> dst;
  int fanout;
  bool replace;
  std::uint64_t hop_key;
  const std::int64_t* offsets;
  NodeId* out;
  const NodeId* row_keys = nullptr;
  const std::int64_t* sizes = nullptr;  // see CountBody
  HALO_HD void operator()(std::int64_t i) const {
    if (sizes != nullptr && i >= sizes[0]) return;
#if !defined(__CUDA_ARCH__)
    // Random destinations' rows are latency-bound: start fetching a later destination's
    // degree (8 ahead) and neighbour row (4 ahead, its degree fetched by then) now.
    if (sizes == nullptr) {
      if (i + 8 < dst.size) __builtin_prefetch(graph.indptr + dst[i + 8]);
      if (i + 4 < dst.size) __builtin_prefetch(graph.indices + graph.indptr[dst[i + 4]]);
    }
#endif
    const NodeId v = dst[i];
    const NodeId* row = graph.indices + graph.indptr[v];
    const std::int64_t d = graph.degree(v);
    const std::int64_t k = offsets[i + 1] - offsets[i];
    NodeId* o = out + offsets[i];
    const NodeId id = row_keys != nullptr ? row_keys[v] : v;
    draw_positions(kernels::rng::key(hop_key, static_cast<std::uint64_t>(id)), d, k,
                   fanout >= 0 && replace, o);
    for (std::int64_t j = 0; j < k; ++j) o[j] = row[o[j]];
  }
};

}  // namespace halo::sampler::detail
