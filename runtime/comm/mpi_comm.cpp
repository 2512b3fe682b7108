// MpiComm: the Comm interface on MPI (MPICH), with errors returned as halo::CommError.
#include <algorithm>
#include <atomic>
#include <chrono>
#include <climits>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mpi.h>
#include <numeric>
#include <string>
#include <thread>
#include <vector>

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

using Clock = std::chrono::steady_clock;

/// The stall watchdog (MpiOptions::stall_timeout_s): one thread per process sends every other
/// rank a heartbeat on a communicator of its own and notes when each rank's last one arrived.
/// A rank waiting in a collective or an exchange longer than the timeout looks at those notes:
/// a rank not heard from for that long is stopped or hung (a rank busy with a long step still
/// beats, from this thread), so the waiting rank stops with an error naming it rather than
/// wait forever on a full core. Heartbeats cost one 8-byte message per peer per interval.
class Heartbeat {
 public:
  Heartbeat(double timeout_s) : m_timeout_s(timeout_s) {
    check(MPI_Comm_dup(MPI_COMM_WORLD, &m_comm), "MPI_Comm_dup");
    check(MPI_Comm_rank(m_comm, &m_rank), "MPI_Comm_rank");
    check(MPI_Comm_size(m_comm, &m_size), "MPI_Comm_size");
    m_last = std::vector<std::atomic<std::int64_t>>(static_cast<std::size_t>(m_size));
    for (auto& t : m_last) t = now_ns();
    m_sends.assign(static_cast<std::size_t>(m_size), MPI_REQUEST_NULL);
    m_sent.assign(static_cast<std::size_t>(m_size), 0);
    m_received.assign(static_cast<std::size_t>(m_size), 0);
    m_thread = std::thread([this] { run(); });
  }
  ~Heartbeat() {  // after MPI_Finalize (a static's destructor): no MPI call here
    m_stop = true;
    if (m_thread.joinable()) m_thread.join();
  }
  Heartbeat(const Heartbeat&) = delete;
  Heartbeat& operator=(const Heartbeat&) = delete;

  /// At exit, on every rank (before MPI_Finalize): stops the thread, then receives every
  /// heartbeat still on its way, so none is left unmatched (UCX warns of each at finalize).
  /// The ranks tell each other how many they sent; every rank is alive here (an error ends the
  /// job through MPI_Abort, which runs no exit handlers).
  void stop() {
    if (!m_thread.joinable()) return;
    m_stop = true;
    m_thread.join();
    std::vector<std::int64_t> incoming(static_cast<std::size_t>(m_size));
    MPI_Alltoall(m_sent.data(), 1, MPI_INT64_T, incoming.data(), 1, MPI_INT64_T, m_comm);
    for (int j = 0; j < m_size; ++j) {
      for (auto& n = m_received[static_cast<std::size_t>(j)];
           n < incoming[static_cast<std::size_t>(j)]; ++n) {
        std::int64_t in = 0;
        MPI_Recv(&in, 1, MPI_INT64_T, j, kTag, m_comm, MPI_STATUS_IGNORE);
      }
    }
    MPI_Waitall(m_size, m_sends.data(), MPI_STATUSES_IGNORE);
  }

  double timeout_s() const { return m_timeout_s; }

  /// Called while this rank has waited `waited_s` in `call`: an error naming every rank not
  /// heard from within the timeout, if any.
  void check_peers(double waited_s, const char* call) const {
    const std::int64_t now = now_ns();
    std::string silent;
    double longest = 0;
    for (int j = 0; j < m_size; ++j) {
      if (j == m_rank) continue;
      const double age = static_cast<double>(now - m_last[static_cast<std::size_t>(j)]) * 1e-9;
      if (age <= m_timeout_s) continue;
      silent += (silent.empty() ? "" : ", ") + std::to_string(j);
      longest = std::max(longest, age);
    }
    if (silent.empty()) return;
    char text[96];
    std::snprintf(text, sizeof text, " (%.0f s without a heartbeat; waited %.0f s in ", longest,
                  waited_s);
    throw CommError("stall: rank " + silent + " did not arrive" + text + call +
                    ", --stall-timeout " + std::to_string(static_cast<long long>(m_timeout_s)) +
                    " s): it is stopped or hung; ending the job");
  }

 private:
  static std::int64_t now_ns() {
    return std::chrono::duration_cast<std::chrono::nanoseconds>(Clock::now().time_since_epoch())
        .count();
  }
  void run() {
    // A beat at least 4 times within the timeout, at most 10 a second.
    const auto interval = std::chrono::duration<double>(std::clamp(m_timeout_s / 4, 0.1, 1.0));
    std::int64_t beat = 0;
    while (!m_stop) {
      ++beat;
      for (int j = 0; j < m_size; ++j) {
        if (j == m_rank) continue;
        MPI_Request& r = m_sends[static_cast<std::size_t>(j)];
        int done = 1;
        if (r != MPI_REQUEST_NULL) MPI_Test(&r, &done, MPI_STATUS_IGNORE);
        if (!done) continue;
        MPI_Isend(&m_beat_out, 1, MPI_INT64_T, j, kTag, m_comm, &r);
        ++m_sent[static_cast<std::size_t>(j)];
      }
      for (;;) {
        int flag = 0;
        MPI_Status status;
        MPI_Iprobe(MPI_ANY_SOURCE, kTag, m_comm, &flag, &status);
        if (!flag) break;
        std::int64_t in = 0;
        MPI_Recv(&in, 1, MPI_INT64_T, status.MPI_SOURCE, kTag, m_comm, MPI_STATUS_IGNORE);
        m_last[static_cast<std::size_t>(status.MPI_SOURCE)] = now_ns();
        ++m_received[static_cast<std::size_t>(status.MPI_SOURCE)];
      }
      std::this_thread::sleep_for(interval);
    }
  }

  static constexpr int kTag = 31999;
  double m_timeout_s;
  MPI_Comm m_comm = MPI_COMM_NULL;
  int m_rank = 0, m_size = 1;
  std::vector<std::atomic<std::int64_t>> m_last;  // ns of each rank's last heartbeat
  std::vector<MPI_Request> m_sends;
  std::vector<std::int64_t> m_sent, m_received;  // heartbeats per peer (the thread's, then stop's)
  const std::int64_t m_beat_out = 1;  // what a heartbeat carries (its arrival is the news)
  std::atomic<bool> m_stop{false};
  std::thread m_thread;
};

/// The process's watchdog, when make_world_comm started one.
std::unique_ptr<Heartbeat> g_heartbeat;

void stop_heartbeat_at_exit() {
  if (g_heartbeat) g_heartbeat->stop();
}

/// Completes `n` requests, testing them and yielding the core between tests; with the stall
/// watchdog on, an error naming the silent ranks once it has waited longer than the timeout.
void complete(int n, MPI_Request* requests, const char* call) {
  // The clock only where the watchdog reads it: every collective and exchange passes here.
  const Clock::time_point start = g_heartbeat ? Clock::now() : Clock::time_point{};
  for (int done = 0;;) {
    check(MPI_Testall(n, requests, &done, MPI_STATUSES_IGNORE), call);
    if (done) return;
    if (g_heartbeat) {
      const double waited = std::chrono::duration<double>(Clock::now() - start).count();
      if (waited > g_heartbeat->timeout_s()) g_heartbeat->check_peers(waited, call);
    }
    std::this_thread::yield();
  }
}

/// Completes one request so.
void complete(MPI_Request request, const char* call) { complete(1, &request, call); }

void finalize_at_exit() {
  int finalized = 0;
  MPI_Finalized(&finalized);
  if (!finalized) MPI_Finalize();
}

/// `bytes` bytes as MPI sees them: `count` elements of `type`. Up to the limit that is bytes x
/// MPI_BYTE; above it, one element of a derived type (q chunks of `limit` bytes, then the
/// remainder), which MPI's int counts can describe whatever the size. The type is freed when
/// the object dies; MPI keeps it alive for the operations already started with it.
class Bytes {
 public:
  Bytes(std::size_t bytes, std::size_t limit) {
    if (bytes <= limit) {
      m_count = static_cast<int>(bytes);
      return;
    }
    const std::size_t q = bytes / limit, r = bytes % limit;
    if (q > static_cast<std::size_t>(INT_MAX))
      throw CommError("message of " + std::to_string(bytes) + " bytes: too large for MPI");
    MPI_Datatype chunk = MPI_DATATYPE_NULL;
    check(MPI_Type_contiguous(static_cast<int>(limit), MPI_BYTE, &chunk), "MPI_Type_contiguous");
    int lengths[2] = {static_cast<int>(q), static_cast<int>(r)};
    MPI_Aint displacements[2] = {0, static_cast<MPI_Aint>(q * limit)};
    MPI_Datatype types[2] = {chunk, MPI_BYTE};
    check(MPI_Type_create_struct(r > 0 ? 2 : 1, lengths, displacements, types, &m_type),
          "MPI_Type_create_struct");
    check(MPI_Type_commit(&m_type), "MPI_Type_commit");
    MPI_Type_free(&chunk);
    m_count = 1;
  }
  ~Bytes() {
    if (m_type != MPI_BYTE) MPI_Type_free(&m_type);
  }
  Bytes(const Bytes&) = delete;
  Bytes& operator=(const Bytes&) = delete;
  int count() const { return m_count; }
  MPI_Datatype type() const { return m_type; }

 private:
  int m_count = 0;
  MPI_Datatype m_type = MPI_BYTE;
};

class MpiComm final : public Comm {
 public:
  MpiComm(MPI_Comm parent, std::size_t max_message_bytes) : m_limit(max_message_bytes) {
    HALO_EXPECTS(m_limit >= 8 && m_limit <= static_cast<std::size_t>(INT_MAX),
                 "MpiComm: max_message_bytes must be in [8, 2^31 - 1]");
    check(MPI_Comm_dup(parent, &m_comm), "MPI_Comm_dup");
    check(MPI_Comm_set_errhandler(m_comm, MPI_ERRORS_RETURN), "MPI_Comm_set_errhandler");
    check(MPI_Comm_rank(m_comm, &m_rank), "MPI_Comm_rank");
    check(MPI_Comm_size(m_comm, &m_size), "MPI_Comm_size");
    const auto p = static_cast<std::size_t>(m_size);
    for (auto* v : {&m_sc, &m_sd, &m_rc, &m_rd}) v->resize(p);
    m_peer_requests.reserve(2 * p);
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
  void barrier() override {
    MPI_Request r;
    check(MPI_Ibarrier(m_comm, &r), "MPI_Barrier");
    complete(r, "MPI_Barrier");
  }
  void broadcast(void* data, std::size_t bytes, int root) override {
    const Bytes b(bytes, m_limit);
    MPI_Request r;
    check(MPI_Ibcast(data, b.count(), b.type(), root, m_comm, &r), "MPI_Bcast");
    complete(r, "MPI_Bcast");
  }
  void allreduce(kernels::Span<double> d, ReduceOp op) override {
    reduce(d.data, d.size, sizeof(double), MPI_DOUBLE, op);
  }
  void allreduce(kernels::Span<float> d, ReduceOp op) override {
    reduce(d.data, d.size, sizeof(float), MPI_FLOAT, op);
  }
  void allreduce(kernels::Span<std::int64_t> d, ReduceOp op) override {
    reduce(d.data, d.size, sizeof(std::int64_t), MPI_INT64_T, op);
  }

  std::vector<std::byte> allgatherv(const void* data, std::size_t bytes,
                                    std::vector<std::size_t>& counts) override {
    std::vector<std::int64_t> all(static_cast<std::size_t>(m_size));
    auto mine = static_cast<std::int64_t>(bytes);
    MPI_Request r;
    check(MPI_Iallgather(&mine, 1, MPI_INT64_T, all.data(), 1, MPI_INT64_T, m_comm, &r),
          "MPI_Allgather");
    complete(r, "MPI_Allgather");
    counts.assign(all.begin(), all.end());
    std::vector<std::byte> out(std::accumulate(counts.begin(), counts.end(), std::size_t{0}));
    if (fits(counts)) {
      displacements(counts, m_rc, m_rd);
      check(MPI_Iallgatherv(data, static_cast<int>(bytes), MPI_BYTE, out.data(), m_rc.data(),
                            m_rd.data(), MPI_BYTE, m_comm, &r),
            "MPI_Allgatherv");
      complete(r, "MPI_Allgatherv");
      return out;
    }
    // Past MPI's int counts: every rank's block from its owner, point to point.
    std::size_t at = 0;
    m_peer_requests.clear();
    for (int j = 0; j < m_size; ++j) {
      post_recv(out.data() + at, counts[static_cast<std::size_t>(j)], j);
      at += counts[static_cast<std::size_t>(j)];
    }
    for (int j = 0; j < m_size; ++j) post_send(data, bytes, j);
    finish_peers("MPI_Allgatherv");
    return out;
  }

  void alltoallv(const void* send, const std::vector<std::size_t>& send_counts, void* recv,
                 const std::vector<std::size_t>& recv_counts) override {
    HALO_EXPECTS(send_counts.size() == static_cast<std::size_t>(m_size) &&
                     recv_counts.size() == static_cast<std::size_t>(m_size),
                 "alltoallv: one count per rank expected");
    if (fits(send_counts) && fits(recv_counts)) {
      displacements(send_counts, m_sc, m_sd);
      displacements(recv_counts, m_rc, m_rd);
      MPI_Request r;
      check(MPI_Ialltoallv(send, m_sc.data(), m_sd.data(), MPI_BYTE, recv, m_rc.data(), m_rd.data(),
                           MPI_BYTE, m_comm, &r),
            "MPI_Alltoallv");
      complete(r, "MPI_Alltoallv");
      return;
    }
    // Past MPI's int counts or displacements: one message per pair, of any size.
    m_peer_requests.clear();
    std::size_t at = 0;
    for (int j = 0; j < m_size; ++j) {
      post_recv(static_cast<std::byte*>(recv) + at, recv_counts[static_cast<std::size_t>(j)], j);
      at += recv_counts[static_cast<std::size_t>(j)];
    }
    at = 0;
    for (int j = 0; j < m_size; ++j) {
      post_send(static_cast<const std::byte*>(send) + at, send_counts[static_cast<std::size_t>(j)],
                j);
      at += send_counts[static_cast<std::size_t>(j)];
    }
    finish_peers("MPI_Alltoallv");
  }

  void alltoall(kernels::Span<const std::int64_t> send, kernels::Span<std::int64_t> recv) override {
    HALO_EXPECTS(send.size == m_size && recv.size == m_size,
                 "alltoall: one value per rank expected");
    MPI_Request r;
    check(MPI_Ialltoall(send.data, 1, MPI_INT64_T, recv.data, 1, MPI_INT64_T, m_comm, &r),
          "MPI_Alltoall");
    complete(r, "MPI_Alltoall");
  }
  using Comm::alltoall;

  std::unique_ptr<Comm> duplicate() override { return std::make_unique<MpiComm>(m_comm, m_limit); }
  bool concurrent_duplicates() const override {
    int level = MPI_THREAD_SINGLE;
    MPI_Query_thread(&level);
    return level == MPI_THREAD_MULTIPLE;
  }

  Request isend(const void* data, std::size_t bytes, int peer, int tag) override {
    const Bytes b(bytes, m_limit);
    MPI_Request r;
    check(MPI_Isend(data, b.count(), b.type(), peer, tag, m_comm, &r), "MPI_Isend");
    return from_mpi(r);
  }
  Request irecv(void* data, std::size_t bytes, int peer, int tag) override {
    const Bytes b(bytes, m_limit);
    MPI_Request r;
    check(MPI_Irecv(data, b.count(), b.type(), peer, tag, m_comm, &r), "MPI_Irecv");
    return from_mpi(r);
  }
  void wait_all(std::vector<Request>& requests) override {
    pending(requests);
    if (!m_pending.empty())
      complete(static_cast<int>(m_pending.size()), m_pending.data(), "MPI_Waitall");
    for (Request& r : requests) r.active = false;
  }
  bool test_all(std::vector<Request>& requests) override {
    pending(requests);
    int done = 1;
    if (!m_pending.empty())
      check(MPI_Testall(static_cast<int>(m_pending.size()), m_pending.data(), &done,
                        MPI_STATUSES_IGNORE),
            "MPI_Testall");
    if (!done) {
      // MPI_Testall leaves the requests unchanged when not all have completed.
      return false;
    }
    for (Request& r : requests) r.active = false;
    return true;
  }

 private:
  /// All-reduce in pieces of at most m_limit bytes (MPI counts elements in an int).
  void reduce(void* data, std::int64_t n, std::size_t size, MPI_Datatype type, ReduceOp op) {
    const auto per_piece = static_cast<std::int64_t>(m_limit / size);
    auto* p = static_cast<std::byte*>(data);
    for (std::int64_t done = 0; done < n;) {
      const std::int64_t k = std::min(per_piece, n - done);
      MPI_Request r;
      check(MPI_Iallreduce(MPI_IN_PLACE, p + done * static_cast<std::int64_t>(size),
                           static_cast<int>(k), type, to_mpi(op), m_comm, &r),
            "MPI_Allreduce");
      complete(r, "MPI_Allreduce");
      done += k;
    }
  }
  /// Whether every count and displacement fits MPI_BYTE x int within the limit.
  bool fits(const std::vector<std::size_t>& counts) const {
    std::size_t offset = 0;
    for (const std::size_t n : counts) {
      if (n > m_limit || offset > m_limit) return false;
      offset += n;
    }
    return offset <= m_limit;
  }
  static void displacements(const std::vector<std::size_t>& counts, std::vector<int>& c,
                            std::vector<int>& d) {
    std::size_t offset = 0;
    for (std::size_t j = 0; j < counts.size(); ++j) {
      c[j] = static_cast<int>(counts[j]);
      d[j] = static_cast<int>(offset);
      offset += counts[j];
    }
  }
  /// One transfer of the point-to-point fallback of a collective, its request kept.
  void post(bool send, const void* data, std::size_t bytes, int peer) {
    if (bytes == 0) return;
    const Bytes b(bytes, m_limit);
    m_peer_requests.emplace_back();
    MPI_Request* r = &m_peer_requests.back();
    if (send)
      check(MPI_Isend(data, b.count(), b.type(), peer, kCollectiveTag, m_comm, r), "MPI_Isend");
    else
      check(
          MPI_Irecv(const_cast<void*>(data), b.count(), b.type(), peer, kCollectiveTag, m_comm, r),
          "MPI_Irecv");
  }
  void post_recv(void* data, std::size_t bytes, int peer) { post(false, data, bytes, peer); }
  void post_send(const void* data, std::size_t bytes, int peer) { post(true, data, bytes, peer); }
  void finish_peers(const char* call) {
    if (!m_peer_requests.empty())
      complete(static_cast<int>(m_peer_requests.size()), m_peer_requests.data(), call);
    m_peer_requests.clear();
  }
  // MPI_Testall needs the requests in one array; a completed MPI request becomes
  // MPI_REQUEST_NULL, which is how the handles are kept between calls. The array is a member,
  // so waiting allocates only when a call has more requests than any before.
  void pending(const std::vector<Request>& requests) {
    m_pending.clear();
    for (const Request& r : requests) m_pending.push_back(r.active ? to_mpi(r) : MPI_REQUEST_NULL);
  }

  /// The tag of the point-to-point fallback of the collectives: user tags are small, and a
  /// collective's messages cannot meet a user's (receives name their tag).
  static constexpr int kCollectiveTag = 32000;

  MPI_Comm m_comm = MPI_COMM_NULL;
  int m_rank = 0;
  int m_size = 1;
  std::size_t m_limit;
  std::vector<int> m_sc, m_sd, m_rc, m_rd;  // counts and displacements, one per rank
  std::vector<MPI_Request> m_pending, m_peer_requests;
};

}  // namespace

std::unique_ptr<Comm> make_world_comm(const MpiOptions& options) {
  int initialized = 0;
  MPI_Initialized(&initialized);
  if (!initialized) {
    // MULTIPLE lets a duplicate serve the mini-batch producer thread beside the training
    // thread; with less, Comm::concurrent_duplicates() says no and the trainer prepares
    // batches on its own thread.
    int provided = 0;
    check(MPI_Init_thread(nullptr, nullptr, MPI_THREAD_MULTIPLE, &provided), "MPI_Init_thread");
    if (provided < MPI_THREAD_FUNNELED)
      throw CommError("MPI_Init_thread: this MPI provides thread level " +
                      std::to_string(provided) + ", below MPI_THREAD_FUNNELED");
    std::atexit(finalize_at_exit);
  }
  HALO_EXPECTS(options.stall_timeout_s >= 0, "make_world_comm: stall_timeout_s must be >= 0");
  int size = 1;
  check(MPI_Comm_size(MPI_COMM_WORLD, &size), "MPI_Comm_size");
  int level = MPI_THREAD_SINGLE;
  MPI_Query_thread(&level);
  if (options.stall_timeout_s > 0 && size > 1 && !g_heartbeat && level == MPI_THREAD_MULTIPLE) {
    g_heartbeat = std::make_unique<Heartbeat>(options.stall_timeout_s);
    std::atexit(stop_heartbeat_at_exit);  // runs before finalize_at_exit, registered earlier
  }
  return std::make_unique<MpiComm>(MPI_COMM_WORLD, options.max_message_bytes);
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
