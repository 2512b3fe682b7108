#pragma once
// Multi-head graph-attention ops (HGT, GAT-style layers): SDDMM, segment softmax over the union
// of several relations' edge segments, per-edge-per-head weighted aggregation, block-diagonal
// per-head weights and the sigmoid skip gate, each with its backward.
//
// Layout: a node matrix holds H heads of width d per row (column h * d + c is component c of
// head h); per-edge values are E x H, row e being edge e of the CSR (its stored order). The CSR's
// rows are destination nodes, its columns source nodes; its values are not read. All arguments
// live on res's device; every op is asynchronous on res's stream. Instantiated for Idx in
// {int32_t, int64_t} and T in {float, double}.

#include <span>

#include <halo/kernels/elementwise_body.hpp>
#include <halo/kernels/resources.hpp>
#include <halo/kernels/views.hpp>

namespace halo::kernels {

/// out(e, h) = <a(r, head h), b(c, head h)> for every edge e = (r, c) of g: a is g.num_rows x
/// (H*d), b is g.num_cols x (H*d), out is E x H (H = out.cols, which must divide a.cols).
template <class Idx, class T>
void sddmm(const Resources& res, CsrView<Idx, T> g, ConstMatrixView<T> a, ConstMatrixView<T> b,
           MatrixView<T> out);

/// The backward of `sddmm` given dout = dL/d(out) (E x H): da (+)= dL/da (g.num_rows x H*d) and
/// db (+)= dL/db (g.num_cols x H*d); `accumulate_da` / `accumulate_db` add to them instead of
/// overwriting. Either may be empty (data == nullptr) to skip it.
template <class Idx, class T>
void sddmm_backward(const Resources& res, CsrView<Idx, T> g, ConstMatrixView<T> a,
                    ConstMatrixView<T> b, ConstMatrixView<T> dout, MatrixView<T> da,
                    MatrixView<T> db, bool accumulate_da = false, bool accumulate_db = false);

/// out(r, head h) (+)= sum over the edges e = (r, c) of w(e, h) * x(c, head h): an SpMM whose
/// edge weights differ per head. w is E x H, x is g.num_cols x (H*d), out g.num_rows x (H*d);
/// `accumulate` adds to out instead of overwriting it. Rows without edges give zeros.
template <class Idx, class T>
void weighted_aggregate(const Resources& res, CsrView<Idx, T> g, ConstMatrixView<T> w,
                        ConstMatrixView<T> x, MatrixView<T> out, bool accumulate = false);

/// The adjoint product out(c, head h) (+)= sum over the edges e = (r, c) of w(e, h) * y(r,
/// head h): y is g.num_rows x (H*d), out g.num_cols x (H*d). CPU: each thread owns a block of
/// output columns and walks all edges; CUDA: atomics (the order of additions varies).
template <class Idx, class T>
void weighted_aggregate_transposed(const Resources& res, CsrView<Idx, T> g, ConstMatrixView<T> w,
                                   ConstMatrixView<T> y, MatrixView<T> out,
                                   bool accumulate = false);

/// The backward of `weighted_aggregate` given dout (g.num_rows x H*d): dw = dL/dw (E x H,
/// overwritten: sddmm(dout, x)) and dx (+)= dL/dx (weighted_aggregate_transposed(w, dout)).
/// Either may be empty to skip it.
template <class Idx, class T>
void weighted_aggregate_backward(const Resources& res, CsrView<Idx, T> g, ConstMatrixView<T> w,
                                 ConstMatrixView<T> x, ConstMatrixView<T> dout, MatrixView<T> dw,
                                 MatrixView<T> dx, bool accumulate_dx = false);

/// One relation's part of a segment softmax: its CSR (rows: the shared destination rows) and
/// an E x H matrix of per-edge values.
template <class Idx, class T>
struct SoftmaxSegments {
  CsrView<Idx, T> graph;
  MatrixView<T> values;
};

/// Softmax per destination row and head over the union of the relations' edges of that row:
/// alpha(e, h) = exp(score(e, h)) / sum over every relation's edges e' of row r of
/// exp(score(e', h)) (computed stably, relative to the row's maximum). `parts` hold the scores
/// and are overwritten with alpha. Every part has the same rows (g.num_rows = row_max.rows) and
/// heads (values.cols = row_max.cols); rows without edges in any part have no alpha.
/// row_max and row_sum (num_rows x H) are overwritten with the per-row maximum score and sum of
/// exp(score - maximum) (-inf and 0 for rows without edges). One relation: a span of one part.
template <class Idx, class T>
void segment_softmax(const Resources& res, std::span<const SoftmaxSegments<Idx, T>> parts,
                     MatrixView<T> row_max, MatrixView<T> row_sum);

/// The backward of `segment_softmax`: `alpha[k]` are the parts' softmax outputs and
/// `gradients[k]` hold dL/d(alpha) on the same relations, overwritten with dL/d(score):
/// alpha(e, h) * (dalpha(e, h) - sum over the row's edges in every part of alpha * dalpha).
/// row_dot (num_rows x H) is overwritten with those sums.
template <class Idx, class T>
void segment_softmax_backward(const Resources& res, std::span<const SoftmaxSegments<Idx, T>> alpha,
                              std::span<const SoftmaxSegments<Idx, T>> gradients,
                              MatrixView<T> row_dot);

/// out (H*d x H*d) = block-diagonal, block h = factor * scale[h] * w[h], with w[h] row h of w
/// (H x d*d) read as a d x d row-major matrix; an empty scale means 1. Per-head d x d
/// transforms of an n x (H*d) node matrix X are then one product X out (gemm).
template <class T>
void block_diagonal(const Resources& res, ConstMatrixView<T> w, ConstSpan<T> scale, T factor,
                    MatrixView<T> out);

/// The gradients of `block_diagonal` given grad_out = dL/d(out) (its off-diagonal blocks are
/// ignored): dw (H x d*d, overwritten) and, when not empty, dscale (H, overwritten).
template <class T>
void block_diagonal_backward(const Resources& res, ConstMatrixView<T> w, ConstSpan<T> scale,
                             T factor, ConstMatrixView<T> grad_out, MatrixView<T> dw,
                             Span<T> dscale);

/// out = s * y + (1 - s) * x, s = sigmoid(gate[0]) (gate: one element on res's device, read
/// there, so the host never waits for it). out may alias y or x.
template <class T>
void sigmoid_gate(const Resources& res, ConstSpan<T> gate, ConstSpan<T> y, ConstSpan<T> x,
                  Span<T> out);

/// The backward of `sigmoid_gate` given dout: dy = s * dout (dy may alias dout), dx (+)=
/// (1 - s) * dout (skipped when empty), dgate[0] = sum of s (1 - s) dout (y - x), overwritten
/// (a reduction through Resources scratch slot 1 and column_sum).
template <class T>
void sigmoid_gate_backward(const Resources& res, ConstSpan<T> gate, ConstSpan<T> y, ConstSpan<T> x,
                           ConstSpan<T> dout, Span<T> dy, Span<T> dx, Span<T> dgate,
                           bool accumulate_dx = false);

// ---- GAT (Veličković et al., ICLR 2018) --------------------------------------------------------

/// out(r, h) = <x(r, head h), a(h, :)>: x is n x (H*d), a is H x d, out n x H (the per-node
/// attention scalars a_src^T z_j / a_dst^T z_i of every head).
template <class T>
void head_dot(const Resources& res, ConstMatrixView<T> x, ConstMatrixView<T> a, MatrixView<T> out);

/// The backward of `head_dot` given dout (n x H): dx (+)= dL/dx (n x H*d; skipped when empty)
/// and da = dL/da (H x d, overwritten: through a gemm and Resources scratch slot 1).
template <class T>
void head_dot_backward(const Resources& res, ConstMatrixView<T> x, ConstMatrixView<T> a,
                       ConstMatrixView<T> dout, MatrixView<T> dx, MatrixView<T> da,
                       bool accumulate_dx = false);

/// GAT's edge scores: score(e, h) = LeakyReLU_slope(s_dst(r, h) + s_src(c, h)) for every edge
/// e = (r, c) of g, written to `score` and to `alpha` (E x H each; alpha is then given to
/// segment_softmax, which overwrites it, while `score` stays for the backward pass). s_dst is
/// g.num_rows x H, s_src g.num_cols x H.
template <class Idx, class T>
void gat_edge_scores(const Resources& res, CsrView<Idx, T> g, ConstMatrixView<T> s_dst,
                     ConstMatrixView<T> s_src, T slope, MatrixView<T> score, MatrixView<T> alpha);

/// The backward of `gat_edge_scores` given dscore = dL/d(score), overwritten with dL/d(s_dst +
/// s_src); ds_dst (g.num_rows x H) and ds_src (g.num_cols x H) are overwritten. `score` is the
/// forward's (its sign picks LeakyReLU's slope). CUDA adds ds_src with atomics.
template <class Idx, class T>
void gat_edge_scores_backward(const Resources& res, CsrView<Idx, T> g, ConstMatrixView<T> score,
                              T slope, MatrixView<T> dscore, MatrixView<T> ds_dst,
                              MatrixView<T> ds_src);

/// Inverted dropout of per-edge values (E x H, e.g. attention coefficients): y(e, h) = x(e, h) /
/// (1 - p) where the mask keeps, else 0. The mask of edge (r -> c), head h, is a pure function
/// of (key.seed, key.epoch, key.layer, the global ids of r and c, h), the ids by DropoutKey's
/// rule applied to both ends: key.row_ids holds one id per *column* of g (the destinations are
/// the first columns), or is empty (column c is node key.row_offset + c). So it needs no
/// storage, every process and batch holding an edge drops it alike, and the backward pass is
/// this same op applied to dL/dy. y may alias x.
template <class Idx, class T>
void edge_dropout(const Resources& res, const DropoutKey& key, float p, CsrView<Idx, T> g,
                  ConstMatrixView<T> x, MatrixView<T> y);

/// y(r, c) = (1 / H) sum_h x(r, h*d + c): the mean over H heads; x is n x (H*d), y n x d.
template <class T>
void head_mean(const Resources& res, ConstMatrixView<T> x, MatrixView<T> y);

/// The backward of `head_mean`: dx(r, h*d + c) = dy(r, c) / H (overwritten).
template <class T>
void head_mean_backward(const Resources& res, ConstMatrixView<T> dy, MatrixView<T> dx);

}  // namespace halo::kernels
