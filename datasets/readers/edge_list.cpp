#include <algorithm>
#include <cctype>
#include <limits>
#include <numeric>
#include <string>

#include <halo/datasets/detail/host.hpp>
#include <halo/datasets/detail/text.hpp>
#include <halo/datasets/graph_builder.hpp>
#include <halo/datasets/preprocess.hpp>
#include <halo/datasets/readers/edge_list.hpp>
#include <halo/kernels/error.hpp>

namespace halo::datasets {
namespace {

namespace fs = std::filesystem;

std::string lower(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

/// CSR from (row, col, value) triples: rows sorted by column (stable), values kept when
/// `weighted`.
Graph csr_from_triples(const kernels::Resources& res, std::int64_t n,
                       const std::vector<std::pair<NodeId, NodeId>>& rc,
                       const std::vector<float>& values, bool weighted) {
  const auto m = static_cast<std::int64_t>(rc.size());
  Graph g{detail::host_tensor<std::int64_t>(res, n + 1), detail::host_tensor<NodeId>(res, m),
          detail::host_tensor<float>(res, weighted ? m : 0), n};
  std::int64_t* indptr = g.indptr.data();
  std::fill(indptr, indptr + n + 1, std::int64_t{0});
  for (const auto& [r, c] : rc) ++indptr[r];
  detail::counts_to_offsets(indptr, n);
  std::vector<std::int64_t> next(indptr, indptr + n);
  std::vector<std::int64_t> order(static_cast<std::size_t>(m));
  for (std::int64_t e = 0; e < m; ++e) {
    order[static_cast<std::size_t>(next[static_cast<std::size_t>(rc[e].first)]++)] = e;
  }
  for (std::int64_t r = 0; r < n; ++r) {
    std::stable_sort(order.begin() + indptr[r], order.begin() + indptr[r + 1],
                     [&](std::int64_t a, std::int64_t b) { return rc[a].second < rc[b].second; });
  }
  for (std::int64_t k = 0; k < m; ++k) {
    const auto e = static_cast<std::size_t>(order[static_cast<std::size_t>(k)]);
    g.indices.data()[k] = rc[e].second;
    if (weighted) g.values.data()[k] = values[e];
  }
  return g;
}

}  // namespace

EdgeList read_edge_list_with_ids(const kernels::Resources& res, const fs::path& path) {
  const std::string text = detail::read_whole_file(path);
  const std::string where = path.string();
  std::vector<std::pair<std::int64_t, std::int64_t>> raw;
  detail::TextLines lines(text);
  std::string_view line;
  while (lines.next(line)) {
    const std::string_view t = detail::trim(line);
    if (t.empty() || t.front() == '#' || t.front() == '%') continue;
    const auto tokens = detail::split_blanks(t, 2);
    std::int64_t src = 0;
    std::int64_t dst = 0;
    if (tokens.size() < 2 || !detail::parse_int(tokens[0], src) ||
        !detail::parse_int(tokens[1], dst) || src < 0 || dst < 0) {
      detail::fail_expected(where, lines.number(),
                            "two non-negative integer node ids separated by blanks", line);
    }
    raw.emplace_back(src, dst);
  }
  EdgeList out;
  std::vector<std::int64_t>& ids = out.original_ids;
  ids.reserve(raw.size() * 2);
  for (const auto& [s, d] : raw) {
    ids.push_back(s);
    ids.push_back(d);
  }
  std::sort(ids.begin(), ids.end());
  ids.erase(std::unique(ids.begin(), ids.end()), ids.end());
  if (ids.size() > static_cast<std::size_t>(std::numeric_limits<NodeId>::max())) {
    throw IoError(where + ": more than 2^31 - 1 distinct node ids");
  }
  const auto dense = [&](std::int64_t id) {
    return static_cast<NodeId>(std::lower_bound(ids.begin(), ids.end(), id) - ids.begin());
  };
  std::vector<std::pair<NodeId, NodeId>> edges(raw.size());
  for (std::size_t e = 0; e < raw.size(); ++e) {
    edges[e] = {dense(raw[e].first), dense(raw[e].second)};
  }
  raw = {};
  out.graph = deduplicate(res, graph_from_edges(res, static_cast<std::int64_t>(ids.size()), edges));
  return out;
}

Graph read_edge_list(const kernels::Resources& res, const fs::path& path) {
  return read_edge_list_with_ids(res, path).graph;
}

Graph read_matrix_market(const kernels::Resources& res, const fs::path& path) {
  const std::string text = detail::read_whole_file(path);
  const std::string where = path.string();
  detail::TextLines lines(text);
  std::string_view line;
  if (!lines.next(line))
    detail::fail_at(where, 1, "expected a %%MatrixMarket header, got end of file");
  const auto head = detail::split_blanks(detail::trim(line), 8);
  if (head.size() != 5 || head[0] != "%%MatrixMarket" || lower(head[1]) != "matrix") {
    detail::fail_expected(where, 1, "\"%%MatrixMarket matrix coordinate <field> <symmetry>\"",
                          line);
  }
  if (lower(head[2]) != "coordinate") {
    detail::fail_at(
        where, 1, "only the coordinate format is supported, got \"" + std::string(head[2]) + "\"");
  }
  const std::string field = lower(head[3]);
  const std::string symmetry = lower(head[4]);
  if (field != "real" && field != "integer" && field != "pattern") {
    detail::fail_at(where, 1,
                    "field must be real, integer or pattern, got \"" + std::string(head[3]) + "\"");
  }
  if (symmetry != "general" && symmetry != "symmetric") {
    detail::fail_at(where, 1,
                    "symmetry must be general or symmetric, got \"" + std::string(head[4]) + "\"");
  }
  const bool pattern = field == "pattern";
  const bool symmetric = symmetry == "symmetric";

  std::int64_t rows = -1, cols = -1, entries = -1;
  while (lines.next(line)) {
    const std::string_view t = detail::trim(line);
    if (t.empty() || t.front() == '%') continue;
    const auto tokens = detail::split_blanks(t, 4);
    if (tokens.size() != 3 || !detail::parse_int(tokens[0], rows) ||
        !detail::parse_int(tokens[1], cols) || !detail::parse_int(tokens[2], entries) || rows < 0 ||
        cols < 0 || entries < 0) {
      detail::fail_expected(where, lines.number(), "the size line \"rows cols entries\"", line);
    }
    break;
  }
  if (rows < 0)
    detail::fail_at(where, lines.number() + 1, "expected the size line, got end of file");
  const std::int64_t size_line = lines.number();
  if (rows != cols) {
    detail::fail_at(where, size_line,
                    "the matrix is " + std::to_string(rows) + " x " + std::to_string(cols) +
                        "; a graph needs a square matrix");
  }
  if (rows > std::numeric_limits<NodeId>::max()) {
    detail::fail_at(where, size_line, "more than 2^31 - 1 rows");
  }
  std::vector<std::pair<NodeId, NodeId>> rc;
  std::vector<float> values;
  // Each entry takes at least 4 bytes of text: never reserve more than the file can hold.
  const auto capacity = static_cast<std::size_t>(
      std::min<std::int64_t>(entries, static_cast<std::int64_t>(text.size() / 4) + 1));
  rc.reserve(capacity * (symmetric ? 2 : 1));
  values.reserve(capacity * (symmetric ? 2 : 1));
  std::int64_t seen = 0;
  const std::size_t want_tokens = pattern ? 2 : 3;
  while (lines.next(line)) {
    const std::string_view t = detail::trim(line);
    if (t.empty() || t.front() == '%') continue;
    const auto tokens = detail::split_blanks(t, want_tokens);
    std::int64_t i = 0, j = 0;
    double v = 1;
    if (tokens.size() != want_tokens || !detail::parse_int(tokens[0], i) ||
        !detail::parse_int(tokens[1], j) || (!pattern && !detail::parse_double(tokens[2], v))) {
      detail::fail_expected(where, lines.number(),
                            pattern ? "an entry \"row col\"" : "an entry \"row col value\"", line);
    }
    if (i < 1 || i > rows || j < 1 || j > cols) {
      detail::fail_at(where, lines.number(),
                      "entry (" + std::to_string(i) + ", " + std::to_string(j) +
                          ") is outside the 1-based " + std::to_string(rows) + " x " +
                          std::to_string(cols) + " matrix");
    }
    if (++seen > entries) {
      detail::fail_at(where, lines.number(),
                      "more entries than the " + std::to_string(entries) +
                          " of the size line (line " + std::to_string(size_line) + ")");
    }
    rc.emplace_back(static_cast<NodeId>(i - 1), static_cast<NodeId>(j - 1));
    values.push_back(static_cast<float>(v));
    if (symmetric && i != j) {
      rc.emplace_back(static_cast<NodeId>(j - 1), static_cast<NodeId>(i - 1));
      values.push_back(static_cast<float>(v));
    }
  }
  if (seen < entries) {
    detail::fail_at(where, lines.number() + 1,
                    "expected " + std::to_string(entries) + " entries (size line " +
                        std::to_string(size_line) + "), got end of file after " +
                        std::to_string(seen));
  }
  Graph g = csr_from_triples(res, rows, rc, values, !pattern);
  g.symmetric = symmetric;
  return g;
}

}  // namespace halo::datasets
