// CUDA launches of the SpMM bodies (the generic grid-stride launch; cuSPARSE comes with the CUDA
// backend issue and keeps these bodies as its reference).
#include <halo/kernels/detail/instantiate.hpp>
#include <halo/kernels/exec_cuda.cuh>
#include <halo/kernels/spmm_body.hpp>

namespace halo::kernels::detail {
#define HALO_INSTANTIATE(Idx, T)                                                 \
  template void launch_cuda(CudaExec, std::int64_t, const SpmmRowBody<Idx, T>&); \
  template void launch_cuda(CudaExec, std::int64_t, const SpmmTransposedBlockBody<Idx, T>&);
HALO_FOR_INDEX_AND_VALUE_TYPES(HALO_INSTANTIATE)
#undef HALO_INSTANTIATE
}  // namespace halo::kernels::detail
