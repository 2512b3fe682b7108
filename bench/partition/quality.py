#!/usr/bin/env python3
"""Partition quality side by side: METIS k-way, Halo's lp-multilevel, and KaMinPar (PyPI
`kaminpar`, a peer for comparison, not a dependency of Halo).

    python3 -m venv /tmp/kvenv && /tmp/kvenv/bin/pip install kaminpar numpy matplotlib
    /tmp/kvenv/bin/python bench/partition/quality.py --halo build/cpu-release/tools/halo/halo \
        --data build/cpu-release/data --out bench/results [--graphs cora,arxiv,rmat20,rmat22]

Every method partitions the same training graph S (A ∪ Aᵀ without self-loops, as `halo datasets
export` writes it) into P = 2 .. 64 parts balancing node counts only (KaMinPar's constraint),
imbalance 0.03, one thread each. Halo's numbers come from the partition's meta.json (edge cut,
communication volume), its time and peak RSS from GNU time around `halo partition` (the whole
command: loading and writing included; the partitioner's own time is `timings.assign_s`).
KaMinPar's cut is its own `edge_cut`, its volume recomputed here with Halo's definition (per part,
the distinct remote neighbours), its time that of `compute_partition`. Writes partition_quality.csv
and partition_quality.png under --out; prints a Markdown table.
"""
import argparse
import csv
import json
import os
import resource
import subprocess
import sys
import tempfile
import time

import numpy as np

GRAPHS = {
    "cora": ["--dataset", "{data}/planetoid/cora"],
    "arxiv": ["--dataset", "synthetic", "--synthetic-nodes", "169343", "--synthetic-classes", "40",
              "--synthetic-features", "128", "--synthetic-degree", "13.7"],
    "rmat20": ["--dataset", "rmat", "--rmat-scale", "20", "--rmat-degree", "8", "--rmat-seed", "1"],
    "rmat22": ["--dataset", "rmat", "--rmat-scale", "22", "--rmat-degree", "8", "--rmat-seed", "1"],
}
PARTS = [2, 4, 8, 16, 32, 64]


def comm_volume(indptr, indices, part):
    rows = np.repeat(np.arange(len(indptr) - 1, dtype=np.int64), np.diff(indptr))
    cut = part[rows] != part[indices]
    keys = part[rows[cut]].astype(np.int64) * (len(indptr) - 1) + indices[cut]
    return int(np.unique(keys).size)


def write_metis(path, indptr, indices):
    n, m = len(indptr) - 1, len(indices) // 2
    with open(path, "w") as f:
        f.write(f"{n} {m}\n")
        for v in range(n):
            f.write(" ".join(str(int(u) + 1) for u in indices[indptr[v]:indptr[v + 1]]))
            f.write("\n")


def run_halo(halo, args, parts, method, out):
    cmd = ["/usr/bin/time", "-f", "%e %M", halo, "partition", *args, "--parts", str(parts),
           "--method", method, "--balance", "nodes", "--threads", "1", "--out", out]
    r = subprocess.run(cmd, capture_output=True, text=True, env={**os.environ, "OMP_NUM_THREADS": "1"})
    if r.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd)}: {r.stderr}")
    wall, rss_kib = r.stderr.strip().splitlines()[-1].split()
    meta = json.load(open(os.path.join(out, "meta.json")))
    m = meta["metrics"]
    return {"cut": m["edge_cut"], "volume": m["comm_volume"], "wall_s": float(wall),
            "assign_s": meta.get("timings", {}).get("assign_s", float("nan")),
            "rss_mib": int(rss_kib) / 1024}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--halo", required=True)
    ap.add_argument("--data", required=True)
    ap.add_argument("--out", required=True)
    ap.add_argument("--graphs", default="cora,arxiv,rmat20,rmat22")
    ap.add_argument("--parts", default=",".join(map(str, PARTS)))
    a = ap.parse_args()
    import kaminpar  # the peer

    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for g in a.graphs.split(","):
            args = [x.format(data=a.data) for x in GRAPHS[g]]
            npz = os.path.join(tmp, g + ".npz")
            subprocess.run([a.halo, "datasets", "export", *args, "--raw-features", "--out", npz],
                           check=True, capture_output=True)
            z = np.load(npz)
            indptr, indices = z["indptr"], z["indices"]
            metis_file = os.path.join(tmp, g + ".graph")
            write_metis(metis_file, indptr, indices)
            kg = kaminpar.load_graph(metis_file, kaminpar.GraphFileFormat.METIS)
            for p in map(int, a.parts.split(",")):
                for method in ["metis", "lp-multilevel"]:
                    out = os.path.join(tmp, f"{g}-{p}-{method}")
                    r = run_halo(a.halo, args, p, method, out)
                    subprocess.run(["rm", "-rf", out])
                    rows.append({"graph": g, "parts": p, "method": method, **r})
                    print(rows[-1], file=sys.stderr)
                ctx = kaminpar.default_context()
                solver = kaminpar.KaMinPar(1, ctx)
                rss0 = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
                t = time.perf_counter()
                part = np.asarray(solver.compute_partition(kg, p, 0.03), dtype=np.int64)
                secs = time.perf_counter() - t
                rows.append({"graph": g, "parts": p, "method": "kaminpar",
                             "cut": int(kaminpar.edge_cut(kg, part.tolist())),
                             "volume": comm_volume(indptr, indices, part), "wall_s": secs,
                             "assign_s": secs,
                             "rss_mib": max(rss0, resource.getrusage(resource.RUSAGE_SELF).ru_maxrss) / 1024})
                print(rows[-1], file=sys.stderr)

    os.makedirs(a.out, exist_ok=True)
    with open(os.path.join(a.out, "partition_quality.csv"), "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=list(rows[0].keys()))
        w.writeheader()
        w.writerows(rows)

    by = {(r["graph"], r["parts"], r["method"]): r for r in rows}
    print("| graph | P | METIS cut | METIS volume | LP cut | LP volume | KaMinPar cut | LP volume / METIS | LP cut / KaMinPar | METIS s (RSS MiB) | LP s (RSS MiB) | KaMinPar s |")
    print("| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |")
    for g in a.graphs.split(","):
        for p in map(int, a.parts.split(",")):
            me, lp, ka = by[(g, p, "metis")], by[(g, p, "lp-multilevel")], by[(g, p, "kaminpar")]
            print(f"| {g} | {p} | {me['cut']} | {me['volume']} | {lp['cut']} | {lp['volume']} | "
                  f"{ka['cut']} | {lp['volume'] / max(me['volume'], 1):.3f} | "
                  f"{lp['cut'] / max(ka['cut'], 1):.3f} | {me['assign_s']:.2f} ({me['rss_mib']:.0f}) | "
                  f"{lp['assign_s']:.2f} ({lp['rss_mib']:.0f}) | {ka['assign_s']:.2f} |")
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
        graphs = a.graphs.split(",")
        fig, axes = plt.subplots(1, len(graphs), figsize=(4 * len(graphs), 3.2))
        for ax, g in zip(np.atleast_1d(axes), graphs):
            for method in ["metis", "lp-multilevel", "kaminpar"]:
                ps = [p for p in map(int, a.parts.split(",")) if (g, p, method) in by]
                ax.plot(ps, [by[(g, p, method)]["cut"] for p in ps], marker="o", label=method)
            ax.set_xscale("log", base=2)
            ax.set_title(g)
            ax.set_xlabel("parts")
            ax.set_ylabel("edge cut")
        np.atleast_1d(axes)[0].legend()
        fig.tight_layout()
        fig.savefig(os.path.join(a.out, "partition_quality.png"), dpi=100)
    except ImportError:
        print("(matplotlib not installed: no plot)", file=sys.stderr)


if __name__ == "__main__":
    main()
