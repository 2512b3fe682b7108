#pragma once
// Single-source bodies of the multi-head graph-attention ops: SDDMM, segment softmax over the
// union of several relations' edges, per-edge-per-head weighted aggregation and its adjoint,
// block-diagonal head weights, and the sigmoid skip gate.
//
// Layout: H heads of width d share one row: column h * d + c of a node matrix is component c
// of head h; per-edge values are E x H (edge e of a CSR, head h).

#include <cstdint>

#include <halo/kernels/elementwise_body.hpp>
#include <halo/kernels/hd.hpp>
#include <halo/kernels/hd_math.hpp>
#include <halo/kernels/views.hpp>

namespace halo::kernels::detail {

/// out(e, h) = sum_c a(r, h*d + c) * b(col(e), h*d + c) for the edges e of row r (d = a.cols /
/// heads). One index = one (row, head), the GPU's decomposition: indices write disjoint edges.
template <class Idx, class T>
struct SddmmBody {
  CsrView<Idx, T> g;
  MatrixView<const T> a;
  MatrixView<const T> b;
  MatrixView<T> out;
  std::int64_t heads;
  HALO_HD void operator()(std::int64_t k) const {
    const std::int64_t r = k / heads;
    const std::int64_t h = k - r * heads;
    const std::int64_t d = a.cols / heads;
    const T* ar = a.row(r) + h * d;
    for (std::int64_t e = g.indptr[r]; e < g.indptr[r + 1]; ++e) {
      const T* br = b.row(static_cast<std::int64_t>(g.indices[e])) + h * d;
      T acc = T(0);
      // The CPU may reorder the sum into vector lanes (a strict left-to-right chain of
      // dependent additions runs several times slower); nvcc's device pass skips the pragma.
#if defined(_OPENMP) && !defined(__CUDA_ARCH__)
#pragma omp simd reduction(+ : acc)
#endif
      for (std::int64_t c = 0; c < d; ++c) acc += ar[c] * br[c];
      out(e, h) = acc;
    }
  }
};

/// The CPU's decomposition of SddmmBody: one index = one row, all heads, so each neighbour's
/// row of b is read once, whole.
template <class Idx, class T>
struct SddmmRowBody {
  SddmmBody<Idx, T> p;
  HALO_HD void operator()(std::int64_t r) const {
    const std::int64_t heads = p.heads;
    const std::int64_t d = p.a.cols / heads;
    const T* ar = p.a.row(r);
    for (std::int64_t e = p.g.indptr[r]; e < p.g.indptr[r + 1]; ++e) {
      const T* br = p.b.row(static_cast<std::int64_t>(p.g.indices[e]));
      T* o = p.out.row(e);
      for (std::int64_t h = 0; h < heads; ++h) {
        T acc = T(0);
#if defined(_OPENMP) && !defined(__CUDA_ARCH__)
#pragma omp simd reduction(+ : acc)
#endif
        for (std::int64_t c = h * d; c < (h + 1) * d; ++c) acc += ar[c] * br[c];
        o[h] = acc;
      }
    }
  }
};

/// out(r, h*d + c) (+)= sum_e w(e, h) * x(col(e), h*d + c). One index = one row (the CPU's
/// decomposition: the row's columns vectorise).
template <class Idx, class T>
struct WeightedAggregateRowBody {
  CsrView<Idx, T> g;
  MatrixView<const T> w;
  MatrixView<const T> x;
  MatrixView<T> out;
  bool accumulate;
  HALO_HD void operator()(std::int64_t r) const {
    const std::int64_t width = out.cols;
    const std::int64_t heads = w.cols;
    const std::int64_t d = width / heads;
    T* o = out.row(r);
    if (!accumulate)
      for (std::int64_t j = 0; j < width; ++j) o[j] = T(0);
    for (std::int64_t e = g.indptr[r]; e < g.indptr[r + 1]; ++e) {
      const T* xr = x.row(static_cast<std::int64_t>(g.indices[e]));
      const T* we = w.row(e);
      for (std::int64_t h = 0; h < heads; ++h) {
        const T weight = we[h];
        for (std::int64_t c = h * d; c < (h + 1) * d; ++c) o[c] += weight * xr[c];
      }
    }
  }
};

/// The GPU's decomposition of WeightedAggregateRowBody: one index = one output element (row
/// k / cols, column k % cols), so neighbouring threads read neighbouring columns.
template <class Idx, class T>
struct WeightedAggregateElementsBody {
  WeightedAggregateRowBody<Idx, T> p;
  HALO_HD void operator()(std::int64_t k) const {
    const std::int64_t width = p.out.cols;
    const std::int64_t r = k / width;
    const std::int64_t j = k - r * width;
    const std::int64_t h = j / (width / p.w.cols);
    T acc = T(0);
    for (std::int64_t e = p.g.indptr[r]; e < p.g.indptr[r + 1]; ++e)
      acc += p.w(e, h) * p.x(static_cast<std::int64_t>(p.g.indices[e]), j);
    p.out.data[k] = p.accumulate ? p.out.data[k] + acc : acc;
  }
};

/// The adjoint out(col(e), h*d + c) += w(e, h) * y(r, h*d + c) (out zeroed beforehand unless
/// accumulating). One index = one block of `block` output columns: each block walks all edges
/// and owns its columns, so no two indices write the same element (no atomics). Every block
/// re-reads the whole CSR, so the launcher makes blocks as wide as its thread count allows.
template <class Idx, class T>
struct WeightedAggregateTransposedBlockBody {
  CsrView<Idx, T> g;
  MatrixView<const T> w;
  MatrixView<const T> y;
  MatrixView<T> out;
  std::int64_t block;
  HALO_HD void operator()(std::int64_t b) const {
    const std::int64_t width = out.cols;
    const std::int64_t d = width / w.cols;
    const std::int64_t j0 = b * block;
    const std::int64_t j1 = j0 + block < width ? j0 + block : width;
    const std::int64_t h0 = j0 / d;
    const std::int64_t h1 = (j1 + d - 1) / d;  // the heads overlapping [j0, j1)
    for (std::int64_t r = 0; r < g.num_rows; ++r) {
      const T* yr = y.row(r);
      for (std::int64_t e = g.indptr[r]; e < g.indptr[r + 1]; ++e) {
        T* o = out.row(static_cast<std::int64_t>(g.indices[e]));
        const T* we = w.row(e);
        for (std::int64_t h = h0; h < h1; ++h) {
          const T weight = we[h];
          const std::int64_t c0 = h * d > j0 ? h * d : j0;
          const std::int64_t c1 = (h + 1) * d < j1 ? (h + 1) * d : j1;
          for (std::int64_t j = c0; j < c1; ++j) o[j] += weight * yr[j];
        }
      }
    }
  }
};

/// The GPU's adjoint: one index = one element (r, j) of y, added to the rows of its edges'
/// columns with atomics (several rows reach the same column).
template <class Idx, class T>
struct WeightedAggregateTransposedAtomicBody {
  CsrView<Idx, T> g;
  MatrixView<const T> w;
  MatrixView<const T> y;
  MatrixView<T> out;
  HALO_HD void operator()(std::int64_t k) const {
    const std::int64_t width = y.cols;
    const std::int64_t r = k / width;
    const std::int64_t j = k - r * width;
    const std::int64_t h = j / (width / w.cols);
    const T v = y.data[k];
    for (std::int64_t e = g.indptr[r]; e < g.indptr[r + 1]; ++e)
      atomic_add(&out(static_cast<std::int64_t>(g.indices[e]), j), w(e, h) * v);
  }
};

/// The (row, heads) an index of a segment-softmax body covers: with `per_head` (the GPU's
/// decomposition) index k is row k / heads and head k % heads; otherwise (the CPU's) row k and
/// every head, which walks the row's per-edge values contiguously.
struct SegmentRange {
  std::int64_t row, h0, h1;
};
HALO_HD inline SegmentRange segment_range(std::int64_t k, std::int64_t heads, bool per_head) {
  if (!per_head) return {k, 0, heads};
  const std::int64_t r = k / heads;
  return {r, k - r * heads, k - r * heads + 1};
}

/// Pass 1 of the segment softmax, once per relation: row_max(r, h) = max(row_max(r, h), the
/// maximum score of the row's edges in this relation).
template <class Idx, class T>
struct SegmentSoftmaxMaxBody {
  CsrView<Idx, T> g;
  MatrixView<const T> scores;
  MatrixView<T> row_max;
  bool per_head;
  HALO_HD void operator()(std::int64_t k) const {
    const SegmentRange s = segment_range(k, scores.cols, per_head);
    for (std::int64_t e = g.indptr[s.row]; e < g.indptr[s.row + 1]; ++e)
      for (std::int64_t h = s.h0; h < s.h1; ++h)
        row_max(s.row, h) = hd::max(row_max(s.row, h), scores(e, h));
  }
};

/// Pass 2, once per relation: alpha(e, h) = exp(score(e, h) - row_max(r, h)) and row_sum(r, h)
/// += those terms. Only rows with edges are touched, so the maximum read is finite. alpha may
/// alias scores.
template <class Idx, class T>
struct SegmentSoftmaxExpBody {
  CsrView<Idx, T> g;
  MatrixView<const T> scores;
  MatrixView<const T> row_max;
  MatrixView<T> row_sum;
  MatrixView<T> alpha;
  bool per_head;
  HALO_HD void operator()(std::int64_t k) const {
    const SegmentRange s = segment_range(k, scores.cols, per_head);
    for (std::int64_t e = g.indptr[s.row]; e < g.indptr[s.row + 1]; ++e) {
      for (std::int64_t h = s.h0; h < s.h1; ++h) {
        const T v = hd::exp(scores(e, h) - row_max(s.row, h));
        alpha(e, h) = v;
        row_sum(s.row, h) += v;
      }
    }
  }
};

/// Pass 3, once per relation: alpha(e, h) /= row_sum(r, h).
template <class Idx, class T>
struct SegmentSoftmaxScaleBody {
  CsrView<Idx, T> g;
  MatrixView<const T> row_sum;
  MatrixView<T> alpha;
  bool per_head;
  HALO_HD void operator()(std::int64_t k) const {
    const SegmentRange s = segment_range(k, alpha.cols, per_head);
    for (std::int64_t e = g.indptr[s.row]; e < g.indptr[s.row + 1]; ++e)
      for (std::int64_t h = s.h0; h < s.h1; ++h) alpha(e, h) /= row_sum(s.row, h);
  }
};

/// Backward pass 1, once per relation: row_dot(r, h) += sum over the row's edges of alpha(e, h)
/// * dalpha(e, h).
template <class Idx, class T>
struct SegmentSoftmaxDotBody {
  CsrView<Idx, T> g;
  MatrixView<const T> alpha;
  MatrixView<const T> dalpha;
  MatrixView<T> row_dot;
  bool per_head;
  HALO_HD void operator()(std::int64_t k) const {
    const SegmentRange s = segment_range(k, alpha.cols, per_head);
    for (std::int64_t e = g.indptr[s.row]; e < g.indptr[s.row + 1]; ++e)
      for (std::int64_t h = s.h0; h < s.h1; ++h) row_dot(s.row, h) += alpha(e, h) * dalpha(e, h);
  }
};

/// Backward pass 2: dscores(e, h) = alpha(e, h) * (dalpha(e, h) - row_dot(r, h)), the softmax's
/// adjoint given the dot over the whole union of the row's edges. dscores may alias dalpha.
template <class Idx, class T>
struct SegmentSoftmaxBackwardBody {
  CsrView<Idx, T> g;
  MatrixView<const T> alpha;
  MatrixView<const T> dalpha;
  MatrixView<const T> row_dot;
  MatrixView<T> dscores;
  bool per_head;
  HALO_HD void operator()(std::int64_t k) const {
    const SegmentRange s = segment_range(k, alpha.cols, per_head);
    for (std::int64_t e = g.indptr[s.row]; e < g.indptr[s.row + 1]; ++e)
      for (std::int64_t h = s.h0; h < s.h1; ++h)
        dscores(e, h) = alpha(e, h) * (dalpha(e, h) - row_dot(s.row, h));
  }
};

/// out (H*d x H*d) = the block-diagonal matrix whose block h is factor * scale[h] * w[h], w[h]
/// being row h of w read as a d x d row-major matrix (scale empty: 1). One index = one element.
template <class T>
struct BlockDiagonalBody {
  MatrixView<const T> w;
  Span<const T> scale;
  T factor;
  MatrixView<T> out;
  HALO_HD void operator()(std::int64_t k) const {
    const std::int64_t n = out.cols;
    const std::int64_t i = k / n;
    const std::int64_t j = k - i * n;
    const std::int64_t d = n / w.rows;
    const std::int64_t h = i / d;
    if (j / d != h) {
      out.data[k] = T(0);
      return;
    }
    const T s = scale.size > 0 ? scale[h] * factor : factor;
    out.data[k] = s * w(h, (i - h * d) * d + (j - h * d));
  }
};

/// The gradients of BlockDiagonalBody given G = dL/d(out): dw[h] = factor * scale[h] * G's
/// block h, and dscale[h] = factor * <G's block h, w[h]> when dscale is not empty. One index =
/// one head.
template <class T>
struct BlockDiagonalBackwardBody {
  MatrixView<const T> w;
  Span<const T> scale;
  T factor;
  MatrixView<const T> grad_out;
  MatrixView<T> dw;
  Span<T> dscale;
  HALO_HD void operator()(std::int64_t h) const {
    const std::int64_t d = grad_out.cols / w.rows;
    const T s = scale.size > 0 ? scale[h] * factor : factor;
    T dot = T(0);
    for (std::int64_t a = 0; a < d; ++a) {
      for (std::int64_t b = 0; b < d; ++b) {
        const T gv = grad_out(h * d + a, h * d + b);
        dw(h, a * d + b) = s * gv;
        dot += gv * w(h, a * d + b);
      }
    }
    if (dscale.size > 0) dscale[h] = factor * dot;
  }
};

template <class T>
HALO_HD inline T sigmoid(T x) {
  return T(1) / (T(1) + hd::exp(-x));
}

/// out[i] = s * y[i] + (1 - s) * x[i] with s = sigmoid(gate[0]), the gate read on the device.
/// out may alias y or x.
template <class T>
struct SigmoidGateBody {
  Span<const T> gate;
  Span<const T> y;
  Span<const T> x;
  Span<T> out;
  HALO_HD void operator()(std::int64_t i) const { apply(i, sigmoid(gate[0])); }
  HALO_HD void apply(std::int64_t i, T s) const { out[i] = s * y[i] + (T(1) - s) * x[i]; }
};

/// The gate's adjoint, element i of each: dy[i] = s * dout[i], dx[i] (+)= (1 - s) * dout[i],
/// and the gate's per-element terms term[i] = s (1 - s) dout[i] (y[i] - x[i]) that sum to
/// dL/d(gate). dy may alias dout.
template <class T>
struct SigmoidGateBackwardBody {
  Span<const T> gate;
  Span<const T> y;
  Span<const T> x;
  Span<const T> dout;
  Span<T> dy;
  Span<T> dx;
  Span<T> term;
  bool accumulate_dx;
  HALO_HD void operator()(std::int64_t i) const { apply(i, sigmoid(gate[0])); }
  HALO_HD void apply(std::int64_t i, T s) const {
    const T g = dout[i];
    term[i] = s * (T(1) - s) * g * (y[i] - x[i]);
    if (dx.size > 0) dx[i] = accumulate_dx ? dx[i] + (T(1) - s) * g : (T(1) - s) * g;
    dy[i] = s * g;
  }
};

/// The CPU layout of a gate body: one index = kBlock consecutive elements, the gate's sigmoid
/// computed once per block (per element it costs an exp each; the same value either way).
template <class Body>
struct SigmoidGateBlocks {
  static constexpr std::int64_t kBlock = 4096;
  Body body;
  std::int64_t n;
  void operator()(std::int64_t block) const {
    const auto s = sigmoid(body.gate[0]);
    const std::int64_t end = (block + 1) * kBlock < n ? (block + 1) * kBlock : n;
    for (std::int64_t i = block * kBlock; i < end; ++i) body.apply(i, s);
  }
};

// ---- GAT (Veličković et al.): per-head scores from node scalars, LeakyReLU, edge dropout ----

/// out(r, h) = sum_c x(r, h*d + c) * a(h, c) (d = a.cols): each head's part of row r against
/// that head's vector. One index = one row.
template <class T>
struct HeadDotBody {
  MatrixView<const T> x;
  MatrixView<const T> a;
  MatrixView<T> out;
  HALO_HD void operator()(std::int64_t r) const {
    const std::int64_t heads = a.rows, d = a.cols;
    const T* xr = x.row(r);
    for (std::int64_t h = 0; h < heads; ++h) {
      const T* ah = a.row(h);
      T acc = T(0);
      for (std::int64_t c = 0; c < d; ++c) acc += xr[h * d + c] * ah[c];
      out(r, h) = acc;
    }
  }
};

/// dx(r, h*d + c) (+)= dout(r, h) * a(h, c): HeadDotBody's adjoint in x. One index = one
/// element of dx.
template <class T>
struct HeadDotInputGradBody {
  MatrixView<const T> dout;
  MatrixView<const T> a;
  MatrixView<T> dx;
  bool accumulate;
  HALO_HD void operator()(std::int64_t k) const {
    const std::int64_t r = k / dx.cols;
    const std::int64_t j = k - r * dx.cols;
    const std::int64_t h = j / a.cols;
    const T v = dout(r, h) * a(h, j - h * a.cols);
    dx.data[k] = accumulate ? dx.data[k] + v : v;
  }
};

/// The CPU's decomposition of HeadDotInputGradBody: one index = one row of dx (no divisions
/// per element; the row's columns vectorise).
template <class T>
struct HeadDotInputGradRowBody {
  HeadDotInputGradBody<T> p;
  HALO_HD void operator()(std::int64_t r) const {
    const std::int64_t heads = p.a.rows, d = p.a.cols;
    T* out = p.dx.row(r);
    const T* g = p.dout.row(r);
    for (std::int64_t h = 0; h < heads; ++h) {
      const T gh = g[h];
      const T* ah = p.a.row(h);
      T* o = out + h * d;
      if (p.accumulate) {
        for (std::int64_t c = 0; c < d; ++c) o[c] += gh * ah[c];
      } else {
        for (std::int64_t c = 0; c < d; ++c) o[c] = gh * ah[c];
      }
    }
  }
};

/// da(h, c) = g(h, h*d + c): the diagonal blocks of g = dout^T x (H x H*d), HeadDotBody's
/// adjoint in a. One index = one element of da.
template <class T>
struct HeadDiagonalBody {
  MatrixView<const T> g;
  MatrixView<T> da;
  HALO_HD void operator()(std::int64_t k) const {
    const std::int64_t h = k / da.cols;
    const std::int64_t c = k - h * da.cols;
    da.data[k] = g(h, h * da.cols + c);
  }
};

template <class T>
HALO_HD inline T leaky_relu(T x, T slope) {
  return x > T(0) ? x : slope * x;
}

/// GAT's edge scores: score(e, h) = LeakyReLU(s_dst(r, h) + s_src(col(e), h)) for the edges e of
/// row r, written to `score` and to `alpha` (which the softmax then overwrites in place).
/// Decomposed like the segment-softmax bodies (per_head: one index = one row and head).
template <class Idx, class T>
struct EdgeScoreBody {
  CsrView<Idx, T> g;
  MatrixView<const T> s_dst;
  MatrixView<const T> s_src;
  T slope;
  MatrixView<T> score;
  MatrixView<T> alpha;
  bool per_head;
  HALO_HD void operator()(std::int64_t k) const {
    const SegmentRange s = segment_range(k, score.cols, per_head);
    for (std::int64_t e = g.indptr[s.row]; e < g.indptr[s.row + 1]; ++e) {
      const auto c = static_cast<std::int64_t>(g.indices[e]);
      for (std::int64_t h = s.h0; h < s.h1; ++h) {
        const T v = leaky_relu(s_dst(s.row, h) + s_src(c, h), slope);
        score(e, h) = v;
        alpha(e, h) = v;
      }
    }
  }
};

/// EdgeScoreBody's adjoint up to the sources: dscore(e, h) *= LeakyReLU'(.) (1 where the score
/// is positive, slope elsewhere; in place, giving d(s_dst + s_src)) and ds_dst(r, h) = the sum
/// of those over the row's edges. Decomposed like EdgeScoreBody.
template <class Idx, class T>
struct EdgeScoreBackwardBody {
  CsrView<Idx, T> g;
  MatrixView<const T> score;
  T slope;
  MatrixView<T> dscore;
  MatrixView<T> ds_dst;
  bool per_head;
  HALO_HD void operator()(std::int64_t k) const {
    const SegmentRange s = segment_range(k, score.cols, per_head);
    for (std::int64_t h = s.h0; h < s.h1; ++h) ds_dst(s.row, h) = T(0);
    for (std::int64_t e = g.indptr[s.row]; e < g.indptr[s.row + 1]; ++e) {
      for (std::int64_t h = s.h0; h < s.h1; ++h) {
        const T d = score(e, h) > T(0) ? dscore(e, h) : slope * dscore(e, h);
        dscore(e, h) = d;
        ds_dst(s.row, h) += d;
      }
    }
  }
};

/// ds_src(col(e), h) += draw(e, h) over every edge (ds_src zeroed beforehand). The CPU's
/// decomposition: one index = one head, which walks all edges and owns its column of ds_src.
template <class Idx, class T>
struct EdgeSourceSumHeadBody {
  CsrView<Idx, T> g;
  MatrixView<const T> draw;
  MatrixView<T> ds_src;
  HALO_HD void operator()(std::int64_t h) const {
    for (std::int64_t r = 0; r < g.num_rows; ++r)
      for (std::int64_t e = g.indptr[r]; e < g.indptr[r + 1]; ++e)
        ds_src(static_cast<std::int64_t>(g.indices[e]), h) += draw(e, h);
  }
};

/// The GPU's: one index = one (row, head), added with atomics.
template <class Idx, class T>
struct EdgeSourceSumAtomicBody {
  CsrView<Idx, T> g;
  MatrixView<const T> draw;
  MatrixView<T> ds_src;
  HALO_HD void operator()(std::int64_t k) const {
    const std::int64_t heads = draw.cols;
    const std::int64_t r = k / heads;
    const std::int64_t h = k - r * heads;
    for (std::int64_t e = g.indptr[r]; e < g.indptr[r + 1]; ++e)
      atomic_add(&ds_src(static_cast<std::int64_t>(g.indices[e]), h), draw(e, h));
  }
};

/// Whether the mask keeps edge (dst -> src), head h: keyed by the two endpoints' global ids, so
/// that every process and every batch holding that edge draws the same.
HALO_HD inline bool edge_dropout_keep(std::uint64_t rng_key, std::uint64_t threshold,
                                      std::int64_t dst, std::int64_t src, std::int64_t h,
                                      std::int64_t heads) {
  const std::uint64_t index =
      rng::mix(static_cast<std::uint64_t>(dst)) ^ static_cast<std::uint64_t>(src * heads + h);
  return (rng::draw_keyed(rng_key, index) >> 40) >= threshold;
}

/// Inverted dropout of per-edge values: y(e, h) = x(e, h) * scale where edge_dropout_keep, else
/// 0, the endpoints' global ids by dropout_row (destinations are the first sources). y may
/// alias x. One index = one row.
template <class Idx, class T>
struct EdgeDropoutBody {
  CsrView<Idx, T> g;
  std::uint64_t rng_key;
  std::uint64_t threshold;
  std::int64_t row_offset;
  Span<const NodeId> ids;
  T scale;
  MatrixView<const T> x;
  MatrixView<T> y;
  HALO_HD void operator()(std::int64_t r) const {
    const std::int64_t heads = x.cols;
    const std::int64_t dst = dropout_row(ids, row_offset, r);
    for (std::int64_t e = g.indptr[r]; e < g.indptr[r + 1]; ++e) {
      const std::int64_t src =
          dropout_row(ids, row_offset, static_cast<std::int64_t>(g.indices[e]));
      for (std::int64_t h = 0; h < heads; ++h)
        y(e, h) =
            edge_dropout_keep(rng_key, threshold, dst, src, h, heads) ? x(e, h) * scale : T(0);
    }
  }
};

/// y(r, c) = scale * sum_h x(r, h*d + c) (d = y.cols): the heads averaged with scale = 1 / H.
/// One index = one element of y.
template <class T>
struct HeadMeanBody {
  MatrixView<const T> x;
  MatrixView<T> y;
  T scale;
  HALO_HD void operator()(std::int64_t k) const {
    const std::int64_t d = y.cols;
    const std::int64_t r = k / d;
    const std::int64_t c = k - r * d;
    const std::int64_t heads = x.cols / d;
    T acc = T(0);
    for (std::int64_t h = 0; h < heads; ++h) acc += x(r, h * d + c);
    y.data[k] = scale * acc;
  }
};

/// dx(r, h*d + c) = scale * dy(r, c): HeadMeanBody's adjoint. One index = one element of dx.
template <class T>
struct HeadMeanBackwardBody {
  MatrixView<const T> dy;
  MatrixView<T> dx;
  T scale;
  HALO_HD void operator()(std::int64_t k) const {
    const std::int64_t r = k / dx.cols;
    const std::int64_t j = k - r * dx.cols;
    dx.data[k] = scale * dy(r, j % dy.cols);
  }
};

}  // namespace halo::kernels::detail
