#pragma once
// `halo train` on a heterogeneous dataset (the typed directory format): the heterogeneous
// node-classification task, its defaults, summary and --json.

#include <cstdint>
#include <optional>
#include <string>

#include <halo/datasets/synthetic_mag.hpp>
#include <halo/runtime/runtime.hpp>
#include <halo/tools/halo/checkpoint_options.hpp>

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

/// What `halo train` maps onto the heterogeneous task.
struct HeteroTrainOptions {
  std::string dataset;               // the typed directory or a registered name (ogbn-mag)
  std::string partitions;            // or its partition (--partitions DIR, one rank per part)
  bool offline = false;              // --offline
  datasets::SyntheticMagConfig mag;  // --mag-scale (synthetic-mag)
  std::optional<int> split;          // --split K; unset: the smallest K
  std::string model = "rgcn";
  int layers = HeteroDefaults::kLayers;
  std::int64_t hidden = HeteroDefaults::kHidden;
  float dropout = HeteroDefaults::kDropout;
  double lr = HeteroDefaults::kLr;
  double weight_decay = HeteroDefaults::kWeightDecay;
  int epochs = HeteroDefaults::kEpochs;
  int num_bases = 0;
  int heads = 4;  // HGT
  std::string featureless = "zero";
  std::uint64_t seed = 0;
  int threads = 0;
  std::string device = "cpu";
  bool normalize_features = true;
  std::string json;
  /// --mode mini-batch: batch size and replacement from here, the fan-outs from `fanouts`
  /// (sampler::parse_hetero_fanouts over the dataset's relations).
  std::optional<runtime::MiniBatchConfig> mini_batch;
  std::string fanouts;
  CheckpointOptions checkpoint;  // --checkpoint-dir, --checkpoint-every, --resume
};

/// Reads the dataset, trains, prints progress (stderr) and the summary (stdout), writes
/// --json. Returns the exit code; throws halo::Error on data or runtime errors.
int run_hetero_train(const HeteroTrainOptions& o);

}  // namespace halo::cli
