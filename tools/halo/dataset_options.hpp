#pragma once
// The --dataset flag and the generator flags shared by the subcommands that load a dataset.

#include <CLI/CLI.hpp>
#include <cstddef>
#include <cstdint>
#include <string>

#include <halo/datasets/dataset.hpp>
#include <halo/datasets/generators/rmat.hpp>
#include <halo/datasets/generators/synthetic.hpp>
#include <halo/datasets/generators/synthetic_mag.hpp>
#include <halo/datasets/temporal.hpp>
#include <halo/kernels/resources.hpp>

namespace halo::cli {

/// What --dataset names and how the built-in generators are configured.
struct DatasetOptions {
  /// "synthetic", "rmat", a registered dataset name (datasets/registry.hpp), or a dataset
  /// directory in the plain format.
  std::string dataset = "synthetic";
  /// Never download a registered dataset (also HALO_OFFLINE=1).
  bool offline = false;
  /// --features: empty (the dataset's own features), "degree" or "constant" (computed from the
  /// graph by datasets::structural_features, replacing the dataset's own).
  std::string features;
  /// The generators' parameters, their seeds (--synthetic-seed, --rmat-seed) included: a
  /// generated dataset never depends on a run's or METIS's --seed.
  datasets::SyntheticConfig synthetic;
  datasets::RmatConfig rmat;
  datasets::SyntheticMagConfig mag;  // `synthetic-mag`: --mag-scale
  /// Bytes the run may hold (0: no limit): a store directory whose arrays are larger opens
  /// mapped (its dense float32 features then read row by row from the file, FeatureStore).
  std::size_t memory_budget = 0;
  /// --columns: the field order of a temporal event list (datasets::parse_temporal_layout).
  std::string columns = "auto";
};

/// Registers --dataset, --offline, --features, the --synthetic-* flags and the --rmat-* flags on
/// `sub`, bound to `o` (which must outlive the parse).
void add_dataset_options(CLI::App* sub, DatasetOptions& o);

/// The dataset `o` names: the stochastic block model for "synthetic", R-MAT for "rmat" (from
/// `o.synthetic` / `o.rmat`, seeds included), a registered dataset through
/// datasets::load_dataset (downloaded and cached on first use, with a progress bar on a
/// terminal), else the plain-format directory `o.dataset` (halo::IoError naming the file when
/// it is missing or malformed). With `o.features` set, the features are replaced by the
/// structural ones it names; without it, a dataset with no feature columns is a halo::IoError
/// naming the dataset and suggesting --features where `features_required` (training; a
/// partition or a store takes a bare graph). Host only.
datasets::Dataset load_dataset(const kernels::Resources& res, const DatasetOptions& o,
                               bool features_required = true);

/// Registers --snapshots, --snapshot-window and --window-snapshots on `sub`, bound to `o`
/// (datasets::SnapshotConfig; all 0 when not given). The first two exclude each other.
void add_snapshot_options(CLI::App* sub, datasets::SnapshotConfig& o);

/// Whether --snapshots or --snapshot-window was given.
bool wants_snapshots(const datasets::SnapshotConfig& o);

/// CLI::ValidationError (a usage error) for --window-snapshots without --snapshots or
/// --snapshot-window; call it from the subcommand's parse callback.
void check_snapshot_options(const datasets::SnapshotConfig& o);

/// A CLI11 check for a floating-point flag: a finite number in [min, max]. CLI::Range alone
/// lets "nan" through (every comparison with NaN is false), which then fails deep inside.
CLI::Validator finite_range(double min, double max);

/// A CLI11 check for an integer flag in [min, max]: "expected an integer in [1, 4096], got
/// 'abc'" (CLI::Range says "Value abc not in range" of a word that is no number at all).
CLI::Validator integer_range(std::int64_t min, std::int64_t max);

/// A CLI11 check for a seed (std::uint64_t): a non-negative integer. CLI11 reads "-1" into an
/// unsigned flag as 2^64 - 1 without complaint.
CLI::Validator seed_value();

}  // namespace halo::cli
