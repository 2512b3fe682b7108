// The `halo` program: maps command-line flags onto the components' config structs.
#include <cstdio>
#include <exception>
#include <string>
#include <vector>

#include <halo/kernels/error.hpp>
#include <halo/runtime/comm/comm.hpp>
#include <halo/tools/halo/commands.hpp>

int main(int argc, char** argv) {
  CLI::App app{"Halo: train graph neural networks on large graphs."};
  app.set_version_flag("--version", "halo " HALO_VERSION);
  app.require_subcommand(1, 1);
  const std::vector<halo::cli::Command> commands = {halo::cli::add_train_command(app),
                                                    halo::cli::add_datasets_command(app),
                                                    halo::cli::add_partition_command(app)};

  // Exit codes: 0 success, 1 data or runtime error, 2 usage error (CLI11 validates every flag).
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
