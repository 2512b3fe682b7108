// A rank's part of every snapshot (runtime/temporal_part.hpp), under mpiexec -n 2 and -n 4:
// the rows built from snapshot 0, the deltas and the migrated rows equal the rows read off each
// snapshot directly, and the bytes equal counts made from the snapshots themselves.
#include <algorithm>
#include <cstdint>
#include <filesystem>
#include <gtest/gtest.h>
#include <iterator>
#include <string>
#include <vector>

#include <halo/datasets/temporal.hpp>
#include <halo/kernels/error.hpp>
#include <halo/kernels/resources.hpp>
#include <halo/partition/snapshot_format.hpp>
#include <halo/runtime/comm/comm.hpp>
#include <halo/runtime/temporal_part.hpp>

#include "runtime/mpi_test_main.hpp"

namespace halo::runtime {
namespace {

Comm* g_comm = nullptr;
Comm& comm() { return *g_comm; }

using datasets::Snapshot;
using datasets::TemporalEdge;
using kernels::NodeId;

/// 14 nodes, 5 steps of directed events (a self-loop, repeated pairs), from a fixed LCG.
datasets::TemporalGraph tiny_graph() {
  std::vector<datasets::RawTemporalEvent> events;
  std::uint64_t x = 12345;
  for (std::int64_t t = 0; t < 50; ++t) {
    x = x * 6364136223846793005ULL + 1442695040888963407ULL;
    const auto a = static_cast<std::int64_t>((x >> 33) % 14),
               b = static_cast<std::int64_t>((x >> 45) % 14);
    events.push_back({a * 3 + 7, b * 3 + 7, 100 + t, 0});  // non-contiguous file ids
  }
  events.push_back({10, 10, 120, 0});
  return datasets::make_temporal_graph(events, false, "tiny");
}

/// Owner maps with migrations: v % P, except that at step 1 the last rank owns nothing (so it
/// has no edges) and from step 3 on node 3 moves to the next rank.
std::vector<std::vector<std::int32_t>> owners(std::int64_t n, std::size_t steps, int p) {
  std::vector<std::vector<std::int32_t>> o(steps, std::vector<std::int32_t>(n));
  for (std::size_t t = 0; t < steps; ++t)
    for (std::int64_t v = 0; v < n; ++v) {
      const int parts = t == 1 && p > 1 ? p - 1 : p;
      o[t][static_cast<std::size_t>(v)] = static_cast<std::int32_t>(v % parts);
      if (t >= 3 && v == 3) o[t][3] = static_cast<std::int32_t>((3 + 1) % p);
    }
  return o;
}

/// Pairs of `s` with an endpoint owned by `rank`.
std::int64_t touching(const std::vector<TemporalEdge>& pairs, const std::vector<std::int32_t>& o,
                      int rank) {
  return std::count_if(pairs.begin(), pairs.end(), [&](const TemporalEdge& e) {
    return o[static_cast<std::size_t>(e.src)] == rank || o[static_cast<std::size_t>(e.dst)] == rank;
  });
}

/// How often, over the ranks, rows went whole, deltas were applied, and deltas with removed
/// pairs were applied.
struct Paths {
  std::int64_t wholes = 0, deltas = 0, removals = 0;
};

Paths check_series(const datasets::SnapshotConfig& config) {
  const datasets::TemporalGraph g = tiny_graph();
  const std::int64_t n = g.num_nodes();
  std::vector<Snapshot> snaps = datasets::make_snapshots(g, config);
  for (Snapshot& s : snaps) s.num_nodes = n;  // every node of the run in every step
  EXPECT_EQ(snaps.size(), 5u);
  const int me = comm().rank(), p = comm().size();
  const auto own = owners(n, snaps.size(), p);
  std::vector<SnapshotTraffic> traffic;
  const std::vector<TemporalRows> rows = distribute_snapshots(snaps, own, comm(), traffic);
  if (rows.size() != snaps.size()) {
    ADD_FAILURE() << "one TemporalRows per snapshot expected";
    return {};
  }
  std::int64_t moved_total = 0, sent_expected = 0, wholes = 0, deltas = 0, removals = 0;
  for (std::size_t t = 0; t < snaps.size(); ++t) {
    // The rows read off snapshot t directly.
    std::vector<NodeId> owned;
    std::vector<std::vector<NodeId>> nb;
    for (NodeId v = 0; v < n; ++v) {
      if (own[t][static_cast<std::size_t>(v)] != me) continue;
      owned.push_back(v);
      std::vector<NodeId> r;
      for (const TemporalEdge& e : snaps[t].edges) {
        if (e.src == v) r.push_back(e.dst);
        if (e.dst == v) r.push_back(e.src);
      }
      std::sort(r.begin(), r.end());
      r.erase(std::unique(r.begin(), r.end()), r.end());
      nb.push_back(r);
    }
    EXPECT_EQ(rows[t].owned, owned) << "step " << t;
    EXPECT_EQ(rows[t].neighbours, nb) << "step " << t;
    // The delta: the pairs in one snapshot and not the other, touching this rank's rows.
    std::vector<TemporalEdge> changed;
    if (t == 0) {
      changed = snaps[0].edges;
    } else {
      std::set_symmetric_difference(snaps[t - 1].edges.begin(), snaps[t - 1].edges.end(),
                                    snaps[t].edges.begin(), snaps[t].edges.end(),
                                    std::back_inserter(changed));
    }
    // ... or the rank's pairs of snapshot t whole when those are fewer.
    const std::int64_t delta = touching(changed, own[t], me);
    const std::int64_t whole = touching(snaps[t].edges, own[t], me);
    EXPECT_EQ(traffic[t].delta_bytes, 8 * (t > 0 ? std::min(delta, whole) : delta)) << "step " << t;
    EXPECT_EQ(traffic[t].whole, t > 0 && delta > whole) << "step " << t;
    wholes += traffic[t].whole;
    deltas += t > 0 && !traffic[t].whole && delta > 0;
    if (t > 0 && !traffic[t].whole) {
      std::vector<TemporalEdge> removed;
      std::set_difference(snaps[t - 1].edges.begin(), snaps[t - 1].edges.end(),
                          snaps[t].edges.begin(), snaps[t].edges.end(),
                          std::back_inserter(removed));
      removals += touching(removed, own[t], me) > 0;
    }
    EXPECT_EQ(traffic[t].resend_bytes, 8 * touching(snaps[t].edges, own[t], me) +
                                           4 * static_cast<std::int64_t>(owned.size()))
        << "step " << t;
    if (t == 0) {
      EXPECT_EQ(traffic[0].migration_bytes, 0);
      continue;
    }
    // Every row that changes owner travels once: id, two counts, its pairs at t - 1.
    std::int64_t expected = 0;
    for (NodeId v = 0; v < n; ++v) {
      if (own[t][static_cast<std::size_t>(v)] == own[t - 1][static_cast<std::size_t>(v)] ||
          own[t][static_cast<std::size_t>(v)] != me)
        continue;
      std::int64_t ends = 0;
      for (const TemporalEdge& e : snaps[t - 1].edges) ends += (e.src == v) + (e.dst == v);
      expected += 4 * (3 + ends);
      ++moved_total;
    }
    EXPECT_EQ(traffic[t].migration_bytes, expected) << "step " << t;
    sent_expected += expected;
  }

  if (p > 1) {
    EXPECT_GT(comm().sum(moved_total), 0);
    EXPECT_GT(comm().sum(sent_expected), 0);
    // The last rank owns no row at step 1, so no edge.
    if (me == p - 1) {
      EXPECT_TRUE(rows[1].owned.empty());
    }
  }
  return {comm().sum(wholes), comm().sum(deltas), comm().sum(removals)};
}

TEST(TemporalPart, SlidingSnapshotsFromDeltasAndMigrations) {
  datasets::SnapshotConfig c;
  c.num_snapshots = 5;
  c.window_snapshots = 1;
  // The steps share no pair here: every rank's rows go whole after snapshot 0.
  EXPECT_GT(check_series(c).wholes, 0);
  c.window_snapshots = 3;  // a delta (one span out, one in) is smaller than 3 spans
  const Paths three = check_series(c);
  EXPECT_GT(three.deltas, 0);
  EXPECT_GT(three.removals, 0);
}

TEST(TemporalPart, CumulativeSnapshotsMoveLessThanResending) {
  datasets::SnapshotConfig c;
  c.num_snapshots = 5;
  c.window_snapshots = 0;
  const Paths cumulative = check_series(c);
  EXPECT_GT(cumulative.deltas, 0);
  EXPECT_EQ(cumulative.wholes, 0);
  // Cumulative snapshots only grow: after snapshot 0, the deltas and migrations of all ranks
  // stay below resending every snapshot's parts.
  const datasets::TemporalGraph g = tiny_graph();
  std::vector<Snapshot> snaps = datasets::make_snapshots(g, c);
  for (Snapshot& s : snaps) s.num_nodes = g.num_nodes();
  std::vector<SnapshotTraffic> traffic;
  distribute_snapshots(snaps, owners(g.num_nodes(), snaps.size(), comm().size()), comm(), traffic);
  std::int64_t moved = 0, resend = 0;
  for (std::size_t t = 1; t < traffic.size(); ++t)
    moved += traffic[t].delta_bytes + traffic[t].migration_bytes, resend += traffic[t].resend_bytes;
  EXPECT_LT(comm().sum(moved), comm().sum(resend));
}

TEST(TemporalPart, OwnersFromASeriesAndItsMismatches) {
  const datasets::TemporalGraph g = tiny_graph();
  datasets::SnapshotConfig c;
  c.num_snapshots = 5;
  partition::RepartitionConfig rc;
  rc.num_parts = comm().size();
  rc.method = partition::RepartitionMethod::Streaming;
  const std::filesystem::path dir = std::filesystem::path(HALO_TEST_BINARY_DIR) /
                                    ("temporal_part_series_np" + std::to_string(comm().size()));
  const kernels::Resources res(kernels::Device::Cpu, 1);
  if (comm().rank() == 0) {
    std::filesystem::remove_all(dir);
    partition::write_snapshot_partitions(res, g, c, rc, dir);
  }
  comm().barrier();
  const std::vector<std::int64_t> b = datasets::snapshot_boundaries(g, c);
  const auto owner = read_snapshot_owners(dir, g.num_nodes(), b, comm().size());
  ASSERT_EQ(owner.size(), 5u);
  const std::vector<std::int32_t> last = owner.back();
  for (std::int64_t t = 0; t < 5; ++t) {
    const std::vector<std::int32_t> seen =
        partition::read_assignment(res, dir / ("snapshot-" + std::to_string(t)));
    ASSERT_EQ(owner[static_cast<std::size_t>(t)].size(), static_cast<std::size_t>(g.num_nodes()));
    for (std::size_t v = 0; v < owner[static_cast<std::size_t>(t)].size(); ++v) {
      // Seen nodes: the series' part; the others: the part they first appear in.
      std::int32_t expected = -1;
      if (v < seen.size()) {
        expected = seen[v];
      } else {
        for (std::int64_t u = t + 1; u < 5 && expected < 0; ++u) {
          const auto later =
              partition::read_assignment(res, dir / ("snapshot-" + std::to_string(u)));
          if (v < later.size()) expected = later[v];
        }
      }
      EXPECT_EQ(owner[static_cast<std::size_t>(t)][v], expected) << "step " << t << " node " << v;
    }
  }
  EXPECT_THROW(read_snapshot_owners(dir, g.num_nodes(), b, comm().size() + 1), IoError);
  EXPECT_THROW(read_snapshot_owners(dir, g.num_nodes() + 1, b, comm().size()), IoError);
  const std::vector<std::int64_t> fewer(b.begin(), b.end() - 1);
  EXPECT_THROW(read_snapshot_owners(dir, g.num_nodes(), fewer, comm().size()), IoError);
  comm().barrier();
  if (comm().rank() == 0) std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace halo::runtime

int main(int argc, char** argv) {
  return halo::runtime::test::run_mpi_tests(
      argc, argv, "temporal_part_test", [](halo::runtime::Comm& c) { halo::runtime::g_comm = &c; });
}
