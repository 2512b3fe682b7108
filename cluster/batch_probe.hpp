#pragma once
// `halo plan`'s batch probe: a few of a mini-batch run's batches sampled on the store's own
// graph before the run, as the run itself samples them, so that the plan's blocks, sampler
// envelope and feature rows read from the store are measured rather than modelled from the
// degree histogram (docs/scheduler.md, "Batch probe").

#include <cstdint>
#include <filesystem>
#include <vector>

#include <halo/runtime/config.hpp>
#include <halo/sampler/sampler_types.hpp>

namespace halo::cluster {

/// What the sampled batches of one batch source measured.
struct BatchProbe {
  /// Batches sampled (0: none; the plan then models the blocks).
  std::int64_t batches = 0;
  /// Per layer, input layer first: a batch's mean destinations, block entries and sources.
  struct Layer {
    double dst = 0, edges = 0, src = 0;
  };
  std::vector<Layer> mean;
  /// Field by field, the largest over the run's first runtime::kProbeBatches batches: what the
  /// run provisions its envelope from (sampler::provision_envelope).
  sampler::SamplerEnvelope largest;
  /// Of a batch's input rows (block 0's sources), the mean number outside the row cache of a
  /// run reading its features from the store's file (runtime::hottest_rows).
  double uncached_rows = 0;
};

/// The training batches and, with MiniBatchConfig::eval_fanouts, the sampled evaluation's.
struct StoreProbe {
  BatchProbe train;
  BatchProbe eval;
};

/// Samples batches of `config`'s mini-batch run (one process, CPU) on the training graph of the
/// store in `dir`, opened as the run opens it (mapped: a graph in a file is read with pread),
/// with the run's seed, seeds and draws. Training: the largest blocks of epoch 0's first
/// kProbeBatches batches (the run's envelope probe), the means over the first `samples` batches
/// of epoch 1 (the run's first epoch; shuffled, so a sample of it). Evaluation: the largest
/// over its first kProbeBatches batches, the means over `samples` batches spread evenly over
/// its batches (its seeds are in id order). A row counts as cached when it is among the
/// cache_bytes / row bytes rows of highest degree (runtime::hottest_rows; 0: none cached).
/// halo::IoError as open_store; halo::LogicError when config has no mini-batch settings.
StoreProbe probe_store_batches(const std::filesystem::path& dir, const runtime::TrainConfig& config,
                               std::int64_t cache_bytes, std::int64_t samples);

}  // namespace halo::cluster
