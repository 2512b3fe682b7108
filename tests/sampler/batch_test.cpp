// The bodies that turn sampled blocks into a batch: GCN block weights, GAT's self-loops and the
// sparse-row gather, against the formulas written out and plain loops.
#include <cmath>
#include <gtest/gtest.h>
#include <vector>

#include <halo/kernels/error.hpp>
#include <halo/kernels/exec.hpp>
#include <halo/kernels/scan.hpp>
#include <halo/sampler/batch.hpp>
#include <halo/sampler/batch_body.hpp>

namespace halo::sampler {
namespace {

using kernels::NodeId;

// The GCN block weights, one destination per index, against the formula written out: row i is
// the self-loop 1 / d̂_i, then each sampled neighbour j with (d_i / s_i) / sqrt(d̂_i d̂_j).
TEST(GcnBlockNorm, MatchesTheUnbiasedEstimate) {
  // Global graph of 6 nodes, degrees 3, 1, 2, 4, 0, 2 (only the indptr matters).
  const std::vector<std::int64_t> graph_indptr = {0, 3, 4, 6, 10, 10, 12};
  // Block: destinations are global 3 and 0 (local 0, 1); sources add 5, 2 (local 2, 3).
  // Destination 0 sampled locals {2, 3, 1} (3 of 4), destination 1 sampled {0} (1 of 3).
  const std::vector<NodeId> src_ids = {3, 0, 5, 2};
  const std::vector<std::int64_t> indptr = {0, 3, 4};
  const std::vector<NodeId> indices = {2, 3, 1, 0};
  const kernels::CsrView<NodeId, float> block{indptr.data(), indices.data(), nullptr, 2, 4, false};
  std::vector<std::int64_t> out_indptr(3, -1);
  std::vector<NodeId> out_indices(6, -1);
  std::vector<float> out_values(6, 0);
  const kernels::Resources res(kernels::Device::Cpu, 2);
  std::vector<std::int64_t> src_degrees;
  for (const NodeId v : src_ids)
    src_degrees.push_back(graph_indptr[static_cast<std::size_t>(v) + 1] -
                          graph_indptr[static_cast<std::size_t>(v)]);
  kernels::launch(res, 2,
                  detail::GcnBlockNormBody{block, src_degrees.data(), out_indptr.data(),
                                           out_indices.data(), out_values.data()});
  EXPECT_EQ(out_indptr, (std::vector<std::int64_t>{0, 4, 6}));
  EXPECT_EQ(out_indices, (std::vector<NodeId>{0, 2, 3, 1, 1, 0}));
  const auto degree = [&](NodeId v) {
    return static_cast<double>(graph_indptr[static_cast<std::size_t>(v) + 1] -
                               graph_indptr[static_cast<std::size_t>(v)]);
  };
  const auto weight = [&](NodeId i, NodeId j, double sampled) {
    return degree(i) / sampled / std::sqrt((degree(i) + 1) * (degree(j) + 1));
  };
  const std::vector<double> expected = {1 / (degree(3) + 1), weight(3, 5, 3),     weight(3, 2, 3),
                                        weight(3, 0, 3),     1 / (degree(0) + 1), weight(0, 3, 1)};
  for (std::size_t e = 0; e < expected.size(); ++e)
    EXPECT_NEAR(out_values[e], expected[e], 1e-6 * expected[e]) << "entry " << e;
}

// GAT's block (GraphPreparation::SelfLoops): each destination's self-loop, then its sampled
// row as it was; no values. Through the public op on a block with an empty row.
TEST(SelfLoopBlock, PutsTheSelfLoopFirstAndKeepsTheRows) {
  const std::vector<NodeId> src_ids = {3, 0, 7, 5, 2};
  const std::vector<std::int64_t> indptr = {0, 3, 3, 4};
  const std::vector<NodeId> indices = {3, 4, 1, 0};
  Block block;
  block.csr = {indptr.data(), indices.data(), nullptr, 3, 5, false, 4};
  block.src_ids = {src_ids.data(), 5};
  const kernels::Resources res(kernels::Device::Cpu, 2);
  kernels::CsrMatrix<NodeId, float> out{
      kernels::Tensor<std::int64_t>(res, 8), kernels::Tensor<NodeId>(res, 16), {}, 0, false};
  self_loop_block(res, block, out);
  EXPECT_EQ(out.num_rows(), 3);
  EXPECT_EQ(out.num_cols, 5);
  EXPECT_EQ(out.indptr.to_vector(res), (std::vector<std::int64_t>{0, 4, 5, 7}));
  EXPECT_EQ(out.indices.to_vector(res), (std::vector<NodeId>{0, 3, 4, 1, 1, 2, 0}));
  EXPECT_EQ(out.view().values, nullptr);
  EXPECT_EQ(out.view().num_entries, 7);
  block.csr.num_entries = -1;
  EXPECT_THROW(self_loop_block(res, block, out), LogicError);
}

// The sparse-row gather of the mini-batch inputs (lengths, three-launch scan, copy), on more rows
// than one scan block, against a plain loop.
TEST(SparseRowGather, EqualsCopyingTheRows) {
  const std::int64_t rows = 700, picked = 3 * detail::kGatherScanBlock + 17;
  std::vector<std::int64_t> indptr = {0};
  std::vector<std::int32_t> indices;
  std::vector<float> values;
  for (std::int64_t r = 0; r < rows; ++r) {
    for (std::int64_t k = 0; k < r % 7; ++k) {
      indices.push_back(static_cast<std::int32_t>((r * 13 + k * 5) % 50));
      values.push_back(static_cast<float>(r) + 0.25f * static_cast<float>(k));
    }
    indptr.push_back(static_cast<std::int64_t>(indices.size()));
  }
  std::vector<NodeId> ids;
  for (std::int64_t i = 0; i < picked; ++i) ids.push_back(static_cast<NodeId>((i * 37) % rows));
  std::vector<std::int64_t> expected_indptr = {0};
  std::vector<std::int32_t> expected_indices;
  std::vector<float> expected_values;
  for (const NodeId v : ids) {
    for (std::int64_t e = indptr[static_cast<std::size_t>(v)];
         e < indptr[static_cast<std::size_t>(v) + 1]; ++e) {
      expected_indices.push_back(indices[static_cast<std::size_t>(e)]);
      expected_values.push_back(values[static_cast<std::size_t>(e)]);
    }
    expected_indptr.push_back(static_cast<std::int64_t>(expected_indices.size()));
  }

  const kernels::Resources res(kernels::Device::Cpu, 2);
  std::vector<std::int64_t> out_indptr(static_cast<std::size_t>(picked) + 1, -1);
  std::vector<std::int64_t> sums(4, -1);
  kernels::launch(res, picked,
                  detail::SparseRowLengthBody{indptr.data(), ids.data(), out_indptr.data()});
  std::int64_t* a = out_indptr.data() + 1;
  ASSERT_EQ(kernels::scan_blocks(picked, detail::kGatherScanBlock), 4);
  kernels::inclusive_scan(res, a, picked, sums.data(), detail::kGatherScanBlock);
  ASSERT_EQ(out_indptr, expected_indptr);
  std::vector<std::int32_t> out_indices(expected_indices.size(), -1);
  std::vector<float> out_values(expected_values.size(), -1);
  kernels::launch(
      res, picked,
      detail::SparseRowCopyBody{indptr.data(), indices.data(), values.data(), ids.data(),
                                out_indptr.data(), out_indices.data(), out_values.data()});
  EXPECT_EQ(out_indices, expected_indices);
  EXPECT_EQ(out_values, expected_values);
}

}  // namespace
}  // namespace halo::sampler
