#pragma once
// Named public datasets: where each comes from, how it is fetched, verified, parsed and cached.

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include <halo/datasets/dataset.hpp>
#include <halo/datasets/fetch/download.hpp>
#include <halo/datasets/generators/rmat.hpp>
#include <halo/datasets/generators/synthetic.hpp>
#include <halo/datasets/generators/synthetic_mag.hpp>
#include <halo/datasets/hetero.hpp>
#include <halo/datasets/store/store.hpp>
#include <halo/datasets/temporal.hpp>
#include <halo/kernels/resources.hpp>

namespace halo::datasets {

/// One file of a dataset as published.
struct RemoteFile {
  /// Name under `<data_dir>/<dataset>/raw/` and under a mirror's `<base>/<dataset>/`.
  std::string file_name;
  /// The official URL.
  std::string url;
  /// Size in bytes; 0 when not known in advance.
  std::int64_t size_bytes = 0;
  /// Lower-case hex SHA-256; empty when no trusted value is known, in which case the first
  /// download records it (`checksums.json`) and every later use is checked against that.
  std::string sha256;
};

/// How a dataset's files are turned into a Dataset.
enum class DatasetFormat {
  Generator,      ///< built in memory from flags; no files
  Planetoid,      ///< ind.<name>.{x,y,tx,ty,allx,ally,graph,test.index}
  OgbNode,        ///< an OGB node-property zip holding the raw CSV layout
  OgbNodeBinary,  ///< an OGB node-property zip holding the binary (npz) layout
  Reddit,         ///< DGL's reddit.zip: reddit_data.npz + reddit_graph.npz
  KarateGml,      ///< Zachary's karate club as GML with the `club` attribute
  OgbHetero,      ///< an OGB heterogeneous node-property zip (raw CSV layout): a HeteroGraph
};

/// A named dataset. The counts are the published ones (0 where they depend on flags).
struct DatasetInfo {
  std::string name;
  std::string description;
  DatasetFormat format = DatasetFormat::Generator;
  std::vector<RemoteFile> files;
  std::int64_t num_nodes = 0;
  /// Edges as the reader stores them: CSR entries before any symmetrisation (an undirected
  /// edge counts twice when the source lists both directions, once otherwise).
  std::int64_t num_edges = 0;
  std::int64_t num_features = 0;
  std::int32_t num_classes = 0;
  /// Total download size for display when the exact bytes are unknown ("~81 MB"); empty if
  /// unknown or there is nothing to download.
  std::string approx_download_size;
  std::string homepage;
  std::string licence;
  std::string citation;
};

/// Where and how `load_dataset` and `fetch_dataset` work.
struct LoadOptions {
  /// Never download: fail with a message naming what is missing. Also on with HALO_OFFLINE=1.
  bool offline = false;
  /// Root of the data directory; empty: `default_data_dir()`.
  std::filesystem::path data_dir;
  /// Mirror base URL (http://, https:// or file://); empty: $HALO_DATASET_MIRROR, if set.
  std::string mirror;
  /// Open the store (cache/) when valid, and write it after a parse.
  bool use_cache = true;
  /// A store directory named directly opens mapped (StoreOpenOptions::mapped): its arrays stay
  /// file mappings instead of being read into memory.
  bool map_store = false;
  /// Download behaviour; unset: `download_options_from_env()`. Checksums and sizes come from
  /// the registry, not from here.
  std::optional<DownloadOptions> download;
  /// Parameters of the `synthetic` and `rmat` generators (their seeds included).
  SyntheticConfig synthetic;
  RmatConfig rmat;
  SyntheticMagConfig synthetic_mag;  // `synthetic-mag` (load_hetero_dataset)
};

/// Every registered dataset, in display order.
std::vector<DatasetInfo> list_datasets();

/// The dataset called `name`; halo::LogicError listing the known names otherwise.
const DatasetInfo& find_dataset(const std::string& name);

/// Whether `name` is registered.
bool is_registered(const std::string& name);

/// $HALO_DATA_DIR, else $XDG_CACHE_HOME/halo, else $HOME/.cache/halo.
std::filesystem::path default_data_dir();

/// The places of one dataset under the data directory.
struct DatasetPaths {
  std::filesystem::path root;       ///< <data_dir>/<name>
  std::filesystem::path raw;        ///< <root>/raw: the downloaded files
  std::filesystem::path extracted;  ///< <root>/extracted: unpacked archives
  std::filesystem::path cache;      ///< <root>/cache: the graph store
  std::filesystem::path checksums;  ///< <root>/checksums.json: SHA-256 recorded on download
};
DatasetPaths dataset_paths(const DatasetInfo& info, const LoadOptions& options = {});

/// The URL `file` is fetched from: `<mirror>/<dataset>/<file name>` when a mirror is set
/// (options or $HALO_DATASET_MIRROR), else the official URL. halo::LogicError for a mirror
/// that is not http://, https:// or file://.
std::string source_url(const DatasetInfo& info, const RemoteFile& file,
                       const LoadOptions& options = {});

/// The SHA-256 that `file` must have: the registry's, else the one recorded at its first
/// download, else empty.
std::string expected_sha256(const DatasetInfo& info, const RemoteFile& file,
                            const LoadOptions& options = {});

/// How much of a dataset is on disk.
enum class LocalState {
  Generated,   ///< a generator: nothing to fetch
  Missing,     ///< some raw file is absent and there is no store
  Downloaded,  ///< every raw file is present (not re-verified here)
  Cached,      ///< a store is present (not validated here)
};
LocalState local_state(const DatasetInfo& info, const LoadOptions& options = {});

/// Makes every raw file of `info` present and verified under `dataset_paths(info).raw`:
/// a present file is checked against its expected SHA-256 (halo::IoError on mismatch, telling
/// how to recover); a missing one is downloaded (mirror-aware, resumable, verified, placed
/// atomically) and its SHA-256 recorded when the registry has none. Archives are then extracted
/// to `extracted/`. Offline, a missing file is a halo::IoError naming every missing file, where
/// it would come from and where to put it. Returns the raw file paths in registry order.
/// Blocking; not safe against another process fetching the same dataset at the same time.
std::vector<std::filesystem::path> fetch_dataset(const DatasetInfo& info,
                                                 const LoadOptions& options = {});

/// The store of the dataset directory `dir` (plain format, bare graph), prepared on first use
/// (prepare_dataset) into `<data dir>/stores/<name>-<hash>` and reused while the directory's
/// path and its files' names, sizes and modification times stay the same. What `halo plan
/// --dataset DIR` reads its counts from. halo::IoError as prepare_dataset's.
std::filesystem::path directory_store(const kernels::Resources& res,
                                      const std::filesystem::path& dir,
                                      const LoadOptions& options = {});

/// The dataset `name_or_path` names (as load_dataset takes it) written as a store in `out`:
/// streamed in bounded memory (prepare.memory_budget) for `rmat` (prepare_rmat), a bare graph
/// directory (prepare_bare_graph) and a registered dataset in OGB's binary layout
/// (ogbn-papers100M: fetched, then prepare_ogb_node_binary); any other dataset is loaded into
/// memory (load_dataset) and written (write_store). Same errors as those.
PrepareReport prepare_dataset(const kernels::Resources& res, const std::string& name_or_path,
                              const std::filesystem::path& out, const LoadOptions& options,
                              const PrepareOptions& prepare);

/// The dataset `name_or_path` names, on the host:
/// - a registered name (`cora`, `ogbn-arxiv`, ...; see `list_datasets`): the store (cache/) when
///   it is valid for the files' checksums, else `fetch_dataset`, the format's reader, and a new
///   store (OGB's binary layout, ogbn-papers100M: streamed into the store, prepare_ogb_node_binary,
///   then opened);
/// - a store directory (`is_store`): open_store;
/// - `synthetic` / `rmat`: `make_synthetic(options.synthetic)` / `make_rmat(options.rmat)`;
/// - a temporal directory (see `temporal_events_file`): every distinct (src, dst) pair of its
///   events as one static graph (`aggregate_graph`) in `graph_only_dataset`;
/// - anything else: a directory in the plain format (`read_directory`). A registered name
///   wins over a directory of the same name; write `./cora` to mean the directory.
/// Throws halo::IoError for missing, corrupt or unverifiable data and download failures.
Dataset load_dataset(const kernels::Resources& res, const std::string& name_or_path,
                     const LoadOptions& options = {});

/// The event list of a temporal dataset directory: `<dir>/events.tsv` or `<dir>/events.csv`
/// (read_temporal_events; e.g. shared/datasets/collegemsg), when `name_or_path` is a directory
/// holding one and no plain-format `meta.tsv`; nullopt otherwise.
std::optional<std::filesystem::path> temporal_events_file(const std::string& name_or_path);

/// The temporal graph of the directory `name_or_path` (temporal_events_file), named after the
/// directory. halo::IoError when it is not a temporal directory or the file is malformed.
TemporalGraph load_temporal_dataset(const std::string& name_or_path,
                                    TemporalLayout layout = TemporalLayout::Auto);

/// Whether `name_or_path` names a heterogeneous dataset: a typed directory
/// (is_hetero_directory), a registered heterogeneous name (ogbn-mag) or `synthetic-mag`.
bool is_hetero_dataset(const std::string& name_or_path);

/// The heterogeneous dataset `name_or_path` names, on the host: `synthetic-mag`
/// (make_synthetic_mag(options.synthetic_mag)), a registered heterogeneous
/// name (fetched as `fetch_dataset` does, then read_ogb_hetero_raw; no graph store: the
/// files are parsed on every load) or a typed directory (read_hetero_directory with `split`).
/// halo::IoError for missing or malformed data, and for `split` with a dataset that has a
/// fixed split.
HeteroGraph load_hetero_dataset(const kernels::Resources& res, const std::string& name_or_path,
                                std::optional<int> split = std::nullopt,
                                const LoadOptions& options = {});

/// Parses the files of a fetched registered dataset with its format's reader (no cache).
Dataset read_registered(const kernels::Resources& res, const DatasetInfo& info,
                        const LoadOptions& options = {});

}  // namespace halo::datasets
