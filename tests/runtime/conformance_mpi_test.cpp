// The conformance suite across ranks, run by ctest under mpiexec -n 2 and -n 4 (conformance_np2,
// conformance_np4): every built-in task and model through the same two properties, by the
// public task interface (runtime::Task) and the engine (runtime::Trainer):
//   - P ranks, each on its part of the data, compute what one process computes on the whole
//     data: every epoch's training loss within 1e-4 relative, every score of every epoch and
//     the kept epoch's test scores within the subject's tolerance (a prediction that rounding
//     flips; ranking metrics over a few dozen candidates), on a directed and an undirected
//     graph;
//   - an 8-part partition on any number of ranks (ctest also runs the Elastic suite under
//     mpiexec -n 1 and -n 3) computes what one process computes, and its checkpoints resume on
//     another number of ranks (P -> 1 and 1 -> P) to the uninterrupted run's results;
//   - a run that one rank stops by a signal (between two steps of an epoch, and between two
//     epochs) and that resumes from the checkpoint every rank wrote its share of ends as the
//     uninterrupted P-rank run, bit for bit (losses, scores, kept epoch, parameters).
// Subjects: node classification with GCN, GraphSAGE and GAT (mini-batches on a METIS partition
// of Cora and of a directed Cora; GraphSAGE also with the rows read from a store's file, in one
// process and on every rank, evaluating sampled batches), heterogeneous classification with R-GCN
// and HGT (typed mini-batches on a partition of the 4-type fixture, its user -> user relation
// one-way or symmetric; learnable embeddings of its featureless types, each rank owning its nodes'
// rows), link prediction with EvolveGCN-O (each rank its rows of every snapshot, with migrations
// and a step where one rank owns nothing; directed and reciprocal events). The one-process
// properties and the exceptions of both suites: tests/runtime/conformance_test.cpp.
#include <cmath>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <gtest/gtest.h>
#include <memory>
#include <ostream>
#include <string>
#include <vector>

#include <halo/datasets/hetero.hpp>
#include <halo/datasets/store/store.hpp>
#include <halo/datasets/temporal.hpp>
#include <halo/nn/model.hpp>
#include <halo/runtime/comm/comm.hpp>
#include <halo/runtime/runtime.hpp>

#include "runtime/distributed_fixtures.hpp"
#include "runtime/mpi_test_main.hpp"
#include "runtime/runtime_test_util.hpp"

namespace halo::runtime::test {
namespace {

namespace fs = std::filesystem;

Comm* g_comm = nullptr;
Comm& comm() { return *g_comm; }

/// One task and model on a directed or undirected graph, as the suite drives it. The data and
/// models a task refers to live as long as the subject.
class Subject {
 public:
  virtual ~Subject() = default;
  /// A small configuration with several steps an epoch.
  virtual TrainConfig config() const = 0;
  /// The task on the whole data, in one process (every rank runs it alone).
  virtual std::unique_ptr<Task> one(const TrainConfig& config) = 0;
  /// The task on this rank's part of the data (comm().size() parts), collective.
  virtual std::unique_ptr<Task> part(const TrainConfig& config) = 0;
  /// How far a score of P ranks may lie from one process's.
  virtual double tolerance() const = 0;
};

// ---- node classification ----------------------------------------------------------------------

/// `from_store`: Cora's features dense, in a store (written by rank 0) that one process opens
/// mapped and the parts reference; every rank reads its rows from the store's file (a small
/// budget caches a few), the evaluation sampled. `parts` > 0: a partition of that many parts,
/// each rank training on its group of them (elastic runs); `full_graph`: no mini-batches.
class NodeSubject final : public Subject {
 public:
  NodeSubject(nn::ModelKind kind, bool directed, bool from_store = false, std::int32_t parts = 0,
              bool full_graph = false)
      : m_kind(kind),
        m_from_store(from_store),
        m_full_graph(full_graph),
        m_parts(parts),
        m_dense(from_store ? with_dense_features(directed ? directed_cora() : cora())
                           : datasets::Dataset()),
        m_data(from_store ? m_dense
               : directed ? directed_cora()
                          : cora()),
        m_partition(comm(), m_data, partition::Method::MetisKway,
                    "conf-" + nn::to_string(kind) + (directed ? "-d" : "-u") +
                        (from_store ? "-store" : "") +
                        (parts > 0 ? "-k" + std::to_string(parts) : ""),
                    from_store, parts) {}
  TrainConfig config() const override {
    TrainConfig c;
    c.model.kind = m_kind;
    c.model.hidden = 8;
    c.model.heads = 2;
    c.mini_batch = batches(32, {5, 5});  // Cora's 140 training nodes: 5 steps an epoch
    if (m_full_graph) c.mini_batch.reset();
    // An elastic job keeps its flags on every rank count: a cache of remote rows, which holds
    // nothing on one rank.
    if (m_parts > 0 && c.mini_batch) c.mini_batch->cache_mb = 0.05;
    if (m_from_store) {
      c.mini_batch->eval_fanouts = {5, 5};
      c.memory_budget = std::size_t{1} << 20;  // a quarter of it caches 45 of 2708 rows
    }
    return c;
  }
  std::unique_ptr<Task> one(const TrainConfig& config) override {
    if (m_from_store) {
      datasets::StoreOpenOptions open;
      open.mapped = true;
      Shard& shard =
          keep(local_shard(host(), datasets::open_store(host(), m_partition.store(), open)));
      return node_classification(host(), shard, config, model(shard, config));
    }
    Shard& shard = keep(local_shard(host(), halo::testing::copy_dataset(host(), m_data)));
    return node_classification(host(), shard, config, model(shard, config));
  }
  std::unique_ptr<Task> part(const TrainConfig& config) override { return part_on(comm(), config); }
  /// The task on `c`'s ranks (any number up to the partition's parts).
  std::unique_ptr<Task> part_on(Comm& c, const TrainConfig& config) {
    partition::PartReadOptions read;
    read.map_store_features = m_from_store;
    Shard& shard = keep(open_shard(host(), c, m_partition.dir(), read));
    // One rank holds the whole graph in original order: the store's rows are its rows.
    EXPECT_EQ(shard.part.features_by_original, m_from_store && c.size() > 1);
    return node_classification(host(), shard, config, model(shard, config));
  }
  double tolerance() const override { return 0.005; }  // the node Equivalence suite's

 private:
  Shard& keep(Shard&& s) { return *m_shards.emplace_back(std::make_unique<Shard>(std::move(s))); }
  nn::Model<float>& model(const Shard& shard, const TrainConfig& config) {
    return *m_models.emplace_back(std::make_unique<nn::Model<float>>(
        make_model(host(), shard.num_features, shard.part.num_classes, config)));
  }
  nn::ModelKind m_kind;
  bool m_from_store;
  bool m_full_graph;
  std::int32_t m_parts;
  datasets::Dataset m_dense;  // from_store: the features dense
  const datasets::Dataset& m_data;
  SharedPartition m_partition;
  std::vector<std::unique_ptr<Shard>> m_shards;
  std::vector<std::unique_ptr<nn::Model<float>>> m_models;
};

// ---- heterogeneous node classification --------------------------------------------------------

class HeteroSubject final : public Subject {
 public:
  HeteroSubject(nn::HeteroLayerKind kind, bool undirected)
      : m_kind(kind),
        m_dir(fs::path(HALO_TEST_BINARY_DIR) /
              ("conf-" + nn::to_string(kind) + (undirected ? "-u-" : "-d-") +
               std::to_string(comm().size()))) {
    write_hetero_partition(comm(), m_dir, undirected);
  }
  ~HeteroSubject() override {
    comm().barrier();
    if (comm().rank() == 0) fs::remove_all(m_dir);
  }
  TrainConfig config() const override {
    TrainConfig c;
    c.lr = 0.02;
    c.hetero.kind = m_kind;
    c.hetero.hidden = 8;
    c.hetero.heads = 2;
    c.hetero.dropout = 0.2f;
    c.hetero.featureless = nn::FeaturelessInput::Embedding;  // each rank owns its rows
    c.mini_batch = batches(3, {2, 2});
    return c;
  }
  std::unique_ptr<Task> one(const TrainConfig& config) override {
    HeteroShard& shard =
        keep(local_hetero_shard(datasets::read_hetero_directory(host(), m_dir / "data")));
    return hetero_classification(host(), shard, config, model(shard, config));
  }
  std::unique_ptr<Task> part(const TrainConfig& config) override {
    HeteroShard& shard = keep(open_hetero_shard(host(), comm(), m_dir / "parts"));
    return hetero_classification(host(), shard, config, model(shard, config));
  }
  double tolerance() const override { return 1e-12; }  // the same predictions

 private:
  HeteroShard& keep(HeteroShard&& s) {
    return *m_shards.emplace_back(std::make_unique<HeteroShard>(std::move(s)));
  }
  nn::HeteroModel<float>& model(const HeteroShard& shard, const TrainConfig& config) {
    return *m_models.emplace_back(std::make_unique<nn::HeteroModel<float>>(
        host(), config.hetero, hetero_schema(shard.graph), config.seed));
  }
  nn::HeteroLayerKind m_kind;
  fs::path m_dir;
  std::vector<std::unique_ptr<HeteroShard>> m_shards;
  std::vector<std::unique_ptr<nn::HeteroModel<float>>> m_models;
};

// ---- link prediction --------------------------------------------------------------------------

class LinkSubject final : public Subject {
 public:
  explicit LinkSubject(bool reciprocal) : m_graph(link_events(reciprocal)) {}
  TrainConfig config() const override {
    TrainConfig c;
    c.lr = 0.01;
    c.weight_decay = 0;
    c.link.window = 3;
    c.link.negatives = 4;
    c.link.model.hidden = 8;
    c.link.scorer_hidden = 8;
    c.link.train_fraction = 0.6;
    c.link.val_fraction = 0.15;
    return c;
  }
  std::unique_ptr<Task> one(const TrainConfig& config) override {
    TemporalShard& shard =
        keep(local_temporal_shard(host(), m_graph, snapshots(), config.link.train_fraction));
    return link_prediction(host(), shard, config, model(shard, config));
  }
  /// Owners v % P, except that at step 5 (the last of a training window) the last rank owns
  /// nothing, and from step 8 on a third of the nodes move to the next rank.
  std::unique_ptr<Task> part(const TrainConfig& config) override {
    const int p = comm().size();
    const auto steps = static_cast<std::size_t>(snapshots().num_snapshots);
    std::vector<std::vector<std::int32_t>> own(
        steps, std::vector<std::int32_t>(static_cast<std::size_t>(m_graph.num_nodes())));
    for (std::size_t t = 0; t < steps; ++t)
      for (std::int64_t v = 0; v < m_graph.num_nodes(); ++v) {
        const int parts = t == 5 && p > 1 ? p - 1 : p;
        const auto shift = static_cast<std::int64_t>(t >= 8 && v % 3 == 0);
        own[t][static_cast<std::size_t>(v)] = static_cast<std::int32_t>((v + shift) % parts);
      }
    TemporalShard& shard = keep(distributed_temporal_shard(host(), m_graph, snapshots(), own,
                                                           comm(), config.link.train_fraction));
    return link_prediction(host(), shard, config, model(shard, config));
  }
  // Ranking metrics over a few dozen candidates move by a rank when rounding reorders two
  // nearly tied scores.
  double tolerance() const override { return 0.02; }

 private:
  static datasets::SnapshotConfig snapshots() {
    datasets::SnapshotConfig sc;
    sc.num_snapshots = 24;
    sc.window_snapshots = 1;
    return sc;
  }
  TemporalShard& keep(TemporalShard&& s) {
    return *m_shards.emplace_back(std::make_unique<TemporalShard>(std::move(s)));
  }
  LinkModel& model(const TemporalShard& shard, const TrainConfig& config) {
    nn::TemporalModelConfig mc = config.link.model;
    mc.in_features = shard.num_features;
    return *m_models.emplace_back(std::make_unique<LinkModel>(LinkModel{
        nn::TemporalModel<float>(host(), mc, config.seed),
        nn::PairScorer<float>(host(), mc.hidden, config.link.scorer_hidden, config.seed)}));
  }
  datasets::TemporalGraph m_graph;
  std::vector<std::unique_ptr<TemporalShard>> m_shards;
  std::vector<std::unique_ptr<LinkModel>> m_models;
};

// ---- the suite --------------------------------------------------------------------------------

struct Case {
  const char* name;
  std::function<std::unique_ptr<Subject>(bool directed)> subject;
};

/// The case's name in test names and messages (not its bytes).
void PrintTo(const Case& c, std::ostream* os) { *os << c.name; }

/// What a run gives: its result and the task's state after it (parameters, embedding rows).
struct Outcome {
  TrainResult result;
  std::vector<std::vector<float>> state;
};

/// Trains `task` (over the ranks of `c`); `stop_at` > 0: the last rank requests preemption after
/// that many steps.
Outcome run(std::unique_ptr<Task> task, const TrainConfig& config, std::int64_t stop_at = 0,
            Comm& c = comm()) {
  Trainer trainer(host(), std::move(task), config.epochs, config.checkpoint);
  std::int64_t steps = 0;
  clear_preemption();
  Outcome o{trainer.run({},
                        [&](std::int64_t) {
                          if (++steps == stop_at && c.rank() == c.size() - 1) request_preemption();
                        }),
            {}};
  clear_preemption();
  for (const NamedTensor& t : trainer.task().state())
    o.state.push_back(t.tensor->to_vector(host()));
  return o;
}

class Conformance : public ::testing::TestWithParam<Case> {
 protected:
  TrainConfig config_of(const Subject& s) const {
    TrainConfig c = s.config();
    c.seed = 7;
    c.epochs = 3;
    return c;
  }
};

/// `got` (P ranks) against `want` (one process): every epoch's loss within 1e-4 relative, every
/// score within `tol`, the kept epoch's test scores too.
void expect_same_run(const TrainResult& got, const TrainResult& want, double tol) {
  EXPECT_EQ(got.batches_per_epoch, want.batches_per_epoch);
  ASSERT_EQ(got.history.size(), want.history.size());
  for (std::size_t e = 0; e < want.history.size(); ++e) {
    const EpochStats &a = want.history[e], &b = got.history[e];
    EXPECT_NEAR(b.train_loss, a.train_loss, 1e-4 * std::abs(a.train_loss)) << "epoch " << e + 1;
    ASSERT_EQ(b.metrics.entries().size(), a.metrics.entries().size()) << "epoch " << e + 1;
    for (const auto& [name, value] : a.metrics)
      EXPECT_NEAR(b.metrics.at(name), value,
                  name.find("loss") == std::string::npos ? tol : 1e-4 * std::abs(value))
          << name << ", epoch " << e + 1;
  }
  EXPECT_NEAR(got.final_train_loss, want.final_train_loss, 1e-4 * std::abs(want.final_train_loss));
  for (const auto& [name, value] : want.metrics) {
    if (name.rfind("test_", 0) == 0) {
      EXPECT_NEAR(got.metrics.at(name), value, tol) << name;
    }
  }
}

TEST_P(Conformance, RanksEqualOneProcess) {
  for (const bool directed : {true, false}) {
    SCOPED_TRACE(directed ? "directed" : "undirected");
    const std::unique_ptr<Subject> subject = GetParam().subject(directed);
    const TrainConfig config = config_of(*subject);
    const TrainResult want = run(subject->one(config), config).result;
    const TrainResult got = run(subject->part(config), config).result;
    EXPECT_EQ(got.world_size, comm().size());
    EXPECT_LT(want.history.back().train_loss, want.history.front().train_loss * 1.5);
    expect_same_run(got, want, subject->tolerance());
  }
}

TEST_P(Conformance, ResumeAcrossRanksEqualsTheUninterruptedRun) {
  const std::unique_ptr<Subject> subject = GetParam().subject(true);
  const TrainConfig config = config_of(*subject);
  const Outcome run_whole = run(subject->part(config), config);
  const TrainResult& whole = run_whole.result;
  const std::int64_t per_epoch = whole.batches_per_epoch;
  ASSERT_GT(per_epoch, 1) << "the suite's configurations take several steps an epoch";
  for (const std::int64_t stop_at : {per_epoch + 1, per_epoch}) {  // mid-epoch, between epochs
    SCOPED_TRACE("stopped after " + std::to_string(stop_at) + " steps");
    const fs::path dir =
        fs::path(HALO_TEST_BINARY_DIR) /
        ("conf-ck-" + std::string(GetParam().name) + "-" + std::to_string(comm().size()));
    if (comm().rank() == 0) fs::remove_all(dir);
    comm().barrier();
    TrainConfig first = config;
    first.checkpoint.dir = dir;
    const TrainResult cut = run(subject->part(first), first, stop_at).result;
    ASSERT_TRUE(cut.preempted);
    TrainConfig again = first;
    again.checkpoint.resume = true;
    const Outcome run_resumed = run(subject->part(again), again);
    const TrainResult& resumed = run_resumed.result;
    EXPECT_EQ(resumed.resumed_from, cut.checkpoint);
    EXPECT_EQ(resumed.best_epoch, whole.best_epoch);
    EXPECT_EQ(resumed.metrics, whole.metrics);
    EXPECT_EQ(resumed.final_train_loss, whole.final_train_loss);
    ASSERT_EQ(resumed.history.size(), whole.history.size());
    for (std::size_t e = 0; e < whole.history.size(); ++e) {
      EXPECT_EQ(resumed.history[e].train_loss, whole.history[e].train_loss) << "epoch " << e + 1;
      EXPECT_EQ(resumed.history[e].metrics, whole.history[e].metrics) << "epoch " << e + 1;
    }
    EXPECT_EQ(run_resumed.state, run_whole.state);  // this rank's parameters and embedding rows
    comm().barrier();
    if (comm().rank() == 0) fs::remove_all(dir);
  }
}

// ---- elastic runs: an 8-part partition on any number of ranks ---------------------------------

struct ElasticCase {
  const char* name;
  nn::ModelKind kind;
  bool from_store;
  bool full_graph;
};
void PrintTo(const ElasticCase& c, std::ostream* os) { *os << c.name; }

class Elastic : public ::testing::TestWithParam<ElasticCase> {
 protected:
  std::unique_ptr<NodeSubject> subject(bool directed) const {
    const ElasticCase& c = GetParam();
    return std::make_unique<NodeSubject>(c.kind, directed, c.from_store, 8, c.full_graph);
  }
  static TrainConfig config_of(const Subject& s) {
    TrainConfig c = s.config();
    c.seed = 7;
    c.epochs = 3;
    return c;
  }
};

// P ranks (1, 2, 3 or 4: 3 does not divide 8) of an 8-part partition, each on its group of
// parts, compute what one process computes.
TEST_P(Elastic, AnyRankCountEqualsOneProcess) {
  for (const bool directed : {true, false}) {
    SCOPED_TRACE(directed ? "directed" : "undirected");
    const std::unique_ptr<NodeSubject> s = subject(directed);
    const TrainConfig config = config_of(*s);
    const TrainResult want = run(s->one(config), config).result;
    const TrainResult got = run(s->part(config), config).result;
    EXPECT_EQ(got.world_size, comm().size());
    expect_same_run(got, want, s->tolerance());
  }
}

// A checkpoint written by P ranks resumes in one process (rank 0 alone, on a copy of it), and
// one written by one process resumes on P ranks: both end as the uninterrupted P-rank run,
// stopped mid-epoch (mini-batches) or between two epochs.
TEST_P(Elastic, CheckpointsResumeOnAnotherRankCount) {
  const std::unique_ptr<NodeSubject> s = subject(true);
  const TrainConfig config = config_of(*s);
  const TrainResult whole = run(s->part(config), config).result;
  const std::int64_t per_epoch = whole.batches_per_epoch;
  const fs::path base =
      fs::path(HALO_TEST_BINARY_DIR) /
      ("elastic-ck-" + std::string(GetParam().name) + "-" + std::to_string(comm().size()));
  SelfComm self;
  for (const std::int64_t stop_at : {per_epoch + (per_epoch > 1 ? 1 : 0), per_epoch}) {
    SCOPED_TRACE("stopped after " + std::to_string(stop_at) + " steps");
    if (comm().rank() == 0) fs::remove_all(base);
    comm().barrier();
    // P ranks stop; one process resumes.
    TrainConfig first = config;
    first.checkpoint.dir = base / "p";
    const TrainResult cut = run(s->part(first), first, stop_at).result;
    ASSERT_TRUE(cut.preempted);
    comm().barrier();
    if (comm().rank() == 0) {
      fs::copy(base / "p", base / "p-copy", fs::copy_options::recursive);
      TrainConfig again = first;
      again.checkpoint.dir = base / "p-copy";
      again.checkpoint.resume = true;
      const TrainResult resumed = run(s->part_on(self, again), again, 0, self).result;
      EXPECT_EQ(resumed.world_size, 1);
      EXPECT_FALSE(resumed.resumed_from.empty());
      EXPECT_EQ(resumed.best_epoch, whole.best_epoch);
      expect_same_run(resumed, whole, s->tolerance());
    }
    comm().barrier();
    // One process stops; P ranks resume.
    TrainConfig alone = config;
    alone.checkpoint.dir = base / "one";
    if (comm().rank() == 0) {
      const TrainResult one_cut = run(s->part_on(self, alone), alone, stop_at, self).result;
      EXPECT_TRUE(one_cut.preempted);
    }
    comm().barrier();
    alone.checkpoint.resume = true;
    const TrainResult resumed = run(s->part(alone), alone).result;
    EXPECT_EQ(resumed.world_size, comm().size());
    EXPECT_FALSE(resumed.resumed_from.empty());
    EXPECT_EQ(resumed.best_epoch, whole.best_epoch);
    expect_same_run(resumed, whole, s->tolerance());
    comm().barrier();
    if (comm().rank() == 0) fs::remove_all(base);
  }
}

INSTANTIATE_TEST_SUITE_P(
    EightParts, Elastic,
    ::testing::Values(ElasticCase{"GcnFullGraph", nn::ModelKind::Gcn, false, true},
                      ElasticCase{"SageMiniBatch", nn::ModelKind::Sage, false, false},
                      ElasticCase{"SageFromStore", nn::ModelKind::Sage, true, false},
                      ElasticCase{"GatMiniBatch", nn::ModelKind::Gat, false, false}),
    [](const auto& info) { return std::string(info.param.name); });

INSTANTIATE_TEST_SUITE_P(
    Tasks, Conformance,
    ::testing::Values(
        Case{"NodeGcn",
             [](bool d) { return std::make_unique<NodeSubject>(nn::ModelKind::Gcn, d); }},
        Case{"NodeSage",
             [](bool d) { return std::make_unique<NodeSubject>(nn::ModelKind::Sage, d); }},
        Case{"NodeGat",
             [](bool d) { return std::make_unique<NodeSubject>(nn::ModelKind::Gat, d); }},
        Case{"NodeSageFromStore",
             [](bool d) { return std::make_unique<NodeSubject>(nn::ModelKind::Sage, d, true); }},
        Case{"HeteroRgcn",
             [](bool d) { return std::make_unique<HeteroSubject>(nn::HeteroLayerKind::Rgcn, !d); }},
        Case{"HeteroHgt",
             [](bool d) { return std::make_unique<HeteroSubject>(nn::HeteroLayerKind::Hgt, !d); }},
        Case{"LinkEvolveGcnO", [](bool d) { return std::make_unique<LinkSubject>(!d); }}),
    [](const auto& info) { return std::string(info.param.name); });

}  // namespace
}  // namespace halo::runtime::test

int main(int argc, char** argv) {
  return halo::runtime::test::run_mpi_tests(
      argc, argv, "conformance_mpi_test",
      [](halo::runtime::Comm& c) { halo::runtime::test::g_comm = &c; });
}
