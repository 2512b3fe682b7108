#include <omp.h>

#include <halo/kernels/detail/cuda_runtime.hpp>
#include <halo/kernels/error.hpp>
#include <halo/kernels/resources.hpp>

namespace halo::kernels {

struct Resources::CudaState {
  int device_id = 0;
  void* stream = nullptr;
};

Resources::Resources(Device device, int num_threads, int cuda_device_id) : m_device(device) {
  m_cpu.num_threads = num_threads > 0 ? num_threads : omp_get_max_threads();
  if (device == Device::Cuda) {
    const int count = cuda_device_count();
    HALO_EXPECTS(cuda_device_id >= 0 && cuda_device_id < count,
                 "Resources: CUDA device " + std::to_string(cuda_device_id) + " requested, " +
                     std::to_string(count) + " available");
    m_cuda = std::make_unique<CudaState>();
    m_cuda->device_id = cuda_device_id;
    m_cuda->stream = detail::cuda_create_stream(cuda_device_id);
  }
}

Resources::~Resources() {
  if (m_cuda) detail::cuda_destroy_stream(m_cuda->stream);
}
Resources::Resources(Resources&&) noexcept = default;
Resources& Resources::operator=(Resources&& other) noexcept {
  if (this != &other) {
    if (m_cuda) detail::cuda_destroy_stream(m_cuda->stream);
    m_device = other.m_device;
    m_cpu = other.m_cpu;
    m_cuda = std::move(other.m_cuda);
  }
  return *this;
}

CudaExec Resources::cuda_exec() const {
  HALO_EXPECTS(m_cuda != nullptr, "Resources: not a CUDA resources object");
  return {m_cuda->stream, m_cuda->device_id};
}

void Resources::synchronize() const {
  if (m_cuda) detail::cuda_synchronize(m_cuda->stream);
}

}  // namespace halo::kernels
