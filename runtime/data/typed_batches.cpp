// Typed batch sources (runtime/data/typed_batches.hpp).
#include <algorithm>
#include <chrono>
#include <cstring>
#include <string>
#include <type_traits>
#include <utility>
#include <variant>

#include <halo/kernels/rng.hpp>
#include <halo/runtime/data/remote_neighbors.hpp>
#include <halo/runtime/data/typed_batches.hpp>
#include <halo/sampler/batch.hpp>
#include <halo/sampler/hetero_sampler.hpp>

namespace halo::runtime {

using kernels::NodeId;
using kernels::Tensor;

namespace {

double seconds_since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

}  // namespace

TypeOwners gather_type_owners(const partition::HeteroPartLayout& layout, Comm& comm) {
  TypeOwners o;
  const int p = comm.size();
  for (std::size_t t = 0; t < layout.num_owned.size(); ++t) {
    std::vector<std::size_t> counts;
    const std::vector<std::byte> all =
        comm.allgatherv(layout.original[t].data(),
                        static_cast<std::size_t>(layout.num_owned[t]) * sizeof(NodeId), counts);
    std::vector<NodeId> ids(all.size() / sizeof(NodeId));
    std::memcpy(ids.data(), all.data(), all.size());
    const auto n = static_cast<std::size_t>(layout.global_nodes[t]);
    o.owner.emplace_back(n, -1);
    o.row.emplace_back(n, 0);
    std::vector<std::int64_t> book(1, 0);
    std::size_t at = 0;
    for (int k = 0; k < p; ++k) {
      const std::size_t owned = counts[static_cast<std::size_t>(k)] / sizeof(NodeId);
      for (std::size_t i = 0; i < owned; ++i) {
        o.owner[t][static_cast<std::size_t>(ids[at + i])] = k;
        o.row[t][static_cast<std::size_t>(ids[at + i])] = static_cast<NodeId>(i);
      }
      at += owned;
      book.push_back(book.back() + static_cast<std::int64_t>(owned));
    }
    o.book.push_back(std::move(book));
  }
  return o;
}

// ---- the whole graph ---------------------------------------------------------------------------

FullTypedGraph::FullTypedGraph(nn::HeteroGraphView<float>& view,
                               std::span<const kernels::FeatureMatrix<float>* const> x,
                               kernels::Span<const std::int32_t> labels,
                               kernels::Span<const NodeId> train_rows, std::int64_t num_train)
    : m_view(view) {
  m_batch.graphs = {&m_view, 1};
  m_batch.x = x;
  m_batch.labels = labels;
  m_batch.rows = train_rows;
  m_batch.loss_rows = num_train;
}

void FullTypedGraph::begin_epoch(std::uint64_t epoch, std::int64_t, nn::HeteroStageTimes* stages) {
  m_view.times = stages;  // the subgraph is built once, before training
  m_batch.dropout_key = epoch;
}

// ---- sampled typed blocks ----------------------------------------------------------------------

SampledTypedBatches::SampledTypedBatches(const kernels::Resources& res, const HeteroShard& shard,
                                         const TypeOwners& owners,
                                         const nn::HeteroGraphView<float>& view,
                                         std::span<const std::int32_t> labels,
                                         const TrainConfig& config)
    : m_res(res),
      m_shard(shard),
      m_owners(owners),
      m_labels(labels),
      m_config(*config.mini_batch),
      m_seed(config.seed),
      m_normalize(config.normalize_features),
      m_profile(config.profile) {
  const datasets::HeteroGraph& g = shard.graph;
  const partition::HeteroPartLayout& layout = shard.layout;
  HALO_EXPECTS(res.device() == kernels::Device::Cpu,
               "train: heterogeneous mini-batch training runs on the CPU");
  HALO_EXPECTS(owners.owner.size() == g.node_types.size(),
               "typed batches: the part's batches need its owners (gather_type_owners)");
  sampler::HeteroSamplerConfig sc;
  sc.fanouts = m_config.relation_fanouts;
  if (sc.fanouts.empty())
    for (const int f : m_config.fanouts) sc.fanouts.emplace_back(g.relations.size(), f);
  HALO_EXPECTS(static_cast<int>(sc.fanouts.size()) == config.hetero.num_layers,
               "train: " + std::to_string(sc.fanouts.size()) + " fan-outs for " +
                   std::to_string(config.hetero.num_layers) + " layers (one per layer)");
  sc.replace = m_config.replace;
  sc.seed = config.seed;
  m_sampler = std::make_unique<sampler::HeteroNeighborSampler>(
      res, g, m_config.batch_size, sc,
      sampler::HeteroNeighborSources{layout.global_nodes, neighbor_sources()});
  const auto& env = m_sampler->envelope();
  const std::size_t nt = g.node_types.size();
  // The remote sources' buffers for the envelope.
  for (std::size_t r = 0; r < m_remote.size(); ++r) {
    const auto d = static_cast<std::size_t>(g.relations[r].dst_type);
    sampler::SamplerEnvelope e;
    std::vector<int> fanouts;
    for (std::size_t l = 0; l < env.size(); ++l) {
      e.layers.push_back({env[l].num_dst[d], env[l].num_edges[r], 0});
      fanouts.push_back(sc.fanouts[l][r]);
    }
    m_remote[r]->reserve(e, fanouts, sc.replace);
  }
  open_stores(env[0].num_src);
  m_blocks.assign(env.size(), {});
  m_block_ids.resize(env.size());
  for (std::size_t l = 0; l < env.size(); ++l) {
    nn::HeteroGraphView<float>& v = m_blocks[l];
    v.type_offset = view.type_offset;
    v.source_ids.assign(nt, {});
    for (std::size_t t = 0; t < nt; ++t)
      m_block_ids[l].push_back(Tensor<NodeId>(res, std::max<std::int64_t>(1, env[l].num_src[t])));
    for (const auto& r : view.relations)
      v.relations.push_back({r.name, r.src_type, r.dst_type, {}});
  }
  // The featured types' inputs are their stores' rows; the featureless ones have none.
  for (std::size_t t = 0; t < nt; ++t)
    m_inputs.push_back(m_stores[t] ? &m_store_inputs[t].x : &m_no_features);
  // Every training node of the whole graph, by its global id: the ranks cut the same batches
  // and each keeps the seeds it owns.
  const auto tt = static_cast<std::size_t>(g.target_type);
  std::vector<NodeId> mine;
  for (std::int64_t i = 0; i < g.train_idx.numel(); ++i)
    mine.push_back(layout.original[tt].data()[g.train_idx.data()[i]]);
  std::vector<std::size_t> counts;
  const std::vector<std::byte> all =
      shard.comm->allgatherv(mine.data(), mine.size() * sizeof(NodeId), counts);
  m_train.resize(all.size() / sizeof(NodeId));
  std::memcpy(m_train.data(), all.data(), all.size());
  m_batches = epoch_batches(m_config, static_cast<std::int64_t>(m_train.size()));
  m_batch_labels = Tensor<std::int32_t>(res, m_config.batch_size);
  m_batch_rows = Tensor<NodeId>(res, m_config.batch_size);
  for (std::int64_t i = 0; i < m_config.batch_size; ++i)
    m_batch_rows.data()[i] = static_cast<NodeId>(i);
  m_seeds.reserve(static_cast<std::size_t>(m_config.batch_size));
  m_order.reserve(m_train.size());
  m_batch.graphs = m_blocks;
  m_batch.x = m_inputs;
}

SampledTypedBatches::~SampledTypedBatches() = default;

std::vector<sampler::NeighborSource*> SampledTypedBatches::neighbor_sources() {
  const datasets::HeteroGraph& g = m_shard.graph;
  const partition::HeteroPartLayout& layout = m_shard.layout;
  Comm& comm = *m_shard.comm;
  const kernels::Resources host = host_resources(m_res);
  const std::size_t nr = g.relations.size();
  std::vector<sampler::NeighborSource*> sources;
  if (layout.identity()) {
    // The one part of one process: every row is here and its own id, so the sampler draws from
    // the relations as stored (no copy by global id, nothing to serve).
    for (const datasets::Relation& rel : g.relations) {
      m_local.push_back(std::make_unique<sampler::LocalNeighbors>(rel.adj.view()));
      m_sources_by_id.push_back(&rel.adj);
      sources.push_back(m_local.back().get());
    }
    return sources;
  }
  // Per relation: the owned rows with global source ids in ascending order (one process's
  // order, so the owner draws what one process draws), served to every rank.
  m_owned_rows.reserve(nr);
  for (std::size_t r = 0; r < nr; ++r) {
    const datasets::Relation& rel = g.relations[r];
    const auto d = static_cast<std::size_t>(rel.dst_type),
               s = static_cast<std::size_t>(rel.src_type);
    const std::int64_t owned = layout.num_owned[d];
    const NodeId* src = layout.original[s].data();
    std::vector<std::int64_t> indptr(static_cast<std::size_t>(owned) + 1, 0);
    std::vector<NodeId> indices;
    std::int64_t stats[2] = {0, 0};  // entries, largest row
    for (std::int64_t i = 0; i < owned; ++i) {
      const auto first = static_cast<std::ptrdiff_t>(indices.size());
      for (std::int64_t e = rel.adj.indptr.data()[i]; e < rel.adj.indptr.data()[i + 1]; ++e)
        indices.push_back(src[rel.adj.indices.data()[e]]);
      std::sort(indices.begin() + first, indices.end());
      indptr[static_cast<std::size_t>(i) + 1] = std::ssize(indices);
      stats[1] = std::max<std::int64_t>(stats[1], std::ssize(indices) - first);
    }
    stats[0] = std::ssize(indices);
    comm.allreduce(kernels::Span<std::int64_t>(stats, 1), ReduceOp::Sum);
    comm.allreduce(kernels::Span<std::int64_t>(stats + 1, 1), ReduceOp::Max);
    const auto rows = static_cast<std::int64_t>(indices.size());
    m_owned_rows.push_back(
        datasets::Graph{Tensor<std::int64_t>::from_host(host, indptr, owned + 1, 1),
                        rows > 0 ? Tensor<NodeId>::from_host(host, indices, rows, 1)
                                 : Tensor<NodeId>(host, kernels::Device::Cpu, 0),
                        {},
                        layout.global_nodes[s],
                        false});
    m_remote.push_back(std::make_unique<RemoteNeighbors>(
        sampler::LocalNeighbors(m_owned_rows.back().view(), layout.original[d].data()),
        std::span<const std::int32_t>(m_owners.owner[d]), std::span<const NodeId>(m_owners.row[d]),
        sampler::DegreeStats{layout.global_nodes[d], stats[0], stats[1]}, comm));
    sources.push_back(m_remote.back().get());
  }
  for (const datasets::Graph& rows : m_owned_rows) m_sources_by_id.push_back(&rows);
  return sources;
}

void SampledTypedBatches::open_stores(const std::vector<std::int64_t>& batch_rows) {
  const datasets::HeteroGraph& g = m_shard.graph;
  const partition::HeteroPartLayout& layout = m_shard.layout;
  const kernels::Resources host = host_resources(m_res);
  const int me = m_shard.comm->rank();
  std::int64_t rows = 1;
  for (std::size_t t = 0; t < g.node_types.size(); ++t) {
    const datasets::NodeType& type = g.node_types[t];
    rows = std::max(rows, batch_rows[t]);
    m_store_inputs.emplace_back();
    m_stores.push_back(nullptr);
    if (!type.has_features()) continue;
    // A feature store per type with features over its owned rows (per-type partition ids),
    // remote rows fetched from their owners. The type's halo: the remote sources of the owned
    // rows over every relation from it (what the cache may hold), in partition-id order; every
    // node's degree: its edges as a source over those relations, summed over the ranks (the
    // cache's degree policy).
    const std::int64_t owned = layout.num_owned[t];
    std::vector<std::int64_t> degree(static_cast<std::size_t>(layout.global_nodes[t]), 0);
    std::vector<std::pair<NodeId, NodeId>> remote;  // (partition id, global id)
    for (std::size_t r = 0; r < g.relations.size(); ++r) {
      if (static_cast<std::size_t>(g.relations[r].src_type) != t) continue;
      const Tensor<NodeId>& sources = m_sources_by_id[r]->indices;
      for (std::int64_t e = 0; e < sources.numel(); ++e) {
        const NodeId u = sources.data()[e];
        ++degree[static_cast<std::size_t>(u)];
        if (m_owners.owner[t][static_cast<std::size_t>(u)] != me)
          remote.emplace_back(m_owners.partition_id(t, u), u);
      }
    }
    m_shard.comm->allreduce(kernels::Span<std::int64_t>(degree.data(), std::ssize(degree)),
                            ReduceOp::Sum);
    std::sort(remote.begin(), remote.end());
    remote.erase(std::unique(remote.begin(), remote.end()), remote.end());
    const NodeId* o = layout.original[t].data();
    std::vector<NodeId> original(o, o + owned), halo;
    for (const auto& [pid, u] : remote) halo.push_back(pid), original.push_back(u);
    std::vector<std::int64_t> degrees;
    for (const NodeId u : original) degrees.push_back(degree[static_cast<std::size_t>(u)]);
    const auto local = static_cast<std::int64_t>(original.size());
    const auto num_halo = static_cast<std::int64_t>(halo.size());
    auto part = std::make_unique<partition::Part>();
    part->ids = partition::IdMap(partition::PartitionBook(m_owners.book[t]), me,
                                 Tensor<NodeId>::from_host(host, original, local, 1),
                                 num_halo > 0 ? Tensor<NodeId>::from_host(host, halo, num_halo, 1)
                                              : Tensor<NodeId>(host, kernels::Device::Cpu, 0));
    part->degrees = Tensor<std::int64_t>::from_host(host, degrees, local, 1);
    part->features = std::visit(
        [&](const auto& x) -> kernels::FeatureMatrix<float> {
          using X = std::decay_t<decltype(x)>;
          if constexpr (std::is_same_v<X, Tensor<float>>) {
            const std::vector<float> v(x.data(), x.data() + owned * x.cols());
            return Tensor<float>::from_host(host, v, owned, x.cols());
          } else {
            const std::int64_t* ip = x.indptr.data();
            const std::int64_t m = ip[owned];
            return kernels::CsrMatrix<std::int32_t, float>{
                Tensor<std::int64_t>::from_host(host, std::vector<std::int64_t>(ip, ip + owned + 1),
                                                owned + 1, 1),
                Tensor<std::int32_t>::from_host(
                    host, std::vector<std::int32_t>(x.indices.data(), x.indices.data() + m), m, 1),
                x.values.empty()
                    ? Tensor<float>()
                    : Tensor<float>::from_host(
                          host, std::vector<float>(x.values.data(), x.values.data() + m), m, 1),
                x.num_cols, false};
          }
        },
        type.features);
    m_stores.back() = std::make_unique<FeatureStore>(m_res, *part, m_normalize);
    m_stores.back()->enable_batches(*m_shard.comm, std::max<std::int64_t>(1, batch_rows[t]),
                                    static_cast<std::int64_t>(m_config.cache_mb * 1024 * 1024),
                                    m_config.cache_policy);
    m_store_inputs.back() = m_stores.back()->make_inputs(m_res);
    m_type_parts.push_back(std::move(part));
  }
  m_pids.resize(static_cast<std::size_t>(rows));
}

void SampledTypedBatches::begin_epoch(std::uint64_t epoch, std::int64_t first_batch,
                                      nn::HeteroStageTimes* stages) {
  m_epoch = epoch;
  m_next = first_batch;
  m_stages = stages;
  for (auto& v : m_blocks) v.times = stages;
  // The epoch's order of the training nodes: by a key drawn per (seed, epoch, id), ties by id.
  const std::uint64_t key = kernels::rng::key(kernels::rng::key(m_seed, 0x4e7e), epoch);
  m_order.clear();
  for (const NodeId v : m_train)
    m_order.emplace_back(kernels::rng::draw_keyed(key, static_cast<std::uint64_t>(v)), v);
  std::sort(m_order.begin(), m_order.end());
  m_sampled_edges.clear();
  m_fetch = {};
  m_sample_s = m_gather_s = 0;
}

const TypedBatch& SampledTypedBatches::next() {
  const auto start = std::chrono::steady_clock::now();
  const std::int64_t b = m_next++;
  const std::int64_t bs = m_config.batch_size;
  const datasets::HeteroGraph& g = m_shard.graph;
  const auto tt = static_cast<std::size_t>(g.target_type);
  const int me = m_shard.comm->rank();
  m_seeds.clear();
  const std::int64_t end = std::min<std::int64_t>((b + 1) * bs, std::ssize(m_order));
  for (std::int64_t i = b * bs; i < end; ++i) {
    const NodeId v = m_order[static_cast<std::size_t>(i)].second;
    if (m_owners.owner[tt][static_cast<std::size_t>(v)] == me) m_seeds.push_back(v);
  }
  const sampler::HeteroMiniBatch& mb = m_sampler->sample(
      m_res, {m_seeds.data(), std::ssize(m_seeds)}, m_epoch, static_cast<std::uint64_t>(b));
  const auto sampled = std::chrono::steady_clock::now();
  m_sample_s += std::chrono::duration<double>(sampled - start).count();
  // The blocks' views, the input rows of block 0's sources, the seeds' labels.
  const std::size_t nt = g.node_types.size();
  for (std::size_t l = 0; l < mb.blocks.size(); ++l) {
    const sampler::HeteroBlock& blk = mb.blocks[l];
    nn::HeteroGraphView<float>& v = m_blocks[l];
    v.num_src = blk.num_src;
    v.num_dst = blk.num_dst;
    for (std::size_t r = 0; r < v.relations.size(); ++r) v.relations[r].adj = blk.adj[r];
    for (std::size_t t = 0; t < nt; ++t) {
      NodeId* ids = m_block_ids[l][t].data();
      const auto offset = static_cast<NodeId>(v.type_offset[t]);
      for (std::int64_t i = 0; i < blk.num_src[t]; ++i) ids[i] = offset + blk.src_ids[t][i];
      v.source_ids[t] = {ids, blk.num_src[t]};
    }
  }
  for (std::size_t t = 0; t < nt; ++t) {  // every rank gathers its inputs of each type
    if (!m_stores[t]) continue;
    const kernels::Span<const NodeId> ids = mb.blocks[0].src_ids[t];
    for (std::int64_t i = 0; i < ids.size; ++i)
      m_pids[static_cast<std::size_t>(i)] = m_owners.partition_id(t, ids[i]);
    m_stores[t]->gather(m_res, *m_shard.comm, {m_pids.data(), ids.size}, m_store_inputs[t], m_fetch,
                        m_syncs);
  }
  for (std::int64_t i = 0; i < mb.seeds.size; ++i)
    m_batch_labels.data()[i] =
        m_labels[static_cast<std::size_t>(m_owners.row[tt][static_cast<std::size_t>(mb.seeds[i])])];
  m_gather_s += seconds_since(sampled);
  if (m_stages) m_stages->subgraph_build_s += seconds_since(start);
  m_sampled_edges.resize(mb.sampled_edges.size(), 0);
  for (std::size_t r = 0; r < mb.sampled_edges.size(); ++r)
    m_sampled_edges[r] += mb.sampled_edges[r];
  const auto n = std::ssize(m_seeds);
  m_batch.labels = {m_batch_labels.data(), n};
  m_batch.rows = {m_batch_rows.data(), n};
  m_batch.loss_rows = end - b * bs;  // the batch's seeds over all ranks
  // Dropout keyed by epoch * batches + b: one batch an epoch draws the full graph's masks.
  m_batch.dropout_key =
      m_epoch * static_cast<std::uint64_t>(m_batches) + static_cast<std::uint64_t>(b);
  return m_batch;
}

void SampledTypedBatches::stop_epoch() {
  for (auto& v : m_blocks) v.times = nullptr;
  m_stages = nullptr;
}

void SampledTypedBatches::end_epoch(EpochStats& s) {
  stop_epoch();
  for (const auto& store : m_stores)
    if (store) store->end_epoch(*m_shard.comm, m_epoch);  // the access policy fills its cache
  s.sampled_edges = m_sampled_edges;
  s.remote_rows = m_fetch.remote_rows;
  s.cache_hits = m_fetch.cache_hits;
  s.feature_bytes = m_fetch.bytes;
  s.fetch_time_s = m_fetch.seconds;
  if (m_profile) {
    s.profile.sample_s += m_sample_s;
    s.profile.gather_s += m_gather_s;
    // Without a producer thread the step waits for the whole preparation.
    s.profile.wait_s += m_sample_s + m_gather_s;
  }
  // The edges every rank sampled, summed (the fetch counters: the task's
  // reduce_epoch_counters).
  m_shard.comm->allreduce(
      kernels::Span<std::int64_t>(s.sampled_edges.data(), std::ssize(s.sampled_edges)),
      ReduceOp::Sum);
}

}  // namespace halo::runtime
