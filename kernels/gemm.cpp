#include <algorithm>
#include <cblas.h>

#include <halo/kernels/detail/cuda_ops.hpp>
#include <halo/kernels/elementwise.hpp>
#include <halo/kernels/error.hpp>
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
      openblas_set_num_threads(res.cpu_exec().num_threads);
      return blas(trans_a, trans_b, as_int(m, "m"), as_int(n, "n"), as_int(k, "k"), alpha, a.data,
                  as_int(std::max<std::int64_t>(a.cols, 1), "lda"), b.data,
                  as_int(std::max<std::int64_t>(b.cols, 1), "ldb"), beta, c.data,
                  as_int(std::max<std::int64_t>(c.cols, 1), "ldc"));
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
