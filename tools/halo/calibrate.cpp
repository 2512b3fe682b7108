// `halo calibrate`: measures the cost model's coefficients and writes them for `halo plan`.
#include <cstdio>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include <halo/cluster/calibrate.hpp>
#include <halo/tools/halo/commands.hpp>
#include <halo/tools/halo/dataset_options.hpp>
#include <halo/tools/halo/run_support.hpp>

namespace halo::cli {
namespace {

struct CalibrateOptions {
  std::string output;
  int threads = 0;
  double host_transport_gbps = 0;  // --host-transport-gbps: 0, none
  cluster::CalibrateConfig config;
};

/// "x1.39 @ 14.5, x1.93 @ 58.4 MiB": the working-set rule's points (with `producer`: "x0.55
/// (producer x2.10) @ 15.4").
std::string points_text(const std::vector<cluster::StepScalePoint>& pts, bool producer) {
  std::string out;
  char buf[96];
  for (const cluster::StepScalePoint& p : pts) {
    char extra[32] = "";
    if (producer) std::snprintf(extra, sizeof extra, " (producer x%.2f)", p.producer);
    std::snprintf(buf, sizeof buf, "%sx%.2f%s @ %.1f", out.empty() ? "" : ", ", p.scale, extra,
                  static_cast<double>(p.working_set_bytes) / 1048576.0);
    out += buf;
  }
  return out + " MiB";
}

void print_model(const cluster::CostModel& m, int ranks) {
  std::fprintf(
      stderr,
      "halo calibrate: gemm %.1f GFLOP/s (+%.1f us/call); spmm %.2f ns/entry + %.2f GB/s "
      "gathered (beyond the caches %.2f ns/entry + %.2f GB/s; +%.1f us/call); element-wise %.2f "
      "GB/s (in cache %.2f GB/s, +%.1f us/call); loss %.2f ns/cell; "
      "gather %.1f ns/row + "
      "%.2f GB/s; sampler %.1f ns/edge "
      "(+%.1f us/batch); disk %.0f MB/s; process %.0f MiB; step by working set: full graph %s "
      "(hub share %.3f; skewed graphs, hub share %.3f: %s), mini-batch %s; batch +%.1f us, epoch "
      "+%.1f us\n",
      1e-9 / m.gemm_s_per_flop, m.gemm_alpha_s * 1e6, m.spmm_s_per_edge * 1e9,
      m.spmm_s_per_byte > 0 ? 1e-9 / m.spmm_s_per_byte : 0.0, m.spmm_streaming_s_per_edge * 1e9,
      m.spmm_streaming_s_per_byte > 0 ? 1e-9 / m.spmm_streaming_s_per_byte : 0.0,
      m.spmm_alpha_s * 1e6, 1e-9 / m.elementwise_s_per_byte,
      m.elementwise_cached_s_per_byte > 0 ? 1e-9 / m.elementwise_cached_s_per_byte : 0.0,
      m.elementwise_alpha_s * 1e6, m.loss_s_per_cell * 1e9, m.gather_s_per_row * 1e9,
      m.gather_s_per_byte > 0 ? 1e-9 / m.gather_s_per_byte : 0.0, m.sampler_s_per_edge * 1e9,
      m.sampler_alpha_s * 1e6, 1e-6 / m.disk_s_per_byte,
      static_cast<double>(m.process_base_bytes) / 1048576.0,
      points_text(m.full_graph_steps, false).c_str(), m.full_graph_hub_share,
      m.full_graph_skewed_hub_share, points_text(m.full_graph_skewed_steps, false).c_str(),
      points_text(m.mini_batch_steps, true).c_str(), m.batch_alpha_s * 1e6, m.epoch_alpha_s * 1e6);
  if (ranks > 1) {
    const cluster::CollectiveCosts c = m.collective_at(ranks);
    char transport[64] = "";
    if (m.transport_s_per_byte > 0)
      std::snprintf(transport, sizeof transport, " (transport %.2f GB/s at each end)",
                    1e-9 / m.transport_s_per_byte);
    std::fprintf(stderr,
                 "halo calibrate: link %.2f us + %.2f GB/s%s; %d ranks: in-step message %.1f us "
                 "(full graph), %.1f us (mini-batch), %.0f ns per fetched row; MPI rank +%.0f "
                 "MiB\n",
                 m.link_alpha_s * 1e6, m.link_s_per_byte > 0 ? 1e-9 / m.link_s_per_byte : 0.0,
                 transport, ranks, c.full_graph_message_s * 1e6, c.mini_batch_message_s * 1e6,
                 c.mini_batch_fetch_row_s * 1e9,
                 static_cast<double>(m.mpi_rank_extra_bytes) / 1048576.0);
  }
}

int run_calibrate(const CalibrateOptions& o) {
  if (o.config.large_rmat_scale <= o.config.rmat_scale)
    throw UsageError("--large-rmat-scale " + std::to_string(o.config.large_rmat_scale) +
                     ": must be above --rmat-scale " + std::to_string(o.config.rmat_scale) +
                     " (the whole-step fits run on graphs up to that scale)");
  const std::filesystem::path out =
      o.output.empty() ? cluster::default_calibration_path() : std::filesystem::path(o.output);
  if (out.has_parent_path()) std::filesystem::create_directories(out.parent_path());
  check_output(out.string(), "--output");
  const int ranks = runtime::launcher_world_size();
  if (ranks <= 1 && o.host_transport_gbps > 0)
    throw UsageError(
        "--host-transport-gbps is for the link calibration: run it under mpiexec -n R (R >= 2)");
  if (ranks <= 1) {
    const kernels::Resources res = make_resources("cpu", o.threads, 1);
    const cluster::CostModel m =
        cluster::calibrate_compute(res, o.config, out.has_parent_path() ? out.parent_path() : ".");
    print_model(m, 1);
    cluster::write_cost_model(m, out);
    std::printf("%s\n", out.string().c_str());
    return 0;
  }
  // Several ranks: the link terms, merged into the one-process calibration of the same file.
  std::unique_ptr<runtime::Comm> world = runtime::make_world_comm();
  cluster::CostModel m;
  if (std::filesystem::exists(out)) {
    m = cluster::read_cost_model(out);
  } else if (world->rank() == 0) {
    std::fprintf(stderr,
                 "halo calibrate: %s does not exist: run `halo calibrate` in one process first "
                 "for the compute terms; writing the link terms beside the default ones\n",
                 out.string().c_str());
  }
  {
    // The same warm-up as the one-process footprint's.
    const kernels::Resources res = make_resources("cpu", o.threads, ranks);
    cluster::warm_up(res);
    const bool measured = m.calibrated;
    m.transport_s_per_byte = o.host_transport_gbps > 0 ? 8.0 / (o.host_transport_gbps * 1e9) : 0.0;
    m = cluster::calibrate_link(res, *world, o.config,
                                out.has_parent_path() ? out.parent_path() : ".", m);
    m.calibrated = measured || m.calibrated;
  }
  if (world->rank() == 0) {
    print_model(m, ranks);
    cluster::write_cost_model(m, out);
    std::printf("%s\n", out.string().c_str());
  }
  world->barrier();
  return 0;
}

}  // namespace

Command add_calibrate_command(CLI::App& app) {
  auto o = std::make_shared<CalibrateOptions>();
  CLI::App* sub = app.add_subcommand(
      "calibrate",
      "Measure this machine's costs for `halo plan` (compute in one process; the link between "
      "ranks and the in-step message costs at R ranks under mpiexec -n R, merged into the same "
      "file)");
  sub->add_option("--output", o->output,
                  "Calibration file to write (default: $HALO_CALIBRATION, else <data "
                  "dir>/calibration.json, which halo plan reads)");
  sub->add_option("--threads", o->threads, "CPU threads (default: as halo train)")
      ->check(integer_range(1, 4096));
  sub->add_option("--host-transport-gbps", o->host_transport_gbps,
                  "Under mpiexec: the rate, Gb/s, at which the host's cores move message bytes "
                  "at each end besides the link's time, for ranks that share the cores over TCP "
                  "(emulated hosts: an unshaped link's throughput); the in-step fits charge it, "
                  "and the file keeps it for halo plan (default: none, as over shared memory)")
      ->check(CLI::Range(1e-6, 1e6));
  sub->add_option("--repeats", o->config.repeats,
                  "Timed calls per measurement window (at least; their mean over at least 0.1 s)")
      ->check(integer_range(1, 1000))
      ->capture_default_str();
  sub->add_option("--rounds", o->config.rounds,
                  "Independent rounds of every measurement, their median kept (a round "
                  "disturbed by another process then moves nothing)")
      ->check(integer_range(1, 99))
      ->capture_default_str();
  sub->add_option("--rmat-scale", o->config.rmat_scale,
                  "R-MAT scale of the SpMM and sampler graph (2^scale nodes, degree 8); the "
                  "sparse products beyond the caches run on random graphs 16 times its input")
      ->check(integer_range(4, 22))
      ->capture_default_str();
  sub->add_option(
         "--large-rmat-scale", o->config.large_rmat_scale,
         "Scale (2^scale nodes) of the largest graph of the whole-step fits, random graphs "
         "without hubs (the working-set rule: two scales below --rmat-scale, --rmat-scale, every "
         "second scale above it, and this one)")
      ->check(integer_range(4, 22))
      ->capture_default_str();
  return {sub, [o] { return run_calibrate(*o); }};
}

}  // namespace halo::cli
