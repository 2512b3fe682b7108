// CUDA launches of the batch-assembly bodies.
#include <halo/kernels/exec_cuda.cuh>
#include <halo/sampler/batch_body.hpp>

HALO_INSTANTIATE_CUDA_LAUNCH(halo::sampler::detail::GcnBlockNormBody);
HALO_INSTANTIATE_CUDA_LAUNCH(halo::sampler::detail::SelfLoopBlockBody);
HALO_INSTANTIATE_CUDA_LAUNCH(halo::sampler::detail::GatherValuesBody<std::int32_t>);
HALO_INSTANTIATE_CUDA_LAUNCH(halo::sampler::detail::GatherValuesBody<std::int64_t>);
HALO_INSTANTIATE_CUDA_LAUNCH(halo::sampler::detail::SparseRowLengthBody);
HALO_INSTANTIATE_CUDA_LAUNCH(halo::sampler::detail::SparseRowCopyBody);
