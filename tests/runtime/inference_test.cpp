// runtime::score, argmax_rows and softmax_rows against values worked out by hand; layer-wise
// inference against the full-graph pass.

#include <algorithm>
#include <cmath>
#include <gtest/gtest.h>
#include <string>
#include <vector>

#include <halo/runtime/data/feature_store.hpp>
#include <halo/runtime/data/inference.hpp>
#include <halo/runtime/data/layerwise_inference.hpp>

#include "runtime/runtime_test_util.hpp"

namespace {

namespace rt = halo::runtime;
namespace nn = halo::nn;
using halo::kernels::Device;
using halo::kernels::Resources;

TEST(Scores, AccuracyAndMacroF1MatchAHandCount) {
  // Node 4 has no label (-1) and is skipped. Per class: 0: TP 1, FP 1, FN 1 -> F1 1/2;
  // 1: TP 1, FP 1, FN 1 -> 1/2; 2: TP 1 -> 1; class 3 occurs nowhere and is not averaged.
  const std::vector<std::int32_t> predicted = {0, 0, 1, 2, 2, 1};
  const std::vector<std::int32_t> labels = {0, 1, 1, 2, -1, 0};
  for (const std::int32_t classes : {3, 4}) {
    const rt::Scores s = rt::score(predicted, labels, classes);
    EXPECT_EQ(s.labelled, 5);
    EXPECT_DOUBLE_EQ(s.accuracy, 3.0 / 5.0);
    EXPECT_DOUBLE_EQ(s.macro_f1, 2.0 / 3.0);
  }
  const rt::Scores none = rt::score({1}, {-1}, 2);
  EXPECT_EQ(none.labelled, 0);
  EXPECT_TRUE(std::isnan(none.accuracy));
  EXPECT_TRUE(std::isnan(none.macro_f1));
}

TEST(Scores, ArgmaxTakesTheFirstMaximumAndSoftmaxRowsSumToOne) {
  std::vector<float> m = {1, 3, 3, 0, -2, -1, -1, -5};  // 2 rows x 4
  EXPECT_EQ(rt::argmax_rows(m, 4), (std::vector<std::int32_t>{1, 1}));
  rt::softmax_rows(m, 4);
  for (int r = 0; r < 2; ++r) {
    double sum = 0;
    for (int j = 0; j < 4; ++j) sum += m[static_cast<std::size_t>(r * 4 + j)];
    EXPECT_NEAR(sum, 1.0, 1e-6);
  }
  // exp(1) / (exp(1) + 2 exp(3) + exp(0))
  EXPECT_NEAR(m[0], std::exp(1.0) / (std::exp(1.0) + 2 * std::exp(3.0) + 1.0), 1e-6);
  EXPECT_EQ(m[1], m[2]);
}

// Layer-wise inference (chunks of rows, every neighbour) gives the full-graph pass's logits for
// every built-in model, on sparse (Cora) and dense (synthetic) features, with chunks of every
// size down to one row (and rows longer than the entry cap alone in their chunk); spilling the
// hidden representations to a file changes no bit.
TEST(LayerwiseInference, EqualsTheFullGraphPassAndSpillsBitForBit) {
  const Resources res(Device::Cpu, 2);
  const halo::testing::TempDir dir;
  for (const nn::ModelKind kind : {nn::ModelKind::Gcn, nn::ModelKind::Sage, nn::ModelKind::Gat}) {
    for (const bool sparse : {true, false}) {
      SCOPED_TRACE(nn::to_string(kind) + (sparse ? " on Cora" : " on a synthetic graph"));
      const halo::datasets::Dataset synthetic = rt::test::small_synthetic(3, 300);
      const halo::datasets::Dataset& data = sparse ? rt::test::cora() : synthetic;
      rt::Shard full = rt::local_shard(res, halo::testing::copy_dataset(res, data));
      nn::ModelConfig mc;
      mc.kind = kind;
      mc.num_layers = 3;
      mc.hidden = 8;
      mc.heads = 2;
      mc.in_features = full.num_features;
      mc.num_classes = full.part.num_classes;
      nn::Model<float> model(res, mc, 7);
      rt::Inference whole(res, full, kind, true);
      const std::vector<float> expected = whole.run(model, mc.num_layers).to_vector(res);

      rt::Shard mine = rt::local_shard(res, halo::testing::copy_dataset(res, data));
      rt::FeatureStore features(res, mine.part, true);
      for (const auto& [entries, rows] :
           {std::pair<std::int64_t, std::int64_t>{1 << 16, 1 << 14}, {7, 5}, {1, 1}}) {
        SCOPED_TRACE("chunks of " + std::to_string(entries) + " entries, " + std::to_string(rows) +
                     " rows");
        rt::LayerwiseInference memory(res, mine.part, features, nn::graph_preparation(kind), {},
                                      entries, rows);
        const std::vector<float> got = memory.run(model).to_vector(res);
        ASSERT_EQ(got.size(), expected.size());
        for (std::size_t i = 0; i < got.size(); ++i)
          ASSERT_NEAR(got[i], expected[i], 1e-5 * std::max(1.f, std::abs(expected[i]))) << i;
        EXPECT_EQ(memory.spill_bytes_written(), 0);
        if (rows == 1) {
          EXPECT_EQ(memory.num_chunks(), mine.part.num_owned());
        }

        rt::LayerwiseInference spilled(res, mine.part, features, nn::graph_preparation(kind),
                                       dir.path(), entries, rows);
        EXPECT_EQ(spilled.run(model).to_vector(res), got);
        // Layers 1 and 2 written (one row each per node), read back by layers 2 and 3.
        const std::int64_t rep = mine.part.num_owned() * model.width(1) * 4;
        EXPECT_EQ(spilled.spill_bytes_written(), 2 * rep);
        EXPECT_GE(spilled.spill_bytes_read(), 2 * rep);
        EXPECT_LT(spilled.bytes(), memory.bytes());
      }
    }
  }
  // The temporary file is unlinked from the start: nothing is left in the directory.
  EXPECT_TRUE(std::filesystem::is_empty(dir.path()));
}

TEST(LayerwiseInference, RefusesWhatItCannotRun) {
  const Resources res(Device::Cpu, 1);
  rt::Shard shard = rt::local_shard(res, halo::testing::copy_dataset(res, rt::test::cora()));
  rt::FeatureStore features(res, shard.part, true);
  const std::filesystem::path missing = "/nonexistent-halo-spill-dir";
  try {
    rt::LayerwiseInference l(res, shard.part, features, nn::GraphPreparation::Symmetric, missing);
    FAIL() << "a spill directory that does not exist was accepted";
  } catch (const halo::IoError& e) {
    EXPECT_NE(std::string(e.what()).find(missing.string()), std::string::npos) << e.what();
  }
  rt::LayerwiseInference gcn(res, shard.part, features, nn::GraphPreparation::Symmetric);
  nn::ModelConfig mc;
  mc.kind = nn::ModelKind::Sage;
  mc.in_features = shard.num_features;
  mc.num_classes = shard.part.num_classes;
  nn::Model<float> sage(res, mc, 1);
  EXPECT_THROW(gcn.run(sage), halo::LogicError);  // blocks planned for GCN's weights
}

}  // namespace
