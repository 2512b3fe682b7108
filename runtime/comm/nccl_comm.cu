// NcclComm: Comm on NCCL over res's CUDA stream, bootstrapped over a host communicator.
#include <cuda_runtime.h>
#include <nccl.h>
#include <numeric>
#include <string>

#include <halo/kernels/buffer.hpp>
#include <halo/kernels/cuda_check.cuh>
#include <halo/runtime/comm/detail/nccl_check.cuh>
#include <halo/runtime/comm/nccl_comm.hpp>

namespace halo::runtime {
namespace {

cudaStream_t stream_of(const kernels::Resources& res) {
  return static_cast<cudaStream_t>(res.cuda_exec().stream);
}

ncclRedOp_t to_nccl(ReduceOp op) { return op == ReduceOp::Sum ? ncclSum : ncclMax; }

template <class T>
ncclDataType_t nccl_type();
template <>
ncclDataType_t nccl_type<float>() {
  return ncclFloat32;
}
template <>
ncclDataType_t nccl_type<double>() {
  return ncclFloat64;
}
template <>
ncclDataType_t nccl_type<std::int64_t>() {
  return ncclInt64;
}

// Device (or managed) memory: what NCCL can read and write. Host memory, registered or not,
// is refused where the contract asks for device buffers.
bool on_device(const void* p) {
  cudaPointerAttributes a{};
  if (cudaPointerGetAttributes(&a, p) != cudaSuccess) {
    (void)cudaGetLastError();  // older runtimes flag plain host pointers as an error
    return false;
  }
  return a.type == cudaMemoryTypeDevice || a.type == cudaMemoryTypeManaged;
}

void expect_device(const void* p, std::size_t bytes, const char* call) {
  HALO_EXPECTS(bytes == 0 || on_device(p),
               std::string(call) + ": NcclComm buffers must be device memory (the rank's GPU)");
}

}  // namespace

bool nccl_available() { return true; }

void NcclComm::Deleter::operator()(ncclComm* comm) const noexcept {
  HALO_NCCL_CHECK_NO_THROW(ncclCommDestroy(comm));
}

NcclComm::NcclComm(const kernels::Resources& res, ncclComm* comm, int rank, int size)
    : m_res(res), m_comm(comm), m_rank(rank), m_size(size) {
  HALO_EXPECTS(res.device() == kernels::Device::Cuda, "NcclComm: needs a CUDA Resources");
  use_device();
  cudaEvent_t event = nullptr;
  HALO_CUDA_CHECK(cudaEventCreateWithFlags(&event, cudaEventDisableTiming));
  m_event = event;
}

NcclComm::~NcclComm() {
  // Queued transfers that were never waited for are dropped: issuing them here could block on
  // a peer that is gone. Work already issued finishes before the communicator is destroyed.
  HALO_CUDA_CHECK_NO_THROW(cudaSetDevice(m_res.cuda_exec().device_id));
  HALO_CUDA_CHECK_NO_THROW(cudaStreamSynchronize(stream_of(m_res)));
  if (m_event != nullptr)
    HALO_CUDA_CHECK_NO_THROW(cudaEventDestroy(static_cast<cudaEvent_t>(m_event)));
}

void NcclComm::use_device() const { HALO_CUDA_CHECK(cudaSetDevice(m_res.cuda_exec().device_id)); }

void NcclComm::barrier() {
  use_device();
  kernels::Buffer one(m_res, kernels::Device::Cuda, sizeof(std::int32_t));
  kernels::zero_bytes(m_res, one.data(), kernels::Device::Cuda, one.bytes());
  HALO_NCCL_CHECK(
      ncclAllReduce(one.data(), one.data(), 1, ncclInt32, ncclSum, m_comm.get(), stream_of(m_res)));
  m_res.synchronize();
}

void NcclComm::broadcast(void* data, std::size_t bytes, int root) {
  HALO_EXPECTS(root >= 0 && root < m_size, "NcclComm::broadcast: root " + std::to_string(root) +
                                               " of " + std::to_string(m_size) + " ranks");
  if (bytes == 0) return;
  use_device();
  if (on_device(data)) {
    HALO_NCCL_CHECK(
        ncclBroadcast(data, data, bytes, ncclUint8, root, m_comm.get(), stream_of(m_res)));
    return;
  }
  // Host data (an id, a flag): through a device copy, synchronously like a host comm.
  kernels::Buffer staged(m_res, kernels::Device::Cuda, bytes);
  kernels::copy_bytes(m_res, staged.data(), kernels::Device::Cuda, data, kernels::Device::Cpu,
                      bytes);
  HALO_NCCL_CHECK(ncclBroadcast(staged.data(), staged.data(), bytes, ncclUint8, root, m_comm.get(),
                                stream_of(m_res)));
  kernels::copy_bytes(m_res, data, kernels::Device::Cpu, staged.data(), kernels::Device::Cuda,
                      bytes);
}

template <class T>
void NcclComm::reduce(kernels::Span<T> data, ReduceOp op) {
  if (data.size == 0) return;
  use_device();
  const auto n = static_cast<std::size_t>(data.size);
  if (on_device(data.data)) {
    HALO_NCCL_CHECK(ncclAllReduce(data.data, data.data, n, nccl_type<T>(), to_nccl(op),
                                  m_comm.get(), stream_of(m_res)));
    return;
  }
  // Host values (Comm::sum, counters): staged, and the result is on the host on return.
  const std::size_t bytes = n * sizeof(T);
  kernels::Buffer staged(m_res, kernels::Device::Cuda, bytes);
  kernels::copy_bytes(m_res, staged.data(), kernels::Device::Cuda, data.data, kernels::Device::Cpu,
                      bytes);
  HALO_NCCL_CHECK(ncclAllReduce(staged.data(), staged.data(), n, nccl_type<T>(), to_nccl(op),
                                m_comm.get(), stream_of(m_res)));
  kernels::copy_bytes(m_res, data.data, kernels::Device::Cpu, staged.data(), kernels::Device::Cuda,
                      bytes);
}

void NcclComm::allreduce(kernels::Span<double> data, ReduceOp op) { reduce(data, op); }
void NcclComm::allreduce(kernels::Span<float> data, ReduceOp op) { reduce(data, op); }
void NcclComm::allreduce(kernels::Span<std::int64_t> data, ReduceOp op) { reduce(data, op); }

std::vector<std::byte> NcclComm::allgatherv(const void* data, std::size_t bytes,
                                            std::vector<std::size_t>& counts) {
  expect_device(data, bytes, "NcclComm::allgatherv");
  const auto p = static_cast<std::size_t>(m_size);
  // Sizes first (every rank's count to every rank), then the bytes as grouped sends/receives.
  const std::vector<std::int64_t> sizes =
      Comm::alltoall(std::vector<std::int64_t>(p, static_cast<std::int64_t>(bytes)));
  counts.assign(sizes.begin(), sizes.end());
  const std::size_t total = std::accumulate(counts.begin(), counts.end(), std::size_t{0});
  std::vector<std::byte> out(total);
  if (total == 0) return out;
  use_device();
  kernels::Buffer recv(m_res, kernels::Device::Cuda, total);
  auto* r = static_cast<char*>(recv.data());
  HALO_NCCL_CHECK(ncclGroupStart());
  std::size_t offset = 0;
  for (std::size_t j = 0; j < p; ++j) {
    if (bytes > 0)
      HALO_NCCL_CHECK(
          ncclSend(data, bytes, ncclUint8, static_cast<int>(j), m_comm.get(), stream_of(m_res)));
    if (counts[j] > 0)
      HALO_NCCL_CHECK(ncclRecv(r + offset, counts[j], ncclUint8, static_cast<int>(j), m_comm.get(),
                               stream_of(m_res)));
    offset += counts[j];
  }
  HALO_NCCL_CHECK(ncclGroupEnd());
  kernels::copy_bytes(m_res, out.data(), kernels::Device::Cpu, recv.data(), kernels::Device::Cuda,
                      total);
  return out;
}

void NcclComm::alltoallv(const void* send, const std::vector<std::size_t>& send_counts, void* recv,
                         const std::vector<std::size_t>& recv_counts) {
  const auto p = static_cast<std::size_t>(m_size);
  HALO_EXPECTS(send_counts.size() == p && recv_counts.size() == p,
               "alltoallv: one count per rank expected");
  const std::size_t send_total =
      std::accumulate(send_counts.begin(), send_counts.end(), std::size_t{0});
  const std::size_t recv_total =
      std::accumulate(recv_counts.begin(), recv_counts.end(), std::size_t{0});
  expect_device(send, send_total, "NcclComm::alltoallv");
  expect_device(recv, recv_total, "NcclComm::alltoallv");
  const auto me = static_cast<std::size_t>(m_rank);
  HALO_EXPECTS(send_counts[me] == recv_counts[me],
               "alltoallv: this rank's block to itself has two sizes");
  use_device();
  const auto* s = static_cast<const char*>(send);
  auto* r = static_cast<char*>(recv);
  // The block to itself is a device copy; the others are one group of sends and receives.
  std::size_t so = 0, ro = 0;
  HALO_NCCL_CHECK(ncclGroupStart());
  for (std::size_t j = 0; j < p; ++j) {
    const int peer = static_cast<int>(j);
    if (peer == m_rank) {
      if (send_counts[j] > 0)
        HALO_CUDA_CHECK(cudaMemcpyAsync(r + ro, s + so, send_counts[j], cudaMemcpyDeviceToDevice,
                                        stream_of(m_res)));
    } else {
      if (send_counts[j] > 0)
        HALO_NCCL_CHECK(
            ncclSend(s + so, send_counts[j], ncclUint8, peer, m_comm.get(), stream_of(m_res)));
      if (recv_counts[j] > 0)
        HALO_NCCL_CHECK(
            ncclRecv(r + ro, recv_counts[j], ncclUint8, peer, m_comm.get(), stream_of(m_res)));
    }
    so += send_counts[j];
    ro += recv_counts[j];
  }
  HALO_NCCL_CHECK(ncclGroupEnd());
}

void NcclComm::alltoall(kernels::Span<const std::int64_t> send, kernels::Span<std::int64_t> recv) {
  const auto p = static_cast<std::size_t>(m_size);
  HALO_EXPECTS(send.size == m_size && recv.size == m_size, "alltoall: one value per rank expected");
  use_device();
  const std::size_t bytes = p * sizeof(std::int64_t);
  kernels::Buffer staged(m_res, kernels::Device::Cuda, 2 * bytes);
  auto* s = static_cast<std::int64_t*>(staged.data());
  std::int64_t* r = s + p;
  kernels::copy_bytes(m_res, s, kernels::Device::Cuda, send.data, kernels::Device::Cpu, bytes);
  alltoallv(s, std::vector<std::size_t>(p, sizeof(std::int64_t)), r,
            std::vector<std::size_t>(p, sizeof(std::int64_t)));
  kernels::copy_bytes(m_res, recv.data, kernels::Device::Cpu, r, kernels::Device::Cuda, bytes);
}

std::unique_ptr<Comm> NcclComm::duplicate() {
  HALO_FAIL("NcclComm::duplicate: not supported (host threads communicate over MPI)");
}

Request NcclComm::isend(const void* data, std::size_t bytes, int peer, int) {
  HALO_EXPECTS(peer >= 0 && peer < m_size, "NcclComm::isend: no rank " + std::to_string(peer));
  expect_device(data, bytes, "NcclComm::isend");
  m_queue.push_back({true, const_cast<void*>(data), bytes, peer});
  return {++m_posted, true};
}

Request NcclComm::irecv(void* data, std::size_t bytes, int peer, int) {
  HALO_EXPECTS(peer >= 0 && peer < m_size, "NcclComm::irecv: no rank " + std::to_string(peer));
  expect_device(data, bytes, "NcclComm::irecv");
  m_queue.push_back({false, data, bytes, peer});
  return {++m_posted, true};
}

void NcclComm::flush() {
  if (m_queue.empty()) return;
  use_device();
  const cudaStream_t stream = stream_of(m_res);
  std::vector<Transfer> queue;
  queue.swap(m_queue);  // dropped even if NCCL throws: the communicator is unusable then
  HALO_NCCL_CHECK(ncclGroupStart());
  for (const Transfer& t : queue) {
    if (t.bytes == 0) continue;
    if (t.send)
      HALO_NCCL_CHECK(ncclSend(t.data, t.bytes, ncclUint8, t.peer, m_comm.get(), stream));
    else
      HALO_NCCL_CHECK(ncclRecv(t.data, t.bytes, ncclUint8, t.peer, m_comm.get(), stream));
  }
  HALO_NCCL_CHECK(ncclGroupEnd());
  HALO_CUDA_CHECK(cudaEventRecord(static_cast<cudaEvent_t>(m_event), stream));
}

void NcclComm::wait_all(std::vector<Request>& requests) {
  bool any = false;
  for (const Request& r : requests) any = any || r.active;
  if (!any) return;
  flush();
  use_device();
  HALO_CUDA_CHECK(cudaEventSynchronize(static_cast<cudaEvent_t>(m_event)));
  for (Request& r : requests) r.active = false;
}

bool NcclComm::test_all(std::vector<Request>& requests) {
  bool any = false;
  for (const Request& r : requests) any = any || r.active;
  if (!any) return true;
  flush();
  use_device();
  // The event follows the last group issued, hence every request handed out so far.
  const cudaError_t status = cudaEventQuery(static_cast<cudaEvent_t>(m_event));
  if (status == cudaErrorNotReady) return false;
  HALO_CUDA_CHECK(status);
  for (Request& r : requests) r.active = false;
  return true;
}

std::unique_ptr<Comm> make_nccl_comm(Comm& bootstrap, const kernels::Resources& res) {
  HALO_EXPECTS(res.device() == kernels::Device::Cuda,
               "make_nccl_comm: needs a CUDA Resources (the rank's GPU)");
  HALO_EXPECTS(bootstrap.memory_device() == kernels::Device::Cpu,
               "make_nccl_comm: the bootstrap communicator must take host memory (MPI)");
  ncclUniqueId id{};
  if (bootstrap.rank() == 0) HALO_NCCL_CHECK(ncclGetUniqueId(&id));
  bootstrap.broadcast(&id, sizeof id, 0);
  HALO_CUDA_CHECK(cudaSetDevice(res.cuda_exec().device_id));
  ncclComm_t comm = nullptr;
  HALO_NCCL_CHECK(ncclCommInitRank(&comm, bootstrap.size(), id, bootstrap.rank()));
  // The constructor owns `comm` from its first line: it is destroyed if the constructor throws.
  return std::make_unique<NcclComm>(res, comm, bootstrap.rank(), bootstrap.size());
}

}  // namespace halo::runtime
