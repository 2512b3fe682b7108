// CUDA launches of the batch-assembly bodies.
#include <halo/kernels/exec_cuda.cuh>
#include <halo/sampler/batch_body.hpp>

namespace halo::kernels::detail {
template void launch_cuda(CudaExec, std::int64_t, const sampler::detail::GcnBlockNormBody&);
template void launch_cuda(CudaExec, std::int64_t,
                          const sampler::detail::GatherValuesBody<std::int32_t>&);
template void launch_cuda(CudaExec, std::int64_t,
                          const sampler::detail::GatherValuesBody<std::int64_t>&);
template void launch_cuda(CudaExec, std::int64_t, const sampler::detail::SparseRowLengthBody&);
template void launch_cuda(CudaExec, std::int64_t, const sampler::detail::SparseRowCopyBody&);
}  // namespace halo::kernels::detail
