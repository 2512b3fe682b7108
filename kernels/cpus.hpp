#pragma once
// The CPUs this process may run on: its affinity and the machine's online CPUs (the runtime's
// prefetch choice, the cluster component's calibration).

#include <sched.h>
#include <unistd.h>

#include <algorithm>
#include <vector>

namespace halo::kernels {

/// This machine's online CPUs (at least 1).
inline int online_cpus() { return std::max(1, static_cast<int>(::sysconf(_SC_NPROCESSORS_ONLN))); }

/// The CPUs this process may run on (its affinity; all online ones if it cannot be read).
inline std::vector<int> usable_cpus() {
  std::vector<int> cpus;
  cpu_set_t set;
  CPU_ZERO(&set);
  if (sched_getaffinity(0, sizeof set, &set) == 0) {
    for (int i = 0; i < CPU_SETSIZE; ++i)
      if (CPU_ISSET(i, &set)) cpus.push_back(i);
  }
  if (cpus.empty())
    for (int i = 0; i < online_cpus(); ++i) cpus.push_back(i);
  return cpus;
}

}  // namespace halo::kernels
