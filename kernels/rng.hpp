#pragma once
// Counter-based randomness: every draw is a pure function of (seed, stream, index).
// No generator state lives in an op, so CPU and GPU, and 1-rank and P-rank runs, draw the same
// numbers, and a run replays exactly from its seed.

#include <cstdint>
#if defined(__AVX512F__) && defined(__AVX512DQ__) && !defined(__CUDA_ARCH__)
#include <immintrin.h>
#endif

#include <halo/kernels/hd.hpp>

namespace halo::kernels::rng {

/// SplitMix64 finaliser (Steele, Lea, Flood 2014): a bijective 64-bit mixer.
HALO_HD inline std::uint64_t mix(std::uint64_t z) {
  z += 0x9E3779B97F4A7C15ull;
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

#if defined(__AVX512F__) && defined(__AVX512DQ__) && !defined(__CUDA_ARCH__)
/// mix of eight lanes at once (the same bits as mix of each). The shifts are the masked forms:
/// the unmasked ones pass an undefined vector that GCC 12 reports as maybe uninitialised.
template <unsigned S>
inline __m512i srli8(__m512i z) {
  return _mm512_maskz_srli_epi64(0xFF, z, S);
}
inline __m512i mix8(__m512i z) {
  z = _mm512_add_epi64(z, _mm512_set1_epi64(static_cast<long long>(0x9E3779B97F4A7C15ull)));
  z = _mm512_mullo_epi64(_mm512_xor_si512(z, srli8<30>(z)),
                         _mm512_set1_epi64(static_cast<long long>(0xBF58476D1CE4E5B9ull)));
  z = _mm512_mullo_epi64(_mm512_xor_si512(z, srli8<27>(z)),
                         _mm512_set1_epi64(static_cast<long long>(0x94D049BB133111EBull)));
  return _mm512_xor_si512(z, srli8<31>(z));
}
#endif

/// The part of a draw that depends only on (seed, stream): hoist it out of loops over indices.
HALO_HD inline std::uint64_t key(std::uint64_t seed, std::uint64_t stream) {
  return mix(mix(seed) ^ stream);
}

/// 64 random bits for draw `index` under a precomputed key(seed, stream).
HALO_HD inline std::uint64_t draw_keyed(std::uint64_t key, std::uint64_t index) {
  return mix(key ^ index);
}

/// 64 random bits for draw `index` of stream `stream` under `seed`.
HALO_HD inline std::uint64_t draw(std::uint64_t seed, std::uint64_t stream, std::uint64_t index) {
  return draw_keyed(key(seed, stream), index);
}

/// Uniform in [0, 1) with 24 random bits, from a precomputed key.
HALO_HD inline float uniform_keyed(std::uint64_t key, std::uint64_t index) {
  return static_cast<float>(draw_keyed(key, index) >> 40) * (1.0f / 16777216.0f);
}

/// Uniform in [0, 1) with 24 random bits (exactly representable as float).
HALO_HD inline float uniform(std::uint64_t seed, std::uint64_t stream, std::uint64_t index) {
  return uniform_keyed(key(seed, stream), index);
}

/// Uniform in [0, 1) with 53 random bits.
HALO_HD inline double uniform_double(std::uint64_t seed, std::uint64_t stream,
                                     std::uint64_t index) {
  return static_cast<double>(draw(seed, stream, index) >> 11) * (1.0 / 9007199254740992.0);
}

/// The high 64 bits of the 128-bit product a * b. `__extension__` keeps the GNU `__int128` type
/// accepted under -Wpedantic in code that includes this header (g++, clang and nvcc take it).
HALO_HD inline std::uint64_t mul_hi64(std::uint64_t a, std::uint64_t b) {
  __extension__ using Uint128 = unsigned __int128;
  return static_cast<std::uint64_t>((static_cast<Uint128>(a) * b) >> 64);
}

/// Uniform integer in [0, n) for n >= 1 (Lemire's multiply-shift; bias below 2^-32 for n < 2^32).
HALO_HD inline std::uint64_t below(std::uint64_t seed, std::uint64_t stream, std::uint64_t index,
                                   std::uint64_t n) {
  return mul_hi64(draw(seed, stream, index), n);
}

/// Stream ids name what a draw is for, so unrelated uses never share numbers.
enum Stream : std::uint64_t {
  kStreamInit = 1,       // parameter initialisation: index = parameter id, element
  kStreamDropout = 2,    // dropout masks
  kStreamSynthetic = 3,  // synthetic dataset generators
  kStreamShuffle = 4,    // seed shuffles
  kStreamSample = 5,     // neighbour sampling: sub-keys epoch, batch (see docs/sampler.md)
  kStreamNegative = 6,   // link prediction's negative pairs: sub-keys epoch, step
};

/// Combines a stream kind with up to two small sub-keys (epoch, layer, parameter id, ...).
HALO_HD inline std::uint64_t stream_id(std::uint64_t kind, std::uint64_t a, std::uint64_t b = 0) {
  return mix(kind ^ mix(a ^ mix(b)));
}

}  // namespace halo::kernels::rng
