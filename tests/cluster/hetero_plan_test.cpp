// The plan of heterogeneous classification: the model's inventory of its buffers
// (nn::HeteroFootprint) is the bytes the model allocates, to the byte; the plan's tensors are the
// bytes a training run holds at its peak (kernels::host_buffer_peak_bytes); the plan answers
// for a mini-batch run and grows with the model.
#include <cstdint>
#include <filesystem>
#include <gtest/gtest.h>
#include <string>
#include <vector>

#include <halo/cluster/hetero_plan.hpp>
#include <halo/datasets/hetero.hpp>
#include <halo/kernels/buffer_stats.hpp>
#include <halo/kernels/resources.hpp>
#include <halo/nn/hetero_footprint.hpp>
#include <halo/nn/hetero_model.hpp>
#include <halo/partition/formats/partition_format.hpp>
#include <halo/runtime/runtime.hpp>

#include "support/hetero_fixture.hpp"
#include "support/testing.hpp"

namespace halo::cluster {
namespace {

const kernels::Resources& host() {
  static const kernels::Resources r(kernels::Device::Cpu, 1);
  return r;
}

datasets::HeteroGraph fixture_graph(const std::filesystem::path& dir) {
  std::filesystem::create_directories(dir);
  halo::testing::write_hetero_fixture(dir);
  return datasets::read_hetero_directory(host(), dir, 4);
}

struct ModelCase {
  nn::HeteroLayerKind kind;
  int bases;
  nn::FeaturelessInput featureless;
  int layers;
};

std::string name(const ModelCase& c) {
  return nn::to_string(c.kind) + " bases " + std::to_string(c.bases) + " " +
         nn::to_string(c.featureless) + " layers " + std::to_string(c.layers);
}

const ModelCase kCases[] = {
    {nn::HeteroLayerKind::Rgcn, 0, nn::FeaturelessInput::Embedding, 2},
    {nn::HeteroLayerKind::Rgcn, 2, nn::FeaturelessInput::Zero, 3},
    {nn::HeteroLayerKind::Hgt, 0, nn::FeaturelessInput::Embedding, 2},
    {nn::HeteroLayerKind::Hgt, 0, nn::FeaturelessInput::Zero, 1},
    {nn::HeteroLayerKind::Rgcn, 0, nn::FeaturelessInput::Zero, 2},
    {nn::HeteroLayerKind::Hgt, 0, nn::FeaturelessInput::Zero, 2},
    {nn::HeteroLayerKind::Rgcn, 0, nn::FeaturelessInput::Auto, 2},
};

TEST(HeteroFootprint, IsWhatTheModelAllocatesForAFullGraphPass) {
  halo::testing::TempDir tmp;
  const datasets::HeteroGraph g = fixture_graph(tmp.path());
  const nn::HeteroSchema schema = runtime::hetero_schema(g);
  nn::HeteroGraphView<float> view;
  std::vector<std::int64_t> entries;
  for (const datasets::NodeType& t : g.node_types) {
    view.num_src.push_back(t.num_nodes);
    view.num_dst.push_back(t.num_nodes);
  }
  for (const datasets::Relation& r : g.relations) {
    view.relations.push_back({r.name, r.src_type, r.dst_type, r.adj.view()});
    entries.push_back(r.adj.num_edges());
  }
  std::vector<const nn::Features<float>*> inputs;
  for (const datasets::NodeType& t : g.node_types) inputs.push_back(&t.features);
  // The kernels' scratch space (kernels::Resources::scratch) is the process's, grown once to the
  // largest request: a pass of every case before any is measured.
  for (const bool measure : {false, true}) {
    for (const ModelCase& c : kCases) {
      nn::HeteroModelConfig mc;
      mc.kind = c.kind;
      mc.num_bases = c.bases;
      mc.featureless = c.featureless;
      mc.num_layers = c.layers;
      mc.hidden = 8;
      mc.heads = 2;
      mc.dropout = 0.5f;
      const std::size_t before = kernels::host_buffer_bytes();
      nn::HeteroModel<float> model(host(), mc, schema, 7);
      nn::HeteroFootprint fp(mc, schema);
      std::int64_t params = 0, tables = 0;
      for (nn::Parameter<float>* p : model.parameters()) params += p->value.numel();
      for (nn::SparseEmbedding<float>* e : model.embeddings()) tables += e->table().numel();
      EXPECT_EQ(fp.parameter_floats(), params) << name(c);
      EXPECT_EQ(fp.embedding_floats(), tables) << name(c);
      // What the constructor holds: values and gradients, the tables, R-GCN's composed weights.
      const std::size_t built = kernels::host_buffer_bytes();
      const nn::Context ctx{&host(), /*training=*/true, 1, 3};
      const kernels::Tensor<float>& logits = model.forward(ctx, view, inputs);
      const kernels::Tensor<float> dlogits =
          kernels::Tensor<float>::zeros(host(), logits.rows(), logits.cols());
      model.backward(ctx, view, dlogits);
      const std::size_t after = kernels::host_buffer_bytes() - dlogits.bytes();
      if (!measure) continue;
      fp.pass(nn::full_graph_shapes(mc, view.num_src, view.num_dst, entries), true, false,
              nn::EmbeddingReads::Whole);
      std::int64_t composed = 0;  // R-GCN's composed weights, which the constructor allocates
      for (const auto& [k, v] : fp.buffers())
        if (k.find(".bases") != std::string::npos) composed += v;
      EXPECT_EQ(static_cast<std::int64_t>(built - before), 8 * params + 4 * tables + composed)
          << name(c);
      EXPECT_EQ(static_cast<std::int64_t>(after - before),
                8 * params + 4 * tables + fp.buffer_bytes())
          << name(c);
    }
  }
}

TEST(HeteroPlan, HoldsTheTensorsOfATrainingRun) {
  halo::testing::TempDir tmp;
  halo::testing::write_hetero_fixture(tmp.path());
  for (const bool mini : {false, true}) {
    for (const ModelCase& c : kCases) {
      runtime::TrainConfig config;
      config.epochs = 2;
      config.hetero.kind = c.kind;
      config.hetero.num_bases = c.bases;
      config.hetero.featureless = c.featureless;
      config.hetero.num_layers = c.layers;
      config.hetero.hidden = 8;
      config.hetero.heads = 2;
      config.model.num_layers = c.layers;
      config.model.hidden = 8;
      if (mini) {
        config.mini_batch = runtime::MiniBatchConfig{};
        config.mini_batch->batch_size = 16;
        config.mini_batch->fanouts.assign(static_cast<std::size_t>(c.layers), 3);
      }
      const std::size_t before = kernels::host_buffer_bytes();
      kernels::reset_host_buffer_peak();
      runtime::HeteroTrainRun run = [&] {
        runtime::HeteroShard shard =
            runtime::local_hetero_shard(datasets::read_hetero_directory(host(), tmp.path(), 4));
        return runtime::train(host(), shard, config);
      }();
      const double measured = static_cast<double>(kernels::host_buffer_peak_bytes() - before);
      const datasets::HeteroGraph g = datasets::read_hetero_directory(host(), tmp.path(), 4);
      const Plan plan = make_hetero_plan(hetero_counts(g, config), config, CostModel{}, "cpu", 1);
      double tensors = 0;
      for (const MemoryItem& i : plan.per_rank.at(0).host)
        if (i.name != "process") tensors += static_cast<double>(i.bytes);
      EXPECT_NEAR(tensors / measured, 1.0, 0.15) << name(c) << (mini ? " mini-batch" : "");
      EXPECT_EQ(plan.batches_per_epoch, run.result.batches_per_epoch) << name(c);
    }
  }
}

// A 2-part partition of the fixture (METIS): one plan per rank from its part's exact counts;
// the parts' owned rows are the graph's, each rank's layers hold less than one process's, the
// ranks exchange halo rows and gradients; then mini-batches over the parts.
TEST(HeteroPlan, PlansEveryRankOfAPartition) {
  halo::testing::TempDir tmp;
  const datasets::HeteroGraph g = fixture_graph(tmp.path() / "data");
  partition::PartitionConfig pc;
  pc.num_parts = 2;
  partition::write_hetero_partitions(host(), g, partition::partition_hetero(host(), g, pc),
                                     tmp.path() / "parts");
  runtime::TrainConfig config;
  config.hetero.hidden = 8;
  const HeteroCounts counts = hetero_partition_counts(tmp.path() / "parts", config);
  ASSERT_EQ(counts.parts.size(), 2u);
  const Plan one = make_hetero_plan(hetero_counts(g, config), config, CostModel{}, "cpu", 1);
  const Plan two = make_hetero_plan(counts, config, CostModel{}, "cpu", 1);
  ASSERT_EQ(two.ranks, 2);
  ASSERT_EQ(two.per_rank.size(), 2u);
  for (std::size_t t = 0; t < g.node_types.size(); ++t) {
    EXPECT_EQ(counts.parts[0].num_owned[t] + counts.parts[1].num_owned[t],
              g.node_types[t].num_nodes);
    EXPECT_EQ(counts.schema.num_nodes[t], g.node_types[t].num_nodes);
  }
  EXPECT_EQ(counts.parts[0].num_train + counts.parts[1].num_train, g.train_idx.numel());
  EXPECT_EQ(two.parameters, one.parameters);
  const auto item = [](const RankPlan& r, const std::string& name) {
    for (const MemoryItem& i : r.host)
      if (i.name == name) return i.bytes;
    return std::int64_t{-1};
  };
  for (const RankPlan& r : two.per_rank) {
    EXPECT_LT(item(r, "activations"), item(one.per_rank[0], "activations")) << r.rank;
    EXPECT_GT(item(r, "halo"), 0) << r.rank;
    EXPECT_GT(r.halo_exchange_bytes, 0) << r.rank;
    EXPECT_GT(r.allreduce_bytes, 0) << r.rank;
  }
  // Mini-batches over the parts: the sampler's envelope and mean draws are the whole graph's
  // (summed over the parts' owned rows, equal to one process's counts); each rank trains on its
  // share of every batch's seeds, so its step's buffers are below one process's, and it fetches
  // what other ranks own.
  config.mini_batch = runtime::MiniBatchConfig{};
  config.mini_batch->batch_size = 6;
  config.mini_batch->fanouts = {3, 2};
  const HeteroCounts whole = hetero_counts(g, config);
  const HeteroCounts split = hetero_partition_counts(tmp.path() / "parts", config);
  ASSERT_EQ(split.envelope.size(), whole.envelope.size());
  for (std::size_t l = 0; l < whole.envelope.size(); ++l) {
    EXPECT_EQ(split.envelope[l].num_dst, whole.envelope[l].num_dst) << "layer " << l;
    EXPECT_EQ(split.envelope[l].num_src, whole.envelope[l].num_src) << "layer " << l;
    EXPECT_EQ(split.envelope[l].num_edges, whole.envelope[l].num_edges) << "layer " << l;
    for (std::size_t r = 0; r < whole.mean_draws[l].size(); ++r)
      EXPECT_NEAR(split.mean_draws[l][r], whole.mean_draws[l][r], 1e-12) << l << " " << r;
  }
  const Plan mini_one = make_hetero_plan(whole, config, CostModel{}, "cpu", 1);
  const Plan mini_two = make_hetero_plan(split, config, CostModel{}, "cpu", 1);
  ASSERT_EQ(mini_two.per_rank.size(), 2u);
  EXPECT_EQ(mini_two.batches_per_epoch, mini_one.batches_per_epoch);
  EXPECT_EQ(mini_two.sampler_envelope_bytes, mini_one.sampler_envelope_bytes);
  for (const RankPlan& r : mini_two.per_rank) {
    EXPECT_GT(item(r, "typed_batches"), 0) << r.rank;
    EXPECT_GT(r.feature_fetch_bytes, 0) << r.rank;
    EXPECT_GT(r.allreduce_bytes, 0) << r.rank;
  }
  // One process is the one part: its stores and its owner's draws, nothing fetched or summed.
  EXPECT_GT(item(mini_one.per_rank[0], "typed_batches"), 0);
  EXPECT_EQ(mini_one.per_rank[0].feature_fetch_bytes, 0);
  EXPECT_EQ(mini_one.per_rank[0].allreduce_bytes, 0);
}

TEST(HeteroPlan, GrowsWithTheModelAndRefusesADevice) {
  halo::testing::TempDir tmp;
  const datasets::HeteroGraph g = fixture_graph(tmp.path());
  runtime::TrainConfig config;
  config.hetero.hidden = 8;
  const Plan small = make_hetero_plan(hetero_counts(g, config), config, CostModel{}, "cpu", 1);
  config.hetero.hidden = 64;
  const Plan large = make_hetero_plan(hetero_counts(g, config), config, CostModel{}, "cpu", 1);
  EXPECT_GT(large.peak_host_bytes_per_rank, small.peak_host_bytes_per_rank);
  EXPECT_GT(large.epoch_seconds, small.epoch_seconds);
  EXPECT_GT(large.parameters, small.parameters);
  EXPECT_EQ(small.mode, "full-graph");
  EXPECT_EQ(small.model, "rgcn");
  EXPECT_THROW(make_hetero_plan(hetero_counts(g, config), config, CostModel{}, "cuda", 1),
               LogicError);
}

}  // namespace
}  // namespace halo::cluster
