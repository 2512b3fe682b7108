#pragma once
// Resources: the device, its execution context and the base seed. Every op takes one first.

#include <cstddef>
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

/// The stream-ordered memory pool of a CUDA device (cudaMallocAsync's default pool): bytes it
/// holds from the driver and bytes handed out to live allocations. Zeros for the CPU.
struct DeviceMemoryStats {
  std::size_t reserved_bytes = 0;
  std::size_t used_bytes = 0;
};

/// Owns what ops need to run on one device: for the CPU the thread count; for CUDA the device
/// id, one non-default stream, the cuBLAS and cuSPARSE handles bound to it (created on first
/// use) and a grow-only workspace. Device memory comes from the device's stream-ordered pool,
/// which Resources configures to keep freed memory for reuse (no return to the driver), so
/// allocations after warm-up cost no driver call. Move-only; pass by const reference. Not
/// thread-safe: one Resources per thread of control.
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

  /// The device pool's statistics (zeros on the CPU).
  DeviceMemoryStats device_memory() const;
  /// Device scratch of at least `bytes`, valid until the next workspace() call on this
  /// Resources; reallocated (stream-ordered) only when a larger size is asked for. CUDA only.
  void* workspace(std::size_t bytes) const;
  /// The cublasHandle_t / cusparseHandle_t bound to this Resources' stream, created on first
  /// use (opaque here so public headers need no CUDA). CUDA only.
  void* cublas_handle() const;
  void* cusparse_handle() const;
  /// Scratch of at least `bytes` on this Resources' device for an op's temporaries, one block
  /// per `slot` (0 .. kScratchSlots - 1, so that an op using one can call an op using another),
  /// valid until the next call with that slot. Grow-only: after the largest request, ops
  /// allocate nothing (what a training step's reductions and losses rely on).
  static constexpr int kScratchSlots = 2;
  void* scratch(int slot, std::size_t bytes) const;

 private:
  struct CudaState;
  struct Scratch;
  Device m_device;
  CpuExec m_cpu;
  std::unique_ptr<CudaState> m_cuda;
  std::unique_ptr<Scratch> m_scratch;  // after m_cuda: freed on its stream before it goes
};

}  // namespace halo::kernels
