#include <algorithm>
#include <cerrno>
#include <climits>
#include <cstdlib>
#include <cstring>
#include <initializer_list>
#include <string>

#include <halo/kernels/error.hpp>
#include <halo/kernels/resources.hpp>
#include <halo/runtime/comm/comm.hpp>

namespace halo::runtime {

void SelfComm::broadcast(void*, std::size_t, int root) {
  HALO_EXPECTS(root == 0, "SelfComm::broadcast: root " + std::to_string(root) + " of 1 rank");
}

std::vector<std::byte> SelfComm::allgatherv(const void* data, std::size_t bytes,
                                            std::vector<std::size_t>& counts) {
  counts = {bytes};
  const auto* p = static_cast<const std::byte*>(data);
  return std::vector<std::byte>(p, p + bytes);
}

void SelfComm::alltoallv(const void* send, const std::vector<std::size_t>& send_counts, void* recv,
                         const std::vector<std::size_t>& recv_counts) {
  HALO_EXPECTS(
      send_counts.size() == 1 && recv_counts.size() == 1 && send_counts[0] == recv_counts[0],
      "SelfComm::alltoallv: one count each, equal");
  if (send_counts[0] > 0) std::memcpy(recv, send, send_counts[0]);
}

void SelfComm::alltoall(kernels::Span<const std::int64_t> send, kernels::Span<std::int64_t> recv) {
  HALO_EXPECTS(send.size == 1 && recv.size == 1, "SelfComm::alltoall: one value expected");
  recv[0] = send[0];
}

Request SelfComm::isend(const void*, std::size_t, int peer, int) {
  HALO_FAIL("SelfComm::isend: a single process has no peer " + std::to_string(peer));
}

Request SelfComm::irecv(void*, std::size_t, int peer, int) {
  HALO_FAIL("SelfComm::irecv: a single process has no peer " + std::to_string(peer));
}

void SelfComm::wait_all(std::vector<Request>& requests) {
  for (const Request& r : requests)
    HALO_EXPECTS(!r.active, "SelfComm::wait_all: no request can be active");
}

bool SelfComm::test_all(std::vector<Request>& requests) {
  wait_all(requests);
  return true;
}

namespace {
int first_set(std::initializer_list<const char*> names) {
  for (const char* name : names)
    if (const char* v = std::getenv(name)) return std::atoi(v);
  return 0;
}
}  // namespace

int launcher_world_size() { return first_set({"PMI_SIZE", "OMPI_COMM_WORLD_SIZE"}); }
int launcher_local_size() { return first_set({"MPI_LOCALNRANKS", "OMPI_COMM_WORLD_LOCAL_SIZE"}); }

int launcher_local_rank() {
  for (const char* name : {"MPI_LOCALRANKID", "OMPI_COMM_WORLD_LOCAL_RANK"}) {
    const char* v = std::getenv(name);
    if (v == nullptr) continue;
    // Strict: "", "-1", "2x" or an overflow are not a local rank (std::atoi would say 0).
    char* end = nullptr;
    errno = 0;
    const long r = std::strtol(v, &end, 10);
    if (end == v || *end != '\0' || errno != 0 || r < 0 || r > INT_MAX) return -1;
    return static_cast<int>(r);
  }
  return -1;
}

int local_cuda_device() {
  const int devices = kernels::cuda_device_count();
  HALO_EXPECTS(devices > 0,
               "local_cuda_device: no usable CUDA device on this host (no GPU or driver, or a "
               "build without HALO_WITH_CUDA)");
  return std::max(launcher_local_rank(), 0) % devices;
}

}  // namespace halo::runtime
