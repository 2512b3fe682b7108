// Zachary's karate club from GML: a small tokenizer for NetworkX's GML output.
#include <algorithm>
#include <cctype>
#include <charconv>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include <halo/datasets/graph_builder.hpp>
#include <halo/datasets/preprocess.hpp>
#include <halo/datasets/readers/karate.hpp>
#include <halo/kernels/error.hpp>

namespace halo::datasets {
namespace {

/// A GML token: a key or number (word), a quoted string, or a bracket.
struct Token {
  enum Kind { Word, String, Open, Close, End } kind = End;
  std::string text;
  int line = 0;
};

class Lexer {
 public:
  Lexer(std::string text, std::string source)
      : m_text(std::move(text)), m_source(std::move(source)) {}

  Token next() {
    for (;;) {
      while (m_pos < m_text.size() && std::isspace(static_cast<unsigned char>(m_text[m_pos]))) {
        if (m_text[m_pos] == '\n') ++m_line;
        ++m_pos;
      }
      if (m_pos < m_text.size() && m_text[m_pos] == '#') {
        while (m_pos < m_text.size() && m_text[m_pos] != '\n') ++m_pos;
        continue;
      }
      break;
    }
    Token t;
    t.line = m_line;
    if (m_pos >= m_text.size()) return t;
    const char c = m_text[m_pos];
    if (c == '[' || c == ']') {
      ++m_pos;
      t.kind = c == '[' ? Token::Open : Token::Close;
      return t;
    }
    if (c == '"') {
      const auto end = m_text.find('"', m_pos + 1);
      if (end == std::string::npos) fail(t.line, "unterminated string");
      t.kind = Token::String;
      t.text = m_text.substr(m_pos + 1, end - m_pos - 1);
      m_line += static_cast<int>(std::count(t.text.begin(), t.text.end(), '\n'));
      m_pos = end + 1;
      return t;
    }
    const auto start = m_pos;
    while (m_pos < m_text.size() && !std::isspace(static_cast<unsigned char>(m_text[m_pos])) &&
           m_text[m_pos] != '[' && m_text[m_pos] != ']' && m_text[m_pos] != '"')
      ++m_pos;
    t.kind = Token::Word;
    t.text = m_text.substr(start, m_pos - start);
    return t;
  }

  [[noreturn]] void fail(int line, const std::string& what) const {
    throw IoError(m_source + ":" + std::to_string(line) + ": " + what);
  }

 private:
  std::string m_text;
  std::string m_source;
  std::size_t m_pos = 0;
  int m_line = 1;
};

/// The scalar attributes of one `node [...]` or `edge [...]` block (nested lists skipped).
struct Block {
  std::map<std::string, std::string> values;
  int line = 0;
};

void skip_list(Lexer& lex) {
  for (int depth = 1; depth > 0;) {
    const Token t = lex.next();
    if (t.kind == Token::End) lex.fail(t.line, "unexpected end of file inside [ ]");
    if (t.kind == Token::Open) ++depth;
    if (t.kind == Token::Close) --depth;
  }
}

Block read_block(Lexer& lex, int line) {
  Block b;
  b.line = line;
  for (;;) {
    const Token key = lex.next();
    if (key.kind == Token::Close) return b;
    if (key.kind != Token::Word) lex.fail(key.line, "expected a key or ']'");
    const Token value = lex.next();
    if (value.kind == Token::Open) {
      skip_list(lex);
    } else if (value.kind == Token::Word || value.kind == Token::String) {
      b.values[key.text] = value.text;
    } else {
      lex.fail(value.line, "expected a value after \"" + key.text + "\"");
    }
  }
}

std::int64_t to_id(const Lexer& lex, const Block& b, const std::string& key) {
  const auto it = b.values.find(key);
  if (it == b.values.end()) lex.fail(b.line, "block without \"" + key + "\"");
  std::int64_t v = 0;
  const auto& s = it->second;
  const auto [ptr, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || ptr != s.data() + s.size() || v < 0)
    lex.fail(b.line, "expected a non-negative integer " + key + ", got \"" + s + "\"");
  return v;
}

}  // namespace

Dataset read_karate_gml(const kernels::Resources& res, const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw IoError(path.string() + ": cannot open");
  std::stringstream ss;
  ss << in.rdbuf();
  Lexer lex(ss.str(), path.string());

  std::vector<Block> nodes, edges;
  Token t = lex.next();
  if (t.kind != Token::Word || t.text != "graph" || lex.next().kind != Token::Open)
    lex.fail(t.line, "expected \"graph [\"");
  for (;;) {
    const Token key = lex.next();
    if (key.kind == Token::Close) break;
    if (key.kind != Token::Word) lex.fail(key.line, "expected a key or ']'");
    const Token value = lex.next();
    if (value.kind == Token::Open) {
      if (key.text == "node")
        nodes.push_back(read_block(lex, key.line));
      else if (key.text == "edge")
        edges.push_back(read_block(lex, key.line));
      else
        skip_list(lex);
    } else if (value.kind != Token::Word && value.kind != Token::String) {
      lex.fail(value.line, "expected a value after \"" + key.text + "\"");
    }
  }

  const auto n = static_cast<std::int64_t>(nodes.size());
  if (n < 3) lex.fail(1, "expected at least 3 nodes, got " + std::to_string(n));
  std::vector<std::int32_t> labels(static_cast<std::size_t>(n), -1);
  for (const Block& b : nodes) {
    const std::int64_t id = to_id(lex, b, "id");
    if (id >= n)
      lex.fail(b.line, "node id " + std::to_string(id) + " is not below " + std::to_string(n));
    if (labels[static_cast<std::size_t>(id)] != -1)
      lex.fail(b.line, "node id " + std::to_string(id) + " is repeated");
    const auto club = b.values.find("club");
    if (club == b.values.end() || (club->second != "Mr. Hi" && club->second != "Officer"))
      lex.fail(b.line, "expected club \"Mr. Hi\" or \"Officer\" for node " + std::to_string(id));
    labels[static_cast<std::size_t>(id)] = club->second == "Mr. Hi" ? 0 : 1;
  }
  std::vector<std::pair<NodeId, NodeId>> pairs;
  for (const Block& b : edges) {
    const std::int64_t s = to_id(lex, b, "source"), d = to_id(lex, b, "target");
    if (s >= n || d >= n) lex.fail(b.line, "edge names a node that does not exist");
    pairs.emplace_back(static_cast<NodeId>(s), static_cast<NodeId>(d));
    pairs.emplace_back(static_cast<NodeId>(d), static_cast<NodeId>(s));
  }

  Dataset ds;
  ds.name = "karate";
  ds.graph = deduplicate(res, graph_from_edges(res, n, pairs));
  ds.graph.symmetric = true;
  std::vector<std::int64_t> indptr(static_cast<std::size_t>(n) + 1);
  std::vector<std::int32_t> cols(static_cast<std::size_t>(n));
  for (std::int64_t i = 0; i <= n; ++i) indptr[static_cast<std::size_t>(i)] = i;
  for (std::int64_t i = 0; i < n; ++i)
    cols[static_cast<std::size_t>(i)] = static_cast<std::int32_t>(i);
  ds.features = kernels::CsrMatrix<std::int32_t, float>{
      kernels::Tensor<std::int64_t>::from_host(res, indptr),
      kernels::Tensor<std::int32_t>::from_host(res, cols),
      kernels::Tensor<float>::from_host(res, std::vector<float>(static_cast<std::size_t>(n), 1.f)),
      n};
  ds.labels = kernels::Tensor<std::int32_t>::from_host(res, labels);
  std::vector<NodeId> train{0, static_cast<NodeId>(n - 1)}, val, test;
  for (std::int64_t v = 1; v < n - 1; ++v)
    ((v - 1) % 2 == 0 ? val : test).push_back(static_cast<NodeId>(v));
  ds.train_idx = kernels::Tensor<NodeId>::from_host(res, train);
  ds.val_idx = kernels::Tensor<NodeId>::from_host(res, val);
  ds.test_idx = kernels::Tensor<NodeId>::from_host(res, test);
  ds.num_classes = 2;
  validate(ds);
  return ds;
}

}  // namespace halo::datasets
