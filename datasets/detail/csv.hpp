#pragma once
// Private: parsing one comma-separated line of numbers (OGB's raw CSVs), shared with the fuzzer.

#include <cstdint>
#include <string_view>
#include <vector>

namespace halo::datasets::detail {

/// Appends the comma-separated finite floats of `line` to `out` (blanks around tokens are
/// allowed). On a bad token returns false with `bad` set to it; `out` then holds the tokens
/// before it.
bool parse_csv_floats(std::string_view line, std::vector<float>& out, std::string_view& bad);

/// Appends the comma-separated integers of `line` to `out`; like parse_csv_floats. Tokens such
/// as "3.0" (whole numbers written as floats) are accepted.
bool parse_csv_ints(std::string_view line, std::vector<std::int64_t>& out, std::string_view& bad);

}  // namespace halo::datasets::detail
