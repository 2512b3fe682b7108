// The heterogeneous node-classification task in the one Trainer: a typed dataset of another
// shape than heco_acm trains without code changes; F1 scores against hand-computed values;
// the kept epoch's parameters and embeddings are what the model holds after the run.

#include <cmath>
#include <gtest/gtest.h>
#include <string>
#include <vector>

#include <halo/datasets/hetero.hpp>
#include <halo/runtime/trainer.hpp>
#include <halo/sampler/hetero_sampler.hpp>

#include "runtime/runtime_test_util.hpp"
#include "support/hetero_fixture.hpp"
#include "support/testing.hpp"

namespace halo::runtime::test {
namespace {

TrainConfig hetero_config(std::uint64_t seed) {
  TrainConfig c;
  c.seed = seed;
  c.epochs = 40;
  c.lr = 0.02;
  c.hetero.hidden = 16;
  c.hetero.dropout = 0.2f;
  c.model.dropout = 0.2f;
  return c;
}

TEST(HeteroTraining, TrainsATypedDatasetOfAnotherShape) {
  halo::testing::TempDir tmp;
  halo::testing::write_hetero_fixture(tmp.path());
  for (const int bases : {0, 2}) {
    HeteroShard shard = local_hetero_shard(datasets::read_hetero_directory(host(), tmp.path(), 4));
    TrainConfig config = hetero_config(3);
    config.hetero.num_bases = bases;
    HeteroTrainRun run = train(host(), shard, config);
    const TrainResult& r = run.result;
    // The items' classes show in their dense features: a working model separates them.
    EXPECT_GE(r.test_accuracy, 0.9) << "bases " << bases;
    EXPECT_GE(r.test_macro_f1, 0.9) << "bases " << bases;
    EXPECT_DOUBLE_EQ(r.test_micro_f1, r.test_accuracy);  // one label and one prediction each
    EXPECT_FALSE(std::isnan(r.val_macro_f1));
    ASSERT_EQ(r.history.size(), 40u);
    EXPECT_LT(r.history.back().train_loss, r.history.front().train_loss);
    EXPECT_GT(r.stages.feature_projection_s, 0);
    EXPECT_GT(r.stages.neighbor_aggregation_s, 0);
    EXPECT_GT(r.stages.semantic_aggregation_s, 0);
    EXPECT_EQ(r.stages.subgraph_build_s, 0);  // full graph: built once, before training
    EXPECT_EQ(r.batches_per_epoch, 1);
    EXPECT_EQ(run.model.embeddings().size(), 2u);  // user and shop have no features
  }
}

TEST(HeteroTraining, KeepsTheBestEpochsParametersAndEmbeddings) {
  halo::testing::TempDir tmp;
  halo::testing::write_hetero_fixture(tmp.path());
  HeteroShard shard = local_hetero_shard(datasets::read_hetero_directory(host(), tmp.path(), 2));
  const TrainConfig config = hetero_config(5);
  nn::HeteroModel<float> model(host(), config.hetero, hetero_schema(shard.graph), config.seed);
  Trainer trainer(host(), shard, config, model);
  const TrainResult r = trainer.run();
  ASSERT_GE(r.best_epoch, 1);
  const Trainer::Evaluation again = trainer.evaluate();  // the restored state, scored afresh
  EXPECT_EQ(again.val_accuracy, r.val_accuracy);
  EXPECT_EQ(again.test_accuracy, r.test_accuracy);
  EXPECT_EQ(again.test_macro_f1, r.test_macro_f1);
  EXPECT_EQ(r.history[static_cast<std::size_t>(r.best_epoch - 1)].val_accuracy, r.val_accuracy);
}

TEST(HeteroTraining, RejectsAModelOfAnotherDataset) {
  halo::testing::TempDir tmp;
  halo::testing::write_hetero_fixture(tmp.path());
  HeteroShard shard = local_hetero_shard(datasets::read_hetero_directory(host(), tmp.path()));
  TrainConfig config = hetero_config(1);
  nn::HeteroSchema schema = hetero_schema(shard.graph);
  schema.num_classes = 5;
  nn::HeteroModel<float> model(host(), config.hetero, schema, 1);
  EXPECT_THROW(Trainer(host(), shard, config, model), LogicError);
  nn::HeteroModel<float> right(host(), config.hetero, hetero_schema(shard.graph), 1);
  config.mini_batch = MiniBatchConfig{};
  config.mini_batch->relation_fanouts = {{-1}};  // one layer of fan-outs for two layers
  EXPECT_THROW(Trainer(host(), shard, config, right), LogicError);
  // No checkpoints for the heterogeneous task yet: refused, not silently skipped.
  config.mini_batch.reset();
  config.checkpoint.dir = tmp.path() / "ck";
  EXPECT_THROW(Trainer(host(), shard, config, right), LogicError);
  config.checkpoint.dir.clear();
  EXPECT_NO_THROW(Trainer(host(), shard, config, right));
}

// Fan-out -1 and one batch holding every training node: the blocks are the full
// neighbourhoods, the dropout masks and embedding rows the full graph's, so every epoch's loss
// matches full-graph training.
TEST(HeteroMiniBatch, FullFanoutInOneBatchEqualsFullGraph) {
  halo::testing::TempDir tmp;
  halo::testing::write_hetero_fixture(tmp.path());
  for (const auto kind : {nn::HeteroLayerKind::Rgcn, nn::HeteroLayerKind::Hgt}) {
    TrainConfig config = hetero_config(7);
    config.epochs = 6;
    config.hetero.kind = kind;
    config.hetero.heads = 2;
    HeteroShard full_shard =
        local_hetero_shard(datasets::read_hetero_directory(host(), tmp.path(), 4));
    const TrainResult full = train(host(), full_shard, config).result;
    HeteroShard mini_shard =
        local_hetero_shard(datasets::read_hetero_directory(host(), tmp.path(), 4));
    config.mini_batch = MiniBatchConfig{};
    config.mini_batch->batch_size = mini_shard.graph.train_idx.numel();
    config.mini_batch->fanouts = {-1, -1};
    const TrainResult mini = train(host(), mini_shard, config).result;
    EXPECT_EQ(mini.batches_per_epoch, 1);
    ASSERT_EQ(mini.history.size(), full.history.size());
    for (std::size_t e = 0; e < full.history.size(); ++e)
      EXPECT_NEAR(mini.history[e].train_loss, full.history[e].train_loss,
                  1e-5 * std::abs(full.history[e].train_loss))
          << nn::to_string(kind) << " epoch " << e + 1;
    EXPECT_GT(mini.stages.subgraph_build_s, 0);
  }
}

TEST(HeteroMiniBatch, TrainsOnSampledBlocksPerRelation) {
  halo::testing::TempDir tmp;
  halo::testing::write_hetero_fixture(tmp.path());
  HeteroShard shard = local_hetero_shard(datasets::read_hetero_directory(host(), tmp.path(), 4));
  TrainConfig config = hetero_config(3);
  config.epochs = 30;
  config.mini_batch = MiniBatchConfig{};
  config.mini_batch->batch_size = 4;
  std::vector<std::string> relations;
  for (const auto& r : shard.graph.relations) relations.push_back(r.name);
  config.mini_batch->relation_fanouts =
      sampler::parse_hetero_fanouts(relations.front() + "=2,*=3:2", relations);
  const std::int64_t num_train = shard.graph.train_idx.numel();
  HeteroTrainRun run = train(host(), shard, config);
  const TrainResult& r = run.result;
  EXPECT_EQ(r.batches_per_epoch, (num_train + 3) / 4);
  EXPECT_GT(r.batches_per_epoch, 1);
  EXPECT_LT(r.history.back().train_loss, r.history.front().train_loss);
  EXPECT_GE(r.test_accuracy, 0.8);  // the classes show in the items' dense features
  EXPECT_GT(r.stages.subgraph_build_s, 0);
  EXPECT_GT(r.stages.neighbor_aggregation_s, 0);
}

TEST(F1Scores, MatchHandComputedValues) {
  // labels 0 0 1 2 2 2, predictions 0 1 1 2 2 0: F1 per class 1/2, 2/3, 4/5; accuracy 4/6.
  const std::vector<std::int32_t> labels = {0, 0, 1, 2, 2, 2, 1};
  const std::vector<std::int32_t> pred = {0, 1, 1, 2, 2, 0, 3};
  const std::vector<kernels::NodeId> rows = {0, 1, 2, 3, 4, 5};  // row 6 not scored
  // Class 3 is neither labelled nor predicted among the rows: not averaged.
  const std::vector<double> counts = class_counts(pred, labels, rows, 4);
  EXPECT_EQ(counts, (std::vector<double>{1, 1, 1, 1, 1, 0, 2, 0, 1, 0, 0, 0}));
  const F1Scores f = f1_scores(counts);
  EXPECT_NEAR(f.macro, (0.5 + 2.0 / 3 + 0.8) / 3, 1e-12);
  EXPECT_NEAR(f.micro, 4.0 / 6, 1e-12);
  // A predicted class without labels counts (F1 0), as in scikit-learn.
  const std::vector<kernels::NodeId> with_six = {0, 1, 2, 3, 4, 5, 6};
  const F1Scores g = f1_scores(class_counts(pred, labels, with_six, 4));
  EXPECT_NEAR(g.macro, (0.5 + 0.5 + 0.8 + 0.0) / 4, 1e-12);
  const F1Scores none = f1_scores(class_counts(pred, labels, {}, 4));
  EXPECT_TRUE(std::isnan(none.macro));
  EXPECT_TRUE(std::isnan(none.micro));
}

}  // namespace
}  // namespace halo::runtime::test
