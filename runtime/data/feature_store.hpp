#pragma once
// The feature store: a rank's owned feature rows, a byte-budgeted cache of remote rows, and the
// fetch of the rest from their owners.

#include <cstdint>
#include <functional>
#include <vector>

#include <halo/kernels/buffer.hpp>
#include <halo/kernels/features.hpp>
#include <halo/kernels/tensor.hpp>
#include <halo/partition/formats/partition_format.hpp>
#include <halo/runtime/comm/comm.hpp>
#include <halo/runtime/config.hpp>
#include <halo/runtime/data/shard.hpp>
#include <halo/sampler/batch.hpp>

namespace halo::runtime {

/// The `rows` (clamped to [0, n]) of nodes 0 .. n - 1 of highest `degree`, ties to the lower id,
/// in ascending id: the rows a feature store reading from a file keeps in memory
/// (FeatureStore::cache_file_rows), and those `halo plan`'s batch probe counts as cached. Two
/// passes over the nodes; memory O(rows) plus the few rows of very high degree.
std::vector<kernels::NodeId> hottest_rows(
    std::int64_t n, std::int64_t rows, const std::function<std::int64_t(kernels::NodeId)>& degree);

/// A batch's input nodes, gathered, on the device of the Resources that made them:
/// features (one row per node), original ids (dropout keys) and degrees in the training graph
/// (GCN's block weights). Sized once for the batch bound; reshaped within it.
struct BatchInputs {
  kernels::FeatureMatrix<float> x;
  kernels::Span<const kernels::NodeId> original;  // the tensor below, or the nodes themselves
  kernels::Tensor<kernels::NodeId> original_ids;
  kernels::Tensor<std::int64_t> degrees;
  kernels::Tensor<std::int64_t> scan_sums;  // a sparse gather's scan scratch
  kernels::PinnedBuffer stage;              // host rows on their way to a device
};

/// What the gathers of remote rows did (summed until reset by the caller).
struct FetchStats {
  std::int64_t remote_rows = 0;  // input rows owned by another rank
  std::int64_t cache_hits = 0;   // of those, served by the cache
  std::int64_t bytes = 0;        // bytes of rows received
  double seconds = 0;            // in the exchange of ids and rows
  // Rows read from a store's file (FeatureStore::from_file) by this rank, for its own batches
  // and for the rows it served to other ranks: rows asked, of those served by the row cache,
  // bytes read from the file and seconds reading.
  std::int64_t file_rows = 0;
  std::int64_t file_hits = 0;
  std::int64_t file_bytes = 0;
  double file_seconds = 0;
};

/// Contract: owned() is the part's feature matrix as the first layer reads it (prepared:
/// sparse rows L1-normalised when asked), on res's device (and, on a device, a host copy); a
/// full-graph pass reads it directly. gather() fills a batch's inputs: owned rows from owned(),
/// remote rows from the cache or from their owners. With one part nothing is remote and a gather
/// keeps the features' kind (dense or sparse) on res's device; with several, batch features are
/// dense, assembled on the host and copied once to res's device. The cache holds up to cache_bytes
/// of rows of halo nodes (the remote neighbours of owned nodes): by degree, fetched by
/// enable_batches, or by the accesses of the first epoch, fetched by end_epoch(1). Remote fetches
/// are collective: every rank gathers its share of the same batch at the same time. A gather
/// allocates nothing.
class FeatureStore {
 public:
  /// Takes `part`'s features (part.features is left empty) and keeps a reference to `part`.
  FeatureStore(const kernels::Resources& res, partition::Part& part, bool normalize);

  const kernels::FeatureMatrix<float>& owned() const { return m_owned; }
  std::int64_t num_features() const { return kernels::num_cols(m_owned); }

  /// Prepares batch gathers of at most `max_rows` rows, or the bound already set when larger
  /// (collective when the cache is filled by degree). With one part `cache_bytes` is unused
  /// (every row is local).
  void enable_batches(Comm& comm, std::int64_t max_rows, std::int64_t cache_bytes,
                      CachePolicy policy);
  /// Raises the batch bound to `max_rows` (a sampler's envelope grew; make_inputs again): the
  /// exchange buffers grow as gathers need. Never lowers it.
  void grow_batches(std::int64_t max_rows);
  /// Buffers for one batch in flight (one per pipeline slot), on res's device.
  BatchInputs make_inputs(const kernels::Resources& res) const;
  /// Gathers `nodes` (partition ids; on res's device with one part, on the host otherwise)
  /// into `out`, asynchronously on res's stream. Collective over `comm` with several ranks.
  /// With dropout.p > 0 the rows are dropped out as kernels::dropout with dropout.key would,
  /// each row keyed by its node's original id (the store sets key.row_ids to out.original).
  void gather(const kernels::Resources& res, Comm& comm, kernels::Span<const kernels::NodeId> nodes,
              BatchInputs& out, FetchStats& stats, std::int64_t& host_syncs,
              sampler::GatherDropout dropout = {});
  /// After epoch `epoch` (collective): with CachePolicy::Access, fills the cache from the
  /// first epoch's counts.
  void end_epoch(Comm& comm, std::uint64_t epoch);

  /// Whether the owned rows come from a file, on the CPU: one part whose dense features are a
  /// file mapping (a store opened mapped, datasets::StoreOpenOptions::mapped), or a part of
  /// several whose features are its store's file (Part::features_by_original: an owned node's
  /// row is its original id's). Gathers then read each row with pread (Buffer::read_file),
  /// never through the mapping, so the rows take page cache (shared by the ranks of one host)
  /// rather than this process's memory, except those of the row cache below. A gather's
  /// FetchStats count the file's rows asked, those the cache served, the bytes read and the
  /// time (file_*), remote rows as before: an owner reads the rows it serves from its file.
  bool from_file() const { return m_from_file; }
  /// From a file: keeps the rows of the highest-degree owned nodes (ties: lower id) in memory,
  /// as many as fit in `bytes` (read now, once, as read_file_rows reads). Nothing otherwise.
  void cache_file_rows(std::int64_t bytes);
  /// Reads rows `nodes` (owned local ids, host) of the features from the file, or the row
  /// cache, into `out` (nodes.size x num_features), with kReadDepth reads in flight. Only when
  /// from_file(). halo::IoError naming the file when a read fails.
  void read_file_rows(kernels::Span<const kernels::NodeId> nodes, float* out,
                      FetchStats& stats) const;

  /// Stored entries a batch's input can hold when gathers keep sparse features (one part),
  /// else 0 (dense batches).
  std::int64_t max_input_entries() const { return m_part.ids.identity() ? m_max_entries : 0; }
  /// Rows the caches hold (remote rows, and owned rows read from a file).
  std::int64_t cached_rows() const { return m_cached + m_file_cached; }

 private:
  /// Fetches the rows of `nodes` (remote partition ids, host) from their owners into `rows`
  /// (dense, row i at rows + i * width), their original ids and degrees. Collective.
  void fetch(Comm& comm, std::int64_t count, float* rows, kernels::NodeId* original,
             std::int64_t* degrees, FetchStats& stats);
  void fill_cache(Comm& comm, const std::vector<std::int64_t>& score);
  void copy_owned_row(std::int64_t local, float* out) const;
  /// read_file_rows's body: row locals[i] to out + (positions ? positions[i] : i) * stride.
  void read_rows(const kernels::NodeId* locals, const std::int64_t* positions, std::int64_t count,
                 float* out, std::int64_t stride, FetchStats& stats) const;

  const partition::Part& m_part;
  std::int64_t m_width = 0;
  kernels::FeatureMatrix<float> m_owned;       // on res's device
  kernels::FeatureMatrix<float> m_owned_host;  // a host copy for assembling rows (device, P > 1)
  bool m_host_copy = false;
  bool m_from_file = false;    // see from_file()
  bool m_by_original = false;  // the file's row of owned local v is its original id
  // The row cache of a file: file_slot[v] the row of owned local v or -1.
  std::vector<std::int32_t> m_file_slot;
  std::vector<float> m_file_rows;
  std::int64_t m_file_cached = 0;
  kernels::Tensor<std::int64_t> m_degrees;  // the part's degrees on a device (P = 1)
  /// The part's degrees where the gathers read them: m_degrees on a device, else the part's.
  const std::int64_t* degrees() const {
    return m_degrees.numel() > 0 ? m_degrees.data() : m_part.degrees.data();
  }
  std::int64_t m_max_rows = 0, m_max_entries = 0;
  // The cache: a row per halo node chosen, cache_slot[h] its row or -1.
  std::int64_t m_capacity = 0, m_cached = 0;
  CachePolicy m_policy = CachePolicy::Degree;
  std::vector<std::int32_t> m_cache_slot;
  std::vector<float> m_cache_rows;
  std::vector<std::int64_t> m_access;  // accesses per halo node in the first epoch
  // Exchange buffers, sized once (see enable_batches).
  std::vector<kernels::NodeId> m_want, m_served;
  std::vector<kernels::NodeId> m_read_local;  // owned rows read from the file, and where to
  std::vector<std::int64_t> m_read_pos;
  std::vector<std::int64_t> m_want_pos, m_count_out, m_count_in, m_cursor;
  std::vector<std::size_t> m_bytes_out, m_bytes_in;
  std::vector<std::int32_t> m_reply_out, m_reply_in;
};

}  // namespace halo::runtime
