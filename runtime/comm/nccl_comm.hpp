#pragma once
// NcclComm: the Comm interface on NCCL, with buffers in GPU memory and work on a CUDA stream.

#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

#include <halo/kernels/resources.hpp>
#include <halo/runtime/comm/comm.hpp>

struct ncclComm;  // nccl.h: typedef struct ncclComm* ncclComm_t (kept opaque: no CUDA here)

namespace halo::runtime {

/// Whether this build has the NCCL communicator (HALO_WITH_NCCL).
bool nccl_available();

/// Builds the NCCL communicator of the ranks of `bootstrap` (collective over it): rank 0 draws
/// an ncclUniqueId, `bootstrap` (a host-memory comm, normally make_world_comm()'s MpiComm)
/// broadcasts it, and every rank joins with ncclCommInitRank on res's CUDA device. Rank r of
/// the result is rank r of `bootstrap`. `res` must be a Device::Cuda Resources (one GPU per
/// rank: see local_cuda_device()) and must outlive the result. Throws halo::LogicError in a
/// build without NCCL or for a CPU `res`, halo::CommError when NCCL fails.
std::unique_ptr<Comm> make_nccl_comm(Comm& bootstrap, const kernels::Resources& res);

/// The communicator a rank's device rows and gradients travel on: for GPU ranks, NCCL over
/// `comm`'s ranks (made into `own`, collective) where the build has it, else `comm` itself with
/// a warning; for one rank or a CPU run, `comm` itself (nothing to move between devices).
Comm& device_data_comm(const kernels::Resources& res, Comm& comm, std::unique_ptr<Comm>& own);

/// Contract (beyond Comm's):
/// - Buffers are device memory of res's GPU (memory_device() == Device::Cuda); a host pointer
///   is refused with halo::LogicError. Two exceptions that keep Comm's helpers working:
///   allreduce and broadcast stage host data through the device; alltoall takes and returns
///   host values (counts), and allgatherv takes device data and returns the gathered bytes on
///   the host.
/// - Every operation is enqueued on res's stream, in stream order with the kernels around it:
///   allreduce, broadcast and alltoallv return once the work is queued; what the caller enqueues
///   next on the stream sees the result; the host must synchronise before reading it.
///   alltoall, allgatherv and barrier synchronise the stream (they return host results).
/// - isend / irecv queue the transfer and return; nothing moves yet. The next wait_all or
///   test_all issues every queued transfer in one NCCL group (ncclGroupStart/End, so sends and
///   receives between a pair of ranks cannot deadlock), records a CUDA event after it, and
///   then waits for the event (wait_all) or queries it (test_all: true once the transfers have
///   finished on the GPU). NCCL has no tags: between two ranks, messages match in the order they
///   were posted, so `tag` must agree on both sides but is not used for matching. A buffer
///   must stay valid until its request completes.
/// - Calls come from one host thread; the NCCL communicator is not usable after an error.
class NcclComm final : public Comm {
 public:
  /// Takes ownership of `comm` (an initialised ncclComm_t of `size` ranks, this one `rank`).
  NcclComm(const kernels::Resources& res, ncclComm* comm, int rank, int size);
  ~NcclComm() override;
  NcclComm(const NcclComm&) = delete;
  NcclComm& operator=(const NcclComm&) = delete;

  int rank() const override { return m_rank; }
  int size() const override { return m_size; }
  kernels::Device memory_device() const override { return kernels::Device::Cuda; }
  /// All-reduce of one int on the device, then a stream synchronisation.
  void barrier() override;
  void broadcast(void* data, std::size_t bytes, int root) override;
  void allreduce(kernels::Span<double> data, ReduceOp op) override;
  void allreduce(kernels::Span<float> data, ReduceOp op) override;
  void allreduce(kernels::Span<std::int64_t> data, ReduceOp op) override;
  /// `data` on the device; the result is copied to the host (synchronises the stream).
  std::vector<std::byte> allgatherv(const void* data, std::size_t bytes,
                                    std::vector<std::size_t>& counts) override;
  void alltoallv(const void* send, const std::vector<std::size_t>& send_counts, void* recv,
                 const std::vector<std::size_t>& recv_counts) override;
  /// Host values in and out, staged through a few bytes of device memory.
  void alltoall(kernels::Span<const std::int64_t> send, kernels::Span<std::int64_t> recv) override;
  using Comm::alltoall;
  /// Unsupported (halo::LogicError): host-side threads communicate over MPI.
  std::unique_ptr<Comm> duplicate() override;
  bool concurrent_duplicates() const override { return false; }
  Request isend(const void* data, std::size_t bytes, int peer, int tag) override;
  Request irecv(void* data, std::size_t bytes, int peer, int tag) override;
  void wait_all(std::vector<Request>& requests) override;
  bool test_all(std::vector<Request>& requests) override;

 private:
  struct Deleter {
    void operator()(ncclComm* comm) const noexcept;  // ncclCommDestroy, errors logged
  };
  struct Transfer {
    bool send;
    void* data;
    std::size_t bytes;
    int peer;
  };
  template <class T>
  void reduce(kernels::Span<T> data, ReduceOp op);
  /// Issues the queued transfers in one group and records m_event after them.
  void flush();
  void use_device() const;  // makes res's device current: NCCL calls act on it

  const kernels::Resources& m_res;
  std::unique_ptr<ncclComm, Deleter> m_comm;
  int m_rank = 0;
  int m_size = 1;
  void* m_event = nullptr;  // cudaEvent_t, recorded after the last flushed group
  std::vector<Transfer> m_queue;
  std::uint64_t m_posted = 0;  // requests handed out (handles 1 .. m_posted)
};

}  // namespace halo::runtime
