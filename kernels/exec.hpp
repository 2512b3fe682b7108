#pragma once
// The launchers of single-source bodies: `launch(res, n, body)` runs body(i) for i in [0, n) on
// the device of `res`: an OpenMP loop on the CPU, a grid-stride CUDA kernel on the GPU.

#include <cstdint>
#include <omp.h>

#include <halo/kernels/error.hpp>
#include <halo/kernels/resources.hpp>

namespace halo::kernels {

/// Runs body(i) for every i in [0, n) on the CPU. Never opens a nested OpenMP region: inside a
/// parallel region (a caller's own loop) it runs serially on the calling thread.
template <class Body>
void for_each_index(CpuExec exec, std::int64_t n, const Body& body) {
  // guided: rows of power-law graphs differ in cost by orders of magnitude. (_OPENMP is unset
  // only where nvcc's host pass sees this header; CUDA files never call this launcher.)
  // Each thread runs a private copy of the body: stores through its spans then cannot alias
  // the body's own members (a scale, the spans' pointers), which the compiler would otherwise
  // reload after every store, keeping the loop scalar (measured: relu_backward in `halo`).
#if defined(_OPENMP)
#pragma omp parallel num_threads(exec.num_threads) if (n > 1 && !omp_in_parallel())
#endif
  {
    const Body local = body;
#if defined(_OPENMP)
#pragma omp for schedule(guided)
#endif
    for (std::int64_t i = 0; i < n; ++i) local(i);
  }
}

namespace detail {
/// Defined in exec_cuda.cuh; each `<op>_cuda.cu` instantiates it for the bodies of its op with
/// HALO_INSTANTIATE_CUDA_LAUNCH(fully::qualified::Body).
template <class Body>
void launch_cuda(CudaExec exec, std::int64_t n, const Body& body);
}  // namespace detail

/// Runs body(i) for i in [0, n) on res's device; asynchronous on res's stream for CUDA.
template <class Body>
void launch(const Resources& res, std::int64_t n, const Body& body) {
  if (n <= 0) return;
  switch (res.device()) {
    case Device::Cpu:
      return for_each_index(res.cpu_exec(), n, body);
    case Device::Cuda:
#if HALO_WITH_CUDA
      return detail::launch_cuda(res.cuda_exec(), n, body);
#else
      HALO_FAIL("this build has no CUDA backend (configure with -DHALO_WITH_CUDA=ON)");
#endif
  }
  HALO_FAIL("unknown device");
}

/// Runs an op whose best decomposition differs by device: `cpu_body` over [0, cpu_n) on the CPU
/// (one row per index, which the compiler vectorises), `gpu_body` over [0, gpu_n) on CUDA (one
/// element per index, so neighbouring threads touch neighbouring addresses). Both bodies
/// compute the same thing; the tests run the GPU body on the CPU launcher too.
template <class CpuBody, class GpuBody>
void launch_by_device(const Resources& res, std::int64_t cpu_n, const CpuBody& cpu_body,
                      std::int64_t gpu_n, const GpuBody& gpu_body) {
  if (res.device() == Device::Cpu) return for_each_index(res.cpu_exec(), cpu_n, cpu_body);
  launch(res, gpu_n, gpu_body);
}

}  // namespace halo::kernels
