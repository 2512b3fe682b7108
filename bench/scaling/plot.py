"""Plots bench/scaling/run.sh's CSV: median epoch time per configuration (bars, with every
repeat as a dot) and, for P = 2, the exchange time without overlap next to what overlap leaves
exposed and the in-flight time with overlap.

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

    def med(config, key):
        return statistics.median(float(r[key]) for r in rows if r["config"] == config)

    # The paired measure: what overlap leaves exposed against the whole exchange without it;
    # the in-flight time is an upper bound (completion is seen at chunk granularity).
    labels = ["exchange,\nno overlap", "exposed,\noverlap", "in flight,\noverlap"]
    values = [med("p2_no_overlap", "exchange_exposed_s"), med("p2_overlap", "exchange_exposed_s"),
              med("p2_overlap", "exchange_time_s")]
    bars = ax2.bar(labels, [v * 1e3 for v in values], color=["#c44e52", "#c44e52", "#55a868"])
    bars[2].set_alpha(0.5)
    ax2.set_ylabel("ms per epoch and rank (median)")
    hidden = 1 - values[1] / values[0] if values[0] > 0 else 0
    ax2.set_title(f"P = 2 halo exchange: {hidden:.0%} hidden (paired)")
    fig.tight_layout()
    fig.savefig(png_path, dpi=120)


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
