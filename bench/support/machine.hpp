#pragma once
// The machine's own limits, measured in the benchmark's process so ratios compare like with like.

namespace halo::bench {

/// STREAM-style triad a[i] = b[i] + s * c[i] over three 64 MiB float arrays on all OpenMP
/// threads; the best of 5 runs, in bytes per second (3 arrays x 4 bytes per element; write-
/// allocate traffic not counted, as in STREAM). Measured anew on every call (about 0.1 s), so a
/// benchmark compares itself with the machine as it is right then: shared machines drift.
double triad_bytes_per_second();

/// OpenBLAS sgemm on 2048 x 2048 x 2048 with all threads: the best of 3 runs in FLOP/s.
/// Measured anew on every call (about 0.3 s).
double sgemm_peak_flops();

/// True when HALO_BENCH_SMOKE=1: benchmarks shrink to their smallest sizes (CI smoke runs).
bool smoke();

}  // namespace halo::bench
