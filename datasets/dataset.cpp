#include <algorithm>
#include <string>
#include <variant>
#include <vector>

#include <halo/datasets/dataset.hpp>
#include <halo/datasets/detail/host.hpp>
#include <halo/kernels/error.hpp>

namespace halo::datasets {
namespace {

class Checker {
 public:
  explicit Checker(const std::string& name) : m_prefix("dataset '" + name + "': ") {}

  void require(bool ok, const std::string& what) const {
    if (!ok) throw IoError(m_prefix + what);
  }

  /// A host CSR with n rows, columns in [0, num_cols) and values empty or one per entry.
  template <class Idx, class T>
  void csr(const kernels::CsrMatrix<Idx, T>& a, const std::string& what) const {
    require(a.indptr.device() == kernels::Device::Cpu &&
                a.indices.device() == kernels::Device::Cpu &&
                a.values.device() == kernels::Device::Cpu,
            what + " must be on the host");
    const std::int64_t n = a.num_rows();
    const std::int64_t m = a.num_edges();
    require(n > 0 || m == 0, what + " stores entries but has no indptr");
    require(a.values.empty() || a.values.numel() == m,
            what + " has " + std::to_string(a.values.numel()) + " values for " + std::to_string(m) +
                " entries");
    if (n == 0) return;
    const std::int64_t* indptr = a.indptr.data();
    require(indptr[0] == 0, what + ": indptr[0] must be 0");
    require(indptr[n] == m, what + ": indptr[num_rows] = " + std::to_string(indptr[n]) + " but " +
                                std::to_string(m) + " entries are stored");
    for (std::int64_t r = 0; r < n; ++r) {
      if (indptr[r] > indptr[r + 1])
        require(false, what + ": indptr decreases at row " + std::to_string(r));
    }
    const Idx* indices = a.indices.data();
    for (std::int64_t e = 0; e < m; ++e) {
      if (indices[e] < 0 || indices[e] >= a.num_cols) {
        require(false, what + ": entry " + std::to_string(e) + " has column " +
                           std::to_string(indices[e]) + ", outside [0, " +
                           std::to_string(a.num_cols) + ")");
      }
    }
  }

 private:
  std::string m_prefix;
};

}  // namespace

void validate(const Dataset& ds) {
  const Checker check(ds.name);
  const Graph& g = ds.graph;
  check.csr(g, "graph");
  const std::int64_t n = g.num_rows();
  check.require(g.num_cols == n, "graph must be square, got " + std::to_string(n) + " x " +
                                     std::to_string(g.num_cols));
  if (g.symmetric) {
    const kernels::Resources serial(kernels::Device::Cpu, 1);
    const Graph sorted = detail::sort_rows(serial, g);
    const Graph t = detail::transpose(serial, g);  // rows come out sorted
    const auto equal = [](const auto& x, const auto& y) {
      return std::equal(x.data(), x.data() + x.numel(), y.data(), y.data() + y.numel());
    };
    // Rows are compared after a stable sort, so repeated entries must repeat, with the same
    // values, in both directions.
    check.require(equal(sorted.indptr, t.indptr) && equal(sorted.indices, t.indices) &&
                      equal(sorted.values, t.values),
                  "graph is flagged symmetric but differs from its transpose");
  }

  if (const auto* dense = std::get_if<kernels::Tensor<float>>(&ds.features)) {
    check.require(dense->device() == kernels::Device::Cpu, "features must be on the host");
    check.require(dense->rows() == n, "features have " + std::to_string(dense->rows()) +
                                          " rows but the graph has " + std::to_string(n) +
                                          " nodes");
  } else {
    const auto& sparse = std::get<kernels::CsrMatrix<std::int32_t, float>>(ds.features);
    check.csr(sparse, "sparse features");
    check.require(sparse.num_rows() == n, "features have " + std::to_string(sparse.num_rows()) +
                                              " rows but the graph has " + std::to_string(n) +
                                              " nodes");
  }

  check.require(ds.num_classes >= 1,
                "num_classes must be at least 1, got " + std::to_string(ds.num_classes));
  check.require(ds.labels.device() == kernels::Device::Cpu, "labels must be on the host");
  check.require(ds.labels.numel() == n, "labels has " + std::to_string(ds.labels.numel()) +
                                            " entries but the graph has " + std::to_string(n) +
                                            " nodes");
  for (std::int64_t v = 0; v < n; ++v) {
    const std::int32_t label = ds.labels.data()[v];
    if (label < 0 || label >= ds.num_classes) {
      check.require(false, "label " + std::to_string(label) + " of node " + std::to_string(v) +
                               " is outside [0, " + std::to_string(ds.num_classes) + ")");
    }
  }

  // split_of[v]: 0 = in no split yet, else 1 + index of the split that holds v.
  std::vector<std::uint8_t> split_of(static_cast<std::size_t>(n), 0);
  const char* names[] = {"train_idx", "val_idx", "test_idx"};
  const kernels::Tensor<NodeId>* splits[] = {&ds.train_idx, &ds.val_idx, &ds.test_idx};
  for (int s = 0; s < 3; ++s) {
    const std::string name = names[s];
    const kernels::Tensor<NodeId>& idx = *splits[s];
    check.require(idx.device() == kernels::Device::Cpu, name + " must be on the host");
    for (std::int64_t i = 0; i < idx.numel(); ++i) {
      const NodeId v = idx.data()[i];
      if (v < 0 || v >= n) {
        check.require(false, name + "[" + std::to_string(i) + "] = " + std::to_string(v) +
                                 " is outside [0, " + std::to_string(n) + ")");
      }
      if (i > 0 && v <= idx.data()[i - 1]) {
        check.require(false, name + " must be strictly ascending (distinct), but " + name + "[" +
                                 std::to_string(i) + "] = " + std::to_string(v) + " follows " +
                                 std::to_string(idx.data()[i - 1]));
      }
      std::uint8_t& owner = split_of[static_cast<std::size_t>(v)];
      if (owner != 0) {
        check.require(false, "node " + std::to_string(v) + " is in both " + names[owner - 1] +
                                 " and " + name);
      }
      owner = static_cast<std::uint8_t>(s + 1);
    }
  }
}

Dataset Dataset::clone(const kernels::Resources& res) const {
  Dataset c;
  c.name = name;
  c.graph = graph.clone(res);
  c.features = std::visit(
      [&](const auto& x) -> kernels::FeatureMatrix<float> { return x.clone(res); }, features);
  c.labels = labels.clone(res);
  c.train_idx = train_idx.clone(res);
  c.val_idx = val_idx.clone(res);
  c.test_idx = test_idx.clone(res);
  c.num_classes = num_classes;
  return c;
}

Dataset graph_only_dataset(const kernels::Resources& res, Graph graph) {
  const std::int64_t n = graph.num_rows();
  Dataset ds;
  graph.values = kernels::Tensor<float>::from_host(res, std::vector<float>{});
  ds.graph = std::move(graph);
  ds.features = kernels::CsrMatrix<std::int32_t, float>{
      kernels::Tensor<std::int64_t>::from_host(
          res, std::vector<std::int64_t>(static_cast<std::size_t>(n) + 1, 0)),
      kernels::Tensor<std::int32_t>::from_host(res, std::vector<std::int32_t>{}),
      kernels::Tensor<float>::from_host(res, std::vector<float>{}), 0};
  ds.labels = kernels::Tensor<std::int32_t>::from_host(
      res, std::vector<std::int32_t>(static_cast<std::size_t>(n), 0));
  ds.train_idx = kernels::Tensor<NodeId>::from_host(res, std::vector<NodeId>{});
  ds.val_idx = kernels::Tensor<NodeId>::from_host(res, std::vector<NodeId>{});
  ds.test_idx = kernels::Tensor<NodeId>::from_host(res, std::vector<NodeId>{});
  ds.num_classes = 1;
  return ds;
}

}  // namespace halo::datasets
