// CUDA launches of the element-wise bodies.
#include <halo/kernels/detail/instantiate.hpp>
#include <halo/kernels/elementwise_body.hpp>
#include <halo/kernels/exec_cuda.cuh>

namespace halo::kernels::detail {
#define HALO_INSTANTIATE(T)                                                                  \
  template void launch_cuda(CudaExec, std::int64_t, const FillBody<T>&);                     \
  template void launch_cuda(CudaExec, std::int64_t, const AxpyBody<T>&);                     \
  template void launch_cuda(CudaExec, std::int64_t, const AddBiasElementsBody<T>&);          \
  template void launch_cuda(CudaExec, std::int64_t, const ReluBody<T>&);                     \
  template void launch_cuda(CudaExec, std::int64_t, const ReluBackwardBody<T>&);             \
  template void launch_cuda(CudaExec, std::int64_t, const DropoutElementsBody<T>&);          \
  template void launch_cuda(CudaExec, std::int64_t, const CsrDropoutBody<std::int32_t, T>&); \
  template void launch_cuda(CudaExec, std::int64_t, const CsrDropoutBody<std::int64_t, T>&);
HALO_FOR_VALUE_TYPES(HALO_INSTANTIATE)
#undef HALO_INSTANTIATE
}  // namespace halo::kernels::detail
