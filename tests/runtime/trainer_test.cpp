// Full-graph training end to end: published Cora accuracy, determinism, model selection.
#include <filesystem>
#include <gtest/gtest.h>
#include <string>
#include <vector>

#include <halo/datasets/plain_format.hpp>
#include <halo/datasets/synthetic.hpp>
#include <halo/kernels/loss.hpp>
#include <halo/runtime/trainer.hpp>

namespace halo::runtime {
namespace {

std::filesystem::path cora_dir() {
  return std::filesystem::path(HALO_TEST_SOURCE_DIR) / ".." / "shared" / "datasets" / "planetoid" /
         "cora";
}

const datasets::Dataset& cora() {
  static const kernels::Resources res;
  static const datasets::Dataset d = datasets::read_directory(res, cora_dir());
  return d;
}

/// Mean test accuracy over `seeds` seeds with Kipf & Welling's set-up (2 layers, 16 hidden,
/// dropout 0.5, lr 0.01, weight decay 5e-4, 200 epochs).
double mean_cora_accuracy(nn::ModelKind kind, int seeds) {
  const kernels::Resources res;
  double sum = 0;
  for (int seed = 0; seed < seeds; ++seed) {
    TrainConfig config;
    config.model.kind = kind;
    config.seed = static_cast<std::uint64_t>(seed);
    nn::Model<float> model = make_model(res, cora(), config);
    sum += train_full_graph(res, cora(), config, model).test_accuracy;
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

datasets::Dataset small_synthetic(std::uint64_t seed) {
  datasets::SyntheticConfig c;
  c.num_nodes = 600;
  c.num_classes = 4;
  c.num_features = 16;
  c.feature_signal = 0.5;  // small graph: a clearer signal than the default keeps the test short
  c.seed = seed;
  return datasets::make_synthetic(kernels::Resources(), c);
}

TrainResult train(const datasets::Dataset& data, nn::ModelKind kind, std::uint64_t seed, int epochs,
                  nn::Model<float>* out_model = nullptr) {
  const kernels::Resources res;
  TrainConfig config;
  config.model.kind = kind;
  config.epochs = epochs;
  config.seed = seed;
  nn::Model<float> model = make_model(res, data, config);
  TrainResult r = train_full_graph(res, data, config, model);
  if (out_model != nullptr) *out_model = std::move(model);
  return r;
}

TEST(FullGraphTraining, SameSeedReplaysExactly) {
  const auto data = small_synthetic(3);
  for (auto kind : {nn::ModelKind::Gcn, nn::ModelKind::Sage}) {
    const TrainResult a = train(data, kind, 11, 15);
    const TrainResult b = train(data, kind, 11, 15);
    ASSERT_EQ(a.history.size(), b.history.size());
    for (std::size_t i = 0; i < a.history.size(); ++i) {
      EXPECT_EQ(a.history[i].train_loss, b.history[i].train_loss) << "epoch " << i + 1;
      EXPECT_EQ(a.history[i].val_accuracy, b.history[i].val_accuracy) << "epoch " << i + 1;
    }
  }
}

TEST(FullGraphTraining, OtherSeedGivesOtherRun) {
  const auto data = small_synthetic(3);
  const TrainResult a = train(data, nn::ModelKind::Gcn, 1, 5);
  const TrainResult b = train(data, nn::ModelKind::Gcn, 2, 5);
  EXPECT_NE(a.history[0].train_loss, b.history[0].train_loss);
}

TEST(FullGraphTraining, LossFallsAndSyntheticLabelsAreLearned) {
  const auto data = small_synthetic(5);
  for (auto kind : {nn::ModelKind::Gcn, nn::ModelKind::Sage}) {
    const TrainResult r = train(data, kind, 0, 100);
    EXPECT_LT(r.history.back().train_loss, 0.5 * r.history.front().train_loss);
    EXPECT_GT(r.test_accuracy, 0.6) << "chance is 0.25";
  }
}

TEST(FullGraphTraining, ReportsAndKeepsTheBestValidationEpoch) {
  const auto data = small_synthetic(7);
  const kernels::Resources res;
  TrainConfig config;
  config.epochs = 30;
  nn::Model<float> model = make_model(res, data, config);
  int calls = 0;
  const TrainResult r = train_full_graph(res, data, config, model,
                                         [&](const EpochStats& s) { EXPECT_EQ(s.epoch, ++calls); });
  EXPECT_EQ(calls, 30);
  double best = 0;
  for (const auto& s : r.history) best = std::max(best, s.val_accuracy);
  EXPECT_EQ(r.val_accuracy, best);
  const EpochStats& at_best = r.history[static_cast<std::size_t>(r.best_epoch - 1)];
  EXPECT_EQ(r.test_accuracy, at_best.test_accuracy);
  EXPECT_EQ(r.val_accuracy, at_best.val_accuracy);
  EXPECT_GT(r.epoch_time_median_s, 0);
  // The model holds the best epoch's parameters: evaluating it again gives that epoch's scores.
  FullGraphTrainer again(res, data, config, model);
  const auto e = again.evaluate();
  EXPECT_DOUBLE_EQ(e.val_accuracy, r.val_accuracy);
  EXPECT_DOUBLE_EQ(e.test_accuracy, r.test_accuracy);
}

// The device-neutral scoring: Targets copied to the CPU score exactly like the dataset itself.
TEST(FullGraphTraining, ScoresFromUploadedTargetsEqualTheDatasets) {
  const auto data = small_synthetic(2);
  const kernels::Resources res;
  TrainConfig config;
  nn::Model<float> model = make_model(res, data, config);
  FullGraphTrainer trainer(res, data, config, model);
  trainer.train_epoch(1);
  const FullGraphInputs in = prepare_full_graph(res, data, config.model.kind, true);
  const nn::Context ctx{&res, false, 0, 0, 0};
  const kernels::Tensor<float>& logits = model.forward(ctx, in.graph.view(), in.features);
  const auto a = score_splits(res, logits, data);
  const auto b = score_splits(res, logits, upload_targets(res, data));
  EXPECT_EQ(a.train_accuracy, b.train_accuracy);
  EXPECT_EQ(a.val_loss, b.val_loss);
  EXPECT_EQ(a.val_accuracy, b.val_accuracy);
  EXPECT_EQ(a.test_accuracy, b.test_accuracy);
  const auto e = trainer.evaluate();
  EXPECT_EQ(e.val_loss, a.val_loss);
}

TEST(FullGraphTraining, RejectsAModelBuiltForOtherData) {
  const auto data = small_synthetic(1);
  const kernels::Resources res;
  TrainConfig config;
  config.model.in_features = data.num_features() + 1;
  config.model.num_classes = data.num_classes;
  nn::Model<float> model(res, config.model, 0);
  EXPECT_THROW(train_full_graph(res, data, config, model), LogicError);
}

// ---- CUDA (skipped without a device) ---------------------------------------------------------

/// Every epoch's training loss of `epochs` epochs of Cora on `res` (seed 1, the default model).
std::vector<double> cora_losses(const kernels::Resources& res, nn::ModelKind kind, int epochs,
                                TrainResult* out = nullptr) {
  TrainConfig config;
  config.model.kind = kind;
  config.epochs = epochs;
  config.seed = 1;
  nn::Model<float> model = make_model(res, cora(), config);
  TrainResult r = train_full_graph(res, cora(), config, model);
  std::vector<double> losses;
  for (const EpochStats& s : r.history) losses.push_back(s.train_loss);
  if (out != nullptr) *out = std::move(r);
  return losses;
}

// The same initialisation and dropout masks (counter-based) on both devices: only rounding
// differs (cuBLAS/cuSPARSE order, fused multiply-adds), so every epoch's loss agrees closely.
TEST(FullGraphTrainingCuda, CoraLossesMatchTheCpu) {
  if (kernels::cuda_device_count() == 0) GTEST_SKIP() << "no usable CUDA device";
  const kernels::Resources cpu;
  const kernels::Resources gpu(kernels::Device::Cuda);
  for (const nn::ModelKind kind : {nn::ModelKind::Gcn, nn::ModelKind::Sage}) {
    SCOPED_TRACE(nn::to_string(kind));
    TrainResult on_cpu, on_gpu;
    const std::vector<double> expected = cora_losses(cpu, kind, 20, &on_cpu);
    const std::vector<double> got = cora_losses(gpu, kind, 20, &on_gpu);
    ASSERT_EQ(got.size(), expected.size());
    for (std::size_t e = 0; e < got.size(); ++e)
      EXPECT_NEAR(got[e], expected[e], 1e-3 * expected[e]) << "epoch " << e + 1;
    EXPECT_NEAR(on_gpu.test_accuracy, on_cpu.test_accuracy, 0.02);
  }
}

// The best-epoch snapshot stays on the device and comes back into the model: evaluating the
// trained model again gives the best epoch's scores.
TEST(FullGraphTrainingCuda, KeepsTheBestValidationEpochOnTheDevice) {
  if (kernels::cuda_device_count() == 0) GTEST_SKIP() << "no usable CUDA device";
  const kernels::Resources gpu(kernels::Device::Cuda);
  TrainConfig config;
  config.epochs = 15;
  nn::Model<float> model = make_model(gpu, cora(), config);
  for (const auto* p : model.parameters()) EXPECT_EQ(p->value.device(), kernels::Device::Cuda);
  const TrainResult r = train_full_graph(gpu, cora(), config, model);
  FullGraphTrainer again(gpu, cora(), config, model);
  const auto e = again.evaluate();
  EXPECT_DOUBLE_EQ(e.val_accuracy, r.val_accuracy);
  EXPECT_DOUBLE_EQ(e.test_accuracy, r.test_accuracy);
}

}  // namespace
}  // namespace halo::runtime
