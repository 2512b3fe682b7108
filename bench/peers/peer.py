"""PyG's and DGL's side of the peer benchmarks (bench/peers/run.sh), on a graph that
`halo datasets export` wrote, so that every system trains on the identical graph, features,
labels and splits.

    peer.py --system pyg|dgl --workload gcn|sage|sample|spmm|rgcn|hgt|rgcn-mb --graph G.npz [options]

Prints one JSON object per line: per epoch / repetition records and a final summary
({"summary": true, ...}). Conventions, matched to Halo's:
  * fan-outs are given input layer first, as Halo's --fanouts; DGL takes that order, PyG's
    num_neighbors counts hops from the seeds, so it gets the list reversed;
  * GCN: 2 layers (or --layers), ReLU, dropout, symmetric normalisation with self-loops,
    Adam; the epoch time is the training step (forward, loss, backward, optimizer step), the
    test accuracy is taken at the epoch of best validation accuracy (ties: lower validation
    loss), evaluated without dropout after each epoch, as Halo does;
  * input features as exported: sparse ones stay sparse (torch sparse COO), as Halo reads them;
  * SAGE: mean aggregation, root weight, ReLU and dropout between layers (as the PyG and DGL
    examples), with --input-dropout also on the input features (as Halo's model does); an
    epoch is every training node once in shuffled batches, sampling and feature gathering
    included;
  * rgcn, hgt, rgcn-mb: heterogeneous node classification on a typed graph's export
    (bench/peers/hetero.py describes the models and what is timed).
"""
import argparse
import json
import statistics
import sys
import time

import numpy as np
import torch
import torch.nn.functional as F


def load(path):
    d = np.load(path)
    g = {k: d[k] for k in d.files}
    n = g["indptr"].shape[0] - 1
    g["n"] = n
    if "x" in g:
        g["features"] = torch.from_numpy(g["x"])
    else:
        xp, xi, xd = g["x_indptr"], g["x_indices"], g["x_data"]
        rows = np.repeat(np.arange(n), np.diff(xp))
        idx = torch.from_numpy(np.vstack([rows, xi]).astype(np.int64))
        g["features"] = torch.sparse_coo_tensor(idx, torch.from_numpy(xd),
                                                (n, int(g["x_shape"][1]))).coalesce()
    g["labels"] = torch.from_numpy(g["y"].astype(np.int64))
    for k in ("train_idx", "val_idx", "test_idx"):
        g[k] = torch.from_numpy(g[k].astype(np.int64))
    return g


def num_features(g):
    return g["features"].shape[1]


def emit(**record):
    print(json.dumps(record), flush=True)


# ---- graphs -------------------------------------------------------------------------------

def gcn_weights(g):
    """Entries of D^-1/2 (S + I) D^-1/2 as (rows, cols, values), rows ascending."""
    n = g["n"]
    ip, ix = g["indptr"], g["indices"].astype(np.int64)
    deg = np.diff(ip).astype(np.float64) + 1.0
    rows = np.concatenate([np.repeat(np.arange(n), np.diff(ip)), np.arange(n)])
    cols = np.concatenate([ix, np.arange(n)])
    vals = 1.0 / np.sqrt(deg[rows] * deg[cols])
    order = np.lexsort((cols, rows))
    return rows[order], cols[order], vals[order].astype(np.float32)


def torch_csr(rows, cols, vals, n):
    indptr = np.zeros(n + 1, dtype=np.int64)
    np.add.at(indptr, rows + 1, 1)
    indptr = np.cumsum(indptr)
    return torch.sparse_csr_tensor(torch.from_numpy(indptr), torch.from_numpy(cols),
                                   torch.from_numpy(vals), (n, n))


def dgl_graph(g, self_loops):
    import dgl
    n = g["n"]
    ip = torch.from_numpy(g["indptr"].astype(np.int64))
    ix = torch.from_numpy(g["indices"].astype(np.int64))
    # S is symmetric: row v's columns are v's in-neighbours and out-neighbours alike.
    graph = dgl.graph(("csr", (ip, ix, torch.tensor([], dtype=torch.int64))), num_nodes=n)
    if self_loops:
        graph = dgl.add_self_loop(graph)
    return graph


# ---- models -------------------------------------------------------------------------------

class PygGcn(torch.nn.Module):
    def __init__(self, sizes, dropout, adj):
        super().__init__()
        from torch_geometric.nn import GCNConv
        # normalize=False: adj already holds D^-1/2 (S + I) D^-1/2 (computed once, as Halo
        # does in preprocessing); a torch sparse CSR adjacency runs as one SpMM per layer.
        self.convs = torch.nn.ModuleList(
            GCNConv(a, b, normalize=False) for a, b in zip(sizes[:-1], sizes[1:]))
        self.dropout = dropout
        self.adj = adj

    def forward(self, x):
        for i, conv in enumerate(self.convs):
            if i > 0:
                x = F.dropout(x, self.dropout, self.training)
            elif x.is_sparse:
                x = x if not self.training or self.dropout == 0 else sparse_dropout(x, self.dropout)
            else:
                x = F.dropout(x, self.dropout, self.training)
            x = conv(x, self.adj)
            if i + 1 < len(self.convs):
                x = F.relu(x)
        return x


def sparse_dropout(x, p):
    keep = torch.rand(x._nnz()) >= p
    return torch.sparse_coo_tensor(x.indices()[:, keep], x.values()[keep] / (1 - p), x.shape)


class DglGcn(torch.nn.Module):
    def __init__(self, sizes, dropout, graph):
        super().__init__()
        from dgl.nn import GraphConv
        self.convs = torch.nn.ModuleList(
            GraphConv(a, b, norm="both") for a, b in zip(sizes[:-1], sizes[1:]))
        self.dropout = dropout
        self.graph = graph

    def forward(self, x):
        for i, conv in enumerate(self.convs):
            if i > 0 or not x.is_sparse:
                x = F.dropout(x, self.dropout, self.training)
            elif self.training and self.dropout > 0:
                x = sparse_dropout(x, self.dropout)
            x = conv(self.graph, x)
            if i + 1 < len(self.convs):
                x = F.relu(x)
        return x


def run_gcn(args, g):
    sizes = [num_features(g)] + [args.hidden] * (args.layers - 1) + [int(g["num_classes"])]
    if args.system == "pyg":
        model = PygGcn(sizes, args.dropout, torch_csr(*gcn_weights(g), g["n"]))
    else:
        model = DglGcn(sizes, args.dropout, dgl_graph(g, self_loops=True))
    opt = torch.optim.Adam(model.parameters(), lr=args.lr, weight_decay=args.weight_decay)
    x, y = g["features"], g["labels"]
    tr, va, te = g["train_idx"], g["val_idx"], g["test_idx"]
    times, best = [], None
    for epoch in range(1, args.epochs + 1):
        t0 = time.perf_counter()
        model.train()
        opt.zero_grad()
        loss = F.cross_entropy(model(x)[tr], y[tr])
        loss.backward()
        opt.step()
        times.append(time.perf_counter() - t0)
        model.eval()
        with torch.no_grad():
            out = model(x)
            pred = out.argmax(1)
            acc = lambda idx: float((pred[idx] == y[idx]).float().mean()) if len(idx) else float("nan")
            val_loss = float(F.cross_entropy(out[va], y[va])) if len(va) else float("nan")
            rec = (acc(va), -val_loss, epoch, acc(te))
            if best is None or (len(va) and rec[:2] > best[:2]):
                best = rec
        emit(epoch=epoch, train_loss=float(loss), epoch_time_s=times[-1])
    emit(summary=True, system=args.system, workload="gcn", epoch_time_median_s=statistics.median(times),
         epoch_time_min_s=min(times), best_epoch=best[2], test_accuracy=best[3],
         final_train_loss=float(loss))


# ---- sampling -------------------------------------------------------------------------------

class Sampler:
    """One system's neighbour sampler over S: batches() yields (blocks or subgraph, seeds)."""

    def __init__(self, system, g, fanouts, batch, seeds, shuffle):
        self.system, self.fanouts = system, fanouts
        if system == "dgl":
            import dgl
            self.graph = dgl_graph(g, self_loops=False)
            sampler = dgl.dataloading.NeighborSampler(fanouts)
            self.loader = dgl.dataloading.DataLoader(self.graph, seeds, sampler, batch_size=batch,
                                                     shuffle=shuffle, drop_last=False)
        else:
            from torch_geometric.data import Data
            from torch_geometric.loader import NeighborLoader
            n = g["n"]
            rows = np.repeat(np.arange(n), np.diff(g["indptr"]))
            edge_index = torch.from_numpy(np.vstack([g["indices"].astype(np.int64), rows]))
            data = Data(edge_index=edge_index, num_nodes=n)
            self.loader = NeighborLoader(data, num_neighbors=list(reversed(fanouts)),
                                         input_nodes=seeds, batch_size=batch, shuffle=shuffle)

    def sampled_edges(self, item):
        if self.system == "dgl":
            return sum(int(b.num_edges()) for b in item[2])
        return int(item.edge_index.shape[1])


def run_sample(args, g):
    fanouts = [int(f) for f in args.fanouts.split(",")]
    seeds = torch.arange(g["n"])
    s = Sampler(args.system, g, fanouts, args.batch, seeds, shuffle=True)
    rates = []
    for rep in range(args.reps):
        t0 = time.perf_counter()
        edges = sum(s.sampled_edges(item) for item in s.loader)
        t = time.perf_counter() - t0
        rates.append(edges / t)
        emit(rep=rep, seconds=t, sampled_edges=edges, sampled_edges_per_s=edges / t)
    emit(summary=True, system=args.system, workload="sample", fanouts=args.fanouts,
         sampled_edges_per_s_median=statistics.median(rates), sampled_edges_per_s_max=max(rates))


class PygSage(torch.nn.Module):
    def __init__(self, sizes, dropout, input_dropout):
        super().__init__()
        self.input_dropout = input_dropout
        from torch_geometric.nn import SAGEConv
        self.convs = torch.nn.ModuleList(SAGEConv(a, b, aggr="mean") for a, b in zip(sizes[:-1], sizes[1:]))
        self.dropout = dropout

    def forward(self, x, edge_index, num_seeds):
        for i, conv in enumerate(self.convs):
            x = conv(F.dropout(x, self.dropout, self.training) if i or self.input_dropout else x,
                     edge_index)
            if i + 1 < len(self.convs):
                x = F.relu(x)
        return x[:num_seeds]


class DglSage(torch.nn.Module):
    def __init__(self, sizes, dropout, input_dropout):
        super().__init__()
        self.input_dropout = input_dropout
        from dgl.nn import SAGEConv
        self.convs = torch.nn.ModuleList(SAGEConv(a, b, "mean") for a, b in zip(sizes[:-1], sizes[1:]))
        self.dropout = dropout

    def forward(self, blocks, x):
        for i, (conv, block) in enumerate(zip(self.convs, blocks)):
            x = conv(block, F.dropout(x, self.dropout, self.training) if i or self.input_dropout else x)
            if i + 1 < len(self.convs):
                x = F.relu(x)
        return x


def run_sage(args, g):
    fanouts = [int(f) for f in args.fanouts.split(",")]
    sizes = [num_features(g)] + [args.hidden] * (len(fanouts) - 1) + [int(g["num_classes"])]
    x, y = g["features"], g["labels"]
    if x.is_sparse:
        x = x.to_dense()  # the peers' SAGE layers gather dense input rows
    s = Sampler(args.system, g, fanouts, args.batch, g["train_idx"], shuffle=True)
    model = (DglSage if args.system == "dgl" else PygSage)(sizes, args.dropout, args.input_dropout)
    opt = torch.optim.Adam(model.parameters(), lr=args.lr, weight_decay=args.weight_decay)
    times = []
    for epoch in range(1, args.epochs + 1):
        model.train()
        t0 = time.perf_counter()
        total, count = 0.0, 0
        for item in s.loader:
            if args.system == "dgl":
                inputs, seeds, blocks = item
                out = model(blocks, x[inputs])
                target = y[seeds]
            else:
                out = model(x[item.n_id], item.edge_index, item.batch_size)
                target = y[item.n_id[:item.batch_size]]
            loss = F.cross_entropy(out, target)
            opt.zero_grad()
            loss.backward()
            opt.step()
            total += float(loss) * len(target)
            count += len(target)
        times.append(time.perf_counter() - t0)
        emit(epoch=epoch, train_loss=total / max(count, 1), epoch_time_s=times[-1])
    emit(summary=True, system=args.system, workload="sage", fanouts=args.fanouts,
         epoch_time_median_s=statistics.median(times), epoch_time_min_s=min(times),
         final_train_loss=total / max(count, 1))


# ---- SpMM ---------------------------------------------------------------------------------

def run_spmm(args, g):
    n = g["n"]
    torch.manual_seed(7)
    x = torch.rand(n, args.cols) - 0.5
    rows, cols, vals = gcn_weights(g)
    if args.system == "pyg":
        a = torch_csr(rows, cols, vals, n)  # what PyG's layers run on a torch sparse adjacency
        op = lambda: torch.sparse.mm(a, x)
    else:
        import dgl.function as fn
        graph = dgl_graph(g, self_loops=True)
        # Edge weights in DGL's edge order: edge (u -> v) carries w(v, u); S + I is symmetric
        # and so are the weights, so w is looked up by (src, dst).
        src, dst = graph.edges()
        deg = torch.from_numpy(np.diff(g["indptr"]).astype(np.float32) + 1.0)
        graph.edata["w"] = (deg[src] * deg[dst]).rsqrt()
        graph.ndata["h"] = x

        def op():
            graph.update_all(fn.u_mul_e("h", "w", "m"), fn.sum("m", "out"))
            return graph.ndata["out"]
    op()  # warm-up
    times = []
    for rep in range(args.reps):
        t0 = time.perf_counter()
        op()
        times.append(time.perf_counter() - t0)
        emit(rep=rep, seconds=times[-1])
    emit(summary=True, system=args.system, workload="spmm", cols=args.cols,
         seconds_median=statistics.median(times), seconds_min=min(times))


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--system", choices=["pyg", "dgl"], required=True)
    p.add_argument("--workload", choices=["gcn", "sage", "sample", "spmm", "rgcn", "hgt", "rgcn-mb"],
                   required=True)
    p.add_argument("--graph", required=True)
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--epochs", type=int, help="default 200; rgcn, hgt: 80; rgcn-mb: 1")
    p.add_argument("--layers", type=int, default=2)
    p.add_argument("--hidden", type=int, help="default 16; rgcn, hgt, rgcn-mb: 64")
    p.add_argument("--dropout", type=float, help="default 0.5; rgcn, rgcn-mb: 0.8")
    p.add_argument("--input-dropout", action="store_true",
                   help="sage: drop out the input features too, as Halo's model does")
    p.add_argument("--lr", type=float, default=0.01)
    p.add_argument("--weight-decay", type=float, default=5e-4)
    p.add_argument("--fanouts", default="10,5")
    p.add_argument("--batch", type=int, default=1024)
    p.add_argument("--reps", type=int, default=3)
    p.add_argument("--cols", type=int, default=256)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--heads", type=int, default=4, help="hgt: attention heads")
    p.add_argument("--featureless", choices=["auto", "zero", "embedding"], default="auto",
                   help="rgcn, hgt, rgcn-mb: the input of a featureless node type (auto: an "
                        "embedding when the type has fewer nodes than the target type, else zeros)")
    p.add_argument("--max-batches", type=int, default=0,
                   help="rgcn-mb: train (and time) only the first N batches of an epoch (0: all)")
    p.add_argument("--full-eval", action="store_true",
                   help="rgcn-mb: evaluate on the full graph after each epoch (not timed)")
    p.add_argument("--pyg-adj", choices=["edge_index", "csr", "sparsetensor"], default="csr",
                   help="rgcn on PyG: the relations as edge_index, or as torch sparse CSR adj_t")
    args = p.parse_args()
    torch.set_num_threads(args.threads)
    torch.manual_seed(args.seed)
    if args.workload in ("rgcn", "hgt", "rgcn-mb"):
        import hetero  # bench/peers/hetero.py, beside this script
        return hetero.run(args)
    for k, v in {"epochs": 200, "hidden": 16, "dropout": 0.5}.items():
        if getattr(args, k) is None:
            setattr(args, k, v)
    g = load(args.graph)
    {"gcn": run_gcn, "sage": run_sage, "sample": run_sample, "spmm": run_spmm}[args.workload](args, g)


if __name__ == "__main__":
    sys.exit(main())
