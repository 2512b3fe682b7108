// CUDA launches of the element-wise bodies.
#include <halo/kernels/detail/instantiate.hpp>
#include <halo/kernels/elementwise_body.hpp>
#include <halo/kernels/exec_cuda.cuh>

#define HALO_INSTANTIATE(T)                                                                    \
  HALO_INSTANTIATE_CUDA_LAUNCH(halo::kernels::detail::FillBody<T>);                            \
  HALO_INSTANTIATE_CUDA_LAUNCH(halo::kernels::detail::AxpyBody<T>);                            \
  HALO_INSTANTIATE_CUDA_LAUNCH(halo::kernels::detail::AddBiasElementsBody<T>);                 \
  HALO_INSTANTIATE_CUDA_LAUNCH(halo::kernels::detail::ReluBody<T>);                            \
  HALO_INSTANTIATE_CUDA_LAUNCH(halo::kernels::detail::ReluBackwardBody<T>);                    \
  HALO_INSTANTIATE_CUDA_LAUNCH(halo::kernels::detail::EluBody<T>);                             \
  HALO_INSTANTIATE_CUDA_LAUNCH(halo::kernels::detail::EluBackwardBody<T>);                     \
  HALO_INSTANTIATE_CUDA_LAUNCH(halo::kernels::detail::GeluBody<T>);                            \
  HALO_INSTANTIATE_CUDA_LAUNCH(halo::kernels::detail::GeluBackwardBody<T>);                    \
  HALO_INSTANTIATE_CUDA_LAUNCH(halo::kernels::detail::DropoutElementsBody<T>);                 \
  HALO_INSTANTIATE_CUDA_LAUNCH(halo::kernels::detail::DropoutElementsBody<T, true>);           \
  HALO_INSTANTIATE_CUDA_LAUNCH(halo::kernels::detail::CsrDropoutBody<std::int32_t, T>);        \
  HALO_INSTANTIATE_CUDA_LAUNCH(halo::kernels::detail::CsrDropoutBody<std::int64_t, T>);        \
  HALO_INSTANTIATE_CUDA_LAUNCH(halo::kernels::detail::CsrDropoutCountBody<std::int32_t, T>);   \
  HALO_INSTANTIATE_CUDA_LAUNCH(halo::kernels::detail::CsrDropoutCountBody<std::int64_t, T>);   \
  HALO_INSTANTIATE_CUDA_LAUNCH(halo::kernels::detail::CsrDropoutCompactBody<std::int32_t, T>); \
  HALO_INSTANTIATE_CUDA_LAUNCH(halo::kernels::detail::CsrDropoutCompactBody<std::int64_t, T>);
HALO_FOR_VALUE_TYPES(HALO_INSTANTIATE)
#undef HALO_INSTANTIATE
