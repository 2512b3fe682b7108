#pragma once
// Single-source bodies of mini-batch preparation: GCN block weights, label and sparse-row gathers.

#include <cstdint>

#include <halo/kernels/hd.hpp>
#include <halo/kernels/hd_math.hpp>
#include <halo/kernels/types.hpp>
#include <halo/kernels/views.hpp>

namespace halo::runtime::detail {

/// GCN's propagation on a sampled block, one destination per index: an unbiased estimate of the
/// full graph's D̂^-1/2 (A + I) D̂^-1/2 row. Destination i with d_i neighbours of which s_i were
/// sampled weighs neighbour j by (d_i / s_i) / sqrt(d̂_i d̂_j) and itself by 1 / d̂_i, d̂ = d + 1
/// (global degrees, from the full graph's indptr). With every neighbour sampled it is the
/// full-graph row exactly. Row i of `out` is the self-loop, then the block's row i in order: it
/// starts at block.indptr[i] + i, so rows are written independently (no scan).
struct GcnBlockNormBody {
  kernels::CsrView<kernels::NodeId, float> block;  // num_dst x num_src, unweighted, local ids
  const kernels::NodeId* src_ids;                  // global id of every source
  const std::int64_t* graph_indptr;                // the full graph's rows: global degrees
  std::int64_t* out_indptr;                        // num_dst + 1
  kernels::NodeId* out_indices;                    // block edges + num_dst
  float* out_values;

  HALO_HD double degree(kernels::NodeId global) const {
    return static_cast<double>(graph_indptr[global + 1] - graph_indptr[global]);
  }
  HALO_HD void operator()(std::int64_t i) const {
    const std::int64_t begin = block.indptr[i], end = block.indptr[i + 1];
    if (i == 0) out_indptr[0] = 0;
    out_indptr[i + 1] = end + i + 1;
    const double d_i = degree(src_ids[i]);
    const double inv_i = 1.0 / kernels::hd::sqrt(d_i + 1);
    std::int64_t at = begin + i;
    out_indices[at] = static_cast<kernels::NodeId>(i);
    out_values[at++] = static_cast<float>(inv_i * inv_i);
    const auto s_i = static_cast<double>(end - begin);
    for (std::int64_t e = begin; e < end; ++e) {
      const kernels::NodeId j = block.indices[e];
      out_indices[at] = j;
      out_values[at++] =
          static_cast<float>(d_i / s_i * inv_i / kernels::hd::sqrt(degree(src_ids[j]) + 1));
    }
  }
};

/// out[i] = labels[ids[i]]: the seeds' labels, in batch order.
struct GatherLabelsBody {
  const std::int32_t* labels;
  const kernels::NodeId* ids;
  std::int32_t* out;
  HALO_HD void operator()(std::int64_t i) const { out[i] = labels[ids[i]]; }
};

/// Gathering rows `rows` of a sparse matrix, first pass: out_indptr[i + 1] = length of row
/// rows[i] (and out_indptr[0] = 0); an inclusive scan of out_indptr[1..n] then makes it the
/// gathered matrix's indptr.
struct SparseRowLengthBody {
  const std::int64_t* indptr;
  const kernels::NodeId* rows;
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
  const kernels::NodeId* rows;
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
constexpr std::int64_t kScanBlock = 256;

}  // namespace halo::runtime::detail
