#include <halo/kernels/buffer.hpp>
#include <halo/kernels/detail/instantiate.hpp>
#include <halo/kernels/exec.hpp>
#include <halo/kernels/spmm.hpp>

namespace halo::kernels {

template <class Idx, class T>
void spmm(const Resources& res, CsrView<Idx, T> a, ConstMatrixView<T> x, MatrixView<T> out,
          Aggregate aggregate) {
  HALO_EXPECTS(x.rows == a.num_cols && out.rows == a.num_rows && out.cols == x.cols,
               "spmm: shape mismatch");
  launch(res, out.rows, detail::SpmmRowBody<Idx, T>{a, x, out, aggregate == Aggregate::Mean});
}

template <class Idx, class T>
void spmm_accumulate(const Resources& res, CsrView<Idx, T> a, ConstMatrixView<T> x,
                     MatrixView<T> out) {
  HALO_EXPECTS(x.rows == a.num_cols && out.rows == a.num_rows && out.cols == x.cols,
               "spmm_accumulate: shape mismatch");
  launch(res, out.rows, detail::SpmmRowBody<Idx, T>{a, x, out, false, false, true});
}

template <class Idx, class T>
void spmm_transposed(const Resources& res, CsrView<Idx, T> a, ConstMatrixView<T> y,
                     MatrixView<T> out, Aggregate aggregate) {
  HALO_EXPECTS(y.rows == a.num_rows && out.rows == a.num_cols && out.cols == y.cols,
               "spmm_transposed: shape mismatch");
  if (a.symmetric) {  // A^T == A: row-parallel, no zeroing, no column passes
    HALO_EXPECTS(a.num_rows == a.num_cols, "spmm_transposed: a symmetric matrix must be square");
    const bool mean = aggregate == Aggregate::Mean;
    launch(res, out.rows, detail::SpmmRowBody<Idx, T>{a, y, out, false, mean});
    return;
  }
  using Body = detail::SpmmTransposedBlockBody<Idx, T>;
  zero_bytes(res, out.data, res.device(), static_cast<std::size_t>(out.size()) * sizeof(T));
  const std::int64_t blocks = (out.cols + Body::kColumnBlock - 1) / Body::kColumnBlock;
  launch(res, blocks, Body{a, y, out, aggregate == Aggregate::Mean});
}

#define HALO_INSTANTIATE(Idx, T)                                                                \
  template void spmm<Idx, T>(const Resources&, CsrView<Idx, T>, MatrixView<const T>,            \
                             MatrixView<T>, Aggregate);                                         \
  template void spmm_accumulate<Idx, T>(const Resources&, CsrView<Idx, T>, MatrixView<const T>, \
                                        MatrixView<T>);                                         \
  template void spmm_transposed<Idx, T>(const Resources&, CsrView<Idx, T>, MatrixView<const T>, \
                                        MatrixView<T>, Aggregate);
HALO_FOR_INDEX_AND_VALUE_TYPES(HALO_INSTANTIATE)
#undef HALO_INSTANTIATE

}  // namespace halo::kernels
