// CUDA launches of the optimizer bodies.
#include <halo/kernels/detail/instantiate.hpp>
#include <halo/kernels/exec_cuda.cuh>
#include <halo/kernels/optim_body.hpp>

#define HALO_INSTANTIATE(T)                                         \
  HALO_INSTANTIATE_CUDA_LAUNCH(halo::kernels::detail::AdamBody<T>); \
  HALO_INSTANTIATE_CUDA_LAUNCH(halo::kernels::detail::SgdBody<T>);
HALO_FOR_VALUE_TYPES(HALO_INSTANTIATE)
#undef HALO_INSTANTIATE
#define HALO_INSTANTIATE(Idx, T) \
  HALO_INSTANTIATE_CUDA_LAUNCH(halo::kernels::detail::SparseAdamBody<Idx, T>);
HALO_FOR_INDEX_AND_VALUE_TYPES(HALO_INSTANTIATE)
#undef HALO_INSTANTIATE
