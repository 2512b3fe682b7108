#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <vector>

#include <halo/datasets/detail/host.hpp>
#include <halo/datasets/store/csr_builder.hpp>
#include <halo/kernels/error.hpp>
#include <halo/kernels/log.hpp>

namespace halo::datasets {

namespace fs = std::filesystem;

std::size_t default_memory_budget() {
  const long pages = ::sysconf(_SC_PHYS_PAGES);
  const long page = ::sysconf(_SC_PAGE_SIZE);
  if (pages <= 0 || page <= 0) return std::size_t{1} << 30;
  return static_cast<std::size_t>(pages) * static_cast<std::size_t>(page) / 4;
}

// ---- EdgeSpill ----

EdgeSpill::EdgeSpill(fs::path path, std::size_t read_bytes)
    : m_path(std::move(path)), m_read_bytes(std::max<std::size_t>(read_bytes, 8)) {
  m_file = std::fopen(m_path.c_str(), "wb");
  if (m_file == nullptr)
    throw IoError(m_path.string() + ": cannot create: " + std::strerror(errno));
}

EdgeSpill::~EdgeSpill() {
  if (m_file != nullptr) std::fclose(m_file);
  std::error_code ignored;
  fs::remove(m_path, ignored);
}

void EdgeSpill::append(EdgeBatch edges) {
  HALO_EXPECTS(m_file != nullptr, "EdgeSpill::append: finished already");
  static_assert(sizeof(std::pair<NodeId, NodeId>) == 8);
  if (!edges.empty() && std::fwrite(edges.data(), 8, edges.size(), m_file) != edges.size())
    throw IoError(m_path.string() + ": write error: " + std::strerror(errno));
  m_edges += static_cast<std::int64_t>(edges.size());
}

void EdgeSpill::finish() {
  if (m_file == nullptr) return;
  std::FILE* f = std::exchange(m_file, nullptr);
  if (std::fclose(f) != 0)
    throw IoError(m_path.string() + ": write error: " + std::strerror(errno));
}

EdgeSource EdgeSpill::source(std::int64_t num_nodes) const {
  HALO_EXPECTS(m_file == nullptr, "EdgeSpill::source: call finish() first");
  EdgeSource s;
  s.num_nodes = num_nodes;
  s.replay = [path = m_path, batch = m_read_bytes / 8,
              edges = m_edges](const std::function<void(EdgeBatch)>& sink) {
    std::FILE* f = std::fopen(path.c_str(), "rb");
    if (f == nullptr) throw IoError(path.string() + ": cannot open: " + std::strerror(errno));
    std::vector<std::pair<NodeId, NodeId>> buf(
        std::min<std::size_t>(batch, static_cast<std::size_t>(std::max<std::int64_t>(edges, 1))));
    std::int64_t left = edges;
    while (left > 0) {
      const std::size_t want = std::min<std::size_t>(buf.size(), static_cast<std::size_t>(left));
      if (std::fread(buf.data(), 8, want, f) != want) {
        std::fclose(f);
        throw IoError(path.string() + ": read error (the spill was truncated)");
      }
      sink(EdgeBatch(buf.data(), want));
      left -= static_cast<std::int64_t>(want);
    }
    std::fclose(f);
  };
  return s;
}

// ---- build_csr ----

CsrBuildResult build_csr(const kernels::Resources& res, const EdgeSource& source,
                         const CsrBuildOptions& o, StoreWriter* w, const std::string& prefix) {
  const std::int64_t n = source.num_nodes;
  HALO_EXPECTS(n >= 0 && n <= kMaxStoreNodes, "build_csr: num_nodes out of range");
  auto wanted = [&](NodeId s, NodeId d) { return !(o.remove_self_loops && s == d); };

  // Pass 1: an upper bound of each row's entries (duplicates still in).
  std::vector<std::int64_t> upper(static_cast<std::size_t>(n), 0);
  source.replay([&](EdgeBatch batch) {
    for (const auto& [s, d] : batch) {
      if (s < 0 || s >= n || d < 0 || d >= n)
        throw IoError("edge (" + std::to_string(s) + ", " + std::to_string(d) +
                      ") names a node outside [0, " + std::to_string(n) + ")");
      if (!wanted(s, d)) continue;
      ++upper[static_cast<std::size_t>(d)];
      if (o.symmetrize) ++upper[static_cast<std::size_t>(s)];
    }
  });

  // Row blocks whose entries fit the budget (at least one row each).
  const auto budget_entries =
      std::max<std::int64_t>(static_cast<std::int64_t>(o.memory_budget / sizeof(NodeId)), 1);
  std::vector<std::int64_t> cut = {0};
  for (std::int64_t r = 0, in_block = 0; r < n; ++r) {
    const std::int64_t u = upper[static_cast<std::size_t>(r)];
    if (in_block > 0 && in_block + u > budget_entries) {
      cut.push_back(r);
      in_block = 0;
    }
    in_block += u;
  }
  cut.push_back(n);

  CsrBuildResult result;
  result.blocks = static_cast<std::int64_t>(cut.size()) - 1;
  // indptr[r + 1] holds row r's degree until the prefix sum at the end; it is written last.
  std::vector<std::int64_t> indptr(static_cast<std::size_t>(n) + 1, 0);
  if (w != nullptr) w->begin(prefix + ".indices", "i32", sizeof(NodeId), -1, 1);
  std::vector<NodeId> buf;
  for (std::size_t b = 0; b + 1 < cut.size(); ++b) {
    const std::int64_t r0 = cut[b], r1 = cut[b + 1];
    // start[r - r0]: where row r's entries begin in the block's buffer.
    std::vector<std::int64_t> start(static_cast<std::size_t>(r1 - r0) + 1, 0);
    for (std::int64_t r = r0; r < r1; ++r)
      start[static_cast<std::size_t>(r - r0 + 1)] =
          start[static_cast<std::size_t>(r - r0)] + upper[static_cast<std::size_t>(r)];
    buf.resize(static_cast<std::size_t>(start.back()));
    std::vector<std::int64_t> cursor(start.begin(), start.end() - 1);
    source.replay([&](EdgeBatch batch) {
      for (const auto& [s, d] : batch) {
        if (!wanted(s, d)) continue;
        if (d >= r0 && d < r1)
          buf[static_cast<std::size_t>(cursor[static_cast<std::size_t>(d - r0)]++)] = s;
        if (o.symmetrize && s >= r0 && s < r1)
          buf[static_cast<std::size_t>(cursor[static_cast<std::size_t>(s - r0)]++)] = d;
      }
    });
    // Sort and de-duplicate each row in place; its distinct count is its degree.
    detail::parallel_for(res, r1 - r0, [&](std::int64_t i) {
      NodeId* first = buf.data() + start[static_cast<std::size_t>(i)];
      NodeId* last = buf.data() + cursor[static_cast<std::size_t>(i)];
      std::sort(first, last);
      indptr[static_cast<std::size_t>(r0 + i + 1)] = std::unique(first, last) - first;
    });
    for (std::int64_t r = r0; r < r1; ++r) {
      const std::int64_t d = indptr[static_cast<std::size_t>(r + 1)];
      if (w != nullptr)
        w->append(buf.data() + start[static_cast<std::size_t>(r - r0)],
                  static_cast<std::size_t>(d) * sizeof(NodeId));
      result.max_degree = std::max(result.max_degree, d);
      add_to_histogram(result.histogram, d);
    }
  }
  if (w != nullptr) w->end();
  buf = {};
  upper = {};
  for (std::int64_t r = 0; r < n; ++r)
    indptr[static_cast<std::size_t>(r + 1)] += indptr[static_cast<std::size_t>(r)];
  result.entries = indptr.back();
  if (w != nullptr) {
    w->begin(prefix + ".indptr", "i64", sizeof(std::int64_t), n + 1, 1);
    w->append(indptr.data(), indptr.size() * sizeof(std::int64_t));
    w->end();
  }
  HALO_LOG_DEBUG("build_csr: " << n << " rows, " << result.entries << " entries in "
                               << result.blocks << " row blocks");
  return result;
}

DirectedBuild build_directed_csr(const kernels::Resources& res, const EdgeSource& source,
                                 std::size_t memory_budget, StoreWriter& w) {
  CsrBuildOptions o;
  o.memory_budget = memory_budget;
  DirectedBuild b;
  b.graph = build_csr(res, source, o, &w);
  o.symmetrize = true;
  o.remove_self_loops = true;
  b.training = build_csr(res, source, o, nullptr);
  return b;
}

void DirectedBuild::record(StoreCounts& c) const {
  c.num_edges = graph.entries;
  c.training_edges = training.entries;
  c.max_degree = training.max_degree;
  c.degree_histogram = training.histogram;
}

}  // namespace halo::datasets
