// Heterogeneous node classification: R-GCN and HGT on typed graphs, full graph or sampled typed
// blocks, one process or the ranks of a heterogeneous partition; accuracy and F1 scores.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <functional>
#include <limits>
#include <memory>
#include <nlohmann/json.hpp>
#include <span>
#include <string>
#include <type_traits>
#include <utility>
#include <variant>
#include <vector>

#include <halo/kernels/loss.hpp>
#include <halo/kernels/rng.hpp>
#include <halo/runtime/data/distributed_embedding.hpp>
#include <halo/runtime/data/feature_store.hpp>
#include <halo/runtime/data/halo_exchange.hpp>
#include <halo/runtime/data/remote_neighbors.hpp>
#include <halo/runtime/detail/timing.hpp>
#include <halo/runtime/engine/detail/task_support.hpp>
#include <halo/runtime/tasks/hetero/hetero_classification.hpp>
#include <halo/runtime/tasks/task_model_file.hpp>
#include <halo/sampler/hetero_sampler.hpp>

namespace halo::runtime {

using detail::adam_config;
using detail::allreduce_gradients;
using detail::Clock;
using detail::expect_finite;
using detail::seconds_since;
using kernels::NodeId;
using kernels::Tensor;

namespace {

/// Heterogeneous node classification on a HeteroShard: full graph or typed mini-batches, one
/// process or a rank's part of a heterogeneous partition.
class HeteroNodeClassification final : public Task {
 public:
  HeteroNodeClassification(const kernels::Resources& res, HeteroShard& shard,
                           const TrainConfig& config, nn::HeteroModel<float>& model);
  Comm& comm() override { return *m_shard.comm; }
  Selection selection() const override { return {"val_accuracy", "val_loss"}; }
  CheckpointIdentity identity() const override;
  double preprocess_time_s() const override { return m_preprocess_s; }
  bool train_epoch(std::uint64_t epoch, EpochStats& s, const StepCallback& on_step, Partial& at,
                   const std::function<bool()>& stop) override;
  Metrics evaluate() override;
  std::vector<NamedTensor> state() override {
    std::vector<NamedTensor> v = detail::parameter_state(m_params);
    for (auto* e : m_tables) v.push_back({e->name(), &e->table()});
    return v;
  }
  std::vector<NamedTensor> optimizer_state() override {
    std::vector<NamedTensor> v = detail::adam_state(m_optimizer, m_params);
    for (std::size_t i = 0; i < m_tables.size(); ++i) {
      v.push_back({"sparse_adam.m/" + m_tables[i]->name(), &m_sparse->first_moment(i)});
      v.push_back({"sparse_adam.v/" + m_tables[i]->name(), &m_sparse->second_moment(i)});
    }
    return v;
  }
  std::vector<std::pair<std::string, std::int64_t>> counters() const override {
    std::vector<std::pair<std::string, std::int64_t>> v = {{"adam.steps", m_optimizer.steps()}};
    for (std::size_t i = 0; i < m_tables.size(); ++i)
      v.emplace_back("sparse_adam.steps/" + m_tables[i]->name(), m_sparse->steps(i));
    return v;
  }
  void set_counter(const std::string& name, std::int64_t value) override {
    if (name == "adam.steps") return m_optimizer.set_steps(value);
    for (std::size_t i = 0; i < m_tables.size(); ++i)
      if (name == "sparse_adam.steps/" + m_tables[i]->name()) return m_sparse->set_steps(i, value);
    unknown_counter(name);
  }
  std::int64_t batches_per_epoch() const override {
    return m_sampler ? epoch_batches(*m_config.mini_batch, m_num_train) : 1;
  }
  /// A partition's spread embedding rows, with the kept epoch's values, gathered into the
  /// model's tables on every rank: the trained model is whole (saved, applied to any data).
  void finish(TrainResult&) override {
    const kernels::Resources host = host_resources(m_res);
    for (std::size_t i = 0; i < m_spread.size(); ++i)
      m_model.set_embedding(m_spread_types[i], m_spread[i]->gather(host));
    m_gathered = true;
  }
  ~HeteroNodeClassification() override {
    // A run that did not finish (preempted, failed) leaves the model no table of the spread
    // rows: an empty one, which a later pass refuses, rather than rows this task owned.
    if (m_gathered) return;
    for (const std::int32_t t : m_spread_types)
      m_model.set_embedding(
          t, std::make_unique<nn::SparseEmbedding<float>>(host_resources(m_res), "embedding", 0,
                                                          m_config.hetero.hidden, 0, 0));
  }
  /// The target type's logits of the current parameters (no dropout), on the host.
  Tensor<float> logits() {
    const nn::Context ctx{&m_res, /*training=*/false, m_config.seed, 0, 0};
    return m_model.forward(ctx, m_view, m_inputs).clone(host_resources(m_res));
  }

 private:
  /// Mini-batch: the epoch's batches on sampled typed blocks.
  bool train_minibatch(std::uint64_t epoch, EpochStats& s, const StepCallback& on_step, Partial& at,
                       const std::function<bool()>& stop);
  /// The views, features and labels of one sampled batch.
  void prepare_batch(const sampler::HeteroMiniBatch& mb, nn::HeteroStageTimes& stages);
  /// A partition: per type the rank owning every node and its row there (m_owner, m_row,
  /// m_type_book), gathered once.
  void gather_owners();
  /// Mini-batch on a partition: the relations' remote rows and the feature stores per type;
  /// returns the sampler's sources.
  sampler::HeteroNeighborSources enable_remote_batches();
  /// Node u of type t (its type-local global id) as the type's feature stores number it: its
  /// owner's first partition id plus its row there.
  NodeId type_partition_id(std::size_t t, NodeId u) const {
    const auto v = static_cast<std::size_t>(u);
    return static_cast<NodeId>(m_type_book[t][static_cast<std::size_t>(m_owner[t][v])] +
                               m_row[t][v]);
  }

  const kernels::Resources& m_res;
  HeteroShard& m_shard;
  TrainConfig m_config;
  nn::HeteroModel<float>& m_model;
  std::vector<nn::Parameter<float>*> m_params;
  std::vector<kernels::FeatureMatrix<float>> m_features;  // per type, on res's device
  std::vector<const kernels::FeatureMatrix<float>*> m_inputs;
  std::vector<datasets::Graph> m_adj;  // per relation, on res's device
  nn::HeteroGraphView<float> m_view;
  Tensor<std::int32_t> m_labels;
  Tensor<NodeId> m_train, m_val, m_test;
  std::vector<std::int32_t> m_labels_host;
  std::vector<NodeId> m_val_host, m_test_host;
  nn::Adam<float> m_optimizer;
  // The featureless types' tables SparseAdam updates: the model's, or on a partition the rows
  // this rank owns of each (m_spread).
  std::vector<std::unique_ptr<DistributedEmbedding>> m_spread;
  std::vector<std::int32_t> m_spread_types;  // the type of each
  bool m_gathered = false;
  std::vector<nn::SparseEmbedding<float>*> m_tables;
  std::unique_ptr<nn::SparseAdam<float>> m_sparse;
  Tensor<float> m_dlogits;
  // Mini-batch (TrainConfig::mini_batch), CPU: the sampler and per-batch buffers sized once
  // from its envelope.
  std::unique_ptr<sampler::HeteroNeighborSampler> m_sampler;
  std::vector<nn::HeteroGraphView<float>> m_blocks;      // per layer
  std::vector<std::vector<Tensor<NodeId>>> m_block_ids;  // per layer, type: global ids
  std::vector<kernels::FeatureMatrix<float>> m_batch_x;  // per type: block 0's rows
  std::vector<const kernels::FeatureMatrix<float>*> m_batch_inputs;
  Tensor<std::int64_t> m_scan_sums;
  Tensor<std::int32_t> m_batch_labels;
  Tensor<NodeId> m_batch_rows;  // 0 .. batch_size - 1
  std::vector<NodeId> m_train_host, m_seeds;
  // A partition: global ids of the local rows (dropout keys), the exchange, the gradient
  // all-reduce's buffers, the training nodes of all ranks.
  std::vector<Tensor<NodeId>> m_source_ids;
  std::unique_ptr<HeteroHaloExchange> m_halo;
  Tensor<float> m_grad_flat;
  std::vector<float> m_grad_host;
  std::int64_t m_num_train = 0;
  // Mini-batch on a partition (ids: type-local global ids, as one process): per type the rank
  // owning each node of the whole graph and its row there, and the per-type partition ids
  // (m_type_book: P + 1 offsets) the feature stores use; per relation the owned destination
  // rows with global source ids (ascending, as one process stores them) and their
  // RemoteNeighbors; per type with features a FeatureStore of its owned rows and its inputs.
  std::vector<std::vector<std::int32_t>> m_owner;
  std::vector<std::vector<NodeId>> m_row;
  std::vector<std::vector<std::int64_t>> m_type_book;
  std::vector<datasets::Graph> m_owned_rows;
  std::vector<std::unique_ptr<RemoteNeighbors>> m_remote;
  std::vector<std::unique_ptr<partition::Part>> m_type_parts;
  std::vector<std::unique_ptr<FeatureStore>> m_stores;  // null: a featureless type
  std::vector<BatchInputs> m_store_inputs;
  std::vector<NodeId> m_pids;
  FetchStats m_fetch;
  std::int64_t m_syncs = 0;
  double m_preprocess_s = 0;
};

/// The HGNN stages as the engine records them (EpochStats::stage_times).
Metrics stage_times(const nn::HeteroStageTimes& t) {
  return {{"subgraph_build_s", t.subgraph_build_s},
          {"feature_projection_s", t.feature_projection_s},
          {"neighbor_aggregation_s", t.neighbor_aggregation_s},
          {"semantic_aggregation_s", t.semantic_aggregation_s}};
}

HeteroNodeClassification::HeteroNodeClassification(const kernels::Resources& res,
                                                   HeteroShard& shard, const TrainConfig& config,
                                                   nn::HeteroModel<float>& model)
    : m_res(res),
      m_shard(shard),
      m_config(config),
      m_model(model),
      m_params(model.parameters()),
      m_optimizer(res, m_params, adam_config(config.lr, config.weight_decay)) {
  const datasets::HeteroGraph& g = shard.graph;
  check_config(config, shard.comm->size());
  const partition::HeteroPartLayout& layout = shard.layout;
  const bool parted = layout.partitioned();
  HALO_EXPECTS(parted || shard.comm->size() == 1,
               "train: several ranks train a heterogeneous dataset from its partition "
               "(open_hetero_shard)");
  const nn::HeteroSchema want = hetero_schema(g);
  const nn::HeteroSchema& have = model.schema();
  HALO_EXPECTS(have.num_nodes == want.num_nodes && have.in_features == want.in_features &&
                   have.relations == want.relations && have.target_type == want.target_type &&
                   have.num_classes == want.num_classes,
               "train: the heterogeneous model was not built for this dataset");
  HALO_EXPECTS((parted ? layout.num_train : g.train_idx.numel()) > 0,
               "train: the dataset has no training nodes");
  const auto start = Clock::now();
  const std::vector<std::int64_t> offsets = g.type_offsets();
  for (std::int32_t t = 0; t < g.num_types(); ++t) {
    const datasets::NodeType& type = g.node_types[static_cast<std::size_t>(t)];
    m_features.push_back(type.has_features()
                             ? prepare_features(res, type.features, config.normalize_features)
                             : kernels::FeatureMatrix<float>(Tensor<float>()));
    m_view.num_src.push_back(type.num_nodes);
    m_view.num_dst.push_back(type.num_nodes);
    m_view.type_offset.push_back(offsets[static_cast<std::size_t>(t)]);
  }
  m_num_train = g.train_idx.numel();
  if (parted) {
    // Owned rows are the destinations; every local row is keyed by its global id.
    std::int64_t offset = 0;
    for (std::size_t t = 0; t < layout.num_owned.size(); ++t) {
      m_view.num_dst[t] = layout.num_owned[t];
      m_view.type_offset[t] = offset;
      std::vector<NodeId> ids = layout.original[t].to_vector(res);
      for (NodeId& v : ids) v = static_cast<NodeId>(v + offset);
      m_source_ids.push_back(
          Tensor<NodeId>::from_host(res, ids, static_cast<std::int64_t>(ids.size()), 1));
      offset += layout.global_nodes[t];
    }
    for (const auto& ids : m_source_ids) m_view.source_ids.push_back(ids.span());
    m_halo = std::make_unique<HeteroHaloExchange>(res, layout, *shard.comm);
    m_view.halo = m_halo.get();
    m_num_train = layout.num_train;
  }
  for (const auto& f : m_features) m_inputs.push_back(&f);
  for (const datasets::Relation& r : g.relations) m_adj.push_back(r.adj.copy_to(res, res.device()));
  for (std::size_t r = 0; r < g.relations.size(); ++r) {
    m_view.relations.push_back(
        {g.relations[r].name, g.relations[r].src_type, g.relations[r].dst_type, m_adj[r].view()});
    // A partition stores empty rows for the halo destinations: the layer sees the owned ones.
    m_view.relations.back().adj.num_rows =
        m_view.num_dst[static_cast<std::size_t>(g.relations[r].dst_type)];
  }
  // The logits hold the owned target rows (a part's halo rows are not classified here).
  // Learnable embeddings: on a partition each rank owns its nodes' rows and their optimizer
  // state (DistributedEmbedding); one process updates the model's tables.
  if (parted && !model.embeddings().empty()) {
    HALO_EXPECTS(res.device() == kernels::Device::Cpu,
                 "train: learnable embeddings on a heterogeneous partition train on the CPU");
    gather_owners();
    const kernels::Resources host = host_resources(res);
    for (std::int32_t t = 0; t < g.num_types(); ++t) {
      const auto ut = static_cast<std::size_t>(t);
      if (g.node_types[ut].has_features()) continue;
      const NodeId* o = layout.original[ut].data();
      const std::vector<NodeId> owned(o, o + layout.num_owned[ut]);
      m_spread.push_back(std::make_unique<DistributedEmbedding>(
          *shard.comm, model.embedding_part(host, t, layout.global_nodes[ut], owned), m_owner[ut],
          m_row[ut]));
      model.spread_embedding(t, m_spread.back().get());
      m_spread_types.push_back(t);
      m_tables.push_back(&m_spread.back()->owned());
    }
  } else {
    m_tables = model.embeddings();
  }
  m_sparse = std::make_unique<nn::SparseAdam<float>>(res, m_tables, adam_config(config.lr, 0));
  m_labels_host = g.labels.to_vector(res);
  m_labels_host.resize(
      static_cast<std::size_t>(m_view.num_dst[static_cast<std::size_t>(g.target_type)]));
  m_labels = Tensor<std::int32_t>::from_host(res, m_labels_host,
                                             static_cast<std::int64_t>(m_labels_host.size()), 1)
                 .copy_to(res, res.device());
  m_train = g.train_idx.copy_to(res, res.device());
  m_val = g.val_idx.copy_to(res, res.device());
  m_test = g.test_idx.copy_to(res, res.device());
  m_val_host = g.val_idx.to_vector(res);
  m_test_host = g.test_idx.to_vector(res);
  if (config.mini_batch) {
    const MiniBatchConfig& mbc = *config.mini_batch;
    HALO_EXPECTS(res.device() == kernels::Device::Cpu,
                 "train: heterogeneous mini-batch training runs on the CPU");
    sampler::HeteroSamplerConfig sc;
    sc.fanouts = mbc.relation_fanouts;
    if (sc.fanouts.empty())
      for (const int f : mbc.fanouts) sc.fanouts.emplace_back(g.relations.size(), f);
    HALO_EXPECTS(static_cast<int>(sc.fanouts.size()) == config.hetero.num_layers,
                 "train: " + std::to_string(sc.fanouts.size()) + " fan-outs for " +
                     std::to_string(config.hetero.num_layers) + " layers (one per layer)");
    sc.replace = mbc.replace;
    sc.seed = config.seed;
    m_sampler = parted
                    ? std::make_unique<sampler::HeteroNeighborSampler>(res, g, mbc.batch_size, sc,
                                                                       enable_remote_batches())
                    : std::make_unique<sampler::HeteroNeighborSampler>(res, g, mbc.batch_size, sc);
    const auto& env = m_sampler->envelope();
    const std::size_t nt = g.node_types.size();
    if (parted) {
      // The remote sources' buffers for the envelope; a feature store per type with features
      // over its owned rows (per-type partition ids), remote rows fetched from their owners.
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
      const kernels::Resources host = host_resources(res);
      const int me = shard.comm->rank();
      std::int64_t rows = 1;
      for (std::size_t t = 0; t < nt; ++t) {
        const datasets::NodeType& type = g.node_types[t];
        rows = std::max(rows, env[0].num_src[t]);
        m_store_inputs.emplace_back();
        m_stores.push_back(nullptr);
        if (!type.has_features()) continue;
        // The type's halo: the remote sources of the owned rows over every relation from it
        // (what the cache may hold), in partition-id order; every node's degree: its edges as
        // a source over those relations, summed over the ranks (the cache's degree policy).
        const std::int64_t owned = layout.num_owned[t];
        std::vector<std::int64_t> degree(static_cast<std::size_t>(layout.global_nodes[t]), 0);
        std::vector<std::pair<NodeId, NodeId>> remote;  // (partition id, global id)
        for (std::size_t r = 0; r < g.relations.size(); ++r) {
          if (static_cast<std::size_t>(g.relations[r].src_type) != t) continue;
          const Tensor<NodeId>& sources = m_owned_rows[r].indices;
          for (std::int64_t e = 0; e < sources.numel(); ++e) {
            const NodeId u = sources.data()[e];
            ++degree[static_cast<std::size_t>(u)];
            if (m_owner[t][static_cast<std::size_t>(u)] != me)
              remote.emplace_back(type_partition_id(t, u), u);
          }
        }
        shard.comm->allreduce(kernels::Span<std::int64_t>(degree.data(), std::ssize(degree)),
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
        part->ids =
            partition::IdMap(partition::PartitionBook(m_type_book[t]), me,
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
                    Tensor<std::int64_t>::from_host(
                        host, std::vector<std::int64_t>(ip, ip + owned + 1), owned + 1, 1),
                    Tensor<std::int32_t>::from_host(
                        host, std::vector<std::int32_t>(x.indices.data(), x.indices.data() + m), m,
                        1),
                    x.values.empty()
                        ? Tensor<float>()
                        : Tensor<float>::from_host(
                              host, std::vector<float>(x.values.data(), x.values.data() + m), m, 1),
                    x.num_cols, false};
              }
            },
            type.features);
        m_stores.back() = std::make_unique<FeatureStore>(res, *part, config.normalize_features);
        m_stores.back()->enable_batches(*shard.comm, std::max<std::int64_t>(1, env[0].num_src[t]),
                                        static_cast<std::int64_t>(mbc.cache_mb * 1024 * 1024),
                                        mbc.cache_policy);
        m_store_inputs.back() = m_stores.back()->make_inputs(res);
        m_type_parts.push_back(std::move(part));
      }
      m_pids.resize(static_cast<std::size_t>(rows));
    }
    m_blocks.assign(env.size(), {});
    m_block_ids.resize(env.size());
    for (std::size_t l = 0; l < env.size(); ++l) {
      nn::HeteroGraphView<float>& v = m_blocks[l];
      v.type_offset = m_view.type_offset;
      v.source_ids.assign(nt, {});
      for (std::size_t t = 0; t < nt; ++t)
        m_block_ids[l].push_back(Tensor<NodeId>(res, std::max<std::int64_t>(1, env[l].num_src[t])));
      for (const auto& r : m_view.relations)
        v.relations.push_back({r.name, r.src_type, r.dst_type, {}});
    }
    std::int64_t scan = 1;
    for (std::size_t t = 0; t < nt; ++t) {
      const std::int64_t rows = std::max<std::int64_t>(1, env[0].num_src[t]);
      const auto& x = m_features[t];
      if (const auto* sp = std::get_if<kernels::CsrMatrix<std::int32_t, float>>(&x)) {
        const std::int64_t entries = sampler::max_entries(*sp, rows);
        m_batch_x.emplace_back(kernels::CsrMatrix<std::int32_t, float>{
            Tensor<std::int64_t>(res, rows + 1), Tensor<std::int32_t>(res, entries),
            Tensor<float>(res, entries), sp->num_cols, false});
        scan = std::max(scan, sampler::gather_scan_sums_size(rows));
      } else if (kernels::num_cols(x) > 0) {
        m_batch_x.emplace_back(Tensor<float>(res, rows, kernels::num_cols(x)));
      } else {
        m_batch_x.emplace_back(Tensor<float>());
      }
    }
    for (std::size_t t = 0; t < nt; ++t)
      m_batch_inputs.push_back(parted && m_stores[t] ? &m_store_inputs[t].x : &m_batch_x[t]);
    if (parted) {
      // Every training node of the whole graph, by its global id: the ranks cut the same
      // batches and each keeps the seeds it owns.
      const auto tt = static_cast<std::size_t>(g.target_type);
      std::vector<NodeId> mine;
      for (std::int64_t i = 0; i < g.train_idx.numel(); ++i)
        mine.push_back(layout.original[tt].data()[g.train_idx.data()[i]]);
      std::vector<std::size_t> counts;
      const std::vector<std::byte> all =
          shard.comm->allgatherv(mine.data(), mine.size() * sizeof(NodeId), counts);
      m_train_host.resize(all.size() / sizeof(NodeId));
      std::memcpy(m_train_host.data(), all.data(), all.size());
    }
    m_scan_sums = Tensor<std::int64_t>(res, scan);
    m_batch_labels = Tensor<std::int32_t>(res, mbc.batch_size);
    m_batch_rows = Tensor<NodeId>(res, mbc.batch_size);
    for (std::int64_t i = 0; i < mbc.batch_size; ++i)
      m_batch_rows.data()[i] = static_cast<NodeId>(i);
    if (!parted) m_train_host = g.train_idx.to_vector(res);
    m_seeds.reserve(static_cast<std::size_t>(mbc.batch_size));
  }
  m_preprocess_s = seconds_since(start);
}

CheckpointIdentity HeteroNodeClassification::identity() const {
  const nn::HeteroModelConfig& h = m_config.hetero;
  return config_identity(m_config, m_shard.identity, m_shard.comm->size(),
                         {{"model.kind", nn::to_string(h.kind)},
                          {"model.layers", std::to_string(h.num_layers)},
                          {"model.hidden", std::to_string(h.hidden)},
                          {"model.dropout", exact_number(h.dropout)},
                          {"model.num_bases", std::to_string(h.num_bases)},
                          {"model.heads", std::to_string(h.heads)},
                          {"model.featureless", nn::to_string(h.featureless)}});
}

void HeteroNodeClassification::gather_owners() {
  if (!m_owner.empty()) return;
  const partition::HeteroPartLayout& layout = m_shard.layout;
  Comm& comm = *m_shard.comm;
  const int p = comm.size();
  // Who owns every node: the owned ids of every rank, gathered once.
  for (std::size_t t = 0; t < m_shard.graph.node_types.size(); ++t) {
    std::vector<std::size_t> counts;
    const std::vector<std::byte> all =
        comm.allgatherv(layout.original[t].data(),
                        static_cast<std::size_t>(layout.num_owned[t]) * sizeof(NodeId), counts);
    std::vector<NodeId> ids(all.size() / sizeof(NodeId));
    std::memcpy(ids.data(), all.data(), all.size());
    const auto n = static_cast<std::size_t>(layout.global_nodes[t]);
    m_owner.emplace_back(n, -1);
    m_row.emplace_back(n, 0);
    std::vector<std::int64_t> book(1, 0);
    std::size_t at = 0;
    for (int k = 0; k < p; ++k) {
      const std::size_t owned = counts[static_cast<std::size_t>(k)] / sizeof(NodeId);
      for (std::size_t i = 0; i < owned; ++i) {
        m_owner[t][static_cast<std::size_t>(ids[at + i])] = k;
        m_row[t][static_cast<std::size_t>(ids[at + i])] = static_cast<NodeId>(i);
      }
      at += owned;
      book.push_back(book.back() + static_cast<std::int64_t>(owned));
    }
    m_type_book.push_back(std::move(book));
  }
}

sampler::HeteroNeighborSources HeteroNodeClassification::enable_remote_batches() {
  const datasets::HeteroGraph& g = m_shard.graph;
  const partition::HeteroPartLayout& layout = m_shard.layout;
  Comm& comm = *m_shard.comm;
  const kernels::Resources host = host_resources(m_res);
  const std::size_t nr = g.relations.size();
  sampler::HeteroNeighborSources sources{layout.global_nodes, {}};
  gather_owners();
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
        std::span<const std::int32_t>(m_owner[d]), std::span<const NodeId>(m_row[d]),
        sampler::DegreeStats{layout.global_nodes[d], stats[0], stats[1]}, comm));
    sources.relations.push_back(m_remote.back().get());
  }
  return sources;
}

void HeteroNodeClassification::prepare_batch(const sampler::HeteroMiniBatch& mb,
                                             nn::HeteroStageTimes& stages) {
  const std::size_t nt = m_shard.graph.node_types.size();
  for (std::size_t l = 0; l < mb.blocks.size(); ++l) {
    const sampler::HeteroBlock& b = mb.blocks[l];
    nn::HeteroGraphView<float>& v = m_blocks[l];
    v.num_src = b.num_src;
    v.num_dst = b.num_dst;
    for (std::size_t r = 0; r < v.relations.size(); ++r) v.relations[r].adj = b.adj[r];
    for (std::size_t t = 0; t < nt; ++t) {
      NodeId* ids = m_block_ids[l][t].data();
      const auto offset = static_cast<NodeId>(v.type_offset[t]);
      for (std::int64_t i = 0; i < b.num_src[t]; ++i) ids[i] = offset + b.src_ids[t][i];
      v.source_ids[t] = {ids, b.num_src[t]};
    }
    v.times = &stages;
  }
  std::int64_t syncs = 0;
  for (std::size_t t = 0; t < nt; ++t) {
    const kernels::Span<const NodeId> ids = mb.blocks[0].src_ids[t];
    if (!m_stores.empty()) {  // a partition: every rank gathers its inputs of each type
      if (!m_stores[t]) continue;
      for (std::int64_t i = 0; i < ids.size; ++i)
        m_pids[static_cast<std::size_t>(i)] = type_partition_id(t, ids[i]);
      m_stores[t]->gather(m_res, *m_shard.comm, {m_pids.data(), ids.size}, m_store_inputs[t],
                          m_fetch, m_syncs);
    } else if (kernels::num_cols(m_features[t]) > 0) {
      sampler::gather_feature_rows(m_res, m_features[t], ids, m_batch_x[t], m_scan_sums, syncs);
    }
  }
  const auto tt = static_cast<std::size_t>(m_shard.graph.target_type);
  for (std::int64_t i = 0; i < mb.seeds.size; ++i) {
    const auto v = static_cast<std::size_t>(mb.seeds[i]);
    m_batch_labels.data()[i] =
        m_labels_host[m_row.empty() ? v : static_cast<std::size_t>(m_row[tt][v])];
  }
}

bool HeteroNodeClassification::train_minibatch(std::uint64_t epoch, EpochStats& s,
                                               const StepCallback& on_step, Partial& at,
                                               const std::function<bool()>& stop) {
  const auto start = Clock::now();
  nn::HeteroStageTimes stages;
  // The epoch's order of the training nodes: by a key drawn per (seed, epoch, id), ties by id.
  const std::uint64_t key = kernels::rng::key(kernels::rng::key(m_config.seed, 0x4e7e), epoch);
  std::vector<std::pair<std::uint64_t, NodeId>> order;
  order.reserve(m_train_host.size());
  for (const NodeId v : m_train_host)
    order.emplace_back(kernels::rng::draw_keyed(key, static_cast<std::uint64_t>(v)), v);
  std::sort(order.begin(), order.end());
  const std::int64_t batches = batches_per_epoch();
  const std::int64_t bs = m_config.mini_batch->batch_size;
  // A resumed epoch continues at its next batch with its running sums (every draw is keyed by
  // epoch and batch, so the batches after it are the uninterrupted run's).
  double loss_sum = at.loss_sum, seeds = static_cast<double>(at.loss_rows);
  s.allreduce_time_s = at.allreduce_s;
  s.sampled_edges.clear();
  m_fetch = {};
  detail::PhaseClock clock(m_res, m_config.profile, s.profile);
  for (std::int64_t b = at.step; b < batches; ++b) {
    const auto build = Clock::now();
    clock.mark();
    m_seeds.clear();
    const std::int64_t end = std::min<std::int64_t>((b + 1) * bs, std::ssize(order));
    const auto tt = static_cast<std::size_t>(m_shard.graph.target_type);
    const int me = m_shard.comm->rank();
    for (std::int64_t i = b * bs; i < end; ++i) {
      const NodeId v = order[static_cast<std::size_t>(i)].second;
      if (m_owner.empty() || m_owner[tt][static_cast<std::size_t>(v)] == me) m_seeds.push_back(v);
    }
    const std::int64_t global = end - b * bs;  // the batch's seeds over all ranks
    const sampler::HeteroMiniBatch& mb = m_sampler->sample(
        m_res, {m_seeds.data(), std::ssize(m_seeds)}, epoch, static_cast<std::uint64_t>(b));
    const double sampled = clock.lap(&EpochProfile::sample_s);
    prepare_batch(mb, stages);
    // Without a producer thread the step waits for the whole preparation.
    s.profile.wait_s += sampled + clock.lap(&EpochProfile::gather_s);
    stages.subgraph_build_s += seconds_since(build);
    s.sampled_edges.resize(mb.sampled_edges.size(), 0);
    for (std::size_t r = 0; r < mb.sampled_edges.size(); ++r)
      s.sampled_edges[r] += mb.sampled_edges[r];
    const auto n = std::ssize(m_seeds);
    // Dropout keyed by epoch * batches + b: one batch an epoch draws the full graph's masks.
    const nn::Context ctx{
        &m_res, /*training=*/true, m_config.seed,
        epoch * static_cast<std::uint64_t>(batches) + static_cast<std::uint64_t>(b), 0};
    const std::span<const nn::HeteroGraphView<float>> graphs(m_blocks);
    const Tensor<float>& logits = m_model.forward(ctx, graphs, m_batch_inputs);
    clock.lap(&EpochProfile::forward_s);
    kernels::ensure_shape(m_res, m_dlogits, logits.rows(), logits.cols());
    const kernels::Span<const std::int32_t> labels{m_batch_labels.data(), n};
    const kernels::Span<const NodeId> rows{m_batch_rows.data(), n};
    // Divided by the batch's seeds over all ranks: the ranks' losses and gradients add up.
    double loss = kernels::log_softmax_nll(m_res, logits.view(), labels, rows, global);
    kernels::log_softmax_nll_backward(m_res, logits.view(), labels, rows, m_dlogits.view(), global);
    clock.lap(&EpochProfile::loss_s);
    m_model.backward(ctx, graphs, m_dlogits);
    clock.lap(&EpochProfile::backward_s);
    if (m_halo) {
      const auto t = Clock::now();
      loss = allreduce_gradients(m_res, *m_shard.comm, m_params, loss, m_grad_flat, m_grad_host);
      s.allreduce_time_s += seconds_since(t);
    }
    expect_finite(loss, epoch, b);
    clock.mark();
    m_optimizer.step(m_res);
    m_sparse->step(m_res);
    clock.lap(&EpochProfile::optimizer_s);
    loss_sum += loss * static_cast<double>(global);
    seeds += static_cast<double>(global);
    if (on_step) on_step(b);
    // After the epoch's last step run() asks, after the evaluation.
    if (b + 1 < batches && stop()) {
      at = {epoch, b + 1, loss_sum, static_cast<std::int64_t>(seeds), s.allreduce_time_s};
      for (auto& v : m_blocks) v.times = nullptr;
      return false;
    }
  }
  for (auto& v : m_blocks) v.times = nullptr;
  for (const auto& store : m_stores)
    if (store) store->end_epoch(*m_shard.comm, epoch);  // the access policy fills its cache
  s.epoch_time_s = seconds_since(start);
  s.train_loss = loss_sum / seeds;
  s.remote_rows = m_fetch.remote_rows;
  s.cache_hits = m_fetch.cache_hits;
  s.feature_bytes = m_fetch.bytes;
  s.fetch_time_s = m_fetch.seconds;
  if (m_halo) {
    // A partition: the edges every rank sampled, summed; each stage the slowest rank's.
    m_shard.comm->allreduce(
        kernels::Span<std::int64_t>(s.sampled_edges.data(), std::ssize(s.sampled_edges)),
        ReduceOp::Sum);
    std::int64_t rows[3] = {s.remote_rows, s.cache_hits, s.feature_bytes};
    m_shard.comm->allreduce(kernels::Span<std::int64_t>(rows, 3), ReduceOp::Sum);
    s.remote_rows = rows[0], s.cache_hits = rows[1], s.feature_bytes = rows[2];
    double v[4] = {stages.subgraph_build_s, stages.feature_projection_s,
                   stages.neighbor_aggregation_s, stages.semantic_aggregation_s};
    m_shard.comm->allreduce(kernels::Span<double>(v, 4), ReduceOp::Max);
    stages = {v[0], v[1], v[2], v[3]};
  }
  s.stage_times = stage_times(stages);
  return true;
}

// Full graph: one step an epoch, so there is no step boundary to stop at inside it.
bool HeteroNodeClassification::train_epoch(std::uint64_t epoch, EpochStats& s,
                                           const StepCallback& on_step, Partial& at,
                                           const std::function<bool()>& stop) {
  if (m_sampler) return train_minibatch(epoch, s, on_step, at, stop);
  (void)at, (void)stop;  // full graph: one step an epoch, nothing to stop between
  const auto start = Clock::now();
  nn::HeteroStageTimes stages;  // full graph: the subgraph is built once, before training
  m_view.times = &stages;
  detail::PhaseClock clock(m_res, m_config.profile, s.profile);
  clock.mark();
  const nn::Context ctx{&m_res, /*training=*/true, m_config.seed, epoch, 0};
  const Tensor<float>& logits = m_model.forward(ctx, m_view, m_inputs);
  clock.lap(&EpochProfile::forward_s);
  kernels::ensure_shape(m_res, m_dlogits, logits.rows(), logits.cols());
  // Divided by the training nodes of every rank: the ranks' losses and gradients add up.
  double loss = kernels::log_softmax_nll(m_res, logits.view(), std::as_const(m_labels).span(),
                                         std::as_const(m_train).span(), m_num_train);
  kernels::log_softmax_nll_backward(m_res, logits.view(), std::as_const(m_labels).span(),
                                    std::as_const(m_train).span(), m_dlogits.view(), m_num_train);
  clock.lap(&EpochProfile::loss_s);
  m_model.backward(ctx, m_view, m_dlogits);
  clock.lap(&EpochProfile::backward_s);
  m_view.times = nullptr;
  if (m_halo) {
    const auto t = Clock::now();
    loss = allreduce_gradients(m_res, *m_shard.comm, m_params, loss, m_grad_flat, m_grad_host);
    s.allreduce_time_s = seconds_since(t);
  }
  expect_finite(loss, epoch, 0);
  clock.mark();
  m_optimizer.step(m_res);
  m_sparse->step(m_res);
  clock.lap(&EpochProfile::optimizer_s);
  if (on_step) on_step(0);
  m_res.synchronize();
  s.epoch_time_s = seconds_since(start);
  s.train_loss = loss;
  s.stage_times = stage_times(stages);
  return true;
}

Metrics HeteroNodeClassification::evaluate() {
  const nn::Context ctx{&m_res, /*training=*/false, m_config.seed, 0, 0};
  const Tensor<float>& logits = m_model.forward(ctx, m_view, m_inputs);
  auto correct = [&](const Tensor<NodeId>& rows) {
    return rows.numel() == 0
               ? 0.0
               : static_cast<double>(kernels::count_correct(
                     m_res, logits.view(), std::as_const(m_labels).span(), rows.span()));
  };
  const double nan = std::numeric_limits<double>::quiet_NaN();
  auto ratio = [&](double a, double b) { return b > 0 ? a / b : nan; };
  // Counts and sums of this rank, added over the ranks (one all-reduce; a no-op in one process).
  std::vector<double> v = {correct(m_train),
                           correct(m_val),
                           correct(m_test),
                           m_val.numel() == 0
                               ? 0.0
                               : static_cast<double>(kernels::log_softmax_nll(
                                     m_res, logits.view(), std::as_const(m_labels).span(),
                                     std::as_const(m_val).span(), 1)),
                           static_cast<double>(m_train.numel()),
                           static_cast<double>(m_val.numel()),
                           static_cast<double>(m_test.numel())};
  // The predictions on the host, for the F1 scores.
  const std::vector<float> host = logits.to_vector(m_res);
  const std::int64_t c = logits.cols();
  std::vector<std::int32_t> pred(static_cast<std::size_t>(logits.rows()));
  for (std::int64_t r = 0; r < logits.rows(); ++r) {
    const float* row = host.data() + r * c;
    pred[static_cast<std::size_t>(r)] =
        static_cast<std::int32_t>(std::max_element(row, row + c) - row);
  }
  const std::int32_t k = m_shard.graph.num_classes;
  for (const auto* rows : {&m_val_host, &m_test_host})
    for (const double c : class_counts(pred, m_labels_host, *rows, k)) v.push_back(c);
  m_shard.comm->allreduce(kernels::Span<double>(v.data(), static_cast<std::int64_t>(v.size())),
                          ReduceOp::Sum);
  const auto kc = static_cast<std::size_t>(3 * k);
  const F1Scores val = f1_scores(std::span<const double>(v.data() + 7, kc));
  const F1Scores test = f1_scores(std::span<const double>(v.data() + 7 + kc, kc));
  return {{"train_accuracy", ratio(v[0], v[4])},
          {"val_loss", ratio(v[3], v[5])},
          {"val_accuracy", ratio(v[1], v[5])},
          {"val_macro_f1", val.macro},
          {"test_accuracy", v[6] > 0 ? v[2] / v[6] : 0},
          {"test_macro_f1", test.macro},
          {"test_micro_f1", test.micro}};
}

}  // namespace

std::unique_ptr<Task> hetero_classification(const kernels::Resources& res, HeteroShard& shard,
                                            const TrainConfig& config,
                                            nn::HeteroModel<float>& model) {
  return std::make_unique<HeteroNodeClassification>(res, shard, config, model);
}

nn::HeteroSchema hetero_schema(const datasets::HeteroGraph& g) {
  nn::HeteroSchema s;
  for (const datasets::NodeType& t : g.node_types) {
    s.type_names.push_back(t.name);
    s.num_nodes.push_back(t.num_nodes);
    s.in_features.push_back(t.has_features() ? kernels::num_cols(t.features) : 0);
  }
  for (const datasets::Relation& r : g.relations) {
    s.relation_names.push_back(r.name);
    s.relations.emplace_back(r.src_type, r.dst_type);
  }
  s.target_type = g.target_type;
  s.num_classes = g.num_classes;
  return s;
}

std::vector<double> class_counts(std::span<const std::int32_t> pred,
                                 std::span<const std::int32_t> labels, std::span<const NodeId> rows,
                                 std::int32_t num_classes) {
  std::vector<double> counts(static_cast<std::size_t>(3 * num_classes), 0.0);
  for (const NodeId r : rows) {
    const auto p = static_cast<std::size_t>(pred[static_cast<std::size_t>(r)]);
    const auto y = static_cast<std::size_t>(labels[static_cast<std::size_t>(r)]);
    HALO_EXPECTS(
        p < static_cast<std::size_t>(num_classes) && y < static_cast<std::size_t>(num_classes),
        "class_counts: a class outside [0, num_classes)");
    if (p == y) {
      counts[3 * y] += 1;
    } else {
      counts[3 * p + 1] += 1;
      counts[3 * y + 2] += 1;
    }
  }
  return counts;
}

F1Scores f1_scores(std::span<const double> counts) {
  double sum = 0, tp = 0, fp_fn = 0;
  int present = 0;
  for (std::size_t c = 0; c + 2 < counts.size(); c += 3) {
    const double denom = 2 * counts[c] + counts[c + 1] + counts[c + 2];
    tp += counts[c];
    fp_fn += counts[c + 1] + counts[c + 2];
    if (denom == 0) continue;  // neither labelled nor predicted: not averaged (scikit-learn)
    sum += 2 * counts[c] / denom;
    ++present;
  }
  const double nan = std::numeric_limits<double>::quiet_NaN();
  if (present == 0) return {nan, nan};
  return {sum / present, 2 * tp / (2 * tp + fp_fn)};
}

HeteroTrainRun train(const kernels::Resources& res, HeteroShard& shard, const TrainConfig& config,
                     const EpochCallback& on_epoch, const StepCallback& on_step) {
  check_config(config, shard.comm->size());
  HeteroTrainRun run{
      nn::HeteroModel<float>(res, config.hetero, hetero_schema(shard.graph), config.seed), {}};
  Trainer trainer(res, hetero_classification(res, shard, config, run.model), config.epochs,
                  config.checkpoint);
  run.result = trainer.run(on_epoch, on_step);
  return run;
}

HeteroPrediction predict_hetero(const kernels::Resources& res, HeteroShard& shard,
                                const TrainConfig& config, nn::HeteroModel<float>& model) {
  HeteroNodeClassification task(res, shard, config, model);
  HeteroPrediction p{task.evaluate(), task.logits()};
  return p;
}

Tensor<float> embed_hetero(const kernels::Resources& res, HeteroShard& shard,
                           const TrainConfig& config, nn::HeteroModel<float>& model, int layer,
                           std::int32_t type) {
  const int layers = model.config().num_layers;
  HALO_EXPECTS(layer >= 1 && layer <= layers,
               "embed: layer " + std::to_string(layer) + " of " + std::to_string(layers));
  HALO_EXPECTS(layer < layers || type == model.schema().target_type,
               "embed: the last layer computes the target type only");
  HALO_EXPECTS(shard.comm->size() == 1, "embed: one process");
  HeteroNodeClassification task(res, shard, config, model);
  Tensor<float> logits = task.logits();
  if (layer == layers) return logits;
  return model.hidden(layer, type).clone(host_resources(res));
}

// ---- model files ------------------------------------------------------------------------------

namespace {

const char* const kHeteroTask = "heterogeneous-node-classification";

/// The parameters and embedding tables, in the order a model file holds them.
std::vector<NamedTensor> hetero_tensors(nn::HeteroModel<float>& model) {
  std::vector<NamedTensor> v = detail::parameter_state(model.parameters());
  for (auto* e : model.embeddings()) v.push_back({"embedding/" + e->name(), &e->table()});
  return v;
}

nlohmann::json schema_json(const nn::HeteroSchema& s) {
  nlohmann::json types = nlohmann::json::array(), relations = nlohmann::json::array();
  for (std::size_t t = 0; t < s.type_names.size(); ++t)
    types.push_back(
        {{"name", s.type_names[t]}, {"num_nodes", s.num_nodes[t]}, {"features", s.in_features[t]}});
  for (std::size_t r = 0; r < s.relations.size(); ++r)
    relations.push_back({{"name", s.relation_names[r]},
                         {"src_type", s.relations[r].first},
                         {"dst_type", s.relations[r].second}});
  return {{"types", types},
          {"relations", relations},
          {"target_type", s.target_type},
          {"num_classes", s.num_classes}};
}

nn::HeteroSchema schema_of(const nlohmann::json& j) {
  nn::HeteroSchema s;
  for (const auto& t : j.at("types")) {
    s.type_names.push_back(t.at("name").get<std::string>());
    s.num_nodes.push_back(t.at("num_nodes").get<std::int64_t>());
    s.in_features.push_back(t.at("features").get<std::int64_t>());
  }
  for (const auto& r : j.at("relations")) {
    s.relation_names.push_back(r.at("name").get<std::string>());
    s.relations.emplace_back(r.at("src_type").get<std::int32_t>(),
                             r.at("dst_type").get<std::int32_t>());
  }
  s.target_type = j.at("target_type").get<std::int32_t>();
  s.num_classes = j.at("num_classes").get<std::int32_t>();
  return s;
}

}  // namespace

void save_hetero_model(const kernels::Resources& res, const std::filesystem::path& path,
                       nn::HeteroModel<float>& model, const TrainConfig& config,
                       const HeteroShard& shard, const TrainResult& result) {
  const int split = shard.graph.split;
  if (split < 0)
    throw IoError(path.string() +
                  ": the data do not record which stored split they hold (a partition written "
                  "before Halo recorded it: partition the dataset again)");
  nn::HeteroSchema schema = hetero_schema(shard.graph);
  if (shard.layout.partitioned()) schema.num_nodes = shard.layout.global_nodes;  // the dataset's
  // Every table whole (a partitioned run gathers its rows when it ends), in type order.
  const auto tables = model.embeddings();
  std::size_t i = 0;
  for (std::size_t t = 0; t < schema.num_nodes.size() && i < tables.size(); ++t)
    if (schema.in_features[t] == 0)
      HALO_EXPECTS(tables[i++]->num_rows() == schema.num_nodes[t],
                   "save_hetero_model: an embedding table of a part's rows (the run did not end)");
  const nn::HeteroModelConfig& h = config.hetero;
  const nlohmann::json m = {{"kind", nn::to_string(h.kind)},
                            {"layers", h.num_layers},
                            {"hidden", h.hidden},
                            {"dropout", h.dropout},
                            {"num_bases", h.num_bases},
                            {"heads", h.heads},
                            {"featureless", nn::to_string(h.featureless)},
                            {"seed", config.seed},
                            {"split", split},
                            {"schema", schema_json(schema)}};
  nn::ModelFileInfo info;
  info.task = kHeteroTask;
  info.task_model = m.dump();
  info.dataset = shard.dataset;
  info.normalize_features = config.normalize_features;
  info.training = training_record(config, result);
  write_task_model(res, path, info, hetero_tensors(model));
}

HeteroModelFile load_hetero_model(const kernels::Resources& res,
                                  const std::filesystem::path& path) {
  const nn::ModelFile file = read_task_model(path, kHeteroTask);
  TrainConfig config;
  nn::HeteroSchema schema;
  int split = 0;
  try {
    const nlohmann::json m = nlohmann::json::parse(file.info.task_model);
    nn::HeteroModelConfig& h = config.hetero;
    h.kind = nn::parse_hetero_layer_kind(m.at("kind").get<std::string>());
    h.num_layers = m.at("layers").get<int>();
    h.hidden = m.at("hidden").get<std::int64_t>();
    h.dropout = m.at("dropout").get<float>();
    h.num_bases = m.at("num_bases").get<int>();
    h.heads = m.at("heads").get<int>();
    h.featureless = nn::parse_featureless_input(m.at("featureless").get<std::string>());
    config.seed = m.at("seed").get<std::uint64_t>();
    config.model.num_layers = h.num_layers;
    config.model.hidden = h.hidden;
    config.model.dropout = h.dropout;
    config.normalize_features = file.info.normalize_features;
    split = m.at("split").get<int>();
    schema = schema_of(m.at("schema"));
  } catch (const std::exception& e) {
    throw IoError(path.string() + ": the heterogeneous model's description is damaged (" +
                  e.what() + ")");
  }
  HeteroModelFile out{nn::HeteroModel<float>(res, config.hetero, schema, config.seed), config,
                      file.info.dataset, split, schema};
  read_task_arrays(res, path, file, hetero_tensors(out.model));
  return out;
}

void check_hetero_schema(const std::filesystem::path& path, const nn::HeteroSchema& model,
                         const nn::HeteroSchema& data) {
  const auto describe = [](const nn::HeteroSchema& s) { return schema_json(s).dump(); };
  if (model.type_names != data.type_names || model.num_nodes != data.num_nodes ||
      model.in_features != data.in_features || model.relations != data.relations ||
      model.relation_names != data.relation_names || model.target_type != data.target_type ||
      model.num_classes != data.num_classes)
    throw IoError(path.string() + ": the model was built for other data (" + describe(model) +
                  ") than the dataset's (" + describe(data) + ")");
}

}  // namespace halo::runtime
