"""Plots bench/scaling/run.sh's CSV: median epoch time per configuration (bars, with every
repeat as a dot) and, for the distributed runs, the exchange time split into hidden and exposed.

    python3 bench/scaling/plot.py scaling.csv scaling.png
"""
import csv
import statistics
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402


def main(csv_path, png_path):
    rows = list(csv.DictReader(open(csv_path)))
    names = list(dict.fromkeys(r["config"] for r in rows))
    epoch = {n: [float(r["epoch_time_median_s"]) for r in rows if r["config"] == n] for n in names}
    fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(11, 4))
    medians = [statistics.median(epoch[n]) for n in names]
    ax1.bar(names, medians, color="#4c72b0")
    for i, n in enumerate(names):
        ax1.plot([i] * len(epoch[n]), epoch[n], "k.", markersize=4)
    ax1.set_ylabel("epoch time (s), median of epochs")
    ax1.set_title("GCN, ogbn-arxiv shape, hidden 256")
    ax1.tick_params(axis="x", rotation=30)

    dist = [n for n in names if n.startswith("p2")]
    exposed = [statistics.median(float(r["exchange_exposed_s"]) for r in rows if r["config"] == n)
               for n in dist]
    total = [statistics.median(float(r["exchange_time_s"]) for r in rows if r["config"] == n)
             for n in dist]
    hidden = [max(t - e, 0.0) for t, e in zip(total, exposed)]
    ax2.bar(dist, exposed, label="exposed", color="#c44e52")
    ax2.bar(dist, hidden, bottom=exposed, label="hidden behind aggregation", color="#55a868")
    ax2.set_ylabel("halo exchange per epoch and rank (s)")
    ax2.set_title("P = 2: exchange time")
    ax2.legend()
    fig.tight_layout()
    fig.savefig(png_path, dpi=120)


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
