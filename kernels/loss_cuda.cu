// CUDA launches of the loss bodies.
#include <halo/kernels/detail/instantiate.hpp>
#include <halo/kernels/exec_cuda.cuh>
#include <halo/kernels/loss_body.hpp>

#define HALO_INSTANTIATE(Idx, T)                                                \
  HALO_INSTANTIATE_CUDA_LAUNCH(halo::kernels::detail::NllPartialBody<Idx, T>);  \
  HALO_INSTANTIATE_CUDA_LAUNCH(halo::kernels::detail::NllBackwardBody<Idx, T>); \
  HALO_INSTANTIATE_CUDA_LAUNCH(halo::kernels::detail::CorrectBody<Idx, T>);
HALO_FOR_INDEX_AND_VALUE_TYPES(HALO_INSTANTIATE)
#undef HALO_INSTANTIATE
