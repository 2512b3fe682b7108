#pragma once
// Resources: the device, its execution context and the base seed. Every op takes one first.

#include <cstdint>
#include <memory>

#include <halo/kernels/types.hpp>

namespace halo::kernels {

/// How CPU bodies run: an OpenMP team of `num_threads`.
struct CpuExec {
  int num_threads = 1;
};

/// How CUDA bodies run: on `stream` (a cudaStream_t, kept opaque so public headers need no CUDA).
struct CudaExec {
  void* stream = nullptr;
  int device_id = 0;
};

/// Number of usable CUDA devices; 0 on any error (no driver, no device, CPU-only build).
int cuda_device_count();

/// Owns what ops need to run on one device: for the CPU the thread count; for CUDA the device
/// id and one non-default stream (created here, destroyed with the Resources). Move-only; pass
/// by const reference. Not thread-safe: one Resources per thread of control.
class Resources {
 public:
  /// `num_threads` <= 0 means all cores (OpenMP's default). For Device::Cuda the device with
  /// id `cuda_device_id` must exist.
  explicit Resources(Device device = Device::Cpu, int num_threads = 0, int cuda_device_id = 0);
  ~Resources();
  Resources(Resources&&) noexcept;
  Resources& operator=(Resources&&) noexcept;
  Resources(const Resources&) = delete;
  Resources& operator=(const Resources&) = delete;

  Device device() const { return m_device; }
  CpuExec cpu_exec() const { return m_cpu; }
  CudaExec cuda_exec() const;
  /// Blocks until all work queued on this Resources' stream has finished (no-op on the CPU).
  void synchronize() const;

 private:
  struct CudaState;
  Device m_device;
  CpuExec m_cpu;
  std::unique_ptr<CudaState> m_cuda;
};

}  // namespace halo::kernels
