#pragma once
// Buffer: owning, device-tagged, move-only raw memory.

#include <cstddef>

#include <halo/kernels/resources.hpp>

namespace halo::kernels {

/// Owns `bytes` of memory on `device`. CPU memory is 64-byte aligned; CUDA memory is a
/// stream-ordered allocation on res's stream, freed on that stream. Contents start undefined.
/// Move-only: copying memory is always explicit (`copy`, `Tensor::clone`).
class Buffer {
 public:
  Buffer() = default;
  Buffer(const Resources& res, Device device, std::size_t bytes);
  ~Buffer();
  Buffer(Buffer&& other) noexcept;
  Buffer& operator=(Buffer&& other) noexcept;
  Buffer(const Buffer&) = delete;
  Buffer& operator=(const Buffer&) = delete;

  void* data() const { return m_data; }
  std::size_t bytes() const { return m_bytes; }
  Device device() const { return m_device; }

 private:
  void release() noexcept;
  void* m_data = nullptr;
  std::size_t m_bytes = 0;
  Device m_device = Device::Cpu;
  void* m_stream = nullptr;
};

/// Copies `bytes` between any two devices; returns when the data is in place.
void copy_bytes(const Resources& res, void* dst, Device dst_device, const void* src,
                Device src_device, std::size_t bytes);
/// Sets `bytes` to zero; asynchronous on res's stream for CUDA.
void zero_bytes(const Resources& res, void* dst, Device device, std::size_t bytes);

}  // namespace halo::kernels
