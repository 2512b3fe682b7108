#pragma once
// Buffer: owning, device-tagged, move-only raw memory.

#include <cstddef>
#include <string>

#include <halo/kernels/resources.hpp>

namespace halo::kernels {

/// What a refused host allocation says: "out of host memory: cannot allocate N bytes (G GiB)"
/// (`bytes` 0: "an allocation failed (std::bad_alloc)", the size unknown), the process's
/// address-space limit when one is set (ulimit -v, a container's), and what would help.
std::string out_of_host_memory(std::size_t bytes);

/// Makes a SIGBUS on the page of a file mapping (Buffer::map_file) whose file was cut short
/// under the process print one line naming the file ("halo: error: FILE: the file shrank ...")
/// and exit with status 1, instead of a crash; a SIGBUS elsewhere keeps its default action.
/// Call once at start-up (the halo tool does); idempotent.
void install_mapping_fault_handler();

/// Checks every file mapping alive (Buffer::map_file) against its file's name: halo::IoError
/// naming the first whose name is gone, now gives another file (replaced: a new inode) or a
/// file shorter than the mapping (truncated), "...; stopping". A mapping keeps reading the file
/// it opened, so a run would otherwise go on with data that are no longer the store's. At most
/// one check every 200 ms (a call in between returns at once): cheap to call every step (the
/// Trainer does).
void check_mapped_files();

/// The pages of a large CPU buffer. Auto: a buffer of 2 MiB or more gets transparent huge pages
/// over its whole 2 MiB pages (the buffer is used whole: a feature matrix, a full-graph
/// activation). Small: 4 KiB pages only, for a capacity that is filled partly (a mini-batch
/// envelope: the first touch of a huge page makes all 2 MiB of it resident, however few rows a
/// batch writes). CUDA buffers ignore it.
enum class Pages { Auto, Small };

/// Owns `bytes` of memory on `device`. CPU memory is 64-byte aligned; CUDA memory is a
/// stream-ordered allocation on res's stream, freed on that stream. Contents start undefined.
/// Move-only: copying memory is always explicit (`copy`, `Tensor::clone`).
class Buffer {
 public:
  Buffer() = default;
  Buffer(const Resources& res, Device device, std::size_t bytes, Pages pages = Pages::Auto);
  ~Buffer();
  Buffer(Buffer&& other) noexcept;
  Buffer& operator=(Buffer&& other) noexcept;
  Buffer(const Buffer&) = delete;
  Buffer& operator=(const Buffer&) = delete;

  /// The first `bytes` of file `path` as host memory, mapped copy-on-write (MAP_PRIVATE, readable
  /// and writable; a write stays in this process): a page is read from the file when first
  /// touched, and the kernel may drop an untouched or unwritten page again under memory
  /// pressure. No swap is reserved (MAP_NORESERVE: a file larger than memory maps). The file must
  /// hold at least `bytes` bytes and must not shrink while mapped (install_mapping_fault_handler);
  /// a replaced file is read no more (the mapping keeps the old one), check_mapped_files says so.
  /// Counted as host buffer bytes. halo::IoError naming the file when it cannot be opened, is
  /// shorter, or cannot be mapped.
  static Buffer map_file(const std::string& path, std::size_t bytes);
  /// Whether the memory is a file mapping (map_file).
  bool mapped() const { return m_fd >= 0; }
  /// A mapping read at random (rows of a store's features or graph): no read-ahead, neither for
  /// read_file (POSIX_FADV_RANDOM on the file) nor for page faults (MADV_RANDOM), so the disk
  /// reads the pages asked for, not 128 KiB windows around each. No-op when not mapped.
  void advise_random() const;
  /// Copies `bytes` at byte `offset` of a mapping's file into `dst` with pread, mapping no page
  /// into this process: the way to read a large mapping at random. A page touched through the
  /// mapping is mapped with the whole page-cache folio around it (up to 2 MiB on kernels with
  /// large folios), so random reads through it grow the resident set far faster than a
  /// MappedPageTrimmer can drop it. Reads the file: a write through the mapping is not seen.
  /// Only for mapped() buffers, within bytes(); halo::IoError naming the file on a read error.
  void read_file(std::size_t offset, void* dst, std::size_t bytes) const;

  void* data() const { return m_data; }
  std::size_t bytes() const { return m_bytes; }
  Device device() const { return m_device; }

 private:
  void release() noexcept;
  void* m_data = nullptr;
  std::size_t m_bytes = 0;
  Device m_device = Device::Cpu;
  void* m_stream = nullptr;
  int m_fd = -1;       // the mapped file (map_file), kept open for read_file
  std::string m_path;  // its name, for errors
};

/// Host memory for staging transfers to and from a device: page-locked (cudaMallocHost) when
/// `res` is a CUDA Resources, so copies run asynchronously at full link speed; ordinary 64-byte
/// aligned memory otherwise. Allocate once, outside loops: pinning is expensive. Move-only.
class PinnedBuffer {
 public:
  PinnedBuffer() = default;
  PinnedBuffer(const Resources& res, std::size_t bytes);
  ~PinnedBuffer();
  PinnedBuffer(PinnedBuffer&& other) noexcept;
  PinnedBuffer& operator=(PinnedBuffer&& other) noexcept;
  PinnedBuffer(const PinnedBuffer&) = delete;
  PinnedBuffer& operator=(const PinnedBuffer&) = delete;

  void* data() const { return m_data; }
  std::size_t bytes() const { return m_bytes; }
  bool pinned() const { return m_pinned; }

 private:
  void release() noexcept;
  void* m_data = nullptr;
  std::size_t m_bytes = 0;
  bool m_pinned = false;
};

/// Copies `bytes` between any two devices; returns when the data is in place.
void copy_bytes(const Resources& res, void* dst, Device dst_device, const void* src,
                Device src_device, std::size_t bytes);
/// The same, asynchronous on res's stream when either side is a device (host memory must then
/// stay alive and unchanged until the stream reaches the copy: use a PinnedBuffer, or the copy
/// is staged synchronously by the driver); a plain memcpy between host buffers.
void copy_bytes_async(const Resources& res, void* dst, Device dst_device, const void* src,
                      Device src_device, std::size_t bytes);
/// Sets `bytes` to zero; asynchronous on res's stream for CUDA.
void zero_bytes(const Resources& res, void* dst, Device device, std::size_t bytes);
/// Sets every one of `bytes` bytes to `value`; asynchronous on res's stream for CUDA.
void fill_bytes(const Resources& res, void* dst, Device device, unsigned char value,
                std::size_t bytes);

}  // namespace halo::kernels
