#pragma once
// How `halo partition` and `halo datasets convert` / `prepare` end on SIGINT, SIGTERM or SIGHUP.

namespace halo::cli {

/// From here on SIGINT, SIGTERM and SIGHUP are blocked in this thread and every thread it
/// starts (OpenMP's team included) and taken by one waiting thread, which removes the staging
/// directories of outputs in progress (datasets::remove_staging_directories) and ends the
/// process by that same signal: a shell sees 130 or 143, as for any program stopped so, and
/// nothing is reported as failed. Without it METIS catches SIGTERM itself and turns it into
/// "METIS failed (error)". Call once, before any other thread exists.
void end_by_signal_on_termination();

}  // namespace halo::cli
