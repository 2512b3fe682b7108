#pragma once
// Helpers of the partition tests: datasets, and plain reference recomputations of the metrics.

#include <algorithm>
#include <cstdint>
#include <filesystem>
#include <gtest/gtest.h>
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

/// Checks that every owned row of `part` lists its columns in ascending original id, and adds
/// its entries to `got` as (original row, original column, 1) triples.
inline void add_rows_by_original_id(const Part& part, Triples& got) {
  const auto& g = part.graph;
  for (std::int64_t i = 0; i < part.num_owned(); ++i)
    for (std::int64_t e = g.indptr(i); e < g.indptr(i + 1); ++e) {
      if (e > g.indptr(i)) {
        EXPECT_LT(part.ids.to_original(g.indices(e - 1)), part.ids.to_original(g.indices(e)))
            << "rows in ascending original id";
      }
      got.emplace_back(part.ids.to_original(i), part.ids.to_original(g.indices(e)), 1.0f);
    }
}

/// Checks `part`'s halo: remote, ascending partition id, grouped by owner as recv_offsets say,
/// its original ids those of `original` (partition id -> original id).
inline void expect_halo_grouped_by_owner(const Part& part, const std::vector<NodeId>& original) {
  const std::int64_t owned = part.num_owned();
  for (std::int64_t h = 0; h < part.num_halo(); ++h) {
    const NodeId id = part.ids.to_partition(owned + h);
    const std::int32_t owner = part.book().owner(id);
    EXPECT_NE(owner, part.rank());
    EXPECT_EQ(part.ids.to_original(owned + h), original[static_cast<std::size_t>(id)]);
    EXPECT_EQ(part.ids.to_local(id), owned + h);
    if (h > 0) {
      EXPECT_LT(part.ids.to_partition(owned + h - 1), id);
    }
    EXPECT_GE(h, part.recv_offsets[static_cast<std::size_t>(owner)]);
    EXPECT_LT(h, part.recv_offsets[static_cast<std::size_t>(owner) + 1]);
  }
  EXPECT_EQ(part.recv_offsets[static_cast<std::size_t>(part.rank())],
            part.recv_offsets[static_cast<std::size_t>(part.rank()) + 1])
      << "no halo from itself";
  EXPECT_EQ(part.send_offsets[static_cast<std::size_t>(part.rank())],
            part.send_offsets[static_cast<std::size_t>(part.rank()) + 1])
      << "nothing sent to itself";
}

/// What part k sends to part j is, in order, what part j receives from part k (owned rows
/// only), for every pair of `parts` (every part of one partition).
inline void expect_sends_are_receives(const std::vector<Part>& parts) {
  for (const Part& from : parts)
    for (const Part& to : parts) {
      const auto k = static_cast<std::size_t>(from.rank()), j = static_cast<std::size_t>(to.rank());
      std::vector<NodeId> sent, received;
      for (std::int64_t i = from.send_offsets[j]; i < from.send_offsets[j + 1]; ++i) {
        ASSERT_LT(from.send_rows(i), from.num_owned());
        sent.push_back(from.ids.to_partition(from.send_rows(i)));
      }
      for (std::int64_t h = to.recv_offsets[k]; h < to.recv_offsets[k + 1]; ++h)
        received.push_back(to.ids.to_partition(to.num_owned() + h));
      EXPECT_EQ(sent, received) << "part " << k << " -> part " << j;
    }
}

}  // namespace halo::partition::test
