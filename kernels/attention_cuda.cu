// CUDA launches of the attention bodies (kernels/attention_body.hpp). The CPU decompositions
// (WeightedAggregateRowBody, WeightedAggregateTransposedBlockBody) are not launched here.
#include <halo/kernels/attention_body.hpp>
#include <halo/kernels/detail/instantiate.hpp>
#include <halo/kernels/exec_cuda.cuh>

#define HALO_INSTANTIATE(Idx, T)                                                              \
  HALO_INSTANTIATE_CUDA_LAUNCH(halo::kernels::detail::SddmmBody<Idx, T>);                     \
  HALO_INSTANTIATE_CUDA_LAUNCH(halo::kernels::detail::WeightedAggregateElementsBody<Idx, T>); \
  HALO_INSTANTIATE_CUDA_LAUNCH(                                                               \
      halo::kernels::detail::WeightedAggregateTransposedAtomicBody<Idx, T>);                  \
  HALO_INSTANTIATE_CUDA_LAUNCH(halo::kernels::detail::SegmentSoftmaxMaxBody<Idx, T>);         \
  HALO_INSTANTIATE_CUDA_LAUNCH(halo::kernels::detail::SegmentSoftmaxExpBody<Idx, T>);         \
  HALO_INSTANTIATE_CUDA_LAUNCH(halo::kernels::detail::SegmentSoftmaxScaleBody<Idx, T>);       \
  HALO_INSTANTIATE_CUDA_LAUNCH(halo::kernels::detail::SegmentSoftmaxDotBody<Idx, T>);         \
  HALO_INSTANTIATE_CUDA_LAUNCH(halo::kernels::detail::SegmentSoftmaxBackwardBody<Idx, T>);    \
  HALO_INSTANTIATE_CUDA_LAUNCH(halo::kernels::detail::EdgeScoreBody<Idx, T>);                 \
  HALO_INSTANTIATE_CUDA_LAUNCH(halo::kernels::detail::EdgeScoreBackwardBody<Idx, T>);         \
  HALO_INSTANTIATE_CUDA_LAUNCH(halo::kernels::detail::EdgeSourceSumAtomicBody<Idx, T>);       \
  HALO_INSTANTIATE_CUDA_LAUNCH(halo::kernels::detail::EdgeDropoutBody<Idx, T>);
HALO_FOR_INDEX_AND_VALUE_TYPES(HALO_INSTANTIATE)
#undef HALO_INSTANTIATE

#define HALO_INSTANTIATE(T)                                                          \
  HALO_INSTANTIATE_CUDA_LAUNCH(halo::kernels::detail::BlockDiagonalBody<T>);         \
  HALO_INSTANTIATE_CUDA_LAUNCH(halo::kernels::detail::BlockDiagonalBackwardBody<T>); \
  HALO_INSTANTIATE_CUDA_LAUNCH(halo::kernels::detail::SigmoidGateBody<T>);           \
  HALO_INSTANTIATE_CUDA_LAUNCH(halo::kernels::detail::SigmoidGateBackwardBody<T>);   \
  HALO_INSTANTIATE_CUDA_LAUNCH(halo::kernels::detail::HeadDotBody<T>);               \
  HALO_INSTANTIATE_CUDA_LAUNCH(halo::kernels::detail::HeadDotInputGradBody<T>);      \
  HALO_INSTANTIATE_CUDA_LAUNCH(halo::kernels::detail::HeadDiagonalBody<T>);          \
  HALO_INSTANTIATE_CUDA_LAUNCH(halo::kernels::detail::HeadMeanBody<T>);              \
  HALO_INSTANTIATE_CUDA_LAUNCH(halo::kernels::detail::HeadMeanBackwardBody<T>);
HALO_FOR_VALUE_TYPES(HALO_INSTANTIATE)
#undef HALO_INSTANTIATE
