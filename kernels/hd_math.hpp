#pragma once
// The math that single-source bodies may use; identical spelling for g++ and nvcc.

#include <cmath>

#include <halo/kernels/hd.hpp>

namespace halo::kernels::hd {

template <class T>
HALO_HD inline T max(T a, T b) {
  return a < b ? b : a;
}
template <class T>
HALO_HD inline T min(T a, T b) {
  return b < a ? b : a;
}
HALO_HD inline float exp(float x) { return ::expf(x); }
HALO_HD inline double exp(double x) { return ::exp(x); }
HALO_HD inline float log(float x) { return ::logf(x); }
HALO_HD inline double log(double x) { return ::log(x); }
HALO_HD inline float sqrt(float x) { return ::sqrtf(x); }
HALO_HD inline double sqrt(double x) { return ::sqrt(x); }
HALO_HD inline float pow(float x, float y) { return ::powf(x, y); }
HALO_HD inline double pow(double x, double y) { return ::pow(x, y); }

}  // namespace halo::kernels::hd
