// Tests of the partitioner, the partition book and the metrics against plain recomputations.

#include <cstdint>
#include <gtest/gtest.h>
#include <limits>
#include <string>
#include <utility>
#include <vector>

#include <halo/kernels/error.hpp>
#include <halo/partition/metrics.hpp>
#include <halo/partition/partition_book.hpp>
#include <halo/partition/partitioners/partitioner.hpp>

#include "partition/partition_test_util.hpp"

namespace halo::partition::test {
namespace {

PartitionConfig config(std::int32_t parts, Method method = Method::MetisKway) {
  PartitionConfig c;
  c.num_parts = parts;
  c.method = method;
  return c;
}

void expect_metrics_match_reference(const Dataset& ds, const PartitionResult& r) {
  const auto& part = r.assignment.part;
  const std::int32_t p = r.config.num_parts;
  EXPECT_EQ(r.metrics.edge_cut, ref_edge_cut(ds, part));
  const std::vector<std::int64_t> halo = ref_halo(ds, part, p);
  EXPECT_EQ(r.metrics.halo, halo);
  std::int64_t total = 0, max = 0;
  for (std::int64_t h : halo) {
    total += h;
    max = std::max(max, h);
  }
  EXPECT_EQ(r.metrics.comm_volume, total);
  EXPECT_EQ(r.metrics.max_halo, max);
  EXPECT_DOUBLE_EQ(r.metrics.replication_factor, static_cast<double>(ds.num_nodes() + total) /
                                                     static_cast<double>(ds.num_nodes()));
  // Loads, recounted.
  std::vector<std::int64_t> nodes(static_cast<std::size_t>(p), 0), train(nodes), edges(nodes);
  for (std::int64_t v = 0; v < ds.num_nodes(); ++v) {
    ++nodes[static_cast<std::size_t>(part[v])];
    edges[static_cast<std::size_t>(part[v])] += ds.graph.indptr(v + 1) - ds.graph.indptr(v);
  }
  for (std::int64_t i = 0; i < ds.train_idx.numel(); ++i) ++train[part[ds.train_idx(i)]];
  EXPECT_EQ(r.metrics.nodes.per_part, nodes);
  EXPECT_EQ(r.metrics.train.per_part, train);
  EXPECT_EQ(r.metrics.edges.per_part, edges);
}

TEST(Partition, MetisMetricsEqualTheReferenceOnCora) {
  for (std::int32_t p : {2, 4, 7}) {
    const PartitionResult r = partition_dataset(cpu(), cora(), config(p));
    SCOPED_TRACE(p);
    expect_metrics_match_reference(cora(), r);
    // The cut is METIS's own objective (unless the balance pass moved nodes afterwards).
    if (r.assignment.rebalance_moves == 0) {
      EXPECT_EQ(r.metrics.edge_cut, r.assignment.metis_objective);
    }
  }
}

TEST(Partition, EveryMethodsMetricsEqualTheReference) {
  const Dataset ds = synthetic();
  for (Method m : {Method::MetisKway, Method::MetisRecursive, Method::Random}) {
    for (Objective o : {Objective::Cut, Objective::Volume}) {
      if (m == Method::MetisRecursive && o == Objective::Volume) continue;
      PartitionConfig c = config(5, m);
      c.objective = o;
      SCOPED_TRACE(std::string(to_string(m)) + " " + std::string(to_string(o)));
      expect_metrics_match_reference(ds, partition_dataset(cpu(), ds, c));
    }
  }
}

TEST(Partition, MetisCutsFarFewerEdgesThanRandom) {
  const PartitionResult metis = partition_dataset(cpu(), cora(), config(8));
  const PartitionResult random = partition_dataset(cpu(), cora(), config(8, Method::Random));
  EXPECT_LT(metis.metrics.edge_cut * 3, random.metrics.edge_cut);
  EXPECT_LT(metis.metrics.comm_volume * 2, random.metrics.comm_volume);
}

void expect_balanced(const Dataset& ds, std::int32_t parts, const Balance& balance,
                     double imbalance) {
  PartitionConfig c = config(parts);
  c.balance = balance;
  c.imbalance = imbalance;
  const PartitionResult r = partition_dataset(cpu(), ds, c);
  SCOPED_TRACE(std::to_string(parts) + " parts, " + to_string(balance));
  // Recomputed from the assignment, not taken from the metrics.
  auto balance_of = [&](auto weight) {
    std::vector<double> load(static_cast<std::size_t>(parts), 0.0);
    double total = 0;
    for (std::int64_t v = 0; v < ds.num_nodes(); ++v) {
      load[static_cast<std::size_t>(r.assignment.part[v])] += weight(v);
      total += weight(v);
    }
    return *std::max_element(load.begin(), load.end()) / (total / parts);
  };
  std::vector<char> is_train(static_cast<std::size_t>(ds.num_nodes()), 0);
  for (std::int64_t i = 0; i < ds.train_idx.numel(); ++i) is_train[ds.train_idx(i)] = 1;
  const double tolerance = 1.0 + imbalance + 1e-9;
  if (balance.nodes) {
    EXPECT_LE(balance_of([](std::int64_t) { return 1.0; }), tolerance);
  }
  if (balance.train) {
    EXPECT_LE(balance_of([&](std::int64_t v) { return double(is_train[v]); }), tolerance);
  }
  if (balance.edges) {
    EXPECT_LE(balance_of([&](std::int64_t v) {
                return double(ds.graph.indptr(v + 1) - ds.graph.indptr(v));
              }),
              tolerance);
  }
}

TEST(Partition, BalanceWithinTheImbalanceOnCora) {
  expect_balanced(cora(), 4, Balance{}, 0.05);
  expect_balanced(cora(), 8, Balance{true, false, false}, 0.03);
  expect_balanced(cora(), 4, Balance{false, false, true}, 0.05);
  expect_balanced(cora(), 2, Balance{true, true, false}, 0.05);
}

TEST(Partition, BalanceWithinTheImbalanceOnASyntheticGraph) {
  const Dataset ds = synthetic(6000);
  expect_balanced(ds, 8, Balance{}, 0.05);
  expect_balanced(ds, 16, Balance{true, false, false}, 0.03);
  expect_balanced(ds, 4, Balance{false, true, true}, 0.05);
}

TEST(Partition, SameSeedSamePartition) {
  const Dataset ds = synthetic();
  for (Method m : {Method::MetisKway, Method::MetisRecursive, Method::Random}) {
    PartitionConfig c = config(6, m);
    c.seed = 11;
    const auto a = partition_dataset(cpu(), ds, c).assignment.part;
    const auto b = partition_dataset(kernels::Resources(Device::Cpu, 1), ds, c).assignment.part;
    EXPECT_EQ(a, b) << to_string(m);
  }
  PartitionConfig c = config(6, Method::Random);
  const auto a = partition_dataset(cpu(), ds, c).assignment.part;
  c.seed = 12;
  EXPECT_NE(a, partition_dataset(cpu(), ds, c).assignment.part);
}

/// 9 nodes: directed edges, self-loops, a duplicate-free but asymmetric structure, and isolated
/// nodes 7 and 8.
Dataset awkward_dataset() {
  std::vector<std::pair<int, int>> entries = {{0, 1}, {1, 0}, {1, 1}, {2, 1}, {3, 3},
                                              {4, 3}, {5, 4}, {6, 5}, {6, 6}, {0, 6}};
  Dataset small;
  small.name = "awkward";
  std::vector<std::int64_t> indptr(10, 0);
  for (auto [r, c] : entries) ++indptr[static_cast<std::size_t>(r) + 1];
  for (std::size_t r = 0; r < 9; ++r) indptr[r + 1] += indptr[r];
  std::sort(entries.begin(), entries.end());
  std::vector<NodeId> indices;
  for (auto [r, c] : entries) indices.push_back(c);
  small.graph = {halo::testing::host_tensor(indptr), halo::testing::host_tensor(indices), {}, 9};
  small.features = halo::testing::random_matrix<float>(9, 3, 1);
  small.labels = halo::testing::host_tensor<std::int32_t>({0, 1, 0, 1, 0, 1, 0, 1, 0});
  small.train_idx = halo::testing::host_tensor<NodeId>({0, 3, 7});
  small.val_idx = halo::testing::host_tensor<NodeId>({1, 8});
  small.test_idx = halo::testing::host_tensor<NodeId>({2});
  small.num_classes = 2;
  return small;
}

TEST(Partition, IsolatedNodesSelfLoopsAndDirectedEdges) {
  const Dataset ds = awkward_dataset();
  ASSERT_NO_THROW(datasets::validate(ds));
  // The graph METIS sees is symmetric, simple and loop-free.
  const datasets::Graph sym = partitioning_graph(cpu(), ds.graph);
  EXPECT_EQ(sym.num_edges(), 2 * static_cast<std::int64_t>(undirected_edges(ds.graph).size()));
  for (std::int64_t r = 0; r < 9; ++r)
    for (std::int64_t e = sym.indptr(r); e < sym.indptr(r + 1); ++e) EXPECT_NE(sym.indices(e), r);
  for (Method m : {Method::MetisKway, Method::MetisRecursive, Method::Random}) {
    const PartitionResult r = partition_dataset(cpu(), ds, config(3, m));
    SCOPED_TRACE(to_string(m));
    expect_metrics_match_reference(ds, r);
    EXPECT_EQ(r.relabelling.book.num_nodes(), 9);
  }
}

TEST(Partition, MorePartsThanNodesAndOnePart) {
  const Dataset ds = awkward_dataset();
  const PartitionResult one = partition_dataset(cpu(), ds, config(1));
  EXPECT_EQ(one.metrics.edge_cut, 0);
  EXPECT_EQ(one.metrics.comm_volume, 0);
  EXPECT_DOUBLE_EQ(one.metrics.replication_factor, 1.0);
  const PartitionResult many = partition_dataset(cpu(), ds, config(16, Method::Random));
  expect_metrics_match_reference(ds, many);
}

TEST(Partition, RejectsInvalidConfigs) {
  const Dataset ds = awkward_dataset();
  EXPECT_THROW(partition_dataset(cpu(), ds, config(0)), LogicError);
  EXPECT_THROW(partition_dataset(cpu(), ds, config(1025)), LogicError);
  PartitionConfig c = config(2, Method::MetisRecursive);
  c.objective = Objective::Volume;
  EXPECT_THROW(partition_dataset(cpu(), ds, c), LogicError);
  c = config(2);
  c.imbalance = 0;
  EXPECT_THROW(partition_dataset(cpu(), ds, c), LogicError);
  c = config(2);
  c.balance = Balance{false, false, false};
  EXPECT_THROW(partition_dataset(cpu(), ds, c), LogicError);
}

TEST(Partition, GraphsBeyondMetisIndicesAreRefusedNamingTheLimit) {
  const std::int64_t limit = metis_index_limit();
  EXPECT_NO_THROW(check_metis_size(limit, limit));
  if (limit != std::numeric_limits<std::int32_t>::max()) GTEST_SKIP() << "64-bit METIS";
  for (const auto& [entries, edges] :
       {std::pair{limit + 1, std::int64_t{10}}, std::pair{std::int64_t{10}, limit + 1}}) {
    try {
      check_metis_size(entries, edges);
      ADD_FAILURE() << "no error for " << entries << " entries, " << edges << " edges";
    } catch (const Error& e) {
      const std::string msg = e.what();
      EXPECT_NE(msg.find("limit " + std::to_string(limit)), std::string::npos) << msg;
      EXPECT_NE(msg.find(std::to_string(limit + 1)), std::string::npos) << msg;
      EXPECT_NE(msg.find("32-bit"), std::string::npos) << msg;
    }
  }
}

TEST(Partition, NamesRoundTrip) {
  for (Method m : {Method::MetisKway, Method::MetisRecursive, Method::Random})
    EXPECT_EQ(parse_method(to_string(m)), m);
  EXPECT_EQ(parse_objective("vol"), Objective::Volume);
  const Balance b = parse_balance("edges,nodes");
  EXPECT_TRUE(b.nodes && b.edges && !b.train);
  EXPECT_EQ(to_string(b), "nodes,edges");
  EXPECT_THROW(parse_balance(""), LogicError);
  EXPECT_THROW(parse_balance("nodes,nodes"), LogicError);
  EXPECT_THROW(parse_balance("nodes,weight"), LogicError);
  EXPECT_THROW(parse_method("kahip"), LogicError);
}

TEST(PartitionBook, OwnerIsABinarySearchOverOffsetsWithEmptyParts) {
  const PartitionBook book({0, 3, 3, 7, 7, 10});
  EXPECT_EQ(book.num_parts(), 5);
  EXPECT_EQ(book.num_nodes(), 10);
  const std::vector<std::int32_t> expected = {0, 0, 0, 2, 2, 2, 2, 4, 4, 4};
  for (std::int64_t v = 0; v < 10; ++v) EXPECT_EQ(book.owner(v), expected[v]) << v;
  EXPECT_THROW(book.owner(10), LogicError);
  EXPECT_THROW(book.owner(-1), LogicError);
  EXPECT_THROW(PartitionBook({0}), LogicError);
  EXPECT_THROW(PartitionBook({1, 2}), LogicError);
  EXPECT_THROW(PartitionBook({0, 3, 2}), LogicError);
}

TEST(PartitionBook, RelabellingIsContiguousAndKeepsTheOriginalOrder) {
  const std::vector<std::int32_t> part = {2, 0, 2, 1, 0, 2};
  const Relabelling r = relabel(part, 4);
  EXPECT_EQ(r.book.offsets(), (std::vector<std::int64_t>{0, 2, 3, 6, 6}));
  EXPECT_EQ(r.new_to_old, (std::vector<NodeId>{1, 4, 3, 0, 2, 5}));
  for (std::int64_t v = 0; v < 6; ++v) {
    EXPECT_EQ(r.new_to_old[r.old_to_new[v]], v);
    EXPECT_EQ(r.book.owner(r.old_to_new[v]), part[v]);
  }
  EXPECT_THROW(relabel(part, 2), LogicError);
}

}  // namespace
}  // namespace halo::partition::test
