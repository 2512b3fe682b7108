// CUDA launches of the reduction bodies.
#include <halo/kernels/exec_cuda.cuh>
#include <halo/kernels/reduce_body.hpp>

namespace halo::kernels::detail {
template void launch_cuda(CudaExec, std::int64_t, const ColumnPartialSumBody<float>&);
template void launch_cuda(CudaExec, std::int64_t, const ColumnPartialSumBody<double>&);
template void launch_cuda(CudaExec, std::int64_t, const ColumnCombineBody<float>&);
template void launch_cuda(CudaExec, std::int64_t, const ColumnCombineBody<double>&);
}  // namespace halo::kernels::detail
