// CUDA launches of the optimizer bodies.
#include <halo/kernels/detail/instantiate.hpp>
#include <halo/kernels/exec_cuda.cuh>
#include <halo/kernels/optim_body.hpp>

namespace halo::kernels::detail {
#define HALO_INSTANTIATE(T)                                              \
  template void launch_cuda(CudaExec, std::int64_t, const AdamBody<T>&); \
  template void launch_cuda(CudaExec, std::int64_t, const SgdBody<T>&);
HALO_FOR_VALUE_TYPES(HALO_INSTANTIATE)
#undef HALO_INSTANTIATE
}  // namespace halo::kernels::detail
