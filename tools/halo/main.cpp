// The `halo` program: maps command-line flags onto the components' config structs.
#include <strings.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <exception>
#include <string>
#include <vector>

#include <halo/kernels/error.hpp>
#include <halo/runtime/comm/comm.hpp>
#include <halo/tools/halo/commands.hpp>

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
  if (changed) execv("/proc/self/exe", argv);
}

}  // namespace

int main(int argc, char** argv) {
  apply_runtime_defaults(argv);
  CLI::App app{"Halo: train graph neural networks on large graphs."};
  app.set_version_flag("--version", "halo " HALO_VERSION);
  app.require_subcommand(1, 1);
  // A usage error is one line: what was wrong, naming the flag (CLI11's default adds a second).
  app.failure_message([](const CLI::App*, const CLI::Error& e) {
    return "halo: usage error: " + std::string(e.what()) + " (see --help)\n";
  });
  const std::vector<halo::cli::Command> commands = {
      halo::cli::add_train_command(app),     halo::cli::add_datasets_command(app),
      halo::cli::add_partition_command(app), halo::cli::add_predict_command(app),
      halo::cli::add_embed_command(app),     halo::cli::add_plan_command(app),
      halo::cli::add_calibrate_command(app)};

  // Exit codes: 0 success, 1 data or runtime error, 2 usage error (CLI11 validates every flag),
  // 75 `halo train` preempted with its checkpoint committed (runtime::kExitPreempted).
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e) == 0 ? 0 : 2;
  }
  try {
    for (const auto& c : commands)
      if (c.app->parsed()) return c.run();
    return 2;
  } catch (const std::exception& e) {
    // In a multi-rank run: name the rank, then end every rank (MPI_Abort) so none waits forever
    // for a message this one will never send.
    const std::string what = e.what();
    const int rank = halo::detail::error_rank();
    const std::string prefix =
        rank >= 0 && what.rfind("[rank ", 0) != 0 ? "[rank " + std::to_string(rank) + "] " : "";
    std::fprintf(stderr, "%shalo: error: %s\n", prefix.c_str(), what.c_str());
    std::fflush(stderr);
    halo::runtime::abort_world(1);
    return 1;
  }
}
