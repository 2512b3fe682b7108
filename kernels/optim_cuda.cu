// CUDA launches of the optimizer bodies.
#include <halo/kernels/exec_cuda.cuh>
#include <halo/kernels/optim_body.hpp>

namespace halo::kernels::detail {
template void launch_cuda(CudaExec, std::int64_t, const AdamBody<float>&);
template void launch_cuda(CudaExec, std::int64_t, const AdamBody<double>&);
template void launch_cuda(CudaExec, std::int64_t, const SgdBody<float>&);
template void launch_cuda(CudaExec, std::int64_t, const SgdBody<double>&);
}  // namespace halo::kernels::detail
