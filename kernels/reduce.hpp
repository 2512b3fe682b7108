#pragma once
// Reductions. Instantiated for T in {float, double}.

#include <halo/kernels/resources.hpp>
#include <halo/kernels/views.hpp>

namespace halo::kernels {

/// out[j] = sum_r x(r, j), or out[j] += that when `accumulate`. out has x.cols entries. Both on
/// res's device; uses a small temporary; asynchronous on res's stream.
template <class T>
void column_sum(const Resources& res, ConstMatrixView<T> x, Span<T> out, bool accumulate = false);

/// The sum of all elements, returned to the host (synchronises res's stream).
template <class T>
T sum(const Resources& res, Span<const T> x);

}  // namespace halo::kernels
