#pragma once
// Helpers of the sampler tests: small graphs, block snapshots, and the structural checks every
// sampled batch must pass (against plain recomputations, never the sampler's own code).

#include <algorithm>
#include <cstdint>
#include <gtest/gtest.h>
#include <map>
#include <set>
#include <string>
#include <vector>

#include <halo/datasets/dataset.hpp>
#include <halo/datasets/generators/rmat.hpp>
#include <halo/sampler/neighbor_sampler.hpp>

#include "support/testing.hpp"

namespace halo::sampler::test {

using datasets::Graph;
using kernels::Device;
using kernels::NodeId;
using kernels::Resources;

inline const Resources& cpu() {
  static const Resources res(Device::Cpu, 3);
  return res;
}

inline kernels::Span<const NodeId> span(const std::vector<NodeId>& v) {
  return {v.data(), static_cast<std::int64_t>(v.size())};
}
inline std::vector<NodeId> to_vector(kernels::Span<const NodeId> s) {
  return {s.data, s.data + s.size};
}

/// A host graph whose row v is rows[v].
inline Graph graph_from_rows(const std::vector<std::vector<NodeId>>& rows) {
  std::vector<std::int64_t> indptr{0};
  std::vector<NodeId> indices;
  for (const auto& r : rows) {
    indices.insert(indices.end(), r.begin(), r.end());
    indptr.push_back(static_cast<std::int64_t>(indices.size()));
  }
  Graph g;
  g.indptr = testing::host_tensor(indptr);
  g.indices = testing::host_tensor(indices);
  g.num_cols = static_cast<std::int64_t>(rows.size());
  return g;
}

/// A power-law graph of 2^scale nodes (symmetric, no duplicates, some isolated nodes).
inline Graph rmat_graph(std::int32_t scale = 10, std::uint64_t seed = 5) {
  datasets::RmatConfig c;
  c.scale = scale;
  c.avg_degree = 8;
  c.num_features = 1;
  c.seed = seed;
  return datasets::make_rmat(cpu(), c).graph;
}

/// Node 0 is a hub linked both ways to each of the other n - 1 nodes.
inline Graph star_graph(NodeId n) {
  std::vector<std::vector<NodeId>> rows(static_cast<std::size_t>(n));
  for (NodeId v = 1; v < n; ++v) {
    rows[0].push_back(v);
    rows[static_cast<std::size_t>(v)].push_back(0);
  }
  return graph_from_rows(rows);
}

/// `count` distinct node ids from [0, n), a pure function of `seed`.
inline std::vector<NodeId> seeds_of(std::int64_t count, std::int64_t n, std::uint64_t seed) {
  return testing::random_distinct_ids<NodeId>(count, n, seed);
}

/// A deep copy of a block, for comparing batches after the sampler's buffers moved on.
struct BlockCopy {
  std::vector<std::int64_t> indptr;
  std::vector<NodeId> indices;
  std::vector<NodeId> src_ids;
  bool operator==(const BlockCopy&) const = default;
};

inline std::vector<BlockCopy> copy_blocks(const MiniBatch& mb) {
  std::vector<BlockCopy> out;
  for (const Block& b : mb.blocks) {
    const auto& c = b.csr;
    out.push_back({{c.indptr, c.indptr + c.num_rows + 1},
                   {c.indices, c.indices + c.num_edges()},
                   to_vector(b.src_ids)});
  }
  return out;
}

/// The expected number of draws of a destination of degree d (from the documented semantics).
inline std::int64_t expected_count(std::int64_t d, int fanout, bool replace) {
  if (fanout == -1) return d;
  if (replace) return d > 0 ? fanout : 0;
  return std::min<std::int64_t>(fanout, d);
}

/// Plain relabelling: destinations keep ids 0..num_dst-1, every other id gets the next free
/// local id at its first occurrence in `sampled`.
struct RefRelabel {
  std::vector<NodeId> src_ids;
  std::vector<NodeId> local;
};
inline RefRelabel ref_relabel(const std::vector<NodeId>& dst, const std::vector<NodeId>& sampled) {
  RefRelabel r;
  std::map<NodeId, NodeId> local_of;
  for (NodeId v : dst) {
    local_of.emplace(v, static_cast<NodeId>(r.src_ids.size()));
    r.src_ids.push_back(v);
  }
  for (NodeId v : sampled) {
    const auto [it, inserted] = local_of.emplace(v, static_cast<NodeId>(r.src_ids.size()));
    if (inserted) r.src_ids.push_back(v);
    r.local.push_back(it->second);
  }
  return r;
}

/// Every property a batch of `seeds` sampled from `g` with `config` must have.
inline void check_batch(const Graph& g, const MiniBatch& mb, const std::vector<NodeId>& seeds,
                        const SamplerConfig& config) {
  const std::size_t num_layers = config.fanouts.size();
  ASSERT_EQ(mb.blocks.size(), num_layers);
  EXPECT_EQ(to_vector(mb.seeds), seeds);
  EXPECT_EQ(to_vector(mb.blocks.back().dst_ids()), seeds);
  EXPECT_EQ(to_vector(mb.input_nodes), to_vector(mb.blocks.front().src_ids));
  for (std::size_t l = 0; l < num_layers; ++l) {
    SCOPED_TRACE("block " + std::to_string(l));
    const Block& b = mb.blocks[l];
    const auto& c = b.csr;
    ASSERT_EQ(b.src_ids.size, b.num_src());
    ASSERT_LE(b.num_dst(), b.num_src());
    EXPECT_EQ(c.values, nullptr);
    if (l + 1 < num_layers) {  // the next hop's destinations are this block's sources
      EXPECT_EQ(to_vector(mb.blocks[l + 1].src_ids), to_vector(b.dst_ids()));
    }
    ASSERT_EQ(c.indptr[0], 0);
    std::vector<NodeId> sampled_global;
    for (std::int64_t i = 0; i < b.num_dst(); ++i) {
      const NodeId v = b.src_ids[i];
      ASSERT_TRUE(v >= 0 && v < g.num_rows());
      const std::set<NodeId> row(g.indices.data() + g.indptr(v),
                                 g.indices.data() + g.indptr(v + 1));
      const std::int64_t deg = g.indptr(v + 1) - g.indptr(v);
      ASSERT_EQ(c.indptr[i + 1] - c.indptr[i],
                expected_count(deg, config.fanouts[l], config.replace))
          << "destination " << v << " of degree " << deg;
      std::multiset<NodeId> drawn;
      for (std::int64_t e = c.indptr[i]; e < c.indptr[i + 1]; ++e) {
        ASSERT_TRUE(c.indices[e] >= 0 && c.indices[e] < b.num_src());
        const NodeId u = b.src_ids[c.indices[e]];
        EXPECT_TRUE(row.count(u)) << u << " is no neighbour of " << v;
        drawn.insert(u);
        sampled_global.push_back(u);
      }
      if (!config.replace) {  // the test graphs have no repeated edges
        EXPECT_EQ(std::set<NodeId>(drawn.begin(), drawn.end()).size(), drawn.size())
            << "repeated neighbour of " << v;
      }
    }
    const RefRelabel ref = ref_relabel(to_vector(b.dst_ids()), sampled_global);
    EXPECT_EQ(to_vector(b.src_ids), ref.src_ids);
    EXPECT_EQ(std::vector<NodeId>(c.indices, c.indices + c.num_edges()), ref.local);
  }
}

}  // namespace halo::sampler::test
