#pragma once
// Tensor<T>: an owning, device-tagged, move-only 2-D row-major array (vectors have cols == 1).

#include <cstdint>
#include <utility>
#include <vector>

#include <halo/kernels/buffer.hpp>
#include <halo/kernels/error.hpp>
#include <halo/kernels/views.hpp>

namespace halo::kernels {

template <class T>
class Tensor {
 public:
  Tensor() = default;
  /// Uninitialised rows x cols on `device` (`pages`: see Pages).
  Tensor(const Resources& res, Device device, std::int64_t rows, std::int64_t cols = 1,
         Pages pages = Pages::Auto)
      : m_buffer(res, device, checked_bytes(rows, cols), pages), m_rows(rows), m_cols(cols) {}
  /// Uninitialised rows x cols on res's device.
  Tensor(const Resources& res, std::int64_t rows, std::int64_t cols = 1, Pages pages = Pages::Auto)
      : Tensor(res, res.device(), rows, cols, pages) {}

  /// rows x cols in `buffer`'s memory (a host buffer of at least that many bytes: a file
  /// mapping, Buffer::map_file).
  Tensor(Buffer buffer, std::int64_t rows, std::int64_t cols = 1)
      : m_buffer(std::move(buffer)), m_rows(rows), m_cols(cols) {
    HALO_EXPECTS(checked_bytes(rows, cols) <= m_buffer.bytes(),
                 "Tensor: the buffer is smaller than the shape");
  }

  /// Moving leaves the source empty (0 x 0), so its shape never describes memory it gave away.
  Tensor(Tensor&& other) noexcept
      : m_buffer(std::move(other.m_buffer)),
        m_rows(std::exchange(other.m_rows, 0)),
        m_cols(std::exchange(other.m_cols, 0)) {}
  Tensor& operator=(Tensor&& other) noexcept {
    m_buffer = std::move(other.m_buffer);
    m_rows = std::exchange(other.m_rows, 0);
    m_cols = std::exchange(other.m_cols, 0);
    return *this;
  }

  /// rows x cols of zeros on res's device.
  static Tensor zeros(const Resources& res, std::int64_t rows, std::int64_t cols = 1) {
    Tensor t(res, rows, cols);
    zero_bytes(res, t.data(), t.device(), t.bytes());
    return t;
  }
  /// A copy of host `values` (size rows * cols) on res's device.
  static Tensor from_host(const Resources& res, const std::vector<T>& values, std::int64_t rows,
                          std::int64_t cols = 1) {
    HALO_EXPECTS(static_cast<std::int64_t>(values.size()) == rows * cols,
                 "Tensor::from_host: size does not match shape");
    Tensor t(res, rows, cols);
    copy_bytes(res, t.data(), t.device(), values.data(), Device::Cpu, t.bytes());
    return t;
  }
  /// A column vector holding `values`.
  static Tensor from_host(const Resources& res, const std::vector<T>& values) {
    return from_host(res, values, static_cast<std::int64_t>(values.size()), 1);
  }

  Device device() const { return m_buffer.device(); }
  std::int64_t rows() const { return m_rows; }
  std::int64_t cols() const { return m_cols; }
  std::int64_t numel() const { return m_rows * m_cols; }
  std::size_t bytes() const { return static_cast<std::size_t>(numel()) * sizeof(T); }
  bool empty() const { return numel() == 0; }
  /// Bytes of the storage, which can exceed bytes() after a smaller reshape_within.
  std::size_t capacity_bytes() const { return m_buffer.bytes(); }
  /// Whether the elements are a file mapping (Buffer::map_file).
  bool mapped() const { return m_buffer.mapped(); }
  /// The memory holding the elements, from its start (Buffer::read_file reads a mapping's file).
  const Buffer& storage() const { return m_buffer; }
  /// Gives the tensor the shape rows x cols in its existing storage (contents unspecified);
  /// the storage must hold that many elements.
  void reshape_within(std::int64_t rows, std::int64_t cols) {
    HALO_EXPECTS(rows >= 0 && cols >= 0 && checked_bytes(rows, cols) <= capacity_bytes(),
                 "Tensor::reshape_within: the shape does not fit the storage");
    m_rows = rows;
    m_cols = cols;
  }
  T* data() { return static_cast<T*>(m_buffer.data()); }
  const T* data() const { return static_cast<const T*>(m_buffer.data()); }

  MatrixView<T> view() { return {data(), m_rows, m_cols}; }
  MatrixView<const T> view() const { return {data(), m_rows, m_cols}; }
  Span<T> span() { return {data(), numel()}; }
  Span<const T> span() const { return {data(), numel()}; }

  /// Host-side element access; only for CPU tensors.
  T& operator()(std::int64_t r, std::int64_t c = 0) { return data()[r * m_cols + c]; }
  const T& operator()(std::int64_t r, std::int64_t c = 0) const { return data()[r * m_cols + c]; }

  /// A deep copy on the same device.
  Tensor clone(const Resources& res) const { return copy_to(res, device()); }
  /// A deep copy on `target`.
  Tensor copy_to(const Resources& res, Device target) const {
    Tensor t(res, target, m_rows, m_cols);
    copy_bytes(res, t.data(), target, data(), device(), bytes());
    return t;
  }
  /// The elements, copied to a host vector.
  std::vector<T> to_vector(const Resources& res) const {
    std::vector<T> out(static_cast<std::size_t>(numel()));
    copy_bytes(res, out.data(), Device::Cpu, data(), device(), bytes());
    return out;
  }

 private:
  static std::size_t checked_bytes(std::int64_t rows, std::int64_t cols) {
    HALO_EXPECTS(rows >= 0 && cols >= 0, "Tensor: negative shape");
    return static_cast<std::size_t>(rows) * static_cast<std::size_t>(cols) * sizeof(T);
  }
  Buffer m_buffer;
  std::int64_t m_rows = 0;
  std::int64_t m_cols = 0;
};

/// Copies src into dst (same shape, any devices).
template <class T>
void copy(const Resources& res, Tensor<T>& dst, const Tensor<T>& src) {
  HALO_EXPECTS(dst.rows() == src.rows() && dst.cols() == src.cols(), "copy: shape mismatch");
  copy_bytes(res, dst.data(), dst.device(), src.data(), src.device(), src.bytes());
}

/// The same, asynchronous on res's stream when a device is involved (copy_bytes_async): copies
/// inside a training step never make the host wait for the device.
template <class T>
void copy_async(const Resources& res, Tensor<T>& dst, const Tensor<T>& src) {
  HALO_EXPECTS(dst.rows() == src.rows() && dst.cols() == src.cols(), "copy: shape mismatch");
  copy_bytes_async(res, dst.data(), dst.device(), src.data(), src.device(), src.bytes());
}

/// Makes `t` a rows x cols tensor on res's device (contents unspecified), reallocating only when
/// its storage is too small or on another device. Layers use it to keep their outputs across
/// epochs and mini-batches (whose sizes vary) without allocating again.
/// Gives `t` storage for at least `elements` elements on res's device (reallocating, contents
/// lost, only when it has less), so that later ensure_shape calls within it allocate nothing.
/// A capacity, filled partly: small pages (Pages::Small).
template <class T>
void reserve(const Resources& res, Tensor<T>& t, std::int64_t elements) {
  HALO_EXPECTS(elements >= 0, "reserve: negative size");
  if (t.device() == res.device() &&
      static_cast<std::size_t>(elements) * sizeof(T) <= t.capacity_bytes())
    return;
  t = Tensor<T>(res, elements, 1, Pages::Small);
}

template <class T>
void ensure_shape(const Resources& res, Tensor<T>& t, std::int64_t rows, std::int64_t cols) {
  if (t.rows() == rows && t.cols() == cols && t.device() == res.device()) return;
  HALO_EXPECTS(rows >= 0 && cols >= 0, "ensure_shape: negative shape");
  if (t.device() == res.device() &&
      static_cast<std::size_t>(rows) * static_cast<std::size_t>(cols) * sizeof(T) <=
          t.capacity_bytes()) {
    t.reshape_within(rows, cols);
  } else {
    t = Tensor<T>(res, rows, cols);
  }
}

}  // namespace halo::kernels
