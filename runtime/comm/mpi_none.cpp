// Builds without MPI (HALO_WITH_MPI=OFF): one process only.
#include <halo/kernels/error.hpp>
#include <halo/runtime/comm/comm.hpp>

namespace halo::runtime {

std::unique_ptr<Comm> make_world_comm(const MpiOptions&) {
  HALO_FAIL("this Halo was built without MPI (HALO_WITH_MPI=OFF): distributed runs need it");
}

void abort_world(int) {}

}  // namespace halo::runtime
