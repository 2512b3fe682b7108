"""Tables and a plot from bench/peers/run.sh's records.

    report.py RECORDS.jsonl --out DIR [--versions TEXT] [--commit SHA] [--threads N] [--load L] [--quick]
    report.py --summarize-ops HALO_OPS_LOG     (one summary line from halo_ops' per-rep lines)

Per workload, one metric: time per epoch (GCN, SAGE), seconds per product (SpMM), both lower is
better, or sampled edges per second (sampling), higher is better. A cell gives the best (min
time, max rate) and the median over the repetitions; a ratio is Halo / peer per repetition (the runs of one repetition
are back to back), and the table shows the median of those ratios and all of them. For the
sampling rate the ratio is inverted (peer rate / Halo rate), so that below 1 always means Halo is
faster.

The heterogeneous workloads (acm-rgcn, acm-hgt: R-GCN and HGT on the full graph, ms per epoch;
mag-rgcn-10-5 and the like: R-GCN mini-batch, ms per batch = epoch time / batches trained) have
a table of their own that puts each system's test Macro-F1 (at the epoch of best validation
accuracy; mean, and range over the repetitions) beside its time.
"""
import argparse
import csv
import json
import math
import statistics
import sys

METRICS = {  # workload kind -> (record key, unit, lower is better, scale for the table)
    "gcn": ("epoch_time_median_s", "ms per epoch", True, 1e3),
    "sage": ("epoch_time_median_s", "s per epoch", True, 1.0),
    "spmm": ("seconds_median", "ms per product", True, 1e3),
    "sample": ("sampled_edges_per_s_median", "M sampled edges/s", False, 1e-6),
    "hetero": ("epoch_time_median_s", "ms per epoch", True, 1e3),
    "hetero-mb": ("seconds_per_batch", "ms per batch", True, 1e3),
}
HETERO = ("hetero", "hetero-mb")
SYSTEMS = ["halo", "pyg", "dgl"]
NAMES = {"halo": "Halo", "pyg": "PyG", "dgl": "DGL"}


def kind(workload):
    if "-rgcn" in workload or "-hgt" in workload:  # before gcn: acm-rgcn ends with "gcn"
        return "hetero-mb" if workload.split("-")[-1].isdigit() else "hetero"
    for k in ("gcn", "sage", "spmm", "sample"):
        if workload.endswith(k) or ("-" + k) in workload:
            return k
    raise SystemExit(f"report.py: unknown workload {workload}")


def summarize_ops(path):
    reps = [json.loads(l) for l in open(path) if l.startswith("{")]
    if not reps:
        raise SystemExit(f"report.py: no records in {path}")
    if reps[0]["op"] == "sample":
        rates = [r["sampled_edges_per_s"] for r in reps]
        out = {"sampled_edges_per_s_median": statistics.median(rates),
               "sampled_edges_per_s_max": max(rates)}
    else:
        secs = [r["seconds"] for r in reps]
        out = {"seconds_median": statistics.median(secs), "seconds_min": min(secs),
               "bytes": reps[0]["bytes"], "triad_bytes_per_s": reps[0]["triad_bytes_per_s"],
               "bytes_per_s_median": reps[0]["bytes"] / statistics.median(secs)}
    out["summary"] = True
    print(json.dumps(out))


def metric_value(r, key):
    """A record's value of the metric key; seconds_per_batch derived for Halo's and the peers'
    mini-batch records alike (epoch time over the batches trained)."""
    if r.get("failed"):
        return None
    if key == "seconds_per_batch":
        t, b = r.get("epoch_time_median_s"), r.get("batches_per_epoch")
        return t / b if t is not None and b else None
    return r.get(key)


def f1_cell(runs):
    v = [r["test_macro_f1"] for r in runs if r.get("test_macro_f1") is not None]
    if not v:
        return "-"
    if len(v) == 1:
        return f"{v[0]:.3f}"
    return f"{statistics.mean(v):.3f} ({min(v):.3f}-{max(v):.3f})"


def fmt(v, scale):
    if v is None or (isinstance(v, float) and math.isnan(v)):
        return "-"
    x = v * scale
    return f"{x:.3g}" if abs(x) < 100 else f"{x:.0f}"


def main():
    p = argparse.ArgumentParser()
    p.add_argument("records", nargs="?")
    p.add_argument("--summarize-ops")
    p.add_argument("--out")
    p.add_argument("--versions", default="")
    p.add_argument("--commit", default="")
    p.add_argument("--threads", default="2")
    p.add_argument("--load", default="")
    p.add_argument("--quick", action="store_true")
    a = p.parse_args()
    if a.summarize_ops:
        return summarize_ops(a.summarize_ops)
    recs = [json.loads(l) for l in open(a.records) if l.strip()]
    workloads = list(dict.fromkeys(r["workload"] for r in recs))
    systems = [s for s in SYSTEMS if any(r["system"] == s for r in recs)]
    rows, csv_rows, ratios_for_plot = [], [], {}
    accuracy_rows, hetero_rows = [], []
    for w in workloads:
        key, unit, lower, scale = METRICS[kind(w)]
        by = {s: {r["rep"]: r for r in recs if r["workload"] == w and r["system"] == s} for s in systems}
        value = lambda s, rep: metric_value(by[s][rep], key)
        cells, hetero_cells = [], []
        for s in systems:
            vals = [value(s, rep) for rep in sorted(by[s]) if value(s, rep) is not None]
            if vals:
                best = min(vals) if lower else max(vals)
                cells.append(f"{fmt(best, scale)} / {fmt(statistics.median(vals), scale)}")
            else:
                err = next((r.get("error", "failed") for r in by[s].values()), "not run")
                cells.append(f"failed ({err})" if by[s] else "not run")
            hetero_cells += [cells[-1], f1_cell(by[s].values())]
            for rep in sorted(by[s]):
                r = by[s][rep]
                v = metric_value(r, key)
                csv_rows.append([w, s, rep, key, "" if v is None else v, r.get("test_accuracy", ""),
                                 "failed" if r.get("failed") else "", r.get("test_macro_f1", "")])
        ratio_cells = []
        for peer in [s for s in systems if s != "halo"]:
            pairs = []
            for rep in sorted(by["halo"]):
                h, o = value("halo", rep), by[peer].get(rep) and value(peer, rep)
                if h and o:
                    pairs.append(h / o if lower else o / h)
            if pairs:
                ratios_for_plot.setdefault(peer, {})[w] = statistics.median(pairs)
                ratio_cells.append(f"{statistics.median(pairs):.2f} ({' '.join(f'{x:.2f}' for x in pairs)})")
            else:
                ratio_cells.append("-")
        if kind(w) in HETERO:
            hetero_rows.append([w, unit] + hetero_cells + ratio_cells)
        else:
            rows.append([w, unit] + cells + ratio_cells)
        if kind(w) == "gcn":
            accs = []
            for s in systems:
                v = [r.get("test_accuracy") for r in by[s].values() if r.get("test_accuracy") is not None]
                accs.append(f"{statistics.mean(v):.3f} ({len(v)} runs)" if v else "-")
            accuracy_rows.append([w] + accs)
    peers = [s for s in systems if s != "halo"]
    head = ["workload", "metric"] + [f"{NAMES[s]} best / median" for s in systems] + \
           [f"Halo / {NAMES[s]} (median of pairs; pairs)" for s in peers]
    lines = ["# Halo against PyG and DGL, side by side", ""]
    if a.quick:
        lines += ["**Quick run (`--quick`): small graphs, few epochs; it checks the scripts and "
                  "measures nothing.**", ""]
    lines += [f"`bash bench/peers/run.sh` at {a.commit}; {a.threads} threads per system; "
              f"{a.versions}; load average at the start {a.load}. A ratio below 1: Halo is faster "
              "(for sampling, the peer's rate over Halo's).", ""]
    if rows:
        lines += ["| " + " | ".join(head) + " |", "|" + " --- |" * len(head)]
        lines += ["| " + " | ".join(r) + " |" for r in rows]
    if accuracy_rows:
        lines += ["", "Test accuracy at the best validation epoch (mean over repetitions):", "",
                  "| workload | " + " | ".join(NAMES[s] for s in systems) + " |",
                  "|" + " --- |" * (len(systems) + 1)]
        lines += ["| " + " | ".join(r) + " |" for r in accuracy_rows]
    if hetero_rows:
        hhead = ["workload", "metric"] + [x for s in systems for x in (
            f"{NAMES[s]} best / median", f"{NAMES[s]} test Macro-F1")] + head[2 + len(systems):]
        lines += ["", "Heterogeneous workloads: time, and the test Macro-F1 at the epoch of best "
                  "validation accuracy (mean, and range over the repetitions):", "",
                  "| " + " | ".join(hhead) + " |", "|" + " --- |" * len(hhead)]
        lines += ["| " + " | ".join(r) + " |" for r in hetero_rows]
    lines = [l for i, l in enumerate(lines) if l or i == 0 or lines[i - 1]]  # no double blanks
    with open(f"{a.out}/peers.md.tmp", "w") as f:
        f.write("\n".join(lines) + "\n")
    with open(f"{a.out}/peers.csv.tmp", "w", newline="") as f:
        wr = csv.writer(f)
        # test_macro_f1 (the last column) only where a heterogeneous workload ran.
        extra = 8 if hetero_rows else 7
        wr.writerow(["workload", "system", "rep", "metric", "value", "test_accuracy", "status",
                     "test_macro_f1"][:extra])
        wr.writerows(r[:extra] for r in csv_rows)
    import os
    os.replace(f"{a.out}/peers.md.tmp", f"{a.out}/peers.md")
    os.replace(f"{a.out}/peers.csv.tmp", f"{a.out}/peers.csv")
    if ratios_for_plot:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
        fig, ax = plt.subplots(figsize=(8, 3.8))
        width = 0.8 / max(len(ratios_for_plot), 1)
        for i, (peer, rs) in enumerate(sorted(ratios_for_plot.items())):
            xs = [workloads.index(w) + i * width for w in rs]
            ax.bar(xs, list(rs.values()), width, label=f"Halo / {NAMES[peer]}")
        ax.axhline(1.0, color="k", lw=0.8)
        ax.set_yscale("log")
        ax.set_xticks([i + 0.4 - width / 2 for i in range(len(workloads))])
        ax.set_xticklabels(workloads, rotation=20, ha="right", fontsize=8)
        ax.set_ylabel("time ratio (below 1: Halo faster)")
        ax.legend(fontsize=8)
        fig.tight_layout()
        fig.savefig(f"{a.out}/peers.png.tmp.png", dpi=120)
        os.replace(f"{a.out}/peers.png.tmp.png", f"{a.out}/peers.png")


if __name__ == "__main__":
    sys.exit(main())
