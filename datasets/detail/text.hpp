#pragma once
// Private text-parsing helpers of the readers: whole-file reads, line walking, tokens, errors.

#include <cstdint>
#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

namespace halo::datasets::detail {

/// `text` in double quotes, with tabs and control characters escaped and long text cut short.
std::string quoted(std::string_view text);

/// Throws halo::IoError "<where>:<line>: <what>".
[[noreturn]] void fail_at(const std::string& where, std::int64_t line, const std::string& what);

/// Throws halo::IoError "<where>:<line>: expected <what>, got "<got>"".
[[noreturn]] void fail_expected(const std::string& where, std::int64_t line,
                                const std::string& what, std::string_view got);

/// The whole content of a regular file (halo::IoError when it is missing or unreadable).
std::string read_whole_file(const std::filesystem::path& path);

/// Walks the lines of text held in memory. A final '\n' does not start an extra line; a '\r'
/// before '\n' is dropped.
class TextLines {
 public:
  explicit TextLines(std::string_view text) : m_text(text) {}
  bool next(std::string_view& line);
  /// 1-based number of the line last returned by next().
  std::int64_t number() const { return m_number; }

 private:
  std::string_view m_text;
  std::size_t m_pos = 0;
  std::int64_t m_number = 0;
};

/// `line` with leading and trailing blanks (spaces, tabs, '\r') removed.
std::string_view trim(std::string_view line);

/// The blank-separated (spaces or tabs) tokens of `line`, at most `max_tokens` (the rest of the
/// line is not split further but is counted: the result then holds max_tokens + 1 entries).
std::vector<std::string_view> split_blanks(std::string_view line, std::size_t max_tokens = 64);

/// A whole token as a decimal integer (optional leading '-').
bool parse_int(std::string_view token, std::int64_t& out);

/// A whole token as a finite number (decimal or exponent form; "nan"/"inf" are rejected).
bool parse_double(std::string_view token, double& out);

}  // namespace halo::datasets::detail
