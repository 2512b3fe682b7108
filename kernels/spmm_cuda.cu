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

/// The cuSPARSE descriptors of one call, destroyed on every path out (exceptions included).
struct Descriptors {
  cusparseSpMatDescr_t a = nullptr;
  cusparseConstDnMatDescr_t x = nullptr;
  cusparseDnMatDescr_t out = nullptr;
  ~Descriptors() {
    if (a != nullptr) cusparseDestroySpMat(a);
    if (x != nullptr) cusparseDestroyDnMat(x);
    if (out != nullptr) cusparseDestroyDnMat(out);
  }
};

template <class Idx, class T>
void cusparse_spmm(const Resources& res, const SpmmRowBody<Idx, T>& p) {
  const auto handle = static_cast<cusparseHandle_t>(res.cusparse_handle());
  constexpr bool kNarrow = sizeof(Idx) == 4;  // then the offsets go 32-bit too, into the workspace
  const cusparseIndexType_t index = kNarrow ? CUSPARSE_INDEX_32I : CUSPARSE_INDEX_64I;
  const T alpha = T(1);
  const T beta = p.accumulate ? T(1) : T(0);
  auto* indices = const_cast<Idx*>(p.a.indices);  // cuSPARSE's descriptor is non-const; read only
  auto* values = const_cast<T*>(p.a.values);
  // With 32-bit indices cuSPARSE wants 32-bit offsets too: a narrowed copy leads the workspace
  // (256-byte aligned), cuSPARSE's buffer follows it.
  const std::size_t offsets_bytes =
      kNarrow ? ((p.a.num_rows + 1) * sizeof(std::int32_t) + 255) / 256 * 256 : 0;
  auto narrow_into = [&](char* at) {
    launch_cuda(res.cuda_exec(), p.a.num_rows + 1,
                NarrowOffsetsBody{p.a.indptr, reinterpret_cast<std::int32_t*>(at)});
  };
  char* work = static_cast<char*>(res.workspace(offsets_bytes));
  if (kNarrow) narrow_into(work);
  void* offsets = kNarrow ? static_cast<void*>(work) : const_cast<std::int64_t*>(p.a.indptr);
  Descriptors d;
  HALO_CUSPARSE_CHECK(cusparseCreateCsr(&d.a, p.a.num_rows, p.a.num_cols, p.a.num_entries, offsets,
                                        indices, values, index, index, CUSPARSE_INDEX_BASE_ZERO,
                                        value_type<T>()));
  HALO_CUSPARSE_CHECK(cusparseCreateConstDnMat(&d.x, p.x.rows, p.x.cols, p.x.cols, p.x.data,
                                               value_type<T>(), CUSPARSE_ORDER_ROW));
  HALO_CUSPARSE_CHECK(cusparseCreateDnMat(&d.out, p.out.rows, p.out.cols, p.out.cols, p.out.data,
                                          value_type<T>(), CUSPARSE_ORDER_ROW));
  std::size_t buffer_bytes = 0;
  HALO_CUSPARSE_CHECK(cusparseSpMM_bufferSize(
      handle, CUSPARSE_OPERATION_NON_TRANSPOSE, CUSPARSE_OPERATION_NON_TRANSPOSE, &alpha, d.a, d.x,
      &beta, d.out, value_type<T>(), CUSPARSE_SPMM_CSR_ALG2, &buffer_bytes));
  char* grown = static_cast<char*>(res.workspace(offsets_bytes + buffer_bytes));
  if (kNarrow && grown != work) {  // growing moved the workspace: narrow into the new block
    narrow_into(grown);
    HALO_CUSPARSE_CHECK(cusparseCsrSetPointers(d.a, grown, indices, values));
  }
  HALO_CUSPARSE_CHECK(cusparseSpMM(handle, CUSPARSE_OPERATION_NON_TRANSPOSE,
                                   CUSPARSE_OPERATION_NON_TRANSPOSE, &alpha, d.a, d.x, &beta, d.out,
                                   value_type<T>(), CUSPARSE_SPMM_CSR_ALG2,
                                   buffer_bytes > 0 ? grown + offsets_bytes : nullptr));
  if (debug_sync())
    HALO_CUDA_CHECK(cudaStreamSynchronize(static_cast<cudaStream_t>(res.cuda_exec().stream)));
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
                          MatrixView<T> out, bool mean, bool accumulate) {
  if (!accumulate)
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
                                             MatrixView<const T>, MatrixView<T>, bool, bool);
HALO_FOR_INDEX_AND_VALUE_TYPES(HALO_INSTANTIATE)
#undef HALO_INSTANTIATE

}  // namespace halo::kernels::detail
