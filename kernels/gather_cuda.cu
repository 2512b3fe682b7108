// CUDA launches of the gather / scatter bodies.
#include <halo/kernels/detail/instantiate.hpp>
#include <halo/kernels/exec_cuda.cuh>
#include <halo/kernels/gather_body.hpp>

#define HALO_INSTANTIATE(Idx, T)                                                   \
  HALO_INSTANTIATE_CUDA_LAUNCH(halo::kernels::detail::GatherElementsBody<Idx, T>); \
  HALO_INSTANTIATE_CUDA_LAUNCH(halo::kernels::detail::ScatterAddElementsBody<Idx, T>);
HALO_FOR_INDEX_AND_VALUE_TYPES(HALO_INSTANTIATE)
#undef HALO_INSTANTIATE
