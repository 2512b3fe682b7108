// The resource plan against the code it predicts: the model's parameters, the sampler's own
// envelope, the partition's exchange lists; the estimated split; the calibration file.
#include <algorithm>
#include <array>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <functional>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include <halo/cluster/plan.hpp>
#include <halo/kernels/error.hpp>
#include <halo/sampler/neighbor_sampler.hpp>

#include "runtime/runtime_test_util.hpp"
#include "support/testing.hpp"

namespace halo::cluster::test {
namespace {

// The runs a plan is checked against: the runtime's types and its tests' helpers.
using namespace halo::runtime;
using namespace halo::runtime::test;

using nlohmann::json;

/// The counts of `shard` as halo plan reads them from a cache.
PlanInput input_of(const Shard& shard) { return shard_plan_input(shard); }

GraphCounts big_graph() {
  GraphCounts g;
  g.dataset = "big";
  g.num_nodes = 1 << 20;
  g.training_edges = std::int64_t{16} << 20;
  g.max_degree = 5000;
  g.input_edges = g.training_edges;
  g.num_features = 128;
  g.num_classes = 40;
  g.num_train = 100000;
  g.num_val = 20000;
  g.num_test = 50000;
  return g;
}

/// big_graph() split into `parts` estimated parts, as a partition's counts.
PlanInput big_parts(int parts) {
  PlanInput in;
  in.graph = big_graph();
  in.parts = estimate_parts(in.graph, parts);
  in.from_partition = true;
  return in;
}

TEST(Plan, ParameterCountIsTheModels) {
  for (auto kind : {nn::ModelKind::Gcn, nn::ModelKind::Sage})
    for (int layers : {1, 2, 3}) {
      TrainConfig c = config_for(kind, 0, 1);
      c.model.num_layers = layers;
      c.model.hidden = 7;
      nn::Model<float> model = make_model(host(), 13, 5, c);
      std::int64_t reference = 0;
      for (const auto* p : model.parameters()) reference += p->value.numel();
      EXPECT_EQ(count_parameters(c, 13, 5), reference)
          << nn::to_string(kind) << " " << layers << " layers";
    }
}

// The plan's sampler envelope is what the run measures (the largest blocks of its first
// batches with the margin; the plan: the expected blocks with the margin), well below the
// sampler's bound, one per pipeline slot; a margin past the bound gives the bound.
TEST(Plan, SamplerEnvelopeIsWhatTheRunMeasures) {
  // Large enough that a batch's blocks stay below the graph's nodes, fan-outs above most
  // degrees (10 on average): the bound takes the largest degree for every destination.
  const datasets::Dataset data = small_synthetic(3, 20000);
  Shard shard = local_shard(host(), small_synthetic(3, 20000));
  for (int prefetch : {0, 2}) {
    SCOPED_TRACE(::testing::Message() << "prefetch " << prefetch);
    TrainConfig c = config_for(nn::ModelKind::Sage, 0, 1);
    c.mini_batch = batches(64, {25, 15}, prefetch);
    const Plan plan = make_plan(input_of(shard), c, CostModel{}, "cpu", 1);
    const TrainResult run = train_local(host(), data, c).result;
    const auto predicted = static_cast<double>(plan.sampler_envelope_bytes);
    EXPECT_NEAR(predicted / static_cast<double>(run.sampler_envelope_bytes), 1.0, 0.25);
    EXPECT_LT(plan.sampler_envelope_bytes, static_cast<std::int64_t>(run.sampler_bound_bytes));
    sampler::SamplerConfig sc;
    sc.fanouts = {25, 15};
    // Batches of at most the training nodes.
    const sampler::NeighborSampler s(host(), shard.part.graph,
                                     std::min<std::int64_t>(64, shard.part.all_train.numel()), sc);
    EXPECT_EQ(run.sampler_bound_bytes, s.envelope_bytes() * static_cast<std::size_t>(1 + prefetch));
    c.mini_batch->envelope_margin = 1e9;
    EXPECT_EQ(make_plan(input_of(shard), c, CostModel{}, "cpu", 1).sampler_envelope_bytes,
              static_cast<std::int64_t>(run.sampler_bound_bytes));
    // Batches of an epoch: the training nodes over the batch size, rounded up.
    const std::int64_t train = shard.part.all_train.numel();
    EXPECT_EQ(plan.batches_per_epoch, (train + 63) / 64);
  }
}

// A store larger than the budget is read from its file (one process, mini-batch): the plan
// holds only the row cache (a quarter of the budget, and a slot index per row) and not S's
// column ids, predicts the rows read per epoch and per evaluation, and no longer counts the
// mapped arrays while loading; a larger cache reads less.
TEST(Plan, AStoreLargerThanTheBudgetIsReadFromItsFile) {
  PlanInput in;
  in.graph = big_graph();
  in.graph.disk_bytes =
      in.graph.num_nodes * in.graph.num_features * 4 + in.graph.training_edges * 4;
  in.parts = estimate_parts(in.graph, 1);
  TrainConfig c = config_for(nn::ModelKind::Sage, 0, 1);
  c.mini_batch = batches(1024, {10, 5}, 0);
  const auto item = [](const RankPlan& r, const std::string& name) {
    for (const MemoryItem& i : r.host)
      if (i.name == name) return i.bytes;
    return std::int64_t{-1};
  };
  c.memory_budget = static_cast<std::size_t>(in.graph.disk_bytes) * 2;  // fits: in memory
  const RankPlan memory = make_plan(in, c, CostModel{}, "cpu", 1).per_rank.front();
  EXPECT_EQ(item(memory, "features"), in.graph.num_nodes * in.graph.num_features * 4);
  EXPECT_EQ(memory.disk_read_bytes_per_epoch, 0);
  EXPECT_EQ(memory.evaluation_read_bytes, 0);
  std::int64_t previous = -1;
  for (const std::size_t divisor : {8, 4}) {
    c.memory_budget = static_cast<std::size_t>(in.graph.disk_bytes) / divisor;
    const RankPlan file = make_plan(in, c, CostModel{}, "cpu", 1).per_rank.front();
    const std::int64_t row = in.graph.num_features * 4;
    EXPECT_EQ(item(file, "features"),
              static_cast<std::int64_t>(c.memory_budget / 4 / static_cast<std::size_t>(row)) * row +
                  4 * in.graph.num_nodes);  // the cache and its slot per row
    EXPECT_GT(file.disk_read_bytes_per_epoch, 0);
    EXPECT_GT(file.evaluation_read_bytes, 0);
    EXPECT_LT(file.peak_host_bytes, memory.peak_host_bytes);
    EXPECT_LT(file.dataset_bytes, memory.dataset_bytes);
    // S's column ids stay in the file (the sampler reads them with pread).
    EXPECT_EQ(item(memory, "part") - item(file, "part"), in.graph.training_edges * 4);
    if (previous >= 0) {
      EXPECT_LT(file.disk_read_bytes_per_epoch, previous);  // the larger cache
    }
    previous = file.disk_read_bytes_per_epoch;
  }
}

// A partition of a store: each rank whose part file and owned rows are larger than the budget
// reads its rows from the store's file (mini-batch, sampled evaluation): it holds a quarter of
// the budget of rows and reads the rest; a budget above the part holds its rows.
TEST(Plan, APartOfAStoreLargerThanTheBudgetIsReadFromTheStore) {
  PlanInput in;
  in.graph = big_graph();
  in.graph.store_features = true;
  in.parts = estimate_parts(in.graph, 2);
  in.from_partition = true;
  for (PartCounts& p : in.parts) p.file_bytes = p.num_edges * 4 + p.num_owned * 32;
  TrainConfig c = config_for(nn::ModelKind::Sage, 0, 1);
  c.mini_batch = batches(1024, {10, 5}, 0);
  c.mini_batch->eval_fanouts = {10, 5};
  const auto item = [](const RankPlan& r, const std::string& name) {
    for (const MemoryItem& i : r.host)
      if (i.name == name) return i.bytes;
    return std::int64_t{-1};
  };
  const std::int64_t row = in.graph.num_features * 4;
  const PartCounts& p0 = in.parts.front();
  const std::int64_t part = p0.file_bytes + p0.num_owned * row;
  c.memory_budget = static_cast<std::size_t>(part) * 2;
  const RankPlan memory = make_plan(in, c, CostModel{}, "cpu", 1).per_rank.front();
  EXPECT_EQ(item(memory, "features"), p0.num_owned * row);
  EXPECT_EQ(memory.disk_read_bytes_per_epoch, 0);
  c.memory_budget = static_cast<std::size_t>(part) / 4;
  const RankPlan file = make_plan(in, c, CostModel{}, "cpu", 1).per_rank.front();
  EXPECT_EQ(item(file, "features"),
            static_cast<std::int64_t>(c.memory_budget / 4 / static_cast<std::size_t>(row)) * row +
                4 * p0.num_owned);  // the cache and its slot per owned row
  EXPECT_GT(file.disk_read_bytes_per_epoch, 0);
  EXPECT_GT(file.evaluation_read_bytes, 0);
  EXPECT_LT(file.peak_host_bytes, memory.peak_host_bytes);
  // Parts that hold their rows (no store) are never read from a file.
  in.graph.store_features = false;
  EXPECT_EQ(make_plan(in, c, CostModel{}, "cpu", 1).per_rank.front().disk_read_bytes_per_epoch, 0);
}

// --eval-fanouts: no full-graph pass and no layer-wise representations or logits of every
// node (one process) and no halo buffers (2 ranks); a second sampler envelope; the rows read
// per evaluation are its batches' (training, validation and test nodes) that miss the cache.
TEST(Plan, ASampledEvaluationHoldsNoFullGraphBuffers) {
  PlanInput in;
  in.graph = big_graph();
  in.graph.disk_bytes =
      in.graph.num_nodes * in.graph.num_features * 4 + in.graph.training_edges * 4;
  const auto item = [](const RankPlan& r, const std::string& name) {
    for (const MemoryItem& i : r.host)
      if (i.name == name) return i.bytes;
    return std::int64_t{-1};
  };
  for (const int ranks : {1, 2}) {
    SCOPED_TRACE(::testing::Message() << ranks << " ranks");
    in.parts = estimate_parts(in.graph, ranks);
    TrainConfig c = config_for(nn::ModelKind::Sage, 0, 1);
    c.mini_batch = batches(1024, {10, 5}, 0);
    c.memory_budget = static_cast<std::size_t>(in.graph.disk_bytes) / 8;
    const Plan exact = make_plan(in, c, CostModel{}, "cpu", 1);
    c.mini_batch->eval_fanouts = {10, 5};
    const Plan sampled = make_plan(in, c, CostModel{}, "cpu", 1);
    const RankPlan &e = exact.per_rank.front(), &s = sampled.per_rank.front();
    EXPECT_LT(item(s, "activations"), item(e, "activations"));
    EXPECT_EQ(item(s, "adjacency"), 0);
    EXPECT_EQ(item(s, "halo"), 0);
    // Batches of as many seeds (1,020 and 1,018), the same fan-outs: twice the envelope.
    EXPECT_NEAR(static_cast<double>(sampled.sampler_envelope_bytes) /
                    static_cast<double>(exact.sampler_envelope_bytes),
                2.0, 0.02);
    EXPECT_LT(s.peak_host_bytes, e.peak_host_bytes);
    EXPECT_EQ(s.disk_read_bytes_per_epoch, e.disk_read_bytes_per_epoch);
    if (ranks == 1) {
      // 170,000 scored nodes against 100,000 training nodes: 1.7 epochs' rows.
      EXPECT_GT(s.evaluation_read_bytes, 3 * s.disk_read_bytes_per_epoch / 2);
      EXPECT_LT(s.evaluation_read_bytes, 2 * s.disk_read_bytes_per_epoch);
    }
  }
}

TEST(Plan, EstimatedPartsCoverTheGraph) {
  const GraphCounts g = big_graph();
  for (int p : {1, 2, 3, 8}) {
    const std::vector<PartCounts> parts = estimate_parts(g, p);
    ASSERT_EQ(static_cast<int>(parts.size()), p);
    std::int64_t owned = 0;
    double edges = 0;
    for (const PartCounts& c : parts) {
      owned += c.num_owned;
      edges += static_cast<double>(c.num_edges);
      if (p == 1) {
        EXPECT_EQ(c.num_halo, 0);
      }
      EXPECT_LE(c.num_halo, g.num_nodes - c.num_owned);
      // Every remote node is at most one halo row, and some are with d = 16 neighbours.
      if (p > 1) {
        EXPECT_GT(c.num_halo, 0);
      }
    }
    EXPECT_EQ(owned, g.num_nodes);
    EXPECT_NEAR(edges, static_cast<double>(g.training_edges), p);
  }
}

TEST(Plan, MoreRanksNeedLessMemoryEachButCommunicateMore) {
  const GraphCounts g = big_graph();
  const TrainConfig c = config_for(nn::ModelKind::Gcn, 0, 1);
  std::int64_t last_peak = 0, last_comm = -1;
  for (int p : {1, 2, 4, 8}) {
    PlanInput in;
    in.graph = g;
    in.parts = estimate_parts(g, p);
    in.from_partition = p > 1;
    const Plan plan = make_plan(in, c, CostModel{}, "cpu", 1);
    if (last_peak > 0) {
      EXPECT_LT(plan.peak_host_bytes_per_rank, last_peak) << p;
    }
    EXPECT_GT(plan.comm_bytes_per_epoch, last_comm) << p;
    last_peak = plan.peak_host_bytes_per_rank;
    last_comm = plan.comm_bytes_per_epoch;
    // The peak is the breakdown's sum (or the loading phase's, if larger).
    for (const RankPlan& r : plan.per_rank) {
      std::int64_t sum = 0;
      for (const MemoryItem& i : r.host) sum += i.bytes;
      EXPECT_GE(r.peak_host_bytes, sum);
    }
  }
}

TEST(Plan, OverlapHidesPartOfTheExchange) {
  PlanInput in = big_parts(4);
  TrainConfig c = config_for(nn::ModelKind::Gcn, 0, 1);
  CostModel slow_link;
  slow_link.link_s_per_byte = 1.0 / 1e8;
  const Plan on = make_plan(in, c, slow_link, "cpu", 1);
  c.overlap = false;
  const Plan off = make_plan(in, c, slow_link, "cpu", 1);
  for (std::size_t r = 0; r < on.per_rank.size(); ++r) {
    EXPECT_EQ(on.per_rank[r].exchange_s, off.per_rank[r].exchange_s);
    EXPECT_EQ(off.per_rank[r].exposed_exchange_s, off.per_rank[r].exchange_s);
    EXPECT_LT(on.per_rank[r].exposed_exchange_s, off.per_rank[r].exposed_exchange_s);
  }
  EXPECT_LT(on.epoch_seconds, off.epoch_seconds);
}

TEST(Plan, DevicePlansPutTheDataOnTheGpu) {
  PlanInput in;
  in.graph = big_graph();
  in.parts = estimate_parts(in.graph, 1);
  const TrainConfig c = config_for(nn::ModelKind::Gcn, 0, 1);
  const Plan cpu = make_plan(in, c, CostModel{}, "cpu", 1);
  const Plan gpu = make_plan(in, c, CostModel{}, "cuda", 1);
  EXPECT_EQ(cpu.peak_gpu_bytes_per_rank, 0);
  EXPECT_GT(gpu.peak_gpu_bytes_per_rank, 0);
  EXPECT_LT(gpu.per_rank[0].host.size(), cpu.per_rank[0].host.size());
  EXPECT_THROW(make_plan(in, c, CostModel{}, "tpu", 1), LogicError);
}

TEST(Plan, CalibrationFileRoundTripsAndCorruptOnesAreRefused) {
  const halo::testing::TempDir dir;
  CostModel m;
  m.gemm_s_per_flop = 1.25e-11;
  m.spmm_s_per_edge = 3.5e-9;
  m.link_alpha_s = 7e-6;
  m.transport_s_per_byte = 6.5e-10;
  m.process_base_bytes = 12345678;
  m.threads = 3;
  m.host = "h";
  m.link_calibrated = true;
  m.full_graph_steps = {{1 << 20, 1.25}, {1 << 24, 2.5}, {std::int64_t{1} << 33, 1.75}};
  m.mini_batch_steps = {{1 << 20, 0.5, 1.75}};
  m.gather_s_per_row = 2e-9;
  m.gather_s_per_byte = 3e-10;
  m.batch_alpha_s = 3e-4;
  m.epoch_alpha_s = 5e-3;
  m.collectives = {{2, 2e-5, 4e-5, 1.5e-7}, {4, 3e-5, 9e-5, 2.5e-7}};
  m.elementwise_cached_s_per_byte = 1.5e-11;
  m.spmm_footprint_bytes = 1 << 22;
  m.spmm_streaming_s_per_byte = 4.5e-11;
  m.spmm_streaming_s_per_edge = 7.5e-9;
  m.loss_s_per_cell = 1.25e-8;
  m.full_graph_skewed_steps = {{1 << 20, 2.25}, {1 << 26, 3.5}};
  m.full_graph_hub_share = 0.02;
  m.full_graph_skewed_hub_share = 0.375;
  for (const GemmPass pass : kGemmPasses)
    for (const std::int64_t in : {16, 256})
      for (const std::int64_t out : {8, 64, 512})
        m.gemm_shapes.push_back(
            {pass, in, out, 1e-11 * (1 + static_cast<int>(pass)) + 1e-14 * (in + out)});
  const auto path = dir.path() / "c.json";
  write_cost_model(m, path);
  const CostModel r = read_cost_model(path);
  EXPECT_EQ(r.gemm_s_per_flop, m.gemm_s_per_flop);
  EXPECT_EQ(r.spmm_s_per_edge, m.spmm_s_per_edge);
  EXPECT_EQ(r.link_alpha_s, m.link_alpha_s);
  EXPECT_EQ(r.transport_s_per_byte, m.transport_s_per_byte);
  EXPECT_EQ(r.process_base_bytes, m.process_base_bytes);
  EXPECT_EQ(r.threads, 3);
  ASSERT_EQ(r.full_graph_steps.size(), 3u);
  for (std::size_t i = 0; i < 3; ++i) {
    EXPECT_EQ(r.full_graph_steps[i].working_set_bytes, m.full_graph_steps[i].working_set_bytes);
    EXPECT_EQ(r.full_graph_steps[i].scale, m.full_graph_steps[i].scale);
  }
  ASSERT_EQ(r.mini_batch_steps.size(), 1u);
  EXPECT_EQ(r.mini_batch_steps[0].scale, 0.5);
  EXPECT_EQ(r.mini_batch_steps[0].producer, 1.75);
  EXPECT_EQ(r.gather_s_per_row, 2e-9);
  EXPECT_EQ(r.gather_s_per_byte, 3e-10);
  EXPECT_EQ(r.batch_alpha_s, 3e-4);
  EXPECT_EQ(r.epoch_alpha_s, 5e-3);
  ASSERT_EQ(r.collectives.size(), 2u);
  for (std::size_t i = 0; i < 2; ++i) {
    EXPECT_EQ(r.collectives[i].ranks, m.collectives[i].ranks);
    EXPECT_EQ(r.collectives[i].full_graph_message_s, m.collectives[i].full_graph_message_s);
    EXPECT_EQ(r.collectives[i].mini_batch_message_s, m.collectives[i].mini_batch_message_s);
    EXPECT_EQ(r.collectives[i].mini_batch_fetch_row_s, m.collectives[i].mini_batch_fetch_row_s);
  }
  EXPECT_EQ(r.elementwise_cached_s_per_byte, 1.5e-11);
  EXPECT_EQ(r.spmm_footprint_bytes, m.spmm_footprint_bytes);
  EXPECT_EQ(r.spmm_streaming_s_per_byte, m.spmm_streaming_s_per_byte);
  EXPECT_EQ(r.spmm_streaming_s_per_edge, m.spmm_streaming_s_per_edge);
  EXPECT_EQ(r.loss_s_per_cell, m.loss_s_per_cell);
  ASSERT_EQ(r.full_graph_skewed_steps.size(), 2u);
  EXPECT_EQ(r.full_graph_skewed_steps[1].scale, 3.5);
  EXPECT_EQ(r.full_graph_hub_share, 0.02);
  EXPECT_EQ(r.full_graph_skewed_hub_share, 0.375);
  ASSERT_EQ(r.gemm_shapes.size(), m.gemm_shapes.size());
  for (std::size_t i = 0; i < m.gemm_shapes.size(); ++i) {
    EXPECT_EQ(r.gemm_shapes[i].pass, m.gemm_shapes[i].pass);
    EXPECT_EQ(r.gemm_shapes[i].in, m.gemm_shapes[i].in);
    EXPECT_EQ(r.gemm_shapes[i].out, m.gemm_shapes[i].out);
    EXPECT_EQ(r.gemm_shapes[i].s_per_flop, m.gemm_shapes[i].s_per_flop);
  }
  EXPECT_TRUE(r.calibrated);
  EXPECT_TRUE(r.link_calibrated);
  std::ofstream(dir.path() / "bad.json") << "{\"format\": \"halo-calibration\", \"version\": 3}";
  try {
    read_cost_model(dir.path() / "bad.json");
    FAIL() << "accepted a file without coefficients";
  } catch (const IoError& e) {
    EXPECT_NE(std::string(e.what()).find("gemm.alpha_s"), std::string::npos) << e.what();
  }
  // A point out of order, a negative scale, and a file of an older format are refused, each
  // naming what it expected.
  auto refused = [&](const std::string& name, const std::function<void(json&)>& edit,
                     const std::string& expected) {
    json j = json::parse(halo::testing::read_file(path));
    edit(j);
    std::ofstream(dir.path() / name) << j.dump();
    try {
      read_cost_model(dir.path() / name);
      ADD_FAILURE() << name << " accepted";
    } catch (const IoError& e) {
      EXPECT_NE(std::string(e.what()).find(expected), std::string::npos) << e.what();
    }
  };
  refused(
      "order.json", [](json& j) { j["step"]["full_graph"][1]["working_set_bytes"] = 1; },
      "step.full_graph must be in growing working_set_bytes");
  refused(
      "negative.json", [](json& j) { j["step"]["mini_batch"][0]["scale"] = -1; },
      "at step.mini_batch[0]");
  refused(
      "producer.json", [](json& j) { j["step"]["mini_batch"][0]["producer_scale"] = "fast"; },
      "\"producer_scale\": number >= 0 at step.mini_batch[0]");
  refused(
      "missing.json", [](json& j) { j["step"].erase("full_graph"); },
      "expected an array at step.full_graph");
  refused(
      "old.json", [](json& j) { j["version"] = 1; }, "rerun halo calibrate");
  refused(
      "grid.json", [](json& j) { j["gemm"]["shapes"].erase(3); },
      "gemm.shapes: 0 forward entries for in 256, out 8 (one per pair of widths expected");
  refused(
      "twice.json", [](json& j) { j["gemm"]["shapes"][1] = j["gemm"]["shapes"][0]; },
      "gemm.shapes: 2 forward entries for in 16, out 8");
  refused(
      "pass.json", [](json& j) { j["gemm"]["shapes"][0]["pass"] = "backward"; },
      "gemm.shapes[0]: expected \"pass\": forward, weight_grad or input_grad");
  refused(
      "width.json", [](json& j) { j["gemm"]["shapes"][2]["out"] = 0; },
      "gemm.shapes[2]: expected an integer >= 1 at out");
  refused(
      "rate.json", [](json& j) { j["gemm"]["shapes"][2]["s_per_flop"] = -1; },
      "gemm.shapes[2]: expected a finite number > 0 at s_per_flop");
  refused(
      "ranks.json", [](json& j) { j["collective"][1]["ranks"] = 2; },
      "\"ranks\": integer >= 2, growing, at collective[1]");
  refused(
      "latency.json", [](json& j) { j["collective"][0].erase("mini_batch_message_s"); },
      "\"mini_batch_message_s\": number >= 0 at collective[0]");
  refused(
      "cached.json", [](json& j) { j["elementwise"]["cached_s_per_byte"] = -1; },
      "elementwise.cached_s_per_byte must be a finite number >= 0");
  // Files written before the gather, producer and in-cache terms: two element-wise passes per
  // gathered byte, the producer at its terms, the streaming rate everywhere.
  json old = json::parse(halo::testing::read_file(path));
  old.erase("gather");
  old["elementwise"].erase("cached_s_per_byte");
  old["step"]["mini_batch"][0].erase("producer_scale");
  std::ofstream(dir.path() / "older.json") << old.dump();
  const CostModel o = read_cost_model(dir.path() / "older.json");
  EXPECT_EQ(o.gather_s_per_row, 0);
  EXPECT_EQ(o.gather_s_per_byte, 2 * m.elementwise_s_per_byte);
  EXPECT_EQ(o.mini_batch_steps[0].producer, 1);
  EXPECT_EQ(o.elementwise_cached_s_per_byte, 0);
  EXPECT_EQ(elementwise_s_per_byte(o, 1024), o.elementwise_s_per_byte);
  std::ofstream(dir.path() / "junk.json") << "not json";
  EXPECT_THROW(read_cost_model(dir.path() / "junk.json"), IoError);
}

// The working-set rule: the first point's scale up to its working set, the last point's from
// its own, and between two neighbouring points linear in log(working set); one point only: its
// scale throughout; none: 1.
TEST(Plan, StepScaleFollowsTheWorkingSet) {
  CostModel m;
  EXPECT_EQ(step_scale(m, false, 1 << 20, 0), 1);  // no points: uncalibrated
  m.full_graph_steps = {{1 << 20, 1}, {1 << 24, 3}, {1 << 26, 2}};
  m.mini_batch_steps = {{1 << 20, 0.5}, {1 << 24, 0.25}};
  EXPECT_EQ(step_scale(m, false, 1000, 0), 1);
  EXPECT_EQ(step_scale(m, false, 1 << 20, 0), 1);
  EXPECT_EQ(step_scale(m, false, 1 << 24, 0), 3);
  EXPECT_EQ(step_scale(m, false, 1 << 30, 0), 2);
  EXPECT_NEAR(step_scale(m, false, 1 << 22, 0), 2, 1e-12);  // half way in log2: 20, 22, 24
  EXPECT_NEAR(step_scale(m, false, 1 << 21, 0), 1.5, 1e-12);
  EXPECT_NEAR(step_scale(m, false, 1 << 25, 0), 2.5, 1e-12);  // between the second and third
  EXPECT_NEAR(step_scale(m, true, 1 << 22, 0), 0.375, 1e-12);
  m.full_graph_steps.resize(1);
  EXPECT_EQ(step_scale(m, false, 1 << 30, 0), 1);  // one point: its scale throughout
  // The plan reports the working set (its data but the process) and the scale it used.
  PlanInput in;
  in.graph = big_graph();
  in.parts = estimate_parts(in.graph, 1);
  const TrainConfig c = config_for(nn::ModelKind::Gcn, 0, 1);
  m.full_graph_steps = {{1 << 20, 1}, {std::int64_t{1} << 40, 3}};
  const Plan plan = make_plan(in, c, m, "cpu", 1);
  const RankPlan& r = plan.per_rank.front();
  std::int64_t data = 0;
  for (const MemoryItem& i : r.host)
    if (i.name != "process") data += i.bytes;
  EXPECT_EQ(r.working_set_bytes, data);
  EXPECT_EQ(r.step_scale, step_scale(m, false, static_cast<double>(data), 0));
  // Ranks sharing one host (host_cores set) share its caches: the scale of their working sets
  // together; on separate hosts each rank's own.
  in.parts = estimate_parts(in.graph, 2);
  in.from_partition = true;
  for (const int cores : {0, 4}) {
    m.host_cores = cores;
    const Plan p2 = make_plan(in, c, m, "cpu", 1);
    const RankPlan& r2 = p2.per_rank.front();
    const double ws = static_cast<double>(r2.working_set_bytes) * (cores > 0 ? 2 : 1);
    EXPECT_EQ(r2.step_scale, step_scale(m, false, ws, 0)) << cores;
  }
  m.host_cores = 4;
  const double shared = make_plan(in, c, m, "cpu", 1).per_rank.front().step_scale;
  m.host_cores = 0;
  EXPECT_GT(shared, make_plan(in, c, m, "cpu", 1).per_rank.front().step_scale);
}

// A full-graph step's scale lies between the rule of graphs without hubs and the skewed graphs'
// by the graph's hub share (its 1 % of rows of highest degree), linearly, held at the two
// rules' own hub shares; without the skewed rule, or in mini-batch, the one rule.
TEST(Plan, SkewedGraphsTakeTheSkewedGraphsScale) {
  CostModel m;
  m.full_graph_steps = {{1 << 20, 1}, {1 << 24, 2}};
  m.mini_batch_steps = {{1 << 20, 0.5}};
  EXPECT_EQ(step_scale(m, false, 1 << 24, 0.9), 2);  // no skewed rule
  m.full_graph_skewed_steps = {{1 << 20, 2}, {1 << 24, 4}};
  m.full_graph_hub_share = 0.1;
  m.full_graph_skewed_hub_share = 0.5;
  EXPECT_EQ(step_scale(m, false, 1 << 24, 0.05), 2);
  EXPECT_EQ(step_scale(m, false, 1 << 24, 0.1), 2);
  EXPECT_NEAR(step_scale(m, false, 1 << 24, 0.2), 2.5, 1e-12);
  EXPECT_NEAR(step_scale(m, false, 1 << 22, 0.3), 2.25, 1e-12);  // 1.5 and 3, half way
  EXPECT_EQ(step_scale(m, false, 1 << 24, 0.5), 4);
  EXPECT_EQ(step_scale(m, false, 1 << 24, 1), 4);
  EXPECT_EQ(step_scale(m, true, 1 << 24, 1), 0.5);
  // The hub share of a graph: every row at the mean degree, 1 %; 2^12 hubs of 2^20 rows
  // holding 3/4 of the entries, 3/4 + the leaves' share of the rest.
  GraphCounts g = big_graph();
  EXPECT_DOUBLE_EQ(hub_share(g), 0.01);
  const std::int64_t n = g.num_nodes, e = g.training_edges, hubs = 1 << 12;
  g.degree_histogram.assign(13, {0, 0});
  g.degree_histogram[12] = {hubs, e * 3 / 4};         // degree 3072: bucket 12
  g.degree_histogram[3] = {n - hubs, e - e * 3 / 4};  // degree 4.03: bucket 3
  const double leaves = 0.01 * static_cast<double>(n) - static_cast<double>(hubs);
  EXPECT_NEAR(hub_share(g),
              0.75 + leaves * static_cast<double>(e - e * 3 / 4) / static_cast<double>(n - hubs) /
                         static_cast<double>(e),
              1e-12);
  // A plan reads the graph's own.
  PlanInput in;
  in.graph = g;
  in.parts = estimate_parts(in.graph, 1);
  const RankPlan r = make_plan(in, config_for(nn::ModelKind::Gcn, 0, 1), m, "cpu", 1).per_rank[0];
  EXPECT_EQ(r.step_scale,
            step_scale(m, false, static_cast<double>(r.working_set_bytes), hub_share(g)));
  EXPECT_GT(r.step_scale, 3.5);
}

/// GCN on the full graph, or SAGE mini-batch (batches of 256, fan-outs 5,5).
TrainConfig mode_config(bool mini) {
  TrainConfig c = config_for(mini ? nn::ModelKind::Sage : nn::ModelKind::Gcn, 0, 1);
  if (mini) {
    MiniBatchConfig mb;
    mb.batch_size = 256;
    mb.fanouts = {5, 5};
    c.mini_batch = mb;
  }
  return c;
}

// The step scale multiplies the graph's terms, not the dense products and Adam: doubling the
// scale adds (compute - dense) once, full graph and mini-batch; wider layers make more of the
// step dense.
TEST(Plan, DenseProductsAreOutsideTheStepScale) {
  PlanInput in;
  in.graph = big_graph();
  in.parts = estimate_parts(in.graph, 1);
  for (const bool mini : {false, true}) {
    TrainConfig c = mode_config(mini);
    CostModel m;
    auto at = [&](double scale) {
      (mini ? m.mini_batch_steps : m.full_graph_steps) = {{1, scale}};
      return make_plan(in, c, m, "cpu", 1).per_rank.front();
    };
    const RankPlan one = at(1), two = at(2);
    SCOPED_TRACE(mini ? "mini-batch" : "full graph");
    EXPECT_GT(one.dense_s, 0);
    EXPECT_LT(one.dense_s, one.compute_s);
    EXPECT_EQ(two.dense_s, one.dense_s);
    EXPECT_NEAR(two.compute_s, 2 * (one.compute_s - one.dense_s) + one.dense_s,
                1e-9 * one.compute_s);
    c.model.hidden *= 8;
    const RankPlan wide = at(1);
    EXPECT_GT(wide.dense_s / wide.compute_s, one.dense_s / one.compute_s);
  }
}

// A layer's products run at their pass's rate for its widths: the grid's own at its widths,
// linear in log(width) between them, the edge's outside; without a table, gemm_s_per_flop. In a
// plan, the input gradient (every layer but the input one) is costed at its own rate.
TEST(Plan, DenseProductsRunAtTheirShapesRate) {
  CostModel m;
  m.gemm_s_per_flop = 1e-11;
  EXPECT_EQ(gemm_s_per_flop_of(m, GemmPass::WeightGrad, 40, 256), 1e-11);
  const double a = 1e-11, b = 2e-11, c = 4e-11, d = 8e-11;  // (16, 16) (16, 256) (256, 16) ..
  m.gemm_shapes = {{GemmPass::Forward, 16, 16, a},
                   {GemmPass::Forward, 16, 256, b},
                   {GemmPass::Forward, 256, 16, c},
                   {GemmPass::Forward, 256, 256, d}};
  auto fwd = [&](double in, double out) {
    return gemm_s_per_flop_of(m, GemmPass::Forward, in, out);
  };
  EXPECT_EQ(fwd(16, 256), b);
  EXPECT_EQ(fwd(256, 16), c);
  EXPECT_NEAR(fwd(64, 16), (a + c) / 2, 1e-24);  // log(64 / 16) = log(256 / 16) / 2
  EXPECT_NEAR(fwd(64, 64), (a + b + c + d) / 4, 1e-24);
  EXPECT_EQ(fwd(1000, 1000), d);
  EXPECT_EQ(fwd(8, 300), b);
  EXPECT_EQ(gemm_s_per_flop_of(m, GemmPass::InputGrad, 64, 64), 1e-11);  // no entries: one rate

  PlanInput in;
  in.graph = big_graph();
  in.parts = estimate_parts(in.graph, 1);
  const TrainConfig gcn = mode_config(false);
  CostModel flat;
  flat.gemm_s_per_flop = 1e-11;
  CostModel table = flat;
  table.gemm_shapes.clear();
  for (const GemmPass pass : kGemmPasses)
    for (const std::int64_t w1 : {8, 4096})
      for (const std::int64_t w2 : {8, 4096})
        table.gemm_shapes.push_back({pass, w1, w2, pass == GemmPass::InputGrad ? 3e-11 : 1e-11});
  const RankPlan one = make_plan(in, gcn, flat, "cpu", 1).per_rank.front();
  const RankPlan three = make_plan(in, gcn, table, "cpu", 1).per_rank.front();
  // Two layers: only the second has an input gradient, 2 x rows x hidden x classes flops, at
  // 2e-11 s more per flop.
  const double extra = 2e-11 * 2.0 * static_cast<double>(in.graph.num_nodes) *
                       static_cast<double>(gcn.model.hidden) *
                       static_cast<double>(in.graph.num_classes);
  EXPECT_NEAR(three.dense_s - one.dense_s, extra, 1e-9 * extra);
}

// The share of the entries on a graph's most connected rows: a fraction of the rows when every
// row has the mean degree; on a skewed graph the hubs' entries come first, a bucket taken in
// part at its mean degree.
TEST(Plan, HubsHoldTheirShareOfTheEntries) {
  GraphCounts g = big_graph();  // 2^20 rows, 16 x 2^20 entries, no histogram
  EXPECT_EQ(hot_entry_share(g, 0), 0);
  EXPECT_DOUBLE_EQ(hot_entry_share(g, 0.25), 0.25);
  EXPECT_EQ(hot_entry_share(g, 2), 1);
  const std::int64_t n = g.num_nodes, e = g.training_edges;
  const std::int64_t hubs = 1 << 12, leaves = n - hubs;
  g.degree_histogram.assign(13, {0, 0});  // degree 1 in bucket 1, up to 4095 in bucket 12
  g.degree_histogram[1] = {leaves, leaves};
  g.degree_histogram[12] = {hubs, e - leaves};
  const double hub_share = static_cast<double>(e - leaves) / static_cast<double>(e);
  EXPECT_DOUBLE_EQ(hot_entry_share(g, static_cast<double>(hubs) / static_cast<double>(n)),
                   hub_share);
  EXPECT_DOUBLE_EQ(hot_entry_share(g, 0.5 * static_cast<double>(hubs) / static_cast<double>(n)),
                   0.5 * hub_share);
  // Past the hubs, the leaves' entries one each.
  EXPECT_DOUBLE_EQ(hot_entry_share(g, static_cast<double>(2 * hubs) / static_cast<double>(n)),
                   hub_share + static_cast<double>(hubs) / static_cast<double>(e));
}

// A product's entries hit the caches while its input fits in them (spmm_footprint_bytes); a
// larger input keeps its most gathered rows: of a graph without hubs, the cached share of the
// input; of a skewed graph, its hubs' share of the entries. Hits run at the in-cache rates,
// misses at the streaming ones; a plan's aggregations (forward over the sources, backward over
// the destinations) cost so.
TEST(Plan, SparseProductsMissTheCachesBeyondTheirHotRows) {
  CostModel m;
  m.spmm_alpha_s = 1e-6;
  m.spmm_s_per_edge = 2e-9;
  m.spmm_s_per_byte = 1e-11;
  m.spmm_footprint_bytes = 1 << 22;
  const double hit = 2e-9 + 64 * 1e-11;  // a 16-column row
  // Without streaming rates every entry is a hit.
  EXPECT_DOUBLE_EQ(spmm_seconds(m, 1e6, 16, 1 << 20, nullptr), 1e-6 + 1e6 * hit);
  m.spmm_streaming_s_per_edge = 8e-9;
  m.spmm_streaming_s_per_byte = 1e-10;
  const double miss = 8e-9 + 64 * 1e-10;
  // 2^16 rows of 64 bytes: 4 MiB, in the caches.
  EXPECT_EQ(spmm_miss_share(m, 1e6, 16, 1 << 16, nullptr), 0);
  EXPECT_DOUBLE_EQ(spmm_seconds(m, 1e6, 16, 1 << 16, nullptr), 1e-6 + 1e6 * hit);
  // 2^20 rows: 64 MiB, a sixteenth of the rows cached.
  EXPECT_DOUBLE_EQ(spmm_miss_share(m, 1e6, 16, 1 << 20, nullptr), 15.0 / 16);
  EXPECT_DOUBLE_EQ(spmm_seconds(m, 1e6, 16, 1 << 20, nullptr),
                   1e-6 + 1e6 * (hit / 16 + miss * 15 / 16));
  // A skewed graph whose 2^16 hubs (the cached rows) hold 3/4 of the entries.
  GraphCounts skewed = big_graph();
  const std::int64_t n = skewed.num_nodes, e = skewed.training_edges, hubs = 1 << 16;
  skewed.degree_histogram.assign(9, {0, 0});
  skewed.degree_histogram[8] = {hubs, e * 3 / 4};          // degree 192: bucket 8 (128 .. 255)
  skewed.degree_histogram[3] = {n - hubs, e - e * 3 / 4};  // degree 4.27: bucket 3 (4 .. 7)
  EXPECT_DOUBLE_EQ(spmm_miss_share(m, 1e6, 16, 1 << 20, &skewed), 0.25);
  // A plan: GCN 128 -> 16 -> 40 on 2^20 rows (no histogram). The input layer transforms first
  // and aggregates its 16 columns forward and back, the second aggregates its 16 input
  // columns first, forward and back: four products over 2^26-byte inputs, against the same
  // plan without streaming rates.
  PlanInput in;
  in.graph = big_graph();
  in.parts = estimate_parts(in.graph, 1);
  const TrainConfig c = mode_config(false);
  ASSERT_EQ(c.model.hidden, 16);
  CostModel hits_only = m;
  hits_only.spmm_streaming_s_per_byte = 0;
  const RankPlan cached = make_plan(in, c, hits_only, "cpu", 1).per_rank.front();
  const RankPlan missing = make_plan(in, c, m, "cpu", 1).per_rank.front();
  const double entries = static_cast<double>(in.graph.training_edges + in.graph.num_nodes);
  const double extra = 4 * entries * (miss - hit) * 15 / 16;
  EXPECT_NEAR(missing.compute_s - cached.compute_s, extra, 1e-9 * extra);
}

// The loss costs its scored rows' cells: the part's training rows on the full graph, every
// batch's seeds in mini-batch training.
TEST(Plan, TheLossCostsTheCellsItScores) {
  PlanInput in;
  in.graph = big_graph();
  in.parts = estimate_parts(in.graph, 1);
  for (const bool mini : {false, true}) {
    SCOPED_TRACE(mini ? "mini-batch" : "full graph");
    const TrainConfig c = mode_config(mini);
    CostModel free_loss;
    free_loss.loss_s_per_cell = 0;
    CostModel m = free_loss;
    m.loss_s_per_cell = 1e-8;
    const Plan none = make_plan(in, c, free_loss, "cpu", 1);
    const Plan some = make_plan(in, c, m, "cpu", 1);
    // Every training row once an epoch either way (the batches split them evenly).
    const double extra = 1e-8 * static_cast<double>(in.graph.num_train * in.graph.num_classes);
    EXPECT_NEAR(some.per_rank.front().compute_s - none.per_rank.front().compute_s, extra,
                1e-6 * extra);
  }
}

// An element-wise pass runs at the in-cache rate up to the footprint that rate was measured
// at, at the streaming rate from the streaming measurement's, linearly in log(footprint)
// between; Adam's passes over the parameters (7 per parameter, 4 arrays) take the rate of
// their footprint.
TEST(Plan, SmallPassesRunAtTheInCacheRate) {
  CostModel m;
  m.elementwise_s_per_byte = 4e-11;
  m.elementwise_cached_s_per_byte = 1e-11;
  EXPECT_EQ(elementwise_s_per_byte(m, 1000), 1e-11);
  EXPECT_EQ(elementwise_s_per_byte(m, kCachedPassBytes), 1e-11);
  EXPECT_EQ(elementwise_s_per_byte(m, kStreamingPassBytes), 4e-11);
  EXPECT_EQ(elementwise_s_per_byte(m, 1e12), 4e-11);
  const double mid = std::sqrt(kCachedPassBytes * kStreamingPassBytes);
  EXPECT_NEAR(elementwise_s_per_byte(m, mid), 2.5e-11, 1e-20);
  PlanInput in;
  in.graph = big_graph();
  in.parts = estimate_parts(in.graph, 1);
  TrainConfig c = config_for(nn::ModelKind::Gcn, 0, 1);
  CostModel only_ew;  // nothing costs time but the element-wise bytes
  only_ew.gemm_alpha_s = only_ew.gemm_s_per_flop = only_ew.elementwise_alpha_s = 0;
  only_ew.elementwise_s_per_byte = 4e-11;
  const Plan streaming = make_plan(in, c, only_ew, "cpu", 1);
  only_ew.elementwise_cached_s_per_byte = 1e-11;
  const Plan cached = make_plan(in, c, only_ew, "cpu", 1);
  const double p = static_cast<double>(streaming.parameters), bytes = 4 * p;
  ASSERT_LT(4 * bytes, kCachedPassBytes);  // 128 -> 16 -> 40: the parameters fit
  EXPECT_NEAR(streaming.per_rank[0].dense_s - cached.per_rank[0].dense_s,
              7 * bytes * (4e-11 - 1e-11), 1e-15);
}

// A batch's input rows are dropped as the producer gathers them: the training step has no
// pass over the input (the element-wise bytes of a mini-batch step do not grow with the input
// width), where a full-graph step drops its input itself.
TEST(Plan, SampledInputIsDroppedInTheGather) {
  PlanInput in;
  in.graph = big_graph();
  in.parts = estimate_parts(in.graph, 1);
  CostModel only_ew;
  only_ew.gemm_alpha_s = only_ew.gemm_s_per_flop = only_ew.spmm_alpha_s = 0;
  only_ew.spmm_s_per_edge = only_ew.spmm_s_per_byte = only_ew.elementwise_alpha_s = 0;
  for (const bool mini : {false, true}) {
    TrainConfig c = mode_config(mini);
    auto layers_s = [&](std::int64_t features) {
      in.graph.num_features = features;
      const RankPlan r = make_plan(in, c, only_ew, "cpu", 1).per_rank[0];
      return r.compute_s - r.dense_s;  // without Adam, whose parameters grow with the width
    };
    const double narrow = layers_s(128), wide = layers_s(1024);
    SCOPED_TRACE(mini ? "mini-batch" : "full graph");
    ASSERT_GT(narrow, 0);
    if (mini)
      EXPECT_NEAR(wide, narrow, 1e-12 * narrow);
    else
      EXPECT_GT(wide, narrow + 1e-3);  // 2 x 4 bytes x 896 more features x 1 Mi rows, at 8 GB/s
  }
}

// One process drops a batch's input rows inside the gather; with several parts the rows are
// assembled first and dropped in a pass of their own, costed as the step's dropout passes (an
// element-wise pass reading and writing the rows): the producer's stage pays it there only,
// with dropout, on the CPU.
TEST(Plan, AssembledInputIsDroppedInAPassOfItsOwn) {
  CostModel no_pass;
  no_pass.elementwise_alpha_s = no_pass.elementwise_s_per_byte = 0;
  for (const int parts : {1, 2}) {
    SCOPED_TRACE(parts);
    PlanInput in = big_parts(parts);
    TrainConfig c = mode_config(true);
    auto sampling = [&](float dropout, const CostModel& m, const char* device = "cpu") {
      c.model.dropout = dropout;
      return make_plan(in, c, m, device, 1).per_rank[0].sampling_s;
    };
    CostModel slow_pass = no_pass;
    slow_pass.elementwise_alpha_s = 1e-3;  // a millisecond a call: the pass is one call a batch
    slow_pass.elementwise_s_per_byte = 1e-9;
    const double base = sampling(0.5f, no_pass);
    ASSERT_GT(base, 0);
    // The pass alone: one call per batch over the input rows' bytes, read and written.
    const double extra = sampling(0.5f, slow_pass) - base;
    if (parts == 1) {
      EXPECT_NEAR(extra, 0, 1e-12);
    } else {
      const double steps =
          static_cast<double>(make_plan(in, c, no_pass, "cpu", 1).batches_per_epoch);
      // A rank's rows of a batch: its 128 seeds at least, 128 x (1 + 5) x (1 + 5) at most.
      const double row = 2.0 * 4 * 128 * 1e-9;  // read and written, 128 features
      EXPECT_GT(extra, steps * (1e-3 + 128 * row));
      EXPECT_LT(extra, steps * (1e-3 + 128 * 36 * row));
      EXPECT_NEAR(sampling(0.5f, slow_pass, "cuda"), sampling(0.5f, no_pass, "cuda"), 1e-12);
    }
    // Nothing without dropout; the rest of the producer's stage does not depend on it.
    EXPECT_NEAR(sampling(0.f, slow_pass), base, 1e-12);
  }
}

// The in-step message latency replaces the ping-pong's in every message of a step, and a
// mini-batch epoch pays the per-batch fixed cost once per batch and the per-epoch one once.
TEST(Plan, MessageLatencyAndBatchCostsAreCharged) {
  PlanInput in = big_parts(4);
  TrainConfig c = config_for(nn::ModelKind::Gcn, 0, 1);
  c.overlap = false;
  CostModel m;
  const Plan base = make_plan(in, c, m, "cpu", 1);
  m.collectives = {{4, m.link_alpha_s + 1e-3, 0, 0}};
  const Plan slow = make_plan(in, c, m, "cpu", 1);
  // Per step: 2 L exchanges with each of the 3 peers, and the all-reduce's 2 log2 P rounds.
  const double messages = 2.0 * c.model.num_layers * 3 + 2.0 * 2;
  EXPECT_NEAR(slow.epoch_seconds - base.epoch_seconds, messages * 1e-3, 1e-9);
  c.model.kind = nn::ModelKind::Sage;
  c.overlap = true;  // the default; --no-overlap is a full-graph flag
  MiniBatchConfig mb;
  mb.batch_size = 1000;
  mb.fanouts = {5, 5};
  c.mini_batch = mb;
  in.parts = estimate_parts(in.graph, 1);
  in.from_partition = false;
  CostModel one;
  const Plan b0 = make_plan(in, c, one, "cpu", 1);
  one.batch_alpha_s = 1e-3;
  one.epoch_alpha_s = 7e-3;
  const Plan b1 = make_plan(in, c, one, "cpu", 1);
  EXPECT_EQ(b0.batches_per_epoch, 100);
  EXPECT_NEAR(b1.epoch_seconds - b0.epoch_seconds, 100 * 1e-3 + 7e-3, 1e-9);
  // With several ranks every remote row a batch fetches costs mini_batch_fetch_row_s on top of
  // its bytes: the exchange grows by rows x that cost (rows = fetched bytes / bytes a row).
  in.parts = estimate_parts(in.graph, 2);
  in.from_partition = true;
  CostModel two;
  two.host_cores = 0;
  c.mini_batch->prefetch = 0;  // nothing hidden: the exchange is the exposed one
  const RankPlan r0 = make_plan(in, c, two, "cpu", 1).per_rank.front();
  two.collectives = {{2, 0, 0, 2e-7}};
  const RankPlan r1 = make_plan(in, c, two, "cpu", 1).per_rank.front();
  ASSERT_GT(r0.feature_fetch_bytes, 0);
  const double rows = static_cast<double>(r0.feature_fetch_bytes) /
                      (4.0 * (2.0 + static_cast<double>(in.graph.num_features)));
  EXPECT_NEAR(r1.exchange_s - r0.exchange_s, rows * 2e-7, 3e-7);  // bytes are whole: a row
  EXPECT_NEAR(r1.epoch_s - r0.epoch_s, rows * 2e-7, 3e-7);
}

// The collectives' costs per rank count: an entry's at its ranks, log-linear in the ranks
// between two, the nearest entry's outside them; none: nothing fitted (the link's latency).
TEST(Plan, CollectiveCostsFollowTheRankCount) {
  CostModel m;
  EXPECT_EQ(m.collective_at(4).full_graph_message_s, 0.0);
  m.collectives = {{2, 1e-5, 2e-5, 1e-7}, {8, 4e-5, 8e-5, 3e-7}};
  for (int r : {1, 2}) EXPECT_EQ(m.collective_at(r).mini_batch_message_s, 2e-5) << r;
  for (int r : {8, 64}) EXPECT_EQ(m.collective_at(r).full_graph_message_s, 4e-5) << r;
  const CollectiveCosts mid = m.collective_at(4);  // halfway in log(ranks)
  EXPECT_EQ(mid.ranks, 4);
  EXPECT_NEAR(mid.full_graph_message_s, 2.5e-5, 1e-12);
  EXPECT_NEAR(mid.mini_batch_message_s, 5e-5, 1e-12);
  EXPECT_NEAR(mid.mini_batch_fetch_row_s, 2e-7, 1e-15);
  // The plan charges the entry for its rank count: with the latencies above, the 4-rank plan's
  // epoch grows by its messages x the 4-rank latency, not the 2-rank one.
  PlanInput in = big_parts(4);
  TrainConfig c = config_for(nn::ModelKind::Gcn, 0, 1);
  c.overlap = false;
  CostModel none;
  const double base = make_plan(in, c, none, "cpu", 1).epoch_seconds;
  CostModel two = none, eight = none;
  two.collectives = {{2, none.link_alpha_s + 1e-3, 0, 0}};
  eight.collectives = {{2, none.link_alpha_s, 0, 0}, {8, none.link_alpha_s + 4e-3, 0, 0}};
  const double messages = 2.0 * c.model.num_layers * 3 + 2.0 * 2;
  EXPECT_NEAR(make_plan(in, c, two, "cpu", 1).epoch_seconds - base, messages * 1e-3, 1e-9);
  EXPECT_NEAR(make_plan(in, c, eight, "cpu", 1).epoch_seconds - base, messages * 2e-3, 1e-9);
}

// Where the ranks' threads fill the host's cores, the transport's CPU work (its copies of the
// bytes) cannot hide behind the compute: the exposed exchange is at least share x bytes x its
// cost. With cores to spare, or a core per thread (host_cores 0), it is not charged.
TEST(Plan, TransportCpuWorkIsTheRanksShareOfACorePerByte) {
  CostModel m;
  m.transport_s_per_byte = 1e-8;
  auto at = [&](int cores, int ranks, int threads) {
    m.host_cores = cores;
    return transport_cpu_s_per_byte(m, ranks, threads);
  };
  EXPECT_DOUBLE_EQ(at(2, 4, 1), 2e-8);  // 4 ranks on 2 cores: half a core each
  EXPECT_DOUBLE_EQ(at(4, 4, 1), 1e-8);  // they fill the cores: a core each
  EXPECT_DOUBLE_EQ(at(4, 2, 2), 1e-8);  // threads count
  EXPECT_DOUBLE_EQ(at(8, 2, 3), 0.0);   // cores to spare: the copies hide
  EXPECT_DOUBLE_EQ(at(0, 4, 1), 0.0);   // a core per thread
  EXPECT_DOUBLE_EQ(at(1, 1, 4), 0.0);   // one rank sends nothing
}

// Where the ranks fill the cores, every byte a rank sends and receives costs its share of a
// core, on top of the link's terms: the halo exchange's (send + halo rows each way, never
// hidden by the overlap), the fetched rows' (served as many as fetched) and the all-reduce's.
TEST(Plan, TransportAddsToTheExchangeWhereTheRanksFillTheCores) {
  PlanInput in = big_parts(4);
  const PartCounts& part = in.parts.front();
  CostModel m;
  m.transport_s_per_byte = 1e-8;  // 0.1 GB/s: far slower than the link's default
  auto rank0 = [&](const TrainConfig& c, int cores) {
    m.host_cores = cores;
    return make_plan(in, c, m, "cpu", 1).per_rank.front();
  };
  TrainConfig c = config_for(nn::ModelKind::Gcn, 0, 1);
  c.overlap = false;
  const RankPlan full = rank0(c, 2), own = rank0(c, 0);
  ASSERT_GT(full.halo_exchange_bytes, 0);
  ASSERT_GT(part.num_halo, 0);
  // halo_exchange_bytes counts the send rows' floats; the transport moves send + halo rows.
  const double moved = static_cast<double>(full.halo_exchange_bytes) *
                       static_cast<double>(part.num_send + part.num_halo) /
                       static_cast<double>(part.num_send);
  EXPECT_NEAR(full.exchange_s - own.exchange_s, 2e-8 * moved, 1e-9 * full.exchange_s);
  EXPECT_NEAR(full.exposed_exchange_s - own.exposed_exchange_s, 2e-8 * moved,
              1e-9 * full.exposed_exchange_s);
  ASSERT_GT(full.allreduce_bytes, 0);
  EXPECT_NEAR(full.allreduce_s - own.allreduce_s,
              2e-8 * 2 * static_cast<double>(full.allreduce_bytes), 1e-9 * full.allreduce_s);
  // The overlap hides the wait, not the transport's CPU work.
  c.overlap = true;
  const RankPlan overlapped = rank0(c, 2), hidden = rank0(c, 0);
  EXPECT_LT(hidden.exposed_exchange_s, hidden.exchange_s);
  EXPECT_GE(overlapped.exposed_exchange_s, 2e-8 * moved);
  EXPECT_LT(overlapped.exposed_exchange_s, full.exposed_exchange_s);
  // Mini-batch: twice the fetched bytes.
  TrainConfig mb = config_for(nn::ModelKind::Sage, 0, 1);
  mb.mini_batch = batches(1024, {10, 5}, 0);
  const RankPlan mini = rank0(mb, 2), mini_own = rank0(mb, 0);
  ASSERT_GT(mini.feature_fetch_bytes, 0);
  EXPECT_NEAR(mini.exchange_s - mini_own.exchange_s,
              2e-8 * 2 * static_cast<double>(mini.feature_fetch_bytes), 1e-9 * mini.exchange_s);
  // Cores to spare: nothing more than the link's terms.
  EXPECT_DOUBLE_EQ(rank0(mb, 16).exchange_s, mini_own.exchange_s);
}

// The gradient all-reduce as MPICH schedules it: above 2 KiB Rabenseifner's reduce-scatter +
// all-gather (2 log2 P rounds, 2 (P - 1) / P of the bytes; at P = 2 what a ring costs), below
// it recursive doubling (log2 P rounds of the whole message), and two whole-message rounds
// more for the ranks past the largest power of two.
TEST(Plan, AllReduceFollowsMpichsAlgorithms) {
  CostModel m;
  m.link_s_per_byte = 1e-9;
  const double a = 1e-5, big = 1e6, small = 1024;
  const double whole_big = a + big * 1e-9, whole_small = a + small * 1e-9;
  EXPECT_EQ(allreduce_s(m, a, big, 1), 0.0);
  EXPECT_NEAR(allreduce_s(m, a, big, 2), 2 * a + big * 1e-9, 1e-15);
  EXPECT_NEAR(allreduce_s(m, a, big, 1024), 20 * a + 2.0 * 1023 / 1024 * big * 1e-9, 1e-12);
  EXPECT_NEAR(allreduce_s(m, a, big, 6), 4 * a + 1.5 * big * 1e-9 + 2 * whole_big, 1e-12);
  EXPECT_NEAR(allreduce_s(m, a, small, 8), 3 * whole_small, 1e-15);
  EXPECT_NEAR(allreduce_s(m, a, small, 5), 2 * whole_small + 2 * whole_small, 1e-15);
  EXPECT_NEAR(allreduce_s(m, a, kShortAllreduceBytes + 1, 4),
              4 * a + 1.5 * (kShortAllreduceBytes + 1) * 1e-9, 1e-15);
  // Its latencies at scale: 20 at P = 1024, where a ring pays 2 (P - 1) = 2046.
  m.link_s_per_byte = 0;
  EXPECT_NEAR(allreduce_s(m, a, big, 1024), 20 * a, 1e-15);
}

// The mini-batch producer thread is a pipeline stage: with a core of its own its sampling
// hides behind the training thread's compute, all but one batch's worth; sharing the cores
// (or with --prefetch 0) it adds up.
TEST(Plan, ProducerOverlapsComputeOnlyOnACoreOfItsOwn) {
  PlanInput in;
  in.graph = big_graph();
  in.parts = estimate_parts(in.graph, 1);
  TrainConfig c = config_for(nn::ModelKind::Sage, 0, 1);
  MiniBatchConfig mb;
  mb.batch_size = 1000;
  mb.fanouts = {5, 5};
  mb.prefetch = 1;
  c.mini_batch = mb;
  CostModel m;
  m.epoch_alpha_s = 2e-3;
  m.host_cores = 2;  // one training thread + one producer
  const Plan own = make_plan(in, c, m, "cpu", 1);
  // The producer's scale multiplies its sampling and gathering, nothing else.
  CostModel slow_producer = m;
  slow_producer.mini_batch_steps = {{1, 1.0, 3.0}};
  const RankPlan tripled = make_plan(in, c, slow_producer, "cpu", 1).per_rank[0];
  EXPECT_NEAR(tripled.sampling_s, 3 * own.per_rank[0].sampling_s, 1e-12);
  EXPECT_NEAR(tripled.compute_s, own.per_rank[0].compute_s, 1e-12);
  m.host_cores = 1;
  const Plan shared = make_plan(in, c, m, "cpu", 1);
  c.mini_batch->prefetch = 0;
  m.host_cores = 2;
  const Plan none = make_plan(in, c, m, "cpu", 1);
  const RankPlan &o = own.per_rank[0], &s = shared.per_rank[0], &n = none.per_rank[0];
  ASSERT_GT(o.sampling_s, 0);
  EXPECT_EQ(s.exposed_sampling_s, s.sampling_s);
  EXPECT_EQ(n.exposed_sampling_s, n.sampling_s);
  EXPECT_NEAR(n.epoch_s, n.compute_s + n.sampling_s, 1e-12);
  // By hand: one batch produced, 99 of the slower stage, one batch computed, the epoch's cost.
  const double steps = 100, cb = (o.compute_s - 2e-3) / steps, qb = o.sampling_s / steps;
  EXPECT_NEAR(o.epoch_s, qb + (steps - 1) * std::max(cb, qb) + cb + 2e-3, 1e-9);
  EXPECT_LT(o.epoch_s, n.epoch_s);
  EXPECT_EQ(own.prefetch, 1);
  EXPECT_EQ(none.prefetch, 0);
  EXPECT_EQ(own.sampler_envelope_bytes, 2 * none.sampler_envelope_bytes);
  // --prefetch auto runs the producer only with a core of its own, as the Trainer does: the
  // plan of --prefetch 1 on two cores, of --prefetch 0 on one.
  c.mini_batch->prefetch = kAutoPrefetch;
  const Plan auto_own = make_plan(in, c, m, "cpu", 1);
  EXPECT_EQ(auto_own.prefetch, 1);
  EXPECT_EQ(auto_own.epoch_seconds, own.epoch_seconds);
  EXPECT_EQ(auto_own.sampler_envelope_bytes, own.sampler_envelope_bytes);
  m.host_cores = 1;
  const Plan auto_shared = make_plan(in, c, m, "cpu", 1);
  EXPECT_EQ(auto_shared.prefetch, 0);
  EXPECT_EQ(auto_shared.sampler_envelope_bytes, none.sampler_envelope_bytes);
  EXPECT_EQ(auto_shared.per_rank[0].exposed_sampling_s, auto_shared.per_rank[0].sampling_s);
  EXPECT_EQ(make_plan(in, c, m, "cuda", 1).prefetch, 0);
}

// Sampled blocks follow the degrees: one bucket at the mean degree is the mean-degree model; a
// skewed graph with the same rows and entries (most rows of degree 1, a few hubs) draws fewer
// neighbours per row and its draws fall on fewer distinct rows.
TEST(Plan, SkewedDegreesMakeSmallerBlocks) {
  PlanInput in;
  in.graph = big_graph();  // 2^20 rows, 16 x 2^20 entries
  in.parts = estimate_parts(in.graph, 1);
  TrainConfig c = config_for(nn::ModelKind::Sage, 0, 1);
  MiniBatchConfig mb;
  mb.batch_size = 1000;
  mb.fanouts = {10, 10};
  c.mini_batch = mb;
  const auto sampled = [&](const std::vector<std::array<std::int64_t, 2>>& h) {
    in.graph.degree_histogram = h;
    const RankPlan r = make_plan(in, c, CostModel{}, "cpu", 1).per_rank.front();
    std::int64_t activations = -1;
    for (const MemoryItem& i : r.host)
      if (i.name == "activations") activations = i.bytes;
    return std::pair{r.sampling_s, activations};
  };
  const auto mean = sampled({});
  const std::int64_t n = in.graph.num_nodes, e = in.graph.training_edges;
  // Degree 16 sits in bucket 5 (16 .. 31).
  const auto one_bucket = sampled({{0, 0}, {0, 0}, {0, 0}, {0, 0}, {0, 0}, {n, e}});
  EXPECT_NEAR(one_bucket.first, mean.first, 1e-12 * mean.first);
  EXPECT_EQ(one_bucket.second, mean.second);
  // 2^20 - 2^12 rows of degree 1, 2^12 hubs holding the rest.
  const std::int64_t hubs = 1 << 12, leaves = n - hubs;
  std::vector<std::array<std::int64_t, 2>> skew(13, {0, 0});  // degrees up to 4095: bucket 12
  skew[1] = {leaves, leaves};
  skew[12] = {hubs, e - leaves};
  const auto skewed = sampled(skew);
  EXPECT_LT(skewed.first, 0.5 * mean.first);
  EXPECT_LT(skewed.second, mean.second);
}

TEST(Plan, CheckpointHoldsParametersAdamMomentsAndTheBestEpoch) {
  const TrainConfig c = config_for(nn::ModelKind::Gcn, 0, 1);
  PlanInput in;
  in.graph = big_graph();
  in.parts = estimate_parts(in.graph, 1);
  const Plan plan = make_plan(in, c, CostModel{}, "cpu", 1);
  EXPECT_EQ(plan.parameters, count_parameters(c, 128, 40));
  EXPECT_EQ(plan.checkpoint_bytes, 4 * 4 * plan.parameters + 4096);
}

}  // namespace
}  // namespace halo::cluster::test
