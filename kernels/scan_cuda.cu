// CUDA launches of the scan bodies.
#include <halo/kernels/exec_cuda.cuh>
#include <halo/kernels/scan_body.hpp>

HALO_INSTANTIATE_CUDA_LAUNCH(halo::kernels::detail::BlockSumBody);
HALO_INSTANTIATE_CUDA_LAUNCH(halo::kernels::detail::ScanSumsBody);
HALO_INSTANTIATE_CUDA_LAUNCH(halo::kernels::detail::BlockScanBody);
