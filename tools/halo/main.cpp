// The `halo` program: maps command-line flags onto the components' config structs.
#include <strings.h>
#include <unistd.h>

#include <algorithm>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <new>
#include <string>
#include <vector>

#include <halo/kernels/buffer.hpp>
#include <halo/kernels/error.hpp>
#include <halo/runtime/comm/comm.hpp>
#include <halo/tools/halo/commands.hpp>
#include <halo/tools/halo/run_support.hpp>

namespace {

// OpenMP wait policy. libgomp's idle workers spin up to 300000 times before they sleep; beside
// another busy process that spinning takes the core a working thread needs: on 2 cores beside one
// busy loop, 2 threads took 4 to 8 ms per Cora epoch (1.4 ms alone, 1.7 ms with --threads 1).
// GOMP_SPINCOUNT=100 was chosen by measurement against libgomp's default, passive and 100 to
// 100000 spins (bench/results/omp_wait.md): as fast as any alone (1.3 ms) and the fastest beside
// the busy loop (1.9 ms). libgomp reads OMP_WAIT_POLICY and GOMP_SPINCOUNT once, in its
// constructor, before any code of ours (main or a static initialiser) runs: a setenv here would
// be ignored. So when the user has set neither, the default is put in the environment and the
// program re-executes itself once (the variable is then set, so it does not loop); if exec fails,
// it runs on with libgomp's default. docs/cli.md, "OpenMP waiting and BLAS kernels".
constexpr const char* kDefaultSpinCount = "100";

// OpenBLAS kernels. A DYNAMIC_ARCH OpenBLAS picks its kernels from the CPU's model number, and
// one older than the CPU (Debian 12's 0.3.21 on an Emerald Rapids Xeon, model 207) falls back to
// its Prescott (SSE3) kernels although the CPU has AVX-512: sgemm ran 3-5x slower than with
// the SkylakeX kernels on this project's machine. OpenBLAS also reads OPENBLAS_CORETYPE only in
// its constructor, so when the user has not set it and the library reports the Prescott
// fallback on a CPU with AVX-512 (SkylakeX kernels) or AVX2 + FMA (Haswell), it is put in the
// environment for the same single re-execution. docs/cli.md, "OpenMP waiting and BLAS kernels".
extern "C" char* openblas_get_corename(void) __attribute__((weak));

const char* better_openblas_core() {
  if (std::getenv("OPENBLAS_CORETYPE") != nullptr || openblas_get_corename == nullptr)
    return nullptr;
  const char* core = openblas_get_corename();
  if (core == nullptr || strcasecmp(core, "prescott") != 0) return nullptr;
  __builtin_cpu_init();
  if (__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
      __builtin_cpu_supports("avx512vl"))
    return "SkylakeX";
  if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")) return "Haswell";
  return nullptr;
}

/// Puts the defaults above in the environment where the user set none, and re-executes the
/// program once if it did (the variables are then set, so it does not loop); if exec fails, it
/// runs on with the libraries' own choices.
void apply_runtime_defaults(char** argv) {
  bool changed = false;
  if (std::getenv("OMP_WAIT_POLICY") == nullptr && std::getenv("GOMP_SPINCOUNT") == nullptr)
    changed = setenv("GOMP_SPINCOUNT", kDefaultSpinCount, 0) == 0;
  if (const char* core = better_openblas_core())
    changed = setenv("OPENBLAS_CORETYPE", core, 0) == 0 || changed;
  if (!changed) return;
  // The program's own path, not /proc/self/exe: the kernel names a process after the file it
  // executes, and `ps`, `pgrep halo` and `top` would show it as "exe".
  char self[4096];
  const ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
  if (n > 0) {
    self[n] = '\0';
    execv(self, argv);
  }
  execv("/proc/self/exe", argv);  // the file was replaced or removed since it started
}

/// Every error is one line on stderr: "halo: error: [rank r] <what>" (the rank tag only where
/// several ranks run; a message that names its rank first keeps that one).
void print_error(std::string what, const std::string& after = "") {
  std::string tag;
  if (what.rfind("[rank ", 0) == 0 && what.find("] ") != std::string::npos) {
    tag = what.substr(0, what.find("] ") + 2);
    what = what.substr(tag.size());
  } else if (const int rank = halo::error_rank(); rank >= 0) {
    tag = "[rank " + std::to_string(rank) + "] ";
  }
  std::fprintf(stderr, "halo: error: %s%s%s\n", tag.c_str(), what.c_str(), after.c_str());
  std::fflush(stderr);
}

/// Levenshtein distance, for "did you mean" on a mistyped command.
std::size_t edit_distance(const std::string& a, const std::string& b) {
  std::vector<std::size_t> row(b.size() + 1);
  for (std::size_t j = 0; j <= b.size(); ++j) row[j] = j;
  for (std::size_t i = 1; i <= a.size(); ++i) {
    std::size_t diagonal = row[0];
    row[0] = i;
    for (std::size_t j = 1; j <= b.size(); ++j) {
      const std::size_t up = row[j];
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, diagonal + (a[i - 1] != b[j - 1] ? 1 : 0)});
      diagonal = up;
    }
  }
  return row[b.size()];
}

/// The usage error for a first argument that names no command ("" when it names one, or is a
/// flag such as --help, which CLI11 handles).
std::string unknown_command(int argc, char** argv,
                            const std::vector<halo::cli::Command>& commands) {
  std::string names, closest;
  std::size_t best = 3;  // suggest only close names
  for (const auto& c : commands) {
    names += (names.empty() ? "" : ", ") + c.app->get_name();
    const std::size_t d = argc > 1 ? edit_distance(argv[1], c.app->get_name()) : 0;
    if (d < best) best = d, closest = c.app->get_name();
  }
  if (argc < 2) return "a command is required: " + names + " (see --help)";
  const std::string first = argv[1];
  if (first.empty() || first[0] == '-') return "";
  for (const auto& c : commands)
    if (c.app->get_name() == first) return "";
  return "unknown command '" + first + "'" +
         (closest.empty() ? "" : " (did you mean '" + closest + "'?)") + "; the commands are " +
         names + " (see --help)";
}

}  // namespace

int main(int argc, char** argv) {
  // A file-size limit (ulimit -f) then makes a write fail with EFBIG, reported and cleaned up
  // like a full disk, instead of killing the process with its temporary files left behind.
  std::signal(SIGXFSZ, SIG_IGN);
  // A mapped store file cut short under the run: one line naming it, exit 1 (not a crash).
  halo::kernels::install_mapping_fault_handler();
  apply_runtime_defaults(argv);
  CLI::App app{"Halo: train graph neural networks on large graphs."};
  app.set_version_flag("--version", "halo " HALO_VERSION);
  app.require_subcommand(1, 1);
  // A usage error is one line: what was wrong, naming the flag (CLI11's default adds a second).
  app.failure_message([](const CLI::App*, const CLI::Error& e) {
    return "halo: error: " + std::string(e.what()) + " (see --help)\n";
  });
  const std::vector<halo::cli::Command> commands = {
      halo::cli::add_train_command(app),     halo::cli::add_datasets_command(app),
      halo::cli::add_partition_command(app), halo::cli::add_predict_command(app),
      halo::cli::add_embed_command(app),     halo::cli::add_plan_command(app),
      halo::cli::add_calibrate_command(app)};
  if (const std::string e = unknown_command(argc, argv, commands); !e.empty()) {
    print_error(e);
    return 2;
  }

  // Exit codes: 0 success, 1 data or runtime error, 2 usage error (CLI11 validates every flag;
  // a command finds the rest, halo::cli::UsageError), 75 `halo train` preempted with its
  // checkpoint committed (runtime::kExitPreempted).
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e) == 0 ? 0 : 2;
  }
  const halo::cli::Command* command = nullptr;
  for (const auto& c : commands)
    if (c.app->parsed()) command = &c;
  if (command == nullptr) return 2;
  try {
    return command->run();
  } catch (const halo::cli::UsageError& e) {
    // Every rank finds the same usage error: no rank is left waiting, nothing to abort.
    print_error(e.what(), " (see halo " + command->app->get_name() + " --help)");
    return 2;
  } catch (const std::bad_alloc&) {
    // An allocation outside halo's buffers (whose failures name their bytes): the size unknown.
    print_error(halo::kernels::out_of_host_memory(0));
    halo::runtime::abort_world(1);
    return 1;
  } catch (const std::exception& e) {
    // In a multi-rank run: name the rank, then end every rank (MPI_Abort) so none waits forever
    // for a message this one will never send.
    print_error(e.what());
    halo::runtime::abort_world(1);
    return 1;
  }
}
