// The sbatch script generator: its #SBATCH lines, quoting checked by bash itself, refused
// requests, and the script's behaviour run by bash with a stand-in launcher and scontrol: the
// signal reaches the ranks, exit code 75 requeues, any other code is passed on.

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <gtest/gtest.h>
#include <string>
#include <utility>
#include <vector>

#include <halo/cluster/slurm.hpp>
#include <halo/kernels/error.hpp>
#include <halo/runtime/engine/checkpoint_types.hpp>

#include "support/testing.hpp"

namespace halo::cluster {
namespace {

using runtime::kExitPreempted;

namespace fs = std::filesystem;

SlurmRequest request() {
  SlurmRequest r;
  r.job_name = "cora-2";
  r.nodes = 1;
  r.tasks = 2;
  r.tasks_per_node = 2;
  r.cpus_per_task = 3;
  r.memory_per_node_bytes = 3 * (std::int64_t{1} << 29) + 1;  // 1.5 GiB and a byte
  r.time_limit_s = 90061;                                     // 1 day, 1 h, 1 min, 1 s
  r.partition = "debug";
  r.output = "out/%x-%j.log";
  r.command = {"halo", "train", "--partitions", "parts dir", "--checkpoint-dir", "ck"};
  return r;
}

void write(const fs::path& p, const std::string& text) {
  std::ofstream(p) << text;
  fs::permissions(p, fs::perms::owner_all, fs::perm_options::add);
}

TEST(SbatchScript, AsksForEveryResourceAndTheRequeueProtocol) {
  const std::string s = sbatch_script(request());
  EXPECT_EQ(s.rfind("#!/bin/bash\n", 0), 0u);
  for (const char* line :
       {"#SBATCH --job-name=cora-2\n", "#SBATCH --nodes=1\n", "#SBATCH --ntasks=2\n",
        "#SBATCH --ntasks-per-node=2\n", "#SBATCH --cpus-per-task=3\n", "#SBATCH --mem=1537M\n",
        "#SBATCH --time=1-01:02:00\n", "#SBATCH --partition=debug\n",
        "#SBATCH --output=out/%x-%j.log\n", "#SBATCH --open-mode=append\n", "#SBATCH --requeue\n",
        "#SBATCH --signal=B:USR1@120\n",
        "mpiexec -launcher fork -n 2 halo train --partitions 'parts dir' --checkpoint-dir ck &\n",
        "scontrol requeue \"$SLURM_JOB_ID\"", "SLURM_RESTART_COUNT"})
    EXPECT_NE(s.find(line), std::string::npos) << line << "\n" << s;
  // Every #SBATCH line comes before the first command (sbatch stops reading them there).
  EXPECT_LT(s.rfind("#SBATCH"), s.find("\nset -u"));
  SlurmRequest r = request();
  r.partition.clear();
  r.memory_per_node_bytes = 0;
  const std::string plain = sbatch_script(r);
  EXPECT_EQ(plain.find("#SBATCH --partition"), std::string::npos);
  EXPECT_EQ(plain.find("--mem"), std::string::npos);
  r.nodes = 2;  // several nodes: Hydra's own bootstrap (srun under Slurm)
  r.tasks_per_node = 1;
  EXPECT_NE(sbatch_script(r).find("\nmpiexec -n 2 halo train"), std::string::npos);
}

// An elastic job (a partition of K parts): a node range, and as many ranks as the nodes it was
// given hold (at most K), read by bash from SLURM_JOB_NUM_NODES; fork on one node.
TEST(SbatchScript, ElasticJobLaunchesOnTheNodesItIsGiven) {
  SlurmRequest r = request();
  r.nodes = 4;
  r.min_nodes = 1;
  r.tasks = 7;  // K parts
  r.tasks_per_node = 2;
  const halo::testing::TempDir temp;
  write(temp.path() / "launcher",
        "#!/bin/bash\nprintf '%s ' \"$@\" > " + (temp.path() / "args").string() + "\n");
  r.launcher = {(temp.path() / "launcher").string()};
  const std::string s = sbatch_script(r);
  EXPECT_NE(s.find("#SBATCH --nodes=1-4\n"), std::string::npos) << s;
  EXPECT_NE(s.find("#SBATCH --ntasks-per-node=2\n"), std::string::npos) << s;
  EXPECT_EQ(s.find("#SBATCH --ntasks="), std::string::npos) << s;
  write(temp.path() / "job.sh", s);
  for (const auto& [nodes, want] : std::vector<std::pair<int, std::string>>{
           {1, "-launcher fork -n 2 "}, {2, "-n 4 "}, {3, "-n 6 "}, {4, "-n 7 "}}) {
    const halo::testing::CommandOutcome out =
        halo::testing::run_command("SLURM_JOB_ID=7 SLURM_JOB_NUM_NODES=" + std::to_string(nodes) +
                                       " bash " + (temp.path() / "job.sh").string(),
                                   temp.path());
    EXPECT_EQ(out.code, 0) << out.err;
    EXPECT_NE(out.out.find(": " + std::to_string(std::min(7, 2 * nodes)) + " ranks on " +
                           std::to_string(nodes) + " node(s)"),
              std::string::npos)
        << out.out;
    EXPECT_EQ(halo::testing::read_file(temp.path() / "args"),
              want + "halo train --partitions parts dir --checkpoint-dir ck ")
        << nodes << " nodes";
  }
  r.min_nodes = 4;  // not below nodes
  EXPECT_THROW(sbatch_script(r), LogicError);
}

TEST(SbatchScript, RefusesImpossibleRequests) {
  auto refused = [](auto change) {
    SlurmRequest r = request();
    change(r);
    EXPECT_THROW(sbatch_script(r), LogicError);
  };
  refused([](SlurmRequest& r) { r.command.clear(); });
  refused([](SlurmRequest& r) { r.tasks = 3; });  // 1 node x 2
  refused([](SlurmRequest& r) { r.nodes = 0; });
  refused([](SlurmRequest& r) { r.cpus_per_task = 0; });
  refused([](SlurmRequest& r) { r.time_limit_s = 120; });  // the signal would come at once
  refused([](SlurmRequest& r) { r.job_name = "two words"; });
  refused([](SlurmRequest& r) { r.output = "a\nb"; });
  refused([](SlurmRequest& r) { r.memory_per_node_bytes = -1; });
}

// bash reads every quoted word back as the original.
TEST(SbatchScript, QuotedWordsAreReadBackByBash) {
  const halo::testing::TempDir temp;
  const std::vector<std::string> words = {
      "plain-word_1.0", "",     "two words", "it's",      "'",           "$HOME",
      "`id`",           "a\"b", "*",         "new\nline", "back\\slash", "semi;colon",
      "--flag=x y",     "~",    "#hash",     "!bang"};
  std::string line = "printf '%s\\0'";
  for (const std::string& w : words) line += " " + shell_quote(w);
  write(temp.path() / "q.sh", line + "\n");
  const halo::testing::CommandOutcome r =
      halo::testing::run_command("bash " + (temp.path() / "q.sh").string(), temp.path());
  ASSERT_EQ(r.code, 0) << r.err;
  std::vector<std::string> back;
  std::string cur;
  for (const char c : r.out) {
    if (c == '\0') {
      back.push_back(cur);
      cur.clear();
    } else {
      cur += c;
    }
  }
  EXPECT_EQ(back, words);
  EXPECT_EQ(shell_quote("plain-word_1.0"), "plain-word_1.0");
}

/// Runs the script of `request()` with a stand-in launcher (it records its arguments, then
/// waits for SIGUSR1 and exits with `on_signal`, or exits with `code` at once) and a stand-in
/// scontrol; `signal` sends the script SIGUSR1 or SIGTERM once the launcher runs. Returns what
/// the driver printed: the script's exit status, then scontrol's arguments.
std::string run_script(const fs::path& dir, int on_signal, const char* signal, int code = -1,
                       bool marker = false) {
  write(dir / "launcher",
        "#!/bin/bash\nprintf '%s\\n' \"$@\" > " + (dir / "args").string() + "\n" +
            (code >= 0 ? "exit " + std::to_string(code) + "\n"
                       : "trap '" + std::string(marker ? "echo x > $HALO_PREEMPTED_FILE; " : "") +
                             "exit " + std::to_string(on_signal) + "' USR1\ntouch " +
                             (dir / "started").string() +
                             "\nfor i in $(seq 400); do sleep 0.05; done\nexit 99\n"));
  write(dir / "scontrol", "#!/bin/bash\necho \"scontrol $*\" >> " + (dir / "log").string() + "\n");
  SlurmRequest r = request();
  r.launcher = {(dir / "launcher").string()};
  write(dir / "job.sh", sbatch_script(r));
  std::string driver = "export PATH=" + dir.string() +
                       ":$PATH SLURM_JOB_ID=42 SLURM_SUBMIT_DIR=" + dir.string() + "\nbash " +
                       (dir / "job.sh").string() + " > " + (dir / "job.out").string() +
                       " 2>&1 &\npid=$!\n";
  if (signal != nullptr)
    driver += "for i in $(seq 400); do [ -e " + (dir / "started").string() +
              " ] && break; sleep 0.05; done\nkill -" + signal + " $pid\n";
  driver +=
      "wait $pid\necho \"status $?\"\ncat " + (dir / "log").string() + " 2>/dev/null || true\n";
  write(dir / "driver.sh", driver);
  const halo::testing::CommandOutcome out =
      halo::testing::run_command("bash " + (dir / "driver.sh").string(), dir);
  EXPECT_EQ(out.code, 0) << out.err;
  return out.out;
}

TEST(SbatchScript, SignalReachesTheRanksAndExit75Requeues) {
  for (const char* signal : {"USR1", "TERM"}) {
    const halo::testing::TempDir temp;
    EXPECT_EQ(run_script(temp.path(), 75, signal), "status 0\nscontrol requeue 42\n") << signal;
    EXPECT_EQ(
        halo::testing::read_file(temp.path() / "args"),
        "-launcher\nfork\n-n\n2\nhalo\ntrain\n--partitions\nparts dir\n--checkpoint-dir\nck\n");
    const std::string log = halo::testing::read_file(temp.path() / "job.out");
    EXPECT_NE(log.find("SLURM_RESTART_COUNT=0"), std::string::npos) << log;
  }
}

TEST(SbatchScript, OtherExitCodesArePassedOnWithoutRequeue) {
  const halo::testing::TempDir temp;
  EXPECT_EQ(run_script(temp.path(), 0, nullptr, 3), "status 3\n");
  const halo::testing::TempDir signalled;
  EXPECT_EQ(run_script(signalled.path(), 1, "USR1"), "status 1\n");
}

// A launcher that loses the ranks' 75 (exits 0) after rank 0 wrote $HALO_PREEMPTED_FILE.
TEST(SbatchScript, PreemptionFileRequeuesToo) {
  const halo::testing::TempDir temp;
  EXPECT_EQ(run_script(temp.path(), 0, "USR1", -1, true), "status 0\nscontrol requeue 42\n");
  EXPECT_FALSE(fs::exists(temp.path() / ".halo-preempted-42"));  // removed before the requeue
}

}  // namespace
}  // namespace halo::cluster
