#pragma once
// From sampled blocks to a training batch: the GCN weights of a block and the gathers of the
// batch's node values and feature rows. On res's device, asynchronous on its stream.

#include <cstdint>

#include <halo/kernels/csr.hpp>
#include <halo/kernels/elementwise_body.hpp>
#include <halo/kernels/features.hpp>
#include <halo/kernels/resources.hpp>
#include <halo/kernels/tensor.hpp>
#include <halo/sampler/neighbor_sampler.hpp>

namespace halo::sampler {

/// Writes into `out` (indptr num_dst + 1, indices and values num_edges + num_dst entries of
/// capacity, reshaped here) GCN's weights of `block`: a self-loop per destination and the
/// unbiased estimate (d_i / s_i) / sqrt(d̂_i d̂_j) of the full graph's normalised row
/// (detail::GcnBlockNormBody). `src_degrees[j]` is source j's degree in the whole training
/// graph. Every view and `out` on res's device; the block's entry count must be known on the
/// host (block.csr.num_entries, as the sampler sets it).
void gcn_block_weights(const kernels::Resources& res, const Block& block,
                       const std::int64_t* src_degrees,
                       kernels::CsrMatrix<kernels::NodeId, float>& out);

/// Writes into `out` (indptr num_dst + 1 and indices num_edges + num_dst entries of capacity,
/// reshaped here; values left empty) `block` with a self-loop per destination, first in its row
/// (nn::GraphPreparation::SelfLoops: attention layers weigh the edges themselves). On res's
/// device; the block's entry count must be known on the host.
void self_loop_block(const kernels::Resources& res, const Block& block,
                     kernels::CsrMatrix<kernels::NodeId, float>& out);

/// out[i] = in[ids[i] - offset] for i < ids.size (out must hold as many). On res's device.
template <class T>
void gather_values(const kernels::Resources& res, const T* in,
                   kernels::Span<const kernels::NodeId> ids, kernels::NodeId offset, T* out);

/// A dropout applied to rows as they are gathered (a model's input dropout, fused into the
/// batch's gather): the gathered matrix gets the mask kernels::dropout with `key` would apply
/// to it (key.row_ids: one id per gathered row, on the gather's device). p = 0: none.
struct GatherDropout {
  kernels::DropoutKey key;
  float p = 0;
};

/// Rows ids[i] of `x` (dense or sparse, on res's device) into `out`, which has the
/// same kind and was sized for at most as many rows and (sparse) entries: it is reshaped within
/// its storage; with `dropout`, dropped out as they are copied (dense: in the same pass).
/// `scan_sums` holds gather_scan_sums_size(ids.size) entries. A sparse gather reads back its
/// entry count (one synchronisation on a device, counted in `host_syncs`).
void gather_feature_rows(const kernels::Resources& res, const kernels::FeatureMatrix<float>& x,
                         kernels::Span<const kernels::NodeId> ids,
                         kernels::FeatureMatrix<float>& out,
                         kernels::Tensor<std::int64_t>& scan_sums, std::int64_t& host_syncs,
                         const GatherDropout& dropout = {});

/// The entries gather_feature_rows' `scan_sums` needs for a gather of up to `rows` rows.
std::int64_t gather_scan_sums_size(std::int64_t rows);

/// The most stored entries any `rows` rows of the host matrix `x` hold: the capacity a sparse
/// gather of that many rows needs.
std::int64_t max_entries(const kernels::CsrMatrix<std::int32_t, float>& x, std::int64_t rows);

}  // namespace halo::sampler
