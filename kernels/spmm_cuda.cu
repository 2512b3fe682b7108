// SpMM on the GPU. Weighted sums of at least kCusparseMinWidth columns go to cuSPARSE's generic
// CSR SpMM (row-major dense operands); everything else (narrow widths, unweighted graphs, Mean,
// accumulation into a sum of blocks) runs Halo's row-group body (SpmmRowGroupBody: G threads
// per row, each owning V consecutive columns, so a group reads whole neighbour rows coalesced),
// and the adjoint of a non-symmetric matrix SpmmTransposedAtomicBody. Both are single-source:
// the tests run them on the CPU launcher too.
#include <cusparse.h>

#include <halo/kernels/cuda_check.cuh>
#include <halo/kernels/detail/cuda_ops.hpp>
#include <halo/kernels/detail/instantiate.hpp>
#include <halo/kernels/exec_cuda.cuh>
#include <halo/kernels/spmm_body.hpp>

namespace halo::kernels::detail {
namespace {

/// Group size: the smallest power of two with G * V >= cols, at most a warp.
template <int V>
int group_size(std::int64_t cols) {
  int g = 1;
  while (g < 32 && static_cast<std::int64_t>(g) * V < cols) g *= 2;
  return g;
}

template <int G, int V, class Idx, class T>
void launch_row_group(CudaExec exec, const SpmmRowBody<Idx, T>& p) {
  launch_cuda(exec, p.out.rows * G, SpmmRowGroupBody<G, V, Idx, T>{p});
}

template <int V, class Idx, class T>
void row_group(CudaExec exec, const SpmmRowBody<Idx, T>& p) {
  switch (group_size<V>(p.out.cols)) {
    case 1:
      return launch_row_group<1, V>(exec, p);
    case 2:
      return launch_row_group<2, V>(exec, p);
    case 4:
      return launch_row_group<4, V>(exec, p);
    case 8:
      return launch_row_group<8, V>(exec, p);
    case 16:
      return launch_row_group<16, V>(exec, p);
    default:
      return launch_row_group<32, V>(exec, p);
  }
}

/// Widths of at least 8 lanes x 16 bytes give each lane 16 bytes per neighbour row.
template <class Idx, class T>
void row_group(CudaExec exec, const SpmmRowBody<Idx, T>& p) {
  constexpr int kWide = 16 / sizeof(T);
  if (p.out.cols >= kWide * 8)
    row_group<kWide>(exec, p);
  else
    row_group<1>(exec, p);
}

template <class T>
cudaDataType value_type() {
  return sizeof(T) == sizeof(float) ? CUDA_R_32F : CUDA_R_64F;
}

/// Narrows CSR offsets to 32 bits for cuSPARSE, which takes one index width for both arrays.
struct NarrowOffsetsBody {
  const std::int64_t* in;
  std::int32_t* out;
  __device__ void operator()(std::int64_t i) const { out[i] = static_cast<std::int32_t>(in[i]); }
};

template <class Idx, class T>
void cusparse_spmm(const Resources& res, const SpmmRowBody<Idx, T>& p) {
  const auto handle = static_cast<cusparseHandle_t>(res.cusparse_handle());
  const auto stream = static_cast<cudaStream_t>(res.cuda_exec().stream);
  const std::int64_t nnz = p.a.num_entries;
  constexpr bool kNarrow = sizeof(Idx) == 4;
  const cusparseIndexType_t index = kNarrow ? CUSPARSE_INDEX_32I : CUSPARSE_INDEX_64I;

  cusparseConstSpMatDescr_t a = nullptr;
  cusparseConstDnMatDescr_t x = nullptr;
  cusparseDnMatDescr_t out = nullptr;
  const T alpha = T(1);
  const T beta = p.accumulate ? T(1) : T(0);
  const std::size_t offsets_bytes = kNarrow ? (p.a.num_rows + 1) * sizeof(std::int32_t) : 0;
  const std::size_t offsets_aligned = (offsets_bytes + 255) / 256 * 256;
  // The offsets are narrowed into the workspace before cuSPARSE sizes its buffer, so the
  // buffer's size is asked for with the final descriptor and both share one workspace call.
  void* offsets = const_cast<std::int64_t*>(p.a.indptr);
  struct Descriptors {  // destroyed on every path out, exceptions included
    cusparseConstSpMatDescr_t& a;
    cusparseConstDnMatDescr_t& x;
    cusparseDnMatDescr_t& out;
    ~Descriptors() {
      if (a != nullptr) cusparseDestroySpMat(a);
      if (x != nullptr) cusparseDestroyDnMat(x);
      if (out != nullptr) cusparseDestroyDnMat(out);
    }
  } guard{a, x, out};
  HALO_CUSPARSE_CHECK(cusparseCreateConstDnMat(&x, p.x.rows, p.x.cols, p.x.cols, p.x.data,
                                               value_type<T>(), CUSPARSE_ORDER_ROW));
  HALO_CUSPARSE_CHECK(cusparseCreateDnMat(&out, p.out.rows, p.out.cols, p.out.cols, p.out.data,
                                          value_type<T>(), CUSPARSE_ORDER_ROW));
  // Size the buffer with the 64-bit offsets' descriptor first when no narrowing is needed;
  // otherwise a provisional workspace holds the narrowed offsets.
  std::size_t buffer_bytes = 0;
  char* work = nullptr;
  if (kNarrow) {
    work = static_cast<char*>(res.workspace(offsets_aligned));
    offsets = work;
    launch_cuda(res.cuda_exec(), p.a.num_rows + 1,
                NarrowOffsetsBody{p.a.indptr, static_cast<std::int32_t*>(offsets)});
  }
  HALO_CUSPARSE_CHECK(cusparseCreateConstCsr(&a, p.a.num_rows, p.a.num_cols, nnz, offsets,
                                             p.a.indices, p.a.values, index, index,
                                             CUSPARSE_INDEX_BASE_ZERO, value_type<T>()));
  HALO_CUSPARSE_CHECK(cusparseSpMM_bufferSize(
      handle, CUSPARSE_OPERATION_NON_TRANSPOSE, CUSPARSE_OPERATION_NON_TRANSPOSE, &alpha, a, x,
      &beta, out, value_type<T>(), CUSPARSE_SPMM_CSR_ALG2, &buffer_bytes));
  if (offsets_aligned + buffer_bytes > offsets_aligned) {
    // Growing the workspace may move it: narrow again into the new one (stream-ordered, cheap).
    char* grown = static_cast<char*>(res.workspace(offsets_aligned + buffer_bytes));
    if (kNarrow && grown != work) {
      launch_cuda(res.cuda_exec(), p.a.num_rows + 1,
                  NarrowOffsetsBody{p.a.indptr, reinterpret_cast<std::int32_t*>(grown)});
      HALO_CUSPARSE_CHECK(cusparseDestroySpMat(a));
      a = nullptr;
      HALO_CUSPARSE_CHECK(cusparseCreateConstCsr(&a, p.a.num_rows, p.a.num_cols, nnz, grown,
                                                 p.a.indices, p.a.values, index, index,
                                                 CUSPARSE_INDEX_BASE_ZERO, value_type<T>()));
    }
    work = grown;
  }
  HALO_CUSPARSE_CHECK(cusparseSpMM(handle, CUSPARSE_OPERATION_NON_TRANSPOSE,
                                   CUSPARSE_OPERATION_NON_TRANSPOSE, &alpha, a, x, &beta, out,
                                   value_type<T>(), CUSPARSE_SPMM_CSR_ALG2,
                                   buffer_bytes > 0 ? work + offsets_aligned : nullptr));
  if (debug_sync()) HALO_CUDA_CHECK(cudaStreamSynchronize(stream));
}

}  // namespace

template <class Idx, class T>
void spmm_rows_cuda(const Resources& res, const SpmmRowBody<Idx, T>& p, SpmmAlgorithm algorithm) {
  if (p.out.rows == 0 || p.out.cols == 0) return;
  const bool cusparse_can =
      p.a.values != nullptr && !p.mean && !p.mean_source && p.a.num_entries >= 0;
  HALO_EXPECTS(algorithm != SpmmAlgorithm::Cusparse || cusparse_can,
               "spmm: cuSPARSE computes weighted sums of a matrix whose entry count the host "
               "knows (values required, no Mean)");
  const bool narrow_ok = sizeof(Idx) == 8 || p.a.num_entries <= 0x7fffffff;
  if (algorithm == SpmmAlgorithm::Cusparse || (algorithm == SpmmAlgorithm::Auto && cusparse_can &&
                                               narrow_ok && p.out.cols >= kCusparseMinWidth))
    return cusparse_spmm(res, p);
  row_group(res.cuda_exec(), p);
}

template <class Idx, class T>
void spmm_transposed_cuda(const Resources& res, CsrView<Idx, T> a, ConstMatrixView<T> y,
                          MatrixView<T> out, bool mean) {
  HALO_CUDA_CHECK(cudaMemsetAsync(out.data, 0, out.size() * sizeof(T),
                                  static_cast<cudaStream_t>(res.cuda_exec().stream)));
  if (out.cols == 0) return;
  using Body = SpmmTransposedAtomicBody<Idx, T>;
  launch_cuda(res.cuda_exec(), a.num_rows * Body::kGroup, Body{a, y, out, mean});
}

#define HALO_INSTANTIATE(Idx, T)                                                     \
  template void spmm_rows_cuda<Idx, T>(const Resources&, const SpmmRowBody<Idx, T>&, \
                                       SpmmAlgorithm);                               \
  template void spmm_transposed_cuda<Idx, T>(const Resources&, CsrView<Idx, T>,      \
                                             MatrixView<const T>, MatrixView<T>, bool);
HALO_FOR_INDEX_AND_VALUE_TYPES(HALO_INSTANTIATE)
#undef HALO_INSTANTIATE

}  // namespace halo::kernels::detail
