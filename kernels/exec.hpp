#pragma once
// The launchers of single-source bodies: `launch(res, n, body)` runs body(i) for i in [0, n) on
// the device of `res`: an OpenMP loop on the CPU, a grid-stride CUDA kernel on the GPU.

#include <cstdint>
#include <omp.h>

#include <halo/kernels/error.hpp>
#include <halo/kernels/resources.hpp>

namespace halo::kernels {

/// Work, in elements, below which a CPU launch runs on the calling thread. An element is a load,
/// a little arithmetic and a store (0.3-1 ns in cache); waking a sleeping OpenMP team and waiting
/// for it costs tens of microseconds (`halo calibrate`, "element-wise": +60-70 us a call at
/// GOMP_SPINCOUNT=100 on 2 threads). Two threads save half of w elements' time against that
/// cost: a break-even near 2 x 60 us / 0.5 ns = 2^18 elements. Small graphs then run their
/// kernels on one thread instead of paying for the team at every op (bench/results/speed.md,
/// "Grain size": Cora's 2-thread epoch within 1-4 % of 1 thread).
inline constexpr std::int64_t kSerialWork = std::int64_t{1} << 18;
/// The work of a launch that does not state it: parallel whatever n is. The default, because
/// many launches run one block of rows per index, where n says nothing about the work.
inline constexpr std::int64_t kUnstatedWork = -1;

/// Runs body(i) for every i in [0, n) on the CPU: on exec's threads, or on the calling thread
/// where `work` (elements, see kSerialWork; kUnstatedWork: unknown) is below kSerialWork. Never
/// opens a nested OpenMP region: inside a parallel region (a caller's own loop) it runs serially
/// on the calling thread.
template <class Body>
void for_each_index(CpuExec exec, std::int64_t n, const Body& body,
                    std::int64_t work = kUnstatedWork) {
  // guided: rows of power-law graphs differ in cost by orders of magnitude. (_OPENMP is unset
  // only where nvcc's host pass sees this header; CUDA files never call this launcher.)
  // Each thread runs a private copy of the body: stores through its spans then cannot alias
  // the body's own members (a scale, the spans' pointers), which the compiler would otherwise
  // reload after every store, keeping the loop scalar (measured: relu_backward in `halo`).
  [[maybe_unused]] const bool team =
      exec.num_threads > 1 && n > 1 && (work < 0 || work >= kSerialWork) && !omp_in_parallel();
#if defined(_OPENMP)
#pragma omp parallel num_threads(exec.num_threads) if (team)
#endif
  {
    const Body local = body;
#if defined(_OPENMP)
#pragma omp for schedule(guided)
#endif
    for (std::int64_t i = 0; i < n; ++i) local(i);
  }
}

/// The column block of a CPU launch whose indices are blocks of output columns, each walking all
/// of its input (a transposed product, a scatter): one block per thread that runs it (one where
/// `work` is below the grain), whole cache lines of 16 floats. Fewer, wider blocks read the input
/// fewer times; any width gives the same sums (each column is summed in input order).
inline std::int64_t cpu_column_block(CpuExec exec, std::int64_t cols, std::int64_t work) {
  const std::int64_t threads =
      work >= 0 && work < kSerialWork ? 1 : (exec.num_threads > 1 ? exec.num_threads : 1);
  const std::int64_t per_thread = (cols + threads - 1) / threads;
  return ((per_thread > 16 ? per_thread : 16) + 15) / 16 * 16;
}

namespace detail {
/// Defined in exec_cuda.cuh; each `<op>_cuda.cu` instantiates it for the bodies of its op with
/// HALO_INSTANTIATE_CUDA_LAUNCH(fully::qualified::Body).
template <class Body>
void launch_cuda(CudaExec exec, std::int64_t n, const Body& body);
}  // namespace detail

/// Runs body(i) for i in [0, n) on res's device; asynchronous on res's stream for CUDA. `work`:
/// the launch's elements, for the CPU's grain (for_each_index); a GPU launch ignores it.
template <class Body>
void launch(const Resources& res, std::int64_t n, const Body& body,
            std::int64_t work = kUnstatedWork) {
  if (n <= 0) return;
  switch (res.device()) {
    case Device::Cpu:
      return for_each_index(res.cpu_exec(), n, body, work);
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
/// compute the same thing; the tests run the GPU body on the CPU launcher too. `work`: as
/// launch's.
template <class CpuBody, class GpuBody>
void launch_by_device(const Resources& res, std::int64_t cpu_n, const CpuBody& cpu_body,
                      std::int64_t gpu_n, const GpuBody& gpu_body,
                      std::int64_t work = kUnstatedWork) {
  if (res.device() == Device::Cpu) return for_each_index(res.cpu_exec(), cpu_n, cpu_body, work);
  launch(res, gpu_n, gpu_body);
}

}  // namespace halo::kernels
