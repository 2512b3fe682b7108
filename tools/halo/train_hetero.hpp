#pragma once
// `halo train` on a heterogeneous dataset (the typed directory format): the defaults of the
// heterogeneous node-classification task (train_hetero.cpp registers it, train_task.hpp).

#include <cstdint>

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

}  // namespace halo::cli
