#pragma once
// `halo train --task link`: what its run and `halo plan` read the same way (train_link.cpp).

#include <string>

#include <halo/datasets/temporal.hpp>
#include <halo/kernels/resources.hpp>
#include <halo/runtime/comm/comm.hpp>
#include <halo/runtime/tasks/link/link_prediction.hpp>
#include <halo/tools/halo/train_options.hpp>

namespace halo::cli {

/// The events of `o`'s temporal dataset (--dataset, --columns). IoError naming the file when it
/// has fewer than two distinct times (nothing to predict from).
datasets::TemporalGraph load_link_events(const TrainOptions& o);

/// The snapshots `o` cuts (--snapshots / --snapshot-window; each step's own events unless
/// --window-snapshots is given).
datasets::SnapshotConfig link_snapshots(const TrainOptions& o);

/// `g` cut by `snapshots` and prepared for a run training on `train_fraction` of them: in one
/// process (`partitions` empty), or this rank's part of every snapshot under the owners of the
/// snapshot partition series `partitions` (collective over `world`, one rank per part).
runtime::TemporalShard link_shard(const kernels::Resources& res, runtime::Comm& world,
                                  const datasets::TemporalGraph& g,
                                  const datasets::SnapshotConfig& snapshots,
                                  const std::string& partitions, double train_fraction);

}  // namespace halo::cli
