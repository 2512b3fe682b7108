// Mini-batch training end to end: GraphSAGE accuracy on Cora, determinism with and without the
// prefetching pipeline, a falling loss on a larger synthetic graph, and the errors.
#include <cmath>
#include <filesystem>
#include <gtest/gtest.h>
#include <vector>

#include <halo/datasets/plain_format.hpp>
#include <halo/datasets/synthetic.hpp>
#include <halo/kernels/exec.hpp>
#include <halo/kernels/scan.hpp>
#include <halo/runtime/minibatch.hpp>
#include <halo/runtime/minibatch_body.hpp>

namespace halo::runtime {
namespace {

using kernels::NodeId;

const datasets::Dataset& cora() {
  static const kernels::Resources res;
  static const datasets::Dataset d =
      datasets::read_directory(res, std::filesystem::path(HALO_TEST_SOURCE_DIR) / ".." / "shared" /
                                        "datasets" / "planetoid" / "cora");
  return d;
}

TrainConfig sage_config(std::uint64_t seed, int epochs) {
  TrainConfig c;
  c.model.kind = nn::ModelKind::Sage;
  c.seed = seed;
  c.epochs = epochs;
  return c;
}

TrainResult train(const kernels::Resources& res, const datasets::Dataset& data,
                  const TrainConfig& config, const MiniBatchConfig& mb,
                  std::size_t* envelope = nullptr, std::size_t* peak = nullptr) {
  nn::Model<float> model = make_model(res, data, config);
  MiniBatchTrainer trainer(res, data, config, mb, model);
  TrainResult r = run_epochs(res, trainer, config.epochs, model);
  if (envelope) *envelope = trainer.sampler_envelope_bytes();
  if (peak) *peak = trainer.sampler_peak_bytes();
  return r;
}

// The issue asks for >= 79% test accuracy with GraphSAGE mini-batch training on Cora (mean of
// three seeds; batches of 32 of the 140 training nodes, fan-outs 25 and 10).
TEST(MiniBatchTraining, SageOnCoraReachesSeventyNinePercent) {
  const kernels::Resources res;
  MiniBatchConfig mb;
  mb.batch_size = 32;
  double sum = 0;
  for (std::uint64_t seed = 0; seed < 3; ++seed)
    sum += train(res, cora(), sage_config(seed, 100), mb).test_accuracy;
  EXPECT_GE(sum / 3, 0.79);
}

// The pipeline changes when batches are prepared, not what they hold: prefetch 0 and 2 and one
// or two threads give the same losses; the sampler stays within its envelope.
TEST(MiniBatchTraining, PrefetchAndThreadsDoNotChangeTheRun) {
  MiniBatchConfig mb;
  mb.batch_size = 40;
  mb.fanouts = {5, 3};
  std::vector<double> reference;
  for (const auto& [threads, prefetch] : {std::pair{1, 0}, std::pair{2, 2}, std::pair{1, 1}}) {
    SCOPED_TRACE(::testing::Message() << threads << " threads, prefetch " << prefetch);
    const kernels::Resources res(kernels::Device::Cpu, threads);
    mb.prefetch = prefetch;
    std::size_t envelope = 0, peak = 0;
    const TrainResult r = train(res, cora(), sage_config(4, 5), mb, &envelope, &peak);
    std::vector<double> losses;
    for (const EpochStats& s : r.history) losses.push_back(s.train_loss);
    if (reference.empty()) reference = losses;
    for (std::size_t i = 0; i < losses.size(); ++i)
      EXPECT_NEAR(losses[i], reference[i], 1e-5 * reference[i]);
    EXPECT_GT(peak, 0u);
    EXPECT_LE(peak * static_cast<std::size_t>(prefetch + 1), envelope);
  }
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
  MiniBatchConfig mb;
  mb.batch_size = 256;
  mb.fanouts = {10, 5};
  TrainConfig config = sage_config(1, 6);
  config.model.hidden = 64;
  const TrainResult r = train(res, data, config, mb);
  for (std::size_t e = 1; e < r.history.size(); ++e)
    EXPECT_LT(r.history[e].train_loss, r.history[e - 1].train_loss) << "epoch " << e + 1;
  EXPECT_GT(r.test_accuracy, 0.5);
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
    nn::Model<float> full_model = make_model(res, cora(), config);
    const TrainResult full = train_full_graph(res, cora(), config, full_model);
    MiniBatchConfig mb;
    mb.batch_size = cora().train_idx.numel();
    mb.fanouts = {-1, -1};
    const TrainResult mini = train(res, cora(), config, mb);
    for (std::size_t e = 0; e < full.history.size(); ++e)
      EXPECT_NEAR(mini.history[e].train_loss, full.history[e].train_loss,
                  1e-4 * full.history[e].train_loss)
          << "epoch " << e + 1;
    EXPECT_NEAR(mini.test_accuracy, full.test_accuracy, 0.002);
  }
}

TEST(MiniBatchTraining, GcnOnCoraLearns) {
  const kernels::Resources res;
  TrainConfig config = sage_config(0, 100);
  config.model.kind = nn::ModelKind::Gcn;
  MiniBatchConfig mb;
  mb.batch_size = 32;
  mb.fanouts = {10, 10};
  EXPECT_GE(train(res, cora(), config, mb).test_accuracy, 0.75);
}

TEST(MiniBatchTraining, RejectsMismatchedFanouts) {
  const kernels::Resources res;
  MiniBatchConfig three;
  three.fanouts = {5, 5, 5};
  nn::Model<float> model = make_model(res, cora(), sage_config(0, 1));
  EXPECT_THROW(MiniBatchTrainer(res, cora(), sage_config(0, 1), three, model), LogicError);
}

// The GCN block weights, one destination per index, against the formula written out: row i is
// the self-loop 1 / d̂_i, then each sampled neighbour j with (d_i / s_i) / sqrt(d̂_i d̂_j).
TEST(GcnBlockNorm, MatchesTheUnbiasedEstimate) {
  // Global graph of 6 nodes, degrees 3, 1, 2, 4, 0, 2 (only the indptr matters).
  const std::vector<std::int64_t> graph_indptr = {0, 3, 4, 6, 10, 10, 12};
  // Block: destinations are global 3 and 0 (local 0, 1); sources add 5, 2 (local 2, 3).
  // Destination 0 sampled locals {2, 3, 1} (3 of 4), destination 1 sampled {0} (1 of 3).
  const std::vector<NodeId> src_ids = {3, 0, 5, 2};
  const std::vector<std::int64_t> indptr = {0, 3, 4};
  const std::vector<NodeId> indices = {2, 3, 1, 0};
  const kernels::CsrView<NodeId, float> block{indptr.data(), indices.data(), nullptr, 2, 4, false};
  std::vector<std::int64_t> out_indptr(3, -1);
  std::vector<NodeId> out_indices(6, -1);
  std::vector<float> out_values(6, 0);
  const kernels::Resources res(kernels::Device::Cpu, 2);
  kernels::launch(
      res, 2,
      detail::GcnBlockNormBody{block, src_ids.data(), graph_indptr.data(), out_indptr.data(),
                               out_indices.data(), out_values.data()});
  EXPECT_EQ(out_indptr, (std::vector<std::int64_t>{0, 4, 6}));
  EXPECT_EQ(out_indices, (std::vector<NodeId>{0, 2, 3, 1, 1, 0}));
  const auto degree = [&](NodeId v) {
    return static_cast<double>(graph_indptr[static_cast<std::size_t>(v) + 1] -
                               graph_indptr[static_cast<std::size_t>(v)]);
  };
  const auto weight = [&](NodeId i, NodeId j, double sampled) {
    return degree(i) / sampled / std::sqrt((degree(i) + 1) * (degree(j) + 1));
  };
  const std::vector<double> expected = {1 / (degree(3) + 1), weight(3, 5, 3),     weight(3, 2, 3),
                                        weight(3, 0, 3),     1 / (degree(0) + 1), weight(0, 3, 1)};
  for (std::size_t e = 0; e < expected.size(); ++e)
    EXPECT_NEAR(out_values[e], expected[e], 1e-6 * expected[e]) << "entry " << e;
}

// The sparse-row gather of the mini-batch inputs (lengths, three-launch scan, copy), on more rows
// than one scan block, against a plain loop.
TEST(SparseRowGather, EqualsCopyingTheRows) {
  const std::int64_t rows = 700, picked = 3 * detail::kScanBlock + 17;
  std::vector<std::int64_t> indptr = {0};
  std::vector<std::int32_t> indices;
  std::vector<float> values;
  for (std::int64_t r = 0; r < rows; ++r) {
    for (std::int64_t k = 0; k < r % 7; ++k) {
      indices.push_back(static_cast<std::int32_t>((r * 13 + k * 5) % 50));
      values.push_back(static_cast<float>(r) + 0.25f * static_cast<float>(k));
    }
    indptr.push_back(static_cast<std::int64_t>(indices.size()));
  }
  std::vector<NodeId> ids;
  for (std::int64_t i = 0; i < picked; ++i) ids.push_back(static_cast<NodeId>((i * 37) % rows));
  std::vector<std::int64_t> expected_indptr = {0};
  std::vector<std::int32_t> expected_indices;
  std::vector<float> expected_values;
  for (const NodeId v : ids) {
    for (std::int64_t e = indptr[static_cast<std::size_t>(v)];
         e < indptr[static_cast<std::size_t>(v) + 1]; ++e) {
      expected_indices.push_back(indices[static_cast<std::size_t>(e)]);
      expected_values.push_back(values[static_cast<std::size_t>(e)]);
    }
    expected_indptr.push_back(static_cast<std::int64_t>(expected_indices.size()));
  }

  const kernels::Resources res(kernels::Device::Cpu, 2);
  std::vector<std::int64_t> out_indptr(static_cast<std::size_t>(picked) + 1, -1);
  std::vector<std::int64_t> sums(4, -1);
  kernels::launch(res, picked,
                  detail::SparseRowLengthBody{indptr.data(), ids.data(), out_indptr.data()});
  std::int64_t* a = out_indptr.data() + 1;
  ASSERT_EQ(kernels::scan_blocks(picked, detail::kScanBlock), 4);
  kernels::inclusive_scan(res, a, picked, sums.data(), detail::kScanBlock);
  ASSERT_EQ(out_indptr, expected_indptr);
  std::vector<std::int32_t> out_indices(expected_indices.size(), -1);
  std::vector<float> out_values(expected_values.size(), -1);
  kernels::launch(
      res, picked,
      detail::SparseRowCopyBody{indptr.data(), indices.data(), values.data(), ids.data(),
                                out_indptr.data(), out_indices.data(), out_values.data()});
  EXPECT_EQ(out_indices, expected_indices);
  EXPECT_EQ(out_values, expected_values);
}

// ---- CUDA (skipped without a device) ---------------------------------------------------------

// Draws are keyed by (seed, epoch, batch, node), so the GPU sampler picks the CPU's neighbours:
// the same batches, and losses that differ only by rounding.
TEST(MiniBatchTrainingCuda, CoraLossesMatchTheCpu) {
  if (kernels::cuda_device_count() == 0) GTEST_SKIP() << "no usable CUDA device";
  const kernels::Resources cpu;
  const kernels::Resources gpu(kernels::Device::Cuda);
  MiniBatchConfig mb;
  mb.batch_size = 32;
  mb.fanouts = {10, 5};
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
    EXPECT_NEAR(got.test_accuracy, expected.test_accuracy, 0.02);
  }
  // The host waits twice per batch on the GPU: the sampler's sizes and the gathered sparse
  // features' entry count (Cora's features are sparse); the loss is read once per epoch. Never
  // on the CPU.
  TrainConfig config = sage_config(3, 1);
  nn::Model<float> model = make_model(gpu, cora(), config);
  MiniBatchTrainer trainer(gpu, cora(), config, mb, model);
  trainer.train_epoch(1);
  EXPECT_EQ(trainer.host_syncs_per_batch(), 2.0);
  nn::Model<float> cpu_model = make_model(cpu, cora(), config);
  MiniBatchTrainer cpu_trainer(cpu, cora(), config, mb, cpu_model);
  cpu_trainer.train_epoch(1);
  EXPECT_EQ(cpu_trainer.host_syncs_per_batch(), 0.0);
}

}  // namespace
}  // namespace halo::runtime
