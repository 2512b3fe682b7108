#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <bit>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <limits>
#include <nlohmann/json.hpp>
#include <variant>

#include <halo/datasets/cache.hpp>
#include <halo/datasets/detail/host.hpp>
#include <halo/datasets/preprocess.hpp>
#include <halo/kernels/error.hpp>
#include <halo/kernels/log.hpp>

namespace halo::datasets {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

static_assert(std::endian::native == std::endian::little,
              "the cache stores little-endian arrays as they are in memory");

template <class T>
const char* dtype_name() {
  if constexpr (std::is_same_v<T, float>) return "f32";
  if constexpr (std::is_same_v<T, std::int32_t>) return "i32";
  if constexpr (std::is_same_v<T, std::int64_t>) return "i64";
}

template <class T>
void write_array(const fs::path& dir, const std::string& key, const kernels::Tensor<T>& t,
                 json& arrays) {
  const fs::path path = dir / (key + ".bin");
  std::FILE* f = std::fopen(path.c_str(), "wb");
  if (f == nullptr) throw IoError(path.string() + ": cannot create: " + std::strerror(errno));
  const bool ok = t.bytes() == 0 || std::fwrite(t.data(), 1, t.bytes(), f) == t.bytes();
  if (std::fclose(f) != 0 || !ok) throw IoError(path.string() + ": write error");
  arrays[key] = {{"dtype", dtype_name<T>()},
                 {"rows", t.rows()},
                 {"cols", t.cols()},
                 {"bytes", t.bytes()},
                 {"file", key + ".bin"}};
}

/// Reads array `key` through mmap into a host tensor, checking it against meta.json.
template <class T>
kernels::Tensor<T> read_array(const kernels::Resources& res, const fs::path& dir,
                              const json& arrays, const std::string& key) {
  const std::string where = (dir / "meta.json").string() + ": array '" + key + "'";
  if (!arrays.contains(key)) throw IoError(where + " is missing");
  const json& a = arrays.at(key);
  const std::string dtype = a.at("dtype").get<std::string>();
  if (dtype != dtype_name<T>()) {
    throw IoError(where + " has dtype " + dtype + ", expected " + dtype_name<T>());
  }
  const auto rows = a.at("rows").get<std::int64_t>();
  const auto cols = a.at("cols").get<std::int64_t>();
  const auto bytes = a.at("bytes").get<std::uint64_t>();
  const std::string file = a.at("file").get<std::string>();
  if (file != key + ".bin") throw IoError(where + " names an unexpected file '" + file + "'");
  if (rows < 0 || cols < 0 ||
      (cols > 0 && rows > std::numeric_limits<std::int64_t>::max() / cols /
                              static_cast<std::int64_t>(sizeof(T))) ||
      static_cast<std::uint64_t>(rows * cols) * sizeof(T) != bytes) {
    throw IoError(where + ": shape " + std::to_string(rows) + " x " + std::to_string(cols) +
                  " does not match its " + std::to_string(bytes) + " bytes");
  }
  const fs::path path = dir / file;
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) throw IoError(path.string() + ": cannot open: " + std::strerror(errno));
  struct stat st {};
  if (::fstat(fd, &st) != 0 || static_cast<std::uint64_t>(st.st_size) != bytes) {
    ::close(fd);
    throw IoError(path.string() + ": corrupt cache entry: the file has " +
                  std::to_string(st.st_size) + " bytes, meta.json says " + std::to_string(bytes));
  }
  kernels::Tensor<T> t = detail::host_tensor<T>(res, rows, cols);
  if (bytes > 0) {
    void* map = ::mmap(nullptr, bytes, PROT_READ, MAP_PRIVATE, fd, 0);
    if (map == MAP_FAILED) {
      ::close(fd);
      throw IoError(path.string() + ": mmap failed: " + std::strerror(errno));
    }
    ::madvise(map, bytes, MADV_SEQUENTIAL);
    // Copy in chunks and drop each copied chunk of the mapping at once: the file's pages would
    // otherwise count in the resident set next to the copy, doubling the peak for big arrays.
    constexpr std::size_t kChunk = std::size_t{32} << 20;
    for (std::size_t off = 0; off < bytes; off += kChunk) {
      const std::size_t n = std::min<std::size_t>(kChunk, bytes - off);
      std::memcpy(reinterpret_cast<char*>(t.data()) + off, static_cast<const char*>(map) + off, n);
      ::madvise(static_cast<char*>(map) + off, n, MADV_DONTNEED);
    }
    ::munmap(map, bytes);
  }
  ::close(fd);
  return t;
}

struct TrainingGraphStats {
  std::int64_t entries = 0, max_degree = 0;
  DegreeHistogram histogram;
};

/// Entries, largest row and degree histogram of S = A ∪ Aᵀ without self-loops (built once,
/// when the entry is written).
TrainingGraphStats training_graph_stats(const kernels::Resources& res, const Graph& a) {
  const Graph structure{a.indptr.clone(res), a.indices.clone(res), {}, a.num_cols, a.symmetric};
  const Graph s = remove_self_loops(res, symmetrize(res, structure));
  std::int64_t max_degree = 0;
  for (std::int64_t v = 0; v < s.num_rows(); ++v)
    max_degree = std::max(max_degree, s.indptr.data()[v + 1] - s.indptr.data()[v]);
  return {s.num_edges(), max_degree, degree_histogram(s.indptr.data(), s.num_rows())};
}

json read_meta(const fs::path& meta_path) {
  try {
    std::FILE* f = std::fopen(meta_path.c_str(), "rb");
    if (f == nullptr) throw IoError(meta_path.string() + ": cannot open: " + std::strerror(errno));
    std::string text;
    char buf[4096];
    std::size_t got = 0;
    while ((got = std::fread(buf, 1, sizeof buf, f)) > 0) text.append(buf, got);
    std::fclose(f);
    return json::parse(text);
  } catch (const json::exception& e) {
    throw IoError(meta_path.string() + ": corrupt cache entry: " + e.what());
  }
}

fs::path sibling(const fs::path& target, const char* tag) {
  static std::atomic<int> counter{0};
  return target.parent_path() / (target.filename().string() + tag + std::to_string(::getpid()) +
                                 "-" + std::to_string(counter++));
}

}  // namespace

DegreeHistogram degree_histogram(const std::int64_t* indptr, std::int64_t rows) {
  DegreeHistogram h;
  for (std::int64_t v = 0; v < rows; ++v) {
    const std::int64_t d = indptr[v + 1] - indptr[v];
    // d in [2^(b-1), 2^b); 0 in bucket 0.
    const auto b = static_cast<std::size_t>(std::bit_width(static_cast<std::uint64_t>(d)));
    if (h.size() <= b) h.resize(b + 1, {0, 0});
    ++h[b][0];
    h[b][1] += d;
  }
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

void write_cache(const kernels::Resources& res, const Dataset& ds, const fs::path& dir,
                 const std::string& source_checksum) {
  validate(ds);
  const TrainingGraphStats stats = training_graph_stats(res, ds.graph);
  fs::path target = dir.lexically_normal();
  if (target.filename().empty()) target = target.parent_path();
  if (target.has_parent_path()) fs::create_directories(target.parent_path());
  const fs::path tmp = sibling(target, ".tmp-");
  std::error_code ec;
  fs::remove_all(tmp, ec);
  if (!fs::create_directory(tmp, ec) || ec) {
    throw IoError(tmp.string() + ": cannot create directory: " + ec.message());
  }
  try {
    json arrays = json::object();
    write_array(tmp, "graph.indptr", ds.graph.indptr, arrays);
    write_array(tmp, "graph.indices", ds.graph.indices, arrays);
    write_array(tmp, "graph.values", ds.graph.values, arrays);
    std::string features_kind;
    std::int64_t feature_nnz = 0;
    if (const auto* dense = std::get_if<kernels::Tensor<float>>(&ds.features)) {
      features_kind = "dense";
      write_array(tmp, "features", *dense, arrays);
    } else {
      const auto& sparse = std::get<kernels::CsrMatrix<std::int32_t, float>>(ds.features);
      features_kind = "sparse";
      feature_nnz = sparse.num_edges();
      write_array(tmp, "features.indptr", sparse.indptr, arrays);
      write_array(tmp, "features.indices", sparse.indices, arrays);
      write_array(tmp, "features.values", sparse.values, arrays);
    }
    write_array(tmp, "labels", ds.labels, arrays);
    write_array(tmp, "train_idx", ds.train_idx, arrays);
    write_array(tmp, "val_idx", ds.val_idx, arrays);
    write_array(tmp, "test_idx", ds.test_idx, arrays);
    const json meta = {{"format_version", kCacheFormatVersion},
                       {"name", ds.name},
                       {"source_checksum", source_checksum},
                       {"num_nodes", ds.num_nodes()},
                       {"num_edges", ds.graph.num_edges()},
                       {"symmetric", ds.graph.symmetric},
                       {"weighted", !ds.graph.values.empty()},
                       {"training_edges", stats.entries},
                       {"max_degree", stats.max_degree},
                       {"degree_histogram", stats.histogram},
                       {"num_train", ds.train_idx.numel()},
                       {"num_val", ds.val_idx.numel()},
                       {"num_test", ds.test_idx.numel()},
                       {"num_features", ds.num_features()},
                       {"features", features_kind},
                       {"feature_nnz", feature_nnz},
                       {"num_classes", ds.num_classes},
                       {"arrays", arrays}};
    // meta.json last: an entry with meta.json has all its arrays.
    const fs::path meta_path = tmp / "meta.json";
    std::FILE* f = std::fopen(meta_path.c_str(), "wb");
    if (f == nullptr) throw IoError(meta_path.string() + ": cannot create");
    const std::string text = meta.dump(2) + "\n";
    const bool ok = std::fwrite(text.data(), 1, text.size(), f) == text.size();
    if (std::fclose(f) != 0 || !ok) throw IoError(meta_path.string() + ": write error");

    // Replace any old entry: move it aside first, so `target` is never half-written.
    fs::path old;
    if (fs::exists(target)) {
      old = sibling(target, ".old-");
      fs::rename(target, old, ec);
      if (ec) throw IoError(target.string() + ": cannot replace the old entry: " + ec.message());
    }
    fs::rename(tmp, target, ec);
    if (ec)
      throw IoError(target.string() + ": cannot move the new entry in place: " + ec.message());
    if (!old.empty()) fs::remove_all(old, ec);
  } catch (...) {
    std::error_code ignored;
    fs::remove_all(tmp, ignored);
    throw;
  }
}

std::optional<CacheCounts> read_cache_counts(const fs::path& dir) {
  const fs::path meta_path = dir / "meta.json";
  if (!fs::is_regular_file(meta_path)) return std::nullopt;
  const json meta = read_meta(meta_path);
  try {
    if (meta.at("format_version").get<int>() != kCacheFormatVersion) return std::nullopt;
    CacheCounts c;
    c.name = meta.at("name").get<std::string>();
    c.num_nodes = meta.at("num_nodes").get<std::int64_t>();
    c.num_edges = meta.at("num_edges").get<std::int64_t>();
    c.weighted = meta.at("weighted").get<bool>();
    c.training_edges = meta.at("training_edges").get<std::int64_t>();
    c.max_degree = meta.at("max_degree").get<std::int64_t>();
    if (meta.contains("degree_histogram")) {
      c.degree_histogram = meta.at("degree_histogram").get<DegreeHistogram>();
      if (!degree_histogram_covers(c.degree_histogram, c.num_nodes, c.training_edges))
        throw IoError(meta_path.string() +
                      ": corrupt cache entry: degree_histogram does not cover num_nodes rows "
                      "and training_edges entries");
    }
    c.num_features = meta.at("num_features").get<std::int64_t>();
    c.sparse_features = meta.at("features").get<std::string>() == "sparse";
    c.feature_nnz = meta.at("feature_nnz").get<std::int64_t>();
    c.num_classes = meta.at("num_classes").get<std::int32_t>();
    c.num_train = meta.at("num_train").get<std::int64_t>();
    c.num_val = meta.at("num_val").get<std::int64_t>();
    c.num_test = meta.at("num_test").get<std::int64_t>();
    if (c.num_nodes < 0 || c.training_edges < 0 || c.max_degree < 0 ||
        c.max_degree > c.training_edges || c.num_train < 0 || c.num_val < 0 || c.num_test < 0)
      throw IoError(meta_path.string() + ": corrupt cache entry: negative or inconsistent counts");
    return c;
  } catch (const json::exception& e) {
    throw IoError(meta_path.string() + ": corrupt cache entry: " + e.what());
  }
}

std::optional<Dataset> read_cache(const kernels::Resources& res, const fs::path& dir,
                                  const std::string& expected_source_checksum) {
  const fs::path meta_path = dir / "meta.json";
  if (!fs::is_regular_file(meta_path)) {
    HALO_LOG_DEBUG("dataset cache: no entry at " << dir.string());
    return std::nullopt;
  }
  const json meta = read_meta(meta_path);
  try {
    const int version = meta.at("format_version").get<int>();
    if (version != kCacheFormatVersion) {
      HALO_LOG_DEBUG("dataset cache: " << dir.string() << " has format version " << version
                                       << ", this build reads " << kCacheFormatVersion);
      return std::nullopt;
    }
    const std::string checksum = meta.at("source_checksum").get<std::string>();
    if (checksum != expected_source_checksum) {
      HALO_LOG_DEBUG("dataset cache: " << dir.string() << " was built from source " << checksum
                                       << ", expected " << expected_source_checksum);
      return std::nullopt;
    }
    const json& arrays = meta.at("arrays");
    Dataset ds;
    ds.name = meta.at("name").get<std::string>();
    const auto n = meta.at("num_nodes").get<std::int64_t>();
    ds.graph.indptr = read_array<std::int64_t>(res, dir, arrays, "graph.indptr");
    ds.graph.indices = read_array<NodeId>(res, dir, arrays, "graph.indices");
    ds.graph.values = read_array<float>(res, dir, arrays, "graph.values");
    ds.graph.num_cols = n;
    const std::string kind = meta.at("features").get<std::string>();
    const auto num_features = meta.at("num_features").get<std::int64_t>();
    if (kind == "dense") {
      ds.features = read_array<float>(res, dir, arrays, "features");
    } else if (kind == "sparse") {
      ds.features = kernels::CsrMatrix<std::int32_t, float>{
          read_array<std::int64_t>(res, dir, arrays, "features.indptr"),
          read_array<std::int32_t>(res, dir, arrays, "features.indices"),
          read_array<float>(res, dir, arrays, "features.values"), num_features};
    } else {
      throw IoError(meta_path.string() + ": corrupt cache entry: unknown features kind '" + kind +
                    "'");
    }
    ds.labels = read_array<std::int32_t>(res, dir, arrays, "labels");
    ds.train_idx = read_array<NodeId>(res, dir, arrays, "train_idx");
    ds.val_idx = read_array<NodeId>(res, dir, arrays, "val_idx");
    ds.test_idx = read_array<NodeId>(res, dir, arrays, "test_idx");
    ds.num_classes = meta.at("num_classes").get<std::int32_t>();
    const auto prefix = meta_path.string() + ": corrupt cache entry: ";
    if (ds.num_nodes() != n || ds.graph.num_edges() != meta.at("num_edges").get<std::int64_t>() ||
        ds.num_features() != num_features) {
      throw IoError(prefix +
                    "the array sizes disagree with num_nodes / num_edges / "
                    "num_features");
    }
    try {
      validate(ds);  // symmetric is still false here: linear checks only
    } catch (const IoError& e) {
      throw IoError(prefix + e.what());
    }
    ds.graph.symmetric = meta.at("symmetric").get<bool>();
    return ds;
  } catch (const json::exception& e) {
    throw IoError(meta_path.string() + ": corrupt cache entry: " + e.what());
  }
}

}  // namespace halo::datasets
