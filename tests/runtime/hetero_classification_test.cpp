// The heterogeneous node-classification task in the one Trainer: a typed dataset of another
// shape than heco_acm trains without code changes; F1 scores against hand-computed values;
// the kept epoch's parameters and embeddings are what the model holds after the run.

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <gtest/gtest.h>
#include <string>
#include <vector>

#include <halo/datasets/hetero.hpp>
#include <halo/partition/formats/partition_format.hpp>
#include <halo/partition/partitioners/partitioner.hpp>
#include <halo/runtime/comm/comm.hpp>
#include <halo/runtime/engine/checkpoint.hpp>
#include <halo/runtime/runtime.hpp>
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
    EXPECT_GE(r.metrics.at("test_accuracy"), 0.9) << "bases " << bases;
    EXPECT_GE(r.metrics.at("test_macro_f1"), 0.9) << "bases " << bases;
    EXPECT_DOUBLE_EQ(r.metrics.at("test_micro_f1"),
                     r.metrics.at("test_accuracy"));  // one label and one prediction each
    EXPECT_FALSE(std::isnan(r.metrics.at("val_macro_f1")));
    ASSERT_EQ(r.history.size(), 40u);
    EXPECT_LT(r.history.back().train_loss, r.history.front().train_loss);
    EXPECT_GT(r.stage_times.at("feature_projection_s"), 0);
    EXPECT_GT(r.stage_times.at("neighbor_aggregation_s"), 0);
    EXPECT_GT(r.stage_times.at("semantic_aggregation_s"), 0);
    EXPECT_EQ(r.stage_times.at("subgraph_build_s"), 0);  // full graph: built once, before training
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
  Trainer trainer(host(), hetero_classification(host(), shard, config, model), config.epochs,
                  config.checkpoint);
  const TrainResult r = trainer.run();
  ASSERT_GE(r.best_epoch, 1);
  const Metrics again = trainer.evaluate();  // the restored state, scored afresh
  EXPECT_EQ(again.at("val_accuracy"), r.metrics.at("val_accuracy"));
  EXPECT_EQ(again.at("test_accuracy"), r.metrics.at("test_accuracy"));
  EXPECT_EQ(again.at("test_macro_f1"), r.metrics.at("test_macro_f1"));
  EXPECT_EQ(r.history[static_cast<std::size_t>(r.best_epoch - 1)].metrics.at("val_accuracy"),
            r.metrics.at("val_accuracy"));
}

// embed_hetero: the last layer's rows are the logits predict_hetero scores; below it every
// type's hidden rows (each node of the type, after the ReLU); the last layer of another type
// than the target is refused.
TEST(HeteroTraining, EmbedsEveryTypeBelowTheLastLayerAndTheTargetsLogits) {
  halo::testing::TempDir tmp;
  halo::testing::write_hetero_fixture(tmp.path());
  HeteroShard shard = local_hetero_shard(datasets::read_hetero_directory(host(), tmp.path(), 2));
  TrainConfig config = hetero_config(7);
  config.epochs = 3;
  for (const auto kind : {nn::HeteroLayerKind::Rgcn, nn::HeteroLayerKind::Hgt}) {
    config.hetero.kind = kind;
    config.hetero.num_layers = 3;
    HeteroTrainRun run = train(host(), shard, config);
    const nn::HeteroSchema schema = hetero_schema(shard.graph);
    const std::int32_t target = schema.target_type;
    const HeteroPrediction p = predict_hetero(host(), shard, config, run.model);
    const kernels::Tensor<float> logits = embed_hetero(host(), shard, config, run.model, 3, target);
    EXPECT_EQ(logits.to_vector(host()), p.logits.to_vector(host()));
    for (const int layer : {1, 2})
      for (std::size_t t = 0; t < schema.type_names.size(); ++t) {
        SCOPED_TRACE(schema.type_names[t] + " layer " + std::to_string(layer));
        const kernels::Tensor<float> h =
            embed_hetero(host(), shard, config, run.model, layer, static_cast<std::int32_t>(t));
        ASSERT_EQ(h.rows(), schema.num_nodes[t]);
        ASSERT_EQ(h.cols(), config.hetero.hidden);
        const std::vector<float> v = h.to_vector(host());
        EXPECT_TRUE(std::all_of(v.begin(), v.end(), [](float x) { return x >= 0; }));
        EXPECT_TRUE(std::any_of(v.begin(), v.end(), [](float x) { return x > 0; }));
      }
    EXPECT_THROW(embed_hetero(host(), shard, config, run.model, 3, target == 0 ? 1 : 0),
                 LogicError);
  }
}

TEST(HeteroTraining, RejectsAModelOfAnotherDataset) {
  halo::testing::TempDir tmp;
  halo::testing::write_hetero_fixture(tmp.path());
  HeteroShard shard = local_hetero_shard(datasets::read_hetero_directory(host(), tmp.path()));
  TrainConfig config = hetero_config(1);
  nn::HeteroSchema schema = hetero_schema(shard.graph);
  schema.num_classes = 5;
  nn::HeteroModel<float> model(host(), config.hetero, schema, 1);
  EXPECT_THROW(hetero_classification(host(), shard, config, model), LogicError);
  nn::HeteroModel<float> right(host(), config.hetero, hetero_schema(shard.graph), 1);
  config.mini_batch = MiniBatchConfig{};
  config.mini_batch->relation_fanouts = {{-1}};  // one layer of fan-outs for two layers
  EXPECT_THROW(hetero_classification(host(), shard, config, right), LogicError);
  config.mini_batch.reset();
  EXPECT_NO_THROW(hetero_classification(host(), shard, config, right));
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
    EXPECT_GT(mini.stage_times.at("subgraph_build_s"), 0);
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
  EXPECT_GE(r.metrics.at("test_accuracy"), 0.8);  // the classes show in the items' dense features
  EXPECT_GT(r.stage_times.at("subgraph_build_s"), 0);
  EXPECT_GT(r.stage_times.at("neighbor_aggregation_s"), 0);
}

// ---- one process is the one part ---------------------------------------------------------------

// A dataset in one process is the one part of a one-part partition: every node owned, the ids
// the identity, nothing sent or received; trained, it computes what the part `halo partition`
// writes with one part computes over a SelfComm, bit for bit, full graph (learnable embeddings
// of the featureless types) and mini-batch (the feature stores, the owners' draws).
TEST(HeteroOnePart, OneProcessIsTheOnePartOfAOnePartPartition) {
  halo::testing::TempDir tmp;
  halo::testing::write_hetero_fixture(tmp.path() / "data");
  const datasets::HeteroGraph g = datasets::read_hetero_directory(host(), tmp.path() / "data");
  partition::PartitionConfig pc;
  pc.num_parts = 1;
  partition::write_hetero_partitions(host(), g, partition::partition_hetero(host(), g, pc),
                                     tmp.path() / "parts");
  HeteroShard one =
      local_hetero_shard(datasets::read_hetero_directory(host(), tmp.path() / "data"));
  const partition::HeteroPartLayout& l = one.layout;
  EXPECT_EQ(l.rank, 0);
  EXPECT_EQ(l.num_parts, 1);
  EXPECT_EQ(l.num_train, g.train_idx.numel());
  ASSERT_EQ(l.num_owned.size(), g.node_types.size());
  for (std::size_t t = 0; t < g.node_types.size(); ++t) {
    const std::int64_t n = g.node_types[t].num_nodes;
    EXPECT_EQ(l.num_owned[t], n);
    EXPECT_EQ(l.global_nodes[t], n);
    ASSERT_EQ(l.original[t].numel(), n);
    for (std::int64_t v = 0; v < n; ++v) EXPECT_EQ(l.original[t].data()[v], v);
    EXPECT_EQ(l.send_offsets[t], (std::vector<std::int64_t>{0, 0}));
    EXPECT_EQ(l.recv_offsets[t], (std::vector<std::int64_t>{0, 0}));
    EXPECT_EQ(l.send_rows[t].numel(), 0);
  }
  EXPECT_TRUE(l.identity());
  // Every node in id order on a part of two (its halo holding the rest) is not the one part:
  // its rows are shared with the other rank.
  partition::HeteroPartLayout shared = partition::make_local_hetero_layout(host(), g);
  shared.num_parts = 2;
  EXPECT_FALSE(shared.identity());
  for (const bool mini : {false, true}) {
    TrainConfig config = hetero_config(5);
    config.epochs = 4;
    config.hetero.featureless = nn::FeaturelessInput::Embedding;
    if (mini) {
      config.mini_batch = MiniBatchConfig{};
      config.mini_batch->batch_size = 3;
      config.mini_batch->fanouts = {2, 2};
    }
    HeteroShard local =
        local_hetero_shard(datasets::read_hetero_directory(host(), tmp.path() / "data"));
    HeteroTrainRun want = train(host(), local, config);
    SelfComm self;
    HeteroShard part = open_hetero_shard(host(), self, tmp.path() / "parts");
    HeteroTrainRun got = train(host(), part, config);
    ASSERT_EQ(got.result.history.size(), want.result.history.size());
    for (std::size_t e = 0; e < want.result.history.size(); ++e)
      EXPECT_EQ(got.result.history[e].train_loss, want.result.history[e].train_loss)
          << (mini ? "mini-batch" : "full graph") << " epoch " << e + 1;
    EXPECT_EQ(got.result.metrics.at("test_macro_f1"), want.result.metrics.at("test_macro_f1"));
    // The featureless types' tables stay the model's (one rank owns every row) and train.
    ASSERT_EQ(want.model.embeddings().size(), 2u);
    ASSERT_EQ(got.model.embeddings().size(), 2u);
    for (std::size_t i = 0; i < 2; ++i)
      EXPECT_EQ(got.model.embeddings()[i]->table().to_vector(host()),
                want.model.embeddings()[i]->table().to_vector(host()));
  }
}

// ---- checkpoints -------------------------------------------------------------------------------

struct HeteroOutcome {
  TrainResult result;
  std::vector<std::vector<float>> state;  // parameters, then embedding tables
};

/// Trains the fixture (split 4) with `config`; `stop_at` > 0 requests preemption after that
/// many steps.
HeteroOutcome train_hetero_once(const std::filesystem::path& data, const TrainConfig& config,
                                std::int64_t stop_at = 0) {
  HeteroShard shard = local_hetero_shard(datasets::read_hetero_directory(host(), data, 4));
  nn::HeteroModel<float> model(host(), config.hetero, hetero_schema(shard.graph), config.seed);
  Trainer trainer(host(), hetero_classification(host(), shard, config, model), config.epochs,
                  config.checkpoint);
  std::int64_t steps = 0;
  clear_preemption();
  HeteroOutcome o{trainer.run({},
                              [&](std::int64_t) {
                                if (++steps == stop_at) request_preemption();
                              }),
                  {}};
  clear_preemption();
  for (auto* p : model.parameters()) o.state.push_back(p->value.to_vector(host()));
  for (auto* e : model.embeddings()) o.state.push_back(e->table().to_vector(host()));
  return o;
}

struct HeteroResumeCase {
  const char* name;
  nn::HeteroLayerKind kind;
  bool mini_batch;
  std::int64_t stop_at;  // steps before the signal
};

class HeteroCheckpoint : public ::testing::TestWithParam<HeteroResumeCase> {};

// A heterogeneous run stopped by a signal (between epochs, or between two batches of an epoch)
// and resumed from its checkpoint ends as the uninterrupted run: losses, F1 scores, the kept
// epoch, the parameters and the embeddings of featureless types (SparseAdam's moments and
// per-table step counts restored), bit for bit.
TEST_P(HeteroCheckpoint, ResumeEqualsAnUninterruptedRun) {
  const HeteroResumeCase c = GetParam();
  halo::testing::TempDir tmp;
  std::filesystem::create_directories(tmp.path() / "data");
  halo::testing::write_hetero_fixture(tmp.path() / "data");
  TrainConfig config = hetero_config(9);
  config.epochs = 5;
  config.hetero.kind = c.kind;
  config.hetero.heads = 2;
  config.hetero.featureless = nn::FeaturelessInput::Embedding;
  if (c.mini_batch) {
    config.mini_batch = MiniBatchConfig{};
    config.mini_batch->batch_size = 3;
    config.mini_batch->fanouts = {2, 2};
  }
  const HeteroOutcome whole = train_hetero_once(tmp.path() / "data", config);
  const std::int64_t per_epoch = whole.result.batches_per_epoch;
  ASSERT_EQ(per_epoch > 1, c.mini_batch);
  if (c.mini_batch) {
    ASSERT_NE(c.stop_at % per_epoch, 0) << "not between two batches";
  }
  TrainConfig first = config;
  first.checkpoint.dir = tmp.path() / "ck";
  const HeteroOutcome cut = train_hetero_once(tmp.path() / "data", first, c.stop_at);
  ASSERT_TRUE(cut.result.preempted);
  EXPECT_EQ(static_cast<std::int64_t>(cut.result.history.size()), c.stop_at / per_epoch);
  TrainConfig again = first;
  again.checkpoint.resume = true;
  const HeteroOutcome resumed = train_hetero_once(tmp.path() / "data", again);
  EXPECT_EQ(resumed.result.resumed_from, cut.result.checkpoint);
  EXPECT_EQ(resumed.result.best_epoch, whole.result.best_epoch);
  EXPECT_EQ(resumed.result.final_train_loss, whole.result.final_train_loss);
  EXPECT_EQ(resumed.result.metrics.at("test_macro_f1"), whole.result.metrics.at("test_macro_f1"));
  EXPECT_EQ(resumed.result.metrics.at("val_macro_f1"), whole.result.metrics.at("val_macro_f1"));
  ASSERT_EQ(resumed.result.history.size(), whole.result.history.size());
  for (std::size_t e = 0; e < whole.result.history.size(); ++e) {
    EXPECT_EQ(resumed.result.history[e].train_loss, whole.result.history[e].train_loss) << e;
    EXPECT_EQ(resumed.result.history[e].metrics.at("val_macro_f1"),
              whole.result.history[e].metrics.at("val_macro_f1"))
        << e;
  }
  EXPECT_EQ(resumed.state, whole.state);
}

INSTANTIATE_TEST_SUITE_P(
    Hetero, HeteroCheckpoint,
    ::testing::Values(HeteroResumeCase{"RgcnFullGraph", nn::HeteroLayerKind::Rgcn, false, 2},
                      HeteroResumeCase{"HgtFullGraph", nn::HeteroLayerKind::Hgt, false, 3},
                      HeteroResumeCase{"RgcnMidEpoch", nn::HeteroLayerKind::Rgcn, true, 5},
                      HeteroResumeCase{"HgtMidEpoch", nn::HeteroLayerKind::Hgt, true, 3}),
    [](const auto& info) { return std::string(info.param.name); });

// A saved heterogeneous model is applied only to data of the schema it was built for: another
// type's node count, feature width, class count or relation is refused naming the model file.
TEST(HeteroModelFile, RefusesDataOfAnotherSchema) {
  halo::testing::TempDir tmp;
  halo::testing::write_hetero_fixture(tmp.path());
  const HeteroShard shard =
      local_hetero_shard(datasets::read_hetero_directory(host(), tmp.path(), 4));
  const nn::HeteroSchema model = hetero_schema(shard.graph);
  EXPECT_NO_THROW(check_hetero_schema("m.halo", model, model));
  std::vector<nn::HeteroSchema> others(4, model);
  others[0].num_nodes[0] += 1;
  others[1].in_features[0] += 1;
  others[2].num_classes += 1;
  others[3].relations[0].second =
      (others[3].relations[0].second + 1) % static_cast<std::int32_t>(model.type_names.size());
  for (std::size_t i = 0; i < others.size(); ++i) {
    try {
      check_hetero_schema("m.halo", model, others[i]);
      ADD_FAILURE() << "schema " << i << " was accepted";
    } catch (const IoError& e) {
      EXPECT_EQ(std::string(e.what()).rfind("m.halo: the model was built for other data", 0), 0u)
          << e.what();
    }
  }
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
