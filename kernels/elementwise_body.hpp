#pragma once
// Single-source bodies of the element-wise ops: fill, axpy, bias, ReLU, dropout.

#include <cstdint>

#include <halo/kernels/hd.hpp>
#include <halo/kernels/rng.hpp>
#include <halo/kernels/views.hpp>

namespace halo::kernels {

/// What a dropout mask is keyed by: element (r, c) of a layer's input is kept iff
/// rng::uniform(seed, stream_id(kStreamDropout, epoch, layer), (row_offset + r) * cols + c) >= p.
/// `row_offset` turns local rows into global node ids, so every process draws the same mask for
/// the same node.
struct DropoutKey {
  std::uint64_t seed = 0;
  std::uint64_t epoch = 0;
  std::uint64_t layer = 0;
  std::int64_t row_offset = 0;
};

namespace detail {

inline std::uint64_t dropout_rng_key(const DropoutKey& k) {
  return rng::key(k.seed, rng::stream_id(rng::kStreamDropout, k.epoch, k.layer));
}

/// `rng_key` is rng::key(key.seed, stream_id(kStreamDropout, epoch, layer)), computed once per op.
HALO_HD inline bool dropout_keep(std::uint64_t rng_key, std::int64_t global_row, std::int64_t c,
                                 std::int64_t cols, float p) {
  return rng::uniform_keyed(rng_key, static_cast<std::uint64_t>(global_row * cols + c)) >= p;
}

template <class T>
struct FillBody {
  Span<T> x;
  T value;
  HALO_HD void operator()(std::int64_t i) const { x[i] = value; }
};

template <class T>
struct AxpyBody {  // y += alpha * x
  T alpha;
  Span<const T> x;
  Span<T> y;
  HALO_HD void operator()(std::int64_t i) const { y[i] += alpha * x[i]; }
};

template <class T>
struct AddBiasBody {  // one index = one row
  MatrixView<T> x;
  Span<const T> bias;
  HALO_HD void operator()(std::int64_t r) const {
    T* row = x.row(r);
    for (std::int64_t j = 0; j < x.cols; ++j) row[j] += bias[j];
  }
};

template <class T>
struct ReluBody {
  Span<const T> x;
  Span<T> y;
  HALO_HD void operator()(std::int64_t i) const { y[i] = x[i] > T(0) ? x[i] : T(0); }
};

template <class T>
struct ReluBackwardBody {  // dx = dy where the output was positive
  Span<const T> y;
  Span<const T> dy;
  Span<T> dx;
  HALO_HD void operator()(std::int64_t i) const { dx[i] = y[i] > T(0) ? dy[i] : T(0); }
};

template <class T>
struct DropoutBody {  // one index = one row
  std::uint64_t rng_key;
  std::int64_t row_offset;
  float p;
  MatrixView<const T> x;
  MatrixView<T> y;
  HALO_HD void operator()(std::int64_t r) const {
    const T scale = T(1) / (T(1) - static_cast<T>(p));
    const T* in = x.row(r);
    T* out = y.row(r);
    const std::int64_t cols = x.cols;
    const std::int64_t g = row_offset + r;
    for (std::int64_t c = 0; c < cols; ++c)
      out[c] = dropout_keep(rng_key, g, c, cols, p) ? in[c] * scale : T(0);
  }
};

template <class Idx, class T>
struct CsrDropoutBody {  // the same mask applied to the stored entries of a sparse matrix
  std::uint64_t rng_key;
  std::int64_t row_offset;
  float p;
  CsrView<Idx, T> x;
  T* values_out;
  HALO_HD void operator()(std::int64_t r) const {
    const T scale = T(1) / (T(1) - static_cast<T>(p));
    for (std::int64_t e = x.indptr[r]; e < x.indptr[r + 1]; ++e) {
      const bool keep = dropout_keep(rng_key, row_offset + r,
                                     static_cast<std::int64_t>(x.indices[e]), x.num_cols, p);
      values_out[e] = keep ? x.value(e) * scale : T(0);
    }
  }
};

}  // namespace detail
}  // namespace halo::kernels
