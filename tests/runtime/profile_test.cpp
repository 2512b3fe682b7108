// Profiled training (TrainConfig::profile): the same run as without it, phases that add up within
// the epoch, the kernels each step calls, and the optimizer's traffic from the parameter count;
// for every task.
#include <filesystem>
#include <gtest/gtest.h>
#include <vector>

#include <halo/datasets/hetero.hpp>
#include <halo/datasets/temporal.hpp>
#include <halo/runtime/engine/profile.hpp>
#include <halo/runtime/runtime.hpp>

#include "runtime/runtime_test_util.hpp"
#include "support/hetero_fixture.hpp"

namespace halo::runtime::test {
namespace {

double training_thread_s(const EpochProfile& p) {
  return p.wait_s + p.forward_s + p.loss_s + p.backward_s + p.optimizer_s;
}

bool all_zero(const EpochProfile& p) {
  double sum = training_thread_s(p) + p.sample_s + p.gather_s + p.copy_s;
  for (const kernels::OpCounters& c : p.ops.ops)
    sum += c.seconds + c.bytes + c.flops + static_cast<double>(c.calls);
  return sum == 0;
}

TEST(ProfiledTraining, FullGraphPhasesAndKernelsWithoutChangingTheRun) {
  const kernels::Resources res(kernels::Device::Cpu, 1);
  const datasets::Dataset data = small_synthetic(5, 300);
  TrainConfig config = config_for(nn::ModelKind::Gcn, 2, 3);
  const TrainRun plain = train_local(res, data, config);
  config.profile = true;
  TrainRun profiled = train_local(res, data, config);
  EXPECT_EQ(losses(profiled.result), losses(plain.result));  // bit for bit on the CPU
  for (const EpochStats& s : plain.result.history) EXPECT_TRUE(all_zero(s.profile));
  std::int64_t params = 0;
  for (const auto* p : profiled.model.parameters()) params += p->value.numel();
  for (const EpochStats& s : profiled.result.history) {
    const EpochProfile& p = s.profile;
    EXPECT_GT(p.forward_s, 0);
    EXPECT_GT(p.backward_s, 0);
    EXPECT_GT(p.optimizer_s, 0);
    EXPECT_LE(training_thread_s(p), s.epoch_time_s);
    EXPECT_EQ(p.sample_s + p.gather_s + p.copy_s, 0);  // no sampling on the full graph
    for (const kernels::Op op : {kernels::Op::Gemm, kernels::Op::Spmm, kernels::Op::Elementwise,
                                 kernels::Op::Loss, kernels::Op::Optimizer}) {
      EXPECT_GT(p.ops[op].calls, 0) << kernels::to_string(op);
      EXPECT_GT(p.ops[op].bytes, 0) << kernels::to_string(op);
    }
    // One Adam step: every parameter, its gradient and moments read, three of them written.
    EXPECT_EQ(p.ops[kernels::Op::Optimizer].calls,
              static_cast<std::int64_t>(profiled.model.parameters().size()));
    EXPECT_DOUBLE_EQ(p.ops[kernels::Op::Optimizer].bytes, 7.0 * 4.0 * static_cast<double>(params));
    // The kernels run inside the timed phases.
    double kernel_s = 0;
    for (const kernels::OpCounters& c : p.ops.ops) kernel_s += c.seconds;
    EXPECT_LE(kernel_s, training_thread_s(p));
  }
}

TEST(ProfiledTraining, MiniBatchPreparationIsTimedWithAndWithoutPrefetch) {
  const kernels::Resources res(kernels::Device::Cpu, 1);
  const datasets::Dataset data = small_synthetic(6, 400);
  for (const int prefetch : {0, 1}) {
    SCOPED_TRACE(::testing::Message() << "prefetch " << prefetch);
    TrainConfig config = config_for(nn::ModelKind::Sage, 3, 2);
    config.mini_batch = batches(16, {4, 3}, prefetch);
    const TrainRun plain = train_local(res, data, config);
    config.profile = true;
    const TrainRun profiled = train_local(res, data, config);
    EXPECT_EQ(losses(profiled.result), losses(plain.result));
    for (const EpochStats& s : profiled.result.history) {
      EXPECT_GT(s.profile.sample_s, 0);
      EXPECT_GT(s.profile.gather_s, 0);
      EXPECT_EQ(s.profile.copy_s, 0);  // host run
      EXPECT_GT(s.profile.forward_s, 0);
      EXPECT_LE(training_thread_s(s.profile), s.epoch_time_s);
      // Without prefetch the batches are prepared inside next(): the wait holds the preparation.
      if (prefetch == 0) {
        EXPECT_GE(s.profile.wait_s, s.profile.sample_s + s.profile.gather_s);
      }
    }
  }
}

/// Every profiled epoch of `r`: forward, loss, backward and optimizer timed, the batch's
/// preparation (typed sampler, negatives) drawn on the training thread inside the wait, the
/// phases within the epoch, the kernels inside the phases.
void expect_profiled(const TrainResult& r, bool prepared) {
  for (const EpochStats& s : r.history) {
    const EpochProfile& p = s.profile;
    EXPECT_GT(p.forward_s, 0);
    EXPECT_GT(p.loss_s, 0);
    EXPECT_GT(p.backward_s, 0);
    EXPECT_GT(p.optimizer_s, 0);
    EXPECT_EQ(p.sample_s > 0, prepared);
    // The wait is the preparation (summed per step, the phases per phase: rounding apart).
    EXPECT_GE(p.wait_s, (p.sample_s + p.gather_s) * (1 - 1e-9));
    EXPECT_LE(training_thread_s(p), s.epoch_time_s);
    EXPECT_GT(p.ops[kernels::Op::Gemm].calls, 0);
    EXPECT_GT(p.ops[kernels::Op::Optimizer].calls, 0);
    double kernel_s = 0;
    for (const kernels::OpCounters& c : p.ops.ops) kernel_s += c.seconds;
    EXPECT_LE(kernel_s, training_thread_s(p));
  }
}

TEST(ProfiledTraining, HeterogeneousClassificationFullGraphAndMiniBatch) {
  halo::testing::TempDir dir;
  halo::testing::write_hetero_fixture(dir.path());
  for (const bool mini_batch : {false, true}) {
    SCOPED_TRACE(mini_batch ? "mini-batch" : "full graph");
    TrainConfig config;
    config.epochs = 2;
    config.hetero.hidden = 8;
    config.hetero.featureless = nn::FeaturelessInput::Embedding;
    if (mini_batch) config.mini_batch = batches(3, {2, 2});
    HeteroShard a = local_hetero_shard(datasets::read_hetero_directory(host(), dir.path()));
    const TrainResult plain = train(host(), a, config).result;
    config.profile = true;
    HeteroShard b = local_hetero_shard(datasets::read_hetero_directory(host(), dir.path()));
    const TrainResult profiled = train(host(), b, config).result;
    EXPECT_EQ(losses(profiled), losses(plain));
    for (const EpochStats& s : plain.history) EXPECT_TRUE(all_zero(s.profile));
    expect_profiled(profiled, mini_batch);
  }
}

TEST(ProfiledTraining, LinkPredictionStepsAndTheirNegatives) {
  const datasets::TemporalGraph g = message_events();
  const datasets::SnapshotConfig sc = message_snapshots();
  TrainConfig config = message_link_config();
  config.epochs = 2;
  TemporalShard a = local_temporal_shard(host(), g, sc, config.link.train_fraction);
  const TrainResult plain = train(host(), a, config).result;
  config.profile = true;
  TemporalShard b = local_temporal_shard(host(), g, sc, config.link.train_fraction);
  const TrainResult profiled = train(host(), b, config).result;
  EXPECT_EQ(losses(profiled), losses(plain));
  for (const EpochStats& s : plain.history) EXPECT_TRUE(all_zero(s.profile));
  expect_profiled(profiled, true);
}

TEST(ProfileMedian, TakesTheMedianOfEveryField) {
  std::vector<EpochProfile> v(3);
  const double forward[] = {3, 1, 2}, bytes[] = {10, 30, 20};
  for (std::size_t i = 0; i < 3; ++i) {
    v[i].forward_s = forward[i];
    v[i].ops[kernels::Op::Spmm].bytes = bytes[i];
    v[i].ops[kernels::Op::Spmm].calls = static_cast<std::int64_t>(i) + 4;
  }
  const EpochProfile m = median_profile(v);
  EXPECT_EQ(m.forward_s, 2);
  EXPECT_EQ(m.ops[kernels::Op::Spmm].bytes, 20);
  EXPECT_EQ(m.ops[kernels::Op::Spmm].calls, 5);
  EXPECT_EQ(m.backward_s, 0);
  EXPECT_TRUE(all_zero(median_profile({})));
}

TEST(MachineLimits, LimitIsTheSlowerOfMemoryAndCompute) {
  const MachineLimits m = measure_machine_limits(kernels::Resources(kernels::Device::Cpu, 1),
                                                 /*small=*/true);
  EXPECT_GT(m.triad_bytes_per_s, 0);
  EXPECT_GT(m.sgemm_flops_per_s, 0);
  const MachineLimits fixed{1e9, 1e10};
  kernels::OpCounters c;
  c.bytes = 2e9;   // 2 s of memory traffic
  c.flops = 1e10;  // 1 s of arithmetic
  EXPECT_DOUBLE_EQ(limit_seconds(c, fixed), 2.0);
  c.flops = 3e10;
  EXPECT_DOUBLE_EQ(limit_seconds(c, fixed), 3.0);
}

}  // namespace
}  // namespace halo::runtime::test
