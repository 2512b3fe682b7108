#pragma once
// Helpers of the runtime tests: Cora, small synthetic graphs, one-process training runs.

#include <cstdint>
#include <filesystem>
#include <vector>

#include <halo/datasets/generators/synthetic.hpp>
#include <halo/datasets/readers/plain_format.hpp>
#include <halo/datasets/temporal.hpp>
#include <halo/runtime/runtime.hpp>

#include "support/dataset_util.hpp"
#include "support/testing.hpp"

namespace halo::runtime::test {

inline const kernels::Resources& host() {
  static const kernels::Resources res(kernels::Device::Cpu, 1);
  return res;
}

inline const datasets::Dataset& cora() {
  static const datasets::Dataset d =
      datasets::read_directory(host(), halo::testing::datasets_dir() / "planetoid" / "cora");
  return d;
}

/// Cora keeping only the entries (r, c) with c < r: a directed graph whose A ∪ Aᵀ is Cora's.
inline const datasets::Dataset& directed_cora() {
  static const datasets::Dataset d = halo::testing::directed_copy(host(), cora());
  return d;
}

inline datasets::Dataset small_synthetic(std::uint64_t seed, std::int64_t nodes = 600) {
  datasets::SyntheticConfig c;
  c.num_nodes = nodes;
  c.num_classes = 4;
  c.num_features = 16;
  c.feature_signal = 0.5;  // small graph: a clearer signal than the default keeps tests short
  c.seed = seed;
  return datasets::make_synthetic(host(), c);
}

inline TrainConfig config_for(nn::ModelKind kind, std::uint64_t seed, int epochs) {
  TrainConfig c;
  c.model.kind = kind;
  c.seed = seed;
  c.epochs = epochs;
  return c;
}

inline MiniBatchConfig batches(std::int64_t size, std::vector<int> fanouts, int prefetch = 0) {
  MiniBatchConfig mb;
  mb.batch_size = size;
  mb.fanouts = std::move(fanouts);
  mb.prefetch = prefetch;
  return mb;
}

/// One process: `data` (copied) as the one-part shard, trained with `config`.
inline TrainRun train_local(const kernels::Resources& res, const datasets::Dataset& data,
                            const TrainConfig& config) {
  Shard shard = local_shard(res, halo::testing::copy_dataset(host(), data));
  return train(res, shard, config);
}

/// A small temporal dataset for link prediction: 12 steps of six senders messaging two
/// receivers, plus one pair that moves every step.
inline datasets::TemporalGraph message_events() {
  std::vector<datasets::RawTemporalEvent> events;
  for (int t = 0; t < 12; ++t) {
    for (int u = 0; u < 6; ++u) events.push_back({20 + u, u % 2, t * 10, 0});
    events.push_back({20 + t % 6, 20 + (t + 3) % 6, t * 10 + 5, 0});
  }
  return datasets::make_temporal_graph(events, false, "messages");
}

/// message_events() cut into its 12 steps, each step's own events.
inline datasets::SnapshotConfig message_snapshots() {
  datasets::SnapshotConfig sc;
  sc.num_snapshots = 12;
  sc.window_snapshots = 1;
  return sc;
}

/// A small EvolveGCN-O link-prediction configuration for message_events().
inline TrainConfig message_link_config() {
  TrainConfig c;
  c.lr = 0.02;
  c.weight_decay = 0;
  c.link.window = 3;
  c.link.negatives = 3;
  c.link.model.hidden = 6;
  c.link.scorer_hidden = 8;
  c.link.train_fraction = 0.6;
  c.link.val_fraction = 0.2;
  return c;
}

inline std::vector<double> losses(const TrainResult& r) {
  std::vector<double> v;
  for (const EpochStats& s : r.history) v.push_back(s.train_loss);
  return v;
}

}  // namespace halo::runtime::test
