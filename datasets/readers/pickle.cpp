#include <charconv>
#include <cstdio>
#include <cstring>
#include <limits>
#include <unordered_map>

#include <halo/datasets/detail/text.hpp>
#include <halo/datasets/readers/pickle.hpp>
#include <halo/kernels/error.hpp>

namespace halo::datasets {

using Kind = PickleValue::Kind;

const PickleValue* PickleValue::find(std::string_view key) const {
  for (const auto& [k, v] : entries) {
    if ((k->kind == Kind::Str || k->kind == Kind::Bytes) && k->text == key) return v;
  }
  return nullptr;
}

namespace {

// The globals a data pickle may name. Everything else is refused before any lookup.
enum class Allowed {
  Reconstruct,
  NdArray,
  Dtype,
  CsrMatrix,
  DefaultDict,
  List,
  CodecsEncode,
  CopyRegReconstructor,
  Object
};

bool allowed_global(const std::string& name, Allowed& out) {
  static const std::pair<const char*, Allowed> kTable[] = {
      {"numpy.core.multiarray._reconstruct", Allowed::Reconstruct},
      {"numpy._core.multiarray._reconstruct", Allowed::Reconstruct},
      {"numpy.ndarray", Allowed::NdArray},
      {"numpy.dtype", Allowed::Dtype},
      {"scipy.sparse.csr.csr_matrix", Allowed::CsrMatrix},
      {"scipy.sparse._csr.csr_matrix", Allowed::CsrMatrix},
      {"collections.defaultdict", Allowed::DefaultDict},
      {"__builtin__.list", Allowed::List},
      {"builtins.list", Allowed::List},
      {"_codecs.encode", Allowed::CodecsEncode},
      {"copy_reg._reconstructor", Allowed::CopyRegReconstructor},
      {"copyreg._reconstructor", Allowed::CopyRegReconstructor},
      {"__builtin__.object", Allowed::Object},
      {"builtins.object", Allowed::Object},
  };
  for (const auto& [n, a] : kTable) {
    if (name == n) {
      out = a;
      return true;
    }
  }
  return false;
}

/// dtype type strings the readers understand (NumPy's "kind + item size").
bool known_type(std::string_view t) {
  static const char* const kTypes[] = {"b1", "i1", "i2", "i4", "i8", "u1",
                                       "u2", "u4", "u8", "f4", "f8"};
  for (const char* k : kTypes) {
    if (t == k) return true;
  }
  return false;
}

}  // namespace

class Unpickler {
 public:
  Unpickler(std::string_view data, const std::string& source) : m_data(data), m_source(source) {
    m_empty_tuple = make(Kind::Tuple);
  }

  PickleDocument run() {
    while (true) {
      if (m_pos >= m_data.size()) fail("the pickle ends without a STOP opcode");
      m_op_pos = m_pos;
      const auto op = static_cast<unsigned char>(m_data[m_pos++]);
      if (op == '.') break;
      step(op);
    }
    if (m_stack.size() != 1 || !m_marks.empty()) {
      fail("STOP with " + std::to_string(m_stack.size()) + " values on the stack (expected 1)");
    }
    m_doc.m_root = m_stack.back();
    return std::move(m_doc);
  }

 private:
  [[noreturn]] void fail(const std::string& what) const {
    throw IoError(m_source + ": offset " + std::to_string(m_op_pos) + ": " + what);
  }

  // ---- input ----
  std::string_view take(std::size_t n) {
    if (n > m_data.size() - m_pos) fail("truncated pickle (an argument runs past the end)");
    const std::string_view s = m_data.substr(m_pos, n);
    m_pos += n;
    return s;
  }
  std::uint64_t le(std::size_t n) {
    const std::string_view s = take(n);
    std::uint64_t v = 0;
    for (std::size_t i = 0; i < n; ++i)
      v |= std::uint64_t{static_cast<unsigned char>(s[i])} << (8 * i);
    return v;
  }
  std::string_view text_line() {
    const std::size_t nl = m_data.find('\n', m_pos);
    if (nl == std::string_view::npos) fail("truncated pickle (a text argument has no newline)");
    const std::string_view s = m_data.substr(m_pos, nl - m_pos);
    m_pos = nl + 1;
    return s;
  }

  // ---- values ----
  PickleValue* make(Kind kind) {
    PickleValue& v = m_doc.m_values.emplace_back();
    v.kind = kind;
    return &v;
  }
  void push(const PickleValue* v) { m_stack.push_back(v); }
  PickleValue* push_new(Kind kind) {
    PickleValue* v = make(kind);
    push(v);
    return v;
  }
  const PickleValue* pop() {
    if (m_stack.size() <= stack_floor()) fail("stack underflow");
    const PickleValue* v = m_stack.back();
    m_stack.pop_back();
    return v;
  }
  const PickleValue* top() const {
    if (m_stack.size() <= stack_floor()) fail("stack underflow");
    return m_stack.back();
  }
  std::size_t stack_floor() const { return m_marks.empty() ? 0 : m_marks.back(); }
  /// The values pushed since the last MARK, which is removed.
  std::vector<const PickleValue*> pop_mark() {
    if (m_marks.empty()) fail("no MARK on the stack");
    const std::size_t at = m_marks.back();
    m_marks.pop_back();
    std::vector<const PickleValue*> items(m_stack.begin() + static_cast<std::ptrdiff_t>(at),
                                          m_stack.end());
    m_stack.resize(at);
    return items;
  }
  /// Containers are created by this document only, so mutating them is safe.
  PickleValue* mutable_value(const PickleValue* v) { return const_cast<PickleValue*>(v); }

  void push_int(std::int64_t v) { push_new(Kind::Int)->integer = v; }
  void push_bool(bool b) { push_new(Kind::Bool)->boolean = b; }
  void push_text(Kind kind, std::string_view s) { push_new(kind)->text = std::string(s); }

  void memo_put(std::uint64_t key) { m_memo[key] = top(); }
  void memo_get(std::uint64_t key) {
    const auto it = m_memo.find(key);
    if (it == m_memo.end()) fail("memo key " + std::to_string(key) + " was never stored");
    push(it->second);
  }

  void append_to(const PickleValue* list, const std::vector<const PickleValue*>& items) {
    if (list->kind != Kind::List) fail("APPEND(S) to something that is not a list");
    auto& dst = mutable_value(list)->items;
    dst.insert(dst.end(), items.begin(), items.end());
  }
  void set_items(const PickleValue* dict, const std::vector<const PickleValue*>& kv) {
    if (dict->kind != Kind::Dict) fail("SETITEM(S) on something that is not a dict");
    if (kv.size() % 2 != 0) fail("SETITEMS with an odd number of values");
    auto& entries = mutable_value(dict)->entries;
    for (std::size_t i = 0; i < kv.size(); i += 2) {
      const PickleValue* key = kv[i];
      bool replaced = false;
      for (auto& e : entries) {
        if (same_key(e.first, key)) {
          e.second = kv[i + 1];
          replaced = true;
          break;
        }
      }
      if (!replaced) entries.emplace_back(key, kv[i + 1]);
    }
  }
  static bool same_key(const PickleValue* a, const PickleValue* b) {
    if (a->kind != b->kind) return false;
    switch (a->kind) {
      case Kind::Int:
        return a->integer == b->integer;
      case Kind::Str:
      case Kind::Bytes:
        return a->text == b->text;
      default:
        return a == b;
    }
  }
  // Dict keys of the graph pickle are ints: a linear scan would be quadratic. Index them.
  void set_items_fast(const PickleValue* dict, const std::vector<const PickleValue*>& kv) {
    if (dict->kind != Kind::Dict) fail("SETITEM(S) on something that is not a dict");
    if (kv.size() % 2 != 0) fail("SETITEMS with an odd number of values");
    auto& index = m_int_keys[dict];
    auto& entries = mutable_value(dict)->entries;
    for (std::size_t i = 0; i < kv.size(); i += 2) {
      if (kv[i]->kind != Kind::Int) {
        set_items(dict, {kv[i], kv[i + 1]});
        continue;
      }
      const auto [it, inserted] = index.emplace(kv[i]->integer, entries.size());
      if (inserted) {
        entries.emplace_back(kv[i], kv[i + 1]);
      } else {
        entries[it->second].second = kv[i + 1];
      }
    }
  }

  // ---- globals and calls ----
  void global(std::string module, std::string name) {
    const std::string full = module + "." + name;
    Allowed a{};
    if (!allowed_global(full, a)) {
      fail("refusing global '" + full +
           "': only NumPy arrays, SciPy CSR matrices and plain containers are allowed");
    }
    push_text(Kind::Global, full);
  }

  Allowed which(const PickleValue* g) {
    Allowed a{};
    if (g->kind != Kind::Global || !allowed_global(g->text, a))
      fail("call of a non-callable value");
    return a;
  }

  void reduce(const PickleValue* callable, const PickleValue* args) {
    if (args->kind != Kind::Tuple) fail("REDUCE arguments are not a tuple");
    const auto& a = args->items;
    switch (which(callable)) {
      case Allowed::Reconstruct: {
        // _reconstruct(ndarray, (0,), b'b'): an empty array that BUILD fills in.
        if (a.empty() || a[0]->kind != Kind::Global || a[0]->text != "numpy.ndarray") {
          fail("numpy _reconstruct of something other than numpy.ndarray");
        }
        push_new(Kind::NdArray);
        return;
      }
      case Allowed::Dtype: {
        if (a.empty() || (a[0]->kind != Kind::Str && a[0]->kind != Kind::Bytes)) {
          fail("numpy.dtype without a type string");
        }
        const std::string t = a[0]->text;
        if (!known_type(t)) {
          fail("unsupported numpy dtype '" + t + "' (object and structured dtypes are refused)");
        }
        push_new(Kind::Dtype)->text = (t[1] == '1' ? "|" : "<") + t;
        return;
      }
      case Allowed::DefaultDict: {
        if (a.size() > 1 ||
            (a.size() == 1 && a[0]->kind != Kind::None &&
             (a[0]->kind != Kind::Global || a[0]->text.find("list") == std::string::npos))) {
          fail("collections.defaultdict with a factory other than list");
        }
        push_new(Kind::Dict);
        return;
      }
      case Allowed::CodecsEncode: {
        if (a.size() != 2 || a[0]->kind != Kind::Str || a[1]->kind != Kind::Str ||
            (a[1]->text != "latin1" && a[1]->text != "latin-1")) {
          fail("_codecs.encode other than encode(str, 'latin1')");
        }
        push_text(Kind::Bytes, latin1_from_utf8(a[0]->text));
        return;
      }
      case Allowed::CopyRegReconstructor: {
        // Protocols 0 and 1 create objects as copy_reg._reconstructor(cls, object, None).
        if (a.size() != 3 || a[1]->kind != Kind::Global || which(a[1]) != Allowed::Object ||
            a[2]->kind != Kind::None) {
          fail("copy_reg._reconstructor other than (class, object, None)");
        }
        newobj(a[0], m_empty_tuple);
        return;
      }
      default:
        fail("calling '" + callable->text + "' is not allowed");
    }
  }

  static void append_utf8(std::string& out, std::uint32_t cp) {
    if (cp < 0x80) {
      out += static_cast<char>(cp);
    } else if (cp < 0x800) {
      out += static_cast<char>(0xc0 | (cp >> 6));
      out += static_cast<char>(0x80 | (cp & 0x3f));
    } else if (cp < 0x10000) {
      out += static_cast<char>(0xe0 | (cp >> 12));
      out += static_cast<char>(0x80 | ((cp >> 6) & 0x3f));
      out += static_cast<char>(0x80 | (cp & 0x3f));
    } else {
      out += static_cast<char>(0xf0 | (cp >> 18));
      out += static_cast<char>(0x80 | ((cp >> 12) & 0x3f));
      out += static_cast<char>(0x80 | ((cp >> 6) & 0x3f));
      out += static_cast<char>(0x80 | (cp & 0x3f));
    }
  }

  /// The protocol-0 UNICODE argument (Python's raw-unicode-escape: Latin-1 bytes plus \uXXXX
  /// and \UXXXXXXXX escapes) as UTF-8.
  std::string raw_unicode_escape(std::string_view s) {
    std::string out;
    for (std::size_t i = 0; i < s.size(); ++i) {
      const std::size_t digits = s[i] == '\\' && i + 1 < s.size() ? (s[i + 1] == 'u'   ? 4
                                                                     : s[i + 1] == 'U' ? 8
                                                                                       : 0)
                                                                  : 0;
      if (digits == 0) {
        append_utf8(out, static_cast<unsigned char>(s[i]));
        continue;
      }
      std::uint32_t cp = 0;
      const char* first = s.data() + i + 2;
      if (s.size() - i - 2 < digits) fail("bad \\u escape in a UNICODE string");
      const auto [p, ec] = std::from_chars(first, first + digits, cp, 16);
      if (ec != std::errc() || p != first + digits || cp > 0x10ffff) {
        fail("bad \\u escape in a UNICODE string");
      }
      append_utf8(out, cp);
      i += 1 + digits;
    }
    return out;
  }

  /// Python 3 decodes Latin-1 bytes into str; pickles hold that str as UTF-8.
  std::string latin1_from_utf8(const std::string& s) {
    std::string out;
    out.reserve(s.size());
    for (std::size_t i = 0; i < s.size(); ++i) {
      const auto c = static_cast<unsigned char>(s[i]);
      if (c < 0x80) {
        out += static_cast<char>(c);
      } else if ((c & 0xe0) == 0xc0 && i + 1 < s.size() && c <= 0xc3) {
        out += static_cast<char>(((c & 0x1f) << 6) | (static_cast<unsigned char>(s[++i]) & 0x3f));
      } else {
        fail("_codecs.encode: the string is not Latin-1");
      }
    }
    return out;
  }

  void newobj(const PickleValue* cls, const PickleValue* args) {
    if (args->kind != Kind::Tuple) fail("NEWOBJ arguments are not a tuple");
    if (which(cls) != Allowed::CsrMatrix) fail("NEWOBJ of '" + cls->text + "' is not allowed");
    push_new(Kind::Object)->text = "scipy.sparse.csr_matrix";
  }

  void build(const PickleValue* obj, const PickleValue* state) {
    PickleValue* target = mutable_value(obj);
    switch (obj->kind) {
      case Kind::Dtype: {
        // (version, byte order, subarray, names, fields, elsize, alignment, flags)
        if (state->kind != Kind::Tuple || state->items.size() < 2 ||
            state->items[1]->kind != Kind::Str) {
          fail("numpy.dtype state is not a tuple with a byte order");
        }
        if (state->items.size() > 3 && state->items[3]->kind != Kind::None) {
          fail("structured numpy dtypes are not supported");
        }
        const std::string& order = state->items[1]->text;
        if (order == ">") {
          fail("big-endian numpy dtype '>" + target->text.substr(1) + "' is not supported");
        }
        if (order != "<" && order != "|" && order != "=")
          fail("unknown byte order '" + order + "'");
        return;
      }
      case Kind::NdArray: {
        // (version, shape, dtype, is_fortran, raw data)
        if (state->kind != Kind::Tuple || state->items.size() != 5) {
          fail("numpy.ndarray state is not a 5-tuple");
        }
        const auto& s = state->items;
        if (s[1]->kind != Kind::Tuple) fail("numpy.ndarray shape is not a tuple");
        if (s[2]->kind != Kind::Dtype) fail("numpy.ndarray dtype is not a numpy.dtype");
        if (s[3]->kind != Kind::Bool && s[3]->kind != Kind::Int) fail("bad fortran flag");
        if (s[3]->boolean || s[3]->integer != 0) {
          fail("Fortran-ordered numpy arrays are not supported");
        }
        if (s[4]->kind != Kind::Str && s[4]->kind != Kind::Bytes) {
          fail("numpy.ndarray data is not a byte string (object arrays are refused)");
        }
        NpyArray arr;
        arr.dtype = s[2]->text;
        for (const PickleValue* d : s[1]->items) {
          if (d->kind != Kind::Int) fail("numpy.ndarray shape holds a non-integer");
          arr.shape.push_back(d->integer);
        }
        arr.bytes = s[4]->text;
        check_npy(arr, m_source + ": offset " + std::to_string(m_op_pos));
        target->array = std::move(arr);
        return;
      }
      case Kind::Object: {
        if (state->kind != Kind::Dict) fail("object state is not a dict");
        target->entries = state->entries;
        return;
      }
      default:
        fail("BUILD on a value that takes no state");
    }
  }

  std::int64_t decode_long(std::string_view bytes) {
    if (bytes.size() > 8) fail("integer wider than 64 bits");
    if (bytes.empty()) return 0;
    std::uint64_t v = 0;
    for (std::size_t i = 0; i < bytes.size(); ++i) {
      v |= std::uint64_t{static_cast<unsigned char>(bytes[i])} << (8 * i);
    }
    if (bytes.size() < 8 && (static_cast<unsigned char>(bytes.back()) & 0x80) != 0) {
      v |= ~std::uint64_t{0} << (8 * bytes.size());  // sign-extend
    }
    return static_cast<std::int64_t>(v);
  }

  std::int64_t parse_text_int(std::string_view s) {
    if (!s.empty() && s.back() == 'L') s.remove_suffix(1);  // protocol-0 LONG
    std::int64_t v = 0;
    if (!detail::parse_int(s, v)) fail("expected an integer, got " + detail::quoted(s));
    return v;
  }

  /// A protocol-0 STRING argument: a Python repr in single or double quotes.
  std::string parse_repr(std::string_view s) {
    if (s.size() < 2 || (s.front() != '\'' && s.front() != '"') || s.back() != s.front()) {
      fail("expected a quoted string, got " + detail::quoted(s));
    }
    s = s.substr(1, s.size() - 2);
    std::string out;
    for (std::size_t i = 0; i < s.size(); ++i) {
      if (s[i] != '\\') {
        out += s[i];
        continue;
      }
      if (++i == s.size()) fail("string ends with a backslash");
      const char c = s[i];
      switch (c) {
        case 'n':
          out += '\n';
          break;
        case 'r':
          out += '\r';
          break;
        case 't':
          out += '\t';
          break;
        case '\\':
        case '\'':
        case '"':
          out += c;
          break;
        case 'x': {
          if (s.size() - i < 3) fail("bad \\x escape");
          unsigned v = 0;
          const auto [p, ec] = std::from_chars(s.data() + i + 1, s.data() + i + 3, v, 16);
          if (ec != std::errc() || p != s.data() + i + 3) fail("bad \\x escape");
          out += static_cast<char>(v);
          i += 2;
          break;
        }
        default:
          fail(std::string("unsupported escape \\") + c);
      }
    }
    return out;
  }

  void step(unsigned char op) {
    switch (op) {
      case '(':
        m_marks.push_back(m_stack.size());
        break;
      case '0':
        pop();
        break;
      case '1':
        pop_mark();
        break;
      case '2':
        push(top());
        break;
      case 0x80: {  // PROTO
        const auto v = le(1);
        if (v > 4) fail("pickle protocol " + std::to_string(v) + " is not supported (0 to 4)");
        break;
      }
      case 0x95:
        take(8);
        break;  // FRAME: framing is transparent here
      // ---- numbers ----
      case 'I': {
        const std::string_view s = text_line();
        if (s == "00" || s == "01") {
          push_bool(s == "01");
        } else {
          push_int(parse_text_int(s));
        }
        break;
      }
      case 'L':
        push_int(parse_text_int(text_line()));
        break;
      case 'J':
        push_int(static_cast<std::int32_t>(static_cast<std::uint32_t>(le(4))));
        break;
      case 'K':
        push_int(static_cast<std::int64_t>(le(1)));
        break;
      case 'M':
        push_int(static_cast<std::int64_t>(le(2)));
        break;
      case 0x8a:
        push_int(decode_long(take(le(1))));
        break;
      case 0x8b: {
        const auto n = le(4);
        if (n > 8) fail("integer wider than 64 bits");
        push_int(decode_long(take(n)));
        break;
      }
      case 'F': {
        double v = 0;
        const std::string_view s = text_line();
        const auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
        if (ec != std::errc() || p != s.data() + s.size()) fail("bad FLOAT " + detail::quoted(s));
        push_new(Kind::Float)->real = v;
        break;
      }
      case 'G': {
        const std::uint64_t bits = le(8);
        std::uint64_t be = 0;  // BINFLOAT is big-endian
        for (int i = 0; i < 8; ++i) be |= ((bits >> (8 * i)) & 0xff) << (8 * (7 - i));
        double v;
        std::memcpy(&v, &be, sizeof v);
        push_new(Kind::Float)->real = v;
        break;
      }
      case 'N':
        push_new(Kind::None);
        break;
      case 0x88:
        push_bool(true);
        break;
      case 0x89:
        push_bool(false);
        break;
      // ---- strings ----
      case 'S':
        push_text(Kind::Str, parse_repr(text_line()));
        break;
      case 'T':
        push_text(Kind::Str, take(le(4)));
        break;
      case 'U':
        push_text(Kind::Str, take(le(1)));
        break;
      case 'V':
        push_text(Kind::Str, raw_unicode_escape(text_line()));
        break;
      case 'X':
        push_text(Kind::Str, take(le(4)));
        break;
      case 0x8c:
        push_text(Kind::Str, take(le(1)));
        break;
      case 0x8d:
        push_text(Kind::Str, take(le(8)));
        break;
      case 'B':
        push_text(Kind::Bytes, take(le(4)));
        break;
      case 'C':
        push_text(Kind::Bytes, take(le(1)));
        break;
      case 0x8e:
        push_text(Kind::Bytes, take(le(8)));
        break;
      // ---- containers ----
      case ']':
        push_new(Kind::List);
        break;
      case 'l': {
        auto items = pop_mark();
        push_new(Kind::List)->items = std::move(items);
        break;
      }
      case ')':
        push_new(Kind::Tuple);
        break;
      case 't': {
        auto items = pop_mark();
        push_new(Kind::Tuple)->items = std::move(items);
        break;
      }
      case 0x85:
      case 0x86:
      case 0x87: {
        const std::size_t n = op - 0x84;
        std::vector<const PickleValue*> items(n);
        for (std::size_t i = n; i-- > 0;) items[i] = pop();
        push_new(Kind::Tuple)->items = std::move(items);
        break;
      }
      case '}':
        push_new(Kind::Dict);
        break;
      case 'd': {
        const auto kv = pop_mark();
        const PickleValue* dict = push_new(Kind::Dict);
        set_items_fast(dict, kv);
        break;
      }
      case 0x8f:
        push_new(Kind::List);
        break;      // EMPTY_SET
      case 0x90: {  // ADDITEMS
        const auto items = pop_mark();
        append_to(top(), items);
        break;
      }
      case 0x91: {  // FROZENSET
        auto items = pop_mark();
        push_new(Kind::List)->items = std::move(items);
        break;
      }
      case 'a': {
        const PickleValue* v = pop();
        append_to(top(), {v});
        break;
      }
      case 'e': {
        const auto items = pop_mark();
        append_to(top(), items);
        break;
      }
      case 's': {
        const PickleValue* v = pop();
        const PickleValue* k = pop();
        set_items_fast(top(), {k, v});
        break;
      }
      case 'u': {
        const auto kv = pop_mark();
        set_items_fast(top(), kv);
        break;
      }
      // ---- memo ----
      case 'p':
        memo_put(static_cast<std::uint64_t>(parse_text_int(text_line())));
        break;
      case 'q':
        memo_put(le(1));
        break;
      case 'r':
        memo_put(le(4));
        break;
      case 0x94:
        memo_put(m_memo.size());
        break;
      case 'g':
        memo_get(static_cast<std::uint64_t>(parse_text_int(text_line())));
        break;
      case 'h':
        memo_get(le(1));
        break;
      case 'j':
        memo_get(le(4));
        break;
      // ---- globals, calls, objects ----
      case 'c': {
        const std::string module(text_line());
        const std::string name(text_line());
        global(module, name);
        break;
      }
      case 0x93: {  // STACK_GLOBAL
        const PickleValue* name = pop();
        const PickleValue* module = pop();
        if (name->kind != Kind::Str || module->kind != Kind::Str) {
          fail("STACK_GLOBAL needs two strings");
        }
        global(module->text, name->text);
        break;
      }
      case 'R': {
        const PickleValue* args = pop();
        const PickleValue* callable = pop();
        reduce(callable, args);
        break;
      }
      case 0x81: {  // NEWOBJ
        const PickleValue* args = pop();
        const PickleValue* cls = pop();
        newobj(cls, args);
        break;
      }
      case 0x92: {  // NEWOBJ_EX
        const PickleValue* kwargs = pop();
        const PickleValue* args = pop();
        const PickleValue* cls = pop();
        if (kwargs->kind != Kind::Dict || !kwargs->entries.empty()) {
          fail("NEWOBJ_EX with keyword arguments");
        }
        newobj(cls, args);
        break;
      }
      case 'b': {
        const PickleValue* state = pop();
        build(top(), state);
        break;
      }
      case 'P':
      case 'Q':
        fail("persistent ids are not supported");
      case 'i':
      case 'o':
        fail("the INST/OBJ opcodes are refused (they call arbitrary classes)");
      case 0x82:
      case 0x83:
      case 0x84:
        fail("extension codes are refused");
      default: {
        char buf[8];
        std::snprintf(buf, sizeof buf, "0x%02x", op);
        fail(std::string("unknown pickle opcode ") + buf);
      }
    }
  }

  std::string_view m_data;
  std::string m_source;
  std::size_t m_pos = 0;
  std::size_t m_op_pos = 0;
  PickleDocument m_doc;
  const PickleValue* m_empty_tuple = nullptr;
  std::vector<const PickleValue*> m_stack;
  std::vector<std::size_t> m_marks;
  std::unordered_map<std::uint64_t, const PickleValue*> m_memo;
  std::unordered_map<const PickleValue*, std::unordered_map<std::int64_t, std::size_t>> m_int_keys;
};

PickleDocument unpickle(std::string_view data, const std::string& source) {
  return Unpickler(data, source).run();
}

}  // namespace halo::datasets
