#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <condition_variable>
#include <exception>
#include <fstream>
#include <mutex>
#include <numeric>
#include <optional>
#include <string>
#include <thread>

#include <halo/kernels/buffer.hpp>
#include <halo/kernels/cpus.hpp>
#include <halo/kernels/log.hpp>
#include <halo/kernels/rng.hpp>
#include <halo/nn/model_types.hpp>
#include <halo/runtime/data/batches.hpp>
#include <halo/runtime/data/feature_store.hpp>
#include <halo/runtime/data/remote_neighbors.hpp>
#include <halo/runtime/detail/timing.hpp>
#include <halo/sampler/batch.hpp>
#include <halo/sampler/envelope.hpp>
#include <halo/sampler/neighbor_sampler.hpp>

namespace halo::runtime {

using kernels::NodeId;
using kernels::Tensor;

int auto_prefetch(int threads, int affinity_cpus, int machine_cpus, int ranks_on_machine) {
  const double cores = std::min(static_cast<double>(affinity_cpus),
                                static_cast<double>(machine_cpus) / std::max(1, ranks_on_machine));
  return std::max(1, threads) + 1 <= cores ? 1 : 0;
}

namespace {

/// This machine's identity: its kernel's boot id (network namespaces and containers of one
/// machine share it, and so share its cores), else its host name; hashed (FNV-1a, 62 bits).
std::int64_t machine_id() {
  std::string id;
  std::ifstream("/proc/sys/kernel/random/boot_id") >> id;
  if (id.empty()) {
    char host[256] = {};
    ::gethostname(host, sizeof host - 1);
    id = host;
  }
  std::uint64_t h = 14695981039346656037ull;
  for (const char ch : id) h = (h ^ static_cast<unsigned char>(ch)) * 1099511628211ull;
  return static_cast<std::int64_t>(h >> 2) + 1;
}

/// MiniBatchConfig::prefetch as this run applies it: kAutoPrefetch resolved by auto_prefetch on
/// every rank (its CPUs, the machine's, the ranks of `comm` on the same machine), 1 only where
/// it is 1 on every rank (a collective call: every rank's pipeline is the same).
int applied_prefetch(Comm& comm, int prefetch, int threads) {
  if (prefetch != kAutoPrefetch) return prefetch;
  std::vector<std::int64_t> ids(static_cast<std::size_t>(comm.size()), 0);
  ids[static_cast<std::size_t>(comm.rank())] = machine_id();
  comm.allreduce(kernels::Span<std::int64_t>(ids.data(), comm.size()), ReduceOp::Sum);
  const auto here = std::count(ids.begin(), ids.end(), ids[static_cast<std::size_t>(comm.rank())]);
  const auto mine = static_cast<int>(kernels::usable_cpus().size());
  std::int64_t none =
      auto_prefetch(threads, mine, kernels::online_cpus(), static_cast<int>(here)) == 0;
  comm.allreduce(kernels::Span<std::int64_t>(&none, 1), ReduceOp::Max);
  return none ? 0 : 1;
}

}  // namespace

FullGraphBatches::FullGraphBatches(nn::Adjacency<float> graph,
                                   const kernels::FeatureMatrix<float>& x,
                                   kernels::Span<const std::int32_t> labels,
                                   kernels::Span<const NodeId> train_rows, std::int64_t num_train)
    : m_graph(graph) {
  m_batch.graphs = std::span<const nn::Adjacency<float>>(&m_graph, 1);
  m_batch.x = &x;
  m_batch.labels = labels;
  m_batch.rows = train_rows;
  m_batch.loss_rows = num_train;
}

namespace {

using detail::seconds_since;

/// A hand-over of slot indices between two threads in a fixed ring (no allocation); -1 means
/// "stop". Holds at most `capacity` entries, which the slots bound.
class Channel {
 public:
  explicit Channel(std::size_t capacity) : m_items(capacity) {}
  void push(int v) {
    {
      const std::lock_guard lock(m_mutex);
      m_items[(m_head + m_size++) % m_items.size()] = v;
    }
    m_cv.notify_one();
  }
  int pop() {
    std::unique_lock lock(m_mutex);
    m_cv.wait(lock, [&] { return m_size > 0; });
    const int v = m_items[m_head];
    m_head = (m_head + 1) % m_items.size();
    --m_size;
    return v;
  }

 private:
  std::mutex m_mutex;
  std::condition_variable m_cv;
  std::vector<int> m_items;
  std::size_t m_head = 0, m_size = 0;
};

/// Gives the calling thread a nice value 5 above the process's (Linux: per thread), so that on
/// cores shared with the training threads (2 threads computing, a producer preparing) the
/// scheduler runs the training kernels first: a training thread preempted inside a parallel
/// region holds every other one at its barrier, while the producer only has to keep one batch
/// ahead, which it still does whenever a training thread waits (measured: bench/results/speed.md,
/// Step 5). Best effort: a refusal changes nothing else.
void lower_priority() {
  errno = 0;
  const int now = getpriority(PRIO_PROCESS, 0);
  if (errno != 0) return;
  (void)setpriority(PRIO_PROCESS, static_cast<id_t>(syscall(SYS_gettid)), std::min(now + 5, 19));
}

}  // namespace

/// One batch in preparation or in use: its sampler (whose buffers hold the blocks) and its
/// gathered inputs, all sized once from the sampler's envelope.
struct SampledBatches::Slot {
  sampler::NeighborSampler sampler;
  BatchInputs inputs;
  Tensor<std::int32_t> labels;
  kernels::PinnedBuffer label_stage;  // device runs sampling on the host
  /// Device copies of the blocks (device runs sampling on the host): indptr, indices per layer.
  std::vector<Tensor<std::int64_t>> indptr;
  std::vector<Tensor<NodeId>> indices;
  /// GCN: each block with a self-loop per destination and its weights; GAT (SelfLoops): the
  /// same structure without values.
  std::vector<kernels::CsrMatrix<NodeId, float>> gcn;
  std::vector<nn::Adjacency<float>> graphs;
  Batch batch;
  FetchStats fetch;
  std::int64_t host_syncs = 0;
  double sample_s = 0, gather_s = 0, copy_s = 0;  // the epoch's preparation phases (profile)
  std::int64_t sampled_edges = 0;                 // the blocks' entries this epoch
  std::int64_t growths = 0;                       // the sampler's, when the buffers were sized
};

/// The producer thread of an epoch and its two channels (free slots, prepared slots).
class SampledBatches::Pipeline {
 public:
  Pipeline(SampledBatches& owner, std::int64_t first, std::int64_t batches)
      : m_free(owner.m_slots.size() + 1), m_ready(owner.m_slots.size() + 1) {
    for (int i = 0; i < static_cast<int>(owner.m_slots.size()); ++i) m_free.push(i);
    m_thread = std::thread([this, &owner, first, batches] {
      lower_priority();
      try {
        for (std::int64_t b = first; b < batches; ++b) {
          const int s = m_free.pop();
          if (s < 0) return;  // the consumer stopped
          owner.prepare(*owner.m_slots[static_cast<std::size_t>(s)], b);
          m_ready.push(s);
        }
      } catch (...) {
        m_error = std::current_exception();
        m_ready.push(-1);
      }
    });
  }
  ~Pipeline() {
    if (m_thread.joinable()) {
      m_free.push(-1);
      m_thread.join();
    }
  }
  /// The next prepared slot (rethrows the producer's error); `previous`, when >= 0, is free
  /// again.
  int take(int previous) {
    if (previous >= 0) m_free.push(previous);
    const int s = m_ready.pop();
    if (s < 0) {
      m_thread.join();
      std::rethrow_exception(m_error);
    }
    return s;
  }
  void finish() {
    m_thread.join();
    if (m_error) std::rethrow_exception(m_error);
  }

 private:
  Channel m_free, m_ready;
  std::exception_ptr m_error;
  std::thread m_thread;
};

SampledBatches::SampledBatches(const kernels::Resources& res, const partition::Part& part,
                               Comm& comm, FeatureStore& features,
                               kernels::Span<const std::int32_t> labels,
                               const MiniBatchConfig& config, nn::GraphPreparation graph,
                               std::uint64_t seed, float input_dropout, std::vector<NodeId> seeds)
    : m_res(res),
      m_prefetch(res.device() == kernels::Device::Cpu
                     ? applied_prefetch(comm, config.prefetch, res.cpu_exec().num_threads)
                     : 0),
      m_producer_res(kernels::Device::Cpu, m_prefetch > 0 ? 1 : res.cpu_exec().num_threads),
      m_part(part),
      m_comm(comm),
      m_features(features),
      m_labels(labels),
      m_config(config),
      m_graph(graph),
      m_seed(seed),
      m_input_dropout(input_dropout),
      m_fixed(std::move(seeds)) {
  const std::int64_t num_train =
      m_fixed.empty() ? part.all_train.numel() : static_cast<std::int64_t>(m_fixed.size());
  HALO_EXPECTS(num_train > 0, "train: the dataset has no training nodes");
  const bool on_device = res.device() != kernels::Device::Cpu;
  const bool one_part = part.ids.identity();
  m_sample_on_host = on_device && !one_part;
  if (m_prefetch > 0 && !one_part) {
    if (comm.concurrent_duplicates()) {
      m_producer_comm = comm.duplicate();
    } else {
      HALO_LOG_WARN(
          "train: MPI gives no MPI_THREAD_MULTIPLE: batches are prepared on the "
          "training thread (--prefetch 0)");
      m_prefetch = 0;
    }
  }
  m_batch_size = std::min(config.batch_size, num_train);
  // As many batches as the config allows (given seeds too: an evaluation's sample).
  m_batches = epoch_batches(config, num_train);
  m_keys.resize(static_cast<std::size_t>(num_train));
  m_order.resize(static_cast<std::size_t>(num_train));
  m_mine.reserve(static_cast<std::size_t>(num_train));
  m_mine_at.reserve(static_cast<std::size_t>(m_batches) + 1);
  const sampler::SamplerConfig sc{config.fanouts, config.replace, seed};
  const kernels::Resources& sampling = on_device && one_part ? res : m_producer_res;
  if (!one_part)
    m_source = std::make_unique<RemoteNeighbors>(part, m_producer_comm ? *m_producer_comm : comm);
  const kernels::Resources& batch_res = on_device ? res : m_producer_res;
  // A device sampler keeps the bound (its launches cover the envelope); a host one holds what
  // the run measures and grows if a batch ever needs more.
  std::optional<sampler::SamplerEnvelope> capacity;
  if (!(on_device && one_part)) capacity = measure_envelope(sampling, sc);
  const sampler::SamplerEnvelope* cap = capacity ? &*capacity : nullptr;
  for (int i = 0; i <= m_prefetch; ++i) {
    auto slot = std::make_unique<Slot>(
        Slot{one_part ? sampler::NeighborSampler(sampling, part.graph, m_batch_size, sc, cap)
                      : sampler::NeighborSampler(sampling, *m_source, m_batch_size, sc, cap),
             {},
             Tensor<std::int32_t>(batch_res, m_batch_size),
             {},
             {},
             {},
             {},
             {},
             {},
             {},
             0});
    if (m_sample_on_host)
      slot->label_stage = kernels::PinnedBuffer(res, static_cast<std::size_t>(m_batch_size) * 4);
    size_slot(*slot);
    slot->graphs.reserve(config.fanouts.size());
    m_slots.push_back(std::move(slot));
  }
  std::vector<NodeId> iota(static_cast<std::size_t>(m_batch_size));
  std::iota(iota.begin(), iota.end(), NodeId{0});
  m_iota = Tensor<NodeId>::from_host(batch_res, iota);
  if (on_device && one_part) m_mine_d = Tensor<NodeId>(res, num_train);
}

SampledBatches::~SampledBatches() = default;

sampler::SamplerEnvelope SampledBatches::measure_envelope(const kernels::Resources& sampling,
                                                          const sampler::SamplerConfig& sc) {
  // The probe holds the bound (freed on return): its batches' pages and its filled hash table
  // are resident meanwhile.
  sampler::NeighborSampler probe =
      m_source ? sampler::NeighborSampler(sampling, *m_source, m_batch_size, sc)
               : sampler::NeighborSampler(sampling, m_part.graph, m_batch_size, sc);
  if (m_source) {  // buffers for the seeds' hop; they grow as the probe's hops need
    sampler::SamplerEnvelope small = probe.bound();
    for (sampler::LayerEnvelope& l : small.layers) l = {m_batch_size, 0, m_batch_size};
    m_source->reserve(small, sc.fanouts, sc.replace);
  }
  order(0);
  for (std::int64_t b = 0; b < std::min(m_batches, kProbeBatches); ++b) {
    const std::int64_t at = m_mine_at[static_cast<std::size_t>(b)];
    probe.sample(sampling, {m_mine.data() + at, m_mine_at[static_cast<std::size_t>(b) + 1] - at}, 0,
                 static_cast<std::uint64_t>(b));
  }
  std::vector<std::int64_t> words = sampler::envelope_words(probe.largest());
  if (m_comm.size() > 1)
    m_comm.allreduce(
        kernels::Span<std::int64_t>(words.data(), static_cast<std::int64_t>(words.size())),
        ReduceOp::Max);
  return sampler::provision_envelope(sampler::envelope_from_words(words), probe.bound(),
                                     m_config.envelope_margin);
}

void SampledBatches::size_slot(Slot& slot) {
  const kernels::Resources& batch_res =
      m_res.device() != kernels::Device::Cpu ? m_res : m_producer_res;
  const sampler::SamplerEnvelope& e = slot.sampler.envelope();
  slot.growths = slot.sampler.growths();
  if (m_slots.empty() && slot.growths == 0) {  // the first slot: the source and the gathers
    if (m_source) m_source->reserve(e, m_config.fanouts, m_config.replace);
    m_features.enable_batches(m_comm, e.layers.front().num_src,
                              static_cast<std::int64_t>(m_config.cache_mb * 1024 * 1024),
                              m_config.cache_policy);
  } else {
    m_features.grow_batches(e.layers.front().num_src);
  }
  slot.inputs = m_features.make_inputs(batch_res);
  slot.indptr.clear();
  slot.indices.clear();
  slot.gcn.clear();
  for (const sampler::LayerEnvelope& l : e.layers) {
    if (m_sample_on_host) {
      slot.indptr.emplace_back(m_res, l.num_dst + 1);
      slot.indices.emplace_back(m_res, l.num_edges);
    }
    if (m_graph == nn::GraphPreparation::Symmetric || m_graph == nn::GraphPreparation::SelfLoops) {
      const std::int64_t entries = l.num_edges + l.num_dst;
      // SelfLoops: the structure only (the layer weighs the edges itself).
      const std::int64_t values = m_graph == nn::GraphPreparation::Symmetric ? entries : 0;
      slot.gcn.push_back({Tensor<std::int64_t>(batch_res, l.num_dst + 1),
                          Tensor<NodeId>(batch_res, entries), Tensor<float>(batch_res, values), 0,
                          false});
    }
  }
  const std::lock_guard<std::mutex> lock(m_bounds_mutex);
  m_bounds.resize(e.layers.size());
  for (std::size_t l = 0; l < e.layers.size(); ++l)
    m_bounds[l] = {std::max(m_bounds[l].first, e.layers[l].num_src),
                   std::max(m_bounds[l].second, e.layers[l].num_dst)};
}

std::vector<std::pair<std::int64_t, std::int64_t>> SampledBatches::layer_bounds() const {
  const std::lock_guard<std::mutex> lock(m_bounds_mutex);
  return m_bounds;
}

std::size_t SampledBatches::bound_bytes() const {
  return m_slots.front()->sampler.bound().bytes() * m_slots.size();
}

std::size_t SampledBatches::envelope_bytes() const {
  std::size_t total = 0;
  for (const auto& s : m_slots) total += s->sampler.envelope_bytes();
  return total;
}

std::size_t SampledBatches::peak_bytes() const {
  std::size_t peak = 0;
  for (const auto& s : m_slots) peak = std::max(peak, s->sampler.peak_bytes());
  return peak;
}

void SampledBatches::begin_epoch(std::uint64_t epoch, std::int64_t first_batch) {
  HALO_EXPECTS(first_batch >= 0 && first_batch < m_batches,
               "SampledBatches::begin_epoch: no batch " + std::to_string(first_batch));
  m_epoch = epoch;
  m_first = first_batch;
  m_next = first_batch;
  m_stats = {};
  for (auto& s : m_slots) {
    s->fetch = {};
    s->host_syncs = 0;
    s->sample_s = s->gather_s = s->copy_s = 0;
    s->sampled_edges = 0;
  }
  if (m_source) m_source->reset_bytes();
  order(epoch);
  if (m_mine_d.numel() > 0)  // one upload of the epoch's seeds
    kernels::copy_bytes(m_res, m_mine_d.data(), m_res.device(), m_mine.data(), kernels::Device::Cpu,
                        m_mine.size() * sizeof(NodeId));
  if (m_prefetch > 0) m_pipeline = std::make_unique<Pipeline>(*this, m_first, m_batches);
}

void epoch_order(std::uint64_t seed, std::uint64_t epoch, std::span<const NodeId> original,
                 std::vector<std::uint64_t>& keys, std::vector<std::int64_t>& order) {
  const std::uint64_t key =
      kernels::rng::key(seed, kernels::rng::stream_id(kernels::rng::kStreamShuffle, epoch, 0x5eed));
  keys.resize(original.size());
  order.resize(original.size());
  std::iota(order.begin(), order.end(), std::int64_t{0});
  for (std::size_t i = 0; i < keys.size(); ++i)
    keys[i] = kernels::rng::draw_keyed(key, static_cast<std::uint64_t>(original[i]));
  std::sort(order.begin(), order.end(), [&](std::int64_t a, std::int64_t b) {
    const auto ua = static_cast<std::size_t>(a), ub = static_cast<std::size_t>(b);
    return keys[ua] != keys[ub] ? keys[ua] < keys[ub] : original[ua] < original[ub];
  });
}

void SampledBatches::order(std::uint64_t epoch) {
  // Every rank orders the whole graph's training nodes the same way, by a key of their
  // original ids, and keeps its own.
  const NodeId* train = m_fixed.empty() ? m_part.all_train.data() : m_fixed.data();
  if (m_fixed.empty()) {  // given seeds keep their order
    epoch_order(m_seed, epoch,
                {m_part.all_train_original.data(), static_cast<std::size_t>(m_order.size())},
                m_keys, m_order);
  } else {
    std::iota(m_order.begin(), m_order.end(), std::int64_t{0});
  }
  m_mine.clear();
  m_mine_at.assign(1, 0);
  const auto n = static_cast<std::int64_t>(m_order.size());
  for (std::int64_t b = 0; b < m_batches; ++b) {
    for (std::int64_t i = b * m_batch_size; i < std::min(n, (b + 1) * m_batch_size); ++i) {
      const NodeId v = train[m_order[static_cast<std::size_t>(i)]];
      if (m_part.ids.owns(v)) m_mine.push_back(v);
    }
    m_mine_at.push_back(static_cast<std::int64_t>(m_mine.size()));
  }
}

void SampledBatches::prepare(Slot& slot, std::int64_t b) {
  const bool on_device = m_res.device() != kernels::Device::Cpu;
  const kernels::Resources& work = on_device ? m_res : m_producer_res;  // the batch's tensors
  const kernels::Resources& sampling = on_device && !m_sample_on_host ? m_res : m_producer_res;
  Comm& comm = m_producer_comm ? *m_producer_comm : m_comm;
  const std::int64_t begin = m_mine_at[static_cast<std::size_t>(b)];
  const std::int64_t count = m_mine_at[static_cast<std::size_t>(b) + 1] - begin;
  const bool device_seeds = m_mine_d.numel() > 0;
  const kernels::Span<const NodeId> seeds{(device_seeds ? m_mine_d.data() : m_mine.data()) + begin,
                                          count};
  auto mark = std::chrono::steady_clock::now();
  const auto lap = [&mark](double& field) {  // host time, a few clock reads per batch
    const auto now = std::chrono::steady_clock::now();
    field += std::chrono::duration<double>(now - mark).count();
    mark = now;
  };
  const sampler::MiniBatch& mb =
      slot.sampler.sample(sampling, seeds, m_epoch, static_cast<std::uint64_t>(b),
                          device_seeds ? m_res.device() : kernels::Device::Cpu);
  slot.host_syncs += slot.sampler.host_syncs_last_batch();
  if (slot.sampler.growths() != slot.growths) {  // past the measured envelope: once, rarely
    size_slot(slot);
    ++m_growths;
  }
  lap(slot.sample_s);
  const std::uint64_t dropout_key = m_epoch << 32 | static_cast<std::uint64_t>(b);
  const sampler::GatherDropout dropout{{m_seed, dropout_key, nn::kInputDropoutLayer, 0, {}},
                                       m_input_dropout};
  m_features.gather(work, comm, mb.input_nodes, slot.inputs, slot.fetch, slot.host_syncs, dropout);

  // The seeds' labels (owned nodes: local id = partition id - first owned).
  slot.labels.reshape_within(count, 1);
  const NodeId first = m_part.ids.first_owned();
  if (m_sample_on_host) {
    auto* staged = static_cast<std::int32_t*>(slot.label_stage.data());
    sampler::gather_values(m_producer_res, m_part.labels.data(), seeds, first, staged);
    kernels::copy_bytes_async(m_res, slot.labels.data(), m_res.device(), staged,
                              kernels::Device::Cpu, static_cast<std::size_t>(count) * 4);
  } else {
    sampler::gather_values(work, m_labels.data, seeds, first, slot.labels.data());
  }
  lap(slot.gather_s);

  slot.graphs.clear();  // capacity kept: one entry per layer
  for (std::size_t l = 0; l < mb.blocks.size(); ++l) {
    sampler::Block block = mb.blocks[l];
    slot.sampled_edges += block.csr.num_entries;
    if (m_sample_on_host) {  // the host sampler's block, copied to the device
      const std::int64_t edges = block.csr.num_entries;
      slot.indptr[l].reshape_within(block.num_dst() + 1, 1);
      slot.indices[l].reshape_within(edges, 1);
      kernels::copy_bytes_async(m_res, slot.indptr[l].data(), m_res.device(), block.csr.indptr,
                                kernels::Device::Cpu, slot.indptr[l].bytes());
      kernels::copy_bytes_async(m_res, slot.indices[l].data(), m_res.device(), block.csr.indices,
                                kernels::Device::Cpu, slot.indices[l].bytes());
      block.csr.indptr = slot.indptr[l].data();
      block.csr.indices = slot.indices[l].data();
      lap(slot.copy_s);
    }
    nn::Adjacency<float> a(block.csr);
    if (m_graph == nn::GraphPreparation::Symmetric) {
      sampler::gcn_block_weights(work, block, slot.inputs.degrees.data(), slot.gcn[l]);
      a = nn::Adjacency<float>(slot.gcn[l].view());
    } else if (m_graph == nn::GraphPreparation::SelfLoops) {
      sampler::self_loop_block(work, block, slot.gcn[l]);
      a = nn::Adjacency<float>(slot.gcn[l].view());
    }
    // A block's sources are a prefix of the input nodes: their original ids key the dropout.
    a.source_ids = {slot.inputs.original.data, block.num_src()};
    slot.graphs.push_back(a);
    lap(slot.gather_s);
  }
  const auto n = static_cast<std::int64_t>(m_order.size());
  slot.batch.graphs = slot.graphs;
  slot.batch.x = &slot.inputs.x;
  slot.batch.labels = {slot.labels.data(), count};
  slot.batch.rows = {m_iota.data(), count};
  slot.batch.loss_rows = std::min(m_batch_size, n - b * m_batch_size);
  slot.batch.dropout_key = dropout_key;
  slot.batch.input_dropped = m_input_dropout > 0;
}

const Batch& SampledBatches::next() {
  HALO_EXPECTS(m_next < m_batches, "SampledBatches::next: past the epoch's last batch");
  const std::int64_t b = m_next++;
  if (!m_pipeline) {
    prepare(*m_slots.front(), b);
    return m_slots.front()->batch;
  }
  // The slot computed last is free again once the next one is asked for.
  const auto start = std::chrono::steady_clock::now();
  const int s = m_pipeline->take(b > m_first ? m_in_use : -1);
  m_stats.batch_wait_s += seconds_since(start);
  m_in_use = s;
  return m_slots[static_cast<std::size_t>(s)]->batch;
}

void SampledBatches::end_epoch(EpochStats& s) {
  if (m_pipeline) {
    // An epoch stopped early: the producer fills the free slots, then sees the stop (every
    // rank's producer prepares the same batches, so their collectives match).
    if (m_next == m_batches) m_pipeline->finish();
    m_pipeline.reset();
  }
  for (const auto& slot : m_slots) {
    s.remote_rows += slot->fetch.remote_rows;
    s.cache_hits += slot->fetch.cache_hits;
    s.feature_bytes += slot->fetch.bytes;
    s.fetch_time_s += slot->fetch.seconds;
    s.disk_rows += slot->fetch.file_rows;
    s.disk_hits += slot->fetch.file_hits;
    s.disk_bytes += slot->fetch.file_bytes;
    s.disk_read_s += slot->fetch.file_seconds;
    s.host_syncs += slot->host_syncs;
    s.profile.sample_s += slot->sample_s;
    s.profile.gather_s += slot->gather_s;
    s.profile.copy_s += slot->copy_s;
  }
  // The edges sampled this epoch over all ranks (the graph's one relation).
  std::int64_t edges = 0;
  for (const auto& slot : m_slots) edges += slot->sampled_edges;
  if (m_comm.size() > 1) m_comm.allreduce(kernels::Span<std::int64_t>(&edges, 1), ReduceOp::Sum);
  s.sampled_edges = {edges};
  s.batch_wait_s += m_stats.batch_wait_s;
  if (m_source) s.sampling_bytes += m_source->bytes_sent();
  m_features.end_epoch(m_comm, m_epoch);
}

}  // namespace halo::runtime
