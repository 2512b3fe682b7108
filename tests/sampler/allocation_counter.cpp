#include "sampler/allocation_counter.hpp"

#include <atomic>
#include <cstdlib>
#include <new>

namespace {
std::atomic<std::int64_t> g_allocations{0};
}  // namespace

std::int64_t halo::sampler::test::allocation_count() { return g_allocations.load(); }

// NOLINTBEGIN(readability-identifier-naming): names the linker's --wrap option dictates.
extern "C" {
void* __real_malloc(std::size_t bytes);
void* __real_calloc(std::size_t count, std::size_t bytes);
void* __real_realloc(void* p, std::size_t bytes);
void* __real_aligned_alloc(std::size_t align, std::size_t bytes);
int __real_posix_memalign(void** p, std::size_t align, std::size_t bytes);

void* __wrap_malloc(std::size_t bytes) {
  ++g_allocations;
  return __real_malloc(bytes);
}
void* __wrap_calloc(std::size_t count, std::size_t bytes) {
  ++g_allocations;
  return __real_calloc(count, bytes);
}
void* __wrap_realloc(void* p, std::size_t bytes) {
  ++g_allocations;
  return __real_realloc(p, bytes);
}
void* __wrap_aligned_alloc(std::size_t align, std::size_t bytes) {
  ++g_allocations;
  return __real_aligned_alloc(align, bytes);
}
int __wrap_posix_memalign(void** p, std::size_t align, std::size_t bytes) {
  ++g_allocations;
  return __real_posix_memalign(p, align, bytes);
}
}
// NOLINTEND(readability-identifier-naming)

// operator new lives in libstdc++.so, out of --wrap's reach: replace it (the delete operators
// must match: they free what this malloc returned).
void* operator new(std::size_t bytes) {
  ++g_allocations;
  if (void* p = __real_malloc(bytes == 0 ? 1 : bytes)) return p;
  throw std::bad_alloc();
}
// The nothrow form too (std::stable_sort's temporary buffer): its memory reaches the plain
// delete above, so it must come from the same malloc.
void* operator new(std::size_t bytes, const std::nothrow_t&) noexcept {
  ++g_allocations;
  return __real_malloc(bytes == 0 ? 1 : bytes);
}
void operator delete(void* p) noexcept { std::free(p); }
void operator delete(void* p, std::size_t) noexcept { std::free(p); }
void operator delete(void* p, const std::nothrow_t&) noexcept { std::free(p); }
