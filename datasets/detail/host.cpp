#include <algorithm>
#include <atomic>
#include <cmath>
#include <numeric>
#include <string>
#include <utility>

#include <halo/datasets/detail/host.hpp>
#include <halo/kernels/error.hpp>
#include <halo/kernels/rng.hpp>

namespace halo::datasets::detail {

void counts_to_offsets(std::int64_t* indptr, std::int64_t n) {
  std::int64_t running = 0;
  for (std::int64_t r = 0; r < n; ++r) {
    const std::int64_t count = indptr[r];
    indptr[r] = running;
    running += count;
  }
  indptr[n] = running;
}

std::int64_t max_inferred_classes(std::int64_t num_nodes) {
  constexpr std::int64_t kFloor = 1024;
  constexpr std::int64_t kCap = std::int64_t{1} << 20;
  return std::min(kCap, std::max(kFloor, num_nodes));
}

std::string inferred_classes_error(std::int64_t label, std::int64_t num_nodes,
                                   const std::string& fix) {
  return "class id " + std::to_string(label) + " would make " + std::to_string(label + 1) +
         " classes (num_classes is inferred as the largest class id + 1), more than the " +
         std::to_string(max_inferred_classes(num_nodes)) + " allowed for " +
         std::to_string(num_nodes) + " nodes (max(1024, nodes), at most 2^20); " + fix;
}

void expect_host_csr(const Graph& a, const char* op) {
  const std::string name(op);
  HALO_EXPECTS(a.indptr.device() == kernels::Device::Cpu &&
                   a.indices.device() == kernels::Device::Cpu &&
                   a.values.device() == kernels::Device::Cpu,
               name + ": the graph must be on the host");
  const std::int64_t n = a.num_rows();
  const std::int64_t m = a.num_edges();
  HALO_EXPECTS(n > 0 || m == 0, name + ": edges stored in a graph without rows");
  HALO_EXPECTS(a.values.empty() || a.values.numel() == m,
               name + ": values must be empty or hold one value per edge");
  HALO_EXPECTS(a.num_cols >= 0, name + ": negative column count");
  if (n == 0) return;
  const std::int64_t* indptr = a.indptr.data();
  HALO_EXPECTS(indptr[0] == 0 && indptr[n] == m, name + ": indptr must run from 0 to num_edges");
  bool ok = true;
  for (std::int64_t r = 0; r < n; ++r) ok &= indptr[r] <= indptr[r + 1];
  HALO_EXPECTS(ok, name + ": indptr must be non-decreasing");
  const NodeId* indices = a.indices.data();
  const std::int64_t num_cols = a.num_cols;
  bool in_range = true;
  for (std::int64_t e = 0; e < m; ++e) in_range &= indices[e] >= 0 && indices[e] < num_cols;
  HALO_EXPECTS(in_range, name + ": column id out of range [0, num_cols)");
}

bool rows_sorted(const kernels::Resources& res, const Graph& a) {
  const std::int64_t n = a.num_rows();
  const std::int64_t* indptr = a.indptr.data();
  const NodeId* indices = a.indices.data();
  std::atomic<bool> sorted{true};
  parallel_for(res, n, [&](std::int64_t r) {
    for (std::int64_t e = indptr[r] + 1; e < indptr[r + 1]; ++e) {
      if (indices[e - 1] > indices[e]) {
        sorted.store(false, std::memory_order_relaxed);
        return;
      }
    }
  });
  return sorted.load();
}

Graph sort_rows(const kernels::Resources& res, const Graph& a) {
  Graph out{a.indptr.copy_to(res, kernels::Device::Cpu),
            a.indices.copy_to(res, kernels::Device::Cpu),
            a.values.copy_to(res, kernels::Device::Cpu), a.num_cols, a.symmetric};
  const std::int64_t n = out.num_rows();
  const std::int64_t* indptr = out.indptr.data();
  NodeId* indices = out.indices.data();
  float* values = out.values.empty() ? nullptr : out.values.data();
  parallel_for(res, n, [&](std::int64_t r) {
    NodeId* first = indices + indptr[r];
    NodeId* last = indices + indptr[r + 1];
    if (std::is_sorted(first, last)) return;
    if (values == nullptr) {
      std::sort(first, last);
      return;
    }
    std::vector<std::pair<NodeId, float>> row;
    row.reserve(static_cast<std::size_t>(last - first));
    for (std::int64_t e = indptr[r]; e < indptr[r + 1]; ++e)
      row.emplace_back(indices[e], values[e]);
    std::stable_sort(row.begin(), row.end(),
                     [](const auto& x, const auto& y) { return x.first < y.first; });
    for (std::int64_t e = indptr[r], k = 0; e < indptr[r + 1]; ++e, ++k) {
      indices[e] = row[static_cast<std::size_t>(k)].first;
      values[e] = row[static_cast<std::size_t>(k)].second;
    }
  });
  return out;
}

Graph transpose(const kernels::Resources& res, const Graph& a) {
  const std::int64_t n = a.num_rows();
  const std::int64_t num_cols = a.num_cols;
  const std::int64_t m = a.num_edges();
  const bool weighted = !a.values.empty();
  Graph out{host_tensor<std::int64_t>(res, num_cols + 1), host_tensor<NodeId>(res, m),
            host_tensor<float>(res, weighted ? m : 0), n, a.symmetric};
  std::int64_t* out_indptr = out.indptr.data();
  std::fill(out_indptr, out_indptr + num_cols + 1, std::int64_t{0});
  const NodeId* indices = a.indices.data();
  for (std::int64_t e = 0; e < m; ++e) ++out_indptr[indices[e]];
  counts_to_offsets(out_indptr, num_cols);
  // Scanning rows in ascending order fills every output row in ascending column order.
  std::vector<std::int64_t> next(out_indptr, out_indptr + num_cols);
  const std::int64_t* indptr = a.indptr.data();
  NodeId* out_indices = out.indices.data();
  for (std::int64_t r = 0; r < n; ++r) {
    for (std::int64_t e = indptr[r]; e < indptr[r + 1]; ++e) {
      const std::int64_t pos = next[static_cast<std::size_t>(indices[e])]++;
      out_indices[pos] = static_cast<NodeId>(r);
      if (weighted) out.values.data()[pos] = a.values.data()[e];
    }
  }
  return out;
}

namespace {
/// floor(fraction * n), robust to products like 0.1 * 2000 = 199.99999999999997.
std::int64_t split_size(double fraction, std::int64_t n) {
  return static_cast<std::int64_t>(std::floor(fraction * static_cast<double>(n) + 1e-7));
}
}  // namespace

void assign_random_splits(const kernels::Resources& res, std::int64_t n, double train_fraction,
                          double val_fraction, double test_fraction, std::uint64_t rng_key,
                          Dataset& ds) {
  std::vector<std::pair<std::uint64_t, NodeId>> order(static_cast<std::size_t>(n));
  parallel_for(res, n, [&](std::int64_t v) {
    order[static_cast<std::size_t>(v)] = {
        kernels::rng::draw_keyed(rng_key, static_cast<std::uint64_t>(v)), static_cast<NodeId>(v)};
  });
  std::sort(order.begin(), order.end());
  const std::int64_t num_train = split_size(train_fraction, n);
  const std::int64_t num_val = std::min(split_size(val_fraction, n), n - num_train);
  const std::int64_t num_test = std::min(split_size(test_fraction, n), n - num_train - num_val);
  auto take = [&](std::int64_t begin, std::int64_t count) {
    std::vector<NodeId> ids(static_cast<std::size_t>(count));
    for (std::int64_t i = 0; i < count; ++i)
      ids[static_cast<std::size_t>(i)] = order[static_cast<std::size_t>(begin + i)].second;
    std::sort(ids.begin(), ids.end());
    return host_tensor<NodeId>(res, ids);
  };
  ds.train_idx = take(0, num_train);
  ds.val_idx = take(num_train, num_val);
  ds.test_idx = take(num_train + num_val, num_test);
}

}  // namespace halo::datasets::detail
