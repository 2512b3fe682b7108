#include <algorithm>
#include <array>
#include <limits>
#include <vector>

#include <halo/datasets/detail/csv.hpp>
#include <halo/datasets/detail/host.hpp>
#include <halo/datasets/detail/text.hpp>
#include <halo/datasets/fetch/archive.hpp>
#include <halo/datasets/graph_builder.hpp>
#include <halo/datasets/preprocess.hpp>
#include <halo/datasets/readers/ogb.hpp>
#include <halo/kernels/error.hpp>

namespace halo::datasets {
namespace {

namespace fs = std::filesystem;

fs::path required(const fs::path& p) {
  if (!fs::is_regular_file(p)) throw IoError(p.string() + ": missing required file");
  return p;
}

/// The one count of a single-graph file (num-node-list, num-edge-list), in [0, max].
std::int64_t read_count(const fs::path& path, const char* what,
                        std::int64_t max = std::numeric_limits<NodeId>::max()) {
  GzLineReader in(required(path));
  std::string_view line;
  std::vector<std::int64_t> values;
  std::string_view bad;
  std::int64_t n = -1;
  while (in.next(line)) {
    if (detail::trim(line).empty()) continue;
    values.clear();
    if (n >= 0) {
      detail::fail_at(in.source(), in.number(),
                      "more than one graph is listed; only single-graph (node property) "
                      "datasets are supported");
    }
    if (!detail::parse_csv_ints(line, values, bad) || values.size() != 1 || values[0] < 0 ||
        values[0] > max) {
      detail::fail_expected(in.source(), in.number(),
                            std::string("one ") + what + " in [0, " + std::to_string(max) + "]",
                            line);
    }
    n = values[0];
  }
  if (n < 0)
    detail::fail_at(in.source(), in.number() + 1,
                    std::string("expected a ") + what + ", got end of file");
  return n;
}

std::int64_t read_num_nodes(const fs::path& path) { return read_count(path, "node count"); }

std::vector<std::pair<NodeId, NodeId>> read_edges(const fs::path& path, std::int64_t n) {
  GzLineReader in(required(path));
  std::string_view line;
  std::vector<std::int64_t> values;
  std::string_view bad;
  std::vector<std::pair<NodeId, NodeId>> edges;
  while (in.next(line)) {
    values.clear();
    if (!detail::parse_csv_ints(line, values, bad) || values.size() != 2) {
      detail::fail_expected(in.source(), in.number(), "two node ids separated by a comma", line);
    }
    for (const std::int64_t v : values) {
      if (v < 0 || v >= n) {
        detail::fail_at(in.source(), in.number(),
                        "node id " + std::to_string(v) + " is outside [0, " + std::to_string(n) +
                            ") (num-node-list.csv.gz)");
      }
    }
    edges.emplace_back(static_cast<NodeId>(values[0]), static_cast<NodeId>(values[1]));
  }
  return edges;
}

kernels::Tensor<float> read_features(const kernels::Resources& res, const fs::path& path,
                                     std::int64_t n) {
  if (!fs::exists(path)) return detail::host_tensor<float>(res, n, 0);
  GzLineReader in(path);
  std::string_view line;
  std::vector<float> row;
  std::string_view bad;
  kernels::Tensor<float> x;
  std::int64_t cols = -1;
  std::int64_t r = 0;
  while (in.next(line)) {
    if (r == n) {
      detail::fail_expected(in.source(), in.number(),
                            "end of file: the graph has " + std::to_string(n) + " nodes", line);
    }
    row.clear();
    if (!detail::parse_csv_floats(line, row, bad)) {
      detail::fail_expected(
          in.source(), in.number(),
          "comma-separated finite numbers (the features of node " + std::to_string(r) + ")", bad);
    }
    if (cols < 0) {
      cols = static_cast<std::int64_t>(row.size());
      x = detail::host_tensor<float>(res, n, cols);
    }
    if (static_cast<std::int64_t>(row.size()) != cols) {
      detail::fail_at(in.source(), in.number(),
                      "expected " + std::to_string(cols) + " values (as on line 1), got " +
                          std::to_string(row.size()));
    }
    std::copy(row.begin(), row.end(), x.data() + r * cols);
    ++r;
  }
  if (r < n) {
    detail::fail_at(in.source(), in.number() + 1,
                    "expected the features of node " + std::to_string(r) + " (the graph has " +
                        std::to_string(n) + " nodes), got end of file");
  }
  if (cols < 0) x = detail::host_tensor<float>(res, n, 0);
  return x;
}

/// Labels; unlabeled[v] is set for "nan" lines.
std::vector<std::int32_t> read_labels(const fs::path& path, std::int64_t n,
                                      std::vector<bool>& unlabeled) {
  GzLineReader in(required(path));
  std::string_view line;
  std::vector<std::int64_t> values;
  std::string_view bad;
  std::vector<std::int32_t> labels;
  labels.reserve(static_cast<std::size_t>(n));
  unlabeled.assign(static_cast<std::size_t>(n), false);
  while (in.next(line)) {
    const auto v = static_cast<std::int64_t>(labels.size());
    if (v == n) {
      detail::fail_expected(in.source(), in.number(),
                            "end of file: the graph has " + std::to_string(n) + " nodes", line);
    }
    const std::string_view token = detail::trim(line);
    if (token == "nan" || token == "NaN" || token == "") {
      unlabeled[static_cast<std::size_t>(v)] = true;
      labels.push_back(0);
      continue;
    }
    values.clear();
    if (!detail::parse_csv_ints(line, values, bad)) {
      detail::fail_expected(in.source(), in.number(), "one class id or nan", line);
    }
    if (values.size() != 1) {
      detail::fail_at(in.source(), in.number(),
                      "several labels per node (multi-task datasets) are not supported");
    }
    if (values[0] < 0 || values[0] > std::numeric_limits<std::int32_t>::max() - 1) {
      detail::fail_expected(in.source(), in.number(), "a non-negative class id", line);
    }
    // num_classes is the largest id + 1: refuse an absurd one before it sizes a model.
    if (values[0] + 1 > detail::max_inferred_classes(n)) {
      detail::fail_at(in.source(), in.number(),
                      detail::inferred_classes_error(values[0], n, "is the file corrupt?"));
    }
    labels.push_back(static_cast<std::int32_t>(values[0]));
  }
  if (static_cast<std::int64_t>(labels.size()) < n) {
    detail::fail_at(
        in.source(), in.number() + 1,
        "expected the label of node " + std::to_string(labels.size()) + ", got end of file");
  }
  return labels;
}

kernels::Tensor<NodeId> read_split(const kernels::Resources& res, const fs::path& path,
                                   std::int64_t n, const std::vector<bool>& unlabeled) {
  GzLineReader in(required(path));
  std::string_view line;
  std::vector<std::int64_t> values;
  std::string_view bad;
  std::vector<NodeId> ids;
  std::vector<std::int64_t> line_of;
  while (in.next(line)) {
    values.clear();
    if (!detail::parse_csv_ints(line, values, bad) || values.size() != 1 || values[0] < 0 ||
        values[0] >= n) {
      detail::fail_expected(in.source(), in.number(),
                            "one node id in [0, " + std::to_string(n) + ")", line);
    }
    if (unlabeled[static_cast<std::size_t>(values[0])]) {
      detail::fail_at(in.source(), in.number(),
                      "node " + std::to_string(values[0]) + " has no label (nan)");
    }
    ids.push_back(static_cast<NodeId>(values[0]));
  }
  std::sort(ids.begin(), ids.end());
  if (const auto dup = std::adjacent_find(ids.begin(), ids.end()); dup != ids.end()) {
    throw IoError(path.string() + ": node " + std::to_string(*dup) + " is listed twice");
  }
  return detail::host_tensor<NodeId>(res, ids);
}

/// split/<scheme>, or the only directory under split/ when `split_scheme` is empty.
fs::path split_directory(const fs::path& root, const std::string& split_scheme) {
  fs::path split_dir;
  if (!split_scheme.empty()) {
    split_dir = root / "split" / split_scheme;
    if (!fs::is_directory(split_dir)) throw IoError(split_dir.string() + ": no such split scheme");
  } else {
    const fs::path splits = root / "split";
    if (!fs::is_directory(splits)) throw IoError(splits.string() + ": missing split directory");
    std::vector<fs::path> schemes;
    for (const auto& e : fs::directory_iterator(splits)) {
      if (e.is_directory()) schemes.push_back(e.path());
    }
    if (schemes.size() != 1) {
      throw IoError(splits.string() + ": expected exactly one split scheme, found " +
                    std::to_string(schemes.size()) + "; name one");
    }
    split_dir = schemes[0];
  }
  return split_dir;
}

std::string directory_name(const fs::path& root) {
  fs::path p = fs::absolute(root).lexically_normal();
  if (p.filename().empty()) p = p.parent_path();
  return p.filename().string();
}

/// The comma-separated fields of `line`, trimmed.
std::vector<std::string> csv_fields(std::string_view line) {
  std::vector<std::string> out;
  std::size_t start = 0;
  while (true) {
    const std::size_t comma = line.find(',', start);
    out.emplace_back(detail::trim(line.substr(start, comma - start)));
    if (comma == std::string_view::npos) break;
    start = comma + 1;
  }
  return out;
}

}  // namespace

Dataset read_ogb_node_raw(const kernels::Resources& res, const fs::path& root,
                          const std::string& split_scheme) {
  if (!fs::is_directory(root)) throw IoError(root.string() + ": not a directory");
  const fs::path raw = root / "raw";
  const fs::path split_dir = split_directory(root, split_scheme);
  const std::int64_t n = read_num_nodes(raw / "num-node-list.csv.gz");
  Dataset ds;
  ds.name = directory_name(root);
  {
    const auto edges = read_edges(raw / "edge.csv.gz", n);
    ds.graph = deduplicate(res, graph_from_edges(res, n, edges));
  }
  ds.features = read_features(res, raw / "node-feat.csv.gz", n);
  std::vector<bool> unlabeled;
  const std::vector<std::int32_t> labels = read_labels(raw / "node-label.csv.gz", n, unlabeled);
  ds.labels = detail::host_tensor<std::int32_t>(res, labels);
  ds.num_classes = 1 + (labels.empty() ? 0 : *std::max_element(labels.begin(), labels.end()));
  ds.train_idx = read_split(res, split_dir / "train.csv.gz", n, unlabeled);
  ds.val_idx = read_split(res, split_dir / "valid.csv.gz", n, unlabeled);
  ds.test_idx = read_split(res, split_dir / "test.csv.gz", n, unlabeled);
  validate(ds);
  return ds;
}

HeteroGraph read_ogb_hetero_raw(const kernels::Resources& res, const fs::path& root,
                                const std::string& split_scheme) {
  if (!fs::is_directory(root)) throw IoError(root.string() + ": not a directory");
  const fs::path raw = root / "raw";
  const fs::path split_dir = split_directory(root, split_scheme);
  HeteroGraph g;
  g.name = directory_name(root);

  // The node types and their counts: a header line of names, one line of counts.
  {
    GzLineReader in(required(raw / "num-node-dict.csv.gz"));
    std::string_view line;
    if (!in.next(line))
      detail::fail_at(in.source(), 1, "expected a header line of node type names, got end of file");
    const std::vector<std::string> names = csv_fields(line);
    if (!in.next(line))
      detail::fail_at(in.source(), 2, "expected one line of node counts, got end of file");
    std::vector<std::int64_t> counts;
    std::string_view bad;
    if (!detail::parse_csv_ints(line, counts, bad) || counts.size() != names.size())
      detail::fail_expected(in.source(), in.number(),
                            std::to_string(names.size()) + " comma-separated node counts", line);
    std::vector<std::pair<std::string, std::int64_t>> types;
    for (std::size_t i = 0; i < names.size(); ++i) {
      if (names[i].empty())
        detail::fail_at(in.source(), 1,
                        "empty node type name (field " + std::to_string(i + 1) + ")");
      if (counts[i] < 0 || counts[i] > std::numeric_limits<NodeId>::max())
        detail::fail_expected(in.source(), 2, "node counts in [0, 2^31 - 1]", line);
      types.emplace_back(names[i], counts[i]);
    }
    while (in.next(line)) {
      if (!detail::trim(line).empty())
        detail::fail_at(in.source(), in.number(),
                        "more than one graph is listed; only single-graph (node property) "
                        "datasets are supported");
    }
    std::sort(types.begin(), types.end());
    for (std::size_t i = 0; i < types.size(); ++i) {
      if (i > 0 && types[i].first == types[i - 1].first)
        detail::fail_at(in.source(), 1, "node type '" + types[i].first + "' is listed twice");
      NodeType t;
      t.name = types[i].first;
      t.num_nodes = types[i].second;
      g.node_types.push_back(std::move(t));
    }
  }

  // The relations: (src type, relation, dst type) triplets, sorted as OGB does.
  std::vector<std::array<std::string, 3>> triplets;
  {
    GzLineReader in(required(raw / "triplet-type-list.csv.gz"));
    std::string_view line;
    while (in.next(line)) {
      if (detail::trim(line).empty()) continue;
      const std::vector<std::string> f = csv_fields(line);
      if (f.size() != 3 || f[1].empty())
        detail::fail_expected(in.source(), in.number(), "src_type,relation,dst_type", line);
      for (const std::string* type : {&f[0], &f[2]})
        if (g.find_type(*type) < 0)
          detail::fail_at(
              in.source(), in.number(),
              "unknown node type '" + *type + "' (num-node-dict.csv.gz lists the types)");
      triplets.push_back({f[0], f[1], f[2]});
    }
    std::sort(triplets.begin(), triplets.end());
    if (const auto dup = std::adjacent_find(triplets.begin(), triplets.end());
        dup != triplets.end())
      throw IoError(in.source() + ": triplet " + (*dup)[0] + "," + (*dup)[1] + "," + (*dup)[2] +
                    " is listed twice");
  }
  std::vector<Relation> stored;
  for (const auto& tr : triplets) {
    const std::string dir_name = tr[0] + "___" + tr[1] + "___" + tr[2];
    const fs::path dir = raw / "relations" / dir_name;
    Relation r;
    const auto shared = std::count_if(triplets.begin(), triplets.end(),
                                      [&](const auto& o) { return o[1] == tr[1]; });
    r.name = shared > 1 ? dir_name : tr[1];
    r.src_type = g.find_type(tr[0]);
    r.dst_type = g.find_type(tr[2]);
    const std::int64_t ns = g.node_types[static_cast<std::size_t>(r.src_type)].num_nodes;
    const std::int64_t nd = g.node_types[static_cast<std::size_t>(r.dst_type)].num_nodes;
    const std::int64_t expected = read_count(dir / "num-edge-list.csv.gz", "edge count",
                                             std::numeric_limits<std::int64_t>::max());
    GzLineReader in(required(dir / "edge.csv.gz"));
    std::string_view line;
    std::vector<std::int64_t> values;
    std::string_view bad;
    std::vector<std::pair<NodeId, NodeId>> dst_src;
    dst_src.reserve(static_cast<std::size_t>(std::min<std::int64_t>(expected, 1 << 26)));
    while (in.next(line)) {
      values.clear();
      if (!detail::parse_csv_ints(line, values, bad) || values.size() != 2)
        detail::fail_expected(in.source(), in.number(), "two node ids separated by a comma", line);
      if (values[0] < 0 || values[0] >= ns || values[1] < 0 || values[1] >= nd)
        detail::fail_at(in.source(), in.number(),
                        "edge " + std::to_string(values[0]) + " -> " + std::to_string(values[1]) +
                            " outside the types' ranges (" + std::to_string(ns) + " " + tr[0] +
                            " x " + std::to_string(nd) + " " + tr[2] + " nodes)");
      dst_src.emplace_back(static_cast<NodeId>(values[1]), static_cast<NodeId>(values[0]));
    }
    if (static_cast<std::int64_t>(dst_src.size()) != expected)
      throw IoError(in.source() + ": " + std::to_string(dst_src.size()) +
                    " edges, but num-edge-list.csv.gz says " + std::to_string(expected));
    r.adj = relation_csr(res, nd, ns, std::move(dst_src));
    stored.push_back(std::move(r));
  }
  add_reverse_relations(res, g, std::move(stored));

  // Features per type, where given; the labelled type is the target.
  g.target_type = -1;
  for (std::int32_t t = 0; t < g.num_types(); ++t) {
    NodeType& type = g.node_types[static_cast<std::size_t>(t)];
    kernels::Tensor<float> x =
        read_features(res, raw / "node-feat" / type.name / "node-feat.csv.gz", type.num_nodes);
    if (x.cols() > 0) {
      type.features = std::move(x);
      type.feature_kind = "dense";
    }
    if (!fs::is_regular_file(raw / "node-label" / type.name / "node-label.csv.gz")) continue;
    if (g.target_type >= 0)
      throw IoError((raw / "node-label").string() + ": labels for '" +
                    g.node_types[static_cast<std::size_t>(g.target_type)].name + "' and '" +
                    type.name + "': one labelled (target) type expected");
    g.target_type = t;
  }
  if (g.target_type < 0)
    throw IoError((raw / "node-label").string() +
                  ": no <type>/node-label.csv.gz for any node type");
  const NodeType& target = g.node_types[static_cast<std::size_t>(g.target_type)];
  std::vector<bool> unlabeled;
  const std::vector<std::int32_t> labels = read_labels(
      raw / "node-label" / target.name / "node-label.csv.gz", target.num_nodes, unlabeled);
  g.labels = detail::host_tensor<std::int32_t>(res, labels);
  g.num_classes = 1 + (labels.empty() ? 0 : *std::max_element(labels.begin(), labels.end()));
  const fs::path split = split_dir / target.name;
  g.train_idx = read_split(res, split / "train.csv.gz", target.num_nodes, unlabeled);
  g.val_idx = read_split(res, split / "valid.csv.gz", target.num_nodes, unlabeled);
  g.test_idx = read_split(res, split / "test.csv.gz", target.num_nodes, unlabeled);
  validate(g);
  return g;
}

}  // namespace halo::datasets
