#pragma once
// `halo train --task link`: link prediction on a temporal dataset (EvolveGCN's task), its
// progress, summary and --json.

#include <string>

#include <halo/tools/halo/checkpoint_options.hpp>
#include <halo/tools/halo/train_options.hpp>

namespace halo::cli {

/// Loads the temporal dataset `o` names, cuts its snapshots, trains `o`'s temporal model,
/// prints progress (stderr) and the summary (stdout) and writes `json` (empty: none). Returns
/// the exit code; UsageError for a dataset that is not temporal, halo::Error on data or
/// runtime errors.
int run_link_train(const TrainOptions& o, const std::string& json,
                   const CheckpointOptions& checkpoint);

}  // namespace halo::cli
