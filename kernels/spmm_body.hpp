#pragma once
// Single-source bodies of the CSR x dense products.

#include <cstdint>
#include <type_traits>
#if defined(__AVX512F__) && !defined(__CUDA_ARCH__)
#include <immintrin.h>
#endif

#include <halo/kernels/hd.hpp>
#include <halo/kernels/views.hpp>

namespace halo::kernels {

enum class Aggregate { Sum, Mean };

namespace detail {

/// out(r, :) = sum_e w(e) * x(col(e), :), divided by the row's entry count for Mean (empty
/// rows give zeros). With `mean_source` each term is divided by the entry count of row col(e)
/// instead: for a symmetric A that is the adjoint of Mean, (D^-1 A)^T y = A D^-1 y.
/// With `accumulate` (Sum only) the products are added to out's rows instead of replacing them.
/// One index = one row: rows write disjoint outputs.
template <class Idx, class T>
struct SpmmRowBody {
  CsrView<Idx, T> a;
  MatrixView<const T> x;
  MatrixView<T> out;
  bool mean;
  bool mean_source = false;
  bool accumulate = false;
  /// An x of at most this many elements (1 MiB of floats) is read from cache: the CPU's row
  /// loop does not prefetch its rows, and its launch counts a quarter of the work (spmm.cpp).
  static constexpr std::int64_t kInCacheFloats = std::int64_t{1} << 18;
  HALO_HD void operator()(std::int64_t r) const {
#if defined(__AVX512F__) && !defined(__CUDA_ARCH__)
    if constexpr (std::is_same_v<T, float>) {
      if (out.cols >= 1 && out.cols <= kMaxRegisterWidth) return register_row_dispatch(r);
    }
#endif
    // Locals, not members, in the loops: stores through `o` could otherwise alias them and
    // block vectorisation.
    const std::int64_t width = out.cols;
    T* o = out.row(r);
    if (!accumulate)
      for (std::int64_t j = 0; j < width; ++j) o[j] = T(0);
    const std::int64_t begin = a.indptr[r];
    const std::int64_t end = a.indptr[r + 1];
    for (std::int64_t e = begin; e < end; ++e) {
      const auto c = static_cast<std::int64_t>(a.indices[e]);
      const T w = mean_source ? a.value(e) / static_cast<T>(a.degree(c)) : a.value(e);
      const T* xr = x.row(c);
#if !defined(__CUDA_ARCH__)
      // Random rows of a large x are latency-bound: start fetching a later edge's row now.
      constexpr std::int64_t kAhead = 4;
      if (e + kAhead < end) {
        const char* next = reinterpret_cast<const char*>(x.row(a.indices[e + kAhead]));
        for (std::int64_t b = 0; b < width * static_cast<std::int64_t>(sizeof(T)); b += 64)
          __builtin_prefetch(next + b);
      }
#endif
      for (std::int64_t j = 0; j < width; ++j) o[j] += w * xr[j];
    }
    if (mean && end > begin) {
      const T inv = T(1) / static_cast<T>(end - begin);
      for (std::int64_t j = 0; j < width; ++j) o[j] *= inv;
    }
  }

#if defined(__AVX512F__) && !defined(__CUDA_ARCH__)
  /// Rows of at most kMaxRegisterWidth floats: the row's sums stay in V registers of 16 floats
  /// (the last masked) across its entries. Summed in out's row, every entry waited for the
  /// previous entry's store (a store through the row could alias x), and that chain, more
  /// than the reads, set the time: 4x at 16 columns on the ogbn-arxiv shape
  /// (bench/results/speed.md). The same fused multiply-adds in the same order as the loop
  /// above, so the same values.
  static constexpr std::int64_t kMaxRegisterWidth = 256;
  template <int V>
  void register_row(std::int64_t r) const {
    const std::int64_t width = out.cols;
    const auto tail = static_cast<__mmask16>((1u << (width - 16 * (V - 1))) - 1u);
    const auto mask = [tail](int v) { return v + 1 < V ? __mmask16(0xFFFF) : tail; };
    float* o = out.row(r);
    const std::int64_t begin = a.indptr[r];
    const std::int64_t end = a.indptr[r + 1];
    __m512 acc[V];
    for (int v = 0; v < V; ++v)
      acc[v] = accumulate ? _mm512_maskz_loadu_ps(mask(v), o + 16 * v) : _mm512_setzero_ps();
    // Locals: the loops below keep them in registers.
    const Idx* idx = a.indices;
    const float* val = a.values;
    const float* xd = x.data;
    const std::int64_t ld = x.cols;
    const auto add = [&](float w, std::int64_t c) {  // acc += w * x(c, :)
      const __m512 wv = _mm512_set1_ps(w);
      for (int v = 0; v < V; ++v)
        acc[v] = _mm512_fmadd_ps(wv, _mm512_maskz_loadu_ps(mask(v), xd + c * ld + 16 * v), acc[v]);
    };
    if (!mean_source && x.size() <= kInCacheFloats) {
      // x stays in cache: no prefetch, no per-entry branches (Cora: a quarter fewer samples).
      for (std::int64_t e = begin; e < end; ++e)
        add(val != nullptr ? val[e] : 1.f, static_cast<std::int64_t>(idx[e]));
    } else {
      for (std::int64_t e = begin; e < end; ++e) {
        const auto c = static_cast<std::int64_t>(idx[e]);
        if (e + 4 < end) {  // as the loop above: a later edge's row
          const char* next = reinterpret_cast<const char*>(xd + idx[e + 4] * ld);
          for (std::int64_t b = 0; b < width * 4; b += 64) __builtin_prefetch(next + b);
        }
        add(mean_source ? a.value(e) / static_cast<float>(a.degree(c)) : a.value(e), c);
      }
    }
    if (mean && end > begin) {
      const __m512 inv = _mm512_set1_ps(1.f / static_cast<float>(end - begin));
      for (int v = 0; v < V; ++v) acc[v] = _mm512_mul_ps(acc[v], inv);
    }
    for (int v = 0; v < V; ++v) _mm512_mask_storeu_ps(o + 16 * v, mask(v), acc[v]);
  }
  /// register_row<ceil(width / 16)>(r), 1 <= width <= kMaxRegisterWidth.
  void register_row_dispatch(std::int64_t r) const {
    switch ((out.cols + 15) / 16) {
      case 1:
        return register_row<1>(r);
      case 2:
        return register_row<2>(r);
      case 3:
        return register_row<3>(r);
      case 4:
        return register_row<4>(r);
      case 5:
        return register_row<5>(r);
      case 6:
        return register_row<6>(r);
      case 7:
        return register_row<7>(r);
      case 8:
        return register_row<8>(r);
      case 9:
        return register_row<9>(r);
      case 10:
        return register_row<10>(r);
      case 11:
        return register_row<11>(r);
      case 12:
        return register_row<12>(r);
      case 13:
        return register_row<13>(r);
      case 14:
        return register_row<14>(r);
      case 15:
        return register_row<15>(r);
      default:
        return register_row<16>(r);
    }
  }
#endif
};

/// The adjoint product out = A^T y (out zeroed beforehand). One index = one block of `width`
/// output columns: every block walks all edges and owns its columns, so no two indices write the
/// same element and no atomics are needed.
template <class Idx, class T>
struct SpmmTransposedBlockBody {
  CsrView<Idx, T> a;
  MatrixView<const T> y;
  MatrixView<T> out;
  bool mean;
  std::int64_t width;
  HALO_HD void operator()(std::int64_t block) const {
    const std::int64_t j0 = block * width;
    const std::int64_t j1 = j0 + width < out.cols ? j0 + width : out.cols;
#if defined(__AVX512F__) && !defined(__CUDA_ARCH__)
    if constexpr (std::is_same_v<T, float>) {
      if (j1 - j0 <= 16) return narrow_block(j0, j1);
    }
#endif
    for (std::int64_t r = 0; r < a.num_rows; ++r) {
      const std::int64_t begin = a.indptr[r];
      const std::int64_t end = a.indptr[r + 1];
      if (begin == end) continue;
      const T scale = mean ? T(1) / static_cast<T>(end - begin) : T(1);
      const T* yr = y.row(r);
      for (std::int64_t e = begin; e < end; ++e) {
        const T w = a.value(e) * scale;
        T* o = out.row(static_cast<std::int64_t>(a.indices[e]));
        for (std::int64_t j = j0; j < j1; ++j) o[j] += w * yr[j];
      }
    }
  }
#if defined(__AVX512F__) && !defined(__CUDA_ARCH__)
  /// A block of at most 16 float columns: y's row in one register, each entry one masked
  /// multiply-add into its output row (the loop above's per-column loop cost more than the
  /// work on Cora's 16-wide weight gradient). The same multiply-adds in the same order.
  void narrow_block(std::int64_t j0, std::int64_t j1) const {
    const auto m = static_cast<__mmask16>((1u << (j1 - j0)) - 1u);
    const Idx* idx = a.indices;
    float* od = out.data + j0;
    const std::int64_t ld = out.cols;
    for (std::int64_t r = 0; r < a.num_rows; ++r) {
      const std::int64_t begin = a.indptr[r];
      const std::int64_t end = a.indptr[r + 1];
      if (begin == end) continue;
      const float scale = mean ? 1.f / static_cast<float>(end - begin) : 1.f;
      const __m512 yv = _mm512_maskz_loadu_ps(m, y.row(r) + j0);
      for (std::int64_t e = begin; e < end; ++e) {
        float* o = od + static_cast<std::int64_t>(idx[e]) * ld;
        const __m512 wv = _mm512_set1_ps(a.value(e) * scale);
        _mm512_mask_storeu_ps(o, m, _mm512_fmadd_ps(wv, yv, _mm512_maskz_loadu_ps(m, o)));
      }
    }
  }
#endif
};

/// The GPU layout of SpmmRowBody: G consecutive indices per row (G a power of two dividing the
/// launcher's block size, so a row's lanes are neighbouring threads of one warp). Lane l of row r
/// owns columns l*V + j*G*V + [0, V): together the lanes read each neighbour row in one pass of
/// contiguous addresses (coalesced). Same arguments and results as `p`.
template <int G, int V, class Idx, class T>
struct SpmmRowGroupBody {
  SpmmRowBody<Idx, T> p;
  HALO_HD void operator()(std::int64_t k) const {
    const std::int64_t r = k / G;
    const std::int64_t lane = k - r * G;
    const std::int64_t width = p.out.cols;
    const std::int64_t begin = p.a.indptr[r];
    const std::int64_t end = p.a.indptr[r + 1];
    const T scale = p.mean && end > begin ? T(1) / static_cast<T>(end - begin) : T(1);
    T* o = p.out.row(r);
    for (std::int64_t c0 = lane * V; c0 < width; c0 += G * V) {
      T acc[V];
      for (int v = 0; v < V; ++v) acc[v] = T(0);
      for (std::int64_t e = begin; e < end; ++e) {
        const auto c = static_cast<std::int64_t>(p.a.indices[e]);
        const T w = p.mean_source ? p.a.value(e) / static_cast<T>(p.a.degree(c)) : p.a.value(e);
        const T* xr = p.x.row(c) + c0;
        for (int v = 0; v < V; ++v)
          if (c0 + v < width) acc[v] += w * xr[v];
      }
      for (int v = 0; v < V && c0 + v < width; ++v)
        o[c0 + v] = p.accumulate ? o[c0 + v] + acc[v] * scale : acc[v] * scale;
    }
  }
};

/// The GPU's adjoint out += A^T y (out zeroed beforehand; Mean: rows of A scaled by 1 / entry
/// count): kGroup lanes per row of A, each edge adding its share of y's row to its column's
/// output row with atomics, since several rows reach the same column.
template <class Idx, class T>
struct SpmmTransposedAtomicBody {
  static constexpr int kGroup = 32;
  CsrView<Idx, T> a;
  MatrixView<const T> y;
  MatrixView<T> out;
  bool mean;
  HALO_HD void operator()(std::int64_t k) const {
    const std::int64_t r = k / kGroup;
    const std::int64_t lane = k - r * kGroup;
    const std::int64_t begin = a.indptr[r];
    const std::int64_t end = a.indptr[r + 1];
    if (begin == end) return;
    const T scale = mean ? T(1) / static_cast<T>(end - begin) : T(1);
    const T* yr = y.row(r);
    for (std::int64_t e = begin; e < end; ++e) {
      const T w = a.value(e) * scale;
      T* o = out.row(static_cast<std::int64_t>(a.indices[e]));
      for (std::int64_t j = lane; j < out.cols; j += kGroup) atomic_add(o + j, w * yr[j]);
    }
  }
};

}  // namespace detail
}  // namespace halo::kernels
