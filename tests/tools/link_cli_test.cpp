// `halo train --task link` as a user runs it: usage errors exit 2 with one line, and a run on a
// small temporal fixture writes the link-prediction keys of --json.
#include <algorithm>
#include <filesystem>
#include <fstream>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>
#include <string>
#include <utility>
#include <vector>

#include "support/testing.hpp"

namespace {

namespace fs = std::filesystem;
using Outcome = halo::testing::CommandOutcome;

class LinkCli : public ::testing::Test {
 protected:
  Outcome run(const std::string& args) const {
    return halo::testing::run_command(std::string(HALO_TEST_BINARY) + " " + args, m_dir);
  }
  /// A temporal directory: 14 steps of six leaves messaging two hubs (non-contiguous ids).
  std::string fixture() const {
    const fs::path d = m_dir / "hubs";
    fs::create_directories(d);
    std::ofstream f(d / "events.tsv");
    for (int t = 0; t < 14; ++t)
      for (int u = 0; u < 6; ++u)
        f << 10 + 2 * u << ' ' << 1 + 2 * (u % 2) << ' ' << t * 10 << '\n';
    return d.string();
  }
  const halo::testing::TempDir m_temp;
  const fs::path m_dir = m_temp.path();
};

TEST_F(LinkCli, BadFlagCombinationsExitTwoWithOneLine) {
  const std::string data = " --dataset " + fixture();
  for (const std::string& args :
       {"train --task link --model evolvegcn-o" + data,         // no snapshots
        "train --task link --model gcn --snapshots 14" + data,  // a static model
        "train --model evolvegcn-o" + data,                     // a temporal model, node task
        "train --window 3" + data,                              // a link flag, node task
        "train --task link --snapshots 14 --layers 3" + data,   // a static model's flag
        "train --task link --snapshots 14 --link-split 0.8,0.3" + data,  // no test steps
        "train --task link --snapshots 14 --mode mini-batch" + data,
        "train --task link --snapshots 14 --select-by auc" + data,  // not a selection metric
        "train --select-by mrr" + data,                             // a link flag, node task
        "train --columns src,dst,rating,t" + data,                  // a temporal flag, node task
        // Flag conflicts found before the data are read: a window of every snapshot, one
        // snapshot in all, an HGT whose heads do not divide its width.
        "train --task link --snapshots 14 --window 1000" + data,
        "train --task link --snapshots 1" + data, "train --model hgt --heads 3" + data}) {
    const Outcome r = run(args);
    EXPECT_EQ(r.code, 2) << args << "\n" << r.err;
    EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << args << "\n" << r.err;
    EXPECT_EQ(r.err.find("failed:"), std::string::npos) << "assertion text: " << r.err;
  }
}

// An event file with no event, or one, or all at one time: one line naming the file, exit 1
// (it used to end with "no training step has a pair to predict").
TEST_F(LinkCli, EventsAtOneTimeAreRefusedNamingTheFile) {
  for (const std::string& events :
       {std::string("# none\n"), std::string("1 2 100\n"), std::string("1 2 100\n3 4 100\n")}) {
    const fs::path d = m_dir / "few";
    fs::create_directories(d);
    std::ofstream(d / "events.tsv") << events;
    const Outcome r = run("train --task link --snapshots 10 --window 2 --dataset " + d.string());
    EXPECT_EQ(r.code, 1) << events << r.err;
    EXPECT_NE(r.err.find((d / "events.tsv").string() + ": "), std::string::npos) << r.err;
    EXPECT_NE(r.err.find("link prediction needs events at several times"), std::string::npos)
        << r.err;
    EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
  }
}

// An event file in CollegeMsg's layout with a rating after each event (`src dst t rating`)
// trains to exactly the result of the same events without it; the same file with the rating
// and time swapped (SNAP's signed order) is refused by name unless --columns says so.
TEST_F(LinkCli, FourColumnEventsTrainAsTheirThreeColumns) {
  std::ifstream in(halo::testing::datasets_dir() / "collegemsg" / "events.tsv");
  std::string three, four, swapped;
  // The first 3,000 events (a week and a half): enough for every check, quick under ASan.
  std::int64_t i = 0;
  for (std::string a, b, t; i < 3000 && in >> a >> b >> t; ++i) {
    const std::string r = std::to_string(static_cast<int>(i % 21) - 10);
    three += a + " " + b + " " + t + "\n";
    four += a + " " + b + " " + t + " " + r + "\n";
    swapped += a + " " + b + " " + r + " " + t + "\n";
  }
  const auto train = [&](const std::string& name, const std::string& events,
                         const std::string& flags) {
    fs::create_directories(m_dir / name);
    std::ofstream(m_dir / name / "events.tsv") << events;
    return run("train --task link --dataset " + (m_dir / name).string() +
               " --snapshots 12 --window 3 --epochs 2 --hidden 4 --negatives 5 --threads 1 "
               "--json " +
               (m_dir / (name + ".json")).string() + flags);
  };
  const auto result = [&](const std::string& name) {
    nlohmann::json j = nlohmann::json::parse(halo::testing::read_file(m_dir / (name + ".json")));
    return std::vector<double>{j.at("final_train_loss"), j.at("test_mrr"), j.at("test_map")};
  };
  Outcome r = train("three", three, "");
  ASSERT_EQ(r.code, 0) << r.err;
  r = train("four", four, "");
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(result("four"), result("three"));
  r = train("swapped", swapped, "");
  EXPECT_EQ(r.code, 1) << r.err;
  EXPECT_NE(r.err.find("events.tsv: the time column (field 3) holds only 21 distinct values"),
            std::string::npos)
      << r.err;
  EXPECT_FALSE(fs::exists(m_dir / "swapped.json"));
  r = train("named", swapped, " --columns src,dst,rating,t");
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(result("named"), result("three"));
}

TEST_F(LinkCli, TrainsOnATemporalFixtureAndWritesTheMetrics) {
  const fs::path json = m_dir / "r.json";
  const Outcome r = run("train --dataset " + fixture() +
                        " --task link --model gcrn --snapshots 14 --window 3 --epochs 2 --hidden 4 "
                        "--negatives 2 --threads 1 --profile --metrics-file " +
                        (m_dir / "m.prom").string() + " --json " + json.string());
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.out.find("profile (median epoch"), std::string::npos) << r.out;
  const std::string prom = halo::testing::read_file(m_dir / "m.prom");
  EXPECT_NE(prom.find("halo_epoch{rank=\"0\"} 2"), std::string::npos) << prom;
  // halo plan's prediction of this run beside the measured values.
  EXPECT_NE(prom.find("halo_predicted_peak_host_bytes{rank=\"0\"}"), std::string::npos) << prom;
  const nlohmann::json j = nlohmann::json::parse(halo::testing::read_file(json));
  for (const char* key :
       {"test_mrr", "test_map", "test_auc", "val_mrr", "val_map", "final_train_loss"})
    EXPECT_TRUE(j.at(key).is_number()) << key;
  for (const char* phase : {"sample_s", "forward_s", "loss_s", "backward_s", "optimizer_s"})
    EXPECT_GT(j.at("profile").at(phase).get<double>(), 0.0) << phase;
  EXPECT_EQ(j.at("select_by"), "map");  // EvolveGCN's UC Irvine target_measure
  ASSERT_EQ(j.at("history").size(), 2u);
  EXPECT_EQ(j.at("history")[1].at("epoch"), 2);
  EXPECT_TRUE(j.at("history")[1].at("val_map").is_number());
  EXPECT_EQ(j.at("model"), "gcrn");
  EXPECT_EQ(j.at("train_steps"), 10);  // round(0.7 * 14)
  EXPECT_EQ(j.at("test_steps"), 3);
  EXPECT_EQ(j.at("window_snapshots"), 1);  // each step's own events unless told otherwise
  EXPECT_GE(j.at("test_auc").get<double>(), 0.0);
  EXPECT_LE(j.at("test_auc").get<double>(), 1.0);
}

// halo plan --task link: the run's plan in one process from the snapshots the run cuts (the
// model's counts: tests/cluster/link_plan_test.cpp), as JSON and as an sbatch script asking the
// predicted memory; what it cannot plan is a usage error.
TEST_F(LinkCli, PlansARunInOneProcess) {
  const std::string base = "plan --task link --dataset " + fixture() +
                           " --snapshots 14 --window 3 --hidden 4 --negatives 2 --threads 1";
  const fs::path json = m_dir / "plan.json";
  const Outcome r = run(base + " --model gcrn --epochs 5 --output " + json.string());
  ASSERT_EQ(r.code, 0) << r.err;
  const nlohmann::json j = nlohmann::json::parse(halo::testing::read_file(json));
  EXPECT_EQ(j.at("model"), "gcrn");
  EXPECT_EQ(j.at("ranks"), 1);
  EXPECT_EQ(j.at("epochs"), 5);
  EXPECT_EQ(j.at("batches_per_epoch"), 7);  // training steps: 3 .. round(0.7 * 14) - 1
  EXPECT_GT(j.at("per_rank")[0].at("host_bytes").at("evaluation").get<double>(), 0);
  // --output - is standard output (no file named "-").
  const Outcome out = run(base + " --model gcrn --epochs 5 --output -");
  ASSERT_EQ(out.code, 0) << out.err;
  EXPECT_EQ(nlohmann::json::parse(out.out), j);
  EXPECT_FALSE(fs::exists(m_dir / "-"));
  EXPECT_GT(j.at("train_seconds").get<double>(), 0);
  const Outcome slurm = run(base + " --emit slurm --checkpoint-dir " + (m_dir / "ck").string());
  ASSERT_EQ(slurm.code, 0) << slurm.err;
  EXPECT_NE(slurm.out.find("#SBATCH --mem="), std::string::npos) << slurm.out;
  for (const std::string& bad : {base + " --parts 2", base + " --time-limit 5",
                                 base + " --device cuda", base + " --window 1000"}) {
    const Outcome b = run(bad);
    EXPECT_EQ(b.code, 2) << bad << "\n" << b.err;
    EXPECT_EQ(std::count(b.err.begin(), b.err.end(), '\n'), 1) << bad << "\n" << b.err;
  }
}

// --checkpoint-dir on the link task: 2 epochs, then resumed to 4, equal 4 uninterrupted epochs
// (the final loss and every metric of --json); a run of another window does not resume it.
TEST_F(LinkCli, CheckpointThenResumeEqualsTheUninterruptedRun) {
  const std::string base = "train --dataset " + fixture() +
                           " --task link --model evolvegcn-o --snapshots 14 --window 3 --hidden 4 "
                           "--negatives 2 --threads 1";
  const std::string ck = " --checkpoint-dir " + (m_dir / "ck").string() + " --resume auto";
  Outcome r = run(base + " --epochs 4 --json " + (m_dir / "a.json").string());
  ASSERT_EQ(r.code, 0) << r.err;
  r = run(base + " --epochs 2" + ck);
  ASSERT_EQ(r.code, 0) << r.err;
  r = run(base + " --epochs 4" + ck + " --json " + (m_dir / "b.json").string());
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.err.find("resuming from"), std::string::npos) << r.err;
  const nlohmann::json a = nlohmann::json::parse(halo::testing::read_file(m_dir / "a.json"));
  const nlohmann::json b = nlohmann::json::parse(halo::testing::read_file(m_dir / "b.json"));
  for (const char* key :
       {"final_train_loss", "best_epoch", "val_mrr", "val_map", "test_mrr", "test_map", "test_auc"})
    EXPECT_EQ(a.at(key), b.at(key)) << key;
  ASSERT_EQ(b.at("history").size(), 4u);
  for (std::size_t e = 0; e < 4; ++e)
    for (const char* key : {"train_loss", "val_mrr", "val_map"})
      EXPECT_EQ(a.at("history")[e].at(key), b.at("history")[e].at(key)) << key << " " << e;
  EXPECT_TRUE(b.at("resumed_from").is_string());
  r = run("train --dataset " + fixture() +
          " --task link --model evolvegcn-o --snapshots 14 --window 2 --hidden 4 --negatives 2 "
          "--threads 1 --epochs 6" +
          ck);
  EXPECT_EQ(r.code, 1) << r.err;
  EXPECT_NE(r.err.find("link.window"), std::string::npos) << r.err;
}

// A saved link-prediction model predicts with nothing more than the file and the events: the
// snapshots, window and split come from the model; `halo predict` gives the trained run's test
// MRR, MAP and AUC exactly, and one row per test step (step, MRR, MAP, AUC) in --out.
TEST_F(LinkCli, SavedModelPredictsTheTrainedTestMetrics) {
  const fs::path model = m_dir / "m.halo", train = m_dir / "t.json", predict = m_dir / "p.json";
  Outcome r = run("train --dataset " + fixture() +
                  " --task link --model evolvegcn-o --snapshots 14 --window 3 --hidden 4 "
                  "--negatives 2 --epochs 3 --threads 1 --save-model " +
                  model.string() + " --json " + train.string());
  ASSERT_EQ(r.code, 0) << r.err;
  r = run("predict --model " + model.string() + " --dataset " + fixture() + " --out " +
          (m_dir / "steps.npy").string() + " --json " + predict.string());
  ASSERT_EQ(r.code, 0) << r.err;
  const auto t = nlohmann::json::parse(halo::testing::read_file(train));
  const auto p = nlohmann::json::parse(halo::testing::read_file(predict));
  for (const char* key : {"test_mrr", "test_map", "test_auc", "val_mrr", "val_map"})
    EXPECT_EQ(p.at(key), t.at(key)) << key;
  EXPECT_EQ(p.at("test_steps"), t.at("test_steps"));
  // Flags that mean nothing for it are usage errors.
  r = run("predict --model " + model.string() + " --dataset " + fixture() +
          " --labels --out x.npy");
  EXPECT_EQ(r.code, 2) << r.err;
  // `halo embed`: every node's embedding (8 nodes x hidden 4, float32) after the window before
  // a step; by default after the last snapshot (--step 14). The fixture's snapshots are all
  // alike, so every window gives the same rows (runtime_test's
  // LinkPredictionTask.EmbeddingsAreWhatTheScorerRanks checks them step by step).
  const std::string m = "embed --model " + model.string() + " --dataset " + fixture();
  const fs::path last = m_dir / "last.npy", step14 = m_dir / "14.npy", step5 = m_dir / "5.npy";
  for (const auto& [flags, out] : std::vector<std::pair<std::string, fs::path>>{
           {"", last}, {" --step 14", step14}, {" --step 5", step5}}) {
    r = run(m + flags + " --out " + out.string());
    ASSERT_EQ(r.code, 0) << r.err;
  }
  const std::string a = halo::testing::read_file(last);
  EXPECT_NE(a.find("'shape': (8, 4)"), std::string::npos) << a.substr(0, 80);
  EXPECT_EQ(a.size(), 128 + 8 * 4 * sizeof(float));
  EXPECT_EQ(a, halo::testing::read_file(step14));
  EXPECT_EQ(a, halo::testing::read_file(step5));
  for (const auto& [flags, says] : std::vector<std::pair<std::string, std::string>>{
           {" --step 2", "--step 2: the encoder's window of 3 snapshots"},
           {" --step 15", "--step 15"},
           {" --layer 1", "--layer"},
           {" --type paper", "--type"},
           {" --device cuda", "--device cuda"}}) {
    SCOPED_TRACE(flags);
    r = run(m + flags + " --out x.npy");
    EXPECT_EQ(r.code, 2) << r.err;
    EXPECT_NE(r.err.find(says), std::string::npos) << r.err;
  }
  EXPECT_FALSE(fs::exists(m_dir / "x.npy"));
}

}  // namespace
