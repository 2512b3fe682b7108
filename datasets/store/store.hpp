#pragma once
// The on-disk graph store: raw little-endian arrays and a JSON header (store.json), opened by mmap.

#include <array>
#include <chrono>
#include <cstdint>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <halo/datasets/dataset.hpp>
#include <halo/kernels/resources.hpp>

namespace halo::datasets {

/// The store format version in store.json. A store of another version is refused by name (a
/// registered dataset's store is then rebuilt from its files). Version 3 is the first store;
/// versions 1 and 2 were the binary cache it replaced (meta.json, no checksums).
inline constexpr int kStoreFormatVersion = 3;
/// The header's file name: a directory holding it is a store.
inline constexpr const char* kStoreHeader = "store.json";
/// The largest node count a store (and Halo: 32-bit node ids) holds.
inline constexpr std::int64_t kMaxStoreNodes = (std::int64_t{1} << 31) - 2;

/// The element type of the stored feature rows. F16 (IEEE binary16) and BF16 (bfloat16) halve
/// the bytes on disk; opening converts them to float32 (round to nearest even when writing).
enum class FeatureDtype { F32, F16, BF16 };
/// "f32", "f16", "bf16".
const char* feature_dtype_name(FeatureDtype d);
/// The dtype named `name` (one of the names above), or std::nullopt.
std::optional<FeatureDtype> parse_feature_dtype(std::string_view name);
/// The conversions the store uses (exact for every value the narrow type holds; NaN stays NaN).
std::uint16_t to_f16(float x);
std::uint16_t to_bf16(float x);
float from_f16(std::uint16_t h);
float from_bf16(std::uint16_t h);

/// The rows of the training graph S by degree, in log2 buckets: entry 0 counts the rows of
/// degree 0, entry b >= 1 those of degree 2^(b-1) .. 2^b - 1, each as {rows, sum of their
/// degrees}. `halo plan` sizes sampled blocks with it (on a skewed graph most rows have fewer
/// neighbours than the mean degree, and the draws fall on the hubs).
using DegreeHistogram = std::vector<std::array<std::int64_t, 2>>;
/// Of the rows of a CSR (rows + 1 offsets).
DegreeHistogram degree_histogram(const std::int64_t* indptr, std::int64_t rows);
/// Adds a row of degree `d` to `h`.
void add_to_histogram(DegreeHistogram& h, std::int64_t d);
/// Whether `h` has no negative count and covers `rows` rows holding `entries` entries.
bool degree_histogram_covers(const DegreeHistogram& h, std::int64_t rows, std::int64_t entries);

/// The statistics of the training graph S = A ∪ Aᵀ of the stored structure without self-loops or
/// duplicates (what every model trains on, partition::partitioning_graph).
struct TrainingGraphStats {
  std::int64_t entries = 0;     ///< entries of S
  std::int64_t max_degree = 0;  ///< largest row of S
  DegreeHistogram histogram;    ///< of S's rows
};
/// S's statistics for `a` (built in memory: O(nodes + edges)).
TrainingGraphStats training_graph_stats(const kernels::Resources& res, const Graph& a);

/// The counts store.json records, readable without touching any array (read_store_counts):
/// what `halo plan` needs.
struct StoreCounts {
  std::string name;
  std::int64_t num_nodes = 0;
  std::int64_t num_edges = 0;  ///< stored entries of the input graph
  bool symmetric = false;      ///< the stored graph equals its transpose
  bool weighted = false;
  std::int64_t training_edges = 0;   ///< entries of S
  std::int64_t max_degree = 0;       ///< largest row of S
  DegreeHistogram degree_histogram;  ///< of S's rows
  std::int64_t num_features = 0;
  bool sparse_features = false;
  FeatureDtype feature_dtype = FeatureDtype::F32;  ///< of dense features
  std::int64_t feature_nnz = 0;
  std::int32_t num_classes = 0;
  std::int64_t num_train = 0, num_val = 0, num_test = 0;
  std::uint64_t bytes_on_disk = 0;  ///< of the arrays (the header's own few KiB aside)
};

/// Writes a store into a temporary sibling of `dir` that replaces `dir` on commit(), so readers
/// never see a half-written store: arrays one at a time, each either whole (`array`) or streamed
/// (begin / append / end, for arrays larger than memory), each with its CRC-32; then commit()
/// writes store.json and renames the directory into place (an existing `dir` is moved aside and
/// removed). The destructor of an uncommitted writer removes what it wrote (a failed or
/// interrupted build leaves nothing that looks like a store). Every write error (a full disk
/// included) is a halo::IoError naming the file. Not thread-safe.
class StoreWriter {
 public:
  /// Creates the temporary directory (and `dir`'s missing parents). Checks first that `dir` can
  /// be written: halo::IoError when not.
  explicit StoreWriter(const std::filesystem::path& dir);
  ~StoreWriter();
  StoreWriter(const StoreWriter&) = delete;
  StoreWriter& operator=(const StoreWriter&) = delete;

  /// The temporary directory: builders put their scratch files here (removed with it).
  const std::filesystem::path& scratch_dir() const;

  /// Starts array `key` (file `key`.bin) of rows x cols elements of `dtype` ("i32", "i64",
  /// "f32", "f16", "bf16"; `element_bytes` each); rows -1: as many as are appended (whole rows).
  /// Data then comes through append, in order.
  void begin(const std::string& key, const std::string& dtype, std::size_t element_bytes,
             std::int64_t rows, std::int64_t cols);
  void append(const void* data, std::size_t bytes);
  /// Ends the array begun last: halo::IoError unless exactly its bytes were appended.
  void end();
  /// Starts array "features" of rows x cols in `dtype`; append_features then takes float32
  /// values, converted to `dtype` (round to nearest even), and end() closes it.
  void begin_features(std::int64_t rows, std::int64_t cols, FeatureDtype dtype);
  void append_features(const float* values, std::size_t count);
  /// A whole host tensor as array `key` (an empty tensor is an empty array).
  template <class T>
  void array(const std::string& key, const kernels::Tensor<T>& t);
  /// Writes store.json (the format version, `counts`, `source_checksum`, the arrays with their
  /// dtypes, shapes, bytes and CRC-32s) and moves the store into place. `counts.bytes_on_disk`
  /// is filled in here.
  void commit(const StoreCounts& counts, const std::string& source_checksum);

 private:
  struct Impl;
  std::unique_ptr<Impl> m;
};

/// How a builder prepares a store from a large input (halo datasets prepare).
struct PrepareOptions {
  /// Bytes of O(edges) and O(features) working memory (datasets::default_memory_budget() when
  /// the user names none); O(nodes) arrays come on top. The store does not depend on it.
  std::size_t memory_budget = std::size_t{256} << 20;
  FeatureDtype feature_dtype = FeatureDtype::F32;
  /// What the header records as its source (a registered dataset's files' checksum).
  std::string source_checksum = {};
};

/// What a streamed build did.
struct PrepareReport {
  StoreCounts counts;             ///< of the store written
  std::uint64_t spill_bytes = 0;  ///< of the temporary edge file (removed)
  std::int64_t row_blocks = 0;    ///< passes of the CSR builder over the edges
};

/// Stores `ds` (validated first) as a store in `dir` (StoreWriter): graph.indptr (i64),
/// graph.indices (i32), graph.values (f32, empty for a plain graph), features (dense: rows x
/// num_features of `dtype`; sparse: features.indptr / .indices / .values), labels (i32),
/// train_idx / val_idx / test_idx (i32), and store.json with the counts (S's statistics
/// computed here) and `source_checksum` (for instance the SHA-256 of the files the dataset was
/// parsed from; empty for none).
void write_store(const kernels::Resources& res, const Dataset& ds, const std::filesystem::path& dir,
                 const std::string& source_checksum, FeatureDtype dtype = FeatureDtype::F32);

/// Whether `dir` holds a store header (nothing is checked).
bool is_store(const std::filesystem::path& dir);

/// The counts in `dir`/store.json, reading no array. halo::IoError naming the file when there
/// is no header, it is not JSON, its format version is not kStoreFormatVersion, its counts are
/// inconsistent, or an array file's size disagrees with it (sizes are checked, contents not).
StoreCounts read_store_counts(const std::filesystem::path& dir);
/// `dir`/store.json's source checksum (read_store_counts's checks first).
std::string read_store_source(const std::filesystem::path& dir);

/// How open_store brings the arrays into memory.
struct StoreOpenOptions {
  /// true: every array stays a copy-on-write mapping of its file (Buffer::map_file): pages are
  /// read when first touched and can be dropped again by the kernel, so a store larger than
  /// memory opens. false: every array is copied into ordinary host memory (huge pages for large
  /// arrays, faster random gathers), 32 MiB at a time. F16 / BF16 features are converted to
  /// float32 in memory either way.
  bool mapped = false;
  /// Check each array's CRC-32 against the header (reads every byte once).
  bool verify_checksums = true;
  /// false: the features are not opened (the Dataset holds num_nodes x 0 dense features); for
  /// a reader that takes them from the store later (stored_features, a partition's parts).
  bool features = true;
};

/// Opens the store in `dir` as a host Dataset. halo::IoError naming the file (header or array)
/// on every problem: no header, another format version, a missing, truncated or longer array
/// file, a checksum mismatch, counts that disagree with the arrays, or arrays that fail
/// `validate` (run with the graph's `symmetric` flag taken on trust, to keep the open linear).
Dataset open_store(const kernels::Resources& res, const std::filesystem::path& dir,
                   const StoreOpenOptions& options = {});

/// The dense feature array of a store, as its header describes it: what a partition's parts
/// reference instead of copying the rows (docs/formats.md, "Partition directory").
struct StoredFeatures {
  std::filesystem::path store;  ///< the store directory, absolute
  FeatureDtype dtype = FeatureDtype::F32;
  std::int64_t rows = 0, cols = 0;
  std::uint32_t crc32 = 0;  ///< of features.bin, as store.json records it
};

/// The dense features of the store in `dir` (read_store_counts's checks, and features.bin's
/// size). halo::IoError naming the file when `dir` is no store or its features are sparse.
StoredFeatures stored_features(const std::filesystem::path& dir);

/// Rows `ids[0 .. count)` of `f` as a count x f.cols host tensor of float32 (f16 / bf16 rows
/// converted), read through a mapping of features.bin whose pages are dropped from this
/// process as it goes (the resident set stays near the output's size). Ids must lie in
/// [0, f.rows). halo::IoError naming the file when it cannot be read or its size disagrees.
kernels::Tensor<float> gather_stored_features(const kernels::Resources& res,
                                              const StoredFeatures& f, const kernels::NodeId* ids,
                                              std::int64_t count);

/// While it lives, a thread drops the pages of file-mapped tensors (Tensor::mapped) from this
/// process's resident set every `period`: a pass over a mapped graph larger than memory then
/// keeps a resident set of what it touched in one period, not the whole file (the pages stay
/// in the page cache; touching one again maps it back). Only for mappings nobody writes to: a
/// dropped page of a copy-on-write mapping loses its writes. Tensors that are not mapped are
/// left alone; they must outlive the trimmer.
class MappedPageTrimmer {
 public:
  MappedPageTrimmer(std::vector<std::pair<const void*, std::size_t>> ranges,
                    std::chrono::milliseconds period = std::chrono::milliseconds(200));
  ~MappedPageTrimmer();
  MappedPageTrimmer(const MappedPageTrimmer&) = delete;
  MappedPageTrimmer& operator=(const MappedPageTrimmer&) = delete;
  /// Drops every range once now.
  void trim() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> m;
};

/// The ranges of `g`'s arrays that are file mappings (for MappedPageTrimmer).
std::vector<std::pair<const void*, std::size_t>> mapped_ranges(const Graph& g);

}  // namespace halo::datasets
