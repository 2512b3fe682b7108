// GAT through the runtime, run by ctest under mpiexec -n 1, 2 and 4: the halo exchange's
// attention graph and row exchange against one process, whole training runs (full graph and
// mini-batch) against one process on Cora and on a directed Cora, mini-batch blocks that take
// every neighbour against full-graph training; and, under the `accuracy` label (one process,
// --gtest_filter=GatAccuracy.*), the published Cora set-up over ten seeds.
//
// Everything goes through the public runtime API (open_shard / local_shard, train, TrainConfig
// with model.kind = Gat), so that a rename of the engine touches this file only.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <gtest/gtest.h>
#include <set>
#include <string>
#include <vector>

#include <halo/partition/formats/partition_format.hpp>
#include <halo/partition/partitioners/partitioner.hpp>
#include <halo/runtime/comm/comm.hpp>
#include <halo/runtime/data/halo_exchange.hpp>
#include <halo/runtime/data/inference.hpp>
#include <halo/runtime/runtime.hpp>

#include "runtime/distributed_fixtures.hpp"
#include "runtime/mpi_test_main.hpp"
#include "runtime/runtime_test_util.hpp"

namespace halo::runtime {
namespace {

using kernels::NodeId;
using test::cora;
using test::directed_cora;

Comm* g_comm = nullptr;
Comm& comm() { return *g_comm; }

const kernels::Resources& res() { return test::host(); }

using test::SharedPartition;

// The node task's scores this file reads.
double test_accuracy(const TrainResult& r) { return r.metrics.at("test_accuracy"); }
double val_accuracy(const TrainResult& r) { return r.metrics.at("val_accuracy"); }
double test_accuracy(const EpochStats& s) { return s.metrics.at("test_accuracy"); }
double val_accuracy(const EpochStats& s) { return s.metrics.at("val_accuracy"); }

const datasets::Dataset& graph(bool directed) { return directed ? directed_cora() : cora(); }
std::string graph_name(bool directed) { return directed ? "directed" : "undirected"; }

/// GAT with the paper's dropout and learning rate, 4 heads of 8 (kept small for the sanitizer
/// build; the heads are what the exchange and the masks are keyed by).
TrainConfig gat_config(std::uint64_t seed, int epochs) {
  TrainConfig c = test::config_for(nn::ModelKind::Gat, seed, epochs);
  c.model.hidden = 8;
  c.model.heads = 4;
  c.model.out_heads = 1;
  c.model.dropout = 0.6f;
  c.lr = 0.005;
  c.weight_decay = 5e-4;
  return c;
}

// ---- the exchange --------------------------------------------------------------------------

// A part's attention graph is S + I's rows of its owned nodes, over [owned; halo] columns whose
// ids (column_ids) are the original nodes; exchange_rows fills the halo rows with their owners'
// rows and reduce_rows returns them; with one process there is nothing to exchange.
TEST(GatExchange, LocalGraphAndRowsEqualOneProcess) {
  for (const bool directed : {false, true}) {
    SCOPED_TRACE(graph_name(directed));
    const partition::Part whole =
        partition::make_local_part(res(), halo::testing::copy_dataset(res(), graph(directed)));
    const SharedPartition shared(comm(), graph(directed), partition::Method::MetisKway,
                                 "exchange-" + graph_name(directed));
    Shard shard = open_shard(res(), comm(), shared.dir());
    const partition::Part& part = shard.part;
    HaloExchange ex(res(), part, nn::GraphPreparation::SelfLoops, /*overlap=*/true, comm());
    const std::int64_t owned = ex.num_owned(), halo = ex.num_halo();
    const auto g = ex.local_graph();
    ASSERT_EQ(g.num_rows, owned);
    ASSERT_EQ(g.num_cols, owned + halo);
    const auto ids = ex.column_ids();
    const auto original = [&](std::int64_t local) -> NodeId {
      if (ids.size == 0) return static_cast<NodeId>(local);
      EXPECT_EQ(ids[local], part.ids.to_original(local));
      return ids[local];
    };
    EXPECT_EQ(ids.size == 0, comm().size() == 1);
    for (std::int64_t r = 0; r < owned; ++r) {
      const NodeId v = original(r);
      std::multiset<NodeId> got, want = {v};
      for (std::int64_t e = g.indptr[r]; e < g.indptr[r + 1]; ++e)
        got.insert(original(g.indices[e]));
      for (std::int64_t e = whole.graph.indptr.data()[v]; e < whole.graph.indptr.data()[v + 1]; ++e)
        want.insert(whole.graph.indices.data()[e]);
      ASSERT_EQ(got, want) << "node " << v;
    }
    // Rows: x(i, c) = 10 * original(i) + c on owned rows; the halo rows arrive.
    const std::int64_t w = 3;
    kernels::Tensor<float> x(res(), owned + halo, w);
    for (std::int64_t i = 0; i < owned + halo; ++i)
      for (std::int64_t c = 0; c < w; ++c)
        x.data()[i * w + c] = i < owned ? static_cast<float>(10 * original(i) + c) : -1.f;
    ex.exchange_rows(res(), x.view());
    for (std::int64_t i = owned; i < owned + halo; ++i)
      for (std::int64_t c = 0; c < w; ++c)
        ASSERT_EQ(x.data()[i * w + c], static_cast<float>(10 * original(i) + c)) << "halo " << i;
    // Gradients: halo row of node v holds v + 1; the owner adds it to its row of v (zero before),
    // so every owned row ends as a multiple of v + 1 and the totals are kept.
    double halo_total = 0, owned_total = 0;
    for (std::int64_t i = 0; i < owned + halo; ++i)
      for (std::int64_t c = 0; c < w; ++c) {
        const float v = i < owned ? 0.f : static_cast<float>(original(i) + 1);
        x.data()[i * w + c] = v;
        halo_total += v;
      }
    ex.reduce_rows(res(), x.view());
    for (std::int64_t i = 0; i < owned; ++i)
      for (std::int64_t c = 0; c < w; ++c) {
        const double v = x.data()[i * w + c];
        owned_total += v;
        const double k = v / static_cast<double>(original(i) + 1);
        EXPECT_EQ(k, std::round(k)) << "node " << original(i);
      }
    EXPECT_DOUBLE_EQ(comm().sum(owned_total), comm().sum(halo_total));
  }
}

// ---- training ------------------------------------------------------------------------------

struct Case {
  bool directed;
  bool mini_batch;
  partition::Method method;
};

class GatEquivalence : public ::testing::TestWithParam<Case> {};

// Every epoch's training loss within 1e-4 (relative) of one process on the whole graph, and the
// validation and test accuracies of every epoch equal (a prediction that rounding flips would
// move them by 1/500 or 1/1000), full graph and mini-batch, on Cora and a directed Cora, at 1,
// 2 and 4 ranks: the attention dropout keyed by the edges' node ids, the exchange of z and of
// its gradients.
TEST_P(GatEquivalence, LossesAndAccuraciesEqualOneProcess) {
  const Case c = GetParam();
  TrainConfig config = gat_config(3, c.mini_batch ? 2 : 12);
  if (c.mini_batch) config.mini_batch = test::batches(32, {10, 5}, 1);
  const TrainResult single = test::train_local(res(), graph(c.directed), config).result;
  const SharedPartition shared(comm(), graph(c.directed), c.method,
                               "eq-" + std::string(partition::to_string(c.method)) +
                                   graph_name(c.directed) + (c.mini_batch ? "-mb" : ""));
  Shard shard = open_shard(res(), comm(), shared.dir());
  const TrainResult run = train(res(), shard, config).result;
  ASSERT_EQ(run.history.size(), single.history.size());
  for (std::size_t e = 0; e < single.history.size(); ++e) {
    const EpochStats &a = single.history[e], &b = run.history[e];
    EXPECT_NEAR(b.train_loss, a.train_loss, 1e-4 * std::abs(a.train_loss)) << "epoch " << e + 1;
    EXPECT_NEAR(val_accuracy(b), val_accuracy(a), 1e-4) << "epoch " << e + 1;
    EXPECT_NEAR(test_accuracy(b), test_accuracy(a), 1e-4) << "epoch " << e + 1;
  }
  EXPECT_EQ(run.best_epoch, single.best_epoch);
  EXPECT_NEAR(test_accuracy(run), test_accuracy(single), 1e-4);
  EXPECT_EQ(run.world_size, comm().size());
}

INSTANTIATE_TEST_SUITE_P(Distributed, GatEquivalence,
                         ::testing::Values(Case{false, false, partition::Method::MetisKway},
                                           Case{true, false, partition::Method::MetisKway},
                                           Case{false, false, partition::Method::Random},
                                           Case{true, true, partition::Method::MetisKway}),
                         [](const auto& info) {
                           return std::string(partition::to_string(info.param.method)) + "_" +
                                  graph_name(info.param.directed) +
                                  (info.param.mini_batch ? "_minibatch" : "_full");
                         });

// One batch holding every training node, every neighbour sampled, no dropout: each block is the
// full graph's rows of its destinations with their self-loops, so every epoch's loss is the
// full-graph run's. One process (the test runs at every rank count; the others skip it).
TEST(GatMiniBatch, FullNeighbourhoodsInOneBatchEqualFullGraphTraining) {
  if (comm().size() > 1) GTEST_SKIP() << "one process";
  TrainConfig config = gat_config(5, 6);
  config.model.dropout = 0;
  const TrainResult full = test::train_local(res(), cora(), config).result;
  config.mini_batch = test::batches(cora().train_idx.numel(), {-1, -1});
  const TrainResult mini = test::train_local(res(), cora(), config).result;
  ASSERT_EQ(mini.history.size(), full.history.size());
  for (std::size_t e = 0; e < full.history.size(); ++e)
    EXPECT_NEAR(mini.history[e].train_loss, full.history[e].train_loss,
                1e-4 * full.history[e].train_loss)
        << "epoch " << e + 1;
  EXPECT_NEAR(test_accuracy(mini), test_accuracy(full), 0.002);
}

// ---- inference -------------------------------------------------------------------------------

// A GAT model's evaluation pass (runtime::Inference, what the trainer's evaluation runs) on P
// ranks gives one process's logits and hidden representations for every node; sampled
// neighbourhoods that take every neighbour give the same logits.
TEST(GatInference, FullGraphAndFullNeighbourhoodsEqualOneProcess) {
  nn::ModelConfig mc = gat_config(0, 1).model;
  mc.in_features = cora().num_features();
  mc.num_classes = cora().num_classes;
  nn::Model<float> model(res(), mc, /*seed=*/11);
  Shard whole = local_shard(res(), halo::testing::copy_dataset(res(), cora()));
  Inference one(res(), whole, nn::ModelKind::Gat, /*normalize_features=*/true);
  const std::vector<float> hidden_one = one.run(model, 1).to_vector(res());
  const std::vector<float> logits_one = one.run(model, 2).to_vector(res());
  const std::int64_t h = model.width(1), c = model.width(2);
  ASSERT_EQ(h, mc.heads * mc.hidden);
  const SharedPartition shared(comm(), cora(), partition::Method::MetisKway, "inference");
  Shard shard = open_shard(res(), comm(), shared.dir());
  Inference inf(res(), shard, nn::ModelKind::Gat, true);
  const std::vector<float> hidden = inf.run(model, 1).to_vector(res());
  const std::vector<float> logits = inf.run(model, 2).to_vector(res());
  const partition::Part& part = shard.part;
  for (std::int64_t i = 0; i < part.num_owned(); ++i) {
    const std::int64_t v = part.ids.to_original(i);
    for (std::int64_t k = 0; k < h; ++k)
      ASSERT_NEAR(hidden[i * h + k], hidden_one[v * h + k], 1e-5) << "node " << v;
    for (std::int64_t k = 0; k < c; ++k)
      ASSERT_NEAR(logits[i * c + k], logits_one[v * c + k], 1e-5) << "node " << v;
  }
  // Sampled: the test nodes, every neighbour.
  const std::vector<NodeId> seeds = inf.split_nodes(Split::Test);
  ASSERT_FALSE(seeds.empty());
  const Inference::SampledRows sampled =
      inf.run_sampled(model, seeds, test::batches(128, {-1, -1}), /*seed=*/3);
  ASSERT_EQ(sampled.cols, c);
  for (std::size_t j = 0; j < sampled.local.size(); ++j) {
    const std::int64_t v = part.ids.to_original(sampled.local[j]);
    for (std::int64_t k = 0; k < c; ++k)
      ASSERT_NEAR(sampled.rows[j * static_cast<std::size_t>(c) + static_cast<std::size_t>(k)],
                  logits_one[v * c + k], 1e-5)
          << "node " << v;
  }
}

// ---- accuracy (label `accuracy`: one process, an optimised build) ---------------------------

/// The GAT paper's Cora set-up (Veličković et al. 2018, section 3.3): 2 layers, 8 heads of 8
/// hidden features (ELU), one output head, dropout 0.6 on every layer's input and on the
/// attention coefficients, Adam with lr 0.005 and weight decay 5e-4, full graph, row-normalised
/// features. The paper stops early (patience 100); here a fixed number of epochs with the
/// parameters of the best validation epoch (what the trainer keeps).
TrainConfig published_gat(std::uint64_t seed, int epochs) {
  TrainConfig c = test::config_for(nn::ModelKind::Gat, seed, epochs);
  c.model.num_layers = 2;
  c.model.hidden = 8;
  c.model.heads = 8;
  c.model.out_heads = 1;
  c.model.dropout = 0.6f;
  c.lr = 0.005;
  c.weight_decay = 5e-4;
  c.normalize_features = true;
  return c;
}

/// HALO_GAT_EPOCHS overrides the epochs (measurements); 300 by default.
int accuracy_epochs() {
  const char* e = std::getenv("HALO_GAT_EPOCHS");
  return e != nullptr ? std::atoi(e) : 300;
}

// The paper reports 83.0 +- 0.7 %; the issue asks for a mean >= 82.5 % over ten seeds. Prints
// the per-seed accuracies, their mean and standard deviation, and the median epoch time of GAT
// and of GCN (Kipf & Welling's set-up) measured in the same run (bench/results/gat.md).
TEST(GatAccuracy, CoraMeanOverTenSeedsReachesThePublishedAccuracy) {
  if (comm().size() > 1) GTEST_SKIP() << "one process";
  const int epochs = accuracy_epochs();
  const kernels::Resources run;
  std::vector<double> acc;
  double gat_epoch = 0, gcn_epoch = 0;
  for (int seed = 0; seed < 10; ++seed) {
    const TrainResult r =
        test::train_local(run, cora(), published_gat(static_cast<std::uint64_t>(seed), epochs))
            .result;
    acc.push_back(test_accuracy(r));
    gat_epoch += r.epoch_time_median_s / 10;
    std::printf("seed %d: test accuracy %.4f (best epoch %d, val %.4f), epoch %.2f ms\n", seed,
                test_accuracy(r), r.best_epoch, val_accuracy(r), 1e3 * r.epoch_time_median_s);
  }
  for (int seed = 0; seed < 3; ++seed) {
    const TrainResult r =
        test::train_local(run, cora(), test::config_for(nn::ModelKind::Gcn, seed, 200)).result;
    gcn_epoch += r.epoch_time_median_s / 3;
  }
  double mean = 0, var = 0;
  for (const double a : acc) mean += a / 10;
  for (const double a : acc) var += (a - mean) * (a - mean) / 9;
  std::printf("GAT on Cora, %d epochs, 10 seeds: mean %.4f, std %.4f\n", epochs, mean,
              std::sqrt(var));
  std::printf("median epoch time: GAT %.2f ms, GCN %.2f ms (%d threads)\n", 1e3 * gat_epoch,
              1e3 * gcn_epoch, run.cpu_exec().num_threads);
  EXPECT_GE(mean, 0.825);
}

}  // namespace
}  // namespace halo::runtime

int main(int argc, char** argv) {
  return halo::runtime::test::run_mpi_tests(
      argc, argv, "gat_test", [](halo::runtime::Comm& c) { halo::runtime::g_comm = &c; });
}
