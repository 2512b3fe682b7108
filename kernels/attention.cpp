#include <algorithm>
#include <limits>
#include <string>

#include <halo/kernels/attention.hpp>
#include <halo/kernels/attention_body.hpp>
#include <halo/kernels/buffer.hpp>
#include <halo/kernels/detail/instantiate.hpp>
#include <halo/kernels/elementwise.hpp>
#include <halo/kernels/exec.hpp>
#include <halo/kernels/gemm.hpp>
#include <halo/kernels/reduce.hpp>

namespace halo::kernels {
namespace {

template <class Idx, class T>
void expect_edges(CsrView<Idx, T> g, ConstMatrixView<T> per_edge, std::int64_t heads,
                  const char* op) {
  HALO_EXPECTS(per_edge.cols == heads && (g.num_entries < 0 || per_edge.rows == g.num_entries),
               std::string(op) + ": per-edge values must be num_edges x heads");
}

template <class T>
void expect_heads(std::int64_t width, std::int64_t heads, const char* op) {
  HALO_EXPECTS(heads >= 1 && width % heads == 0,
               std::string(op) + ": the width must be a multiple of the number of heads (" +
                   std::to_string(width) + " columns, " + std::to_string(heads) + " heads)");
}

/// A segment-softmax body in the GPU's decomposition (one index per row and head).
template <class Body>
Body with_per_head(Body body) {
  body.per_head = true;
  return body;
}

template <class T>
void zero(const Resources& res, MatrixView<T> m) {
  zero_bytes(res, m.data, res.device(), static_cast<std::size_t>(m.size()) * sizeof(T));
}

/// Entries of `g` for the CPU launcher's grain (a device graph: 0, the GPU ignores the work).
template <class Idx, class T>
std::int64_t cpu_entries(const Resources& res, CsrView<Idx, T> g) {
  if (g.num_entries >= 0) return g.num_entries;
  return res.device() == Device::Cpu ? g.num_edges() : 0;
}

}  // namespace

template <class Idx, class T>
void sddmm(const Resources& res, CsrView<Idx, T> g, ConstMatrixView<T> a, ConstMatrixView<T> b,
           MatrixView<T> out) {
  const std::int64_t heads = out.cols;
  expect_heads<T>(a.cols, heads, "sddmm");
  expect_edges<Idx, T>(g, out, heads, "sddmm");
  HALO_EXPECTS(a.rows == g.num_rows && b.rows == g.num_cols && b.cols == a.cols,
               "sddmm: a needs one row per destination, b one per source, both as wide");
  const detail::SddmmBody<Idx, T> body{g, a, b, out, heads};
  launch_by_device(res, g.num_rows, detail::SddmmRowBody<Idx, T>{body}, g.num_rows * heads, body,
                   cpu_entries(res, g) * a.cols);
}

template <class Idx, class T>
void sddmm_backward(const Resources& res, CsrView<Idx, T> g, ConstMatrixView<T> a,
                    ConstMatrixView<T> b, ConstMatrixView<T> dout, MatrixView<T> da,
                    MatrixView<T> db, bool accumulate_da, bool accumulate_db) {
  if (da.data != nullptr) weighted_aggregate(res, g, dout, b, da, accumulate_da);
  if (db.data != nullptr) weighted_aggregate_transposed(res, g, dout, a, db, accumulate_db);
}

template <class Idx, class T>
void weighted_aggregate(const Resources& res, CsrView<Idx, T> g, ConstMatrixView<T> w,
                        ConstMatrixView<T> x, MatrixView<T> out, bool accumulate) {
  expect_heads<T>(out.cols, w.cols, "weighted_aggregate");
  expect_edges<Idx, T>(g, w, w.cols, "weighted_aggregate");
  HALO_EXPECTS(x.rows == g.num_cols && out.rows == g.num_rows && out.cols == x.cols,
               "weighted_aggregate: shape mismatch");
  const detail::WeightedAggregateRowBody<Idx, T> body{g, w, x, out, accumulate};
  launch_by_device(res, out.rows, body, out.size(),
                   detail::WeightedAggregateElementsBody<Idx, T>{body},
                   (cpu_entries(res, g) + out.rows) * x.cols);
}

template <class Idx, class T>
void weighted_aggregate_transposed(const Resources& res, CsrView<Idx, T> g, ConstMatrixView<T> w,
                                   ConstMatrixView<T> y, MatrixView<T> out, bool accumulate) {
  expect_heads<T>(out.cols, w.cols, "weighted_aggregate_transposed");
  expect_edges<Idx, T>(g, w, w.cols, "weighted_aggregate_transposed");
  HALO_EXPECTS(y.rows == g.num_rows && out.rows == g.num_cols && out.cols == y.cols,
               "weighted_aggregate_transposed: shape mismatch");
  if (!accumulate) zero(res, out);
  // CPU column blocks: one per thread (every block reads the whole CSR), of whole cache lines.
  const std::int64_t work = (cpu_entries(res, g) + out.rows) * y.cols;
  const std::int64_t block = cpu_column_block(res.cpu_exec(), out.cols, work);
  const std::int64_t blocks = (out.cols + block - 1) / block;
  launch_by_device(res, g.num_rows == 0 ? 0 : blocks,
                   detail::WeightedAggregateTransposedBlockBody<Idx, T>{g, w, y, out, block},
                   y.size(), detail::WeightedAggregateTransposedAtomicBody<Idx, T>{g, w, y, out},
                   work);
}

template <class Idx, class T>
void weighted_aggregate_backward(const Resources& res, CsrView<Idx, T> g, ConstMatrixView<T> w,
                                 ConstMatrixView<T> x, ConstMatrixView<T> dout, MatrixView<T> dw,
                                 MatrixView<T> dx, bool accumulate_dx) {
  if (dw.data != nullptr) sddmm(res, g, dout, x, dw);
  if (dx.data != nullptr) weighted_aggregate_transposed(res, g, w, dout, dx, accumulate_dx);
}

template <class Idx, class T>
void segment_softmax(const Resources& res, std::span<const SoftmaxSegments<Idx, T>> parts,
                     MatrixView<T> row_max, MatrixView<T> row_sum) {
  HALO_EXPECTS(row_sum.rows == row_max.rows && row_sum.cols == row_max.cols,
               "segment_softmax: row_max and row_sum must have the same shape");
  for (const auto& p : parts) {
    HALO_EXPECTS(p.graph.num_rows == row_max.rows,
                 "segment_softmax: every part needs the statistics' rows");
    expect_edges<Idx, T>(p.graph, p.values, row_max.cols, "segment_softmax");
  }
  fill(res, row_max.span(), -std::numeric_limits<T>::infinity());
  fill(res, row_sum.span(), T(0));
  // Three passes over every part: the union's maximum, exp(score - maximum) and its sum, the
  // division. One exp per edge and head (the costly part on the CPU).
  const std::int64_t rows = row_max.rows, n = row_max.size();
  for (const auto& p : parts) {
    const detail::SegmentSoftmaxMaxBody<Idx, T> body{p.graph, p.values, row_max, false};
    launch_by_device(res, rows, body, n, with_per_head(body),
                     cpu_entries(res, p.graph) * row_max.cols);
  }
  for (const auto& p : parts) {
    const detail::SegmentSoftmaxExpBody<Idx, T> body{p.graph, p.values, row_max,
                                                     row_sum, p.values, false};
    launch_by_device(res, rows, body, n, with_per_head(body),
                     cpu_entries(res, p.graph) * row_max.cols);
  }
  for (const auto& p : parts) {
    const detail::SegmentSoftmaxScaleBody<Idx, T> body{p.graph, row_sum, p.values, false};
    launch_by_device(res, rows, body, n, with_per_head(body),
                     cpu_entries(res, p.graph) * row_max.cols);
  }
}

template <class Idx, class T>
void segment_softmax_backward(const Resources& res, std::span<const SoftmaxSegments<Idx, T>> alpha,
                              std::span<const SoftmaxSegments<Idx, T>> gradients,
                              MatrixView<T> row_dot) {
  HALO_EXPECTS(alpha.size() == gradients.size(), "segment_softmax_backward: one gradient per part");
  for (std::size_t k = 0; k < alpha.size(); ++k) {
    HALO_EXPECTS(alpha[k].graph.num_rows == row_dot.rows &&
                     alpha[k].values.rows == gradients[k].values.rows &&
                     alpha[k].values.cols == gradients[k].values.cols,
                 "segment_softmax_backward: shape mismatch");
    expect_edges<Idx, T>(alpha[k].graph, alpha[k].values, row_dot.cols, "segment_softmax_backward");
  }
  zero(res, row_dot);
  const std::int64_t rows = row_dot.rows, n = row_dot.size();
  for (std::size_t k = 0; k < alpha.size(); ++k) {
    const detail::SegmentSoftmaxDotBody<Idx, T> body{alpha[k].graph, alpha[k].values,
                                                     gradients[k].values, row_dot, false};
    launch_by_device(res, rows, body, n, with_per_head(body),
                     cpu_entries(res, alpha[k].graph) * row_dot.cols);
  }
  for (std::size_t k = 0; k < alpha.size(); ++k) {
    const detail::SegmentSoftmaxBackwardBody<Idx, T> body{
        alpha[k].graph, alpha[k].values, gradients[k].values, row_dot, gradients[k].values, false};
    launch_by_device(res, rows, body, n, with_per_head(body),
                     cpu_entries(res, alpha[k].graph) * row_dot.cols);
  }
}

template <class T>
void block_diagonal(const Resources& res, ConstMatrixView<T> w, ConstSpan<T> scale, T factor,
                    MatrixView<T> out) {
  HALO_EXPECTS(w.rows >= 1 && out.rows == out.cols && out.rows % w.rows == 0 &&
                   w.cols == (out.rows / w.rows) * (out.rows / w.rows),
               "block_diagonal: w must be heads x d*d and out (heads*d) x (heads*d)");
  HALO_EXPECTS(scale.size == 0 || scale.size == w.rows,
               "block_diagonal: scale needs one entry per head");
  launch(res, out.size(), detail::BlockDiagonalBody<T>{w, scale, factor, out}, out.size());
}

template <class T>
void block_diagonal_backward(const Resources& res, ConstMatrixView<T> w, ConstSpan<T> scale,
                             T factor, ConstMatrixView<T> grad_out, MatrixView<T> dw,
                             Span<T> dscale) {
  HALO_EXPECTS(w.rows >= 1 && grad_out.rows == grad_out.cols && grad_out.rows % w.rows == 0 &&
                   w.cols == (grad_out.rows / w.rows) * (grad_out.rows / w.rows) &&
                   dw.rows == w.rows && dw.cols == w.cols,
               "block_diagonal_backward: shape mismatch");
  HALO_EXPECTS(
      (scale.size == 0 || scale.size == w.rows) && (dscale.size == 0 || dscale.size == w.rows),
      "block_diagonal_backward: scale and dscale need one entry per head");
  launch(res, w.rows, detail::BlockDiagonalBackwardBody<T>{w, scale, factor, grad_out, dw, dscale},
         w.size());
}

template <class T>
void sigmoid_gate(const Resources& res, ConstSpan<T> gate, ConstSpan<T> y, ConstSpan<T> x,
                  Span<T> out) {
  HALO_EXPECTS(gate.size == 1 && y.size == x.size && out.size == x.size,
               "sigmoid_gate: one gate element and three arrays of one size");
  const detail::SigmoidGateBody<T> body{gate, y, x, out};
  using Blocks = detail::SigmoidGateBlocks<detail::SigmoidGateBody<T>>;
  launch_by_device(res, (out.size + Blocks::kBlock - 1) / Blocks::kBlock, Blocks{body, out.size},
                   out.size, body, out.size);
}

template <class T>
void sigmoid_gate_backward(const Resources& res, ConstSpan<T> gate, ConstSpan<T> y, ConstSpan<T> x,
                           ConstSpan<T> dout, Span<T> dy, Span<T> dx, Span<T> dgate,
                           bool accumulate_dx) {
  HALO_EXPECTS(gate.size == 1 && dgate.size == 1 && y.size == x.size && dout.size == x.size &&
                   dy.size == x.size && (dx.size == 0 || dx.size == x.size),
               "sigmoid_gate_backward: shape mismatch");
  const Span<T> term{static_cast<T*>(res.scratch(1, static_cast<std::size_t>(x.size) * sizeof(T))),
                     x.size};
  const detail::SigmoidGateBackwardBody<T> body{gate, y, x, dout, dy, dx, term, accumulate_dx};
  using Blocks = detail::SigmoidGateBlocks<detail::SigmoidGateBackwardBody<T>>;
  launch_by_device(res, (x.size + Blocks::kBlock - 1) / Blocks::kBlock, Blocks{body, x.size},
                   x.size, body, x.size);
  column_sum(res, MatrixView<const T>{term.data, term.size, 1}, dgate);
}

template <class T>
void head_dot(const Resources& res, ConstMatrixView<T> x, ConstMatrixView<T> a, MatrixView<T> out) {
  HALO_EXPECTS(a.rows >= 1 && x.cols == a.rows * a.cols && out.rows == x.rows && out.cols == a.rows,
               "head_dot: x must be n x (H*d), a H x d and out n x H");
  launch(res, x.rows, detail::HeadDotBody<T>{x, a, out}, x.size());
}

template <class T>
void head_dot_backward(const Resources& res, ConstMatrixView<T> x, ConstMatrixView<T> a,
                       ConstMatrixView<T> dout, MatrixView<T> dx, MatrixView<T> da,
                       bool accumulate_dx) {
  HALO_EXPECTS(a.rows >= 1 && x.cols == a.rows * a.cols && dout.rows == x.rows &&
                   dout.cols == a.rows && da.rows == a.rows && da.cols == a.cols &&
                   (dx.data == nullptr || (dx.rows == x.rows && dx.cols == x.cols)),
               "head_dot_backward: shape mismatch");
  if (dx.data != nullptr) {
    const detail::HeadDotInputGradBody<T> body{dout, a, dx, accumulate_dx};
    launch_by_device(res, dx.rows, detail::HeadDotInputGradRowBody<T>{body}, dx.size(), body,
                     dx.size());
  }
  // da is the diagonal blocks of dout^T x (H x H*d): one product, then the blocks.
  const MatrixView<T> g{
      static_cast<T*>(res.scratch(1, static_cast<std::size_t>(a.rows * x.cols) * sizeof(T))),
      a.rows, x.cols};
  if (x.rows == 0) {
    zero(res, da);
    return;
  }
  gemm(res, Trans::Yes, Trans::No, T(1), dout, x, T(0), g);
  launch(res, da.size(), detail::HeadDiagonalBody<T>{g, da}, da.size());
}

template <class Idx, class T>
void gat_edge_scores(const Resources& res, CsrView<Idx, T> g, ConstMatrixView<T> s_dst,
                     ConstMatrixView<T> s_src, T slope, MatrixView<T> score, MatrixView<T> alpha) {
  const std::int64_t heads = score.cols;
  expect_edges<Idx, T>(g, score, heads, "gat_edge_scores");
  expect_edges<Idx, T>(g, alpha, heads, "gat_edge_scores");
  HALO_EXPECTS(s_dst.rows == g.num_rows && s_dst.cols == heads && s_src.rows == g.num_cols &&
                   s_src.cols == heads,
               "gat_edge_scores: s_dst needs one row per destination, s_src one per source, "
               "one column per head");
  const detail::EdgeScoreBody<Idx, T> body{g, s_dst, s_src, slope, score, alpha, false};
  launch_by_device(res, g.num_rows, body, g.num_rows * heads, with_per_head(body),
                   cpu_entries(res, g) * heads);
}

template <class Idx, class T>
void gat_edge_scores_backward(const Resources& res, CsrView<Idx, T> g, ConstMatrixView<T> score,
                              T slope, MatrixView<T> dscore, MatrixView<T> ds_dst,
                              MatrixView<T> ds_src) {
  const std::int64_t heads = score.cols;
  expect_edges<Idx, T>(g, score, heads, "gat_edge_scores_backward");
  expect_edges<Idx, T>(g, dscore, heads, "gat_edge_scores_backward");
  HALO_EXPECTS(ds_dst.rows == g.num_rows && ds_dst.cols == heads && ds_src.rows == g.num_cols &&
                   ds_src.cols == heads,
               "gat_edge_scores_backward: shape mismatch");
  const detail::EdgeScoreBackwardBody<Idx, T> body{g, score, slope, dscore, ds_dst, false};
  launch_by_device(res, g.num_rows, body, g.num_rows * heads, with_per_head(body),
                   cpu_entries(res, g) * heads);
  zero(res, ds_src);
  launch_by_device(res, g.num_rows == 0 ? 0 : heads,
                   detail::EdgeSourceSumHeadBody<Idx, T>{g, dscore, ds_src}, g.num_rows * heads,
                   detail::EdgeSourceSumAtomicBody<Idx, T>{g, dscore, ds_src},
                   cpu_entries(res, g) * heads);
}

template <class Idx, class T>
void edge_dropout(const Resources& res, const DropoutKey& key, float p, CsrView<Idx, T> g,
                  ConstMatrixView<T> x, MatrixView<T> y) {
  HALO_EXPECTS(p >= 0.f && p < 1.f, "edge_dropout: p must be in [0, 1)");
  expect_edges<Idx, T>(g, x, x.cols, "edge_dropout");
  HALO_EXPECTS(y.rows == x.rows && y.cols == x.cols, "edge_dropout: shape mismatch");
  HALO_EXPECTS(key.row_ids.size == 0 || key.row_ids.size >= g.num_cols,
               "edge_dropout: row_ids must hold one id per column of the graph");
  launch(
      res, g.num_rows,
      detail::EdgeDropoutBody<Idx, T>{g, detail::dropout_rng_key(key), detail::dropout_threshold(p),
                                      key.row_offset, key.row_ids, dropout_scale<T>(p), x, y},
      cpu_entries(res, g) * x.cols);
}

template <class T>
void head_mean(const Resources& res, ConstMatrixView<T> x, MatrixView<T> y) {
  HALO_EXPECTS(y.cols >= 1 && x.rows == y.rows && x.cols % y.cols == 0 && x.cols >= y.cols,
               "head_mean: x must be n x (H*d) and y n x d");
  launch(res, y.size(), detail::HeadMeanBody<T>{x, y, T(1) / static_cast<T>(x.cols / y.cols)},
         x.size());
}

template <class T>
void head_mean_backward(const Resources& res, ConstMatrixView<T> dy, MatrixView<T> dx) {
  HALO_EXPECTS(dy.cols >= 1 && dx.rows == dy.rows && dx.cols % dy.cols == 0 && dx.cols >= dy.cols,
               "head_mean_backward: dy must be n x d and dx n x (H*d)");
  launch(res, dx.size(),
         detail::HeadMeanBackwardBody<T>{dy, dx, T(1) / static_cast<T>(dx.cols / dy.cols)},
         dx.size());
}

#define HALO_INSTANTIATE(Idx, T)                                                                   \
  template void sddmm<Idx, T>(const Resources&, CsrView<Idx, T>, MatrixView<const T>,              \
                              MatrixView<const T>, MatrixView<T>);                                 \
  template void sddmm_backward<Idx, T>(const Resources&, CsrView<Idx, T>, MatrixView<const T>,     \
                                       MatrixView<const T>, MatrixView<const T>, MatrixView<T>,    \
                                       MatrixView<T>, bool, bool);                                 \
  template void weighted_aggregate<Idx, T>(const Resources&, CsrView<Idx, T>, MatrixView<const T>, \
                                           MatrixView<const T>, MatrixView<T>, bool);              \
  template void weighted_aggregate_transposed<Idx, T>(const Resources&, CsrView<Idx, T>,           \
                                                      MatrixView<const T>, MatrixView<const T>,    \
                                                      MatrixView<T>, bool);                        \
  template void weighted_aggregate_backward<Idx, T>(                                               \
      const Resources&, CsrView<Idx, T>, MatrixView<const T>, MatrixView<const T>,                 \
      MatrixView<const T>, MatrixView<T>, MatrixView<T>, bool);                                    \
  template void segment_softmax<Idx, T>(                                                           \
      const Resources&, std::span<const SoftmaxSegments<Idx, T>>, MatrixView<T>, MatrixView<T>);   \
  template void segment_softmax_backward<Idx, T>(                                                  \
      const Resources&, std::span<const SoftmaxSegments<Idx, T>>,                                  \
      std::span<const SoftmaxSegments<Idx, T>>, MatrixView<T>);                                    \
  template void gat_edge_scores<Idx, T>(const Resources&, CsrView<Idx, T>, MatrixView<const T>,    \
                                        MatrixView<const T>, T, MatrixView<T>, MatrixView<T>);     \
  template void gat_edge_scores_backward<Idx, T>(const Resources&, CsrView<Idx, T>,                \
                                                 MatrixView<const T>, T, MatrixView<T>,            \
                                                 MatrixView<T>, MatrixView<T>);                    \
  template void edge_dropout<Idx, T>(const Resources&, const DropoutKey&, float, CsrView<Idx, T>,  \
                                     MatrixView<const T>, MatrixView<T>);
HALO_FOR_INDEX_AND_VALUE_TYPES(HALO_INSTANTIATE)
#undef HALO_INSTANTIATE

#define HALO_INSTANTIATE(T)                                                                       \
  template void block_diagonal<T>(const Resources&, MatrixView<const T>, Span<const T>, T,        \
                                  MatrixView<T>);                                                 \
  template void block_diagonal_backward<T>(const Resources&, MatrixView<const T>, Span<const T>,  \
                                           T, MatrixView<const T>, MatrixView<T>, Span<T>);       \
  template void sigmoid_gate<T>(const Resources&, Span<const T>, Span<const T>, Span<const T>,    \
                                Span<T>);                                                         \
  template void sigmoid_gate_backward<T>(const Resources&, Span<const T>, Span<const T>,          \
                                         Span<const T>, Span<const T>, Span<T>, Span<T>, Span<T>, \
                                         bool);                                                   \
  template void head_dot<T>(const Resources&, MatrixView<const T>, MatrixView<const T>,           \
                            MatrixView<T>);                                                       \
  template void head_dot_backward<T>(const Resources&, MatrixView<const T>, MatrixView<const T>,  \
                                     MatrixView<const T>, MatrixView<T>, MatrixView<T>, bool);    \
  template void head_mean<T>(const Resources&, MatrixView<const T>, MatrixView<T>);               \
  template void head_mean_backward<T>(const Resources&, MatrixView<const T>, MatrixView<T>);
HALO_FOR_VALUE_TYPES(HALO_INSTANTIATE)
#undef HALO_INSTANTIATE

}  // namespace halo::kernels
