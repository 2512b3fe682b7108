#include <fcntl.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <string>
#include <utility>

#include <halo/kernels/buffer.hpp>
#include <halo/kernels/buffer_stats.hpp>
#include <halo/kernels/detail/cuda_runtime.hpp>
#include <halo/kernels/error.hpp>

namespace halo::kernels {

namespace {

/// The file mappings alive (map_file), for the SIGBUS handler: a slot is free when begin is 0.
/// Filled and cleared under a mutex; read by the handler without one (atomics, fixed storage).
struct MappedRange {
  std::atomic<std::uintptr_t> begin{0}, end{0};
  char path[512] = {};
  // The mapped file as opened (check_mapped_files): its identity and the bytes mapped.
  dev_t dev = 0;
  ino_t ino = 0;
  std::uint64_t bytes = 0;
};
constexpr int kMaxRanges = 256;
MappedRange g_ranges[kMaxRanges];
std::atomic<int> g_handler_installed{0};

void write_all(const char* text, std::size_t n) {
  while (n > 0) {
    const ssize_t w = ::write(STDERR_FILENO, text, n);
    if (w <= 0) return;
    text += w;
    n -= static_cast<std::size_t>(w);
  }
}

void on_sigbus(int sig, siginfo_t* info, void*) {
  const auto at = reinterpret_cast<std::uintptr_t>(info->si_addr);
  for (const MappedRange& r : g_ranges) {
    const std::uintptr_t b = r.begin.load(std::memory_order_acquire);
    if (b == 0 || at < b || at >= r.end.load(std::memory_order_acquire)) continue;
    constexpr char head[] = "halo: error: ";
    constexpr char tail[] =
        ": the file shrank while this run read it (truncated under the run?); stopping\n";
    write_all(head, sizeof head - 1);
    write_all(r.path, std::strlen(r.path));
    write_all(tail, sizeof tail - 1);
    ::_exit(1);
  }
  // Not a mapped file's page: the default action (a core dump, as without the handler).
  ::signal(sig, SIG_DFL);
  ::raise(sig);
}

/// Serialises add_range, remove_range and check_mapped_files (the SIGBUS handler reads the
/// slots without it).
std::mutex g_ranges_mutex;

void add_range(const void* data, std::size_t bytes, const std::string& path,
               const struct stat& st) {
  const std::lock_guard<std::mutex> lock(g_ranges_mutex);
  for (MappedRange& r : g_ranges) {
    std::uintptr_t expected = 0;
    // Claim the slot with a placeholder (1), then fill it and publish the real begin.
    if (!r.begin.compare_exchange_strong(expected, 1, std::memory_order_acq_rel)) continue;
    const std::size_t n = std::min(path.size(), sizeof r.path - 1);
    std::memcpy(r.path, path.data(), n);
    r.path[n] = '\0';
    r.dev = st.st_dev;
    r.ino = st.st_ino;
    r.bytes = bytes;
    r.end.store(reinterpret_cast<std::uintptr_t>(data) + bytes, std::memory_order_release);
    r.begin.store(reinterpret_cast<std::uintptr_t>(data), std::memory_order_release);
    return;
  }
  // More mappings than slots: this one is not named on SIGBUS (the default action applies).
}

void remove_range(const void* data) {
  const std::lock_guard<std::mutex> lock(g_ranges_mutex);
  for (MappedRange& r : g_ranges) {
    std::uintptr_t expected = reinterpret_cast<std::uintptr_t>(data);
    if (r.begin.compare_exchange_strong(expected, 0, std::memory_order_acq_rel)) return;
  }
}

}  // namespace

void install_mapping_fault_handler() {
  if (g_handler_installed.exchange(1) != 0) return;
  struct sigaction sa {};
  sa.sa_sigaction = on_sigbus;
  sa.sa_flags = SA_SIGINFO;
  sigemptyset(&sa.sa_mask);
  ::sigaction(SIGBUS, &sa, nullptr);
}

void check_mapped_files() {
  static std::atomic<std::int64_t> last_ms{-1000000};
  const std::int64_t now = std::chrono::duration_cast<std::chrono::milliseconds>(
                               std::chrono::steady_clock::now().time_since_epoch())
                               .count();
  std::int64_t last = last_ms.load();
  if (now - last < 200 || !last_ms.compare_exchange_strong(last, now)) return;
  const std::lock_guard<std::mutex> lock(g_ranges_mutex);
  for (const MappedRange& r : g_ranges) {
    if (r.begin.load(std::memory_order_acquire) <= 1) continue;
    const std::string path = r.path;
    struct stat st {};
    if (::stat(r.path, &st) != 0)
      throw IoError(path + ": the file was removed or renamed during the run (" +
                    std::strerror(errno) + "); stopping");
    if (st.st_dev != r.dev || st.st_ino != r.ino)
      throw IoError(path +
                    ": the file was replaced during the run (its name now gives another file); "
                    "stopping");
    if (static_cast<std::uint64_t>(st.st_size) < r.bytes)
      throw IoError(path + ": the file shrank while this run read it (" +
                    std::to_string(st.st_size) + " bytes, " + std::to_string(r.bytes) +
                    " mapped; truncated under the run?); stopping");
  }
}

std::string out_of_host_memory(std::size_t bytes) {
  // std::bad_alloc names neither the size nor the memory.
  char text[160];
  if (bytes > 0)
    std::snprintf(text, sizeof text, "out of host memory: cannot allocate %zu bytes (%.1f GiB)",
                  bytes, static_cast<double>(bytes) / (1ull << 30));
  else
    std::snprintf(text, sizeof text, "out of host memory: an allocation failed (std::bad_alloc)");
  std::string what = text;
  rlimit limit{};
  if (getrlimit(RLIMIT_AS, &limit) == 0 && limit.rlim_cur != RLIM_INFINITY) {
    std::snprintf(text, sizeof text, " under an address-space limit of %.1f GiB (ulimit -v)",
                  static_cast<double>(limit.rlim_cur) / (1ull << 30));
    what += text;
  }
  return what + "; a smaller model, batch or dataset, or more memory, is needed";
}

namespace {

std::atomic<std::size_t> g_host_bytes{0};
std::atomic<std::size_t> g_host_peak{0};

void count_host(std::size_t bytes) {
  const std::size_t now = g_host_bytes.fetch_add(bytes, std::memory_order_relaxed) + bytes;
  std::size_t peak = g_host_peak.load(std::memory_order_relaxed);
  while (now > peak && !g_host_peak.compare_exchange_weak(peak, now, std::memory_order_relaxed)) {
  }
}

}  // namespace

std::size_t host_buffer_bytes() { return g_host_bytes.load(std::memory_order_relaxed); }
std::size_t host_buffer_peak_bytes() { return g_host_peak.load(std::memory_order_relaxed); }
void reset_host_buffer_peak() {
  g_host_peak.store(g_host_bytes.load(std::memory_order_relaxed), std::memory_order_relaxed);
}

Buffer::Buffer(const Resources& res, Device device, std::size_t bytes, Pages pages)
    : m_bytes(bytes), m_device(device) {
  if (bytes == 0) return;
  if (device == Device::Cpu) {
    // Large buffers get 2 MiB alignment and transparent huge pages: feature rows gathered at
    // random from a big matrix otherwise miss the TLB on nearly every row (measured: SpMM over
    // the ogbn-arxiv shape at 256 columns, bench/results/cpu.md). Only the whole huge pages
    // inside the buffer are advised: the tail keeps 4 KiB pages, so the resident set is the
    // buffer's size, not its size rounded up to 2 MiB (which cost a rank up to 2 MiB per
    // buffer: 30 MiB more on one of two equal parts whose matrices crossed 4 MiB).
    constexpr std::size_t kHugePage = std::size_t{2} << 20;
    const std::size_t align = bytes >= kHugePage && pages == Pages::Auto ? kHugePage : 64;
    // posix_memalign: aligned_alloc wants the size a multiple of the alignment, which would
    // round it up to 2 MiB again.
    if (posix_memalign(&m_data, align, (bytes + 63) / 64 * 64) != 0) {
      m_data = nullptr;
      throw Error(out_of_host_memory(bytes));
    }
    if (align == kHugePage) madvise(m_data, bytes / kHugePage * kHugePage, MADV_HUGEPAGE);
    count_host(bytes);
  } else {
    m_stream = res.cuda_exec().stream;
    m_data = detail::cuda_malloc_async(bytes, m_stream);
  }
}

Buffer Buffer::map_file(const std::string& path, std::size_t bytes) {
  Buffer b;
  if (bytes == 0) return b;
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) throw IoError(path + ": cannot open: " + std::strerror(errno));
  struct stat st {};
  if (::fstat(fd, &st) != 0 || static_cast<std::uint64_t>(st.st_size) < bytes) {
    ::close(fd);
    throw IoError(path + ": the file has " + std::to_string(st.st_size) + " bytes, " +
                  std::to_string(bytes) + " expected");
  }
  // MAP_NORESERVE: no commit charge for the copy-on-write pages nothing writes (the kernel's
  // heuristic overcommit refuses a private writable mapping larger than memory otherwise).
  void* map = ::mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_NORESERVE, fd, 0);
  const int err = errno;
  if (map == MAP_FAILED) {
    ::close(fd);
    throw IoError(path + ": mmap failed: " + std::strerror(err));
  }
  b.m_data = map;
  b.m_bytes = bytes;
  b.m_fd = fd;
  b.m_path = path;
  add_range(map, bytes, path, st);
  count_host(bytes);
  return b;
}

void Buffer::advise_random() const {
  if (m_fd < 0) return;
  ::posix_fadvise(m_fd, 0, 0, POSIX_FADV_RANDOM);
  ::madvise(m_data, m_bytes, MADV_RANDOM);
}

void Buffer::read_file(std::size_t offset, void* dst, std::size_t bytes) const {
  HALO_EXPECTS(m_fd >= 0 && offset <= m_bytes && bytes <= m_bytes - offset,
               "Buffer::read_file: not a mapping, or past its end");
  auto* out = static_cast<char*>(dst);
  while (bytes > 0) {
    const ssize_t got = ::pread(m_fd, out, bytes, static_cast<off_t>(offset));
    if (got < 0 && errno == EINTR) continue;
    if (got <= 0)
      throw IoError(m_path + ": read failed at byte " + std::to_string(offset) + ": " +
                    (got < 0 ? std::strerror(errno) : "the file is shorter than its mapping"));
    out += got;
    offset += static_cast<std::size_t>(got);
    bytes -= static_cast<std::size_t>(got);
  }
}

Buffer::~Buffer() { release(); }

Buffer::Buffer(Buffer&& other) noexcept
    : m_data(std::exchange(other.m_data, nullptr)),
      m_bytes(std::exchange(other.m_bytes, 0)),
      m_device(other.m_device),
      m_stream(other.m_stream),
      m_fd(std::exchange(other.m_fd, -1)),
      m_path(std::move(other.m_path)) {}

Buffer& Buffer::operator=(Buffer&& other) noexcept {
  if (this != &other) {
    release();
    m_data = std::exchange(other.m_data, nullptr);
    m_bytes = std::exchange(other.m_bytes, 0);
    m_device = other.m_device;
    m_stream = other.m_stream;
    m_fd = std::exchange(other.m_fd, -1);
    m_path = std::move(other.m_path);
  }
  return *this;
}

void Buffer::release() noexcept {
  if (m_data == nullptr) return;
  if (m_fd >= 0) {
    remove_range(m_data);
    ::munmap(m_data, m_bytes);
    ::close(m_fd);
    g_host_bytes.fetch_sub(m_bytes, std::memory_order_relaxed);
    m_fd = -1;
  } else if (m_device == Device::Cpu) {
    std::free(m_data);
    g_host_bytes.fetch_sub(m_bytes, std::memory_order_relaxed);
  } else {
    detail::cuda_free_async(m_data, m_stream);
  }
  m_data = nullptr;
}

PinnedBuffer::PinnedBuffer(const Resources& res, std::size_t bytes) : m_bytes(bytes) {
  if (bytes == 0) return;
  if (res.device() == Device::Cuda) {
    m_data = detail::cuda_malloc_pinned(bytes);
    m_pinned = true;
  } else {
    m_data = std::aligned_alloc(64, (bytes + 63) / 64 * 64);
    if (m_data == nullptr) throw Error(out_of_host_memory(bytes));
  }
}

PinnedBuffer::~PinnedBuffer() { release(); }

PinnedBuffer::PinnedBuffer(PinnedBuffer&& other) noexcept
    : m_data(std::exchange(other.m_data, nullptr)),
      m_bytes(std::exchange(other.m_bytes, 0)),
      m_pinned(other.m_pinned) {}

PinnedBuffer& PinnedBuffer::operator=(PinnedBuffer&& other) noexcept {
  if (this != &other) {
    release();
    m_data = std::exchange(other.m_data, nullptr);
    m_bytes = std::exchange(other.m_bytes, 0);
    m_pinned = other.m_pinned;
  }
  return *this;
}

void PinnedBuffer::release() noexcept {
  if (m_data == nullptr) return;
  if (m_pinned) {
    detail::cuda_free_pinned(m_data);
  } else {
    std::free(m_data);
  }
  m_data = nullptr;
}

void copy_bytes_async(const Resources& res, void* dst, Device dst_device, const void* src,
                      Device src_device, std::size_t bytes) {
  if (bytes == 0) return;
  if (dst_device == Device::Cpu && src_device == Device::Cpu) {
    std::memcpy(dst, src, bytes);
  } else {
    detail::cuda_memcpy(dst, src, bytes, res.cuda_exec().stream, /*sync=*/false);
  }
}

void copy_bytes(const Resources& res, void* dst, Device dst_device, const void* src,
                Device src_device, std::size_t bytes) {
  if (bytes == 0) return;
  if (dst_device == Device::Cpu && src_device == Device::Cpu) {
    std::memcpy(dst, src, bytes);
  } else {
    detail::cuda_memcpy(dst, src, bytes, res.cuda_exec().stream, /*sync=*/true);
  }
}

void zero_bytes(const Resources& res, void* dst, Device device, std::size_t bytes) {
  fill_bytes(res, dst, device, 0, bytes);
}

void fill_bytes(const Resources& res, void* dst, Device device, unsigned char value,
                std::size_t bytes) {
  if (bytes == 0) return;
  if (device == Device::Cpu) {
    std::memset(dst, value, bytes);
  } else {
    detail::cuda_memset(dst, value, bytes, res.cuda_exec().stream);
  }
}

}  // namespace halo::kernels
