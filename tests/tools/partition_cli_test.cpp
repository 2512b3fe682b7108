// `halo partition` as a user runs it: exit codes, one-line errors, the table, --info.

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>
#include <string>

#include "support/testing.hpp"

namespace {

namespace fs = std::filesystem;

using Outcome = halo::testing::CommandOutcome;
using halo::testing::read_file;

class PartitionCli : public ::testing::Test {
 protected:
  Outcome run(const std::string& args) const {
    return halo::testing::run_command(std::string(HALO_TEST_BINARY) + " " + args, m_dir);
  }
  static std::string cora() {
    return (halo::testing::datasets_dir() / "planetoid" / "cora").string();
  }
  const halo::testing::TempDir m_temp;
  const fs::path m_dir = m_temp.path();
};

TEST_F(PartitionCli, HelpListsTheFlags) {
  const Outcome r = run("partition --help");
  EXPECT_EQ(r.code, 0);
  for (const char* flag :
       {"--dataset", "--parts", "--method", "--balance", "--objective", "--imbalance", "--seed",
        "--out", "--info", "--snapshots", "--snapshot-window", "--window-snapshots",
        "--migration-weight", "--repartition-every"})
    EXPECT_NE(r.out.find(flag), std::string::npos) << flag;
}

TEST_F(PartitionCli, UsageErrorsExitTwo) {
  struct Case {
    std::string args;
    const char* names;
  };
  const std::string out = " --out " + (m_dir / "p").string();
  for (const Case& c :
       {Case{"partition --parts 2", "--out"}, Case{"partition --parts 0" + out, "--parts"},
        Case{"partition --parts 1025" + out, "--parts"},
        Case{"partition --method kahip" + out, "--method"},
        Case{"partition --balance nodes,weight" + out, "--balance"},
        Case{"partition --objective edges" + out, "--objective"},
        Case{"partition --imbalance 2" + out, "--imbalance"},
        Case{"partition --info x" + out, "--info"},
        // Values CLI::Range lets through (NaN compares false) or that used to fail only inside
        // the partitioner or a generator, with assertion text and exit code 1.
        Case{"partition --imbalance nan" + out, "--imbalance"},
        Case{"partition --imbalance inf" + out, "--imbalance"},
        Case{"partition --imbalance -0.5" + out, "--imbalance"},
        Case{"partition --method metis-rb --objective vol" + out, "--objective"},
        Case{"partition --seed -1" + out, "--seed"}, Case{"partition --seed 1.5" + out, "--seed"},
        Case{"partition --threads 0" + out, "--threads"},
        Case{"partition --synthetic-nodes -5" + out, "--synthetic-nodes"},
        Case{"partition --synthetic-degree nan" + out, "--synthetic-degree"},
        Case{"partition --synthetic-degree -1" + out, "--synthetic-degree"},
        Case{"partition --synthetic-homophily nan" + out, "--synthetic-homophily"},
        Case{"partition --synthetic-seed -1" + out, "--synthetic-seed"},
        Case{"partition --dataset rmat --rmat-degree nan" + out, "--rmat-degree"},
        Case{"partition --dataset rmat --rmat-degree inf" + out, "--rmat-degree"},
        Case{"partition --dataset rmat --rmat-scale 31" + out, "--rmat-scale"},
        Case{"partition --rmat-seed -1" + out, "--rmat-seed"},
        Case{"partition --features ones" + out, "--features"}}) {
    const Outcome r = run(c.args);
    EXPECT_EQ(r.code, 2) << c.args;
    EXPECT_NE(r.err.find(c.names), std::string::npos) << c.args << ": " << r.err;
    EXPECT_EQ(r.err.find("failed:"), std::string::npos) << c.args << ": " << r.err;
    EXPECT_EQ(r.err.find("halo partition: ["), std::string::npos) << "no work starts: " << r.err;
  }
  EXPECT_FALSE(fs::exists(m_dir / "p"));
}

/// Whether `err` is exactly one line that starts with "halo: error: ".
bool one_error_line(const std::string& err) {
  return err.rfind("halo: error: ", 0) == 0 && err.find('\n') == err.size() - 1;
}

// --out is checked before the dataset is loaded or partitioned (minutes on a large graph): the
// error is the only line on stderr, with no progress line before it.
TEST_F(PartitionCli, OutIsCheckedBeforeAnyWork) {
  const fs::path full = m_dir / "full";
  fs::create_directory(full);
  { std::ofstream(full / "keep") << "x"; }
  Outcome r = run("partition --synthetic-nodes 300 --out " + full.string());
  EXPECT_EQ(r.code, 1);
  EXPECT_TRUE(one_error_line(r.err)) << r.err;
  EXPECT_NE(r.err.find(full.string() + ": already exists and is not an empty directory"),
            std::string::npos)
      << r.err;
  EXPECT_EQ(read_file(full / "keep"), "x");

  // A dataset that does not exist would fail later; the --out error comes first.
  r = run("partition --dataset " + (m_dir / "nothing").string() + " --out " + full.string());
  EXPECT_EQ(r.code, 1);
  EXPECT_TRUE(one_error_line(r.err)) << r.err;
  EXPECT_NE(r.err.find("already exists"), std::string::npos) << r.err;

  // A parent that is a regular file.
  { std::ofstream(m_dir / "file") << "x"; }
  r = run("partition --synthetic-nodes 300 --out " + (m_dir / "file" / "sub" / "p").string());
  EXPECT_EQ(r.code, 1);
  EXPECT_TRUE(one_error_line(r.err)) << r.err;
  EXPECT_NE(r.err.find((m_dir / "file").string() + ": not a directory"), std::string::npos)
      << r.err;

  // Missing parents are fine: they are created, and nothing is left beside the output.
  const fs::path deep = m_dir / "new" / "deeper" / "p";
  r = run("partition --synthetic-nodes 300 --out " + deep.string());
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_TRUE(fs::is_regular_file(deep / "meta.json"));
  int siblings = 0;
  for ([[maybe_unused]] const auto& e : fs::directory_iterator(deep.parent_path())) ++siblings;
  EXPECT_EQ(siblings, 1);
}

TEST_F(PartitionCli, PartitionsCoraAndDescribesIt) {
  const fs::path dir = m_dir / "cora-4";
  const Outcome r = run("partition --dataset " + cora() + " --parts 4 --out " + dir.string());
  ASSERT_EQ(r.code, 0) << r.err;
  for (const char* row : {"edge cut", "comm volume", "max halo", "replication factor", "balance"})
    EXPECT_NE(r.out.find(row), std::string::npos) << row;
  EXPECT_NE(r.err.find("METIS k-way, 4 parts"), std::string::npos) << "progress: " << r.err;
  const auto meta = nlohmann::json::parse(read_file(dir / "meta.json"));
  EXPECT_EQ(meta["num_parts"], 4);
  EXPECT_EQ(meta["method"], "metis");
  EXPECT_EQ(meta["dataset"]["name"], "cora");
  for (const char* key : {"edge_cut", "comm_volume", "max_halo", "replication_factor", "balance"})
    EXPECT_TRUE(meta["metrics"].contains(key)) << key;
  for (int k = 0; k < 4; ++k)
    EXPECT_TRUE(fs::is_regular_file(dir / ("part-" + std::to_string(k) + ".bin")));

  const Outcome info = run("partition --info " + dir.string());
  ASSERT_EQ(info.code, 0) << info.err;
  EXPECT_NE(info.out.find("checksums: 4 files ok"), std::string::npos) << info.out;
  EXPECT_NE(info.out.find("edge cut             " +
                          std::to_string(meta["metrics"]["edge_cut"].get<int>())),
            std::string::npos)
      << info.out;
}

TEST_F(PartitionCli, RandomSyntheticIsSeeded) {
  const fs::path a = m_dir / "a", b = m_dir / "b";
  const std::string args =
      "partition --dataset synthetic --synthetic-nodes 500 --parts 3 "
      "--method random --seed 5 --out ";
  ASSERT_EQ(run(args + a.string()).code, 0);
  ASSERT_EQ(run(args + b.string()).code, 0);
  EXPECT_EQ(read_file(a / "part-2.bin"), read_file(b / "part-2.bin"));
}

TEST_F(PartitionCli, MorePartsThanNodesIsRefused) {
  const Outcome r =
      run("partition --synthetic-nodes 20 --parts 21 --out " + (m_dir / "p").string());
  EXPECT_EQ(r.code, 1);
  EXPECT_NE(r.err.find("halo: error: --parts 21: dataset 'synthetic' has 20 nodes"),
            std::string::npos)
      << r.err;
  EXPECT_EQ(r.err.find("METIS"), std::string::npos) << r.err;
  EXPECT_EQ(r.out.find("Cannot bisect"), std::string::npos) << r.out;
  EXPECT_FALSE(fs::exists(m_dir / "p"));
}

TEST_F(PartitionCli, DataErrorsExitOneWithOneLine) {
  Outcome r = run("partition --dataset " + (m_dir / "nothing").string() + " --out " +
                  (m_dir / "p").string());
  EXPECT_EQ(r.code, 1);
  EXPECT_NE(r.err.find("nothing"), std::string::npos) << r.err;
  EXPECT_EQ(r.err.find("halo: error"), r.err.rfind('\n', r.err.size() - 2) + 1) << r.err;

  const fs::path dir = m_dir / "syn";
  ASSERT_EQ(run("partition --synthetic-nodes 300 --parts 2 --out " + dir.string()).code, 0);
  r = run("partition --synthetic-nodes 300 --parts 2 --out " + dir.string());
  EXPECT_EQ(r.code, 1) << "refuses to overwrite";
  EXPECT_NE(r.err.find("already exists"), std::string::npos) << r.err;

  {
    const auto meta = nlohmann::json::parse(read_file(dir / "meta.json"));
    std::fstream f(dir / "part-1.bin", std::ios::in | std::ios::out | std::ios::binary);
    std::int64_t offset = -1;
    for (const auto& a : meta["parts"][1]["arrays"])
      if (a["name"] == "labels") offset = a["offset"].get<std::int64_t>();
    ASSERT_GE(offset, 0);
    f.seekp(offset + 3);
    f.put('\x7f');
  }
  r = run("partition --info " + dir.string());
  EXPECT_EQ(r.code, 1);
  EXPECT_NE(r.err.find("part-1.bin: array 'labels'"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("checksum mismatch"), std::string::npos) << r.err;
  r = run("partition --info " + (m_dir / "nothing").string());
  EXPECT_EQ(r.code, 1);
  EXPECT_NE(r.err.find("meta.json"), std::string::npos) << r.err;
}

}  // namespace

namespace {

/// A temporal directory: 6 events on 5 sparse ids, two of them late (so the span between is
/// empty).
fs::path write_temporal(const fs::path& dir) {
  fs::create_directories(dir / "events");
  std::ofstream(dir / "events" / "events.tsv")
      << "# src dst t\n50\t7\t100\n7\t9\t101\n9\t11\t102\n11\t50\t103\n7\t13\t400\n13\t9\t401\n";
  return dir / "events";
}

}  // namespace

TEST_F(PartitionCli, SnapshotUsageErrorsExitTwo) {
  const std::string events = " --dataset " + write_temporal(m_dir).string();
  const std::string out = " --out " + (m_dir / "s").string();
  for (const auto& [args, flag] : std::vector<std::pair<std::string, std::string>>{
           {"partition --method scratch" + out, "--method"},
           {"partition --snapshots 3 --method metis" + events + out, "--method"},
           {"partition --snapshots 3 --balance nodes" + events + out, "--balance"},
           {"partition --snapshots 3 --features degree" + events + out, "--features"},
           {"partition --window-snapshots 2" + events + out, "--window-snapshots"},
           {"partition --snapshots 2 --snapshot-window 5" + events + out, "--snapshot"},
           {"partition --snapshots 0" + events + out, "--snapshots"},
           {"partition --snapshots 2 --migration-weight 3" + events + out, "--migration-weight"},
           {"partition --snapshots 2 --method migration --migration-weight nan" + events + out,
            "--migration-weight"},
           {"partition --snapshots 2 --repartition-every 2" + events + out,
            "--repartition-every"}}) {
    const Outcome r = run(args);
    EXPECT_EQ(r.code, 2) << args;
    EXPECT_NE(r.err.find(flag), std::string::npos) << args << ": " << r.err;
  }
  EXPECT_FALSE(fs::exists(m_dir / "s"));
  // Not a temporal dataset: a data error.
  const Outcome r = run("partition --snapshots 2 --dataset " + cora() + out);
  EXPECT_EQ(r.code, 1);
  EXPECT_NE(r.err.find("not a temporal dataset"), std::string::npos) << r.err;
  EXPECT_FALSE(fs::exists(m_dir / "s"));
}

TEST_F(PartitionCli, SnapshotSeriesWithMorePartsThanEarlyNodes) {
  const fs::path events = write_temporal(m_dir);
  const fs::path out = m_dir / "series";
  // Sliding windows of one span over 3 spans of about 100 s: 4 nodes, then no edges, then 2
  // edges and one new node; 6 parts, more than any snapshot's nodes (empty parts).
  const Outcome r =
      run("partition --dataset " + events.string() +
          " --snapshots 3 --window-snapshots 1 --parts 6 --method migration --out " + out.string());
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.out.find("3 snapshots of events"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("total:"), std::string::npos) << r.out;
  const auto meta = nlohmann::json::parse(read_file(out / "meta.json"));
  EXPECT_EQ(meta["dataset"]["num_nodes"], 5);
  EXPECT_EQ(meta["dataset"]["num_events"], 6);
  ASSERT_EQ(meta["snapshots"].size(), 3u);
  EXPECT_EQ(meta["snapshots"][0]["num_nodes"], 4);
  EXPECT_EQ(meta["snapshots"][1]["num_pairs"], 0);
  EXPECT_EQ(meta["snapshots"][1]["pairs_removed"], 4);
  EXPECT_EQ(meta["snapshots"][2]["new_nodes"], 1);
  EXPECT_EQ(meta["snapshots"][2]["migration"], "migration-2.tsv");
  EXPECT_EQ(read_file(out / "node_ids.txt"), "50\n7\n9\n11\n13\n");
  EXPECT_TRUE(fs::exists(out / "migration-1.tsv"));
  // Every snapshot is a partition directory that --info verifies.
  for (int t = 0; t < 3; ++t) {
    const Outcome info =
        run("partition --info " + (out / ("snapshot-" + std::to_string(t))).string());
    EXPECT_EQ(info.code, 0) << info.err;
  }
  const Outcome info = run("partition --info " + out.string());
  EXPECT_EQ(info.code, 0) << info.err;
  EXPECT_NE(info.out.find("3 snapshots of events"), std::string::npos) << info.out;
  EXPECT_NE(info.out.find("migration plans: 3 snapshots ok"), std::string::npos) << info.out;
  EXPECT_EQ(
      run("partition --dataset " + events.string() + " --snapshots 3 --out " + out.string()).code,
      1)
      << "refuses to overwrite";
}

// SIGTERM or SIGINT while METIS runs ends `halo partition` as outside METIS: by the signal
// (a shell sees 143 / 130), blaming no one (METIS used to catch SIGTERM itself and the run
// reported "METIS failed (error, status -4)", exit 1), with no output and no staging left.
TEST_F(PartitionCli, ASignalDuringMetisEndsTheRunByThatSignal) {
  for (const auto& [sig, status] : {std::pair{"TERM", 143}, std::pair{"INT", 130}}) {
    const fs::path out = m_dir / (std::string("p-") + sig);
    const fs::path err = m_dir / "err.txt";
    // set -m: a background job of a script ignores SIGINT otherwise. METIS takes about 5 s
    // on this graph, so the signal lands inside it even on a loaded machine.
    const std::string script = "set -m; " + std::string(HALO_TEST_BINARY) +
                               " partition --dataset rmat --rmat-scale 18 --parts 16 " +
                               "--threads 1 --out " + out.string() + " 2>" + err.string() +
                               " & pid=$!; " + "for i in $(seq 600); do grep -q \"METIS k-way\" " +
                               err.string() + " && break; sleep 0.05; done; sleep 0.3; kill -" +
                               sig + " $pid; wait $pid; " + "echo status $?";
    const Outcome r = halo::testing::run_command("bash -c '" + script + "'", m_dir);
    const std::string log = read_file(err);
    ASSERT_NE(log.find("METIS k-way"), std::string::npos) << log;
    EXPECT_NE(r.out.find("status " + std::to_string(status)), std::string::npos) << r.out << log;
    EXPECT_EQ(log.find("error"), std::string::npos) << log;
    EXPECT_FALSE(fs::exists(out));
    for (const auto& e : fs::directory_iterator(m_dir))
      EXPECT_EQ(e.path().filename().string().find(".tmp-"), std::string::npos) << e.path();
  }
}
