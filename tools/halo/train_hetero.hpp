#pragma once
// `halo train` on a heterogeneous dataset (the typed directory format): the defaults of the
// heterogeneous node-classification task (train_hetero.cpp registers it, train_task.hpp).

#include <cstdint>
#include <string>
#include <vector>

#include <halo/datasets/hetero.hpp>
#include <halo/kernels/resources.hpp>
#include <halo/runtime/config.hpp>
#include <halo/tools/halo/train_options.hpp>

namespace halo::cli {

/// The defaults of the heterogeneous task for the flags a run does not give (docs/cli.md),
/// chosen on heco_acm at 20 labels per class (bench/results/hgnn.md).
struct HeteroDefaults {
  static constexpr int kLayers = 2;
  static constexpr std::int64_t kHidden = 64;
  static constexpr float kDropout = 0.8f;
  static constexpr double kLr = 0.01;
  static constexpr double kWeightDecay = 5e-4;
  static constexpr int kEpochs = 80;
};

/// The heterogeneous dataset of `o` (--dataset, --split, --offline, --mag), on the host.
datasets::HeteroGraph load_hetero(const kernels::Resources& host, const TrainOptions& o);

/// The configuration of `o` on a dataset with `relations` (their names, reverses included: the
/// fan-outs name them): the flags given, else HeteroDefaults. What halo train runs and halo plan
/// plans. UsageError on fan-outs that do not fit.
runtime::TrainConfig hetero_train_config(const TrainOptions& o,
                                         const std::vector<std::string>& relations);

}  // namespace halo::cli
