#include <charconv>
#include <cmath>

#include <halo/datasets/detail/csv.hpp>
#include <halo/datasets/detail/text.hpp>

namespace halo::datasets::detail {
namespace {

/// Calls f(token) for each comma-separated token (trimmed); stops when f returns false.
template <class F>
bool for_each_token(std::string_view line, std::string_view& bad, const F& f) {
  std::size_t start = 0;
  while (true) {
    const std::size_t comma = line.find(',', start);
    const std::size_t end = comma == std::string_view::npos ? line.size() : comma;
    const std::string_view token = trim(line.substr(start, end - start));
    if (!f(token)) {
      bad = token;
      return false;
    }
    if (comma == std::string_view::npos) return true;
    start = comma + 1;
  }
}

}  // namespace

bool parse_csv_floats(std::string_view line, std::vector<float>& out, std::string_view& bad) {
  return for_each_token(line, bad, [&](std::string_view token) {
    if (!token.empty() && token.front() == '+') token.remove_prefix(1);
    float v = 0;
    const char* end = token.data() + token.size();
    const auto [ptr, ec] = std::from_chars(token.data(), end, v);
    if (token.empty() || ec != std::errc() || ptr != end || !std::isfinite(v)) return false;
    out.push_back(v);
    return true;
  });
}

bool parse_csv_ints(std::string_view line, std::vector<std::int64_t>& out, std::string_view& bad) {
  return for_each_token(line, bad, [&](std::string_view token) {
    std::int64_t v = 0;
    if (parse_int(token, v)) {
      out.push_back(v);
      return true;
    }
    double d = 0;
    if (!parse_double(token, d) || std::trunc(d) != d || std::abs(d) > 9.0e18) return false;
    out.push_back(static_cast<std::int64_t>(d));
    return true;
  });
}

}  // namespace halo::datasets::detail
