// Tests of NeighborSampler's device pipeline (sizes kept on the device, launches over the
// envelope's bounds, seed checks by bodies, one read-back per batch): its blocks equal the CPU
// sampler's exactly (same keyed draws, order-independent relabelling), nothing is allocated
// after the first batch, and bad seeds throw the CPU's messages. Each check runs twice: on a
// CUDA device (NeighborSamplerCuda, skipped without one) and emulated on the host
// (NeighborSamplerDevicePipeline, detail::use_device_pipeline_on_host), which runs the same
// bodies and steps with host memory, so CI without a GPU tests the pipeline's logic.

#include <algorithm>
#include <cstdint>
#include <gtest/gtest.h>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include <halo/kernels/buffer.hpp>
#include <halo/kernels/error.hpp>
#include <halo/kernels/tensor.hpp>
#include <halo/sampler/neighbor_sampler.hpp>

#include "sampler/allocation_counter.hpp"
#include "sampler/sampler_test_util.hpp"

namespace halo::sampler::test {
namespace {

#define HALO_SKIP_WITHOUT_CUDA()                                                    \
  do {                                                                              \
    if (kernels::cuda_device_count() == 0) GTEST_SKIP() << "no usable CUDA device"; \
  } while (0)

SamplerConfig config(std::vector<int> fanouts, bool replace = false, std::uint64_t seed = 11) {
  return {std::move(fanouts), replace, seed};
}

const Resources& gpu() {
  static const Resources res(Device::Cuda);
  return res;
}

/// A sampler running the device pipeline on res's device (host emulation for a CPU res).
std::unique_ptr<NeighborSampler> device_sampler(const Resources& res, const Graph& g,
                                                std::int64_t batch_size, const SamplerConfig& c) {
  auto s = std::make_unique<NeighborSampler>(res, g, batch_size, c);
  if (res.device() == Device::Cpu) detail::use_device_pipeline_on_host(res, *s);
  return s;
}

/// The host syncs a batch of the device pipeline takes on res's device.
std::int64_t expected_syncs(const Resources& res) { return res.device() == Device::Cuda ? 1 : 0; }

/// Elements of res's device memory, on the host.
template <class T>
std::vector<T> download(const Resources& res, const T* data, std::int64_t n) {
  std::vector<T> out(static_cast<std::size_t>(n));
  kernels::copy_bytes(res, out.data(), Device::Cpu, data, res.device(),
                      static_cast<std::size_t>(n) * sizeof(T));
  return out;
}

/// copy_blocks of a batch whose views are res's device memory.
std::vector<BlockCopy> download_blocks(const Resources& res, const MiniBatch& mb) {
  std::vector<BlockCopy> out;
  for (const Block& b : mb.blocks) {
    const auto& c = b.csr;
    EXPECT_EQ(c.values, nullptr);
    EXPECT_EQ(c.num_entries, download(res, c.indptr + c.num_rows, 1)[0]);
    out.push_back({download(res, c.indptr, c.num_rows + 1), download(res, c.indices, c.num_entries),
                   download(res, b.src_ids.data, b.src_ids.size)});
  }
  return out;
}

/// Samples `num_batches` batches on the CPU and with the device pipeline; every block must match.
void expect_same_as_cpu(const Resources& res, const Graph& g, std::int64_t batch_size,
                        const SamplerConfig& c, int num_batches) {
  NeighborSampler on_cpu(cpu(), g, batch_size, c);
  const auto dev = device_sampler(res, g, batch_size, c);
  for (int b = 0; b < num_batches; ++b) {
    SCOPED_TRACE("batch " + std::to_string(b));
    // Sizes vary from batch to batch, so the bounds differ from the actual sizes.
    const std::int64_t n = std::min<std::int64_t>(batch_size - std::int64_t{3} * b, g.num_rows());
    const std::vector<NodeId> seeds = seeds_of(std::max<std::int64_t>(n, 1), g.num_rows(), 100 + b);
    const auto expected = copy_blocks(on_cpu.sample(cpu(), span(seeds), 2, b));
    const MiniBatch& mb = dev->sample(res, span(seeds), 2, b);
    EXPECT_EQ(dev->host_syncs_last_batch(), expected_syncs(res));
    EXPECT_EQ(download(res, mb.seeds.data, mb.seeds.size), seeds);
    EXPECT_EQ(mb.input_nodes.data, mb.blocks.front().src_ids.data);
    EXPECT_EQ(download_blocks(res, mb), expected);
  }
  EXPECT_GT(dev->peak_bytes(), 0u);
  EXPECT_LE(dev->peak_bytes(), dev->envelope_bytes());
}

const Graph& rmat() {
  static const Graph g = rmat_graph();
  return g;
}

void same_blocks_without_replacement(const Resources& res) {
  expect_same_as_cpu(res, rmat(), 64, config({6, 4, 3}), 4);
}

void same_blocks_with_replacement(const Resources& res) {
  expect_same_as_cpu(res, rmat(), 50, config({5, 3}, /*replace=*/true), 4);
}

void same_blocks_with_fanout_minus_one(const Resources& res) {
  for (bool replace : {false, true}) {
    SCOPED_TRACE(replace);
    expect_same_as_cpu(res, rmat(), 16, config({-1, -1}, replace), 3);
    expect_same_as_cpu(res, rmat(), 16, config({-1, 4}, replace), 3);
  }
}

void same_blocks_on_a_hub_star(const Resources& res) {
  const Graph g = star_graph(3000);  // hub of degree 2999: many threads insert the same id
  for (bool replace : {false, true}) {
    SCOPED_TRACE(replace);
    expect_same_as_cpu(res, g, 40, config({-1, 5}, replace), 3);
    expect_same_as_cpu(res, g, 40, config({20, 30}, replace), 3);
  }
}

void same_blocks_on_a_larger_graph(const Resources& res) {
  // Enough work that every launch spans many thread blocks and the scans many tiles.
  const Graph g = rmat_graph(15, 7);
  expect_same_as_cpu(res, g, 512, config({15, 10, 5}), 3);
  expect_same_as_cpu(res, g, 512, config({15, 10, 5}, /*replace=*/true), 2);
}

void documented_example(const Resources& res) {
  const Graph g = graph_from_rows({{1, 2}, {0, 2, 3}, {0, 1}, {1, 4, 5}, {3}, {3}});
  const auto s = device_sampler(res, g, 2, config({-1, -1}));
  const std::vector<NodeId> seeds{3, 0};
  const auto blocks = download_blocks(res, s->sample(res, span(seeds), 0, 0));
  ASSERT_EQ(blocks.size(), 2u);
  EXPECT_EQ(blocks[1].indptr, (std::vector<std::int64_t>{0, 3, 5}));
  EXPECT_EQ(blocks[1].indices, (std::vector<NodeId>{2, 3, 4, 2, 5}));
  EXPECT_EQ(blocks[1].src_ids, (std::vector<NodeId>{3, 0, 1, 4, 5, 2}));
  EXPECT_EQ(blocks[0].indptr, (std::vector<std::int64_t>{0, 3, 5, 8, 9, 10, 12}));
  EXPECT_EQ(blocks[0].indices, (std::vector<NodeId>{2, 3, 4, 2, 5, 1, 5, 0, 0, 0, 1, 2}));
  EXPECT_EQ(blocks[0].src_ids, (std::vector<NodeId>{3, 0, 1, 4, 5, 2}));
}

void empty_batch_gives_empty_blocks(const Resources& res) {
  const auto s = device_sampler(res, rmat(), 8, config({4, 4}));
  const MiniBatch& mb = s->sample(res, {}, 0, 0);
  EXPECT_EQ(s->host_syncs_last_batch(), expected_syncs(res));
  for (const Block& b : mb.blocks) {
    EXPECT_EQ(b.num_dst(), 0);
    EXPECT_EQ(b.num_src(), 0);
    EXPECT_EQ(b.csr.num_entries, 0);
  }
  // and the next batch is unaffected
  const std::vector<NodeId> seeds{1, 5, 9};
  NeighborSampler on_cpu(cpu(), rmat(), 8, config({4, 4}));
  EXPECT_EQ(download_blocks(res, s->sample(res, span(seeds), 0, 1)),
            copy_blocks(on_cpu.sample(cpu(), span(seeds), 0, 1)));
}

void device_seeds_give_the_same_blocks(const Resources& res) {
  const SamplerConfig c = config({5, 3});
  NeighborSampler on_cpu(cpu(), rmat(), 64, c);
  const auto on_dev = device_sampler(res, rmat(), 64, c);
  const std::vector<NodeId> seeds = seeds_of(64, rmat().num_rows(), 21);
  const kernels::Tensor<NodeId> device_seeds = kernels::Tensor<NodeId>::from_host(res, seeds);
  const auto expected = copy_blocks(on_cpu.sample(cpu(), span(seeds), 1, 1));
  const MiniBatch& mb = on_dev->sample(res, device_seeds.span(), 1, 1, Device::Cuda);
  EXPECT_EQ(download_blocks(res, mb), expected);
  // The batch's own seed view (the same buffer), then a part of it (overlapping that buffer).
  EXPECT_EQ(download_blocks(res, on_dev->sample(res, mb.seeds, 1, 1, Device::Cuda)), expected);
  const std::vector<NodeId> tail(seeds.begin() + 10, seeds.end());
  const kernels::Span<const NodeId> tail_view{mb.seeds.data + 10, mb.seeds.size - 10};
  EXPECT_EQ(download_blocks(res, on_dev->sample(res, tail_view, 1, 2, Device::Cuda)),
            copy_blocks(on_cpu.sample(cpu(), span(tail), 1, 2)));
  // A previous batch's input nodes (another of the sampler's buffers) as the next seeds.
  const MiniBatch& first = on_dev->sample(res, span(seeds), 1, 3);
  ASSERT_GE(first.input_nodes.size, 64);
  const kernels::Span<const NodeId> inputs{first.input_nodes.data + first.input_nodes.size - 64,
                                           64};
  const std::vector<NodeId> next = download(res, inputs.data, inputs.size);
  EXPECT_EQ(download_blocks(res, on_dev->sample(res, inputs, 1, 4, Device::Cuda)),
            copy_blocks(on_cpu.sample(cpu(), span(next), 1, 4)));
}

void nothing_is_allocated_after_the_first_batch(const Resources& res) {
  const Graph g = rmat_graph(11, 3);
  for (bool replace : {false, true}) {
    const auto s = device_sampler(res, g, 64, {{10, 5, 3}, replace, 1});
    std::vector<std::vector<NodeId>> seeds;
    for (std::uint64_t b = 0; b < 20; ++b) seeds.push_back(seeds_of(64 - b % 5, g.num_rows(), b));
    const kernels::Tensor<NodeId> device_seeds = kernels::Tensor<NodeId>::from_host(res, seeds[3]);
    const MiniBatch& first = s->sample(res, span(seeds[0]), 0, 0);
    s->sample(res, device_seeds.span(), 0, 0, Device::Cuda);
    std::vector<const void*> pointers;
    for (const Block& b : first.blocks)
      pointers.insert(pointers.end(), {b.csr.indptr, b.csr.indices, b.src_ids.data});
    const kernels::DeviceMemoryStats device_before = res.device_memory();
    const std::int64_t host_before = allocation_count();
    std::int64_t most_syncs = 0;  // no gtest macro in the counted loop: they may allocate
    for (std::uint64_t b = 1; b < seeds.size(); ++b) {
      s->sample(res, span(seeds[b]), 0, b);
      most_syncs = std::max(most_syncs, s->host_syncs_last_batch());
    }
    const MiniBatch& last = s->sample(res, device_seeds.span(), 0, 99, Device::Cuda);
    EXPECT_EQ(allocation_count() - host_before, 0);
    EXPECT_EQ(res.device_memory().used_bytes, device_before.used_bytes);
    EXPECT_EQ(most_syncs, expected_syncs(res));
    EXPECT_EQ(&last, &first);
    std::vector<const void*> now;
    for (const Block& b : last.blocks)
      now.insert(now.end(), {b.csr.indptr, b.csr.indices, b.src_ids.data});
    EXPECT_EQ(now, pointers);
  }
}

void rejects_bad_seeds_like_the_cpu(const Resources& res) {
  const Graph g = star_graph(10);
  const auto s = device_sampler(res, g, 4, config({-1, 2}));
  NeighborSampler on_cpu(cpu(), g, 4, config({-1, 2}));
  const std::vector<NodeId> too_many{1, 2, 3, 4, 5}, out_of_range{1, 10}, negative{2, -1, 3},
      repeated{0, 2, 0}, both{1, 1, 12};
  auto message = [](NeighborSampler& sampler, const Resources& r,
                    const std::vector<NodeId>& seeds) -> std::string {
    try {
      sampler.sample(r, span(seeds), 0, 0);
    } catch (const LogicError& e) {
      // The message, without the failed expression and file:line that follow it.
      const std::string what = e.what();
      const std::size_t begin = what.find("NeighborSampler::sample");
      return what.substr(begin, what.find(" (", begin) - begin);
    }
    return "no error";
  };
  EXPECT_THROW(s->sample(res, span(too_many), 0, 0), LogicError);
  for (const auto* bad : {&out_of_range, &negative, &repeated, &both}) {
    const std::string expected = message(on_cpu, cpu(), *bad);
    EXPECT_NE(expected, "no error");
    EXPECT_EQ(message(*s, res, *bad), expected);
  }
  EXPECT_NE(message(*s, res, repeated).find("seed 0 is repeated"), std::string::npos);
  EXPECT_NE(message(*s, res, both).find("seed 12 out of range"), std::string::npos);
  // A rejected batch leaves the sampler as good as new, and equal to the CPU. (Repeating the
  // hub with fan-out -1 would exceed the edge bound: the gate stops the hops.)
  const std::vector<NodeId> seeds{0, 3, 7};
  EXPECT_EQ(download_blocks(res, s->sample(res, span(seeds), 0, 0)),
            copy_blocks(on_cpu.sample(cpu(), span(seeds), 0, 0)));
}

#define HALO_DEVICE_PIPELINE_TEST(Name, function) \
  TEST(NeighborSamplerCuda, Name) {               \
    HALO_SKIP_WITHOUT_CUDA();                     \
    function(gpu());                              \
  }                                               \
  TEST(NeighborSamplerDevicePipeline, Name) { function(cpu()); }

HALO_DEVICE_PIPELINE_TEST(SameBlocksAsTheCpuWithoutReplacement, same_blocks_without_replacement)
HALO_DEVICE_PIPELINE_TEST(SameBlocksAsTheCpuWithReplacement, same_blocks_with_replacement)
HALO_DEVICE_PIPELINE_TEST(SameBlocksAsTheCpuWithFanoutMinusOne, same_blocks_with_fanout_minus_one)
HALO_DEVICE_PIPELINE_TEST(SameBlocksAsTheCpuOnAHubStar, same_blocks_on_a_hub_star)
HALO_DEVICE_PIPELINE_TEST(SameBlocksAsTheCpuOnALargerGraph, same_blocks_on_a_larger_graph)
HALO_DEVICE_PIPELINE_TEST(DocumentedExample, documented_example)
HALO_DEVICE_PIPELINE_TEST(EmptyBatchGivesEmptyBlocks, empty_batch_gives_empty_blocks)
HALO_DEVICE_PIPELINE_TEST(DeviceSeedsGiveTheSameBlocks, device_seeds_give_the_same_blocks)
HALO_DEVICE_PIPELINE_TEST(NothingIsAllocatedAfterTheFirstBatch,
                          nothing_is_allocated_after_the_first_batch)
HALO_DEVICE_PIPELINE_TEST(RejectsBadSeedsLikeTheCpu, rejects_bad_seeds_like_the_cpu)

TEST(NeighborSamplerCuda, RejectsAnotherResources) {
  HALO_SKIP_WITHOUT_CUDA();
  NeighborSampler s(gpu(), rmat(), 8, config({2}));
  EXPECT_EQ(s.device(), Device::Cuda);
  const Resources other(Device::Cuda);
  const std::vector<NodeId> seeds{1, 2};
  EXPECT_THROW(s.sample(other, span(seeds), 0, 0), LogicError);
  EXPECT_THROW(s.sample(cpu(), span(seeds), 0, 0), LogicError);
}

// A CPU sampler has no use for device seeds, and never waits for a device.
TEST(NeighborSampler, CpuSamplerRejectsDeviceSeeds) {
  NeighborSampler s(cpu(), rmat(), 8, config({2}));
  const std::vector<NodeId> seeds{1, 2};
  EXPECT_THROW(s.sample(cpu(), span(seeds), 0, 0, Device::Cuda), LogicError);
  EXPECT_EQ(s.device(), Device::Cpu);
  s.sample(cpu(), span(seeds), 0, 0);
  EXPECT_EQ(s.host_syncs_last_batch(), 0);
}

}  // namespace
}  // namespace halo::sampler::test
