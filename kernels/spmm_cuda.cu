// CUDA launches of the SpMM bodies (the generic grid-stride launch; cuSPARSE comes with the CUDA
// backend issue and keeps these bodies as its reference).
#include <halo/kernels/exec_cuda.cuh>
#include <halo/kernels/spmm_body.hpp>

namespace halo::kernels::detail {
template void launch_cuda(CudaExec, std::int64_t, const SpmmRowBody<std::int32_t, float>&);
template void launch_cuda(CudaExec, std::int64_t, const SpmmRowBody<std::int64_t, float>&);
template void launch_cuda(CudaExec, std::int64_t, const SpmmRowBody<std::int32_t, double>&);
template void launch_cuda(CudaExec, std::int64_t, const SpmmRowBody<std::int64_t, double>&);
template void launch_cuda(CudaExec, std::int64_t,
                          const SpmmTransposedBlockBody<std::int32_t, float>&);
template void launch_cuda(CudaExec, std::int64_t,
                          const SpmmTransposedBlockBody<std::int64_t, float>&);
template void launch_cuda(CudaExec, std::int64_t,
                          const SpmmTransposedBlockBody<std::int32_t, double>&);
template void launch_cuda(CudaExec, std::int64_t,
                          const SpmmTransposedBlockBody<std::int64_t, double>&);
}  // namespace halo::kernels::detail
