// MpiComm: the Comm interface on MPI (MPICH), with errors returned as halo::CommError.
#include <chrono>
#include <climits>
#include <cstdlib>
#include <cstring>
#include <mpi.h>
#include <numeric>
#include <string>
#include <thread>

#include <halo/kernels/error.hpp>
#include <halo/runtime/comm/comm.hpp>

namespace halo::runtime {
namespace {

void check(int rc, const char* call) {
  if (rc == MPI_SUCCESS) return;
  char text[MPI_MAX_ERROR_STRING];
  int len = 0;
  MPI_Error_string(rc, text, &len);
  throw CommError(detail::format_error(
      (std::string(call) + " failed: " + std::string(text, len)).c_str(), "", __FILE__, __LINE__));
}

int to_int(std::size_t n, const char* call) {
  if (n > static_cast<std::size_t>(INT_MAX))
    throw CommError(std::string(call) + ": " + std::to_string(n) +
                    " bytes in one message, more than MPI's int count allows (2^31 - 1)");
  return static_cast<int>(n);
}

MPI_Request to_mpi(const Request& r) {
  MPI_Request m;
  std::memcpy(&m, &r.handle, sizeof m);
  return m;
}

Request from_mpi(MPI_Request m) {
  static_assert(sizeof(MPI_Request) <= sizeof(std::uint64_t));
  Request r;
  std::memcpy(&r.handle, &m, sizeof m);
  r.active = true;
  return r;
}

MPI_Op to_mpi(ReduceOp op) { return op == ReduceOp::Sum ? MPI_SUM : MPI_MAX; }

void finalize_at_exit() {
  int finalized = 0;
  MPI_Finalized(&finalized);
  if (!finalized) MPI_Finalize();
}

class MpiComm final : public Comm {
 public:
  MpiComm() {
    check(MPI_Comm_dup(MPI_COMM_WORLD, &m_comm), "MPI_Comm_dup");
    check(MPI_Comm_set_errhandler(m_comm, MPI_ERRORS_RETURN), "MPI_Comm_set_errhandler");
    check(MPI_Comm_rank(m_comm, &m_rank), "MPI_Comm_rank");
    check(MPI_Comm_size(m_comm, &m_size), "MPI_Comm_size");
  }
  ~MpiComm() override {
    int finalized = 0;
    MPI_Finalized(&finalized);
    if (!finalized) MPI_Comm_free(&m_comm);
  }
  MpiComm(const MpiComm&) = delete;
  MpiComm& operator=(const MpiComm&) = delete;

  int rank() const override { return m_rank; }
  int size() const override { return m_size; }
  kernels::Device memory_device() const override { return kernels::Device::Cpu; }
  void barrier() override { check(MPI_Barrier(m_comm), "MPI_Barrier"); }
  void broadcast(void* data, std::size_t bytes, int root) override {
    check(MPI_Bcast(data, to_int(bytes, "MPI_Bcast"), MPI_BYTE, root, m_comm), "MPI_Bcast");
  }
  void allreduce(kernels::Span<double> d, ReduceOp op) override {
    reduce(d.data, d.size, MPI_DOUBLE, op);
  }
  void allreduce(kernels::Span<float> d, ReduceOp op) override {
    reduce(d.data, d.size, MPI_FLOAT, op);
  }
  void allreduce(kernels::Span<std::int64_t> d, ReduceOp op) override {
    reduce(d.data, d.size, MPI_INT64_T, op);
  }

  std::vector<std::byte> allgatherv(const void* data, std::size_t bytes,
                                    std::vector<std::size_t>& counts) override {
    std::vector<std::int64_t> all(static_cast<std::size_t>(m_size));
    auto mine = static_cast<std::int64_t>(bytes);
    check(MPI_Allgather(&mine, 1, MPI_INT64_T, all.data(), 1, MPI_INT64_T, m_comm),
          "MPI_Allgather");
    counts.assign(all.begin(), all.end());
    std::vector<int> c, displs;
    counts_and_displacements(counts, c, displs, "MPI_Allgatherv");
    std::vector<std::byte> out(std::accumulate(counts.begin(), counts.end(), std::size_t{0}));
    check(MPI_Allgatherv(data, to_int(bytes, "MPI_Allgatherv"), MPI_BYTE, out.data(), c.data(),
                         displs.data(), MPI_BYTE, m_comm),
          "MPI_Allgatherv");
    return out;
  }

  void alltoallv(const void* send, const std::vector<std::size_t>& send_counts, void* recv,
                 const std::vector<std::size_t>& recv_counts) override {
    HALO_EXPECTS(send_counts.size() == static_cast<std::size_t>(m_size) &&
                     recv_counts.size() == static_cast<std::size_t>(m_size),
                 "alltoallv: one count per rank expected");
    std::vector<int> sc, sd, rc, rd;
    counts_and_displacements(send_counts, sc, sd, "MPI_Alltoallv");
    counts_and_displacements(recv_counts, rc, rd, "MPI_Alltoallv");
    check(MPI_Alltoallv(send, sc.data(), sd.data(), MPI_BYTE, recv, rc.data(), rd.data(), MPI_BYTE,
                        m_comm),
          "MPI_Alltoallv");
  }

  std::vector<std::int64_t> alltoall(const std::vector<std::int64_t>& send) override {
    HALO_EXPECTS(send.size() == static_cast<std::size_t>(m_size),
                 "alltoall: one value per rank expected");
    std::vector<std::int64_t> recv(send.size());
    check(MPI_Alltoall(send.data(), 1, MPI_INT64_T, recv.data(), 1, MPI_INT64_T, m_comm),
          "MPI_Alltoall");
    return recv;
  }

  Request isend(const void* data, std::size_t bytes, int peer, int tag) override {
    MPI_Request r;
    check(MPI_Isend(data, to_int(bytes, "MPI_Isend"), MPI_BYTE, peer, tag, m_comm, &r),
          "MPI_Isend");
    return from_mpi(r);
  }
  Request irecv(void* data, std::size_t bytes, int peer, int tag) override {
    MPI_Request r;
    check(MPI_Irecv(data, to_int(bytes, "MPI_Irecv"), MPI_BYTE, peer, tag, m_comm, &r),
          "MPI_Irecv");
    return from_mpi(r);
  }
  void wait_all(std::vector<Request>& requests) override {
    std::vector<MPI_Request> m = pending(requests);
    if (!m.empty())
      check(MPI_Waitall(static_cast<int>(m.size()), m.data(), MPI_STATUSES_IGNORE), "MPI_Waitall");
    for (Request& r : requests) r.active = false;
  }
  bool test_all(std::vector<Request>& requests) override {
    std::vector<MPI_Request> m = pending(requests);
    int done = 1;
    if (!m.empty())
      check(MPI_Testall(static_cast<int>(m.size()), m.data(), &done, MPI_STATUSES_IGNORE),
            "MPI_Testall");
    if (!done) return false;
    for (Request& r : requests) r.active = false;
    return true;
  }

 private:
  void reduce(void* data, std::int64_t n, MPI_Datatype type, ReduceOp op) {
    check(MPI_Allreduce(MPI_IN_PLACE, data, to_int(static_cast<std::size_t>(n), "MPI_Allreduce"),
                        type, to_mpi(op), m_comm),
          "MPI_Allreduce");
  }
  static void counts_and_displacements(const std::vector<std::size_t>& counts, std::vector<int>& c,
                                       std::vector<int>& d, const char* call) {
    std::size_t offset = 0;
    for (const std::size_t n : counts) {
      c.push_back(to_int(n, call));
      d.push_back(to_int(offset, call));
      offset += n;
    }
  }
  // MPI_Testall needs the requests in one array; a completed MPI request becomes
  // MPI_REQUEST_NULL, which is how the handles are kept between calls.
  static std::vector<MPI_Request> pending(std::vector<Request>& requests) {
    std::vector<MPI_Request> m;
    m.reserve(requests.size());
    for (const Request& r : requests) m.push_back(r.active ? to_mpi(r) : MPI_REQUEST_NULL);
    return m;
  }

  MPI_Comm m_comm = MPI_COMM_NULL;
  int m_rank = 0;
  int m_size = 1;
};

}  // namespace

std::unique_ptr<Comm> make_world_comm() {
  int initialized = 0;
  MPI_Initialized(&initialized);
  if (!initialized) {
    int provided = 0;
    check(MPI_Init_thread(nullptr, nullptr, MPI_THREAD_FUNNELED, &provided), "MPI_Init_thread");
    if (provided < MPI_THREAD_FUNNELED)
      throw CommError("MPI_Init_thread: this MPI provides thread level " +
                      std::to_string(provided) + ", below MPI_THREAD_FUNNELED");
    std::atexit(finalize_at_exit);
  }
  return std::make_unique<MpiComm>();
}

void abort_world(int exit_code) {
  int initialized = 0, finalized = 0;
  MPI_Initialized(&initialized);
  MPI_Finalized(&finalized);
  if (!initialized || finalized) return;
  int size = 1;
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  if (size <= 1) return;
  // The launcher forwards this rank's stderr asynchronously and tears the job down as soon as
  // the abort arrives: give it a moment to pass on the message just printed (without the pause
  // the failing rank's message was lost in about 1 run of 20).
  std::this_thread::sleep_for(std::chrono::milliseconds(250));
  MPI_Abort(MPI_COMM_WORLD, exit_code);
}

}  // namespace halo::runtime
