// The communicator a rank's device rows travel on (runtime/comm/nccl_comm.hpp).
#include <halo/kernels/log.hpp>
#include <halo/runtime/comm/nccl_comm.hpp>

namespace halo::runtime {

Comm& device_data_comm(const kernels::Resources& res, Comm& comm, std::unique_ptr<Comm>& own) {
  if (res.device() != kernels::Device::Cuda || comm.size() == 1) return comm;
  if (!nccl_available()) {
    HALO_LOG_WARN("train: built without NCCL: GPU ranks exchange through host memory over MPI");
    return comm;
  }
  own = make_nccl_comm(comm, res);
  return *own;
}

}  // namespace halo::runtime
