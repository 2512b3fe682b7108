// Temporal event lists, snapshots and deltas: CollegeMsg's published counts, a signed
// four-column fixture with sparse ids, errors, and snapshots against a brute-force reference.

#include <fstream>
#include <map>
#include <set>
#include <string>

#include <halo/datasets/generators/rmat.hpp>
#include <halo/datasets/registry.hpp>
#include <halo/datasets/temporal.hpp>
#include <halo/kernels/error.hpp>
#include <halo/kernels/rng.hpp>

#include "datasets_test_util.hpp"

namespace halo::datasets::test {
namespace {

fs::path collegemsg_dir() { return halo::testing::datasets_dir() / "collegemsg"; }

std::string read_error(const fs::path& path, TemporalLayout layout = TemporalLayout::Auto) {
  try {
    read_temporal_events(path, layout);
  } catch (const IoError& e) {
    return e.what();
  }
  return "";
}

TEST(TemporalGraph, ReadsCollegeMsg) {
  const TemporalGraph g = read_temporal_events(collegemsg_dir() / "events.tsv");
  // PROVENANCE.md: 1899 nodes, 59835 events, 20296 distinct directed pairs, times
  // 1082040961 .. 1098777142, 58911 distinct timestamps, no weights.
  EXPECT_EQ(g.num_nodes(), 1899);
  ASSERT_EQ(g.num_events(), 59835);
  EXPECT_TRUE(g.weight.empty());
  EXPECT_EQ(g.time.front(), 1082040961);
  EXPECT_EQ(g.time.back(), 1098777142);
  EXPECT_TRUE(std::is_sorted(g.time.begin(), g.time.end()));
  EXPECT_EQ(std::set<std::int64_t>(g.time.begin(), g.time.end()).size(), 58911u);
  // The original ids are 1..1899, each once; the first event is 1 -> 2.
  std::set<std::int64_t> ids(g.original_ids.begin(), g.original_ids.end());
  EXPECT_EQ(ids.size(), 1899u);
  EXPECT_EQ(*ids.begin(), 1);
  EXPECT_EQ(*ids.rbegin(), 1899);
  EXPECT_EQ(g.original_ids[static_cast<std::size_t>(g.src[0])], 1);
  EXPECT_EQ(g.original_ids[static_cast<std::size_t>(g.dst[0])], 2);
  const Graph a = aggregate_graph(cpu(), g);
  EXPECT_EQ(a.num_rows(), 1899);
  EXPECT_EQ(a.num_edges(), 20296);

  // The directory is detected as temporal; load_dataset gives the aggregate graph.
  ASSERT_TRUE(temporal_events_file(collegemsg_dir().string()).has_value());
  EXPECT_FALSE(temporal_events_file(cora_dir().string()).has_value());
  EXPECT_EQ(load_temporal_dataset(collegemsg_dir().string() + "/").name, "collegemsg");
  const Dataset ds = load_dataset(cpu(), collegemsg_dir().string());
  EXPECT_EQ(ds.name, "collegemsg");
  EXPECT_EQ(ds.num_nodes(), 1899);
  EXPECT_EQ(ds.graph.num_edges(), 20296);
  EXPECT_EQ(ds.num_features(), 0);
  validate(ds);

  // EvolveGCN's UC Irvine steps: (t - t_min) div 190080, 0..88.
  SnapshotConfig c;
  c.window_seconds = 190080;
  c.window_snapshots = 1;
  const auto b = snapshot_boundaries(g, c);
  ASSERT_EQ(b.size(), 90u);
  std::int64_t max_step = 0;
  for (std::int64_t t : g.time) max_step = std::max(max_step, (t - g.time.front()) / 190080);
  EXPECT_EQ(max_step, 88);
  const auto snaps = make_snapshots(g, c);
  ASSERT_EQ(snaps.size(), 89u);
  EXPECT_EQ(snaps.back().num_nodes, 1899);
}

TEST(TemporalGraph, ReadsSignedCsvWithSparseIds) {
  const TempDir dir;
  // SNAP's soc-sign-bitcoin layout: SOURCE,TARGET,RATING,TIME, not sorted by time.
  write_text(dir.path() / "events.csv",
             "# signed trust network\n"
             "SOURCE,TARGET,RATING,TIME\n"
             "7188,1,10,1407470400\n"
             "\n"
             "430,1,-2,1376539200\n"
             "% another comment\n"
             "1, 7188 ,3,1376539200\n"
             "3,430,-10,1500000000\r\n");
  const TemporalGraph g = load_temporal_dataset(dir.path().string());
  ASSERT_EQ(g.num_events(), 4);
  EXPECT_EQ(g.time, (std::vector<std::int64_t>{1376539200, 1376539200, 1407470400, 1500000000}));
  // Ties keep the file order: 430 -> 1 before 1 -> 7188.
  EXPECT_EQ(g.weight, (std::vector<std::int64_t>{-2, 3, 10, -10}));
  // Dense ids by first appearance in time order: 430, 1, 7188, 3.
  EXPECT_EQ(g.original_ids, (std::vector<std::int64_t>{430, 1, 7188, 3}));
  EXPECT_EQ(g.src, (std::vector<NodeId>{0, 1, 2, 3}));
  EXPECT_EQ(g.dst, (std::vector<NodeId>{1, 2, 1, 0}));

  // Cumulative snapshots over 2 spans: the nodes seen so far are a prefix of the ids.
  SnapshotConfig c;
  c.num_snapshots = 2;
  const auto s = make_snapshots(g, c);
  ASSERT_EQ(s.size(), 2u);
  EXPECT_EQ(s[0].num_nodes, 3);
  EXPECT_EQ(s[0].edges, (std::vector<TemporalEdge>{{0, 1}, {1, 2}, {2, 1}}));
  EXPECT_EQ(s[1].num_nodes, 4);
  EXPECT_EQ(s[1].edges.size(), 4u);
}

// Four fields are `src dst t rating` (CollegeMsg's layout plus a rating); SNAP's signed
// networks (`src,dst,rating,t`) are named by a header line or the layout; a "time" column that
// holds ratings is refused by name instead of giving snapshots that teach nothing.
TEST(TemporalGraph, FourFieldsAreSrcDstTimeRatingAndATimeColumnMustBeTime) {
  const TempDir dir;
  const TemporalGraph three = read_temporal_events(collegemsg_dir() / "events.tsv");
  std::string with_rating, swapped;
  {
    std::ifstream in(collegemsg_dir() / "events.tsv");
    std::int64_t i = 0;
    for (std::string a, b, t; in >> a >> b >> t; ++i) {
      const std::string r = std::to_string(static_cast<int>(i % 21) - 10);
      with_rating += a + "\t" + b + "\t" + t + "\t" + r + "\n";
      swapped += a + "," + b + "," + r + "," + t + "\n";
    }
  }
  write_text(dir.path() / "four.tsv", with_rating);
  const TemporalGraph four = read_temporal_events(dir.path() / "four.tsv");
  EXPECT_EQ(four.src, three.src);
  EXPECT_EQ(four.dst, three.dst);
  EXPECT_EQ(four.time, three.time);
  EXPECT_EQ(four.original_ids, three.original_ids);
  ASSERT_EQ(four.weight.size(), three.time.size());

  // The same events in SNAP's signed order: refused without a header, naming the file and
  // the way out; read alike with a header line or the layout given.
  write_text(dir.path() / "swapped.csv", swapped);
  const std::string e = read_error(dir.path() / "swapped.csv");
  EXPECT_NE(e.find("swapped.csv: the time column (field 3) holds only 21 distinct values "
                   "(-10..10) over 59835 events"),
            std::string::npos)
      << e;
  EXPECT_NE(e.find("--columns src,dst,rating,t"), std::string::npos) << e;
  const TemporalGraph named =
      read_temporal_events(dir.path() / "swapped.csv", TemporalLayout::SrcDstWeightTime);
  EXPECT_EQ(named.time, four.time);
  EXPECT_EQ(named.weight, four.weight);
  write_text(dir.path() / "header.csv", "# src,dst,rating,time\n" + swapped);
  const TemporalGraph headed = read_temporal_events(dir.path() / "header.csv");
  EXPECT_EQ(headed.time, four.time);
  EXPECT_EQ(headed.weight, four.weight);
  EXPECT_EQ(parse_temporal_layout("src,dst,rating,t"), TemporalLayout::SrcDstWeightTime);
  EXPECT_EQ(parse_temporal_layout("src,dst,t,rating"), TemporalLayout::SrcDstTimeWeight);
  EXPECT_EQ(parse_temporal_layout("auto"), TemporalLayout::Auto);
  EXPECT_THROW(parse_temporal_layout("dst,src,t"), LogicError);

  // Few events may repeat few times (a small test file), and a named layout is trusted.
  write_text(dir.path() / "small.tsv", "1 2 5\n2 3 5\n3 1 6\n");
  EXPECT_EQ(read_temporal_events(dir.path() / "small.tsv").num_events(), 3);
}

TEST(TemporalGraph, RejectsMalformedLines) {
  const TempDir dir;
  const fs::path p = dir.path() / "e.txt";
  write_text(p, "1 2 3\n4 5\n");
  EXPECT_NE(read_error(p).find("e.txt:2: expected three integer fields"), std::string::npos)
      << read_error(p);
  write_text(p, "1 2 3\n4 5 6 7\n");
  EXPECT_NE(read_error(p).find("e.txt:2: "), std::string::npos);
  write_text(p, "1,-2,3,4\n");
  EXPECT_NE(read_error(p).find("e.txt:1: expected non-negative node ids"), std::string::npos);
  write_text(p, "1,2,,4\n");
  EXPECT_NE(read_error(p).find("e.txt:1: "), std::string::npos);
  write_text(p, "1 2 x\n");
  EXPECT_NE(read_error(p).find("e.txt:1: "), std::string::npos);
  write_text(p, "1 2 3\n");
  EXPECT_NE(read_error(p, TemporalLayout::SrcDstWeightTime).find("e.txt:1: expected four"),
            std::string::npos);
  EXPECT_NE(read_error(dir.path() / "missing.tsv"), "");
  // An empty file is an empty temporal graph.
  write_text(p, "# nothing\n");
  const TemporalGraph g = read_temporal_events(p);
  EXPECT_EQ(g.num_events(), 0);
  SnapshotConfig c;
  c.num_snapshots = 3;
  const auto s = make_snapshots(g, c);
  ASSERT_EQ(s.size(), 3u);
  for (const auto& x : s) EXPECT_EQ(x.num_nodes, 0);
  EXPECT_THROW(snapshot_boundaries(g, SnapshotConfig{}), LogicError);
  SnapshotConfig both;
  both.num_snapshots = 2;
  both.window_seconds = 5;
  EXPECT_THROW(snapshot_boundaries(g, both), LogicError);
}

/// Random events: `m` events on `n` ids (sparse: id * 7 + 3), times drawn from a few clusters
/// with gaps (so some spans are empty), many repeated pairs.
TemporalGraph random_events(const TempDir& dir, std::int64_t n, std::int64_t m,
                            std::uint64_t seed) {
  std::string text;
  for (std::int64_t e = 0; e < m; ++e) {
    const auto u = static_cast<std::uint64_t>(e);
    const auto src = kernels::rng::below(seed, 1, u, static_cast<std::uint64_t>(n));
    const auto dst = kernels::rng::below(seed, 2, u, static_cast<std::uint64_t>(n));
    const auto cluster = kernels::rng::below(seed, 3, u, 4);
    const auto t = 1000 + cluster * 1000 + kernels::rng::below(seed, 4, u, 50);
    text += std::to_string(src * 7 + 3) + "\t" + std::to_string(dst * 7 + 3) + "\t" +
            std::to_string(t) + "\n";
  }
  write_text(dir.path() / "events.tsv", text);
  return read_temporal_events(dir.path() / "events.tsv");
}

/// Reference snapshot i: scan every event.
Snapshot ref_snapshot(const TemporalGraph& g, const std::vector<std::int64_t>& b, std::size_t i,
                      std::int64_t w) {
  Snapshot s;
  s.time_begin = w == 0 ? b[0] : b[i + 1 >= static_cast<std::size_t>(w) ? i + 1 - w : 0];
  s.time_end = b[i + 1];
  std::set<TemporalEdge> edges;
  std::set<NodeId> nodes;
  for (std::int64_t e = 0; e < g.num_events(); ++e) {
    const auto k = static_cast<std::size_t>(e);
    if (g.time[k] < s.time_end) {
      nodes.insert(g.src[k]);
      nodes.insert(g.dst[k]);
    }
    if (g.time[k] >= s.time_begin && g.time[k] < s.time_end) edges.insert({g.src[k], g.dst[k]});
  }
  s.num_nodes = static_cast<std::int64_t>(nodes.size());
  // Nodes seen so far are the prefix [0, num_nodes).
  if (!nodes.empty()) {
    EXPECT_EQ(*nodes.rbegin() + 1, s.num_nodes);
  }
  s.edges.assign(edges.begin(), edges.end());
  return s;
}

TEST(Snapshots, MatchReferenceAndDeltasReproduceThem) {
  const TempDir dir;
  const TemporalGraph g = random_events(dir, 60, 400, 11);
  struct Case {
    std::int64_t num, window, sliding;
  };
  // One snapshot; more spans than clusters (empty spans); cumulative; sliding windows of 1 and
  // 3 spans (edges leave); fixed-width windows, one wider than the whole range.
  const Case cases[] = {{1, 0, 0},  {1, 0, 1},  {7, 0, 0},    {13, 0, 1},     {13, 0, 3},
                        {0, 97, 0}, {0, 97, 2}, {0, 5000, 0}, {0, 100000, 1}, {40, 0, 40}};
  for (const Case& k : cases) {
    SCOPED_TRACE(std::to_string(k.num) + " " + std::to_string(k.window) + " " +
                 std::to_string(k.sliding));
    SnapshotConfig c;
    c.num_snapshots = k.num;
    c.window_seconds = k.window;
    c.window_snapshots = k.sliding;
    const auto b = snapshot_boundaries(g, c);
    ASSERT_GE(b.size(), 2u);
    EXPECT_EQ(b.front(), g.time.front());
    EXPECT_EQ(b.back(), g.time.back() + 1);
    for (std::size_t i = 0; i + 1 < b.size(); ++i) EXPECT_LE(b[i], b[i + 1]);
    const auto s = make_snapshots(g, c);
    ASSERT_EQ(s.size() + 1, b.size());
    bool saw_empty = false, saw_removal = false;
    Snapshot replay = s[0];
    for (std::size_t i = 0; i < s.size(); ++i) {
      EXPECT_EQ(s[i], ref_snapshot(g, b, i, k.sliding)) << "snapshot " << i;
      saw_empty = saw_empty || s[i].edges.empty();
      if (i == 0) continue;
      const SnapshotDelta d = snapshot_delta(s[i - 1], s[i]);
      saw_removal = saw_removal || !d.removed.empty();
      replay = apply_delta(replay, d);
      EXPECT_EQ(replay, s[i]) << "snapshot " << i << " from the deltas";
    }
    if (k.num == 13 && k.sliding == 1) {
      EXPECT_TRUE(saw_empty && saw_removal);
    }
    if (k.sliding == 0) {
      EXPECT_FALSE(saw_removal);
    }
  }
  // A delta that does not fit is refused.
  SnapshotConfig c;
  c.num_snapshots = 4;
  c.window_snapshots = 1;
  const auto s = make_snapshots(g, c);
  SnapshotDelta d = snapshot_delta(s[0], s[1]);
  EXPECT_THROW(apply_delta(s[1], d), LogicError);
  if (!d.added.empty()) {
    d.removed.push_back(d.added.front());
    EXPECT_THROW(apply_delta(s[0], d), LogicError);
  }
}

TEST(Snapshots, GraphFollowsEdgeListConvention) {
  Snapshot s;
  s.num_nodes = 3;
  s.edges = {{0, 1}, {0, 2}, {2, 2}};
  const Graph g = snapshot_graph(cpu(), s);
  EXPECT_EQ(g.num_rows(), 3);
  const auto rows = rows_of(g);
  EXPECT_TRUE(rows[0].empty());
  ASSERT_EQ(rows[1].size(), 1u);
  EXPECT_EQ(rows[1][0].first, 0);
  ASSERT_EQ(rows[2].size(), 2u);
}

TEST(Snapshots, GrownRmatArrivesNodeByNode) {
  RmatConfig c;
  c.scale = 8;
  c.avg_degree = 6;
  c.seed = 4;
  const Dataset ds = make_rmat(cpu(), c);
  const TemporalGraph g = grow_rmat(cpu(), c, 10);
  const std::int64_t n = ds.num_nodes();
  // One event per undirected edge, at the arrival step of its later end.
  ASSERT_EQ(g.num_events() * 2, ds.graph.num_edges());
  std::set<std::pair<std::int64_t, std::int64_t>> edges;
  for (std::int64_t e = 0; e < g.num_events(); ++e) {
    const auto k = static_cast<std::size_t>(e);
    const std::int64_t u = g.original_ids[static_cast<std::size_t>(g.src[k])];
    const std::int64_t v = g.original_ids[static_cast<std::size_t>(g.dst[k])];
    EXPECT_LT(u, v);
    EXPECT_EQ(g.time[k], std::max(u * 10 / n, v * 10 / n));
    edges.emplace(u, v);
  }
  EXPECT_EQ(static_cast<std::int64_t>(edges.size()), g.num_events());
  std::int64_t connected = 0;
  for (std::int64_t v = 0; v < n; ++v) connected += ds.graph.indptr(v + 1) > ds.graph.indptr(v);
  EXPECT_EQ(g.num_nodes(), connected);
  SnapshotConfig sc;
  sc.num_snapshots = 10;
  const auto s = make_snapshots(g, sc);
  ASSERT_EQ(s.size(), 10u);
  for (std::size_t t = 1; t < s.size(); ++t) EXPECT_GE(s[t].num_nodes, s[t - 1].num_nodes);
  EXPECT_EQ(static_cast<std::int64_t>(s.back().edges.size()), g.num_events());
  EXPECT_THROW(grow_rmat(cpu(), c, 0), LogicError);
}

}  // namespace
}  // namespace halo::datasets::test
