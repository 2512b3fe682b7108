#include <array>
#include <omp.h>

#include <halo/kernels/buffer.hpp>
#include <halo/kernels/detail/cuda_runtime.hpp>
#include <halo/kernels/error.hpp>
#include <halo/kernels/resources.hpp>

namespace halo::kernels {

struct Resources::CudaState {
  int device_id = 0;
  void* stream = nullptr;
  void* cublas = nullptr;    // created on first use
  void* cusparse = nullptr;  // created on first use
  void* workspace = nullptr;
  std::size_t workspace_bytes = 0;

  ~CudaState() {
    if (cublas != nullptr) detail::cublas_destroy(cublas);
    if (cusparse != nullptr) detail::cusparse_destroy(cusparse);
    if (workspace != nullptr) detail::cuda_free_async(workspace, stream);
    detail::cuda_destroy_stream(stream);
  }
};

struct Resources::Scratch {
  std::array<Buffer, Resources::kScratchSlots> blocks;
};

Resources::Resources(Device device, int num_threads, int cuda_device_id)
    : m_device(device), m_scratch(std::make_unique<Scratch>()) {
  m_cpu.num_threads = num_threads > 0 ? num_threads : omp_get_max_threads();
  if (device == Device::Cuda) {
    const int count = cuda_device_count();
    HALO_EXPECTS(cuda_device_id >= 0 && cuda_device_id < count,
                 "Resources: CUDA device " + std::to_string(cuda_device_id) + " requested, " +
                     std::to_string(count) + " available");
    m_cuda = std::make_unique<CudaState>();
    m_cuda->device_id = cuda_device_id;
    m_cuda->stream = detail::cuda_create_stream(cuda_device_id);
    detail::cuda_keep_pool_memory(cuda_device_id);
  }
}

Resources::~Resources() = default;
Resources::Resources(Resources&&) noexcept = default;
Resources& Resources::operator=(Resources&&) noexcept = default;

CudaExec Resources::cuda_exec() const {
  HALO_EXPECTS(m_cuda != nullptr, "Resources: not a CUDA resources object");
  return {m_cuda->stream, m_cuda->device_id};
}

void Resources::synchronize() const {
  if (m_cuda) detail::cuda_synchronize(m_cuda->stream);
}

DeviceMemoryStats Resources::device_memory() const {
  if (!m_cuda) return {};
  return detail::cuda_pool_stats(m_cuda->device_id);
}

void* Resources::workspace(std::size_t bytes) const {
  HALO_EXPECTS(m_cuda != nullptr, "Resources::workspace: not a CUDA resources object");
  if (bytes > m_cuda->workspace_bytes) {
    if (m_cuda->workspace != nullptr) detail::cuda_free_async(m_cuda->workspace, m_cuda->stream);
    m_cuda->workspace = nullptr;
    m_cuda->workspace_bytes = 0;
    m_cuda->workspace = detail::cuda_malloc_async(bytes, m_cuda->stream);
    m_cuda->workspace_bytes = bytes;
  }
  return m_cuda->workspace;
}

void* Resources::scratch(int slot, std::size_t bytes) const {
  HALO_EXPECTS(slot >= 0 && slot < kScratchSlots,
               "Resources::scratch: no slot " + std::to_string(slot));
  Buffer& b = m_scratch->blocks[static_cast<std::size_t>(slot)];
  if (b.bytes() < bytes) b = Buffer(*this, m_device, bytes);
  return b.data();
}

void* Resources::cublas_handle() const {
  HALO_EXPECTS(m_cuda != nullptr, "Resources::cublas_handle: not a CUDA resources object");
  if (m_cuda->cublas == nullptr) m_cuda->cublas = detail::cublas_create(m_cuda->stream);
  return m_cuda->cublas;
}

void* Resources::cusparse_handle() const {
  HALO_EXPECTS(m_cuda != nullptr, "Resources::cusparse_handle: not a CUDA resources object");
  if (m_cuda->cusparse == nullptr) m_cuda->cusparse = detail::cusparse_create(m_cuda->stream);
  return m_cuda->cusparse;
}

}  // namespace halo::kernels
