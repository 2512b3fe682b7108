#include "support/testing.hpp"

#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <mutex>
#include <sstream>

namespace halo::testing {
namespace {
// Guards the ExpectLogs stack: ops may log from OpenMP worker threads.
std::mutex g_log_mutex;
ExpectLogs* g_innermost = nullptr;

const char* level_name(LogLevel level) {
  switch (level) {
    case LogLevel::Debug:
      return "DEBUG";
    case LogLevel::Info:
      return "INFO";
    case LogLevel::Warn:
      return "WARN";
    case LogLevel::Error:
      return "ERROR";
  }
  return "?";
}
}  // namespace

const Resources& host() {
  static const Resources res(Device::Cpu, /*num_threads=*/1);
  return res;
}

namespace detail {
bool is_isolated_column(std::int64_t c, std::int64_t num_cols, std::uint64_t seed) {
  if (num_cols >= 2 && c == num_cols - 1) return true;
  const auto stream = kernels::rng::stream_id(kernels::rng::kStreamSynthetic, seed, 0x150);
  return num_cols >= 2 && kernels::rng::below(seed, stream, c, 8) == 0;
}
bool is_empty_row(std::int64_t r, std::uint64_t seed) {
  if (r == 1) return true;
  const auto stream = kernels::rng::stream_id(kernels::rng::kStreamSynthetic, seed, 0xe3);
  return kernels::rng::below(seed, stream, r, 8) == 0;
}
}  // namespace detail

ExpectLogs::ExpectLogs(std::string expected) : m_expected(std::move(expected)) {
  std::lock_guard lock(g_log_mutex);
  m_outer = g_innermost;
  g_innermost = this;
}

ExpectLogs::~ExpectLogs() {
  {
    std::lock_guard lock(g_log_mutex);
    g_innermost = m_outer;
  }
  const bool seen = std::any_of(m_messages.begin(), m_messages.end(), [&](const std::string& m) {
    return m.find(m_expected) != std::string::npos;
  });
  EXPECT_TRUE(seen) << "expected a HALO warning or error containing \"" << m_expected << "\"; saw "
                    << m_messages.size() << " warning/error line(s)";
}

std::vector<std::string> ExpectLogs::messages() const {
  std::lock_guard lock(g_log_mutex);
  return m_messages;
}

void record_log(LogLevel level, std::string_view message) {
  if (level < LogLevel::Warn) {
    std::fprintf(stderr, "halo %s: %.*s\n", level_name(level), static_cast<int>(message.size()),
                 message.data());
    return;
  }
  {
    std::lock_guard lock(g_log_mutex);
    if (g_innermost != nullptr) {
      g_innermost->m_messages.emplace_back(message);
      return;
    }
  }
  ADD_FAILURE() << "unexpected HALO " << level_name(level) << " log line: " << message;
}

void install_log_sink() { set_log_sink(record_log); }

const std::filesystem::path& build_dir() {
  static const std::filesystem::path dir = [] {
    std::error_code ec;
    const std::filesystem::path self = std::filesystem::read_symlink("/proc/self/exe", ec);
    for (std::filesystem::path d = self.parent_path(); !ec && !d.empty(); d = d.parent_path()) {
      if (std::filesystem::exists(d / "CMakeCache.txt")) return d;
      if (d == d.parent_path()) break;
    }
    std::fprintf(stderr, "test support: no CMakeCache.txt above %s\n", self.c_str());
    std::abort();
  }();
  return dir;
}

const std::filesystem::path& source_dir() {
  static const std::filesystem::path dir = [] {
    std::ifstream in(build_dir() / "CMakeCache.txt");
    const std::string key = "CMAKE_HOME_DIRECTORY:INTERNAL=";
    for (std::string line; std::getline(in, line);)
      if (line.rfind(key, 0) == 0) return std::filesystem::path(line.substr(key.size()));
    std::fprintf(stderr, "test support: %s names no source tree\n",
                 (build_dir() / "CMakeCache.txt").c_str());
    std::abort();
  }();
  return dir;
}

const std::filesystem::path& test_program_dir() {
  static const std::filesystem::path dir =
      std::filesystem::read_symlink("/proc/self/exe").parent_path();
  return dir;
}

const std::string& halo_binary() {
  static const std::string path = (build_dir() / "tools" / "halo" / "halo").string();
  return path;
}

TempDir::TempDir() {
  static std::atomic<int> counter{0};
  const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
  std::string name = "halo_test_" + std::to_string(::getpid()) + "_" + std::to_string(counter++);
  if (info != nullptr) name += std::string("_") + info->test_suite_name() + "_" + info->name();
  m_path = std::filesystem::temp_directory_path() / name;
  std::filesystem::remove_all(m_path);
  std::filesystem::create_directories(m_path);
}

TempDir::~TempDir() {
  std::error_code ec;
  std::filesystem::remove_all(m_path, ec);
}

std::string read_file(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

CommandOutcome run_command(const std::string& command, const std::filesystem::path& scratch) {
  const std::filesystem::path out = scratch / "stdout.txt", err = scratch / "stderr.txt";
  const std::string cmd = command + " >" + out.string() + " 2>" + err.string() + " </dev/null";
  const int status = std::system(cmd.c_str());
  CommandOutcome r;
  r.code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  r.out = read_file(out);
  r.err = read_file(err);
  return r;
}

}  // namespace halo::testing
