#include <cerrno>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <system_error>

#include <halo/datasets/detail/text.hpp>
#include <halo/kernels/error.hpp>

namespace halo::datasets::detail {

std::string quoted(std::string_view text) {
  constexpr std::size_t kMaxShown = 80;
  std::string out = "\"";
  for (std::size_t i = 0; i < text.size() && i < kMaxShown; ++i) {
    const char c = text[i];
    if (c == '\t') {
      out += "\\t";
    } else if (c == '\r') {
      out += "\\r";
    } else if (c == '"' || c == '\\') {
      out += '\\';
      out += c;
    } else if (static_cast<unsigned char>(c) < 0x20 || static_cast<unsigned char>(c) >= 0x7f) {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\x%02x", static_cast<unsigned char>(c));
      out += buf;
    } else {
      out += c;
    }
  }
  if (text.size() > kMaxShown) out += "...";
  return out + "\"";
}

void fail_at(const std::string& where, std::int64_t line, const std::string& what) {
  throw IoError(where + ":" + std::to_string(line) + ": " + what);
}

void fail_expected(const std::string& where, std::int64_t line, const std::string& what,
                   std::string_view got) {
  fail_at(where, line, "expected " + what + ", got " + quoted(got));
}

std::string read_whole_file(const std::filesystem::path& path) {
  if (!std::filesystem::is_regular_file(path)) {
    throw IoError(path.string() + ": missing or not a regular file");
  }
  std::FILE* f = std::fopen(path.c_str(), "rb");
  if (f == nullptr) throw IoError(path.string() + ": cannot open: " + std::strerror(errno));
  std::string text;
  std::error_code ec;
  const auto size = std::filesystem::file_size(path, ec);
  if (!ec) text.resize(size);
  const std::size_t got = std::fread(text.data(), 1, text.size(), f);
  const bool failed = std::ferror(f) != 0 || got != text.size();
  std::fclose(f);
  if (failed) throw IoError(path.string() + ": read error");
  return text;
}

bool TextLines::next(std::string_view& line) {
  if (m_pos >= m_text.size()) return false;
  const void* nl = std::memchr(m_text.data() + m_pos, '\n', m_text.size() - m_pos);
  const std::size_t end =
      nl == nullptr ? m_text.size()
                    : static_cast<std::size_t>(static_cast<const char*>(nl) - m_text.data());
  line = m_text.substr(m_pos, end - m_pos);
  if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
  m_pos = end + 1;
  ++m_number;
  return true;
}

namespace {
bool is_blank(char c) { return c == ' ' || c == '\t' || c == '\r'; }
}  // namespace

std::string_view trim(std::string_view line) {
  while (!line.empty() && is_blank(line.front())) line.remove_prefix(1);
  while (!line.empty() && is_blank(line.back())) line.remove_suffix(1);
  return line;
}

std::vector<std::string_view> split_blanks(std::string_view line, std::size_t max_tokens) {
  std::vector<std::string_view> tokens;
  std::size_t i = 0;
  while (i < line.size()) {
    while (i < line.size() && is_blank(line[i])) ++i;
    if (i == line.size()) break;
    if (tokens.size() == max_tokens) {
      tokens.push_back(trim(line.substr(i)));
      break;
    }
    const std::size_t start = i;
    while (i < line.size() && !is_blank(line[i])) ++i;
    tokens.push_back(line.substr(start, i - start));
  }
  return tokens;
}

bool parse_int(std::string_view token, std::int64_t& out) {
  const char* end = token.data() + token.size();
  const auto [ptr, ec] = std::from_chars(token.data(), end, out);
  return !token.empty() && ec == std::errc() && ptr == end;
}

bool parse_double(std::string_view token, double& out) {
  if (!token.empty() && token.front() == '+') token.remove_prefix(1);
  const char* end = token.data() + token.size();
  const auto [ptr, ec] = std::from_chars(token.data(), end, out);
  return !token.empty() && ec == std::errc() && ptr == end && std::isfinite(out);
}

}  // namespace halo::datasets::detail
