#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>
#include <zlib.h>

#include <algorithm>
#include <atomic>
#include <bit>
#include <cerrno>
#include <cmath>
#include <condition_variable>
#include <cstdio>
#include <cstring>
#include <limits>
#include <mutex>
#include <nlohmann/json.hpp>
#include <thread>
#include <variant>

#include <halo/datasets/detail/host.hpp>
#include <halo/datasets/preprocess.hpp>
#include <halo/datasets/readers/staged_directory.hpp>
#include <halo/datasets/store/store.hpp>
#include <halo/kernels/atomic_file.hpp>
#include <halo/kernels/error.hpp>
#include <halo/kernels/log.hpp>

namespace halo::datasets {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

static_assert(std::endian::native == std::endian::little,
              "the store keeps little-endian arrays as they are in memory");

// Arrays are copied, converted and checksummed this many bytes at a time.
constexpr std::size_t kChunk = std::size_t{32} << 20;

template <class T>
const char* dtype_name() {
  if constexpr (std::is_same_v<T, float>) return "f32";
  if constexpr (std::is_same_v<T, std::int32_t>) return "i32";
  if constexpr (std::is_same_v<T, std::int64_t>) return "i64";
}

std::size_t dtype_bytes(const std::string& dtype) {
  if (dtype == "f32" || dtype == "i32") return 4;
  if (dtype == "i64") return 8;
  if (dtype == "f16" || dtype == "bf16") return 2;
  return 0;
}

std::string hex32(std::uint32_t v) {
  char text[16];
  std::snprintf(text, sizeof text, "%08x", v);
  return text;
}

/// CRC-32 (zlib's) of `bytes` at `data`, in kChunk pieces on res's threads, combined.
std::uint32_t crc32_of(const kernels::Resources& res, const unsigned char* data,
                       std::size_t bytes) {
  const auto chunks = static_cast<std::int64_t>((bytes + kChunk - 1) / kChunk);
  std::vector<uLong> crc(static_cast<std::size_t>(chunks));
  kernels::for_each_index(res.cpu_exec(), chunks, [&](std::int64_t c) {
    const std::size_t off = static_cast<std::size_t>(c) * kChunk;
    const std::size_t n = std::min(kChunk, bytes - off);
    crc[static_cast<std::size_t>(c)] = crc32_z(crc32_z(0L, Z_NULL, 0), data + off, n);
  });
  uLong total = crc32_z(0L, Z_NULL, 0);
  for (std::int64_t c = 0; c < chunks; ++c) {
    const std::size_t off = static_cast<std::size_t>(c) * kChunk;
    total = crc32_combine64(total, crc[static_cast<std::size_t>(c)],
                            static_cast<z_off64_t>(std::min(kChunk, bytes - off)));
  }
  return static_cast<std::uint32_t>(total);
}

json read_header(const fs::path& dir) {
  const fs::path path = dir / kStoreHeader;
  std::error_code ec;
  if (!fs::is_regular_file(path, ec))
    throw IoError(path.string() +
                  ": no store header (not a store directory, or a build that "
                  "did not finish)");
  json header;
  try {
    header = json::parse(kernels::read_file_bytes(path));
  } catch (const json::exception& e) {
    throw IoError(path.string() + ": corrupt store header: " + e.what());
  }
  int version = 0;
  try {
    version = header.at("format_version").get<int>();
  } catch (const json::exception& e) {
    throw IoError(path.string() + ": corrupt store header: " + e.what());
  }
  if (version != kStoreFormatVersion)
    throw IoError(path.string() + ": store format version " + std::to_string(version) +
                  ", this build reads version " + std::to_string(kStoreFormatVersion) +
                  " (prepare the store again: halo datasets prepare)");
  return header;
}

/// One array's entry in the header, checked against its file's size.
struct ArrayEntry {
  std::string dtype;
  std::int64_t rows = 0, cols = 0;
  std::uint64_t bytes = 0;
  std::uint32_t crc = 0;
  fs::path path;
};

ArrayEntry array_entry(const fs::path& dir, const json& arrays, const std::string& key) {
  const std::string where = (dir / kStoreHeader).string() + ": array '" + key + "'";
  if (!arrays.contains(key)) throw IoError(where + " is missing");
  const json& a = arrays.at(key);
  ArrayEntry e;
  e.dtype = a.at("dtype").get<std::string>();
  e.rows = a.at("rows").get<std::int64_t>();
  e.cols = a.at("cols").get<std::int64_t>();
  e.bytes = a.at("bytes").get<std::uint64_t>();
  e.crc = static_cast<std::uint32_t>(std::stoul(a.at("crc32").get<std::string>(), nullptr, 16));
  const std::string file = a.at("file").get<std::string>();
  if (file != key + ".bin") throw IoError(where + " names an unexpected file '" + file + "'");
  const std::size_t elem = dtype_bytes(e.dtype);
  if (elem == 0) throw IoError(where + " has an unknown dtype '" + e.dtype + "'");
  if (e.rows < 0 || e.cols < 0 ||
      (e.cols > 0 && e.rows > std::numeric_limits<std::int64_t>::max() / e.cols /
                                  static_cast<std::int64_t>(elem)) ||
      static_cast<std::uint64_t>(e.rows * e.cols) * elem != e.bytes)
    throw IoError(where + ": shape " + std::to_string(e.rows) + " x " + std::to_string(e.cols) +
                  " does not match its " + std::to_string(e.bytes) + " bytes");
  e.path = dir / file;
  std::error_code ec;
  const auto size = fs::file_size(e.path, ec);
  if (ec) throw IoError(e.path.string() + ": cannot open: " + ec.message());
  if (size != e.bytes)
    throw IoError(e.path.string() + ": corrupt store: the file has " + std::to_string(size) +
                  " bytes, " + kStoreHeader + " says " + std::to_string(e.bytes) +
                  (size < e.bytes ? " (truncated)" : ""));
  return e;
}

/// A whole file mapped read-only to stage a copy: not counted as a host buffer (the copy is).
class Mapping {
 public:
  Mapping(const fs::path& path, std::size_t bytes) : m_bytes(bytes) {
    if (bytes == 0) return;
    const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) throw IoError(path.string() + ": cannot open: " + std::strerror(errno));
    void* map = ::mmap(nullptr, bytes, PROT_READ, MAP_PRIVATE, fd, 0);
    const int err = errno;
    ::close(fd);
    if (map == MAP_FAILED) throw IoError(path.string() + ": mmap failed: " + std::strerror(err));
    m_data = static_cast<unsigned char*>(map);
    ::madvise(m_data, bytes, MADV_SEQUENTIAL);
  }
  ~Mapping() {
    if (m_data != nullptr) ::munmap(m_data, m_bytes);
  }
  Mapping(const Mapping&) = delete;
  Mapping& operator=(const Mapping&) = delete;
  const unsigned char* data() const { return m_data; }
  /// Lets the process drop [off, off + n) from its resident set (the pages stay cached).
  void drop(std::size_t off, std::size_t n) const { ::madvise(m_data + off, n, MADV_DONTNEED); }

 private:
  unsigned char* m_data = nullptr;
  std::size_t m_bytes = 0;
};

/// `e`'s CRC-32 check: halo::IoError naming the file on a mismatch.
void check_crc(const ArrayEntry& e, std::uint32_t crc) {
  if (crc != e.crc)
    throw IoError(e.path.string() + ": corrupt store: CRC-32 " + hex32(crc) + ", " + kStoreHeader +
                  " says " + hex32(e.crc));
}

ArrayEntry typed_entry(const fs::path& dir, const json& arrays, const std::string& key,
                       const char* dtype) {
  ArrayEntry e = array_entry(dir, arrays, key);
  if (e.dtype != dtype)
    throw IoError((dir / kStoreHeader).string() + ": array '" + key + "' has dtype " + e.dtype +
                  ", expected " + dtype);
  return e;
}

/// Array `key` as a host tensor of T (its header dtype must be T's).
template <class T>
kernels::Tensor<T> load_array(const kernels::Resources& res, const fs::path& dir,
                              const json& arrays, const std::string& key,
                              const StoreOpenOptions& o) {
  const ArrayEntry e = typed_entry(dir, arrays, key, dtype_name<T>());
  if (o.mapped) {
    kernels::Buffer map = kernels::Buffer::map_file(e.path.string(), e.bytes);
    auto* bytes = static_cast<unsigned char*>(map.data());
    if (o.verify_checksums && e.bytes > 0) {
      // Chunk by chunk, dropping each read chunk from this process again (an unwritten page of
      // a private mapping is the page cache's: it stays cached, not resident here).
      uLong crc = crc32_z(0L, Z_NULL, 0);
      for (std::size_t off = 0; off < e.bytes; off += kChunk) {
        const std::size_t n = std::min<std::size_t>(kChunk, e.bytes - off);
        crc = crc32_combine64(crc, crc32_of(res, bytes + off, n), static_cast<z_off64_t>(n));
        ::madvise(bytes + off, n, MADV_DONTNEED);
      }
      check_crc(e, static_cast<std::uint32_t>(crc));
    }
    return kernels::Tensor<T>(std::move(map), e.rows, e.cols);
  }
  kernels::Tensor<T> t = detail::host_tensor<T>(res, e.rows, e.cols);
  const Mapping map(e.path, e.bytes);
  uLong crc = crc32_z(0L, Z_NULL, 0);
  auto* out = reinterpret_cast<unsigned char*>(t.data());
  for (std::size_t off = 0; off < e.bytes; off += kChunk) {
    // Copy, then drop the copied chunk of the mapping: the file's pages would otherwise count in
    // the resident set next to the copy, doubling the peak for big arrays.
    const std::size_t n = std::min<std::size_t>(kChunk, e.bytes - off);
    std::memcpy(out + off, map.data() + off, n);
    map.drop(off, n);
    if (o.verify_checksums)
      crc = crc32_combine64(crc, crc32_of(res, out + off, n), static_cast<z_off64_t>(n));
  }
  if (o.verify_checksums && e.bytes > 0) check_crc(e, static_cast<std::uint32_t>(crc));
  return t;
}

/// The dense features, converted to float32 when stored narrower (a chunk at a time).
kernels::Tensor<float> load_features(const kernels::Resources& res, const fs::path& dir,
                                     const json& arrays, FeatureDtype dtype,
                                     const StoreOpenOptions& o) {
  if (dtype == FeatureDtype::F32) return load_array<float>(res, dir, arrays, "features", o);
  const ArrayEntry e = typed_entry(dir, arrays, "features", feature_dtype_name(dtype));
  kernels::Tensor<float> x = detail::host_tensor<float>(res, e.rows, e.cols);
  const Mapping map(e.path, e.bytes);
  const bool bf16 = dtype == FeatureDtype::BF16;
  uLong crc = crc32_z(0L, Z_NULL, 0);
  for (std::size_t off = 0; off < e.bytes; off += kChunk) {
    const std::size_t n = std::min<std::size_t>(kChunk, e.bytes - off);
    if (o.verify_checksums)
      crc = crc32_combine64(crc, crc32_of(res, map.data() + off, n), static_cast<z_off64_t>(n));
    const auto* src = reinterpret_cast<const std::uint16_t*>(map.data() + off);
    float* dst = x.data() + off / 2;
    detail::parallel_for(res, static_cast<std::int64_t>(n / 2), [&](std::int64_t i) {
      dst[i] = bf16 ? from_bf16(src[i]) : from_f16(src[i]);
    });
    map.drop(off, n);
  }
  if (o.verify_checksums && e.bytes > 0) check_crc(e, static_cast<std::uint32_t>(crc));
  return x;
}

fs::path sibling(const fs::path& target, const char* tag) {
  static std::atomic<int> counter{0};
  return target.parent_path() / (target.filename().string() + tag + std::to_string(::getpid()) +
                                 "-" + std::to_string(counter++));
}

StoreCounts counts_from(const json& h, const fs::path& path) {
  StoreCounts c;
  c.name = h.at("name").get<std::string>();
  c.num_nodes = h.at("num_nodes").get<std::int64_t>();
  c.num_edges = h.at("num_edges").get<std::int64_t>();
  c.symmetric = h.at("symmetric").get<bool>();
  c.weighted = h.at("weighted").get<bool>();
  c.training_edges = h.at("training_edges").get<std::int64_t>();
  c.max_degree = h.at("max_degree").get<std::int64_t>();
  c.degree_histogram = h.at("degree_histogram").get<DegreeHistogram>();
  c.num_features = h.at("num_features").get<std::int64_t>();
  c.sparse_features = h.at("features").get<std::string>() == "sparse";
  const auto dtype = parse_feature_dtype(h.at("feature_dtype").get<std::string>());
  if (!dtype) throw IoError(path.string() + ": corrupt store header: unknown feature_dtype");
  c.feature_dtype = *dtype;
  c.feature_nnz = h.at("feature_nnz").get<std::int64_t>();
  c.num_classes = h.at("num_classes").get<std::int32_t>();
  c.num_train = h.at("num_train").get<std::int64_t>();
  c.num_val = h.at("num_val").get<std::int64_t>();
  c.num_test = h.at("num_test").get<std::int64_t>();
  c.bytes_on_disk = h.at("bytes_on_disk").get<std::uint64_t>();
  const std::string prefix = path.string() + ": corrupt store header: ";
  if (c.num_nodes < 0 || c.num_nodes > kMaxStoreNodes || c.num_edges < 0 || c.training_edges < 0 ||
      c.max_degree < 0 || c.max_degree > c.training_edges || c.num_features < 0 ||
      c.num_train < 0 || c.num_val < 0 || c.num_test < 0 ||
      c.num_train + c.num_val + c.num_test > c.num_nodes)
    throw IoError(prefix + "negative or inconsistent counts");
  if (!degree_histogram_covers(c.degree_histogram, c.num_nodes, c.training_edges))
    throw IoError(prefix +
                  "degree_histogram does not cover num_nodes rows and training_edges "
                  "entries");
  return c;
}

/// The header's counts checked against every array's size (not its contents).
StoreCounts checked_counts(const fs::path& dir, const json& h) {
  const fs::path path = dir / kStoreHeader;
  StoreCounts c = counts_from(h, path);
  const json& arrays = h.at("arrays");
  const std::string prefix = path.string() + ": corrupt store: ";
  auto rows_of = [&](const std::string& key) { return array_entry(dir, arrays, key).rows; };
  std::uint64_t bytes = 0;
  for (const auto& [key, a] : arrays.items()) {
    (void)a;
    bytes += array_entry(dir, arrays, key).bytes;
  }
  if (bytes != c.bytes_on_disk)
    throw IoError(prefix + "the arrays hold " + std::to_string(bytes) +
                  " bytes, bytes_on_disk "
                  "says " +
                  std::to_string(c.bytes_on_disk));
  const std::int64_t features =
      c.sparse_features ? rows_of("features.indptr") - 1 : rows_of("features");
  if (rows_of("graph.indptr") != c.num_nodes + 1 || rows_of("graph.indices") != c.num_edges ||
      rows_of("labels") != c.num_nodes || features != c.num_nodes ||
      rows_of("train_idx") != c.num_train || rows_of("val_idx") != c.num_val ||
      rows_of("test_idx") != c.num_test ||
      (c.weighted ? rows_of("graph.values") != c.num_edges : rows_of("graph.values") != 0) ||
      (c.sparse_features ? rows_of("features.indices") != c.feature_nnz
                         : array_entry(dir, arrays, "features").cols != c.num_features))
    throw IoError(prefix + "the array sizes disagree with the header's counts");
  return c;
}

}  // namespace

// ---- dtypes ----

const char* feature_dtype_name(FeatureDtype d) {
  switch (d) {
    case FeatureDtype::F32:
      return "f32";
    case FeatureDtype::F16:
      return "f16";
    case FeatureDtype::BF16:
      return "bf16";
  }
  return "?";
}

std::optional<FeatureDtype> parse_feature_dtype(std::string_view name) {
  for (FeatureDtype d : {FeatureDtype::F32, FeatureDtype::F16, FeatureDtype::BF16})
    if (name == feature_dtype_name(d)) return d;
  return std::nullopt;
}

std::uint16_t to_bf16(float x) {
  const auto u = std::bit_cast<std::uint32_t>(x);
  if (std::isnan(x)) return static_cast<std::uint16_t>(u >> 16 | 0x40);  // stays a NaN
  const std::uint32_t rounding = 0x7fff + (u >> 16 & 1);                 // to nearest even
  return static_cast<std::uint16_t>((u + rounding) >> 16);
}

float from_bf16(std::uint16_t h) {
  return std::bit_cast<float>(static_cast<std::uint32_t>(h) << 16);
}

std::uint16_t to_f16(float x) {
  const auto u = std::bit_cast<std::uint32_t>(x);
  const std::uint32_t sign = u >> 16 & 0x8000;
  const std::uint32_t abs = u & 0x7fffffff;
  if (abs > 0x7f800000) return static_cast<std::uint16_t>(sign | 0x7e00);   // NaN
  if (abs >= 0x477ff000) return static_cast<std::uint16_t>(sign | 0x7c00);  // overflow: inf
  if (abs < 0x38800000) {
    // A subnormal half (or zero): the value in units of 2^-24, rounded to nearest even.
    const float scaled = std::bit_cast<float>(abs) * 16777216.0f;  // exact: a power of two
    return static_cast<std::uint16_t>(sign | static_cast<std::uint32_t>(std::nearbyint(scaled)));
  }
  // Normal: rebias the exponent (127 -> 15) and round the mantissa's 13 dropped bits to even.
  const std::uint32_t rounded = abs + 0xfff + (abs >> 13 & 1);
  return static_cast<std::uint16_t>(sign | ((rounded - 0x38000000) >> 13));
}

float from_f16(std::uint16_t h) {
  const std::uint32_t sign = static_cast<std::uint32_t>(h & 0x8000) << 16;
  const std::uint32_t exp = h >> 10 & 0x1f;
  const std::uint32_t mant = h & 0x3ff;
  if (exp == 0) {  // zero or subnormal: mant * 2^-24
    const float v = static_cast<float>(mant) * 5.9604644775390625e-8f;
    return sign != 0 ? -v : v;
  }
  if (exp == 31) return std::bit_cast<float>(sign | 0x7f800000 | mant << 13);
  return std::bit_cast<float>(sign | (exp + 112) << 23 | mant << 13);
}

// ---- statistics ----

void add_to_histogram(DegreeHistogram& h, std::int64_t d) {
  // d in [2^(b-1), 2^b); 0 in bucket 0.
  const auto b = static_cast<std::size_t>(std::bit_width(static_cast<std::uint64_t>(d)));
  if (h.size() <= b) h.resize(b + 1, {0, 0});
  ++h[b][0];
  h[b][1] += d;
}

DegreeHistogram degree_histogram(const std::int64_t* indptr, std::int64_t rows) {
  DegreeHistogram h;
  for (std::int64_t v = 0; v < rows; ++v) add_to_histogram(h, indptr[v + 1] - indptr[v]);
  return h;
}

bool degree_histogram_covers(const DegreeHistogram& h, std::int64_t rows, std::int64_t entries) {
  std::int64_t r = 0, e = 0;
  for (const auto& [count, sum] : h) {
    if (count < 0 || sum < 0) return false;
    r += count;
    e += sum;
  }
  return r == rows && e == entries;
}

TrainingGraphStats training_graph_stats(const kernels::Resources& res, const Graph& a) {
  const Graph structure{a.indptr.clone(res), a.indices.clone(res), {}, a.num_cols, a.symmetric};
  const Graph s = remove_self_loops(res, symmetrize(res, structure));
  std::int64_t max_degree = 0;
  for (std::int64_t v = 0; v < s.num_rows(); ++v)
    max_degree = std::max(max_degree, s.indptr.data()[v + 1] - s.indptr.data()[v]);
  return {s.num_edges(), max_degree, degree_histogram(s.indptr.data(), s.num_rows())};
}

// ---- writing ----

struct StoreWriter::Impl {
  fs::path target, tmp;
  json arrays = json::object();
  std::uint64_t total_bytes = 0;
  bool committed = false;
  // The array being written.
  std::FILE* file = nullptr;
  fs::path path;
  std::string key, dtype;
  std::int64_t rows = 0, cols = 0;
  std::size_t element_bytes = 0;
  FeatureDtype feature_dtype = FeatureDtype::F32;  // of the array begun by begin_features
  std::vector<std::uint16_t> narrow;               // append_features' conversion buffer
  std::uint64_t expected = 0, written = 0;
  uLong crc = 0;

  [[noreturn]] void fail(const std::string& what) {
    const int err = errno;
    if (file != nullptr) std::fclose(file);
    file = nullptr;
    throw IoError(path.string() + ": " + what +
                  (err != 0 ? std::string(": ") + std::strerror(err) : std::string()));
  }
};

StoreWriter::StoreWriter(const fs::path& dir) : m(std::make_unique<Impl>()) {
  fs::path target = dir.lexically_normal();
  if (target.filename().empty()) target = target.parent_path();
  kernels::check_output_directory_path(target);
  m->target = target;
  std::error_code ec;
  if (target.has_parent_path()) fs::create_directories(target.parent_path(), ec);
  m->tmp = sibling(target, ".tmp-");
  fs::remove_all(m->tmp, ec);
  if (!fs::create_directory(m->tmp, ec) || ec)
    throw IoError(m->tmp.string() + ": cannot create directory: " + ec.message());
  // A command ended by a signal removes it too (cli::end_by_signal_on_termination).
  track_staging_directory(m->tmp, true);
}

StoreWriter::~StoreWriter() {
  if (m->file != nullptr) std::fclose(m->file);
  if (!m->committed) {
    std::error_code ignored;
    fs::remove_all(m->tmp, ignored);
  }
  track_staging_directory(m->tmp, false);
}

const fs::path& StoreWriter::scratch_dir() const { return m->tmp; }

void StoreWriter::begin(const std::string& key, const std::string& dtype, std::size_t element_bytes,
                        std::int64_t rows, std::int64_t cols) {
  HALO_EXPECTS(m->file == nullptr, "StoreWriter::begin: the previous array was not ended");
  HALO_EXPECTS(!m->committed, "StoreWriter::begin: already committed");
  HALO_EXPECTS(
      rows >= -1 && cols >= 0 && (rows >= 0 || cols >= 1) && dtype_bytes(dtype) == element_bytes,
      "StoreWriter::begin: bad shape or dtype");
  m->key = key;
  m->dtype = dtype;
  m->rows = rows;
  m->cols = cols;
  m->element_bytes = element_bytes;
  m->expected = rows < 0 ? std::numeric_limits<std::uint64_t>::max()
                         : static_cast<std::uint64_t>(rows) * static_cast<std::uint64_t>(cols) *
                               element_bytes;
  m->written = 0;
  m->crc = crc32_z(0L, Z_NULL, 0);
  m->path = m->tmp / (key + ".bin");
  errno = 0;
  m->file = std::fopen(m->path.c_str(), "wb");
  if (m->file == nullptr) m->fail("cannot create");
}

void StoreWriter::append(const void* data, std::size_t bytes) {
  HALO_EXPECTS(m->file != nullptr, "StoreWriter::append: no array begun");
  if (bytes == 0) return;
  if (m->written + bytes > m->expected) {
    errno = 0;
    m->fail("more bytes than the array's shape holds");
  }
  m->crc = crc32_z(m->crc, static_cast<const unsigned char*>(data), bytes);
  errno = 0;
  if (std::fwrite(data, 1, bytes, m->file) != bytes) m->fail("write error");
  m->written += bytes;
}

void StoreWriter::end() {
  HALO_EXPECTS(m->file != nullptr, "StoreWriter::end: no array begun");
  const std::uint64_t row_bytes = static_cast<std::uint64_t>(m->cols) * m->element_bytes;
  if (m->rows < 0 && row_bytes > 0 && m->written % row_bytes == 0) {
    m->rows = static_cast<std::int64_t>(m->written / row_bytes);
    m->expected = m->written;
  }
  if (m->written != m->expected) {
    errno = 0;
    m->fail("the array got " + std::to_string(m->written) + " bytes, its shape holds " +
            std::to_string(m->expected));
  }
  errno = 0;
  const bool flushed = std::fflush(m->file) == 0 && ::fsync(::fileno(m->file)) == 0;
  if (!flushed) m->fail("write error");
  std::FILE* f = std::exchange(m->file, nullptr);
  if (std::fclose(f) != 0) m->fail("write error");
  m->arrays[m->key] = {{"dtype", m->dtype},
                       {"rows", m->rows},
                       {"cols", m->cols},
                       {"bytes", m->written},
                       {"crc32", hex32(static_cast<std::uint32_t>(m->crc))},
                       {"file", m->key + ".bin"}};
  m->total_bytes += m->written;
}

void StoreWriter::begin_features(std::int64_t rows, std::int64_t cols, FeatureDtype dtype) {
  begin("features", feature_dtype_name(dtype), dtype == FeatureDtype::F32 ? 4 : 2, rows, cols);
  m->feature_dtype = dtype;
}

void StoreWriter::append_features(const float* values, std::size_t count) {
  if (m->feature_dtype == FeatureDtype::F32) {
    append(values, count * sizeof(float));
    return;
  }
  const bool bf16 = m->feature_dtype == FeatureDtype::BF16;
  for (std::size_t at = 0; at < count;) {
    const std::size_t n = std::min(count - at, kChunk / 2);
    m->narrow.resize(n);
    for (std::size_t i = 0; i < n; ++i)
      m->narrow[i] = bf16 ? to_bf16(values[at + i]) : to_f16(values[at + i]);
    append(m->narrow.data(), n * 2);
    at += n;
  }
}

template <class T>
void StoreWriter::array(const std::string& key, const kernels::Tensor<T>& t) {
  begin(key, dtype_name<T>(), sizeof(T), t.rows(), t.cols());
  append(t.data(), t.bytes());
  end();
}
template void StoreWriter::array(const std::string&, const kernels::Tensor<float>&);
template void StoreWriter::array(const std::string&, const kernels::Tensor<std::int32_t>&);
template void StoreWriter::array(const std::string&, const kernels::Tensor<std::int64_t>&);

void StoreWriter::commit(const StoreCounts& c, const std::string& source_checksum) {
  HALO_EXPECTS(m->file == nullptr && !m->committed, "StoreWriter::commit: an array is open");
  const json header = {{"format_version", kStoreFormatVersion},
                       {"name", c.name},
                       {"source_checksum", source_checksum},
                       {"num_nodes", c.num_nodes},
                       {"num_edges", c.num_edges},
                       {"symmetric", c.symmetric},
                       {"weighted", c.weighted},
                       {"training_edges", c.training_edges},
                       {"max_degree", c.max_degree},
                       {"degree_histogram", c.degree_histogram},
                       {"num_train", c.num_train},
                       {"num_val", c.num_val},
                       {"num_test", c.num_test},
                       {"num_features", c.num_features},
                       {"features", c.sparse_features ? "sparse" : "dense"},
                       {"feature_dtype", feature_dtype_name(c.feature_dtype)},
                       {"feature_nnz", c.feature_nnz},
                       {"num_classes", c.num_classes},
                       {"bytes_on_disk", m->total_bytes},
                       {"arrays", m->arrays}};
  // Checked as a reader will check it, before anything is moved into place.
  checked_counts(m->tmp, header);
  // The header last: a directory with a header has all its arrays.
  kernels::write_file_atomically(m->tmp / kStoreHeader, header.dump(2) + "\n");
  std::error_code ec;
  fs::path old;
  if (fs::exists(m->target, ec)) {
    old = sibling(m->target, ".old-");
    fs::rename(m->target, old, ec);
    if (ec) throw IoError(m->target.string() + ": cannot replace the old store: " + ec.message());
  }
  fs::rename(m->tmp, m->target, ec);
  if (ec) {
    if (!old.empty()) fs::rename(old, m->target, ec);
    throw IoError(m->target.string() + ": cannot move the new store in place: " + ec.message());
  }
  m->committed = true;
  if (!old.empty()) fs::remove_all(old, ec);
}

void write_store(const kernels::Resources& res, const Dataset& ds, const fs::path& dir,
                 const std::string& source_checksum, FeatureDtype dtype) {
  validate(ds);
  HALO_EXPECTS(ds.num_nodes() <= kMaxStoreNodes, "write_store: more than 2^31 - 2 nodes");
  const TrainingGraphStats stats = training_graph_stats(res, ds.graph);
  StoreWriter w(dir);
  w.array("graph.indptr", ds.graph.indptr);
  w.array("graph.indices", ds.graph.indices);
  w.array("graph.values", ds.graph.values);
  StoreCounts c;
  if (const auto* dense = std::get_if<kernels::Tensor<float>>(&ds.features)) {
    w.begin_features(dense->rows(), dense->cols(), dtype);
    w.append_features(dense->data(), static_cast<std::size_t>(dense->numel()));
    w.end();
    c.feature_dtype = dtype;
  } else {
    const auto& sparse = std::get<kernels::CsrMatrix<std::int32_t, float>>(ds.features);
    c.sparse_features = true;
    c.feature_nnz = sparse.num_edges();
    w.array("features.indptr", sparse.indptr);
    w.array("features.indices", sparse.indices);
    w.array("features.values", sparse.values);
  }
  w.array("labels", ds.labels);
  w.array("train_idx", ds.train_idx);
  w.array("val_idx", ds.val_idx);
  w.array("test_idx", ds.test_idx);
  c.name = ds.name;
  c.num_nodes = ds.num_nodes();
  c.num_edges = ds.graph.num_edges();
  c.symmetric = ds.graph.symmetric;
  c.weighted = !ds.graph.values.empty();
  c.training_edges = stats.entries;
  c.max_degree = stats.max_degree;
  c.degree_histogram = stats.histogram;
  c.num_features = ds.num_features();
  c.num_classes = ds.num_classes;
  c.num_train = ds.train_idx.numel();
  c.num_val = ds.val_idx.numel();
  c.num_test = ds.test_idx.numel();
  w.commit(c, source_checksum);
}

// ---- reading ----

bool is_store(const fs::path& dir) {
  std::error_code ec;
  return fs::is_regular_file(dir / kStoreHeader, ec);
}

StoreCounts read_store_counts(const fs::path& dir) {
  const json h = read_header(dir);
  try {
    return checked_counts(dir, h);
  } catch (const json::exception& e) {
    throw IoError((dir / kStoreHeader).string() + ": corrupt store header: " + e.what());
  }
}

std::string read_store_source(const fs::path& dir) {
  const json h = read_header(dir);
  try {
    checked_counts(dir, h);
    return h.at("source_checksum").get<std::string>();
  } catch (const json::exception& e) {
    throw IoError((dir / kStoreHeader).string() + ": corrupt store header: " + e.what());
  }
}

Dataset open_store(const kernels::Resources& res, const fs::path& dir,
                   const StoreOpenOptions& options) {
  const json h = read_header(dir);
  const fs::path path = dir / kStoreHeader;
  try {
    const StoreCounts c = checked_counts(dir, h);
    const json& arrays = h.at("arrays");
    Dataset ds;
    ds.name = c.name;
    ds.graph.indptr = load_array<std::int64_t>(res, dir, arrays, "graph.indptr", options);
    ds.graph.indices = load_array<NodeId>(res, dir, arrays, "graph.indices", options);
    ds.graph.values = load_array<float>(res, dir, arrays, "graph.values", options);
    ds.graph.num_cols = c.num_nodes;
    if (!options.features) {
      ds.features = kernels::Tensor<float>(res, kernels::Device::Cpu, c.num_nodes, 0);
    } else if (c.sparse_features) {
      ds.features = kernels::CsrMatrix<std::int32_t, float>{
          load_array<std::int64_t>(res, dir, arrays, "features.indptr", options),
          load_array<std::int32_t>(res, dir, arrays, "features.indices", options),
          load_array<float>(res, dir, arrays, "features.values", options), c.num_features};
    } else {
      ds.features = load_features(res, dir, arrays, c.feature_dtype, options);
    }
    ds.labels = load_array<std::int32_t>(res, dir, arrays, "labels", options);
    ds.train_idx = load_array<NodeId>(res, dir, arrays, "train_idx", options);
    ds.val_idx = load_array<NodeId>(res, dir, arrays, "val_idx", options);
    ds.test_idx = load_array<NodeId>(res, dir, arrays, "test_idx", options);
    ds.num_classes = c.num_classes;
    try {
      // A mapped graph's pages go back to the page cache while the checks touch them: a store
      // larger than memory would otherwise be resident here whole by the end of the pass.
      std::optional<MappedPageTrimmer> trim;
      if (options.mapped) trim.emplace(mapped_ranges(ds.graph), std::chrono::milliseconds(50));
      validate(ds);  // symmetric is still false here: linear checks only
    } catch (const IoError& e) {
      throw IoError(path.string() + ": corrupt store: " + e.what());
    }
    // And what the last period left.
    if (options.mapped)
      MappedPageTrimmer(mapped_ranges(ds.graph), std::chrono::milliseconds(0)).trim();
    ds.graph.symmetric = c.symmetric;
    return ds;
  } catch (const json::exception& e) {
    throw IoError(path.string() + ": corrupt store header: " + e.what());
  }
}

StoredFeatures stored_features(const fs::path& dir) {
  const json h = read_header(dir);
  const fs::path path = dir / kStoreHeader;
  try {
    const StoreCounts c = checked_counts(dir, h);
    if (c.sparse_features)
      throw IoError(path.string() + ": the store's features are sparse (a partition copies them)");
    const ArrayEntry e =
        typed_entry(dir, h.at("arrays"), "features", feature_dtype_name(c.feature_dtype));
    std::error_code ec;
    fs::path abs = fs::absolute(dir, ec).lexically_normal();
    if (abs.filename().empty()) abs = abs.parent_path();
    return {abs, c.feature_dtype, e.rows, e.cols, e.crc};
  } catch (const json::exception& e) {
    throw IoError(path.string() + ": corrupt store header: " + e.what());
  }
}

kernels::Tensor<float> gather_stored_features(const kernels::Resources& res,
                                              const StoredFeatures& f, const NodeId* ids,
                                              std::int64_t count) {
  const fs::path file = f.store / "features.bin";
  const std::size_t elem = f.dtype == FeatureDtype::F32 ? 4 : 2;
  const auto row_bytes = static_cast<std::size_t>(f.cols) * elem;
  const std::size_t bytes = static_cast<std::size_t>(f.rows) * row_bytes;
  std::error_code ec;
  const auto size = fs::file_size(file, ec);
  if (ec) throw IoError(file.string() + ": cannot open: " + ec.message());
  if (size != bytes)
    throw IoError(file.string() + ": the file has " + std::to_string(size) + " bytes, expected " +
                  std::to_string(f.rows) + " x " + std::to_string(f.cols) + " " +
                  feature_dtype_name(f.dtype) + " (" + std::to_string(bytes) + ")");
  for (std::int64_t i = 0; i < count; ++i)
    HALO_EXPECTS(ids[i] >= 0 && ids[i] < f.rows, "gather_stored_features: id out of range");
  kernels::Tensor<float> x = detail::host_tensor<float>(res, count, f.cols);
  if (count == 0 || f.cols == 0) return x;
  const Mapping map(file, bytes);
  ::madvise(const_cast<unsigned char*>(map.data()), bytes, MADV_RANDOM);
  // Rows a block at a time; the block's pages are dropped after it (ids ascending read the file
  // front to back, any order is correct).
  const std::int64_t block =
      std::max<std::int64_t>(1, static_cast<std::int64_t>(kChunk / row_bytes));
  for (std::int64_t b = 0; b < count; b += block) {
    const std::int64_t e = std::min(count, b + block);
    detail::parallel_for(res, e - b, [&](std::int64_t i) {
      const NodeId v = ids[b + i];
      const unsigned char* src = map.data() + static_cast<std::size_t>(v) * row_bytes;
      float* dst = x.data() + (b + i) * f.cols;
      if (f.dtype == FeatureDtype::F32) {
        std::memcpy(dst, src, row_bytes);
        return;
      }
      const auto* h = reinterpret_cast<const std::uint16_t*>(src);
      for (std::int64_t j = 0; j < f.cols; ++j)
        dst[j] = f.dtype == FeatureDtype::BF16 ? from_bf16(h[j]) : from_f16(h[j]);
    });
    map.drop(0, bytes);
  }
  return x;
}

struct MappedPageTrimmer::Impl {
  std::vector<std::pair<const void*, std::size_t>> ranges;
  std::chrono::milliseconds period{0};
  std::mutex mutex;
  std::condition_variable wake;
  bool stop = false;
  std::thread thread;
};

MappedPageTrimmer::MappedPageTrimmer(std::vector<std::pair<const void*, std::size_t>> ranges,
                                     std::chrono::milliseconds period)
    : m(std::make_unique<Impl>()) {
  m->ranges = std::move(ranges);
  m->period = period;
  if (m->ranges.empty() || period.count() <= 0) return;
  m->thread = std::thread([impl = m.get(), this] {
    std::unique_lock<std::mutex> lock(impl->mutex);
    while (!impl->wake.wait_for(lock, impl->period, [impl] { return impl->stop; })) trim();
  });
}

MappedPageTrimmer::~MappedPageTrimmer() {
  if (m->thread.joinable()) {
    {
      const std::lock_guard<std::mutex> lock(m->mutex);
      m->stop = true;
    }
    m->wake.notify_all();
    m->thread.join();
  }
}

void MappedPageTrimmer::trim() const {
  const auto page = static_cast<std::uintptr_t>(::sysconf(_SC_PAGESIZE));
  for (const auto& [data, bytes] : m->ranges) {
    // Whole pages inside the range only: a mapping starts on a page, its tail page is its own.
    const auto begin = (reinterpret_cast<std::uintptr_t>(data) + page - 1) / page * page;
    const auto end = reinterpret_cast<std::uintptr_t>(data) + bytes;
    if (end > begin)
      ::madvise(reinterpret_cast<void*>(begin), (end - begin + page - 1) / page * page,
                MADV_DONTNEED);
  }
}

std::vector<std::pair<const void*, std::size_t>> mapped_ranges(const Graph& g) {
  std::vector<std::pair<const void*, std::size_t>> r;
  if (g.indptr.mapped() && g.indptr.bytes() > 0) r.emplace_back(g.indptr.data(), g.indptr.bytes());
  if (g.indices.mapped() && g.indices.bytes() > 0)
    r.emplace_back(g.indices.data(), g.indices.bytes());
  if (g.values.mapped() && g.values.bytes() > 0) r.emplace_back(g.values.data(), g.values.bytes());
  return r;
}

}  // namespace halo::datasets
