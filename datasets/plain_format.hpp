#pragma once
// Halo's plain directory format: tab-separated text files (edges, features, labels, splits, meta).

#include <cstddef>
#include <filesystem>

#include <halo/datasets/dataset.hpp>
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
