#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <mutex>
#include <nlohmann/json.hpp>
#include <string_view>
#include <vector>

#include <halo/kernels/atomic_file.hpp>
#include <halo/kernels/error.hpp>
#include <halo/kernels/log.hpp>
#include <halo/partition/formats/partition_format.hpp>
#include <halo/runtime/engine/checkpoint.hpp>

namespace halo::runtime {

namespace fs = std::filesystem;

namespace {

constexpr char kShardMagic[8] = {'H', 'A', 'L', 'O', 'C', 'K', 'P', 'T'};
constexpr std::size_t kShardHeaderBytes = 32;

// ---- bytes -------------------------------------------------------------------------------------

class Writer {
 public:
  template <class T>
  void put(T v) {
    static_assert(std::is_trivially_copyable_v<T>);
    const auto* p = reinterpret_cast<const char*>(&v);
    m_bytes.append(p, sizeof v);
  }
  void put_bytes(const void* data, std::size_t n) {
    if (n > 0) m_bytes.append(static_cast<const char*>(data), n);
  }
  std::string& bytes() { return m_bytes; }

 private:
  std::string m_bytes;
};

/// Reads what Writer wrote; every overrun is an IoError naming the file ("truncated").
class Reader {
 public:
  Reader(std::string_view bytes, const fs::path& file) : m_bytes(bytes), m_file(file) {}
  template <class T>
  T get() {
    T v;
    std::memcpy(&v, take(sizeof v), sizeof v);
    return v;
  }
  const char* take(std::size_t n) {
    if (n > m_bytes.size() - m_at) throw IoError(m_file.string() + ": truncated");
    const char* p = m_bytes.data() + m_at;
    m_at += n;
    return p;
  }
  bool done() const { return m_at == m_bytes.size(); }

 private:
  std::string_view m_bytes;
  fs::path m_file;
  std::size_t m_at = 0;
};

/// Calls f on every numeric field of `s` (int, std::int64_t or double): the order the shard
/// stores (its metrics and stage times follow, put_metrics).
template <class S, class F>
void for_each_field(S& s, F&& f) {
  f(s.epoch), f(s.epochs), f(s.train_loss), f(s.epoch_time_s), f(s.exchange_bytes),
      f(s.exchange_time_s), f(s.exchange_exposed_s), f(s.exchange_window_s), f(s.allreduce_time_s),
      f(s.sampling_bytes), f(s.feature_bytes), f(s.remote_rows), f(s.cache_hits), f(s.fetch_time_s),
      f(s.batch_wait_s), f(s.host_syncs), f(s.disk_rows), f(s.disk_hits), f(s.disk_bytes),
      f(s.disk_read_s);
}

/// Named values as a count, then (name length, name, value) each.
void put_metrics(Writer& w, const Metrics& m) {
  w.put<std::int64_t>(static_cast<std::int64_t>(m.entries().size()));
  for (const auto& [name, value] : m) {
    w.put<std::uint32_t>(static_cast<std::uint32_t>(name.size()));
    w.put_bytes(name.data(), name.size());
    w.put<double>(value);
  }
}

Metrics get_metrics(Reader& in, const std::string& file) {
  const auto n = in.get<std::int64_t>();
  if (n < 0 || n > 4096) throw IoError(file + ": impossible metric count");
  Metrics m;
  for (std::int64_t i = 0; i < n; ++i) {
    const auto len = in.get<std::uint32_t>();
    std::string name(in.take(len), len);
    m.set(name, in.get<double>());
  }
  return m;
}

// ---- shards ------------------------------------------------------------------------------------

std::string encode_shard(const TrainState& st, int rank, int world_size) {
  Writer body;
  body.put<std::int64_t>(st.epoch);
  body.put<std::int64_t>(st.step);
  body.put<double>(st.loss_sum);
  body.put<std::int64_t>(st.loss_rows);
  body.put<double>(st.allreduce_s);
  body.put<std::int64_t>(static_cast<std::int64_t>(st.counters.size()));
  for (const auto& [name, value] : st.counters) {
    body.put<std::uint32_t>(static_cast<std::uint32_t>(name.size()));
    body.put_bytes(name.data(), name.size());
    body.put<std::int64_t>(value);
  }
  const TrainResult& r = st.result;
  body.put<std::int64_t>(r.best_epoch);
  put_metrics(body, r.metrics);
  body.put<double>(r.final_train_loss);
  body.put<std::int64_t>(static_cast<std::int64_t>(r.history.size()));
  for (const EpochStats& s : r.history) {
    for_each_field(s, [&](const auto& v) {
      if constexpr (std::is_floating_point_v<std::decay_t<decltype(v)>>)
        body.put<double>(v);
      else
        body.put<std::int64_t>(v);
    });
    put_metrics(body, s.metrics);
    put_metrics(body, s.stage_times);
    body.put<std::int64_t>(static_cast<std::int64_t>(s.sampled_edges.size()));
    for (const std::int64_t e : s.sampled_edges) body.put<std::int64_t>(e);
  }
  body.put<std::int64_t>(static_cast<std::int64_t>(st.arrays.size()));
  for (const TrainState::Array& a : st.arrays) {
    HALO_EXPECTS(static_cast<std::int64_t>(a.values.size()) == a.rows * a.cols,
                 "checkpoint: array '" + a.name + "' does not match its shape");
    body.put<std::uint32_t>(static_cast<std::uint32_t>(a.name.size()));
    body.put_bytes(a.name.data(), a.name.size());
    body.put<std::int64_t>(a.rows);
    body.put<std::int64_t>(a.cols);
    body.put_bytes(a.values.data(), a.values.size() * sizeof(float));
  }
  Writer out;
  out.put_bytes(kShardMagic, sizeof kShardMagic);
  out.put<std::uint32_t>(kCheckpointVersion);
  out.put<std::uint32_t>(static_cast<std::uint32_t>(rank));
  out.put<std::uint32_t>(static_cast<std::uint32_t>(world_size));
  out.put<std::uint32_t>(0);
  out.put<std::uint64_t>(body.bytes().size());
  out.put_bytes(body.bytes().data(), body.bytes().size());
  out.put<std::uint64_t>(partition::fnv1a64(out.bytes().data(), out.bytes().size()));
  return std::move(out.bytes());
}

TrainState decode_shard(std::string_view bytes, const fs::path& file, int rank, int world_size) {
  const std::string name = file.string();
  if (bytes.size() < kShardHeaderBytes + 8) throw IoError(name + ": truncated");
  std::uint64_t stored = 0;
  std::memcpy(&stored, bytes.data() + bytes.size() - 8, 8);
  if (partition::fnv1a64(bytes.data(), bytes.size() - 8) != stored)
    throw IoError(name + ": checksum mismatch (the shard is damaged)");
  Reader in(bytes.substr(0, bytes.size() - 8), file);
  if (std::memcmp(in.take(8), kShardMagic, 8) != 0)
    throw IoError(name + ": not a Halo checkpoint shard");
  const auto version = in.get<std::uint32_t>();
  if (version != kCheckpointVersion)
    throw IoError(name + ": checkpoint format version " + std::to_string(version) +
                  ", this Halo reads version " + std::to_string(kCheckpointVersion));
  const auto r = in.get<std::uint32_t>(), p = in.get<std::uint32_t>();
  if (static_cast<int>(r) != rank || static_cast<int>(p) != world_size)
    throw IoError(name + ": shard of rank " + std::to_string(r) + " of " + std::to_string(p) +
                  ", expected rank " + std::to_string(rank) + " of " + std::to_string(world_size));
  (void)in.get<std::uint32_t>();
  if (in.get<std::uint64_t>() != bytes.size() - 8 - kShardHeaderBytes)
    throw IoError(name + ": the body size does not match the file size");
  TrainState st;
  st.epoch = static_cast<int>(in.get<std::int64_t>());
  st.step = in.get<std::int64_t>();
  st.loss_sum = in.get<double>();
  st.loss_rows = in.get<std::int64_t>();
  st.allreduce_s = in.get<double>();
  const auto counters = in.get<std::int64_t>();
  if (counters < 0 || counters > 4096) throw IoError(name + ": impossible counter count");
  for (std::int64_t i = 0; i < counters; ++i) {
    const auto n = in.get<std::uint32_t>();
    std::string key(in.take(n), n);
    st.counters.emplace_back(std::move(key), in.get<std::int64_t>());
  }
  TrainResult& res = st.result;
  res.best_epoch = static_cast<int>(in.get<std::int64_t>());
  res.metrics = get_metrics(in, name);
  res.final_train_loss = in.get<double>();
  const auto epochs = in.get<std::int64_t>();
  if (epochs < 0 || epochs != st.epoch) throw IoError(name + ": the history does not match");
  for (std::int64_t e = 0; e < epochs; ++e) {
    EpochStats s;
    for_each_field(s, [&](auto& v) {
      using T = std::decay_t<decltype(v)>;
      if constexpr (std::is_floating_point_v<T>)
        v = in.get<double>();
      else
        v = static_cast<T>(in.get<std::int64_t>());
    });
    s.metrics = get_metrics(in, name);
    s.stage_times = get_metrics(in, name);
    const auto relations = in.get<std::int64_t>();
    if (relations < 0 || relations > 1 << 20) throw IoError(name + ": impossible edge type count");
    for (std::int64_t i = 0; i < relations; ++i) s.sampled_edges.push_back(in.get<std::int64_t>());
    res.history.push_back(s);
  }
  const auto arrays = in.get<std::int64_t>();
  for (std::int64_t i = 0; i < arrays; ++i) {
    TrainState::Array a;
    const auto n = in.get<std::uint32_t>();
    a.name.assign(in.take(n), n);
    a.rows = in.get<std::int64_t>();
    a.cols = in.get<std::int64_t>();
    if (a.rows < 0 || a.cols < 0 || (a.cols > 0 && a.rows > (std::int64_t{1} << 40) / a.cols))
      throw IoError(name + ": array '" + a.name + "' has an impossible shape");
    a.values.resize(static_cast<std::size_t>(a.rows * a.cols));
    const char* values = in.take(a.values.size() * sizeof(float));
    if (!a.values.empty()) std::memcpy(a.values.data(), values, a.values.size() * sizeof(float));
    st.arrays.push_back(std::move(a));
  }
  if (!in.done()) throw IoError(name + ": trailing bytes");
  return st;
}

// ---- files -------------------------------------------------------------------------------------

/// The fault-injection hook (docs/checkpoints.md): HALO_CHECKPOINT_FAULT=kill:RANK:EPOCH makes
/// rank RANK SIGKILL itself after writing half of its shard's temporary file for the checkpoint
/// of epoch EPOCH. Read here only.
bool fault_kills(int rank, int epoch) {
  const char* v = std::getenv("HALO_CHECKPOINT_FAULT");
  int r = -1, e = -1;
  return v != nullptr && std::sscanf(v, "kill:%d:%d", &r, &e) == 2 && r == rank && e == epoch;
}

void write_all(int fd, const char* data, std::size_t n, const fs::path& file) {
  while (n > 0) {
    const ssize_t w = ::write(fd, data, n);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) throw IoError(file.string() + ": cannot write (" + std::strerror(errno) + ")");
    data += w;
    n -= static_cast<std::size_t>(w);
  }
}

/// `bytes` to `file` through a temporary sibling, flushed to the disk (fsync), then renamed.
void write_shard_file(const fs::path& file, const std::string& bytes, int rank, int epoch) {
  const fs::path tmp = file.string() + ".tmp-" + std::to_string(::getpid());
  const int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) throw IoError(tmp.string() + ": cannot create (" + std::strerror(errno) + ")");
  try {
    const std::size_t half = bytes.size() / 2;
    write_all(fd, bytes.data(), half, tmp);
    if (fault_kills(rank, epoch)) {
      ::fsync(fd);
      std::raise(SIGKILL);
    }
    write_all(fd, bytes.data() + half, bytes.size() - half, tmp);
    if (::fsync(fd) != 0) throw IoError(tmp.string() + ": fsync failed");
  } catch (...) {
    ::close(fd);
    std::error_code ec;
    fs::remove(tmp, ec);
    throw;
  }
  ::close(fd);
  std::error_code ec;
  fs::rename(tmp, file, ec);
  if (ec) {
    fs::remove(tmp, ec);
    throw IoError(file.string() + ": cannot rename the shard into place");
  }
}

std::string checkpoint_name(std::int64_t epoch, std::int64_t step) {
  char name[64];
  std::snprintf(name, sizeof name, "epoch-%06lld-step-%06lld", static_cast<long long>(epoch),
                static_cast<long long>(step));
  return name;
}

bool parse_checkpoint_name(const std::string& name, std::int64_t& epoch, std::int64_t& step) {
  long long e = -1, s = -1;
  int end = 0;
  if (std::sscanf(name.c_str(), "epoch-%lld-step-%lld%n", &e, &s, &end) != 2 ||
      static_cast<std::size_t>(end) != name.size() || e < 0 || s < 0 ||
      name != checkpoint_name(e, s))
    return false;
  epoch = e;
  step = s;
  return true;
}

std::string shard_name(int rank) { return "rank-" + std::to_string(rank) + ".bin"; }

/// (epoch, step) of every checkpoint directory in `dir`, newest first; with `complete`, only
/// those with a manifest.
std::vector<std::pair<std::int64_t, std::int64_t>> list_checkpoints(const fs::path& dir,
                                                                    bool complete) {
  std::vector<std::pair<std::int64_t, std::int64_t>> found;
  std::error_code ec;
  for (fs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
    std::int64_t e = 0, s = 0;
    if (!it->is_directory() || !parse_checkpoint_name(it->path().filename().string(), e, s))
      continue;
    if (complete && !fs::exists(it->path() / "manifest.json")) continue;
    found.emplace_back(e, s);
  }
  std::sort(found.rbegin(), found.rend());
  return found;
}

/// The checkpoint directories this process's resume skipped as damaged (rank 0's list): they
/// have a manifest, so only this record tells them from sound ones when pruning.
std::mutex g_damaged_mutex;
std::vector<fs::path> g_damaged;

/// Removes checkpoint directory `c`, manifest first: a removal cut short leaves an incomplete
/// directory, never a complete-looking damaged one.
void remove_checkpoint(const fs::path& c) {
  std::error_code ec;
  fs::remove(c / "manifest.json", ec);
  fs::remove_all(c, ec);
  if (ec) HALO_LOG_WARN("checkpoint: cannot remove " + c.string() + ": " + ec.message());
}

/// Rank 0 after committing `committed`: removes every checkpoint directory without a manifest
/// (a write that was interrupted), those the resume skipped as damaged, and the complete ones
/// beyond the newest `keep`; `committed` itself is always kept.
void prune(const fs::path& dir, int keep, const fs::path& committed) {
  std::vector<fs::path> damaged;
  {
    const std::lock_guard<std::mutex> lock(g_damaged_mutex);
    damaged.swap(g_damaged);
  }
  const auto is_damaged = [&](const fs::path& c) {
    return std::find(damaged.begin(), damaged.end(), c) != damaged.end();
  };
  int complete = 0;
  for (const auto& [e, s] : list_checkpoints(dir, false)) {
    const fs::path c = dir / checkpoint_name(e, s);
    if (c == committed) {
      ++complete;
      continue;
    }
    if (fs::exists(c / "manifest.json") && !is_damaged(c) && ++complete <= keep) continue;
    remove_checkpoint(c);
  }
}

std::string hex(std::uint64_t v) {
  char s[24];
  std::snprintf(s, sizeof s, "0x%016llx", static_cast<unsigned long long>(v));
  return s;
}

}  // namespace

// ---- write -------------------------------------------------------------------------------------

fs::path write_checkpoint(Comm& comm, const CheckpointConfig& config,
                          const CheckpointIdentity& identity, const TrainState& state) {
  const fs::path dir = config.dir / checkpoint_name(state.epoch, state.step);
  const int rank = comm.rank(), p = comm.size();
  // This rank's shard: (ok, bytes, checksum), or the reason it failed.
  std::int64_t mine[3] = {0, 0, 0};
  std::string error;
  try {
    std::error_code ec;
    fs::create_directories(dir, ec);
    if (!fs::is_directory(dir))
      throw IoError(dir.string() + ": cannot create the checkpoint directory" +
                    (ec ? " (" + ec.message() + ")" : ""));
    // A temporary file of this rank's that a killed writer left behind.
    const std::string stale = shard_name(rank) + ".tmp-";
    for (fs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec))
      if (it->path().filename().string().rfind(stale, 0) == 0) fs::remove(it->path(), ec);
    const std::string bytes = encode_shard(state, rank, p);
    write_shard_file(dir / shard_name(rank), bytes, rank, state.epoch);
    std::uint64_t sum = 0;
    std::memcpy(&sum, bytes.data() + bytes.size() - 8, 8);
    mine[0] = 1;
    mine[1] = static_cast<std::int64_t>(bytes.size());
    mine[2] = static_cast<std::int64_t>(sum);
  } catch (const std::exception& e) {
    error = e.what();
  }
  // Every rank confirms: its flag, size and checksum, gathered on every rank.
  std::vector<std::size_t> counts;
  const std::vector<std::byte> all = comm.allgatherv(mine, sizeof mine, counts);
  std::vector<std::int64_t> shards(static_cast<std::size_t>(3 * p));
  std::memcpy(shards.data(), all.data(), shards.size() * sizeof(std::int64_t));
  if (!error.empty()) throw IoError("checkpoint " + dir.string() + ": " + error);
  for (int r = 0; r < p; ++r)
    if (shards[static_cast<std::size_t>(3 * r)] != 1)
      throw IoError("checkpoint " + dir.string() + ": rank " + std::to_string(r) +
                    " could not write its shard; the checkpoint is not committed");
  // The commit: rank 0's manifest, then every rank learns whether it was written.
  std::int64_t committed = 1;
  if (rank == 0) {
    try {
      nlohmann::json ids = nlohmann::json::object();
      for (const auto& [k, v] : identity) ids[k] = v;
      nlohmann::json list = nlohmann::json::array();
      for (int r = 0; r < p; ++r)
        list.push_back({{"file", shard_name(r)},
                        {"bytes", shards[static_cast<std::size_t>(3 * r + 1)]},
                        {"checksum", hex(static_cast<std::uint64_t>(
                                         shards[static_cast<std::size_t>(3 * r + 2)]))}});
      const nlohmann::json m = {{"format", "halo-checkpoint"},
                                {"version", kCheckpointVersion},
                                {"halo_version", HALO_VERSION},
                                {"epoch", state.epoch},
                                {"step", state.step},
                                {"world_size", p},
                                {"identity", ids},
                                {"shards", list}};
      kernels::write_file_atomically(dir / "manifest.json", m.dump(2) + "\n");
      prune(config.dir, std::max(1, config.keep), dir);
    } catch (const std::exception& e) {
      committed = 0;
      error = e.what();
    }
  }
  comm.broadcast(&committed, sizeof committed, 0);
  if (committed != 1)
    throw IoError("checkpoint " + dir.string() + ": the manifest was not written" +
                  (error.empty() ? "" : ": " + error));
  return dir;
}

// ---- read --------------------------------------------------------------------------------------

namespace {

enum Verdict : std::int64_t { kUsable = 0, kDamaged = 1, kRefused = 2 };

/// This rank's verdict on checkpoint `dir`: kUsable with `state` filled, kDamaged (skip it) or
/// kRefused (stop with `why`).
Verdict examine(const fs::path& dir, int rank, const CheckpointIdentity& identity,
                TrainState& state, std::string& why) {
  const fs::path manifest = dir / "manifest.json";
  nlohmann::json m;
  try {
    m = nlohmann::json::parse(kernels::read_file_bytes(manifest));
    if (m.at("format") != "halo-checkpoint") throw IoError("not a Halo checkpoint manifest");
  } catch (const std::exception& e) {
    why = manifest.string() + ": unreadable (" + e.what() + ")";
    return kDamaged;
  }
  try {
    const auto version = m.at("version").get<std::uint32_t>();
    if (version != kCheckpointVersion) {
      why = manifest.string() + ": checkpoint format version " + std::to_string(version) +
            ", this Halo resumes version " + std::to_string(kCheckpointVersion) +
            " (use another --checkpoint-dir)";
      return kRefused;
    }
    const nlohmann::json& ids = m.at("identity");
    for (const auto& [k, v] : identity) {
      const std::string theirs = ids.contains(k) ? ids.at(k).get<std::string>() : "(absent)";
      if (theirs != v) {
        why = dir.string() + ": the checkpoint's " + k + " is " + theirs + ", this run's is " + v +
              " (resume with the same data, model and training flags, or use another "
              "--checkpoint-dir)";
        return kRefused;
      }
    }
    for (const auto& [k, v] : ids.items()) {
      const bool known = std::any_of(identity.begin(), identity.end(),
                                     [&, &key = k](const auto& f) { return f.first == key; });
      if (!known) {
        why = dir.string() + ": the checkpoint has " + k + " " + v.get<std::string>() +
              ", which this run does not set";
        return kRefused;
      }
    }
    // Written by W ranks: a run on W ranks reads its own shard. A run on another number (its
    // identity then has no world_size: every rank's state is the same) reads shard rank % W.
    const int written = m.at("world_size").get<int>();
    if (written < 1 || static_cast<int>(m.at("shards").size()) != written)
      throw IoError(manifest.string() + ": its world_size is not its number of shards");
    const int shard = rank % written;
    const nlohmann::json& entry = m.at("shards").at(static_cast<std::size_t>(shard));
    const fs::path file = dir / entry.at("file").get<std::string>();
    const std::string bytes = kernels::read_file_bytes(file);
    if (static_cast<std::int64_t>(bytes.size()) != entry.at("bytes").get<std::int64_t>())
      throw IoError(file.string() + ": " + std::to_string(bytes.size()) +
                    " bytes, the manifest says " + std::to_string(entry.at("bytes").get<long>()));
    state = decode_shard(bytes, file, shard, written);
    std::uint64_t sum = 0;
    std::memcpy(&sum, bytes.data() + bytes.size() - 8, 8);
    if (hex(sum) != entry.at("checksum").get<std::string>())
      throw IoError(file.string() + ": its checksum is not the manifest's");
    if (state.epoch != m.at("epoch").get<int>() || state.step != m.at("step").get<std::int64_t>())
      throw IoError(file.string() + ": the shard's epoch and step are not the manifest's");
  } catch (const std::exception& e) {
    why = e.what();
    return kDamaged;
  }
  return kUsable;
}

}  // namespace

std::optional<FoundCheckpoint> read_newest_checkpoint(Comm& comm, const fs::path& dir,
                                                      const CheckpointIdentity& identity) {
  if (dir.empty()) return std::nullopt;
  // Rank 0's listing decides the candidates, so that every rank examines the same ones.
  std::vector<std::int64_t> names;
  if (comm.rank() == 0)
    for (const auto& [e, s] : list_checkpoints(dir, true)) names.insert(names.end(), {e, s});
  std::int64_t n = static_cast<std::int64_t>(names.size());
  comm.broadcast(&n, sizeof n, 0);
  names.resize(static_cast<std::size_t>(n));
  comm.broadcast(names.data(), names.size() * sizeof(std::int64_t), 0);
  for (std::size_t i = 0; i < names.size(); i += 2) {
    const fs::path c = dir / checkpoint_name(names[i], names[i + 1]);
    FoundCheckpoint found{c, {}};
    std::string why;
    const Verdict mine = examine(c, comm.rank(), identity, found.state, why);
    std::int64_t worst = mine;
    comm.allreduce(kernels::Span<std::int64_t>(&worst, 1), ReduceOp::Max);
    if (worst == kUsable) return found;
    if (worst == kRefused)
      throw IoError(mine == kRefused ? why
                                     : c.string() + ": refused by another rank (see its message)");
    HALO_LOG_WARN("checkpoint: skipping " + c.string() + ": " +
                  (mine == kDamaged ? why : "damaged on another rank") +
                  " (removed at the next commit)");
    if (comm.rank() == 0) {
      const std::lock_guard<std::mutex> lock(g_damaged_mutex);
      g_damaged.push_back(c);
    }
  }
  return std::nullopt;
}

std::string fresh_start_problem(const fs::path& dir) {
  if (dir.empty()) return {};
  const auto found = list_checkpoints(dir, true);
  if (found.empty()) return {};
  return dir.string() + ": holds " + std::to_string(found.size()) + " checkpoint" +
         (found.size() > 1 ? "s" : "") + " of another run (newest " +
         checkpoint_name(found.front().first, found.front().second) +
         "); continue it with --resume auto, or start this run in another --checkpoint-dir (or "
         "remove them)";
}

// ---- preemption --------------------------------------------------------------------------------

namespace {
volatile std::sig_atomic_t g_preempt = 0;
timespec g_preempt_at{};  // when the flag was first set (CLOCK_MONOTONIC)
/// Async-signal-safe (clock_gettime is).
void set_preempt_flag() {
  if (g_preempt == 0) clock_gettime(CLOCK_MONOTONIC, &g_preempt_at);
  g_preempt = 1;
}
extern "C" void on_preemption_signal(int) { set_preempt_flag(); }
}  // namespace

void install_preemption_handlers() {
  struct sigaction sa {};
  sa.sa_handler = on_preemption_signal;
  sigemptyset(&sa.sa_mask);
  sa.sa_flags = SA_RESTART;
  for (const int sig : {SIGUSR1, SIGTERM})
    if (sigaction(sig, &sa, nullptr) != 0)
      throw LogicError("checkpoint: cannot install the handler of signal " + std::to_string(sig));
}

void request_preemption() { set_preempt_flag(); }
void clear_preemption() { g_preempt = 0; }
bool preemption_requested() { return g_preempt != 0; }
double preemption_age_s() {
  if (g_preempt == 0) return -1;
  timespec now{};
  clock_gettime(CLOCK_MONOTONIC, &now);
  return static_cast<double>(now.tv_sec - g_preempt_at.tv_sec) +
         1e-9 * static_cast<double>(now.tv_nsec - g_preempt_at.tv_nsec);
}

}  // namespace halo::runtime
