#pragma once
// What the CPU Buffers of the process hold (kernels::Buffer counts its host allocations).

#include <cstddef>

namespace halo::kernels {

/// Host bytes held by every live CPU Buffer of the process now, and the most they held since
/// the last reset_host_buffer_peak (or the start): what the tensors themselves take, without
/// the allocator's or the libraries' memory. Thread-safe. What the memory plans' inventories
/// of a step's tensors are tested against.
std::size_t host_buffer_bytes();
std::size_t host_buffer_peak_bytes();
/// Sets the peak to the bytes held now.
void reset_host_buffer_peak();

}  // namespace halo::kernels
