// Every output of `halo` is checked before any work and never replaces what is not a regular
// file: symbolic links are written through, devices and FIFOs refused (exit 2), unusable
// directories named with the operating system's reason.

#include <sys/stat.h>

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

class Outputs : public ::testing::Test {
 protected:
  Outcome run(const std::string& args) const {
    return halo::testing::run_command(m_binary + " " + args, m_dir);
  }
  /// A short training run on a small synthetic graph, with `flags`.
  Outcome train(const std::string& flags) const {
    return run("train --synthetic-nodes 200 --epochs 2 --threads 1 " + flags);
  }
  /// One line on stderr (the error), nothing before it: the check came before any work.
  static bool one_line(const std::string& err) {
    return !err.empty() && err.find('\n') == err.size() - 1;
  }

  const std::string m_binary = HALO_TEST_BINARY;
  const halo::testing::TempDir m_temp;
  const fs::path m_dir = m_temp.path();
};

TEST_F(Outputs, ASymbolicLinkIsWrittenThrough) {
  fs::create_directory(m_dir / "results");
  { std::ofstream(m_dir / "results" / "run.json") << "old"; }
  fs::create_symlink("results/run.json", m_dir / "run.json");
  const Outcome r = train("--json " + (m_dir / "run.json").string());
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_TRUE(fs::is_symlink(m_dir / "run.json"));
  const auto j = nlohmann::json::parse(read_file(m_dir / "results" / "run.json"));
  EXPECT_TRUE(j.contains("test_accuracy"));
  // The same for an .npz export and the model file.
  fs::create_symlink("results/g.npz", m_dir / "g.npz");
  ASSERT_EQ(run("datasets export --synthetic-nodes 200 --out " + (m_dir / "g.npz").string()).code,
            0);
  EXPECT_TRUE(fs::is_symlink(m_dir / "g.npz"));
  EXPECT_GT(fs::file_size(m_dir / "results" / "g.npz"), 0u);
  fs::create_symlink("results/m.halo", m_dir / "m.halo");
  ASSERT_EQ(train("--save-model " + (m_dir / "m.halo").string()).code, 0);
  EXPECT_TRUE(fs::is_symlink(m_dir / "m.halo"));
  EXPECT_GT(fs::file_size(m_dir / "results" / "m.halo"), 0u);
}

TEST_F(Outputs, DevicesAndFifosAreRefusedBeforeWork) {
  const fs::path fifo = m_dir / "fifo";
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0644), 0);
  struct Case {
    std::string args;
    const char* flag;
  };
  std::vector<Case> cases = {
      {"--json " + fifo.string(), "--json"},
      {"--save-model " + fifo.string(), "--save-model"},
      {"--metrics-file " + fifo.string(), "--metrics-file"},
  };
  // /dev/full as root: it used to be replaced by a regular file (and the run reported success).
  const bool dev_full = fs::is_character_file("/dev/full");
  if (dev_full) cases.push_back({"--json /dev/full", "--json"});
  for (const Case& c : cases) {
    const Outcome r = train(c.args);
    EXPECT_EQ(r.code, 2) << c.args << "\n" << r.err;
    EXPECT_TRUE(one_line(r.err)) << r.err;
    EXPECT_NE(r.err.find(c.flag), std::string::npos) << r.err;
    EXPECT_NE(r.err.find("not a regular file"), std::string::npos) << r.err;
  }
  EXPECT_TRUE(fs::is_fifo(fifo));
  if (dev_full)
    EXPECT_TRUE(fs::is_character_file("/dev/full"));
  else
    std::fprintf(stderr, "note: /dev/full is not a character device here; its case skipped\n");

  Outcome r = run("datasets export --synthetic-nodes 200 --out " + fifo.string());
  EXPECT_EQ(r.code, 2) << r.err;
  EXPECT_NE(r.err.find("a FIFO"), std::string::npos) << r.err;
  r = run("calibrate --output " + fifo.string());
  EXPECT_EQ(r.code, 2) << r.err;
  EXPECT_NE(r.err.find("--output"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("a FIFO"), std::string::npos) << r.err;
  EXPECT_TRUE(fs::is_fifo(fifo));
}

TEST_F(Outputs, UnusableDirectoriesAreRefusedBeforeWorkWithTheReason) {
  { std::ofstream(m_dir / "file") << "x"; }
  // --checkpoint-dir naming a regular file used to train every epoch and then fail.
  Outcome r = train("--checkpoint-dir " + (m_dir / "file").string());
  EXPECT_EQ(r.code, 2) << r.err;
  EXPECT_TRUE(one_line(r.err)) << r.err;
  EXPECT_NE(r.err.find("--checkpoint-dir"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("Not a directory"), std::string::npos) << r.err;
  EXPECT_EQ(read_file(m_dir / "file"), "x");
  // --metrics-file in a missing directory or under a file used to fail at its first write.
  r = train("--metrics-file " + (m_dir / "missing" / "m.prom").string());
  EXPECT_EQ(r.code, 2) << r.err;
  EXPECT_NE(r.err.find("No such file or directory"), std::string::npos) << r.err;
  r = train("--metrics-file " + (m_dir / "file" / "m.prom").string());
  EXPECT_EQ(r.code, 2) << r.err;
  EXPECT_NE(r.err.find("Not a directory"), std::string::npos) << r.err;
  EXPECT_FALSE(fs::exists(m_dir / "missing"));

  // partition and datasets convert into /proc: refused before METIS, naming the path given
  // (never an internal temporary name).
  if (fs::is_directory("/proc/self")) {
    r = run("partition --synthetic-nodes 200 --parts 2 --out /proc/halo-x");
    EXPECT_EQ(r.code, 1) << r.err;
    EXPECT_TRUE(one_line(r.err)) << r.err;
    EXPECT_NE(r.err.find("/proc/halo-x: cannot be created in /proc"), std::string::npos) << r.err;
    EXPECT_EQ(r.err.find(".tmp-"), std::string::npos) << r.err;
    const fs::path karate = halo::testing::datasets_dir() / "karate" / "edges.tsv";
    r = run("datasets convert --from edgelist " + karate.string() + " --out /proc/halo-x");
    EXPECT_EQ(r.code, 1) << r.err;
    EXPECT_NE(r.err.find("/proc/halo-x: cannot be created in /proc"), std::string::npos) << r.err;
  }
}

}  // namespace

namespace {

// An allocation the machine cannot give names its bytes (std::bad_alloc named nothing).
// ASan would abort on an allocation this size; it is told to return null as malloc does.
TEST_F(Outputs, AnImpossibleAllocationNamesItsBytes) {
  // Only where the kernel refuses an allocation beyond its memory (overcommit 0 or 2); with
  // overcommit 1 it would grant 160 GiB and the run would be killed touching them.
  if (read_file("/proc/sys/vm/overcommit_memory") == "1\n")
    GTEST_SKIP() << "vm.overcommit_memory is 1: the kernel grants any allocation";
  const Outcome r = halo::testing::run_command(
      "ASAN_OPTIONS=allocator_may_return_null=1:detect_leaks=0 " + m_binary +
          " train --synthetic-nodes 40000 --hidden 1048576 --epochs 1 --threads 1",
      m_dir);
  EXPECT_EQ(r.code, 1) << r.err;
  EXPECT_TRUE(one_line(r.err.substr(r.err.find("halo: error:")))) << r.err;
  EXPECT_NE(r.err.find("halo: error: out of host memory: cannot allocate "), std::string::npos)
      << r.err;
  EXPECT_NE(r.err.find(" bytes ("), std::string::npos) << r.err;
}

}  // namespace
