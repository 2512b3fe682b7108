#include <algorithm>
#include <bit>
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

#include <halo/datasets/staged_directory.hpp>
#include <halo/kernels/error.hpp>
#include <halo/partition/partition_format.hpp>

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
  std::vector<std::uint8_t> split_of;  // original id -> 0 none, 1 train, 2 val, 3 test
  std::vector<NodeId> all_train, all_train_original;
  std::int64_t max_degree = 0;
};

Shared make_shared(const datasets::Dataset& ds, const datasets::Graph& s, const Relabelling& rl) {
  Shared sh{ds, s,  rl, std::vector<std::uint8_t>(static_cast<std::size_t>(ds.num_nodes()), 0),
            {}, {}, 0};
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

  // Features, labels and splits of the owned nodes.
  std::visit(
      [&](const auto& x) {
        using X = std::decay_t<decltype(x)>;
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
PartInfo write_part_file(const Part& part, std::int32_t k, std::int32_t p, const fs::path& file) {
  PartInfo info;
  info.num_owned = part.num_owned();
  info.num_halo = part.num_halo();
  info.num_edges = part.graph.num_edges();
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
      {"num_features", ds.num_features()},
      {"num_classes", ds.num_classes},
      {"num_train", ds.train_idx.numel()},
      {"features",
       std::holds_alternative<kernels::Tensor<float>>(ds.features) ? "dense" : "sparse"},
      {"weighted", !ds.graph.values.empty()}};
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
    jp.push_back({{"num_owned", p.num_owned},
                  {"num_halo", p.num_halo},
                  {"num_edges", p.num_edges},
                  {"num_train", p.num_train},
                  {"file_bytes", p.file_bytes},
                  {"arrays", arrays}});
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
  for (std::int64_t r = 0; r < num_rows; ++r)
    expect_data(p[r] <= p[r + 1], file, array, "row offsets decrease at row " + std::to_string(r));
  for (std::int64_t e = 0; e < indices.numel(); ++e)
    expect_data(indices.data()[e] >= 0 && indices.data()[e] < num_cols, file, array,
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
    expect_data(v >= lo && v < hi, file, array,
                "entry " + std::to_string(i) + " (" + std::to_string(v) + ") is outside [" +
                    std::to_string(lo) + ", " + std::to_string(hi) + ")");
    if (ascending && i > 0)
      expect_data(t.data()[i - 1] < v, file, array,
                  "entries must be strictly ascending (entry " + std::to_string(i) + ")");
  }
}

std::vector<std::int64_t> to_vector(const kernels::Tensor<std::int64_t>& t) {
  return {t.data(), t.data() + t.numel()};
}

}  // namespace

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

Part make_local_part(const kernels::Resources& res, datasets::Dataset&& ds) {
  const std::int64_t n = ds.num_nodes();
  datasets::Graph s = partitioning_graph(res, ds.graph);
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

void write_partitions(const kernels::Resources& res, const datasets::Dataset& ds,
                      const PartitionResult& r, const fs::path& dir, const Progress& progress) {
  const std::int64_t n = ds.num_nodes();
  HALO_EXPECTS(static_cast<std::int64_t>(r.relabelling.new_to_old.size()) == n &&
                   r.relabelling.book.num_nodes() == n &&
                   r.relabelling.book.num_parts() == r.config.num_parts &&
                   r.symmetric.num_rows() == n,
               "write_partitions: the partition does not belong to this dataset");
  const Shared sh = make_shared(ds, r.symmetric, r.relabelling);
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
          parts[static_cast<std::size_t>(k)] = write_part_file(part, k, p, part_file(tmp, k));
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
  m.num_features = get<std::int64_t>(d, "num_features", file);
  m.num_classes = get<std::int32_t>(d, "num_classes", file);
  m.num_train = get<std::int64_t>(d, "num_train", file);
  m.sparse_features = get<std::string>(d, "features", file) == "sparse";
  m.weighted = get<bool>(d, "weighted", file);
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

Part read_part(const kernels::Resources& res, const fs::path& dir, std::int32_t k,
               const PartitionMeta* meta) {
  PartitionMeta read;
  if (meta == nullptr) {
    read = read_partition_meta(dir);
    meta = &read;
  }
  const PartitionMeta& m = *meta;
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
    expect_data(m.book.owner(halo_ids.data()[h]) != k, pdir, "halo_ids",
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
  if (m.sparse_features) {
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
  for (std::int32_t k = 0; k < m.config.num_parts; ++k)
    read_part_file(nullptr, dir, k, m.config.num_parts, m.parts[static_cast<std::size_t>(k)]);
  return m.config.num_parts;
}

}  // namespace halo::partition
