#include <algorithm>
#include <cstring>
#include <limits>
#include <string>
#include <utility>

#include <halo/kernels/error.hpp>
#include <halo/kernels/exec.hpp>
#include <halo/kernels/rng.hpp>
#include <halo/sampler/envelope.hpp>
#include <halo/sampler/neighbor_sampler.hpp>
#include <halo/sampler/relabel_body.hpp>
#include <halo/sampler/sample_body.hpp>
#include <halo/sampler/scan_body.hpp>

namespace halo::sampler {
namespace {

using kernels::NodeId;
using kernels::Span;
namespace rng = kernels::rng;

/// Below this many indices a loop runs on the calling thread: a parallel region costs
/// microseconds, far more on an oversubscribed machine, than a few thousand ids take.
constexpr std::int64_t kMinParallel = 4096;

/// kernels::launch, except that short CPU loops skip the parallel region.
template <class Body>
void run(const kernels::Resources& res, std::int64_t n, const Body& body) {
  if (res.device() == kernels::Device::Cpu && n < kMinParallel) {
    for (std::int64_t i = 0; i < n; ++i) body(i);
    return;
  }
  kernels::launch(res, n, body);
}

/// a[0, n) becomes its inclusive prefix sums; block_sums needs ceil(n / kScanBlock) entries.
/// (Each block is kScanBlock entries of work, so blocks go parallel from two on.)
void inclusive_scan(const kernels::Resources& res, std::int64_t* a, std::int64_t n,
                    std::int64_t* block_sums) {
  const std::int64_t num_blocks = (n + detail::kScanBlock - 1) / detail::kScanBlock;
  kernels::launch(res, num_blocks, detail::BlockSumBody{a, n, block_sums});
  std::int64_t sum = 0;
  for (std::int64_t b = 0; b < num_blocks; ++b) sum += std::exchange(block_sums[b], sum);
  kernels::launch(res, num_blocks, detail::BlockScanBody{a, n, block_sums});
}

void check_graph(const datasets::Graph& g) {
  HALO_EXPECTS(g.device() == kernels::Device::Cpu,
               "NeighborSampler: the graph must be on the host");
  const std::int64_t n = g.num_rows();
  HALO_EXPECTS(g.num_cols == n, "NeighborSampler: the graph must be square, got " +
                                    std::to_string(n) + " x " + std::to_string(g.num_cols));
  HALO_EXPECTS(n <= std::numeric_limits<NodeId>::max(), "NeighborSampler: too many nodes");
  HALO_EXPECTS(n == 0 || (g.indptr(0) == 0 && g.indptr(n) == g.num_edges()),
               "NeighborSampler: indptr does not span the indices");
  for (std::int64_t v = 0; v < n; ++v)
    HALO_EXPECTS(g.indptr(v) <= g.indptr(v + 1),
                 "NeighborSampler: indptr decreases at row " + std::to_string(v));
  for (std::int64_t e = 0; e < g.num_edges(); ++e)
    HALO_EXPECTS(g.indices(e) >= 0 && g.indices(e) < n,
                 "NeighborSampler: neighbour id out of range at entry " + std::to_string(e));
}

}  // namespace

std::uint64_t hop_key(std::uint64_t seed, std::uint64_t epoch, std::uint64_t batch,
                      std::size_t hop) {
  return rng::key(rng::key(seed, rng::stream_id(rng::kStreamSample, epoch, batch)), hop);
}

NeighborSampler::NeighborSampler(const kernels::Resources& res, const datasets::Graph& graph,
                                 std::int64_t batch_size, SamplerConfig config)
    : m_config(std::move(config)) {
  HALO_EXPECTS(res.device() == kernels::Device::Cpu,
               "NeighborSampler: only the CPU backend exists so far");
  check_graph(graph);
  m_graph = graph.view();
  const DegreeStats stats = degree_stats(m_graph);
  HALO_EXPECTS(stats.max_degree <= std::numeric_limits<NodeId>::max(),
               "NeighborSampler: a row has 2^31 or more entries");
  m_envelope = plan_envelope(stats, batch_size, m_config.fanouts, m_config.replace);
  m_used = m_envelope;

  const auto host = kernels::Device::Cpu;
  m_seeds = kernels::Tensor<NodeId>(res, host, batch_size);
  for (const LayerEnvelope& l : m_envelope.layers) {
    // Positions (destinations + edges) are stored as NodeId (see detail::FirstOccurrenceBody).
    HALO_EXPECTS(l.num_dst + l.num_edges <= std::numeric_limits<NodeId>::max(),
                 "NeighborSampler: a layer may sample 2^31 or more edges; use smaller batches");
    m_layers.push_back({kernels::Tensor<std::int64_t>(res, host, l.num_dst + 1),
                        kernels::Tensor<NodeId>(res, host, l.num_edges),
                        kernels::Tensor<NodeId>(res, host, l.num_src)});
  }
  m_table = kernels::Tensor<std::uint64_t>(res, host, m_envelope.table_slots);
  std::fill_n(m_table.data(), m_table.numel(), detail::HashTable::kEmpty);
  m_scratch = kernels::Tensor<std::int64_t>(res, host, m_envelope.scratch);
  m_scan = kernels::Tensor<std::int64_t>(res, host, m_envelope.scan_blocks);
  m_batch.blocks.resize(m_layers.size());
}

const MiniBatch& NeighborSampler::sample(const kernels::Resources& res, Span<const NodeId> seeds,
                                         std::uint64_t epoch, std::uint64_t batch) {
  HALO_EXPECTS(res.device() == kernels::Device::Cpu,
               "NeighborSampler::sample: only the CPU backend exists so far");
  HALO_EXPECTS(seeds.size >= 0 && seeds.size <= m_envelope.batch_size,
               "NeighborSampler::sample: " + std::to_string(seeds.size) +
                   " seeds; the batch size is " + std::to_string(m_envelope.batch_size));
  for (std::int64_t i = 0; i < seeds.size; ++i)
    HALO_EXPECTS(seeds[i] >= 0 && seeds[i] < m_graph.num_rows,
                 "NeighborSampler::sample: seed " + std::to_string(seeds[i]) + " out of range");
  // memmove: the seeds may be views of this sampler's own buffers (a previous batch's ids).
  if (seeds.size > 0)
    std::memmove(m_seeds.data(), seeds.data, static_cast<std::size_t>(seeds.size) * sizeof(NodeId));

  Span<const NodeId> dst{m_seeds.data(), seeds.size};
  m_used.table_slots = 0;
  for (std::size_t h = 0; h < m_layers.size(); ++h) {
    const std::size_t l = m_layers.size() - 1 - h;
    sample_hop(res, dst, hop_key(m_config.seed, epoch, batch, h), l, /*check_distinct=*/h == 0);
    dst = m_batch.blocks[l].src_ids;
  }
  m_batch.seeds = {m_seeds.data(), seeds.size};
  m_batch.input_nodes = m_batch.blocks.front().src_ids;

  m_used.batch_size = seeds.size;
  detail::size_scratch(m_used);  // m_used.table_slots: set by the hops
  m_peak = std::max(m_peak, m_used.bytes());
  HALO_ASSERT(m_peak <= envelope_bytes(), 1);
  return m_batch;
}

void NeighborSampler::sample_hop(const kernels::Resources& res, Span<const NodeId> dst,
                                 std::uint64_t hop_key, std::size_t l, bool check_distinct) {
  const LayerEnvelope& bound = m_envelope.layers[l];
  LayerBuffers& buf = m_layers[l];
  const int fanout = m_config.fanouts[l];
  const bool replace = m_config.replace;
  const std::int64_t num_dst = dst.size;
  HALO_ASSERT(num_dst <= bound.num_dst, 1);

  // count -> scan -> fill
  std::int64_t* indptr = buf.indptr.data();
  indptr[0] = 0;
  run(res, num_dst, detail::CountBody{m_graph, dst, fanout, replace, indptr + 1});
  inclusive_scan(res, indptr + 1, num_dst, m_scan.data());
  const std::int64_t num_edges = indptr[num_dst];
  HALO_ASSERT(num_edges <= bound.num_edges, 1);  // before anything writes the edges
  NodeId* sampled = buf.indices.data();
  run(res, num_dst, detail::FillBody{m_graph, dst, fanout, replace, hop_key, indptr, sampled});

  // unique + relabel: first positions in the table, first occurrences scanned into local ids
  const std::int64_t slots =
      detail::table_slots_for(std::min(m_graph.num_rows, num_dst + num_edges));
  HALO_ASSERT(slots <= m_table.numel(), 1);
  m_used.table_slots = std::max(m_used.table_slots, slots);
  const detail::HashTable table{m_table.data(), static_cast<std::uint64_t>(slots - 1)};
  run(res, num_dst + num_edges, detail::InsertBody{table, dst, sampled});
  if (check_distinct) {
    for (std::int64_t i = 0; i < num_dst; ++i)
      if (table.position(dst[i]) != i) {
        std::fill_n(m_table.data(), m_table.numel(), detail::HashTable::kEmpty);
        HALO_FAIL("NeighborSampler::sample: seed " + std::to_string(dst[i]) + " is repeated");
      }
  }
  std::int64_t* prefix = m_scratch.data();
  prefix[0] = 0;
  run(res, num_edges, detail::FirstOccurrenceBody{table, num_dst, sampled, prefix + 1});
  inclusive_scan(res, prefix + 1, num_edges, m_scan.data());
  const std::int64_t num_src = num_dst + prefix[num_edges];
  HALO_ASSERT(num_src <= bound.num_src, 1);
  NodeId* src_ids = buf.src_ids.data();
  run(res, num_dst + num_edges, detail::RelabelBody{dst, sampled, prefix, src_ids});
  run(res, num_src, detail::FindSlotBody{table, src_ids, m_scratch.data()});
  run(res, num_src, detail::ClearSlotBody{table, m_scratch.data()});

  m_used.layers[l] = {num_dst, num_edges, num_src};
  m_batch.blocks[l] = {{indptr, sampled, nullptr, num_dst, num_src}, {src_ids, num_src}};
}

}  // namespace halo::sampler
