// Builds without NCCL (HALO_WITH_NCCL=OFF): no device-memory communicator.
#include <halo/kernels/error.hpp>
#include <halo/runtime/comm/nccl_comm.hpp>

namespace halo::runtime {

bool nccl_available() { return false; }

std::unique_ptr<Comm> make_nccl_comm(Comm&, const kernels::Resources&) {
  HALO_FAIL(
      "make_nccl_comm: this Halo was built without NCCL (HALO_WITH_NCCL=OFF; it needs "
      "HALO_WITH_CUDA, HALO_WITH_MPI and libnccl): distributed training on GPUs needs it");
}

}  // namespace halo::runtime
