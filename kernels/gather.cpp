#include <halo/kernels/detail/check_ids.hpp>
#include <halo/kernels/detail/instantiate.hpp>
#include <halo/kernels/exec.hpp>
#include <halo/kernels/gather.hpp>
#include <halo/kernels/gather_body.hpp>

namespace halo::kernels {

using detail::check_ids;

template <class Idx, class T>
void gather_rows(const Resources& res, ConstMatrixView<T> x, Span<const Idx> idx,
                 MatrixView<T> out) {
  HALO_EXPECTS(out.rows == idx.size && out.cols == x.cols, "gather_rows: shape mismatch");
  check_ids(res, idx, x.rows, "gather_rows");
  launch_by_device(res, idx.size, detail::GatherRowsBody<Idx, T>{x, idx, out}, idx.size * out.cols,
                   detail::GatherElementsBody<Idx, T>{x, idx, out}, idx.size * out.cols);
}

template <class Idx, class T>
void scatter_add_rows(const Resources& res, ConstMatrixView<T> x, Span<const Idx> idx,
                      MatrixView<T> out) {
  HALO_EXPECTS(x.rows == idx.size && out.cols == x.cols, "scatter_add_rows: shape mismatch");
  check_ids(res, idx, out.rows, "scatter_add_rows");
  // Column blocks without atomics on the CPU, element atomics on the GPU.
  const std::int64_t work = idx.size * x.cols;
  const std::int64_t width = cpu_column_block(res.cpu_exec(), out.cols, work);
  launch_by_device(res, (out.cols + width - 1) / width,
                   detail::ScatterAddRowsBody<Idx, T>{x, idx, out, width}, work,
                   detail::ScatterAddElementsBody<Idx, T>{x, idx, out}, work);
}

#define HALO_INSTANTIATE(Idx, T)                                                                 \
  template void gather_rows<Idx, T>(const Resources&, MatrixView<const T>, Span<const Idx>,      \
                                    MatrixView<T>);                                              \
  template void scatter_add_rows<Idx, T>(const Resources&, MatrixView<const T>, Span<const Idx>, \
                                         MatrixView<T>);
HALO_FOR_INDEX_AND_VALUE_TYPES(HALO_INSTANTIATE)
#undef HALO_INSTANTIATE

}  // namespace halo::kernels
