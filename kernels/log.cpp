#include <cstdio>
#include <cstdlib>
#include <mutex>
#include <string>

#include <halo/kernels/log.hpp>

namespace halo {
namespace {

LogLevel level_from_env() {
  const char* env = std::getenv("HALO_LOG_LEVEL");
  if (env == nullptr) return LogLevel::Info;
  const std::string v = env;
  if (v == "debug") return LogLevel::Debug;
  if (v == "warn") return LogLevel::Warn;
  if (v == "error") return LogLevel::Error;
  return LogLevel::Info;
}

const char* level_name(LogLevel level) {
  switch (level) {
    case LogLevel::Debug:
      return "debug";
    case LogLevel::Info:
      return "info";
    case LogLevel::Warn:
      return "warning";
    case LogLevel::Error:
      return "error";
  }
  return "";
}

struct LogState {
  std::mutex mutex;
  LogLevel level = level_from_env();
  int rank = -1;
  LogSink sink = [](LogLevel level, std::string_view msg) {
    std::fprintf(stderr, "halo %s: %.*s\n", level_name(level), static_cast<int>(msg.size()),
                 msg.data());
  };
};

LogState& state() {
  static LogState s;
  return s;
}

}  // namespace

LogSink set_log_sink(LogSink sink) {
  std::lock_guard lock(state().mutex);
  std::swap(state().sink, sink);
  return sink;
}
void set_log_level(LogLevel level) { state().level = level; }
LogLevel log_level() { return state().level; }
void set_log_rank(int rank) { state().rank = rank; }

namespace detail {
bool log_enabled(LogLevel level) {
  const LogState& s = state();
  if (level < s.level) return false;
  return s.rank <= 0 || level >= LogLevel::Warn;
}
void log_write(LogLevel level, const std::string& message) {
  LogState& s = state();
  std::lock_guard lock(s.mutex);
  if (s.rank >= 0) {
    s.sink(level, "[rank " + std::to_string(s.rank) + "] " + message);
  } else {
    s.sink(level, message);
  }
}
}  // namespace detail

}  // namespace halo
