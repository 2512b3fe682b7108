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
    return (fs::path(HALO_TEST_SOURCE_DIR) / ".." / "shared" / "datasets" / "planetoid" / "cora")
        .string();
  }
  const halo::testing::TempDir m_temp;
  const fs::path m_dir = m_temp.path();
};

TEST_F(PartitionCli, HelpListsTheFlags) {
  const Outcome r = run("partition --help");
  EXPECT_EQ(r.code, 0);
  for (const char* flag : {"--dataset", "--parts", "--method", "--balance", "--objective",
                           "--imbalance", "--seed", "--out", "--info"})
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
        Case{"partition --info x" + out, "--info"}}) {
    const Outcome r = run(c.args);
    EXPECT_EQ(r.code, 2) << c.args;
    EXPECT_NE(r.err.find(c.names), std::string::npos) << c.args << ": " << r.err;
  }
  EXPECT_FALSE(fs::exists(m_dir / "p"));
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
    f.seekp(meta["parts"][1]["arrays"]["labels"]["offset"].get<std::int64_t>() + 3);
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
