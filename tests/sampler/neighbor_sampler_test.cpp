// Tests of NeighborSampler: block structure, counts, relabelling, determinism, input errors.

#include <cstdint>
#include <filesystem>
#include <fstream>
#include <gtest/gtest.h>
#include <utility>
#include <vector>

#include <halo/kernels/buffer.hpp>
#include <halo/kernels/error.hpp>
#include <halo/sampler/neighbor_sampler.hpp>

#include "sampler/sampler_test_util.hpp"
#include "support/testing.hpp"

namespace halo::sampler::test {
namespace {

SamplerConfig config(std::vector<int> fanouts, bool replace = false, std::uint64_t seed = 11) {
  return {std::move(fanouts), replace, seed};
}

const Graph& rmat() {
  static const Graph g = rmat_graph();
  return g;
}

TEST(NeighborSampler, BlocksAreValidWithoutReplacement) {
  const SamplerConfig c = config({6, 4, 3});
  NeighborSampler s(cpu(), rmat(), 64, c);
  for (std::uint64_t batch = 0; batch < 4; ++batch) {
    const std::vector<NodeId> seeds = seeds_of(64 - 7 * batch, rmat().num_rows(), batch);
    SCOPED_TRACE(batch);
    check_batch(rmat(), s.sample(cpu(), span(seeds), 0, batch), seeds, c);
  }
}

TEST(NeighborSampler, BlocksAreValidWithReplacement) {
  const SamplerConfig c = config({5, 3}, /*replace=*/true);
  NeighborSampler s(cpu(), rmat(), 50, c);
  const std::vector<NodeId> seeds = seeds_of(50, rmat().num_rows(), 1);
  check_batch(rmat(), s.sample(cpu(), span(seeds), 2, 3), seeds, c);
}

TEST(NeighborSampler, FanoutMinusOneTakesEveryNeighborInRowOrder) {
  for (bool replace : {false, true}) {
    const SamplerConfig c = config({-1, -1}, replace);
    NeighborSampler s(cpu(), rmat(), 16, c);
    const std::vector<NodeId> seeds = seeds_of(16, rmat().num_rows(), 4);
    const MiniBatch& mb = s.sample(cpu(), span(seeds), 0, 0);
    check_batch(rmat(), mb, seeds, c);
    const Block& b = mb.blocks.back();
    for (std::int64_t i = 0; i < b.num_dst(); ++i) {
      const NodeId v = seeds[static_cast<std::size_t>(i)];
      for (std::int64_t e = b.csr.indptr[i], k = 0; e < b.csr.indptr[i + 1]; ++e, ++k)
        EXPECT_EQ(b.src_ids[b.csr.indices[e]], rmat().indices(rmat().indptr(v) + k));
    }
  }
}

TEST(NeighborSampler, FanoutAtLeastTheDegreeTakesTheWholeRow) {
  // Node 0 has degree 3 < fanout 5; node 1 has degree 5 == fanout.
  const Graph g = graph_from_rows({{2, 3, 4}, {2, 3, 4, 5, 6}, {}, {}, {}, {}, {}});
  const SamplerConfig c = config({5});
  NeighborSampler s(cpu(), g, 2, c);
  const std::vector<NodeId> seeds{0, 1};
  const MiniBatch& mb = s.sample(cpu(), span(seeds), 0, 0);
  check_batch(g, mb, seeds, c);
  EXPECT_EQ(to_vector(mb.input_nodes), (std::vector<NodeId>{0, 1, 2, 3, 4, 5, 6}));
}

// The example of docs/sampler.md: fan-out -1 makes the blocks independent of the draws.
TEST(NeighborSampler, DocumentedExample) {
  const Graph g = graph_from_rows({{1, 2}, {0, 2, 3}, {0, 1}, {1, 4, 5}, {3}, {3}});
  NeighborSampler s(cpu(), g, 2, config({-1, -1}));
  const std::vector<NodeId> seeds{3, 0};
  const auto blocks = copy_blocks(s.sample(cpu(), span(seeds), 0, 0));
  ASSERT_EQ(blocks.size(), 2u);
  EXPECT_EQ(blocks[1].indptr, (std::vector<std::int64_t>{0, 3, 5}));
  EXPECT_EQ(blocks[1].indices, (std::vector<NodeId>{2, 3, 4, 2, 5}));
  EXPECT_EQ(blocks[1].src_ids, (std::vector<NodeId>{3, 0, 1, 4, 5, 2}));
  EXPECT_EQ(blocks[0].indptr, (std::vector<std::int64_t>{0, 3, 5, 8, 9, 10, 12}));
  EXPECT_EQ(blocks[0].indices, (std::vector<NodeId>{2, 3, 4, 2, 5, 1, 5, 0, 0, 0, 1, 2}));
  EXPECT_EQ(blocks[0].src_ids, (std::vector<NodeId>{3, 0, 1, 4, 5, 2}));
}

TEST(NeighborSampler, IsolatedNodesGiveEmptyRows) {
  // Nodes 2 and 3 are isolated; node 3 is also a seed.
  const Graph g = graph_from_rows({{1}, {0}, {}, {}});
  for (bool replace : {false, true}) {
    const SamplerConfig c = config({3, 2}, replace);
    NeighborSampler s(cpu(), g, 3, c);
    const std::vector<NodeId> seeds{3, 2, 1};
    const MiniBatch& mb = s.sample(cpu(), span(seeds), 0, 0);
    check_batch(g, mb, seeds, c);
    const Block& last = mb.blocks.back();
    EXPECT_EQ(last.csr.indptr[1], 0);
    EXPECT_EQ(last.csr.indptr[2], 0);
  }
}

TEST(NeighborSampler, EmptyBatchGivesEmptyBlocks) {
  NeighborSampler s(cpu(), rmat(), 8, config({4, 4}));
  const MiniBatch& mb = s.sample(cpu(), {}, 0, 0);
  for (const Block& b : mb.blocks) {
    EXPECT_EQ(b.num_dst(), 0);
    EXPECT_EQ(b.num_src(), 0);
    EXPECT_EQ(b.csr.num_edges(), 0);
  }
}

TEST(NeighborSampler, SameKeysGiveTheSameBlocksForAnyThreadCount) {
  for (bool replace : {false, true}) {
    const SamplerConfig c = config({7, 5, 3}, replace);
    const std::vector<NodeId> seeds = seeds_of(100, rmat().num_rows(), 9);
    const Resources one(Device::Cpu, 1), two(Device::Cpu, 2);
    NeighborSampler a(one, rmat(), 100, c), b(two, rmat(), 100, c);
    const auto expected = copy_blocks(a.sample(one, span(seeds), 3, 4));
    EXPECT_EQ(copy_blocks(b.sample(two, span(seeds), 3, 4)), expected);
    EXPECT_EQ(copy_blocks(b.sample(cpu(), span(seeds), 3, 4)), expected);
    // Other batches in between change nothing.
    b.sample(two, span(seeds), 0, 0);
    EXPECT_EQ(copy_blocks(b.sample(two, span(seeds), 3, 4)), expected);
  }
}

// A graph whose column ids are a file mapping (a store larger than memory) is read with pread
// (FileNeighbors): the blocks equal those of the graph in memory, with and without replacement,
// for rows read whole and for a hub whose row (20,000 entries, past kWholeRowBytes) is read at
// its drawn positions. A file cut short under the sampler is an IoError naming it.
TEST(NeighborSampler, AGraphInAFileGivesTheBlocksOfTheGraphInMemory) {
  const halo::testing::TempDir tmp;
  const Graph star = star_graph(20001);
  ASSERT_GT(star.indptr.data()[1] * static_cast<std::int64_t>(sizeof(NodeId)),
            FileNeighbors::kWholeRowBytes);
  int which = 0;
  for (const Graph* g : {&rmat(), &star}) {
    const std::filesystem::path file = tmp.path() / ("indices-" + std::to_string(which++));
    std::ofstream(file, std::ios::binary)
        .write(reinterpret_cast<const char*>(g->indices.data()),
               static_cast<std::streamsize>(g->indices.bytes()));
    Graph mapped;
    mapped.indptr = g->indptr.clone(cpu());
    mapped.indices = kernels::Tensor<NodeId>(
        kernels::Buffer::map_file(file.string(), g->indices.bytes()), g->num_edges());
    mapped.num_cols = g->num_cols;
    for (const bool replace : {false, true}) {
      SCOPED_TRACE(std::to_string(which) + (replace ? " with replacement" : " without"));
      const SamplerConfig c = config({7, 5, 3}, replace);
      const std::int64_t n = g->num_rows(), batch = std::min<std::int64_t>(200, n);
      std::vector<NodeId> seeds = seeds_of(batch, n, 3);
      if (g == &star) seeds[0] = 0;  // the hub
      NeighborSampler memory(cpu(), *g, batch, c), file_backed(cpu(), mapped, batch, c);
      for (std::uint64_t b = 0; b < 3; ++b)
        EXPECT_EQ(copy_blocks(file_backed.sample(cpu(), span(seeds), 1, b)),
                  copy_blocks(memory.sample(cpu(), span(seeds), 1, b)))
            << "batch " << b;
    }
    if (g == &star) {
      NeighborSampler file_backed(cpu(), mapped, 10, config({5}));
      std::filesystem::resize_file(file, 16);
      const std::vector<NodeId> hub = {0};
      try {
        file_backed.sample(cpu(), span(hub), 0, 0);
        ADD_FAILURE() << "a short file read without an error";
      } catch (const IoError& e) {
        EXPECT_NE(std::string(e.what()).find(file.string()), std::string::npos) << e.what();
      }
    }
  }
}

TEST(NeighborSampler, OtherEpochBatchOrSeedGiveOtherSamples) {
  const std::vector<NodeId> seeds = seeds_of(100, rmat().num_rows(), 9);
  NeighborSampler s(cpu(), rmat(), 100, config({5, 3}));
  NeighborSampler other_seed(cpu(), rmat(), 100, config({5, 3}, false, /*seed=*/12));
  const auto base = copy_blocks(s.sample(cpu(), span(seeds), 1, 1));
  EXPECT_NE(copy_blocks(s.sample(cpu(), span(seeds), 2, 1)), base);
  EXPECT_NE(copy_blocks(s.sample(cpu(), span(seeds), 1, 2)), base);
  EXPECT_NE(copy_blocks(other_seed.sample(cpu(), span(seeds), 1, 1)), base);
}

TEST(NeighborSampler, RejectsBadInput) {
  const Graph g = star_graph(10);
  EXPECT_THROW(NeighborSampler(cpu(), g, 0, config({2})), LogicError);
  EXPECT_THROW(NeighborSampler(cpu(), g, 4, config({})), LogicError);
  EXPECT_THROW(NeighborSampler(cpu(), g, 4, config({2, -2})), LogicError);
  Graph not_square = graph_from_rows({{1}, {0}});
  not_square.num_cols = 3;
  EXPECT_THROW(NeighborSampler(cpu(), not_square, 4, config({2})), LogicError);
  const Graph bad_id = graph_from_rows({{1}, {2}});
  EXPECT_THROW(NeighborSampler(cpu(), bad_id, 4, config({2})), LogicError);

  NeighborSampler s(cpu(), g, 4, config({2, 2}));
  const std::vector<NodeId> too_many{1, 2, 3, 4, 5}, out_of_range{1, 10}, repeated{1, 2, 1};
  EXPECT_THROW(s.sample(cpu(), span(too_many), 0, 0), LogicError);
  EXPECT_THROW(s.sample(cpu(), span(out_of_range), 0, 0), LogicError);
  EXPECT_THROW(s.sample(cpu(), span(repeated), 0, 0), LogicError);
  // A rejected batch leaves the sampler as good as new.
  const std::vector<NodeId> seeds{0, 3, 7};
  NeighborSampler fresh(cpu(), g, 4, config({2, 2}));
  EXPECT_EQ(copy_blocks(s.sample(cpu(), span(seeds), 0, 0)),
            copy_blocks(fresh.sample(cpu(), span(seeds), 0, 0)));
}

}  // namespace
}  // namespace halo::sampler::test
