#include <cmath>

#include <halo/kernels/buffer.hpp>
#include <halo/kernels/detail/instantiate.hpp>
#include <halo/kernels/exec.hpp>
#include <halo/kernels/loss.hpp>
#include <halo/kernels/loss_body.hpp>
#include <halo/kernels/profile.hpp>
#include <halo/kernels/reduce.hpp>
#include <halo/kernels/reduce_body.hpp>
#include <halo/kernels/tensor.hpp>

namespace halo::kernels {
namespace {
/// Shapes always; for CPU data also every selected row id and its label (device data is
/// validated where it is produced). A bad label would otherwise index out of bounds.
template <class Idx, class T>
void check_inputs(const Resources& res, MatrixView<const T> logits, Span<const std::int32_t> labels,
                  Span<const Idx> rows, const char* op) {
  HALO_EXPECTS(labels.size == logits.rows, std::string(op) + ": one label per row expected");
  HALO_EXPECTS(logits.cols > 0 || logits.rows == 0, std::string(op) + ": no classes");
  if (res.device() != Device::Cpu) return;
  for (std::int64_t i = 0; i < rows.size; ++i) {
    const auto r = static_cast<std::int64_t>(rows[i]);
    HALO_EXPECTS(r >= 0 && r < logits.rows,
                 std::string(op) + ": row id " + std::to_string(r) + " out of range");
    HALO_EXPECTS(labels[r] >= 0 && labels[r] < logits.cols,
                 std::string(op) + ": label " + std::to_string(labels[r]) + " of row " +
                     std::to_string(r) + " outside [0, " + std::to_string(logits.cols) + ")");
  }
}
}  // namespace

template <class Idx, class T>
void log_softmax_nll_accumulate(const Resources& res, MatrixView<const T> logits,
                                Span<const std::int32_t> labels, Span<const Idx> rows,
                                Span<T> total) {
  check_inputs(res, logits, labels, rows, "log_softmax_nll_accumulate");
  HALO_EXPECTS(total.size == 1, "log_softmax_nll_accumulate: total must hold one element");
  const double cells = static_cast<double>(rows.size) * static_cast<double>(logits.cols);
  const OpTimer timer(res, Op::Loss, cells * sizeof(T), 4 * cells);
  if (rows.size == 0) return;
  // Per-block sums in the Resources' scratch (as many blocks as column_sum uses), then their
  // total: no temporary per call.
  const std::int64_t max_blocks = res.device() == Device::Cuda ? 2048 : 256;
  const std::int64_t per_block = (rows.size + max_blocks - 1) / max_blocks;
  const std::int64_t blocks = (rows.size + per_block - 1) / per_block;
  T* partial = static_cast<T*>(res.scratch(0, static_cast<std::size_t>(max_blocks) * sizeof(T)));
  const auto work = static_cast<std::int64_t>(cells);
  launch(res, blocks, detail::NllPartialBody<Idx, T>{logits, labels, rows, per_block, partial},
         work);
  launch(res, 1, detail::ColumnCombineBody<T>{{partial, blocks, 1}, total, /*accumulate=*/true},
         blocks);
}

template <class Idx, class T>
T log_softmax_nll(const Resources& res, MatrixView<const T> logits, Span<const std::int32_t> labels,
                  Span<const Idx> rows, std::int64_t normalizer) {
  HALO_EXPECTS(normalizer >= 0, "log_softmax_nll: negative normalizer");
  if (rows.size == 0) {
    check_inputs(res, logits, labels, rows, "log_softmax_nll");
    return T(0);
  }
  T* total = static_cast<T*>(res.scratch(1, sizeof(T)));
  zero_bytes(res, total, res.device(), sizeof(T));
  log_softmax_nll_accumulate(res, logits, labels, rows, Span<T>(total, 1));
  T host = T(0);
  copy_bytes(res, &host, Device::Cpu, total, res.device(), sizeof(T));
  return host / static_cast<T>(normalizer > 0 ? normalizer : rows.size);
}

template <class Idx, class T>
void log_softmax_nll_backward(const Resources& res, ConstMatrixView<T> logits,
                              Span<const std::int32_t> labels, Span<const Idx> rows,
                              MatrixView<T> dlogits, std::int64_t normalizer) {
  check_inputs(res, MatrixView<const T>(logits), labels, rows, "log_softmax_nll_backward");
  HALO_EXPECTS(normalizer >= 0, "log_softmax_nll_backward: negative normalizer");
  HALO_EXPECTS(dlogits.rows == logits.rows && dlogits.cols == logits.cols,
               "log_softmax_nll_backward: dlogits shape mismatch");
  const double cells = static_cast<double>(rows.size) * static_cast<double>(logits.cols);
  const OpTimer timer(res, Op::Loss, (2 * cells + static_cast<double>(dlogits.size())) * sizeof(T),
                      5 * cells);
  zero_bytes(res, dlogits.data, res.device(), static_cast<std::size_t>(dlogits.size()) * sizeof(T));
  if (rows.size == 0) return;
  const T scale = T(1) / static_cast<T>(normalizer > 0 ? normalizer : rows.size);
  launch(res, rows.size, detail::NllBackwardBody<Idx, T>{logits, labels, rows, scale, dlogits},
         static_cast<std::int64_t>(cells));
}

template <class Idx, class T>
std::int64_t count_correct(const Resources& res, MatrixView<const T> logits,
                           Span<const std::int32_t> labels, Span<const Idx> rows) {
  check_inputs(res, logits, labels, rows, "count_correct");
  if (rows.size == 0) return 0;
  Tensor<double> correct(res, rows.size);
  launch(res, rows.size, detail::CorrectBody<Idx, T>{logits, labels, rows, correct.span()},
         rows.size * logits.cols);
  return std::llround(sum(res, Span<const double>(correct.span())));
}

#define HALO_INSTANTIATE(Idx, T)                                                                  \
  template T log_softmax_nll<Idx, T>(const Resources&, MatrixView<const T>,                       \
                                     Span<const std::int32_t>, Span<const Idx>, std::int64_t);    \
  template void log_softmax_nll_accumulate<Idx, T>(                                               \
      const Resources&, MatrixView<const T>, Span<const std::int32_t>, Span<const Idx>, Span<T>); \
  template void log_softmax_nll_backward<Idx, T>(const Resources&, MatrixView<const T>,           \
                                                 Span<const std::int32_t>, Span<const Idx>,       \
                                                 MatrixView<T>, std::int64_t);                    \
  template std::int64_t count_correct<Idx, T>(const Resources&, MatrixView<const T>,              \
                                              Span<const std::int32_t>, Span<const Idx>);
HALO_FOR_INDEX_AND_VALUE_TYPES(HALO_INSTANTIATE)
#undef HALO_INSTANTIATE

}  // namespace halo::kernels
