#pragma once
// The `halo` subcommands: each registers its flags on the app and returns what to run.

#include <CLI/CLI.hpp>
#include <functional>

namespace halo::cli {

/// A registered subcommand and the action to run when it was chosen. The action returns the
/// exit code and throws halo::Error (or std::exception) on failure.
struct Command {
  CLI::App* app = nullptr;
  std::function<int()> run;
};

/// `halo train`: full-graph training on a dataset directory or the synthetic generator.
Command add_train_command(CLI::App& app);

/// `halo datasets`: list, info, fetch and convert the registered public datasets.
Command add_datasets_command(CLI::App& app);

/// `halo partition`: split a dataset into P parts on disk (METIS or random), or describe one.
Command add_partition_command(CLI::App& app);

/// `halo predict`: class probabilities or labels of a saved model for chosen nodes; scores.
Command add_predict_command(CLI::App& app);

/// `halo embed`: the node representations after one layer of a saved model, as .npy.
Command add_embed_command(CLI::App& app);

/// `halo plan`: the resources a `halo train` command line needs, predicted without training.
Command add_plan_command(CLI::App& app);

/// `halo calibrate`: measures the cost model's coefficients on this machine.
Command add_calibrate_command(CLI::App& app);

}  // namespace halo::cli
