#include <algorithm>
#include <cmath>
#include <string>
#include <type_traits>
#include <variant>
#include <vector>

#include <halo/datasets/detail/host.hpp>
#include <halo/datasets/preprocess.hpp>
#include <halo/kernels/error.hpp>
#include <halo/kernels/gcn_norm.hpp>

namespace halo::datasets {
namespace {

void expect_square_host(const Graph& a, const char* op) {
  detail::expect_host_csr(a, op);
  HALO_EXPECTS(a.num_cols == a.num_rows(), std::string(op) + ": the graph must be square, got " +
                                               std::to_string(a.num_rows()) + " x " +
                                               std::to_string(a.num_cols));
}

/// A host graph with `n` rows whose indptr already holds the offsets; indices (and values when
/// `weighted`) sized from indptr[n], uninitialised.
Graph allocate_like(const kernels::Resources& res, kernels::Tensor<std::int64_t> indptr,
                    std::int64_t num_cols, bool weighted) {
  const std::int64_t n = indptr.numel() - 1;
  const std::int64_t m = indptr.data()[n];
  return {std::move(indptr), detail::host_tensor<NodeId>(res, m),
          detail::host_tensor<float>(res, weighted ? m : 0), num_cols};
}

/// Distinct sorted union of two sorted ranges. Writes it to `out` when non-null; returns its size.
std::int64_t merge_unique(const NodeId* a, const NodeId* a_end, const NodeId* b,
                          const NodeId* b_end, NodeId* out) {
  std::int64_t count = 0;
  bool have_last = false;
  NodeId last = 0;
  while (a != a_end || b != b_end) {
    NodeId next;
    if (b == b_end || (a != a_end && *a <= *b)) {
      next = *a++;
    } else {
      next = *b++;
    }
    if (have_last && next == last) continue;
    if (out != nullptr) out[count] = next;
    ++count;
    last = next;
    have_last = true;
  }
  return count;
}

}  // namespace

Graph symmetrize(const kernels::Resources& res, const Graph& a) {
  expect_square_host(a, "symmetrize");
  HALO_EXPECTS(a.values.empty(), "symmetrize: the graph must be unweighted (values empty)");
  const std::int64_t n = a.num_rows();
  Graph sorted_copy;
  const Graph* s = &a;
  if (!detail::rows_sorted(res, a)) {
    sorted_copy = detail::sort_rows(res, a);
    s = &sorted_copy;
  }
  const Graph t = detail::transpose(res, a);
  const std::int64_t* s_ptr = s->indptr.data();
  const NodeId* s_idx = s->indices.data();
  const std::int64_t* t_ptr = t.indptr.data();
  const NodeId* t_idx = t.indices.data();

  auto indptr = detail::host_tensor<std::int64_t>(res, n + 1);
  std::int64_t* out_ptr = indptr.data();
  detail::parallel_for(res, n, [&](std::int64_t r) {
    out_ptr[r] = merge_unique(s_idx + s_ptr[r], s_idx + s_ptr[r + 1], t_idx + t_ptr[r],
                              t_idx + t_ptr[r + 1], nullptr);
  });
  detail::counts_to_offsets(out_ptr, n);
  Graph out = allocate_like(res, std::move(indptr), n, /*weighted=*/false);
  out.symmetric = true;
  NodeId* out_idx = out.indices.data();
  detail::parallel_for(res, n, [&](std::int64_t r) {
    merge_unique(s_idx + s_ptr[r], s_idx + s_ptr[r + 1], t_idx + t_ptr[r], t_idx + t_ptr[r + 1],
                 out_idx + out_ptr[r]);
  });
  return out;
}

Graph deduplicate(const kernels::Resources& res, const Graph& a) {
  detail::expect_host_csr(a, "deduplicate");
  const std::int64_t n = a.num_rows();
  Graph sorted_copy;
  const Graph* s = &a;
  if (!detail::rows_sorted(res, a)) {
    sorted_copy = detail::sort_rows(res, a);
    s = &sorted_copy;
  }
  const std::int64_t* s_ptr = s->indptr.data();
  const NodeId* s_idx = s->indices.data();
  const float* s_val = s->values.empty() ? nullptr : s->values.data();

  auto indptr = detail::host_tensor<std::int64_t>(res, n + 1);
  std::int64_t* out_ptr = indptr.data();
  detail::parallel_for(res, n, [&](std::int64_t r) {
    std::int64_t count = 0;
    for (std::int64_t e = s_ptr[r]; e < s_ptr[r + 1]; ++e) {
      count += (e == s_ptr[r] || s_idx[e] != s_idx[e - 1]) ? 1 : 0;
    }
    out_ptr[r] = count;
  });
  detail::counts_to_offsets(out_ptr, n);
  Graph out = allocate_like(res, std::move(indptr), a.num_cols, s_val != nullptr);
  out.symmetric = a.symmetric;
  NodeId* out_idx = out.indices.data();
  float* out_val = s_val != nullptr ? out.values.data() : nullptr;
  detail::parallel_for(res, n, [&](std::int64_t r) {
    std::int64_t k = out_ptr[r] - 1;
    for (std::int64_t e = s_ptr[r]; e < s_ptr[r + 1]; ++e) {
      if (e == s_ptr[r] || s_idx[e] != s_idx[e - 1]) {
        ++k;
        out_idx[k] = s_idx[e];
        if (out_val != nullptr) out_val[k] = s_val[e];
      } else if (out_val != nullptr) {
        out_val[k] += s_val[e];
      }
    }
  });
  return out;
}

Graph remove_self_loops(const kernels::Resources& res, const Graph& a) {
  expect_square_host(a, "remove_self_loops");
  const std::int64_t n = a.num_rows();
  const std::int64_t* a_ptr = a.indptr.data();
  const NodeId* a_idx = a.indices.data();
  const float* a_val = a.values.empty() ? nullptr : a.values.data();

  auto indptr = detail::host_tensor<std::int64_t>(res, n + 1);
  std::int64_t* out_ptr = indptr.data();
  detail::parallel_for(res, n, [&](std::int64_t r) {
    std::int64_t count = 0;
    for (std::int64_t e = a_ptr[r]; e < a_ptr[r + 1]; ++e) count += a_idx[e] != r ? 1 : 0;
    out_ptr[r] = count;
  });
  detail::counts_to_offsets(out_ptr, n);
  Graph out = allocate_like(res, std::move(indptr), n, a_val != nullptr);
  out.symmetric = a.symmetric;  // diagonal changes keep A == Aᵀ
  NodeId* out_idx = out.indices.data();
  float* out_val = a_val != nullptr ? out.values.data() : nullptr;
  detail::parallel_for(res, n, [&](std::int64_t r) {
    std::int64_t k = out_ptr[r];
    for (std::int64_t e = a_ptr[r]; e < a_ptr[r + 1]; ++e) {
      if (a_idx[e] == r) continue;
      out_idx[k] = a_idx[e];
      if (out_val != nullptr) out_val[k] = a_val[e];
      ++k;
    }
  });
  return out;
}

Graph add_self_loops(const kernels::Resources& res, const Graph& a) {
  expect_square_host(a, "add_self_loops");
  const std::int64_t n = a.num_rows();
  const std::int64_t* a_ptr = a.indptr.data();
  const NodeId* a_idx = a.indices.data();
  const float* a_val = a.values.empty() ? nullptr : a.values.data();

  auto indptr = detail::host_tensor<std::int64_t>(res, n + 1);
  std::int64_t* out_ptr = indptr.data();
  detail::parallel_for(res, n, [&](std::int64_t r) {
    bool has_loop = false;
    for (std::int64_t e = a_ptr[r]; e < a_ptr[r + 1]; ++e) has_loop |= a_idx[e] == r;
    out_ptr[r] = a_ptr[r + 1] - a_ptr[r] + (has_loop ? 0 : 1);
  });
  detail::counts_to_offsets(out_ptr, n);
  Graph out = allocate_like(res, std::move(indptr), n, a_val != nullptr);
  out.symmetric = a.symmetric;  // diagonal changes keep A == Aᵀ
  NodeId* out_idx = out.indices.data();
  float* out_val = a_val != nullptr ? out.values.data() : nullptr;
  detail::parallel_for(res, n, [&](std::int64_t r) {
    const auto row = static_cast<NodeId>(r);
    const bool missing = out_ptr[r + 1] - out_ptr[r] != a_ptr[r + 1] - a_ptr[r];
    bool inserted = !missing;
    std::int64_t k = out_ptr[r];
    for (std::int64_t e = a_ptr[r]; e < a_ptr[r + 1]; ++e) {
      if (!inserted && a_idx[e] > row) {
        out_idx[k] = row;
        if (out_val != nullptr) out_val[k] = 1.0f;
        ++k;
        inserted = true;
      }
      out_idx[k] = a_idx[e];
      if (out_val != nullptr) out_val[k] = a_val[e];
      ++k;
    }
    if (!inserted) {
      out_idx[k] = row;
      if (out_val != nullptr) out_val[k] = 1.0f;
    }
  });
  return out;
}

template <class T>
kernels::CsrMatrix<NodeId, T> gcn_normalize(const kernels::Resources& res, const Graph& a) {
  Graph looped = add_self_loops(res, a);
  const std::int64_t n = looped.num_rows();
  const std::int64_t* ptr = looped.indptr.data();
  const NodeId* idx = looped.indices.data();
  const float* val = looped.values.empty() ? nullptr : looped.values.data();

  // Degrees in double: a float sum over a hub's million entries would lose low-order bits.
  std::vector<double> inv_sqrt_deg(static_cast<std::size_t>(n));
  detail::parallel_for(res, n, [&](std::int64_t r) {
    double deg = 0.0;
    if (val == nullptr) {
      deg = static_cast<double>(ptr[r + 1] - ptr[r]);
    } else {
      for (std::int64_t e = ptr[r]; e < ptr[r + 1]; ++e) deg += val[e];
    }
    inv_sqrt_deg[static_cast<std::size_t>(r)] = kernels::gcn_inv_sqrt(deg);
  });
  const std::int64_t m = looped.num_edges();
  kernels::CsrMatrix<NodeId, T> out{std::move(looped.indptr), std::move(looped.indices),
                                    detail::host_tensor<T>(res, m), n, looped.symmetric};
  T* out_val = out.values.data();
  detail::parallel_for(res, n, [&](std::int64_t r) {
    const double dr = inv_sqrt_deg[static_cast<std::size_t>(r)];
    for (std::int64_t e = ptr[r]; e < ptr[r + 1]; ++e) {
      const double w = val == nullptr ? 1.0 : static_cast<double>(val[e]);
      // gcn_weight's product, with the inverse square roots computed once per node.
      out_val[e] = static_cast<T>(w * dr * inv_sqrt_deg[static_cast<std::size_t>(idx[e])]);
    }
  });
  return out;
}

template kernels::CsrMatrix<NodeId, float> gcn_normalize<float>(const kernels::Resources&,
                                                                const Graph&);
template kernels::CsrMatrix<NodeId, double> gcn_normalize<double>(const kernels::Resources&,
                                                                  const Graph&);

kernels::FeatureMatrix<float> structural_features(const kernels::Resources& res, const Graph& a,
                                                  StructuralFeatures kind) {
  expect_square_host(a, "structural_features");
  const std::int64_t n = a.num_rows();
  if (kind == StructuralFeatures::Constant) {
    auto x = detail::host_tensor<float>(res, n, 1);
    std::fill(x.data(), x.data() + n, 1.0f);
    return x;
  }
  HALO_EXPECTS(kind == StructuralFeatures::Degree, "structural_features: unknown kind");
  const std::int64_t* ptr = a.indptr.data();
  std::int64_t max_degree = 0;
  for (std::int64_t r = 0; r < n; ++r) max_degree = std::max(max_degree, ptr[r + 1] - ptr[r]);
  const std::int64_t buckets = std::min(max_degree, kMaxDegreeBucket) + 1;
  kernels::CsrMatrix<std::int32_t, float> x{detail::host_tensor<std::int64_t>(res, n + 1),
                                            detail::host_tensor<std::int32_t>(res, n),
                                            detail::host_tensor<float>(res, n), buckets};
  std::int64_t* x_ptr = x.indptr.data();
  std::int32_t* x_idx = x.indices.data();
  float* x_val = x.values.data();
  x_ptr[n] = n;
  detail::parallel_for(res, n, [&](std::int64_t r) {
    x_ptr[r] = r;
    x_idx[r] = static_cast<std::int32_t>(std::min(ptr[r + 1] - ptr[r], kMaxDegreeBucket));
    x_val[r] = 1.0f;
  });
  return x;
}

void row_normalize(const kernels::Resources& res, kernels::FeatureMatrix<float>& x) {
  if (auto* dense = std::get_if<kernels::Tensor<float>>(&x)) {
    HALO_EXPECTS(dense->device() == kernels::Device::Cpu,
                 "row_normalize: the features must be on the host");
    const std::int64_t cols = dense->cols();
    float* data = dense->data();
    detail::parallel_for(res, dense->rows(), [&](std::int64_t r) {
      float* row = data + r * cols;
      double sum = 0.0;
      for (std::int64_t c = 0; c < cols; ++c) sum += std::fabs(row[c]);
      if (sum == 0.0) return;
      const double inv = 1.0 / sum;
      for (std::int64_t c = 0; c < cols; ++c) row[c] = static_cast<float>(row[c] * inv);
    });
    return;
  }
  auto& sparse = std::get<kernels::CsrMatrix<std::int32_t, float>>(x);
  HALO_EXPECTS(sparse.indptr.device() == kernels::Device::Cpu &&
                   sparse.values.device() == kernels::Device::Cpu,
               "row_normalize: the features must be on the host");
  HALO_EXPECTS(sparse.values.empty() || sparse.values.numel() == sparse.num_edges(),
               "row_normalize: values must be empty or hold one value per entry");
  const std::int64_t n = sparse.num_rows();
  if (sparse.values.empty()) {
    sparse.values = detail::host_tensor<float>(res, sparse.num_edges());
    float* v = sparse.values.data();
    for (std::int64_t e = 0; e < sparse.num_edges(); ++e) v[e] = 1.0f;
  }
  const std::int64_t* ptr = sparse.indptr.data();
  float* val = sparse.values.data();
  detail::parallel_for(res, n, [&](std::int64_t r) {
    double sum = 0.0;
    for (std::int64_t e = ptr[r]; e < ptr[r + 1]; ++e) sum += std::fabs(val[e]);
    if (sum == 0.0) return;
    const double inv = 1.0 / sum;
    for (std::int64_t e = ptr[r]; e < ptr[r + 1]; ++e) val[e] = static_cast<float>(val[e] * inv);
  });
}

}  // namespace halo::datasets
