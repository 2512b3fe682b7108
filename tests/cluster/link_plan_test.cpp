// The plan of link prediction: the encoder's peak over a training step is, within 20 %, the bytes a
// forward and backward of nn::TemporalModel hold at their peak (kernels::host_buffer_peak_bytes);
// the plan answers for a prepared snapshot series and grows with the model.
#include <cstdint>
#include <gtest/gtest.h>
#include <set>
#include <string>
#include <vector>

#include <halo/cluster/link_plan.hpp>
#include <halo/datasets/temporal.hpp>
#include <halo/kernels/buffer_stats.hpp>
#include <halo/kernels/resources.hpp>
#include <halo/nn/evolvegcn.hpp>
#include <halo/runtime/runtime.hpp>

namespace halo::cluster {
namespace {

const kernels::Resources& host() {
  static const kernels::Resources r(kernels::Device::Cpu, 1);
  return r;
}

/// A ring of `n` nodes with a chord per node, one event per edge and time.
datasets::TemporalGraph ring_events(std::int64_t n, std::int64_t times) {
  datasets::TemporalGraph g;
  g.name = "ring";
  for (std::int64_t v = 0; v < n; ++v) g.original_ids.push_back(v);
  for (std::int64_t t = 0; t < times; ++t)
    for (std::int64_t v = 0; v < n; ++v) {
      g.src.push_back(static_cast<kernels::NodeId>(v));
      g.dst.push_back(static_cast<kernels::NodeId>((v + 1 + t % 3 * (v % 5)) % n));
      g.time.push_back(t);
    }
  return g;
}

/// `count` snapshots of each span's own events.
datasets::SnapshotConfig own_spans(std::int64_t count) {
  datasets::SnapshotConfig s;
  s.num_snapshots = count;
  s.window_snapshots = 1;
  return s;
}

TEST(LinkPlan, EncoderPeakIsWhatATrainingStepHolds) {
  const std::int64_t n = 300;
  const datasets::TemporalGraph g = ring_events(n, 8);
  const datasets::SnapshotConfig snapshots = own_spans(8);
  const runtime::TemporalShard shard = runtime::local_temporal_shard(host(), g, snapshots, 0.7);
  // The kernels' scratch space (kernels::Resources::scratch) is the process's, grown once to the
  // largest request: every case runs once before any is measured.
  for (const bool measure : {false, true})
    for (const nn::TemporalKind kind : {nn::TemporalKind::EvolveGcnO, nn::TemporalKind::Gcrn})
      for (const std::int64_t hidden : {16, 64})
        for (const int window : {2, 5}) {
          nn::TemporalModelConfig mc;
          mc.kind = kind;
          mc.hidden = hidden;
          mc.in_features = shard.num_features;
          nn::TemporalModel<float> model(host(), mc, 3);
          std::vector<nn::TemporalStep<float>> steps;
          for (int s = 0; s < window; ++s)
            steps.push_back({shard.exchange[static_cast<std::size_t>(s)]->adjacency(),
                             shard.degree_bucket[static_cast<std::size_t>(s)]});
          const kernels::Tensor<float> d = kernels::Tensor<float>::zeros(host(), n, hidden);
          // Two steps, as training makes them: the second finds the first's caches.
          const std::size_t before = kernels::host_buffer_bytes();
          kernels::reset_host_buffer_peak();
          for (int k = 0; k < 2; ++k) {
            model.forward(steps);
            model.backward(d);
          }
          if (!measure) continue;
          std::int64_t grads = 0;  // the parameters' gradients, counted with the parameters
          for (nn::Parameter<float>* p : model.parameters()) grads += p->grad.numel();
          const double measured =
              static_cast<double>(kernels::host_buffer_peak_bytes() - before) - 4.0 * grads;
          const double planned = static_cast<double>(temporal_step_bytes(mc, window, n));
          EXPECT_NEAR(planned / measured, 1.0, 0.2)
              << nn::to_string(kind) << " hidden " << hidden << " window " << window << ": planned "
              << planned << ", measured " << measured;
        }
}

TEST(LinkPlan, AnswersForASnapshotSeriesAndGrowsWithTheModel) {
  const datasets::TemporalGraph g = ring_events(200, 20);
  const datasets::SnapshotConfig snapshots = own_spans(20);
  runtime::TrainConfig config;
  config.epochs = 3;
  config.link.window = 3;
  const runtime::TemporalShard shard =
      runtime::local_temporal_shard(host(), g, snapshots, config.link.train_fraction);
  const LinkCounts counts = link_counts(shard);
  ASSERT_EQ(counts.entries.size(), 20u);
  config.link.model.hidden = 8;
  const Plan small = make_link_plan(counts, config, CostModel{}, "cpu", 1);
  config.link.model.hidden = 64;
  const Plan large = make_link_plan(counts, config, CostModel{}, "cpu", 1);
  EXPECT_GT(large.peak_host_bytes_per_rank, small.peak_host_bytes_per_rank);
  EXPECT_GT(large.epoch_seconds, small.epoch_seconds);
  EXPECT_GT(large.parameters, small.parameters);
  const runtime::LinkSplit split = runtime::link_split(20, config.link);
  EXPECT_EQ(small.batches_per_epoch, split.train_end - split.train_begin);
  EXPECT_EQ(small.model, "evolvegcn-o");
  // The model's parameters, counted by building it.
  runtime::LinkModel model{nn::TemporalModel<float>(
                               host(),
                               [&] {
                                 nn::TemporalModelConfig mc = config.link.model;
                                 mc.in_features = shard.num_features;
                                 return mc;
                               }(),
                               1),
                           nn::PairScorer<float>(host(), 64, config.link.scorer_hidden, 1)};
  std::int64_t params = 0;
  for (auto* p : model.encoder.parameters()) params += p->value.numel();
  for (auto* p : model.scorer.parameters()) params += p->value.numel();
  EXPECT_EQ(large.parameters, params);
  EXPECT_THROW(make_link_plan(counts, config, CostModel{}, "cuda", 1), LogicError);
}

// Across the ranks of a snapshot series: each rank's rows, their entries and their halo are the
// plain counts of the owner maps (a set per rank and step); the plan has one rank each, whose
// encoder holds fewer rows than one process's, and a split that cuts fewer of the ring's edges
// (contiguous blocks) exchanges fewer bytes than one that cuts most (odd and even nodes).
TEST(LinkPlan, PlansEveryRankOfASnapshotSeries) {
  const std::int64_t n = 200;
  const datasets::TemporalGraph g = ring_events(n, 12);
  const datasets::SnapshotConfig snapshots = own_spans(12);
  runtime::TrainConfig config;
  config.epochs = 2;
  config.link.window = 3;
  config.link.model.hidden = 16;
  const runtime::TemporalShard shard =
      runtime::local_temporal_shard(host(), g, snapshots, config.link.train_fraction);
  const auto steps = static_cast<std::size_t>(shard.num_steps());
  using Owners = std::vector<std::vector<std::int32_t>>;
  Owners alternate(steps, std::vector<std::int32_t>(static_cast<std::size_t>(n)));
  Owners blocks = alternate;
  for (std::size_t t = 0; t < steps; ++t)
    for (std::int64_t v = 0; v < n; ++v) {
      alternate[t][static_cast<std::size_t>(v)] = static_cast<std::int32_t>(v % 2);
      // From step 6 on a tenth of the nodes migrate to the other block.
      const std::int64_t shifted = t >= 6 ? (v + n / 10) % n : v;
      blocks[t][static_cast<std::size_t>(v)] = static_cast<std::int32_t>(shifted * 2 / n);
    }
  const Plan one = make_link_plan(link_counts(shard), config, CostModel{}, "cpu", 1);
  std::int64_t alternate_bytes = 0, block_bytes = 0;
  for (const Owners* owner : {&alternate, &blocks}) {
    const LinkCounts c = link_partition_counts(shard, *owner, 2);
    ASSERT_EQ(c.parts.size(), 2u);
    for (std::size_t t = 0; t < steps; ++t) {
      // The one-process shard's GCN matrix (self-loops included): every node's row.
      const kernels::CsrView<kernels::NodeId, float> a = shard.exchange[t]->owned_block();
      ASSERT_EQ(a.num_rows, n);
      const std::vector<std::int64_t> indptr(a.indptr, a.indptr + n + 1);
      const std::vector<kernels::NodeId> indices(a.indices, a.indices + a.num_edges());
      for (std::int32_t r = 0; r < 2; ++r) {
        std::int64_t owned = 0, entries = 0;
        std::set<kernels::NodeId> halo;
        for (std::int64_t v = 0; v < n; ++v) {
          if ((*owner)[t][static_cast<std::size_t>(v)] != r) continue;
          ++owned;
          for (std::int64_t k = indptr[static_cast<std::size_t>(v)];
               k < indptr[static_cast<std::size_t>(v) + 1]; ++k) {
            ++entries;
            const kernels::NodeId u = indices[static_cast<std::size_t>(k)];
            if ((*owner)[t][static_cast<std::size_t>(u)] != r) halo.insert(u);
          }
        }
        const LinkPartCounts& p = c.parts[static_cast<std::size_t>(r)];
        EXPECT_EQ(p.owned[t], owned) << "step " << t << " rank " << r;
        EXPECT_EQ(p.entries[t], entries) << "step " << t << " rank " << r;
        EXPECT_EQ(p.halo[t], static_cast<std::int64_t>(halo.size())) << "step " << t;
      }
    }
    const Plan two = make_link_plan(c, config, CostModel{}, "cpu", 1);
    ASSERT_EQ(two.ranks, 2);
    ASSERT_EQ(two.per_rank.size(), 2u);
    for (const RankPlan& rp : two.per_rank) {
      const auto bytes = [](const RankPlan& x, const std::string& name) {
        for (const MemoryItem& i : x.host)
          if (i.name == name) return i.bytes;
        return std::int64_t{-1};
      };
      EXPECT_LE(bytes(rp, "encoder"), bytes(one.per_rank[0], "encoder"));
      EXPECT_GT(rp.halo_exchange_bytes, 0);
      EXPECT_GT(rp.allreduce_bytes, 0);
      (owner == &alternate ? alternate_bytes : block_bytes) += rp.halo_exchange_bytes;
    }
    EXPECT_EQ(two.batches_per_epoch, one.batches_per_epoch);
  }
  EXPECT_LT(block_bytes, alternate_bytes);
  // GCRN does not train across ranks; owners outside the parts are refused.
  config.link.model.kind = nn::TemporalKind::Gcrn;
  EXPECT_THROW(
      make_link_plan(link_partition_counts(shard, blocks, 2), config, CostModel{}, "cpu", 1),
      LogicError);
  EXPECT_THROW(link_partition_counts(shard, alternate, 1), LogicError);
}

}  // namespace
}  // namespace halo::cluster
