"""Writes the GPU check's summary (markdown, to stdout) from the benchmark JSON files.

usage: summarize.py OUT_DIR GPU_INFO TESTS_LINE SKIPPED CTEST_RC SECONDS
"""
import json
import os
import sys


def load(path):
    if not os.path.exists(path):
        return []
    with open(path) as f:
        return [b for b in json.load(f).get("benchmarks", []) if b.get("run_type") == "iteration"]


def ms(b):
    t = b.get("real_time", 0.0)
    return t * {"ns": 1e-6, "us": 1e-3, "ms": 1.0, "s": 1e3}[b.get("time_unit", "ns")]


def main():
    out, gpu_info, tests_line, skipped, ctest_rc, seconds = sys.argv[1:7]
    bench = load(os.path.join(out, "gpu_bench.json"))
    sampler = load(os.path.join(out, "gpu_sampler_bench.json"))
    ran = [b for b in bench if not b.get("error_occurred")]
    lines = ["# GPU check (`bash bench/gpu/run.sh`)", ""]
    lines.append(f"- Hardware: {gpu_info}")
    lines.append(f"- CUDA test cases (`ctest -L cuda`): {tests_line or 'no summary'}; "
                 f"{skipped} skipped; exit status {ctest_rc} (the `distributed_cuda_np*` entries "
                 "report Passed even when their cases skip: see their logs)")
    lines.append(f"- Whole run: {seconds} s (budget 480 s on an H200)")
    if os.environ.get("HALO_BENCH_SMOKE") == "1":
        lines.append("- **Smoke run** (HALO_BENCH_SMOKE=1): smallest sizes, not a measurement")
    if not ran:
        errors = {b.get("error_message", "") for b in bench}
        lines += ["", f"No GPU benchmark ran ({'; '.join(sorted(errors)) or 'no results'})."]
        print("\n".join(lines))
        return

    def first(name):
        return next((b for b in ran if b["name"].startswith(name)), None)

    copy = first("BM_DeviceCopy")
    peak = first("BM_SgemmPeak")
    bw = copy["bytes_per_s"] if copy else float("nan")
    flops = peak["flops"] if peak else float("nan")
    lines += ["", "## The machine's limits, measured in the same run", "",
              f"- Device-to-device copy: {bw / 1e9:.0f} GB/s (read + write)",
              f"- cuBLAS SGEMM 8192^3: {flops / 1e12:.1f} TFLOP/s", ""]

    lines += ["## SpMM (CSR x dense, GCN-normalised graph)", "",
              "| graph | columns | implementation | ms | GB/s | fraction of copy bandwidth |",
              "| --- | --- | --- | --- | --- | --- |"]
    target = None
    for b in ran:
        if not b["name"].startswith("BM_Spmm/"):
            continue
        label = b.get("label", "")
        cols = b["name"].split("cols:")[1].split("/")[0]
        lines.append(f"| {label.split()[0]} | {cols} | {label.split()[1]} | {ms(b):.3f} | "
                     f"{b['bytes_per_s'] / 1e9:.0f} | {b['fraction_of_copy_bw']:.2f} |")
        if label.startswith("products") and cols == "128":
            target = max(target or 0.0, b["fraction_of_copy_bw"])
    if target is not None:
        verdict = "met" if target >= 0.6 else "NOT met"
        lines += ["", f"Target SpMM >= 60% of memory bandwidth on the products shape with 128 "
                      f"features: best {target:.0%} of the measured copy bandwidth ({verdict})."]

    lines += ["", "## Dense products of a GCN layer (products shape, cuBLAS)", "",
              "| in x out | ms | TFLOP/s | fraction of SGEMM peak |", "| --- | --- | --- | --- |"]
    for b in ran:
        if b["name"].startswith("BM_GemmLayer/"):
            shape = "x".join(b["name"].split("/")[1:3])
            lines.append(f"| {shape} | {ms(b):.3f} | {b['flops'] / 1e12:.1f} | "
                         f"{b['fraction_of_peak']:.2f} |")

    lines += ["", "## One GCN epoch (2 layers, 256 hidden; forward, loss, backward, Adam)", ""]
    cpu = first("BM_GcnEpochCpu")
    for b in ran:
        if b["name"].startswith("BM_GcnEpochCuda"):
            line = (f"- GPU, {b.get('label', '')} shape ({b['nodes']:.0f} nodes, "
                    f"{b['edges']:.0f} edges): {ms(b):.1f} ms")
            if cpu and b.get("label") == "arxiv":
                line += f"; CPU on all cores of this host: {ms(cpu):.1f} ms ({ms(cpu) / ms(b):.1f}x)"
            lines.append(line)

    lines += ["", "## Sampler (GPU, R-MAT)", ""]
    for b in sampler:
        if b.get("error_occurred"):
            lines.append(f"- {b['name']}: skipped ({b.get('error_message', '')})")
            continue
        rate = b.get("sampled_edges_per_s", 0.0)
        syncs = b.get("host_syncs_per_batch")
        verdict = "met" if rate >= 1e9 else "NOT met"
        lines.append(f"- {b['name']}: {rate / 1e9:.2f} G sampled edges/s (target 1e9: {verdict})"
                     + (f", {syncs:.0f} host synchronisations per batch" if syncs is not None
                        else ""))
    print("\n".join(lines))


if __name__ == "__main__":
    main()
