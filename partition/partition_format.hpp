#pragma once
// The on-disk partition directory: meta.json plus one file per part (a header, then arrays).

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include <halo/datasets/dataset.hpp>
#include <halo/kernels/features.hpp>
#include <halo/kernels/resources.hpp>
#include <halo/partition/metrics.hpp>
#include <halo/partition/partition_book.hpp>
#include <halo/partition/partitioner.hpp>

namespace halo::partition {

/// The version written to meta.json; readers refuse any other.
constexpr std::int32_t kPartitionFormatVersion = 2;

/// Size of the header at the start of every part file (docs/formats.md).
constexpr std::int64_t kPartFileHeaderBytes = 32;

/// FNV-1a, 64-bit (offset basis 0xcbf29ce484222325, prime 0x100000001b3), over `bytes` bytes,
/// continuing from `hash`. The checksum of every array of a part file.
std::uint64_t fnv1a64(const void* data, std::size_t bytes,
                      std::uint64_t hash = 0xcbf29ce484222325ull);

/// One array of a part file as meta.json describes it.
struct ArrayEntry {
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
  std::int64_t num_edges = 0;
  /// Size of part-<k>.bin in bytes.
  std::int64_t file_bytes = 0;
  /// Array name ("indptr", ...) -> its entry.
  std::map<std::string, ArrayEntry> arrays;
};

/// The contents of meta.json.
struct PartitionMeta {
  std::int32_t format_version = kPartitionFormatVersion;
  std::string dataset;
  std::int64_t num_nodes = 0;
  std::int64_t num_edges = 0;
  std::int64_t num_features = 0;
  std::int32_t num_classes = 0;
  bool sparse_features = false;
  bool weighted = false;
  PartitionConfig config;
  PartitionBook book;
  PartitionMetrics metrics;
  PartitionTimings timings;
  std::vector<PartInfo> parts;
};

/// One part loaded from disk. Local ids: rows (and the first num_owned columns) are the owned
/// nodes in new-id order (local i = new id book.begin(rank) + i); columns num_owned.. are the
/// halo nodes in ascending new id, hence grouped by owner.
struct Part {
  std::int32_t rank = 0;
  PartitionBook book;
  std::int32_t num_classes = 0;
  /// Original (input) id of every owned node.
  kernels::Tensor<NodeId> original_ids;
  /// num_owned x (num_owned + num_halo): the input graph's rows of the owned nodes, columns
  /// sorted within each row, values kept when the input is weighted.
  datasets::Graph graph;
  /// New global id of every local column (num_owned + num_halo).
  kernels::Tensor<NodeId> column_ids;
  /// halo_offsets[j] .. halo_offsets[j + 1]: the halo nodes owned by part j, as positions in
  /// the halo (local column num_owned + position). P + 1 entries; the own block is empty.
  std::vector<std::int64_t> halo_offsets;
  /// Global degree of every local column (rows first): the number of stored entries in that
  /// node's row of the whole input graph (its in-degree, self-loops included).
  kernels::Tensor<std::int64_t> degrees;
  /// num_owned x num_features, dense or sparse like the input.
  kernels::FeatureMatrix<float> features;
  kernels::Tensor<std::int32_t> labels;
  /// Local ids (ascending) of the owned nodes in each split.
  kernels::Tensor<NodeId> train_idx;
  kernels::Tensor<NodeId> val_idx;
  kernels::Tensor<NodeId> test_idx;

  std::int64_t num_owned() const { return graph.num_rows(); }
  std::int64_t num_halo() const { return graph.num_cols - graph.num_rows(); }
};

/// Writes the partition `r` of `ds` to `dir` (docs/formats.md, "Partition directory"): every
/// part's arrays into part-<k>.bin, then meta.json with the checksums, all into a temporary sibling
/// directory that is renamed to `dir` at the end, so `dir` never holds a partial partition.
/// `dir` must not exist or be an empty directory (halo::IoError otherwise); parents are created.
/// `r` must come from partition_dataset on `ds`. Calls `progress` once per part.
void write_partitions(const kernels::Resources& res, const datasets::Dataset& ds,
                      const PartitionResult& r, const std::filesystem::path& dir,
                      const Progress& progress = {});

/// Reads and checks `dir`/meta.json (format name and version, consistent sizes). Reads no part.
/// halo::IoError naming the file and the problem.
PartitionMeta read_partition_meta(const std::filesystem::path& dir);

/// Loads part `k` of `dir`, reading meta.json and part-<k>.bin only: the file's size and header,
/// every array's FNV-1a checksum must match meta.json, the padding must be zero and the arrays
/// well formed (halo::IoError naming the file and the array otherwise). The tensors are on the
/// host.
Part read_part(const kernels::Resources& res, const std::filesystem::path& dir, std::int32_t k);

/// Checks the size, header, padding and array checksums of every part file (halo::IoError on
/// the first mismatch). Returns the number of part files checked.
std::int64_t verify_partitions(const std::filesystem::path& dir);

}  // namespace halo::partition
