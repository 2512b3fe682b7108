#include <atomic>

#include <halo/kernels/error.hpp>

namespace halo {
namespace {
std::atomic<int> g_rank{-1};
}

void set_error_rank(int rank) { g_rank = rank; }
int error_rank() { return g_rank; }

namespace detail {

std::string format_error(const char* msg, const char* expr, const char* file, int line) {
  std::string out;
  if (g_rank >= 0) out += "[rank " + std::to_string(g_rank) + "] ";
  out += msg;
  out += " (";
  if (expr[0] != '\0') out += std::string("failed: ") + expr + " at ";
  out += std::string(file) + ":" + std::to_string(line) + ")";
  return out;
}

}  // namespace detail
}  // namespace halo
