#pragma once
// Dense matrix products through BLAS.

#include <halo/kernels/resources.hpp>
#include <halo/kernels/views.hpp>

namespace halo::kernels {

enum class Trans { No, Yes };

/// c = alpha * op(a) * op(b) + beta * c, op(x) = x or x^T. Row-major views; op(a) is m x k,
/// op(b) is k x n, c is m x n. With beta == 0, c's old contents are ignored (may be garbage).
/// CPU: OpenBLAS cblas_sgemm / cblas_dgemm on res's thread count; a large product is split by
/// Halo into one single-threaded call per thread (rows, columns, or the sum's depth for a long k:
/// then results depend on the thread count by rounding only). CUDA: cuBLAS (full FP32/FP64,
/// no TF32) on res's stream, asynchronous. Instantiated for float, double.
template <class T>
void gemm(const Resources& res, Trans trans_a, Trans trans_b, T alpha, ConstMatrixView<T> a,
          ConstMatrixView<T> b, T beta, MatrixView<T> c);

}  // namespace halo::kernels
