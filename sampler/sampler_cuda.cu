// CUDA launches of the sampler's bodies, compiled by nvcc so that the single-source bodies stay
// valid device code. NeighborSampler itself still refuses a CUDA Resources: the device-side
// pipeline (sizes kept on the device, Thrust on the stream) is the CUDA backend issue's.
#include <halo/kernels/exec_cuda.cuh>
#include <halo/sampler/relabel_body.hpp>
#include <halo/sampler/sample_body.hpp>
#include <halo/sampler/scan_body.hpp>

namespace halo::kernels::detail {
template void launch_cuda(CudaExec, std::int64_t, const sampler::detail::BlockSumBody&);
template void launch_cuda(CudaExec, std::int64_t, const sampler::detail::BlockScanBody&);
template void launch_cuda(CudaExec, std::int64_t, const sampler::detail::CountBody&);
template void launch_cuda(CudaExec, std::int64_t, const sampler::detail::FillBody&);
template void launch_cuda(CudaExec, std::int64_t, const sampler::detail::InsertBody&);
template void launch_cuda(CudaExec, std::int64_t, const sampler::detail::FirstOccurrenceBody&);
template void launch_cuda(CudaExec, std::int64_t, const sampler::detail::RelabelBody&);
template void launch_cuda(CudaExec, std::int64_t, const sampler::detail::FindSlotBody&);
template void launch_cuda(CudaExec, std::int64_t, const sampler::detail::ClearSlotBody&);
}  // namespace halo::kernels::detail
