#pragma once
// Single-source bodies that turn sampled blocks into a training batch: GCN block weights, value
// gathers, and the two passes of a sparse row gather.

#include <cstdint>

#include <halo/kernels/gcn_norm.hpp>
#include <halo/kernels/hd.hpp>
#include <halo/kernels/types.hpp>
#include <halo/kernels/views.hpp>

namespace halo::sampler::detail {

using kernels::NodeId;

/// GCN's propagation on a sampled block, one destination per index: an unbiased estimate of the
/// full graph's D̂^-1/2 (A + I) D̂^-1/2 row. Destination i with d_i neighbours of which s_i were
/// sampled weighs neighbour j by (d_i / s_i) / sqrt(d̂_i d̂_j) and itself by 1 / d̂_i, d̂ = d + 1
/// (degrees of the whole graph, src_degrees[j] for the block's source j). With every neighbour
/// sampled it is the full-graph row exactly. Row i of `out` is the self-loop, then the block's
/// row i in order: it starts at block.indptr[i] + i, so rows are written independently.
struct GcnBlockNormBody {
  kernels::CsrView<NodeId, float> block;  // num_dst x num_src, unweighted, local ids
  const std::int64_t* src_degrees;        // degree of every source (destinations first)
  std::int64_t* out_indptr;               // num_dst + 1
  NodeId* out_indices;                    // block edges + num_dst
  float* out_values;

  HALO_HD void operator()(std::int64_t i) const {
    const std::int64_t begin = block.indptr[i], end = block.indptr[i + 1];
    if (i == 0) out_indptr[0] = 0;
    out_indptr[i + 1] = end + i + 1;
    const auto d_i = static_cast<double>(src_degrees[i]);
    std::int64_t at = begin + i;
    out_indices[at] = static_cast<NodeId>(i);
    out_values[at++] = static_cast<float>(kernels::gcn_weight(d_i + 1, d_i + 1));
    const auto s_i = static_cast<double>(end - begin);
    for (std::int64_t e = begin; e < end; ++e) {
      const NodeId j = block.indices[e];
      out_indices[at] = j;
      out_values[at++] = static_cast<float>(
          kernels::gcn_weight(d_i + 1, static_cast<double>(src_degrees[j]) + 1, d_i / s_i));
    }
  }
};

/// GAT's block (nn::GraphPreparation::SelfLoops), one destination per index: the block's row i
/// after destination i's self-loop (source i: destinations are the first sources), unweighted.
/// Row i starts at block.indptr[i] + i, so rows are written independently.
struct SelfLoopBlockBody {
  kernels::CsrView<NodeId, float> block;  // num_dst x num_src, local ids
  std::int64_t* out_indptr;               // num_dst + 1
  NodeId* out_indices;                    // block edges + num_dst

  HALO_HD void operator()(std::int64_t i) const {
    const std::int64_t begin = block.indptr[i], end = block.indptr[i + 1];
    if (i == 0) out_indptr[0] = 0;
    out_indptr[i + 1] = end + i + 1;
    std::int64_t at = begin + i;
    out_indices[at++] = static_cast<NodeId>(i);
    for (std::int64_t e = begin; e < end; ++e) out_indices[at++] = block.indices[e];
  }
};

/// out[i] = in[ids[i] - offset]: per-node values (labels, degrees) of a batch's nodes.
template <class T>
struct GatherValuesBody {
  const T* in;
  const NodeId* ids;
  NodeId offset;
  T* out;
  HALO_HD void operator()(std::int64_t i) const { out[i] = in[ids[i] - offset]; }
};

/// Gathering rows `rows` of a sparse matrix, first pass: out_indptr[i + 1] = length of row
/// rows[i] (and out_indptr[0] = 0); an inclusive scan of out_indptr[1..n] then makes it the
/// gathered matrix's indptr.
struct SparseRowLengthBody {
  const std::int64_t* indptr;
  const NodeId* rows;
  std::int64_t* out_indptr;
  HALO_HD void operator()(std::int64_t i) const {
    if (i == 0) out_indptr[0] = 0;
    out_indptr[i + 1] = indptr[rows[i] + 1] - indptr[rows[i]];
  }
};

/// Second pass: row i's entries copied to out_indptr[i] .. out_indptr[i + 1].
struct SparseRowCopyBody {
  const std::int64_t* indptr;
  const std::int32_t* indices;
  const float* values;
  const NodeId* rows;
  const std::int64_t* out_indptr;
  std::int32_t* out_indices;
  float* out_values;
  HALO_HD void operator()(std::int64_t i) const {
    const std::int64_t src = indptr[rows[i]];
    const std::int64_t n = indptr[rows[i] + 1] - src;
    const std::int64_t dst = out_indptr[i];
    for (std::int64_t k = 0; k < n; ++k) {
      out_indices[dst + k] = indices[src + k];
      out_values[dst + k] = values[src + k];
    }
  }
};

/// Entries per block of the gathered indptr's scan (kernels::inclusive_scan). Batches gather at
/// most a few million rows, so the serial pass over block sums stays short, and a block is
/// enough work for one GPU thread.
constexpr std::int64_t kGatherScanBlock = 256;

}  // namespace halo::sampler::detail
