// `halo train` on a typed directory: the heterogeneous task's output and --json, its usage
// errors (and `halo plan`'s refusal), a malformed file named with its line.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>
#include <string>
#include <utility>
#include <vector>

#include "support/hetero_fixture.hpp"
#include "support/testing.hpp"

namespace {

namespace fs = std::filesystem;
using Outcome = halo::testing::CommandOutcome;

/// A float32 .npy file's shape (its header's tuple) and values.
struct NpyFloats {
  std::string shape;
  std::vector<float> values;
};
NpyFloats read_npy_floats(const fs::path& path) {
  const std::string bytes = halo::testing::read_file(path);
  const auto header = static_cast<std::size_t>(static_cast<unsigned char>(bytes.at(8)) |
                                               static_cast<unsigned char>(bytes.at(9)) << 8);
  const std::string h = bytes.substr(10, header);
  NpyFloats n;
  const std::size_t at = h.find("'shape': ") + 9;
  n.shape = h.substr(at, h.find(')', at) + 1 - at);
  n.values.resize((bytes.size() - 10 - header) / sizeof(float));
  std::memcpy(n.values.data(), bytes.data() + 10 + header, n.values.size() * sizeof(float));
  return n;
}

class HeteroCli : public ::testing::Test {
 protected:
  void SetUp() override {
    fs::create_directories(m_data);
    halo::testing::write_hetero_fixture(m_data);
  }
  Outcome run(const std::string& args) const {
    return halo::testing::run_command(m_binary + " " + args, m_temp.path());
  }
  const std::string m_binary = HALO_TEST_BINARY;
  const halo::testing::TempDir m_temp;
  const fs::path m_data = m_temp.path() / "typed";
};

TEST_F(HeteroCli, TrainsAndWritesF1AndStages) {
  const fs::path json = m_temp.path() / "r.json";
  const Outcome r =
      run("train --dataset " + m_data.string() +
          " --split 4 --epochs 12 --hidden 8 --num-bases 2 --seed 3 --json " + json.string());
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.out.find("macro-F1"), std::string::npos) << r.out;
  EXPECT_NE(r.err.find("target 'item'"), std::string::npos) << r.err;
  const auto j = nlohmann::json::parse(halo::testing::read_file(json));
  for (const char* key : {"test_accuracy", "test_macro_f1", "test_micro_f1", "val_macro_f1",
                          "val_accuracy", "best_epoch", "epoch_time_median_s"})
    EXPECT_TRUE(j.contains(key) && j[key].is_number()) << key;
  EXPECT_EQ(j["task"], "heterogeneous-node-classification");
  EXPECT_EQ(j["model"], "rgcn");
  EXPECT_EQ(j["target_type"], "item");
  EXPECT_EQ(j["split"], 4);
  EXPECT_EQ(j["num_bases"], 2);
  EXPECT_EQ(j["hidden"], 8);
  EXPECT_EQ(j["epochs"], 12);
  EXPECT_EQ(j["node_types"].size(), 4u);
  EXPECT_EQ(j["relations"].size(), 8u);
  EXPECT_EQ(j["stage_times_per_epoch_s"].size(), 12u);
  for (const char* stage : {"subgraph_build_s", "feature_projection_s", "neighbor_aggregation_s",
                            "semantic_aggregation_s"})
    EXPECT_TRUE(j["stage_times_median_s"].contains(stage)) << stage;
  EXPECT_DOUBLE_EQ(j["test_micro_f1"].get<double>(), j["test_accuracy"].get<double>());
}

TEST_F(HeteroCli, TrainsHgtThroughTheSameTask) {
  const fs::path json = m_temp.path() / "hgt.json";
  const Outcome r = run("train --dataset " + m_data.string() +
                        " --model hgt --heads 2 --split 4 --epochs 6 --hidden 8 --seed 3 --json " +
                        json.string());
  ASSERT_EQ(r.code, 0) << r.err;
  const auto j = nlohmann::json::parse(halo::testing::read_file(json));
  EXPECT_EQ(j["model"], "hgt");
  EXPECT_EQ(j["heads"], 2);
  EXPECT_TRUE(std::isfinite(j["final_train_loss"].get<double>()));
  EXPECT_GT(j["stage_times_median_s"]["neighbor_aggregation_s"].get<double>(), 0.0);
  // --heads must divide --hidden (HGT's head width): a data error from the layer, one line.
  const Outcome bad =
      run("train --dataset " + m_data.string() + " --model hgt --heads 3 --hidden 8 --epochs 1");
  EXPECT_NE(bad.code, 0);
  EXPECT_EQ(run("train --model hgt --dataset synthetic").code, 2);
  EXPECT_EQ(run("train --heads 2 --dataset synthetic").code, 2);
}

TEST_F(HeteroCli, TrainsOnSampledBlocksWithFanoutsPerRelation) {
  const fs::path json = m_temp.path() / "mb.json";
  const Outcome r = run("train --dataset " + m_data.string() +
                        " --split 4 --fanouts buys=2,*=3:2 --batch-size 4 --epochs 3 --hidden 8 "
                        "--json " +
                        json.string());
  ASSERT_EQ(r.code, 0) << r.err;
  const auto j = nlohmann::json::parse(halo::testing::read_file(json));
  EXPECT_EQ(j["mode"], "mini-batch");
  EXPECT_EQ(j["batch_size"], 4);
  EXPECT_GT(j["batches_per_epoch"].get<int>(), 1);
  ASSERT_EQ(j["fanouts"].size(), 2u);
  ASSERT_EQ(j["fanouts"][0].size(), j["relations"].size());
  for (std::size_t r = 0; r < j["relations"].size(); ++r) {
    EXPECT_EQ(j["fanouts"][0][r], j["relations"][r]["name"] == "buys" ? 2 : 3);
    EXPECT_EQ(j["fanouts"][1][r], 2);
  }
  EXPECT_GT(j["stage_times_median_s"]["subgraph_build_s"].get<double>(), 0.0);
}

// The command: heco_acm on sampled blocks, Macro-F1 in the JSON; profiled.
TEST_F(HeteroCli, TrainsHecoAcmInMiniBatches) {
  const fs::path acm = halo::testing::datasets_dir() / "heco_acm";
  const fs::path json = m_temp.path() / "acm.json";
  const Outcome r = run("train --dataset " + acm.string() +
                        " --model rgcn --fanouts 10,5 --batch-size 64 --epochs 2 --hidden 16 "
                        "--profile --json " +
                        json.string());
  ASSERT_EQ(r.code, 0) << r.err;
  // --profile: the table after the summary, the phases and kernels in --json.
  EXPECT_NE(r.out.find("profile (median epoch"), std::string::npos) << r.out;
  const auto j = nlohmann::json::parse(halo::testing::read_file(json));
  for (const char* phase : {"sample_s", "gather_s", "wait_s", "forward_s", "backward_s"})
    EXPECT_GT(j["profile"][phase].get<double>(), 0.0) << phase;
  EXPECT_GT(j["profile"]["kernels"]["spmm"]["calls"].get<double>(), 0.0);
  EXPECT_EQ(j["mode"], "mini-batch");
  EXPECT_TRUE(j["test_macro_f1"].is_number());
  EXPECT_EQ(j["fanouts"][0][0], 10);
  EXPECT_EQ(j["fanouts"][1][0], 5);
}

TEST_F(HeteroCli, UsageErrors) {
  const std::string d = " --dataset " + m_data.string();
  for (const std::string& args : std::vector<std::string>{
           "train --model gcn" + d, "train --fanouts 5,5,5" + d,
           "train --fanouts nosuchrel=5:5" + d, "train --fanouts buys=x:5" + d,
           "train --fanouts nosuchrel=5,*=3:5" + d, "train --model hgt --heads 3" + d,
           "calibrate --rmat-scale 8 --large-rmat-scale 8",
           "train --mode mini-batch --prefetch 2" + d, "train --split 4 --dataset synthetic",
           "train --model rgcn --dataset synthetic", "train --num-bases 2 --dataset synthetic",
           "plan --parts 2" + d, "plan --time-limit 5" + d, "plan --model gat" + d,
           "plan --device cuda" + d, "plan --featureless zero --dataset synthetic"}) {
    const Outcome r = run(args);
    EXPECT_EQ(r.code, 2) << args << ": " << r.err;
    EXPECT_EQ(r.err.find('\n'), r.err.size() - 1) << "one line: " << r.err;
    EXPECT_EQ(r.err.find("failed:"), std::string::npos) << "no assertion text: " << r.err;
  }
  // The unknown relation is named with the known ones.
  const Outcome r = run("train --fanouts nosuchrel=5,*=3:5" + d);
  EXPECT_NE(r.err.find("unknown relation 'nosuchrel' (the relations: "), std::string::npos)
      << r.err;
}

// halo plan on a typed directory: the run's plan in one process (the model's inventory and the
// data's sizes: tests/cluster/hetero_plan_test.cpp), full graph and mini-batch, as JSON and as
// an sbatch script asking for the predicted memory; over a partition's ranks (full graph and
// mini-batch).
TEST_F(HeteroCli, PlansARunInOneProcessOrOverAPartition) {
  const std::string d = " --dataset " + m_data.string() + " --threads 1";
  const fs::path full_json = m_temp.path() / "full.json", mini_json = m_temp.path() / "mini.json";
  ASSERT_EQ(run("plan --model hgt --hidden 8 --output " + full_json.string() + d).code, 0);
  ASSERT_EQ(run("plan --hidden 8 --mode mini-batch --batch-size 4 --fanouts 2,2 --output " +
                mini_json.string() + d)
                .code,
            0);
  const auto full = nlohmann::json::parse(halo::testing::read_file(full_json));
  const auto mini = nlohmann::json::parse(halo::testing::read_file(mini_json));
  EXPECT_EQ(full["model"], "hgt");
  EXPECT_EQ(full["mode"], "full-graph");
  EXPECT_EQ(full["ranks"], 1);
  EXPECT_EQ(full["batches_per_epoch"], 1);
  EXPECT_GT(full["per_rank"][0]["host_bytes"]["activations"].get<double>(), 0);
  EXPECT_GT(full["epoch_seconds"].get<double>(), 0);
  EXPECT_EQ(mini["model"], "rgcn");
  EXPECT_EQ(mini["mode"], "mini-batch");
  EXPECT_GT(mini["batches_per_epoch"].get<int>(), 1);
  EXPECT_GT(mini["sampler_envelope_bytes"].get<double>(), 0);
  const Outcome slurm = run("plan --emit slurm --checkpoint-dir " +
                            (m_temp.path() / "ck").string() + " --hidden 8" + d);
  ASSERT_EQ(slurm.code, 0) << slurm.err;
  EXPECT_NE(slurm.out.find("#SBATCH --mem="), std::string::npos) << slurm.out;
  EXPECT_NE(slurm.out.find("--resume auto"), std::string::npos) << slurm.out;

  const fs::path parts = m_temp.path() / "parts";
  ASSERT_EQ(
      run("partition --dataset " + m_data.string() + " --split 4 --parts 2 --out " + parts.string())
          .code,
      0);
  const std::string p = " --partitions " + parts.string() + " --hidden 8 --threads 1";
  const fs::path parted_json = m_temp.path() / "parted.json";
  ASSERT_EQ(run("plan --output " + parted_json.string() + p).code, 0);
  const auto parted = nlohmann::json::parse(halo::testing::read_file(parted_json));
  EXPECT_EQ(parted["ranks"], 2);
  EXPECT_EQ(parted["per_rank"].size(), 2u);
  EXPECT_GT(parted["comm_bytes_per_epoch"].get<double>(), 0);
  // Mini-batches over the partition: every rank planned with its remote sampling and feature
  // fetches; the sbatch script asks the predicted memory of its two ranks.
  const std::string mini_parted = p + " --mode mini-batch --batch-size 4 --fanouts 2,2";
  const fs::path mini_parted_json = m_temp.path() / "mini-parted.json";
  ASSERT_EQ(run("plan --output " + mini_parted_json.string() + mini_parted).code, 0);
  const auto mp = nlohmann::json::parse(halo::testing::read_file(mini_parted_json));
  EXPECT_EQ(mp["mode"], "mini-batch");
  ASSERT_EQ(mp["per_rank"].size(), 2u);
  for (const auto& rank : mp["per_rank"]) {
    EXPECT_GT(rank["host_bytes"]["typed_batches"].get<double>(), 0);
    EXPECT_GT(rank["comm_bytes_per_epoch"]["feature_fetch"].get<double>(), 0);
  }
  const Outcome job =
      run("plan --emit slurm --checkpoint-dir " + (m_temp.path() / "ck2").string() + mini_parted);
  ASSERT_EQ(job.code, 0) << job.err;
  EXPECT_NE(job.out.find("#SBATCH --ntasks=2"), std::string::npos) << job.out;
  EXPECT_NE(job.out.find("#SBATCH --mem="), std::string::npos) << job.out;
}

// Checkpoints of the heterogeneous task as a user runs them: 4 epochs, then a resume to 8,
// equal one run of 8 (mini-batch, learnable embeddings of the featureless types); the resumed
// run names its checkpoint in --json.
TEST_F(HeteroCli, ResumedRunEqualsTheUninterruptedOne) {
  const std::string base = "train --dataset " + m_data.string() +
                           " --split 4 --hidden 8 --seed 5 --featureless embedding --mode "
                           "mini-batch --batch-size 3 --fanouts 2,2";
  const auto json_of = [&](const char* name) {
    return nlohmann::json::parse(halo::testing::read_file(m_temp.path() / name));
  };
  const std::string ck = (m_temp.path() / "ck").string();
  Outcome r = run(base + " --epochs 8 --json " + (m_temp.path() / "a.json").string());
  ASSERT_EQ(r.code, 0) << r.err;
  r = run(base + " --epochs 4 --checkpoint-dir " + ck);
  ASSERT_EQ(r.code, 0) << r.err;
  r = run(base + " --epochs 8 --checkpoint-dir " + ck + " --resume auto --json " +
          (m_temp.path() / "b.json").string());
  ASSERT_EQ(r.code, 0) << r.err;
  const auto a = json_of("a.json"), b = json_of("b.json");
  EXPECT_EQ(b["resumed_from"], ck + "/epoch-000004-step-000000");
  EXPECT_EQ(b["checkpoint"], ck + "/epoch-000008-step-000000");
  for (const char* key : {"final_train_loss", "test_macro_f1", "test_micro_f1", "best_epoch"})
    EXPECT_EQ(b[key], a[key]) << key;
  // One process: nothing remote, so no cache hits and no fetched bytes.
  EXPECT_EQ(a["cache_hit_rate"], 0);
  EXPECT_EQ(a["feature_bytes_per_epoch"], 0);
  // Another heterogeneous model is refused, naming the field.
  r = run(base + " --epochs 8 --model hgt --checkpoint-dir " + ck + " --resume auto");
  EXPECT_EQ(r.code, 1);
  EXPECT_NE(r.err.find("model.kind is rgcn, this run's is hgt"), std::string::npos) << r.err;
}

// A saved heterogeneous model (R-GCN and HGT, learnable embeddings of the featureless types)
// predicts with nothing more than the model file and the dataset: `halo predict`'s scores are the
// trained run's test accuracy and Macro-F1 exactly, and its probabilities' arg-max scores the
// split as they say. Then heco_acm (R-GCN, the must-show case of issue 46).
TEST_F(HeteroCli, SavedModelPredictsTheTrainedScores) {
  struct Case {
    std::string data, flags;
  };
  const std::string acm = (halo::testing::datasets_dir() / "heco_acm").string();
  for (const Case& c :
       {Case{m_data.string(), " --split 4 --hidden 8 --featureless embedding --epochs 6"},
        Case{m_data.string(), " --split 4 --model hgt --heads 2 --hidden 8 --epochs 4"},
        Case{acm, " --model rgcn --hidden 16 --epochs 3"}}) {
    SCOPED_TRACE(c.flags);
    const fs::path model = m_temp.path() / "m.halo", train = m_temp.path() / "train.json",
                   predict = m_temp.path() / "predict.json", out = m_temp.path() / "p.npy";
    Outcome r = run("train --dataset " + c.data + c.flags + " --seed 2 --save-model " +
                    model.string() + " --json " + train.string());
    ASSERT_EQ(r.code, 0) << r.err;
    r = run("predict --model " + model.string() + " --dataset " + c.data + " --out " +
            out.string() + " --json " + predict.string());
    ASSERT_EQ(r.code, 0) << r.err;
    const auto t = nlohmann::json::parse(halo::testing::read_file(train));
    const auto p = nlohmann::json::parse(halo::testing::read_file(predict));
    for (const char* key :
         {"test_accuracy", "test_macro_f1", "test_micro_f1", "val_accuracy", "val_macro_f1"})
      EXPECT_EQ(p.at(key), t.at(key)) << key;
    EXPECT_EQ(p.at("accuracy"), t.at("test_accuracy"));  // the test split's arg-max
    EXPECT_EQ(p.at("task"), "heterogeneous-node-classification");
    EXPECT_GT(fs::file_size(out), 0u);
  }
  // `halo embed` of the heco_acm model: the last layer's rows are the logits whose softmax
  // predict writes (every paper, --split all); below it any type's rows (authors: 7,167 x 16).
  const fs::path model = m_temp.path() / "m.halo";
  const fs::path logits = m_temp.path() / "e.npy", probs = m_temp.path() / "all.npy",
                 authors = m_temp.path() / "a.npy";
  const std::string m = "--model " + model.string() + " --dataset " + acm;
  Outcome r = run("embed " + m + " --layer 2 --out " + logits.string());
  ASSERT_EQ(r.code, 0) << r.err;
  r = run("predict " + m + " --split all --out " + probs.string());
  ASSERT_EQ(r.code, 0) << r.err;
  const NpyFloats e = read_npy_floats(logits), p = read_npy_floats(probs);
  ASSERT_EQ(e.shape, "(4019, 3)");
  ASSERT_EQ(p.shape, e.shape);
  for (std::size_t i = 0; i < e.values.size(); i += 3) {
    const float* z = &e.values[i];
    const double top = std::max({z[0], z[1], z[2]});
    double sum = 0;
    for (int c = 0; c < 3; ++c) sum += std::exp(z[c] - top);
    for (int c = 0; c < 3; ++c)
      ASSERT_NEAR(p.values[i + static_cast<std::size_t>(c)], std::exp(z[c] - top) / sum, 1e-6)
          << "paper " << i / 3;
  }
  r = run("embed " + m + " --layer 1 --type author --out " + authors.string());
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(read_npy_floats(authors).shape, "(7167, 16)");
  // Its usage errors name the flag in one line.
  for (const auto& [flags, says] : std::vector<std::pair<std::string, std::string>>{
           {" --layer 1 --type nobody", "--type nobody: the model's node types are paper, author"},
           {" --layer 2 --type author", "computes the target type 'paper' only"},
           {" --layer 3", "--layer 3: the model has 2 layers"},
           {"", "--layer: required"},
           {" --layer 1 --step 2", "--step"},
           {" --layer 1 --features degree", "--features"}}) {
    SCOPED_TRACE(flags);
    r = run("embed " + m + flags + " --out x.npy");
    EXPECT_EQ(r.code, 2) << r.err;
    EXPECT_EQ(r.err.find('\n'), r.err.size() - 1) << r.err;
    EXPECT_NE(r.err.find(says), std::string::npos) << r.err;
  }
  EXPECT_FALSE(fs::exists(m_temp.path() / "x.npy"));
  // A dataset without the model's split is refused in one line.
  r = run("predict --model " + model.string() + " --dataset " + m_data.string() + " --out p.npy");
  EXPECT_EQ(r.code, 1) << r.err;
  EXPECT_EQ(r.err.find('\n'), r.err.size() - 1) << r.err;
}

// Prometheus metrics of a heterogeneous run: promtool accepts the file, which holds the epochs,
// the loss and the run's predicted epoch time and peak memory (halo plan's) beside the measured.
TEST_F(HeteroCli, WritesPrometheusMetrics) {
  const fs::path prom = m_temp.path() / "m.prom";
  const Outcome r = run("train --dataset " + m_data.string() +
                        " --split 4 --hidden 8 --epochs 3 --metrics-file " + prom.string());
  ASSERT_EQ(r.code, 0) << r.err;
  const std::string text = halo::testing::read_file(prom);
  EXPECT_NE(text.find("halo_epoch{rank=\"0\"} 3"), std::string::npos) << text;
  EXPECT_NE(text.find("halo_loss"), std::string::npos) << text;
  EXPECT_NE(text.find("halo_predicted_epoch_seconds{rank=\"0\"}"), std::string::npos) << text;
  EXPECT_NE(text.find("halo_predicted_peak_host_bytes{rank=\"0\"}"), std::string::npos) << text;
  const Outcome check =
      halo::testing::run_command("promtool check metrics < " + prom.string(), m_temp.path());
  if (check.code == 127) GTEST_SKIP() << "promtool is not installed";
  EXPECT_EQ(check.code, 0) << check.out << check.err;
}

TEST_F(HeteroCli, MalformedFileNamesFileAndLine) {
  std::ofstream(m_data / "edges_sells.tsv", std::ios::trunc) << "0\t1\n1\tx\n";
  const Outcome r = run("train --epochs 2 --dataset " + m_data.string());
  EXPECT_EQ(r.code, 1);
  EXPECT_NE(r.err.find("edges_sells.tsv:2"), std::string::npos) << r.err;
  EXPECT_EQ(r.err.find('\n'), r.err.size() - 1) << "one line: " << r.err;
}

}  // namespace
