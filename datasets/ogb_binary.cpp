// OGB's binary node-property layout: raw/data.npz, raw/node-label.npz, gzipped split CSVs.
#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstring>
#include <limits>
#include <map>
#include <utility>
#include <vector>

#include <halo/datasets/archive.hpp>
#include <halo/datasets/detail/host.hpp>
#include <halo/datasets/graph_builder.hpp>
#include <halo/datasets/numpy.hpp>
#include <halo/datasets/ogb_binary.hpp>
#include <halo/datasets/preprocess.hpp>
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
    if (std::isnan(values[i])) continue;
    if (values[i] < 0 || values[i] > 1e6 || values[i] != std::floor(values[i]))
      throw IoError(label_path.string() + ": node_label of node " + std::to_string(i) +
                    " is not a class id");
    if (values[i] + 1 > static_cast<double>(detail::max_inferred_classes(n)))
      throw IoError(label_path.string() + ": node_label of node " + std::to_string(i) + ": " +
                    detail::inferred_classes_error(static_cast<std::int64_t>(values[i]), n,
                                                   "is the file corrupt?"));
    labels[i] = static_cast<std::int32_t>(values[i]);
    labelled[i] = 1;
    num_classes = std::max(num_classes, labels[i] + 1);
  }
  ds.labels = kernels::Tensor<std::int32_t>::from_host(res, labels);
  ds.num_classes = num_classes;

  fs::path split_dir = root / "split" / split_scheme;
  if (split_scheme.empty()) {
    std::vector<fs::path> schemes;
    if (fs::is_directory(root / "split"))
      for (const auto& s : fs::directory_iterator(root / "split"))
        if (s.is_directory()) schemes.push_back(s.path());
    if (schemes.size() != 1)
      throw IoError((root / "split").string() +
                    ": expected exactly one split scheme directory, found " +
                    std::to_string(schemes.size()));
    split_dir = schemes[0];
  }
  ds.train_idx =
      kernels::Tensor<NodeId>::from_host(res, read_split(split_dir / "train.csv.gz", n, labelled));
  ds.val_idx =
      kernels::Tensor<NodeId>::from_host(res, read_split(split_dir / "valid.csv.gz", n, labelled));
  ds.test_idx =
      kernels::Tensor<NodeId>::from_host(res, read_split(split_dir / "test.csv.gz", n, labelled));
  validate(ds);
  return ds;
}

}  // namespace halo::datasets
