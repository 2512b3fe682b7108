// CUDA side of the sampler: the launches of its single-source bodies, the device scan (CUB, on
// the sampler's own preallocated temporary storage) and the copies of the GPU pipeline.
#include <cub/device/device_scan.cuh>

#include <halo/kernels/exec_cuda.cuh>
#include <halo/sampler/detail/device_sizes_body.hpp>
#include <halo/sampler/detail/sampler_cuda.hpp>
#include <halo/sampler/relabel_body.hpp>
#include <halo/sampler/sample_body.hpp>

HALO_INSTANTIATE_CUDA_LAUNCH(halo::sampler::detail::CountBody);
HALO_INSTANTIATE_CUDA_LAUNCH(halo::sampler::detail::FillBody);
HALO_INSTANTIATE_CUDA_LAUNCH(halo::sampler::detail::InsertBody);
HALO_INSTANTIATE_CUDA_LAUNCH(halo::sampler::detail::FirstOccurrenceBody);
HALO_INSTANTIATE_CUDA_LAUNCH(halo::sampler::detail::RelabelBody);
HALO_INSTANTIATE_CUDA_LAUNCH(halo::sampler::detail::FindSlotBody);
HALO_INSTANTIATE_CUDA_LAUNCH(halo::sampler::detail::ClearSlotBody);
HALO_INSTANTIATE_CUDA_LAUNCH(halo::sampler::detail::SeedInsertBody);
HALO_INSTANTIATE_CUDA_LAUNCH(halo::sampler::detail::SeedDistinctBody);
HALO_INSTANTIATE_CUDA_LAUNCH(halo::sampler::detail::SeedGateBody);
HALO_INSTANTIATE_CUDA_LAUNCH(halo::sampler::detail::EdgeTotalBody);
HALO_INSTANTIATE_CUDA_LAUNCH(halo::sampler::detail::SourceTotalBody);

namespace halo::sampler::detail {

// CUB rather than thrust::inclusive_scan: Thrust allocates its temporary storage on every call
// (a per-batch allocation, and cudaFree synchronises), CUB takes storage sized once up front.
std::size_t cuda_scan_temp_bytes(std::int64_t n) {
  std::size_t bytes = 0;
  HALO_CUDA_CHECK(cub::DeviceScan::InclusiveSum(nullptr, bytes, static_cast<std::int64_t*>(nullptr),
                                                n, cudaStream_t{}));
  return bytes;
}

void cuda_inclusive_sum(std::int64_t* a, std::int64_t n, void* temp, std::size_t temp_bytes,
                        void* stream) {
  if (n <= 0) return;
  HALO_CUDA_CHECK(
      cub::DeviceScan::InclusiveSum(temp, temp_bytes, a, n, static_cast<cudaStream_t>(stream)));
  if (kernels::debug_sync())
    HALO_CUDA_CHECK(cudaStreamSynchronize(static_cast<cudaStream_t>(stream)));
}

}  // namespace halo::sampler::detail
