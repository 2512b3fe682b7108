#pragma once
// Test fixtures for archives: gzip files written with zlib and zip files written with libzip.

#include <sys/stat.h>
#include <zip.h>
#include <zlib.h>

#include <filesystem>
#include <fstream>
#include <functional>
#include <gtest/gtest.h>
#include <iterator>
#include <string>
#include <utility>
#include <vector>

namespace halo::datasets::test {

/// Writes `text` gzip-compressed to `path`.
inline void write_gz(const std::filesystem::path& path, const std::string& text) {
  gzFile f = gzopen(path.c_str(), "wb");
  ASSERT_NE(f, nullptr) << path;
  if (!text.empty()) {
    ASSERT_EQ(gzwrite(f, text.data(), static_cast<unsigned>(text.size())),
              static_cast<int>(text.size()));
  }
  ASSERT_EQ(gzclose(f), Z_OK);
}

inline std::string read_file(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

/// Writes a zip holding (name, content) entries in order; names ending in '/' are directories;
/// the entry named `symlink` (if any) is marked as a Unix symbolic link to its content.
inline void write_zip(const std::filesystem::path& path,
                      const std::vector<std::pair<std::string, std::string>>& entries,
                      const std::string& symlink = "") {
  int err = 0;
  zip_t* z = zip_open(path.c_str(), ZIP_CREATE | ZIP_TRUNCATE, &err);
  ASSERT_NE(z, nullptr);
  for (const auto& [name, content] : entries) {
    zip_int64_t index = -1;
    if (!name.empty() && name.back() == '/') {
      index = zip_dir_add(z, name.substr(0, name.size() - 1).c_str(), ZIP_FL_ENC_UTF_8);
    } else {
      // libzip copies the data only at zip_close: keep the buffers alive until then.
      zip_source_t* src = zip_source_buffer(z, content.data(), content.size(), 0);
      ASSERT_NE(src, nullptr);
      index = zip_file_add(z, name.c_str(), src, ZIP_FL_ENC_UTF_8 | ZIP_FL_OVERWRITE);
    }
    ASSERT_GE(index, 0) << name << ": " << zip_strerror(z);
    if (name == symlink) {
      ASSERT_EQ(zip_file_set_external_attributes(z, static_cast<zip_uint64_t>(index), 0,
                                                 ZIP_OPSYS_UNIX, (S_IFLNK | 0777u) << 16),
                0);
    }
  }
  ASSERT_EQ(zip_close(z), 0);
}

}  // namespace halo::datasets::test
