#pragma once
// `halo train --task link`: what its run and `halo plan` read the same way (train_link.cpp).

#include <halo/datasets/temporal.hpp>
#include <halo/tools/halo/train_options.hpp>

namespace halo::cli {

/// The events of `o`'s temporal dataset (--dataset, --columns). IoError naming the file when it
/// has fewer than two distinct times (nothing to predict from).
datasets::TemporalGraph load_link_events(const TrainOptions& o);

/// The snapshots `o` cuts (--snapshots / --snapshot-window; each step's own events unless
/// --window-snapshots is given).
datasets::SnapshotConfig link_snapshots(const TrainOptions& o);

}  // namespace halo::cli
