#pragma once
// Logging to a replaceable sink. Library code never writes to stdout/stderr directly.

#include <functional>
#include <sstream>
#include <string_view>

namespace halo {

enum class LogLevel { Debug, Info, Warn, Error };

using LogSink = std::function<void(LogLevel, std::string_view)>;

/// Replaces the sink (default: one line to stderr) and returns the previous one. Not thread-safe
/// against concurrent logging: set it at start-up or in a test fixture.
LogSink set_log_sink(LogSink sink);
/// Messages below `level` are dropped (default Info; HALO_LOG_LEVEL=debug|info|warn|error).
void set_log_level(LogLevel level);
LogLevel log_level();
/// In multi-process runs only rank 0 logs below Warn (set by the runtime).
void set_log_rank(int rank);

namespace detail {
bool log_enabled(LogLevel level);
void log_write(LogLevel level, const std::string& message);
}  // namespace detail

}  // namespace halo

#define HALO_LOG(level, expr)                               \
  do {                                                      \
    if (::halo::detail::log_enabled(level)) {               \
      std::ostringstream halo_log_os_;                      \
      halo_log_os_ << expr;                                 \
      ::halo::detail::log_write(level, halo_log_os_.str()); \
    }                                                       \
  } while (0)
#define HALO_LOG_DEBUG(expr) HALO_LOG(::halo::LogLevel::Debug, expr)
#define HALO_LOG_INFO(expr) HALO_LOG(::halo::LogLevel::Info, expr)
#define HALO_LOG_WARN(expr) HALO_LOG(::halo::LogLevel::Warn, expr)
#define HALO_LOG_ERROR(expr) HALO_LOG(::halo::LogLevel::Error, expr)
