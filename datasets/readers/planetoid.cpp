#include <algorithm>
#include <limits>
#include <utility>
#include <vector>

#include <halo/datasets/detail/host.hpp>
#include <halo/datasets/detail/text.hpp>
#include <halo/datasets/graph_builder.hpp>
#include <halo/datasets/preprocess.hpp>
#include <halo/datasets/readers/pickle.hpp>
#include <halo/datasets/readers/planetoid.hpp>
#include <halo/kernels/error.hpp>

namespace halo::datasets {
namespace {

namespace fs = std::filesystem;
using Kind = PickleValue::Kind;

/// A row-major host matrix in CSR form, values as doubles (features or one-hot labels).
struct Rows {
  std::int64_t num_rows = 0;
  std::int64_t num_cols = 0;
  std::vector<std::int64_t> indptr{0};
  std::vector<std::int64_t> indices;
  std::vector<double> values;
};

/// A pickled scipy CSR matrix or a 2-D numpy array, as Rows (stored zeros dropped).
Rows to_rows(const PickleValue& v, const std::string& where) {
  Rows out;
  if (v.kind == Kind::NdArray) {
    const NpyArray& a = v.array;
    if (a.shape.size() != 2) throw IoError(where + ": expected a 2-D array");
    out.num_rows = a.shape[0];
    out.num_cols = a.shape[1];
    const std::vector<double> d = to_doubles(a, where);
    for (std::int64_t r = 0; r < out.num_rows; ++r) {
      for (std::int64_t c = 0; c < out.num_cols; ++c) {
        const double x = d[static_cast<std::size_t>(r * out.num_cols + c)];
        if (x != 0) {
          out.indices.push_back(c);
          out.values.push_back(x);
        }
      }
      out.indptr.push_back(static_cast<std::int64_t>(out.indices.size()));
    }
    return out;
  }
  if (v.kind != Kind::Object) {
    throw IoError(where + ": expected a scipy CSR matrix or a numpy array");
  }
  const auto array = [&](const char* key) -> const NpyArray& {
    const PickleValue* a = v.find(key);
    if (a == nullptr || a->kind != Kind::NdArray) {
      throw IoError(where + ": the CSR matrix has no array '" + key + "'");
    }
    return a->array;
  };
  const PickleValue* shape = v.find("_shape");
  if (shape == nullptr) shape = v.find("shape");
  if (shape == nullptr || shape->kind != Kind::Tuple || shape->items.size() != 2 ||
      shape->items[0]->kind != Kind::Int || shape->items[1]->kind != Kind::Int ||
      shape->items[0]->integer < 0 || shape->items[1]->integer < 0 ||
      shape->items[0]->integer > std::numeric_limits<NodeId>::max() ||
      shape->items[1]->integer > std::numeric_limits<std::int32_t>::max()) {
    throw IoError(where + ": the CSR matrix has no valid shape");
  }
  out.num_rows = shape->items[0]->integer;
  out.num_cols = shape->items[1]->integer;
  const std::vector<std::int64_t> indptr = to_int64s(array("indptr"), where + ": indptr");
  const std::vector<std::int64_t> indices = to_int64s(array("indices"), where + ": indices");
  const std::vector<double> data = to_doubles(array("data"), where + ": data");
  if (static_cast<std::int64_t>(indptr.size()) != out.num_rows + 1 || indptr[0] != 0 ||
      indptr.back() != static_cast<std::int64_t>(indices.size()) || data.size() != indices.size()) {
    throw IoError(where + ": inconsistent CSR arrays (indptr, indices, data)");
  }
  std::vector<std::pair<std::int64_t, double>> row;
  for (std::int64_t r = 0; r < out.num_rows; ++r) {
    if (indptr[r] > indptr[r + 1]) throw IoError(where + ": indptr decreases");
    row.clear();
    for (std::int64_t e = indptr[r]; e < indptr[r + 1]; ++e) {
      if (indices[e] < 0 || indices[e] >= out.num_cols) {
        throw IoError(where + ": column " + std::to_string(indices[e]) + " out of range");
      }
      if (data[e] != 0) row.emplace_back(indices[e], data[e]);
    }
    std::sort(row.begin(), row.end());
    for (std::size_t k = 0; k < row.size(); ++k) {
      if (k > 0 && row[k].first == row[k - 1].first) {
        out.values.back() += row[k].second;  // duplicates add up, as in scipy
        continue;
      }
      out.indices.push_back(row[k].first);
      out.values.push_back(row[k].second);
    }
    out.indptr.push_back(static_cast<std::int64_t>(out.indices.size()));
  }
  return out;
}

/// vstack(top, bottom padded to `bottom_rows` rows, bottom row i placed at slot[i]).
Rows stack(const Rows& top, const Rows& bottom, std::int64_t bottom_rows,
           const std::vector<std::int64_t>& slot) {
  std::vector<std::int64_t> source(static_cast<std::size_t>(bottom_rows), -1);
  for (std::size_t i = 0; i < slot.size(); ++i)
    source[static_cast<std::size_t>(slot[i])] = static_cast<std::int64_t>(i);
  Rows out = top;
  out.num_rows = top.num_rows + bottom_rows;
  for (std::int64_t r = 0; r < bottom_rows; ++r) {
    const std::int64_t s = source[static_cast<std::size_t>(r)];
    if (s >= 0) {
      for (std::int64_t e = bottom.indptr[s]; e < bottom.indptr[s + 1]; ++e) {
        out.indices.push_back(bottom.indices[e]);
        out.values.push_back(bottom.values[e]);
      }
    }
    out.indptr.push_back(static_cast<std::int64_t>(out.indices.size()));
  }
  return out;
}

/// Rows with row to[i] replaced by the old row from[i] (numpy `a[to] = a[from]`).
Rows permute(const Rows& a, const std::vector<std::int64_t>& to,
             const std::vector<std::int64_t>& from) {
  std::vector<std::int64_t> source(static_cast<std::size_t>(a.num_rows));
  for (std::int64_t r = 0; r < a.num_rows; ++r) source[static_cast<std::size_t>(r)] = r;
  for (std::size_t i = 0; i < to.size(); ++i) source[static_cast<std::size_t>(to[i])] = from[i];
  Rows out;
  out.num_rows = a.num_rows;
  out.num_cols = a.num_cols;
  for (std::int64_t r = 0; r < a.num_rows; ++r) {
    const std::int64_t s = source[static_cast<std::size_t>(r)];
    for (std::int64_t e = a.indptr[s]; e < a.indptr[s + 1]; ++e) {
      out.indices.push_back(a.indices[e]);
      out.values.push_back(a.values[e]);
    }
    out.indptr.push_back(static_cast<std::int64_t>(out.indices.size()));
  }
  return out;
}

PickleDocument load(const fs::path& path) {
  return unpickle(detail::read_whole_file(path), path.string());
}

}  // namespace

Dataset read_planetoid(const kernels::Resources& res, const fs::path& dir,
                       const std::string& name) {
  const auto file = [&](const char* part) { return dir / ("ind." + name + "." + part); };
  const PickleDocument x_doc = load(file("x"));
  const PickleDocument y_doc = load(file("y"));
  const PickleDocument tx_doc = load(file("tx"));
  const PickleDocument ty_doc = load(file("ty"));
  const PickleDocument allx_doc = load(file("allx"));
  const PickleDocument ally_doc = load(file("ally"));
  const PickleDocument graph_doc = load(file("graph"));

  const Rows x = to_rows(x_doc.root(), file("x").string());
  const Rows y = to_rows(y_doc.root(), file("y").string());
  const Rows tx = to_rows(tx_doc.root(), file("tx").string());
  const Rows ty = to_rows(ty_doc.root(), file("ty").string());
  const Rows allx = to_rows(allx_doc.root(), file("allx").string());
  const Rows ally = to_rows(ally_doc.root(), file("ally").string());
  const auto require = [](bool ok, const fs::path& f, const std::string& what) {
    if (!ok) throw IoError(f.string() + ": " + what);
  };
  require(allx.num_rows == ally.num_rows, file("ally"),
          "has " + std::to_string(ally.num_rows) + " rows but allx has " +
              std::to_string(allx.num_rows));
  require(tx.num_rows == ty.num_rows, file("ty"),
          "has " + std::to_string(ty.num_rows) + " rows but tx has " + std::to_string(tx.num_rows));
  require(tx.num_cols == allx.num_cols && x.num_cols == allx.num_cols, file("tx"),
          "x, tx and allx must have the same number of columns");
  require(ty.num_cols == ally.num_cols && y.num_cols == ally.num_cols, file("ty"),
          "y, ty and ally must have the same number of columns");
  require(y.num_rows <= ally.num_rows, file("y"), "has more rows than ally");
  require(ally.num_cols >= 1, file("ally"), "has no classes");

  // test.index: one id per line, in the order of the rows of tx.
  const fs::path index_path = file("test.index");
  const std::string index_text = detail::read_whole_file(index_path);
  std::vector<std::int64_t> test_index;
  {
    detail::TextLines lines(index_text);
    std::string_view line;
    while (lines.next(line)) {
      std::int64_t v = 0;
      if (!detail::parse_int(detail::trim(line), v) || v < 0 ||
          v > std::numeric_limits<NodeId>::max() - 1) {
        detail::fail_expected(index_path.string(), lines.number(), "one non-negative node id",
                              line);
      }
      test_index.push_back(v);
    }
  }
  require(static_cast<std::int64_t>(test_index.size()) == tx.num_rows, index_path,
          "lists " + std::to_string(test_index.size()) + " ids but tx has " +
              std::to_string(tx.num_rows) + " rows");
  std::vector<std::int64_t> sorted = test_index;
  std::sort(sorted.begin(), sorted.end());
  require(std::adjacent_find(sorted.begin(), sorted.end()) == sorted.end(), index_path,
          "lists an id twice");
  // Pad tx / ty to the full test id range (CiteSeer); row i of tx goes to sorted[i] - min.
  const std::int64_t lo = sorted.empty() ? allx.num_rows : sorted.front();
  const std::int64_t span = sorted.empty() ? 0 : sorted.back() - lo + 1;
  std::vector<std::int64_t> slot(sorted.size());
  for (std::size_t i = 0; i < sorted.size(); ++i) slot[i] = sorted[i] - lo;
  // Ids between allx and the smallest test id would have no row: PyG assumes there are none.
  require(lo == allx.num_rows, index_path,
          "the smallest test id must equal the number of rows of allx (" +
              std::to_string(allx.num_rows) + "), got " + std::to_string(lo));
  const std::int64_t n = allx.num_rows + span;
  require(n <= std::numeric_limits<NodeId>::max(), index_path, "too many nodes");
  const Rows features = permute(stack(allx, tx, span, slot), test_index, sorted);
  const Rows onehot = permute(stack(ally, ty, span, slot), test_index, sorted);
  require(y.num_rows + 500 <= n, file("y"), "too few nodes for 500 validation nodes");

  Dataset ds;
  ds.name = name;
  ds.num_classes = static_cast<std::int32_t>(ally.num_cols);
  ds.labels = detail::host_tensor<std::int32_t>(res, n);
  std::vector<double> dense(static_cast<std::size_t>(ally.num_cols));
  for (std::int64_t v = 0; v < n; ++v) {
    // argmax: the first largest entry, so an all-zero row gives class 0 (as numpy and PyG).
    std::fill(dense.begin(), dense.end(), 0.0);
    for (std::int64_t e = onehot.indptr[v]; e < onehot.indptr[v + 1]; ++e) {
      dense[static_cast<std::size_t>(onehot.indices[e])] = onehot.values[e];
    }
    const auto best = std::max_element(dense.begin(), dense.end()) - dense.begin();
    ds.labels.data()[v] = static_cast<std::int32_t>(best);
  }

  auto feats = kernels::CsrMatrix<std::int32_t, float>{
      detail::host_tensor<std::int64_t>(res, n + 1),
      detail::host_tensor<std::int32_t>(res, static_cast<std::int64_t>(features.indices.size())),
      detail::host_tensor<float>(res, static_cast<std::int64_t>(features.values.size())),
      features.num_cols};
  std::copy(features.indptr.begin(), features.indptr.end(), feats.indptr.data());
  for (std::size_t e = 0; e < features.indices.size(); ++e) {
    feats.indices.data()[e] = static_cast<std::int32_t>(features.indices[e]);
    feats.values.data()[e] = static_cast<float>(features.values[e]);
  }
  ds.features = std::move(feats);

  // graph: {k: [v, ...]} -> edges k -> v and v -> k.
  const PickleValue& g = graph_doc.root();
  const std::string graph_where = file("graph").string();
  if (g.kind != Kind::Dict) throw IoError(graph_where + ": expected a dict");
  std::vector<std::pair<NodeId, NodeId>> edges;
  for (const auto& [key, value] : g.entries) {
    if (key->kind != Kind::Int || key->integer < 0 || key->integer >= n) {
      throw IoError(graph_where + ": key " +
                    (key->kind == Kind::Int ? std::to_string(key->integer) : "(not an int)") +
                    " is not a node id in [0, " + std::to_string(n) + ")");
    }
    if (value->kind != Kind::List && value->kind != Kind::Tuple) {
      throw IoError(graph_where + ": the value of key " + std::to_string(key->integer) +
                    " is not a list");
    }
    for (const PickleValue* v : value->items) {
      if (v->kind != Kind::Int || v->integer < 0 || v->integer >= n) {
        throw IoError(graph_where + ": a neighbour of node " + std::to_string(key->integer) +
                      " is not a node id in [0, " + std::to_string(n) + ")");
      }
      if (v->integer == key->integer) continue;  // self-loop
      edges.emplace_back(static_cast<NodeId>(key->integer), static_cast<NodeId>(v->integer));
      edges.emplace_back(static_cast<NodeId>(v->integer), static_cast<NodeId>(key->integer));
    }
  }
  ds.graph = deduplicate(res, graph_from_edges(res, n, edges));
  ds.graph.symmetric = true;

  std::vector<NodeId> train(static_cast<std::size_t>(y.num_rows));
  for (std::size_t i = 0; i < train.size(); ++i) train[i] = static_cast<NodeId>(i);
  std::vector<NodeId> val(500);
  for (std::size_t i = 0; i < val.size(); ++i) val[i] = static_cast<NodeId>(y.num_rows + i);
  std::vector<NodeId> test(sorted.begin(), sorted.end());
  ds.train_idx = detail::host_tensor<NodeId>(res, train);
  ds.val_idx = detail::host_tensor<NodeId>(res, val);
  ds.test_idx = detail::host_tensor<NodeId>(res, test);
  validate(ds);
  return ds;
}

}  // namespace halo::datasets
