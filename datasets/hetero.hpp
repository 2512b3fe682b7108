#pragma once
// HeteroGraph: typed nodes and relations (one CSR each), labels and splits of a target type,
// the typed directory reader (docs/formats.md) and the homogenised view.

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <halo/datasets/dataset.hpp>
#include <halo/kernels/features.hpp>
#include <halo/kernels/resources.hpp>

namespace halo::datasets {

/// One node type: its nodes are ids 0..num_nodes-1 local to the type.
struct NodeType {
  std::string name;
  std::int64_t num_nodes = 0;
  /// num_nodes x width, dense or sparse; a type without features holds an empty dense Tensor
  /// (0 x 0): the model gives it a learnable embedding (nn::SparseEmbedding).
  kernels::FeatureMatrix<float> features;
  /// What the features are, as the source names it ("binary_bag_of_words", "none", ...).
  std::string feature_kind = "none";

  bool has_features() const { return kernels::num_cols(features) > 0; }
};

/// One relation (edge type). `adj` is num_nodes(dst_type) x num_nodes(src_type): row d lists
/// the sources of d's incoming edges (columns sorted, no duplicates, no values), the layout
/// the layers aggregate over (nn::HeteroRelation).
struct Relation {
  std::string name;
  std::int32_t src_type = 0;
  std::int32_t dst_type = 0;
  Graph adj;
};

/// A heterogeneous node-classification dataset, on the host. Move-only.
struct HeteroGraph {
  std::string name;
  std::vector<NodeType> node_types;
  /// The relations as stored, then their reverses (`rev_<name>`, source and destination types
  /// swapped) added on load.
  std::vector<Relation> relations;
  /// The type whose nodes are classified.
  std::int32_t target_type = 0;
  /// One class per target node, in [0, num_classes).
  kernels::Tensor<std::int32_t> labels;
  std::int32_t num_classes = 0;
  /// Target-type ids of each split: distinct, ascending, pairwise disjoint.
  kernels::Tensor<NodeId> train_idx, val_idx, test_idx;
  /// Which stored split they are (splits/{train,val,test}_K.txt: K; -1 when not read from one).
  int split = -1;

  std::int32_t num_types() const { return static_cast<std::int32_t>(node_types.size()); }
  /// Nodes of every type.
  std::int64_t num_nodes() const;
  /// Stored edges of every relation (reverses included).
  std::int64_t num_edges() const;
  /// The homogenised id ranges: type t's node v is global id offsets[t] + v; the last entry is
  /// num_nodes(). Types in their order.
  std::vector<std::int64_t> type_offsets() const;
  /// The index of the type called `type`, or -1.
  std::int32_t find_type(const std::string& type) const;
};

/// Checks `g`: at least one type; every relation's CSR well formed, num_nodes(dst) x
/// num_nodes(src), columns in range; features with one row per node; labels one per target
/// node in [0, num_classes); splits in range, ascending, disjoint. halo::IoError naming the
/// first problem. Read-only.
void validate(const HeteroGraph& g);

/// The homogenised graph: num_nodes() x num_nodes(), every relation's edges at their global
/// ids (type_offsets()), duplicates between relations kept (rows sorted). Host. For the
/// partitioner and for degree statistics.
Graph homogenize(const kernels::Resources& res, const HeteroGraph& g);

/// The CSR of one relation, num_dst x num_src, from (dst, src) pairs (ids in range): rows
/// sorted, duplicates removed, no values. Host.
Graph relation_csr(const kernels::Resources& res, std::int64_t num_dst, std::int64_t num_src,
                   std::vector<std::pair<NodeId, NodeId>> dst_src);

/// Appends `stored` to g.relations, then the reverse of each (`rev_<name>`, source and
/// destination types swapped), in the same order: the layout every reader produces. Host.
void add_reverse_relations(const kernels::Resources& res, HeteroGraph& g,
                           std::vector<Relation> stored);

/// Whether `dir` holds a dataset in the typed directory format (it has `node_types.tsv`).
bool is_hetero_directory(const std::filesystem::path& dir);

/// The label counts K of the `splits/train_<K>.txt` files in `dir`, ascending.
std::vector<int> hetero_splits(const std::filesystem::path& dir);

/// Reads the typed directory format (docs/formats.md): `node_types.tsv` (type, num_nodes,
/// feature_file, feature_dim, feature_kind; feature_file `*.coo.tsv`, `*.dense.tsv` or `-`),
/// `edge_types.tsv` (relation, src_type, dst_type, file, num_edges; each file `src<TAB>dst`),
/// one `labels_<type>.txt` naming the target type, and `splits/{train,val,test}_<K>.txt` with
/// `split` choosing K (unset: the smallest). Adds the reverse relations, removes duplicate
/// edges, sorts the splits. halo::IoError "<file>:<line>: ..." for malformed or inconsistent
/// input. Host tensors.
HeteroGraph read_hetero_directory(const kernels::Resources& res, const std::filesystem::path& dir,
                                  std::optional<int> split = std::nullopt);

}  // namespace halo::datasets
