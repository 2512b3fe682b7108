// Distributed heterogeneous training, run by ctest under mpiexec -n 2 and 4: R-GCN and HGT on a
// partition of the 4-type fixture (tests/support/hetero_fixture.hpp), with its user -> user
// relation one-way and symmetric, against one process on the whole graph. Its own executable:
// distributed_test's malloc wrapping (allocation counter) trips ASan's alloc-dealloc-mismatch in
// the libstdc++ temporary buffers the hetero reader's std::stable_partition takes.

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <gtest/gtest.h>
#include <set>
#include <string>
#include <utility>

#include <halo/datasets/hetero.hpp>
#include <halo/partition/partitioners/partitioner.hpp>
#include <halo/runtime/comm/comm.hpp>
#include <halo/runtime/engine/checkpoint.hpp>
#include <halo/runtime/runtime.hpp>

#include "runtime/distributed_fixtures.hpp"
#include "runtime/mpi_test_main.hpp"
#include "runtime/runtime_test_util.hpp"
#include "support/hetero_fixture.hpp"

namespace halo::runtime {
namespace {

Comm* g_comm = nullptr;
Comm& comm() { return *g_comm; }

const kernels::Resources& res() { return test::host(); }

// ---- heterogeneous full graph -------------------------------------------------------------------

/// `dir`/data (write_hetero_graph) and its partition `dir`/parts into comm().size() parts.
void write_partitioned(const std::filesystem::path& dir, bool undirected) {
  test::write_hetero_partition(comm(), dir, undirected);
}

/// The small model both equivalence tests train: dropout on, featureless types as zeros.
TrainConfig hetero_config(nn::HeteroLayerKind kind, int epochs, std::uint64_t seed) {
  TrainConfig config;
  config.hetero.kind = kind;
  config.hetero.hidden = 8;
  config.hetero.heads = 2;
  config.hetero.dropout = 0.3f;
  config.hetero.featureless = nn::FeaturelessInput::Zero;
  config.epochs = epochs;
  config.lr = 0.05;
  config.seed = seed;
  return config;
}

/// One process on `dir`/data and the ranks on `dir`/parts with `config`: the same losses per
/// epoch (1e-4 relative), accuracies and F1 scores.
void expect_equal_runs(const std::filesystem::path& dir, const TrainConfig& config) {
  HeteroShard one = local_hetero_shard(datasets::read_hetero_directory(res(), dir / "data"));
  const TrainResult want = train(res(), one, config).result;
  HeteroShard part = open_hetero_shard(res(), comm(), dir / "parts");
  const TrainResult got = train(res(), part, config).result;
  ASSERT_EQ(got.history.size(), want.history.size());
  EXPECT_EQ(got.batches_per_epoch, want.batches_per_epoch);
  for (std::size_t e = 0; e < want.history.size(); ++e) {
    const EpochStats& a = want.history[e];
    const EpochStats& b = got.history[e];
    EXPECT_NEAR(b.train_loss, a.train_loss, 1e-4 * std::abs(a.train_loss)) << "epoch " << e;
    EXPECT_EQ(b.metrics.at("train_accuracy"), a.metrics.at("train_accuracy")) << "epoch " << e;
    EXPECT_EQ(b.metrics.at("val_accuracy"), a.metrics.at("val_accuracy")) << "epoch " << e;
    EXPECT_EQ(b.metrics.at("test_accuracy"), a.metrics.at("test_accuracy")) << "epoch " << e;
    EXPECT_NEAR(b.metrics.at("val_macro_f1"), a.metrics.at("val_macro_f1"), 1e-12) << "epoch " << e;
  }
  EXPECT_NEAR(got.metrics.at("test_macro_f1"), want.metrics.at("test_macro_f1"), 1e-12);
  EXPECT_NEAR(got.metrics.at("test_micro_f1"), want.metrics.at("test_micro_f1"), 1e-12);
}

// P ranks on a partition of the graph compute what one process computes: the losses of every
// epoch within 1e-4 relative, the accuracies and F1 scores the same (dropout on, keyed by the
// nodes' global ids; the halo rows of every layer exchanged per type).
TEST(DistributedHetero, LossesEqualOneProcessForBothLayers) {
  for (const bool undirected : {false, true}) {
    const std::filesystem::path dir =
        std::filesystem::path(HALO_TEST_BINARY_DIR) /
        ("dist-hetero-" + std::string(undirected ? "u" : "d") + std::to_string(comm().size()));
    write_partitioned(dir, undirected);
    for (const auto kind : {nn::HeteroLayerKind::Rgcn, nn::HeteroLayerKind::Hgt}) {
      SCOPED_TRACE(nn::to_string(kind) + (undirected ? " undirected" : " directed"));
      expect_equal_runs(dir, hetero_config(kind, 4, 3));
      // Learnable embeddings of the featureless types, each rank owning its nodes' rows: the
      // halo rows fetched from their owners, their gradients summed there.
      TrainConfig embedded = hetero_config(kind, 4, 3);
      embedded.hetero.featureless = nn::FeaturelessInput::Embedding;
      expect_equal_runs(dir, embedded);
    }
    comm().barrier();
    if (comm().rank() == 0) std::filesystem::remove_all(dir);
  }
}

// The model of a partitioned run with learnable embeddings (each rank trained its nodes' rows;
// the run ends with the rows gathered on every rank), saved by rank 0, applied to the whole
// dataset in one process (halo predict's path): the run's test accuracy and F1 scores.
TEST(DistributedHetero, SavedModelOfAPartitionedRunPredictsItsTestScores) {
  const std::filesystem::path dir = std::filesystem::path(HALO_TEST_BINARY_DIR) /
                                    ("dist-hetero-save-" + std::to_string(comm().size()));
  write_partitioned(dir, true);
  TrainConfig config = hetero_config(nn::HeteroLayerKind::Rgcn, 3, 9);
  config.hetero.featureless = nn::FeaturelessInput::Embedding;
  config.mini_batch = test::batches(3, {2, 2});
  HeteroShard part = open_hetero_shard(res(), comm(), dir / "parts");
  EXPECT_GE(part.graph.split, 0) << "the partition records its split";
  HeteroTrainRun run = train(res(), part, config);
  const std::filesystem::path file = dir / "model.halo";
  if (comm().rank() == 0) save_hetero_model(res(), file, run.model, config, part, run.result);
  comm().barrier();
  HeteroModelFile f = load_hetero_model(res(), file);
  EXPECT_EQ(f.split, part.graph.split);
  HeteroShard whole =
      local_hetero_shard(datasets::read_hetero_directory(res(), dir / "data", f.split));
  const Metrics predicted = predict_hetero(res(), whole, f.config, f.model).metrics;
  for (const char* name : {"test_accuracy", "test_macro_f1", "test_micro_f1"})
    EXPECT_NEAR(predicted.at(name), run.result.metrics.at(name), 1e-12) << name;
  comm().barrier();
  if (comm().rank() == 0) std::filesystem::remove_all(dir);
}

// Mini-batches across ranks: each rank samples its share of every global batch (its own
// seeds) through the owners' rows and features, keyed by global ids, so P ranks draw and
// compute what one process does. Fan-outs below the degrees (the draws matter), dropout on;
// then batches of one seed, so that most ranks have none in a batch.
TEST(DistributedHetero, MiniBatchLossesEqualOneProcessForBothLayers) {
  for (const bool undirected : {false, true}) {
    const std::filesystem::path dir =
        std::filesystem::path(HALO_TEST_BINARY_DIR) /
        ("dist-hetero-mb-" + std::string(undirected ? "u" : "d") + std::to_string(comm().size()));
    write_partitioned(dir, undirected);
    for (const auto kind : {nn::HeteroLayerKind::Rgcn, nn::HeteroLayerKind::Hgt}) {
      for (const std::int64_t batch : {4, 1}) {
        // Batches of one seed once per layer (kept short: every batch is a few collectives).
        if (batch == 1 && (kind == nn::HeteroLayerKind::Hgt) != undirected) continue;
        SCOPED_TRACE(nn::to_string(kind) + (undirected ? " undirected" : " directed") + ", batch " +
                     std::to_string(batch));
        TrainConfig config = hetero_config(kind, batch == 1 ? 1 : 2, 5);
        MiniBatchConfig mb;
        mb.batch_size = batch;
        mb.fanouts = {2, 1};
        mb.prefetch = 0;
        mb.max_batches = batch == 1 ? 2 : 0;
        config.mini_batch = mb;
        expect_equal_runs(dir, config);
      }
    }
    comm().barrier();
    if (comm().rank() == 0) std::filesystem::remove_all(dir);
  }
}

// The feature cache on a heterogeneous partition: each type's store holds the halo nodes of
// its relations (the remote sources of the owned rows), by degree before training or by the
// first epoch's accesses after it; cached rows are served without a fetch, and the run stays
// the one process's.
TEST(DistributedHetero, FeatureCacheHoldsRemoteRowsOfEveryType) {
  const std::filesystem::path dir = std::filesystem::path(HALO_TEST_BINARY_DIR) /
                                    ("dist-hetero-cache-" + std::to_string(comm().size()));
  write_partitioned(dir, true);
  TrainConfig config = hetero_config(nn::HeteroLayerKind::Rgcn, 3, 7);
  MiniBatchConfig mb;
  mb.batch_size = 4;
  mb.fanouts = {2, 2};
  mb.prefetch = 0;
  config.mini_batch = mb;
  HeteroShard one = local_hetero_shard(datasets::read_hetero_directory(res(), dir / "data"));
  const TrainResult want = train(res(), one, config).result;
  HeteroShard none_shard = open_hetero_shard(res(), comm(), dir / "parts");
  const TrainResult none = train(res(), none_shard, config).result;
  ASSERT_GT(none.history.front().remote_rows, 0) << "nothing remote: the test tests nothing";
  EXPECT_EQ(none.history.front().cache_hits, 0);
  for (const CachePolicy policy : {CachePolicy::Degree, CachePolicy::Access}) {
    SCOPED_TRACE(to_string(policy));
    config.mini_batch->cache_mb = 1;  // every halo row of the fixture
    config.mini_batch->cache_policy = policy;
    HeteroShard part = open_hetero_shard(res(), comm(), dir / "parts");
    const TrainResult got = train(res(), part, config).result;
    ASSERT_EQ(got.history.size(), want.history.size());
    for (std::size_t e = 0; e < want.history.size(); ++e) {
      const EpochStats& a = want.history[e];
      const EpochStats& b = got.history[e];
      EXPECT_NEAR(b.train_loss, a.train_loss, 1e-4 * std::abs(a.train_loss)) << "epoch " << e;
      EXPECT_EQ(b.metrics.at("test_accuracy"), a.metrics.at("test_accuracy")) << "epoch " << e;
      EXPECT_EQ(b.remote_rows, none.history[e].remote_rows) << "epoch " << e;
      // The cache holds every halo row (one hop from an owned row; rows two hops away are
      // still fetched): by degree from the start, by access from epoch 2 on.
      EXPECT_LE(b.cache_hits, b.remote_rows) << "epoch " << e;
      if (policy == CachePolicy::Degree || e > 0) {
        EXPECT_GT(b.cache_hits, 0) << "epoch " << e;
        EXPECT_LT(b.feature_bytes, none.history[e].feature_bytes) << "epoch " << e;
      } else {
        EXPECT_EQ(b.cache_hits, 0);
      }
    }
    EXPECT_GT(got.cache_hit_rate, 0.0);
  }
  comm().barrier();
  if (comm().rank() == 0) std::filesystem::remove_all(dir);
}

// Checkpoints across ranks: R-GCN mini-batches on a partition, stopped by a signal that one
// rank received (the ranks agree at every step boundary) between two batches of epoch 2, and
// resumed from the checkpoint every rank wrote its shard of, end as the uninterrupted run:
// losses, F1 scores and the kept epoch, bit for bit.
TEST(DistributedHetero, ResumeAcrossRanksEqualsAnUninterruptedRun) {
  const std::filesystem::path dir = std::filesystem::path(HALO_TEST_BINARY_DIR) /
                                    ("dist-hetero-ck-" + std::to_string(comm().size()));
  write_partitioned(dir, true);
  TrainConfig config = hetero_config(nn::HeteroLayerKind::Rgcn, 4, 11);
  MiniBatchConfig mb;
  mb.batch_size = 3;
  mb.fanouts = {2, 2};
  mb.prefetch = 0;
  config.mini_batch = mb;
  HeteroShard a = open_hetero_shard(res(), comm(), dir / "parts");
  const TrainResult whole = train(res(), a, config).result;
  const std::int64_t per_epoch = whole.batches_per_epoch;
  ASSERT_GT(per_epoch, 1);
  config.checkpoint.dir = dir / "ck";
  std::int64_t steps = 0;
  clear_preemption();
  HeteroShard b = open_hetero_shard(res(), comm(), dir / "parts");
  const TrainResult cut = train(res(), b, config, {}, [&](std::int64_t) {
                            if (++steps == per_epoch + 1 && comm().rank() == 0)
                              request_preemption();
                          }).result;
  clear_preemption();
  EXPECT_TRUE(cut.preempted);
  EXPECT_EQ(cut.history.size(), 1u);
  config.checkpoint.resume = true;
  HeteroShard c = open_hetero_shard(res(), comm(), dir / "parts");
  const TrainResult resumed = train(res(), c, config).result;
  EXPECT_EQ(resumed.resumed_from, cut.checkpoint);
  ASSERT_EQ(resumed.history.size(), whole.history.size());
  for (std::size_t e = 0; e < whole.history.size(); ++e) {
    EXPECT_EQ(resumed.history[e].train_loss, whole.history[e].train_loss) << "epoch " << e + 1;
    EXPECT_EQ(resumed.history[e].metrics.at("val_macro_f1"),
              whole.history[e].metrics.at("val_macro_f1"))
        << e + 1;
  }
  EXPECT_EQ(resumed.best_epoch, whole.best_epoch);
  EXPECT_EQ(resumed.metrics.at("test_macro_f1"), whole.metrics.at("test_macro_f1"));
  EXPECT_EQ(resumed.final_train_loss, whole.final_train_loss);
  comm().barrier();
  if (comm().rank() == 0) std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace halo::runtime

int main(int argc, char** argv) {
  return halo::runtime::test::run_mpi_tests(
      argc, argv, "distributed_hetero_test",
      [](halo::runtime::Comm& c) { halo::runtime::g_comm = &c; });
}
