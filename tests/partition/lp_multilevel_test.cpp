// The label-propagation multilevel partitioner: valid assignments within the imbalance on every
// constraint, a cut close to METIS's on graphs it coarsens over several levels, determinism,
// isolated nodes, and which method `auto` picks.

#include <algorithm>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <gtest/gtest.h>
#include <limits>
#include <string>
#include <vector>

#include <halo/datasets/generators/rmat.hpp>
#include <halo/datasets/graph_builder.hpp>
#include <halo/kernels/error.hpp>
#include <halo/partition/partitioners/lp_multilevel.hpp>
#include <halo/partition/partitioners/partitioner.hpp>

#include "partition/partition_test_util.hpp"

namespace halo::partition::test {
namespace {

using kernels::NodeId;

PartitionConfig config(std::int32_t parts, Method method = Method::LpMultilevel) {
  PartitionConfig c;
  c.num_parts = parts;
  c.method = method;
  return c;
}

/// The nodes, train and edges columns assign_parts balances by default.
std::vector<std::vector<std::int32_t>> columns(const Dataset& ds) {
  const auto n = static_cast<std::size_t>(ds.num_nodes());
  std::vector<std::vector<std::int32_t>> w(3, std::vector<std::int32_t>(n, 0));
  for (std::size_t v = 0; v < n; ++v) {
    w[0][v] = 1;
    w[2][v] = static_cast<std::int32_t>(ds.graph.indptr(static_cast<std::int64_t>(v) + 1) -
                                        ds.graph.indptr(static_cast<std::int64_t>(v)));
  }
  for (std::int64_t i = 0; i < ds.train_idx.numel(); ++i)
    w[1][static_cast<std::size_t>(ds.train_idx(i))] = 1;
  return w;
}

/// The largest part's load over the mean, per column.
std::vector<double> balance(const std::vector<std::vector<std::int32_t>>& w,
                            const std::vector<std::int32_t>& part, std::int32_t parts) {
  std::vector<double> out;
  for (const auto& col : w) {
    std::vector<double> load(static_cast<std::size_t>(parts), 0);
    double total = 0;
    for (std::size_t v = 0; v < col.size(); ++v) {
      load[static_cast<std::size_t>(part[v])] += col[v];
      total += col[v];
    }
    out.push_back(total == 0 ? 1.0 : *std::max_element(load.begin(), load.end()) / (total / parts));
  }
  return out;
}

Dataset rmat(std::int32_t scale) {
  datasets::RmatConfig c;
  c.scale = scale;
  c.avg_degree = 8;
  c.num_features = 1;
  return datasets::make_rmat(cpu(), c);
}

/// `g` with its arrays written to files in `dir` and mapped (Buffer::map_file), as a store's.
datasets::Graph mapped_copy(const datasets::Graph& g, const std::filesystem::path& dir) {
  auto map = [&]<class T>(const kernels::Tensor<T>& t, const char* name) {
    const std::filesystem::path file = dir / name;
    std::ofstream(file, std::ios::binary)
        .write(reinterpret_cast<const char*>(t.data()), static_cast<std::streamsize>(t.bytes()));
    return kernels::Tensor<T>(kernels::Buffer::map_file(file.string(), t.bytes()), t.rows());
  };
  datasets::Graph m;
  m.indptr = map(g.indptr, "indptr.bin");
  m.indices = map(g.indices, "indices.bin");
  m.num_cols = g.num_cols;
  m.symmetric = g.symmetric;
  return m;
}

TEST(LpMultilevel, CoarsensOverSeveralLevelsAndCutsCloseToMetis) {
  std::vector<Dataset> graphs;
  graphs.push_back(synthetic(6000));
  graphs.push_back(rmat(13));
  for (const Dataset& d : graphs) {
    const Dataset* ds = &d;
    const datasets::Graph s = partitioning_graph(cpu(), ds->graph);
    for (const std::int32_t p : {2, 5, 8}) {  // 5: blocks of 3 and 2 final parts, split unevenly
      SCOPED_TRACE(ds->name + ", " + std::to_string(p) + " parts");
      LpMultilevelStats stats;
      const Assignment a =
          lp_multilevel_parts(s, columns(*ds), config(p), {.contraction_limit = 40}, &stats);
      EXPECT_GE(stats.levels, 2);
      EXPECT_LT(stats.coarsest_nodes, ds->num_nodes() / 4);
      ASSERT_EQ(a.part.size(), static_cast<std::size_t>(ds->num_nodes()));
      for (const double b : balance(columns(*ds), a.part, p)) EXPECT_LE(b, 1.03 + 1e-9);
      const std::int64_t cut = ref_edge_cut(*ds, a.part);
      const PartitionResult metis = partition_dataset(cpu(), *ds, config(p, Method::MetisKway));
      EXPECT_LE(static_cast<double>(cut), 1.3 * static_cast<double>(metis.metrics.edge_cut))
          << "METIS " << metis.metrics.edge_cut;
      // Deterministic.
      EXPECT_EQ(lp_multilevel_parts(s, columns(*ds), config(p), {.contraction_limit = 40}).part,
                a.part);
    }
  }
}

// The deep scheme's point: on a planted partition (40 communities of 1,000 nodes, no structure
// inside one), label-propagation clusters straddle communities, and partitioning the coarsest
// graph into 16 parts at once cut 1.22x what METIS cuts on the whole graph; bisecting blocks
// level by level and refining in between comes within 1.12x (measured 1.09x).
TEST(LpMultilevel, DeepSplittingKeepsCommunitiesWhole) {
  datasets::SyntheticConfig c;
  c.num_nodes = 40000;
  c.num_classes = 40;
  c.avg_degree = 13.7;
  c.num_features = 1;
  const Dataset ds = datasets::make_synthetic(cpu(), c);
  const datasets::Graph s = partitioning_graph(cpu(), ds.graph);
  const std::vector<std::vector<std::int32_t>> nodes = {
      std::vector<std::int32_t>(static_cast<std::size_t>(ds.num_nodes()), 1)};
  LpMultilevelStats deep, whole;
  const Assignment a = lp_multilevel_parts(s, nodes, config(16), {.contraction_limit = 200}, &deep);
  const Assignment m =
      lp_multilevel_parts(s, nodes, config(16), {.contraction_limit = 1 << 30}, &whole);
  EXPECT_GE(deep.levels, 2);
  EXPECT_EQ(whole.levels, 0);  // METIS on the input
  EXPECT_LE(balance(nodes, a.part, 16)[0], 1.03 + 1e-9);
  const std::int64_t cut = ref_edge_cut(ds, a.part), metis = ref_edge_cut(ds, m.part);
  EXPECT_LE(static_cast<double>(cut), 1.12 * static_cast<double>(metis)) << "METIS " << metis;
}

// Under a memory budget far smaller than the coarse graphs, every level goes to scratch files
// (mapped, unlinked at once): the assignment is the same, bit for bit, and nothing is left in the
// scratch directory. The 64-bit edge weights (a total past 2^32) are exercised by a weighted
// second level only on huge graphs; both widths read through the same View.
TEST(LpMultilevel, CoarseLevelsOnDiskUnderABudgetGiveTheSameParts) {
  const halo::testing::TempDir scratch, files;
  const Dataset ds = rmat(14);
  const datasets::Graph s = partitioning_graph(cpu(), ds.graph);
  ASSERT_GT(s.num_edges() * 12, std::int64_t{1} << 20);  // far past the budget below
  const datasets::Graph mapped = mapped_copy(s, files.path());
  ASSERT_TRUE(mapped.indices.mapped());
  for (const std::int32_t p : {2, 8}) {
    SCOPED_TRACE(std::to_string(p) + " parts");
    LpMultilevelStats memory, disk;
    const Assignment a =
        lp_multilevel_parts(s, columns(ds), config(p), {.contraction_limit = 40}, &memory);
    PartitionConfig c = config(p);
    c.memory_budget = 64 << 10;
    c.scratch_dir = scratch.path().string();
    const Assignment b = lp_multilevel_parts(s, columns(ds), c, {.contraction_limit = 40}, &disk);
    EXPECT_EQ(memory.spilled_levels, 0);
    EXPECT_GE(disk.levels, 2);
    EXPECT_GE(disk.spilled_levels, 1);
    EXPECT_EQ(disk.levels, memory.levels);
    EXPECT_EQ(a.part, b.part);
    EXPECT_TRUE(std::filesystem::is_empty(scratch.path()));
    // The input itself a file mapping (a store's S): its rows are read through the file.
    EXPECT_EQ(lp_multilevel_parts(mapped, columns(ds), c, {.contraction_limit = 40}).part, a.part);
    EXPECT_EQ(lp_multilevel_parts(mapped, columns(ds), config(p), {.contraction_limit = 40}).part,
              a.part);
  }
  // A scratch directory that cannot be written: an error naming the file.
  PartitionConfig c = config(4);
  c.memory_budget = 1;
  c.scratch_dir = (scratch.path() / "missing").string();
  try {
    lp_multilevel_parts(s, columns(ds), c, {.contraction_limit = 40});
    ADD_FAILURE() << "no error";
  } catch (const IoError& e) {
    EXPECT_NE(std::string(e.what()).find((scratch.path() / "missing").string()), std::string::npos)
        << e.what();
  }
}

// Isolated nodes have no neighbour to join: they are grouped, so the graph still coarsens, and
// they fill the parts evenly.
TEST(LpMultilevel, IsolatedNodesCoarsenAndBalance) {
  std::vector<std::pair<NodeId, NodeId>> edges;
  for (NodeId v = 0; v < 3000; ++v) edges.push_back({v, (v + 1) % 3000});  // a ring
  Dataset ds = synthetic(6000);
  ds.graph = datasets::graph_from_edges(cpu(), 6000, edges);
  const datasets::Graph s = partitioning_graph(cpu(), ds.graph);
  LpMultilevelStats stats;
  const std::vector<std::vector<std::int32_t>> nodes = {std::vector<std::int32_t>(6000, 1)};
  const Assignment a = lp_multilevel_parts(s, nodes, config(4), {.contraction_limit = 20}, &stats);
  EXPECT_GE(stats.levels, 1);
  EXPECT_LT(stats.coarsest_nodes, 3000);
  EXPECT_LE(balance(nodes, a.part, 4)[0], 1.03 + 1e-9);
  EXPECT_LE(ref_edge_cut(ds, a.part), 40);  // a ring cut into 4 arcs needs 4; allow some slack
}

// Below contraction_limit * P nodes nothing is coarsened: METIS partitions the graph itself.
TEST(LpMultilevel, SmallGraphsGoStraightToMetis) {
  const datasets::Graph s = partitioning_graph(cpu(), cora().graph);
  LpMultilevelStats stats;
  const Assignment a = lp_multilevel_parts(s, columns(cora()), config(4), {}, &stats);
  EXPECT_EQ(stats.levels, 0);
  EXPECT_EQ(stats.coarsest_nodes, cora().num_nodes());
  for (const double b : balance(columns(cora()), a.part, 4)) EXPECT_LE(b, 1.03 + 1e-9);
}

TEST(LpMultilevel, AutoPicksMetisWhereItFitsAndLpMultilevelBeyond) {
  const std::int64_t limit = metis_index_limit();
  EXPECT_EQ(resolve_method(Method::Auto, 10, 10), Method::MetisKway);
  EXPECT_EQ(resolve_method(Method::Auto, limit, limit), Method::MetisKway);
  EXPECT_EQ(resolve_method(Method::Auto, limit + 1, 10), Method::LpMultilevel);
  EXPECT_EQ(resolve_method(Method::Auto, 10, limit + 1), Method::LpMultilevel);
  EXPECT_EQ(resolve_method(Method::Random, limit + 1, 10), Method::Random);
  EXPECT_EQ(resolve_method(Method::MetisRecursive, 10, 10), Method::MetisRecursive);
  // METIS's memory (kMetisBytesPerEntry an entry) past the budget: lp-multilevel.
  const std::size_t budget = 1000 * kMetisBytesPerEntry;
  EXPECT_EQ(resolve_method(Method::Auto, 1000, 10, budget), Method::MetisKway);
  EXPECT_EQ(resolve_method(Method::Auto, 1001, 10, budget), Method::LpMultilevel);
  EXPECT_EQ(resolve_method(Method::Auto, limit, 10, 0), Method::MetisKway);  // no budget
  EXPECT_EQ(resolve_method(Method::MetisKway, 1001, 10, budget), Method::MetisKway);
  // The partition records the method that ran.
  PartitionConfig c;
  c.num_parts = 2;
  EXPECT_EQ(c.method, Method::Auto);
  EXPECT_EQ(partition_dataset(cpu(), cora(), c).config.method, Method::MetisKway);
  c.memory_budget = 1 << 10;
  EXPECT_EQ(partition_dataset(cpu(), cora(), c).config.method, Method::LpMultilevel);
  c.memory_budget = 0;
  c.method = Method::LpMultilevel;
  const PartitionResult r = partition_dataset(cpu(), cora(), c);
  EXPECT_EQ(r.config.method, Method::LpMultilevel);
  for (Method m : {Method::Auto, Method::LpMultilevel}) EXPECT_EQ(parse_method(to_string(m)), m);
}

}  // namespace
}  // namespace halo::partition::test
