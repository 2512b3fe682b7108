// The conformance suite: every built-in task and model through the same properties, in one
// process, by the public task interface (runtime::Task) and the engine (runtime::Trainer):
//   - a run replays from its seed (losses, scores, parameters bit for bit);
//   - the kept epoch re-evaluates to the scores recorded for it;
//   - a run stopped by a signal (between two steps of an epoch, and between epochs) and resumed
//     from its checkpoint equals the uninterrupted run, bit for bit;
//   - the saved model, applied to fresh data by the task (halo predict's path), gives the
//     trained run's test scores exactly.
// Subjects: node classification with GCN, GraphSAGE and GAT (mini-batches: several steps an
// epoch), heterogeneous classification with R-GCN and HGT (typed mini-batches, learnable
// embeddings), link prediction with EvolveGCN-O (one step per training snapshot). What a subject
// does not offer is declared in kExceptions with the reason, and printed.
#include <cstdio>
#include <filesystem>
#include <functional>
#include <gtest/gtest.h>
#include <memory>
#include <ostream>
#include <string>
#include <vector>

#include <halo/datasets/hetero.hpp>
#include <halo/datasets/temporal.hpp>
#include <halo/nn/model.hpp>
#include <halo/runtime/runtime.hpp>

#include "runtime/runtime_test_util.hpp"
#include "support/hetero_fixture.hpp"

namespace halo::runtime::test {
namespace {

namespace fs = std::filesystem;

/// One task and model as the suite drives it.
class Subject {
 public:
  virtual ~Subject() = default;
  /// A small configuration with several steps an epoch (its seed, epochs and checkpoints are the
  /// suite's).
  virtual TrainConfig config() const = 0;
  /// A fresh model (initialised from config.seed) on fresh data, as the task. The task refers
  /// to them until the next make().
  virtual std::unique_ptr<Task> make(const TrainConfig& config) = 0;
  /// The last make()'s parameters (and embedding tables), on the host.
  virtual std::vector<std::vector<float>> parameters() = 0;
  /// Saves the last make()'s model (trained: `result`) to `file`, and applies the file to fresh
  /// data through the task: its scores.
  virtual Metrics save_and_predict(const fs::path& file, const TrainConfig& config,
                                   const TrainResult& result) = 0;
};

std::vector<std::vector<float>> values(const std::vector<nn::Parameter<float>*>& params) {
  std::vector<std::vector<float>> v;
  for (const auto* p : params) v.push_back(p->value.to_vector(host()));
  return v;
}

// ---- node classification ----------------------------------------------------------------------

class NodeSubject final : public Subject {
 public:
  explicit NodeSubject(nn::ModelKind kind) : m_kind(kind) {}
  TrainConfig config() const override {
    TrainConfig c;
    c.model.kind = m_kind;
    c.model.hidden = 8;
    c.model.heads = 2;
    c.mini_batch = batches(32, {5, 5});  // Cora's 140 training nodes: 5 steps an epoch
    return c;
  }
  std::unique_ptr<Task> make(const TrainConfig& config) override {
    m_shard =
        std::make_unique<Shard>(local_shard(host(), halo::testing::copy_dataset(host(), cora())));
    m_model = std::make_unique<nn::Model<float>>(
        make_model(host(), m_shard->num_features, m_shard->part.num_classes, config));
    return node_classification(host(), *m_shard, config, *m_model);
  }
  std::vector<std::vector<float>> parameters() override { return values(m_model->parameters()); }
  Metrics save_and_predict(const fs::path& file, const TrainConfig& config,
                           const TrainResult& result) override {
    m_model->save(host(), file, model_file_info(config, result, "cora"));
    nn::Model<float> loaded = nn::load_model<float>(host(), file);
    Shard shard = local_shard(host(), halo::testing::copy_dataset(host(), cora()));
    return node_classification(host(), shard, config, loaded)->evaluate();
  }

 private:
  nn::ModelKind m_kind;
  std::unique_ptr<Shard> m_shard;
  std::unique_ptr<nn::Model<float>> m_model;
};

// ---- heterogeneous node classification --------------------------------------------------------

class HeteroSubject final : public Subject {
 public:
  explicit HeteroSubject(nn::HeteroLayerKind kind) : m_kind(kind) {
    fs::create_directories(m_dir.path() / "typed");
    halo::testing::write_hetero_fixture(m_dir.path() / "typed");
  }
  TrainConfig config() const override {
    TrainConfig c;
    c.lr = 0.02;
    c.hetero.kind = m_kind;
    c.hetero.hidden = 8;
    c.hetero.heads = 2;
    c.hetero.dropout = 0.2f;
    c.hetero.featureless = nn::FeaturelessInput::Embedding;
    c.model.dropout = 0.2f;
    c.mini_batch = batches(3, {2, 2});
    return c;
  }
  std::unique_ptr<Task> make(const TrainConfig& config) override {
    m_shard = std::make_unique<HeteroShard>(
        local_hetero_shard(datasets::read_hetero_directory(host(), m_dir.path() / "typed", 4)));
    m_model = std::make_unique<nn::HeteroModel<float>>(host(), config.hetero,
                                                       hetero_schema(m_shard->graph), config.seed);
    return hetero_classification(host(), *m_shard, config, *m_model);
  }
  std::vector<std::vector<float>> parameters() override {
    std::vector<std::vector<float>> v = values(m_model->parameters());
    for (auto* e : m_model->embeddings()) v.push_back(e->table().to_vector(host()));
    return v;
  }
  Metrics save_and_predict(const fs::path& file, const TrainConfig& config,
                           const TrainResult& result) override {
    save_hetero_model(host(), file, *m_model, config, *m_shard, result);
    HeteroModelFile f = load_hetero_model(host(), file);
    HeteroShard shard = local_hetero_shard(
        datasets::read_hetero_directory(host(), m_dir.path() / "typed", f.split));
    return predict_hetero(host(), shard, f.config, f.model).metrics;
  }

 private:
  nn::HeteroLayerKind m_kind;
  halo::testing::TempDir m_dir;
  std::unique_ptr<HeteroShard> m_shard;
  std::unique_ptr<nn::HeteroModel<float>> m_model;
};

// ---- link prediction --------------------------------------------------------------------------

class LinkSubject final : public Subject {
 public:
  TrainConfig config() const override { return message_link_config(); }
  std::unique_ptr<Task> make(const TrainConfig& config) override {
    m_shard = std::make_unique<TemporalShard>(
        local_temporal_shard(host(), m_graph, message_snapshots(), config.link.train_fraction));
    nn::TemporalModelConfig mc = config.link.model;
    mc.in_features = m_shard->num_features;
    m_model = std::make_unique<LinkModel>(LinkModel{
        nn::TemporalModel<float>(host(), mc, config.seed),
        nn::PairScorer<float>(host(), mc.hidden, config.link.scorer_hidden, config.seed)});
    return link_prediction(host(), *m_shard, config, *m_model);
  }
  std::vector<std::vector<float>> parameters() override {
    std::vector<std::vector<float>> v = values(m_model->encoder.parameters());
    for (auto& p : values(m_model->scorer.parameters())) v.push_back(std::move(p));
    return v;
  }
  Metrics save_and_predict(const fs::path& file, const TrainConfig& config,
                           const TrainResult& result) override {
    save_link_model(host(), file, *m_model, config, *m_shard, "auto", result);
    LinkModelFile f = load_link_model(host(), file);
    TemporalShard shard =
        local_temporal_shard(host(), m_graph, f.snapshots, f.config.link.train_fraction);
    return predict_link(host(), shard, f.config, f.model).metrics;
  }

 private:
  datasets::TemporalGraph m_graph = message_events();
  std::unique_ptr<TemporalShard> m_shard;
  std::unique_ptr<LinkModel> m_model;
};

// ---- the suite --------------------------------------------------------------------------------

struct Case {
  const char* name;
  std::function<std::unique_ptr<Subject>()> subject;
};

/// The case's name in test names and messages (not its bytes).
void PrintTo(const Case& c, std::ostream* os) { *os << c.name; }

/// What a run of `subject` gives: its result and the parameters after it.
struct Outcome {
  TrainResult result;
  std::vector<std::vector<float>> parameters;
};

/// Trains `subject` with `config`; `stop_at` > 0 requests preemption after that many steps.
Outcome run(Subject& subject, const TrainConfig& config, std::int64_t stop_at = 0) {
  Trainer trainer(host(), subject.make(config), config.epochs, config.checkpoint);
  std::int64_t steps = 0;
  clear_preemption();
  Outcome o{trainer.run({},
                        [&](std::int64_t) {
                          if (++steps == stop_at) request_preemption();
                        }),
            {}};
  clear_preemption();
  o.parameters = subject.parameters();
  return o;
}

void expect_same_run(const TrainResult& a, const TrainResult& b) {
  EXPECT_EQ(a.best_epoch, b.best_epoch);
  EXPECT_EQ(a.metrics, b.metrics);
  EXPECT_EQ(a.final_train_loss, b.final_train_loss);
  ASSERT_EQ(a.history.size(), b.history.size());
  for (std::size_t e = 0; e < a.history.size(); ++e) {
    EXPECT_EQ(a.history[e].train_loss, b.history[e].train_loss) << "epoch " << e + 1;
    EXPECT_EQ(a.history[e].metrics, b.history[e].metrics) << "epoch " << e + 1;
  }
}

class Conformance : public ::testing::TestWithParam<Case> {
 protected:
  void SetUp() override {
    m_subject = GetParam().subject();
    m_config = m_subject->config();
    m_config.seed = 7;
    m_config.epochs = 3;
  }
  std::unique_ptr<Subject> m_subject;
  TrainConfig m_config;
};

TEST_P(Conformance, ReplaysFromItsSeed) {
  const Outcome a = run(*m_subject, m_config), b = run(*m_subject, m_config);
  expect_same_run(a.result, b.result);
  EXPECT_EQ(a.parameters, b.parameters);
  EXPECT_LT(a.result.history.back().train_loss, a.result.history.front().train_loss * 1.5);
}

TEST_P(Conformance, TheKeptEpochReevaluatesToItsRecordedScores) {
  Trainer trainer(host(), m_subject->make(m_config), m_config.epochs);
  const TrainResult r = trainer.run();
  ASSERT_GE(r.best_epoch, 1);
  const Metrics& recorded = r.history[static_cast<std::size_t>(r.best_epoch - 1)].metrics;
  const Metrics again = trainer.evaluate();
  EXPECT_EQ(again, recorded);
  for (const auto& [name, value] : recorded) EXPECT_EQ(r.metrics.at(name), value) << name;
}

TEST_P(Conformance, ResumeAfterACheckpointEqualsTheUninterruptedRun) {
  const Outcome whole = run(*m_subject, m_config);
  const std::int64_t per_epoch = whole.result.batches_per_epoch;
  ASSERT_GT(per_epoch, 1) << "the suite's configurations take several steps an epoch";
  for (const std::int64_t stop_at : {per_epoch + 1, per_epoch}) {  // mid-epoch, between epochs
    SCOPED_TRACE("stopped after " + std::to_string(stop_at) + " steps");
    halo::testing::TempDir tmp;
    TrainConfig first = m_config;
    first.checkpoint.dir = tmp.path() / "ck";
    const Outcome cut = run(*m_subject, first, stop_at);
    ASSERT_TRUE(cut.result.preempted);
    TrainConfig again = first;
    again.checkpoint.resume = true;
    const Outcome resumed = run(*m_subject, again);
    EXPECT_EQ(resumed.result.resumed_from, cut.result.checkpoint);
    expect_same_run(resumed.result, whole.result);
    EXPECT_EQ(resumed.parameters, whole.parameters);
  }
}

TEST_P(Conformance, TheSavedModelPredictsTheTrainedTestScores) {
  Trainer trainer(host(), m_subject->make(m_config), m_config.epochs);
  const TrainResult r = trainer.run();
  halo::testing::TempDir tmp;
  const Metrics predicted = m_subject->save_and_predict(tmp.path() / "m.halo", m_config, r);
  int compared = 0;
  for (const auto& [name, value] : r.metrics)
    if (name.rfind("test_", 0) == 0) {
      EXPECT_EQ(predicted.at(name), value) << name;
      ++compared;
    }
  EXPECT_GT(compared, 0);
}

INSTANTIATE_TEST_SUITE_P(
    Tasks, Conformance,
    ::testing::Values(
        Case{"NodeGcn", [] { return std::make_unique<NodeSubject>(nn::ModelKind::Gcn); }},
        Case{"NodeSage", [] { return std::make_unique<NodeSubject>(nn::ModelKind::Sage); }},
        Case{"NodeGat", [] { return std::make_unique<NodeSubject>(nn::ModelKind::Gat); }},
        Case{"HeteroRgcn",
             [] { return std::make_unique<HeteroSubject>(nn::HeteroLayerKind::Rgcn); }},
        Case{"HeteroHgt", [] { return std::make_unique<HeteroSubject>(nn::HeteroLayerKind::Hgt); }},
        Case{"LinkEvolveGcnO", [] { return std::make_unique<LinkSubject>(); }}),
    [](const auto& info) { return std::string(info.param.name); });

/// What the suite does not check per subject, and where it is checked or why it is missing.
constexpr const char* kExceptions[] = {
    "P = 2 and 4 ranks equal one process, and a resume across ranks: in the MPI suite of the "
    "same subjects (tests/runtime/conformance_mpi_test.cpp, ctest conformance_np2/np4), not here",
    "link prediction: no mini-batches (EvolveGCN's protocol: each step encodes whole "
    "snapshots; its saved model applied across ranks is checked by the CLI suite, "
    "DistributedTrainCli.LinkPredictionOnASnapshotSeries)",
    "halo plan's peak memory within 15 %: measured against the runs' peak RSS in bench/ (node "
    "classification: bench/plan/validate.sh; heterogeneous classification and link prediction, "
    "one process and across ranks: bench/plan/tasks.sh) and against the tensors' peak in "
    "tests/cluster/hetero_plan_test.cpp and link_plan_test.cpp, not here",
};

/// Prints kExceptions once, before the suite's first test.
class Exceptions : public ::testing::Environment {
 public:
  void SetUp() override {
    for (const char* e : kExceptions) std::printf("conformance exception: %s\n", e);
  }
};
const auto* const kPrintExceptions = ::testing::AddGlobalTestEnvironment(new Exceptions);

}  // namespace
}  // namespace halo::runtime::test
