#pragma once
// The CUDA launcher of single-source bodies. Included only by `<op>_cuda.cu` files.
//
// `launch(res, n, body)` (exec.hpp) reaches `detail::launch_cuda` for a CUDA Resources; the host
// compiler sees only its declaration, so every body launched on the GPU is instantiated once in a
// `.cu` file with
//
//   HALO_INSTANTIATE_CUDA_LAUNCH(halo::sampler::detail::CountBody);
//   HALO_INSTANTIATE_CUDA_LAUNCH(halo::kernels::detail::GatherElementsBody<std::int64_t, float>);
//
// at global namespace scope (or inside any namespace: the name it instantiates is fully
// qualified), with the body's fully qualified type. Commas in the type need no parentheses.
// A body that is launched but never instantiated fails at link time (undefined launch_cuda).

#include <algorithm>
#include <cuda_runtime.h>

#include <halo/kernels/cuda_check.cuh>
#include <halo/kernels/exec.hpp>

namespace halo::kernels::detail {

template <class Body>
__global__ void for_each_index_kernel(std::int64_t n, Body body) {
  const std::int64_t stride = static_cast<std::int64_t>(blockDim.x) * gridDim.x;
  for (std::int64_t i = blockIdx.x * static_cast<std::int64_t>(blockDim.x) + threadIdx.x; i < n;
       i += stride)
    body(i);
}

template <class Body>
void launch_cuda(CudaExec exec, std::int64_t n, const Body& body) {
  if (n <= 0) return;  // a grid of zero blocks is a launch error
  // Blocks of 256 threads and a grid stride that is a multiple of 256: bodies that give a row
  // G consecutive indices (G dividing 256) keep those G lanes in one warp.
  constexpr int kBlock = 256;
  const std::int64_t blocks = std::min<std::int64_t>((n + kBlock - 1) / kBlock, 65535LL * 32);
  for_each_index_kernel<<<static_cast<unsigned>(blocks), kBlock, 0,
                          static_cast<cudaStream_t>(exec.stream)>>>(n, body);
  HALO_CUDA_CHECK(cudaGetLastError());
  if (debug_sync()) HALO_CUDA_CHECK(cudaStreamSynchronize(static_cast<cudaStream_t>(exec.stream)));
}

}  // namespace halo::kernels::detail

/// Explicitly instantiates the CUDA launcher for one body type; see the top of this file.
#define HALO_INSTANTIATE_CUDA_LAUNCH(...)                          \
  template void ::halo::kernels::detail::launch_cuda<__VA_ARGS__>( \
      ::halo::kernels::CudaExec, std::int64_t, const __VA_ARGS__&)
