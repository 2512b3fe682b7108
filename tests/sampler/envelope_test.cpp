// Tests of the memory envelope: the planned bounds, peak <= envelope over many batches, and no
// allocation per batch after the first.

#include <algorithm>
#include <cstdint>
#include <gtest/gtest.h>
#include <vector>

#include <halo/kernels/error.hpp>
#include <halo/sampler/envelope.hpp>
#include <halo/sampler/neighbor_sampler.hpp>

#include "sampler/allocation_counter.hpp"
#include "sampler/sampler_test_util.hpp"

namespace halo::sampler::test {
namespace {

using Sizes = std::vector<std::int64_t>;
Sizes sizes(const LayerEnvelope& l) { return {l.num_dst, l.num_edges, l.num_src}; }

TEST(SamplerEnvelope, PlanMatchesTheFormulaByHand) {
  const DegreeStats stats{/*num_nodes=*/100, /*num_edges=*/400, /*max_degree=*/20};
  // Seeds draw 3 (layer 1), their sources draw 5 (layer 0).
  const SamplerEnvelope e = plan_envelope(stats, 10, {5, 3}, false);
  ASSERT_EQ(e.layers.size(), 2u);
  EXPECT_EQ(sizes(e.layers[1]), (Sizes{10, 30, 40}));
  EXPECT_EQ(sizes(e.layers[0]), (Sizes{40, 200, 100}));  // sources capped by the nodes
  EXPECT_EQ(e.table_slots, 256);                         // bit_ceil(2 * 100 + 2)
  EXPECT_EQ(e.scratch, 201);                             // 200 edges + 1
  EXPECT_EQ(e.scan_blocks, 1);
  EXPECT_EQ(e.bytes(), 10u * 4 + (11 * 8 + 70 * 4) + (41 * 8 + 300 * 4) + (256 + 201 + 1) * 8);

  // Edges capped by the graph's edges (not with replacement); fan-out -1 takes max_degree.
  EXPECT_EQ(sizes(plan_envelope(stats, 50, {-1}, false).layers[0]), (Sizes{50, 400, 100}));
  EXPECT_EQ(sizes(plan_envelope(stats, 50, {30}, true).layers[0]), (Sizes{50, 1500, 100}));
  EXPECT_EQ(sizes(plan_envelope(stats, 50, {30}, false).layers[0]), (Sizes{50, 400, 100}));
  // More seeds than nodes; a graph without edges.
  EXPECT_EQ(sizes(plan_envelope(stats, 1000, {0}, false).layers[0]), (Sizes{100, 0, 100}));
  EXPECT_EQ(sizes(plan_envelope({7, 0, 0}, 4, {3}, true).layers[0]), (Sizes{4, 0, 4}));

  EXPECT_THROW(plan_envelope(stats, 0, {1}, false), LogicError);
  EXPECT_THROW(plan_envelope(stats, 1, {}, false), LogicError);
  EXPECT_THROW(plan_envelope(stats, 1, {-3}, false), LogicError);
}

TEST(SamplerEnvelope, DegreeStatsOfAStar) {
  const Graph g = star_graph(9);
  const DegreeStats s = degree_stats(g.view());
  EXPECT_EQ(s.num_nodes, 9);
  EXPECT_EQ(s.num_edges, 16);
  EXPECT_EQ(s.max_degree, 8);
}

/// Samples `num_batches` batches and checks every layer and the peak against the envelope.
void expect_within_envelope(const Graph& g, std::int64_t batch_size, const SamplerConfig& c,
                            int num_batches) {
  NeighborSampler s(cpu(), g, batch_size, c);
  const SamplerEnvelope& env = s.envelope();
  EXPECT_EQ(s.envelope_bytes(), env.bytes());
  EXPECT_EQ(s.peak_bytes(), 0u);
  for (int batch = 0; batch < num_batches; ++batch) {
    // Batch sizes vary; every fourth batch holds node 0 (a star's hub).
    std::vector<NodeId> seeds =
        seeds_of(batch_size - batch % 3, g.num_rows(), static_cast<std::uint64_t>(batch));
    if (batch % 4 == 0 && std::find(seeds.begin(), seeds.end(), 0) == seeds.end()) seeds[0] = 0;
    const MiniBatch& mb = s.sample(cpu(), span(seeds), 1, static_cast<std::uint64_t>(batch));
    for (std::size_t l = 0; l < mb.blocks.size(); ++l) {
      const Block& b = mb.blocks[l];
      ASSERT_LE(b.num_dst(), env.layers[l].num_dst);
      ASSERT_LE(b.csr.num_edges(), env.layers[l].num_edges);
      ASSERT_LE(b.num_src(), env.layers[l].num_src);
    }
    ASSERT_GT(s.peak_bytes(), 0u);
    ASSERT_LE(s.peak_bytes(), s.envelope_bytes());
  }
}

TEST(SamplerEnvelope, PeakStaysWithinTheEnvelopeOnRmat) {
  const Graph g = rmat_graph(11, 3);
  expect_within_envelope(g, 64, {{10, 5, 3}, false, 1}, 40);
  expect_within_envelope(g, 64, {{10, 5, 3}, true, 1}, 40);
  expect_within_envelope(g, 16, {{-1, 4}, false, 1}, 20);
}

TEST(SamplerEnvelope, PeakStaysWithinTheEnvelopeOnAStar) {
  // The hub has degree 4999: its fan-out -1 row alone is most of the graph's edges.
  const Graph g = star_graph(5000);
  for (bool replace : {false, true}) {
    expect_within_envelope(g, 32, {{4, 8, 2}, replace, 1}, 40);
    expect_within_envelope(g, 32, {{-1, -1}, replace, 1}, 10);
  }
  // A batch holding the hub reaches the bound of its layer.
  NeighborSampler s(cpu(), g, 1, {{-1}, false, 1});
  const std::vector<NodeId> hub{0};
  EXPECT_EQ(s.sample(cpu(), span(hub), 0, 0).blocks[0].num_src(), s.envelope().layers[0].num_src);
}

TEST(SamplerEnvelope, NothingIsAllocatedAfterTheFirstBatch) {
  const Graph g = rmat_graph(11, 3);
  for (bool replace : {false, true}) {
    NeighborSampler s(cpu(), g, 64, {{10, 5, 3}, replace, 1});
    std::vector<std::vector<NodeId>> seeds;
    for (std::uint64_t b = 0; b < 20; ++b) seeds.push_back(seeds_of(64 - b % 5, g.num_rows(), b));
    const MiniBatch& first = s.sample(cpu(), span(seeds[0]), 0, 0);
    std::vector<const void*> pointers;
    for (const Block& b : first.blocks)
      pointers.insert(pointers.end(), {b.csr.indptr, b.csr.indices, b.src_ids.data});
    const std::int64_t before = allocation_count();
    for (std::uint64_t b = 1; b < seeds.size(); ++b) s.sample(cpu(), span(seeds[b]), 0, b);
    const std::int64_t allocated = allocation_count() - before;
    EXPECT_EQ(allocated, 0);
    const MiniBatch& last = s.sample(cpu(), span(seeds.back()), 0, 99);
    EXPECT_EQ(&last, &first);
    std::vector<const void*> now;
    for (const Block& b : last.blocks)
      now.insert(now.end(), {b.csr.indptr, b.csr.indices, b.src_ids.data});
    EXPECT_EQ(now, pointers);
  }
}

TEST(SamplerEnvelope, ProvisionWidensTheMeasuredSizesWithinTheBound) {
  const DegreeStats stats{100, 400, 20};
  const SamplerEnvelope bound = plan_envelope(stats, 10, {5, 3}, false);  // layers as above
  SamplerEnvelope largest = bound;
  largest.layers[1] = {10, 24, 30};
  largest.layers[0] = {30, 120, 90};
  largest.table_slots = 128;
  const SamplerEnvelope e = provision_envelope(largest, bound, 0.25);
  EXPECT_EQ(sizes(e.layers[1]), (Sizes{10, 30, 38}));    // 12.5 -> 13 capped by 10; 30; 37.5
  EXPECT_EQ(sizes(e.layers[0]), (Sizes{38, 150, 100}));  // 37.5; 150; 112.5 capped by 100
  EXPECT_EQ(e.table_slots, 256);                         // 188 keys, capped by the bound's 256
  EXPECT_EQ(e.scratch, 151);
  EXPECT_LT(e.bytes(), bound.bytes());
  // Margin 0 clips to the bound and keeps what was measured.
  EXPECT_EQ(envelope_words(provision_envelope(bound, bound, 0)), envelope_words(bound));
  EXPECT_EQ(envelope_words(envelope_from_words(envelope_words(e))), envelope_words(e));
  SamplerEnvelope raised = largest;
  raise_envelope(raised, e);
  EXPECT_EQ(sizes(raised.layers[0]), (Sizes{38, 150, 100}));
  EXPECT_THROW(provision_envelope(largest, bound, -1), LogicError);
  EXPECT_THROW(provision_envelope(largest, plan_envelope(stats, 10, {5}, false), 0), LogicError);
}

/// Sizes of every block of a batch.
std::vector<Sizes> block_sizes(const MiniBatch& mb) {
  std::vector<Sizes> v;
  for (const Block& b : mb.blocks) v.push_back({b.num_dst(), b.csr.num_edges(), b.num_src()});
  return v;
}

TEST(SamplerEnvelope, AMeasuredCapacityGrowsOnceAndGivesTheSameBlocks) {
  const Graph g = rmat_graph(11, 3);
  for (bool replace : {false, true}) {
    const SamplerConfig c{{10, 5, 3}, replace, 1};
    NeighborSampler bounded(cpu(), g, 64, c);
    // Measure four batches, then provision them with no margin: later batches exceed it.
    std::vector<std::vector<NodeId>> seeds;
    for (std::uint64_t b = 0; b < 30; ++b) seeds.push_back(seeds_of(64, g.num_rows(), b));
    NeighborSampler probe(cpu(), g, 64, c);
    for (std::uint64_t b = 0; b < 4; ++b) probe.sample(cpu(), span(seeds[b]), 0, b);
    const SamplerEnvelope measured = provision_envelope(probe.largest(), probe.bound(), 0);
    for (std::size_t l = 0; l < measured.layers.size(); ++l)
      EXPECT_LT(measured.layers[l].num_edges, bounded.envelope().layers[l].num_edges);
    NeighborSampler tight(cpu(), g, 64, c, &measured);
    EXPECT_EQ(envelope_words(tight.envelope()), envelope_words(measured));
    EXPECT_EQ(envelope_words(tight.bound()), envelope_words(bounded.envelope()));
    EXPECT_LT(tight.envelope_bytes(), bounded.envelope_bytes() / 2);
    for (std::uint64_t b = 0; b < seeds.size(); ++b) {
      const MiniBatch& want = bounded.sample(cpu(), span(seeds[b]), 0, b);
      const MiniBatch& got = tight.sample(cpu(), span(seeds[b]), 0, b);
      ASSERT_EQ(block_sizes(got), block_sizes(want)) << "batch " << b;
      for (std::size_t l = 0; l < got.blocks.size(); ++l) {
        const Block &x = got.blocks[l], &y = want.blocks[l];
        ASSERT_TRUE(std::equal(x.csr.indptr, x.csr.indptr + x.num_dst() + 1, y.csr.indptr));
        ASSERT_TRUE(std::equal(x.csr.indices, x.csr.indices + x.csr.num_edges(), y.csr.indices));
        ASSERT_TRUE(std::equal(x.src_ids.data, x.src_ids.data + x.num_src(), y.src_ids.data));
      }
      ASSERT_LE(tight.peak_bytes(), tight.envelope_bytes());
    }
    // Grown, within the bound, and a quarter past what the batches needed: the first four
    // batches fit (no growth then), the next ones grew a few buffers once.
    EXPECT_GT(tight.growths(), 0);
    EXPECT_LE(tight.envelope_bytes(), bounded.envelope_bytes());
    EXPECT_EQ(envelope_words(tight.largest()), envelope_words(bounded.largest()));
    const std::int64_t grown = tight.growths();
    const std::int64_t before = allocation_count();
    for (std::uint64_t b = 0; b < seeds.size(); ++b) tight.sample(cpu(), span(seeds[b]), 0, b);
    EXPECT_EQ(tight.growths(), grown);  // the same batches again: nothing grows
    EXPECT_EQ(allocation_count(), before);
  }
}

TEST(SamplerEnvelope, TheDevicePipelineKeepsTheBound) {
  const Graph g = rmat_graph(8, 3);
  const SamplerConfig c{{4, 2}, false, 1};
  NeighborSampler probe(cpu(), g, 16, c);
  const std::vector<NodeId> seeds = seeds_of(16, g.num_rows(), 0);
  probe.sample(cpu(), span(seeds), 0, 0);
  const SamplerEnvelope measured = provision_envelope(probe.largest(), probe.bound(), 0);
  NeighborSampler tight(cpu(), g, 16, c, &measured);
  EXPECT_THROW(detail::use_device_pipeline_on_host(cpu(), tight), LogicError);
}

TEST(SamplerEnvelope, TheCounterSeesBufferAllocations) {
  const std::int64_t before = allocation_count();
  const kernels::Tensor<float> t(cpu(), Device::Cpu, 1000);
  EXPECT_GT(allocation_count(), before);
}

}  // namespace
}  // namespace halo::sampler::test
