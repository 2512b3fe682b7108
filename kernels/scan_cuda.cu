// CUDA launches of the scan bodies.
#include <halo/kernels/exec_cuda.cuh>
#include <halo/kernels/scan_body.hpp>

namespace halo::kernels::detail {
template void launch_cuda(CudaExec, std::int64_t, const BlockSumBody&);
template void launch_cuda(CudaExec, std::int64_t, const ScanSumsBody&);
template void launch_cuda(CudaExec, std::int64_t, const BlockScanBody&);
}  // namespace halo::kernels::detail
