// CUDA launches of the reduction bodies.
#include <halo/kernels/detail/instantiate.hpp>
#include <halo/kernels/exec_cuda.cuh>
#include <halo/kernels/reduce_body.hpp>

#define HALO_INSTANTIATE(T)                                                             \
  HALO_INSTANTIATE_CUDA_LAUNCH(halo::kernels::detail::ColumnPartialSumByColumnBody<T>); \
  HALO_INSTANTIATE_CUDA_LAUNCH(halo::kernels::detail::ColumnCombineBody<T>);
HALO_FOR_VALUE_TYPES(HALO_INSTANTIATE)
#undef HALO_INSTANTIATE
