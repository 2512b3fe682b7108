#pragma once
// Sparse (CSR) x dense products: neighbourhood aggregation and sparse features x weights.

#include <halo/kernels/resources.hpp>
#include <halo/kernels/spmm_body.hpp>
#include <halo/kernels/views.hpp>

namespace halo::kernels {

/// out = A x, with A's stored values as edge weights (all ones when it has none). With
/// Aggregate::Mean each output row is divided by its number of stored entries (empty rows give
/// zero rows). Shapes: A is m x k, x is k x n, out is m x n (overwritten). All arguments on res's
/// device; asynchronous on res's stream. CUDA: cuSPARSE's CSR SpMM for weighted sums of 32 or
/// more columns, Halo's row-group kernel otherwise (kernels/spmm_cuda.cu). Instantiated for Idx
/// in {int32_t, int64_t} and T in {float, double}.
template <class Idx, class T>
void spmm(const Resources& res, CsrView<Idx, T> a, ConstMatrixView<T> x, MatrixView<T> out,
          Aggregate aggregate = Aggregate::Sum);

/// out += A x (Aggregate::Sum): spmm without overwriting, e.g. to add the product of a second
/// block of columns. Same shapes and instantiations as `spmm`.
template <class Idx, class T>
void spmm_accumulate(const Resources& res, CsrView<Idx, T> a, ConstMatrixView<T> x,
                     MatrixView<T> out);

/// The adjoint of `spmm`: out = A^T y (Mean: A's rows scaled by 1 / entry count first), the
/// backward product of aggregation. A is m x k, y is m x n, out is k x n (overwritten).
/// When `a.symmetric` is set this runs as a row-parallel spmm (the fast path); otherwise each
/// CPU thread owns a block of output columns and walks all edges, and on CUDA every edge adds
/// its row with atomics (the order of additions, hence the last bits, varies between runs).
template <class Idx, class T>
void spmm_transposed(const Resources& res, CsrView<Idx, T> a, ConstMatrixView<T> y,
                     MatrixView<T> out, Aggregate aggregate = Aggregate::Sum);

/// out += A^T y: spmm_transposed without overwriting (a gradient summed over several products
/// into one buffer, with no temporary and no pass to add it). Same shapes and instantiations.
template <class Idx, class T>
void spmm_transposed_accumulate(const Resources& res, CsrView<Idx, T> a, ConstMatrixView<T> y,
                                MatrixView<T> out, Aggregate aggregate = Aggregate::Sum);

}  // namespace halo::kernels
