#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <bit>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <limits>
#include <memory>
#include <numeric>
#include <string>

#include <halo/datasets/readers/staged_directory.hpp>
#include <halo/datasets/store/store.hpp>
#include <halo/kernels/buffer.hpp>
#include <halo/kernels/error.hpp>
#include <halo/kernels/log.hpp>
#include <halo/kernels/rng.hpp>
#include <halo/partition/detail/metis.hpp>
#include <halo/partition/partitioners/lp_multilevel.hpp>

namespace halo::partition {
namespace {

using kernels::NodeId;
static_assert(sizeof(idx_t) == sizeof(std::int32_t), "vertex weights are 32-bit");

namespace fs = std::filesystem;

/// One coarse level: CSR with edge weights (32-bit where the finer level's total weight fits
/// them, else 64-bit), vertex weights interleaved (n x ncon). The columns and weights are in
/// memory, or, past the memory budget, mapped from scratch files (unlinked once mapped: the
/// mapping keeps them until the level goes) whose pages a trimmer drops as the passes go.
struct Level {
  std::vector<std::int64_t> indptr = {0};
  std::vector<idx_t> vw;
  bool wide = false;  // 64-bit weights
  std::int64_t entries = 0;
  std::vector<NodeId> adj;
  std::vector<std::uint32_t> ew32;
  std::vector<std::int64_t> ew64;
  kernels::Buffer adj_map, ew_map;  // on disk instead
  std::unique_ptr<datasets::MappedPageTrimmer> trimmer;

  const NodeId* adj_data() const {
    return adj_map.data() != nullptr ? static_cast<const NodeId*>(adj_map.data()) : adj.data();
  }
  const void* ew_data() const {
    if (ew_map.data() != nullptr) return ew_map.data();
    return wide ? static_cast<const void*>(ew64.data()) : static_cast<const void*>(ew32.data());
  }
};

/// `n` copies of `value` in memory backed by transparent huge pages where the system gives them
/// on request (THP "madvise" mode): label propagation reads these O(nodes) arrays at random, and
/// with 4 KiB pages nearly every access of a large graph is a TLB miss as well as a cache miss.
/// The advice comes before the first touch, so the pages are huge from the start.
template <class T>
std::vector<T> huge_vector(std::size_t n, T value) {
  std::vector<T> v;
  v.reserve(n);
  constexpr std::uintptr_t kHuge = std::uintptr_t{2} << 20;
  const auto begin = (reinterpret_cast<std::uintptr_t>(v.data()) + kHuge - 1) / kHuge * kHuge;
  const auto end = (reinterpret_cast<std::uintptr_t>(v.data()) + n * sizeof(T)) / kHuge * kHuge;
  if (end > begin) ::madvise(reinterpret_cast<void*>(begin), end - begin, MADV_HUGEPAGE);
  v.assign(n, value);
  return v;
}

/// A level, or the input graph (no weights: every entry weighs 1), as the passes read it.
struct View {
  std::int64_t n = 0;
  const std::int64_t* indptr = nullptr;
  const NodeId* adj = nullptr;
  const std::int64_t* ew = nullptr;
  const std::uint32_t* ew32 = nullptr;
  const idx_t* vw = nullptr;
  std::size_t ncon = 1;
  // Where the columns and weights are file mappings (the input from a store, a level on disk):
  // contract() reads their rows at random, through the files.
  const kernels::Buffer* adj_file = nullptr;
  const kernels::Buffer* ew_file = nullptr;
  std::int64_t w(std::int64_t e) const {
    return ew32 != nullptr ? std::int64_t{ew32[e]} : ew != nullptr ? ew[e] : 1;
  }
  std::int64_t vwgt(std::int64_t u, std::size_t j) const {
    return vw[static_cast<std::size_t>(u) * ncon + j];
  }
  std::int64_t entries() const { return indptr[n]; }
};

View view_of(const Level& l, std::size_t ncon) {
  View v;
  v.n = static_cast<std::int64_t>(l.indptr.size()) - 1;
  v.indptr = l.indptr.data();
  v.adj = l.adj_data();
  if (l.wide)
    v.ew = static_cast<const std::int64_t*>(l.ew_data());
  else
    v.ew32 = static_cast<const std::uint32_t*>(l.ew_data());
  v.vw = l.vw.data();
  v.ncon = ncon;
  if (l.adj_map.mapped()) v.adj_file = &l.adj_map;
  if (l.ew_map.mapped()) v.ew_file = &l.ew_map;
  return v;
}

/// Row u of `g` at random: pointers into memory, or, for columns or weights that are a file
/// mapping, copies read from the file (a random touch of a mapping maps the whole page-cache
/// folio around it, up to 2 MiB: contracting the 10 GB input of a scale-26 R-MAT graph that way
/// made gigabytes resident between two trims).
class RowReader {
 public:
  explicit RowReader(const View& g) : m_g(g) {}
  /// Makes row u current: size() entries, column(i), weight(i).
  void read(NodeId u) {
    m_begin = m_g.indptr[u];
    m_size = m_g.indptr[u + 1] - m_begin;
    const auto count = static_cast<std::size_t>(m_size);
    m_adj = m_g.adj + m_begin;
    if (m_g.adj_file != nullptr && count > 0) {
      m_adj_copy.resize(count);
      m_g.adj_file->read_file(static_cast<std::size_t>(m_begin) * sizeof(NodeId), m_adj_copy.data(),
                              count * sizeof(NodeId));
      m_adj = m_adj_copy.data();
    }
    m_ew_copied = m_g.ew_file != nullptr && count > 0;
    if (m_ew_copied) {
      const std::size_t width = m_g.ew32 != nullptr ? sizeof(std::uint32_t) : sizeof(std::int64_t);
      m_ew_copy.resize(count * width);
      m_g.ew_file->read_file(static_cast<std::size_t>(m_begin) * width, m_ew_copy.data(),
                             count * width);
    }
  }
  std::int64_t size() const { return m_size; }
  NodeId column(std::int64_t i) const { return m_adj[i]; }
  std::int64_t weight(std::int64_t i) const {
    if (!m_ew_copied) return m_g.w(m_begin + i);
    const auto at = static_cast<std::size_t>(i);
    if (m_g.ew32 != nullptr) {
      std::uint32_t w;
      std::memcpy(&w, m_ew_copy.data() + at * sizeof w, sizeof w);
      return w;
    }
    std::int64_t w;
    std::memcpy(&w, m_ew_copy.data() + at * sizeof w, sizeof w);
    return w;
  }

 private:
  const View& m_g;
  std::int64_t m_begin = 0, m_size = 0;
  const NodeId* m_adj = nullptr;
  std::vector<NodeId> m_adj_copy;
  std::vector<unsigned char> m_ew_copy;
  bool m_ew_copied = false;
};

/// Where contract() puts a coarse level's entries, row by row: the level's vectors, or two
/// scratch files (columns, weights) that finish() maps into the level.
class EntrySink {
 public:
  EntrySink(Level& l, std::int64_t max_entries, const fs::path* spill_dir) : m_level(l) {
    if (spill_dir == nullptr) {
      // Reserved once (pages beyond what is written are never touched, hence never resident),
      // so growing never copies a coarse graph of billions.
      l.adj.reserve(static_cast<std::size_t>(max_entries));
      if (l.wide)
        l.ew64.reserve(static_cast<std::size_t>(max_entries));
      else
        l.ew32.reserve(static_cast<std::size_t>(max_entries));
      return;
    }
    static std::atomic<int> counter{0};
    const std::string stem =
        "halo-lp-" + std::to_string(::getpid()) + "-" + std::to_string(counter++);
    m_files[0].path = *spill_dir / (stem + ".adj");
    m_files[1].path = *spill_dir / (stem + ".ew");
    for (File& f : m_files) {
      datasets::track_staging_directory(f.path, true);
      f.file = std::fopen(f.path.c_str(), "wb");
      if (f.file == nullptr)
        throw IoError(f.path.string() + ": cannot create (a coarse level past --memory-budget): " +
                      std::strerror(errno));
      std::setvbuf(f.file, nullptr, _IOFBF, std::size_t{8} << 20);
    }
  }
  ~EntrySink() {
    for (File& f : m_files) {
      if (f.file != nullptr) std::fclose(f.file);
      if (!f.path.empty()) {
        std::error_code ignored;
        fs::remove(f.path, ignored);
        datasets::track_staging_directory(f.path, false);
      }
    }
  }
  EntrySink(const EntrySink&) = delete;
  EntrySink& operator=(const EntrySink&) = delete;

  void append(const std::vector<NodeId>& adj, const std::vector<std::int64_t>& ew) {
    Level& l = m_level;
    l.entries += static_cast<std::int64_t>(adj.size());
    if (m_files[0].file == nullptr) {
      l.adj.insert(l.adj.end(), adj.begin(), adj.end());
      if (l.wide)
        l.ew64.insert(l.ew64.end(), ew.begin(), ew.end());
      else
        for (const std::int64_t w : ew) l.ew32.push_back(static_cast<std::uint32_t>(w));
      return;
    }
    write(m_files[0], adj.data(), adj.size() * sizeof(NodeId));
    if (l.wide) {
      write(m_files[1], ew.data(), ew.size() * sizeof(std::int64_t));
    } else {
      m_narrow.assign(ew.begin(), ew.end());
      write(m_files[1], m_narrow.data(), m_narrow.size() * sizeof(std::uint32_t));
    }
  }

  /// The files closed, mapped into the level, unlinked, and their pages put under a trimmer.
  void finish() {
    if (m_files[0].file == nullptr) return;
    Level& l = m_level;
    const std::size_t bytes[2] = {static_cast<std::size_t>(l.entries) * sizeof(NodeId),
                                  static_cast<std::size_t>(l.entries) *
                                      (l.wide ? sizeof(std::int64_t) : sizeof(std::uint32_t))};
    kernels::Buffer* maps[2] = {&l.adj_map, &l.ew_map};
    for (int i = 0; i < 2; ++i) {
      File& f = m_files[i];
      const bool ok = std::fflush(f.file) == 0 && std::ferror(f.file) == 0;
      const int err = errno;
      std::fclose(f.file);
      f.file = nullptr;
      if (!ok) throw IoError(f.path.string() + ": write error: " + std::strerror(err));
      if (bytes[i] > 0) *maps[i] = kernels::Buffer::map_file(f.path.string(), bytes[i]);
    }
    std::vector<std::pair<const void*, std::size_t>> ranges;
    for (int i = 0; i < 2; ++i)
      if (bytes[i] > 0) ranges.emplace_back(maps[i]->data(), bytes[i]);
    l.trimmer = std::make_unique<datasets::MappedPageTrimmer>(std::move(ranges),
                                                              std::chrono::milliseconds(50));
  }

 private:
  struct File {
    fs::path path;
    std::FILE* file = nullptr;
  };
  static void write(File& f, const void* data, std::size_t bytes) {
    if (bytes > 0 && std::fwrite(data, 1, bytes, f.file) != bytes)
      throw IoError(f.path.string() + ": write error: " + std::strerror(errno));
  }
  Level& m_level;
  File m_files[2];
  std::vector<std::uint32_t> m_narrow;
};

std::vector<std::int64_t> totals(const View& g) {
  std::vector<std::int64_t> t(g.ncon, 0);
  for (std::int64_t u = 0; u < g.n; ++u)
    for (std::size_t j = 0; j < g.ncon; ++j) t[j] += g.vwgt(u, j);
  return t;
}

/// Size-constrained label propagation: cluster[u] is the representative node of u's cluster.
/// Ties are broken by a hash of (seed, node, cluster): deterministic, unbiased by ids.
std::vector<NodeId> cluster_level(const View& g, const std::vector<std::int64_t>& maxw, int rounds,
                                  std::uint64_t seed) {
  auto tie_key = [seed](NodeId u, NodeId c) {
    return kernels::rng::mix(seed ^
                             (static_cast<std::uint64_t>(u) << 32 | static_cast<std::uint32_t>(c)));
  };
  const std::int64_t n = g.n;
  const std::size_t ncon = g.ncon;
  std::vector<NodeId> cluster = huge_vector<NodeId>(static_cast<std::size_t>(n), 0);
  std::iota(cluster.begin(), cluster.end(), NodeId{0});
  std::vector<std::int64_t> cw = huge_vector<std::int64_t>(static_cast<std::size_t>(n) * ncon, 0);
  for (std::int64_t u = 0; u < n; ++u)
    for (std::size_t j = 0; j < ncon; ++j)
      cw[static_cast<std::size_t>(u) * ncon + j] = g.vwgt(u, j);
  auto fits = [&](NodeId c, std::int64_t u) {
    for (std::size_t j = 0; j < ncon; ++j) {
      const std::int64_t w = g.vwgt(u, j);
      if (w > 0 && cw[static_cast<std::size_t>(c) * ncon + j] + w > maxw[j]) return false;
    }
    return true;
  };
  auto move = [&](std::int64_t u, NodeId to) {
    const NodeId from = cluster[static_cast<std::size_t>(u)];
    for (std::size_t j = 0; j < ncon; ++j) {
      cw[static_cast<std::size_t>(from) * ncon + j] -= g.vwgt(u, j);
      cw[static_cast<std::size_t>(to) * ncon + j] += g.vwgt(u, j);
    }
    cluster[static_cast<std::size_t>(u)] = to;
  };
  // Low degrees first (KaMinPar's degree buckets, log2 of the degree; id order within one): a
  // leaf joins its neighbour's cluster before the hubs' clusters fill up.
  std::vector<NodeId> order = huge_vector<NodeId>(static_cast<std::size_t>(n), 0);
  {
    constexpr int kBuckets = 64;
    std::vector<std::int64_t> start(kBuckets + 1, 0);
    auto bucket = [&](std::int64_t u) {
      return std::bit_width(static_cast<std::uint64_t>(g.indptr[u + 1] - g.indptr[u]));
    };
    for (std::int64_t u = 0; u < n; ++u) ++start[static_cast<std::size_t>(bucket(u)) + 1];
    std::partial_sum(start.begin(), start.end(), start.begin());
    for (std::int64_t u = 0; u < n; ++u)
      order[static_cast<std::size_t>(start[static_cast<std::size_t>(bucket(u))]++)] =
          static_cast<NodeId>(u);
  }
  std::vector<std::int64_t> rating = huge_vector<std::int64_t>(static_cast<std::size_t>(n), 0);
  std::vector<NodeId> touched;
  for (int round = 0; round < rounds; ++round) {
    std::int64_t moved = 0;
    for (const NodeId u : order) {
      const std::int64_t b = g.indptr[u], e = g.indptr[u + 1];
      if (b == e) continue;
      const NodeId own = cluster[static_cast<std::size_t>(u)];
      for (std::int64_t k = b; k < e; ++k) {
        const NodeId c = cluster[static_cast<std::size_t>(g.adj[k])];
        if (rating[static_cast<std::size_t>(c)] == 0) touched.push_back(c);
        rating[static_cast<std::size_t>(c)] += g.w(k);
      }
      // The heaviest connection wins; a tie keeps the node where it is, or else goes to the
      // cluster with the smaller hash of (node, cluster): a tie broken by id would pull every
      // node towards low ids, across communities.
      NodeId best = own;
      std::int64_t best_rating = rating[static_cast<std::size_t>(own)];
      std::uint64_t best_key = 0;
      for (const NodeId c : touched) {
        const std::int64_t r = rating[static_cast<std::size_t>(c)];
        if (c == own || r < best_rating) continue;
        const std::uint64_t key = tie_key(u, c);
        if (r == best_rating && (best == own || key >= best_key)) continue;
        if (!fits(c, u)) continue;
        best = c;
        best_rating = r;
        best_key = key;
      }
      for (const NodeId c : touched) rating[static_cast<std::size_t>(c)] = 0;
      touched.clear();
      if (best != own) {
        move(u, best);
        ++moved;
      }
    }
    if (moved == 0) break;
  }
  // Isolated nodes have no neighbour to join: grouped in id order, within the same bound.
  NodeId group = -1;
  for (std::int64_t u = 0; u < n; ++u) {
    if (g.indptr[u + 1] != g.indptr[u]) continue;
    if (group >= 0 && fits(group, u))
      move(u, group);
    else
      group = static_cast<NodeId>(u);
  }
  return cluster;
}

/// The graph of the clusters: coarse_of[u] is u's coarse node (numbered in order of first
/// appearance), weights summed, parallel edges merged, edges inside a cluster dropped. The
/// entries go to scratch files in `spill_dir` (mapped) when it is given.
Level contract(const View& g, const std::vector<NodeId>& cluster, std::vector<NodeId>& coarse_of,
               const fs::path* spill_dir) {
  const std::int64_t n = g.n;
  const std::size_t ncon = g.ncon;
  std::vector<NodeId> id = huge_vector<NodeId>(static_cast<std::size_t>(n), -1);
  coarse_of = huge_vector<NodeId>(static_cast<std::size_t>(n), 0);
  NodeId nc = 0;
  for (std::int64_t u = 0; u < n; ++u) {
    NodeId& c = id[static_cast<std::size_t>(cluster[static_cast<std::size_t>(u)])];
    if (c < 0) c = nc++;
    coarse_of[static_cast<std::size_t>(u)] = c;
  }
  id = {};
  std::vector<std::int64_t> start(static_cast<std::size_t>(nc) + 1, 0);
  for (std::int64_t u = 0; u < n; ++u) ++start[static_cast<std::size_t>(coarse_of[u]) + 1];
  std::partial_sum(start.begin(), start.end(), start.begin());
  std::vector<NodeId> members = huge_vector<NodeId>(static_cast<std::size_t>(n), 0);
  {
    std::vector<std::int64_t> at(start.begin(), start.end() - 1);
    for (std::int64_t u = 0; u < n; ++u)
      members[static_cast<std::size_t>(at[static_cast<std::size_t>(coarse_of[u])]++)] =
          static_cast<NodeId>(u);
  }
  Level l;
  // A coarse edge weighs at most the finer level's total: 32 bits whenever that total fits.
  std::int64_t total_weight = 0;
  if (g.ew == nullptr && g.ew32 == nullptr)
    total_weight = g.entries();
  else
    for (std::int64_t k = 0; k < g.entries(); ++k) total_weight += g.w(k);
  l.wide = total_weight > std::int64_t{std::numeric_limits<std::uint32_t>::max()};
  l.indptr.assign(static_cast<std::size_t>(nc) + 1, 0);
  l.vw.assign(static_cast<std::size_t>(nc) * ncon, 0);
  EntrySink sink(l, g.entries(), spill_dir);
  std::vector<std::int64_t> pos = huge_vector<std::int64_t>(static_cast<std::size_t>(nc), -1);
  std::vector<NodeId> row_adj;
  std::vector<std::int64_t> row_ew;
  RowReader row(g);
  for (NodeId c = 0; c < nc; ++c) {
    for (std::int64_t m = start[static_cast<std::size_t>(c)];
         m < start[static_cast<std::size_t>(c) + 1]; ++m) {
      const NodeId u = members[static_cast<std::size_t>(m)];
      for (std::size_t j = 0; j < ncon; ++j)
        l.vw[static_cast<std::size_t>(c) * ncon + j] += static_cast<idx_t>(g.vwgt(u, j));
      row.read(u);
      for (std::int64_t i = 0; i < row.size(); ++i) {
        const NodeId d = coarse_of[static_cast<std::size_t>(row.column(i))];
        if (d == c) continue;
        std::int64_t& p = pos[static_cast<std::size_t>(d)];
        if (p < 0) {
          p = static_cast<std::int64_t>(row_adj.size());
          row_adj.push_back(d);
          row_ew.push_back(row.weight(i));
        } else {
          row_ew[static_cast<std::size_t>(p)] += row.weight(i);
        }
      }
    }
    for (const NodeId d : row_adj) pos[static_cast<std::size_t>(d)] = -1;
    sink.append(row_adj, row_ew);
    l.indptr[static_cast<std::size_t>(c) + 1] = l.entries;
    row_adj.clear();
    row_ew.clear();
  }
  sink.finish();
  return l;
}

/// Balanced label propagation: a node moves to the adjacent part it has strictly more edge
/// weight to than its own, when that part q stays within cap[q * ncon + j] on every constraint j.
void refine(const View& g, std::vector<std::int32_t>& part, std::int32_t num_parts,
            const std::vector<std::int64_t>& cap, int rounds) {
  const std::size_t ncon = g.ncon;
  const auto p = static_cast<std::size_t>(num_parts);
  std::vector<std::int64_t> load(p * ncon, 0);
  for (std::int64_t u = 0; u < g.n; ++u)
    for (std::size_t j = 0; j < ncon; ++j)
      load[static_cast<std::size_t>(part[static_cast<std::size_t>(u)]) * ncon + j] += g.vwgt(u, j);
  std::vector<std::int64_t> conn(p, 0);
  std::vector<std::int32_t> touched;
  for (int round = 0; round < rounds; ++round) {
    std::int64_t moved = 0;
    for (std::int64_t u = 0; u < g.n; ++u) {
      const std::int64_t b = g.indptr[u], e = g.indptr[u + 1];
      if (b == e) continue;
      const std::int32_t own = part[static_cast<std::size_t>(u)];
      for (std::int64_t k = b; k < e; ++k) {
        const std::int32_t q = part[static_cast<std::size_t>(g.adj[k])];
        if (conn[static_cast<std::size_t>(q)] == 0) touched.push_back(q);
        conn[static_cast<std::size_t>(q)] += g.w(k);
      }
      std::int32_t best = own;
      std::int64_t best_conn = conn[static_cast<std::size_t>(own)];
      for (const std::int32_t q : touched) {
        const std::int64_t c = conn[static_cast<std::size_t>(q)];
        if (q == own || !(c > best_conn || (c == best_conn && best != own && q < best))) continue;
        bool fits = true;
        for (std::size_t j = 0; j < ncon && fits; ++j) {
          const std::int64_t w = g.vwgt(u, j);
          const std::size_t at = static_cast<std::size_t>(q) * ncon + j;
          fits = w == 0 || load[at] + w <= cap[at];
        }
        if (fits) {
          best = q;
          best_conn = c;
        }
      }
      for (const std::int32_t q : touched) conn[static_cast<std::size_t>(q)] = 0;
      touched.clear();
      if (best == own) continue;
      for (std::size_t j = 0; j < ncon; ++j) {
        load[static_cast<std::size_t>(own) * ncon + j] -= g.vwgt(u, j);
        load[static_cast<std::size_t>(best) * ncon + j] += g.vwgt(u, j);
      }
      part[static_cast<std::size_t>(u)] = best;
      ++moved;
    }
    if (moved == 0) break;
  }
}

/// METIS's 32-bit weights: vertex weights (n x ncon) scaled down where a constraint's total
/// exceeds half of idx_t's range.
void scale_for_metis(std::vector<idx_t>& vwgt, std::size_t ncon) {
  const std::int64_t limit = std::numeric_limits<idx_t>::max() / 2;
  const std::size_t n = vwgt.size() / std::max<std::size_t>(ncon, 1);
  for (std::size_t j = 0; j < ncon; ++j) {
    std::int64_t total = 0;
    for (std::size_t u = 0; u < n; ++u) total += vwgt[u * ncon + j];
    if (total <= limit) continue;
    const std::int64_t f = total / limit + 1;
    for (std::size_t u = 0; u < n; ++u) {
      idx_t& w = vwgt[u * ncon + j];
      if (w > 0) w = static_cast<idx_t>((w + f - 1) / f);
    }
  }
}

idx_t metis_edge_weight(std::int64_t w) {
  return static_cast<idx_t>(std::min<std::int64_t>(w, std::numeric_limits<idx_t>::max() / 2));
}

/// METIS on a graph small enough to partition directly into P parts: k-way and recursive
/// bisection (the better initial partitioner on small graphs), each the best of a few tries; the
/// smaller cut wins.
Assignment initial_parts(const View& g, const PartitionConfig& config) {
  std::vector<idx_t> adjwgt(static_cast<std::size_t>(g.entries()));
  for (std::int64_t k = 0; k < g.entries(); ++k)
    adjwgt[static_cast<std::size_t>(k)] = metis_edge_weight(g.w(k));
  std::vector<idx_t> vwgt(g.vw, g.vw + static_cast<std::size_t>(g.n) * g.ncon);
  scale_for_metis(vwgt, g.ncon);
  PartitionConfig c = config;
  c.objective = Objective::Cut;
  idx_t* weights = g.entries() > 0 ? adjwgt.data() : nullptr;
  c.method = Method::MetisKway;
  std::vector<idx_t> vwgt_rb = vwgt;
  Assignment best = detail::metis_call(g.n, g.indptr, g.adj, weights, vwgt, g.ncon, c, 4);
  c.method = Method::MetisRecursive;
  Assignment rb = detail::metis_call(g.n, g.indptr, g.adj, weights, vwgt_rb, g.ncon, c, 4);
  rb.metis_seconds += best.metis_seconds;
  if (rb.metis_objective < best.metis_objective) return rb;
  best.metis_seconds = rb.metis_seconds;
  return best;
}

/// The blocks of the deep scheme on one level: part[u] is the first final part of u's block,
/// span[b] the number of final parts block b stands for (0 where no block starts). Splits every
/// block standing for f >= 2 final parts in two, ceil(f / 2) and floor(f / 2) of them: METIS
/// recursive bisection of the block's induced subgraph with target weights in that ratio, the
/// best of 4 tries. One block's subgraph is in memory at a time. Returns METIS's seconds.
double split_blocks(const View& g, std::vector<std::int32_t>& part, std::vector<std::int32_t>& span,
                    const PartitionConfig& config) {
  const std::size_t p = span.size(), ncon = g.ncon;
  std::vector<std::int64_t> start(p + 1, 0);
  for (std::int64_t u = 0; u < g.n; ++u) ++start[static_cast<std::size_t>(part[u]) + 1];
  std::partial_sum(start.begin(), start.end(), start.begin());
  std::vector<NodeId> nodes(static_cast<std::size_t>(g.n));
  {
    std::vector<std::int64_t> at(start.begin(), start.end() - 1);
    for (std::int64_t u = 0; u < g.n; ++u)
      nodes[static_cast<std::size_t>(at[static_cast<std::size_t>(part[u])]++)] =
          static_cast<NodeId>(u);
  }
  std::vector<NodeId> local(static_cast<std::size_t>(g.n), -1);
  std::vector<std::int32_t> next = span;
  PartitionConfig c = config;
  c.num_parts = 2;
  c.method = Method::MetisRecursive;
  c.objective = Objective::Cut;
  double seconds = 0;
  for (std::size_t b = 0; b < p; ++b) {
    const std::int32_t f = span[b];
    if (f < 2) continue;
    const std::int32_t f0 = (f + 1) / 2;
    next[b] = f0;
    next[b + static_cast<std::size_t>(f0)] = f - f0;
    const std::int64_t first = start[b], count = start[b + 1] - first;
    if (count < 2) continue;  // nothing to split: the second block starts empty
    const NodeId* members = nodes.data() + first;
    for (std::int64_t i = 0; i < count; ++i) local[static_cast<std::size_t>(members[i])] = i;
    std::vector<std::int64_t> xadj(static_cast<std::size_t>(count) + 1, 0);
    std::vector<NodeId> adj;
    std::vector<idx_t> adjwgt, vwgt(static_cast<std::size_t>(count) * ncon);
    for (std::int64_t i = 0; i < count; ++i) {
      const NodeId u = members[i];
      for (std::int64_t k = g.indptr[u]; k < g.indptr[u + 1]; ++k) {
        if (static_cast<std::size_t>(part[static_cast<std::size_t>(g.adj[k])]) != b) continue;
        adj.push_back(local[static_cast<std::size_t>(g.adj[k])]);
        adjwgt.push_back(metis_edge_weight(g.w(k)));
      }
      xadj[static_cast<std::size_t>(i) + 1] = static_cast<std::int64_t>(adj.size());
      for (std::size_t j = 0; j < ncon; ++j)
        vwgt[static_cast<std::size_t>(i) * ncon + j] = static_cast<idx_t>(g.vwgt(u, j));
    }
    scale_for_metis(vwgt, ncon);
    std::vector<real_t> tpwgts(2 * ncon);
    for (std::size_t j = 0; j < ncon; ++j) {
      tpwgts[j] = static_cast<real_t>(f0) / static_cast<real_t>(f);
      tpwgts[ncon + j] = 1 - tpwgts[j];
    }
    const Assignment a =
        detail::metis_call(count, xadj.data(), adj.data(), adj.empty() ? nullptr : adjwgt.data(),
                           vwgt, ncon, c, 4, tpwgts.data());
    seconds += a.metis_seconds;
    for (std::int64_t i = 0; i < count; ++i)
      if (a.part[static_cast<std::size_t>(i)] == 1)
        part[static_cast<std::size_t>(members[i])] = static_cast<std::int32_t>(b) + f0;
  }
  span = std::move(next);
  return seconds;
}

}  // namespace

Assignment lp_multilevel_parts(const datasets::Graph& symmetric,
                               std::vector<std::vector<std::int32_t>> weights,
                               const PartitionConfig& config, const LpMultilevelConfig& lp,
                               LpMultilevelStats* stats) {
  HALO_EXPECTS(lp.contraction_limit >= 1 && lp.clustering_rounds >= 0 && lp.refinement_rounds >= 0,
               "lp_multilevel_parts: invalid configuration");
  using Clock = std::chrono::steady_clock;
  auto since = [](Clock::time_point t) {
    return std::chrono::duration<double>(Clock::now() - t).count();
  };
  const std::int64_t n = symmetric.num_rows();
  const std::int32_t p = config.num_parts;
  std::vector<idx_t> vwgt = detail::interleave(weights, n);
  const std::size_t ncon = weights.size();
  weights = {};
  View input;
  input.n = n;
  input.indptr = symmetric.indptr.data();
  input.adj = symmetric.indices.data();
  input.vw = vwgt.data();
  input.ncon = ncon;
  if (symmetric.indices.mapped()) input.adj_file = &symmetric.indices.storage();
  LpMultilevelStats s;

  // 1. Coarsening, when the input has more than contraction_limit * P nodes (else METIS
  // partitions it directly), down to 2 * contraction_limit nodes.
  auto t = Clock::now();
  std::vector<Level> levels;
  std::vector<std::vector<NodeId>> coarse_of;
  const std::int64_t limit = lp.contraction_limit;
  const bool multilevel = n > limit * p;
  View g = input;
  while (multilevel && g.n > 2 * limit) {
    const std::vector<std::int64_t> total = totals(g);
    // The clusters' bound: the imbalance's share of a block when the level holds
    // min(P, nodes / contraction_limit) blocks (at least 2).
    const std::int64_t kp = std::clamp<std::int64_t>(g.n / limit, std::min(2, p), p);
    std::vector<std::int64_t> maxw(ncon);
    for (std::size_t j = 0; j < ncon; ++j)
      maxw[j] = std::clamp<std::int64_t>(
          static_cast<std::int64_t>(config.imbalance * static_cast<double>(total[j]) /
                                    static_cast<double>(kp)),
          1, std::numeric_limits<idx_t>::max());
    const std::vector<NodeId> cluster = cluster_level(
        g, maxw, lp.clustering_rounds, kernels::rng::mix(config.seed + levels.size()));
    std::vector<NodeId> map;
    // Past the budget, the level's entries (at most the finer level's, 8 or 12 bytes each) go
    // to disk.
    const bool spill = config.memory_budget > 0 &&
                       static_cast<std::size_t>(g.entries()) * 12 > config.memory_budget;
    const fs::path spill_dir =
        config.scratch_dir.empty() ? fs::temp_directory_path() : fs::path(config.scratch_dir);
    Level next = contract(g, cluster, map, spill ? &spill_dir : nullptr);
    s.spilled_levels += spill ? 1 : 0;
    const auto nc = static_cast<std::int64_t>(next.indptr.size()) - 1;
    HALO_LOG_DEBUG("lp-multilevel: level "
                   << levels.size() + 1 << ": " << g.n << " -> " << nc << " nodes, " << next.entries
                   << " entries" << (spill ? " (on disk)" : "") << ", " << since(t) << " s");
    if (nc > g.n - g.n / 20) break;  // stopped shrinking (< 5 %)
    levels.push_back(std::move(next));
    coarse_of.push_back(std::move(map));
    g = view_of(levels.back(), ncon);
  }
  s.coarsen_s = since(t);
  HALO_LOG_DEBUG("lp-multilevel: coarsening " << s.coarsen_s << " s");
  s.levels = static_cast<int>(levels.size());
  s.coarsest_nodes = g.n;
  s.coarsest_entries = g.entries();

  // 2. Blocks: part[u] is the first final part of u's block, span[b] how many final parts block
  // b stands for. Without coarsening, METIS's P parts; else one block, split in two by METIS on
  // the coarsest graph and again on finer levels while a level keeps contraction_limit nodes
  // per block after the split (KaMinPar's deep multilevel scheme): each split is decided
  // on a graph coarse enough for the bisection to see whole communities, and refined on every
  // finer level.
  t = Clock::now();
  const std::vector<std::int64_t> total = totals(input);
  std::vector<std::int32_t> span(static_cast<std::size_t>(p), 0);
  std::vector<std::int32_t> part;
  Assignment a;
  if (levels.empty()) {
    a = initial_parts(g, config);
    part = std::move(a.part);
    std::fill(span.begin(), span.end(), 1);
  } else {
    span[0] = p;
    part.assign(static_cast<std::size_t>(g.n), 0);
  }
  std::int32_t blocks = levels.empty() ? p : 1;
  auto caps = [&] {
    std::vector<std::int64_t> cap(static_cast<std::size_t>(p) * ncon, 0);
    for (std::size_t b = 0; b < span.size(); ++b)
      for (std::size_t j = 0; j < ncon; ++j)
        cap[b * ncon + j] = static_cast<std::int64_t>(std::floor(
            (1.0 + config.imbalance) * static_cast<double>(total[j]) * span[b] / p + 1e-9));
    return cap;
  };
  auto extend = [&](const View& level, bool finest) {
    while (blocks < p && (finest || 2 * static_cast<std::int64_t>(blocks) <=
                                        std::max<std::int64_t>(2, level.n / limit))) {
      a.metis_seconds += split_blocks(level, part, span, config);
      blocks = static_cast<std::int32_t>(
          std::count_if(span.begin(), span.end(), [](std::int32_t f) { return f > 0; }));
      refine(level, part, p, caps(), lp.refinement_rounds);
    }
  };
  extend(g, levels.empty());
  s.initial_s = since(t);
  HALO_LOG_DEBUG("lp-multilevel: METIS on " << g.n << " nodes, " << blocks << " blocks, "
                                            << s.initial_s << " s");

  // 3. Projection, splitting and refinement, level by level down to the input.
  t = Clock::now();
  refine(g, part, p, caps(), lp.refinement_rounds);
  for (std::size_t l = levels.size(); l-- > 0;) {
    const View finer = l == 0 ? input : view_of(levels[l - 1], ncon);
    std::vector<std::int32_t> projected =
        huge_vector<std::int32_t>(static_cast<std::size_t>(finer.n), 0);
    for (std::int64_t u = 0; u < finer.n; ++u)
      projected[static_cast<std::size_t>(u)] =
          part[static_cast<std::size_t>(coarse_of[l][static_cast<std::size_t>(u)])];
    part = std::move(projected);
    levels.pop_back();
    coarse_of.pop_back();
    extend(finer, l == 0);
    refine(finer, part, p, caps(), lp.refinement_rounds);
    HALO_LOG_DEBUG("lp-multilevel: refined level " << l << " (" << blocks << " blocks), "
                                                   << since(t) << " s");
  }
  // 4. The bound made a bound, as after METIS.
  std::vector<idx_t> parts(part.begin(), part.end());
  a.rebalance_moves = detail::rebalance(symmetric.indptr.data(), symmetric.indices.data(), n, vwgt,
                                        ncon, config.imbalance, p, parts);
  a.part.assign(parts.begin(), parts.end());
  s.refine_s = since(t);
  if (stats != nullptr) *stats = s;
  return a;
}

}  // namespace halo::partition
