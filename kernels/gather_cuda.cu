// CUDA launches of the gather / scatter bodies.
#include <halo/kernels/detail/instantiate.hpp>
#include <halo/kernels/exec_cuda.cuh>
#include <halo/kernels/gather_body.hpp>

namespace halo::kernels::detail {
#define HALO_INSTANTIATE(Idx, T)                                                        \
  template void launch_cuda(CudaExec, std::int64_t, const GatherElementsBody<Idx, T>&); \
  template void launch_cuda(CudaExec, std::int64_t, const ScatterAddElementsBody<Idx, T>&);
HALO_FOR_INDEX_AND_VALUE_TYPES(HALO_INSTANTIATE)
#undef HALO_INSTANTIATE
}  // namespace halo::kernels::detail
