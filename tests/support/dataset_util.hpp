#pragma once
// Test helpers on whole datasets: deep copies and the directed variant of a graph.

#include <cstdint>
#include <vector>

#include <halo/datasets/dataset.hpp>

namespace halo::testing {

/// A deep copy of `ds` (host tensors).
inline datasets::Dataset copy_dataset(const kernels::Resources& res, const datasets::Dataset& ds) {
  return ds.clone(res);
}

/// `ds` keeping only the entries (r, c) with c < r: a directed graph (no entry has its
/// reverse) whose A ∪ Aᵀ is the symmetric part of the original. Values are dropped.
inline datasets::Dataset directed_copy(const kernels::Resources& res, const datasets::Dataset& ds) {
  datasets::Dataset d = copy_dataset(res, ds);
  std::vector<std::int64_t> indptr{0};
  std::vector<kernels::NodeId> indices;
  const auto& g = ds.graph;
  for (std::int64_t r = 0; r < g.num_rows(); ++r) {
    for (std::int64_t e = g.indptr.data()[r]; e < g.indptr.data()[r + 1]; ++e)
      if (g.indices.data()[e] < r) indices.push_back(g.indices.data()[e]);
    indptr.push_back(static_cast<std::int64_t>(indices.size()));
  }
  const auto nnz = static_cast<std::int64_t>(indices.size());
  d.graph = {kernels::Tensor<std::int64_t>::from_host(res, indptr),
             kernels::Tensor<kernels::NodeId>::from_host(res, indices, nnz, 1),
             {},
             g.num_rows(),
             false};
  d.name = ds.name + "-directed";
  return d;
}

}  // namespace halo::testing
