#include <bit>
#include <cstring>
#include <nlohmann/json.hpp>

#include <halo/kernels/atomic_file.hpp>
#include <halo/kernels/error.hpp>
#include <halo/nn/model_file.hpp>

namespace halo::nn {

// Layout (little-endian): magic "HALOMODL", u32 format version, u32 reserved (0), u64 header
// length H, H bytes of JSON header, the arrays in header order, u64 FNV-1a of every byte before.
namespace {

constexpr char kMagic[8] = {'H', 'A', 'L', 'O', 'M', 'O', 'D', 'L'};
constexpr std::size_t kPrefix = 8 + 4 + 4 + 8;
constexpr std::size_t kChecksum = 8;

static_assert(std::endian::native == std::endian::little, "model files are little-endian");

std::uint64_t fnv1a(const char* data, std::size_t n) {
  std::uint64_t h = 14695981039346656037ull;
  for (std::size_t i = 0; i < n; ++i) {
    h ^= static_cast<unsigned char>(data[i]);
    h *= 1099511628211ull;
  }
  return h;
}

template <class V>
void put(std::string& out, V v) {
  out.append(reinterpret_cast<const char*>(&v), sizeof(V));
}
template <class V>
V get(const std::string& in, std::size_t at) {
  V v;
  std::memcpy(&v, in.data() + at, sizeof(V));
  return v;
}

std::size_t element_size(const std::string& dtype) {
  if (dtype == "<f4") return 4;
  if (dtype == "<f8") return 8;
  return 0;
}

}  // namespace

void write_model_file(const std::filesystem::path& path, const ModelFile& file) {
  const std::size_t elem = element_size(file.dtype);
  HALO_EXPECTS(elem > 0, "model file: dtype must be <f4 or <f8, got '" + file.dtype + "'");
  const ModelFileInfo& info = file.info;
  const ModelConfig& c = info.config;
  nlohmann::json params = nlohmann::json::array();
  for (const ModelFileArray& a : file.arrays) {
    HALO_EXPECTS(a.rows >= 0 && a.cols >= 0 &&
                     a.bytes.size() == static_cast<std::size_t>(a.rows * a.cols) * elem,
                 "model file: array '" + a.name + "' holds the wrong number of bytes");
    params.push_back({{"name", a.name}, {"rows", a.rows}, {"cols", a.cols}});
  }
  nlohmann::json header;
  if (info.task != "node") {
    // Another task's model: its own description (kind, sizes, data, configuration).
    header = {{"format", "halo-model"},
              {"format_version", kModelFileVersion},
              {"halo_version", HALO_VERSION},
              {"task", info.task},
              {"model", nlohmann::json::parse(info.task_model.empty() ? "{}" : info.task_model)},
              {"data", {{"dataset", info.dataset}}},
              {"preprocessing",
               {{"normalize_features", info.normalize_features},
                {"structural_features", info.structural_features}}},
              {"training", nlohmann::json::parse(info.training.empty() ? "{}" : info.training)},
              {"dtype", file.dtype},
              {"parameters", params}};
  } else {
    std::vector<std::int64_t> widths = {c.in_features};
    for (int l = 1; l <= c.num_layers; ++l)
      widths.push_back(l == c.num_layers          ? c.num_classes
                       : c.kind == ModelKind::Gat ? c.heads * c.hidden
                                                  : c.hidden);
    const bool gat = c.kind == ModelKind::Gat;
    header = {{"format", "halo-model"},
              {"format_version", kModelFileVersion},
              {"halo_version", HALO_VERSION},
              {"model",
               {{"kind", to_string(c.kind)},
                {"layers", c.num_layers},
                {"hidden", c.hidden},
                {"widths", widths},
                {"activation", gat ? "elu" : "relu"},
                {"normalization", to_string(graph_preparation(c.kind))},
                {"dropout", c.dropout}}},
              {"data",
               {{"dataset", info.dataset},
                {"num_features", c.in_features},
                {"num_classes", c.num_classes}}},
              {"preprocessing",
               {{"normalize_features", info.normalize_features},
                {"structural_features", info.structural_features}}},
              {"training", nlohmann::json::parse(info.training.empty() ? "{}" : info.training)},
              {"dtype", file.dtype},
              {"parameters", params}};
    if (gat) {  // older readers ignore them; gcn and sage files stay as they were
      header["model"]["heads"] = c.heads;
      header["model"]["out_heads"] = c.out_heads;
    }
  }
  const std::string text = header.dump();
  std::string out;
  out.append(kMagic, sizeof(kMagic));
  put(out, kModelFileVersion);
  put(out, std::uint32_t{0});
  put(out, static_cast<std::uint64_t>(text.size()));
  out += text;
  for (const ModelFileArray& a : file.arrays) out += a.bytes;
  put(out, fnv1a(out.data(), out.size()));
  kernels::write_file_atomically(path, out);
}

ModelFile read_model_file(const std::filesystem::path& path) {
  const std::string bytes = kernels::read_file_bytes(path);
  const auto fail = [&](const std::string& what) { throw IoError(path.string() + ": " + what); };
  if (bytes.size() < sizeof(kMagic) || std::memcmp(bytes.data(), kMagic, sizeof(kMagic)) != 0)
    fail("not a Halo model file (no HALOMODL magic)");
  if (bytes.size() < kPrefix + kChecksum)
    fail("truncated (" + std::to_string(bytes.size()) + " bytes)");
  const auto version = get<std::uint32_t>(bytes, 8);
  if (version != kModelFileVersion)
    fail("model file format version " + std::to_string(version) +
         "; this Halo (" HALO_VERSION ") reads version " + std::to_string(kModelFileVersion));
  const auto header_bytes = get<std::uint64_t>(bytes, 16);
  if (header_bytes > bytes.size() - kPrefix - kChecksum)
    fail("truncated (" + std::to_string(bytes.size()) + " bytes, the header alone needs " +
         std::to_string(header_bytes) + ")");
  const bool checksum_ok = fnv1a(bytes.data(), bytes.size() - kChecksum) ==
                           get<std::uint64_t>(bytes, bytes.size() - kChecksum);
  const auto corrupted = [&] { fail("checksum mismatch: the file is corrupted"); };
  ModelFile file;
  std::size_t expected = 0;
  try {
    const auto h =
        nlohmann::json::parse(bytes.begin() + kPrefix,
                              bytes.begin() + static_cast<std::ptrdiff_t>(kPrefix + header_bytes));
    const auto& m = h.at("model");
    file.info.task = h.value("task", std::string("node"));
    if (file.info.task == "node") {
      ModelConfig& c = file.info.config;
      c.kind = parse_model_kind(m.at("kind").get<std::string>());
      c.num_layers = m.at("layers").get<int>();
      c.hidden = m.at("hidden").get<std::int64_t>();
      c.dropout = m.at("dropout").get<float>();
      // Files written before GAT carry no heads: ModelConfig's defaults.
      c.heads = m.value("heads", ModelConfig{}.heads);
      c.out_heads = m.value("out_heads", ModelConfig{}.out_heads);
      c.in_features = h.at("data").at("num_features").get<std::int64_t>();
      c.num_classes = h.at("data").at("num_classes").get<std::int64_t>();
    } else {
      if (!m.is_object()) throw std::runtime_error("\"model\" is not an object");
      file.info.task_model = m.dump();
    }
    file.info.dataset = h.at("data").at("dataset").get<std::string>();
    file.info.normalize_features = h.at("preprocessing").at("normalize_features").get<bool>();
    file.info.structural_features =
        h.at("preprocessing").at("structural_features").get<std::string>();
    file.info.training = h.at("training").dump();
    file.info.halo_version = h.at("halo_version").get<std::string>();
    file.dtype = h.at("dtype").get<std::string>();
    const std::size_t elem = element_size(file.dtype);
    if (elem == 0) throw std::runtime_error("unknown dtype '" + file.dtype + "'");
    std::size_t at = kPrefix + header_bytes;
    expected = at + kChecksum;
    for (const auto& p : h.at("parameters")) {
      ModelFileArray a;
      a.name = p.at("name").get<std::string>();
      a.rows = p.at("rows").get<std::int64_t>();
      a.cols = p.at("cols").get<std::int64_t>();
      if (a.rows < 0 || a.cols < 0 || a.rows > (std::int64_t{1} << 40) ||
          a.cols > (std::int64_t{1} << 40))
        throw std::runtime_error("parameter '" + a.name + "' has a bad shape");
      const auto n = static_cast<std::size_t>(a.rows) * static_cast<std::size_t>(a.cols) * elem;
      expected += n;
      if (expected <= bytes.size()) a.bytes = bytes.substr(at, n);
      at += n;
      file.arrays.push_back(std::move(a));
    }
  } catch (const std::exception& e) {
    if (!checksum_ok) corrupted();
    fail(std::string("malformed header: ") + e.what());
  }
  if (bytes.size() < expected)
    fail("truncated (" + std::to_string(bytes.size()) + " bytes, the header describes " +
         std::to_string(expected) + ")");
  if (bytes.size() > expected)
    fail("trailing bytes (" + std::to_string(bytes.size()) + " bytes, the header describes " +
         std::to_string(expected) + ")");
  if (!checksum_ok) corrupted();
  return file;
}

void check_input_width(const std::filesystem::path& path, const ModelFileInfo& info,
                       std::int64_t num_features) {
  if (info.config.in_features == num_features) return;
  throw IoError(path.string() + ": the model reads " + std::to_string(info.config.in_features) +
                " input features, the data has " + std::to_string(num_features) +
                " (a model of another dataset or preprocessing)");
}

}  // namespace halo::nn
