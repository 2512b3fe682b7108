// Repartitioning across snapshots: the assignment problem against brute force, relabelling,
// migration plans, LDG against a plain re-implementation, per-snapshot metrics against the
// reference recomputation, and the on-disk series read back.

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>
#include <numeric>
#include <string>
#include <vector>

#include <halo/datasets/temporal.hpp>
#include <halo/kernels/error.hpp>
#include <halo/kernels/rng.hpp>
#include <halo/partition/formats/partition_format.hpp>
#include <halo/partition/formats/snapshot_format.hpp>
#include <halo/partition/partitioners/repartition.hpp>

#include "partition/partition_test_util.hpp"

namespace halo::partition::test {
namespace {

namespace fs = std::filesystem;
namespace rng = kernels::rng;
using datasets::SnapshotConfig;
using datasets::TemporalGraph;
using halo::testing::TempDir;

std::uint64_t draw(std::uint64_t seed, std::uint64_t stream, std::uint64_t i, std::uint64_t n) {
  return rng::below(seed, stream, i, n);
}

TEST(Repartition, AssignmentMatchesBruteForce) {
  for (std::int32_t n = 0; n <= 6; ++n) {
    for (std::uint64_t seed = 0; seed < 6; ++seed) {
      std::vector<std::int64_t> w(static_cast<std::size_t>(n * n));
      // Few distinct values, so that ties are common.
      for (std::size_t i = 0; i < w.size(); ++i)
        w[i] = static_cast<std::int64_t>(draw(seed, 1, i, 5));
      const auto col = max_weight_assignment(w, n);
      ASSERT_EQ(col.size(), static_cast<std::size_t>(n));
      std::vector<std::int32_t> sorted(col);
      std::sort(sorted.begin(), sorted.end());
      std::vector<std::int32_t> perm(static_cast<std::size_t>(n));
      std::iota(perm.begin(), perm.end(), 0);
      EXPECT_EQ(sorted, perm) << "not a permutation";
      auto total = [&](const std::vector<std::int32_t>& c) {
        std::int64_t s = 0;
        for (std::int32_t i = 0; i < n; ++i) s += w[static_cast<std::size_t>(i * n + c[i])];
        return s;
      };
      std::int64_t best = 0;
      do best = std::max(best, total(perm));
      while (std::next_permutation(perm.begin(), perm.end()));
      EXPECT_EQ(total(col), best) << "n " << n << " seed " << seed;
    }
  }
}

TEST(Repartition, RelabellingMovesNothingOnIdenticalCuts) {
  const std::int32_t p = 5;
  std::vector<std::int32_t> previous(200);
  for (std::size_t v = 0; v < previous.size(); ++v)
    previous[v] = static_cast<std::int32_t>(draw(3, 2, v, p));
  // The same cut with the parts renamed, plus 20 new nodes.
  const std::vector<std::int32_t> rename = {3, 0, 4, 1, 2};
  std::vector<std::int32_t> part;
  for (std::int32_t k : previous) part.push_back(rename[static_cast<std::size_t>(k)]);
  for (int i = 0; i < 20; ++i) part.push_back(rename[static_cast<std::size_t>(i % p)]);
  const auto out = relabel_by_overlap(previous, part, p);
  EXPECT_TRUE(std::equal(previous.begin(), previous.end(), out.begin()));
  for (int i = 0; i < 20; ++i) EXPECT_EQ(out[200 + static_cast<std::size_t>(i)], i % p);
  EXPECT_EQ(migration_plan(previous, out).moved.size(), 0u);
}

TEST(Repartition, MigrationPlanTurnsOneAssignmentIntoTheNext) {
  for (std::uint64_t seed = 0; seed < 5; ++seed) {
    std::vector<std::int32_t> before(100 + seed * 7), after;
    for (std::size_t v = 0; v < before.size(); ++v)
      before[v] = static_cast<std::int32_t>(draw(seed, 3, v, 4));
    after = before;
    for (std::size_t v = 0; v < after.size(); ++v)
      if (draw(seed, 4, v, 5) == 0) after[v] = static_cast<std::int32_t>(draw(seed, 5, v, 4));
    for (std::uint64_t i = 0; i < seed * 3; ++i)
      after.push_back(static_cast<std::int32_t>(draw(seed, 6, i, 4)));
    const MigrationPlan plan = migration_plan(before, after);
    EXPECT_EQ(apply_migration(before, plan), after);
    std::int64_t changed = 0;
    for (std::size_t v = 0; v < before.size(); ++v) changed += before[v] != after[v];
    EXPECT_EQ(static_cast<std::int64_t>(plan.moved.size()), changed);
    EXPECT_EQ(plan.placed.size(), after.size() - before.size());
  }
  const std::vector<std::int32_t> a = {0, 1, 1}, b = {1, 1, 0, 2};
  MigrationPlan plan = migration_plan(a, b);
  EXPECT_THROW(apply_migration(b, plan), LogicError);
  plan.from[0] = 1;
  EXPECT_THROW(apply_migration(a, plan), LogicError);
  EXPECT_THROW(migration_plan(b, a), LogicError);
}

/// LDG re-implemented plainly: count each new node's placed neighbours per part from scratch.
std::vector<std::int32_t> ref_ldg(const datasets::Graph& s, std::int64_t first_new, std::int32_t p,
                                  double imbalance, std::vector<std::int32_t> part) {
  const std::int64_t n = s.num_rows();
  const double cap = (1.0 + imbalance) * static_cast<double>(n) / p;
  for (std::int64_t v = first_new; v < n; ++v) {
    std::vector<double> size(static_cast<std::size_t>(p), 0), links(static_cast<std::size_t>(p), 0);
    for (std::int64_t u = 0; u < v; ++u) size[static_cast<std::size_t>(part[u])] += 1;
    for (std::int64_t e = s.indptr(v); e < s.indptr(v + 1); ++e)
      if (s.indices(e) < v) links[static_cast<std::size_t>(part[s.indices(e)])] += 1;
    const bool room = std::any_of(size.begin(), size.end(), [&](double x) { return x < cap; });
    int best = -1;
    for (int k = 0; k < p; ++k) {
      if (room && size[k] >= cap) continue;
      const double score = links[k] * std::max(0.0, 1.0 - size[k] / cap);
      const double best_score = best < 0 ? -1 : links[best] * std::max(0.0, 1.0 - size[best] / cap);
      if (best < 0 || score > best_score || (score == best_score && size[k] < size[best])) best = k;
    }
    part[static_cast<std::size_t>(v)] = best;
  }
  return part;
}

TEST(Repartition, StreamingPlacementMatchesPlainLdg) {
  const Dataset ds = synthetic(500, 4);
  const datasets::Graph s = partitioning_graph(cpu(), ds.graph);
  for (std::int64_t first_new : {0, 1, 250, 499, 500}) {
    for (std::int32_t p : {1, 3, 8}) {
      std::vector<std::int32_t> part(500, 0);
      for (std::int64_t v = 0; v < first_new; ++v)
        part[static_cast<std::size_t>(v)] = static_cast<std::int32_t>(v % p);
      const auto want = ref_ldg(s, first_new, p, 0.05, part);
      place_streaming(s, first_new, p, 0.05, part);
      EXPECT_EQ(part, want) << "first_new " << first_new << " P " << p;
    }
  }
}

/// A growing graph as events: `steps` batches; batch b brings new nodes and edges among all
/// nodes seen so far (many to recent nodes, some repeats); written and read back so the ids
/// follow read_temporal_events' rules.
TemporalGraph growing_events(const TempDir& dir, std::int64_t nodes_per_step, std::int64_t steps,
                             std::uint64_t seed) {
  std::string text;
  std::int64_t seen = 0;
  for (std::int64_t b = 0; b < steps; ++b) {
    const std::int64_t begin = seen;
    seen += nodes_per_step;
    for (std::int64_t v = begin; v < seen; ++v) {
      for (int j = 0; j < 4; ++j) {
        const auto u = static_cast<std::uint64_t>(v * 4 + j);
        const std::int64_t other =
            j < 2 ? static_cast<std::int64_t>(draw(seed, 7, u, static_cast<std::uint64_t>(v + 1)))
                  : begin + static_cast<std::int64_t>(
                                draw(seed, 8, u, static_cast<std::uint64_t>(v - begin + 1)));
        text += std::to_string(v * 3 + 1) + " " + std::to_string(other * 3 + 1) + " " +
                std::to_string(b * 100 + static_cast<std::int64_t>(draw(seed, 9, u, 100))) + "\n";
      }
    }
  }
  std::ofstream(dir.path() / "events.tsv") << text;
  return datasets::read_temporal_events(dir.path() / "events.tsv");
}

TEST(Repartition, SnapshotMetricsMatchReference) {
  const TempDir dir;
  const TemporalGraph g = growing_events(dir, 60, 5, 1);
  for (auto method :
       {RepartitionMethod::Scratch, RepartitionMethod::Streaming, RepartitionMethod::Migration}) {
    for (std::int32_t p : {1, 4}) {
      for (std::int64_t sliding : {0, 2}) {
        SCOPED_TRACE(std::string(to_string(method)) + " P " + std::to_string(p) + " window " +
                     std::to_string(sliding));
        SnapshotConfig sc;
        sc.num_snapshots = 5;
        sc.window_snapshots = sliding;
        RepartitionConfig c;
        c.num_parts = p;
        c.method = method;
        c.imbalance = 0.1;
        c.seed = 5;
        std::vector<std::int32_t> previous;
        std::int64_t visits = 0;
        const auto records = partition_snapshots(
            cpu(), g, sc, c,
            [&](std::int64_t t, const datasets::Snapshot& snap, const Dataset& ds,
                const PartitionResult& r, const SnapshotRecord& rec) {
              ++visits;
              const auto& part = r.assignment.part;
              ASSERT_EQ(static_cast<std::int64_t>(part.size()), snap.num_nodes);
              EXPECT_EQ(rec.edge_cut, ref_edge_cut(ds, part));
              const auto halo = ref_halo(ds, part, p);
              EXPECT_EQ(rec.comm_volume,
                        std::accumulate(halo.begin(), halo.end(), std::int64_t{0}));
              EXPECT_EQ(rec.max_halo, *std::max_element(halo.begin(), halo.end()));
              std::vector<std::int64_t> size(static_cast<std::size_t>(p), 0);
              for (std::int32_t k : part) ++size[static_cast<std::size_t>(k)];
              const double mean = static_cast<double>(part.size()) / p;
              if (!part.empty()) {
                const auto largest = *std::max_element(size.begin(), size.end());
                EXPECT_DOUBLE_EQ(rec.balance, static_cast<double>(largest) / mean);
              }
              // Every method stays within a loose bound of the requested balance.
              if (part.size() >= 40) {
                EXPECT_LE(rec.balance, 1.35);
              }
              std::int64_t moved = 0;
              for (std::size_t v = 0; v < previous.size(); ++v) moved += previous[v] != part[v];
              EXPECT_EQ(rec.migrated, moved);
              EXPECT_EQ(rec.new_nodes, snap.num_nodes - static_cast<std::int64_t>(previous.size()));
              if (p == 1) {
                EXPECT_EQ(rec.edge_cut + rec.migrated, 0);
              }
              if (method == RepartitionMethod::Streaming && t > 0) {
                EXPECT_EQ(rec.migrated, 0);
              }
              EXPECT_EQ(rec.from_scratch, t == 0 || p == 1 || method == RepartitionMethod::Scratch);
              previous = part;
            });
        EXPECT_EQ(visits, 5);
        EXPECT_EQ(records.size(), 5u);
      }
    }
  }
}

TEST(Repartition, SameConfigGivesSameAssignments) {
  const TempDir dir;
  const TemporalGraph g = growing_events(dir, 300, 4, 6);
  SnapshotConfig sc;
  sc.num_snapshots = 4;
  for (auto method :
       {RepartitionMethod::Scratch, RepartitionMethod::Streaming, RepartitionMethod::Migration}) {
    RepartitionConfig c;
    c.num_parts = 6;
    c.method = method;
    c.seed = 9;
    std::vector<std::vector<std::int32_t>> first, second;
    for (auto* out : {&first, &second})
      partition_snapshots(
          cpu(), g, sc, c,
          [out](std::int64_t, const datasets::Snapshot&, const Dataset&, const PartitionResult& r,
                const SnapshotRecord&) { out->push_back(r.assignment.part); });
    EXPECT_EQ(first, second) << to_string(method);
  }
}

TEST(Repartition, ScratchOnUnchangedSnapshotsMovesNothing) {
  // Every event but one falls in the first 200-second span; one late event on a pair already
  // present sets the horizon, so the cumulative snapshots 1.. all have snapshot 0's graph and
  // METIS (same graph, same seed) cuts them the same way up to the names of the parts.
  const TempDir dir;
  TemporalGraph g = growing_events(dir, 80, 2, 2);
  g.src.push_back(g.src.front());
  g.dst.push_back(g.dst.front());
  g.time.push_back(2000);
  SnapshotConfig sc;
  sc.window_seconds = 200;
  RepartitionConfig c;
  c.num_parts = 4;
  const auto records = partition_snapshots(cpu(), g, sc, c);
  ASSERT_EQ(records.size(), 11u);
  for (std::size_t t = 1; t < records.size(); ++t) {
    EXPECT_EQ(records[t].pairs_added + records[t].pairs_removed, 0);
    EXPECT_EQ(records[t].migrated, 0) << t;
    EXPECT_EQ(records[t].edge_cut, records[0].edge_cut);
  }
}

TEST(Repartition, EmptyAndSingleSnapshots) {
  const TempDir dir;
  TemporalGraph g = growing_events(dir, 30, 2, 3);
  // One late event: of 9 equal spans, the first holds every other event, the next 7 none.
  g.src.push_back(g.src.front());
  g.dst.push_back(g.dst.front());
  g.time.push_back(2000);
  // One snapshot; sliding windows of one span over 9 spans, most of them empty.
  for (const auto& [num, sliding] : {std::pair<std::int64_t, std::int64_t>{1, 0}, {9, 1}}) {
    SnapshotConfig sc;
    sc.num_snapshots = num;
    sc.window_snapshots = sliding;
    for (auto method :
         {RepartitionMethod::Scratch, RepartitionMethod::Streaming, RepartitionMethod::Migration}) {
      RepartitionConfig c;
      c.num_parts = 3;
      c.method = method;
      const auto records = partition_snapshots(cpu(), g, sc, c);
      ASSERT_EQ(records.size(), static_cast<std::size_t>(num));
      bool saw_empty = false;
      for (const auto& r : records) {
        saw_empty = saw_empty || r.num_pairs == 0;
        if (r.num_pairs == 0) {
          EXPECT_EQ(r.edge_cut + r.comm_volume, 0);
        }
      }
      if (num == 9) {
        EXPECT_TRUE(saw_empty);
      }
    }
  }
  // An empty temporal graph: every snapshot is empty.
  SnapshotConfig sc;
  sc.num_snapshots = 2;
  const auto records = partition_snapshots(cpu(), TemporalGraph{}, sc, RepartitionConfig{});
  ASSERT_EQ(records.size(), 2u);
  EXPECT_EQ(records[1].num_nodes, 0);
  RepartitionConfig bad;
  bad.migration_weight = -1;
  EXPECT_THROW(partition_snapshots(cpu(), g, sc, bad), LogicError);
  EXPECT_THROW(parse_repartition_method("metis"), LogicError);
}

TEST(Repartition, SeriesOnDiskReplaysTheMigrationPlans) {
  const TempDir dir;
  const TemporalGraph g = growing_events(dir, 50, 4, 4);
  SnapshotConfig sc;
  sc.num_snapshots = 4;
  sc.window_snapshots = 2;
  RepartitionConfig c;
  c.num_parts = 3;
  c.method = RepartitionMethod::Migration;
  const fs::path out = dir.path() / "series";
  const auto records = write_snapshot_partitions(cpu(), g, sc, c, out);
  ASSERT_EQ(records.size(), 4u);
  std::vector<std::int32_t> previous;
  for (std::int64_t t = 0; t < 4; ++t) {
    const fs::path snap = out / ("snapshot-" + std::to_string(t));
    EXPECT_EQ(verify_partitions(snap), 3);
    const auto part = read_assignment(cpu(), snap);
    ASSERT_EQ(static_cast<std::int64_t>(part.size()),
              records[static_cast<std::size_t>(t)].num_nodes);
    if (t > 0) {
      const MigrationPlan plan =
          read_migration_plan(out / ("migration-" + std::to_string(t) + ".tsv"));
      EXPECT_EQ(static_cast<std::int64_t>(plan.moved.size()),
                records[static_cast<std::size_t>(t)].migrated);
      EXPECT_EQ(apply_migration(previous, plan), part) << "snapshot " << t;
    }
    previous = part;
  }
  // A part of a snapshot has the snapshot's graph and no features.
  const Part p0 = read_part(cpu(), out / "snapshot-3", 0);
  EXPECT_EQ(kernels::num_cols(p0.features), 0);
  const auto meta = nlohmann::json::parse(std::ifstream(out / "meta.json"));
  EXPECT_EQ(meta["format"], "halo-snapshot-partitions");
  EXPECT_EQ(meta["method"], "migration");
  EXPECT_EQ(meta["snapshots"].size(), 4u);
  EXPECT_EQ(meta["snapshots"][2]["migrated"], records[2].migrated);
  EXPECT_EQ(meta["snapshots_config"]["boundaries"].size(), 5u);
  std::ifstream ids(out / "node_ids.txt");
  std::int64_t id = 0, lines = 0;
  while (ids >> id) EXPECT_EQ(id, g.original_ids[static_cast<std::size_t>(lines++)]);
  EXPECT_EQ(lines, g.num_nodes());
  // meta.json reads back; the whole series verifies, and a plan that does not match is refused.
  const SnapshotSeriesMeta m = read_snapshot_series_meta(out);
  EXPECT_TRUE(is_snapshot_series(out));
  EXPECT_FALSE(is_snapshot_series(out / "snapshot-0"));
  EXPECT_EQ(m.num_nodes, g.num_nodes());
  EXPECT_EQ(m.config.method, RepartitionMethod::Migration);
  EXPECT_EQ(m.snapshots.num_snapshots, 4);
  EXPECT_EQ(m.snapshots.window_snapshots, 2);
  EXPECT_EQ(m.boundaries, datasets::snapshot_boundaries(g, sc));
  ASSERT_EQ(m.records.size(), records.size());
  for (std::size_t t = 0; t < records.size(); ++t) {
    EXPECT_EQ(m.records[t].migrated, records[t].migrated);
    EXPECT_EQ(m.records[t].comm_volume, records[t].comm_volume);
    EXPECT_EQ(m.records[t].pairs_removed, records[t].pairs_removed);
  }
  EXPECT_EQ(verify_snapshot_partitions(cpu(), out), 4);
  {
    const fs::path plan = out / "migration-2.tsv";
    std::string text = halo::testing::read_file(plan);
    const std::size_t line = text.find('\n');
    // A header claiming 0 nodes before: the plan no longer fits snapshot 1.
    text = "halo-migration 1 0 " + text.substr(text.rfind(' ', line) + 1);
    std::ofstream(plan, std::ios::trunc) << text;
    EXPECT_THROW(verify_snapshot_partitions(cpu(), out), IoError);
  }
  // The series is written once: a second write into the same place is refused.
  EXPECT_THROW(write_snapshot_partitions(cpu(), g, sc, c, out), IoError);
  // A damaged plan is refused with its line.
  std::ofstream(dir.path() / "bad.tsv") << "halo-migration 1 2 3\n0\t0\n";
  try {
    read_migration_plan(dir.path() / "bad.tsv");
    ADD_FAILURE() << "no error";
  } catch (const IoError& e) {
    EXPECT_NE(std::string(e.what()).find("bad.tsv:2: expected"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace halo::partition::test
