// `halo datasets` and `halo train --dataset NAME` as a user runs them, against an HTTP mirror
// on 127.0.0.1 that the test starts and stops.

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>
#include <string>

#include "support/http_server.hpp"
#include "support/testing.hpp"

namespace {

namespace fs = std::filesystem;

using Outcome = halo::testing::CommandOutcome;
using halo::testing::read_file;

fs::path shared_datasets() { return fs::path(HALO_TEST_SOURCE_DIR) / ".." / "shared" / "datasets"; }

class DatasetsCli : public ::testing::Test {
 protected:
  DatasetsCli() { server.map("/mirror/cora", shared_datasets() / "planetoid" / "raw"); }

  /// Runs the halo program with a data directory of its own, no inherited registry
  /// environment, quick retries, and `env` (e.g. "HALO_DATASET_MIRROR=...") added.
  Outcome run(const std::string& args, const std::string& env = "") const {
    return halo::testing::run_command(
        "env -u HALO_DATASET_MIRROR -u HALO_OFFLINE HALO_DATA_DIR=" + data_dir().string() +
            " HALO_DOWNLOAD_RETRIES=2 HALO_DOWNLOAD_BACKOFF_S=0.01 " + env + " " + m_binary + " " +
            args,
        m_dir);
  }
  fs::path data_dir() const { return m_dir / "data"; }
  std::string mirror_env() const { return "HALO_DATASET_MIRROR=" + server.url("/mirror"); }

  const std::string m_binary = HALO_TEST_BINARY;
  const halo::testing::TempDir m_temp;
  const fs::path m_dir = m_temp.path();
  halo::testing::HttpTestServer server;
};

TEST_F(DatasetsCli, HelpListsSubcommands) {
  const Outcome r = run("datasets --help");
  EXPECT_EQ(r.code, 0);
  for (const char* s : {"list", "info", "fetch", "convert"})
    EXPECT_NE(r.out.find(s), std::string::npos) << s;
  EXPECT_EQ(run("datasets").code, 2);
}

TEST_F(DatasetsCli, ListShowsEveryDatasetAndItsState) {
  const Outcome r = run("datasets list");
  ASSERT_EQ(r.code, 0) << r.err;
  for (const char* s : {"synthetic", "cora", "citeseer", "pubmed", "ogbn-arxiv", "ogbn-products",
                        "reddit", "karate", "rmat", "2708", "10556", "not downloaded", "generated"})
    EXPECT_NE(r.out.find(s), std::string::npos) << s << "\n" << r.out;
  EXPECT_NE(r.out.find(data_dir().string()), std::string::npos) << r.out;
}

TEST_F(DatasetsCli, InfoShowsSourceLicenceCitationAndChecksums) {
  const Outcome r = run("datasets info cora");
  ASSERT_EQ(r.code, 0) << r.err;
  for (const char* s :
       {"raw.githubusercontent.com/kimiyoung/planetoid", "MIT", "Yang", "Kipf",
        "23cfa55d91c6f624233f5eb7b6e3f141f1bd2b2ae39608a63cf5d084bb27baab", "not downloaded"})
    EXPECT_NE(r.out.find(s), std::string::npos) << s << "\n" << r.out;
  const Outcome m = run("datasets info cora", mirror_env());
  EXPECT_NE(m.out.find(server.url("/mirror/cora/ind.cora.x")), std::string::npos) << m.out;
  const Outcome a = run("datasets info ogbn-arxiv");
  EXPECT_NE(a.out.find("recorded at the first download"), std::string::npos) << a.out;
}

TEST_F(DatasetsCli, UnknownNameIsUsageError) {
  const Outcome r = run("datasets info corra");
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.err.find("corra"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("cora, citeseer"), std::string::npos) << r.err;
}

TEST_F(DatasetsCli, FetchOfflineSaysWhatIsMissingAndWhereFrom) {
  const Outcome r = run("datasets fetch cora --offline");
  EXPECT_EQ(r.code, 1);
  EXPECT_NE(r.err.find((data_dir() / "cora" / "raw" / "ind.cora.x").string()), std::string::npos)
      << r.err;
  EXPECT_NE(r.err.find("https://raw.githubusercontent.com/"), std::string::npos) << r.err;
  EXPECT_EQ(r.err.find('\n'), r.err.size() - 1) << "one line: " << r.err;
  EXPECT_TRUE(server.requests().empty());
}

TEST_F(DatasetsCli, FetchThroughMirrorThenWorksOffline) {
  Outcome r = run("datasets fetch cora", mirror_env());
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.out.find("8 files verified"), std::string::npos) << r.out;
  EXPECT_EQ(server.requests().size(), 8u);
  r = run("datasets list");
  EXPECT_NE(r.out.find("downloaded"), std::string::npos) << r.out;
  r = run("datasets fetch cora --offline");
  EXPECT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(server.requests().size(), 8u);
}

TEST_F(DatasetsCli, FetchFromVanishedMirrorFailsClearly) {
  const std::string env = mirror_env();
  server.stop();
  const Outcome r = run("datasets fetch cora", env);
  EXPECT_EQ(r.code, 1);
  EXPECT_NE(r.err.find("/mirror/cora/ind.cora.x"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("curl error 7"), std::string::npos) << r.err;
}

TEST_F(DatasetsCli, ConvertPlanetoidGivesTheSharedPlainCopy) {
  const fs::path out = m_dir / "cora-plain";
  const Outcome r =
      run("datasets convert --from planetoid " +
          (shared_datasets() / "planetoid" / "raw").string() + " --out " + out.string());
  ASSERT_EQ(r.code, 0) << r.err;
  const fs::path ref = shared_datasets() / "planetoid" / "cora";
  for (const char* f : {"edges.tsv", "labels.txt", "train_idx.txt", "val_idx.txt", "test_idx.txt",
                        "features.coo.tsv"})
    EXPECT_TRUE(read_file(out / f) == read_file(ref / f)) << f;
  const Outcome again =
      run("datasets convert --from planetoid " +
          (shared_datasets() / "planetoid" / "raw").string() + " --out " + out.string());
  EXPECT_EQ(again.code, 1) << "the output directory exists";
  EXPECT_EQ(run("datasets convert --from csv x --out y").code, 2);
}

TEST_F(DatasetsCli, ConvertGraphOnlyFormats) {
  const fs::path mtx = m_dir / "bus";
  Outcome r = run("datasets convert --from mtx " +
                  (shared_datasets() / "matrix_market" / "1138_bus.mtx").string() + " --out " +
                  mtx.string());
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.out.find("1138 nodes"), std::string::npos) << r.out;
  const fs::path snap = m_dir / "msg";
  r = run("datasets convert --from edgelist " +
          (shared_datasets() / "collegemsg" / "events.tsv").string() + " --out " + snap.string());
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.out.find("1899 nodes"), std::string::npos) << r.out;
  // The output reads back as a plain directory.
  r = run("datasets convert --from plain " + snap.string() + " --out " +
          (m_dir / "again").string());
  EXPECT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(read_file(snap / "edges.tsv"), read_file(m_dir / "again" / "edges.tsv"));
}

TEST_F(DatasetsCli, TrainByNameThroughMirrorMatchesPlainDirectory) {
  const fs::path a = m_dir / "by-name.json", b = m_dir / "by-dir.json";
  const std::string flags = " --epochs 200 --seed 3 --threads 2 --json ";
  Outcome r = run("train --dataset cora" + flags + a.string(), mirror_env());
  ASSERT_EQ(r.code, 0) << r.err;
  r = run("train --dataset " + (shared_datasets() / "planetoid" / "cora").string() + flags +
          b.string());
  ASSERT_EQ(r.code, 0) << r.err;
  const auto ja = nlohmann::json::parse(read_file(a)), jb = nlohmann::json::parse(read_file(b));
  EXPECT_EQ(ja["num_nodes"], 2708);
  EXPECT_EQ(ja["num_edges"], jb["num_edges"]);
  EXPECT_EQ(ja["best_epoch"], jb["best_epoch"]);
  EXPECT_DOUBLE_EQ(ja["test_accuracy"].get<double>(), jb["test_accuracy"].get<double>());
  EXPECT_GT(ja["test_accuracy"].get<double>(), 0.75);
  EXPECT_EQ(server.requests().size(), 8u);

  // Offline, the binary cache is enough.
  r = run("train --dataset cora --offline --epochs 2");
  EXPECT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(server.requests().size(), 8u);
}

TEST_F(DatasetsCli, TrainOfflineWithoutDataSaysWhatIsMissing) {
  const Outcome r = run("train --dataset cora --offline --epochs 2");
  EXPECT_EQ(r.code, 1);
  EXPECT_NE(r.err.find("not available offline"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("halo datasets fetch cora"), std::string::npos) << r.err;
}

}  // namespace
