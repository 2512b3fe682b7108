#pragma once
// The --dataset flag and the generator flags shared by the subcommands that load a dataset.

#include <CLI/CLI.hpp>
#include <cstdint>
#include <string>

#include <halo/datasets/dataset.hpp>
#include <halo/datasets/rmat.hpp>
#include <halo/datasets/synthetic.hpp>
#include <halo/kernels/resources.hpp>

namespace halo::cli {

/// What --dataset names and how the built-in generators are configured.
struct DatasetOptions {
  /// "synthetic", "rmat", a registered dataset name (datasets/registry.hpp), or a dataset
  /// directory in the plain format.
  std::string dataset = "synthetic";
  /// Never download a registered dataset (also HALO_OFFLINE=1).
  bool offline = false;
  datasets::SyntheticConfig synthetic;
  datasets::RmatConfig rmat;
};

/// Registers --dataset, the --synthetic-* flags and the --rmat-* flags on `sub`, bound to `o`
/// (which must outlive the parse).
void add_dataset_options(CLI::App* sub, DatasetOptions& o);

/// The dataset `o` names: the stochastic block model for "synthetic", R-MAT for "rmat" (both
/// drawn from `seed`), a registered dataset through datasets::load_dataset (downloaded and
/// cached on first use, with a progress bar on a terminal), else the plain-format directory
/// `o.dataset` (halo::IoError naming the file when it is missing or malformed).
datasets::Dataset load_dataset(const kernels::Resources& res, const DatasetOptions& o,
                               std::uint64_t seed);

}  // namespace halo::cli
