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

TEST(SamplerEnvelope, TheCounterSeesBufferAllocations) {
  const std::int64_t before = allocation_count();
  const kernels::Tensor<float> t(cpu(), Device::Cpu, 1000);
  EXPECT_GT(allocation_count(), before);
}

}  // namespace
}  // namespace halo::sampler::test
