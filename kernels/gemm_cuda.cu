// GEMM on the GPU: cuBLAS on the Resources' handle and stream. cuBLAS is column-major; a
// row-major m x n matrix is its n x m transpose, so c^T = op(b)^T op(a)^T is computed instead.
#include <cublas_v2.h>

#include <halo/kernels/cuda_check.cuh>
#include <halo/kernels/detail/cuda_ops.hpp>

namespace halo::kernels::detail {
namespace {

cublasStatus_t blas(cublasHandle_t h, cublasOperation_t ta, cublasOperation_t tb, int m, int n,
                    int k, const float* alpha, const float* a, int lda, const float* b, int ldb,
                    const float* beta, float* c, int ldc) {
  return cublasSgemm(h, ta, tb, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
}
cublasStatus_t blas(cublasHandle_t h, cublasOperation_t ta, cublasOperation_t tb, int m, int n,
                    int k, const double* alpha, const double* a, int lda, const double* b, int ldb,
                    const double* beta, double* c, int ldc) {
  return cublasDgemm(h, ta, tb, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
}

int as_int(std::int64_t v, const char* what) {
  HALO_EXPECTS(v <= 0x7fffffff, std::string("gemm: ") + what + " exceeds cuBLAS's 32-bit sizes");
  return static_cast<int>(v);
}

cublasOperation_t op(Trans t) { return t == Trans::Yes ? CUBLAS_OP_T : CUBLAS_OP_N; }

}  // namespace

template <class T>
void gemm_cuda(const Resources& res, Trans trans_a, Trans trans_b, std::int64_t m, std::int64_t n,
               std::int64_t k, T alpha, ConstMatrixView<T> a, ConstMatrixView<T> b, T beta,
               MatrixView<T> c) {
  const auto handle = static_cast<cublasHandle_t>(res.cublas_handle());
  // Scalars are read from the host (CUBLAS_POINTER_MODE_HOST, the handle's default).
  HALO_CUBLAS_CHECK(blas(handle, op(trans_b), op(trans_a), as_int(n, "n"), as_int(m, "m"),
                         as_int(k, "k"), &alpha, b.data,
                         as_int(std::max<std::int64_t>(b.cols, 1), "ldb"), a.data,
                         as_int(std::max<std::int64_t>(a.cols, 1), "lda"), &beta, c.data,
                         as_int(std::max<std::int64_t>(c.cols, 1), "ldc")));
  if (debug_sync())
    HALO_CUDA_CHECK(cudaStreamSynchronize(static_cast<cudaStream_t>(res.cuda_exec().stream)));
}

template void gemm_cuda<float>(const Resources&, Trans, Trans, std::int64_t, std::int64_t,
                               std::int64_t, float, MatrixView<const float>,
                               MatrixView<const float>, float, MatrixView<float>);
template void gemm_cuda<double>(const Resources&, Trans, Trans, std::int64_t, std::int64_t,
                                std::int64_t, double, MatrixView<const double>,
                                MatrixView<const double>, double, MatrixView<double>);

}  // namespace halo::kernels::detail
