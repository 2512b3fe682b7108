// Checkpoints in one process: the shard and manifest format (round trip, damage, a missing
// manifest, another version, another identity, the newest two kept) and the Trainer's exact
// resume, full graph and mini-batch, stopped at an epoch boundary or between two steps.

#include <algorithm>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <gtest/gtest.h>
#include <limits>
#include <nlohmann/json.hpp>

#include <halo/kernels/atomic_file.hpp>
#include <halo/runtime/engine/checkpoint.hpp>

#include "runtime/runtime_test_util.hpp"
#include "support/testing.hpp"

namespace halo::runtime {
namespace {

namespace fs = std::filesystem;
using test::host;

std::uint64_t bits(double v) {
  std::uint64_t b = 0;
  std::memcpy(&b, &v, sizeof b);
  return b;
}

/// A state with every kind of value: a partial epoch, NaN accuracies, several arrays.
TrainState sample_state(int epoch, std::int64_t step) {
  TrainState st;
  st.epoch = epoch;
  st.step = step;
  st.loss_sum = 12.345678901234567;
  st.loss_rows = 77;
  st.allreduce_s = 0.25;
  st.counters = {{"adam.steps", 31}, {"sparse_adam.steps/author", 7}};
  st.result.best_epoch = epoch > 0 ? 1 : 0;
  st.result.metrics = {
      {"val_loss", 0.1 + 0.2},      {"val_accuracy", std::numeric_limits<double>::quiet_NaN()},
      {"test_accuracy", 0.75},      {"val_macro_f1", 0.625},
      {"test_macro_f1", 2.0 / 7.0}, {"test_micro_f1", 0.5}};
  st.result.final_train_loss = 1.0 / 3.0;
  for (int e = 1; e <= epoch; ++e) {
    EpochStats s;
    s.epoch = e;
    s.epochs = 9;
    s.train_loss = 2.0 / e;
    s.metrics.set("val_loss", std::numeric_limits<double>::quiet_NaN());
    s.exchange_bytes = (std::int64_t{1} << 40) + e;
    s.host_syncs = e;
    s.batch_wait_s = 1e-300;
    s.metrics.set("val_macro_f1", 1.0 / (e + 2));
    s.metrics.set("test_macro_f1", std::numeric_limits<double>::quiet_NaN());
    s.stage_times.set("semantic_aggregation_s", 0.5 * e);
    s.sampled_edges = {e, 3 * e};
    st.result.history.push_back(s);
  }
  st.arrays.push_back({"param/w", 2, 3, {1, -2, 3.5f, 1e-30f, -0.f, 6}});
  st.arrays.push_back({"adam.m/w", 0, 3, {}});
  st.arrays.push_back({"best/b", 1, 1, {std::numeric_limits<float>::infinity()}});
  return st;
}

const CheckpointIdentity kIdentity = {{"data", "dataset t fnv1a64 0x1"}, {"model.hidden", "16"}};

class CheckpointFormat : public ::testing::Test {
 protected:
  CheckpointConfig config() const {
    CheckpointConfig c;
    c.dir = m_temp.path() / "ckpt";
    return c;
  }
  fs::path write(int epoch, std::int64_t step = 0) {
    return write_checkpoint(m_comm, config(), kIdentity, sample_state(epoch, step));
  }
  std::optional<FoundCheckpoint> read(const CheckpointIdentity& id = kIdentity) {
    return read_newest_checkpoint(m_comm, config().dir, id);
  }
  SelfComm m_comm;
  halo::testing::TempDir m_temp;
};

TEST_F(CheckpointFormat, RoundTripKeepsEveryValue) {
  const fs::path dir = write(3, 5);
  EXPECT_EQ(dir.filename(), "epoch-000003-step-000005");
  EXPECT_TRUE(fs::exists(dir / "manifest.json"));
  EXPECT_TRUE(fs::exists(dir / "rank-0.bin"));
  const auto found = read();
  ASSERT_TRUE(found.has_value());
  EXPECT_EQ(found->dir, dir);
  const TrainState a = sample_state(3, 5), &b = found->state;
  EXPECT_EQ(b.epoch, a.epoch);
  EXPECT_EQ(b.step, a.step);
  EXPECT_EQ(bits(b.loss_sum), bits(a.loss_sum));
  EXPECT_EQ(b.loss_rows, a.loss_rows);
  EXPECT_EQ(bits(b.allreduce_s), bits(a.allreduce_s));
  EXPECT_EQ(b.counters, a.counters);
  EXPECT_EQ(bits(b.result.metrics.at("val_loss")), bits(a.result.metrics.at("val_loss")));
  EXPECT_EQ(b.result.metrics.entries().size(), a.result.metrics.entries().size());
  EXPECT_EQ(b.result.best_epoch, a.result.best_epoch);
  EXPECT_TRUE(std::isnan(b.result.metrics.at("val_accuracy")));
  EXPECT_EQ(bits(b.result.final_train_loss), bits(a.result.final_train_loss));
  EXPECT_EQ(bits(b.result.metrics.at("val_macro_f1")), bits(a.result.metrics.at("val_macro_f1")));
  EXPECT_EQ(bits(b.result.metrics.at("test_macro_f1")), bits(a.result.metrics.at("test_macro_f1")));
  EXPECT_EQ(bits(b.result.metrics.at("test_micro_f1")), bits(a.result.metrics.at("test_micro_f1")));
  ASSERT_EQ(b.result.history.size(), 3u);
  for (std::size_t e = 0; e < 3; ++e) {
    const EpochStats &x = a.result.history[e], &y = b.result.history[e];
    EXPECT_EQ(y.epoch, x.epoch);
    EXPECT_EQ(y.epochs, x.epochs);
    EXPECT_EQ(bits(y.train_loss), bits(x.train_loss));
    EXPECT_TRUE(std::isnan(y.metrics.at("val_loss")));
    EXPECT_EQ(y.exchange_bytes, x.exchange_bytes);
    EXPECT_EQ(y.host_syncs, x.host_syncs);
    EXPECT_EQ(bits(y.metrics.at("val_macro_f1")), bits(x.metrics.at("val_macro_f1")));
    EXPECT_TRUE(std::isnan(y.metrics.at("test_macro_f1")));
    EXPECT_EQ(bits(y.stage_times.at("semantic_aggregation_s")),
              bits(x.stage_times.at("semantic_aggregation_s")));
    EXPECT_EQ(y.sampled_edges, x.sampled_edges);
    EXPECT_EQ(bits(y.batch_wait_s), bits(x.batch_wait_s));
  }
  ASSERT_EQ(b.arrays.size(), a.arrays.size());
  for (std::size_t i = 0; i < a.arrays.size(); ++i) {
    EXPECT_EQ(b.arrays[i].name, a.arrays[i].name);
    EXPECT_EQ(b.arrays[i].rows, a.arrays[i].rows);
    EXPECT_EQ(b.arrays[i].cols, a.arrays[i].cols);
    ASSERT_EQ(b.arrays[i].values.size(), a.arrays[i].values.size());
    EXPECT_EQ(b.arrays[i].values.empty() ||
                  std::memcmp(b.arrays[i].values.data(), a.arrays[i].values.data(),
                              a.arrays[i].values.size() * sizeof(float)) == 0,
              true);
  }
  const auto m = nlohmann::json::parse(kernels::read_file_bytes(dir / "manifest.json"));
  EXPECT_EQ(m["version"], kCheckpointVersion);
  EXPECT_EQ(m["world_size"], 1);
  EXPECT_EQ(m["identity"]["model.hidden"], "16");
  EXPECT_EQ(m["shards"][0]["bytes"], fs::file_size(dir / "rank-0.bin"));
}

TEST_F(CheckpointFormat, NoDirectoryOrNoCheckpointIsNone) {
  EXPECT_FALSE(read().has_value());  // the directory does not exist
  fs::create_directories(config().dir / "epoch-000001-step-000000");
  fs::create_directories(config().dir / "not-a-checkpoint");
  EXPECT_FALSE(read().has_value());
}

TEST_F(CheckpointFormat, DamagedShardIsSkippedForTheOlderOne) {
  write(1);
  const fs::path newer = write(2);
  {  // one flipped byte in the middle of the newer shard
    std::fstream f(newer / "rank-0.bin", std::ios::in | std::ios::out | std::ios::binary);
    f.seekp(static_cast<std::streamoff>(fs::file_size(newer / "rank-0.bin") / 2));
    f.put('\x5a');
  }
  const halo::testing::ExpectLogs warned("checksum mismatch");
  auto found = read();
  ASSERT_TRUE(found.has_value());
  EXPECT_EQ(found->state.epoch, 1);
  // A truncated shard too.
  fs::resize_file(newer / "rank-0.bin", 40);
  found = read();
  ASSERT_TRUE(found.has_value());
  EXPECT_EQ(found->state.epoch, 1);
  // With the older one damaged as well, there is none.
  fs::resize_file(config().dir / "epoch-000001-step-000000" / "rank-0.bin", 0);
  EXPECT_FALSE(read().has_value());
}

// A damaged checkpoint that a resume skipped is removed by the next commit (it has a manifest,
// so it used to count among the newest two kept and stayed), and the commit keeps itself.
TEST_F(CheckpointFormat, DamagedCheckpointSkippedByAResumeIsRemovedByTheNextCommit) {
  write(1);
  const fs::path older = write(2);
  const fs::path newer = write(3);
  fs::resize_file(newer / "rank-0.bin", 40);
  {
    const halo::testing::ExpectLogs warned("removed at the next commit");
    const auto found = read();
    ASSERT_TRUE(found.has_value());
    EXPECT_EQ(found->state.epoch, 2);
  }
  // The resumed run commits epoch 2 again, then epoch 3 again (the damaged one's name).
  const fs::path again = write(2, 1);
  EXPECT_FALSE(fs::exists(newer)) << "the damaged checkpoint stayed";
  EXPECT_TRUE(fs::exists(again / "manifest.json"));
  EXPECT_TRUE(fs::exists(older / "manifest.json"));
  const fs::path third = write(3);
  EXPECT_TRUE(fs::exists(third / "manifest.json"));
  const auto found = read();
  ASSERT_TRUE(found.has_value());
  EXPECT_EQ(found->state.epoch, 3);
}

TEST_F(CheckpointFormat, WithoutManifestIsIgnoredAndRemovedByTheNextCommit) {
  write(1);
  const fs::path newer = write(2);
  fs::remove(newer / "manifest.json");  // as if rank 0 died before the commit
  auto found = read();
  ASSERT_TRUE(found.has_value());
  EXPECT_EQ(found->state.epoch, 1);
  write(3);
  EXPECT_FALSE(fs::exists(newer));
  found = read();
  ASSERT_TRUE(found.has_value());
  EXPECT_EQ(found->state.epoch, 3);
}

TEST_F(CheckpointFormat, AnotherVersionIsRefused) {
  const fs::path dir = write(1);
  auto m = nlohmann::json::parse(kernels::read_file_bytes(dir / "manifest.json"));
  m["version"] = kCheckpointVersion + 1;
  kernels::write_file_atomically(dir / "manifest.json", m.dump());
  try {
    read();
    FAIL() << "another version was resumed";
  } catch (const IoError& e) {
    EXPECT_NE(std::string(e.what()).find("version " + std::to_string(kCheckpointVersion + 1)),
              std::string::npos)
        << e.what();
  }
}

TEST_F(CheckpointFormat, ShardOfAnotherVersionIsDamaged) {
  write(1);
  const fs::path dir = write(2);
  std::string bytes = kernels::read_file_bytes(dir / "rank-0.bin");
  bytes[8] = static_cast<char>(kCheckpointVersion + 1);  // the version field, checksum kept
  const std::uint64_t sum = partition::fnv1a64(bytes.data(), bytes.size() - 8);
  std::memcpy(bytes.data() + bytes.size() - 8, &sum, 8);
  kernels::write_file_atomically(dir / "rank-0.bin", bytes);
  const halo::testing::ExpectLogs warned(
      "checkpoint format version " + std::to_string(kCheckpointVersion + 1) +
      ", this Halo reads version " + std::to_string(kCheckpointVersion));
  const auto found = read();
  ASSERT_TRUE(found.has_value());
  EXPECT_EQ(found->state.epoch, 1);
}

TEST_F(CheckpointFormat, AnotherIdentityIsRefusedNamingTheField) {
  write(1);
  CheckpointIdentity other = kIdentity;
  other[1].second = "32";
  try {
    read(other);
    FAIL() << "a checkpoint of another model was resumed";
  } catch (const IoError& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("model.hidden is 16, this run's is 32"), std::string::npos) << what;
  }
  other = kIdentity;
  other.emplace_back("batch_size", "64");  // a field the checkpoint does not have
  EXPECT_THROW(read(other), IoError);
  other = {kIdentity[0]};  // the checkpoint has a field this run lacks
  EXPECT_THROW(read(other), IoError);
}

TEST_F(CheckpointFormat, KeepsTheNewestTwo) {
  for (int e = 1; e <= 4; ++e) write(e);
  write(4, 2);
  std::vector<std::string> left;
  for (const auto& entry : fs::directory_iterator(config().dir))
    left.push_back(entry.path().filename().string());
  std::sort(left.begin(), left.end());
  EXPECT_EQ(left,
            (std::vector<std::string>{"epoch-000004-step-000000", "epoch-000004-step-000002"}));
  EXPECT_EQ(read()->state.step, 2);
}

// ---- the Trainer's exact resume --------------------------------------------------------------

struct Outcome {
  TrainResult result;
  std::vector<std::vector<float>> params;
};

/// Trains `data` in one process; `stop_at` > 0 requests preemption after that many steps.
Outcome train_once(const datasets::Dataset& data, const TrainConfig& config,
                   std::int64_t stop_at = 0) {
  Shard shard = local_shard(host(), halo::testing::copy_dataset(host(), data));
  TrainRun run{make_model(host(), shard.num_features, shard.part.num_classes, config), {}};
  Trainer trainer(host(), node_classification(host(), shard, config, run.model), config.epochs,
                  config.checkpoint);
  std::int64_t steps = 0;
  clear_preemption();
  run.result = trainer.run({}, [&](std::int64_t) {
    if (++steps == stop_at) request_preemption();
  });
  clear_preemption();
  Outcome o{run.result, {}};
  for (auto* p : run.model.parameters()) o.params.push_back(p->value.to_vector(host()));
  return o;
}

void expect_same_run(const Outcome& a, const Outcome& b) {
  EXPECT_EQ(b.result.best_epoch, a.result.best_epoch);
  EXPECT_EQ(bits(b.result.final_train_loss), bits(a.result.final_train_loss));
  EXPECT_EQ(bits(b.result.metrics.at("test_accuracy")), bits(a.result.metrics.at("test_accuracy")));
  ASSERT_EQ(b.result.history.size(), a.result.history.size());
  for (std::size_t e = 0; e < a.result.history.size(); ++e) {
    const EpochStats &x = a.result.history[e], &y = b.result.history[e];
    EXPECT_EQ(y.epoch, x.epoch);
    EXPECT_EQ(y.epochs, x.epochs);
    EXPECT_EQ(bits(y.train_loss), bits(x.train_loss)) << "epoch " << e + 1;
    EXPECT_EQ(bits(y.metrics.at("val_loss")), bits(x.metrics.at("val_loss"))) << "epoch " << e + 1;
    EXPECT_EQ(bits(y.metrics.at("test_accuracy")), bits(x.metrics.at("test_accuracy")))
        << "epoch " << e + 1;
  }
  ASSERT_EQ(b.params.size(), a.params.size());
  for (std::size_t i = 0; i < a.params.size(); ++i) {
    ASSERT_EQ(b.params[i].size(), a.params[i].size());
    EXPECT_EQ(std::memcmp(b.params[i].data(), a.params[i].data(), a.params[i].size() * 4), 0)
        << "parameter " << i;
  }
}

struct ResumeCase {
  const char* name;
  bool mini_batch;
  int prefetch;
  /// Steps before the preemption (0: none, the first run just ends; -k: after the last step of
  /// epoch k).
  std::int64_t stop_at;
};

class Resume : public ::testing::TestWithParam<ResumeCase> {};

// The exact resume: a run interrupted (its epochs ran out, or a signal between two steps
// or after an epoch's last) and resumed from its checkpoint ends with the losses, the kept epoch
// and the parameters of an uninterrupted run, bit for bit.
TEST_P(Resume, EqualsAnUninterruptedRun) {
  const ResumeCase c = GetParam();
  const datasets::Dataset data = test::small_synthetic(11, 300);
  TrainConfig config = test::config_for(nn::ModelKind::Gcn, 5, 6);
  // Four batches an epoch.
  if (c.mini_batch)
    config.mini_batch = test::batches((data.train_idx.numel() + 3) / 4, {4, 3}, c.prefetch);
  const Outcome whole = train_once(data, config);
  const std::int64_t per_epoch = whole.result.batches_per_epoch;
  ASSERT_EQ(per_epoch, c.mini_batch ? 4 : 1);
  const std::int64_t stop_at = c.stop_at < 0 ? -c.stop_at * per_epoch : c.stop_at;
  if (c.mini_batch && c.stop_at > 0) {
    ASSERT_NE(stop_at % per_epoch, 0) << "not between steps";
  }

  halo::testing::TempDir temp;
  TrainConfig first = config;
  first.checkpoint.dir = temp.path() / "ckpt";
  if (stop_at == 0) first.epochs = 3;
  const Outcome cut = train_once(data, first, stop_at);
  EXPECT_EQ(cut.result.preempted, stop_at > 0);
  ASSERT_FALSE(cut.result.checkpoint.empty());
  if (stop_at > 0) {
    // Every step a reduction of the flag; a stop between steps checkpoints the next step.
    const std::int64_t epochs_done = stop_at / per_epoch, step = stop_at % per_epoch;
    EXPECT_EQ(static_cast<std::int64_t>(cut.result.history.size()), epochs_done);
    char name[64];
    std::snprintf(name, sizeof name, "epoch-%06lld-step-%06lld",
                  static_cast<long long>(epochs_done), static_cast<long long>(step));
    EXPECT_EQ(fs::path(cut.result.checkpoint).filename(), name);
    EXPECT_EQ(cut.result.preemption_checks, stop_at);
  }

  TrainConfig again = config;
  again.checkpoint.dir = first.checkpoint.dir;
  again.checkpoint.resume = true;
  const Outcome resumed = train_once(data, again);
  EXPECT_EQ(resumed.result.resumed_from, cut.result.checkpoint);
  EXPECT_FALSE(resumed.result.preempted);
  expect_same_run(whole, resumed);
  // The last epoch leaves a checkpoint: resuming it trains nothing and keeps the result.
  const Outcome done = train_once(data, again);
  EXPECT_EQ(done.result.resumed_from, resumed.result.checkpoint);
  expect_same_run(whole, done);
}

INSTANTIATE_TEST_SUITE_P(Checkpoint, Resume,
                         ::testing::Values(ResumeCase{"FullGraphEpochsRanOut", false, 0, 0},
                                           ResumeCase{"FullGraphSignal", false, 0, 2},
                                           ResumeCase{"MiniBatchEpochsRanOut", true, 1, 0},
                                           ResumeCase{"MiniBatchMidEpoch", true, 0, 5},
                                           ResumeCase{"MiniBatchMidEpochPrefetch", true, 2, 6},
                                           ResumeCase{"MiniBatchAfterLastStep", true, 1, -2}),
                         [](const auto& info) { return std::string(info.param.name); });

TEST(Checkpoint, ResumeRefusesAnotherModelAndAPastCheckpoint) {
  const datasets::Dataset data = test::small_synthetic(11, 300);
  halo::testing::TempDir temp;
  TrainConfig config = test::config_for(nn::ModelKind::Gcn, 5, 3);
  config.checkpoint.dir = temp.path();
  train_once(data, config);
  config.checkpoint.resume = true;
  TrainConfig wider = config;
  wider.model.hidden = 32;
  EXPECT_THROW(train_once(data, wider), IoError);
  TrainConfig shorter = config;
  shorter.epochs = 2;
  EXPECT_THROW(train_once(data, shorter), IoError);
  const datasets::Dataset other = test::small_synthetic(12, 300);
  EXPECT_THROW(train_once(other, config), IoError);
}

// A fresh run (no resume) into a directory holding another run's complete checkpoints would
// prune them or have its own pruned (keep 2 by name: a shorter run's newest-by-name are the
// other's), and a later resume would continue either: refused before the first epoch, naming
// the newest, and nothing removed. An incomplete directory does not count.
TEST(Checkpoint, AFreshRunRefusesADirectoryHoldingAnotherRunsCheckpoints) {
  const datasets::Dataset data = test::small_synthetic(11, 300);
  halo::testing::TempDir temp;
  TrainConfig config = test::config_for(nn::ModelKind::Gcn, 5, 3);
  config.checkpoint.dir = temp.path() / "ck";
  config.checkpoint.every = 1;
  train_once(data, config);
  const auto listing = [&] {
    std::vector<std::string> names;
    for (const auto& e : fs::directory_iterator(config.checkpoint.dir))
      names.push_back(e.path().filename().string());
    std::sort(names.begin(), names.end());
    return names;
  };
  const std::vector<std::string> before = listing();
  ASSERT_EQ(before,
            (std::vector<std::string>{"epoch-000002-step-000000", "epoch-000003-step-000000"}));
  EXPECT_EQ(fresh_start_problem(config.checkpoint.dir),
            config.checkpoint.dir.string() +
                ": holds 2 checkpoints of another run (newest epoch-000003-step-000000); continue "
                "it with --resume auto, or start this run in another --checkpoint-dir (or remove "
                "them)");
  TrainConfig fresh = config;
  fresh.epochs = 1;
  try {
    train_once(data, fresh);
    ADD_FAILURE() << "a fresh run started into another run's checkpoints";
  } catch (const IoError& e) {
    EXPECT_NE(std::string(e.what()).find("epoch-000003-step-000000"), std::string::npos)
        << e.what();
  }
  EXPECT_EQ(listing(), before);
  // Resuming is what the directory is for.
  fresh.checkpoint.resume = true;
  fresh.epochs = 4;
  EXPECT_EQ(train_once(data, fresh).result.resumed_from,
            (config.checkpoint.dir / "epoch-000003-step-000000").string());
  // No directory, an empty one, or one with an interrupted write only: nothing to refuse.
  EXPECT_EQ(fresh_start_problem(temp.path() / "none"), "");
  EXPECT_EQ(fresh_start_problem(""), "");
  fs::create_directories(temp.path() / "torn" / "epoch-000001-step-000000");
  EXPECT_EQ(fresh_start_problem(temp.path() / "torn"), "");
  TrainConfig torn = config;
  torn.checkpoint.dir = temp.path() / "torn";
  torn.epochs = 1;
  EXPECT_FALSE(train_once(data, torn).result.checkpoint.empty());
}

}  // namespace
}  // namespace halo::runtime
