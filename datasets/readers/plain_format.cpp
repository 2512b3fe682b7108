#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <limits>
#include <numeric>
#include <optional>
#include <string>
#include <string_view>
#include <system_error>
#include <tuple>
#include <utility>
#include <variant>
#include <vector>

#include <halo/datasets/detail/host.hpp>
#include <halo/datasets/detail/text.hpp>
#include <halo/datasets/graph_builder.hpp>
#include <halo/datasets/preprocess.hpp>
#include <halo/datasets/readers/plain_format.hpp>
#include <halo/datasets/readers/staged_directory.hpp>
#include <halo/datasets/store/csr_builder.hpp>
#include <halo/kernels/error.hpp>

namespace halo::datasets {
namespace {

namespace fs = std::filesystem;

constexpr std::int64_t kMaxId = std::numeric_limits<NodeId>::max() - 1;  // so that id + 1 fits

// ---- errors ------------------------------------------------------------------------------------

using detail::quoted;

[[noreturn]] void fail_at(const fs::path& file, std::int64_t line, const std::string& what) {
  throw IoError(file.string() + ":" + std::to_string(line) + ": " + what);
}

[[noreturn]] void fail_expected(const fs::path& file, std::int64_t line, const std::string& what,
                                std::string_view got) {
  fail_at(file, line, "expected " + what + ", got " + quoted(got));
}

[[noreturn]] void fail_expected_eof(const fs::path& file, std::int64_t line,
                                    const std::string& what) {
  fail_at(file, line, "expected " + what + ", got end of file");
}

// ---- reading -----------------------------------------------------------------------------------

/// Walks the lines of a file that it reads in blocks of `chunk_bytes`, so that only one block
/// (plus the start of a line that crosses into the next block) is in memory at a time. A final
/// '\n' does not start an extra line; a '\r' before '\n' is dropped, so files written on Windows
/// read the same. A line longer than a block grows the buffer until the line fits.
class LineReader {
 public:
  LineReader(const fs::path& path, std::size_t chunk_bytes)
      : m_path(path), m_chunk(std::max<std::size_t>(chunk_bytes, 1)) {
    if (!fs::is_regular_file(path)) throw IoError(path.string() + ": not a regular file");
    m_file = std::fopen(path.c_str(), "rb");
    if (m_file == nullptr) throw IoError(path.string() + ": cannot open: " + std::strerror(errno));
  }
  ~LineReader() { std::fclose(m_file); }
  LineReader(const LineReader&) = delete;
  LineReader& operator=(const LineReader&) = delete;

  /// The next line without its line break, valid until the next call; false at end of file.
  bool next(std::string_view& line) {
    for (;;) {
      if (m_pos < m_end) {
        const char* begin = m_buffer.data() + m_pos;
        const void* nl = std::memchr(begin, '\n', m_end - m_pos);
        if (nl != nullptr || m_eof) {
          const char* stop = nl != nullptr ? static_cast<const char*>(nl) : m_buffer.data() + m_end;
          line = std::string_view(begin, static_cast<std::size_t>(stop - begin));
          if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
          m_pos = nl != nullptr ? static_cast<std::size_t>(stop - m_buffer.data()) + 1 : m_end;
          ++m_number;
          return true;
        }
      } else if (m_eof) {
        return false;
      }
      refill();
    }
  }
  /// 1-based number of the line last returned by next().
  std::int64_t number() const { return m_number; }

 private:
  /// Moves the unfinished line to the front of the buffer and appends up to one block after it.
  void refill() {
    const std::size_t tail = m_end - m_pos;
    if (tail > 0 && m_pos > 0) std::memmove(m_buffer.data(), m_buffer.data() + m_pos, tail);
    m_pos = 0;
    m_end = tail;
    if (m_buffer.size() < tail + m_chunk) m_buffer.resize(tail + m_chunk);
    const std::size_t got = std::fread(m_buffer.data() + m_end, 1, m_chunk, m_file);
    if (std::ferror(m_file) != 0) throw IoError(m_path.string() + ": read error");
    m_end += got;
    m_eof = got < m_chunk;
  }

  fs::path m_path;
  std::size_t m_chunk;
  std::FILE* m_file = nullptr;
  std::string m_buffer;
  std::size_t m_pos = 0;  // start of the unread text in m_buffer
  std::size_t m_end = 0;  // end of the text read into m_buffer
  bool m_eof = false;
  std::int64_t m_number = 0;
};

/// Number of '\n' in the file, counted block by block: the readers use it (+ 1) to size their
/// arrays exactly before parsing instead of growing them geometrically, which would hold up to
/// three times the final array while a vector reallocates.
std::size_t count_newlines(const fs::path& path, std::size_t chunk_bytes) {
  if (!fs::is_regular_file(path)) throw IoError(path.string() + ": not a regular file");
  std::FILE* f = std::fopen(path.c_str(), "rb");
  if (f == nullptr) throw IoError(path.string() + ": cannot open: " + std::strerror(errno));
  std::vector<char> buffer(std::max<std::size_t>(chunk_bytes, 1));
  std::size_t count = 0;
  std::size_t got = 0;
  while ((got = std::fread(buffer.data(), 1, buffer.size(), f)) > 0) {
    count += static_cast<std::size_t>(std::count(buffer.data(), buffer.data() + got, '\n'));
  }
  const bool failed = std::ferror(f) != 0;
  std::fclose(f);
  if (failed) throw IoError(path.string() + ": read error");
  return count;
}

/// A whole token as a non-negative integer no larger than `max`.
bool parse_id(std::string_view token, std::int64_t max, std::int64_t& out) {
  const char* end = token.data() + token.size();
  const auto [ptr, ec] = std::from_chars(token.data(), end, out);
  return ec == std::errc() && ptr == end && !token.empty() && out >= 0 && out <= max;
}

/// A whole token as a finite float.
bool parse_float(std::string_view token, float& out) {
  const char* end = token.data() + token.size();
  const auto [ptr, ec] = std::from_chars(token.data(), end, out);
  return ec == std::errc() && ptr == end && !token.empty() && std::isfinite(out);
}

/// Splits at the first tab; false when there is none.
bool split_tab(std::string_view line, std::string_view& head, std::string_view& tail) {
  const std::size_t tab = line.find('\t');
  if (tab == std::string_view::npos) return false;
  head = line.substr(0, tab);
  tail = line.substr(tab + 1);
  return true;
}

struct MetaValue {
  std::int64_t value = 0;
  std::int64_t line = 0;
};

struct Meta {
  fs::path path;
  std::optional<std::string> name;
  std::optional<MetaValue> num_nodes, num_features, num_classes;

  /// "meta.tsv:3 gives num_nodes = 2708", for messages about values that contradict meta.tsv.
  std::string source(const char* key, const MetaValue& v) const {
    return path.filename().string() + ":" + std::to_string(v.line) + " gives " + key + " = " +
           std::to_string(v.value);
  }
};

Meta read_meta(const fs::path& path, std::size_t chunk) {
  Meta meta;
  meta.path = path;
  if (!fs::exists(path)) return meta;
  LineReader lines(path, chunk);
  std::string_view line;
  std::vector<std::string> seen;
  while (lines.next(line)) {
    std::string_view key, value;
    if (!split_tab(line, key, value) || key.empty()) {
      fail_expected(path, lines.number(), "a key and a value separated by a tab", line);
    }
    if (std::find(seen.begin(), seen.end(), key) != seen.end()) {
      fail_at(path, lines.number(), "key \"" + std::string(key) + "\" is given twice");
    }
    seen.emplace_back(key);
    if (key == "name") {
      meta.name = std::string(value);
      continue;
    }
    std::optional<MetaValue>* slot = nullptr;
    std::int64_t min = 0;
    std::int64_t max = std::numeric_limits<NodeId>::max();
    if (key == "num_nodes") {
      slot = &meta.num_nodes;
    } else if (key == "num_features") {
      slot = &meta.num_features;
    } else if (key == "num_classes") {
      slot = &meta.num_classes;
      min = 1;
    } else {
      continue;  // other statistics are informative only
    }
    std::int64_t v = 0;
    if (!parse_id(value, max, v) || v < min) {
      fail_expected(path, lines.number(),
                    "an integer in [" + std::to_string(min) + ", " + std::to_string(max) +
                        "] as the value of " + std::string(key),
                    value);
    }
    *slot = MetaValue{v, lines.number()};
  }
  return meta;
}

/// meta.tsv's name, else the directory's ("." and "data/cora/" have names too).
std::string directory_name(const fs::path& dir, const Meta& meta) {
  if (meta.name) return *meta.name;
  fs::path p = fs::absolute(dir).lexically_normal();
  if (p.filename().empty()) p = p.parent_path();
  return p.filename().string();
}

fs::path required(const fs::path& dir, const char* name) {
  fs::path p = dir / name;
  if (!fs::exists(p)) throw IoError(p.string() + ": missing required file");
  return p;
}

struct Edges {
  std::vector<std::pair<NodeId, NodeId>> list;  // (src, dst)
  std::int64_t max_id = -1;
  std::int64_t max_id_line = 0;
};

/// Calls `sink` with the edges of `path` in batches of up to `batch` (checked line by line);
/// returns the largest id and its first line.
template <class Sink>
std::pair<std::int64_t, std::int64_t> for_each_edge(const fs::path& path, const Meta& meta,
                                                    std::size_t chunk, std::size_t batch,
                                                    const Sink& sink) {
  std::vector<std::pair<NodeId, NodeId>> buf;
  buf.reserve(batch);
  std::int64_t max_seen = -1, max_line = 0;
  const std::int64_t max_id = meta.num_nodes ? meta.num_nodes->value - 1 : kMaxId;
  LineReader lines(path, chunk);
  std::string_view line;
  while (lines.next(line)) {
    std::string_view a, b;
    std::int64_t src = 0;
    std::int64_t dst = 0;
    if (!split_tab(line, a, b) || !parse_id(a, std::numeric_limits<std::int64_t>::max(), src) ||
        !parse_id(b, std::numeric_limits<std::int64_t>::max(), dst)) {
      fail_expected(path, lines.number(), "two non-negative integer node ids separated by a tab",
                    line);
    }
    if (src > max_id || dst > max_id) {
      fail_at(path, lines.number(),
              "node id " + std::to_string(std::max(src, dst)) + " is out of range: " +
                  (meta.num_nodes ? meta.source("num_nodes", *meta.num_nodes)
                                  : "ids must be below " + std::to_string(kMaxId + 1)));
    }
    if (std::max(src, dst) > max_seen) {
      max_seen = std::max(src, dst);
      max_line = lines.number();
    }
    buf.emplace_back(static_cast<NodeId>(src), static_cast<NodeId>(dst));
    if (buf.size() == batch) {
      sink(buf);
      buf.clear();
    }
  }
  if (!buf.empty()) sink(buf);
  return {max_seen, max_line};
}

Edges read_edges(const fs::path& path, const Meta& meta, std::size_t chunk) {
  Edges edges;
  edges.list.reserve(count_newlines(path, chunk) + 1);  // exact: no geometric growth
  std::tie(edges.max_id, edges.max_id_line) =
      for_each_edge(path, meta, chunk, std::size_t{1} << 16,
                    [&](const std::vector<std::pair<NodeId, NodeId>>& batch) {
                      edges.list.insert(edges.list.end(), batch.begin(), batch.end());
                    });
  return edges;
}

struct Labels {
  std::vector<std::int32_t> values;
  std::int32_t max_label = -1;
  std::int64_t max_label_line = 0;  // the first line holding max_label
};

Labels read_labels(const fs::path& path, const Meta& meta, std::size_t chunk) {
  Labels labels;
  const std::int64_t max_label =
      meta.num_classes ? meta.num_classes->value - 1 : std::numeric_limits<std::int32_t>::max() - 1;
  // One int32 per node: a few bytes per node next to the features, so plain geometric growth.
  LineReader lines(path, chunk);
  std::string_view line;
  while (lines.next(line)) {
    if (meta.num_nodes && lines.number() > meta.num_nodes->value) {
      fail_expected(path, lines.number(),
                    "end of file (" + meta.source("num_nodes", *meta.num_nodes) + ")", line);
    }
    std::int64_t label = 0;
    if (!parse_id(line, std::numeric_limits<std::int64_t>::max(), label)) {
      fail_expected(path, lines.number(), "one non-negative integer class id", line);
    }
    if (label > max_label) {
      fail_at(path, lines.number(),
              "class id " + std::to_string(label) + " is out of range: " +
                  (meta.num_classes ? meta.source("num_classes", *meta.num_classes)
                                    : "class ids must be below 2^31 - 1"));
    }
    labels.values.push_back(static_cast<std::int32_t>(label));
    if (label > labels.max_label) {
      labels.max_label = static_cast<std::int32_t>(label);
      labels.max_label_line = lines.number();
    }
  }
  return labels;
}

/// features.coo.tsv: node TAB feature TAB value, in any order, no repeated (node, feature).
kernels::CsrMatrix<std::int32_t, float> read_sparse_features(const kernels::Resources& res,
                                                             const fs::path& path,
                                                             std::int64_t num_nodes,
                                                             const Meta& meta, std::size_t chunk) {
  const std::int64_t max_feature = meta.num_features ? meta.num_features->value - 1 : kMaxId;
  std::vector<std::int32_t> nodes, features;
  std::vector<float> values;
  const std::size_t estimate = count_newlines(path, chunk) + 1;  // exact: no geometric growth
  nodes.reserve(estimate);
  features.reserve(estimate);
  values.reserve(estimate);
  bool in_order = true;  // (node, feature) strictly increasing so far
  LineReader lines(path, chunk);
  std::string_view line;
  while (lines.next(line)) {
    std::string_view a, rest, b, c;
    std::int64_t node = 0;
    std::int64_t feature = 0;
    float value = 0.f;
    const auto any = std::numeric_limits<std::int64_t>::max();
    if (!split_tab(line, a, rest) || !split_tab(rest, b, c) || !parse_id(a, any, node) ||
        !parse_id(b, any, feature) || !parse_float(c, value)) {
      fail_expected(path, lines.number(),
                    "a node id, a feature index and a finite value separated by tabs", line);
    }
    if (node >= num_nodes) {
      fail_at(path, lines.number(),
              "node id " + std::to_string(node) + " is out of range: the dataset has " +
                  std::to_string(num_nodes) + " nodes");
    }
    if (feature > max_feature) {
      fail_at(path, lines.number(),
              "feature index " + std::to_string(feature) + " is out of range: " +
                  (meta.num_features ? meta.source("num_features", *meta.num_features)
                                     : "indices must be below " + std::to_string(kMaxId + 1)));
    }
    if (!nodes.empty()) {
      const auto prev = std::make_pair(nodes.back(), features.back());
      const auto cur =
          std::make_pair(static_cast<std::int32_t>(node), static_cast<std::int32_t>(feature));
      if (cur == prev) {
        fail_at(path, lines.number(),
                "node " + std::to_string(node) + ", feature " + std::to_string(feature) +
                    " is listed twice (also on line " + std::to_string(lines.number() - 1) + ")");
      }
      in_order &= prev < cur;
    }
    nodes.push_back(static_cast<std::int32_t>(node));
    features.push_back(static_cast<std::int32_t>(feature));
    values.push_back(value);
  }
  const auto nnz = static_cast<std::int64_t>(nodes.size());

  // order[k]: the entry stored k-th. Unsorted files take a stable sort, which also exposes
  // repeated (node, feature) pairs as neighbours; the later line is the one reported.
  std::vector<std::int64_t> order(static_cast<std::size_t>(nnz));
  std::iota(order.begin(), order.end(), std::int64_t{0});
  if (!in_order) {
    std::stable_sort(order.begin(), order.end(), [&](std::int64_t x, std::int64_t y) {
      return std::make_pair(nodes[x], features[x]) < std::make_pair(nodes[y], features[y]);
    });
    for (std::int64_t k = 1; k < nnz; ++k) {
      const auto x = order[k - 1];
      const auto y = order[k];
      if (nodes[x] == nodes[y] && features[x] == features[y]) {
        // Entry i sits on line i + 1: every line of the file holds exactly one entry.
        fail_at(path, y + 1,
                "node " + std::to_string(nodes[y]) + ", feature " + std::to_string(features[y]) +
                    " is listed twice (also on line " + std::to_string(x + 1) + ")");
      }
    }
  }

  std::int64_t num_features = meta.num_features ? meta.num_features->value : 0;
  if (!meta.num_features) {
    for (const std::int32_t f : features)
      num_features = std::max<std::int64_t>(num_features, f + 1);
  }
  kernels::CsrMatrix<std::int32_t, float> x{detail::host_tensor<std::int64_t>(res, num_nodes + 1),
                                            detail::host_tensor<std::int32_t>(res, nnz),
                                            detail::host_tensor<float>(res, nnz), num_features};
  std::int64_t* indptr = x.indptr.data();
  std::fill(indptr, indptr + num_nodes + 1, std::int64_t{0});
  for (const std::int32_t v : nodes) ++indptr[v];
  detail::counts_to_offsets(indptr, num_nodes);
  for (std::int64_t k = 0; k < nnz; ++k) {
    const auto i = static_cast<std::size_t>(order[static_cast<std::size_t>(k)]);
    x.indices.data()[k] = features[i];
    x.values.data()[k] = values[i];
  }
  return x;
}

/// features.tsv: line i holds the num_features values of node i, separated by tabs.
kernels::Tensor<float> read_dense_features(const kernels::Resources& res, const fs::path& path,
                                           std::int64_t num_nodes, const Meta& meta,
                                           std::size_t chunk) {
  std::int64_t cols = meta.num_features ? meta.num_features->value : -1;
  // The row count is num_nodes (known from meta.tsv or labels.txt before this file is read) and
  // the column count comes from meta.tsv or the first line, so the tensor is allocated once, at
  // its final size, before the first value is parsed.
  kernels::Tensor<float> x;
  LineReader lines(path, chunk);
  std::string_view line;
  std::int64_t row = 0;
  while (lines.next(line)) {
    if (row == num_nodes) {
      fail_expected(path, lines.number(),
                    "end of file: the dataset has " + std::to_string(num_nodes) + " nodes", line);
    }
    if (cols < 0) cols = std::count(line.begin(), line.end(), '\t') + 1;
    if (x.numel() == 0 && num_nodes * cols > 0) {
      x = detail::host_tensor<float>(res, num_nodes, cols);
    }
    const auto fail_row = [&] {
      fail_expected(path, lines.number(),
                    cols == 0 ? std::string("an empty line (num_features is 0)")
                              : std::to_string(cols) + " tab-separated finite numbers (the " +
                                    "features of node " + std::to_string(row) + ")",
                    line);
    };
    if (cols == 0 && !line.empty()) fail_row();
    std::string_view rest = line;
    for (std::int64_t c = 0; c < cols; ++c) {
      std::string_view token = rest;
      if (c + 1 < cols && !split_tab(rest, token, rest)) fail_row();
      float value = 0.f;
      if (!parse_float(token, value)) fail_row();
      x.data()[row * cols + c] = value;
    }
    ++row;
  }
  if (row < num_nodes) {
    fail_expected_eof(path, lines.number() + 1,
                      "the features of node " + std::to_string(row) + " (the dataset has " +
                          std::to_string(num_nodes) + " nodes)");
  }
  if (x.numel() == 0)
    x = detail::host_tensor<float>(res, num_nodes, std::max<std::int64_t>(cols, 0));
  return x;
}

/// Line number of the first line of the file at `path` that holds exactly `id`.
std::int64_t first_line_of(const fs::path& path, std::int64_t id, std::size_t chunk) {
  LineReader lines(path, chunk);
  std::string_view line;
  while (lines.next(line)) {
    std::int64_t v = -1;
    if (parse_id(line, std::numeric_limits<std::int64_t>::max(), v) && v == id) {
      return lines.number();
    }
  }
  return 0;
}

/// Reads one split file. owner[v] names the split file (1-based index into `split_files`) that
/// already listed v, so that repeated and shared ids are reported with both places.
kernels::Tensor<NodeId> read_split(const kernels::Resources& res, const fs::path& dir,
                                   const char* const* split_files, int which,
                                   std::int64_t num_nodes, std::vector<std::uint8_t>& owner,
                                   std::size_t chunk) {
  const fs::path path = required(dir, split_files[which]);
  std::vector<NodeId> ids;
  LineReader lines(path, chunk);
  std::string_view line;
  while (lines.next(line)) {
    std::int64_t v = 0;
    if (!parse_id(line, std::numeric_limits<std::int64_t>::max(), v)) {
      fail_expected(path, lines.number(), "one non-negative integer node id", line);
    }
    if (v >= num_nodes) {
      fail_at(path, lines.number(),
              "node id " + std::to_string(v) + " is out of range: the dataset has " +
                  std::to_string(num_nodes) + " nodes");
    }
    std::uint8_t& o = owner[static_cast<std::size_t>(v)];
    if (o != 0) {
      const int other = o - 1;
      const std::int64_t first = first_line_of(dir / split_files[other], v, chunk);
      fail_at(path, lines.number(),
              "node " + std::to_string(v) + " is listed again (first on " +
                  std::string(split_files[other]) + ":" + std::to_string(first) + ")");
    }
    o = static_cast<std::uint8_t>(which + 1);
    ids.push_back(static_cast<NodeId>(v));
  }
  std::sort(ids.begin(), ids.end());
  return detail::host_tensor<NodeId>(res, ids);
}

// ---- writing -----------------------------------------------------------------------------------

/// Buffered text output to one file; every failure becomes an IoError naming the file.
class TextWriter {
 public:
  explicit TextWriter(fs::path path) : m_path(std::move(path)) {
    m_file = std::fopen(m_path.c_str(), "wb");
    if (m_file == nullptr)
      throw IoError(m_path.string() + ": cannot create: " + std::strerror(errno));
    m_buffer.reserve(kFlushAt + 256);
  }
  ~TextWriter() {
    if (m_file != nullptr) std::fclose(m_file);
  }
  TextWriter(const TextWriter&) = delete;
  TextWriter& operator=(const TextWriter&) = delete;

  TextWriter& text(std::string_view s) {
    m_buffer.append(s);
    return maybe_flush();
  }
  TextWriter& ch(char c) {
    m_buffer.push_back(c);
    return maybe_flush();
  }
  template <class T>
  TextWriter& number(T v) {
    char buf[64];
    const auto [ptr, ec] = std::to_chars(buf, buf + sizeof buf, v);  // shortest round-trip form
    m_buffer.append(buf, ptr);
    return maybe_flush();
  }
  void close() {
    flush();
    const int rc = std::fclose(m_file);
    m_file = nullptr;
    if (rc != 0) throw IoError(m_path.string() + ": write error: " + std::strerror(errno));
  }

 private:
  static constexpr std::size_t kFlushAt = 1 << 20;
  TextWriter& maybe_flush() {
    if (m_buffer.size() >= kFlushAt) flush();
    return *this;
  }
  void flush() {
    if (std::fwrite(m_buffer.data(), 1, m_buffer.size(), m_file) != m_buffer.size()) {
      throw IoError(m_path.string() + ": write error: " + std::strerror(errno));
    }
    m_buffer.clear();
  }
  fs::path m_path;
  std::FILE* m_file = nullptr;
  std::string m_buffer;
};

void write_ids(const fs::path& path, const kernels::Tensor<NodeId>& ids) {
  TextWriter w(path);
  for (std::int64_t i = 0; i < ids.numel(); ++i) w.number(ids.data()[i]).ch('\n');
  w.close();
}

void write_files(const kernels::Resources& res, const Dataset& ds, const fs::path& dir) {
  const std::int64_t n = ds.num_nodes();
  {
    // Aᵀ lists, for every source, its destinations in ascending order: lines sorted by (src, dst).
    const Graph t = detail::transpose(res, ds.graph);
    TextWriter w(dir / "edges.tsv");
    for (std::int64_t src = 0; src < n; ++src) {
      for (std::int64_t e = t.indptr.data()[src]; e < t.indptr.data()[src + 1]; ++e) {
        w.number(src).ch('\t').number(t.indices.data()[e]).ch('\n');
      }
    }
    w.close();
  }
  if (const auto* dense = std::get_if<kernels::Tensor<float>>(&ds.features)) {
    TextWriter w(dir / "features.tsv");
    for (std::int64_t r = 0; r < dense->rows(); ++r) {
      for (std::int64_t c = 0; c < dense->cols(); ++c) {
        if (c > 0) w.ch('\t');
        w.number((*dense)(r, c));
      }
      w.ch('\n');
    }
    w.close();
  } else {
    const auto& sparse = std::get<kernels::CsrMatrix<std::int32_t, float>>(ds.features);
    TextWriter w(dir / "features.coo.tsv");
    for (std::int64_t r = 0; r < sparse.num_rows(); ++r) {
      for (std::int64_t e = sparse.indptr.data()[r]; e < sparse.indptr.data()[r + 1]; ++e) {
        const float v = sparse.values.empty() ? 1.0f : sparse.values.data()[e];
        w.number(r).ch('\t').number(sparse.indices.data()[e]).ch('\t').number(v).ch('\n');
      }
    }
    w.close();
  }
  {
    TextWriter w(dir / "labels.txt");
    for (std::int64_t v = 0; v < n; ++v) w.number(ds.labels.data()[v]).ch('\n');
    w.close();
  }
  write_ids(dir / "train_idx.txt", ds.train_idx);
  write_ids(dir / "val_idx.txt", ds.val_idx);
  write_ids(dir / "test_idx.txt", ds.test_idx);
  {
    TextWriter w(dir / "meta.tsv");
    w.text("name\t").text(ds.name).ch('\n');
    w.text("num_nodes\t").number(n).ch('\n');
    w.text("num_features\t").number(ds.num_features()).ch('\n');
    w.text("num_classes\t").number(ds.num_classes).ch('\n');
    w.text("num_directed_edges\t").number(ds.graph.num_edges()).ch('\n');
    w.close();
  }
}

}  // namespace

Dataset read_directory(const kernels::Resources& res, const fs::path& dir) {
  return detail::read_directory(res, dir, detail::kPlainChunkBytes);
}

Dataset detail::read_directory(const kernels::Resources& res, const fs::path& dir,
                               std::size_t chunk) {
  if (!fs::is_directory(dir)) throw IoError(dir.string() + ": not a directory");
  const Meta meta = read_meta(dir / "meta.tsv", chunk);

  const fs::path edges_path = required(dir, "edges.tsv");
  const fs::path labels_path = dir / "labels.txt";
  const fs::path sparse_path = dir / "features.coo.tsv";
  const fs::path dense_path = dir / "features.tsv";
  const char* const split_files[] = {"train_idx.txt", "val_idx.txt", "test_idx.txt"};
  const auto present = [&](const fs::path& p) { return fs::exists(p); };
  if (!present(labels_path) && !present(sparse_path) && !present(dense_path) &&
      std::none_of(std::begin(split_files), std::end(split_files),
                   [&](const char* f) { return present(dir / f); })) {
    // A bare graph (a web or collaboration graph): what graph-only readers give.
    Edges edges = read_edges(edges_path, meta, chunk);
    const std::int64_t n = meta.num_nodes ? meta.num_nodes->value : edges.max_id + 1;
    Dataset ds = graph_only_dataset(res, deduplicate(res, graph_from_edges(res, n, edges.list)));
    ds.name = directory_name(dir, meta);
    return ds;
  }
  required(dir, "labels.txt");
  const bool sparse = fs::exists(sparse_path);
  if (sparse && fs::exists(dense_path)) {
    throw IoError(dir.string() + ": both features.coo.tsv and features.tsv are present; keep one");
  }
  if (!sparse && !fs::exists(dense_path)) {
    throw IoError(sparse_path.string() + ": missing required file (or features.tsv)");
  }
  for (const char* f : split_files) required(dir, f);

  Edges edges = read_edges(edges_path, meta, chunk);
  Labels labels = read_labels(labels_path, meta, chunk);
  const auto num_labels = static_cast<std::int64_t>(labels.values.size());
  const std::int64_t n =
      meta.num_nodes ? meta.num_nodes->value : std::max(num_labels, edges.max_id + 1);
  if (num_labels < n) {
    const std::string why = meta.num_nodes ? meta.source("num_nodes", *meta.num_nodes)
                                           : "edges.tsv:" + std::to_string(edges.max_id_line) +
                                                 " mentions node " + std::to_string(edges.max_id);
    fail_expected_eof(labels_path, num_labels + 1,
                      "the class id of node " + std::to_string(num_labels) + " (" + why + ")");
  }
  // Checked before anything is allocated per class: one stray id such as 2147483646 would
  // otherwise become a model with 2^31 outputs (std::bad_alloc far from the cause).
  if (!meta.num_classes && labels.max_label + std::int64_t{1} > detail::max_inferred_classes(n)) {
    fail_at(labels_path, labels.max_label_line,
            detail::inferred_classes_error(labels.max_label, n,
                                           "give num_classes in meta.tsv if this is meant"));
  }

  Dataset ds;
  ds.name = directory_name(dir, meta);
  ds.graph = deduplicate(res, graph_from_edges(res, n, edges.list));
  edges = {};
  if (sparse) {
    ds.features = read_sparse_features(res, sparse_path, n, meta, chunk);
  } else {
    ds.features = read_dense_features(res, dense_path, n, meta, chunk);
  }
  ds.labels = detail::host_tensor<std::int32_t>(res, labels.values);
  ds.num_classes =
      meta.num_classes ? static_cast<std::int32_t>(meta.num_classes->value) : labels.max_label + 1;
  std::vector<std::uint8_t> owner(static_cast<std::size_t>(n), 0);
  ds.train_idx = read_split(res, dir, split_files, 0, n, owner, chunk);
  ds.val_idx = read_split(res, dir, split_files, 1, n, owner, chunk);
  ds.test_idx = read_split(res, dir, split_files, 2, n, owner, chunk);
  validate(ds);
  return ds;
}

bool is_bare_graph(const fs::path& dir) {
  std::error_code ec;
  if (!fs::is_regular_file(dir / "edges.tsv", ec)) return false;
  for (const char* f : {"labels.txt", "features.coo.tsv", "features.tsv", "train_idx.txt",
                        "val_idx.txt", "test_idx.txt"})
    if (fs::exists(dir / f, ec)) return false;
  return true;
}

PrepareReport prepare_bare_graph(const kernels::Resources& res, const fs::path& dir,
                                 const fs::path& out, const PrepareOptions& options) {
  if (!is_bare_graph(dir))
    throw IoError(dir.string() +
                  ": not a bare graph (a directory holding edges.tsv and at most "
                  "meta.tsv of the plain format's files)");
  const std::size_t budget = std::max<std::size_t>(options.memory_budget, 4096);
  const Meta meta = read_meta(dir / "meta.tsv", detail::kPlainChunkBytes);
  const std::size_t chunk =
      std::min(detail::kPlainChunkBytes, std::max<std::size_t>(budget / 8, 64));
  const std::size_t read_bytes = std::max<std::size_t>(budget / 8, 8);
  StoreWriter w(out);
  EdgeSpill spill(w.scratch_dir() / "edges.spill", read_bytes);
  const auto [max_id, max_line] = for_each_edge(
      dir / "edges.tsv", meta, chunk, std::max<std::size_t>(read_bytes / 8, 1),
      [&](const std::vector<std::pair<NodeId, NodeId>>& batch) { spill.append(batch); });
  (void)max_line;
  spill.finish();
  const std::int64_t n = meta.num_nodes ? meta.num_nodes->value : max_id + 1;
  const DirectedBuild built = build_directed_csr(res, spill.source(n), budget - read_bytes, w);
  PrepareReport report;
  report.spill_bytes = static_cast<std::uint64_t>(spill.num_edges()) * 8;
  report.row_blocks = built.graph.blocks;
  w.array("graph.values", kernels::Tensor<float>());
  // A graph-only dataset: no feature columns (sparse, empty), every node in class 0 of 1.
  std::vector<std::int64_t> zeros(static_cast<std::size_t>(std::min<std::int64_t>(n + 1, 1 << 16)),
                                  0);
  w.begin("features.indptr", "i64", 8, n + 1, 1);
  for (std::int64_t at = 0; at < n + 1;) {
    const std::int64_t k =
        std::min<std::int64_t>(static_cast<std::int64_t>(zeros.size()), n + 1 - at);
    w.append(zeros.data(), static_cast<std::size_t>(k) * 8);
    at += k;
  }
  w.end();
  w.array("features.indices", kernels::Tensor<std::int32_t>());
  w.array("features.values", kernels::Tensor<float>());
  w.begin("labels", "i32", 4, n, 1);
  for (std::int64_t at = 0; at < n;) {
    const std::int64_t k =
        std::min<std::int64_t>(static_cast<std::int64_t>(zeros.size()) * 2, n - at);
    w.append(zeros.data(), static_cast<std::size_t>(k) * 4);
    at += k;
  }
  w.end();
  for (const char* split : {"train_idx", "val_idx", "test_idx"})
    w.array(split, kernels::Tensor<std::int32_t>());
  StoreCounts c;
  c.name = directory_name(dir, meta);
  c.num_nodes = n;
  built.record(c);
  c.sparse_features = true;
  c.num_classes = 1;
  w.commit(c, options.source_checksum);
  report.counts = read_store_counts(out);
  return report;
}

void write_directory(const kernels::Resources& res, const Dataset& ds, const fs::path& dir) {
  validate(ds);
  HALO_EXPECTS(ds.graph.values.empty(),
               "write_directory: the plain format stores unweighted graphs only");
  HALO_EXPECTS(ds.name.find_first_of("\t\r\n") == std::string::npos,
               "write_directory: the dataset name must not contain tabs or line breaks");

  write_staged_directory(dir, [&](const fs::path& tmp) { write_files(res, ds, tmp); });
}

}  // namespace halo::datasets
