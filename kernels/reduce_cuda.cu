// CUDA launches of the reduction bodies.
#include <halo/kernels/detail/instantiate.hpp>
#include <halo/kernels/exec_cuda.cuh>
#include <halo/kernels/reduce_body.hpp>

namespace halo::kernels::detail {
#define HALO_INSTANTIATE(T)                                                                  \
  template void launch_cuda(CudaExec, std::int64_t, const ColumnPartialSumByColumnBody<T>&); \
  template void launch_cuda(CudaExec, std::int64_t, const ColumnCombineBody<T>&);
HALO_FOR_VALUE_TYPES(HALO_INSTANTIATE)
#undef HALO_INSTANTIATE
}  // namespace halo::kernels::detail
