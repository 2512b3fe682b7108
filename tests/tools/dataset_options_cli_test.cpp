// The dataset flags that `halo train` and `halo partition` share (tools/halo/dataset_options.*),
// as a user runs them: generator seeds, --features, and their usage errors.

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "support/testing.hpp"

namespace {

namespace fs = std::filesystem;

using Outcome = halo::testing::CommandOutcome;
using halo::testing::read_file;

fs::path shared_datasets() { return halo::testing::datasets_dir(); }

class DatasetOptionsCli : public ::testing::Test {
 protected:
  Outcome run(const std::string& args) const {
    return halo::testing::run_command(std::string(HALO_TEST_BINARY) + " " + args, m_dir);
  }

  /// The dataset section of the meta.json of a one-part partition of `dataset_args` written to
  /// `name`, and the bytes of its part file (which hold the whole graph, features and labels).
  std::pair<nlohmann::json, std::string> one_part(const std::string& dataset_args,
                                                  const std::string& name) const {
    const fs::path dir = m_dir / name;
    const Outcome r =
        run("partition " + dataset_args + " --parts 1 --method random --out " + dir.string());
    EXPECT_EQ(r.code, 0) << dataset_args << ": " << r.err;
    // On failure, a section that compares unequal to any real one (and no null to index).
    if (r.code != 0) return {{{"num_edges", -1}, {"num_features", -1}, {"features", ""}}, ""};
    return {nlohmann::json::parse(read_file(dir / "meta.json"))["dataset"],
            read_file(dir / "part-0.bin")};
  }

  /// shared/datasets/karate/edges.tsv through `halo datasets convert --from edgelist`: a graph
  /// without features, named 'edges' after the file (the edge list holds each friendship once,
  /// so it is directed as listed).
  fs::path converted_karate() const {
    const fs::path dir = m_dir / "karate-graph";
    const Outcome r =
        run("datasets convert --from edgelist " +
            (shared_datasets() / "karate" / "edges.tsv").string() + " --out " + dir.string());
    EXPECT_EQ(r.code, 0) << r.err;
    return dir;
  }

  const halo::testing::TempDir m_temp;
  const fs::path m_dir = m_temp.path();
};

/// The one-hot degree width of karate's edge list read as directed (src -> dst, row dst):
/// max in-degree + 1, computed here from the file.
std::int64_t karate_degree_columns() {
  std::ifstream in(shared_datasets() / "karate" / "edges.tsv");
  std::vector<int> in_degree(34, 0);
  int u = 0, v = 0, w = 0;
  while (in >> u >> v >> w) ++in_degree[static_cast<std::size_t>(v)];
  return *std::max_element(in_degree.begin(), in_degree.end()) + 1;
}

// --seed is METIS's seed (partition) or the run's seed (train); the generated graph depends only
// on --synthetic-seed / --rmat-seed, so both commands see the same graph.
TEST_F(DatasetOptionsCli, GeneratedDatasetsDependOnlyOnTheirOwnSeed) {
  const std::string synthetic = "--dataset synthetic --synthetic-nodes 500";
  const auto [meta0, part0] = one_part(synthetic + " --seed 0", "s0");
  const auto [meta7, part7] = one_part(synthetic + " --seed 7", "s7");
  EXPECT_EQ(meta0["num_edges"], meta7["num_edges"]);
  EXPECT_TRUE(part0 == part7) << "partition --seed changed the synthetic graph";
  const auto [own_meta, own_part] = one_part(synthetic + " --synthetic-seed 7", "own");
  EXPECT_NE(own_meta["num_edges"], meta0["num_edges"]);
  EXPECT_FALSE(own_part == part0);

  const std::string rmat = "--dataset rmat --rmat-scale 9";
  const auto [rmat0, rpart0] = one_part(rmat + " --seed 0", "r0");
  const auto [rmat7, rpart7] = one_part(rmat + " --seed 7 --synthetic-seed 7", "r7");
  EXPECT_TRUE(rpart0 == rpart7) << "R-MAT depends on --seed or --synthetic-seed";
  const auto [rmat_own, rpart_own] = one_part(rmat + " --rmat-seed 7", "rown");
  EXPECT_FALSE(rpart_own == rpart0);

  // halo train with another run seed trains on the graph that partition wrote.
  const fs::path json = m_dir / "train.json";
  const Outcome r = run("train " + synthetic + " --seed 3 --epochs 1 --json " + json.string());
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(nlohmann::json::parse(read_file(json))["num_edges"], meta0["num_edges"]);
}

// Training needs features; a partition (or a store) takes the graph alone.
TEST_F(DatasetOptionsCli, DatasetWithoutFeaturesNeedsTheFeaturesFlag) {
  const fs::path dir = converted_karate();
  for (const std::string cmd : {"train --epochs 1"}) {
    const Outcome r = run(cmd + " --dataset " + dir.string());
    EXPECT_EQ(r.code, 1) << cmd;
    // One error line, the last one (partition prints "loading dataset" before it).
    const std::size_t at = r.err.find("halo: error: ");
    ASSERT_NE(at, std::string::npos) << r.err;
    EXPECT_TRUE(at == 0 || r.err[at - 1] == '\n') << r.err;
    EXPECT_EQ(r.err.find('\n', at), r.err.size() - 1) << r.err;
    EXPECT_NE(r.err.find("dataset 'edges' (" + dir.string() + ") has no node features"),
              std::string::npos)
        << r.err;
    EXPECT_NE(r.err.find("--features degree|constant"), std::string::npos) << r.err;
  }
  const Outcome r =
      run("partition --parts 2 --out " + (m_dir / "p").string() + " --dataset " + dir.string());
  EXPECT_EQ(r.code, 0) << r.err;
  EXPECT_TRUE(fs::exists(m_dir / "p" / "meta.json"));
}

// An edge list becomes trainable: convert it, add labels and splits, train on degree features.
TEST_F(DatasetOptionsCli, ConvertedEdgeListTrainsWithDegreeFeatures) {
  const fs::path dir = converted_karate();
  fs::copy_file(shared_datasets() / "karate" / "labels.txt", dir / "labels.txt",
                fs::copy_options::overwrite_existing);
  { std::ofstream(dir / "meta.tsv", std::ios::trunc) << "name\tkarate-graph\n"; }
  { std::ofstream(dir / "train_idx.txt", std::ios::trunc) << "0\n33\n"; }
  { std::ofstream(dir / "val_idx.txt", std::ios::trunc) << "1\n2\n31\n32\n"; }
  {
    std::ofstream test(dir / "test_idx.txt", std::ios::trunc);
    for (int v = 3; v <= 30; ++v) test << v << "\n";
  }
  const fs::path json = m_dir / "train.json";
  Outcome r = run("train --dataset " + dir.string() + " --features degree --epochs 2 --json " +
                  json.string());
  ASSERT_EQ(r.code, 0) << r.err;
  const auto result = nlohmann::json::parse(read_file(json));
  EXPECT_EQ(result["num_nodes"], 34);
  EXPECT_TRUE(result.contains("test_accuracy"));
  r = run("train --dataset " + dir.string() + " --features constant --epochs 2");
  EXPECT_EQ(r.code, 0) << r.err;

  // halo partition stores the computed features in the parts.
  const auto [degree, degree_part] =
      one_part("--dataset " + dir.string() + " --features degree", "degree");
  EXPECT_EQ(degree["num_features"], karate_degree_columns());
  EXPECT_EQ(degree["features"], "sparse");
  const auto [constant, constant_part] =
      one_part("--dataset " + dir.string() + " --features constant", "constant");
  EXPECT_EQ(constant["num_features"], 1);
  EXPECT_EQ(constant["features"], "dense");
}

TEST_F(DatasetOptionsCli, FeaturesFlagReplacesTheDatasetsOwn) {
  const std::string cora = (shared_datasets() / "planetoid" / "cora").string();
  const auto [own, own_part] = one_part("--dataset " + cora, "own");
  EXPECT_EQ(own["num_features"], 1433);
  const auto [constant, constant_part] =
      one_part("--dataset " + cora + " --features constant", "constant");
  EXPECT_EQ(constant["num_features"], 1);
  EXPECT_EQ(constant["features"], "dense");
}

TEST_F(DatasetOptionsCli, TrainUsageErrorsExitTwo) {
  for (const std::string& args : std::vector<std::string>{
           "--features ones", "--synthetic-degree nan", "--synthetic-homophily nan",
           "--synthetic-seed -1", "--rmat-degree nan", "--rmat-seed x", "--rmat-classes 1",
           "--rmat-split 0.5,0.6,0", "--rmat-split 0.1,0.2", "--rmat-split 0.1,x,0.2",
           "--rmat-split 0.1,0.2,0.3,0.4", "--rmat-split -0.1,0.2,0.3",
           "--mode mini-batch --fanouts 5,5 --eval-fanouts 5",
           "--mode mini-batch --fanouts 5,5 --eval-fanouts 5,a", "--eval-fanouts 5,5",
           "--task link --mode mini-batch --fanouts 5,5 --eval-fanouts 5,5"}) {
    const Outcome r = run("train --epochs 1 " + args);
    EXPECT_EQ(r.code, 2) << args << ": " << r.err;
    // The line names the flag at fault (the last one given).
    EXPECT_NE(r.err.find(args.substr(args.rfind("--"),
                                     args.find(' ', args.rfind("--")) - args.rfind("--"))),
              std::string::npos)
        << r.err;
  }
}

// --rmat-split and --rmat-classes shape the generated dataset: a papers100M-like split.
TEST_F(DatasetOptionsCli, RmatSplitAndClassesShapeTheDataset) {
  const Outcome r =
      run("datasets prepare --dataset rmat --rmat-scale 12 --rmat-classes 172 --rmat-split "
          "0.011,0.0011,0.0019 --out " +
          (m_dir / "store").string());
  ASSERT_EQ(r.code, 0) << r.err;
  std::ifstream in(m_dir / "store" / "store.json");
  const nlohmann::json j = nlohmann::json::parse(in);
  EXPECT_EQ(j["num_classes"], 172);
  EXPECT_EQ(j["num_train"], 45);  // floor(0.011 * 4096)
  EXPECT_EQ(j["num_val"], 4);
  EXPECT_EQ(j["num_test"], 7);
}

TEST_F(DatasetOptionsCli, HelpListsTheDatasetFlags) {
  for (const char* cmd : {"train --help", "partition --help"}) {
    const Outcome r = run(cmd);
    EXPECT_EQ(r.code, 0);
    for (const char* flag : {"--features", "--synthetic-seed", "--rmat-seed", "degree"})
      EXPECT_NE(r.out.find(flag), std::string::npos) << cmd << ": " << flag;
  }
}

}  // namespace
