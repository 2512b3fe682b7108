#pragma once
// NumPy arrays: .npy files, .npz archives, SciPy sparse matrices saved in .npz, and Reddit (DGL).

#include <cstdint>
#include <filesystem>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include <halo/datasets/dataset.hpp>
#include <halo/kernels/csr.hpp>
#include <halo/kernels/resources.hpp>

namespace halo::datasets {

/// A host n-dimensional array as NumPy stores it: C order, little-endian.
struct NpyArray {
  /// NumPy type string with explicit byte order: "<f4", "<f8", "<i4", "<i8", "<i2", "|i1",
  /// "|u1", "<u2", "<u4", "<u8" or "|b1".
  std::string dtype;
  std::vector<std::int64_t> shape;
  /// numel() * item_size() raw little-endian bytes.
  std::string bytes;

  std::int64_t numel() const;
  std::size_t item_size() const;
};

/// Reads the elements of `a` as doubles / 64-bit integers, whatever its (supported) dtype.
/// `to_int64s` refuses floats that are not whole numbers. Errors are halo::IoError prefixed
/// with `what` (e.g. "reddit_data.npz: label").
std::vector<double> to_doubles(const NpyArray& a, const std::string& what);
std::vector<std::int64_t> to_int64s(const NpyArray& a, const std::string& what);

/// Checks a (dtype, shape, byte count) triple: a supported little-endian dtype (big-endian,
/// object, structured and unknown dtypes are refused), non-negative dimensions, and a byte count
/// equal to the element count times the item size. halo::IoError prefixed with `what`.
void check_npy(const NpyArray& a, const std::string& what);

/// Parses the bytes of a .npy file (format versions 1.0, 2.0 and 3.0). Fortran order,
/// big-endian, object and structured dtypes are refused. `source` names the data in errors.
NpyArray parse_npy(std::string_view data, const std::string& source);

/// Reads one .npy file (whole-file read; halo::IoError naming it on any problem).
NpyArray read_npy(const std::filesystem::path& path);

/// The bytes of a .npy file (format version 1.0, C order) holding `a`, which check_npy must
/// accept: what numpy.load reads back with the same dtype and shape.
std::string npy_bytes(const NpyArray& a);

/// Writes `a` to `path` as a .npy file, atomically (kernels::write_file_atomically).
/// halo::IoError naming the path when it cannot be written.
void write_npy(const std::filesystem::path& path, const NpyArray& a);

/// Every array of a .npz archive (a zip of .npy files, compressed or not), keyed by name
/// without the ".npy" suffix. Entries are read with read_zip_entry, limited to `max_bytes`
/// each.
std::map<std::string, NpyArray> read_npz(const std::filesystem::path& path,
                                         std::size_t max_bytes = std::size_t{1} << 36);

/// One array of a .npz archive read front to back without holding it: the member is inflated
/// as it is read (libzip), so a multi-GB array (OGB's edge_index, node_feat) costs one buffer.
/// The header is parsed as parse_npy's (Fortran order, big-endian and unknown dtypes refused).
/// halo::IoError naming "<npz>: <name>.npy" on a missing member, a corrupt stream or data that
/// ends early. Not copyable.
class NpyStream {
 public:
  /// The member `name`.npy of `npz`.
  NpyStream(const std::filesystem::path& npz, const std::string& name);
  ~NpyStream();
  NpyStream(const NpyStream&) = delete;
  NpyStream& operator=(const NpyStream&) = delete;
  /// dtype and shape (no bytes).
  const NpyArray& header() const;
  /// Data bytes not read yet.
  std::uint64_t remaining() const;
  /// The next `bytes` of the data.
  void read(void* out, std::size_t bytes);
  /// Skips the next `bytes` of the data (inflating them).
  void skip(std::uint64_t bytes);

 private:
  struct Impl;
  std::unique_ptr<Impl> m;
};

/// Writes `arrays` to `path` as an uncompressed .npz archive (entry `<name>.npy` per array, in
/// key order; ZIP64 where an entry needs it), through a temporary sibling and a rename, so that
/// a reader never sees half an archive. What numpy.load reads back. halo::IoError naming the
/// path on failure (the temporary is removed); halo::LogicError for an array check_npy refuses
/// or an empty or '/'-containing name.
void write_npz(const std::filesystem::path& path, const std::map<std::string, NpyArray>& arrays);

/// A SciPy sparse matrix saved with scipy.sparse.save_npz (keys `format`, `shape`, `indptr`,
/// `indices`, `data`, or `row`/`col`/`data` for COO) as a host CSR with sorted rows; `data` may
/// be absent (values then all 1). Formats "csr" and "coo" are supported; duplicates are kept;
/// column ids must fit NodeId.
/// halo::IoError naming the archive and key on any inconsistency.
kernels::CsrMatrix<NodeId, float> read_scipy_npz(const kernels::Resources& res,
                                                 const std::filesystem::path& path);

/// Reddit as DGL distributes it, in `dir`: `reddit_data.npz` (`feature` float n x f, `label`
/// int n, `node_types` int n with 1 = train, 2 = val, 3 = test, other values in no split) and
/// `reddit_graph.npz` (a SciPy sparse n x n adjacency). The graph keeps every stored entry
/// (entry (r, c) becomes edge r -> c, i.e. column r of row c; `data` is ignored, the graph is
/// unweighted), with duplicates removed; it is flagged symmetric when it equals its transpose.
/// Dense float features. Validated. Host.
Dataset read_reddit(const kernels::Resources& res, const std::filesystem::path& dir);

}  // namespace halo::datasets
