#include <halo/kernels/buffer.hpp>

#include <cstdlib>
#include <cstring>
#include <new>
#include <utility>

#include <halo/kernels/detail/cuda_runtime.hpp>

namespace halo::kernels {

Buffer::Buffer(const Resources& res, Device device, std::size_t bytes)
    : m_bytes(bytes), m_device(device) {
  if (bytes == 0) return;
  if (device == Device::Cpu) {
    constexpr std::size_t kAlign = 64;
    m_data = std::aligned_alloc(kAlign, (bytes + kAlign - 1) / kAlign * kAlign);
    if (m_data == nullptr) throw std::bad_alloc();
  } else {
    m_stream = res.cuda_exec().stream;
    m_data = detail::cuda_malloc_async(bytes, m_stream);
  }
}

Buffer::~Buffer() { release(); }

Buffer::Buffer(Buffer&& other) noexcept
    : m_data(std::exchange(other.m_data, nullptr)),
      m_bytes(std::exchange(other.m_bytes, 0)),
      m_device(other.m_device),
      m_stream(other.m_stream) {}

Buffer& Buffer::operator=(Buffer&& other) noexcept {
  if (this != &other) {
    release();
    m_data = std::exchange(other.m_data, nullptr);
    m_bytes = std::exchange(other.m_bytes, 0);
    m_device = other.m_device;
    m_stream = other.m_stream;
  }
  return *this;
}

void Buffer::release() noexcept {
  if (m_data == nullptr) return;
  if (m_device == Device::Cpu) {
    std::free(m_data);
  } else {
    detail::cuda_free_async(m_data, m_stream);
  }
  m_data = nullptr;
}

void copy_bytes(const Resources& res, void* dst, Device dst_device, const void* src,
                Device src_device, std::size_t bytes) {
  if (bytes == 0) return;
  if (dst_device == Device::Cpu && src_device == Device::Cpu) {
    std::memcpy(dst, src, bytes);
  } else {
    detail::cuda_memcpy(dst, src, bytes, res.cuda_exec().stream, /*sync=*/true);
  }
}

void zero_bytes(const Resources& res, void* dst, Device device, std::size_t bytes) {
  if (bytes == 0) return;
  if (device == Device::Cpu) {
    std::memset(dst, 0, bytes);
  } else {
    detail::cuda_memset_zero(dst, bytes, res.cuda_exec().stream);
  }
}

}  // namespace halo::kernels
