#pragma once
// Halo's plain directory format: tab-separated text files (edges, features, labels, splits, meta).

#include <cstddef>
#include <filesystem>

#include <halo/datasets/dataset.hpp>
#include <halo/datasets/store/store.hpp>
#include <halo/kernels/resources.hpp>

namespace halo::datasets {

/// Reads the dataset stored in `dir` in the plain directory format (docs/formats.md): required
/// `edges.tsv`, `labels.txt`, `train_idx.txt`, `val_idx.txt`, `test_idx.txt` and one of
/// `features.coo.tsv` (sparse) or `features.tsv` (dense); optional `meta.tsv`; other files are
/// ignored. The graph is returned as listed (edge src -> dst is column src of row dst), with
/// duplicate edges removed and sorted rows; it is not symmetrised. Splits come out ascending.
/// Everything is on the host. Throws halo::IoError for a missing file, and for malformed or
/// inconsistent content with a message "<file>:<line>: expected ..., got "..."". Not thread-safe
/// with respect to concurrent writers of `dir`; otherwise reentrant.
Dataset read_directory(const kernels::Resources& res, const std::filesystem::path& dir);

/// Writes `ds` (validated first; the graph must be unweighted) to `dir` in the plain directory
/// format: features as `features.coo.tsv` when sparse, `features.tsv` when dense; edges sorted by
/// (src, dst); floats in shortest round-trip form, so `read_directory` gives the same arrays back
/// (up to duplicate edges, which it removes). The files are written to a temporary sibling
/// directory that is then renamed to `dir`, so `dir` is never left half-written. `dir` must not
/// exist or be an empty directory (halo::IoError otherwise); missing parents are created.
void write_directory(const kernels::Resources& res, const Dataset& ds,
                     const std::filesystem::path& dir);

/// Whether `dir` holds a bare graph: `edges.tsv` and none of the plain format's other files but
/// `meta.tsv` (what read_directory reads as a graph-only dataset).
bool is_bare_graph(const std::filesystem::path& dir);

/// The bare graph in `dir` written as a store in `out` in bounded memory: the edges parsed once
/// (in blocks of at most the budget / 8) into a temporary file of the store's build directory,
/// the graph built from it row block by row block (build_csr; directed, duplicates merged,
/// self-loops kept, as read_directory gives it), the training graph's statistics counted by a
/// second build that writes nothing. open_store of the result equals read_directory(dir), bit
/// for bit, whatever the budget. Memory: the budget plus about 16 bytes a node. halo::IoError as
/// read_directory's for malformed files, and when `dir` is not a bare graph.
PrepareReport prepare_bare_graph(const kernels::Resources& res, const std::filesystem::path& dir,
                                 const std::filesystem::path& out, const PrepareOptions& options);

namespace detail {

/// Block size in which read_directory reads its files: it holds the parsed arrays plus one block
/// of text (and the start of a line that crosses into the next block), never a whole file.
inline constexpr std::size_t kPlainChunkBytes = std::size_t{16} << 20;

/// read_directory reading its files in blocks of `chunk_bytes` (tests use tiny blocks so that
/// lines cross block boundaries).
Dataset read_directory(const kernels::Resources& res, const std::filesystem::path& dir,
                       std::size_t chunk_bytes);

}  // namespace detail

}  // namespace halo::datasets
