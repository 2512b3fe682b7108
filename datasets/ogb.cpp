#include <algorithm>
#include <limits>
#include <vector>

#include <halo/datasets/archive.hpp>
#include <halo/datasets/detail/csv.hpp>
#include <halo/datasets/detail/host.hpp>
#include <halo/datasets/detail/text.hpp>
#include <halo/datasets/graph_builder.hpp>
#include <halo/datasets/ogb.hpp>
#include <halo/datasets/preprocess.hpp>
#include <halo/kernels/error.hpp>

namespace halo::datasets {
namespace {

namespace fs = std::filesystem;

fs::path required(const fs::path& p) {
  if (!fs::is_regular_file(p)) throw IoError(p.string() + ": missing required file");
  return p;
}

std::int64_t read_num_nodes(const fs::path& path) {
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
        values[0] > std::numeric_limits<NodeId>::max()) {
      detail::fail_expected(in.source(), in.number(), "one node count in [0, 2^31 - 1]", line);
    }
    n = values[0];
  }
  if (n < 0)
    detail::fail_at(in.source(), in.number() + 1, "expected a node count, got end of file");
  return n;
}

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

}  // namespace

Dataset read_ogb_node_raw(const kernels::Resources& res, const fs::path& root,
                          const std::string& split_scheme) {
  if (!fs::is_directory(root)) throw IoError(root.string() + ": not a directory");
  const fs::path raw = root / "raw";
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

  const std::int64_t n = read_num_nodes(raw / "num-node-list.csv.gz");
  Dataset ds;
  fs::path p = fs::absolute(root).lexically_normal();
  if (p.filename().empty()) p = p.parent_path();
  ds.name = p.filename().string();
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

}  // namespace halo::datasets
