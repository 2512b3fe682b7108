#pragma once
// Counts every heap allocation of the test program: global operator new (replaced in
// allocation_counter.cpp) and the C allocators of statically linked code (malloc, calloc,
// realloc, aligned_alloc, posix_memalign, wrapped with the linker's --wrap in CMakeLists.txt;
// Buffer allocates with aligned_alloc). Works under ASan: the wrappers call ASan's allocator.

#include <cstdint>

namespace halo::sampler::test {

/// Allocations so far, from any thread.
std::int64_t allocation_count();

}  // namespace halo::sampler::test
