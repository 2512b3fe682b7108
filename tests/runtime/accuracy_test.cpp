// The published accuracies on Cora, full graph and mini-batch: hundreds of epochs each, so they
// carry the ctest label `accuracy` and run in an optimised build (tools/setup.sh), not under the
// sanitizers where every other runtime case runs.
#include <cstdint>
#include <gtest/gtest.h>

#include <halo/runtime/runtime.hpp>

#include "runtime/runtime_test_util.hpp"

namespace halo::runtime::test {
namespace {

/// Mean test accuracy over `seeds` seeds with Kipf & Welling's set-up (2 layers, 16 hidden,
/// dropout 0.5, lr 0.01, weight decay 5e-4; 200 epochs unless `epochs`), full graph, or
/// mini-batch with `mb`.
double mean_cora_accuracy(nn::ModelKind kind, int seeds, int epochs = 200,
                          const MiniBatchConfig* mb = nullptr) {
  const kernels::Resources res;
  double sum = 0;
  for (int seed = 0; seed < seeds; ++seed) {
    TrainConfig config = config_for(kind, static_cast<std::uint64_t>(seed), epochs);
    if (mb != nullptr) config.mini_batch = *mb;
    sum += train_local(res, cora(), config).result.metrics.at("test_accuracy");
  }
  return sum / seeds;
}

// Kipf & Welling report 81.5% for GCN on Cora; the issue asks for a mean >= 80.5%.
TEST(FullGraphTraining, GcnOnCoraMatchesPublishedAccuracy) {
  EXPECT_GE(mean_cora_accuracy(nn::ModelKind::Gcn, 3), 0.805);
}

TEST(FullGraphTraining, SageOnCoraReachesSeventyNinePercent) {
  EXPECT_GE(mean_cora_accuracy(nn::ModelKind::Sage, 3), 0.79);
}

// The issue asks for >= 79% test accuracy with GraphSAGE mini-batch training on Cora (mean of
// three seeds; batches of 32 of the 140 training nodes, fan-outs 25 and 10).
TEST(MiniBatchTraining, SageOnCoraReachesSeventyNinePercent) {
  const MiniBatchConfig mb = batches(32, {25, 10}, 1);
  EXPECT_GE(mean_cora_accuracy(nn::ModelKind::Sage, 3, 100, &mb), 0.79);
}

TEST(MiniBatchTraining, GcnOnCoraLearns) {
  const MiniBatchConfig mb = batches(32, {10, 10}, 1);
  EXPECT_GE(mean_cora_accuracy(nn::ModelKind::Gcn, 1, 100, &mb), 0.75);
}

}  // namespace
}  // namespace halo::runtime::test
