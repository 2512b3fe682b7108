#pragma once
// The binary dataset cache: raw little-endian arrays plus meta.json, reloaded through mmap.

#include <array>
#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include <halo/datasets/dataset.hpp>
#include <halo/kernels/resources.hpp>

namespace halo::datasets {

/// The cache format version stored in meta.json; entries with another version are ignored (and
/// rebuilt by the next load). Version 2 added the training graph's statistics (CacheCounts).
inline constexpr int kCacheFormatVersion = 2;

/// The rows of the training graph S by degree, in log2 buckets: entry 0 counts the rows of
/// degree 0, entry b >= 1 those of degree 2^(b-1) .. 2^b - 1, each as {rows, sum of their
/// degrees}. `halo plan` sizes sampled blocks with it (on a skewed graph most rows have fewer
/// neighbours than the mean degree, and the draws fall on the hubs).
using DegreeHistogram = std::vector<std::array<std::int64_t, 2>>;
/// Of the rows of a CSR (rows + 1 offsets).
DegreeHistogram degree_histogram(const std::int64_t* indptr, std::int64_t rows);
/// Whether `h` has no negative count and covers `rows` rows holding `entries` entries.
bool degree_histogram_covers(const DegreeHistogram& h, std::int64_t rows, std::int64_t entries);

/// The counts meta.json records, readable without loading any array (read_cache_counts): what
/// `halo plan` needs. The training graph S is A ∪ Aᵀ of the stored structure without self-loops
/// or duplicates (what every model trains on, partition::partitioning_graph).
struct CacheCounts {
  std::string name;
  std::int64_t num_nodes = 0;
  std::int64_t num_edges = 0;  ///< stored entries of the input graph
  bool weighted = false;
  std::int64_t training_edges = 0;   ///< entries of S
  std::int64_t max_degree = 0;       ///< largest row of S
  DegreeHistogram degree_histogram;  ///< of S's rows (empty: an entry written before it)
  std::int64_t num_features = 0;
  bool sparse_features = false;
  std::int64_t feature_nnz = 0;
  std::int32_t num_classes = 0;
  std::int64_t num_train = 0, num_val = 0, num_test = 0;
};

/// Stores `ds` (validated first) in `dir`: one raw little-endian file per array
/// (graph.indptr.bin, graph.indices.bin, graph.values.bin, features*.bin, labels.bin,
/// train_idx.bin, val_idx.bin, test_idx.bin) and `meta.json` with the format version, name,
/// counts (CacheCounts: the training graph's entries and largest row included), dtypes, byte
/// sizes and `source_checksum` (for instance the SHA-256 of the files the
/// dataset was parsed from). Everything is written to a temporary sibling directory that then
/// replaces `dir` (an existing entry is moved aside and removed), so readers never see a
/// half-written entry. Missing parents are created. halo::IoError on write failures.
void write_cache(const kernels::Resources& res, const Dataset& ds, const std::filesystem::path& dir,
                 const std::string& source_checksum);

/// Loads the entry in `dir` written by write_cache. Returns std::nullopt (and logs at debug
/// level why) when there is no entry, its format version differs from kCacheFormatVersion, or
/// its source checksum differs from `expected_source_checksum`: the caller then parses the
/// source again. Each array file is mapped with mmap and copied into a host Tensor, one at a
/// time in 32 MiB chunks, so the peak memory is the dataset plus 32 MiB. halo::IoError when the
/// entry is corrupt: unreadable meta.json, a missing array file, sizes that disagree with
/// meta.json or with each other, or arrays that fail `validate` (run with the graph's
/// `symmetric` flag taken on trust, to keep the load linear).
/// The counts in `dir`/meta.json, reading no array. std::nullopt when there is no entry or its
/// format version is not kCacheFormatVersion (an older entry has no training-graph statistics;
/// loading the dataset once rebuilds it); halo::IoError naming the file when meta.json is corrupt.
std::optional<CacheCounts> read_cache_counts(const std::filesystem::path& dir);

std::optional<Dataset> read_cache(const kernels::Resources& res, const std::filesystem::path& dir,
                                  const std::string& expected_source_checksum);

}  // namespace halo::datasets
