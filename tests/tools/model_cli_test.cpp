// `halo train --save-model`, `halo predict` and `halo embed` as a user runs them: predict
// reproduces the training run's test accuracy, embed equals the C++ API, damaged model files and
// usage errors are one line with the right exit code.

#include <cmath>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include <halo/datasets/readers/numpy.hpp>
#include <halo/datasets/readers/plain_format.hpp>
#include <halo/nn/model.hpp>
#include <halo/runtime/data/inference.hpp>
#include <halo/runtime/runtime.hpp>

#include "support/testing.hpp"

namespace {

namespace fs = std::filesystem;

using Outcome = halo::testing::CommandOutcome;
using halo::testing::read_file;

std::string cora() { return (halo::testing::datasets_dir() / "planetoid" / "cora").string(); }

/// One line on stderr, no assertion text.
::testing::AssertionResult one_line(const std::string& err) {
  if (err.empty() || err.find('\n') != err.size() - 1)
    return ::testing::AssertionFailure() << "not one line: " << err;
  if (err.find("failed:") != std::string::npos)
    return ::testing::AssertionFailure() << "assertion text: " << err;
  return ::testing::AssertionSuccess();
}

std::vector<float> floats_of(const halo::datasets::NpyArray& a) {
  std::vector<float> v(a.bytes.size() / 4);
  std::memcpy(v.data(), a.bytes.data(), a.bytes.size());
  return v;
}

/// Trains one Cora model per suite (a GCN, full graph) and keeps its files.
class ModelCli : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    s_temp = new halo::testing::TempDir();
    const Outcome r = halo("train --dataset " + cora() + " --epochs 30 --seed 3 --save-model " +
                           model().string() + " --json " + (dir() / "train.json").string());
    ASSERT_EQ(r.code, 0) << r.err;
  }
  static void TearDownTestSuite() {
    delete s_temp;
    s_temp = nullptr;
  }
  static Outcome halo(const std::string& args) {
    return halo::testing::run_command(std::string(HALO_TEST_BINARY) + " " + args, dir());
  }
  static const fs::path& dir() { return s_temp->path(); }
  static fs::path model() { return dir() / "cora.halo"; }
  static nlohmann::json train_json() {
    return nlohmann::json::parse(read_file(dir() / "train.json"));
  }
  static halo::testing::TempDir* s_temp;
};
halo::testing::TempDir* ModelCli::s_temp = nullptr;

TEST_F(ModelCli, PredictReproducesTheTrainingRunsTestAccuracy) {
  const fs::path json = dir() / "predict.json", out = dir() / "probs.npy";
  const Outcome r = halo("predict --model " + model().string() + " --dataset " + cora() +
                         " --split test --out " + out.string() + " --json " + json.string());
  ASSERT_EQ(r.code, 0) << r.err;
  const auto p = nlohmann::json::parse(read_file(json));
  const double trained = train_json()["test_accuracy"].get<double>();
  EXPECT_GT(trained, 0.7);
  EXPECT_EQ(p["accuracy"].get<double>(), trained) << "exactly the reported accuracy";
  EXPECT_GT(p["macro_f1"].get<double>(), 0.5);
  EXPECT_LE(p["macro_f1"].get<double>(), 1.0);
  EXPECT_EQ(p["labelled"], 1000);
  EXPECT_NE(r.out.find("accuracy"), std::string::npos);
  // The model file records the same result.
  const auto training = nlohmann::json::parse(halo::nn::read_model_file(model()).info.training);
  EXPECT_EQ(training["test_accuracy"].get<double>(), trained);
  // Probabilities: one row per test node, rows summing to 1.
  const auto a = halo::datasets::read_npy(out);
  EXPECT_EQ(a.dtype, "<f4");
  ASSERT_EQ(a.shape, (std::vector<std::int64_t>{1000, 7}));
  const auto v = floats_of(a);
  for (std::size_t row = 0; row < 1000; ++row) {
    double sum = 0;
    for (std::size_t j = 0; j < 7; ++j) sum += v[row * 7 + j];
    ASSERT_NEAR(sum, 1.0, 1e-5) << row;
  }
}

// A SAGE model trained on sampled mini-batches is evaluated on the full graph: predict
// reproduces that too; --labels writes classes, --nodes picks rows in the file's order.
TEST_F(ModelCli, PredictReproducesAMiniBatchSageRunAndWritesLabels) {
  const fs::path sage = dir() / "sage.halo", tj = dir() / "sage_train.json";
  Outcome r = halo("train --dataset " + cora() +
                   " --model sage --mode mini-batch --batch-size 256 --fanouts 5,5 --epochs 3 "
                   "--save-model " +
                   sage.string() + " --json " + tj.string());
  ASSERT_EQ(r.code, 0) << r.err;
  const fs::path json = dir() / "sage_predict.json", out = dir() / "labels.npy";
  r = halo("predict --model " + sage.string() + " --dataset " + cora() + " --labels --out " +
           out.string() + " --json " + json.string());
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(nlohmann::json::parse(read_file(json))["accuracy"].get<double>(),
            nlohmann::json::parse(read_file(tj))["test_accuracy"].get<double>());
  const auto labels = halo::datasets::read_npy(out);
  EXPECT_EQ(labels.dtype, "<i8");
  ASSERT_EQ(labels.shape, (std::vector<std::int64_t>{1000}));
  // Nodes 5, 0 and 2707 by a file: three rows, in that order, the same as with --split all.
  const fs::path nodes = dir() / "nodes.txt", picked = dir() / "picked.npy",
                 all = dir() / "all.npy";
  std::ofstream(nodes) << "5\n0 2707\n";
  ASSERT_EQ(halo("predict --model " + sage.string() + " --dataset " + cora() + " --nodes " +
                 nodes.string() + " --labels --out " + picked.string())
                .code,
            0);
  ASSERT_EQ(halo("predict --model " + sage.string() + " --dataset " + cora() +
                 " --split all --labels --out " + all.string())
                .code,
            0);
  const auto p = halo::datasets::to_int64s(halo::datasets::read_npy(picked), "picked");
  const auto every = halo::datasets::to_int64s(halo::datasets::read_npy(all), "all");
  ASSERT_EQ(p.size(), 3u);
  ASSERT_EQ(every.size(), 2708u);
  EXPECT_EQ(p, (std::vector<std::int64_t>{every[5], every[0], every[2707]}));
}

// Sampled neighbourhoods: with every neighbour taken (-1) the blocks are the full graph's rows,
// so the probabilities are the full-graph pass's; with small fan-outs they are an estimate.
TEST_F(ModelCli, PredictOnSampledNeighbourhoods) {
  const fs::path full = dir() / "full.npy", all = dir() / "all_neighbours.npy",
                 sampled = dir() / "sampled.npy", json = dir() / "sampled.json";
  const std::string m = " --model " + model().string() + " --dataset " + cora();
  ASSERT_EQ(halo("predict" + m + " --out " + full.string()).code, 0);
  Outcome r = halo("predict" + m + " --fanouts -1,-1 --batch-size 300 --out " + all.string());
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.out.find("sampled"), std::string::npos) << r.out;
  const auto a = floats_of(halo::datasets::read_npy(full));
  const auto b = floats_of(halo::datasets::read_npy(all));
  ASSERT_EQ(a.size(), b.size());
  for (std::size_t i = 0; i < a.size(); ++i) ASSERT_NEAR(a[i], b[i], 1e-5) << i;
  r = halo("predict" + m + " --fanouts 5,5 --seed 4 --out " + sampled.string() + " --json " +
           json.string());
  ASSERT_EQ(r.code, 0) << r.err;
  const auto j = nlohmann::json::parse(read_file(json));
  EXPECT_EQ(j["fanouts"], nlohmann::json::array({5, 5}));
  EXPECT_GT(j["accuracy"].get<double>(), 0.6);
}

TEST_F(ModelCli, EmbedEqualsTheCppApi) {
  const halo::kernels::Resources res(halo::kernels::Device::Cpu, 1);
  halo::nn::ModelFileInfo info;
  halo::nn::Model<float> m = halo::nn::load_model<float>(res, model(), &info);
  halo::runtime::Shard shard =
      halo::runtime::local_shard(res, halo::datasets::read_directory(res, cora()));
  halo::runtime::Inference inference(res, shard, info.config.kind, info.normalize_features);
  for (const int layer : {1, 2}) {
    SCOPED_TRACE(layer);
    const fs::path out = dir() / ("emb" + std::to_string(layer) + ".npy");
    const Outcome r = halo("embed --model " + model().string() + " --dataset " + cora() +
                           " --layer " + std::to_string(layer) + " --out " + out.string());
    ASSERT_EQ(r.code, 0) << r.err;
    const auto a = halo::datasets::read_npy(out);
    const std::int64_t width = layer == 1 ? 16 : 7;
    EXPECT_EQ(a.dtype, "<f4");
    ASSERT_EQ(a.shape, (std::vector<std::int64_t>{2708, width}));
    const std::vector<float> got = floats_of(a);
    const std::vector<float> expected = inference.run(m, layer).to_vector(res);
    ASSERT_EQ(got.size(), expected.size());
    for (std::size_t i = 0; i < got.size(); ++i)
      ASSERT_NEAR(got[i], expected[i], 1e-6 + 1e-6 * std::abs(expected[i])) << i;
    if (layer == 1) {  // after the ReLU
      for (const float v : got) ASSERT_GE(v, 0.f);
    }
  }
  // numpy.load reads the file as a (2708, 16) float32 array, where numpy is installed.
  if (std::system("/usr/bin/python3 -c 'import numpy' >/dev/null 2>&1") != 0) {
    std::printf("numpy not installed: the numpy.load check is skipped\n");
    return;
  }
  const Outcome r = halo::testing::run_command(
      "/usr/bin/python3 -c \"import numpy; a = numpy.load('" + (dir() / "emb1.npy").string() +
          "'); print(a.shape, a.dtype, a.flags['C_CONTIGUOUS'])\"",
      dir());
  EXPECT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(r.out, "(2708, 16) float32 True\n");
}

// Damaged model files: one line naming the file and what is wrong, exit code 1.
TEST_F(ModelCli, DamagedModelFilesAreOneLineErrors) {
  const std::string bytes = read_file(model());
  struct Case {
    const char* name;
    std::string content;
    const char* says;
  };
  std::string corrupted = bytes;
  corrupted[corrupted.size() - 100] ^= 0x21;
  std::string version = bytes;
  version[8] = 7;
  std::vector<Case> cases = {{"corrupted.halo", corrupted, "corrupted"},
                             {"truncated.halo", bytes.substr(0, bytes.size() / 2), "truncated"},
                             {"version.halo", version, "format version 7"},
                             {"empty.halo", "", "not a Halo model file"}};
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    const fs::path file = dir() / c.name;
    std::ofstream(file, std::ios::binary) << c.content;
    for (const std::string cmd : {"predict --out p.npy", "embed --layer 1 --out e.npy"}) {
      const Outcome r = halo(cmd + " --model " + file.string() + " --dataset " + cora());
      EXPECT_EQ(r.code, 1) << cmd;
      EXPECT_TRUE(one_line(r.err)) << cmd;
      EXPECT_NE(r.err.find(file.string()), std::string::npos) << r.err;
      EXPECT_NE(r.err.find(c.says), std::string::npos) << r.err;
    }
  }
  // A directory where the model file should be: named, with the reason.
  for (const std::string cmd : {"predict --out p.npy", "embed --layer 1 --out e.npy"}) {
    const Outcome r = halo(cmd + " --model " + dir().string() + " --dataset " + cora());
    EXPECT_EQ(r.code, 1) << cmd;
    EXPECT_TRUE(one_line(r.err)) << r.err;
    EXPECT_NE(r.err.find(dir().string() + ": cannot read it: Is a directory"), std::string::npos)
        << r.err;
  }
  // A model of another feature width: the data are refused, naming the model file.
  const Outcome r =
      halo("predict --model " + model().string() + " --dataset synthetic --out p.npy");
  EXPECT_EQ(r.code, 1);
  EXPECT_TRUE(one_line(r.err));
  EXPECT_NE(r.err.find(model().string() + ": the model reads 1433 input features, the data has 64"),
            std::string::npos)
      << r.err;
  EXPECT_FALSE(fs::exists(dir() / "p.npy")) << "no output on failure";
}

// A bad --nodes entry is a data error naming the file and line.
TEST_F(ModelCli, BadNodesFileIsNamedWithItsLine) {
  const fs::path nodes = dir() / "bad_nodes.txt";
  for (const char* content : {"3\n7 x\n", "1\n2708\n", "-1\n"}) {
    SCOPED_TRACE(content);
    std::ofstream(nodes, std::ios::trunc) << content;
    const Outcome r = halo("predict --model " + model().string() + " --dataset " + cora() +
                           " --nodes " + nodes.string() + " --out " + (dir() / "n.npy").string());
    EXPECT_EQ(r.code, 1);
    EXPECT_TRUE(one_line(r.err));
    EXPECT_NE(r.err.find(nodes.string() + ":"), std::string::npos) << r.err;
    EXPECT_NE(r.err.find("not a node id in [0, 2708)"), std::string::npos) << r.err;
  }
}

TEST_F(ModelCli, UsageErrorsExitTwoWithOneLine) {
  const std::string m = " --model " + model().string() + " --dataset " + cora();
  struct Case {
    std::string args;
    const char* names;
  };
  for (const Case& c :
       {Case{"predict" + m, "--out"}, Case{"embed --layer 1" + m, "--out"},
        Case{"embed --out e.npy" + m, "--layer"},
        Case{"embed --layer 3 --out e.npy" + m, "--layer 3"},
        Case{"embed --layer 0 --out e.npy" + m, "--layer"},
        Case{"predict --split dev --out p.npy" + m, "--split"},
        Case{"predict --split test --nodes n.txt --out p.npy" + m, "--nodes"},
        Case{"predict --bogus --out p.npy" + m, "--bogus"},
        Case{"predict --out " + dir().string() + m, "a directory, not a regular file"},
        Case{"predict --out p.npy --model " + model().string() + " --dataset " +
                 (halo::testing::datasets_dir() / "heco_acm").string(),
             "is a heterogeneous dataset; predict and embed take"},
        Case{"embed --layer 1 --out e.npy --model " + model().string() + " --dataset " +
                 (halo::testing::datasets_dir() / "collegemsg").string(),
             "is a temporal dataset"},
        Case{"predict --out p.npy --json /no/such/dir/p.json" + m, "--json"},
        Case{"predict --out p.npy --dataset cora", "--model"},
        Case{"predict --fanouts 5 --out p.npy" + m, "--fanouts"},
        Case{"predict --seed 1 --out p.npy" + m, "--seed"},
        Case{"predict --batch-size 8 --out p.npy" + m, "--batch-size"},
        Case{"predict --out p.npy --partitions " + dir().string() + m,
             "--dataset: not with --partitions"}}) {
    SCOPED_TRACE(c.args);
    const Outcome r = halo(c.args);
    EXPECT_EQ(r.code, 2);
    EXPECT_TRUE(one_line(r.err));
    EXPECT_NE(r.err.find(c.names), std::string::npos) << r.err;
  }
}

TEST_F(ModelCli, HelpListsEveryFlag) {
  Outcome r = halo("predict --help");
  EXPECT_EQ(r.code, 0);
  for (const char* flag :
       {"--model", "--dataset", "--nodes", "--split", "--labels", "--out", "--json", "--partitions",
        "--threads", "--device", "--fanouts", "--batch-size", "--seed"})
    EXPECT_NE(r.out.find(flag), std::string::npos) << flag;
  r = halo("embed --help");
  EXPECT_EQ(r.code, 0);
  for (const char* flag : {"--model", "--dataset", "--layer", "--out", "--partitions"})
    EXPECT_NE(r.out.find(flag), std::string::npos) << flag;
}

// `--model gat` takes GAT's published set-up for the flags not given (8 heads of 8, dropout 0.6,
// lr 0.005, weight decay 5e-4), a given flag overrides it, and its saved model predicts the
// trained test accuracy; --heads is refused for a model without heads.
TEST_F(ModelCli, GatTakesItsPublishedSetUpAndPredictsItsAccuracy) {
  const fs::path json = dir() / "gat.json", model = dir() / "gat.halo";
  Outcome r = halo("train --dataset " + cora() + " --model gat --epochs 3 --threads 1 --json " +
                   json.string() + " --save-model " + model.string());
  ASSERT_EQ(r.code, 0) << r.err;
  const auto j = nlohmann::json::parse(read_file(json));
  EXPECT_EQ(j.at("model"), "gat");
  EXPECT_EQ(j.at("heads"), 8);
  EXPECT_EQ(j.at("out_heads"), 1);
  EXPECT_EQ(j.at("hidden"), 8);
  EXPECT_NEAR(j.at("dropout").get<double>(), 0.6, 1e-6);
  EXPECT_EQ(j.at("lr"), 0.005);
  EXPECT_EQ(j.at("weight_decay"), 5e-4);
  const fs::path predicted = dir() / "gat_predict.json";
  r = halo("predict --model " + model.string() + " --dataset " + cora() + " --out " +
           (dir() / "gat.npy").string() + " --json " + predicted.string());
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(nlohmann::json::parse(read_file(predicted)).at("accuracy"), j.at("test_accuracy"));
  r = halo("train --dataset " + cora() +
           " --model gat --heads 2 --hidden 4 --epochs 1 "
           "--threads 1 --json " +
           json.string());
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(nlohmann::json::parse(read_file(json)).at("heads"), 2);
  r = halo("train --dataset " + cora() + " --model gcn --heads 2 --epochs 1");
  EXPECT_EQ(r.code, 2);
  EXPECT_TRUE(one_line(r.err));
  EXPECT_NE(r.err.find("gat"), std::string::npos) << r.err;
}

}  // namespace
