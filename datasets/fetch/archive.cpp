#include <sys/stat.h>
#include <zip.h>
#include <zlib.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <system_error>
#include <utility>

#include <halo/datasets/fetch/archive.hpp>
#include <halo/datasets/readers/staged_directory.hpp>
#include <halo/kernels/error.hpp>

namespace halo::datasets {
namespace {

namespace fs = std::filesystem;

constexpr std::size_t kChunk = 128 * 1024;

/// Inflates a gzip file chunk by chunk. Concatenated members are decoded one after another.
class GzStream {
 public:
  explicit GzStream(const fs::path& path) : m_path(path.string()) {
    if (!fs::is_regular_file(path)) throw IoError(m_path + ": missing or not a regular file");
    m_file = std::fopen(path.c_str(), "rb");
    if (m_file == nullptr) throw IoError(m_path + ": cannot open: " + std::strerror(errno));
    std::memset(&m_zs, 0, sizeof m_zs);
    if (inflateInit2(&m_zs, 16 + MAX_WBITS) != Z_OK) {  // 16: gzip wrapper only
      std::fclose(m_file);
      throw IoError(m_path + ": cannot initialise zlib");
    }
    m_in.resize(kChunk);
  }
  ~GzStream() {
    inflateEnd(&m_zs);
    std::fclose(m_file);
  }
  GzStream(const GzStream&) = delete;
  GzStream& operator=(const GzStream&) = delete;

  /// Up to `n` decompressed bytes into `out`; 0 only at the end of the data.
  std::size_t read(char* out, std::size_t n) {
    std::size_t produced = 0;
    while (produced < n && !m_done) {
      if (m_zs.avail_in == 0) {
        const std::size_t got = std::fread(m_in.data(), 1, m_in.size(), m_file);
        if (std::ferror(m_file) != 0) throw IoError(m_path + ": read error");
        if (got == 0) {
          if (m_in_member) throw IoError(m_path + ": truncated gzip data");
          if (!m_seen_member) throw IoError(m_path + ": empty file, not gzip data");
          m_done = true;
          break;
        }
        m_zs.next_in = reinterpret_cast<Bytef*>(m_in.data());
        m_zs.avail_in = static_cast<uInt>(got);
      }
      if (!m_in_member) {
        // A new member starts; anything but a gzip header here is corrupt data.
        if (inflateReset(&m_zs) != Z_OK) throw IoError(m_path + ": zlib reset failed");
        m_in_member = true;
      }
      m_zs.next_out = reinterpret_cast<Bytef*>(out + produced);
      m_zs.avail_out = static_cast<uInt>(std::min<std::size_t>(n - produced, 1u << 30));
      const uInt before = m_zs.avail_out;
      const int rc = inflate(&m_zs, Z_NO_FLUSH);
      produced += before - m_zs.avail_out;
      if (rc == Z_STREAM_END) {
        m_in_member = false;
        m_seen_member = true;
      } else if (rc == Z_BUF_ERROR) {
        if (m_zs.avail_in != 0 && m_zs.avail_out != 0)
          throw IoError(m_path + ": corrupt gzip data");
      } else if (rc != Z_OK) {
        throw IoError(
            m_path + ": " +
            (m_seen_member ? "trailing garbage after gzip data" : "corrupt or not gzip data") +
            " (zlib: " + (m_zs.msg != nullptr ? m_zs.msg : "error") + ")");
      }
    }
    return produced;
  }

  const std::string& path() const { return m_path; }

 private:
  std::string m_path;
  std::FILE* m_file = nullptr;
  z_stream m_zs;
  std::string m_in;
  bool m_in_member = false;
  bool m_seen_member = false;
  bool m_done = false;
};

// ---- zip ---------------------------------------------------------------------------------------

struct ZipCloser {
  void operator()(zip_t* z) const { zip_discard(z); }
};
using ZipHandle = std::unique_ptr<zip_t, ZipCloser>;
struct ZipFileCloser {
  void operator()(zip_file_t* f) const { zip_fclose(f); }
};
using ZipFileHandle = std::unique_ptr<zip_file_t, ZipFileCloser>;

ZipHandle open_zip(const fs::path& path) {
  if (!fs::is_regular_file(path)) throw IoError(path.string() + ": missing or not a regular file");
  int code = 0;
  zip_t* z = zip_open(path.c_str(), ZIP_RDONLY | ZIP_CHECKCONS, &code);
  if (z == nullptr) {
    zip_error_t err;
    zip_error_init_with_code(&err, code);
    const std::string msg = zip_error_strerror(&err);
    zip_error_fini(&err);
    throw IoError(path.string() + ": not a readable zip archive: " + msg);
  }
  return ZipHandle(z);
}

std::string entry_where(const fs::path& zip, const std::string& name) {
  return zip.string() + ": entry \"" + name + "\"";
}

bool is_symlink_entry(zip_t* z, zip_uint64_t index) {
  zip_uint8_t opsys = 0;
  zip_uint32_t attributes = 0;
  if (zip_file_get_external_attributes(z, index, 0, &opsys, &attributes) != 0) return false;
  return opsys == ZIP_OPSYS_UNIX && ((attributes >> 16) & S_IFMT) == S_IFLNK;
}

/// Why `name` may not be extracted, or empty when it is safe.
std::string unsafe_name(const std::string& name) {
  if (name.empty()) return "an empty name";
  if (name.find('\0') != std::string::npos) return "a NUL byte in its name";
  if (name.front() == '/') return "an absolute path";
  if (name.size() >= 2 && name[1] == ':') return "a drive-letter path";
  if (name.find('\\') != std::string::npos) return "a backslash in its name";
  std::size_t start = 0;
  while (start <= name.size()) {
    std::size_t end = name.find('/', start);
    if (end == std::string::npos) end = name.size();
    const std::string part = name.substr(start, end - start);
    if (part == "..") return "a \"..\" component";
    if (part.empty() && end != name.size()) return "an empty path component";
    start = end + 1;
  }
  return {};
}

zip_stat_t stat_entry(zip_t* z, zip_uint64_t index, const fs::path& zip) {
  zip_stat_t st;
  zip_stat_init(&st);
  if (zip_stat_index(z, index, 0, &st) != 0 || (st.valid & ZIP_STAT_NAME) == 0 ||
      (st.valid & ZIP_STAT_SIZE) == 0) {
    throw IoError(zip.string() + ": cannot read the header of entry " + std::to_string(index) +
                  ": " + zip_strerror(z));
  }
  return st;
}

/// Streams entry `index` into `sink(data, n)`, checking that the inflated size matches the
/// declared one and stays within `max_bytes`.
template <class Sink>
void read_entry(zip_t* z, zip_uint64_t index, const zip_stat_t& st, const fs::path& zip,
                std::uint64_t max_bytes, const Sink& sink) {
  const std::string where = entry_where(zip, st.name);
  if (st.size > max_bytes) {
    throw IoError(where + " is " + std::to_string(st.size) + " bytes, over the limit of " +
                  std::to_string(max_bytes));
  }
  ZipFileHandle f(zip_fopen_index(z, index, 0));
  if (!f) throw IoError(where + ": cannot open: " + zip_strerror(z));
  std::string buf(kChunk, '\0');
  std::uint64_t total = 0;
  for (;;) {
    const zip_int64_t got = zip_fread(f.get(), buf.data(), buf.size());
    if (got < 0) throw IoError(where + ": corrupt data: " + zip_file_strerror(f.get()));
    if (got == 0) break;
    total += static_cast<std::uint64_t>(got);
    if (total > st.size) throw IoError(where + ": more data than its declared size");
    sink(buf.data(), static_cast<std::size_t>(got));
  }
  if (total != st.size) throw IoError(where + ": truncated entry");
}

}  // namespace

std::string gunzip_file(const fs::path& gz, std::size_t max_bytes) {
  GzStream stream(gz);
  std::string out;
  std::size_t size = 0;
  for (;;) {
    const std::size_t want = std::min<std::size_t>(kChunk * 8, max_bytes + 1 - size);
    out.resize(size + want);
    const std::size_t got = stream.read(out.data() + size, want);
    size += got;
    if (size > max_bytes) {
      throw IoError(gz.string() + ": decompressed data exceeds the limit of " +
                    std::to_string(max_bytes) + " bytes");
    }
    if (got == 0) break;
  }
  out.resize(size);
  return out;
}

struct GzLineReader::Impl {
  explicit Impl(const fs::path& path, std::size_t max_line) : stream(path), max_line(max_line) {}
  GzStream stream;
  std::size_t max_line;
  std::string buf;  // decompressed bytes; [pos, buf.size()) not yet returned
  std::size_t pos = 0;
  bool eof = false;
};

GzLineReader::GzLineReader(const fs::path& gz, std::size_t max_line_bytes)
    : m_impl(std::make_unique<Impl>(gz, max_line_bytes)), m_source(gz.string()) {}

GzLineReader::~GzLineReader() = default;

bool GzLineReader::next(std::string_view& line) {
  Impl& s = *m_impl;
  for (;;) {
    const char* start = s.buf.data() + s.pos;
    const std::size_t avail = s.buf.size() - s.pos;
    const void* nl = std::memchr(start, '\n', avail);
    if (nl != nullptr || (s.eof && avail > 0)) {
      const std::size_t len =
          nl != nullptr ? static_cast<std::size_t>(static_cast<const char*>(nl) - start) : avail;
      line = std::string_view(start, len);
      if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
      s.pos += nl != nullptr ? len + 1 : len;
      ++m_number;
      return true;
    }
    if (s.eof) return false;
    if (avail > s.max_line) {
      throw IoError(m_source + ":" + std::to_string(m_number + 1) + ": line longer than " +
                    std::to_string(s.max_line) + " bytes");
    }
    // Keep the unfinished line, then append the next chunk.
    s.buf.erase(0, s.pos);
    s.pos = 0;
    const std::size_t old = s.buf.size();
    s.buf.resize(old + kChunk * 4);
    const std::size_t got = s.stream.read(s.buf.data() + old, kChunk * 4);
    s.buf.resize(old + got);
    if (got == 0) s.eof = true;
  }
}

std::vector<std::string> list_zip_entries(const fs::path& zip) {
  const ZipHandle z = open_zip(zip);
  const zip_int64_t n = zip_get_num_entries(z.get(), 0);
  std::vector<std::string> names;
  for (zip_int64_t i = 0; i < n; ++i) {
    names.emplace_back(stat_entry(z.get(), static_cast<zip_uint64_t>(i), zip).name);
  }
  return names;
}

std::string read_zip_entry(const fs::path& zip, const std::string& entry, std::size_t max_bytes) {
  const ZipHandle z = open_zip(zip);
  const zip_int64_t index = zip_name_locate(z.get(), entry.c_str(), 0);
  if (index < 0) throw IoError(entry_where(zip, entry) + ": no such entry");
  const auto i = static_cast<zip_uint64_t>(index);
  if (is_symlink_entry(z.get(), i)) {
    throw IoError(entry_where(zip, entry) + " is a symbolic link; refusing it");
  }
  const zip_stat_t st = stat_entry(z.get(), i, zip);
  std::string out;
  out.reserve(static_cast<std::size_t>(std::min<std::uint64_t>(st.size, max_bytes)));
  read_entry(z.get(), i, st, zip, max_bytes,
             [&](const char* data, std::size_t n) { out.append(data, n); });
  return out;
}

void extract_zip(const fs::path& zip, const fs::path& out_dir, const ZipLimits& limits) {
  const ZipHandle z = open_zip(zip);
  const zip_int64_t n = zip_get_num_entries(z.get(), 0);
  if (n < 0 || static_cast<std::uint64_t>(n) > limits.max_entries) {
    throw IoError(zip.string() + ": " + std::to_string(n) + " entries, over the limit of " +
                  std::to_string(limits.max_entries));
  }
  // Check every name, link flag and declared size before writing anything.
  std::vector<zip_stat_t> stats;
  std::uint64_t declared = 0;
  for (zip_int64_t i = 0; i < n; ++i) {
    const auto index = static_cast<zip_uint64_t>(i);
    const zip_stat_t st = stat_entry(z.get(), index, zip);
    const std::string name = st.name;
    if (const std::string why = unsafe_name(name); !why.empty()) {
      throw IoError(entry_where(zip, name) + " has " + why + "; refusing to extract it");
    }
    if (is_symlink_entry(z.get(), index)) {
      throw IoError(entry_where(zip, name) + " is a symbolic link; refusing to extract it");
    }
    if (st.size > limits.max_entry_bytes) {
      throw IoError(entry_where(zip, name) + " is " + std::to_string(st.size) +
                    " bytes, over the limit of " + std::to_string(limits.max_entry_bytes));
    }
    declared += st.size;
    if (declared > limits.max_total_bytes) {
      throw IoError(zip.string() + ": the entries total more than the limit of " +
                    std::to_string(limits.max_total_bytes) + " bytes");
    }
    stats.push_back(st);
  }

  // Extract into a staging directory that replaces out_dir only once every entry is written.
  try {
    write_staged_directory(out_dir, [&](const fs::path& tmp) {
      for (zip_int64_t i = 0; i < n; ++i) {
        const zip_stat_t& st = stats[static_cast<std::size_t>(i)];
        const std::string name = st.name;
        const fs::path dest = tmp / name;
        if (name.back() == '/') {
          fs::create_directories(dest);
          continue;
        }
        fs::create_directories(dest.parent_path());
        std::FILE* f = std::fopen(dest.c_str(), "wb");
        if (f == nullptr) throw IoError(dest.string() + ": cannot create: " + std::strerror(errno));
        try {
          read_entry(z.get(), static_cast<zip_uint64_t>(i), st, zip, limits.max_entry_bytes,
                     [&](const char* data, std::size_t size) {
                       if (std::fwrite(data, 1, size, f) != size) {
                         throw IoError(dest.string() + ": write error: " + std::strerror(errno));
                       }
                     });
        } catch (...) {
          std::fclose(f);
          throw;
        }
        if (std::fclose(f) != 0) throw IoError(dest.string() + ": write error");
      }
    });
  } catch (const fs::filesystem_error& e) {
    throw IoError(zip.string() + ": cannot extract: " + e.what());
  }
}

}  // namespace halo::datasets
