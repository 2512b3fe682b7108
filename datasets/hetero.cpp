// The typed directory reader, the checks and the homogenised view of a HeteroGraph.
#include <algorithm>
#include <array>
#include <limits>
#include <map>
#include <numeric>
#include <regex>
#include <utility>

#include <halo/datasets/detail/host.hpp>
#include <halo/datasets/detail/text.hpp>
#include <halo/datasets/hetero.hpp>
#include <halo/kernels/error.hpp>

namespace halo::datasets {

namespace fs = std::filesystem;
using detail::fail_at;
using detail::fail_expected;

std::int64_t HeteroGraph::num_nodes() const {
  std::int64_t n = 0;
  for (const NodeType& t : node_types) n += t.num_nodes;
  return n;
}

std::int64_t HeteroGraph::num_edges() const {
  std::int64_t m = 0;
  for (const Relation& r : relations) m += r.adj.num_edges();
  return m;
}

std::vector<std::int64_t> HeteroGraph::type_offsets() const {
  std::vector<std::int64_t> off(node_types.size() + 1, 0);
  for (std::size_t t = 0; t < node_types.size(); ++t) off[t + 1] = off[t] + node_types[t].num_nodes;
  return off;
}

std::int32_t HeteroGraph::find_type(const std::string& type) const {
  for (std::size_t t = 0; t < node_types.size(); ++t)
    if (node_types[t].name == type) return static_cast<std::int32_t>(t);
  return -1;
}

namespace {

void require(bool ok, const HeteroGraph& g, const std::string& what) {
  if (!ok) throw IoError("dataset '" + g.name + "': " + what);
}

template <class Idx>
void check_csr(const HeteroGraph& g, const kernels::CsrMatrix<Idx, float>& a, std::int64_t rows,
               std::int64_t cols, const std::string& what) {
  require(a.indptr.device() == kernels::Device::Cpu, g, what + " must be on the host");
  require(a.num_rows() == rows && a.num_cols == cols, g,
          what + " must be " + std::to_string(rows) + " x " + std::to_string(cols) + ", got " +
              std::to_string(a.num_rows()) + " x " + std::to_string(a.num_cols));
  require(a.values.empty() || a.values.numel() == a.num_edges(), g,
          what + ": one value per entry expected");
  if (rows == 0) return;
  const std::int64_t* p = a.indptr.data();
  require(p[0] == 0 && p[rows] == a.num_edges(), g, what + ": indptr does not span the entries");
  for (std::int64_t r = 0; r < rows; ++r)
    require(p[r] <= p[r + 1], g, what + ": indptr decreases at row " + std::to_string(r));
  for (std::int64_t e = 0; e < a.num_edges(); ++e)
    require(a.indices.data()[e] >= 0 && a.indices.data()[e] < cols, g,
            what + ": entry " + std::to_string(e) + " has a column outside [0, " +
                std::to_string(cols) + ")");
}

void check_split(const HeteroGraph& g, const kernels::Tensor<NodeId>& idx, std::int64_t n,
                 std::vector<std::uint8_t>& seen, const char* which) {
  for (std::int64_t i = 0; i < idx.numel(); ++i) {
    const NodeId v = idx.data()[i];
    require(v >= 0 && v < n, g,
            std::string(which) + " split: id " + std::to_string(v) + " outside [0, " +
                std::to_string(n) + ")");
    require(i == 0 || idx.data()[i - 1] < v, g, std::string(which) + " split must be ascending");
    require(!seen[static_cast<std::size_t>(v)], g,
            std::string(which) + " split: id " + std::to_string(v) + " is in two splits");
    seen[static_cast<std::size_t>(v)] = 1;
  }
}

}  // namespace

void validate(const HeteroGraph& g) {
  require(g.num_types() >= 1, g, "no node types");
  require(g.target_type >= 0 && g.target_type < g.num_types(), g, "target type out of range");
  for (const NodeType& t : g.node_types) {
    require(t.num_nodes >= 0, g, "type '" + t.name + "' has a negative node count");
    if (!t.has_features()) continue;
    require(kernels::num_rows(t.features) == t.num_nodes, g,
            "type '" + t.name + "': one feature row per node expected");
    if (const auto* s = std::get_if<kernels::CsrMatrix<std::int32_t, float>>(&t.features))
      check_csr(g, *s, t.num_nodes, s->num_cols, "features of '" + t.name + "'");
  }
  for (const Relation& r : g.relations) {
    require(r.src_type >= 0 && r.src_type < g.num_types() && r.dst_type >= 0 &&
                r.dst_type < g.num_types(),
            g, "relation '" + r.name + "' names a type out of range");
    check_csr(g, r.adj, g.node_types[static_cast<std::size_t>(r.dst_type)].num_nodes,
              g.node_types[static_cast<std::size_t>(r.src_type)].num_nodes,
              "relation '" + r.name + "'");
  }
  const std::int64_t n = g.node_types[static_cast<std::size_t>(g.target_type)].num_nodes;
  require(g.num_classes >= 1, g, "num_classes must be >= 1");
  require(g.labels.numel() == n, g, "one label per target node expected");
  for (std::int64_t i = 0; i < n; ++i)
    require(g.labels.data()[i] >= 0 && g.labels.data()[i] < g.num_classes, g,
            "label of node " + std::to_string(i) + " outside [0, num_classes)");
  std::vector<std::uint8_t> seen(static_cast<std::size_t>(n), 0);
  check_split(g, g.train_idx, n, seen, "train");
  check_split(g, g.val_idx, n, seen, "val");
  check_split(g, g.test_idx, n, seen, "test");
}

Graph homogenize(const kernels::Resources& res, const HeteroGraph& g) {
  const std::vector<std::int64_t> off = g.type_offsets();
  const std::int64_t n = off.back();
  Graph out{detail::host_tensor<std::int64_t>(res, n + 1),
            detail::host_tensor<NodeId>(res, g.num_edges()),
            {},
            n};
  std::int64_t* indptr = out.indptr.data();
  std::fill(indptr, indptr + n + 1, std::int64_t{0});
  for (const Relation& r : g.relations) {
    const std::int64_t base = off[static_cast<std::size_t>(r.dst_type)];
    for (std::int64_t d = 0; d < r.adj.num_rows(); ++d)
      indptr[base + d + 1] += r.adj.indptr.data()[d + 1] - r.adj.indptr.data()[d];
  }
  std::partial_sum(indptr, indptr + n + 1, indptr);
  std::vector<std::int64_t> fill(indptr, indptr + n);
  for (const Relation& r : g.relations) {
    const std::int64_t dst0 = off[static_cast<std::size_t>(r.dst_type)];
    const std::int64_t src0 = off[static_cast<std::size_t>(r.src_type)];
    for (std::int64_t d = 0; d < r.adj.num_rows(); ++d)
      for (std::int64_t e = r.adj.indptr.data()[d]; e < r.adj.indptr.data()[d + 1]; ++e)
        out.indices.data()[fill[static_cast<std::size_t>(dst0 + d)]++] =
            static_cast<NodeId>(src0 + r.adj.indices.data()[e]);
  }
  for (std::int64_t v = 0; v < n; ++v)
    std::sort(out.indices.data() + indptr[v], out.indices.data() + indptr[v + 1]);
  return out;
}

bool is_hetero_directory(const fs::path& dir) {
  std::error_code ec;
  return fs::is_regular_file(dir / "node_types.tsv", ec);
}

std::vector<int> hetero_splits(const fs::path& dir) {
  std::vector<int> ks;
  std::error_code ec;
  if (!fs::is_directory(dir / "splits", ec)) return ks;
  static const std::regex pattern("train_([0-9]{1,6})\\.txt");
  for (const auto& entry : fs::directory_iterator(dir / "splits", ec)) {
    std::smatch m;
    const std::string file = entry.path().filename().string();
    if (std::regex_match(file, m, pattern)) ks.push_back(std::stoi(m[1].str()));
  }
  std::sort(ks.begin(), ks.end());
  return ks;
}

namespace {

constexpr std::int64_t kMaxCount = std::numeric_limits<std::int32_t>::max();

/// Splits `line` at blanks (spaces, tabs) into at most `max` tokens (the rest of the line stays
/// in the last one); returns how many it found. No allocation: the readers call it per line.
std::size_t split_fields(std::string_view line, std::string_view* out, std::size_t max) {
  std::size_t n = 0, i = 0;
  while (i < line.size()) {
    while (i < line.size() && (line[i] == ' ' || line[i] == '\t')) ++i;
    if (i == line.size()) break;
    if (n + 1 == max) {
      out[n++] = detail::trim(line.substr(i));
      return n;
    }
    std::size_t j = i;
    while (j < line.size() && line[j] != ' ' && line[j] != '\t') ++j;
    out[n++] = line.substr(i, j - i);
    i = j;
  }
  return n;
}

/// The data lines of a table: blank lines and lines starting with '#' skipped.
struct Table {
  std::string path;
  std::string text;
  /// f(tokens, line number, line) for every data line of exactly `columns` (<= 7) fields.
  template <class F>
  void each(std::size_t columns, const std::string& what, const F& f) const {
    detail::TextLines lines(text);
    std::string_view line;
    std::array<std::string_view, 8> tokens;
    while (lines.next(line)) {
      const std::string_view t = detail::trim(line);
      if (t.empty() || t.front() == '#') continue;
      // One field more than expected catches trailing extra columns.
      if (split_fields(t, tokens.data(), columns + 1) != columns)
        fail_expected(path, lines.number(), what, line);
      f(tokens, lines.number(), line);
    }
  }
};

Table open_table(const fs::path& path) {
  std::error_code ec;
  if (!fs::is_regular_file(path, ec))
    throw IoError(path.string() + ": missing (the typed directory format needs it, see " +
                  "docs/formats.md)");
  return {path.string(), detail::read_whole_file(path)};
}

std::int64_t parse_count(const Table& t, std::int64_t line, std::string_view token,
                         const char* what, std::int64_t max = kMaxCount) {
  std::int64_t v = 0;
  if (!detail::parse_int(token, v) || v < 0 || v > max)
    fail_expected(t.path, line,
                  std::string(what) + " (an integer in [0, " + std::to_string(max) + "])", token);
  return v;
}

/// One id per line in [0, n).
std::vector<NodeId> read_ids(const fs::path& path, std::int64_t n, const char* what) {
  const Table t = open_table(path);
  std::vector<NodeId> ids;
  t.each(1, std::string("one ") + what, [&](const auto& tok, std::int64_t line, std::string_view) {
    std::int64_t v = 0;
    if (!detail::parse_int(tok[0], v) || v < 0 || v >= n)
      fail_expected(t.path, line, std::string(what) + " in [0, " + std::to_string(n) + ")", tok[0]);
    ids.push_back(static_cast<NodeId>(v));
  });
  return ids;
}

/// `name_<type>`: the coo features `node<TAB>index<TAB>value` of `n` nodes and `dim` columns.
kernels::CsrMatrix<std::int32_t, float> read_coo(const kernels::Resources& res,
                                                 const fs::path& path, std::int64_t n,
                                                 std::int64_t dim) {
  const Table t = open_table(path);
  std::vector<std::pair<std::pair<std::int32_t, std::int32_t>, std::pair<float, std::int64_t>>> e;
  t.each(3, "node, feature index and value separated by tabs",
         [&](const auto& tok, std::int64_t line, std::string_view raw) {
           std::int64_t v = 0, c = 0;
           double x = 0;
           if (!detail::parse_int(tok[0], v) || !detail::parse_int(tok[1], c) ||
               !detail::parse_double(tok[2], x))
             fail_expected(t.path, line, "node, feature index and finite value", raw);
           if (v < 0 || v >= n)
             fail_at(t.path, line,
                     "node " + std::to_string(v) + " outside [0, " + std::to_string(n) + ")");
           if (c < 0 || c >= dim)
             fail_at(t.path, line,
                     "feature index " + std::to_string(c) + " outside [0, " + std::to_string(dim) +
                         ") (feature_dim in node_types.tsv)");
           e.push_back({{static_cast<std::int32_t>(v), static_cast<std::int32_t>(c)},
                        {static_cast<float>(x), line}});
         });
  // Files sorted by (node, feature), as heco_acm's, skip the sort.
  const auto by_entry = [](const auto& a, const auto& b) { return a.first < b.first; };
  if (!std::is_sorted(e.begin(), e.end(), by_entry)) std::stable_sort(e.begin(), e.end(), by_entry);
  for (std::size_t k = 1; k < e.size(); ++k)
    if (e[k].first == e[k - 1].first)
      fail_at(t.path, e[k].second.second,
              "node " + std::to_string(e[k].first.first) + ", feature " +
                  std::to_string(e[k].first.second) + " is listed twice (also on line " +
                  std::to_string(e[k - 1].second.second) + ")");
  const auto nnz = static_cast<std::int64_t>(e.size());
  kernels::CsrMatrix<std::int32_t, float> x{detail::host_tensor<std::int64_t>(res, n + 1),
                                            detail::host_tensor<std::int32_t>(res, nnz),
                                            detail::host_tensor<float>(res, nnz), dim};
  std::fill(x.indptr.data(), x.indptr.data() + n + 1, std::int64_t{0});
  for (std::int64_t k = 0; k < nnz; ++k) {
    ++x.indptr.data()[e[static_cast<std::size_t>(k)].first.first + 1];
    x.indices.data()[k] = e[static_cast<std::size_t>(k)].first.second;
    x.values.data()[k] = e[static_cast<std::size_t>(k)].second.first;
  }
  std::partial_sum(x.indptr.data(), x.indptr.data() + n + 1, x.indptr.data());
  return x;
}

/// A row of `dim` floats per node.
kernels::Tensor<float> read_dense(const kernels::Resources& res, const fs::path& path,
                                  std::int64_t n, std::int64_t dim) {
  const Table t = open_table(path);
  // Every value takes a byte at least: a file too short for n x dim values is refused before
  // the tensor is allocated (a mistyped num_nodes or feature_dim would ask for terabytes).
  if (static_cast<double>(t.text.size()) < static_cast<double>(n) * static_cast<double>(dim))
    throw IoError(t.path + ": " + std::to_string(t.text.size()) + " bytes cannot hold " +
                  std::to_string(n) + " x " + std::to_string(dim) +
                  " values (num_nodes x feature_dim in node_types.tsv)");
  auto x = detail::host_tensor<float>(res, n, dim);
  std::int64_t row = 0;
  detail::TextLines lines(t.text);
  std::string_view line;
  while (lines.next(line)) {
    const std::string_view s = detail::trim(line);
    if (s.empty() || s.front() == '#') continue;
    if (row == n)
      fail_expected(t.path, lines.number(), "end of file (" + std::to_string(n) + " nodes)", line);
    const auto want = [&] { return std::to_string(dim) + " finite numbers (feature_dim)"; };
    std::string_view rest = s;
    for (std::int64_t c = 0; c < dim; ++c) {
      std::string_view tok[2];
      if (split_fields(rest, tok, 2) < (c + 1 < dim ? 2u : 1u))
        fail_expected(t.path, lines.number(), want(), line);
      double v = 0;
      if (!detail::parse_double(c + 1 < dim ? tok[0] : rest, v))
        fail_expected(t.path, lines.number(), want(), line);
      x(row, c) = static_cast<float>(v);
      rest = c + 1 < dim ? tok[1] : std::string_view();
    }
    ++row;
  }
  if (row < n)
    fail_at(t.path, lines.number() + 1,
            "expected the features of node " + std::to_string(row) + " (" + std::to_string(n) +
                " nodes), got the end of the file");
  return x;
}

bool ends_with(const std::string& s, const std::string& suffix) {
  return s.size() >= suffix.size() &&
         s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

/// One split file, sorted. owner_line[v] / owner_file[v]: where v was listed already (line 0:
/// nowhere), owner_file indexing `files`.
kernels::Tensor<NodeId> sorted_split(const kernels::Resources& res,
                                     const std::vector<fs::path>& files, std::uint8_t which,
                                     std::int64_t n, std::vector<std::int64_t>& owner_line,
                                     std::vector<std::uint8_t>& owner_file) {
  const fs::path& path = files[which];
  std::vector<NodeId> ids = read_ids(path, n, "node id of the target type");
  // Line numbers for the error naming a node listed twice (in this file or in another split).
  const Table t = open_table(path);
  detail::TextLines lines(t.text);
  std::string_view line;
  while (lines.next(line)) {
    const std::string_view s = detail::trim(line);
    if (s.empty() || s.front() == '#') continue;
    std::int64_t v = 0;
    detail::parse_int(s, v);
    auto& prev = owner_line[static_cast<std::size_t>(v)];
    if (prev != 0)
      fail_at(t.path, lines.number(),
              "node " + std::to_string(v) + " is already listed (" +
                  files[owner_file[static_cast<std::size_t>(v)]].string() + ":" +
                  std::to_string(prev) + ")");
    prev = lines.number();
    owner_file[static_cast<std::size_t>(v)] = which;
  }
  std::sort(ids.begin(), ids.end());
  return detail::host_tensor<NodeId>(res, ids);
}

}  // namespace

Graph relation_csr(const kernels::Resources& res, std::int64_t num_dst, std::int64_t num_src,
                   std::vector<std::pair<NodeId, NodeId>> dst_src) {
  std::sort(dst_src.begin(), dst_src.end());
  dst_src.erase(std::unique(dst_src.begin(), dst_src.end()), dst_src.end());
  const auto m = static_cast<std::int64_t>(dst_src.size());
  Graph a{detail::host_tensor<std::int64_t>(res, num_dst + 1),
          detail::host_tensor<NodeId>(res, m),
          {},
          num_src};
  std::fill(a.indptr.data(), a.indptr.data() + num_dst + 1, std::int64_t{0});
  for (std::int64_t k = 0; k < m; ++k) {
    ++a.indptr.data()[dst_src[static_cast<std::size_t>(k)].first + 1];
    a.indices.data()[k] = dst_src[static_cast<std::size_t>(k)].second;
  }
  std::partial_sum(a.indptr.data(), a.indptr.data() + num_dst + 1, a.indptr.data());
  return a;
}

void add_reverse_relations(const kernels::Resources& res, HeteroGraph& g,
                           std::vector<Relation> stored) {
  // The layers aggregate over incoming edges: with the reverses a source type learns from its
  // destinations too.
  std::vector<Relation> reverses;
  for (const Relation& r : stored) {
    Relation rev;
    rev.name = "rev_" + r.name;
    rev.src_type = r.dst_type;
    rev.dst_type = r.src_type;
    std::vector<std::pair<NodeId, NodeId>> dst_src;
    dst_src.reserve(static_cast<std::size_t>(r.adj.num_edges()));
    for (std::int64_t d = 0; d < r.adj.num_rows(); ++d)
      for (std::int64_t e = r.adj.indptr.data()[d]; e < r.adj.indptr.data()[d + 1]; ++e)
        dst_src.emplace_back(r.adj.indices.data()[e], static_cast<NodeId>(d));
    rev.adj = relation_csr(res, r.adj.num_cols, r.adj.num_rows(), std::move(dst_src));
    reverses.push_back(std::move(rev));
  }
  for (Relation& r : stored) g.relations.push_back(std::move(r));
  for (Relation& r : reverses) g.relations.push_back(std::move(r));
}

HeteroGraph read_hetero_directory(const kernels::Resources& res, const fs::path& dir,
                                  std::optional<int> split) {
  HeteroGraph g;
  g.name = fs::absolute(dir).lexically_normal().filename().string();
  if (g.name.empty())
    g.name = fs::absolute(dir).lexically_normal().parent_path().filename().string();
  const Table types = open_table(dir / "node_types.tsv");
  types.each(5, "type, num_nodes, feature_file, feature_dim, feature_kind separated by tabs",
             [&](const auto& tok, std::int64_t line, std::string_view) {
               NodeType t;
               t.name = std::string(tok[0]);
               if (g.find_type(t.name) >= 0)
                 fail_at(types.path, line, "type '" + t.name + "' is listed twice");
               t.num_nodes = parse_count(types, line, tok[1], "num_nodes");
               const std::string file(tok[2]);
               const std::int64_t dim = parse_count(types, line, tok[3], "feature_dim", 1 << 24);
               t.feature_kind = std::string(tok[4]);
               if (file == "-") {
                 t.features = kernels::Tensor<float>();
               } else if (dim == 0) {
                 fail_at(types.path, line, "feature_file '" + file + "' with feature_dim 0");
               } else if (ends_with(file, ".coo.tsv")) {
                 t.features = read_coo(res, dir / file, t.num_nodes, dim);
               } else if (ends_with(file, ".dense.tsv")) {
                 t.features = read_dense(res, dir / file, t.num_nodes, dim);
               } else {
                 fail_expected(types.path, line,
                               "a feature_file ending in .coo.tsv or .dense.tsv, or -", file);
               }
               g.node_types.push_back(std::move(t));
             });
  if (g.node_types.empty()) throw IoError(types.path + ": no node types listed");

  const Table rels = open_table(dir / "edge_types.tsv");
  std::vector<Relation> stored;
  rels.each(5, "relation, src_type, dst_type, file, num_edges separated by tabs",
            [&](const auto& tok, std::int64_t line, std::string_view) {
              Relation r;
              r.name = std::string(tok[0]);
              for (const Relation& o : stored)
                if (o.name == r.name)
                  fail_at(rels.path, line, "relation '" + r.name + "' is listed twice");
              r.src_type = g.find_type(std::string(tok[1]));
              r.dst_type = g.find_type(std::string(tok[2]));
              if (r.src_type < 0 || r.dst_type < 0)
                fail_at(rels.path, line,
                        "unknown node type '" + std::string(r.src_type < 0 ? tok[1] : tok[2]) +
                            "' (node_types.tsv lists the types)");
              const std::int64_t expected = parse_count(rels, line, tok[4], "num_edges",
                                                        std::numeric_limits<std::int64_t>::max());
              const std::int64_t ns = g.node_types[static_cast<std::size_t>(r.src_type)].num_nodes;
              const std::int64_t nd = g.node_types[static_cast<std::size_t>(r.dst_type)].num_nodes;
              const Table edges = open_table(dir / std::string(tok[3]));
              std::vector<std::pair<NodeId, NodeId>> dst_src;
              edges.each(2, "src and dst ids separated by a tab",
                         [&](const auto& e, std::int64_t eline, std::string_view raw) {
                           std::int64_t s = 0, d = 0;
                           if (!detail::parse_int(e[0], s) || !detail::parse_int(e[1], d))
                             fail_expected(edges.path, eline, "src and dst ids", raw);
                           if (s < 0 || s >= ns || d < 0 || d >= nd)
                             fail_at(edges.path, eline,
                                     "edge " + std::to_string(s) + " -> " + std::to_string(d) +
                                         " outside the types' ranges (" + std::to_string(ns) +
                                         " x " + std::to_string(nd) + " nodes)");
                           dst_src.emplace_back(static_cast<NodeId>(d), static_cast<NodeId>(s));
                         });
              if (static_cast<std::int64_t>(dst_src.size()) != expected)
                fail_at(rels.path, line,
                        "num_edges is " + std::to_string(expected) + " but " + edges.path +
                            " lists " + std::to_string(dst_src.size()) + " edges");
              r.adj = relation_csr(res, nd, ns, std::move(dst_src));
              stored.push_back(std::move(r));
            });
  add_reverse_relations(res, g, std::move(stored));

  // The target type: the one with a labels_<type>.txt.
  g.target_type = -1;
  for (std::int32_t t = 0; t < g.num_types(); ++t) {
    std::error_code ec;
    if (!fs::is_regular_file(
            dir / ("labels_" + g.node_types[static_cast<std::size_t>(t)].name + ".txt"), ec))
      continue;
    if (g.target_type >= 0)
      throw IoError(dir.string() + ": labels_" +
                    g.node_types[static_cast<std::size_t>(g.target_type)].name +
                    ".txt and labels_" + g.node_types[static_cast<std::size_t>(t)].name +
                    ".txt: one labelled (target) type expected");
    g.target_type = t;
  }
  if (g.target_type < 0)
    throw IoError(dir.string() + ": no labels_<type>.txt for any type of node_types.tsv");
  const NodeType& target = g.node_types[static_cast<std::size_t>(g.target_type)];
  const fs::path labels_path = dir / ("labels_" + target.name + ".txt");
  const std::vector<NodeId> labels = read_ids(labels_path, kMaxCount, "class id");
  if (static_cast<std::int64_t>(labels.size()) != target.num_nodes)
    throw IoError(labels_path.string() + ": " + std::to_string(labels.size()) + " labels for the " +
                  std::to_string(target.num_nodes) + " nodes of type '" + target.name + "'");
  g.labels = detail::host_tensor<std::int32_t>(res, target.num_nodes);
  std::int32_t max_label = -1;
  for (std::size_t i = 0; i < labels.size(); ++i) {
    g.labels.data()[i] = static_cast<std::int32_t>(labels[i]);
    max_label = std::max(max_label, g.labels.data()[i]);
  }
  g.num_classes = max_label + 1;
  if (target.num_nodes > 0 && g.num_classes > detail::max_inferred_classes(target.num_nodes))
    throw IoError(labels_path.string() + ": " +
                  detail::inferred_classes_error(max_label, target.num_nodes, "fix the labels"));

  const std::vector<int> ks = hetero_splits(dir);
  if (ks.empty()) throw IoError((dir / "splits").string() + ": no train_<K>.txt split files");
  const int k = split.value_or(ks.front());
  if (std::find(ks.begin(), ks.end(), k) == ks.end()) {
    std::string have;
    for (const int v : ks) have += (have.empty() ? "" : ", ") + std::to_string(v);
    throw IoError((dir / "splits").string() + ": no split " + std::to_string(k) +
                  " (--split; the directory has " + have + ")");
  }
  std::vector<std::int64_t> owner_line(static_cast<std::size_t>(target.num_nodes), 0);
  std::vector<std::uint8_t> owner_file(static_cast<std::size_t>(target.num_nodes), 0);
  const std::string suffix = "_" + std::to_string(k) + ".txt";
  const std::vector<fs::path> files = {dir / "splits" / ("train" + suffix),
                                       dir / "splits" / ("val" + suffix),
                                       dir / "splits" / ("test" + suffix)};
  g.train_idx = sorted_split(res, files, 0, target.num_nodes, owner_line, owner_file);
  g.val_idx = sorted_split(res, files, 1, target.num_nodes, owner_line, owner_file);
  g.test_idx = sorted_split(res, files, 2, target.num_nodes, owner_line, owner_file);
  g.split = k;
  validate(g);
  return g;
}

}  // namespace halo::datasets
