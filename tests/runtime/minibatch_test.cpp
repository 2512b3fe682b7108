// Mini-batch training end to end: GraphSAGE accuracy on Cora, determinism with and without the
// prefetching pipeline, a falling loss on a larger synthetic graph, and the errors.
#include <cmath>
#include <filesystem>
#include <gtest/gtest.h>
#include <vector>

#include <halo/datasets/plain_format.hpp>
#include <halo/datasets/synthetic.hpp>
#include <halo/runtime/minibatch.hpp>

namespace halo::runtime {
namespace {

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

}  // namespace
}  // namespace halo::runtime
