"""Plots and markdown tables of bench/cluster/run.sh's CSVs: plot.py DIR.

Writes DIR/cluster.png (epoch time and exposed exchange per profile and P, overlap on / off;
mini-batch fetch time with and without cache; METIS vs random) and DIR/cluster.md (medians over
the repetitions, and per profile the share of the exchange that overlap hides).
"""
import csv
import statistics
import sys
from collections import defaultdict

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt


def rows(path):
    with open(path) as f:
        return list(csv.DictReader(f))


def med(rs, key):
    vals = [float(r[key]) for r in rs if r[key] not in ("", "nan")]
    return statistics.median(vals) if vals else float("nan")


def main(d):
    links = {r["profile"]: r for r in rows(f"{d}/links.csv")}
    full = rows(f"{d}/full-graph.csv")
    mb = rows(f"{d}/minibatch.csv")
    part = rows(f"{d}/partition.csv")
    profiles = list(dict.fromkeys(r["profile"] for r in full))
    g = defaultdict(list)
    for r in full:
        g[(r["profile"], int(r["ranks"]), r["overlap"])].append(r)
    md = ["## Full graph (GCN, arxiv shape): medians over repetitions", "",
          "| link | measured Gb/s | RTT us | P | overlap | epoch ms | exchange ms | exposed ms | hidden | "
          "window ms | window / exchange | overlap gain |",
          "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |"]
    for pr in profiles:
        l = links.get(pr, {})
        gbps = float(l.get("bytes_per_s", "nan")) * 8 / 1e9
        rtt = float(l.get("rtt_s", "nan")) * 1e6
        for p in (1, 2, 4):
            for ov in ("on", "off"):
                rs = g.get((pr, p, ov))
                if not rs:
                    continue
                gain = ""
                if ov == "on" and g.get((pr, p, "off")):
                    off = med(g[(pr, p, "off")], "epoch_time_s")
                    gain = f"{off / med(rs, 'epoch_time_s'):.2f}x"
                # The owned rows' products while messages were in flight: the most overlap can
                # hide (older CSVs have no such column).
                exch = med(rs, "exchange_time_s")
                wms = bound = ""
                if ov == "on" and p > 1 and "exchange_window_s" in rs[0]:
                    win = med(rs, "exchange_window_s")
                    wms = f"{win * 1e3:.0f}"
                    bound = f"{min(1.0, win / exch):.2f}" if exch > 0 else ""
                md.append(f"| {pr} | {gbps:.2f} | {rtt:.0f} | {p} | {ov} | {med(rs, 'epoch_time_s') * 1e3:.0f} | "
                          f"{exch * 1e3:.0f} | {med(rs, 'exchange_exposed_s') * 1e3:.0f} | "
                          f"{med(rs, 'hidden_fraction'):.2f} | {wms} | {bound} | {gain} |")
    m = defaultdict(list)
    for r in mb:
        m[(r["profile"], int(r["ranks"]), r["cache_mb"])].append(r)
    md += ["", "## Mini-batch (GraphSAGE 10,5, batch 1024): medians", "",
           "| link | P | cache MiB | epoch s | feature MB | fetch s | batch wait s | cache hit rate |",
           "| --- | --- | --- | --- | --- | --- | --- | --- |"]
    for (pr, p, c), rs in m.items():
        md.append(f"| {pr} | {p} | {c} | {med(rs, 'epoch_time_s'):.2f} | {med(rs, 'feature_bytes') / 1e6:.1f} | "
                  f"{med(rs, 'fetch_time_s'):.2f} | {med(rs, 'batch_wait_s'):.2f} | {med(rs, 'cache_hit_rate'):.2f} |")
    q = defaultdict(list)
    for r in part:
        q[(r["profile"], r["method"])].append(r)
    md += ["", "## Partition quality at P = 4 (GCN full graph): medians", "",
           "| link | method | comm volume (rows) | epoch ms | exposed exchange ms |", "| --- | --- | --- | --- | --- |"]
    for (pr, meth), rs in q.items():
        md.append(f"| {pr} | {meth} | {rs[0]['comm_volume']} | {med(rs, 'epoch_time_s') * 1e3:.0f} | "
                  f"{med(rs, 'exchange_exposed_s') * 1e3:.0f} |")
    with open(f"{d}/cluster.md", "w") as f:
        f.write("\n".join(md) + "\n")

    fig, axes = plt.subplots(1, 3, figsize=(13, 3.8))
    ax = axes[0]
    for ov, style in (("on", "-"), ("off", "--")):
        for pr in profiles:
            ps = [p for p in (1, 2, 4) if g.get((pr, p, ov)) or (p == 1 and g.get((pr, 1, "on")))]
            ys = [med(g.get((pr, p, ov)) or g[(pr, 1, "on")], "epoch_time_s") for p in ps]
            ax.plot(ps, ys, style, marker="o", label=f"{pr}, overlap {ov}")
    ax.set_xlabel("ranks (hosts)")
    ax.set_ylabel("epoch s")
    ax.set_title("GCN full graph")
    ax.legend(fontsize=6)
    ax = axes[1]
    labels = [f"{pr}\nP={p} c={c}" for (pr, p, c) in m]
    ax.bar(range(len(m)), [med(rs, "fetch_time_s") for rs in m.values()])
    ax.set_xticks(range(len(m)))
    ax.set_xticklabels(labels, fontsize=6)
    ax.set_ylabel("fetch s per epoch")
    ax.set_title("mini-batch feature fetch")
    ax = axes[2]
    labels = [f"{pr}\n{meth}" for (pr, meth) in q]
    ax.bar(range(len(q)), [med(rs, "epoch_time_s") for rs in q.values()])
    ax.set_xticks(range(len(q)))
    ax.set_xticklabels(labels, fontsize=6)
    ax.set_ylabel("epoch s")
    ax.set_title("METIS vs random, P = 4")
    fig.tight_layout()
    fig.savefig(f"{d}/cluster.png", dpi=110)


if __name__ == "__main__":
    main(sys.argv[1])
