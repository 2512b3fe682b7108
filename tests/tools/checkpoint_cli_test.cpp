// `halo train` with checkpoints as a user runs it: 10 epochs then a resume to 20 equal one run of
// 20 (model file bytes, final loss); SIGTERM checkpoints and exits 75; a checkpoint of another
// model or partition is refused; and a rank killed while writing a checkpoint (the documented
// fault-injection hook) leaves the previous one, from which the run completes exactly.

#include <filesystem>
#include <fstream>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>
#include <string>

#include "support/testing.hpp"

namespace {

namespace fs = std::filesystem;

using Outcome = halo::testing::CommandOutcome;

class CheckpointCli : public ::testing::Test {
 protected:
  Outcome halo(const std::string& args) const {
    return halo::testing::run_command(
        "env OMP_NUM_THREADS=1 " + std::string(HALO_TEST_BINARY) + args, m_dir);
  }
  Outcome mpiexec(int ranks, const std::string& args, const std::string& env = "") const {
    return halo::testing::run_command("env OMP_NUM_THREADS=1 ASAN_OPTIONS=detect_leaks=0 " + env +
                                          " " + HALO_TEST_MPIEXEC + " -n " + std::to_string(ranks) +
                                          " " + HALO_TEST_BINARY + args,
                                      m_dir);
  }
  static std::string cora() {
    return (halo::testing::datasets_dir() / "planetoid" / "cora").string();
  }
  std::string path(const std::string& name) const { return (m_dir / name).string(); }
  static double final_loss(const fs::path& json) {
    return nlohmann::json::parse(halo::testing::read_file(json))["final_train_loss"].get<double>();
  }
  const halo::testing::TempDir m_temp;
  const fs::path m_dir = m_temp.path();
};

TEST_F(CheckpointCli, TenEpochsThenResumeToTwentyEqualsTwenty) {
  const std::string data = " train --dataset " + cora() + " --threads 1";
  Outcome r =
      halo(data + " --epochs 20 --save-model " + path("a.halo") + " --json " + path("a.json"));
  ASSERT_EQ(r.code, 0) << r.err;
  r = halo(data + " --epochs 10 --checkpoint-dir " + path("ck") + " --resume auto");
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.err.find("no complete checkpoint in " + path("ck") + ": starting fresh"),
            std::string::npos)
      << r.err;
  EXPECT_TRUE(fs::exists(m_dir / "ck" / "epoch-000010-step-000000" / "manifest.json"));
  r = halo(data + " --epochs 20 --checkpoint-dir " + path("ck") + " --resume auto --save-model " +
           path("b.halo") + " --json " + path("b.json"));
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.err.find("resuming from " + path("ck") + "/epoch-000010-step-000000"),
            std::string::npos)
      << r.err;
  EXPECT_EQ(halo::testing::read_file(m_dir / "a.halo"), halo::testing::read_file(m_dir / "b.halo"));
  EXPECT_EQ(final_loss(m_dir / "a.json"), final_loss(m_dir / "b.json"));
  const auto j = nlohmann::json::parse(halo::testing::read_file(m_dir / "b.json"));
  EXPECT_EQ(j["resumed_from"], path("ck") + "/epoch-000010-step-000000");
  EXPECT_EQ(j["checkpoint"], path("ck") + "/epoch-000020-step-000000");
  EXPECT_EQ(j["preemption_checks"], 10);  // one per step (full graph: one step an epoch)

  // Another model, or other training flags: refused, naming what differs.
  r = halo(data + " --epochs 20 --hidden 32 --checkpoint-dir " + path("ck") + " --resume auto");
  EXPECT_EQ(r.code, 1);
  EXPECT_NE(r.err.find("model.hidden is 16, this run's is 32"), std::string::npos) << r.err;
  r = halo(data + " --epochs 20 --lr 0.02 --checkpoint-dir " + path("ck") + " --resume auto");
  EXPECT_EQ(r.code, 1);
  EXPECT_NE(r.err.find("lr is"), std::string::npos) << r.err;
  // Fewer epochs than the checkpoint has.
  r = halo(data + " --epochs 5 --checkpoint-dir " + path("ck") + " --resume auto");
  EXPECT_EQ(r.code, 1);
  EXPECT_NE(r.err.find("past the 5 epochs"), std::string::npos) << r.err;
}

TEST_F(CheckpointCli, FlagsNeedTheDirectory) {
  for (const char* flags : {" --resume auto", " --checkpoint-every 2"}) {
    const Outcome r = halo(std::string(" train --dataset ") + cora() + flags);
    EXPECT_EQ(r.code, 2) << flags;
    EXPECT_NE(r.err.find("needs --checkpoint-dir"), std::string::npos) << r.err;
  }
  Outcome r = halo(" train --dataset " + cora() + " --checkpoint-dir d --resume latest");
  EXPECT_EQ(r.code, 2);
  r = halo(" train --help");
  EXPECT_NE(r.out.find("75 preempted"), std::string::npos) << r.out;
}

// A run without --resume into a directory holding another run's checkpoints: a usage error
// before the data is read, naming the newest; the checkpoints stay.
TEST_F(CheckpointCli, AFreshRunRefusesAnotherRunsCheckpoints) {
  const std::string data = " train --dataset " + cora() + " --threads 1";
  Outcome r = halo(data + " --epochs 3 --checkpoint-dir " + path("ck") + " --checkpoint-every 1");
  ASSERT_EQ(r.code, 0) << r.err;
  r = halo(data + " --epochs 1 --checkpoint-dir " + path("ck") + " --json " + path("b.json"));
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.err.find(path("ck") + ": holds 2 checkpoints of another run (newest "
                                    "epoch-000003-step-000000)"),
            std::string::npos)
      << r.err;
  EXPECT_EQ(r.err.find("halo train: "), std::string::npos) << "the data was read: " << r.err;
  EXPECT_FALSE(fs::exists(m_dir / "b.json"));
  EXPECT_TRUE(fs::exists(m_dir / "ck" / "epoch-000002-step-000000" / "manifest.json"));
  EXPECT_TRUE(fs::exists(m_dir / "ck" / "epoch-000003-step-000000" / "manifest.json"));
}

// SIGTERM (as Slurm or Kubernetes send it) while training: a checkpoint, exit code 75, and a
// resumed run that completes.
TEST_F(CheckpointCli, SignalCheckpointsAndExits75) {
  const std::string script = path("signal.sh");
  const std::string run = std::string(HALO_TEST_BINARY) + " train --dataset " + cora() +
                          " --threads 1 --epochs 1000 --checkpoint-every 1 --checkpoint-dir " +
                          path("ck");
  std::string text = "export OMP_NUM_THREADS=1\n" + run + " 2> " + path("err") + " &\npid=$!\n" +
                     "for i in $(seq 600); do ls " + path("ck") +
                     "/*/manifest.json >/dev/null 2>&1 && break; sleep 0.1; done\n" +
                     "kill -TERM $pid\nwait $pid\necho $?\n";
  std::ofstream(script) << text;
  const Outcome r = halo::testing::run_command("bash " + script, m_dir);
  const std::string err = halo::testing::read_file(m_dir / "err");
  EXPECT_EQ(r.out, "75\n") << err;
  // "preempted after E epochs: checkpoint DIR, committed S s after the signal; exit code 75",
  // DIR committed, S the time from the signal (>= 0).
  const std::string tag = "checkpoint ", committed = ", committed ";
  const std::string line = err.substr(err.find("preempted after"));
  ASSERT_NE(line.find(tag), std::string::npos) << err;
  ASSERT_NE(line.find(committed), std::string::npos) << err;
  const std::string dir =
      line.substr(line.find(tag) + tag.size(), line.find(committed) - line.find(tag) - tag.size());
  EXPECT_TRUE(fs::exists(fs::path(dir) / "manifest.json")) << dir;
  const double after_signal = std::stod(line.substr(line.find(committed) + committed.size()));
  EXPECT_GE(after_signal, 0) << line;
}

class CheckpointMpi : public CheckpointCli {
 protected:
  void SetUp() override {
    for (const char* method : {"metis", "random"}) {
      const Outcome r = halo(" partition --dataset " + cora() + " --parts 2 --method " + method +
                             " --out " + path(method));
      ASSERT_EQ(r.code, 0) << r.err;
    }
  }
};

// A rank SIGKILLed while writing its shard of the epoch-4 checkpoint: the job ends, the
// incomplete checkpoint is ignored, the epoch-2 one resumes, and the run ends as an uninterrupted
// one; a checkpoint of another partition is refused.
TEST_F(CheckpointMpi, RankKilledDuringAWriteLeavesThePreviousCheckpoint) {
  const std::string train = " train --partitions " + path("metis") + " --epochs 6";
  Outcome r = mpiexec(2, train + " --save-model " + path("a.halo"));
  ASSERT_EQ(r.code, 0) << r.err;
  const std::string ck = " --checkpoint-every 2 --checkpoint-dir " + path("ck");
  r = mpiexec(2, train + ck, "HALO_CHECKPOINT_FAULT=kill:1:4");
  EXPECT_NE(r.code, 0);
  EXPECT_NE(r.code, 75);
  EXPECT_TRUE(fs::exists(m_dir / "ck" / "epoch-000002-step-000000" / "manifest.json"));
  EXPECT_FALSE(fs::exists(m_dir / "ck" / "epoch-000004-step-000000" / "manifest.json"));
  r = mpiexec(2, train + ck + " --resume auto --save-model " + path("b.halo"));
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.err.find("resuming from " + path("ck") + "/epoch-000002-step-000000"),
            std::string::npos)
      << r.err;
  EXPECT_EQ(halo::testing::read_file(m_dir / "a.halo"), halo::testing::read_file(m_dir / "b.halo"));
  // The resumed run rewrote epoch 4's checkpoint; no temporary file of the killed rank is left.
  EXPECT_TRUE(fs::exists(m_dir / "ck" / "epoch-000004-step-000000" / "manifest.json"));
  for (const auto& e : fs::recursive_directory_iterator(m_dir / "ck"))
    EXPECT_EQ(e.path().filename().string().find(".tmp-"), std::string::npos) << e.path();
  // The same flags on another partition of the same dataset.
  r = mpiexec(2, " train --partitions " + path("random") + " --epochs 6" + ck + " --resume auto");
  EXPECT_EQ(r.code, 1);
  EXPECT_NE(r.err.find("the checkpoint's data is partition meta.json"), std::string::npos) << r.err;
}

}  // namespace
