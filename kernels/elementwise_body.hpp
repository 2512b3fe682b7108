#pragma once
// Single-source bodies of the element-wise ops: fill, axpy, bias, ReLU, ELU, GELU, dropout.

#include <cmath>
#include <cstdint>
#include <type_traits>
// The CPU's AVX-512 branches of the sparse dropout (F, BW, DQ and VL: every AVX-512 CPU since
// Skylake-SP); elsewhere, and on the GPU, the portable loops.
#if defined(__AVX512F__) && defined(__AVX512BW__) && defined(__AVX512DQ__) && \
    defined(__AVX512VL__) && !defined(__CUDA_ARCH__)
#define HALO_SPARSE_DROPOUT_AVX512 1
#include <immintrin.h>
#endif

#include <halo/kernels/hd.hpp>
#include <halo/kernels/hd_math.hpp>
#include <halo/kernels/rng.hpp>
#include <halo/kernels/types.hpp>
#include <halo/kernels/views.hpp>

namespace halo::kernels {

/// What a dropout mask is keyed by: element (r, c) of a layer's input is kept iff
/// rng::uniform(seed, stream_id(kStreamDropout, epoch, layer), (row_offset + r) * cols + c) >= p.
/// `row_offset` turns local rows into global node ids, so every process draws the same mask for
/// the same node; when `row_ids` is not empty, row r is node row_ids[r] instead (r + row_offset is
/// then not used), for rows that are not a contiguous range of global ids.
struct DropoutKey {
  std::uint64_t seed = 0;
  std::uint64_t epoch = 0;
  std::uint64_t layer = 0;
  std::int64_t row_offset = 0;
  Span<const NodeId> row_ids = {};
};

/// The factor kept elements are scaled by, 1 / (1 - p): one definition for the forward pass and
/// for a backward pass that scales without the mask (relu_dropout's).
template <class T>
HALO_HD inline T dropout_scale(float p) {
  return T(1) / (T(1) - static_cast<T>(p));
}

namespace detail {

inline std::uint64_t dropout_rng_key(const DropoutKey& k) {
  return rng::key(k.seed, rng::stream_id(rng::kStreamDropout, k.epoch, k.layer));
}

/// uniform >= p  <=>  (bits >> 40) >= ceil(p * 2^24): the integer form of the test, exact
/// because p * 2^24 is exact in double, and free of int-to-float conversions in the hot loop.
inline std::uint64_t dropout_threshold(float p) {
  return static_cast<std::uint64_t>(std::ceil(static_cast<double>(p) * 16777216.0));
}

/// Keeps element (global_row, c) iff rng::uniform_keyed(rng_key, global_row * cols + c) >= p,
/// given rng_key = dropout_rng_key(key) and threshold = dropout_threshold(p), both per op.
/// The global node id of local row r under DropoutKey's rule.
HALO_HD inline std::int64_t dropout_row(Span<const NodeId> row_ids, std::int64_t row_offset,
                                        std::int64_t r) {
  return row_ids.size > 0 ? static_cast<std::int64_t>(row_ids[r]) : row_offset + r;
}

/// dropout_keep as 1 or 0, computed without a comparison the compiler may turn into a branch:
/// 1 minus the borrow of (24-bit draw - threshold). Loops that sum or store the bit stay
/// branch-free (a `bool` summed there compiled to a branch, mispredicted half the time at
/// p = 0.5).
HALO_HD inline std::uint64_t dropout_keep_bit(std::uint64_t rng_key, std::uint64_t threshold,
                                              std::int64_t global_row, std::int64_t c,
                                              std::int64_t cols) {
  const std::uint64_t draw =
      rng::draw_keyed(rng_key, static_cast<std::uint64_t>(global_row * cols + c)) >> 40;
  return 1u ^ ((draw - threshold) >> 63);
}

HALO_HD inline bool dropout_keep(std::uint64_t rng_key, std::uint64_t threshold,
                                 std::int64_t global_row, std::int64_t c, std::int64_t cols) {
  return dropout_keep_bit(rng_key, threshold, global_row, c, cols) != 0;
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
struct ReluBackwardBody {  // dx = scale * dy where the output was positive
  Span<const T> y;
  Span<const T> dy;
  Span<T> dx;
  T scale;
  HALO_HD void operator()(std::int64_t i) const { dx[i] = y[i] > T(0) ? dy[i] * scale : T(0); }
};

template <class T>
struct EluBody {  // y = x for x > 0, exp(x) - 1 otherwise (alpha = 1); y may alias x
  Span<const T> x;
  Span<T> y;
  HALO_HD void operator()(std::int64_t i) const {
    const T v = x[i];
    y[i] = v > T(0) ? v : hd::exp(v) - T(1);
  }
};

template <class T>
struct EluBackwardBody {  // dx = dy where x > 0, dy exp(x) otherwise, given ELU's input x
  Span<const T> x;
  Span<const T> dy;
  Span<T> dx;
  HALO_HD void operator()(std::int64_t i) const {
    const T v = x[i];
    dx[i] = v > T(0) ? dy[i] : dy[i] * hd::exp(v);
  }
};

/// GELU with the tanh approximation (Hendrycks & Gimpel): y = x/2 (1 + tanh(u)),
/// u = sqrt(2/pi) (x + 0.044715 x^3); tanh(u) = 1 - 2 / (exp(2u) + 1), which saturates to +-1
/// instead of overflowing.
template <class T>
HALO_HD inline T gelu_tanh(T u) {
  return T(1) - T(2) / (hd::exp(T(2) * u) + T(1));
}
constexpr double kGeluC = 0.7978845608028654;  // sqrt(2 / pi)
constexpr double kGeluA = 0.044715;

template <class T>
struct GeluBody {  // y = gelu(x); y may alias x
  Span<const T> x;
  Span<T> y;
  HALO_HD void operator()(std::int64_t i) const {
    const T v = x[i];
    y[i] = T(0.5) * v * (T(1) + gelu_tanh(T(kGeluC) * (v + T(kGeluA) * v * v * v)));
  }
};

template <class T>
struct GeluBackwardBody {  // dx = gelu'(x) dy, given GELU's input x; dx may alias dy
  Span<const T> x;
  Span<const T> dy;
  Span<T> dx;
  HALO_HD void operator()(std::int64_t i) const {
    const T v = x[i];
    const T t = gelu_tanh(T(kGeluC) * (v + T(kGeluA) * v * v * v));
    const T du = T(kGeluC) * (T(1) + T(3 * kGeluA) * v * v);
    dx[i] = dy[i] * (T(0.5) * (T(1) + t) + T(0.5) * v * (T(1) - t * t) * du);
  }
};

/// Relu: dropout(relu(x)) in the same pass (relu_dropout). With `gather`, row r of y is the
/// dropout of row gather[r] of x (gather_dropout), else of row r.
template <class T, bool Relu = false>
struct DropoutBody {  // one index = one row
  std::uint64_t rng_key;
  std::uint64_t threshold;
  std::int64_t row_offset;
  Span<const NodeId> row_ids;
  T scale;  // 1 / (1 - p)
  MatrixView<const T> x;
  MatrixView<T> y;
  const NodeId* gather;
  HALO_HD void operator()(std::int64_t r) const {
    // Members copied to locals: a store through `out` could alias `scale` (same type), which
    // stops the compiler from vectorising the loop (measured: 7x slower on AVX-512).
    const T* in = x.row(gather ? static_cast<std::int64_t>(gather[r]) : r);
    T* out = y.row(r);
    const std::int64_t cols = y.cols;
#if !defined(__CUDA_ARCH__)
    // Gathered rows are random rows of a large x, latency-bound while the mask's arithmetic
    // keeps the core busy: start fetching a later row now (as the SpMM's row body does).
    constexpr std::int64_t kAhead = 4;
    if (gather && r + kAhead < y.rows) {
      const char* next = reinterpret_cast<const char*>(x.row(gather[r + kAhead]));
      for (std::int64_t b = 0; b < cols * static_cast<std::int64_t>(sizeof(T)); b += 64)
        __builtin_prefetch(next + b);
    }
#endif
    const std::int64_t g = dropout_row(row_ids, row_offset, r);
    const std::uint64_t key = rng_key, thr = threshold;
    const T s = scale;
    for (std::int64_t c = 0; c < cols; ++c) {
      const T v = Relu && !(in[c] > T(0)) ? T(0) : in[c];
      out[c] = dropout_keep(key, thr, g, c, cols) ? v * s : T(0);
    }
  }
};

/// GPU variants of the row bodies above, one element per index so neighbouring threads
/// touch neighbouring columns (coalesced): index k is row k / cols, column k % cols.
template <class T>
struct AddBiasElementsBody {
  MatrixView<T> x;
  Span<const T> bias;
  HALO_HD void operator()(std::int64_t k) const { x.data[k] += bias[k % x.cols]; }
};

template <class T, bool Relu = false>
struct DropoutElementsBody {
  std::uint64_t rng_key;
  std::uint64_t threshold;
  std::int64_t row_offset;
  Span<const NodeId> row_ids;
  T scale;
  MatrixView<const T> x;
  MatrixView<T> y;
  const NodeId* gather;  // as DropoutBody's
  HALO_HD void operator()(std::int64_t k) const {
    const std::int64_t r = k / y.cols;
    const std::int64_t c = k - r * y.cols;
    const std::int64_t g = dropout_row(row_ids, row_offset, r);
    const T in = x(gather ? static_cast<std::int64_t>(gather[r]) : r, c);
    const T v = Relu && !(in > T(0)) ? T(0) : in;
    y(r, c) = dropout_keep(rng_key, threshold, g, c, y.cols) ? v * scale : T(0);
  }
};

template <class Idx, class T>
struct CsrDropoutBody {  // the same mask applied to the stored entries of a sparse matrix
  std::uint64_t rng_key;
  std::uint64_t threshold;
  std::int64_t row_offset;
  Span<const NodeId> row_ids;
  T scale;
  CsrView<Idx, T> x;
  T* values_out;
  HALO_HD void operator()(std::int64_t r) const {
    const std::int64_t g = dropout_row(row_ids, row_offset, r);
    for (std::int64_t e = x.indptr[r]; e < x.indptr[r + 1]; ++e) {
      const bool keep =
          dropout_keep(rng_key, threshold, g, static_cast<std::int64_t>(x.indices[e]), x.num_cols);
      values_out[e] = keep ? x.value(e) * scale : T(0);
    }
  }
};

/// dropout_compact's first pass: entry e's mask bit into keep[e] (the mask of CsrDropoutBody)
/// and row r's kept entries into out_indptr[r + 1] (0 into out_indptr[0]).
template <class Idx, class T>
struct CsrDropoutCountBody {
  std::uint64_t rng_key;
  std::uint64_t threshold;
  std::int64_t row_offset;
  Span<const NodeId> row_ids;
  CsrView<Idx, T> x;
  std::uint8_t* keep;
  std::int64_t* out_indptr;
  HALO_HD void operator()(std::int64_t r) const {
    if (r == 0) out_indptr[0] = 0;
    const std::int64_t g = dropout_row(row_ids, row_offset, r);
    const std::uint64_t key = rng_key, thr = threshold;
    const std::int64_t cols = x.num_cols;
    const std::int64_t begin = x.indptr[r], end = x.indptr[r + 1];
#if defined(HALO_SPARSE_DROPOUT_AVX512)
    // Eight entries a step, the row's last step masked: a row holds a few dozen entries, too
    // few for the compiler's vector loop, whose scalar remainder did most of the hashing.
    const __m512i base = _mm512_set1_epi64(static_cast<long long>(g * cols));
    const __m512i kv = _mm512_set1_epi64(static_cast<long long>(key));
    const __m512i tv = _mm512_set1_epi64(static_cast<long long>(thr));
    std::int64_t kept = 0;
    for (std::int64_t e = begin; e < end; e += 8) {
      const auto m = static_cast<__mmask8>(end - e >= 8 ? 0xFF : (1u << (end - e)) - 1u);
      __m512i c;
      if constexpr (sizeof(Idx) == 4)
        c = _mm512_maskz_cvtepi32_epi64(m, _mm256_maskz_loadu_epi32(m, x.indices + e));
      else
        c = _mm512_maskz_loadu_epi64(m, x.indices + e);
      const __m512i draw =
          rng::srli8<40>(rng::mix8(_mm512_xor_si512(kv, _mm512_add_epi64(base, c))));
      const __mmask8 kept_mask = _mm512_mask_cmpge_epu64_mask(m, draw, tv);
      _mm512_mask_cvtepi64_storeu_epi8(keep + e, m, _mm512_maskz_set1_epi64(kept_mask, 1));
      kept += __builtin_popcount(kept_mask);
    }
#else
    std::int64_t kept = 0;
    for (std::int64_t e = begin; e < end; ++e) {
      const std::uint64_t bit =
          dropout_keep_bit(key, thr, g, static_cast<std::int64_t>(x.indices[e]), cols);
      keep[e] = static_cast<std::uint8_t>(bit);
      kept += static_cast<std::int64_t>(bit);
    }
#endif
    out_indptr[r + 1] = kept;
  }
};

/// dropout_compact's second pass: row r's kept entries (keep[e] set), scaled, from
/// out_indptr[r] on.
template <class Idx, class T>
struct CsrDropoutCompactBody {
  T scale;
  CsrView<Idx, T> x;
  const std::uint8_t* keep;
  const std::int64_t* out_indptr;
  Idx* out_indices;
  T* out_values;
  HALO_HD void operator()(std::int64_t r) const {
    // Without a branch on the mask (half its outcomes mispredicted at p = 0.5): every entry is
    // written at the next free slot, which only a kept one advances. Slots stay within the row:
    // the loop ends once its last kept entry is written.
    const T s = scale;
    std::int64_t k = out_indptr[r];
    const std::int64_t k_end = out_indptr[r + 1];
#if defined(HALO_SPARSE_DROPOUT_AVX512)
    if constexpr (sizeof(Idx) == 4 && std::is_same_v<T, float>) {
      // Sixteen entries a step, the kept ones compressed into place (the loop below takes a
      // dependent load and add per entry).
      const std::int64_t end = x.indptr[r + 1];
      const __m512 sv = _mm512_set1_ps(s);
      for (std::int64_t e = x.indptr[r]; e < end; e += 16) {
        const auto m = static_cast<__mmask16>(end - e >= 16 ? 0xFFFF : (1u << (end - e)) - 1u);
        const __mmask16 kept =
            _mm_mask_test_epi8_mask(m, _mm_maskz_loadu_epi8(m, keep + e), _mm_set1_epi8(1));
        const __m512 v =  // x.value(e) * s
            x.values != nullptr ? _mm512_mul_ps(_mm512_maskz_loadu_ps(m, x.values + e), sv) : sv;
        _mm512_mask_compressstoreu_epi32(out_indices + k, kept,
                                         _mm512_maskz_loadu_epi32(m, x.indices + e));
        _mm512_mask_compressstoreu_ps(out_values + k, kept, v);
        k += __builtin_popcount(kept);
      }
      return;
    }
#endif
    for (std::int64_t e = x.indptr[r]; k < k_end; ++e) {
      out_indices[k] = x.indices[e];
      out_values[k] = x.value(e) * s;
      k += keep[e];
    }
  }
};

}  // namespace detail
}  // namespace halo::kernels
