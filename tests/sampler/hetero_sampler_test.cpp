// The heterogeneous neighbour sampler against the graph itself: fan-out -1 reproduces every
// neighbourhood exactly; with a fan-out each destination gets min(fanout, degree) distinct,
// existing edges per relation; blocks chain per type; the draws are reproducible from the seed
// and independent of the thread count. Also the --fanouts syntax.

#include <algorithm>
#include <gtest/gtest.h>
#include <random>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include <halo/datasets/hetero.hpp>
#include <halo/kernels/error.hpp>
#include <halo/sampler/hetero_sampler.hpp>

#include "sampler_test_util.hpp"

namespace halo::sampler::test {
namespace {

using datasets::HeteroGraph;

/// Three types (paper 40 = target, author 25, venue 4), relations cites (paper -> paper),
/// writes (author -> paper), in (paper -> venue), random edges, and their reverses.
HeteroGraph random_hetero(std::uint64_t seed) {
  HeteroGraph g;
  g.name = "random";
  for (const auto& [name, n] :
       std::vector<std::pair<std::string, int>>{{"paper", 40}, {"author", 25}, {"venue", 4}}) {
    datasets::NodeType t;
    t.name = name;
    t.num_nodes = n;
    g.node_types.push_back(std::move(t));
  }
  std::mt19937_64 rng(seed);
  const std::vector<std::tuple<std::string, int, int, int>> rels = {
      {"cites", 0, 0, 160}, {"writes", 1, 0, 120}, {"in", 0, 2, 40}};
  std::vector<datasets::Relation> stored;
  for (const auto& [name, s, d, m] : rels) {
    std::vector<std::pair<NodeId, NodeId>> dst_src;
    const auto ns = g.node_types[static_cast<std::size_t>(s)].num_nodes;
    const auto nd = g.node_types[static_cast<std::size_t>(d)].num_nodes;
    for (int e = 0; e < m; ++e)
      dst_src.emplace_back(static_cast<NodeId>(rng() % static_cast<std::uint64_t>(nd)),
                           static_cast<NodeId>(rng() % static_cast<std::uint64_t>(ns)));
    datasets::Relation r;
    r.name = name;
    r.src_type = s;
    r.dst_type = d;
    r.adj = datasets::relation_csr(cpu(), nd, ns, std::move(dst_src));
    stored.push_back(std::move(r));
  }
  datasets::add_reverse_relations(cpu(), g, std::move(stored));
  g.target_type = 0;
  return g;
}

std::vector<std::string> names(const HeteroGraph& g) {
  std::vector<std::string> n;
  for (const auto& r : g.relations) n.push_back(r.name);
  return n;
}

std::vector<NodeId> row(const datasets::Graph& a, NodeId v) {
  return {a.indices.data() + a.indptr.data()[v], a.indices.data() + a.indptr.data()[v + 1]};
}

/// Checks the structure of every block and, per destination and relation, the sampled
/// neighbours (global ids) against the graph's row: exactly the row for fan-out -1, else
/// min(fanout, degree) distinct members of it.
void check_batch(const HeteroGraph& g, const HeteroMiniBatch& mb,
                 const std::vector<std::vector<int>>& fanouts, const std::vector<NodeId>& seeds) {
  const std::size_t nt = g.node_types.size();
  ASSERT_EQ(mb.blocks.size(), fanouts.size());
  EXPECT_EQ(to_vector(mb.seeds), seeds);
  const HeteroBlock& last = mb.blocks.back();
  for (std::size_t t = 0; t < nt; ++t)
    EXPECT_EQ(last.num_dst[t], t == 0 ? static_cast<std::int64_t>(seeds.size()) : 0);
  for (std::size_t l = 0; l < mb.blocks.size(); ++l) {
    const HeteroBlock& b = mb.blocks[l];
    for (std::size_t t = 0; t < nt; ++t) {
      ASSERT_EQ(b.src_ids[t].size, b.num_src[t]);
      const std::vector<NodeId> ids = to_vector(b.src_ids[t]);
      EXPECT_EQ(std::set<NodeId>(ids.begin(), ids.end()).size(), ids.size()) << "distinct";
      if (l + 1 < mb.blocks.size()) {
        EXPECT_EQ(mb.blocks[l + 1].num_src[t], b.num_dst[t]);
        EXPECT_EQ(to_vector(mb.blocks[l + 1].src_ids[t]),
                  std::vector<NodeId>(ids.begin(), ids.begin() + b.num_dst[t]));
      }
    }
    std::vector<std::vector<bool>> used(nt);
    for (std::size_t t = 0; t < nt; ++t)
      used[t].assign(static_cast<std::size_t>(b.num_src[t]), false);
    for (std::size_t r = 0; r < g.relations.size(); ++r) {
      const auto& rel = g.relations[r];
      const auto dt = static_cast<std::size_t>(rel.dst_type);
      const auto st = static_cast<std::size_t>(rel.src_type);
      const auto& a = b.adj[r];
      ASSERT_EQ(a.num_rows, b.num_dst[dt]);
      ASSERT_EQ(a.num_cols, b.num_src[st]);
      for (std::int64_t i = 0; i < a.num_rows; ++i) {
        std::vector<NodeId> got;
        for (std::int64_t e = a.indptr[i]; e < a.indptr[i + 1]; ++e) {
          ASSERT_GE(a.indices[e], 0);
          ASSERT_LT(a.indices[e], a.num_cols);
          used[st][static_cast<std::size_t>(a.indices[e])] = true;
          got.push_back(b.src_ids[st][a.indices[e]]);
        }
        std::vector<NodeId> want = row(rel.adj, b.src_ids[dt][i]);
        const int f = fanouts[l][r];
        std::sort(got.begin(), got.end());
        if (f < 0) {
          EXPECT_EQ(got, want) << rel.name << " layer " << l;
        } else {
          EXPECT_EQ(got.size(), std::min<std::size_t>(static_cast<std::size_t>(f), want.size()));
          EXPECT_EQ(std::adjacent_find(got.begin(), got.end()), got.end()) << "no repeats";
          for (const NodeId v : got)
            EXPECT_TRUE(std::binary_search(want.begin(), want.end(), v)) << rel.name;
        }
      }
    }
    // Every source beyond the destinations is some edge's source.
    for (std::size_t t = 0; t < nt; ++t)
      for (std::int64_t i = b.num_dst[t]; i < b.num_src[t]; ++i)
        EXPECT_TRUE(used[t][static_cast<std::size_t>(i)]);
  }
}

TEST(HeteroSampler, FullFanoutIsTheWholeNeighbourhood) {
  const HeteroGraph g = random_hetero(1);
  HeteroSamplerConfig c;
  c.fanouts = parse_hetero_fanouts("-1,-1", names(g));
  HeteroNeighborSampler s(cpu(), g, 8, c);
  const std::vector<NodeId> seeds = {5, 0, 39, 17};
  check_batch(g, s.sample(cpu(), span(seeds), 0, 0), c.fanouts, seeds);
}

TEST(HeteroSampler, FanoutsPerRelationDrawDistinctExistingEdges) {
  const HeteroGraph g = random_hetero(2);
  HeteroSamplerConfig c;
  c.fanouts = parse_hetero_fanouts("cites=2,writes=3,*=1:cites=3,rev_in=-1,*=2", names(g));
  c.seed = 7;
  HeteroNeighborSampler s(cpu(), g, 16, c);
  const std::vector<NodeId> seeds = {1, 2, 3, 30, 31, 8, 9, 10, 11, 12};
  const HeteroMiniBatch& mb = s.sample(cpu(), span(seeds), 3, 1);
  check_batch(g, mb, c.fanouts, seeds);
  std::int64_t total = 0;
  for (const auto m : mb.sampled_edges) total += m;
  EXPECT_GT(total, 0);
}

std::vector<std::vector<NodeId>> flatten(const HeteroMiniBatch& mb) {
  std::vector<std::vector<NodeId>> out;
  for (const HeteroBlock& b : mb.blocks) {
    for (const auto& ids : b.src_ids) out.push_back(to_vector(ids));
    for (const auto& a : b.adj) out.emplace_back(a.indices, a.indices + a.indptr[a.num_rows]);
  }
  return out;
}

TEST(HeteroSampler, ReproducibleFromTheSeedOnAnyThreadCount) {
  const HeteroGraph g = random_hetero(3);
  HeteroSamplerConfig c;
  c.fanouts = parse_hetero_fanouts("2,2", names(g));
  c.seed = 11;
  const std::vector<NodeId> seeds = {4, 6, 8, 10, 12, 14};
  HeteroNeighborSampler a(cpu(), g, 6, c);
  const kernels::Resources one(kernels::Device::Cpu, 1);
  HeteroNeighborSampler b(one, g, 6, c);
  const auto first = flatten(a.sample(cpu(), span(seeds), 2, 5));
  EXPECT_EQ(first, flatten(b.sample(one, span(seeds), 2, 5)));
  EXPECT_NE(first, flatten(a.sample(cpu(), span(seeds), 2, 6)));  // another batch draws anew
  EXPECT_EQ(first, flatten(a.sample(cpu(), span(seeds), 2, 5)));  // and the buffers reset
}

TEST(HeteroSampler, RefusesBadSeedsAndFanouts) {
  const HeteroGraph g = random_hetero(4);
  HeteroSamplerConfig c;
  c.fanouts = parse_hetero_fanouts("3", names(g));
  HeteroNeighborSampler s(cpu(), g, 4, c);
  const std::vector<NodeId> repeated = {1, 2, 1}, outside = {40}, many = {0, 1, 2, 3, 4};
  EXPECT_THROW(s.sample(cpu(), span(repeated), 0, 0), LogicError);
  EXPECT_THROW(s.sample(cpu(), span(outside), 0, 0), LogicError);
  EXPECT_THROW(s.sample(cpu(), span(many), 0, 0), LogicError);
  const std::vector<NodeId> ok = {1, 2};
  check_batch(g, s.sample(cpu(), span(ok), 0, 0), c.fanouts, ok);  // still usable
  c.fanouts = {{1, 2}};
  EXPECT_THROW(HeteroNeighborSampler(cpu(), g, 4, c), LogicError);
}

TEST(HeteroSampler, ParsesTheFanoutSyntax) {
  const std::vector<std::string> rels = {"cites", "writes", "rev_writes"};
  using V = std::vector<std::vector<int>>;
  EXPECT_EQ(parse_hetero_fanouts("10,5", rels), (V{{10, 10, 10}, {5, 5, 5}}));
  EXPECT_EQ(parse_hetero_fanouts("7", rels), (V{{7, 7, 7}}));
  EXPECT_EQ(parse_hetero_fanouts("writes=5,cites=10:4", rels), (V{{10, 5, -1}, {4, 4, 4}}));
  EXPECT_EQ(parse_hetero_fanouts("writes=5,*=2:-1", rels), (V{{2, 5, 2}, {-1, -1, -1}}));
  for (const char* bad : {"writes=5,writes=3", "venue=3", "x", "writes=-2", "3,writes=2:1", ""})
    EXPECT_THROW(parse_hetero_fanouts(bad, rels), LogicError) << bad;
}

}  // namespace
}  // namespace halo::sampler::test
