#include <algorithm>
#include <bit>
#include <chrono>
#include <cinttypes>
#include <cstdio>
#include <exception>
#include <fstream>
#include <iterator>
#include <memory>
#include <nlohmann/json.hpp>
#include <numeric>
#include <sstream>
#include <type_traits>
#include <variant>

#include <halo/datasets/readers/staged_directory.hpp>
#include <halo/datasets/store/store.hpp>
#include <halo/kernels/error.hpp>
#include <halo/partition/formats/partition_format.hpp>

namespace halo::partition {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

static_assert(std::endian::native == std::endian::little,
              "partition files are little-endian raw arrays");

constexpr const char* kFormatName = "halo-partition";

template <class T>
const char* dtype_name() {
  if constexpr (std::is_same_v<T, std::int32_t>) return "int32";
  if constexpr (std::is_same_v<T, std::int64_t>) return "int64";
  if constexpr (std::is_same_v<T, float>) return "float32";
}

std::string hex(std::uint64_t v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%016" PRIx64, v);
  return buf;
}

struct FileCloser {
  void operator()(std::FILE* f) const { std::fclose(f); }
};
using File = std::unique_ptr<std::FILE, FileCloser>;

constexpr char kPartMagic[8] = {'H', 'A', 'L', 'O', 'P', 'A', 'R', 'T'};

/// The header of a part file: 32 little-endian bytes.
struct PartHeader {
  char magic[8];
  std::uint32_t format_version;
  std::int32_t part;
  std::int32_t num_parts;
  std::uint32_t num_arrays;
  std::uint64_t file_bytes;
};
static_assert(sizeof(PartHeader) == kPartFileHeaderBytes &&
              std::is_trivially_copyable_v<PartHeader>);

/// Writes one part file: a header, then each added array at the next multiple of 8 (zero
/// padding), recording the arrays in `info` in file order. The header is written last, by
/// finish().
class PartFileWriter {
 public:
  PartFileWriter(fs::path path, std::int32_t part, std::int32_t num_parts, PartInfo& info)
      : m_path(std::move(path)), m_part(part), m_num_parts(num_parts), m_info(info) {
    m_file.reset(std::fopen(m_path.c_str(), "wb"));
    if (!m_file) throw IoError(m_path.string() + ": cannot create file");
    pad_to(kPartFileHeaderBytes);
  }

  template <class T>
  void add(const std::string& name, const T* data, std::int64_t rows, std::int64_t cols) {
    pad_to((m_pos + 7) / 8 * 8);
    const auto bytes = static_cast<std::size_t>(rows * cols) * sizeof(T);
    write(data, bytes);
    m_info.arrays.push_back(
        ArrayEntry{name, dtype_name<T>(), rows, cols, m_pos, fnv1a64(data, bytes)});
    m_pos += static_cast<std::int64_t>(bytes);
  }
  template <class T>
  void add(const std::string& name, const kernels::Tensor<T>& t) {
    add(name, t.data(), t.rows(), t.cols());
  }
  template <class T>
  void add(const std::string& name, const std::vector<T>& v) {
    add(name, v.data(), static_cast<std::int64_t>(v.size()), 1);
  }

  void finish() {
    pad_to((m_pos + 7) / 8 * 8);
    PartHeader h{};
    std::copy_n(kPartMagic, 8, h.magic);
    h.format_version = static_cast<std::uint32_t>(kPartitionFormatVersion);
    h.part = m_part;
    h.num_parts = m_num_parts;
    h.num_arrays = static_cast<std::uint32_t>(m_info.arrays.size());
    h.file_bytes = static_cast<std::uint64_t>(m_pos);
    if (std::fseek(m_file.get(), 0, SEEK_SET) != 0)
      throw IoError(m_path.string() + ": seek failed");
    write(&h, sizeof h);
    if (std::fclose(m_file.release()) != 0)
      throw IoError(m_path.string() + ": write failed on close");
    m_info.file_bytes = m_pos;
  }

 private:
  void write(const void* data, std::size_t bytes) {
    if (bytes > 0 && std::fwrite(data, 1, bytes, m_file.get()) != bytes)
      throw IoError(m_path.string() + ": write failed (disk full?)");
  }
  void pad_to(std::int64_t pos) {
    static constexpr char zeros[kPartFileHeaderBytes] = {};
    write(zeros, static_cast<std::size_t>(pos - m_pos));
    m_pos = pos;
  }

  fs::path m_path;
  std::int32_t m_part, m_num_parts;
  PartInfo& m_info;
  File m_file;
  std::int64_t m_pos = 0;
};

// ---- building one part --------------------------------------------------------------------

template <class T>
kernels::Tensor<T> host_tensor(const kernels::Resources& res, const std::vector<T>& v) {
  return kernels::Tensor<T>::from_host(res, v, static_cast<std::int64_t>(v.size()), 1);
}

/// What every part of one partition shares while it is built.
struct Shared {
  const datasets::Dataset& ds;
  const datasets::Graph& s;  // the training graph S
  const Relabelling& rl;
  const datasets::StoredFeatures* features_from;  // the parts reference these; nullptr: copy
  std::vector<std::uint8_t> split_of;             // original id -> 0 none, 1 train, 2 val, 3 test
  std::vector<NodeId> all_train, all_train_original;
  std::int64_t max_degree = 0;
};

Shared make_shared(const datasets::Dataset& ds, const datasets::Graph& s, const Relabelling& rl,
                   const datasets::StoredFeatures* features_from) {
  Shared sh{ds,
            s,
            rl,
            features_from,
            std::vector<std::uint8_t>(static_cast<std::size_t>(ds.num_nodes()), 0),
            {},
            {},
            0};
  const kernels::Tensor<NodeId>* splits[] = {&ds.train_idx, &ds.val_idx, &ds.test_idx};
  for (std::uint8_t k = 0; k < 3; ++k)
    for (std::int64_t i = 0; i < splits[k]->numel(); ++i)
      sh.split_of[static_cast<std::size_t>(splits[k]->data()[i])] =
          static_cast<std::uint8_t>(k + 1);
  for (std::int64_t i = 0; i < ds.train_idx.numel(); ++i)
    sh.all_train.push_back(rl.old_to_new[static_cast<std::size_t>(ds.train_idx.data()[i])]);
  std::sort(sh.all_train.begin(), sh.all_train.end());
  for (const NodeId v : sh.all_train)
    sh.all_train_original.push_back(rl.new_to_old[static_cast<std::size_t>(v)]);
  for (std::int64_t v = 0; v < s.num_rows(); ++v)
    sh.max_degree = std::max(sh.max_degree, s.indptr.data()[v + 1] - s.indptr.data()[v]);
  return sh;
}

/// Part k of the partition, in memory. `mark` (n entries, all -1) is scratch, restored.
Part build_part(const kernels::Resources& res, const Shared& sh, std::int32_t k,
                std::vector<NodeId>& mark) {
  const Relabelling& rl = sh.rl;
  const PartitionBook& book = rl.book;
  const std::int32_t p = book.num_parts();
  const std::int64_t base = book.begin(k), owned = book.size(k);
  const std::int64_t* rows = sh.s.indptr.data();
  const NodeId* cols = sh.s.indices.data();
  const NodeId* new_to_old = rl.new_to_old.data() + base;
  auto is_owned = [&](NodeId g) { return g >= base && g < base + owned; };

  // Halo: the distinct remote partition ids the owned rows of S reference, ascending.
  std::vector<NodeId> halo;
  std::int64_t num_edges = 0;
  for (std::int64_t i = 0; i < owned; ++i) {
    const NodeId u = new_to_old[i];
    num_edges += rows[u + 1] - rows[u];
    for (std::int64_t e = rows[u]; e < rows[u + 1]; ++e) {
      const NodeId g = rl.old_to_new[static_cast<std::size_t>(cols[e])];
      if (!is_owned(g) && mark[static_cast<std::size_t>(g)] < 0) {
        mark[static_cast<std::size_t>(g)] = 0;
        halo.push_back(g);
      }
    }
  }
  std::sort(halo.begin(), halo.end());
  for (std::size_t h = 0; h < halo.size(); ++h)
    mark[static_cast<std::size_t>(halo[h])] = static_cast<NodeId>(owned + std::int64_t(h));
  auto local_of = [&](NodeId g) {
    return is_owned(g) ? static_cast<NodeId>(g - base) : mark[static_cast<std::size_t>(g)];
  };

  // Rows of S in S's order (ascending original id), columns as local ids; and the send lists:
  // owned node i goes to every part j != k that owns one of its neighbours (S is symmetric, so
  // exactly the parts whose halo holds i).
  std::vector<std::int64_t> indptr(static_cast<std::size_t>(owned) + 1, 0);
  std::vector<NodeId> indices(static_cast<std::size_t>(num_edges));
  std::vector<std::vector<NodeId>> send(static_cast<std::size_t>(p));
  std::vector<std::int64_t> last(static_cast<std::size_t>(p), -1);
  for (std::int64_t i = 0; i < owned; ++i) {
    const NodeId u = new_to_old[i];
    std::int64_t out = indptr[static_cast<std::size_t>(i)];
    for (std::int64_t e = rows[u]; e < rows[u + 1]; ++e) {
      const NodeId g = rl.old_to_new[static_cast<std::size_t>(cols[e])];
      indices[static_cast<std::size_t>(out++)] = local_of(g);
      const auto j = static_cast<std::size_t>(book.owner(g));
      if (static_cast<std::int32_t>(j) != k && last[j] != i) {
        last[j] = i;
        send[j].push_back(static_cast<NodeId>(i));
      }
    }
    indptr[static_cast<std::size_t>(i) + 1] = out;
  }
  for (const NodeId g : halo) mark[static_cast<std::size_t>(g)] = -1;

  const std::int64_t num_local = owned + static_cast<std::int64_t>(halo.size());
  std::vector<NodeId> original(static_cast<std::size_t>(num_local));
  std::vector<std::int64_t> degrees(static_cast<std::size_t>(num_local));
  for (std::int64_t j = 0; j < num_local; ++j) {
    const NodeId g =
        j < owned ? static_cast<NodeId>(base + j) : halo[static_cast<std::size_t>(j - owned)];
    const NodeId u = rl.new_to_old[static_cast<std::size_t>(g)];
    original[static_cast<std::size_t>(j)] = u;
    degrees[static_cast<std::size_t>(j)] = rows[u + 1] - rows[u];
  }

  Part part;
  part.num_classes = sh.ds.num_classes;
  part.graph = {host_tensor(res, indptr), host_tensor(res, indices), {}, num_local, false};
  part.degrees = host_tensor(res, degrees);
  part.send_offsets.assign(static_cast<std::size_t>(p) + 1, 0);
  std::vector<NodeId> send_rows;
  for (std::int32_t j = 0; j < p; ++j) {
    send_rows.insert(send_rows.end(), send[static_cast<std::size_t>(j)].begin(),
                     send[static_cast<std::size_t>(j)].end());
    part.send_offsets[static_cast<std::size_t>(j) + 1] =
        static_cast<std::int64_t>(send_rows.size());
  }
  part.send_rows = host_tensor(res, send_rows);
  part.recv_offsets.assign(static_cast<std::size_t>(p) + 1, 0);
  for (std::int32_t j = 0; j <= p; ++j) {
    const std::int64_t first = j < p ? book.begin(j) : book.num_nodes();
    part.recv_offsets[static_cast<std::size_t>(j)] =
        std::lower_bound(halo.begin(), halo.end(), first) - halo.begin();
  }
  part.ids = IdMap(book, k, host_tensor(res, original), host_tensor(res, halo));

  // Features (unless the parts reference the store's), labels and splits of the owned nodes.
  std::visit(
      [&](const auto& x) {
        using X = std::decay_t<decltype(x)>;
        if (sh.features_from != nullptr) return;
        if constexpr (std::is_same_v<X, kernels::Tensor<float>>) {
          const std::int64_t f = x.cols();
          kernels::Tensor<float> dense(res, kernels::Device::Cpu, owned, f);
          for (std::int64_t i = 0; i < owned; ++i)
            std::copy_n(x.data() + static_cast<std::int64_t>(new_to_old[i]) * f, f,
                        dense.data() + i * f);
          part.features = std::move(dense);
        } else {
          const std::int64_t* fp = x.indptr.data();
          std::vector<std::int64_t> fptr(static_cast<std::size_t>(owned) + 1, 0);
          for (std::int64_t i = 0; i < owned; ++i)
            fptr[static_cast<std::size_t>(i) + 1] =
                fptr[static_cast<std::size_t>(i)] + fp[new_to_old[i] + 1] - fp[new_to_old[i]];
          std::vector<std::int32_t> fidx(static_cast<std::size_t>(fptr.back()));
          std::vector<float> fval(x.values.empty() ? 0 : fidx.size());
          for (std::int64_t i = 0; i < owned; ++i) {
            const std::int64_t from = fp[new_to_old[i]], count = fp[new_to_old[i] + 1] - from;
            std::copy_n(x.indices.data() + from, count, fidx.data() + fptr[i]);
            if (!fval.empty()) std::copy_n(x.values.data() + from, count, fval.data() + fptr[i]);
          }
          part.features = kernels::CsrMatrix<std::int32_t, float>{
              host_tensor(res, fptr), host_tensor(res, fidx), host_tensor(res, fval), x.num_cols,
              false};
        }
      },
      sh.ds.features);
  std::vector<std::int32_t> labels(static_cast<std::size_t>(owned));
  std::vector<NodeId> split[3];
  for (std::int64_t i = 0; i < owned; ++i) {
    labels[static_cast<std::size_t>(i)] = sh.ds.labels.data()[new_to_old[i]];
    const std::uint8_t s = sh.split_of[static_cast<std::size_t>(new_to_old[i])];
    if (s > 0) split[s - 1].push_back(static_cast<NodeId>(i));
  }
  part.labels = host_tensor(res, labels);
  part.train_idx = host_tensor(res, split[0]);
  part.val_idx = host_tensor(res, split[1]);
  part.test_idx = host_tensor(res, split[2]);
  part.all_train = host_tensor(res, sh.all_train);
  part.all_train_original = host_tensor(res, sh.all_train_original);
  part.training_edges = sh.s.num_edges();
  part.max_degree = sh.max_degree;
  return part;
}

/// Writes `part` (part k of p) to `file` in file order; returns what meta.json records.
PartInfo write_part_file(const Part& part, std::int32_t k, std::int32_t p, const fs::path& file,
                         bool with_features) {
  PartInfo info;
  info.num_owned = part.num_owned();
  info.num_halo = part.num_halo();
  info.num_edges = part.graph.num_edges();
  info.num_halo_entries = part.num_halo_entries();
  info.num_train = part.train_idx.numel();
  PartFileWriter out(file, k, p, info);
  const kernels::Span<const NodeId> original = part.ids.original_ids(), halo = part.ids.halo_ids();
  out.add("original_ids", original.data, original.size, 1);
  out.add("halo_ids", halo.data, halo.size, 1);
  out.add("indptr", part.graph.indptr);
  out.add("indices", part.graph.indices);
  out.add("degrees", part.degrees);
  out.add("send_offsets", part.send_offsets);
  out.add("send_rows", part.send_rows);
  out.add("recv_offsets", part.recv_offsets);
  std::visit(
      [&](const auto& x) {
        using X = std::decay_t<decltype(x)>;
        if (!with_features) return;
        if constexpr (std::is_same_v<X, kernels::Tensor<float>>) {
          out.add("features", x);
        } else {
          out.add("features_indptr", x.indptr);
          out.add("features_indices", x.indices);
          if (!x.values.empty()) out.add("features_values", x.values);
        }
      },
      part.features);
  out.add("labels", part.labels);
  out.add("train_idx", part.train_idx);
  out.add("val_idx", part.val_idx);
  out.add("test_idx", part.test_idx);
  out.add("all_train", part.all_train);
  out.add("all_train_original", part.all_train_original);
  out.finish();
  return info;
}

// ---- meta.json ------------------------------------------------------------------------------

json balance_json(const PartitionMetrics& m) {
  return {{"nodes", m.nodes.balance}, {"train", m.train.balance}, {"edges", m.edges.balance}};
}

std::string hex32(std::uint32_t v) {
  char buf[9];
  std::snprintf(buf, sizeof buf, "%08x", v);
  return buf;
}

json meta_json(const datasets::Dataset& ds, const PartitionResult& r, const Shared& sh,
               const std::vector<PartInfo>& parts) {
  const PartitionConfig& c = r.config;
  const PartitionMetrics& m = r.metrics;
  json j;
  j["format"] = kFormatName;
  j["format_version"] = kPartitionFormatVersion;
  j["dataset"] = {
      {"name", ds.name},
      {"num_nodes", ds.num_nodes()},
      {"num_edges", ds.graph.num_edges()},
      {"training_edges", sh.s.num_edges()},
      {"max_degree", sh.max_degree},
      {"degree_histogram", datasets::degree_histogram(sh.s.indptr.data(), sh.s.num_rows())},
      {"num_features", sh.features_from != nullptr ? sh.features_from->cols : ds.num_features()},
      {"num_classes", ds.num_classes},
      {"num_train", ds.train_idx.numel()},
      {"features",
       sh.features_from != nullptr || std::holds_alternative<kernels::Tensor<float>>(ds.features)
           ? "dense"
           : "sparse"},
      {"weighted", !ds.graph.values.empty()}};
  if (const datasets::StoredFeatures* f = sh.features_from)
    j["feature_store"] = {{"path", f->store.string()},
                          {"dtype", datasets::feature_dtype_name(f->dtype)},
                          {"shape", {f->rows, f->cols}},
                          {"crc32", hex32(f->crc32)}};
  j["num_parts"] = c.num_parts;
  j["method"] = std::string(to_string(c.method));
  j["objective"] = std::string(to_string(c.objective));
  j["balance"] = to_string(c.balance);
  j["imbalance"] = c.imbalance;
  j["seed"] = c.seed;
  j["offsets"] = r.relabelling.book.offsets();
  j["metrics"] = {{"edge_cut", m.edge_cut},
                  {"comm_volume", m.comm_volume},
                  {"max_halo", m.max_halo},
                  {"replication_factor", m.replication_factor},
                  {"balance", balance_json(m)}};
  j["timings"] = {
      {"symmetrize_s", r.timings.symmetrize_s}, {"metis_s", r.timings.metis_s},
      {"assign_s", r.timings.assign_s},         {"relabel_s", r.timings.relabel_s},
      {"metrics_s", r.timings.metrics_s},       {"partition_total_s", r.timings.total_s}};
  json jp = json::array();
  for (const PartInfo& p : parts) {
    json arrays = json::array();
    for (const ArrayEntry& a : p.arrays)
      arrays.push_back({{"name", a.name},
                        {"dtype", a.dtype},
                        {"shape", {a.rows, a.cols}},
                        {"offset", a.offset},
                        {"fnv1a64", hex(a.fnv1a64)}});
    json part = {{"num_owned", p.num_owned},   {"num_halo", p.num_halo},
                 {"num_edges", p.num_edges},   {"num_train", p.num_train},
                 {"file_bytes", p.file_bytes}, {"arrays", arrays}};
    if (p.num_halo_entries >= 0) part["num_halo_entries"] = p.num_halo_entries;
    jp.push_back(std::move(part));
  }
  j["parts"] = jp;
  return j;
}

/// Reads key `key` of object `j` as T, or throws IoError naming the file and the key.
template <class T>
T get(const json& j, const char* key, const fs::path& file) {
  if (!j.is_object() || !j.contains(key))
    throw IoError(file.string() + ": missing key '" + key + "'");
  try {
    return j.at(key).get<T>();
  } catch (const json::exception&) {
    throw IoError(file.string() + ": key '" + std::string(key) +
                  "' has the wrong type: " + j.at(key).dump());
  }
}

fs::path part_file(const fs::path& dir, std::int32_t k) {
  return dir / ("part-" + std::to_string(k) + ".bin");
}

std::int64_t dtype_size(const std::string& dtype) {
  if (dtype == "int32" || dtype == "float32") return 4;
  if (dtype == "int64") return 8;
  return 0;
}

/// An array read from a part file, in the dtype meta.json gives.
using AnyTensor = std::variant<kernels::Tensor<std::int32_t>, kernels::Tensor<std::int64_t>,
                               kernels::Tensor<float>>;

/// Reads part file `k` of `dir` sequentially and checks it against `info`: its size, its header
/// (magic, format version, part k of `num_parts`, number of arrays), zero padding, and every
/// array's FNV-1a checksum. With `res`, returns the arrays as host tensors; without, only checks
/// (reading in chunks).
std::map<std::string, AnyTensor> read_part_file(const kernels::Resources* res, const fs::path& dir,
                                                std::int32_t k, std::int32_t num_parts,
                                                const PartInfo& info) {
  const fs::path path = part_file(dir, k);
  std::error_code ec;
  const auto size = fs::file_size(path, ec);
  if (ec) throw IoError(path.string() + ": cannot read: " + ec.message());
  if (static_cast<std::int64_t>(size) != info.file_bytes)
    throw IoError(path.string() + ": holds " + std::to_string(size) + " bytes, meta.json gives " +
                  std::to_string(info.file_bytes) + " (truncated, or from another partition)");
  File f(std::fopen(path.c_str(), "rb"));
  if (!f) throw IoError(path.string() + ": cannot open");
  std::vector<unsigned char> buf(std::size_t{1} << 20);
  auto read = [&](void* to, std::size_t bytes) {
    if (bytes > 0 && std::fread(to, 1, bytes, f.get()) != bytes)
      throw IoError(path.string() + ": read failed");
  };
  PartHeader h{};
  read(&h, sizeof h);
  if (!std::equal(kPartMagic, kPartMagic + 8, h.magic))
    throw IoError(path.string() + ": not a Halo part file (bad magic)");
  if (h.format_version != static_cast<std::uint32_t>(kPartitionFormatVersion))
    throw IoError(path.string() + ": format version " + std::to_string(h.format_version) +
                  " is not supported (this build reads version " +
                  std::to_string(kPartitionFormatVersion) + ")");
  if (h.part != k || h.num_parts != num_parts || h.file_bytes != size ||
      h.num_arrays != info.arrays.size())
    throw IoError(path.string() + ": header describes part " + std::to_string(h.part) + " of " +
                  std::to_string(h.num_parts) + " with " + std::to_string(h.num_arrays) +
                  " arrays in " + std::to_string(h.file_bytes) + " bytes, meta.json gives part " +
                  std::to_string(k) + " of " + std::to_string(num_parts) + " with " +
                  std::to_string(info.arrays.size()) + " arrays in " + std::to_string(size) +
                  " bytes (a file from another partition?)");
  std::int64_t pos = kPartFileHeaderBytes;
  auto skip_padding = [&](std::int64_t to) {
    const auto bytes = static_cast<std::size_t>(to - pos);
    read(buf.data(), bytes);
    if (std::any_of(buf.begin(), buf.begin() + static_cast<std::ptrdiff_t>(bytes),
                    [](unsigned char c) { return c != 0; }))
      throw IoError(path.string() + ": non-zero padding in bytes [" + std::to_string(pos) + ", " +
                    std::to_string(to) + ") (the file is corrupted)");
    pos = to;
  };
  std::map<std::string, AnyTensor> arrays;
  // meta.json lists the arrays in file order (read_partition_meta checked it), so zero-length
  // arrays, which share the next array's offset, need no tie-break.
  for (const ArrayEntry& e : info.arrays) {
    skip_padding(e.offset);  // read_partition_meta checked offset - pos in [0, 8)
    const auto bytes = static_cast<std::size_t>(e.bytes());
    std::uint64_t hash = fnv1a64(nullptr, 0);
    if (res != nullptr) {
      AnyTensor t;
      if (e.dtype == "int32")
        t = kernels::Tensor<std::int32_t>(*res, kernels::Device::Cpu, e.rows, e.cols);
      else if (e.dtype == "int64")
        t = kernels::Tensor<std::int64_t>(*res, kernels::Device::Cpu, e.rows, e.cols);
      else
        t = kernels::Tensor<float>(*res, kernels::Device::Cpu, e.rows, e.cols);
      void* data = std::visit([](auto& x) -> void* { return x.data(); }, t);
      read(data, bytes);
      hash = fnv1a64(data, bytes);
      arrays.emplace(e.name, std::move(t));
    } else {
      for (std::size_t done = 0; done < bytes;) {
        const std::size_t chunk = std::min(buf.size(), bytes - done);
        read(buf.data(), chunk);
        hash = fnv1a64(buf.data(), chunk, hash);
        done += chunk;
      }
    }
    if (hash != e.fnv1a64)
      throw IoError(path.string() + ": array '" + e.name + "' (bytes " + std::to_string(e.offset) +
                    ".." + std::to_string(e.offset + e.bytes()) + "): checksum mismatch: FNV-1a " +
                    hex(hash) + ", meta.json gives " + hex(e.fnv1a64) +
                    " (the file is corrupted or from another partition)");
    pos += e.bytes();
  }
  skip_padding(info.file_bytes);
  return arrays;
}

/// Takes array `name` out of `arrays`, which must hold it with dtype T.
template <class T>
kernels::Tensor<T> take(std::map<std::string, AnyTensor>& arrays, const fs::path& file,
                        const std::string& name) {
  const auto it = arrays.find(name);
  if (it == arrays.end())
    throw IoError(file.string() + ": no array '" + name + "' (meta.json does not list it)");
  auto* t = std::get_if<kernels::Tensor<T>>(&it->second);
  if (t == nullptr)
    throw IoError(file.string() + ": array '" + name +
                  "': meta.json gives the wrong dtype, expected " + dtype_name<T>());
  return std::move(*t);
}

void expect_data(bool ok, const fs::path& file, const std::string& array, const std::string& what) {
  if (!ok) throw IoError(file.string() + ": array '" + array + "': " + what);
}

/// Checks a CSR read from disk: indptr from 0, non-decreasing, ending at nnz; indices in range.
template <class Idx>
void check_csr(const kernels::Tensor<std::int64_t>& indptr, const kernels::Tensor<Idx>& indices,
               std::int64_t num_rows, std::int64_t num_cols, const fs::path& file,
               const std::string& array) {
  expect_data(indptr.numel() == num_rows + 1, file, array,
              "expected " + std::to_string(num_rows + 1) + " row offsets, got " +
                  std::to_string(indptr.numel()));
  const std::int64_t* p = indptr.data();
  expect_data(p[0] == 0 && p[num_rows] == indices.numel(), file, array,
              "row offsets must run from 0 to the number of entries");
  // (The messages are built only for a failing entry: these loops run over every entry.)
  for (std::int64_t r = 0; r < num_rows; ++r)
    if (p[r] > p[r + 1])
      expect_data(false, file, array, "row offsets decrease at row " + std::to_string(r));
  for (std::int64_t e = 0; e < indices.numel(); ++e)
    if (indices.data()[e] < 0 || indices.data()[e] >= num_cols)
      expect_data(false, file, array,
                  "column " + std::to_string(indices.data()[e]) + " of entry " + std::to_string(e) +
                      " is outside [0, " + std::to_string(num_cols) + ")");
}

/// Checks P + 1 offsets running from 0 to `total`, non-decreasing.
void check_offsets(const std::vector<std::int64_t>& o, std::int32_t p, std::int64_t total,
                   const fs::path& file, const std::string& array) {
  expect_data(static_cast<std::int64_t>(o.size()) == p + 1 && o.front() == 0 && o.back() == total &&
                  std::is_sorted(o.begin(), o.end()),
              file, array,
              "expected " + std::to_string(p + 1) + " non-decreasing offsets from 0 to " +
                  std::to_string(total));
}

/// Checks that every id of `t` lies in [lo, hi) and, when `ascending`, strictly increases.
void check_ids(const kernels::Tensor<NodeId>& t, std::int64_t lo, std::int64_t hi, bool ascending,
               const fs::path& file, const std::string& array) {
  for (std::int64_t i = 0; i < t.numel(); ++i) {
    const NodeId v = t.data()[i];
    if (v < lo || v >= hi)
      expect_data(false, file, array,
                  "entry " + std::to_string(i) + " (" + std::to_string(v) + ") is outside [" +
                      std::to_string(lo) + ", " + std::to_string(hi) + ")");
    if (ascending && i > 0 && t.data()[i - 1] >= v)
      expect_data(false, file, array,
                  "entries must be strictly ascending (entry " + std::to_string(i) + ")");
  }
}

/// The "hetero" object of meta.json (defined with the heterogeneous partitions below).
HeteroMeta parse_hetero_meta(const json& h, const PartitionMeta& m, const fs::path& file);

std::vector<std::int64_t> to_vector(const kernels::Tensor<std::int64_t>& t) {
  return {t.data(), t.data() + t.numel()};
}

}  // namespace

std::int64_t Part::num_halo_entries() const {
  const std::int64_t owned = num_owned();
  const kernels::Span<const NodeId> ix = graph.indices.span();
  return static_cast<std::int64_t>(
      std::count_if(ix.data, ix.data + ix.size, [owned](NodeId c) { return c >= owned; }));
}

std::int64_t ArrayEntry::bytes() const { return rows * cols * dtype_size(dtype); }

const ArrayEntry* PartInfo::find(const std::string& name) const {
  for (const ArrayEntry& a : arrays)
    if (a.name == name) return &a;
  return nullptr;
}

std::uint64_t fnv1a64(const void* data, std::size_t bytes, std::uint64_t hash) {
  const auto* p = static_cast<const unsigned char*>(data);
  for (std::size_t i = 0; i < bytes; ++i) {
    hash ^= p[i];
    hash *= 0x100000001b3ull;
  }
  return hash;
}

namespace {

/// Whether `g` is already a training graph S: flagged symmetric, unweighted, every row strictly
/// ascending and without its own id. One pass over the indices, a mapped graph's pages dropped
/// from the process as it goes.
bool is_training_graph(const datasets::Graph& g) {
  if (!g.symmetric || !g.values.empty() || g.num_cols != g.num_rows()) return false;
  const datasets::MappedPageTrimmer trim(datasets::mapped_ranges(g), std::chrono::milliseconds(50));
  const std::int64_t* indptr = g.indptr.data();
  const NodeId* indices = g.indices.data();
  for (std::int64_t v = 0; v < g.num_rows(); ++v)
    for (std::int64_t e = indptr[v]; e < indptr[v + 1]; ++e)
      if (indices[e] == v || (e > indptr[v] && indices[e] <= indices[e - 1])) return false;
  return true;
}

}  // namespace

Part make_local_part(const kernels::Resources& res, datasets::Dataset&& ds) {
  const std::int64_t n = ds.num_nodes();
  // A graph that is S already (a store's) is taken as it is: a mapped one stays a mapping.
  datasets::Graph s =
      is_training_graph(ds.graph) ? std::move(ds.graph) : partitioning_graph(res, ds.graph);
  std::int64_t max_degree = 0;
  for (std::int64_t v = 0; v < n; ++v)
    max_degree = std::max(max_degree, s.indptr.data()[v + 1] - s.indptr.data()[v]);
  std::vector<NodeId> iota(static_cast<std::size_t>(n));
  std::iota(iota.begin(), iota.end(), NodeId{0});
  std::vector<std::int64_t> degrees(static_cast<std::size_t>(n));
  for (std::int64_t v = 0; v < n; ++v)
    degrees[static_cast<std::size_t>(v)] = s.indptr.data()[v + 1] - s.indptr.data()[v];
  // One part: the identity relabelling, so S itself (rows ascending by id) is the part's graph
  // and the dataset's arrays are the part's arrays.
  Part part;
  part.ids = IdMap(PartitionBook({0, n}), 0, host_tensor(res, iota), host_tensor<NodeId>(res, {}));
  part.num_classes = ds.num_classes;
  part.training_edges = s.num_edges();
  part.max_degree = max_degree;
  part.graph = std::move(s);
  part.graph.symmetric = false;  // a part's graph is num_owned x num_local in general
  part.degrees = host_tensor(res, degrees);
  part.send_offsets = {0, 0};
  part.send_rows = host_tensor<NodeId>(res, {});
  part.recv_offsets = {0, 0};
  part.features = std::move(ds.features);
  part.labels = std::move(ds.labels);
  part.all_train = ds.train_idx.clone(res);
  part.all_train_original = ds.train_idx.clone(res);
  part.train_idx = std::move(ds.train_idx);
  part.val_idx = std::move(ds.val_idx);
  part.test_idx = std::move(ds.test_idx);
  return part;
}

bool HeteroPartLayout::identity() const {
  if (num_parts != 1) return false;
  for (std::size_t t = 0; t < original.size(); ++t) {
    if (original[t].numel() != global_nodes[t]) return false;
    const NodeId* ids = original[t].data();
    for (std::int64_t v = 0; v < global_nodes[t]; ++v)
      if (ids[v] != v) return false;
  }
  return true;
}

HeteroPartLayout make_local_hetero_layout(const kernels::Resources& res,
                                          const datasets::HeteroGraph& g) {
  HeteroPartLayout l;
  for (const datasets::NodeType& t : g.node_types) {
    std::vector<NodeId> iota(static_cast<std::size_t>(t.num_nodes));
    std::iota(iota.begin(), iota.end(), NodeId{0});
    l.num_owned.push_back(t.num_nodes);
    l.original.push_back(host_tensor(res, iota));
    l.send_offsets.push_back({0, 0});
    l.recv_offsets.push_back({0, 0});
    l.send_rows.push_back(host_tensor<NodeId>(res, {}));
    l.global_nodes.push_back(t.num_nodes);
  }
  l.num_train = g.train_idx.numel();
  return l;
}

void write_partitions(const kernels::Resources& res, const datasets::Dataset& ds,
                      const PartitionResult& r, const fs::path& dir, const Progress& progress,
                      const datasets::StoredFeatures* features_from) {
  const std::int64_t n = ds.num_nodes();
  HALO_EXPECTS(static_cast<std::int64_t>(r.relabelling.new_to_old.size()) == n &&
                   r.relabelling.book.num_nodes() == n &&
                   r.relabelling.book.num_parts() == r.config.num_parts &&
                   r.symmetric.num_rows() == n,
               "write_partitions: the partition does not belong to this dataset");
  HALO_EXPECTS(features_from == nullptr || features_from->rows == n,
               "write_partitions: the stored features do not belong to this dataset");
  const Shared sh = make_shared(ds, r.symmetric, r.relabelling, features_from);
  datasets::write_staged_directory(dir, [&](const fs::path& tmp) {
    // Parts are independent: res's threads build and write them concurrently, each with its
    // own scratch array. Progress comes from one thread; the first error is rethrown.
    const std::int32_t p = r.config.num_parts;
    std::vector<PartInfo> parts(static_cast<std::size_t>(p));
    std::exception_ptr error;
    // Small graphs (Cora: ~1 ms of work) are written by one thread: waking a team costs more
    // than it saves, and far more when the machine is oversubscribed.
    const bool small = n + ds.graph.num_edges() < (std::int64_t{1} << 20);
    const int threads = small ? 1 : std::max(1, std::min<int>(res.cpu_exec().num_threads, p));
    int done = 0;
#pragma omp parallel num_threads(threads)
    {
      std::vector<NodeId> mark(static_cast<std::size_t>(n), -1);
#pragma omp for schedule(dynamic, 1)
      for (std::int32_t k = 0; k < p; ++k) {
        try {
          const Part part = build_part(res, sh, k, mark);
          parts[static_cast<std::size_t>(k)] =
              write_part_file(part, k, p, part_file(tmp, k), features_from == nullptr);
        } catch (...) {
#pragma omp critical(halo_partition_error)
          if (!error) error = std::current_exception();
        }
#pragma omp critical(halo_partition_progress)
        {
          ++done;
          if (progress && (p <= 32 || done % (p / 16) == 0 || done == p))
            progress("wrote part " + std::to_string(done) + "/" + std::to_string(p));
        }
      }
    }
    if (error) std::rethrow_exception(error);
    {
      const fs::path meta = tmp / "meta.json";
      std::ofstream out(meta);
      if (!out || !(out << meta_json(ds, r, sh, parts).dump(1) << '\n') || !out.flush())
        throw IoError(meta.string() + ": cannot write");
    }
  });
}

PartitionMeta read_partition_meta(const fs::path& dir) {
  const fs::path file = dir / "meta.json";
  std::ifstream in(file, std::ios::binary);
  if (!in) throw IoError(file.string() + ": missing (not a partition directory?)");
  const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  json j;
  try {
    j = json::parse(text);
  } catch (const json::exception& e) {
    throw IoError(file.string() + ": not valid JSON: " + e.what());
  }
  if (!j.is_object() || !j.contains("format") || j["format"] != kFormatName)
    throw IoError(file.string() + ": not a Halo partition (\"format\" must be \"" + kFormatName +
                  "\")");
  PartitionMeta m;
  m.checksum = fnv1a64(text.data(), text.size());
  m.format_version = get<std::int32_t>(j, "format_version", file);
  if (m.format_version != kPartitionFormatVersion)
    throw IoError(file.string() + ": format_version " + std::to_string(m.format_version) +
                  " is not supported (this build reads version " +
                  std::to_string(kPartitionFormatVersion) +
                  "; partition the dataset again with this build's `halo partition`)");
  const json d = get<json>(j, "dataset", file);
  m.dataset = get<std::string>(d, "name", file);
  m.num_nodes = get<std::int64_t>(d, "num_nodes", file);
  m.num_edges = get<std::int64_t>(d, "num_edges", file);
  m.training_edges = get<std::int64_t>(d, "training_edges", file);
  m.max_degree = get<std::int64_t>(d, "max_degree", file);
  if (d.contains("degree_histogram")) {
    m.degree_histogram = get<datasets::DegreeHistogram>(d, "degree_histogram", file);
    if (!datasets::degree_histogram_covers(m.degree_histogram, m.num_nodes, m.training_edges))
      throw IoError(file.string() +
                    ": dataset.degree_histogram must cover num_nodes rows and training_edges "
                    "entries with counts >= 0");
  }
  m.num_features = get<std::int64_t>(d, "num_features", file);
  m.num_classes = get<std::int32_t>(d, "num_classes", file);
  m.num_train = get<std::int64_t>(d, "num_train", file);
  m.sparse_features = get<std::string>(d, "features", file) == "sparse";
  m.weighted = get<bool>(d, "weighted", file);
  if (j.contains("feature_store")) {
    const json f = get<json>(j, "feature_store", file);
    datasets::StoredFeatures s;
    s.store = get<std::string>(f, "path", file);
    const auto dtype = datasets::parse_feature_dtype(get<std::string>(f, "dtype", file));
    const auto shape = get<std::vector<std::int64_t>>(f, "shape", file);
    const std::string crc = get<std::string>(f, "crc32", file);
    if (!dtype || shape.size() != 2 || shape[0] != m.num_nodes || shape[1] != m.num_features ||
        m.sparse_features || crc.size() != 8 ||
        crc.find_first_not_of("0123456789abcdef") != std::string::npos)
      throw IoError(file.string() +
                    ": malformed \"feature_store\" (a dtype f32, f16 or bf16, the shape num_nodes "
                    "x num_features of dense features, an 8-digit hex crc32)");
    s.dtype = *dtype;
    s.rows = shape[0];
    s.cols = shape[1];
    s.crc32 = static_cast<std::uint32_t>(std::stoul(crc, nullptr, 16));
    m.feature_store = std::move(s);
  }
  try {
    m.config.num_parts = get<std::int32_t>(j, "num_parts", file);
    m.config.method = parse_method(get<std::string>(j, "method", file));
    m.config.objective = parse_objective(get<std::string>(j, "objective", file));
    m.config.balance = parse_balance(get<std::string>(j, "balance", file));
    m.config.imbalance = get<double>(j, "imbalance", file);
    m.config.seed = get<std::uint64_t>(j, "seed", file);
    m.book = PartitionBook(get<std::vector<std::int64_t>>(j, "offsets", file));
  } catch (const LogicError& e) {
    throw IoError(file.string() + ": " + e.what());
  }
  if (m.book.num_parts() != m.config.num_parts || m.book.num_nodes() != m.num_nodes)
    throw IoError(file.string() + ": offsets describe " + std::to_string(m.book.num_parts()) +
                  " parts and " + std::to_string(m.book.num_nodes()) + " nodes, expected " +
                  std::to_string(m.config.num_parts) + " and " + std::to_string(m.num_nodes));
  const json mj = get<json>(j, "metrics", file);
  m.metrics.edge_cut = get<std::int64_t>(mj, "edge_cut", file);
  m.metrics.comm_volume = get<std::int64_t>(mj, "comm_volume", file);
  m.metrics.max_halo = get<std::int64_t>(mj, "max_halo", file);
  m.metrics.replication_factor = get<double>(mj, "replication_factor", file);
  const json bj = get<json>(mj, "balance", file);
  m.metrics.nodes.balance = get<double>(bj, "nodes", file);
  m.metrics.train.balance = get<double>(bj, "train", file);
  m.metrics.edges.balance = get<double>(bj, "edges", file);
  if (j.contains("timings") && j["timings"].is_object()) {
    const json& t = j.at("timings");
    m.timings.symmetrize_s = t.value("symmetrize_s", 0.0);
    m.timings.metis_s = t.value("metis_s", 0.0);
    m.timings.assign_s = t.value("assign_s", 0.0);
    m.timings.relabel_s = t.value("relabel_s", 0.0);
    m.timings.metrics_s = t.value("metrics_s", 0.0);
    m.timings.total_s = t.value("partition_total_s", 0.0);
  }
  if (j.value("heterogeneous", false))
    m.hetero = parse_hetero_meta(get<json>(j, "hetero", file), m, file);
  const auto parts = get<json>(j, "parts", file);
  if (!parts.is_array() || static_cast<std::int64_t>(parts.size()) != m.config.num_parts)
    throw IoError(file.string() + ": \"parts\" must list " + std::to_string(m.config.num_parts) +
                  " parts");
  for (std::int32_t k = 0; k < m.config.num_parts; ++k) {
    const json& pj = parts[static_cast<std::size_t>(k)];
    PartInfo info;
    info.num_owned = get<std::int64_t>(pj, "num_owned", file);
    info.num_halo = get<std::int64_t>(pj, "num_halo", file);
    info.num_edges = get<std::int64_t>(pj, "num_edges", file);
    if (pj.contains("num_halo_entries")) {
      info.num_halo_entries = get<std::int64_t>(pj, "num_halo_entries", file);
      if (info.num_halo_entries < 0 || info.num_halo_entries > info.num_edges)
        throw IoError(file.string() + ": part " + std::to_string(k) +
                      ": num_halo_entries must be in [0, num_edges]");
    }
    info.num_train = get<std::int64_t>(pj, "num_train", file);
    if (info.num_owned != m.book.size(k))
      throw IoError(file.string() + ": part " + std::to_string(k) + " owns " +
                    std::to_string(info.num_owned) + " nodes, the offsets give " +
                    std::to_string(m.book.size(k)));
    m.metrics.nodes.per_part.push_back(info.num_owned);
    m.metrics.train.per_part.push_back(info.num_train);
    m.metrics.edges.per_part.push_back(info.num_edges);
    m.metrics.halo.push_back(info.num_halo);
    const std::string pname = "part-" + std::to_string(k) + ".bin";
    info.file_bytes = get<std::int64_t>(pj, "file_bytes", file);
    const json arrays = get<json>(pj, "arrays", file);
    if (!arrays.is_array())
      throw IoError(file.string() + ": \"arrays\" of part " + std::to_string(k) +
                    " must be a list");
    // The arrays, in file order: each at the first multiple of 8 after the previous one (or
    // the header); the file ends at the first multiple of 8 after the last.
    std::int64_t end = kPartFileHeaderBytes;
    for (const json& aj : arrays) {
      ArrayEntry e;
      e.name = get<std::string>(aj, "name", file);
      e.dtype = get<std::string>(aj, "dtype", file);
      const auto shape = get<std::vector<std::int64_t>>(aj, "shape", file);
      e.offset = get<std::int64_t>(aj, "offset", file);
      const std::string sum = get<std::string>(aj, "fnv1a64", file);
      if (shape.size() != 2 || shape[0] < 0 || shape[1] < 0 || dtype_size(e.dtype) == 0 ||
          sum.size() != 16 || sum.find_first_not_of("0123456789abcdef") != std::string::npos ||
          info.find(e.name) != nullptr)
        throw IoError(file.string() + ": malformed entry for array '" + e.name + "' of " + pname);
      e.rows = shape[0];
      e.cols = shape[1];
      e.fnv1a64 = std::stoull(sum, nullptr, 16);
      if (e.offset != (end + 7) / 8 * 8)
        throw IoError(file.string() + ": array '" + e.name + "' of " + pname + " starts at byte " +
                      std::to_string(e.offset) + ", expected " + std::to_string((end + 7) / 8 * 8));
      end = e.offset + e.bytes();
      info.arrays.push_back(std::move(e));
    }
    if (info.file_bytes != (end + 7) / 8 * 8)
      throw IoError(file.string() + ": " + pname + " has file_bytes " +
                    std::to_string(info.file_bytes) + ", its arrays end at byte " +
                    std::to_string(end));
    m.parts.push_back(std::move(info));
  }
  return m;
}

datasets::StoredFeatures checked_feature_store(const fs::path& dir, const PartitionMeta& m) {
  const datasets::StoredFeatures& want = *m.feature_store;
  const std::string where = (dir / "meta.json").string() + ": the feature store " +
                            want.store.string() + " (the parts' features)";
  datasets::StoredFeatures have;
  try {
    have = datasets::stored_features(want.store);
  } catch (const IoError& e) {
    throw IoError(where + ": " + e.what());
  }
  if (have.dtype != want.dtype || have.rows != want.rows || have.cols != want.cols ||
      have.crc32 != want.crc32)
    throw IoError(where + " has changed since the partition was written: " +
                  datasets::feature_dtype_name(have.dtype) + " " + std::to_string(have.rows) +
                  " x " + std::to_string(have.cols) + " crc32 " + hex32(have.crc32) +
                  ", meta.json says " + datasets::feature_dtype_name(want.dtype) + " " +
                  std::to_string(want.rows) + " x " + std::to_string(want.cols) + " crc32 " +
                  hex32(want.crc32) + " (partition the store again)");
  return have;
}

Part read_part(const kernels::Resources& res, const fs::path& dir, std::int32_t k,
               const PartitionMeta* meta, const PartReadOptions& options) {
  PartitionMeta read;
  if (meta == nullptr) {
    read = read_partition_meta(dir);
    meta = &read;
  }
  const PartitionMeta& m = *meta;
  if (m.hetero)
    throw IoError((dir / "meta.json").string() +
                  ": a heterogeneous partition (train it with --model rgcn or hgt)");
  const std::int32_t p = m.config.num_parts;
  HALO_EXPECTS(k >= 0 && k < p, "read_part: part " + std::to_string(k) + " does not exist (" +
                                    std::to_string(p) + " parts in " + dir.string() + ")");
  const fs::path pdir = part_file(dir, k);
  if (!fs::is_regular_file(pdir)) throw IoError(pdir.string() + ": missing part file");
  const PartInfo& info = m.parts[static_cast<std::size_t>(k)];
  auto arrays = read_part_file(&res, dir, k, p, info);
  const std::int64_t owned = info.num_owned, halo = info.num_halo, num_local = owned + halo;
  const std::int64_t n = m.num_nodes;
  Part part;
  part.num_classes = m.num_classes;
  part.training_edges = m.training_edges;
  part.max_degree = m.max_degree;
  auto original = take<NodeId>(arrays, pdir, "original_ids");
  expect_data(original.numel() == num_local, pdir, "original_ids",
              "expected " + std::to_string(num_local) + " ids");
  check_ids(original, 0, n, false, pdir, "original_ids");
  auto halo_ids = take<NodeId>(arrays, pdir, "halo_ids");
  expect_data(halo_ids.numel() == halo, pdir, "halo_ids",
              "expected " + std::to_string(halo) + " ids");
  check_ids(halo_ids, 0, n, true, pdir, "halo_ids");
  for (std::int64_t h = 0; h < halo; ++h)
    if (m.book.owner(halo_ids.data()[h]) == k)
      expect_data(false, pdir, "halo_ids",
                  "entry " + std::to_string(h) + " is owned by the part itself");
  part.ids = IdMap(m.book, k, std::move(original), std::move(halo_ids));
  part.graph.indptr = take<std::int64_t>(arrays, pdir, "indptr");
  part.graph.indices = take<NodeId>(arrays, pdir, "indices");
  part.graph.num_cols = num_local;
  check_csr(part.graph.indptr, part.graph.indices, owned, num_local, pdir, "indptr");
  expect_data(part.graph.num_edges() == info.num_edges, pdir, "indices",
              "expected " + std::to_string(info.num_edges) + " entries");
  part.degrees = take<std::int64_t>(arrays, pdir, "degrees");
  expect_data(part.degrees.numel() == num_local, pdir, "degrees",
              "expected " + std::to_string(num_local) + " degrees");
  part.send_offsets = to_vector(take<std::int64_t>(arrays, pdir, "send_offsets"));
  part.send_rows = take<NodeId>(arrays, pdir, "send_rows");
  check_offsets(part.send_offsets, p, part.send_rows.numel(), pdir, "send_offsets");
  check_ids(part.send_rows, 0, owned, false, pdir, "send_rows");
  part.recv_offsets = to_vector(take<std::int64_t>(arrays, pdir, "recv_offsets"));
  check_offsets(part.recv_offsets, p, halo, pdir, "recv_offsets");
  if (m.feature_store) {
    const datasets::StoredFeatures f = checked_feature_store(dir, m);
    if (options.map_store_features && f.dtype == datasets::FeatureDtype::F32) {
      const auto bytes = static_cast<std::size_t>(f.rows * f.cols) * sizeof(float);
      part.features = kernels::Tensor<float>(
          kernels::Buffer::map_file((f.store / "features.bin").string(), bytes), f.rows, f.cols);
      part.features_by_original = true;
    } else {
      part.features = datasets::gather_stored_features(res, f, part.ids.original_ids().data, owned);
    }
  } else if (m.sparse_features) {
    kernels::CsrMatrix<std::int32_t, float> x;
    x.indptr = take<std::int64_t>(arrays, pdir, "features_indptr");
    x.indices = take<std::int32_t>(arrays, pdir, "features_indices");
    if (arrays.count("features_values") != 0)
      x.values = take<float>(arrays, pdir, "features_values");
    x.num_cols = m.num_features;
    check_csr(x.indptr, x.indices, owned, m.num_features, pdir, "features_indptr");
    part.features = std::move(x);
  } else {
    auto x = take<float>(arrays, pdir, "features");
    expect_data(x.rows() == owned && x.cols() == m.num_features, pdir, "features",
                "expected " + std::to_string(owned) + " x " + std::to_string(m.num_features));
    part.features = std::move(x);
  }
  part.labels = take<std::int32_t>(arrays, pdir, "labels");
  expect_data(part.labels.numel() == owned, pdir, "labels", "expected one label per node");
  // Against meta.json's class count now, not in the loss kernel of the first batch.
  for (std::int64_t v = 0; v < owned; ++v) {
    const std::int32_t label = part.labels.data()[v];
    if (label < 0 || label >= m.num_classes)
      expect_data(false, pdir, "labels",
                  "label " + std::to_string(label) + " of local node " + std::to_string(v) +
                      " is outside [0, " + std::to_string(m.num_classes) +
                      ") (meta.json's num_classes)");
  }
  for (const char* split : {"train_idx", "val_idx", "test_idx"}) {
    auto t = take<NodeId>(arrays, pdir, split);
    check_ids(t, 0, owned, true, pdir, split);
    (split[1] == 'r'   ? part.train_idx
     : split[0] == 'v' ? part.val_idx
                       : part.test_idx) = std::move(t);
  }
  expect_data(part.train_idx.numel() == info.num_train, pdir, "train_idx",
              "expected " + std::to_string(info.num_train) + " nodes");
  part.all_train = take<NodeId>(arrays, pdir, "all_train");
  check_ids(part.all_train, 0, n, true, pdir, "all_train");
  part.all_train_original = take<NodeId>(arrays, pdir, "all_train_original");
  expect_data(
      part.all_train.numel() == m.num_train && part.all_train_original.numel() == m.num_train, pdir,
      "all_train", "expected " + std::to_string(m.num_train) + " training nodes");
  check_ids(part.all_train_original, 0, n, false, pdir, "all_train_original");
  return part;
}

std::int64_t verify_partitions(const fs::path& dir) {
  const PartitionMeta m = read_partition_meta(dir);
  if (m.feature_store) checked_feature_store(dir, m);
  for (std::int32_t k = 0; k < m.config.num_parts; ++k)
    read_part_file(nullptr, dir, k, m.config.num_parts, m.parts[static_cast<std::size_t>(k)]);
  return m.config.num_parts;
}

}  // namespace halo::partition

// ---- heterogeneous partitions ----------------------------------------------------------------

namespace halo::partition {
namespace {

/// The rows `rows` of `x`, dense or sparse like it; an empty dense matrix stays empty.
kernels::FeatureMatrix<float> gather_rows(const kernels::Resources& res,
                                          const kernels::FeatureMatrix<float>& x,
                                          const std::vector<NodeId>& rows) {
  const auto n = static_cast<std::int64_t>(rows.size());
  return std::visit(
      [&](const auto& m) -> kernels::FeatureMatrix<float> {
        using X = std::decay_t<decltype(m)>;
        if constexpr (std::is_same_v<X, kernels::Tensor<float>>) {
          if (m.cols() == 0) return kernels::Tensor<float>();
          const std::int64_t f = m.cols();
          kernels::Tensor<float> out(res, kernels::Device::Cpu, n, f);
          for (std::int64_t i = 0; i < n; ++i)
            std::copy_n(m.data() + static_cast<std::int64_t>(rows[static_cast<std::size_t>(i)]) * f,
                        f, out.data() + i * f);
          return out;
        } else {
          const std::int64_t* fp = m.indptr.data();
          std::vector<std::int64_t> ptr(static_cast<std::size_t>(n) + 1, 0);
          for (std::int64_t i = 0; i < n; ++i) {
            const NodeId r = rows[static_cast<std::size_t>(i)];
            ptr[static_cast<std::size_t>(i) + 1] =
                ptr[static_cast<std::size_t>(i)] + fp[r + 1] - fp[r];
          }
          std::vector<std::int32_t> idx(static_cast<std::size_t>(ptr.back()));
          std::vector<float> val(m.values.empty() ? 0 : idx.size());
          for (std::int64_t i = 0; i < n; ++i) {
            const NodeId r = rows[static_cast<std::size_t>(i)];
            std::copy_n(m.indices.data() + fp[r], fp[r + 1] - fp[r], idx.data() + ptr[i]);
            if (!val.empty())
              std::copy_n(m.values.data() + fp[r], fp[r + 1] - fp[r], val.data() + ptr[i]);
          }
          return kernels::CsrMatrix<std::int32_t, float>{host_tensor(res, ptr),
                                                         host_tensor(res, idx),
                                                         host_tensor(res, val), m.num_cols, false};
        }
      },
      x);
}

std::string features_name(const datasets::NodeType& t) {
  if (!t.has_features()) return "none";
  return std::holds_alternative<kernels::Tensor<float>>(t.features) ? "dense" : "sparse";
}

/// The homogenised dataset the partitioner and the metrics see: the graph and the target
/// type's splits at their global ids.
datasets::Dataset homogenised(const kernels::Resources& res, const datasets::HeteroGraph& g) {
  datasets::Dataset d;
  d.name = g.name;
  d.graph = datasets::homogenize(res, g);
  d.num_classes = g.num_classes;
  const std::int64_t base = g.type_offsets()[static_cast<std::size_t>(g.target_type)];
  auto shift = [&](const kernels::Tensor<NodeId>& t) {
    std::vector<NodeId> v(t.data(), t.data() + t.numel());
    for (NodeId& x : v) x = static_cast<NodeId>(x + base);
    return host_tensor(res, v);
  };
  d.train_idx = shift(g.train_idx);
  d.val_idx = shift(g.val_idx);
  d.test_idx = shift(g.test_idx);
  return d;
}

/// Every part of a heterogeneous partition, in memory (HeteroPart), from `g` and the
/// relabelling of its homogenised ids.
std::vector<HeteroPart> build_hetero_parts(const kernels::Resources& res,
                                           const datasets::HeteroGraph& g, const Relabelling& rl) {
  const std::int32_t p = rl.book.num_parts();
  const std::int32_t nt = g.num_types();
  const auto np = static_cast<std::size_t>(p), ntu = static_cast<std::size_t>(nt);
  const std::vector<std::int64_t> offsets = g.type_offsets();
  const std::int64_t n = offsets.back();
  auto type_of = [&](std::int64_t u) {
    return static_cast<std::int32_t>(std::upper_bound(offsets.begin(), offsets.end(), u) -
                                     offsets.begin() - 1);
  };
  // cnt[k][t] owned nodes of type t in part k; tb[k][t] the partition id of the first.
  std::vector<std::vector<std::int64_t>> cnt(np, std::vector<std::int64_t>(ntu, 0)), tb = cnt;
  for (std::int64_t u = 0; u < n; ++u)
    ++cnt[static_cast<std::size_t>(rl.book.owner(rl.old_to_new[static_cast<std::size_t>(u)]))]
         [static_cast<std::size_t>(type_of(u))];
  for (std::size_t k = 0; k < np; ++k) {
    std::int64_t at = rl.book.begin(static_cast<std::int32_t>(k));
    for (std::size_t t = 0; t < ntu; ++t) {
      tb[k][t] = at;
      at += cnt[k][t];
    }
  }
  auto part_of = [&](std::int64_t u) {
    return rl.book.owner(rl.old_to_new[static_cast<std::size_t>(u)]);
  };
  // halo[k][t]: partition ids of part k's halo of type t, ascending.
  std::vector<std::vector<std::vector<NodeId>>> halo(np, std::vector<std::vector<NodeId>>(ntu));
  std::vector<NodeId> mark(static_cast<std::size_t>(n), -1);
  for (std::int32_t k = 0; k < p; ++k) {
    const auto uk = static_cast<std::size_t>(k);
    for (const datasets::Relation& r : g.relations) {
      const std::int64_t dbase = offsets[static_cast<std::size_t>(r.dst_type)];
      const std::int64_t sbase = offsets[static_cast<std::size_t>(r.src_type)];
      for (std::int64_t i = 0; i < cnt[uk][static_cast<std::size_t>(r.dst_type)]; ++i) {
        const NodeId v =
            static_cast<NodeId>(rl.new_to_old[static_cast<std::size_t>(
                                    tb[uk][static_cast<std::size_t>(r.dst_type)] + i)] -
                                dbase);
        for (std::int64_t e = r.adj.indptr.data()[v]; e < r.adj.indptr.data()[v + 1]; ++e) {
          const std::int64_t u = sbase + r.adj.indices.data()[e];
          if (part_of(u) != k && mark[static_cast<std::size_t>(u)] < 0) {
            mark[static_cast<std::size_t>(u)] = 0;
            halo[uk][static_cast<std::size_t>(r.src_type)].push_back(
                rl.old_to_new[static_cast<std::size_t>(u)]);
          }
        }
      }
    }
    for (auto& h : halo[uk]) {
      std::sort(h.begin(), h.end());
      for (const NodeId x : h)
        mark[static_cast<std::size_t>(rl.new_to_old[static_cast<std::size_t>(x)])] = -1;
    }
  }

  std::vector<HeteroPart> parts(np);
  for (std::int32_t k = 0; k < p; ++k) {
    const auto uk = static_cast<std::size_t>(k);
    HeteroPart& part = parts[uk];
    HeteroPartLayout& l = part.layout;
    datasets::HeteroGraph& pg = part.graph;
    l.rank = k;
    l.num_parts = p;
    l.num_train = g.train_idx.numel();
    pg.name = g.name;
    pg.target_type = g.target_type;
    pg.num_classes = g.num_classes;
    // Local row of every node part k knows, by homogenised original id (mark, restored below).
    std::vector<std::vector<NodeId>> original(ntu);
    for (std::size_t t = 0; t < ntu; ++t) {
      l.global_nodes.push_back(g.node_types[t].num_nodes);
      l.num_owned.push_back(cnt[uk][t]);
      std::vector<NodeId>& o = original[t];
      for (std::int64_t i = 0; i < cnt[uk][t]; ++i)
        o.push_back(static_cast<NodeId>(rl.new_to_old[static_cast<std::size_t>(tb[uk][t] + i)] -
                                        offsets[t]));
      for (const NodeId x : halo[uk][t])
        o.push_back(static_cast<NodeId>(rl.new_to_old[static_cast<std::size_t>(x)] - offsets[t]));
      for (std::size_t i = 0; i < o.size(); ++i)
        mark[static_cast<std::size_t>(offsets[t] + o[i])] = static_cast<NodeId>(i);
      std::vector<std::int64_t> recv(np + 1, 0), send(np + 1, 0);
      std::vector<NodeId> rows;
      for (std::int32_t j = 0; j <= p; ++j)
        recv[static_cast<std::size_t>(j)] =
            std::lower_bound(halo[uk][t].begin(), halo[uk][t].end(),
                             j < p ? rl.book.begin(j) : rl.book.num_nodes()) -
            halo[uk][t].begin();
      for (std::int32_t j = 0; j < p; ++j) {
        const auto& hj = halo[static_cast<std::size_t>(j)][t];
        const auto lo = std::lower_bound(hj.begin(), hj.end(), rl.book.begin(k));
        const auto hi = std::lower_bound(hj.begin(), hj.end(), rl.book.end(k));
        for (auto it = lo; it != hi; ++it) rows.push_back(static_cast<NodeId>(*it - tb[uk][t]));
        send[static_cast<std::size_t>(j) + 1] = static_cast<std::int64_t>(rows.size());
      }
      l.recv_offsets.push_back(std::move(recv));
      l.send_offsets.push_back(std::move(send));
      l.send_rows.push_back(host_tensor(res, rows));
      datasets::NodeType nt_out;
      nt_out.name = g.node_types[t].name;
      nt_out.num_nodes = static_cast<std::int64_t>(o.size());
      nt_out.feature_kind = g.node_types[t].feature_kind;
      nt_out.features = gather_rows(res, g.node_types[t].features, o);
      pg.node_types.push_back(std::move(nt_out));
    }
    for (const datasets::Relation& r : g.relations) {
      const auto s = static_cast<std::size_t>(r.src_type), d = static_cast<std::size_t>(r.dst_type);
      const std::int64_t rows = static_cast<std::int64_t>(original[d].size());
      std::vector<std::int64_t> indptr(static_cast<std::size_t>(rows) + 1, 0);
      std::vector<NodeId> indices;
      for (std::int64_t i = 0; i < cnt[uk][d]; ++i) {
        const NodeId v = original[d][static_cast<std::size_t>(i)];
        const auto first = static_cast<std::ptrdiff_t>(indices.size());
        for (std::int64_t e = r.adj.indptr.data()[v]; e < r.adj.indptr.data()[v + 1]; ++e)
          indices.push_back(mark[static_cast<std::size_t>(offsets[s] + r.adj.indices.data()[e])]);
        std::sort(indices.begin() + first, indices.end());
        indptr[static_cast<std::size_t>(i) + 1] = static_cast<std::int64_t>(indices.size());
      }
      for (std::int64_t i = cnt[uk][d]; i < rows; ++i)
        indptr[static_cast<std::size_t>(i) + 1] = static_cast<std::int64_t>(indices.size());
      datasets::Relation out{r.name, r.src_type, r.dst_type, {}};
      out.adj = {host_tensor(res, indptr),
                 host_tensor(res, indices),
                 {},
                 static_cast<std::int64_t>(original[s].size()),
                 false};
      pg.relations.push_back(std::move(out));
    }
    const auto tt = static_cast<std::size_t>(g.target_type);
    std::vector<std::int32_t> labels;
    for (const NodeId v : original[tt]) labels.push_back(g.labels.data()[v]);
    pg.labels = host_tensor(res, labels);
    const kernels::Tensor<NodeId>* splits[] = {&g.train_idx, &g.val_idx, &g.test_idx};
    kernels::Tensor<NodeId>* out_splits[] = {&pg.train_idx, &pg.val_idx, &pg.test_idx};
    for (int sp = 0; sp < 3; ++sp) {
      std::vector<NodeId> v;
      for (std::int64_t i = 0; i < splits[sp]->numel(); ++i) {
        const std::int64_t u = offsets[tt] + splits[sp]->data()[i];
        if (part_of(u) == k) v.push_back(mark[static_cast<std::size_t>(u)]);
      }
      std::sort(v.begin(), v.end());
      *out_splits[sp] = host_tensor(res, v);
    }
    for (std::size_t t = 0; t < ntu; ++t)
      for (const NodeId v : original[t]) mark[static_cast<std::size_t>(offsets[t] + v)] = -1;
    for (std::size_t t = 0; t < ntu; ++t) l.original.push_back(host_tensor(res, original[t]));
  }
  return parts;
}

std::string type_key(std::size_t t, const char* what) {
  return "type" + std::to_string(t) + "." + what;
}
std::string relation_key(std::size_t r, const char* what) {
  return "rel" + std::to_string(r) + "." + what;
}

PartInfo write_hetero_part_file(const HeteroPart& part, const fs::path& file) {
  const datasets::HeteroGraph& g = part.graph;
  const HeteroPartLayout& l = part.layout;
  PartInfo info;
  for (std::size_t t = 0; t < l.num_owned.size(); ++t) {
    info.num_owned += l.num_owned[t];
    info.num_halo += g.node_types[t].num_nodes - l.num_owned[t];
  }
  for (const datasets::Relation& r : g.relations) info.num_edges += r.adj.num_edges();
  info.num_train = g.train_idx.numel();
  PartFileWriter out(file, l.rank, l.num_parts, info);
  for (std::size_t t = 0; t < l.num_owned.size(); ++t) {
    out.add(type_key(t, "original"), l.original[t]);
    out.add(type_key(t, "send_offsets"), l.send_offsets[t]);
    out.add(type_key(t, "send_rows"), l.send_rows[t]);
    out.add(type_key(t, "recv_offsets"), l.recv_offsets[t]);
    if (!g.node_types[t].has_features()) continue;
    std::visit(
        [&](const auto& x) {
          using X = std::decay_t<decltype(x)>;
          if constexpr (std::is_same_v<X, kernels::Tensor<float>>) {
            out.add(type_key(t, "features"), x);
          } else {
            out.add(type_key(t, "features_indptr"), x.indptr);
            out.add(type_key(t, "features_indices"), x.indices);
            if (!x.values.empty()) out.add(type_key(t, "features_values"), x.values);
          }
        },
        g.node_types[t].features);
  }
  for (std::size_t r = 0; r < g.relations.size(); ++r) {
    const datasets::Graph& a = g.relations[r].adj;
    // The owned destination rows only: the halo rows are empty.
    out.add(relation_key(r, "indptr"), a.indptr.data(),
            l.num_owned[static_cast<std::size_t>(g.relations[r].dst_type)] + 1, 1);
    out.add(relation_key(r, "indices"), a.indices);
  }
  out.add("labels", g.labels);
  out.add("train_idx", g.train_idx);
  out.add("val_idx", g.val_idx);
  out.add("test_idx", g.test_idx);
  out.finish();
  return info;
}

json hetero_json(const datasets::HeteroGraph& g, const HeteroPartitionResult& r,
                 const std::vector<HeteroPart>& parts) {
  json types = json::array(), relations = json::array(), balance = json::object(),
       owned = json::array(), halo = json::array();
  for (std::size_t t = 0; t < g.node_types.size(); ++t) {
    const datasets::NodeType& nt = g.node_types[t];
    types.push_back({{"name", nt.name},
                     {"num_nodes", nt.num_nodes},
                     {"features", features_name(nt)},
                     {"num_features", kernels::num_cols(nt.features)},
                     {"feature_kind", nt.feature_kind}});
    balance[nt.name] = r.type_balance[t];
  }
  for (const datasets::Relation& rel : g.relations)
    relations.push_back({{"name", rel.name},
                         {"src_type", rel.src_type},
                         {"dst_type", rel.dst_type},
                         {"num_edges", rel.adj.num_edges()}});
  for (const HeteroPart& p : parts) {
    std::vector<std::int64_t> h;
    for (std::size_t t = 0; t < p.layout.num_owned.size(); ++t)
      h.push_back(p.graph.node_types[t].num_nodes - p.layout.num_owned[t]);
    owned.push_back(p.layout.num_owned);
    halo.push_back(h);
  }
  json h = {{"types", types},          {"relations", relations}, {"target_type", g.target_type},
            {"type_balance", balance}, {"num_owned", owned},     {"num_halo", halo}};
  if (g.split >= 0) h["split"] = g.split;
  return h;
}

HeteroMeta parse_hetero_meta(const json& h, const PartitionMeta& m, const fs::path& file) {
  HeteroMeta hm;
  const json types = get<json>(h, "types", file), relations = get<json>(h, "relations", file);
  if (!types.is_array() || types.empty() || !relations.is_array())
    throw IoError(file.string() +
                  ": \"hetero\" needs a non-empty \"types\" list and a "
                  "\"relations\" list");
  std::int64_t total = 0;
  for (const json& t : types) {
    HeteroMeta::Type ty{get<std::string>(t, "name", file), get<std::int64_t>(t, "num_nodes", file),
                        get<std::string>(t, "features", file),
                        get<std::int64_t>(t, "num_features", file),
                        get<std::string>(t, "feature_kind", file)};
    if (ty.num_nodes < 0 || ty.num_features < 0 ||
        (ty.features != "dense" && ty.features != "sparse" && ty.features != "none") ||
        ((ty.features == "none") != (ty.num_features == 0)))
      throw IoError(file.string() + ": malformed entry for type '" + ty.name + "'");
    total += ty.num_nodes;
    hm.types.push_back(std::move(ty));
  }
  const auto nt = static_cast<std::int32_t>(hm.types.size());
  for (const json& r : relations) {
    HeteroMeta::Relation rel{
        get<std::string>(r, "name", file), get<std::int32_t>(r, "src_type", file),
        get<std::int32_t>(r, "dst_type", file), get<std::int64_t>(r, "num_edges", file)};
    if (rel.src_type < 0 || rel.src_type >= nt || rel.dst_type < 0 || rel.dst_type >= nt ||
        rel.num_edges < 0)
      throw IoError(file.string() + ": malformed entry for relation '" + rel.name + "'");
    hm.relations.push_back(std::move(rel));
  }
  hm.target_type = get<std::int32_t>(h, "target_type", file);
  if (hm.target_type < 0 || hm.target_type >= nt || total != m.num_nodes)
    throw IoError(file.string() + ": \"hetero\": target_type out of range or the types' nodes (" +
                  std::to_string(total) + ") are not the dataset's " + std::to_string(m.num_nodes));
  const json balance = get<json>(h, "type_balance", file);
  for (const auto& t : hm.types) hm.balance.push_back(get<double>(balance, t.name.c_str(), file));
  if (h.contains("split")) {
    hm.split = get<int>(h, "split", file);
    if (hm.split < 0) throw IoError(file.string() + ": \"hetero\": split must be >= 0");
  }
  hm.num_owned = get<std::vector<std::vector<std::int64_t>>>(h, "num_owned", file);
  hm.num_halo = get<std::vector<std::vector<std::int64_t>>>(h, "num_halo", file);
  if (static_cast<std::int32_t>(hm.num_owned.size()) != m.config.num_parts ||
      hm.num_halo.size() != hm.num_owned.size())
    throw IoError(file.string() + ": \"hetero\": num_owned and num_halo need one entry per part");
  for (std::size_t k = 0; k < hm.num_owned.size(); ++k) {
    std::int64_t sum = 0;
    if (static_cast<std::int32_t>(hm.num_owned[k].size()) != nt ||
        static_cast<std::int32_t>(hm.num_halo[k].size()) != nt)
      throw IoError(file.string() + ": \"hetero\": part " + std::to_string(k) +
                    " needs one owned and one halo count per type");
    for (const std::int64_t x : hm.num_owned[k]) sum += x;
    if (sum != m.book.size(static_cast<std::int32_t>(k)))
      throw IoError(file.string() + ": \"hetero\": part " + std::to_string(k) + " owns " +
                    std::to_string(sum) + " nodes, the offsets give " +
                    std::to_string(m.book.size(static_cast<std::int32_t>(k))));
  }
  return hm;
}

}  // namespace

HeteroPartitionResult partition_hetero(const kernels::Resources& res,
                                       const datasets::HeteroGraph& g,
                                       const PartitionConfig& config, const Progress& progress) {
  using Clock = std::chrono::steady_clock;
  auto since = [](Clock::time_point t) {
    return std::chrono::duration<double>(Clock::now() - t).count();
  };
  const auto start = Clock::now();
  HeteroPartitionResult hr;
  PartitionResult& r = hr.homogeneous;
  r.config = config;
  // What meta.json records: "nodes" stands for the per-type constraints; edges are not balanced.
  r.config.balance = {true, config.balance.train, false};
  if (progress) progress("homogenising and symmetrising the graph");
  auto t0 = Clock::now();
  const datasets::Dataset hd = homogenised(res, g);
  r.symmetric = partitioning_graph(res, hd.graph);
  r.timings.symmetrize_s = since(t0);
  // One constraint per node type, one for the training nodes.
  const std::vector<std::int64_t> offsets = g.type_offsets();
  const std::int64_t n = offsets.back();
  std::vector<std::vector<std::int32_t>> weights;
  for (std::int32_t t = 0; t < g.num_types(); ++t) {
    std::vector<std::int32_t> w(static_cast<std::size_t>(n), 0);
    std::fill(w.begin() + offsets[static_cast<std::size_t>(t)],
              w.begin() + offsets[static_cast<std::size_t>(t) + 1], 1);
    weights.push_back(std::move(w));
  }
  if (config.balance.train) {
    std::vector<std::int32_t> w(static_cast<std::size_t>(n), 0);
    for (std::int64_t i = 0; i < hd.train_idx.numel(); ++i)
      w[static_cast<std::size_t>(hd.train_idx.data()[i])] = 1;
    weights.push_back(std::move(w));
  }
  r.config.method = resolve_method(config.method, r.symmetric.num_edges(), n, config.memory_budget);
  if (progress)
    progress(std::string(to_string(r.config.method)) + ", " + std::to_string(config.num_parts) +
             " parts, " + std::to_string(weights.size()) + " balance constraints");
  t0 = Clock::now();
  r.assignment = assign_parts(r.symmetric, std::move(weights), r.config);
  r.timings.assign_s = since(t0);
  r.timings.metis_s = r.assignment.metis_seconds;
  t0 = Clock::now();
  r.relabelling = relabel(r.assignment.part, config.num_parts);
  r.timings.relabel_s = since(t0);
  t0 = Clock::now();
  r.metrics = compute_metrics(hd, r.symmetric, r.assignment.part, config.num_parts);
  const auto np = static_cast<std::size_t>(config.num_parts);
  hr.type_counts.assign(np, std::vector<std::int64_t>(static_cast<std::size_t>(g.num_types()), 0));
  for (std::int32_t t = 0; t < g.num_types(); ++t)
    for (std::int64_t u = offsets[static_cast<std::size_t>(t)];
         u < offsets[static_cast<std::size_t>(t) + 1]; ++u)
      ++hr.type_counts[static_cast<std::size_t>(r.assignment.part[static_cast<std::size_t>(u)])]
                      [static_cast<std::size_t>(t)];
  for (std::int32_t t = 0; t < g.num_types(); ++t) {
    std::int64_t largest = 0;
    for (std::size_t k = 0; k < np; ++k)
      largest = std::max(largest, hr.type_counts[k][static_cast<std::size_t>(t)]);
    const double mean = static_cast<double>(g.node_types[static_cast<std::size_t>(t)].num_nodes) /
                        static_cast<double>(np);
    hr.type_balance.push_back(mean > 0 ? static_cast<double>(largest) / mean : 1.0);
  }
  r.timings.metrics_s = since(t0);
  r.timings.total_s = since(start);
  return hr;
}

void write_hetero_partitions(const kernels::Resources& res, const datasets::HeteroGraph& g,
                             const HeteroPartitionResult& hr, const fs::path& dir,
                             const Progress& progress) {
  const PartitionResult& r = hr.homogeneous;
  HALO_EXPECTS(static_cast<std::int64_t>(r.relabelling.new_to_old.size()) == g.num_nodes() &&
                   r.relabelling.book.num_parts() == r.config.num_parts &&
                   static_cast<std::int32_t>(hr.type_balance.size()) == g.num_types(),
               "write_hetero_partitions: the partition does not belong to this dataset");
  const datasets::Dataset hd = homogenised(res, g);
  const Shared sh = make_shared(hd, r.symmetric, r.relabelling, nullptr);
  const std::vector<HeteroPart> parts = build_hetero_parts(res, g, r.relabelling);
  datasets::write_staged_directory(dir, [&](const fs::path& tmp) {
    std::vector<PartInfo> infos;
    for (std::int32_t k = 0; k < r.config.num_parts; ++k) {
      infos.push_back(
          write_hetero_part_file(parts[static_cast<std::size_t>(k)], part_file(tmp, k)));
      if (progress)
        progress("wrote part " + std::to_string(k + 1) + "/" + std::to_string(r.config.num_parts));
    }
    json j = meta_json(hd, r, sh, infos);
    j["heterogeneous"] = true;
    j["hetero"] = hetero_json(g, hr, parts);
    const fs::path meta = tmp / "meta.json";
    std::ofstream out(meta);
    if (!out || !(out << j.dump(1) << '\n') || !out.flush())
      throw IoError(meta.string() + ": cannot write");
  });
}

HeteroPart read_hetero_part(const kernels::Resources& res, const fs::path& dir, std::int32_t k,
                            const PartitionMeta* meta) {
  PartitionMeta read;
  if (meta == nullptr) {
    read = read_partition_meta(dir);
    meta = &read;
  }
  const PartitionMeta& m = *meta;
  if (!m.hetero)
    throw IoError((dir / "meta.json").string() +
                  ": a homogeneous partition (a heterogeneous model needs one written from a "
                  "typed directory)");
  const HeteroMeta& hm = *m.hetero;
  const std::int32_t p = m.config.num_parts;
  HALO_EXPECTS(k >= 0 && k < p, "read_hetero_part: part " + std::to_string(k) +
                                    " does not exist (" + std::to_string(p) + " parts in " +
                                    dir.string() + ")");
  const fs::path file = part_file(dir, k);
  if (!fs::is_regular_file(file)) throw IoError(file.string() + ": missing part file");
  auto arrays = read_part_file(&res, dir, k, p, m.parts[static_cast<std::size_t>(k)]);
  const auto uk = static_cast<std::size_t>(k);
  HeteroPart part;
  HeteroPartLayout& l = part.layout;
  datasets::HeteroGraph& g = part.graph;
  l.rank = k;
  l.num_parts = p;
  l.num_train = m.num_train;
  l.num_owned = hm.num_owned[uk];
  g.name = m.dataset;
  g.target_type = hm.target_type;
  g.num_classes = m.num_classes;
  for (std::size_t t = 0; t < hm.types.size(); ++t) {
    const HeteroMeta::Type& ty = hm.types[t];
    const std::int64_t owned = hm.num_owned[uk][t], local = owned + hm.num_halo[uk][t];
    l.global_nodes.push_back(ty.num_nodes);
    auto original = take<NodeId>(arrays, file, type_key(t, "original"));
    expect_data(original.numel() == local, file, type_key(t, "original"),
                "expected " + std::to_string(local) + " ids");
    check_ids(original, 0, ty.num_nodes, false, file, type_key(t, "original"));
    l.original.push_back(std::move(original));
    l.send_offsets.push_back(
        to_vector(take<std::int64_t>(arrays, file, type_key(t, "send_offsets"))));
    l.send_rows.push_back(take<NodeId>(arrays, file, type_key(t, "send_rows")));
    check_offsets(l.send_offsets.back(), p, l.send_rows.back().numel(), file,
                  type_key(t, "send_offsets"));
    check_ids(l.send_rows.back(), 0, owned, false, file, type_key(t, "send_rows"));
    l.recv_offsets.push_back(
        to_vector(take<std::int64_t>(arrays, file, type_key(t, "recv_offsets"))));
    check_offsets(l.recv_offsets.back(), p, local - owned, file, type_key(t, "recv_offsets"));
    datasets::NodeType nt;
    nt.name = ty.name;
    nt.num_nodes = local;
    nt.feature_kind = ty.feature_kind;
    if (ty.features == "dense") {
      auto x = take<float>(arrays, file, type_key(t, "features"));
      expect_data(x.rows() == local && x.cols() == ty.num_features, file, type_key(t, "features"),
                  "expected " + std::to_string(local) + " x " + std::to_string(ty.num_features));
      nt.features = std::move(x);
    } else if (ty.features == "sparse") {
      kernels::CsrMatrix<std::int32_t, float> x;
      x.indptr = take<std::int64_t>(arrays, file, type_key(t, "features_indptr"));
      x.indices = take<std::int32_t>(arrays, file, type_key(t, "features_indices"));
      if (arrays.count(type_key(t, "features_values")) != 0)
        x.values = take<float>(arrays, file, type_key(t, "features_values"));
      x.num_cols = ty.num_features;
      check_csr(x.indptr, x.indices, local, ty.num_features, file, type_key(t, "features_indptr"));
      nt.features = std::move(x);
    }
    g.node_types.push_back(std::move(nt));
  }
  for (std::size_t r = 0; r < hm.relations.size(); ++r) {
    const HeteroMeta::Relation& rel = hm.relations[r];
    const auto d = static_cast<std::size_t>(rel.dst_type);
    const std::int64_t owned = hm.num_owned[uk][d];
    const std::int64_t rows = g.node_types[d].num_nodes;
    const std::int64_t cols = g.node_types[static_cast<std::size_t>(rel.src_type)].num_nodes;
    auto indptr = take<std::int64_t>(arrays, file, relation_key(r, "indptr"));
    auto indices = take<NodeId>(arrays, file, relation_key(r, "indices"));
    check_csr(indptr, indices, owned, cols, file, relation_key(r, "indptr"));
    std::vector<std::int64_t> full = to_vector(indptr);  // halo rows: empty
    full.resize(static_cast<std::size_t>(rows) + 1, full.back());
    g.relations.push_back(
        {rel.name, rel.src_type, rel.dst_type,
         datasets::Graph{host_tensor(res, full), std::move(indices), {}, cols, false}});
  }
  g.labels = take<std::int32_t>(arrays, file, "labels");
  g.train_idx = take<NodeId>(arrays, file, "train_idx");
  g.val_idx = take<NodeId>(arrays, file, "val_idx");
  g.test_idx = take<NodeId>(arrays, file, "test_idx");
  const std::int64_t target_owned = hm.num_owned[uk][static_cast<std::size_t>(hm.target_type)];
  for (const char* split : {"train_idx", "val_idx", "test_idx"})
    check_ids(split[1] == 'r'   ? g.train_idx
              : split[0] == 'v' ? g.val_idx
                                : g.test_idx,
              0, target_owned, true, file, split);
  try {
    datasets::validate(g);
  } catch (const IoError& e) {
    throw IoError(file.string() + ": " + e.what());
  }
  return part;
}

}  // namespace halo::partition
