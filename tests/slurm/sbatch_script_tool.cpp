// Test-only: prints runtime::sbatch_script for the request its flags describe, so that
// tests/slurm/run.sh submits a generated script (the CLI's `halo plan --emit slurm` makes the
// same call). Usage: halo_sbatch_script [--job-name X] [--tasks N] [--tasks-per-node N]
// [--cpus-per-task N] [--mem BYTES] [--time SECONDS] [--output FILE] [--launcher WORD]...
// -- COMMAND...
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <stdexcept>
#include <string>

#include <halo/runtime/slurm.hpp>

int main(int argc, char** argv) {
  halo::runtime::SlurmRequest r;
  bool launcher_given = false;
  try {
    int i = 1;
    for (; i < argc && std::string(argv[i]) != "--"; i += 2) {
      const std::string flag = argv[i];
      if (i + 1 >= argc) throw std::runtime_error(flag + ": value expected");
      const std::string v = argv[i + 1];
      if (flag == "--job-name")
        r.job_name = v;
      else if (flag == "--tasks")
        r.tasks = std::stoi(v);
      else if (flag == "--tasks-per-node")
        r.tasks_per_node = std::stoi(v);
      else if (flag == "--cpus-per-task")
        r.cpus_per_task = std::stoi(v);
      else if (flag == "--mem")
        r.memory_per_node_bytes = std::stoll(v);
      else if (flag == "--time")
        r.time_limit_s = std::stoll(v);
      else if (flag == "--output")
        r.output = v;
      else if (flag == "--launcher") {
        if (!launcher_given) r.launcher.clear();
        launcher_given = true;
        r.launcher.push_back(v);
      } else {
        throw std::runtime_error("unknown flag " + flag);
      }
    }
    for (++i; i < argc; ++i) r.command.emplace_back(argv[i]);
    std::fputs(halo::runtime::sbatch_script(r).c_str(), stdout);
    return 0;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "halo_sbatch_script: %s\n", e.what());
    return 2;
  }
}
