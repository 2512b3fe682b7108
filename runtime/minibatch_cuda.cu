// CUDA launches of the mini-batch preparation bodies.
#include <halo/kernels/exec_cuda.cuh>
#include <halo/runtime/minibatch_body.hpp>

namespace halo::kernels::detail {
template void launch_cuda(CudaExec, std::int64_t, const runtime::detail::GcnBlockNormBody&);
template void launch_cuda(CudaExec, std::int64_t, const runtime::detail::GatherLabelsBody&);
template void launch_cuda(CudaExec, std::int64_t, const runtime::detail::SparseRowLengthBody&);
template void launch_cuda(CudaExec, std::int64_t, const runtime::detail::SparseRowCopyBody&);
}  // namespace halo::kernels::detail
