"""Plot of bench/cluster/model.sh's extrapolation: plot_model.py DIR.

Reads DIR/extrapolation.csv (halo plan's predicted GCN full-graph epoch on METIS partitions of
R-MAT graphs, P = 4 .. 1024, per link profile) and writes DIR/extrapolation.png: the predicted
epoch time and its terms (compute, exposed exchange, all-reduce) against P, one panel per scale.
"""
import csv
import sys
from collections import defaultdict

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt


def main(d):
    rows = list(csv.DictReader(open(f"{d}/extrapolation.csv")))
    scales = sorted({int(r["scale"]) for r in rows})
    fig, axes = plt.subplots(1, len(scales), figsize=(6 * len(scales), 4.5), squeeze=False)
    for ax, s in zip(axes[0], scales):
        by = defaultdict(list)
        for r in rows:
            if int(r["scale"]) == s:
                by[r["profile"]].append(r)
        for prof, rs in sorted(by.items()):
            rs.sort(key=lambda r: int(r["parts"]))
            p = [int(r["parts"]) for r in rs]
            line, = ax.plot(p, [float(r["epoch_s"]) for r in rs], "o-", label=f"epoch, {prof}")
            ax.plot(p, [float(r["exposed_exchange_s"]) for r in rs], "x--", color=line.get_color(),
                    label=f"exposed exchange, {prof}")
        rs = sorted(next(iter(by.values())), key=lambda r: int(r["parts"]))
        ax.plot([int(r["parts"]) for r in rs], [float(r["compute_s"]) for r in rs], "k:",
                label="compute (slowest rank)")
        ax.set_xscale("log", base=2)
        ax.set_yscale("log")
        ax.set_xlabel("P (ranks, one core each)")
        ax.set_ylabel("predicted seconds per epoch")
        ax.set_title(f"R-MAT scale {s}: GCN full graph, hidden 256 (halo plan)")
        ax.grid(True, which="both", alpha=0.3)
        ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(f"{d}/extrapolation.png", dpi=110)


if __name__ == "__main__":
    main(sys.argv[1])
