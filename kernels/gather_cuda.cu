// CUDA launches of the gather / scatter bodies.
#include <halo/kernels/exec_cuda.cuh>
#include <halo/kernels/gather_body.hpp>

namespace halo::kernels::detail {
#define HALO_INSTANTIATE(Idx, T)                                                    \
  template void launch_cuda(CudaExec, std::int64_t, const GatherRowsBody<Idx, T>&); \
  template void launch_cuda(CudaExec, std::int64_t, const ScatterAddRowsBody<Idx, T>&);
HALO_INSTANTIATE(std::int32_t, float)
HALO_INSTANTIATE(std::int64_t, float)
HALO_INSTANTIATE(std::int32_t, double)
HALO_INSTANTIATE(std::int64_t, double)
#undef HALO_INSTANTIATE
}  // namespace halo::kernels::detail
