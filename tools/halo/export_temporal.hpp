#pragma once
// `halo datasets export --snapshots N`: the snapshots, inputs, targets and split of the
// link-prediction task (docs/dynamic.md) as one .npz, so a peer framework trains on exactly
// the data `halo train --task link` builds (docs/formats.md, "Exported temporal datasets").

#include <CLI/CLI.hpp>
#include <string>
#include <vector>

#include <halo/datasets/temporal.hpp>
#include <halo/tools/halo/dataset_options.hpp>

namespace halo::cli {

/// The flags of a temporal export: the snapshots (as `halo train --task link` reads them) and
/// the task's window and split, which fix the training steps and so the degree cap.
struct TemporalExportOptions {
  datasets::SnapshotConfig snapshots;
  int window = 10;
  std::vector<double> link_split{0.7, 0.1};
  /// Set by add_temporal_export_options: the flags, to tell given from default.
  CLI::Option* window_snapshots_flag = nullptr;
  CLI::Option* window_flag = nullptr;
  CLI::Option* link_split_flag = nullptr;
};

/// Registers --snapshots, --snapshot-window, --window-snapshots (add_snapshot_options), --window
/// and --link-split on `exp`, bound to `o` (which must outlive the parse).
void add_temporal_export_options(CLI::App* exp, TemporalExportOptions& o);

/// Whether `o` asks for a temporal export (--snapshots or --snapshot-window). UsageError when
/// --window-snapshots, --window or --link-split is given without either.
bool wants_temporal_export(const TemporalExportOptions& o);

/// Writes the temporal export of `data`'s event list (a directory holding events.tsv or
/// events.csv; --columns) under `o` to `out`, from runtime::local_temporal_shard: what one
/// process of `halo train --task link` with the same flags trains on. Each snapshot holds its
/// own step's events unless --window-snapshots says otherwise, as in training. IoError for a
/// dataset that is not a temporal directory; UsageError for a window or split that leaves no
/// training or test step. Returns the exit code.
int run_export_temporal(const DatasetOptions& data, const TemporalExportOptions& o,
                        const std::string& out);

}  // namespace halo::cli
