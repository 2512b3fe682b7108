#pragma once
// Archives: gzip (zlib) decompression, whole or line by line, and safe zip reading (libzip).

#include <cstdint>
#include <filesystem>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace halo::datasets {

/// The whole decompressed content of the gzip file `gz` (concatenated members are joined, as
/// `gzip -d` does). Throws halo::IoError naming the file when it is missing, not gzip data,
/// corrupt or truncated, or when the output would exceed `max_bytes`. Memory: the output plus
/// a fixed 256 KiB of buffers. Reentrant.
std::string gunzip_file(const std::filesystem::path& gz, std::size_t max_bytes);

/// Streams the lines of a gzip-compressed text file without holding it whole: for CSVs of
/// several GB (OGB papers100M). Lines follow TextLines' rules: a final '\n' does not start an
/// extra line and a '\r' before '\n' is dropped. Errors (corrupt or truncated data, a line
/// longer than `max_line_bytes`) are halo::IoError "<file>:<line>: ...". Not thread-safe.
class GzLineReader {
 public:
  explicit GzLineReader(const std::filesystem::path& gz, std::size_t max_line_bytes = 1 << 26);
  ~GzLineReader();
  GzLineReader(const GzLineReader&) = delete;
  GzLineReader& operator=(const GzLineReader&) = delete;

  /// The next line, valid until the next call; false at the end of the data.
  bool next(std::string_view& line);
  /// 1-based number of the line last returned by next().
  std::int64_t number() const { return m_number; }
  /// "<file>", the name errors use.
  const std::string& source() const { return m_source; }

 private:
  struct Impl;
  std::unique_ptr<Impl> m_impl;
  std::string m_source;
  std::int64_t m_number = 0;
};

/// Limits that `extract_zip` enforces, on the sizes the archive declares and again on the bytes
/// actually inflated (so a lying header cannot get past them).
struct ZipLimits {
  std::uint64_t max_total_bytes = std::uint64_t{64} << 30;  ///< all entries together
  std::uint64_t max_entry_bytes = std::uint64_t{32} << 30;  ///< any one entry
  std::uint64_t max_entries = 100000;
};

/// Extracts every entry of `zip` into `out_dir`. Entry names with an absolute path (`/x`,
/// `C:x`), a `..` component, a backslash or an empty component, and symbolic-link entries, are
/// refused with halo::IoError naming the entry; so are archives over `limits`. Files are
/// written under a temporary sibling directory that is renamed to `out_dir` at the end, so
/// `out_dir` is either complete or absent (it must not exist, or be an empty directory;
/// missing parents are created). Reentrant.
void extract_zip(const std::filesystem::path& zip, const std::filesystem::path& out_dir,
                 const ZipLimits& limits);

/// The content of the entry named `entry` (exact name, as listed by `list_zip_entries`) of
/// `zip`. halo::IoError when the archive or entry is missing or corrupt, the entry is a
/// symbolic link, or it is larger than `max_bytes`.
std::string read_zip_entry(const std::filesystem::path& zip, const std::string& entry,
                           std::size_t max_bytes);

/// The entry names of `zip` in archive order (directories end with '/').
std::vector<std::string> list_zip_entries(const std::filesystem::path& zip);

}  // namespace halo::datasets
