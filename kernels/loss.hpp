#pragma once
// Classification loss and accuracy over a subset of rows (the training / validation nodes).

#include <cstdint>

#include <halo/kernels/resources.hpp>
#include <halo/kernels/views.hpp>

namespace halo::kernels {

/// Mean over i of -log_softmax(logits(rows[i], :))[labels[rows[i]]], computed stably (log-sum-exp
/// with the row maximum subtracted). logits is n x C; labels has n entries in [0, C); rows holds
/// distinct row ids. Returns to the host (synchronises). 0 when rows is empty. A positive
/// `normalizer` replaces rows.size as the divisor: the number of rows of a loss whose terms are
/// spread over several calls (processes), so that their results add up to the mean.
/// Instantiated for Idx in {int32_t, int64_t} and T in {float, double}.
template <class Idx, class T>
T log_softmax_nll(const Resources& res, MatrixView<const T> logits, Span<const std::int32_t> labels,
                  Span<const Idx> rows, std::int64_t normalizer = 0);

/// Adds the unnormalised loss, sum over `rows` of -log softmax(logits)[r, labels[r]], to
/// total[0] (one element on res's device), asynchronously on res's stream: a training loop sums
/// its batches' losses on the device and reads the total once.
template <class Idx, class T>
void log_softmax_nll_accumulate(const Resources& res, MatrixView<const T> logits,
                                Span<const std::int32_t> labels, Span<const Idx> rows,
                                Span<T> total);

/// The gradient of `log_softmax_nll` with respect to logits, written to dlogits (n x C,
/// overwritten; rows outside `rows` get zeros), with the same `normalizer`. Asynchronous on
/// res's stream.
template <class Idx, class T>
void log_softmax_nll_backward(const Resources& res, ConstMatrixView<T> logits,
                              Span<const std::int32_t> labels, Span<const Idx> rows,
                              MatrixView<T> dlogits, std::int64_t normalizer = 0);

/// How many of `rows` have their label as the (first) arg-max of their logits. Synchronises.
template <class Idx, class T>
std::int64_t count_correct(const Resources& res, MatrixView<const T> logits,
                           Span<const std::int32_t> labels, Span<const Idx> rows);

}  // namespace halo::kernels
