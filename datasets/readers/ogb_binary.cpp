// OGB's binary node-property layout: raw/data.npz, raw/node-label.npz, gzipped split CSVs.
#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstring>
#include <limits>
#include <map>
#include <utility>
#include <vector>

#include <halo/datasets/detail/host.hpp>
#include <halo/datasets/fetch/archive.hpp>
#include <halo/datasets/graph_builder.hpp>
#include <halo/datasets/preprocess.hpp>
#include <halo/datasets/readers/numpy.hpp>
#include <halo/datasets/readers/ogb_binary.hpp>
#include <halo/datasets/store/csr_builder.hpp>
#include <halo/kernels/error.hpp>

namespace halo::datasets {
namespace {

namespace fs = std::filesystem;

const NpyArray& key(const std::map<std::string, NpyArray>& npz, const fs::path& file,
                    const std::string& name) {
  const auto it = npz.find(name);
  if (it == npz.end()) throw IoError(file.string() + ": no array \"" + name + "\"");
  return it->second;
}

/// Element i of an integer array, read in place (no copy of a multi-GB edge list).
std::int64_t int_at(const NpyArray& a, std::int64_t i) {
  if (a.dtype == "<i8") {
    std::int64_t v = 0;
    std::memcpy(&v, a.bytes.data() + i * 8, 8);
    return v;
  }
  std::int32_t v = 0;
  std::memcpy(&v, a.bytes.data() + i * 4, 4);
  return v;
}

std::vector<NodeId> read_split(const fs::path& path, std::int64_t n,
                               const std::vector<std::int32_t>& labelled) {
  if (!fs::is_regular_file(path)) throw IoError(path.string() + ": missing required file");
  GzLineReader in(path);
  std::string_view line;
  std::vector<NodeId> ids;
  while (in.next(line)) {
    std::int64_t v = -1;
    const auto [ptr, ec] = std::from_chars(line.data(), line.data() + line.size(), v);
    if (ec != std::errc() || ptr != line.data() + line.size() || v < 0 || v >= n)
      throw IoError(path.string() + ":" + std::to_string(in.number()) +
                    ": expected a node id in [0, " + std::to_string(n) + "), got \"" +
                    std::string(line) + "\"");
    if (!labelled[static_cast<std::size_t>(v)])
      throw IoError(path.string() + ":" + std::to_string(in.number()) + ": node " +
                    std::to_string(v) + " has no label");
    ids.push_back(static_cast<NodeId>(v));
  }
  std::sort(ids.begin(), ids.end());
  return ids;
}

/// The class of one node_label value (-1: NaN, no label); halo::IoError for anything else.
std::int32_t class_of(double v, std::size_t node, std::int64_t n, const fs::path& label_path) {
  if (std::isnan(v)) return -1;
  if (v < 0 || v > 1e6 || v != std::floor(v))
    throw IoError(label_path.string() + ": node_label of node " + std::to_string(node) +
                  " is not a class id");
  if (v + 1 > static_cast<double>(detail::max_inferred_classes(n)))
    throw IoError(
        label_path.string() + ": node_label of node " + std::to_string(node) + ": " +
        detail::inferred_classes_error(static_cast<std::int64_t>(v), n, "is the file corrupt?"));
  return static_cast<std::int32_t>(v);
}

fs::path split_directory(const fs::path& root, const std::string& split_scheme) {
  if (!split_scheme.empty()) return root / "split" / split_scheme;
  std::vector<fs::path> schemes;
  if (fs::is_directory(root / "split"))
    for (const auto& s : fs::directory_iterator(root / "split"))
      if (s.is_directory()) schemes.push_back(s.path());
  if (schemes.size() != 1)
    throw IoError((root / "split").string() +
                  ": expected exactly one split scheme directory, found " +
                  std::to_string(schemes.size()));
  return schemes[0];
}

}  // namespace

Dataset read_ogb_node_binary(const kernels::Resources& res, const fs::path& root,
                             const std::string& split_scheme) {
  const fs::path data_path = root / "raw" / "data.npz";
  const fs::path label_path = root / "raw" / "node-label.npz";
  for (const auto& p : {data_path, label_path})
    if (!fs::is_regular_file(p)) throw IoError(p.string() + ": missing required file");

  Dataset ds;
  ds.name = root.filename().string();
  std::int64_t n = 0;
  {
    auto data = read_npz(data_path);
    const auto counts = to_int64s(key(data, data_path, "num_nodes_list"),
                                  data_path.filename().string() + ": num_nodes_list");
    if (counts.size() != 1 || counts[0] < 0 || counts[0] > std::numeric_limits<NodeId>::max())
      throw IoError(data_path.string() +
                    ": num_nodes_list must hold one node count in [0, 2^31 - 1]");
    n = counts[0];

    const NpyArray& e = key(data, data_path, "edge_index");
    check_npy(e, data_path.filename().string() + ": edge_index");
    if (e.shape.size() != 2 || e.shape[0] != 2 || (e.dtype != "<i8" && e.dtype != "<i4"))
      throw IoError(data_path.string() + ": edge_index must be a 2 x E array of int32 or int64");
    const std::int64_t m = e.shape[1];
    std::vector<std::pair<NodeId, NodeId>> edges(static_cast<std::size_t>(m));
    for (std::int64_t i = 0; i < m; ++i) {
      const std::int64_t s = int_at(e, i), d = int_at(e, m + i);
      if (s < 0 || s >= n || d < 0 || d >= n)
        throw IoError(data_path.string() + ": edge_index column " + std::to_string(i) +
                      " names a node outside [0, " + std::to_string(n) + ")");
      edges[static_cast<std::size_t>(i)] = {static_cast<NodeId>(s), static_cast<NodeId>(d)};
    }
    data.erase("edge_index");  // `e` dangles from here on
    ds.graph = deduplicate(res, graph_from_edges(res, n, edges));

    const auto feat = data.find("node_feat");
    if (feat == data.end()) {
      ds.features = kernels::Tensor<float>(res, kernels::Device::Cpu, n, 0);
    } else {
      const NpyArray& f = feat->second;
      check_npy(f, data_path.filename().string() + ": node_feat");
      if (f.shape.size() != 2 || f.shape[0] != n)
        throw IoError(data_path.string() +
                      ": node_feat must be an n x f array with n = " + std::to_string(n));
      kernels::Tensor<float> x(res, kernels::Device::Cpu, n, f.shape[1]);
      if (f.dtype == "<f4") {
        if (!f.bytes.empty()) std::memcpy(x.data(), f.bytes.data(), f.bytes.size());
      } else {
        const auto v = to_doubles(f, data_path.filename().string() + ": node_feat");
        for (std::size_t i = 0; i < v.size(); ++i) x.data()[i] = static_cast<float>(v[i]);
      }
      ds.features = std::move(x);
    }
  }

  const auto labels_npz = read_npz(label_path);
  const NpyArray& l = key(labels_npz, label_path, "node_label");
  if (l.numel() != n || (l.shape.size() == 2 && l.shape[1] != 1) || l.shape.size() > 2)
    throw IoError(label_path.string() +
                  ": node_label must hold one label per node (n = " + std::to_string(n) + ")");
  const auto values = to_doubles(l, label_path.filename().string() + ": node_label");
  std::vector<std::int32_t> labels(static_cast<std::size_t>(n), 0), labelled(labels.size(), 0);
  std::int32_t num_classes = 1;
  for (std::size_t i = 0; i < values.size(); ++i) {
    const std::int32_t c = class_of(values[i], i, n, label_path);
    if (c < 0) continue;
    labels[i] = c;
    labelled[i] = 1;
    num_classes = std::max(num_classes, c + 1);
  }
  ds.labels = kernels::Tensor<std::int32_t>::from_host(res, labels);
  ds.num_classes = num_classes;

  const fs::path split_dir = split_directory(root, split_scheme);
  ds.train_idx =
      kernels::Tensor<NodeId>::from_host(res, read_split(split_dir / "train.csv.gz", n, labelled));
  ds.val_idx =
      kernels::Tensor<NodeId>::from_host(res, read_split(split_dir / "valid.csv.gz", n, labelled));
  ds.test_idx =
      kernels::Tensor<NodeId>::from_host(res, read_split(split_dir / "test.csv.gz", n, labelled));
  validate(ds);
  return ds;
}

PrepareReport prepare_ogb_node_binary(const kernels::Resources& res, const fs::path& root,
                                      const fs::path& out, const PrepareOptions& options,
                                      const std::string& split_scheme) {
  const fs::path data_path = root / "raw" / "data.npz";
  const fs::path label_path = root / "raw" / "node-label.npz";
  for (const auto& p : {data_path, label_path})
    if (!fs::is_regular_file(p)) throw IoError(p.string() + ": missing required file");
  const std::size_t budget = std::max<std::size_t>(options.memory_budget, 4096);
  const std::size_t read_bytes = std::max<std::size_t>(budget / 8, 16);
  const std::string data_name = data_path.filename().string();

  std::int64_t n = 0;
  {
    NpyStream counts(data_path, "num_nodes_list");
    NpyArray a = counts.header();
    a.bytes.resize(static_cast<std::size_t>(counts.remaining()));
    counts.read(a.bytes.data(), a.bytes.size());
    const auto v = to_int64s(a, data_name + ": num_nodes_list");
    if (v.size() != 1 || v[0] < 0 || v[0] > std::numeric_limits<NodeId>::max())
      throw IoError(data_path.string() +
                    ": num_nodes_list must hold one node count in [0, 2^31 - 1]");
    n = v[0];
  }
  StoreWriter w(out);
  PrepareReport report;
  DirectedBuild built;
  {
    // edge_index is 2 x E in C order: the sources, then the destinations, read side by side.
    NpyStream src(data_path, "edge_index"), dst(data_path, "edge_index");
    const NpyArray& h = src.header();
    if (h.shape.size() != 2 || h.shape[0] != 2 || (h.dtype != "<i8" && h.dtype != "<i4"))
      throw IoError(data_path.string() + ": edge_index must be a 2 x E array of int32 or int64");
    const std::int64_t m = h.shape[1];
    const std::size_t item = h.item_size();
    dst.skip(static_cast<std::uint64_t>(m) * item);
    EdgeSpill spill(w.scratch_dir() / "edges.spill", read_bytes);
    const auto batch = static_cast<std::int64_t>(std::max<std::size_t>(read_bytes / 16, 1));
    std::vector<char> a(static_cast<std::size_t>(batch) * item), b(a.size());
    std::vector<std::pair<NodeId, NodeId>> edges(static_cast<std::size_t>(batch));
    auto at = [&](const std::vector<char>& v, std::int64_t i) -> std::int64_t {
      if (item == 8) {
        std::int64_t x = 0;
        std::memcpy(&x, v.data() + i * 8, 8);
        return x;
      }
      std::int32_t x = 0;
      std::memcpy(&x, v.data() + i * 4, 4);
      return x;
    };
    for (std::int64_t e0 = 0; e0 < m; e0 += batch) {
      const std::int64_t k = std::min(batch, m - e0);
      src.read(a.data(), static_cast<std::size_t>(k) * item);
      dst.read(b.data(), static_cast<std::size_t>(k) * item);
      for (std::int64_t i = 0; i < k; ++i) {
        const std::int64_t u = at(a, i), v = at(b, i);
        if (u < 0 || u >= n || v < 0 || v >= n)
          throw IoError(data_path.string() + ": edge_index column " + std::to_string(e0 + i) +
                        " names a node outside [0, " + std::to_string(n) + ")");
        edges[static_cast<std::size_t>(i)] = {static_cast<NodeId>(u), static_cast<NodeId>(v)};
      }
      spill.append(EdgeBatch(edges.data(), static_cast<std::size_t>(k)));
    }
    spill.finish();
    a = {};
    b = {};
    edges = {};
    built = build_directed_csr(res, spill.source(n), budget - read_bytes, w);
    report.spill_bytes = static_cast<std::uint64_t>(spill.num_edges()) * 8;
    report.row_blocks = built.graph.blocks;
  }
  w.array("graph.values", kernels::Tensor<float>());

  // node_feat, converted a block of rows at a time.
  const FeatureDtype dtype = options.feature_dtype;
  std::int64_t f = 0;
  const std::vector<std::string> members = list_zip_entries(data_path);
  if (std::find(members.begin(), members.end(), "node_feat.npy") != members.end()) {
    NpyStream feat(data_path, "node_feat");
    const NpyArray& h = feat.header();
    if (h.shape.size() != 2 || h.shape[0] != n)
      throw IoError(data_path.string() +
                    ": node_feat must be an n x f array with n = " + std::to_string(n));
    f = h.shape[1];
    const std::size_t row_in = static_cast<std::size_t>(f) * h.item_size();
    const auto rows = static_cast<std::int64_t>(
        std::max<std::size_t>(budget / 2 / std::max<std::size_t>(row_in + f * 4, 1), 1));
    w.begin_features(n, f, dtype);
    NpyArray chunk{h.dtype, {0}, {}};
    std::vector<float> x;
    for (std::int64_t r0 = 0; r0 < n; r0 += rows) {
      const std::int64_t k = std::min(rows, n - r0);
      chunk.shape = {k * f};
      chunk.bytes.resize(static_cast<std::size_t>(k) * row_in);
      feat.read(chunk.bytes.data(), chunk.bytes.size());
      x.resize(static_cast<std::size_t>(k * f));
      if (h.dtype == "<f4") {
        std::memcpy(x.data(), chunk.bytes.data(), chunk.bytes.size());
      } else {
        const auto v = to_doubles(chunk, data_name + ": node_feat");
        for (std::size_t i = 0; i < v.size(); ++i) x[i] = static_cast<float>(v[i]);
      }
      w.append_features(x.data(), x.size());
    }
    w.end();
  } else {
    w.begin_features(n, 0, dtype);
    w.end();
  }

  // node_label, a block at a time.
  std::vector<std::int32_t> labelled(static_cast<std::size_t>(n), 0);
  std::int32_t num_classes = 1;
  {
    NpyStream label(label_path, "node_label");
    const NpyArray& h = label.header();
    if (h.numel() != n || (h.shape.size() == 2 && h.shape[1] != 1) || h.shape.size() > 2)
      throw IoError(label_path.string() +
                    ": node_label must hold one label per node (n = " + std::to_string(n) + ")");
    const auto block = static_cast<std::int64_t>(std::max<std::size_t>(budget / 16, 1));
    NpyArray chunk{h.dtype, {0}, {}};
    std::vector<std::int32_t> labels;
    w.begin("labels", "i32", 4, n, 1);
    for (std::int64_t v0 = 0; v0 < n; v0 += block) {
      const std::int64_t k = std::min(block, n - v0);
      chunk.shape = {k};
      chunk.bytes.resize(static_cast<std::size_t>(k) * h.item_size());
      label.read(chunk.bytes.data(), chunk.bytes.size());
      const auto values = to_doubles(chunk, label_path.filename().string() + ": node_label");
      labels.assign(values.size(), 0);
      for (std::size_t i = 0; i < values.size(); ++i) {
        const auto node = static_cast<std::size_t>(v0) + i;
        const std::int32_t c = class_of(values[i], node, n, label_path);
        if (c < 0) continue;
        labels[i] = c;
        labelled[node] = 1;
        num_classes = std::max(num_classes, c + 1);
      }
      w.append(labels.data(), labels.size() * 4);
    }
    w.end();
  }
  const fs::path split_dir = split_directory(root, split_scheme);
  std::int64_t counts[3] = {0, 0, 0};
  const char* files[3] = {"train.csv.gz", "valid.csv.gz", "test.csv.gz"};
  const char* keys[3] = {"train_idx", "val_idx", "test_idx"};
  for (int i = 0; i < 3; ++i) {
    const auto ids =
        kernels::Tensor<NodeId>::from_host(res, read_split(split_dir / files[i], n, labelled));
    counts[i] = ids.numel();
    w.array(keys[i], ids);
  }
  StoreCounts c;
  c.name = root.filename().string();
  c.num_nodes = n;
  built.record(c);
  c.num_features = f;
  c.feature_dtype = dtype;
  c.num_classes = num_classes;
  c.num_train = counts[0];
  c.num_val = counts[1];
  c.num_test = counts[2];
  w.commit(c, options.source_checksum);
  report.counts = read_store_counts(out);
  return report;
}

}  // namespace halo::datasets
