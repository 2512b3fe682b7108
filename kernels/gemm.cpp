#include <algorithm>
#include <cblas.h>
#include <cstddef>
#include <omp.h>

#include <halo/kernels/detail/cuda_ops.hpp>
#include <halo/kernels/elementwise.hpp>
#include <halo/kernels/error.hpp>
#include <halo/kernels/exec.hpp>
#include <halo/kernels/gemm.hpp>
#include <halo/kernels/profile.hpp>

namespace halo::kernels {
namespace {

void blas(Trans ta, Trans tb, int m, int n, int k, float alpha, const float* a, int lda,
          const float* b, int ldb, float beta, float* c, int ldc) {
  cblas_sgemm(CblasRowMajor, ta == Trans::Yes ? CblasTrans : CblasNoTrans,
              tb == Trans::Yes ? CblasTrans : CblasNoTrans, m, n, k, alpha, a, lda, b, ldb, beta, c,
              ldc);
}
void blas(Trans ta, Trans tb, int m, int n, int k, double alpha, const double* a, int lda,
          const double* b, int ldb, double beta, double* c, int ldc) {
  cblas_dgemm(CblasRowMajor, ta == Trans::Yes ? CblasTrans : CblasNoTrans,
              tb == Trans::Yes ? CblasTrans : CblasNoTrans, m, n, k, alpha, a, lda, b, ldb, beta, c,
              ldc);
}

int as_int(std::int64_t v, const char* what) {
  HALO_EXPECTS(v <= 0x7fffffff, std::string("gemm: ") + what + " exceeds BLAS's 32-bit sizes");
  return static_cast<int>(v);
}

/// One product in row-major BLAS terms: c (m x n) = alpha op(a) op(b) + beta c.
template <class T>
struct Product {
  Trans ta, tb;
  int m, n, k;
  T alpha;
  const T* a;
  int lda;
  const T* b;
  int ldb;
  T beta;
  T* c;
  int ldc;

  void run() const { blas(ta, tb, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc); }
  /// Rows [r0, r1) of c: rows of op(a).
  Product rows(int r0, int r1) const {
    Product p = *this;
    p.m = r1 - r0;
    p.a += static_cast<std::ptrdiff_t>(r0) * (ta == Trans::No ? lda : 1);
    p.c += static_cast<std::ptrdiff_t>(r0) * ldc;
    return p;
  }
  /// Columns [c0, c1) of c: columns of op(b).
  Product cols(int c0, int c1) const {
    Product p = *this;
    p.n = c1 - c0;
    p.b += static_cast<std::ptrdiff_t>(c0) * (tb == Trans::No ? 1 : ldb);
    p.c += c0;
    return p;
  }
  /// The part of the sum over [k0, k1), into `out` (ld n) with beta `out_beta`.
  Product depth(int k0, int k1, T* out, int ld, T out_beta) const {
    Product p = *this;
    p.k = k1 - k0;
    p.a += static_cast<std::ptrdiff_t>(k0) * (ta == Trans::No ? 1 : lda);
    p.b += static_cast<std::ptrdiff_t>(k0) * (tb == Trans::No ? ldb : 1);
    p.c = out;
    p.ldc = ld;
    p.beta = out_beta;
    return p;
  }
};

/// OpenBLAS's own threads meet at every block of a product. On the tall and the long products of
/// a graph layer, single-threaded calls on slices of their own are faster (2 threads,
/// ogbn-arxiv shape: (169k x 128)(128 x 256) 88 -> 66 ms, (169k x 40)(40 x 256) 45 -> 25 ms,
/// (256 x 169k)(169k x 40) 51 -> 31 ms; square products equal: bench/kernels/gemm_bench).
/// The rows of c are cut into pieces, or its columns where they are more; where k is the longest
/// by far (a weight gradient: k = the graph's rows), the sum's depth is, each piece summed into a
/// private product, and the products are added into c in piece order. Up to kPiecesPerThread
/// pieces per thread, taken by whichever thread is free (a thread the OS runs something else on,
/// such as the mini-batch producer, takes fewer): the cut depends only on the shape and the
/// thread count, so results repeat for a thread count (with another they differ by rounding).
/// Small products, and calls inside a parallel region, stay with OpenBLAS (which then runs them
/// on one thread).
template <class T>
void run_cpu(const Resources& res, const Product<T>& p) {
  const int threads = res.cpu_exec().num_threads;
  const double flops = 2.0 * p.m * p.n * static_cast<double>(p.k);
  constexpr double kMinSplitFlops = 1 << 24;  // ~0.1 ms: below, a parallel region costs more
  constexpr int kMinSlice = 64;               // rows, columns or depth per piece
  constexpr int kPiecesPerThread = 4;
  constexpr double kMaxPartialBytes = 16 << 20;  // the depth split's private products, in all
  const int longest_mn = std::max(p.m, p.n);
  if (threads <= 1 || omp_in_parallel() || flops < kMinSplitFlops ||
      std::max(longest_mn, p.k / 4) < kMinSlice * threads) {
    // Inside a parallel region OpenBLAS runs on one thread; so does a product too small to pay
    // for waking its threads (the launchers' grain, kSerialWork, in multiply-adds).
    if (!omp_in_parallel()) openblas_set_num_threads(flops < 2.0 * kSerialWork * 16 ? 1 : threads);
    return p.run();
  }
  const bool by_depth = p.k >= 4 * longest_mn;
  const bool by_rows = p.m >= p.n;
  const int len = by_depth ? p.k : by_rows ? p.m : p.n;  // >= kMinSlice * threads (above)
  int pieces = std::min(kPiecesPerThread * threads, len / kMinSlice);
  const std::size_t size = static_cast<std::size_t>(p.m) * p.n;
  if (by_depth)  // at least one piece per thread, whatever the products' size
    pieces = std::min(pieces, 1 + static_cast<int>(kMaxPartialBytes / (size * sizeof(T))));
  pieces = std::max(pieces, threads);
  const auto bound = [pieces, len](int i) {
    return static_cast<int>(static_cast<std::int64_t>(len) * i / pieces);
  };
  if (by_depth) {
    T* partial = static_cast<T*>(res.scratch(0, size * (pieces - 1) * sizeof(T)));
#pragma omp parallel num_threads(threads)
    {
#pragma omp for schedule(dynamic, 1)
      for (int i = 0; i < pieces; ++i) {
        if (i == 0) {
          p.depth(0, bound(1), p.c, p.ldc, p.beta).run();
        } else {
          p.depth(bound(i), bound(i + 1), partial + size * (i - 1), p.n, T(0)).run();
        }
      }
#pragma omp for schedule(static)
      for (int r = 0; r < p.m; ++r) {
        T* row = p.c + static_cast<std::ptrdiff_t>(r) * p.ldc;
        for (int i = 1; i < pieces; ++i) {
          const T* part = partial + size * (i - 1) + static_cast<std::size_t>(r) * p.n;
          for (int j = 0; j < p.n; ++j) row[j] += part[j];
        }
      }
    }
    return;
  }
#pragma omp parallel for num_threads(threads) schedule(dynamic, 1)
  for (int i = 0; i < pieces; ++i) {
    if (by_rows) {
      p.rows(bound(i), bound(i + 1)).run();
    } else {
      p.cols(bound(i), bound(i + 1)).run();
    }
  }
}

}  // namespace

template <class T>
void gemm(const Resources& res, Trans trans_a, Trans trans_b, T alpha, ConstMatrixView<T> a,
          ConstMatrixView<T> b, T beta, MatrixView<T> c) {
  const std::int64_t m = trans_a == Trans::No ? a.rows : a.cols;
  const std::int64_t k = trans_a == Trans::No ? a.cols : a.rows;
  const std::int64_t kb = trans_b == Trans::No ? b.rows : b.cols;
  const std::int64_t n = trans_b == Trans::No ? b.cols : b.rows;
  HALO_EXPECTS(k == kb && c.rows == m && c.cols == n, "gemm: shape mismatch");
  if (m == 0 || n == 0) return;
  const auto dm = static_cast<double>(m), dn = static_cast<double>(n), dk = static_cast<double>(k);
  const OpTimer timer(res, Op::Gemm,
                      sizeof(T) * (dm * dk + dk * dn + dm * dn * (beta == T(0) ? 1 : 2)),
                      2 * dm * dn * dk);
  if (k == 0 || alpha == T(0)) {  // BLAS rejects zero leading dimensions; the result is beta * c
    if (beta == T(0)) {
      fill(res, c.span(), T(0));
    } else if (beta != T(1)) {
      axpy(res, beta - T(1), Span<const T>(c.span()), c.span());
    }
    return;
  }
  switch (res.device()) {
    case Device::Cpu:
      return run_cpu(
          res, Product<T>{trans_a, trans_b, as_int(m, "m"), as_int(n, "n"), as_int(k, "k"), alpha,
                          a.data, as_int(std::max<std::int64_t>(a.cols, 1), "lda"), b.data,
                          as_int(std::max<std::int64_t>(b.cols, 1), "ldb"), beta, c.data,
                          as_int(std::max<std::int64_t>(c.cols, 1), "ldc")});
    case Device::Cuda:
#if HALO_WITH_CUDA
      return detail::gemm_cuda(res, trans_a, trans_b, m, n, k, alpha, a, b, beta, c);
#else
      HALO_FAIL("gemm: this build has no CUDA backend (configure with -DHALO_WITH_CUDA=ON)");
#endif
  }
  HALO_FAIL("gemm: unknown device");
}

template void gemm<float>(const Resources&, Trans, Trans, float, MatrixView<const float>,
                          MatrixView<const float>, float, MatrixView<float>);
template void gemm<double>(const Resources&, Trans, Trans, double, MatrixView<const double>,
                           MatrixView<const double>, double, MatrixView<double>);

}  // namespace halo::kernels
