// The `halo` program as a user runs it: exit codes, one-line errors, --json, --help.

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>
#include <string>

#include <halo/kernels/resources.hpp>

#include "support/testing.hpp"

namespace {

namespace fs = std::filesystem;

using Outcome = halo::testing::CommandOutcome;
using halo::testing::read_file;

class Cli : public ::testing::Test {
 protected:
  Outcome run(const std::string& args) const {
    return halo::testing::run_command(m_binary + " " + args, m_dir);
  }

  /// A 6-node, 2-class dataset in the plain format; `edges` replaces edges.tsv when given.
  fs::path write_dataset(const std::string& edges = "0\t1\n1\t0\n2\t3\n3\t2\n4\t5\n5\t4\n") const {
    const fs::path d = m_dir / "data";
    fs::create_directories(d);
    std::ofstream(d / "edges.tsv") << edges;
    std::ofstream(d / "features.tsv") << "1\t0\n1\t0\n0\t1\n0\t1\n1\t0\n0\t1\n";
    std::ofstream(d / "labels.txt") << "0\n0\n1\n1\n0\n1\n";
    std::ofstream(d / "train_idx.txt") << "0\n2\n";
    std::ofstream(d / "val_idx.txt") << "1\n3\n";
    std::ofstream(d / "test_idx.txt") << "4\n5\n";
    return d;
  }

  const std::string m_binary = HALO_TEST_BINARY;
  const halo::testing::TempDir m_temp;
  const fs::path m_dir = m_temp.path();
};

TEST_F(Cli, VersionAndHelp) {
  Outcome r = run("--version");
  EXPECT_EQ(r.code, 0);
  EXPECT_EQ(r.out, "halo " HALO_VERSION "\n");
  r = run("--help");
  EXPECT_EQ(r.code, 0);
  EXPECT_NE(r.out.find("train"), std::string::npos);
  r = run("train --help");
  EXPECT_EQ(r.code, 0);
  for (const char* flag :
       {"--dataset", "--model", "--layers", "--hidden", "--dropout", "--lr", "--weight-decay",
        "--epochs", "--seed", "--threads", "--device", "--json"})
    EXPECT_NE(r.out.find(flag), std::string::npos) << flag;
}

TEST_F(Cli, UsageErrorsExitTwoWithOneClearLine) {
  struct Case {
    const char* args;
    const char* names;
  };
  for (const Case& c :
       {Case{"", "a command is required: train, datasets"},
        Case{"trian --epochs 3", "unknown command 'trian' (did you mean 'train'?)"},
        Case{"frobnicate", "unknown command 'frobnicate'; the commands are train,"},
        Case{"train --epochs abc", "--epochs: expected an integer in [1, 1000000], got 'abc'"},
        Case{"train --bogus", "--bogus"}, Case{"train --hidden 0", "--hidden"},
        Case{"train --layers 0", "--layers"}, Case{"train --dropout 1", "--dropout"},
        Case{"train --lr -1", "--lr"}, Case{"train --epochs x", "--epochs"},
        Case{"train --model gin", "--model"},
        Case{"train --json /no/such/dir/out.json", "/no/such/dir"},
        // NaNs and infinities name their flag (they used to fail deep inside).
        Case{"train --lr nan", "--lr"}, Case{"train --lr inf", "--lr"},
        Case{"train --dropout nan", "--dropout"},
        Case{"train --weight-decay nan", "--weight-decay"},
        // A flag of the other mode is refused, not silently ignored.
        Case{"train --fanouts 5,5", "--fanouts"}, Case{"train --batch-size 8", "--batch-size"},
        Case{"train --prefetch 0", "--prefetch"},
        Case{"train --mode mini-batch --prefetch x", "--prefetch"},
        Case{"train --mode mini-batch --prefetch 17", "--prefetch"},
        Case{"train --mode mini-batch --prefetch -1", "--prefetch"},
        Case{"train --mode mini-batch --cache-mb 1", "--cache-mb"},
        Case{"train --mode mini-batch --fanouts 5", "--fanouts"},
        Case{"train --json .", "--json"}}) {
    const Outcome r = run(c.args);
    EXPECT_EQ(r.code, 2) << c.args;
    EXPECT_NE(r.err.find(c.names), std::string::npos) << c.args << ": " << r.err;
    EXPECT_EQ(r.err.find("failed:"), std::string::npos) << "no assertion text: " << r.err;
    EXPECT_EQ(r.err.find('\n'), r.err.size() - 1) << "one line: " << r.err;
    EXPECT_EQ(r.err.rfind("halo: error: ", 0), 0u) << "one prefix for every error: " << r.err;
  }
}

// A dataset without training nodes is a usage error named in one line, before any training.
TEST_F(Cli, EmptyTrainingSplitIsAUsageError) {
  const fs::path d = write_dataset();
  std::ofstream(d / "train_idx.txt", std::ios::trunc) << "";
  const Outcome r = run("train --epochs 2 --dataset " + d.string());
  EXPECT_EQ(r.code, 2) << r.err;
  EXPECT_NE(r.err.find("no training nodes"), std::string::npos) << r.err;
  EXPECT_EQ(r.err.find("failed:"), std::string::npos) << r.err;
}

// --json is checked before the work starts, and a failed write leaves no temporary behind: a
// file-size limit of 0 (bash's ulimit -f, SIGXFSZ ignored so that writes fail with EFBIG)
// stands in for a full disk.
TEST_F(Cli, JsonThatCannotBeWrittenFailsCleanly) {
  const fs::path d = write_dataset();
  fs::create_directories(m_dir / "adir");
  Outcome r =
      run("train --epochs 2 --dataset " + d.string() + " --json " + (m_dir / "adir").string());
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.err.find("a directory, not a regular file"), std::string::npos) << r.err;
  EXPECT_EQ(r.err.find("epoch"), std::string::npos) << "refused before training: " << r.err;
  const fs::path json = m_dir / "full" / "out.json";
  fs::create_directories(json.parent_path());
  // Only halo's files are limited: its output goes through a pipe to an unlimited `cat`.
  r = halo::testing::run_command("bash -c \"set -o pipefail; trap '' XFSZ; (ulimit -f 0; exec " +
                                     m_binary + " train --epochs 2 --dataset " + d.string() +
                                     " --json " + json.string() + ") 2>&1 | cat >&2\"",
                                 m_dir);
  EXPECT_EQ(r.code, 1) << r.err;
  EXPECT_NE(r.err.find("cannot write"), std::string::npos) << r.err;
  std::int64_t left = 0;
  for (const auto& e : fs::directory_iterator(json.parent_path())) {
    ADD_FAILURE() << "left behind: " << e.path();
    ++left;
  }
  EXPECT_EQ(left, 0);
}

TEST_F(Cli, MissingDatasetExitsOne) {
  const Outcome r = run("train --dataset " + (m_dir / "nothing").string());
  EXPECT_EQ(r.code, 1);
  EXPECT_NE(r.err.find("nothing"), std::string::npos) << r.err;
  EXPECT_EQ(r.err.find('\n'), r.err.size() - 1) << "one line: " << r.err;
}

TEST_F(Cli, MalformedFileNamesFileAndLine) {
  const fs::path d = write_dataset("0\t1\n1\t0\n2\tx\n");
  const fs::path json = m_dir / "out.json";
  const Outcome r = run("train --epochs 2 --dataset " + d.string() + " --json " + json.string());
  EXPECT_EQ(r.code, 1);
  EXPECT_NE(r.err.find("edges.tsv:3"), std::string::npos) << r.err;
  EXPECT_FALSE(fs::exists(json)) << "no output on failure";
}

TEST_F(Cli, MissingFileIsNamed) {
  const fs::path d = write_dataset();
  fs::remove(d / "labels.txt");
  const Outcome r = run("train --epochs 2 --dataset " + d.string());
  EXPECT_EQ(r.code, 1);
  EXPECT_NE(r.err.find("labels.txt"), std::string::npos) << r.err;
}

TEST_F(Cli, TrainsAndWritesJsonAndModel) {
  const fs::path d = write_dataset();
  const fs::path json = m_dir / "out.json", model = m_dir / "model.bin";
  const Outcome r = run("train --epochs 30 --hidden 8 --dataset " + d.string() + " --json " +
                        json.string() + " --save-model " + model.string());
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.out.find("test accuracy"), std::string::npos);
  const auto j = nlohmann::json::parse(read_file(json));
  for (const char* key : {"dataset", "model", "mode", "device", "world_size", "epochs", "seed",
                          "test_accuracy", "val_accuracy", "best_epoch", "epoch_time_median_s",
                          "train_time_s", "peak_host_memory_bytes"})
    EXPECT_TRUE(j.contains(key)) << key;
  EXPECT_EQ(j["mode"], "full-graph");
  EXPECT_EQ(j["device"], "cpu");
  EXPECT_EQ(j["world_size"], 1);
  EXPECT_EQ(j["epochs"], 30);
  EXPECT_GE(j["test_accuracy"].get<double>(), 0.0);
  EXPECT_LE(j["test_accuracy"].get<double>(), 1.0);
  EXPECT_GT(j["peak_host_memory_bytes"].get<double>(), 0.0);
  EXPECT_TRUE(fs::exists(model));
  for (const auto& e : fs::directory_iterator(m_dir))
    EXPECT_EQ(e.path().string().find(".tmp"), std::string::npos) << "left behind: " << e.path();
}

// --max-batches on a homogeneous dataset: the epoch trains that many batches (it was refused
// as a heterogeneous-only flag); outside mini-batch it is a usage error.
TEST_F(Cli, MaxBatchesCapsAHomogeneousMiniBatchEpoch) {
  const fs::path d = write_dataset();
  const fs::path json = m_dir / "out.json";
  const std::string base = "train --epochs 2 --hidden 4 --dataset " + d.string();
  Outcome r = run(base + " --mode mini-batch --batch-size 1 --fanouts 2,2 --json " + json.string());
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(nlohmann::json::parse(read_file(json))["batches_per_epoch"], 2);
  r = run(base + " --mode mini-batch --batch-size 1 --fanouts 2,2 --max-batches 1 --json " +
          json.string());
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(nlohmann::json::parse(read_file(json))["batches_per_epoch"], 1);
  r = run(base + " --max-batches 1");
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.err.find("--max-batches"), std::string::npos) << r.err;
}

// Without a usable GPU (no device, no driver, or a CPU-only build) `--device cuda` is a runtime
// error with one clear line, before any data is read; an unknown device is a usage error.
TEST_F(Cli, GpuDeviceWithoutAGpuFailsCleanly) {
  EXPECT_EQ(run("train --device gpu").code, 2);
  if (halo::kernels::cuda_device_count() > 0) GTEST_SKIP() << "a CUDA device is usable here";
  const fs::path d = write_dataset();
  const fs::path json = m_dir / "out.json";
  for (const char* mode : {"full-graph", "mini-batch"}) {
    const Outcome r = run("train --device cuda --epochs 2 --mode " + std::string(mode) +
                          " --dataset " + d.string() + " --json " + json.string());
    EXPECT_EQ(r.code, 1) << mode;
    EXPECT_EQ(r.err, "halo: error: --device cuda: no usable CUDA device\n") << mode;
    EXPECT_FALSE(fs::exists(json));
  }
  // A one-part partition runs without mpiexec: the same line.
  const fs::path parts = m_dir / "parts";
  ASSERT_EQ(run("partition --method random --parts 1 --dataset " + d.string() + " --out " +
                parts.string())
                .code,
            0);
  const Outcome r = run("train --device cuda --epochs 2 --partitions " + parts.string());
  EXPECT_EQ(r.code, 1);
  EXPECT_EQ(r.err, "halo: error: --device cuda: no usable CUDA device\n");
}

class CliCuda : public Cli {};

// The same run on the GPU: it trains, and the JSON names the device.
TEST_F(CliCuda, TrainsOnTheGpuAndReportsTheDevice) {
  if (halo::kernels::cuda_device_count() == 0) GTEST_SKIP() << "no usable CUDA device";
  const fs::path d = write_dataset();
  for (const char* mode : {"full-graph", "mini-batch"}) {
    const fs::path json = m_dir / (std::string(mode) + ".json"), model = m_dir / "model.bin";
    const Outcome r = run("train --device cuda --epochs 5 --hidden 8 --mode " + std::string(mode) +
                          " --fanouts 2,2 --dataset " + d.string() + " --json " + json.string() +
                          " --save-model " + model.string());
    ASSERT_EQ(r.code, 0) << mode << ": " << r.err;
    const auto j = nlohmann::json::parse(read_file(json));
    EXPECT_EQ(j["device"], "cuda");
    EXPECT_EQ(j["cuda_device"], 0);
    EXPECT_TRUE(fs::exists(model));
  }
}

TEST_F(Cli, DefaultSyntheticRunIsSeededAndLearns) {
  const fs::path a = m_dir / "a.json", b = m_dir / "b.json";
  ASSERT_EQ(run("train --epochs 40 --synthetic-nodes 400 --json " + a.string()).code, 0);
  ASSERT_EQ(run("train --epochs 40 --synthetic-nodes 400 --json " + b.string()).code, 0);
  const auto ja = nlohmann::json::parse(read_file(a)), jb = nlohmann::json::parse(read_file(b));
  EXPECT_EQ(ja["dataset"], "synthetic");
  EXPECT_EQ(ja["test_accuracy"], jb["test_accuracy"]);
  EXPECT_EQ(ja["final_train_loss"], jb["final_train_loss"]);
  EXPECT_GT(ja["test_accuracy"].get<double>(), 0.3) << "8 classes: chance is 0.125";
}

}  // namespace

// The single re-execution that applies the OpenMP / OpenBLAS defaults keeps the program's name:
// `ps`, `pgrep halo` and `top` used to show a running halo as "exe" (it re-executed itself
// through /proc/self/exe). The defaults apply only where the user set neither variable.
TEST_F(Cli, KeepsItsNameAfterApplyingRuntimeDefaults) {
  const fs::path comm = m_dir / "comm.txt";
  const std::string script =
      "env -u OMP_WAIT_POLICY -u GOMP_SPINCOUNT " + m_binary +
      " train --synthetic-nodes 3000 --epochs 100000 --threads 1 >/dev/null 2>&1 & pid=$!; "
      "for i in $(seq 100); do grep -q GOMP_SPINCOUNT /proc/$pid/environ 2>/dev/null && break; "
      "sleep 0.05; done; sleep 0.2; cat /proc/$pid/comm > " +
      comm.string() + "; kill $pid; wait $pid";
  halo::testing::run_command("bash -c '" + script + "'", m_dir);
  EXPECT_EQ(read_file(comm), fs::path(m_binary).filename().string().substr(0, 15) + "\n");
}

// Messages a newcomer reads: counts agree with their nouns, and a one-process mini-batch run
// does not report remote rows it cannot have.
TEST_F(Cli, SummaryLinesSpeakPlainly) {
  Outcome r = run("train --synthetic-nodes 300 --epochs 2 --threads 1");
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.err.find("1 rank, 1 thread\n"), std::string::npos) << r.err;
  r =
      run("train --synthetic-nodes 300 --epochs 2 --threads 2 --mode mini-batch --batch-size 32 "
          "--fanouts 5,5");
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.err.find("1 rank, 2 threads\n"), std::string::npos) << r.err;
  EXPECT_EQ(r.out.find("remote rows"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("sampler: envelope"), std::string::npos) << r.out;
}
