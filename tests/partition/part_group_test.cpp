// Tests of part groups (partition/formats/part_group.hpp): R ranks of a K-part partition, each on
// a contiguous group of parts merged into one part. Every R from 1 to K gives a valid R-part
// partition of the same graph (S reassembled, halos, exchange lists that match, features,
// labels, splits), one rank gives exactly what one process builds from the dataset, and the
// groups are the most balanced contiguous ones (against every split, enumerated).

#include <algorithm>
#include <array>
#include <filesystem>
#include <functional>
#include <gtest/gtest.h>
#include <string>
#include <variant>
#include <vector>

#include <halo/datasets/store/store.hpp>
#include <halo/kernels/error.hpp>
#include <halo/partition/formats/part_group.hpp>
#include <halo/partition/formats/partition_format.hpp>

#include "partition/partition_test_util.hpp"
#include "support/dataset_util.hpp"

namespace halo::partition::test {
namespace {

namespace fs = std::filesystem;
using halo::testing::TempDir;

template <class T>
std::vector<T> vec(const kernels::Tensor<T>& t) {
  return std::vector<T>(t.data(), t.data() + t.numel());
}

/// The owned rows of `part`'s features, densified, in local order.
std::vector<std::vector<float>> rows_of(const kernels::FeatureMatrix<float>& x, std::int64_t rows) {
  std::vector<std::vector<float>> out;
  if (const auto* d = std::get_if<kernels::Tensor<float>>(&x)) {
    for (std::int64_t i = 0; i < rows; ++i)
      out.emplace_back(d->data() + i * d->cols(), d->data() + (i + 1) * d->cols());
    return out;
  }
  const auto& s = std::get<kernels::CsrMatrix<std::int32_t, float>>(x);
  for (std::int64_t i = 0; i < rows; ++i) {
    std::vector<float> r(static_cast<std::size_t>(s.num_cols), 0.f);
    for (std::int64_t e = s.indptr(i); e < s.indptr(i + 1); ++e)
      r[static_cast<std::size_t>(s.indices(e))] = s.values.empty() ? 1.f : s.values(e);
    out.push_back(std::move(r));
  }
  return out;
}

/// Every rank of an R-rank run of the partition in `dir` (of `ds`): together an R-part
/// partition of the same graph, checked as the partition format's tests check the parts.
void expect_groups_form_a_partition(const Dataset& ds, const fs::path& dir, std::int32_t ranks,
                                    const PartReadOptions& options = {}) {
  const PartitionMeta meta = read_partition_meta(dir);
  const std::vector<std::int32_t> groups = part_groups(meta, ranks);
  std::vector<Part> parts;
  for (std::int32_t r = 0; r < ranks; ++r)
    parts.push_back(read_part_group(cpu(), dir, meta, ranks, r, options));
  const datasets::Graph s = partitioning_graph(cpu(), ds.graph);
  const std::vector<std::vector<float>> features = rows_of(ds.features, ds.num_nodes());
  Triples got;
  std::vector<int> owned_times(static_cast<std::size_t>(ds.num_nodes()), 0);
  std::vector<NodeId> original(static_cast<std::size_t>(ds.num_nodes()), -1);
  std::int64_t train = 0, val = 0, test = 0;
  for (const Part& part : parts) {
    const std::int32_t r = part.rank();
    ASSERT_EQ(part.book().num_parts(), ranks);
    if (ranks > 1) {
      EXPECT_EQ(part.book().begin(r), meta.book.begin(groups[r]));
      EXPECT_EQ(part.book().end(r), meta.book.begin(groups[r + 1]));
    }
    EXPECT_EQ(part.ids.identity(), ranks == 1);
    for (std::int64_t i = 0; i < part.num_owned(); ++i) {
      const NodeId v = part.ids.to_original(i);
      ++owned_times[static_cast<std::size_t>(v)];
      original[static_cast<std::size_t>(part.ids.to_partition(i))] = v;
    }
  }
  for (std::int64_t v = 0; v < ds.num_nodes(); ++v) ASSERT_EQ(owned_times[v], 1) << "node " << v;
  for (const Part& part : parts) {
    const std::int64_t owned = part.num_owned();
    const auto& g = part.graph;
    ASSERT_EQ(g.num_rows(), owned);
    ASSERT_EQ(g.num_cols, part.ids.num_local());
    add_rows_by_original_id(part, got);
    expect_halo_grouped_by_owner(part, original);
    // Every halo node is a column of an owned row (no row exchanged for nothing).
    std::vector<bool> used(static_cast<std::size_t>(part.num_halo()), false);
    for (std::int64_t e = 0; e < g.num_edges(); ++e)
      if (g.indices(e) >= owned) used[static_cast<std::size_t>(g.indices(e) - owned)] = true;
    EXPECT_EQ(std::count(used.begin(), used.end(), false), 0);
    for (std::int64_t j = 0; j < g.num_cols; ++j) {
      const NodeId v = part.ids.to_original(j);
      EXPECT_EQ(part.degrees(j), s.indptr(v + 1) - s.indptr(v));
    }
    const std::vector<std::vector<float>> x = part.features_by_original
                                                  ? std::vector<std::vector<float>>()
                                                  : rows_of(part.features, owned);
    for (std::int64_t i = 0; i < owned; ++i) {
      const NodeId v = part.ids.to_original(i);
      EXPECT_EQ(part.labels(i), ds.labels(v));
      if (!part.features_by_original) {
        EXPECT_EQ(x[static_cast<std::size_t>(i)], features[static_cast<std::size_t>(v)]);
      }
    }
    for (const auto* split : {&part.train_idx, &part.val_idx, &part.test_idx}) {
      const std::vector<NodeId> got_ids = vec(*split);
      EXPECT_TRUE(std::is_sorted(got_ids.begin(), got_ids.end()));
      for (const NodeId i : got_ids) EXPECT_LT(i, owned);
    }
    train += part.train_idx.numel(), val += part.val_idx.numel(), test += part.test_idx.numel();
    std::vector<NodeId> split_original;
    for (const NodeId i : vec(part.train_idx)) split_original.push_back(part.ids.to_original(i));
    for (const NodeId v : split_original)
      EXPECT_TRUE(
          std::binary_search(ds.train_idx.data(), ds.train_idx.data() + ds.train_idx.numel(), v));
    EXPECT_EQ(part.all_train.numel(), ds.train_idx.numel());
  }
  EXPECT_EQ(train, ds.train_idx.numel());
  EXPECT_EQ(val, ds.val_idx.numel());
  EXPECT_EQ(test, ds.test_idx.numel());
  expect_sends_are_receives(parts);  // rank a's rows to rank b are b's halo from a
  std::sort(got.begin(), got.end());
  EXPECT_EQ(got, triples(s)) << "no edge of S lost or duplicated";
  // What halo plan reads of each group without merging it.
  const std::vector<GroupCounts> counts = group_counts(dir, meta, {ranks}).front();
  ASSERT_EQ(counts.size(), parts.size());
  for (const Part& part : parts) {
    const GroupCounts& c = counts[static_cast<std::size_t>(part.rank())];
    EXPECT_EQ(c.num_owned, part.num_owned());
    EXPECT_EQ(c.num_halo, part.num_halo());
    EXPECT_EQ(c.num_edges, part.graph.num_edges());
    EXPECT_EQ(c.num_train, part.train_idx.numel());
    EXPECT_EQ(c.num_send, part.send_rows.numel());
    if (ranks == meta.book.num_parts()) {
      EXPECT_EQ(c.num_halo_entries, part.num_halo_entries());
    } else {
      EXPECT_GE(c.num_halo_entries, 0);
      EXPECT_LE(c.num_halo_entries, c.num_edges);
      EXPECT_EQ(c.num_halo_entries == 0, part.num_halo_entries() == 0);
    }
  }
}

PartitionResult partition(const Dataset& ds, std::int32_t parts, Method method) {
  PartitionConfig c;
  c.num_parts = parts;
  c.method = method;
  c.seed = 7;
  return partition_dataset(cpu(), ds, c);
}

TEST(PartGroups, EveryRankCountOfAnEightPartPartitionIsAPartitionOfTheGraph) {
  const TempDir tmp;
  const Dataset directed = halo::testing::directed_copy(cpu(), cora());
  for (const bool is_directed : {false, true}) {
    SCOPED_TRACE(is_directed ? "directed" : "undirected");
    const Dataset& ds = is_directed ? directed : cora();
    const fs::path dir = tmp.path() / (is_directed ? "d" : "u");
    write_partitions(cpu(), ds, partition(ds, 8, Method::MetisKway), dir);
    for (std::int32_t r = 1; r <= 8; ++r) {
      SCOPED_TRACE("ranks " + std::to_string(r));
      expect_groups_form_a_partition(ds, dir, r);
    }
  }
}

// Empty parts and isolated nodes: a random partition of a small graph into more parts than it
// fills evenly.
TEST(PartGroups, EmptyPartsAndIsolatedNodes) {
  const TempDir tmp;
  const Dataset ds = synthetic(60);
  const PartitionResult r = partition(ds, 40, Method::Random);
  write_partitions(cpu(), ds, r, tmp.path() / "p");
  const PartitionMeta meta = read_partition_meta(tmp.path() / "p");
  EXPECT_GT(std::count_if(meta.parts.begin(), meta.parts.end(),
                          [](const PartInfo& p) { return p.num_owned == 0; }),
            0);
  for (const std::int32_t ranks : {1, 3, 7, 39, 40}) {
    SCOPED_TRACE("ranks " + std::to_string(ranks));
    expect_groups_form_a_partition(ds, tmp.path() / "p", ranks);
  }
}

// One rank: exactly the part one process builds from the dataset, whatever the partition.
TEST(PartGroups, OneRankIsTheOneProcessPart) {
  const TempDir tmp;
  write_partitions(cpu(), cora(), partition(cora(), 5, Method::MetisKway), tmp.path() / "p");
  const PartitionMeta meta = read_partition_meta(tmp.path() / "p");
  const Part one = read_part_group(cpu(), tmp.path() / "p", meta, 1, 0);
  const Part local = make_local_part(cpu(), halo::testing::copy_dataset(cpu(), cora()));
  EXPECT_TRUE(one.ids.identity());
  EXPECT_EQ(vec(one.graph.indptr), vec(local.graph.indptr));
  EXPECT_EQ(vec(one.graph.indices), vec(local.graph.indices));
  EXPECT_EQ(one.graph.num_cols, local.graph.num_cols);
  EXPECT_EQ(vec(one.degrees), vec(local.degrees));
  EXPECT_EQ(vec(one.labels), vec(local.labels));
  EXPECT_EQ(vec(one.train_idx), vec(local.train_idx));
  EXPECT_EQ(vec(one.val_idx), vec(local.val_idx));
  EXPECT_EQ(vec(one.test_idx), vec(local.test_idx));
  EXPECT_EQ(vec(one.all_train), vec(local.all_train));
  EXPECT_EQ(vec(one.all_train_original), vec(local.all_train_original));
  for (std::int64_t v = 0; v < one.ids.num_local(); ++v) ASSERT_EQ(one.ids.to_original(v), v);
  EXPECT_EQ(one.send_offsets, local.send_offsets);
  EXPECT_EQ(one.recv_offsets, local.recv_offsets);
  EXPECT_EQ(one.training_edges, local.training_edges);
  EXPECT_EQ(one.max_degree, local.max_degree);
  const auto& a = std::get<kernels::CsrMatrix<std::int32_t, float>>(one.features);
  const auto& b = std::get<kernels::CsrMatrix<std::int32_t, float>>(local.features);
  EXPECT_EQ(vec(a.indptr), vec(b.indptr));
  EXPECT_EQ(vec(a.indices), vec(b.indices));
  EXPECT_EQ(vec(a.values), vec(b.values));
}

// A partition referencing a store's float32 rows, read mapped: every group keeps the mapping
// (rows by original id); one rank holds the store's rows in id order.
TEST(PartGroups, GroupsOfAStoresPartitionMapItsFeatures) {
  const TempDir tmp;
  const Dataset ds = synthetic(1500);
  const fs::path store = tmp.path() / "store", dir = tmp.path() / "p";
  datasets::write_store(cpu(), ds, store, "");
  datasets::StoreOpenOptions open;
  open.mapped = true;
  open.features = false;
  const Dataset st = datasets::open_store(cpu(), store, open);
  PartitionConfig c;
  c.num_parts = 6;
  c.method = Method::MetisKway;
  const PartitionResult r = partition_dataset(cpu(), st, partitioning_graph(cpu(), st.graph), c);
  const datasets::StoredFeatures f = datasets::stored_features(store);
  write_partitions(cpu(), st, r, dir, {}, &f);
  PartReadOptions mapped;
  mapped.map_store_features = true;
  for (const std::int32_t ranks : {1, 4}) {
    SCOPED_TRACE("ranks " + std::to_string(ranks));
    expect_groups_form_a_partition(ds, dir, ranks, mapped);
    const Part p = read_part_group(cpu(), dir, read_partition_meta(dir), ranks, 0, mapped);
    const auto& x = std::get<kernels::Tensor<float>>(p.features);
    EXPECT_TRUE(x.mapped());
    EXPECT_EQ(x.rows(), ds.num_nodes());
    EXPECT_EQ(p.features_by_original, ranks > 1);
    const auto& want = std::get<kernels::Tensor<float>>(ds.features);
    for (std::int64_t i = 0; i < p.num_owned(); ++i)
      for (std::int64_t k = 0; k < x.cols(); ++k)
        ASSERT_EQ(x(p.ids.to_original(i), k), want(p.ids.to_original(i), k));
  }
  // Without the mapping the groups gather their rows (checked above against the dataset).
  expect_groups_form_a_partition(ds, dir, 2);
}

/// A meta.json's worth of parts with these owned, training and entry counts.
PartitionMeta meta_of(const std::vector<std::array<std::int64_t, 3>>& parts, Balance balance) {
  PartitionMeta m;
  std::vector<std::int64_t> offsets = {0};
  for (const auto& w : parts) {
    PartInfo p;
    p.num_owned = w[0];
    p.num_train = w[1];
    p.num_edges = w[2];
    m.parts.push_back(p);
    offsets.push_back(offsets.back() + w[0]);
  }
  m.book = PartitionBook(offsets);
  m.config.num_parts = static_cast<std::int32_t>(parts.size());
  m.config.balance = balance;
  return m;
}

/// The largest share over the balanced constraints of the heaviest group.
double bottleneck(const PartitionMeta& m, const std::vector<std::int32_t>& groups) {
  const std::array<bool, 3> used = {m.config.balance.nodes, m.config.balance.train,
                                    m.config.balance.edges};
  std::array<double, 3> total = {0, 0, 0};
  for (const PartInfo& p : m.parts) {
    total[0] += static_cast<double>(p.num_owned);
    total[1] += static_cast<double>(p.num_train);
    total[2] += static_cast<double>(p.num_edges);
  }
  double worst = 0;
  for (std::size_t g = 0; g + 1 < groups.size(); ++g) {
    std::array<double, 3> sum = {0, 0, 0};
    for (std::int32_t k = groups[g]; k < groups[g + 1]; ++k) {
      sum[0] += static_cast<double>(m.parts[k].num_owned);
      sum[1] += static_cast<double>(m.parts[k].num_train);
      sum[2] += static_cast<double>(m.parts[k].num_edges);
    }
    for (std::size_t c = 0; c < 3; ++c)
      if (used[c] && total[c] > 0) worst = std::max(worst, sum[c] / total[c]);
  }
  return worst;
}

TEST(PartGroups, GroupsAreTheMostBalancedContiguousOnes) {
  const std::vector<std::array<std::int64_t, 3>> weights = {
      {100, 10, 900}, {300, 5, 100}, {50, 40, 300}, {120, 0, 120},
      {80, 20, 700},  {0, 0, 0},     {500, 30, 50}, {90, 9, 400}};
  for (const Balance balance : {Balance{true, true, true}, Balance{true, false, false},
                                Balance{false, true, false}, Balance{false, false, true}}) {
    const PartitionMeta m = meta_of(weights, balance);
    for (std::int32_t ranks = 1; ranks <= 8; ++ranks) {
      SCOPED_TRACE("ranks " + std::to_string(ranks));
      const std::vector<std::int32_t> g = part_groups(m, ranks);
      ASSERT_EQ(g.size(), static_cast<std::size_t>(ranks) + 1);
      EXPECT_EQ(g.front(), 0);
      EXPECT_EQ(g.back(), 8);
      for (std::int32_t r = 0; r < ranks; ++r) EXPECT_LT(g[r], g[r + 1]) << "a non-empty group";
      // Every choice of ranks - 1 cut points among the 7 (bit masks): none is better.
      double best = 1e300;
      for (int mask = 0; mask < (1 << 7); ++mask) {
        if (__builtin_popcount(static_cast<unsigned>(mask)) != ranks - 1) continue;
        std::vector<std::int32_t> cuts = {0};
        for (int b = 0; b < 7; ++b)
          if (mask & (1 << b)) cuts.push_back(b + 1);
        cuts.push_back(8);
        best = std::min(best, bottleneck(m, cuts));
      }
      EXPECT_DOUBLE_EQ(bottleneck(m, g), best);
    }
  }
  const PartitionMeta m = meta_of(weights, Balance{});
  for (const std::int32_t bad : {0, 9, -1}) {
    try {
      part_groups(m, bad);
      ADD_FAILURE() << bad << " ranks accepted";
    } catch (const IoError& e) {
      EXPECT_NE(std::string(e.what()).find("start 1 to 8 ranks"), std::string::npos) << e.what();
    }
  }
}

}  // namespace
}  // namespace halo::partition::test
