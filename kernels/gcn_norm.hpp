#pragma once
// GCN's symmetric normalisation, the one definition every path uses (datasets::gcn_normalize,
// the halo exchange's blocks, the weights of sampled blocks).

#include <halo/kernels/hd.hpp>
#include <halo/kernels/hd_math.hpp>

namespace halo::kernels {

/// d^-1/2 for the degree d of a node in A + I (Kipf & Welling's D̂), 0 for d <= 0. In double: a
/// float square root of a hub's degree would lose the low-order bits that equal runs compare.
HALO_HD inline double gcn_inv_sqrt(double d) { return d > 0.0 ? 1.0 / hd::sqrt(d) : 0.0; }

/// The weight of entry (i, j) of D̂^-1/2 (A + I) D̂^-1/2 with d̂_i, d̂_j the degrees in A + I
/// (`value` the entry's weight in A + I, 1 for plain graphs).
HALO_HD inline double gcn_weight(double d_hat_i, double d_hat_j, double value = 1.0) {
  return value * gcn_inv_sqrt(d_hat_i) * gcn_inv_sqrt(d_hat_j);
}

}  // namespace halo::kernels
