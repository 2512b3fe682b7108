#pragma once
// Communicators: the collectives and point-to-point transfers the distributed runtime uses.

#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

#include <halo/kernels/types.hpp>
#include <halo/kernels/views.hpp>

namespace halo::runtime {

enum class ReduceOp { Sum, Max };

/// A pending non-blocking transfer started by Comm::isend / Comm::irecv. Completed (and reset)
/// by Comm::wait_all or a Comm::test_all that returns true.
struct Request {
  std::uint64_t handle = 0;
  bool active = false;
};

/// A group of processes (ranks 0 .. size-1) that exchange bytes. All calls on one communicator
/// are made by one thread at a time; collectives must be called by every rank in the same
/// order. Messages of any size (above 2 GiB too) are allowed; calls on host memory allocate
/// nothing after the first call with as many peers. Failures throw halo::CommError naming the
/// call and the reason.
class Comm {
 public:
  virtual ~Comm() = default;
  virtual int rank() const = 0;
  virtual int size() const = 0;
  /// Where the buffers passed to this communicator must live: host memory (Device::Cpu) for
  /// MpiComm and SelfComm, device memory of the rank's GPU (Device::Cuda) for NcclComm.
  virtual kernels::Device memory_device() const = 0;
  virtual void barrier() = 0;
  /// Copies `bytes` bytes at `data` from `root` to every rank.
  virtual void broadcast(void* data, std::size_t bytes, int root) = 0;
  /// Element-wise reduction of `data` over all ranks, result on every rank.
  virtual void allreduce(kernels::Span<double> data, ReduceOp op) = 0;
  virtual void allreduce(kernels::Span<float> data, ReduceOp op) = 0;
  virtual void allreduce(kernels::Span<std::int64_t> data, ReduceOp op) = 0;
  /// Every rank's `bytes` bytes concatenated in rank order; `counts` receives each rank's size.
  virtual std::vector<std::byte> allgatherv(const void* data, std::size_t bytes,
                                            std::vector<std::size_t>& counts) = 0;
  /// Rank r sends send_counts[j] bytes from send + (sum of send_counts[< j]) to rank j and
  /// receives recv_counts[j] bytes from rank j at recv + (sum of recv_counts[< j]). Both count
  /// vectors have size() entries; recv_counts must be what the peers send (see alltoall).
  virtual void alltoallv(const void* send, const std::vector<std::size_t>& send_counts, void* recv,
                         const std::vector<std::size_t>& recv_counts) = 0;
  /// One value to each rank: recv[j] = what rank j passed as its send[rank()]. Both spans have
  /// size() entries (host memory, whatever memory_device() says); allocates nothing.
  virtual void alltoall(kernels::Span<const std::int64_t> send,
                        kernels::Span<std::int64_t> recv) = 0;
  /// The same, returning a new vector.
  std::vector<std::int64_t> alltoall(const std::vector<std::int64_t>& send) {
    std::vector<std::int64_t> recv(send.size());
    alltoall(kernels::Span<const std::int64_t>{send.data(), static_cast<std::int64_t>(send.size())},
             kernels::Span<std::int64_t>{recv.data(), static_cast<std::int64_t>(recv.size())});
    return recv;
  }
  /// A communicator over the same ranks whose messages never match this one's: for a second
  /// thread of control (the mini-batch producer), which may then call it concurrently with
  /// this one where the implementation allows it (MpiComm: MPI_THREAD_MULTIPLE). Collective.
  /// halo::LogicError where unsupported (NcclComm).
  virtual std::unique_ptr<Comm> duplicate() = 0;
  /// Whether duplicate()'s result may be used by another thread at the same time as this one.
  virtual bool concurrent_duplicates() const = 0;
  /// Non-blocking transfers of `bytes` bytes to / from `peer` with a matching `tag`. The buffer
  /// must stay valid and unchanged (send) or untouched (receive) until the request completes.
  virtual Request isend(const void* data, std::size_t bytes, int peer, int tag) = 0;
  virtual Request irecv(void* data, std::size_t bytes, int peer, int tag) = 0;
  /// Blocks until every active request in `requests` has completed.
  virtual void wait_all(std::vector<Request>& requests) = 0;
  /// Makes progress without blocking; true when every request has completed.
  virtual bool test_all(std::vector<Request>& requests) = 0;

  /// Sums a scalar over all ranks.
  template <class T>
  T sum(T value) {
    allreduce(kernels::Span<T>{&value, 1}, ReduceOp::Sum);
    return value;
  }
};

/// The communicator of a single process: collectives copy or return their input; it has no
/// peer, so point-to-point calls throw halo::LogicError.
class SelfComm final : public Comm {
 public:
  int rank() const override { return 0; }
  int size() const override { return 1; }
  kernels::Device memory_device() const override { return kernels::Device::Cpu; }
  void barrier() override {}
  void broadcast(void* data, std::size_t bytes, int root) override;
  void allreduce(kernels::Span<double>, ReduceOp) override {}
  void allreduce(kernels::Span<float>, ReduceOp) override {}
  void allreduce(kernels::Span<std::int64_t>, ReduceOp) override {}
  std::vector<std::byte> allgatherv(const void* data, std::size_t bytes,
                                    std::vector<std::size_t>& counts) override;
  void alltoallv(const void* send, const std::vector<std::size_t>& send_counts, void* recv,
                 const std::vector<std::size_t>& recv_counts) override;
  void alltoall(kernels::Span<const std::int64_t> send, kernels::Span<std::int64_t> recv) override;
  using Comm::alltoall;
  std::unique_ptr<Comm> duplicate() override { return std::make_unique<SelfComm>(); }
  bool concurrent_duplicates() const override { return true; }
  Request isend(const void* data, std::size_t bytes, int peer, int tag) override;
  Request irecv(void* data, std::size_t bytes, int peer, int tag) override;
  void wait_all(std::vector<Request>& requests) override;
  bool test_all(std::vector<Request>& requests) override;
};

/// Exchanges lists of T with every rank (collective): returns what the ranks sent this one,
/// concatenated in rank order, and sets recv_offsets (size() + 1 entries) to where each rank's
/// list starts. lists[j] goes to rank j. T must be trivially copyable.
template <class T>
std::vector<T> alltoallv_lists(Comm& comm, const std::vector<std::vector<T>>& lists,
                               std::vector<std::int64_t>& recv_offsets) {
  const auto p = static_cast<std::size_t>(comm.size());
  std::vector<std::int64_t> send_counts(p);
  std::vector<T> send;
  std::vector<std::size_t> send_bytes(p), recv_bytes(p);
  for (std::size_t j = 0; j < p; ++j) {
    send_counts[j] = static_cast<std::int64_t>(lists[j].size());
    send_bytes[j] = lists[j].size() * sizeof(T);
    send.insert(send.end(), lists[j].begin(), lists[j].end());
  }
  const std::vector<std::int64_t> recv_counts = comm.alltoall(send_counts);
  recv_offsets.assign(p + 1, 0);
  for (std::size_t j = 0; j < p; ++j) {
    recv_offsets[j + 1] = recv_offsets[j] + recv_counts[j];
    recv_bytes[j] = static_cast<std::size_t>(recv_counts[j]) * sizeof(T);
  }
  std::vector<T> recv(static_cast<std::size_t>(recv_offsets[p]));
  comm.alltoallv(send.data(), send_bytes, recv.data(), recv_bytes);
  return recv;
}

/// Options of make_world_comm.
struct MpiOptions {
  /// The largest message MPI is given as one count of bytes: MPI takes `int` counts, so larger
  /// transfers go as one message of a derived datatype (point-to-point, broadcast), in pieces
  /// (all-reduce), or point to point (all-to-all, all-gather). Tests lower it to exercise
  /// those paths with small buffers.
  std::size_t max_message_bytes = 2147483647;
  /// The stall watchdog: > 0 starts a heartbeat thread (one per process, on a communicator of
  /// its own), and a rank that has waited in a collective or an exchange longer than this many
  /// seconds while some rank sent no heartbeat for as long throws halo::CommError naming that
  /// rank ("stall: rank 1 did not arrive ..."): a stopped or hung rank, not a slow one (a rank
  /// busy with a long step still beats). 0: off, wait forever.
  double stall_timeout_s = 0;
};

/// The communicator of the processes mpiexec started: initialises MPI on first use
/// (MPI_Init_thread asking for MPI_THREAD_MULTIPLE, so that duplicates can serve a second
/// thread) and returns an MpiComm over a duplicate of MPI_COMM_WORLD whose errors are
/// returned, not fatal, so that they become halo::CommError. MPI is finalised at exit. Throws
/// halo::LogicError without MPI.
std::unique_ptr<Comm> make_world_comm(const MpiOptions& options = {});

/// The number of processes of the job an MPI launcher (mpiexec) started this process in, 0
/// when no launcher did; read from the launcher's environment (PMI_SIZE for MPICH's Hydra,
/// OMPI_COMM_WORLD_SIZE for Open MPI) without initialising MPI.
int launcher_world_size();
/// How many of those processes run on this host (MPI_LOCALNRANKS,
/// OMPI_COMM_WORLD_LOCAL_SIZE), 0 without a launcher.
int launcher_local_size();
/// This process's rank among those on its host (MPI_LOCALRANKID for MPICH's Hydra,
/// OMPI_COMM_WORLD_LOCAL_RANK for Open MPI; the first one set wins), -1 without a launcher or
/// when the value is not a non-negative integer. Read without initialising MPI.
int launcher_local_rank();
/// The CUDA device this rank uses, one GPU per rank: launcher_local_rank() modulo
/// kernels::cuda_device_count() (device 0 without a launcher). With more ranks on a host than
/// GPUs, ranks share devices round-robin. Throws halo::LogicError when no CUDA device is
/// usable (no GPU, no driver, or a CPU-only build).
int local_cuda_device();

/// After an error on one rank: terminates every rank of the job (MPI_Abort, after a 250 ms pause
/// that lets the launcher forward the error message already printed) when MPI is initialised
/// with more than one process; returns otherwise.
void abort_world(int exit_code);

}  // namespace halo::runtime
