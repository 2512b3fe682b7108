#include <algorithm>
#include <cstring>
#include <limits>
#include <string>
#include <utility>

#include <halo/kernels/buffer.hpp>
#include <halo/kernels/error.hpp>
#include <halo/kernels/exec.hpp>
#include <halo/kernels/rng.hpp>
#include <halo/kernels/scan.hpp>
#include <halo/sampler/detail/device_sizes_body.hpp>
#include <halo/sampler/detail/run.hpp>
#include <halo/sampler/detail/sampler_cuda.hpp>
#include <halo/sampler/envelope.hpp>
#include <halo/sampler/neighbor_sampler.hpp>
#include <halo/sampler/relabel_body.hpp>
#include <halo/sampler/sample_body.hpp>

namespace halo::sampler {
namespace {

using kernels::NodeId;
using kernels::Span;
namespace rng = kernels::rng;

using detail::run;

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

/// The device pipeline's state: the device's graph copy, the size words, the host staging of
/// seeds and read-back, and the few operations that are not bodies (copies, fills, scans). On
/// a CUDA sampler these are CUDA calls on res's stream; detail::use_device_pipeline_on_host
/// makes a CPU sampler run the same pipeline with host memory and host scans, so that machines
/// without a GPU test its logic. Host staging is pinned on CUDA, so the copies are truly
/// asynchronous; the seed staging is reused only after the previous batch's synchronisation.
struct NeighborSampler::DevicePipeline {
  bool on_cuda = false;
  void* stream = nullptr;  // of the Resources the buffers were allocated on (CUDA)
  datasets::Graph graph;   // the device copy (CUDA)
  /// detail::DeviceWords::total(num_layers) words: per-layer sizes and the seed check's status.
  kernels::Tensor<std::int64_t> words;
  /// Host staging of the seeds (batch_size ids) and of the read-back words: page-locked on
  /// CUDA, plain host memory for the host emulation.
  kernels::PinnedBuffer seed_staging, readback;
  std::size_t scan_temp_bytes = 0;  // of m_scan (CUDA)

  /// Stream-ordered on CUDA (host memory must be pinned); a memmove in the host emulation.
  void copy(const kernels::Resources& res, void* dst, kernels::Device dst_device, const void* src,
            kernels::Device src_device, std::size_t bytes) const {
    if (bytes == 0) return;
    if (on_cuda) return kernels::copy_bytes_async(res, dst, dst_device, src, src_device, bytes);
    std::memmove(dst, src, bytes);
  }
  void fill(const kernels::Resources& res, void* dst, unsigned char value,
            std::size_t bytes) const {
    kernels::fill_bytes(res, dst, on_cuda ? kernels::Device::Cuda : kernels::Device::Cpu, value,
                        bytes);
  }
  /// Inclusive scan of a[0, n) with `temp` (m_scan) as the scratch.
  void scan(const kernels::Resources& res, std::int64_t* a, std::int64_t n,
            std::int64_t* temp) const {
#if HALO_WITH_CUDA
    if (on_cuda) return detail::cuda_inclusive_sum(a, n, temp, scan_temp_bytes, stream);
#endif
    kernels::inclusive_scan(res, a, n, temp, detail::kScanBlock);
  }
};

std::uint64_t hop_key(std::uint64_t seed, std::uint64_t epoch, std::uint64_t batch,
                      std::size_t hop) {
  return rng::key(rng::key(seed, rng::stream_id(rng::kStreamSample, epoch, batch)), hop);
}

NeighborSampler::NeighborSampler(const kernels::Resources& res, const datasets::Graph& graph,
                                 std::int64_t batch_size, SamplerConfig config,
                                 const SamplerEnvelope* capacity)
    : m_device(res.device()), m_config(std::move(config)) {
#if !HALO_WITH_CUDA
  HALO_EXPECTS(
      m_device == kernels::Device::Cpu,
      "NeighborSampler: this build has no CUDA backend (configure with -DHALO_WITH_CUDA=ON)");
#endif
  check_graph(graph);
  m_graph = graph.view();
  // A graph whose column ids are a file mapping (a store larger than memory) is read with pread
  // on the CPU: the rows take page cache, not this process's memory.
  if (m_device == kernels::Device::Cpu && graph.indices.mapped())
    m_local = std::make_unique<FileNeighbors>(graph);
  else
    m_local = std::make_unique<LocalNeighbors>(m_graph);
  m_source = m_local.get();
  allocate(res, m_local->stats(), batch_size, capacity);
  if (m_device == kernels::Device::Cpu) return;
  m_pipeline->graph = graph.copy_to(res, m_device);
  m_graph = m_pipeline->graph.view();
  init_pipeline(res);
}

NeighborSampler::NeighborSampler(const kernels::Resources& res, NeighborSource& source,
                                 std::int64_t batch_size, SamplerConfig config,
                                 const SamplerEnvelope* capacity)
    : m_device(res.device()), m_source(&source), m_config(std::move(config)) {
  HALO_EXPECTS(m_device == kernels::Device::Cpu,
               "NeighborSampler: a sampler over a NeighborSource runs on the CPU");
  allocate(res, source.stats(), batch_size, capacity);
}

void NeighborSampler::allocate(const kernels::Resources& res, const DegreeStats& stats,
                               std::int64_t batch_size, const SamplerEnvelope* capacity) {
  HALO_EXPECTS(stats.num_nodes <= std::numeric_limits<NodeId>::max(),
               "NeighborSampler: too many nodes");
  HALO_EXPECTS(stats.max_degree <= std::numeric_limits<NodeId>::max(),
               "NeighborSampler: a row has 2^31 or more entries");
  m_num_nodes = stats.num_nodes;
  m_bound = plan_envelope(stats, batch_size, m_config.fanouts, m_config.replace);
  for (const LayerEnvelope& l : m_bound.layers) {
    // Positions (destinations + edges) are stored as NodeId (see detail::FirstOccurrenceBody).
    HALO_EXPECTS(l.num_dst + l.num_edges <= std::numeric_limits<NodeId>::max(),
                 "NeighborSampler: a layer may sample 2^31 or more edges; use smaller batches");
  }
  // A capacity within the bound (the CPU pipeline grows past it; the device's launches cover
  // the envelope, so a device keeps the bound).
  m_envelope = capacity && m_device == kernels::Device::Cpu
                   ? provision_envelope(*capacity, m_bound, 0)
                   : m_bound;
  m_largest = {};
  m_largest.layers.resize(m_bound.layers.size());
  const kernels::Device dev = m_device;
  if (dev == kernels::Device::Cuda) {
    m_pipeline = std::make_unique<DevicePipeline>();
    m_pipeline->on_cuda = true;
    m_pipeline->stream = res.cuda_exec().stream;
#if HALO_WITH_CUDA
    // The device scan is CUB's, whose temporary storage replaces the CPU's block sums:
    // scan_blocks counts its 8-byte words, so envelope_bytes() stays what was allocated.
    std::size_t temp = 0;
    for (const LayerEnvelope& l : m_envelope.layers)
      temp = std::max({temp, detail::cuda_scan_temp_bytes(l.num_dst),
                       detail::cuda_scan_temp_bytes(l.num_edges)});
    // At least one word: CUB takes a null temporary storage for a size query and scans nothing.
    m_envelope.scan_blocks = std::max<std::int64_t>(1, static_cast<std::int64_t>((temp + 7) / 8));
    m_pipeline->scan_temp_bytes = static_cast<std::size_t>(m_envelope.scan_blocks) * 8;
#endif
  }
  m_used = m_envelope;

  // Capacities filled partly by each batch: small pages (kernels::Pages). The hash table is
  // probed all over, so it keeps the default.
  constexpr auto small = kernels::Pages::Small;
  m_seeds = kernels::Tensor<NodeId>(res, dev, batch_size, 1, small);
  for (const LayerEnvelope& l : m_envelope.layers)
    m_layers.push_back({kernels::Tensor<std::int64_t>(res, dev, l.num_dst + 1, 1, small),
                        kernels::Tensor<NodeId>(res, dev, l.num_edges, 1, small),
                        kernels::Tensor<NodeId>(res, dev, l.num_src, 1, small)});
  m_table = kernels::Tensor<std::uint64_t>(res, dev, m_envelope.table_slots);
  m_scratch = kernels::Tensor<std::int64_t>(res, dev, m_envelope.scratch, 1, small);
  m_scan = kernels::Tensor<std::int64_t>(res, dev, m_envelope.scan_blocks);
  m_batch.blocks.resize(m_layers.size());
  if (dev == kernels::Device::Cpu)
    std::fill_n(m_table.data(), m_table.numel(), detail::HashTable::kEmpty);
}

void NeighborSampler::init_pipeline(const kernels::Resources& res) {
  using W = detail::DeviceWords;
  DevicePipeline& p = *m_pipeline;
  const auto num_layers = static_cast<std::int64_t>(m_layers.size());
  p.seed_staging = kernels::PinnedBuffer(
      res,
      static_cast<std::size_t>(std::max<std::int64_t>(1, m_envelope.batch_size)) * sizeof(NodeId));
  p.readback = kernels::PinnedBuffer(
      res, static_cast<std::size_t>(W::readback(num_layers)) * sizeof(std::int64_t));
  // The table starts empty (kEmpty is all ones), and indptr[0] is 0 for good: the hops write
  // indptr from entry 1 on.
  p.fill(res, m_table.data(), 0xFF, m_table.bytes());
  for (LayerBuffers& b : m_layers) p.fill(res, b.indptr.data(), 0, sizeof(std::int64_t));
  std::vector<std::int64_t> words(static_cast<std::size_t>(W::total(num_layers)), 0);
  words[static_cast<std::size_t>(3 * num_layers + W::kFirstBad)] = W::kNone;
  words[static_cast<std::size_t>(3 * num_layers + W::kFirstRepeat)] = W::kNone;
  p.words = kernels::Tensor<std::int64_t>::from_host(res, words);  // synchronises
}

void detail::use_device_pipeline_on_host(const kernels::Resources& res, NeighborSampler& s) {
  HALO_EXPECTS(s.m_device == kernels::Device::Cpu && !s.m_pipeline && s.m_local,
               "use_device_pipeline_on_host: needs a CPU sampler over a graph");
  HALO_EXPECTS(envelope_words(s.m_envelope) == envelope_words(s.m_bound),
               "use_device_pipeline_on_host: the device pipeline needs the bound's buffers");
  s.m_pipeline = std::make_unique<NeighborSampler::DevicePipeline>();
  // The host scan's block sums must cover the bounds, which they do: scan_blocks is sized
  // from the largest layer bound.
  s.init_pipeline(res);
}

NeighborSampler::~NeighborSampler() = default;
NeighborSampler::NeighborSampler(NeighborSampler&&) noexcept = default;
NeighborSampler& NeighborSampler::operator=(NeighborSampler&&) noexcept = default;

const MiniBatch& NeighborSampler::sample(const kernels::Resources& res, Span<const NodeId> seeds,
                                         std::uint64_t epoch, std::uint64_t batch,
                                         kernels::Device seeds_device) {
  HALO_EXPECTS(res.device() == m_device,
               "NeighborSampler::sample: the Resources is on another device than the sampler");
  HALO_EXPECTS(seeds.size >= 0 && seeds.size <= m_envelope.batch_size,
               "NeighborSampler::sample: " + std::to_string(seeds.size) +
                   " seeds; the batch size is " + std::to_string(m_envelope.batch_size));
  // (The host emulation of the device pipeline takes "device" seeds: they are host memory.)
  HALO_EXPECTS(m_pipeline || seeds_device == kernels::Device::Cpu,
               "NeighborSampler::sample: a CPU sampler takes host seeds");
  if (m_pipeline) {
    sample_device(res, seeds, epoch, batch, seeds_device);
    return m_batch;
  }
  m_host_syncs = 0;
  for (std::int64_t i = 0; i < seeds.size; ++i)
    HALO_EXPECTS(seeds[i] >= 0 && seeds[i] < m_num_nodes,
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
  record_used();
  HALO_ASSERT(m_peak <= envelope_bytes(), 1);
  return m_batch;
}

void NeighborSampler::record_used() {
  m_peak = std::max(m_peak, m_used.bytes());
  raise_envelope(m_largest, m_used);
}

template <class T>
std::int64_t NeighborSampler::grow(const kernels::Resources& res, kernels::Tensor<T>& t,
                                   std::int64_t need, std::int64_t bound, std::int64_t keep) {
  if (need <= t.numel()) return t.numel();
  HALO_ASSERT(need <= bound, 1);
  const std::int64_t size = std::min(bound, need + need / 4);
  kernels::Tensor<T> bigger(res, m_device, size, 1, kernels::Pages::Small);
  if (keep > 0) std::memcpy(bigger.data(), t.data(), static_cast<std::size_t>(keep) * sizeof(T));
  t = std::move(bigger);
  ++m_growths;
  return size;
}

void NeighborSampler::sample_hop(const kernels::Resources& res, Span<const NodeId> dst,
                                 std::uint64_t hop_key, std::size_t l, bool check_distinct) {
  const LayerEnvelope& bound = m_bound.layers[l];
  LayerBuffers& buf = m_layers[l];
  const int fanout = m_config.fanouts[l];
  const bool replace = m_config.replace;
  const std::int64_t num_dst = dst.size;
  LayerEnvelope& have = m_envelope.layers[l];
  // A capacity below the bound grows here, before anything writes the buffer (dst is another
  // layer's buffer, or the seeds).
  const auto grow_scan = [&](std::int64_t n) {
    m_envelope.scan_blocks =
        grow(res, m_scan, kernels::scan_blocks(n, detail::kScanBlock), m_bound.scan_blocks);
  };
  have.num_dst = grow(res, buf.indptr, num_dst + 1, bound.num_dst + 1) - 1;
  grow_scan(num_dst);

  // count -> scan -> fill
  std::int64_t* indptr = buf.indptr.data();
  indptr[0] = 0;
  m_source->count(res, dst, fanout, replace, indptr + 1);
  kernels::inclusive_scan(res, indptr + 1, num_dst, m_scan.data(), detail::kScanBlock);
  const std::int64_t num_edges = indptr[num_dst];
  HALO_ASSERT(num_edges <= bound.num_edges, 1);  // before anything writes the edges
  have.num_edges = grow(res, buf.indices, num_edges, bound.num_edges);
  grow_scan(num_edges);
  m_envelope.scratch = grow(res, m_scratch, num_edges + 1, m_bound.scratch);
  NodeId* sampled = buf.indices.data();
  m_source->fill(res, dst, fanout, replace, hop_key, indptr, sampled);

  // unique + relabel: first positions in the table, first occurrences scanned into local ids
  const std::int64_t slots = detail::table_slots_for(std::min(m_num_nodes, num_dst + num_edges));
  if (slots > m_table.numel()) {  // a larger table, empty (the capacity's was left empty)
    HALO_ASSERT(slots <= m_bound.table_slots, 1);
    m_table = kernels::Tensor<std::uint64_t>(res, m_device, slots);
    std::fill_n(m_table.data(), m_table.numel(), detail::HashTable::kEmpty);
    m_envelope.table_slots = slots;
    ++m_growths;
  }
  m_used.table_slots = std::max(m_used.table_slots, slots);
  const detail::HashTable table{m_table.data(), static_cast<std::uint64_t>(slots - 1)};
  run(res, num_dst + num_edges,
      detail::InsertBody{table, dst, sampled, nullptr, num_dst + num_edges});
  if (check_distinct) {
    for (std::int64_t i = 0; i < num_dst; ++i)
      if (table.position(dst[i]) != i) {
        std::fill_n(m_table.data(), m_table.numel(), detail::HashTable::kEmpty);
        HALO_FAIL("NeighborSampler::sample: seed " + std::to_string(dst[i]) + " is repeated");
      }
  }
  std::int64_t* prefix = m_scratch.data();
  prefix[0] = 0;
  run(res, num_edges,
      detail::FirstOccurrenceBody{table, num_dst, sampled, prefix + 1, nullptr, num_edges});
  kernels::inclusive_scan(res, prefix + 1, num_edges, m_scan.data(), detail::kScanBlock);
  const std::int64_t num_src = num_dst + prefix[num_edges];
  HALO_ASSERT(num_src <= bound.num_src, 1);
  have.num_src = grow(res, buf.src_ids, num_src, bound.num_src);
  m_envelope.scratch = grow(res, m_scratch, num_src, m_bound.scratch, num_edges + 1);
  prefix = m_scratch.data();
  NodeId* src_ids = buf.src_ids.data();
  run(res, num_dst + num_edges, detail::RelabelBody{dst, sampled, prefix, src_ids});
  run(res, num_src, detail::FindSlotBody{table, src_ids, m_scratch.data()});
  run(res, num_src, detail::ClearSlotBody{table, m_scratch.data()});

  m_used.layers[l] = {num_dst, num_edges, num_src};
  m_batch.blocks[l] = {{indptr, sampled, nullptr, num_dst, num_src, false, num_edges},
                       {src_ids, num_src}};
}

void NeighborSampler::sample_device(const kernels::Resources& res, Span<const NodeId> seeds,
                                    std::uint64_t epoch, std::uint64_t batch,
                                    kernels::Device seeds_device) {
  using W = detail::DeviceWords;
  DevicePipeline& p = *m_pipeline;
  if (p.on_cuda) {
    HALO_EXPECTS(res.cuda_exec().stream == p.stream,
                 "NeighborSampler::sample: a CUDA sampler runs on the Resources it was built with");
  }
  m_host_syncs = 0;
  const std::int64_t n = seeds.size;
  const std::size_t seed_bytes = static_cast<std::size_t>(n) * sizeof(NodeId);
  NodeId* const dev_seeds = m_seeds.data();
  if (n == 0) {
    // nothing to copy
  } else if (seeds_device == kernels::Device::Cpu) {
    std::memcpy(p.seed_staging.data(), seeds.data, seed_bytes);
    p.copy(res, dev_seeds, kernels::Device::Cuda, p.seed_staging.data(), kernels::Device::Cpu,
           seed_bytes);
  } else if (seeds.data != dev_seeds) {
    // A device-to-device copy must not overlap: a part of the seed buffer itself goes through
    // the scratch, which holds at least min(batch_size, N) ids (a previous batch's seeds).
    const auto lo = reinterpret_cast<std::uintptr_t>(seeds.data);
    const auto buf = reinterpret_cast<std::uintptr_t>(dev_seeds);
    if (lo < buf + m_seeds.bytes() && buf < lo + seed_bytes) {
      HALO_EXPECTS(seed_bytes <= m_scratch.bytes(),
                   "NeighborSampler::sample: seeds overlap the sampler's seed buffer");
      p.copy(res, m_scratch.data(), kernels::Device::Cuda, seeds.data, kernels::Device::Cuda,
             seed_bytes);
      p.copy(res, dev_seeds, kernels::Device::Cuda, m_scratch.data(), kernels::Device::Cuda,
             seed_bytes);
    } else {
      p.copy(res, dev_seeds, kernels::Device::Cuda, seeds.data, kernels::Device::Cuda, seed_bytes);
    }
  }

  // Seed checks on the device; the gate sets the seeds' hop's num_dst (0 on an error).
  const std::size_t num_layers = m_layers.size();
  const auto nl = static_cast<std::int64_t>(num_layers);
  std::int64_t* const words = p.words.data();
  std::int64_t* const status = words + 3 * nl;
  const detail::HashTable table{m_table.data(),
                                static_cast<std::uint64_t>(m_envelope.table_slots - 1)};
  const std::int64_t num_nodes = m_graph.num_rows;
  kernels::launch(res, n, detail::SeedInsertBody{table, dev_seeds, num_nodes, status});
  kernels::launch(res, n, detail::SeedDistinctBody{table, dev_seeds, num_nodes, status});
  kernels::launch(res, 1, detail::SeedGateBody{dev_seeds, n, status, words + 3 * (nl - 1)});

  const NodeId* dst = dev_seeds;
  for (std::size_t h = 0; h < num_layers; ++h) {
    const std::size_t l = num_layers - 1 - h;
    sample_hop_device(res, dst, hop_key(m_config.seed, epoch, batch, h), l);
    dst = m_layers[l].src_ids.data();
  }

  // The batch's one synchronisation: every size and the seed check's verdict in one copy.
  const auto* got = static_cast<const std::int64_t*>(p.readback.data());
  p.copy(res, p.readback.data(), kernels::Device::Cpu, words, kernels::Device::Cuda,
         static_cast<std::size_t>(W::readback(nl)) * sizeof(std::int64_t));
  res.synchronize();
  if (p.on_cuda) ++m_host_syncs;
  if (const std::int64_t kind = got[3 * nl + W::kErrorKind]; kind != 0) {
    // The seeds' table entries stay behind (the hops did nothing): empty the whole table.
    p.fill(res, m_table.data(), 0xFF, m_table.bytes());
    const std::string seed = std::to_string(got[3 * nl + W::kErrorSeed]);
    HALO_EXPECTS(kind != 1, "NeighborSampler::sample: seed " + seed + " out of range");
    HALO_FAIL("NeighborSampler::sample: seed " + seed + " is repeated");
  }

  for (std::size_t l = 0; l < num_layers; ++l) {
    const std::int64_t* sz = got + 3 * static_cast<std::int64_t>(l);
    const LayerEnvelope used{sz[0], sz[1], sz[2]};
    const LayerEnvelope& bound = m_envelope.layers[l];
    HALO_ASSERT(used.num_dst <= bound.num_dst && used.num_edges <= bound.num_edges &&
                    used.num_src <= bound.num_src,
                1);
    m_used.layers[l] = used;
    LayerBuffers& buf = m_layers[l];
    m_batch.blocks[l] = {{buf.indptr.data(), buf.indices.data(), nullptr, used.num_dst,
                          used.num_src, false, used.num_edges},
                         {buf.src_ids.data(), used.num_src}};
  }
  m_batch.seeds = {dev_seeds, n};
  m_batch.input_nodes = m_batch.blocks.front().src_ids;

  // The device probes the whole table and scans over the bounds: both count in full.
  m_used.batch_size = n;
  m_used.table_slots = m_envelope.table_slots;
  detail::size_scratch(m_used);
  m_used.scan_blocks = m_envelope.scan_blocks;
  record_used();
  HALO_ASSERT(m_peak <= envelope_bytes(), 1);
}

void NeighborSampler::sample_hop_device(const kernels::Resources& res, const NodeId* dst,
                                        std::uint64_t hop_key, std::size_t l) {
  const DevicePipeline& p = *m_pipeline;
  const LayerEnvelope& bound = m_envelope.layers[l];
  LayerBuffers& buf = m_layers[l];
  const int fanout = m_config.fanouts[l];
  const bool replace = m_config.replace;
  // This hop's {num_dst, num_edges, num_src} on the device; the launches cover the bounds.
  std::int64_t* const sizes = m_pipeline->words.data() + 3 * static_cast<std::int64_t>(l);
  std::int64_t* const next_num_dst = l > 0 ? sizes - 3 : nullptr;
  const Span<const NodeId> dsts{dst, bound.num_dst};
  const std::int64_t positions = bound.num_dst + bound.num_edges;
  // The whole table, unlike the CPU's prefix sized per hop: its size must be a host value.
  const detail::HashTable table{m_table.data(),
                                static_cast<std::uint64_t>(m_envelope.table_slots - 1)};

  // count -> scan -> fill (indptr[0] is 0 since the constructor)
  std::int64_t* const indptr = buf.indptr.data();
  std::int64_t* const prefix = m_scratch.data();
  NodeId* const sampled = buf.indices.data();
  kernels::launch(res, bound.num_dst,
                  detail::CountBody{m_graph, dsts, fanout, replace, indptr + 1, sizes});
  p.scan(res, indptr + 1, bound.num_dst, m_scan.data());
  kernels::launch(res, 1, detail::EdgeTotalBody{indptr, sizes, prefix});
  kernels::launch(
      res, bound.num_dst,
      detail::FillBody{m_graph, dsts, fanout, replace, hop_key, indptr, sampled, nullptr, sizes});

  // unique + relabel
  kernels::launch(res, positions, detail::InsertBody{table, dsts, sampled, sizes});
  kernels::launch(res, bound.num_edges,
                  detail::FirstOccurrenceBody{table, 0, sampled, prefix + 1, sizes});
  p.scan(res, prefix + 1, bound.num_edges, m_scan.data());
  kernels::launch(res, 1, detail::SourceTotalBody{prefix, sizes, next_num_dst});
  NodeId* const src_ids = buf.src_ids.data();
  kernels::launch(res, positions, detail::RelabelBody{dsts, sampled, prefix, src_ids, sizes});
  kernels::launch(res, bound.num_src,
                  detail::FindSlotBody{table, src_ids, m_scratch.data(), sizes});
  kernels::launch(res, bound.num_src, detail::ClearSlotBody{table, m_scratch.data(), sizes});
}

}  // namespace halo::sampler
