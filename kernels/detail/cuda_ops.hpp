#pragma once
// The CUDA paths of ops that do not run through the generic body launcher: cuBLAS GEMM, SpMM
// (cuSPARSE or Halo's row-group kernels). Declared for host code, defined in <op>_cuda.cu, and
// called only when HALO_WITH_CUDA.

#include <cstdint>

#include <halo/kernels/gemm.hpp>
#include <halo/kernels/resources.hpp>
#include <halo/kernels/spmm_body.hpp>
#include <halo/kernels/views.hpp>

namespace halo::kernels::detail {

/// c = alpha op(a) op(b) + beta c on res's stream through cuBLAS (row-major views; sizes
/// already checked and non-degenerate).
template <class T>
void gemm_cuda(const Resources& res, Trans trans_a, Trans trans_b, std::int64_t m, std::int64_t n,
               std::int64_t k, T alpha, ConstMatrixView<T> a, ConstMatrixView<T> b, T beta,
               MatrixView<T> c);

/// Which SpMM implementation runs on the GPU. Auto takes cuSPARSE for weighted Sum products
/// with at least kCusparseMinWidth columns (and CsrView::num_entries known) and Halo's row-group
/// kernel otherwise.
enum class SpmmAlgorithm { Auto, Cusparse, RowGroup };
inline constexpr std::int64_t kCusparseMinWidth = 32;

/// What SpmmRowBody `p` computes, on res's stream. Cusparse is refused (LogicError) where
/// cuSPARSE cannot compute it: no values, Mean, mean_source or an unknown entry count.
template <class Idx, class T>
void spmm_rows_cuda(const Resources& res, const SpmmRowBody<Idx, T>& p,
                    SpmmAlgorithm algorithm = SpmmAlgorithm::Auto);

/// out = A^T y (Mean: rows of A scaled by 1 / entry count) for a non-symmetric A: out is zeroed
/// (unless `accumulate`), then every edge adds its row of y to its column's output row with
/// atomics.
template <class Idx, class T>
void spmm_transposed_cuda(const Resources& res, CsrView<Idx, T> a, ConstMatrixView<T> y,
                          MatrixView<T> out, bool mean, bool accumulate);

}  // namespace halo::kernels::detail
