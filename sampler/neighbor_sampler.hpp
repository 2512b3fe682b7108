#pragma once
// Uniform neighbour sampling into blocks (message-flow graphs), inside a preallocated envelope.

#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

#include <halo/datasets/dataset.hpp>
#include <halo/kernels/resources.hpp>
#include <halo/kernels/tensor.hpp>
#include <halo/kernels/views.hpp>
#include <halo/sampler/neighbor_source.hpp>
#include <halo/sampler/sampler_types.hpp>

namespace halo::sampler {

/// One layer's bipartite graph. Row i lists, as local source ids, the sampled neighbours that
/// send messages to destination i. The destinations are the first sources: local id i < num_dst
/// names the same node as destination and as source (DGL's message-flow graph).
struct Block {
  /// num_dst x num_src; values == nullptr (unweighted: normalisation is the trainer's job).
  kernels::CsrView<kernels::NodeId, float> csr;
  /// Global ids of the num_src sources; the first num_dst are the destinations, the others
  /// follow in order of first occurrence in `csr.indices`.
  kernels::Span<const kernels::NodeId> src_ids;

  std::int64_t num_dst() const { return csr.num_rows; }
  std::int64_t num_src() const { return csr.num_cols; }
  /// Global ids of the destinations (a prefix of src_ids).
  kernels::Span<const kernels::NodeId> dst_ids() const { return {src_ids.data, num_dst()}; }
};

/// The blocks of one batch, input layer first: blocks[l].dst_ids() equals
/// blocks[l + 1].src_ids, and blocks.back().dst_ids() equals the seeds.
struct MiniBatch {
  std::vector<Block> blocks;
  /// Global ids of blocks[0]'s sources: the nodes whose features the first layer reads.
  kernels::Span<const kernels::NodeId> input_nodes;
  kernels::Span<const kernels::NodeId> seeds;
};

/// The key of every draw of hop `hop` (0: the seeds' hop) of batch (epoch, batch) under `seed`:
/// what NeighborSampler uses, for samplers that draw the same neighbours elsewhere (a rank
/// sampling its owned rows for another rank).
std::uint64_t hop_key(std::uint64_t seed, std::uint64_t epoch, std::uint64_t batch,
                      std::size_t hop);

class NeighborSampler;

namespace detail {
/// Testing only: makes the CPU sampler `s` (not yet used) run the GPU pipeline on the host:
/// sizes kept in "device" words, launches over the envelope's bounds, seed checks by bodies,
/// one read-back (host_syncs_last_batch() stays 0). Machines without a GPU test its logic so.
void use_device_pipeline_on_host(const kernels::Resources& res, NeighborSampler& s);
}  // namespace detail

/// Samples blocks for batches of seeds from one graph, on the CPU or on a CUDA device (the
/// device of the constructor's Resources). Every buffer is allocated once, in the constructor,
/// to the bounds of `plan_envelope`; `sample` allocates nothing and cannot exceed them. Both
/// devices run the same bodies with the same keyed draws, so they give identical blocks.
/// Not thread-safe: one sampler per thread of control.
class NeighborSampler {
 public:
  /// Plans the envelope for batches of up to `batch_size` seeds from `graph` (a host CSR; row
  /// v lists the nodes messages to v come from). A CPU sampler borrows `graph`, which must
  /// outlive it. With `capacity` (a measured envelope, see provision_envelope) a CPU sampler
  /// allocates that, each size within the bound, and grows a buffer, between the phases of a
  /// hop and before anything writes it, when a batch needs more (see growths()); without it,
  /// or on CUDA, the buffers hold the bound and never grow. With a CUDA `res` the sampler copies
  /// the graph to the device once and owns that copy (`graph` is only read here), and allocates
  /// every buffer on the device, stream-ordered on res's stream; synchronous. halo::LogicError when
  /// the graph is not on the host, not square or not well formed, a row has 2^31 or more entries,
  /// the config is invalid (see plan_envelope), or a layer's bound of destinations + edges reaches
  /// 2^31. On the CPU, a graph whose column ids are a file mapping (a store opened mapped) is
  /// read with pread (FileNeighbors): the same blocks, its rows in page cache, not in the process.
  NeighborSampler(const kernels::Resources& res, const datasets::Graph& graph,
                  std::int64_t batch_size, SamplerConfig config,
                  const SamplerEnvelope* capacity = nullptr);
  /// A CPU sampler whose hops read `source` (which must outlive it): the same count -> scan ->
  /// fill -> relabel pipeline and envelope (planned from source.stats()), the rows coming from
  /// wherever the source keeps them (another rank's, for runtime::RemoteNeighbors). When the
  /// source is collective, so is sample(). halo::LogicError on a CUDA `res` (the device
  /// pipeline reads a local graph) and as for the graph constructor.
  NeighborSampler(const kernels::Resources& res, NeighborSource& source, std::int64_t batch_size,
                  SamplerConfig config, const SamplerEnvelope* capacity = nullptr);
  ~NeighborSampler();
  NeighborSampler(NeighborSampler&&) noexcept;
  NeighborSampler& operator=(NeighborSampler&&) noexcept;
  NeighborSampler(const NeighborSampler&) = delete;
  NeighborSampler& operator=(const NeighborSampler&) = delete;

  /// Samples the blocks of `seeds` (distinct node ids, at most batch_size of them) for
  /// (epoch, batch) of this sampler's seed: the same arguments give the same blocks for any
  /// thread count of `res` and on either device. The result and all its views live in the
  /// sampler's buffers, on the sampler's device, and stay valid until the next call.
  ///
  /// `seeds` lives on `seeds_device`: host memory by default (the sampler copies it into its
  /// own seed buffer, on a CUDA sampler through pinned memory with an asynchronous copy), or
  /// Device::Cuda for device memory on a CUDA sampler (copied device to device on res's
  /// stream). The seeds may be a view of this sampler's own buffers (a previous batch's ids).
  ///
  /// CPU: synchronous, on res's OpenMP threads. CUDA: `res` must be the Resources the sampler
  /// was built with (its stream orders every buffer); the work is queued on its stream, and
  /// the call returns after one host synchronisation, which reads back every layer's sizes
  /// (a Block's shape is a host value) and the seed check's verdict; the views are then
  /// ready to use on that stream.
  /// halo::LogicError on too many seeds, an id out of range or a repeated seed (the same
  /// messages on both devices; the sampler stays usable), device seeds for a CPU sampler, or
  /// a Resources of another device or stream.
  const MiniBatch& sample(const kernels::Resources& res, kernels::Span<const kernels::NodeId> seeds,
                          std::uint64_t epoch, std::uint64_t batch,
                          kernels::Device seeds_device = kernels::Device::Cpu);

  /// The device the sampler runs on and keeps its buffers on.
  kernels::Device device() const { return m_device; }

  /// The sizes of the buffers now: the capacity given to the constructor (clipped to the
  /// bound), or the bound, and larger after a growth.
  const SamplerEnvelope& envelope() const { return m_envelope; }
  /// The bound of plan_envelope: no batch exceeds it.
  const SamplerEnvelope& bound() const { return m_bound; }
  /// The largest size of every buffer over the batches so far (each field its own maximum;
  /// the table: the slots the CPU hops probed), all zero before the first batch.
  const SamplerEnvelope& largest() const { return m_largest; }
  /// Buffers grown because a batch exceeded the capacity (0 with the bound).
  std::int64_t growths() const { return m_growths; }
  /// Bytes of the buffers (envelope().bytes()); a CUDA sampler also holds the graph's device
  /// copy, a few size words and pinned staging, not counted here.
  std::size_t envelope_bytes() const { return m_envelope.bytes(); }
  /// The most bytes any batch so far has used, measured as SamplerEnvelope::bytes() of that
  /// batch's actual sizes; 0 before the first batch. Never above envelope_bytes().
  std::size_t peak_bytes() const { return m_peak; }
  /// Times the last sample() call waited for the device (stream synchronisations, blocking
  /// copies): 0 on the CPU; 1 on CUDA, the read-back of the sizes. The goal is none (sizes
  /// that stay on the device end to end, e.g. blocks whose shapes are device scalars).
  std::int64_t host_syncs_last_batch() const { return m_host_syncs; }

 private:
  struct LayerBuffers {
    kernels::Tensor<std::int64_t> indptr;
    kernels::Tensor<kernels::NodeId> indices;
    kernels::Tensor<kernels::NodeId> src_ids;
  };
  friend void detail::use_device_pipeline_on_host(const kernels::Resources& res,
                                                  NeighborSampler& s);
  struct DevicePipeline;  // the device's graph copy, size words, staging (the .cpp)
  /// Sets up the device pipeline's words and staging (m_pipeline exists, buffers allocated).
  void init_pipeline(const kernels::Resources& res);
  /// Runs one hop on the CPU: samples for `dst`, fills block l and its buffers.
  void sample_hop(const kernels::Resources& res, kernels::Span<const kernels::NodeId> dst,
                  std::uint64_t hop_key, std::size_t l, bool check_distinct);
  /// The device pipeline of sample(): every hop queued with sizes kept on the device, then one
  /// read-back.
  void sample_device(const kernels::Resources& res, kernels::Span<const kernels::NodeId> seeds,
                     std::uint64_t epoch, std::uint64_t batch, kernels::Device seeds_device);
  /// Queues one hop on the device for the destinations dst[0, bound) whose actual count is a
  /// device word (see detail::DeviceWords).
  void sample_hop_device(const kernels::Resources& res, const kernels::NodeId* dst,
                         std::uint64_t hop_key, std::size_t l);

  /// Plans the envelope from `stats` and allocates every buffer (both constructors): the bound,
  /// or `capacity` within it on the CPU.
  void allocate(const kernels::Resources& res, const DegreeStats& stats, std::int64_t batch_size,
                const SamplerEnvelope* capacity);
  /// Adds this batch's sizes (m_used) to the peak and the largest.
  void record_used();
  /// Makes `t` (a buffer of the CPU pipeline) hold `need` elements, at most `bound`: when it
  /// holds fewer, a buffer of need + need / 4 (within the bound) replaces it, with its first
  /// `keep` elements copied. Returns its new size.
  template <class T>
  std::int64_t grow(const kernels::Resources& res, kernels::Tensor<T>& t, std::int64_t need,
                    std::int64_t bound, std::int64_t keep = 0);

  kernels::Device m_device = kernels::Device::Cpu;
  /// The host graph of the graph constructor (the sampler's device copy on CUDA); empty with a
  /// NeighborSource.
  kernels::CsrView<kernels::NodeId, float> m_graph;
  std::int64_t m_num_nodes = 0;
  /// Where the CPU pipeline's hops read rows: m_local (the graph constructor: LocalNeighbors,
  /// or FileNeighbors for a graph whose column ids are a file mapping) or the caller's.
  std::unique_ptr<NeighborSource> m_local;
  NeighborSource* m_source = nullptr;
  SamplerConfig m_config;
  SamplerEnvelope m_envelope;  // the buffers' sizes
  SamplerEnvelope m_bound;     // plan_envelope's
  SamplerEnvelope m_used;      // this batch's sizes; preallocated like everything else
  SamplerEnvelope m_largest;   // the largest of every field over the batches
  std::int64_t m_growths = 0;
  kernels::Tensor<kernels::NodeId> m_seeds;
  std::vector<LayerBuffers> m_layers;
  kernels::Tensor<std::uint64_t> m_table;
  kernels::Tensor<std::int64_t> m_scratch;
  kernels::Tensor<std::int64_t> m_scan;
  MiniBatch m_batch;
  std::size_t m_peak = 0;
  std::int64_t m_host_syncs = 0;
  /// Set on CUDA (and by detail::use_device_pipeline_on_host): sample() runs the device
  /// pipeline. Null: the CPU pipeline.
  std::unique_ptr<DevicePipeline> m_pipeline;
};

}  // namespace halo::sampler
