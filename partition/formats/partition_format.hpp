#pragma once
// The on-disk partition directory: meta.json plus one file per part (a header, then arrays).

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include <halo/datasets/dataset.hpp>
#include <halo/datasets/hetero.hpp>
#include <halo/datasets/store/store.hpp>
#include <halo/kernels/features.hpp>
#include <halo/kernels/resources.hpp>
#include <halo/partition/id_map.hpp>
#include <halo/partition/metrics.hpp>
#include <halo/partition/partition_book.hpp>
#include <halo/partition/partitioners/partitioner.hpp>

namespace halo::partition {

/// The version written to meta.json; readers refuse any other. Version 3 stores the training
/// graph and the exchange lists, so a rank starts without collectives (docs/formats.md);
/// version 4 lets the parts reference a graph store's dense features instead of copying them.
constexpr std::int32_t kPartitionFormatVersion = 4;

/// Size of the header at the start of every part file (docs/formats.md).
constexpr std::int64_t kPartFileHeaderBytes = 32;

/// FNV-1a, 64-bit (offset basis 0xcbf29ce484222325, prime 0x100000001b3), over `bytes` bytes,
/// continuing from `hash`. The checksum of every array of a part file.
std::uint64_t fnv1a64(const void* data, std::size_t bytes,
                      std::uint64_t hash = 0xcbf29ce484222325ull);

/// One array of a part file as meta.json describes it.
struct ArrayEntry {
  std::string name;
  std::string dtype;  ///< "int32", "int64" or "float32"
  std::int64_t rows = 0;
  std::int64_t cols = 1;
  /// Byte offset of the array in the part file (a multiple of 8, past the header).
  std::int64_t offset = 0;
  /// FNV-1a of the array's bytes.
  std::uint64_t fnv1a64 = 0;
  std::int64_t bytes() const;
};

/// Sizes of one part as meta.json records them.
struct PartInfo {
  std::int64_t num_owned = 0;
  std::int64_t num_halo = 0;
  /// Entries of the part's training-graph rows.
  std::int64_t num_edges = 0;
  /// Of those, the entries whose column is a halo node (the part's cut entries); -1 when
  /// meta.json does not record it (partitions written before it did).
  std::int64_t num_halo_entries = -1;
  std::int64_t num_train = 0;
  /// Size of part-<k>.bin in bytes.
  std::int64_t file_bytes = 0;
  /// The arrays in file order (zero-length arrays included: they share the next one's offset).
  std::vector<ArrayEntry> arrays;
  /// The entry named `name`, or nullptr.
  const ArrayEntry* find(const std::string& name) const;
};

/// What meta.json says about a heterogeneous partition (its "hetero" object, docs/formats.md).
struct HeteroMeta {
  struct Type {
    std::string name;
    std::int64_t num_nodes = 0;
    std::string features;  ///< "dense", "sparse" or "none"
    std::int64_t num_features = 0;
    std::string feature_kind;
  };
  struct Relation {
    std::string name;
    std::int32_t src_type = 0, dst_type = 0;
    std::int64_t num_edges = 0;
  };
  std::vector<Type> types;
  std::vector<Relation> relations;  ///< stored ones, then the reverses, as HeteroGraph holds them
  std::int32_t target_type = 0;
  /// Per type: the largest part's nodes of that type over the mean (1 = perfect).
  std::vector<double> balance;
  /// [part][type]: owned and halo nodes.
  std::vector<std::vector<std::int64_t>> num_owned, num_halo;
  /// The dataset's stored split the parts hold (datasets::HeteroGraph::split; -1: not recorded,
  /// a partition written before it was).
  int split = -1;
};

/// The contents of meta.json.
struct PartitionMeta {
  std::int32_t format_version = kPartitionFormatVersion;
  std::string dataset;
  std::int64_t num_nodes = 0;
  /// Stored entries of the input graph.
  std::int64_t num_edges = 0;
  /// Entries of the training graph (A ∪ Aᵀ without self-loops or duplicates, both directions)
  /// and its largest row: what a sampler plans its envelope from.
  std::int64_t training_edges = 0;
  std::int64_t max_degree = 0;
  /// S's rows by degree (datasets::degree_histogram); empty for partitions written before
  /// meta.json recorded it.
  datasets::DegreeHistogram degree_histogram;
  std::int64_t num_features = 0;
  std::int32_t num_classes = 0;
  std::int64_t num_train = 0;
  bool sparse_features = false;
  bool weighted = false;
  PartitionConfig config;
  PartitionBook book;
  PartitionMetrics metrics;
  PartitionTimings timings;
  std::vector<PartInfo> parts;
  /// Set for a heterogeneous partition (write_hetero_partitions): its parts are read with
  /// read_hetero_part. The homogenised graph (type t's node v is id type offset + v) is what
  /// the fields above describe.
  std::optional<HeteroMeta> hetero;
  /// Set when the parts hold no feature rows and reference these instead (write_partitions's
  /// `features_from`): read_part gathers a part's owned rows from the store.
  std::optional<datasets::StoredFeatures> feature_store;
  /// FNV-1a of meta.json's bytes: ranks compare it to check that they opened the same partition.
  std::uint64_t checksum = 0;
};

/// One part: what a rank needs to train, in memory. Read from disk (read_part) or built for
/// a whole dataset in one process (make_local_part).
///
/// The training graph S is A ∪ Aᵀ of the input's structure without self-loops or duplicate
/// entries (every model trains on it: GCN adds its own self-loops and weights, SAGE takes the
/// mean over S's rows); edge values of a weighted input are not used. `graph` holds the owned
/// rows of S: num_owned x num_local, local column ids (IdMap), unweighted, each row listing
/// the neighbours in ascending *original* id: the order one process stores, so a neighbour
/// sampler keyed by original ids draws the same neighbours from any partition.
struct Part {
  IdMap ids;
  std::int32_t num_classes = 0;
  datasets::Graph graph;
  /// S-degree (row length in S) of every local node: what GCN's normalisation and the
  /// mini-batch GCN weights read, for halo nodes too.
  kernels::Tensor<std::int64_t> degrees;
  /// The halo exchange's lists, P + 1 offsets each. This part sends the rows
  /// send_rows[send_offsets[j] .. send_offsets[j + 1]) (owned local ids, ascending) to part j,
  /// and receives from part j the halo nodes num_owned + recv_offsets[j] ..
  /// num_owned + recv_offsets[j + 1] (in the same order: ascending partition id). Own blocks
  /// are empty. Every halo row crosses once per direction: sum of the receive lists over the
  /// parts is the partition's communication volume.
  std::vector<std::int64_t> send_offsets;
  kernels::Tensor<NodeId> send_rows;
  std::vector<std::int64_t> recv_offsets;
  /// num_owned x num_features, dense or sparse like the input; or, when features_by_original,
  /// every node's row of a referenced store (read_part with PartReadOptions::map_store_features).
  kernels::FeatureMatrix<float> features;
  /// `features` is a mapping of the whole store's features.bin (num_nodes x num_features
  /// float32), the row of a node its original id: the owned rows are read from the file, not
  /// copied into memory (runtime::FeatureStore reads them with pread).
  bool features_by_original = false;
  kernels::Tensor<std::int32_t> labels;
  /// Local ids (ascending) of the owned nodes in each split.
  kernels::Tensor<NodeId> train_idx;
  kernels::Tensor<NodeId> val_idx;
  kernels::Tensor<NodeId> test_idx;
  /// Every training node of the whole graph (all parts): partition ids (ascending) and their
  /// original ids. A mini-batch epoch shuffles them as one process does and each rank takes
  /// the seeds it owns. O(training nodes), the one array every part repeats.
  kernels::Tensor<NodeId> all_train;
  kernels::Tensor<NodeId> all_train_original;
  /// Of the whole training graph: nodes (book().num_nodes()), entries and the largest row.
  std::int64_t training_edges = 0;
  std::int64_t max_degree = 0;

  std::int32_t rank() const { return ids.rank(); }
  const PartitionBook& book() const { return ids.book(); }
  std::int64_t num_owned() const { return ids.num_owned(); }
  std::int64_t num_halo() const { return ids.num_halo(); }
  /// Entries of `graph` whose column is a halo node (host tensors).
  std::int64_t num_halo_entries() const;
};

/// The one part of a one-part partition of `ds`, built in memory: what one process trains on
/// (the same type and code path as one rank of a P-part partition). Takes the features,
/// labels and splits out of `ds` (moved, not copied; the graph stays); ids are the identity.
/// Host tensors.
Part make_local_part(const kernels::Resources& res, datasets::Dataset&& ds);

/// Writes the partition `r` of `ds` to `dir` (docs/formats.md, "Partition directory"): every
/// part's arrays into part-<k>.bin, then meta.json with the checksums, all into a temporary sibling
/// directory that is renamed to `dir` at the end, so `dir` never holds a partial partition.
/// `dir` must not exist or be an empty directory (halo::IoError otherwise); parents are created.
/// `r` must come from partition_dataset on `ds`. Calls `progress` once per part.
/// `features_from` (the dense features of the store `ds` was opened from, datasets::
/// stored_features; `ds` may then hold none): the parts store no feature rows, meta.json names
/// the store, its dtype, shape and features.bin's CRC-32, and read_part gathers each part's rows
/// from it (the store must then stay where it is, unchanged).
void write_partitions(const kernels::Resources& res, const datasets::Dataset& ds,
                      const PartitionResult& r, const std::filesystem::path& dir,
                      const Progress& progress = {},
                      const datasets::StoredFeatures* features_from = nullptr);

/// Reads and checks `dir`/meta.json (format name and version, consistent sizes). Reads no part.
/// halo::IoError naming the file and the problem.
PartitionMeta read_partition_meta(const std::filesystem::path& dir);

/// Loads part `k` of `dir`, reading meta.json and part-<k>.bin (and the owned rows of a
/// referenced feature store, whose header must match meta.json's): the file's size and header,
/// every array's FNV-1a checksum must match meta.json, the padding must be zero and the arrays
/// well formed (halo::IoError naming the file and the array otherwise). The tensors are on the
/// host. `meta`, when given, must be read_partition_meta(dir) (saves reading it again).
/// How read_part brings a part's feature rows into memory.
struct PartReadOptions {
  /// A partition referencing a float32 store: map the store's features.bin instead of copying
  /// the part's owned rows (Part::features_by_original); no effect otherwise (rows of another
  /// dtype are converted into memory, a part holding its rows reads them).
  bool map_store_features = false;
};

Part read_part(const kernels::Resources& res, const std::filesystem::path& dir, std::int32_t k,
               const PartitionMeta* meta = nullptr, const PartReadOptions& options = {});

/// Checks the size, header, padding and array checksums of every part file (halo::IoError on
/// the first mismatch), and that a referenced feature store's header still matches meta.json.
/// Returns the number of part files checked.
std::int64_t verify_partitions(const std::filesystem::path& dir);

// ---- heterogeneous partitions ----------------------------------------------------------------

/// The ids and exchange lists of one part of a heterogeneous partition, per node type. Type t's
/// local rows are its owned nodes (0 .. num_owned[t] - 1, ascending original id) then its halo
/// (the sources, in any relation, of the owned nodes' incoming edges that another part owns;
/// ascending partition id, hence grouped by owner). Empty num_owned: the whole graph in one
/// process (every row owned).
struct HeteroPartLayout {
  std::int32_t rank = 0;
  std::int32_t num_parts = 1;
  std::vector<std::int64_t> num_owned;
  /// Per type, the type-local original id of every local row (owned, then halo).
  std::vector<kernels::Tensor<NodeId>> original;
  /// Per type, as Part's lists over that type's rows (P + 1 offsets each): this part sends its
  /// owned rows send_rows[t][send_offsets[t][j] ..) to part j and receives the halo rows
  /// num_owned[t] + recv_offsets[t][j] .. num_owned[t] + recv_offsets[t][j + 1) from part j.
  std::vector<std::vector<std::int64_t>> send_offsets, recv_offsets;
  std::vector<kernels::Tensor<NodeId>> send_rows;
  /// Per type, the nodes of the whole graph; and the training nodes of the whole graph.
  std::vector<std::int64_t> global_nodes;
  std::int64_t num_train = 0;

  /// The one part of a one-part partition whose rows are the nodes in id order: every node
  /// owned, a row its own global id. (A part of several can hold every node in id order, its
  /// halo included, and still shares its rows with the others: not the identity.)
  bool identity() const;
};

/// One part of a heterogeneous partition: `graph` holds the part's local rows of every type
/// (num_nodes = owned + halo), features of every local row (halo rows too: layer 0 needs no
/// exchange), labels of every local target row, splits of the owned target rows only, and
/// every relation with all incoming edges of the owned destination rows (rows of halo nodes are
/// empty), columns the local source rows, ascending.
struct HeteroPart {
  datasets::HeteroGraph graph;
  HeteroPartLayout layout;
};

/// The layout of the one part of a one-part partition of `g`: what one process trains on (the
/// same code path as one rank of a P-part partition). Every node is owned, ids are the
/// identity, nothing is sent or received. Host tensors.
HeteroPartLayout make_local_hetero_layout(const kernels::Resources& res,
                                          const datasets::HeteroGraph& g);

/// What `halo partition` computes for a heterogeneous dataset.
struct HeteroPartitionResult {
  /// On the homogenised graph (datasets::homogenize): symmetric = its training graph S,
  /// assignment, relabelling, the metrics (on S) and timings.
  PartitionResult homogeneous;
  /// [part][type]: owned nodes.
  std::vector<std::vector<std::int64_t>> type_counts;
  /// Per type: the largest part's count over the mean count (1 = perfect balance).
  std::vector<double> type_balance;
};

/// METIS (config.method; Random too) on the homogenised graph of `g` with one balance
/// constraint per node type (1 for the type's nodes, else 0) plus one for the training nodes
/// (config.balance.train); config.balance.nodes/edges are not used. The partition ids follow
/// the homogenised order within a part, so each part's owned nodes of a type are contiguous.
HeteroPartitionResult partition_hetero(const kernels::Resources& res,
                                       const datasets::HeteroGraph& g,
                                       const PartitionConfig& config,
                                       const Progress& progress = {});

/// Writes `r` (from partition_hetero on `g`) to `dir` as write_partitions does (a staged
/// directory renamed at the end; same errors): meta.json with "heterogeneous": true and its
/// "hetero" object, and per part the arrays of HeteroPart (docs/formats.md).
void write_hetero_partitions(const kernels::Resources& res, const datasets::HeteroGraph& g,
                             const HeteroPartitionResult& r, const std::filesystem::path& dir,
                             const Progress& progress = {});

/// Part `k` of the heterogeneous partition in `dir`, checked like read_part (sizes, checksums,
/// well-formed arrays, datasets::validate on the part's graph). halo::IoError naming the file
/// and the problem, also when `dir` holds a homogeneous partition. Host tensors.
HeteroPart read_hetero_part(const kernels::Resources& res, const std::filesystem::path& dir,
                            std::int32_t k, const PartitionMeta* meta = nullptr);

}  // namespace halo::partition
