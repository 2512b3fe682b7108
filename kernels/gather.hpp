#pragma once
// Row gather and scatter-add (feature lookup and its backward).

#include <halo/kernels/resources.hpp>
#include <halo/kernels/views.hpp>

namespace halo::kernels {

/// out(i, :) = x(idx[i], :). idx entries must be in [0, x.rows) (checked on the host for CPU
/// data). Instantiated for Idx in {int32_t, int64_t} and T in {float, double}.
template <class Idx, class T>
void gather_rows(const Resources& res, ConstMatrixView<T> x, Span<const Idx> idx,
                 MatrixView<T> out);

/// out(idx[i], :) += x(i, :); repeated ids accumulate. out keeps its other contents.
template <class Idx, class T>
void scatter_add_rows(const Resources& res, ConstMatrixView<T> x, Span<const Idx> idx,
                      MatrixView<T> out);

}  // namespace halo::kernels
