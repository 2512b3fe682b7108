#include <algorithm>
#include <functional>
#include <numeric>
#include <variant>
#include <vector>

#include <halo/kernels/elementwise.hpp>
#include <halo/kernels/exec.hpp>
#include <halo/kernels/gather.hpp>
#include <halo/kernels/scan.hpp>
#include <halo/sampler/batch.hpp>
#include <halo/sampler/batch_body.hpp>

namespace halo::sampler {

using kernels::NodeId;
using SparseFeatures = kernels::CsrMatrix<std::int32_t, float>;

void gcn_block_weights(const kernels::Resources& res, const Block& block,
                       const std::int64_t* src_degrees, kernels::CsrMatrix<NodeId, float>& out) {
  HALO_EXPECTS(block.csr.num_entries >= 0, "gcn_block_weights: the block's entry count is unknown");
  const std::int64_t entries = block.csr.num_entries + block.num_dst();
  // Exact shapes: the view's entry count sizes library calls (cuSPARSE).
  out.indptr.reshape_within(block.num_dst() + 1, 1);
  out.indices.reshape_within(entries, 1);
  out.values.reshape_within(entries, 1);
  out.num_cols = block.num_src();
  kernels::launch(res, block.num_dst(),
                  detail::GcnBlockNormBody{block.csr, src_degrees, out.indptr.data(),
                                           out.indices.data(), out.values.data()});
}

void self_loop_block(const kernels::Resources& res, const Block& block,
                     kernels::CsrMatrix<NodeId, float>& out) {
  HALO_EXPECTS(block.csr.num_entries >= 0, "self_loop_block: the block's entry count is unknown");
  const std::int64_t entries = block.csr.num_entries + block.num_dst();
  out.indptr.reshape_within(block.num_dst() + 1, 1);
  out.indices.reshape_within(entries, 1);
  out.num_cols = block.num_src();
  kernels::launch(res, block.num_dst(),
                  detail::SelfLoopBlockBody{block.csr, out.indptr.data(), out.indices.data()});
}

template <class T>
void gather_values(const kernels::Resources& res, const T* in, kernels::Span<const NodeId> ids,
                   NodeId offset, T* out) {
  kernels::launch(res, ids.size, detail::GatherValuesBody<T>{in, ids.data, offset, out});
}
template void gather_values<std::int32_t>(const kernels::Resources&, const std::int32_t*,
                                          kernels::Span<const NodeId>, NodeId, std::int32_t*);
template void gather_values<std::int64_t>(const kernels::Resources&, const std::int64_t*,
                                          kernels::Span<const NodeId>, NodeId, std::int64_t*);

void gather_feature_rows(const kernels::Resources& res, const kernels::FeatureMatrix<float>& x,
                         kernels::Span<const NodeId> ids, kernels::FeatureMatrix<float>& out,
                         kernels::Tensor<std::int64_t>& scan_sums, std::int64_t& host_syncs,
                         const GatherDropout& dropout) {
  if (const auto* all = std::get_if<SparseFeatures>(&x)) {
    auto& o = std::get<SparseFeatures>(out);
    o.indptr.reshape_within(ids.size + 1, 1);
    std::int64_t* indptr = o.indptr.data();
    kernels::launch(res, ids.size,
                    detail::SparseRowLengthBody{all->indptr.data(), ids.data, indptr});
    kernels::inclusive_scan(res, indptr + 1, ids.size, scan_sums.data(), detail::kGatherScanBlock);
    // The entry count shapes the gathered matrix (the sparse dropout checks it): one scalar
    // read back per batch on a device.
    std::int64_t entries = 0;
    if (res.device() != kernels::Device::Cpu) ++host_syncs;
    kernels::copy_bytes(res, &entries, kernels::Device::Cpu, indptr + ids.size, res.device(),
                        sizeof entries);
    o.indices.reshape_within(entries, 1);
    o.values.reshape_within(entries, 1);
    kernels::launch(
        res, ids.size,
        detail::SparseRowCopyBody{all->indptr.data(), all->indices.data(), all->values.data(),
                                  ids.data, indptr, o.indices.data(), o.values.data()});
    if (dropout.p > 0) kernels::dropout(res, dropout.key, dropout.p, o.view(), o.values.span());
    return;
  }
  auto& dense = std::get<kernels::Tensor<float>>(out);
  dense.reshape_within(ids.size, dense.cols());
  const auto& all = std::get<kernels::Tensor<float>>(x);
  if (dropout.p > 0) {
    kernels::gather_dropout(res, dropout.key, dropout.p, all.view(), ids, dense.view());
  } else {
    kernels::gather_rows<NodeId, float>(res, all.view(), ids, dense.view());
  }
}

std::int64_t gather_scan_sums_size(std::int64_t rows) {
  return kernels::scan_blocks(rows, detail::kGatherScanBlock);
}

std::int64_t max_entries(const SparseFeatures& x, std::int64_t rows) {
  std::vector<std::int64_t> lengths(static_cast<std::size_t>(x.num_rows()));
  for (std::int64_t r = 0; r < x.num_rows(); ++r)
    lengths[static_cast<std::size_t>(r)] = x.indptr(r + 1) - x.indptr(r);
  const auto k = static_cast<std::size_t>(std::min<std::int64_t>(rows, x.num_rows()));
  std::partial_sort(lengths.begin(), lengths.begin() + static_cast<std::ptrdiff_t>(k),
                    lengths.end(), std::greater<>());
  return std::accumulate(lengths.begin(), lengths.begin() + static_cast<std::ptrdiff_t>(k),
                         std::int64_t{0});
}

}  // namespace halo::sampler
