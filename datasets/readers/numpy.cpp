#include <unistd.h>
#include <zip.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstring>
#include <limits>
#include <memory>
#include <numeric>

#include <halo/datasets/detail/host.hpp>
#include <halo/datasets/detail/text.hpp>
#include <halo/datasets/fetch/archive.hpp>
#include <halo/datasets/preprocess.hpp>
#include <halo/datasets/readers/numpy.hpp>
#include <halo/kernels/atomic_file.hpp>
#include <halo/kernels/error.hpp>

namespace halo::datasets {
namespace {

namespace fs = std::filesystem;

/// Splits a normalised dtype ("<f4", "|S3") into kind and item size; false if unsupported.
bool dtype_parts(std::string_view dtype, char& kind, std::size_t& size) {
  if (dtype.size() < 3 || (dtype[0] != '<' && dtype[0] != '|')) return false;
  kind = dtype[1];
  std::int64_t n = 0;
  if (!detail::parse_int(dtype.substr(2), n) || n <= 0 || n > (1 << 20)) return false;
  size = static_cast<std::size_t>(n);
  switch (kind) {
    case 'f':
      return size == 4 || size == 8;
    case 'i':
    case 'u':
      return size == 1 || size == 2 || size == 4 || size == 8;
    case 'b':
      return size == 1;
    case 'S':
      return true;
    case 'U':
      return true;  // item size in characters (4 bytes each)
    default:
      return false;
  }
}

template <class T>
T load(const char* p) {
  T v;
  std::memcpy(&v, p, sizeof v);
  return v;
}

/// Calls f(double-or-int64 value) for each element of a numeric array.
template <class F>
void for_each_number(const NpyArray& a, const std::string& what, const F& f) {
  check_npy(a, what);
  char kind = 0;
  std::size_t size = 0;
  dtype_parts(a.dtype, kind, size);
  const char* p = a.bytes.data();
  const std::int64_t n = a.numel();
  for (std::int64_t i = 0; i < n; ++i, p += size) {
    switch (kind) {
      case 'f':
        size == 4 ? f(static_cast<double>(load<float>(p))) : f(load<double>(p));
        break;
      case 'b':
        f(static_cast<std::int64_t>(*p != 0));
        break;
      case 'i':
        if (size == 1) f(static_cast<std::int64_t>(load<std::int8_t>(p)));
        if (size == 2) f(static_cast<std::int64_t>(load<std::int16_t>(p)));
        if (size == 4) f(static_cast<std::int64_t>(load<std::int32_t>(p)));
        if (size == 8) f(load<std::int64_t>(p));
        break;
      case 'u':
        if (size == 1) f(static_cast<std::int64_t>(load<std::uint8_t>(p)));
        if (size == 2) f(static_cast<std::int64_t>(load<std::uint16_t>(p)));
        if (size == 4) f(static_cast<std::int64_t>(load<std::uint32_t>(p)));
        if (size == 8) {
          const auto v = load<std::uint64_t>(p);
          if (v > static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max())) {
            throw IoError(what + ": element " + std::to_string(i) + " does not fit int64");
          }
          f(static_cast<std::int64_t>(v));
        }
        break;
      default:
        throw IoError(what + ": dtype " + a.dtype + " is not numeric");
    }
  }
}

/// The text of a 0-d or 1-element string array ('S' bytes or 'U' UTF-32 ASCII).
std::string to_text(const NpyArray& a, const std::string& what) {
  check_npy(a, what);
  char kind = 0;
  std::size_t size = 0;
  dtype_parts(a.dtype, kind, size);
  if ((kind != 'S' && kind != 'U') || a.numel() != 1) {
    throw IoError(what + ": expected one string, got dtype " + a.dtype);
  }
  std::string out;
  if (kind == 'S') {
    out = a.bytes;
  } else {
    for (std::size_t i = 0; i + 4 <= a.bytes.size(); i += 4) {
      const auto c = load<std::uint32_t>(a.bytes.data() + i);
      if (c >= 0x80) throw IoError(what + ": non-ASCII text");
      out += static_cast<char>(c);
    }
  }
  while (!out.empty() && out.back() == '\0') out.pop_back();
  return out;
}

// ---- the .npy header: a Python dict literal ----------------------------------------------------

class HeaderParser {
 public:
  HeaderParser(std::string_view text, const std::string& source) : m_s(text), m_source(source) {}

  void parse(NpyArray& out) {
    bool have_descr = false, have_order = false, have_shape = false;
    expect('{');
    while (true) {
      skip();
      if (peek() == '}') break;
      const std::string key = string_literal();
      expect(':');
      skip();
      if (key == "descr") {
        if (peek() != '\'' && peek() != '"') fail("structured dtypes (a descr list) are refused");
        out.dtype = string_literal();
        have_descr = true;
      } else if (key == "fortran_order") {
        const std::string word = identifier();
        if (word == "True") fail("Fortran-ordered arrays are not supported; save in C order");
        if (word != "False") fail("fortran_order must be True or False");
        have_order = true;
      } else if (key == "shape") {
        out.shape = tuple();
        have_shape = true;
      } else {
        fail("unknown header key '" + key + "'");
      }
      skip();
      if (peek() == ',') {
        ++m_pos;
        continue;
      }
      skip();
      if (peek() != '}') fail("expected ',' or '}' in the header");
    }
    if (!have_descr || !have_order || !have_shape) {
      fail("the header lacks one of 'descr', 'fortran_order', 'shape'");
    }
    // Normalise the byte order: '=' (native) is little-endian on every supported machine.
    if (!out.dtype.empty() && out.dtype[0] == '=') out.dtype[0] = '<';
    if (!out.dtype.empty() && out.dtype[0] == '>') {
      fail("big-endian dtype '" + out.dtype + "' is not supported; save little-endian");
    }
    if (out.dtype.size() >= 2 && out.dtype[1] == 'O') fail("object arrays are refused");
    if (out.dtype.size() >= 3 && out.dtype[0] == '<' &&
        (out.dtype.substr(1) == "i1" || out.dtype.substr(1) == "u1" ||
         out.dtype.substr(1) == "b1")) {
      out.dtype[0] = '|';
    }
  }

 private:
  [[noreturn]] void fail(const std::string& what) const {
    throw IoError(m_source + ": .npy header: " + what);
  }
  char peek() const { return m_pos < m_s.size() ? m_s[m_pos] : '\0'; }
  void skip() {
    while (m_pos < m_s.size() && (m_s[m_pos] == ' ' || m_s[m_pos] == '\n')) ++m_pos;
  }
  void expect(char c) {
    skip();
    if (peek() != c) fail(std::string("expected '") + c + "'");
    ++m_pos;
  }
  std::string string_literal() {
    skip();
    const char q = peek();
    if (q != '\'' && q != '"') fail("expected a quoted string");
    const std::size_t end = m_s.find(q, m_pos + 1);
    if (end == std::string_view::npos) fail("unterminated string");
    std::string out(m_s.substr(m_pos + 1, end - m_pos - 1));
    m_pos = end + 1;
    return out;
  }
  std::string identifier() {
    skip();
    const std::size_t start = m_pos;
    while (m_pos < m_s.size() && std::isalpha(static_cast<unsigned char>(m_s[m_pos]))) ++m_pos;
    return std::string(m_s.substr(start, m_pos - start));
  }
  std::vector<std::int64_t> tuple() {
    expect('(');
    std::vector<std::int64_t> dims;
    while (true) {
      skip();
      if (peek() == ')') {
        ++m_pos;
        return dims;
      }
      const std::size_t start = m_pos;
      while (m_pos < m_s.size() && std::isdigit(static_cast<unsigned char>(m_s[m_pos]))) ++m_pos;
      if (m_pos > start && peek() == 'L') ++m_pos;  // Python 2 long
      std::int64_t v = 0;
      std::string_view digits = m_s.substr(start, m_pos - start);
      if (!digits.empty() && digits.back() == 'L') digits.remove_suffix(1);
      if (!detail::parse_int(digits, v)) fail("expected a dimension");
      dims.push_back(v);
      if (dims.size() > 32) fail("more than 32 dimensions");
      skip();
      if (peek() == ',') ++m_pos;
    }
  }

  std::string_view m_s;
  std::string m_source;
  std::size_t m_pos = 0;
};

}  // namespace

std::int64_t NpyArray::numel() const {
  std::int64_t n = 1;
  for (const std::int64_t d : shape) {
    if (d < 0 || __builtin_mul_overflow(n, d, &n)) return -1;
  }
  return n;
}

std::size_t NpyArray::item_size() const {
  char kind = 0;
  std::size_t size = 0;
  if (!dtype_parts(dtype, kind, size)) return 0;
  return kind == 'U' ? 4 * size : size;
}

void check_npy(const NpyArray& a, const std::string& what) {
  char kind = 0;
  std::size_t size = 0;
  if (!a.dtype.empty() && a.dtype[0] == '>') {
    throw IoError(what + ": big-endian dtype '" + a.dtype + "' is not supported");
  }
  if (!dtype_parts(a.dtype, kind, size)) {
    throw IoError(what + ": unsupported dtype '" + a.dtype +
                  "' (supported: little-endian bool, int, uint, float32/64 and strings)");
  }
  const std::int64_t n = a.numel();
  if (n < 0) throw IoError(what + ": invalid shape (negative or overflowing dimensions)");
  std::uint64_t want = 0;
  if (__builtin_mul_overflow(static_cast<std::uint64_t>(n), a.item_size(), &want) ||
      want != a.bytes.size()) {
    throw IoError(what + ": " + std::to_string(a.bytes.size()) + " data bytes for " +
                  std::to_string(n) + " elements of dtype " + a.dtype);
  }
}

std::vector<double> to_doubles(const NpyArray& a, const std::string& what) {
  std::vector<double> out;
  out.reserve(static_cast<std::size_t>(std::max<std::int64_t>(a.numel(), 0)));
  for_each_number(a, what, [&](auto v) { out.push_back(static_cast<double>(v)); });
  return out;
}

std::vector<std::int64_t> to_int64s(const NpyArray& a, const std::string& what) {
  std::vector<std::int64_t> out;
  out.reserve(static_cast<std::size_t>(std::max<std::int64_t>(a.numel(), 0)));
  for_each_number(a, what, [&](auto v) {
    if constexpr (std::is_same_v<decltype(v), double>) {
      if (!(std::trunc(v) == v && std::abs(v) < 9.2e18)) {
        throw IoError(what + ": element " + std::to_string(out.size()) + " is not a whole number");
      }
      out.push_back(static_cast<std::int64_t>(v));
    } else {
      out.push_back(v);
    }
  });
  return out;
}

std::string npy_bytes(const NpyArray& a) {
  check_npy(a, "npy_bytes");
  std::string shape = "(";
  for (const std::int64_t d : a.shape) shape += std::to_string(d) + ", ";
  if (a.shape.size() > 1) shape.resize(shape.size() - 2);  // (n,) keeps its comma
  if (a.shape.size() == 1) shape.resize(shape.size() - 1);
  shape += ")";
  std::string header =
      "{'descr': '" + a.dtype + "', 'fortran_order': False, 'shape': " + shape + ", }";
  // Version 1.0: magic, 2 version bytes, a u16 header length; the data start 64-byte aligned
  // and the header ends in a newline.
  const std::size_t prefix = 10;
  header.append(63 - (prefix + header.size()) % 64, ' ');
  header += '\n';
  std::string out = "\x93NUMPY";
  out += '\x01';
  out += '\x00';
  const auto len = static_cast<std::uint16_t>(header.size());
  out += static_cast<char>(len & 0xff);
  out += static_cast<char>(len >> 8);
  return out + header + a.bytes;
}

void write_npy(const std::filesystem::path& path, const NpyArray& a) {
  kernels::write_file_atomically(path, npy_bytes(a));
}

NpyArray parse_npy(std::string_view data, const std::string& source) {
  static constexpr std::string_view kMagic("\x93NUMPY", 6);
  if (data.size() < 10 || data.substr(0, 6) != kMagic) {
    throw IoError(source + ": not a .npy file (bad magic string)");
  }
  const auto major = static_cast<unsigned char>(data[6]);
  std::size_t header_len = 0;
  std::size_t offset = 0;
  if (major == 1) {
    header_len = static_cast<unsigned char>(data[8]) | (static_cast<unsigned char>(data[9]) << 8);
    offset = 10;
  } else if (major == 2 || major == 3) {
    if (data.size() < 12) throw IoError(source + ": truncated .npy header");
    header_len = 0;
    for (int i = 0; i < 4; ++i) {
      header_len |= static_cast<std::size_t>(static_cast<unsigned char>(data[8 + i])) << (8 * i);
    }
    offset = 12;
  } else {
    throw IoError(source + ": unsupported .npy format version " + std::to_string(major));
  }
  if (header_len > data.size() - offset) throw IoError(source + ": truncated .npy header");
  NpyArray a;
  HeaderParser(data.substr(offset, header_len), source).parse(a);
  a.bytes = std::string(data.substr(offset + header_len));
  char kind = 0;
  std::size_t size = 0;
  if (!dtype_parts(a.dtype, kind, size)) {
    throw IoError(source + ": unsupported dtype '" + a.dtype +
                  "' (supported: little-endian bool, int, uint, float32/64 and strings)");
  }
  const std::int64_t n = a.numel();
  if (n < 0) throw IoError(source + ": invalid shape");
  std::uint64_t want = 0;
  if (__builtin_mul_overflow(static_cast<std::uint64_t>(n), a.item_size(), &want) ||
      want > a.bytes.size()) {
    throw IoError(source + ": truncated data: " + std::to_string(a.bytes.size()) + " bytes for " +
                  std::to_string(n) + " elements of dtype " + a.dtype);
  }
  if (want < a.bytes.size()) {
    throw IoError(source + ": " + std::to_string(a.bytes.size() - want) +
                  " unexpected bytes after the array data");
  }
  return a;
}

NpyArray read_npy(const fs::path& path) {
  return parse_npy(detail::read_whole_file(path), path.string());
}

std::map<std::string, NpyArray> read_npz(const fs::path& path, std::size_t max_bytes) {
  std::map<std::string, NpyArray> out;
  for (const std::string& entry : list_zip_entries(path)) {
    if (entry.size() < 4 || entry.substr(entry.size() - 4) != ".npy") continue;
    const std::string data = read_zip_entry(path, entry, max_bytes);
    out[entry.substr(0, entry.size() - 4)] = parse_npy(data, path.string() + ": " + entry);
  }
  return out;
}

struct NpyStream::Impl {
  zip_t* zip = nullptr;
  zip_file_t* file = nullptr;
  std::string where;
  NpyArray header;
  std::uint64_t left = 0;  // data bytes not read yet

  void raw(void* out, std::size_t bytes, const char* what) {
    auto* p = static_cast<char*>(out);
    while (bytes > 0) {
      const zip_int64_t got = zip_fread(file, p, bytes);
      if (got <= 0)
        throw IoError(
            where + ": " +
            (got < 0 ? std::string(zip_file_strerror(file)) : std::string("truncated ") + what));
      p += got;
      bytes -= static_cast<std::size_t>(got);
    }
  }
};

NpyStream::NpyStream(const fs::path& npz, const std::string& name) : m(std::make_unique<Impl>()) {
  m->where = npz.string() + ": " + name + ".npy";
  int code = 0;
  m->zip = zip_open(npz.c_str(), ZIP_RDONLY, &code);
  if (m->zip == nullptr) {
    zip_error_t err;
    zip_error_init_with_code(&err, code);
    const std::string msg = zip_error_strerror(&err);
    zip_error_fini(&err);
    throw IoError(npz.string() + ": cannot open as a zip archive: " + msg);
  }
  const zip_int64_t index = zip_name_locate(m->zip, (name + ".npy").c_str(), 0);
  if (index < 0) {
    zip_discard(m->zip);
    throw IoError(npz.string() + ": no array \"" + name + "\"");
  }
  m->file = zip_fopen_index(m->zip, static_cast<zip_uint64_t>(index), 0);
  if (m->file == nullptr) {
    const std::string msg = zip_strerror(m->zip);
    zip_discard(m->zip);
    throw IoError(m->where + ": cannot read: " + msg);
  }
  try {
    char prefix[12];
    m->raw(prefix, 10, "header");
    if (std::string_view(prefix, 6) != std::string_view("\x93NUMPY", 6))
      throw IoError(m->where + ": not a .npy file (bad magic string)");
    const auto major = static_cast<unsigned char>(prefix[6]);
    std::size_t len = 0;
    if (major == 1) {
      len = static_cast<unsigned char>(prefix[8]) | (static_cast<unsigned char>(prefix[9]) << 8);
    } else if (major == 2 || major == 3) {
      m->raw(prefix + 10, 2, "header");
      for (int i = 0; i < 4; ++i)
        len |= static_cast<std::size_t>(static_cast<unsigned char>(prefix[8 + i])) << (8 * i);
    } else {
      throw IoError(m->where + ": unsupported .npy format version " + std::to_string(major));
    }
    if (len > (std::size_t{1} << 20)) throw IoError(m->where + ": implausible .npy header length");
    std::string text(len, '\0');
    m->raw(text.data(), len, "header");
    HeaderParser(text, m->where).parse(m->header);
    char kind = 0;
    std::size_t size = 0;
    if (!dtype_parts(m->header.dtype, kind, size))
      throw IoError(m->where + ": unsupported dtype '" + m->header.dtype + "'");
    const std::int64_t n = m->header.numel();
    if (n < 0) throw IoError(m->where + ": invalid shape");
    m->left = static_cast<std::uint64_t>(n) * m->header.item_size();
  } catch (...) {
    zip_fclose(m->file);
    zip_discard(m->zip);
    throw;
  }
}

NpyStream::~NpyStream() {
  zip_fclose(m->file);
  zip_discard(m->zip);
}

const NpyArray& NpyStream::header() const { return m->header; }
std::uint64_t NpyStream::remaining() const { return m->left; }

void NpyStream::read(void* out, std::size_t bytes) {
  if (bytes > m->left)
    throw IoError(m->where + ": read past the array's " + std::to_string(m->left) + " bytes");
  m->raw(out, bytes, "data");
  m->left -= bytes;
}

void NpyStream::skip(std::uint64_t bytes) {
  std::vector<char> sink(static_cast<std::size_t>(std::min<std::uint64_t>(bytes, 1 << 20)));
  while (bytes > 0) {
    const auto n = static_cast<std::size_t>(std::min<std::uint64_t>(bytes, sink.size()));
    read(sink.data(), n);
    bytes -= n;
  }
}

void write_npz(const fs::path& path, const std::map<std::string, NpyArray>& arrays) {
  // Serialise (and check) every array before the archive exists: a bad array leaves no file.
  std::vector<std::pair<std::string, std::string>> entries;
  entries.reserve(arrays.size());
  for (const auto& [name, a] : arrays) {
    if (name.empty() || name.find('/') != std::string::npos) {
      throw LogicError("write_npz: invalid array name '" + name + "'");
    }
    try {
      entries.emplace_back(name + ".npy", npy_bytes(a));
    } catch (const IoError& e) {
      throw LogicError("write_npz: array '" + name + "': " + e.what());
    }
  }
  // Beside the file the path names (a symbolic link is written through; a device or a FIFO
  // is refused), then renamed over it.
  const fs::path tmp =
      kernels::output_file_target(path).string() + ".tmp-" + std::to_string(::getpid());
  const auto fail = [&](zip_t* z, const std::string& why) {
    if (z != nullptr) zip_discard(z);
    std::error_code ignored;
    fs::remove(tmp, ignored);
    throw IoError(path.string() + ": cannot write (" + why + ")");
  };
  int code = 0;
  zip_t* z = zip_open(tmp.c_str(), ZIP_CREATE | ZIP_TRUNCATE, &code);
  if (z == nullptr) {
    zip_error_t err;
    zip_error_init_with_code(&err, code);
    const std::string msg = zip_error_strerror(&err);
    zip_error_fini(&err);
    fail(nullptr, msg);
  }
  for (const auto& [name, bytes] : entries) {
    // The buffers stay alive until zip_close, which reads them.
    zip_source_t* src = zip_source_buffer(z, bytes.data(), bytes.size(), 0);
    if (src == nullptr) fail(z, zip_strerror(z));
    const zip_int64_t index = zip_file_add(z, name.c_str(), src, ZIP_FL_ENC_UTF_8);
    if (index < 0) {
      zip_source_free(src);
      fail(z, zip_strerror(z));
    }
    if (zip_set_file_compression(z, static_cast<zip_uint64_t>(index), ZIP_CM_STORE, 0) != 0) {
      fail(z, zip_strerror(z));
    }
  }
  if (zip_close(z) != 0) fail(z, zip_strerror(z));
  kernels::commit_output_file(tmp, path);
}

namespace {

/// read_scipy_npz; `with_values` false skips the `data` array (an unweighted graph is wanted),
/// which saves a double per entry on large adjacencies such as Reddit's 114M entries.
kernels::CsrMatrix<NodeId, float> scipy_npz(const kernels::Resources& res, const fs::path& path,
                                            bool with_values) {
  const auto arrays = read_npz(path);
  const std::string where = path.string();
  const auto get = [&](const char* key) -> const NpyArray& {
    const auto it = arrays.find(key);
    if (it == arrays.end()) {
      throw IoError(where + ": missing array '" + key + "' of a SciPy sparse matrix");
    }
    return it->second;
  };
  const std::string format = to_text(get("format"), where + ": format");
  const std::vector<std::int64_t> shape = to_int64s(get("shape"), where + ": shape");
  if (shape.size() != 2 || shape[0] < 0 || shape[1] < 0 ||
      shape[0] > std::numeric_limits<NodeId>::max() ||
      shape[1] > std::numeric_limits<NodeId>::max()) {
    throw IoError(where + ": shape must hold two dimensions in [0, 2^31 - 1]");
  }
  const std::int64_t rows = shape[0];
  const std::int64_t cols = shape[1];
  const bool has_data = with_values && arrays.count("data") != 0;

  std::vector<std::int64_t> indptr;
  std::vector<std::int64_t> indices;
  std::vector<double> values;
  if (format == "csr") {
    indptr = to_int64s(get("indptr"), where + ": indptr");
    indices = to_int64s(get("indices"), where + ": indices");
    if (static_cast<std::int64_t>(indptr.size()) != rows + 1 || indptr[0] != 0 ||
        indptr.back() != static_cast<std::int64_t>(indices.size())) {
      throw IoError(where + ": indptr must have shape[0] + 1 entries from 0 to len(indices)");
    }
    for (std::int64_t r = 0; r < rows; ++r) {
      if (indptr[r] > indptr[r + 1]) {
        throw IoError(where + ": indptr decreases at row " + std::to_string(r));
      }
    }
  } else if (format == "coo") {
    const std::vector<std::int64_t> row = to_int64s(get("row"), where + ": row");
    indices = to_int64s(get("col"), where + ": col");
    if (row.size() != indices.size()) throw IoError(where + ": row and col differ in length");
    indptr.assign(static_cast<std::size_t>(rows) + 1, 0);
    for (std::size_t e = 0; e < row.size(); ++e) {
      if (row[e] < 0 || row[e] >= rows) {
        throw IoError(where + ": row[" + std::to_string(e) + "] = " + std::to_string(row[e]) +
                      " is outside [0, " + std::to_string(rows) + ")");
      }
      ++indptr[static_cast<std::size_t>(row[e]) + 1];
    }
    std::partial_sum(indptr.begin(), indptr.end(), indptr.begin());
    // Bucket the entries by row (stable), carrying values along.
    std::vector<double> raw;
    if (has_data) {
      raw = to_doubles(get("data"), where + ": data");
      if (raw.size() != row.size()) throw IoError(where + ": data and row differ in length");
    }
    std::vector<std::int64_t> sorted_cols(row.size());
    if (with_values) values.resize(row.size());
    std::vector<std::int64_t> next(indptr.begin(), indptr.end() - 1);
    for (std::size_t e = 0; e < row.size(); ++e) {
      const auto pos = static_cast<std::size_t>(next[static_cast<std::size_t>(row[e])]++);
      sorted_cols[pos] = indices[e];
      if (with_values) values[pos] = has_data ? raw[e] : 1.0;
    }
    indices = std::move(sorted_cols);
  } else {
    throw IoError(where + ": sparse format '" + format + "' is not supported (csr or coo)");
  }
  if (format == "csr" && with_values) {
    values = has_data ? to_doubles(get("data"), where + ": data")
                      : std::vector<double>(indices.size(), 1.0);
    if (values.size() != indices.size()) {
      throw IoError(where + ": data and indices differ in length");
    }
  }
  const auto nnz = static_cast<std::int64_t>(indices.size());
  for (std::int64_t e = 0; e < nnz; ++e) {
    if (indices[e] < 0 || indices[e] >= cols) {
      throw IoError(where + ": column " + std::to_string(indices[e]) + " of entry " +
                    std::to_string(e) + " is outside [0, " + std::to_string(cols) + ")");
    }
  }
  kernels::CsrMatrix<NodeId, float> a{detail::host_tensor<std::int64_t>(res, rows + 1),
                                      detail::host_tensor<NodeId>(res, nnz),
                                      detail::host_tensor<float>(res, with_values ? nnz : 0), cols};
  std::copy(indptr.begin(), indptr.end(), a.indptr.data());
  // Sort each row by column, values following (stable).
  std::vector<std::int64_t> order;
  for (std::int64_t r = 0; r < rows; ++r) {
    const std::int64_t b = indptr[r];
    const std::int64_t e = indptr[r + 1];
    order.resize(static_cast<std::size_t>(e - b));
    std::iota(order.begin(), order.end(), b);
    std::stable_sort(order.begin(), order.end(),
                     [&](std::int64_t x, std::int64_t y) { return indices[x] < indices[y]; });
    for (std::int64_t k = b; k < e; ++k) {
      const auto src = static_cast<std::size_t>(order[static_cast<std::size_t>(k - b)]);
      a.indices.data()[k] = static_cast<NodeId>(indices[src]);
      if (with_values) a.values.data()[k] = static_cast<float>(values[src]);
    }
  }
  return a;
}

}  // namespace

kernels::CsrMatrix<NodeId, float> read_scipy_npz(const kernels::Resources& res,
                                                 const fs::path& path) {
  return scipy_npz(res, path, true);
}

Dataset read_reddit(const kernels::Resources& res, const fs::path& dir) {
  const fs::path data_path = dir / "reddit_data.npz";
  const fs::path graph_path = dir / "reddit_graph.npz";
  const auto data = read_npz(data_path);
  const std::string where = data_path.string();
  const auto get = [&](const char* key) -> const NpyArray& {
    const auto it = data.find(key);
    if (it == data.end()) throw IoError(where + ": missing array '" + std::string(key) + "'");
    return it->second;
  };
  const NpyArray& feature = get("feature");
  if (feature.shape.size() != 2) throw IoError(where + ": feature must be 2-dimensional");
  const std::int64_t n = feature.shape[0];
  const std::int64_t f = feature.shape[1];
  const std::vector<std::int64_t> label = to_int64s(get("label"), where + ": label");
  const std::vector<std::int64_t> types = to_int64s(get("node_types"), where + ": node_types");
  if (static_cast<std::int64_t>(label.size()) != n ||
      static_cast<std::int64_t>(types.size()) != n) {
    throw IoError(where + ": feature has " + std::to_string(n) + " rows but label has " +
                  std::to_string(label.size()) + " and node_types " + std::to_string(types.size()) +
                  " entries");
  }
  auto adj = scipy_npz(res, graph_path, /*with_values=*/false);
  if (adj.num_rows() != n || adj.num_cols != n) {
    throw IoError(graph_path.string() + ": the adjacency is " + std::to_string(adj.num_rows()) +
                  " x " + std::to_string(adj.num_cols) + " but reddit_data.npz has " +
                  std::to_string(n) + " nodes");
  }

  Dataset ds;
  ds.name = "reddit";
  // Entry (r, c) is the edge r -> c, which Halo stores as column r of row c: the transpose.
  ds.graph = deduplicate(res, detail::transpose(res, adj));
  {
    const Graph t = detail::transpose(res, ds.graph);
    ds.graph.symmetric =
        std::equal(t.indptr.data(), t.indptr.data() + t.indptr.numel(), ds.graph.indptr.data()) &&
        std::equal(t.indices.data(), t.indices.data() + t.indices.numel(), ds.graph.indices.data());
  }
  auto x = detail::host_tensor<float>(res, n, f);
  if (feature.dtype == "<f4") {
    check_npy(feature, where + ": feature");
    if (!feature.bytes.empty()) std::memcpy(x.data(), feature.bytes.data(), feature.bytes.size());
  } else {  // other dtypes go through doubles (twice the memory, only for unusual files)
    const std::vector<double> values = to_doubles(feature, where + ": feature");
    std::transform(values.begin(), values.end(), x.data(),
                   [](double v) { return static_cast<float>(v); });
  }
  ds.features = std::move(x);
  ds.labels = detail::host_tensor<std::int32_t>(res, n);
  std::int64_t max_label = -1;
  for (std::int64_t v = 0; v < n; ++v) {
    if (label[v] < 0 || label[v] > std::numeric_limits<std::int32_t>::max() - 1) {
      throw IoError(where + ": label[" + std::to_string(v) + "] = " + std::to_string(label[v]) +
                    " is not a valid class id");
    }
    if (label[v] + 1 > detail::max_inferred_classes(n)) {
      throw IoError(where + ": label[" + std::to_string(v) +
                    "]: " + detail::inferred_classes_error(label[v], n, "is the file corrupt?"));
    }
    ds.labels.data()[v] = static_cast<std::int32_t>(label[v]);
    max_label = std::max(max_label, label[v]);
  }
  ds.num_classes = static_cast<std::int32_t>(max_label + 1);
  std::vector<NodeId> split[3];
  for (std::int64_t v = 0; v < n; ++v) {
    if (types[v] >= 1 && types[v] <= 3) split[types[v] - 1].push_back(static_cast<NodeId>(v));
  }
  ds.train_idx = detail::host_tensor<NodeId>(res, split[0]);
  ds.val_idx = detail::host_tensor<NodeId>(res, split[1]);
  ds.test_idx = detail::host_tensor<NodeId>(res, split[2]);
  validate(ds);
  return ds;
}

}  // namespace halo::datasets
