#include <halo/kernels/buffer.hpp>
#include <halo/kernels/detail/cuda_ops.hpp>
#include <halo/kernels/detail/instantiate.hpp>
#include <halo/kernels/exec.hpp>
#include <halo/kernels/profile.hpp>
#include <halo/kernels/spmm.hpp>

namespace halo::kernels {
namespace {

/// A CPU product's elements for the launcher's grain: an input row read per entry, the output
/// written, `cols` wide. Where the randomly read rows (x's, or the transpose's output rows) fit
/// in SpmmRowBody::kInCacheFloats, a vector multiply-add takes about a quarter of an element's
/// time (kSerialWork), so the work counts a quarter: Cora's sparse features times W (437k
/// elements, one of six products that take 0.2-0.3 ms together on one thread) lost more to
/// waking a second thread than it gained (bench/results/speed.md, "Cora under 0.1").
template <class Idx, class T>
std::int64_t cpu_work(CsrView<Idx, T> a, std::int64_t out_rows, std::int64_t cols,
                      std::int64_t random_rows_size) {
  const std::int64_t entries = a.num_entries >= 0 ? a.num_entries : a.num_edges();
  const std::int64_t work = (entries + out_rows) * cols;
  return random_rows_size <= detail::SpmmRowBody<Idx, T>::kInCacheFloats ? work / 4 : work;
}

/// Runs a row product on res's device: the body on the CPU, the GPU's SpMM paths on CUDA.
template <class Idx, class T>
void run_rows(const Resources& res, const detail::SpmmRowBody<Idx, T>& body) {
  switch (res.device()) {
    case Device::Cpu:
      return for_each_index(res.cpu_exec(), body.out.rows, body,
                            cpu_work(body.a, body.out.rows, body.out.cols, body.x.size()));
    case Device::Cuda:
#if HALO_WITH_CUDA
      return detail::spmm_rows_cuda(res, body);
#else
      HALO_FAIL("spmm: this build has no CUDA backend (configure with -DHALO_WITH_CUDA=ON)");
#endif
  }
  HALO_FAIL("spmm: unknown device");
}

/// out = A^T y (out += A^T y when `accumulate`) for a non-symmetric A: column blocks on the
/// CPU, edge atomics on CUDA.
template <class Idx, class T>
void run_transposed(const Resources& res, CsrView<Idx, T> a, ConstMatrixView<T> y,
                    MatrixView<T> out, bool mean, bool accumulate) {
  using Body = detail::SpmmTransposedBlockBody<Idx, T>;
  switch (res.device()) {
    case Device::Cpu: {
      if (!accumulate)
        zero_bytes(res, out.data, res.device(), static_cast<std::size_t>(out.size()) * sizeof(T));
      const std::int64_t work = cpu_work(a, out.rows, out.cols, out.size());
      const std::int64_t width = cpu_column_block(res.cpu_exec(), out.cols, work);
      return for_each_index(res.cpu_exec(), (out.cols + width - 1) / width,
                            Body{a, y, out, mean, width}, work);
    }
    case Device::Cuda:
#if HALO_WITH_CUDA
      return detail::spmm_transposed_cuda(res, a, y, out, mean, accumulate);
#else
      HALO_FAIL("spmm: this build has no CUDA backend (configure with -DHALO_WITH_CUDA=ON)");
#endif
  }
  HALO_FAIL("spmm: unknown device");
}

/// A product's traffic: the structure (and values), one input row read per stored entry, the
/// output written (and read, when accumulated); two FLOPs per entry and column.
template <class Idx, class T>
OpTimer spmm_timer(const Resources& res, CsrView<Idx, T> a, std::int64_t cols,
                   std::int64_t out_rows, bool accumulate) {
  // A device matrix whose host does not know its entries counts none (indptr is not read back).
  const std::int64_t entries =
      a.num_entries >= 0 ? a.num_entries : (res.device() == Device::Cpu ? a.num_edges() : 0);
  const auto nnz = static_cast<double>(entries), c = static_cast<double>(cols);
  const double structure = static_cast<double>(a.num_rows + 1) * sizeof(std::int64_t) +
                           nnz * (sizeof(Idx) + (a.values != nullptr ? sizeof(T) : 0));
  const double rows =
      nnz * c * sizeof(T) + static_cast<double>(out_rows) * c * sizeof(T) * (accumulate ? 2 : 1);
  return OpTimer(res, Op::Spmm, structure + rows, 2 * nnz * c);
}

}  // namespace

template <class Idx, class T>
void spmm(const Resources& res, CsrView<Idx, T> a, ConstMatrixView<T> x, MatrixView<T> out,
          Aggregate aggregate) {
  HALO_EXPECTS(x.rows == a.num_cols && out.rows == a.num_rows && out.cols == x.cols,
               "spmm: shape mismatch");
  const OpTimer timer = spmm_timer(res, a, x.cols, out.rows, false);
  run_rows(res, detail::SpmmRowBody<Idx, T>{a, x, out, aggregate == Aggregate::Mean});
}

template <class Idx, class T>
void spmm_accumulate(const Resources& res, CsrView<Idx, T> a, ConstMatrixView<T> x,
                     MatrixView<T> out) {
  HALO_EXPECTS(x.rows == a.num_cols && out.rows == a.num_rows && out.cols == x.cols,
               "spmm_accumulate: shape mismatch");
  const OpTimer timer = spmm_timer(res, a, x.cols, out.rows, true);
  run_rows(res, detail::SpmmRowBody<Idx, T>{a, x, out, false, false, true});
}

namespace {
template <class Idx, class T>
void transposed(const Resources& res, CsrView<Idx, T> a, ConstMatrixView<T> y, MatrixView<T> out,
                Aggregate aggregate, bool accumulate) {
  HALO_EXPECTS(y.rows == a.num_rows && out.rows == a.num_cols && out.cols == y.cols,
               "spmm_transposed: shape mismatch");
  const OpTimer timer = spmm_timer(res, a, y.cols, out.rows, accumulate);
  if (a.symmetric) {  // A^T == A: row-parallel, no zeroing, no column passes
    HALO_EXPECTS(a.num_rows == a.num_cols, "spmm_transposed: a symmetric matrix must be square");
    const bool mean = aggregate == Aggregate::Mean;
    run_rows(res, detail::SpmmRowBody<Idx, T>{a, y, out, false, mean, accumulate});
    return;
  }
  run_transposed(res, a, y, out, aggregate == Aggregate::Mean, accumulate);
}
}  // namespace

template <class Idx, class T>
void spmm_transposed(const Resources& res, CsrView<Idx, T> a, ConstMatrixView<T> y,
                     MatrixView<T> out, Aggregate aggregate) {
  transposed(res, a, y, out, aggregate, false);
}

template <class Idx, class T>
void spmm_transposed_accumulate(const Resources& res, CsrView<Idx, T> a, ConstMatrixView<T> y,
                                MatrixView<T> out, Aggregate aggregate) {
  transposed(res, a, y, out, aggregate, true);
}

#define HALO_INSTANTIATE(Idx, T)                                                                \
  template void spmm<Idx, T>(const Resources&, CsrView<Idx, T>, MatrixView<const T>,            \
                             MatrixView<T>, Aggregate);                                         \
  template void spmm_accumulate<Idx, T>(const Resources&, CsrView<Idx, T>, MatrixView<const T>, \
                                        MatrixView<T>);                                         \
  template void spmm_transposed<Idx, T>(const Resources&, CsrView<Idx, T>, MatrixView<const T>, \
                                        MatrixView<T>, Aggregate);                              \
  template void spmm_transposed_accumulate<Idx, T>(const Resources&, CsrView<Idx, T>,           \
                                                   MatrixView<const T>, MatrixView<T>, Aggregate);
HALO_FOR_INDEX_AND_VALUE_TYPES(HALO_INSTANTIATE)
#undef HALO_INSTANTIATE

}  // namespace halo::kernels
