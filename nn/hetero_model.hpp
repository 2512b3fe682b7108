#pragma once
// The heterogeneous node classifier: per-type input (a projection of the type's features or a
// learnable embedding), heterogeneous layers (R-GCN, HGT) with ReLU and dropout between them,
// logits of the target type.

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include <halo/nn/embedding.hpp>
#include <halo/nn/hetero.hpp>
#include <halo/nn/module.hpp>

namespace halo::nn {

/// The heterogeneous layers make_hetero_layer builds.
enum class HeteroLayerKind { Rgcn, Hgt };

/// "rgcn" / "hgt"; LogicError naming the accepted values otherwise.
HeteroLayerKind parse_hetero_layer_kind(const std::string& name);
std::string to_string(HeteroLayerKind kind);

/// The input of a node type without features.
enum class FeaturelessInput {
  Embedding,  ///< a learnable row per node (SparseEmbedding, SparseAdam)
  Zero,       ///< zeros: the type's nodes are represented by what they aggregate
  /// per type: an embedding for a type with fewer nodes than the target type, zeros for the
  /// others (learns_embedding)
  Auto,
};

/// "embedding" / "zero" / "auto"; LogicError naming the accepted values otherwise.
FeaturelessInput parse_featureless_input(const std::string& name);
std::string to_string(FeaturelessInput input);

/// The architecture of a HeteroModel.
struct HeteroModelConfig {
  HeteroLayerKind kind = HeteroLayerKind::Rgcn;
  int num_layers = 2;        // heterogeneous layers
  std::int64_t hidden = 64;  // width of the input projections, embeddings and hidden layers
  float dropout = 0.5f;      // on every layer's input
  int num_bases = 0;         // R-GCN basis decomposition (0: one weight per relation)
  /// HGT attention heads (every HGT layer is `hidden` wide; make_hetero_layer uses one head for
  /// an output width they do not divide).
  int heads = 4;
  FeaturelessInput featureless = FeaturelessInput::Auto;
};

/// What the data give the model: per node type its node count and feature width (0: no
/// features, the type gets an embedding), the relations (src_type, dst_type), the target type
/// and the classes.
struct HeteroSchema {
  std::vector<std::string> type_names;
  std::vector<std::int64_t> num_nodes;
  std::vector<std::int64_t> in_features;
  std::vector<std::string> relation_names;
  std::vector<std::pair<std::int32_t, std::int32_t>> relations;
  std::int32_t target_type = 0;
  std::int32_t num_classes = 0;
  /// Per type, the whole graph's nodes where num_nodes are a part's rows (empty: num_nodes are
  /// the whole graph's). What FeaturelessInput::Auto decides by, the same on every rank.
  std::vector<std::int64_t> global_nodes;
};

/// Whether node type t of `schema` gets a learnable embedding: a type without features, under
/// Embedding, or under Auto when the whole graph has fewer nodes of it than of the target type.
/// A few nodes each seen from many targets (ACM's 60 subjects, a venue, a field) are told apart
/// by their own rows; a type as numerous as the targets or more (ACM's 7,167 authors, ogbn-mag's
/// 1.1 M) would add more free rows than the labels constrain, and overfits (bench/results/hgnn.md,
/// "Featureless types").
bool learns_embedding(FeaturelessInput input, const HeteroSchema& schema, std::int32_t t);

/// One heterogeneous layer of `kind`: input width in_width[t] per type, `out` outputs, over
/// `relations`. The one place a layer kind becomes a module (HGT plugs in here).
template <class T>
std::unique_ptr<HeteroModule<T>> make_hetero_layer(
    const kernels::Resources& res, HeteroLayerKind kind, std::vector<std::int64_t> in_width,
    std::int64_t out, std::vector<std::pair<std::int32_t, std::int32_t>> relations,
    const HeteroModelConfig& config, std::uint64_t seed, std::uint64_t param_id);

/// x_t -> h_t = x_t P_t + c_t (types with features, sparse or dense) or h_t = E_t[ids] (an
/// embedding, SparseEmbedding; zeros with FeaturelessInput::Zero) -> num_layers layers, ReLU
/// between them, dropout before each -> the target type's logits. The last layer computes only the
/// target type's destinations. R-GCN's last layer outputs the logits; HGT's layers are all
/// `hidden` wide (so the last one keeps its gated residual: the target's own representation
/// reaches the output) and a linear classifier z W_c + b_c on the target type follows, as in the
/// published model. Dropout masks are keyed by (seed, epoch, layer, global id) with
/// global ids from the graph (source_ids, else type_offset + row). Not thread-safe.
template <class T>
class HeteroModel {
 public:
  HeteroModel(const kernels::Resources& res, const HeteroModelConfig& config,
              const HeteroSchema& schema, std::uint64_t seed);

  /// x[t]: type t's features (num_src[t] rows), ignored for types with an embedding. Returns
  /// num_dst[target] x num_classes logits, owned by the model, valid until the next forward.
  const kernels::Tensor<T>& forward(const Context& ctx, const HeteroGraphView<T>& graph,
                                    std::span<const Features<T>* const> x);
  /// The same with one graph per layer, input layer first (sampled typed blocks: graphs[l]'s
  /// num_dst is graphs[l + 1]'s num_src); x and the embedding rows are those of graphs[0]'s
  /// sources. An embedded type with source_ids looks up rows source_ids - type_offset (CPU).
  const kernels::Tensor<T>& forward(const Context& ctx, std::span<const HeteroGraphView<T>> graphs,
                                    std::span<const Features<T>* const> x);
  /// dL/dlogits -> every parameter's gradient (overwritten) and the embeddings' pending
  /// gradients (rows the forward looked up). The graph(s) of the forward.
  void backward(const Context& ctx, const HeteroGraphView<T>& graph,
                const kernels::Tensor<T>& dlogits);
  void backward(const Context& ctx, std::span<const HeteroGraphView<T>> graphs,
                const kernels::Tensor<T>& dlogits);

  /// The dense parameters (Adam, gradient all-reduce), the same list on every call.
  std::vector<Parameter<T>*> parameters();
  /// The tables of the featureless types (SparseAdam), those not spread.
  std::vector<SparseEmbedding<T>*> embeddings();
  /// Type `type`'s embedding rows come from `rows` from now on (a table spread over processes,
  /// which has taken the rows it owns from embeddings()' table): the model's own table is
  /// released, and every forward and backward calls rows' lookup and set_gradient once, with
  /// the source ids of the type's rows (CPU), also when it has none. `rows` must outlive the
  /// model's passes.
  void spread_embedding(std::int32_t type, EmbeddingRows<T>* rows);
  /// Type `type`'s embedding becomes `table` (the whole table, e.g. gathered from the
  /// processes that owned its rows), read by the model itself again.
  void set_embedding(std::int32_t type, std::unique_ptr<SparseEmbedding<T>> table);
  /// Rows `rows` (type-local ids) of type `type`'s embedding: a process's part of the table.
  /// Their values are the model's own table's when it holds `num_nodes` rows (a model built
  /// for the whole graph, or read from a file), else as a model of a `num_nodes`-node type
  /// initialises them (its name, seed and draws; the same values for a model not yet trained).
  std::unique_ptr<SparseEmbedding<T>> embedding_part(const kernels::Resources& res,
                                                     std::int32_t type, std::int64_t num_nodes,
                                                     std::span<const kernels::NodeId> rows) const;
  /// After a forward: type `type`'s rows after heterogeneous layer `layer` (1 <= layer <
  /// num_layers), its ReLU included, as the next layer reads them (dropped out when the
  /// forward was training; with a halo, the owned rows and then the halo's).
  const kernels::Tensor<T>& hidden(int layer, std::int32_t type) const;
  const HeteroModelConfig& config() const { return m_config; }
  const HeteroSchema& schema() const { return m_schema; }

 private:
  HeteroModelConfig m_config;
  HeteroSchema m_schema;
  std::uint64_t m_seed;
  std::vector<Parameter<T>> m_proj_weight, m_proj_bias;          // per type with features
  std::vector<std::unique_ptr<SparseEmbedding<T>>> m_embedding;  // per type without
  std::vector<std::unique_ptr<HeteroModule<T>>> m_layers;
  Parameter<T> m_cls_weight, m_cls_bias;      // HGT: hidden x classes, classes; else empty
  const kernels::Tensor<T>* m_top = nullptr;  // HGT: the last layer's target output
  std::vector<const Features<T>*> m_inputs;
  std::vector<std::vector<kernels::Tensor<T>>> m_h;    // per layer input, per type (dropped out)
  std::vector<std::vector<kernels::Tensor<T>>> m_pre;  // per hidden layer output before ReLU
  std::vector<kernels::Tensor<T>> m_dh;
  std::vector<kernels::Tensor<T>> m_dh_owned;  // a partition: the owned rows of m_dh
  HeteroGraphView<T> m_last;  // the last layer's graph: the target type's destinations only
  std::vector<kernels::Tensor<kernels::NodeId>> m_embed_ids;  // per type: sampled rows looked up
  std::vector<bool> m_embed_sampled;        // per type: the last forward looked up m_embed_ids
  std::vector<EmbeddingRows<T>*> m_spread;  // per type: its rows spread over processes, or null
  std::vector<bool> m_zero_input;  // per type: its input is zeros (featureless, no embedding)
  kernels::Tensor<T> m_logits;
};

}  // namespace halo::nn
