// Heterogeneous node classification: R-GCN and HGT on typed graphs, full graph or sampled typed
// blocks, one process or the ranks of a heterogeneous partition; accuracy and F1 scores.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <functional>
#include <limits>
#include <memory>
#include <nlohmann/json.hpp>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include <halo/kernels/loss.hpp>
#include <halo/runtime/data/distributed_embedding.hpp>
#include <halo/runtime/data/halo_exchange.hpp>
#include <halo/runtime/data/typed_batches.hpp>
#include <halo/runtime/detail/timing.hpp>
#include <halo/runtime/engine/detail/task_support.hpp>
#include <halo/runtime/tasks/hetero/hetero_classification.hpp>
#include <halo/runtime/tasks/task_model_file.hpp>

namespace halo::runtime {

using detail::adam_config;
using detail::allreduce_gradients;
using detail::Clock;
using detail::expect_finite;
using detail::seconds_since;
using kernels::NodeId;
using kernels::Tensor;

namespace {

/// Heterogeneous node classification on a HeteroShard (a rank's part of a heterogeneous
/// partition; one process: the one part): full graph or typed mini-batches.
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
  std::int64_t batches_per_epoch() const override { return m_batches->batches_per_epoch(); }
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
  // The featureless types' tables SparseAdam updates: the model's, and the rows this rank owns
  // of those spread over the ranks (m_spread).
  std::vector<std::unique_ptr<DistributedEmbedding>> m_spread;
  std::vector<std::int32_t> m_spread_types;  // the type of each
  bool m_gathered = false;
  std::vector<nn::SparseEmbedding<float>*> m_tables;
  std::unique_ptr<nn::SparseAdam<float>> m_sparse;
  Tensor<float> m_dlogits;
  // The part: global ids of the local rows (dropout keys), the exchange, the gradient
  // all-reduce's buffers; every node's owner (learnable embeddings, mini-batches).
  std::vector<Tensor<NodeId>> m_source_ids;
  std::unique_ptr<HeteroHaloExchange> m_halo;
  Tensor<float> m_grad_flat;
  std::vector<float> m_grad_host;
  std::int64_t m_num_train = 0;
  TypeOwners m_owners;
  // What each step computes on: the whole typed graph or sampled typed blocks.
  std::unique_ptr<TypedBatchSource> m_batches;
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
  check_config(config);
  const partition::HeteroPartLayout& layout = shard.layout;
  // A model of the part's rows (built for this run), or of the whole graph (read from a file:
  // its tables' owned rows are taken from it).
  const nn::HeteroSchema want = hetero_schema(g);
  const nn::HeteroSchema& have = model.schema();
  HALO_EXPECTS((have.num_nodes == want.num_nodes || have.num_nodes == layout.global_nodes) &&
                   have.in_features == want.in_features && have.relations == want.relations &&
                   have.target_type == want.target_type && have.num_classes == want.num_classes,
               "train: the heterogeneous model was not built for this dataset");
  HALO_EXPECTS(layout.num_train > 0, "train: the dataset has no training nodes");
  const auto start = Clock::now();
  // The layers compute the owned rows from the local ones (owned, then halo); every local row
  // is keyed by its global (homogenised) id: dropout masks, learnable embeddings. Where the
  // ids are the identity (one process) a row is its id and the view needs none: the model
  // then reads whole embedding tables (on any device), as for a whole graph.
  const bool keyed = !layout.identity();
  std::int64_t offset = 0;
  for (std::int32_t t = 0; t < g.num_types(); ++t) {
    const auto ut = static_cast<std::size_t>(t);
    const datasets::NodeType& type = g.node_types[ut];
    m_features.push_back(type.has_features()
                             ? prepare_features(res, type.features, config.normalize_features)
                             : kernels::FeatureMatrix<float>(Tensor<float>()));
    m_view.num_src.push_back(type.num_nodes);
    m_view.num_dst.push_back(layout.num_owned[ut]);
    m_view.type_offset.push_back(offset);
    offset += layout.global_nodes[ut];
    if (!keyed) continue;
    std::vector<NodeId> ids = layout.original[ut].to_vector(res);
    for (NodeId& v : ids) v = static_cast<NodeId>(v + m_view.type_offset.back());
    m_source_ids.push_back(
        Tensor<NodeId>::from_host(res, ids, static_cast<std::int64_t>(ids.size()), 1));
  }
  for (const auto& ids : m_source_ids) m_view.source_ids.push_back(ids.span());
  m_halo = std::make_unique<HeteroHaloExchange>(res, layout, *shard.comm);
  m_view.halo = m_halo.get();
  m_num_train = layout.num_train;
  for (const auto& f : m_features) m_inputs.push_back(&f);
  for (const datasets::Relation& r : g.relations) m_adj.push_back(r.adj.copy_to(res, res.device()));
  for (std::size_t r = 0; r < g.relations.size(); ++r) {
    m_view.relations.push_back(
        {g.relations[r].name, g.relations[r].src_type, g.relations[r].dst_type, m_adj[r].view()});
    // A part stores empty rows for the halo destinations: the layer sees the owned ones.
    m_view.relations.back().adj.num_rows =
        m_view.num_dst[static_cast<std::size_t>(g.relations[r].dst_type)];
  }
  // Learnable embeddings: each rank owns its nodes' rows and their optimizer state
  // (spread_embeddings); the tables of the rows no other rank reads stay the model's.
  if (config.mini_batch) m_owners = gather_type_owners(layout, *shard.comm);
  SpreadEmbeddings spread = spread_embeddings(res, *shard.comm, model, layout, m_owners);
  m_spread = std::move(spread.tables);
  m_spread_types = std::move(spread.types);
  m_tables = model.embeddings();
  for (const auto& e : m_spread) m_tables.push_back(&e->owned());
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
  if (config.mini_batch)
    m_batches =
        std::make_unique<SampledTypedBatches>(res, shard, m_owners, m_view, m_labels_host, config);
  else
    m_batches = std::make_unique<FullTypedGraph>(m_view, m_inputs, std::as_const(m_labels).span(),
                                                 std::as_const(m_train).span(), m_num_train);
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

// Every step: the batch source's graph(s) and inputs, the loss over its rows, the gradients
// summed over the ranks, Adam and SparseAdam. A stopped epoch continues at its next batch with
// its running sums (every draw is keyed by epoch and batch, so the batches after it are the
// uninterrupted run's); the full graph is one step an epoch, with nothing to stop between.
bool HeteroNodeClassification::train_epoch(std::uint64_t epoch, EpochStats& s,
                                           const StepCallback& on_step, Partial& at,
                                           const std::function<bool()>& stop) {
  const auto start = Clock::now();
  nn::HeteroStageTimes stages;
  double loss_sum = at.loss_sum, rows = static_cast<double>(at.loss_rows);
  s.allreduce_time_s = at.allreduce_s;
  const std::int64_t batches = m_batches->batches_per_epoch();
  detail::PhaseClock clock(m_res, m_config.profile, s.profile);
  m_batches->begin_epoch(epoch, at.step, &stages);
  for (std::int64_t b = at.step; b < batches; ++b) {
    const TypedBatch& batch = m_batches->next();
    clock.mark();
    const nn::Context ctx{&m_res, /*training=*/true, m_config.seed, batch.dropout_key, 0};
    const Tensor<float>& logits = m_model.forward(ctx, batch.graphs, batch.x);
    clock.lap(&EpochProfile::forward_s);
    kernels::ensure_shape(m_res, m_dlogits, logits.rows(), logits.cols());
    // Divided by the step's rows over all ranks: the ranks' losses and gradients add up.
    double loss =
        kernels::log_softmax_nll(m_res, logits.view(), batch.labels, batch.rows, batch.loss_rows);
    kernels::log_softmax_nll_backward(m_res, logits.view(), batch.labels, batch.rows,
                                      m_dlogits.view(), batch.loss_rows);
    clock.lap(&EpochProfile::loss_s);
    m_model.backward(ctx, batch.graphs, m_dlogits);
    clock.lap(&EpochProfile::backward_s);
    loss = allreduce_gradients(m_res, *m_shard.comm, m_params, loss, m_grad_flat, m_grad_host,
                               s.allreduce_time_s);
    expect_finite(loss, epoch, b);
    clock.mark();
    m_optimizer.step(m_res);
    m_sparse->step(m_res);
    clock.lap(&EpochProfile::optimizer_s);
    loss_sum += loss * static_cast<double>(batch.loss_rows);
    rows += static_cast<double>(batch.loss_rows);
    if (on_step) on_step(b);
    // After the epoch's last step run() asks, after the evaluation.
    if (b + 1 < batches && stop()) {
      at = {epoch, b + 1, loss_sum, static_cast<std::int64_t>(rows), s.allreduce_time_s};
      m_batches->stop_epoch();
      return false;
    }
  }
  m_res.synchronize();
  m_batches->end_epoch(s);
  s.epoch_time_s = seconds_since(start);
  detail::reduce_epoch_counters(*m_shard.comm, s);
  s.train_loss = loss_sum / rows;
  // Each stage the slowest rank's.
  double v[4] = {stages.subgraph_build_s, stages.feature_projection_s,
                 stages.neighbor_aggregation_s, stages.semantic_aggregation_s};
  m_shard.comm->allreduce(kernels::Span<double>(v, 4), ReduceOp::Max);
  stages = {v[0], v[1], v[2], v[3]};
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
  check_config(config);
  // The part's rows, the whole graph's counts (what FeaturelessInput::Auto decides by).
  nn::HeteroSchema schema = hetero_schema(shard.graph);
  schema.global_nodes = shard.layout.global_nodes;
  HeteroTrainRun run{nn::HeteroModel<float>(res, config.hetero, schema, config.seed), {}};
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
  HeteroNodeClassification task(res, shard, config, model);
  Tensor<float> logits = task.logits();
  if (layer == layers) return logits;
  // A part's layers hold the owned rows, then the halo's.
  Tensor<float> all = model.hidden(layer, type).clone(host_resources(res));
  const std::int64_t rows = shard.layout.num_owned[static_cast<std::size_t>(type)];
  if (rows == all.rows()) return all;
  const std::vector<float> v = all.to_vector(host_resources(res));
  return Tensor<float>::from_host(
      host_resources(res),
      std::vector<float>(v.begin(), v.begin() + static_cast<std::ptrdiff_t>(rows * all.cols())),
      rows, all.cols());
}

nn::HeteroSchema hetero_schema(const HeteroShard& shard) {
  nn::HeteroSchema s = hetero_schema(shard.graph);
  s.num_nodes = shard.layout.global_nodes;
  return s;
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
  const nn::HeteroSchema schema = hetero_schema(shard);  // the dataset's
  // Every table whole (a partitioned run gathers its rows when it ends), in type order.
  const auto tables = model.embeddings();
  std::size_t i = 0;
  for (std::size_t t = 0; t < schema.num_nodes.size() && i < tables.size(); ++t)
    if (nn::learns_embedding(config.hetero.featureless, schema, static_cast<std::int32_t>(t)))
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
