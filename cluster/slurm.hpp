#pragma once
// The sbatch script of a training job: resources, requeue on preemption, and the signal
// forwarding that turns Slurm's warning into a checkpoint (docs/checkpoints.md, "Slurm").

#include <cstdint>
#include <string>
#include <vector>

namespace halo::cluster {

/// What the job asks Slurm for and what it runs.
struct SlurmRequest {
  std::string job_name = "halo";
  int nodes = 1;
  /// An elastic job (a partition that trains on 1 to K ranks): > 0 and < nodes asks for a node
  /// range, --nodes=min_nodes-nodes, and starts tasks_per_node ranks on every node Slurm gave
  /// (SLURM_JOB_NUM_NODES), at most `tasks`. 0: exactly `nodes` nodes and `tasks` ranks.
  int min_nodes = 0;
  int tasks = 1;  ///< ranks over all nodes (an elastic job: at most)
  int tasks_per_node = 1;
  int cpus_per_task = 1;
  std::int64_t memory_per_node_bytes = 0;  ///< --mem, rounded up to MiB; 0: not requested
  std::int64_t time_limit_s = 3600;        ///< --time, rounded up to whole minutes
  std::string partition;                   ///< empty: the cluster's default
  std::string output = "halo-%j.out";      ///< stdout and stderr, appended across requeues
  /// Seconds before the time limit at which Slurm sends SIGUSR1 to the batch shell
  /// (--signal=B:USR1@N); less than the time limit.
  int signal_lead_s = 120;
  /// The launcher and its flags: MPICH's Hydra, to which `-n <tasks>` is added.
  std::vector<std::string> launcher = {"mpiexec"};
  /// The rank's program and arguments, e.g. {"halo", "train", "--partitions", "parts", ...}.
  std::vector<std::string> command;
};

/// A bash script for sbatch: #SBATCH lines for every field plus --requeue, --open-mode=append
/// and --signal=B:USR1@<lead>; it logs SLURM_RESTART_COUNT, starts the ranks in the background
/// (`<launcher> [-launcher fork] -n <tasks> <command>`, fork on one node), and on SIGUSR1 or
/// SIGTERM sends SIGUSR1 to the launcher, which forwards it to every rank (Hydra forwards SIGUSR1
/// to its proxies and they to the processes). It waits for the ranks; when they exit with
/// kExitPreempted (75: checkpoint committed), or rank 0 wrote $HALO_PREEMPTED_FILE (Hydra was
/// seen to exit 0 instead of 75 after forwarding a signal), it runs
/// `scontrol requeue "$SLURM_JOB_ID"`; otherwise it exits with the launcher's code.
/// An elastic request (min_nodes) writes --nodes=MIN-MAX without --ntasks and launches
/// `-n $ranks`, ranks = min(tasks, SLURM_JOB_NUM_NODES x tasks_per_node), fork on one node.
/// Every argument is shell-quoted. halo::LogicError for an impossible request (no command,
/// counts < 1, tasks beyond nodes x tasks per node, min_nodes not below nodes, a lead not below
/// the time limit) or a #SBATCH value with white space.
std::string sbatch_script(const SlurmRequest& request);

/// `word` as one bash word: unchanged when it has only [A-Za-z0-9_@%+=:,./-] characters,
/// otherwise in single quotes (a quote inside becomes '\'').
std::string shell_quote(const std::string& word);

}  // namespace halo::cluster
