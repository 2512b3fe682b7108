// `mpiexec -n P halo train --partitions DIR` as a user runs it: results on rank 0 only, the JSON
// keys of a distributed run, and a failing rank that ends the whole job quickly with its message.

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>
#include <string>
#include <thread>
#include <vector>

#include <halo/datasets/readers/numpy.hpp>
#include <halo/nn/model_file.hpp>

#include "support/hetero_fixture.hpp"
#include "support/testing.hpp"

namespace {

namespace fs = std::filesystem;

using Outcome = halo::testing::CommandOutcome;

class DistributedTrainCli : public ::testing::Test {
 protected:
  void SetUp() override {
    const Outcome r =
        halo(" partition --dataset " + cora() + " --parts 2 --out " + parts().string());
    ASSERT_EQ(r.code, 0) << r.err;
  }
  Outcome halo(const std::string& args) const {
    return halo::testing::run_command(std::string(HALO_TEST_BINARY) + args, m_dir);
  }
  // ASan's leak check is off: MPICH leaves a small allocation it cannot attribute (see
  // tests/runtime/CMakeLists.txt).
  Outcome mpiexec(int ranks, const std::string& args) const {
    return halo::testing::run_command("env OMP_NUM_THREADS=1 ASAN_OPTIONS=detect_leaks=0 " +
                                          std::string(HALO_TEST_MPIEXEC) + " -n " +
                                          std::to_string(ranks) + " " + HALO_TEST_BINARY + args,
                                      m_dir);
  }
  static std::string cora() {
    return (halo::testing::datasets_dir() / "planetoid" / "cora").string();
  }
  fs::path parts() const { return m_dir / "parts"; }
  const halo::testing::TempDir m_temp;
  const fs::path m_dir = m_temp.path();
};

// 1 to K ranks of a K-part partition: one process without mpiexec holds every part and trains
// exactly what `--dataset` trains; a heterogeneous partition on fewer ranks than parts stops
// with one line (exit 1).
TEST_F(DistributedTrainCli, OneToKRanksOfAPartition) {
  const fs::path one = m_dir / "one.json", whole = m_dir / "whole.json";
  const fs::path model = m_dir / "one.halo", predicted = m_dir / "p.json";
  Outcome r = halo(" train --partitions " + parts().string() + " --epochs 3 --threads 1 --json " +
                   one.string() + " --save-model " + model.string());
  ASSERT_EQ(r.code, 0) << r.err;
  // predict, like train, takes the partition in one process.
  r = halo(" predict --model " + model.string() + " --partitions " + parts().string() +
           " --split test --out " + (m_dir / "p.npy").string() + " --json " + predicted.string());
  ASSERT_EQ(r.code, 0) << r.err;
  r = halo(" train --dataset " + cora() + " --epochs 3 --threads 1 --json " + whole.string());
  ASSERT_EQ(r.code, 0) << r.err;
  const auto a = nlohmann::json::parse(halo::testing::read_file(one));
  const auto b = nlohmann::json::parse(halo::testing::read_file(whole));
  EXPECT_EQ(a["world_size"], 1);
  EXPECT_EQ(a["final_train_loss"], b["final_train_loss"]);
  EXPECT_EQ(a["test_accuracy"], b["test_accuracy"]);
  EXPECT_EQ(nlohmann::json::parse(halo::testing::read_file(predicted))["accuracy"],
            a["test_accuracy"]);

  const fs::path data = m_dir / "typed", hparts = m_dir / "hparts";
  fs::create_directories(data);
  halo::testing::write_hetero_fixture(data);
  r = halo(" partition --dataset " + data.string() + " --parts 2 --out " + hparts.string());
  ASSERT_EQ(r.code, 0) << r.err;
  r = halo(" train --partitions " + hparts.string() + " --model rgcn --epochs 1");
  EXPECT_EQ(r.code, 1);
  EXPECT_NE(r.err.find("a heterogeneous partition trains on one rank per part"), std::string::npos)
      << r.err;
}

// A heterogeneous partition trains in mini-batches across ranks (the refusal is gone): one
// JSON from rank 0, its mode and ranks; each rank's live metrics carry halo plan's prediction.
TEST_F(DistributedTrainCli, HeteroPartitionTrainsInMiniBatches) {
  const fs::path data = m_dir / "typed", hparts = m_dir / "hparts", json = m_dir / "h.json";
  fs::create_directories(data);
  halo::testing::write_hetero_fixture(data);
  Outcome r = halo(" partition --dataset " + data.string() + " --parts 2 --out " + hparts.string());
  ASSERT_EQ(r.code, 0) << r.err;
  r = mpiexec(2, " train --partitions " + hparts.string() +
                     " --model rgcn --mode mini-batch --fanouts 2,2 --batch-size 4 --epochs 2"
                     " --featureless zero --hidden 8 --json " +
                     json.string() + " --metrics-file " + (m_dir / "h.prom").string());
  ASSERT_EQ(r.code, 0) << r.err;
  const auto j = nlohmann::json::parse(halo::testing::read_file(json));
  EXPECT_EQ(j["mode"], "mini-batch");
  EXPECT_EQ(j["world_size"], 2);
  EXPECT_TRUE(std::isfinite(j["final_train_loss"].get<double>()));
  for (const char* rank : {"0", "1"}) {
    const std::string text =
        halo::testing::read_file(m_dir / ("h-rank" + std::string(rank) + ".prom"));
    EXPECT_NE(text.find("halo_predicted_peak_host_bytes{rank=\"" + std::string(rank) + "\"}"),
              std::string::npos)
        << text;
  }
}

// A heterogeneous model trained across the ranks of a partition (learnable embeddings of the
// featureless types) is applied across them again: `halo predict --partitions` gives the trained
// run's scores, and its probabilities and `halo embed`'s rows (every node of the type in id order,
// from rank 0) match the one process's on the typed directory (to rounding: the aggregation's
// order differs).
TEST_F(DistributedTrainCli, HeteroModelPredictsAndEmbedsAcrossRanks) {
  const fs::path data = m_dir / "typed", hparts = m_dir / "hparts", model = m_dir / "h.halo";
  fs::create_directories(data);
  halo::testing::write_hetero_fixture(data);
  Outcome r = halo(" partition --dataset " + data.string() + " --split 4 --parts 2 --out " +
                   hparts.string());
  ASSERT_EQ(r.code, 0) << r.err;
  const fs::path trained = m_dir / "t.json", one = m_dir / "p1.json", two = m_dir / "p2.json";
  r = mpiexec(2, " train --partitions " + hparts.string() +
                     " --model rgcn --hidden 8 --epochs 4 --featureless embedding --json " +
                     trained.string() + " --save-model " + model.string());
  ASSERT_EQ(r.code, 0) << r.err;
  const std::string m = " --model " + model.string();
  r = halo(" predict" + m + " --dataset " + data.string() + " --split all --out " +
           (m_dir / "p1.npy").string() + " --json " + one.string());
  ASSERT_EQ(r.code, 0) << r.err;
  r = mpiexec(2, " predict" + m + " --partitions " + hparts.string() + " --split all --out " +
                     (m_dir / "p2.npy").string() + " --json " + two.string());
  ASSERT_EQ(r.code, 0) << r.err;
  const auto t = nlohmann::json::parse(halo::testing::read_file(trained));
  const auto a = nlohmann::json::parse(halo::testing::read_file(one));
  const auto b = nlohmann::json::parse(halo::testing::read_file(two));
  EXPECT_EQ(b.at("world_size"), 2);
  for (const char* key : {"test_accuracy", "test_macro_f1", "val_accuracy", "val_macro_f1"}) {
    EXPECT_EQ(b.at(key), t.at(key)) << key;
    EXPECT_NEAR(a.at(key).get<double>(), t.at(key).get<double>(), 1e-9) << key;
  }
  EXPECT_EQ(b.at("num_nodes"), a.at("num_nodes"));
  const auto close = [](const fs::path& x, const fs::path& y) {
    const halo::datasets::NpyArray u = halo::datasets::read_npy(x), v = halo::datasets::read_npy(y);
    ASSERT_EQ(u.shape, v.shape);
    ASSERT_EQ(u.bytes.size(), v.bytes.size());
    std::vector<float> p(u.bytes.size() / 4), q(p.size());
    std::memcpy(p.data(), u.bytes.data(), u.bytes.size());
    std::memcpy(q.data(), v.bytes.data(), v.bytes.size());
    for (std::size_t i = 0; i < p.size(); ++i) ASSERT_NEAR(p[i], q[i], 1e-4) << "entry " << i;
  };
  close(m_dir / "p1.npy", m_dir / "p2.npy");
  for (const char* type : {"item", "user"}) {
    SCOPED_TRACE(type);
    const std::string e = " embed" + m + " --layer 1 --type " + type;
    r = halo(e + " --dataset " + data.string() + " --out " + (m_dir / "e1.npy").string());
    ASSERT_EQ(r.code, 0) << r.err;
    r = mpiexec(2,
                e + " --partitions " + hparts.string() + " --out " + (m_dir / "e2.npy").string());
    ASSERT_EQ(r.code, 0) << r.err;
    close(m_dir / "e1.npy", m_dir / "e2.npy");
  }
  // --dataset with --partitions is a usage error.
  r = mpiexec(2, " predict" + m + " --partitions " + hparts.string() + " --dataset " +
                     data.string() + " --out x.npy");
  EXPECT_EQ(r.code, 2) << r.err;
}

TEST_F(DistributedTrainCli, TwoRanksWriteOneResult) {
  const fs::path json = m_dir / "r.json";
  const Outcome r = mpiexec(
      2, " train --partitions " + parts().string() + " --epochs 30 --json " + json.string());
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(r.err.find("2 ranks"), r.err.rfind("2 ranks")) << "header printed once: " << r.err;
  const auto j = nlohmann::json::parse(halo::testing::read_file(json));
  EXPECT_EQ(j["world_size"], 2);
  EXPECT_EQ(j["overlap"], true);
  EXPECT_EQ(j["dataset"], "cora");
  EXPECT_GT(j["exchange_bytes_per_epoch"].get<std::int64_t>(), 0);
  for (const char* key : {"exchange_time_s", "exchange_hidden_fraction", "allreduce_time_s"})
    EXPECT_GE(j[key].get<double>(), 0.0) << key;
  EXPECT_GT(j["exchange_window_s"].get<double>(), 0.0) << "overlap on: owned products ran";
  EXPECT_GT(j["test_accuracy"].get<double>(), 0.5);
}

std::vector<float> floats_of(const std::string& bytes) {
  std::vector<float> v(bytes.size() / sizeof(float));
  std::memcpy(v.data(), bytes.data(), bytes.size());
  return v;
}

// The ranks hold the same parameters and rank 0 writes them: the model a 2-rank run saves is
// the one-process model (up to the order of floating-point sums), and `halo predict` under
// mpiexec on the partition reproduces the run's test accuracy.
TEST_F(DistributedTrainCli, TwoRankModelEqualsTheOneProcessModel) {
  const fs::path one = m_dir / "one.halo", two = m_dir / "two.halo", json = m_dir / "two.json";
  Outcome r =
      halo(" train --dataset " + cora() + " --epochs 20 --threads 1 --save-model " + one.string());
  ASSERT_EQ(r.code, 0) << r.err;
  r = mpiexec(2, " train --partitions " + parts().string() + " --epochs 20 --save-model " +
                     two.string() + " --json " + json.string());
  ASSERT_EQ(r.code, 0) << r.err;
  const halo::nn::ModelFile a = halo::nn::read_model_file(one);
  const halo::nn::ModelFile b = halo::nn::read_model_file(two);
  EXPECT_EQ(nlohmann::json::parse(b.info.training)["world_size"], 2);
  EXPECT_EQ(nlohmann::json::parse(a.info.training)["world_size"], 1);
  ASSERT_EQ(a.arrays.size(), b.arrays.size());
  double max_diff = 0;
  for (std::size_t i = 0; i < a.arrays.size(); ++i) {
    EXPECT_EQ(a.arrays[i].name, b.arrays[i].name);
    const auto va = floats_of(a.arrays[i].bytes), vb = floats_of(b.arrays[i].bytes);
    ASSERT_EQ(va.size(), vb.size()) << a.arrays[i].name;
    for (std::size_t k = 0; k < va.size(); ++k)
      max_diff = std::max(max_diff, static_cast<double>(std::abs(va[k] - vb[k])));
  }
  EXPECT_LE(max_diff, 1e-6);
  const fs::path predicted = m_dir / "predict.json";
  r = mpiexec(2, " predict --partitions " + parts().string() + " --model " + two.string() +
                     " --out " + (m_dir / "p.npy").string() + " --json " + predicted.string());
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(r.out.find("accuracy"), r.out.rfind("accuracy")) << "rank 0 prints: " << r.out;
  const auto trained = nlohmann::json::parse(halo::testing::read_file(json));
  EXPECT_EQ(nlohmann::json::parse(halo::testing::read_file(predicted))["accuracy"],
            trained["test_accuracy"]);
  EXPECT_EQ(nlohmann::json::parse(halo::testing::read_file(predicted))["world_size"], 2);
  // Sampled neighbourhoods across the ranks, every neighbour taken: the same accuracy.
  r = mpiexec(2, " predict --partitions " + parts().string() + " --model " + two.string() +
                     " --fanouts -1,-1 --batch-size 256 --out " + (m_dir / "s.npy").string() +
                     " --json " + predicted.string());
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(nlohmann::json::parse(halo::testing::read_file(predicted))["accuracy"],
            trained["test_accuracy"]);
  // Embeddings across the ranks, gathered in node id order: those of one process.
  const fs::path e1 = m_dir / "e1.npy", e2 = m_dir / "e2.npy";
  r = halo(" embed --dataset " + cora() + " --model " + two.string() + " --layer 1 --out " +
           e1.string());
  ASSERT_EQ(r.code, 0) << r.err;
  r = mpiexec(2, " embed --partitions " + parts().string() + " --model " + two.string() +
                     " --layer 1 --out " + e2.string());
  ASSERT_EQ(r.code, 0) << r.err;
  const halo::datasets::NpyArray a1 = halo::datasets::read_npy(e1);
  const halo::datasets::NpyArray a2 = halo::datasets::read_npy(e2);
  ASSERT_EQ(a1.shape, (std::vector<std::int64_t>{2708, 16}));
  ASSERT_EQ(a2.shape, a1.shape);
  const auto v1 = floats_of(a1.bytes), v2 = floats_of(a2.bytes);
  for (std::size_t i = 0; i < v1.size(); ++i) ASSERT_NEAR(v1[i], v2[i], 1e-5) << i;
}

// More ranks than parts: one line naming the counts, exit 1 (fewer ranks train:
// OneToKRanksOfAPartition).
TEST_F(DistributedTrainCli, WrongRankCountIsNamed) {
  const Outcome r = mpiexec(3, " train --partitions " + parts().string() + " --epochs 1");
  EXPECT_EQ(r.code, 1);
  EXPECT_NE(r.err.find("the partition has 2 parts but 3 ranks run; start 1 to 2 ranks"),
            std::string::npos)
      << r.err;
}

// Defect: `mpiexec -n 2 halo train --dataset cora` ran two independent copies that wrote the
// same JSON file. Several ranks without --partitions are a usage error, on every rank.
TEST_F(DistributedTrainCli, SeveralRanksWithoutPartitionsAreRefused) {
  const fs::path json = m_dir / "r.json";
  const Outcome r =
      mpiexec(2, " train --dataset " + cora() + " --epochs 2 --json " + json.string());
  EXPECT_EQ(r.code, 2) << r.err;
  EXPECT_NE(r.err.find("--partitions"), std::string::npos) << r.err;
  EXPECT_FALSE(fs::exists(json));
}

// Link prediction across ranks (--task link --partitions SERIES): the series' owners, one JSON
// from rank 0 with the bytes per snapshot, the loss of one process; refusals named.
TEST_F(DistributedTrainCli, LinkPredictionOnASnapshotSeries) {
  const fs::path data = m_dir / "hubs", series = m_dir / "series";
  fs::create_directories(data);
  {
    std::ofstream f(data / "events.tsv");  // 14 steps: leaves message hubs, some answer
    for (int t = 0; t < 14; ++t)
      for (int u = 0; u < 8; ++u) {
        f << 10 + 2 * u << ' ' << 1 + 2 * ((u + t / 5) % 3) << ' ' << t * 10 << '\n';
        if (u % 3 == 0) f << 1 + 2 * (u % 3) << ' ' << 10 + 2 * u << ' ' << t * 10 + 1 << '\n';
      }
  }
  Outcome r = halo(" partition --dataset " + data.string() +
                   " --snapshots 14 --parts 2 --method migration --out " + series.string());
  ASSERT_EQ(r.code, 0) << r.err;
  const std::string args = " train --dataset " + data.string() +
                           " --task link --snapshots 14 --window 3 --epochs 3 --hidden 4 "
                           "--negatives 2 --lr 0.01 --threads 1 --json ";
  const fs::path one = m_dir / "one.json", two = m_dir / "two.json";
  r = halo(args + one.string());
  ASSERT_EQ(r.code, 0) << r.err;
  r = mpiexec(2, args + two.string() + " --partitions " + series.string());
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(std::count(r.out.begin(), r.out.end(), '\n'), 1) << r.out;  // rank 0's summary
  const nlohmann::json a = nlohmann::json::parse(halo::testing::read_file(one));
  const nlohmann::json b = nlohmann::json::parse(halo::testing::read_file(two));
  EXPECT_EQ(b.at("world_size"), 2);
  const double la = a.at("final_train_loss"), lb = b.at("final_train_loss");
  EXPECT_NEAR(lb, la, 1e-4 * la);
  ASSERT_EQ(b.at("snapshot_bytes").size(), 14u);
  EXPECT_GT(b.at("snapshot_bytes_total").get<std::int64_t>(), 0);
  EXPECT_LE(b.at("snapshot_bytes_total").get<std::int64_t>(),
            b.at("snapshot_resend_bytes_total").get<std::int64_t>());
  EXPECT_GT(b.at("exchange_bytes_per_epoch").get<std::int64_t>(), 0);
  EXPECT_GT(b.at("embedding_bytes_per_epoch").get<std::int64_t>(), 0);
  // Its saved model applied over the series' two ranks gives the training run's scores, and the
  // one process's; its embeddings are the one process's, byte for byte.
  const fs::path model = m_dir / "two.halo", p1 = m_dir / "p1.json", p2 = m_dir / "p2.json";
  r = mpiexec(2, args + two.string() + " --partitions " + series.string() + " --save-model " +
                     model.string());
  ASSERT_EQ(r.code, 0) << r.err;
  const std::string use = " --model " + model.string() + " --dataset " + data.string();
  r = halo(" predict" + use + " --out " + (m_dir / "s1.npy").string() + " --json " + p1.string());
  ASSERT_EQ(r.code, 0) << r.err;
  r = mpiexec(2, " predict" + use + " --partitions " + series.string() + " --out " +
                     (m_dir / "s2.npy").string() + " --json " + p2.string());
  ASSERT_EQ(r.code, 0) << r.err;
  const nlohmann::json trained = nlohmann::json::parse(halo::testing::read_file(two));
  const nlohmann::json q1 = nlohmann::json::parse(halo::testing::read_file(p1));
  const nlohmann::json q2 = nlohmann::json::parse(halo::testing::read_file(p2));
  EXPECT_EQ(q2.at("world_size"), 2);
  for (const char* key : {"test_mrr", "test_map", "test_auc", "val_mrr", "val_map"}) {
    EXPECT_EQ(q2.at(key), trained.at(key)) << key;
    EXPECT_EQ(q1.at(key), trained.at(key)) << key;
  }
  EXPECT_EQ(halo::testing::read_file(m_dir / "s1.npy"), halo::testing::read_file(m_dir / "s2.npy"));
  r = halo(" embed" + use + " --step 6 --out " + (m_dir / "e1.npy").string());
  ASSERT_EQ(r.code, 0) << r.err;
  r = mpiexec(2, " embed" + use + " --step 6 --partitions " + series.string() + " --out " +
                     (m_dir / "e2.npy").string());
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(halo::testing::read_file(m_dir / "e1.npy"), halo::testing::read_file(m_dir / "e2.npy"));
  // halo plan plans the series' two ranks (each its rows of every snapshot), and the run's
  // live metrics carry its prediction.
  const fs::path plan = m_dir / "plan.json", metrics = m_dir / "m.prom";
  const std::string link = " --dataset " + data.string() +
                           " --task link --snapshots 14 --window 3 --epochs 3 --hidden 4 "
                           "--negatives 2 --threads 1 --partitions " +
                           series.string();
  r = halo(" plan" + link + " --output " + plan.string());
  ASSERT_EQ(r.code, 0) << r.err;
  const nlohmann::json pj = nlohmann::json::parse(halo::testing::read_file(plan));
  EXPECT_EQ(pj.at("ranks"), 2);
  ASSERT_EQ(pj.at("per_rank").size(), 2u);
  for (const auto& rank : pj.at("per_rank")) {
    EXPECT_GT(rank.at("comm_bytes_per_epoch").at("halo_exchange").get<std::int64_t>(), 0);
    EXPECT_GT(rank.at("host_bytes").at("encoder").get<std::int64_t>(), 0);
  }
  r = halo(" plan" + link + " --model gcrn --output " + plan.string());
  EXPECT_EQ(r.code, 2) << r.err;
  EXPECT_NE(r.err.find("GCRN"), std::string::npos) << r.err;
  r = mpiexec(2, " train" + link + " --metrics-file " + metrics.string());
  ASSERT_EQ(r.code, 0) << r.err;
  for (const char* rank : {"-rank0", "-rank1"}) {
    const std::string text = halo::testing::read_file(m_dir / ("m" + std::string(rank) + ".prom"));
    EXPECT_NE(text.find("halo_predicted_epoch_seconds{rank="), std::string::npos) << text;
    EXPECT_NE(text.find("halo_predicted_peak_host_bytes{rank="), std::string::npos) << text;
  }
  // GCRN's state cannot follow migrating rows; a series of 2 parts needs 2 ranks; several
  // ranks need the series.
  r = mpiexec(2, args + two.string() + " --partitions " + series.string() + " --model gcrn");
  EXPECT_EQ(r.code, 2) << r.err;
  EXPECT_NE(r.err.find("GCRN"), std::string::npos) << r.err;
  r = halo(args + two.string() + " --partitions " + series.string());
  EXPECT_EQ(r.code, 1) << r.err;
  EXPECT_NE(r.err.find("meta.json"), std::string::npos) << r.err;
  r = mpiexec(2, args + two.string());
  EXPECT_EQ(r.code, 2) << r.err;
  EXPECT_NE(r.err.find("--partitions"), std::string::npos) << r.err;
}

// Mini-batch across ranks reports its traffic: sampling, feature rows, the cache.
TEST_F(DistributedTrainCli, MiniBatchReportsItsTraffic) {
  const fs::path json = m_dir / "mb.json";
  const Outcome r = mpiexec(2, " train --partitions " + parts().string() +
                                   " --model sage --mode mini-batch --batch-size 32 --fanouts 5,5"
                                   " --epochs 2 --cache-mb 0.2 --json " +
                                   json.string());
  ASSERT_EQ(r.code, 0) << r.err;
  const auto j = nlohmann::json::parse(halo::testing::read_file(json));
  EXPECT_EQ(j["world_size"], 2);
  EXPECT_GT(j["sampling_bytes_per_epoch"].get<std::int64_t>(), 0);
  EXPECT_GT(j["feature_bytes_per_epoch"].get<std::int64_t>(), 0);
  EXPECT_GT(j["cache_hit_rate"].get<double>(), 0.0);
  EXPECT_LE(j["cache_hit_rate"].get<double>(), 1.0);
  for (const char* key : {"fetch_time_s", "batch_wait_s", "allreduce_time_s"})
    EXPECT_GE(j[key].get<double>(), 0.0) << key;
  EXPECT_FALSE(j.contains("exchange_hidden_fraction")) << "a full-graph key";
}

// A partition of a store larger than each rank's --memory-budget (the rows 4x and more of it):
// every rank reads its rows from the store's features.bin and serves those others ask for from
// it; the results equal the run with the rows in memory, digit for digit. A full-graph pass
// over it is one usage line.
TEST_F(DistributedTrainCli, RanksReadTheirRowsFromTheStore) {
  const fs::path store = m_dir / "rmat", sparts = m_dir / "sparts";
  ASSERT_EQ(halo(" datasets prepare --dataset rmat --rmat-scale 11 --rmat-features 256 --out " +
                 store.string())
                .code,
            0);
  Outcome r =
      halo(" partition --dataset " + store.string() + " --parts 2 --out " + sparts.string());
  ASSERT_EQ(r.code, 0) << r.err;
  const std::string args = " train --partitions " + sparts.string() +
                           " --model sage --mode mini-batch --fanouts 5,5 --eval-fanouts 5,5"
                           " --batch-size 64 --epochs 2 --cache-mb 0.05 --json ";
  r = mpiexec(2, args + (m_dir / "memory.json").string());
  ASSERT_EQ(r.code, 0) << r.err;
  // 2048 x 256 float32 rows: 2 MiB, 1 MiB a part (and its graph file): 4x the budget.
  r = mpiexec(2, args + (m_dir / "file.json").string() + " --memory-budget 256KiB");
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.out.find("rows read from the store's file"), std::string::npos) << r.out;
  const auto memory = nlohmann::json::parse(halo::testing::read_file(m_dir / "memory.json"));
  const auto file = nlohmann::json::parse(halo::testing::read_file(m_dir / "file.json"));
  for (const char* key : {"final_train_loss", "val_accuracy", "test_accuracy", "best_epoch",
                          "sampled_edges_per_epoch", "feature_bytes_per_epoch"})
    EXPECT_EQ(file[key], memory[key]) << key;
  EXPECT_EQ(memory["disk_bytes_per_epoch"], 0);
  EXPECT_GT(file["disk_bytes_per_epoch"].get<std::int64_t>(), 0);
  EXPECT_GT(file["disk_cache_hit_rate"].get<double>(), 0.0);
  EXPECT_LT(file["memory"]["features"].get<std::int64_t>(),
            memory["memory"]["features"].get<std::int64_t>());
  r = mpiexec(2, " train --partitions " + sparts.string() +
                     " --epochs 1 --memory-budget 256KiB --json " + (m_dir / "full.json").string());
  EXPECT_EQ(r.code, 2) << r.err;
  EXPECT_NE(r.err.find("needs them in memory"), std::string::npos) << r.err;
  EXPECT_FALSE(fs::exists(m_dir / "full.json"));
}

TEST_F(DistributedTrainCli, NoOverlapNeedsPartitions) {
  EXPECT_EQ(halo(" train --no-overlap --epochs 1").code, 2);
  EXPECT_EQ(halo(" train --partitions " + parts().string() + " --dataset cora").code, 2);
}

// The failure case: one rank cannot read its part; every rank exits non-zero within
// 30 seconds and the failing rank's message is shown.
TEST_F(DistributedTrainCli, OneFailingRankEndsEveryRank) {
  for (const char* how : {"missing", "corrupt"}) {
    SCOPED_TRACE(how);
    const fs::path broken = m_dir / (std::string("broken-") + how);
    fs::copy(parts(), broken);
    if (std::string(how) == "missing") {
      fs::remove(broken / "part-1.bin");
    } else {
      std::fstream f(broken / "part-1.bin", std::ios::in | std::ios::out | std::ios::binary);
      f.seekp(200);
      f.write("corrupt!", 8);
    }
    const auto start = std::chrono::steady_clock::now();
    const Outcome r = mpiexec(2, " train --partitions " + broken.string() + " --epochs 1000");
    const double seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    EXPECT_NE(r.code, 0);
    EXPECT_LT(seconds, 30.0);
    EXPECT_NE(r.err.find("halo: error: [rank 1] "), std::string::npos) << r.err;
    EXPECT_NE(r.err.find("part-1.bin"), std::string::npos) << r.err;
  }
}

}  // namespace

namespace {

/// The pid of rank `rank` of the running `halo` whose command line holds `marker` (its
/// launcher's PMI_RANK in its environment), or 0 when there is none yet.
int rank_pid(const std::string& marker, int rank) {
  for (const auto& e : fs::directory_iterator("/proc")) {
    const std::string name = e.path().filename().string();
    if (name.empty() || name.find_first_not_of("0123456789") != std::string::npos) continue;
    const std::string cmd = halo::testing::read_file(e.path() / "cmdline");
    if (cmd.find(marker) == std::string::npos || cmd.find("train") == std::string::npos) continue;
    std::string env = halo::testing::read_file(e.path() / "environ");
    std::replace(env.begin(), env.end(), '\0', '\n');
    if (env.find("\nPMI_RANK=" + std::to_string(rank) + "\n") != std::string::npos)
      return std::stoi(name);
  }
  return 0;
}

}  // namespace

// The stall watchdog: a rank stopped (SIGSTOP) ends the job within --stall-timeout + 10 s with
// one line naming it, exit code 1, instead of the others spinning on a full core forever;
// and a rank that is only slow (a 12 s epoch against a 4 s timeout) does not trip it.
TEST_F(DistributedTrainCli, StallWatchdogNamesAStoppedRankAndSparesASlowOne) {
  const std::string marker = (m_dir / "stall-parts").string();
  fs::copy(parts(), marker, fs::copy_options::recursive);
  const std::string run = "env OMP_NUM_THREADS=1 ASAN_OPTIONS=detect_leaks=0 " +
                          std::string(HALO_TEST_MPIEXEC) + " -n 2 " + HALO_TEST_BINARY +
                          " train --partitions " + marker + " --stall-timeout 4 ";
  // Healthy but slow: rank 1 sleeps 12 s after epoch 2; the run finishes normally.
  Outcome r =
      halo::testing::run_command("HALO_TEST_SLOW_EPOCH=1:2:12 " + run + "--epochs 4", m_dir);
  EXPECT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(r.err.find("stall"), std::string::npos) << r.err;

  // Stopped: SIGSTOP to rank 1 once it trains.
  const fs::path err = m_dir / "stall.err";
  const auto start = std::chrono::steady_clock::now();
  const Outcome launched = halo::testing::run_command(
      "bash -c '" + run + "--epochs 100000 >/dev/null 2>" + err.string() +
          " & job=$!; for i in $(seq 600); do grep -q \"epoch *1/\" " + err.string() +
          " 2>/dev/null && break; sleep 0.1; done; echo started; "
          "pid=$(for p in /proc/[0-9]*; do tr \"\\0\" \"\\n\" < $p/environ 2>/dev/null | "
          "grep -qx PMI_RANK=1 && grep -q stall-parts $p/cmdline 2>/dev/null && "
          "basename $p; done | head -1); kill -STOP $pid; t0=$EPOCHREALTIME; wait $job; "
          "status=$?; t1=$EPOCHREALTIME; echo status $status; "
          "echo stopped_for_ms $(( (${t1/./} - ${t0/./}) / 1000 )); "
          "kill -CONT $pid 2>/dev/null; true'",
      m_dir);
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  const std::string log = halo::testing::read_file(err);
  EXPECT_NE(launched.out.find("status 1\n"), std::string::npos) << launched.out << log;
  EXPECT_LT(seconds, 4 + 10 + 30) << "from launch, start-up included";
  // From the SIGSTOP to the job's end: within the timeout plus 10 s.
  const std::size_t at = launched.out.find("stopped_for_ms ");
  ASSERT_NE(at, std::string::npos) << launched.out;
  const long stopped_ms = std::stol(launched.out.substr(at + 15));
  EXPECT_LT(stopped_ms, (4 + 10) * 1000) << launched.out;
  std::fprintf(stderr, "stall: the job ended %ld ms after the SIGSTOP (--stall-timeout 4)\n",
               stopped_ms);
  EXPECT_NE(log.find("halo: error: [rank 0] stall: rank 1 did not arrive"), std::string::npos)
      << log;
  // The launcher kills the stopped rank as it tears the job down (allow it a few seconds).
  for (int i = 0; i < 100 && rank_pid(marker, 1) != 0; ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  EXPECT_EQ(rank_pid(marker, 1), 0) << "the stopped rank was ended too";
}

// Preemption under mpiexec: SIGUSR1 or SIGTERM to the launcher (as Slurm's scancel --signal
// and Kubernetes send them) checkpoints and ends the job with exit status 75, ten times in a
// row, through tools/launch/halo-mpiexec (MPICH's mpiexec alone answered 0 in some tries of
// either signal, though the ranks had exited 75: docs/checkpoints.md). Ctrl-C without
// checkpoints: 130, not 0.
TEST_F(DistributedTrainCli, SignalledLauncherExitsSeventyFiveEveryTime) {
  const std::string wrapper =
      (halo::testing::source_dir() / "tools" / "launch" / "halo-mpiexec").string();
  const fs::path err = m_dir / "sig.err";
  // set -m: a background job of a script would ignore SIGINT otherwise.
  const auto signalled = [&](const std::string& launcher, const std::string& sig,
                             const std::string& flags) {
    const Outcome r = halo::testing::run_command(
        "bash -c 'set -m; env OMP_NUM_THREADS=1 ASAN_OPTIONS=detect_leaks=0 HALO_MPIEXEC=" +
            std::string(HALO_TEST_MPIEXEC) + " " + launcher + " -n 2 " + HALO_TEST_BINARY +
            " train --partitions " + parts().string() + " --epochs 100000" + flags +
            " >/dev/null 2>" + err.string() +
            " & job=$!; for k in $(seq 600); do grep -q \"epoch *1/\" " + err.string() +
            " 2>/dev/null && break; sleep 0.1; done; kill -" + sig +
            " $job; wait $job; echo status $?'",
        m_dir);
    return r.out;
  };
  for (int i = 0; i < 10; ++i) {
    const std::string sig = i % 2 == 0 ? "USR1" : "TERM";
    const std::string out = signalled(
        wrapper, sig, " --checkpoint-dir " + (m_dir / ("ckpt-" + std::to_string(i))).string());
    EXPECT_NE(out.find("status 75\n"), std::string::npos)
        << "try " << i << " (SIG" << sig << "): " << out << halo::testing::read_file(err);
    EXPECT_NE(halo::testing::read_file(err).find("preempted after"), std::string::npos);
  }
  const std::string out = signalled(wrapper, "INT", " --json " + (m_dir / "r.json").string());
  EXPECT_NE(out.find("status 130\n"), std::string::npos) << out << halo::testing::read_file(err);
  EXPECT_FALSE(fs::exists(m_dir / "r.json"));
}
