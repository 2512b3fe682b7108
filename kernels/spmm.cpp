#include <halo/kernels/buffer.hpp>
#include <halo/kernels/detail/cuda_ops.hpp>
#include <halo/kernels/detail/instantiate.hpp>
#include <halo/kernels/exec.hpp>
#include <halo/kernels/spmm.hpp>

namespace halo::kernels {
namespace {

/// Runs a row product on res's device: the body on the CPU, the GPU's SpMM paths on CUDA.
template <class Idx, class T>
void run_rows(const Resources& res, const detail::SpmmRowBody<Idx, T>& body) {
  switch (res.device()) {
    case Device::Cpu:
      return for_each_index(res.cpu_exec(), body.out.rows, body);
    case Device::Cuda:
#if HALO_WITH_CUDA
      return detail::spmm_rows_cuda(res, body);
#else
      HALO_FAIL("spmm: this build has no CUDA backend (configure with -DHALO_WITH_CUDA=ON)");
#endif
  }
  HALO_FAIL("spmm: unknown device");
}

/// out = A^T y for a non-symmetric A: column blocks on the CPU, edge atomics on CUDA.
template <class Idx, class T>
void run_transposed(const Resources& res, CsrView<Idx, T> a, ConstMatrixView<T> y,
                    MatrixView<T> out, bool mean) {
  using Body = detail::SpmmTransposedBlockBody<Idx, T>;
  switch (res.device()) {
    case Device::Cpu: {
      zero_bytes(res, out.data, res.device(), static_cast<std::size_t>(out.size()) * sizeof(T));
      const std::int64_t blocks = (out.cols + Body::kColumnBlock - 1) / Body::kColumnBlock;
      return for_each_index(res.cpu_exec(), blocks, Body{a, y, out, mean});
    }
    case Device::Cuda:
#if HALO_WITH_CUDA
      return detail::spmm_transposed_cuda(res, a, y, out, mean);
#else
      HALO_FAIL("spmm: this build has no CUDA backend (configure with -DHALO_WITH_CUDA=ON)");
#endif
  }
  HALO_FAIL("spmm: unknown device");
}

}  // namespace

template <class Idx, class T>
void spmm(const Resources& res, CsrView<Idx, T> a, ConstMatrixView<T> x, MatrixView<T> out,
          Aggregate aggregate) {
  HALO_EXPECTS(x.rows == a.num_cols && out.rows == a.num_rows && out.cols == x.cols,
               "spmm: shape mismatch");
  run_rows(res, detail::SpmmRowBody<Idx, T>{a, x, out, aggregate == Aggregate::Mean});
}

template <class Idx, class T>
void spmm_accumulate(const Resources& res, CsrView<Idx, T> a, ConstMatrixView<T> x,
                     MatrixView<T> out) {
  HALO_EXPECTS(x.rows == a.num_cols && out.rows == a.num_rows && out.cols == x.cols,
               "spmm_accumulate: shape mismatch");
  run_rows(res, detail::SpmmRowBody<Idx, T>{a, x, out, false, false, true});
}

template <class Idx, class T>
void spmm_transposed(const Resources& res, CsrView<Idx, T> a, ConstMatrixView<T> y,
                     MatrixView<T> out, Aggregate aggregate) {
  HALO_EXPECTS(y.rows == a.num_rows && out.rows == a.num_cols && out.cols == y.cols,
               "spmm_transposed: shape mismatch");
  if (a.symmetric) {  // A^T == A: row-parallel, no zeroing, no column passes
    HALO_EXPECTS(a.num_rows == a.num_cols, "spmm_transposed: a symmetric matrix must be square");
    const bool mean = aggregate == Aggregate::Mean;
    run_rows(res, detail::SpmmRowBody<Idx, T>{a, y, out, false, mean});
    return;
  }
  run_transposed(res, a, y, out, aggregate == Aggregate::Mean);
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
