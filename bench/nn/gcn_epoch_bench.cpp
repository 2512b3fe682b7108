// One training epoch (forward + loss + backward + Adam) exactly as `halo train` runs it.
#include <benchmark/benchmark.h>
#include <optional>
#include <utility>

#include <halo/runtime/runtime.hpp>

#include "support/machine.hpp"
#include "support/shapes.hpp"

namespace {

using namespace halo;

/// One epoch per iteration of the Trainer on `data` (one process), after a warm-up epoch;
/// `mini_batch` set: sampled batches (arxiv-shape GraphSAGE's set-up).
void run_epochs(benchmark::State& state, const datasets::Dataset& data, nn::ModelKind kind,
                std::int64_t hidden, std::optional<runtime::MiniBatchConfig> mini_batch = {}) {
  const kernels::Resources res;
  runtime::TrainConfig config;
  config.model.kind = kind;
  config.model.hidden = hidden;
  config.mini_batch = std::move(mini_batch);
  runtime::Shard shard = runtime::local_shard(res, data.clone(res));
  nn::Model<float> model =
      runtime::make_model(res, shard.num_features, shard.part.num_classes, config);
  runtime::Trainer trainer(res, runtime::node_classification(res, shard, config, model),
                           config.epochs, config.checkpoint);
  std::uint64_t epoch = 0;
  runtime::EpochStats s;
  trainer.train_epoch(++epoch, s);  // warm-up: first-touch allocations of activations
  for (auto _ : state) {
    trainer.train_epoch(++epoch, s);
    benchmark::DoNotOptimize(s.train_loss);
  }
  state.counters["nodes"] = static_cast<double>(data.num_nodes());
  state.counters["edges"] = static_cast<double>(data.graph.num_edges());
}

const datasets::Dataset& cora() {
  static const kernels::Resources res;
  static const datasets::Dataset d = bench::cora(res);
  return d;
}
const datasets::Dataset& arxiv() {
  static const kernels::Resources res;
  static const datasets::Dataset d = bench::arxiv_shape(res);
  return d;
}

void BM_GcnEpochCora(benchmark::State& s) { run_epochs(s, cora(), nn::ModelKind::Gcn, 16); }
void BM_SageEpochCora(benchmark::State& s) { run_epochs(s, cora(), nn::ModelKind::Sage, 16); }
void BM_GcnEpochArxivShape(benchmark::State& s) { run_epochs(s, arxiv(), nn::ModelKind::Gcn, 256); }
void BM_SageEpochArxivShape(benchmark::State& s) {
  run_epochs(s, arxiv(), nn::ModelKind::Sage, 256);
}
void BM_SageMiniBatchEpochArxivShape(benchmark::State& s) {
  runtime::MiniBatchConfig mb;
  mb.batch_size = 1024;
  mb.fanouts = {10, 5};
  run_epochs(s, arxiv(), nn::ModelKind::Sage, 256, mb);
}
BENCHMARK(BM_GcnEpochCora)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(BM_SageEpochCora)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(BM_GcnEpochArxivShape)
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime()
    ->MinTime(bench::smoke() ? 0.001 : 3.0);
BENCHMARK(BM_SageEpochArxivShape)
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime()
    ->MinTime(bench::smoke() ? 0.001 : 3.0);

BENCHMARK(BM_SageMiniBatchEpochArxivShape)
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime()
    ->MinTime(bench::smoke() ? 0.001 : 3.0);

}  // namespace
