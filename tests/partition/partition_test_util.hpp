#pragma once
// Helpers of the partition tests: datasets, and plain reference recomputations of the metrics.

#include <cstdint>
#include <filesystem>
#include <map>
#include <set>
#include <utility>
#include <vector>

#include <halo/datasets/dataset.hpp>
#include <halo/datasets/generators/synthetic.hpp>
#include <halo/datasets/readers/plain_format.hpp>
#include <halo/partition/formats/partition_format.hpp>
#include <halo/partition/partitioners/partitioner.hpp>

#include "support/testing.hpp"

namespace halo::partition::test {

using datasets::Dataset;
using kernels::Device;
using kernels::Resources;

inline const Resources& cpu() {
  static const Resources res(Device::Cpu, 3);
  return res;
}

inline std::filesystem::path cora_dir() {
  return halo::testing::datasets_dir() / "planetoid" / "cora";
}

inline const Dataset& cora() {
  static const Dataset ds = datasets::read_directory(cpu(), cora_dir());
  return ds;
}

inline Dataset synthetic(std::int64_t nodes = 3000, std::uint64_t seed = 3) {
  datasets::SyntheticConfig c;
  c.num_nodes = nodes;
  c.num_features = 6;
  c.seed = seed;
  return datasets::make_synthetic(cpu(), c);
}

/// The undirected edges {u, v}, u < v, of a graph read entry by entry (self-loops dropped).
inline std::set<std::pair<int, int>> undirected_edges(const datasets::Graph& g) {
  std::set<std::pair<int, int>> edges;
  for (std::int64_t r = 0; r < g.num_rows(); ++r)
    for (std::int64_t e = g.indptr(r); e < g.indptr(r + 1); ++e) {
      const int c = g.indices(e);
      if (c != r)
        edges.emplace(std::min<int>(c, static_cast<int>(r)), std::max<int>(c, static_cast<int>(r)));
    }
  return edges;
}

/// Reference edge cut: undirected edges whose ends lie in different parts.
inline std::int64_t ref_edge_cut(const Dataset& ds, const std::vector<std::int32_t>& part) {
  std::int64_t cut = 0;
  for (const auto& [u, v] : undirected_edges(ds.graph)) cut += part[u] != part[v] ? 1 : 0;
  return cut;
}

/// Reference halo sizes on the training graph S = A ∪ Aᵀ without self-loops: distinct (part,
/// remote neighbour) pairs over the undirected edges, both directions.
inline std::vector<std::int64_t> ref_halo(const Dataset& ds, const std::vector<std::int32_t>& part,
                                          std::int32_t num_parts) {
  std::set<std::pair<int, int>> needs;
  for (const auto& [u, v] : undirected_edges(ds.graph))
    if (part[u] != part[v]) {
      needs.emplace(part[u], v);
      needs.emplace(part[v], u);
    }
  std::vector<std::int64_t> halo(static_cast<std::size_t>(num_parts), 0);
  for (const auto& [k, v] : needs) ++halo[static_cast<std::size_t>(k)];
  return halo;
}

/// Halo sizes counted on the stored rows only (columns of a part's rows owned elsewhere): what
/// format version 2 reported, about half of S's on a directed graph.
inline std::vector<std::int64_t> ref_row_halo(const Dataset& ds,
                                              const std::vector<std::int32_t>& part,
                                              std::int32_t num_parts) {
  std::set<std::pair<int, int>> needs;
  const auto& g = ds.graph;
  for (std::int64_t r = 0; r < g.num_rows(); ++r)
    for (std::int64_t e = g.indptr(r); e < g.indptr(r + 1); ++e)
      if (part[g.indices(e)] != part[r]) needs.emplace(part[r], g.indices(e));
  std::vector<std::int64_t> halo(static_cast<std::size_t>(num_parts), 0);
  for (const auto& [k, v] : needs) ++halo[static_cast<std::size_t>(k)];
  return halo;
}

/// The entries of a graph as (row, column, value) triples, sorted (duplicates kept).
using Triples = std::vector<std::tuple<int, int, float>>;
inline Triples triples(const datasets::Graph& g) {
  Triples t;
  for (std::int64_t r = 0; r < g.num_rows(); ++r)
    for (std::int64_t e = g.indptr(r); e < g.indptr(r + 1); ++e)
      t.emplace_back(static_cast<int>(r), g.indices(e), g.values.empty() ? 1.0f : g.values(e));
  std::sort(t.begin(), t.end());
  return t;
}

}  // namespace halo::partition::test
