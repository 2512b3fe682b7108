// Tests of the heterogeneous partitions: per-type ownership and balance, relations, features,
// labels and splits reassembled from the parts, the per-type exchange lists against the peers',
// one part, empty parts, and the refusals between the two kinds of partition.

#include <algorithm>
#include <filesystem>
#include <gtest/gtest.h>
#include <set>
#include <tuple>
#include <variant>
#include <vector>

#include <halo/datasets/hetero.hpp>
#include <halo/kernels/error.hpp>
#include <halo/partition/formats/partition_format.hpp>

#include "partition/partition_test_util.hpp"
#include "support/hetero_fixture.hpp"

namespace halo::partition::test {
namespace {

namespace fs = std::filesystem;
using halo::testing::TempDir;

const datasets::HeteroGraph& fixture() {
  static const datasets::HeteroGraph g = [] {
    TempDir tmp;
    halo::testing::write_hetero_fixture(tmp.path());
    return datasets::read_hetero_directory(cpu(), tmp.path());
  }();
  return g;
}

/// The feature row `v` of `x` as (column, value) pairs.
std::vector<std::pair<std::int64_t, float>> feature_row(const kernels::FeatureMatrix<float>& x,
                                                        std::int64_t v) {
  std::vector<std::pair<std::int64_t, float>> row;
  if (const auto* d = std::get_if<kernels::Tensor<float>>(&x)) {
    for (std::int64_t f = 0; f < d->cols(); ++f) row.emplace_back(f, (*d)(v, f));
  } else {
    const auto& s = std::get<kernels::CsrMatrix<std::int32_t, float>>(x);
    for (std::int64_t e = s.indptr(v); e < s.indptr(v + 1); ++e)
      row.emplace_back(s.indices(e), s.values.empty() ? 1.0f : s.values(e));
  }
  return row;
}

/// Partitions `g` into `p` parts, writes and reads them back, and checks every part against `g`.
void expect_reassembles(const datasets::HeteroGraph& g, std::int32_t p) {
  SCOPED_TRACE("parts " + std::to_string(p));
  PartitionConfig c;
  c.num_parts = p;
  const HeteroPartitionResult r = partition_hetero(cpu(), g, c);
  TempDir tmp;
  const fs::path dir = tmp.path() / "parts";
  write_hetero_partitions(cpu(), g, r, dir);
  const PartitionMeta meta = read_partition_meta(dir);
  ASSERT_TRUE(meta.hetero.has_value());
  ASSERT_EQ(meta.config.num_parts, p);
  const HeteroMeta& hm = *meta.hetero;
  ASSERT_EQ(hm.types.size(), g.node_types.size());
  ASSERT_EQ(hm.relations.size(), g.relations.size());
  EXPECT_EQ(hm.target_type, g.target_type);
  std::vector<HeteroPart> parts;
  for (std::int32_t k = 0; k < p; ++k) parts.push_back(read_hetero_part(cpu(), dir, k, &meta));
  EXPECT_THROW(read_part(cpu(), dir, 0, &meta), IoError);

  const auto nt = g.node_types.size();
  // Every node of every type owned exactly once; the balance meta.json reports, recomputed.
  for (std::size_t t = 0; t < nt; ++t) {
    std::vector<int> times(static_cast<std::size_t>(g.node_types[t].num_nodes), 0);
    std::int64_t largest = 0;
    for (const HeteroPart& part : parts) {
      const HeteroPartLayout& l = part.layout;
      ASSERT_EQ(l.num_owned.size(), nt);
      largest = std::max(largest, l.num_owned[t]);
      for (std::int64_t i = 0; i < l.num_owned[t]; ++i) {
        ++times[static_cast<std::size_t>(l.original[t](i))];
        if (i > 0) {
          EXPECT_LT(l.original[t](i - 1), l.original[t](i)) << "owned rows in original order";
        }
      }
      EXPECT_EQ(l.global_nodes[t], g.node_types[t].num_nodes);
    }
    for (std::size_t v = 0; v < times.size(); ++v)
      EXPECT_EQ(times[v], 1) << "type " << t << " node " << v;
    const double mean = static_cast<double>(g.node_types[t].num_nodes) / p;
    EXPECT_DOUBLE_EQ(hm.balance[t], static_cast<double>(largest) / mean);
    EXPECT_DOUBLE_EQ(r.type_balance[t], hm.balance[t]);
  }
  // Relations: each owned destination row holds exactly its original incoming edges; halo
  // rows are empty; together the parts hold every edge once.
  for (std::size_t rel = 0; rel < g.relations.size(); ++rel) {
    const datasets::Relation& want = g.relations[rel];
    std::set<std::pair<NodeId, NodeId>> got;
    for (const HeteroPart& part : parts) {
      const datasets::Relation& have = part.graph.relations[rel];
      EXPECT_EQ(have.name, want.name);
      EXPECT_EQ(have.src_type, want.src_type);
      EXPECT_EQ(have.dst_type, want.dst_type);
      const auto& src = part.layout.original[static_cast<std::size_t>(want.src_type)];
      const auto& dst = part.layout.original[static_cast<std::size_t>(want.dst_type)];
      const std::int64_t owned = part.layout.num_owned[static_cast<std::size_t>(want.dst_type)];
      ASSERT_EQ(have.adj.num_rows(), dst.numel());
      ASSERT_EQ(have.adj.num_cols, src.numel());
      for (std::int64_t i = 0; i < have.adj.num_rows(); ++i) {
        const std::int64_t len = have.adj.indptr(i + 1) - have.adj.indptr(i);
        if (i >= owned) {
          EXPECT_EQ(len, 0) << "halo rows are empty";
          continue;
        }
        const NodeId v = dst(i);
        EXPECT_EQ(len, want.adj.indptr(v + 1) - want.adj.indptr(v))
            << "all in-edges of an owned row";
        for (std::int64_t e = have.adj.indptr(i); e < have.adj.indptr(i + 1); ++e)
          EXPECT_TRUE(got.emplace(src(have.adj.indices(e)), v).second) << "an edge twice";
      }
    }
    std::set<std::pair<NodeId, NodeId>> all;
    for (std::int64_t v = 0; v < want.adj.num_rows(); ++v)
      for (std::int64_t e = want.adj.indptr(v); e < want.adj.indptr(v + 1); ++e)
        all.emplace(want.adj.indices(e), static_cast<NodeId>(v));
    EXPECT_EQ(got, all) << want.name;
  }
  // Halo per type: remote sources of owned rows, grouped by owner as recv_offsets say, and what
  // each owner sends is exactly that block, in the same order.
  for (std::int32_t k = 0; k < p; ++k) {
    const HeteroPartLayout& l = parts[static_cast<std::size_t>(k)].layout;
    for (std::size_t t = 0; t < nt; ++t) {
      const std::int64_t owned = l.num_owned[t];
      EXPECT_EQ(l.recv_offsets[t][k], l.recv_offsets[t][k + 1]);
      EXPECT_EQ(l.send_offsets[t][k], l.send_offsets[t][k + 1]);
      for (std::int32_t j = 0; j < p; ++j) {
        const HeteroPartLayout& lj = parts[static_cast<std::size_t>(j)].layout;
        std::vector<NodeId> recv, sent;
        for (std::int64_t h = l.recv_offsets[t][j]; h < l.recv_offsets[t][j + 1]; ++h)
          recv.push_back(l.original[t](owned + h));
        for (std::int64_t s = lj.send_offsets[t][k]; s < lj.send_offsets[t][k + 1]; ++s)
          sent.push_back(lj.original[t](lj.send_rows[t](s)));
        EXPECT_EQ(recv, sent) << "type " << t << " from part " << j << " to part " << k;
        // The received nodes are owned by j.
        std::set<NodeId> owned_by_j;
        for (std::int64_t i = 0; i < lj.num_owned[t]; ++i) owned_by_j.insert(lj.original[t](i));
        for (const NodeId v : recv)
          EXPECT_TRUE(owned_by_j.count(v)) << "type " << t << " node " << v;
      }
    }
  }
  // Features of every local row, labels of every local target row, the splits' union.
  const auto tt = static_cast<std::size_t>(g.target_type);
  std::vector<NodeId> splits[3];
  for (const HeteroPart& part : parts) {
    for (std::size_t t = 0; t < nt; ++t) {
      const auto& o = part.layout.original[t];
      ASSERT_EQ(part.graph.node_types[t].has_features(), g.node_types[t].has_features());
      if (!g.node_types[t].has_features()) continue;
      for (std::int64_t i = 0; i < o.numel(); ++i) {
        EXPECT_EQ(feature_row(part.graph.node_types[t].features, i),
                  feature_row(g.node_types[t].features, o(i)));
      }
    }
    const auto& o = part.layout.original[tt];
    for (std::int64_t i = 0; i < o.numel(); ++i) EXPECT_EQ(part.graph.labels(i), g.labels(o(i)));
    const kernels::Tensor<NodeId>* have[] = {&part.graph.train_idx, &part.graph.val_idx,
                                             &part.graph.test_idx};
    for (int s = 0; s < 3; ++s)
      for (std::int64_t i = 0; i < have[s]->numel(); ++i) {
        EXPECT_LT((*have[s])(i), part.layout.num_owned[tt]);
        splits[s].push_back(o((*have[s])(i)));
      }
    EXPECT_EQ(part.layout.num_train, g.train_idx.numel());
  }
  const kernels::Tensor<NodeId>* want[] = {&g.train_idx, &g.val_idx, &g.test_idx};
  for (int s = 0; s < 3; ++s) {
    std::sort(splits[s].begin(), splits[s].end());
    EXPECT_EQ(splits[s], std::vector<NodeId>(want[s]->data(), want[s]->data() + want[s]->numel()));
  }
}

TEST(HeteroPartition, FixtureReassemblesAtOneTwoAndThreeParts) {
  for (const std::int32_t p : {1, 2, 3}) expect_reassembles(fixture(), p);
}

TEST(HeteroPartition, MorePartsThanNodesOfAType) {
  // 4 shops over 6 parts: some parts own no shop (and receive none).
  expect_reassembles(fixture(), 6);
}

TEST(HeteroPartition, OnePartIsTheWholeGraph) {
  PartitionConfig c;
  c.num_parts = 1;
  const HeteroPartitionResult r = partition_hetero(cpu(), fixture(), c);
  TempDir tmp;
  write_hetero_partitions(cpu(), fixture(), r, tmp.path() / "p");
  const HeteroPart part = read_hetero_part(cpu(), tmp.path() / "p", 0);
  for (std::size_t t = 0; t < fixture().node_types.size(); ++t) {
    EXPECT_EQ(part.layout.num_owned[t], fixture().node_types[t].num_nodes);
    EXPECT_EQ(part.graph.node_types[t].num_nodes, fixture().node_types[t].num_nodes);
    EXPECT_EQ(r.type_balance[t], 1.0);
  }
}

TEST(HeteroPartition, BalancesEveryTypeOfAcmWithinTheTolerance) {
  const fs::path dir = halo::testing::datasets_dir() / "heco_acm";
  if (!fs::exists(dir)) GTEST_SKIP() << dir << " is missing";
  const datasets::HeteroGraph g = datasets::read_hetero_directory(cpu(), dir);
  PartitionConfig c;
  c.num_parts = 2;
  const HeteroPartitionResult r = partition_hetero(cpu(), g, c);
  for (std::size_t t = 0; t < g.node_types.size(); ++t) {
    std::int64_t largest = 0, total = 0;
    for (const auto& counts : r.type_counts) {
      largest = std::max(largest, counts[t]);
      total += counts[t];
    }
    EXPECT_EQ(total, g.node_types[t].num_nodes);
    // max part <= floor((1 + imbalance) * total / P): the rebalanced bound.
    EXPECT_LE(largest, static_cast<std::int64_t>((1 + c.imbalance) * total / 2))
        << g.node_types[t].name;
  }
  EXPECT_LT(r.homogeneous.metrics.edge_cut, g.num_edges() / 2) << "METIS cuts less than random";
}

TEST(HeteroPartition, ReadersRefuseTheOtherKind) {
  TempDir tmp;
  const Dataset ds = synthetic(200);
  PartitionConfig c;
  c.num_parts = 2;
  write_partitions(cpu(), ds, partition_dataset(cpu(), ds, c), tmp.path() / "homo");
  EXPECT_THROW(read_hetero_part(cpu(), tmp.path() / "homo", 0), IoError);
}

}  // namespace
}  // namespace halo::partition::test
