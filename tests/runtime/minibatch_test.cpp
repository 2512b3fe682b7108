// Mini-batch training end to end: determinism with and without the prefetching pipeline, a
// falling loss on a larger synthetic graph, the input dropout in the gather, and the errors (Cora
// accuracy: accuracy_test.cpp).
#include <sched.h>
#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <gtest/gtest.h>
#include <iterator>
#include <numeric>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include <halo/datasets/generators/synthetic.hpp>
#include <halo/datasets/store/store.hpp>
#include <halo/kernels/elementwise.hpp>
#include <halo/nn/model.hpp>
#include <halo/runtime/data/batches.hpp>
#include <halo/runtime/data/feature_store.hpp>
#include <halo/runtime/runtime.hpp>

#include "runtime/runtime_test_util.hpp"

namespace halo::runtime::test {
namespace {

TrainConfig sage_config(std::uint64_t seed, int epochs) {
  return config_for(nn::ModelKind::Sage, seed, epochs);
}

TrainResult train(const kernels::Resources& res, const datasets::Dataset& data, TrainConfig config,
                  const MiniBatchConfig& mb) {
  config.mini_batch = mb;
  return train_local(res, data, config).result;
}

// The pipeline changes when batches are prepared, not what they hold: prefetch 0 and 2 and one
// or two threads give the same losses; the sampler stays within its envelope.
TEST(MiniBatchTraining, PrefetchAndThreadsDoNotChangeTheRun) {
  MiniBatchConfig mb = batches(40, {5, 3});
  std::vector<double> reference;
  for (const auto& [threads, prefetch] : {std::pair{1, 0}, std::pair{2, 2}, std::pair{1, 1}}) {
    SCOPED_TRACE(::testing::Message() << threads << " threads, prefetch " << prefetch);
    const kernels::Resources res(kernels::Device::Cpu, threads);
    mb.prefetch = prefetch;
    const TrainResult r = train(res, cora(), sage_config(4, 5), mb);
    const std::size_t envelope = r.sampler_envelope_bytes, peak = r.sampler_peak_bytes;
    std::vector<double> losses;
    for (const EpochStats& s : r.history) losses.push_back(s.train_loss);
    if (reference.empty()) reference = losses;
    for (std::size_t i = 0; i < losses.size(); ++i)
      EXPECT_NEAR(losses[i], reference[i], 1e-5 * reference[i]);
    EXPECT_GT(peak, 0u);
    EXPECT_LE(peak * static_cast<std::size_t>(prefetch + 1), envelope);
  }
}

// The sampler's envelope is measured: the largest blocks of the first batches with a margin,
// below the sampler's bound; with no margin later batches (other epochs' draws, the sampled
// evaluation's later batches) exceed it and grow the slots' buffers. Every margin gives the
// run of the bound (a margin past it), bit for bit, for SAGE and GCN (whose blocks get
// self-loops in buffers of their own), with and without the producer thread.
TEST(MiniBatchTraining, AMeasuredEnvelopeGivesTheRunOfTheBound) {
  const kernels::Resources res(kernels::Device::Cpu, 1);
  for (const auto& [kind, prefetch] :
       {std::pair{nn::ModelKind::Sage, 1}, std::pair{nn::ModelKind::Gcn, 0}}) {
    SCOPED_TRACE(nn::to_string(kind) + " prefetch " + std::to_string(prefetch));
    MiniBatchConfig mb = batches(40, {5, 3}, prefetch);
    mb.eval_fanouts = {4, 4};
    std::vector<double> reference;
    for (const double margin : {1e9, 0.25, 0.0}) {
      SCOPED_TRACE(::testing::Message() << "margin " << margin);
      mb.envelope_margin = margin;
      const TrainResult r = train(res, cora(), config_for(kind, 4, 5), mb);
      std::vector<double> run;
      for (const EpochStats& s : r.history)
        run.insert(run.end(), {s.train_loss, s.metrics.at("val_loss"), s.metrics.at("val_accuracy"),
                               s.metrics.at("test_accuracy")});
      if (reference.empty()) {
        reference = run;
        EXPECT_EQ(r.sampler_envelope_bytes, r.sampler_bound_bytes);
      } else {
        EXPECT_LT(r.sampler_envelope_bytes, r.sampler_bound_bytes);
      }
      EXPECT_EQ(run, reference);
      EXPECT_GT(r.sampler_peak_bytes, 0u);
      EXPECT_LE(r.sampler_peak_bytes * static_cast<std::size_t>(prefetch + 1),
                r.sampler_envelope_bytes);
      if (margin == 0)
        EXPECT_GT(r.sampler_growths, 0);
      else
        EXPECT_EQ(r.sampler_growths, 0);
    }
  }
}

// One process evaluates a mini-batch run layer by layer; a budget below the data and the
// evaluation's hidden representations moves those to a file: the run's losses, accuracies and
// kept epoch stay the same, bit for bit.
TEST(MiniBatchTraining, ASpilledEvaluationGivesTheSameRun) {
  const kernels::Resources res(kernels::Device::Cpu, 2);
  for (const nn::ModelKind kind : {nn::ModelKind::Gcn, nn::ModelKind::Sage}) {
    SCOPED_TRACE(nn::to_string(kind));
    TrainConfig c = config_for(kind, 5, 4);
    c.model.num_layers = 3;
    const TrainResult memory = train(res, cora(), c, batches(256, {5, 5, 3}));
    c.memory_budget = 1;
    const TrainResult spilled = train(res, cora(), c, batches(256, {5, 5, 3}));
    EXPECT_GT(memory.evaluation_bytes, 0u);
    EXPECT_EQ(memory.evaluation_spill_bytes, 0);
    EXPECT_EQ(spilled.evaluation_spill_bytes, 2 * 2708 * c.model.hidden * 4);
    EXPECT_LT(spilled.evaluation_bytes, memory.evaluation_bytes);
    EXPECT_EQ(losses(spilled), losses(memory));
    EXPECT_EQ(spilled.metrics, memory.metrics);
    EXPECT_EQ(spilled.best_epoch, memory.best_epoch);
  }
}

// --eval-fanouts: the training, validation and test nodes scored in sampled batches. Over every
// neighbour (-1) the scores are the exact evaluation's (the same accuracies; the validation loss
// summed on the host instead of by the kernel, within rounding); fewer neighbours change the
// scores but never the training (the same losses), and the draw is the same at every
// evaluation (a second run gives the same scores).
TEST(MiniBatchTraining, ASampledEvaluationOverEveryNeighbourIsTheExactOne) {
  const kernels::Resources res(kernels::Device::Cpu, 2);
  for (const nn::ModelKind kind : {nn::ModelKind::Gcn, nn::ModelKind::Sage}) {
    SCOPED_TRACE(nn::to_string(kind));
    const TrainConfig c = config_for(kind, 5, 4);
    const MiniBatchConfig mb = batches(256, {5, 3});
    const TrainResult exact = train(res, cora(), c, mb);
    MiniBatchConfig all = mb;
    all.eval_fanouts = {-1, -1};
    const TrainResult sampled = train(res, cora(), c, all);
    EXPECT_EQ(losses(sampled), losses(exact));
    ASSERT_EQ(sampled.history.size(), exact.history.size());
    for (std::size_t e = 0; e < exact.history.size(); ++e)
      for (const auto& [name, value] : exact.history[e].metrics) {
        SCOPED_TRACE(name);
        EXPECT_NEAR(sampled.history[e].metrics.at(name), value, 1e-6 * std::abs(value));
      }
    EXPECT_EQ(sampled.best_epoch, exact.best_epoch);
    EXPECT_EQ(sampled.evaluation_spill_bytes, 0);
    EXPECT_GT(sampled.evaluation_bytes, 0u);  // the evaluation batches' envelope
    MiniBatchConfig few = mb;
    few.eval_fanouts = {2, 2};
    const TrainResult a = train(res, cora(), c, few), b = train(res, cora(), c, few);
    EXPECT_EQ(losses(a), losses(exact));
    EXPECT_NE(a.history.back().metrics.at("val_loss"), exact.history.back().metrics.at("val_loss"));
    EXPECT_EQ(a.metrics, b.metrics);
  }
}

// Features read from a store's file (the store opened mapped): every batch's rows and the
// evaluation's come through pread and the row cache, and the run equals the one from memory
// bit for bit, with the budget a quarter of the data (the hidden representations spilled too).
TEST(MiniBatchTraining, FeaturesReadFromTheStoreFileGiveTheSameRun) {
  const kernels::Resources res(kernels::Device::Cpu, 2);
  const halo::testing::TempDir dir;
  datasets::write_store(host(), small_synthetic(9, 3000), dir.path() / "store", "");
  const auto open = [&](bool mapped) {
    datasets::StoreOpenOptions o;
    o.mapped = mapped;
    return datasets::open_store(host(), dir.path() / "store", o);
  };
  const datasets::Dataset probe = open(true);
  const std::size_t data = std::get<kernels::Tensor<float>>(probe.features).bytes() +
                           probe.graph.indices.bytes() + probe.graph.indptr.bytes();
  for (const nn::ModelKind kind : {nn::ModelKind::Gcn, nn::ModelKind::Sage}) {
    SCOPED_TRACE(nn::to_string(kind));
    // The exact (layer-wise) evaluation, and one on sampled neighbourhoods.
    for (const std::vector<int>& eval : {std::vector<int>{}, std::vector<int>{4, 4}}) {
      SCOPED_TRACE(eval.empty() ? "exact evaluation" : "sampled evaluation");
      TrainConfig c = config_for(kind, 3, 3);
      c.mini_batch = batches(128, {5, 5}, 1);
      c.mini_batch->eval_fanouts = eval;
      const TrainResult memory = train_local(res, open(false), c).result;
      c.memory_budget = data / 4;
      Shard shard = local_shard(res, open(true));
      const TrainResult file = runtime::train(res, shard, c).result;
      EXPECT_EQ(losses(file), losses(memory));
      EXPECT_EQ(file.metrics, memory.metrics);
      EXPECT_EQ(memory.disk_bytes_per_epoch, 0);
      EXPECT_GT(file.disk_bytes_per_epoch, 0);
      EXPECT_EQ(file.feature_bytes_per_epoch, 0);  // nothing from other ranks
      EXPECT_GT(file.disk_cache_hit_rate, 0.0);    // a sixteenth of the data's rows, by degree
      EXPECT_LT(file.disk_cache_hit_rate, 1.0);
      EXPECT_EQ(file.evaluation_spill_bytes > 0, eval.empty());
      EXPECT_GT(file.evaluation_read_bytes, 0);
    }
  }
}

// A store's feature file cut short while the run holds it open: the first batch that reads
// past the end stops the run with an IoError naming the file (no crash, no hang).
// A store file replaced under the run (a new file renamed over its name: the mapping would go
// on reading the old one) stops it with an error naming the file: features or graph, mini-batch
// or full graph.
// The row cache's choice against a plain reference (sort by degree, ties by id): degrees
// above and below the counting array's range, ties cut at the threshold, every count of rows.
TEST(HottestRows, AreTheRowsOfHighestDegreeTiesToTheLowerId) {
  std::vector<std::int64_t> degree(3000);
  for (std::size_t v = 0; v < degree.size(); ++v)
    degree[v] = v % 7 == 0 ? 70000 + static_cast<std::int64_t>(v % 3)  // above 2^16, tied
                           : static_cast<std::int64_t>((v * 2654435761u) % 40);
  const auto n = static_cast<std::int64_t>(degree.size());
  std::vector<kernels::NodeId> all(degree.size());
  std::iota(all.begin(), all.end(), kernels::NodeId{0});
  std::sort(all.begin(), all.end(), [&](kernels::NodeId a, kernels::NodeId b) {
    return degree[static_cast<std::size_t>(a)] != degree[static_cast<std::size_t>(b)]
               ? degree[static_cast<std::size_t>(a)] > degree[static_cast<std::size_t>(b)]
               : a < b;
  });
  for (const std::int64_t rows :
       {std::int64_t{-1}, std::int64_t{0}, std::int64_t{1}, std::int64_t{100}, std::int64_t{428},
        std::int64_t{429}, std::int64_t{1500}, n - 1, n, n + 5}) {
    std::vector<kernels::NodeId> want(all.begin(),
                                      all.begin() + std::clamp<std::int64_t>(rows, 0, n));
    std::sort(want.begin(), want.end());
    EXPECT_EQ(hottest_rows(n, rows,
                           [&](kernels::NodeId v) { return degree[static_cast<std::size_t>(v)]; }),
              want)
        << rows << " rows";
  }
  EXPECT_TRUE(hottest_rows(0, 5, [](kernels::NodeId) { return std::int64_t{1}; }).empty());
}

TEST(MiniBatchTraining, AStoreFileReplacedUnderTheRunStopsItNamingIt) {
  const kernels::Resources res(kernels::Device::Cpu, 1);
  for (const bool mini : {true, false}) {
    for (const std::string file : {"features.bin", "graph.indices.bin"}) {
      SCOPED_TRACE(file + (mini ? " mini-batch" : " full graph"));
      const halo::testing::TempDir dir;
      const std::filesystem::path store = dir.path() / "store";
      datasets::write_store(host(), small_synthetic(9, 1000), store, "");
      ASSERT_TRUE(std::filesystem::exists(store / file));
      datasets::StoreOpenOptions o;
      o.mapped = true;
      Shard shard = local_shard(res, datasets::open_store(host(), store, o));
      const std::filesystem::path replacement = store / (file + ".new");
      std::filesystem::copy_file(store / file, replacement);
      std::filesystem::rename(replacement, store / file);           // the same bytes, another file
      std::this_thread::sleep_for(std::chrono::milliseconds(250));  // past the checks' period
      TrainConfig c = config_for(nn::ModelKind::Sage, 3, 2);
      if (mini) c.mini_batch = batches(128, {5, 5}, 0);
      try {
        runtime::train(res, shard, c);
        FAIL() << "a run over a replaced store file went through";
      } catch (const IoError& e) {
        EXPECT_NE(std::string(e.what()).find(file + ": the file was replaced during the run"),
                  std::string::npos)
            << e.what();
      }
    }
  }
}

TEST(MiniBatchTraining, AFeatureFileCutShortStopsTheRunNamingIt) {
  const kernels::Resources res(kernels::Device::Cpu, 2);
  const halo::testing::TempDir dir;
  const std::filesystem::path store = dir.path() / "store";
  datasets::write_store(host(), small_synthetic(9, 3000), store, "");
  datasets::StoreOpenOptions o;
  o.mapped = true;
  Shard shard = local_shard(res, datasets::open_store(host(), store, o));
  std::filesystem::resize_file(store / "features.bin", 1000);  // rows past byte 1000 are gone
  TrainConfig c = config_for(nn::ModelKind::Sage, 3, 2);
  c.mini_batch = batches(128, {5, 5}, 1);
  c.memory_budget = 1;  // no row cached: every row is read from the file
  try {
    runtime::train(res, shard, c);
    FAIL() << "a run over a truncated feature file went through";
  } catch (const IoError& e) {
    EXPECT_NE(std::string(e.what()).find("features.bin"), std::string::npos) << e.what();
  }
}

// --prefetch auto: a producer thread only where the rank's threads and the producer fit in the
// cores it may use (its CPUs, and its share of the machine's).
TEST(MiniBatchTraining, AutoPrefetchNeedsACoreForTheProducer) {
  EXPECT_EQ(auto_prefetch(1, 2, 2, 1), 1);    // one process, one thread, two cores
  EXPECT_EQ(auto_prefetch(2, 2, 2, 1), 0);    // two threads fill them
  EXPECT_EQ(auto_prefetch(1, 2, 2, 2), 0);    // two ranks share them
  EXPECT_EQ(auto_prefetch(1, 2, 2, 4), 0);    // the emulated cluster's P = 4
  EXPECT_EQ(auto_prefetch(0, 2, 2, 1), 1);    // 0 threads is one
  EXPECT_EQ(auto_prefetch(1, 1, 16, 1), 0);   // bound to one core of many
  EXPECT_EQ(auto_prefetch(3, 16, 16, 4), 1);  // four ranks of 3 + 1 threads on 16 cores
  EXPECT_EQ(auto_prefetch(4, 16, 16, 4), 0);  // ... of 4 + 1 threads
  EXPECT_EQ(auto_prefetch(4, 5, 64, 8), 1);   // bound to 5 cores each, 8 ranks on 64
}

// The run applies what auto_prefetch says for this process (one rank on this machine) and
// reports it; explicit values are applied as given; the envelope has a slot per batch ahead.
TEST(MiniBatchTraining, ReportsThePrefetchItApplies) {
  cpu_set_t set;
  CPU_ZERO(&set);
  ASSERT_EQ(sched_getaffinity(0, sizeof set, &set), 0);
  const int online = static_cast<int>(::sysconf(_SC_NPROCESSORS_ONLN));
  for (const int threads : {1, 2}) {
    const kernels::Resources res(kernels::Device::Cpu, threads);
    MiniBatchConfig mb = batches(40, {5, 3});
    mb.prefetch = kAutoPrefetch;
    const TrainResult a = train(res, cora(), sage_config(4, 1), mb);
    EXPECT_EQ(a.prefetch, auto_prefetch(threads, CPU_COUNT(&set), online, 1)) << threads;
    mb.prefetch = 2;
    const TrainResult two = train(res, cora(), sage_config(4, 1), mb);
    EXPECT_EQ(two.prefetch, 2);
    mb.prefetch = 0;
    const TrainResult none = train(res, cora(), sage_config(4, 1), mb);
    EXPECT_EQ(none.prefetch, 0);
    EXPECT_EQ(two.sampler_envelope_bytes, 3 * none.sampler_envelope_bytes);
    EXPECT_EQ(a.sampler_envelope_bytes,
              static_cast<std::size_t>(1 + a.prefetch) * none.sampler_envelope_bytes);
  }
}

// max_batches: an epoch trains the first N batches of its order, the very steps the whole epoch
// starts with, and its loss averages those batches (homogeneous datasets too).
TEST(MiniBatchTraining, MaxBatchesTrainsTheFirstBatchesOfTheEpoch) {
  const kernels::Resources& res = host();
  TrainConfig config = sage_config(6, 1);
  config.mini_batch = batches(20, {5, 3});  // Cora's 140 training nodes: 7 batches
  Shard whole_shard = local_shard(res, halo::testing::copy_dataset(host(), cora()));
  nn::Model<float> whole = make_model(res, whole_shard.num_features, 7, config);
  Trainer all(res, node_classification(res, whole_shard, config, whole), config.epochs,
              config.checkpoint);
  ASSERT_EQ(all.batches_per_epoch(), 7);
  std::vector<std::vector<float>> after_three;
  EpochStats s;
  all.train_epoch(1, s, [&](std::int64_t b) {
    if (b == 2)
      for (const auto* p : whole.parameters()) after_three.push_back(p->value.to_vector(res));
  });
  config.mini_batch->max_batches = 3;
  Shard capped_shard = local_shard(res, halo::testing::copy_dataset(host(), cora()));
  nn::Model<float> capped = make_model(res, capped_shard.num_features, 7, config);
  Trainer three(res, node_classification(res, capped_shard, config, capped), config.epochs,
                config.checkpoint);
  EXPECT_EQ(three.batches_per_epoch(), 3);
  std::vector<std::int64_t> steps;
  EpochStats cs;
  three.train_epoch(1, cs, [&](std::int64_t b) { steps.push_back(b); });
  EXPECT_EQ(steps, (std::vector<std::int64_t>{0, 1, 2}));
  std::vector<std::vector<float>> got;
  for (const auto* p : capped.parameters()) got.push_back(p->value.to_vector(res));
  EXPECT_EQ(got, after_three);
  EXPECT_TRUE(std::isfinite(cs.train_loss));
  EXPECT_NE(cs.train_loss, s.train_loss);
  // More than the epoch has is the whole epoch.
  config.mini_batch->max_batches = 100;
  Shard more_shard = local_shard(res, halo::testing::copy_dataset(host(), cora()));
  nn::Model<float> more = make_model(res, more_shard.num_features, 7, config);
  EXPECT_EQ(node_classification(res, more_shard, config, more)->batches_per_epoch(), 7);
}

// A larger graph (dense features, many batches per epoch): the loss falls epoch after epoch.
TEST(MiniBatchTraining, LossFallsOnASyntheticGraph) {
  datasets::SyntheticConfig c;
  c.num_nodes = 6000;
  c.num_classes = 8;
  c.num_features = 32;
  c.feature_signal = 0.3;
  c.seed = 3;
  const kernels::Resources res;
  const datasets::Dataset data = datasets::make_synthetic(res, c);
  const MiniBatchConfig mb = batches(256, {10, 5}, 1);
  TrainConfig config = sage_config(1, 6);
  config.model.hidden = 64;
  const TrainResult r = train(res, data, config, mb);
  for (std::size_t e = 1; e < r.history.size(); ++e)
    EXPECT_LT(r.history[e].train_loss, r.history[e - 1].train_loss) << "epoch " << e + 1;
  EXPECT_GT(r.metrics.at("test_accuracy"), 0.5);
}

// One batch holding every training node, every neighbour sampled, no dropout: the blocks carry
// exactly the full graph's computation for the training nodes, so each epoch's loss is the
// full-graph trainer's (GCN: the block normalisation with d_i / s_i = 1 is the full Â row).
TEST(MiniBatchTraining, FullNeighbourhoodsInOneBatchEqualFullGraphTraining) {
  const kernels::Resources res;
  for (const nn::ModelKind kind : {nn::ModelKind::Gcn, nn::ModelKind::Sage}) {
    SCOPED_TRACE(nn::to_string(kind));
    TrainConfig config = sage_config(2, 8);
    config.model.kind = kind;
    config.model.dropout = 0;
    const TrainResult full = train_local(res, cora(), config).result;
    const TrainResult mini =
        train(res, cora(), config, batches(cora().train_idx.numel(), {-1, -1}));
    for (std::size_t e = 0; e < full.history.size(); ++e)
      EXPECT_NEAR(mini.history[e].train_loss, full.history[e].train_loss,
                  1e-4 * full.history[e].train_loss)
          << "epoch " << e + 1;
    EXPECT_NEAR(mini.metrics.at("test_accuracy"), full.metrics.at("test_accuracy"), 0.002);
  }
}

// The model's input dropout runs in the batch's gather (off the training thread): the gathered
// rows equal the plain gather's rows through kernels::dropout with the model's key, and the
// model, told so, computes the same logits as from the plain rows, bit for bit. Sparse (Cora)
// and dense (synthetic) features; a source without dropout gathers plain rows.
TEST(MiniBatchTraining, TheGatherAppliesTheModelsInputDropout) {
  const kernels::Resources res(kernels::Device::Cpu, 2);
  for (const bool sparse : {true, false}) {
    SCOPED_TRACE(sparse ? "sparse features" : "dense features");
    const datasets::Dataset synthetic = small_synthetic(3, 900);
    Shard shard =
        local_shard(res, halo::testing::copy_dataset(host(), sparse ? cora() : synthetic));
    FeatureStore store(res, shard.part, /*normalize=*/true);
    const kernels::Tensor<std::int32_t> labels = shard.part.labels.copy_to(res, res.device());
    const MiniBatchConfig mb = batches(64, {4, 3});
    const float p = 0.5f;
    const std::uint64_t seed = 7;
    SampledBatches plain(res, shard.part, *shard.comm, store, labels.span(), mb,
                         nn::GraphPreparation::Mean, seed, /*input_dropout=*/0.f);
    SampledBatches dropped(res, shard.part, *shard.comm, store, labels.span(), mb,
                           nn::GraphPreparation::Mean, seed, p);
    nn::ModelConfig mc;
    mc.kind = nn::ModelKind::Sage;
    mc.hidden = 8;
    mc.dropout = p;
    mc.in_features = store.num_features();
    mc.num_classes = shard.part.num_classes;
    nn::Model<float> model(res, mc, seed);
    plain.begin_epoch(2, 0);
    dropped.begin_epoch(2, 0);
    for (std::int64_t b = 0; b < plain.batches_per_epoch(); ++b) {
      const Batch& a = plain.next();
      const Batch& d = dropped.next();
      EXPECT_FALSE(a.input_dropped);
      ASSERT_TRUE(d.input_dropped);
      ASSERT_EQ(a.dropout_key, d.dropout_key);
      const kernels::DropoutKey key{seed, d.dropout_key, nn::kInputDropoutLayer, 0,
                                    d.graphs.front().source_ids};
      if (sparse) {
        const auto& x = std::get<kernels::CsrMatrix<std::int32_t, float>>(*a.x);
        std::vector<float> expected(static_cast<std::size_t>(x.num_edges()));
        kernels::dropout(res, key, p, x.view(),
                         kernels::Span<float>{expected.data(), x.num_edges()});
        const auto& got = std::get<kernels::CsrMatrix<std::int32_t, float>>(*d.x);
        EXPECT_EQ(got.values.to_vector(res), expected);
      } else {
        const auto& x = std::get<kernels::Tensor<float>>(*a.x);
        kernels::Tensor<float> expected(res, x.rows(), x.cols());
        kernels::dropout(res, key, p, x.view(), expected.view());
        EXPECT_EQ(std::get<kernels::Tensor<float>>(*d.x).to_vector(res), expected.to_vector(res));
      }
      const nn::Context own{&res, true, seed, a.dropout_key, 0, false};
      const std::vector<float> want = model.forward(own, a.graphs, *a.x).to_vector(res);
      const nn::Context told{&res, true, seed, d.dropout_key, 0, true};
      EXPECT_EQ(model.forward(told, d.graphs, *d.x).to_vector(res), want) << "batch " << b;
    }
    EpochStats stats;
    plain.end_epoch(stats);
    dropped.end_epoch(stats);
  }
}

/// The nice values of this process's threads (Linux: /proc/self/task/TID/stat, field 19).
std::vector<int> thread_nice_values() {
  std::vector<int> v;
  for (const auto& t : std::filesystem::directory_iterator("/proc/self/task")) {
    std::ifstream in(t.path() / "stat");
    std::string stat((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    std::istringstream fields(stat.substr(stat.rfind(')') + 2));  // after "pid (comm) "
    std::string f;
    for (int i = 3; i <= 19 && fields >> f; ++i)
      if (i == 19) v.push_back(std::stoi(f));
  }
  return v;
}

// The producer thread runs 5 nice levels below the training threads (they preempt it on shared
// cores); the training thread keeps its own.
TEST(MiniBatchTraining, TheProducerThreadYieldsToTraining) {
  const kernels::Resources res(kernels::Device::Cpu, 2);
  Shard shard = local_shard(res, halo::testing::copy_dataset(host(), cora()));
  FeatureStore store(res, shard.part, /*normalize=*/true);
  const kernels::Tensor<std::int32_t> labels = shard.part.labels.copy_to(res, res.device());
  SampledBatches source(res, shard.part, *shard.comm, store, labels.span(),
                        batches(16, {3, 3}, /*prefetch=*/1), nn::GraphPreparation::Mean, 1, 0.5f);
  ASSERT_GT(source.batches_per_epoch(), 2);  // the producer then waits for a free slot
  const int own = getpriority(PRIO_PROCESS, 0);
  const int lowered = std::min(own + 5, 19);
  if (lowered == own) GTEST_SKIP() << "the process already runs at the lowest priority";
  const std::vector<int> before = thread_nice_values();
  EXPECT_EQ(std::count(before.begin(), before.end(), lowered), 0);
  source.begin_epoch(1, 0);
  source.next();  // the producer has started
  const std::vector<int> during = thread_nice_values();
  EXPECT_EQ(std::count(during.begin(), during.end(), lowered), 1);
  EXPECT_EQ(getpriority(PRIO_PROCESS, 0), own);
  for (std::int64_t b = 1; b < source.batches_per_epoch(); ++b) source.next();
  EpochStats stats;
  source.end_epoch(stats);
}

TEST(MiniBatchTraining, RejectsMismatchedFanouts) {
  const kernels::Resources res;
  EXPECT_THROW(train(res, cora(), sage_config(0, 1), batches(32, {5, 5, 5})), LogicError);
}

// ---- CUDA (skipped without a device) ---------------------------------------------------------

// Draws are keyed by (seed, epoch, batch, node), so the GPU sampler picks the CPU's neighbours:
// the same batches, and losses that differ only by rounding.
TEST(MiniBatchTrainingCuda, CoraLossesMatchTheCpu) {
  if (kernels::cuda_device_count() == 0) GTEST_SKIP() << "no usable CUDA device";
  const kernels::Resources cpu;
  const kernels::Resources gpu(kernels::Device::Cuda);
  const MiniBatchConfig mb = batches(32, {10, 5});
  for (const nn::ModelKind kind : {nn::ModelKind::Sage, nn::ModelKind::Gcn}) {
    SCOPED_TRACE(nn::to_string(kind));
    TrainConfig config = sage_config(3, 4);
    config.model.kind = kind;
    const TrainResult expected = train(cpu, cora(), config, mb);
    const TrainResult got = train(gpu, cora(), config, mb);
    ASSERT_EQ(got.history.size(), expected.history.size());
    for (std::size_t e = 0; e < got.history.size(); ++e)
      EXPECT_NEAR(got.history[e].train_loss, expected.history[e].train_loss,
                  1e-3 * expected.history[e].train_loss)
          << "epoch " << e + 1;
    EXPECT_NEAR(got.metrics.at("test_accuracy"), expected.metrics.at("test_accuracy"), 0.02);
    // The host waits twice per batch on the GPU: the sampler's sizes and the gathered sparse
    // features' entry count (Cora's features are sparse); the loss is read once per epoch.
    // Never on the CPU.
    EXPECT_EQ(got.host_syncs_per_batch, 2.0);
    EXPECT_EQ(expected.host_syncs_per_batch, 0.0);
  }
}

}  // namespace
}  // namespace halo::runtime::test
