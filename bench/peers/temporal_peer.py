"""The PyTorch side of the EvolveGCN-O link-prediction benchmark (docs/dynamic.md), on the data
`halo datasets export --snapshots N` wrote (docs/formats.md, "Exported temporal datasets"), so
the peer trains on Halo's own snapshots, GCN matrices, degree features, targets and split.

    temporal_peer.py --system torch|pyg-temporal --graph G.npz [--epochs E] [--seed S] [--threads T]

Prints one JSON object per epoch and a final summary ({"summary": true, ...}).

Systems:
  * torch: EvolveGCN-O written here in plain PyTorch, the model Halo trains (nn/evolvegcn.hpp):
    two GCN layers, F -> hidden -> hidden, each weight evolved over the window by the matrix GRU
    of EvolveGCN's code (egcn_o.py's mat_GRU_cell: gates W Q + U Q + B with W, U square over the
    rows of Q and a bias matrix B; input and state both Q; Q_0 a trained parameter), ReLU after
    each layer, the output the last window step's second layer. The GCN matrix is the exported
    D^-1/2 (A + I) D^-1/2 (a torch sparse CSR); the one-hot input times Q_1 is a row gather
    (F.embedding, as the scorer's gathers of node rows). Loaded with the parameters of a model
    `halo train --save-model` wrote, it gives `halo embed`'s embeddings (within 2e-6 on
    CollegeMsg, 88 snapshots, step 40).
  * pyg-temporal (or pyg): PyTorch Geometric Temporal's EvolveGCNO (0.54.0), two of them with
    ReLU after each, on the exported symmetric snapshot (edge_src, edge_dst, no self-loops; its
    GCNConv_Fixed_W adds the self-loops and normalises with PyG's gcn_norm, which this script
    checks equals the exported matrix). It is NOT the model Halo trains, and not EvolveGCN-O as
    published:
      - its weight does not evolve over time: forward() starts every call from
        `self.initial_weight.data` (detached, so Q_0 is never trained either) and never stores
        the GRU's output, so each call is one GRU step from the untrained Q_0 (upstream issue
        benedekrozemberczki/pytorch_geometric_temporal#220). Only the last window step's call
        reaches the output, so only that one is made (the earlier ones would be discarded work);
      - the GRU is torch.nn.GRU over Q's rows (right-multiplication by F x F matrices, bias
        vectors, torch's gate equations) instead of the matrix GRU (left-multiplication, bias
        matrices);
      - its weight is square, F x F, so both layers are F wide (167 on CollegeMsg) instead of
        F -> hidden -> hidden (167 -> 100 -> 100), and the scorer reads F-wide embeddings;
      - the one-hot input is a dense N x F matrix multiplied by W (what GCNConv_Fixed_W does).
    It needs torch_sparse (imported by the module). `import torch_geometric_temporal` fails with
    torch_geometric 2.8 (load_evolvegcno), so the layer's file is loaded on its own.

The protocol, both systems, matched to Halo's (runtime/tasks/link/link_prediction.cpp):
  * step t is predicted from the window's snapshots t-W .. t-1; training steps
    [train_begin, train_end) in order, one Adam step each (lr, weight decay as Halo's Adam:
    L2 added to the gradient, PyTorch's Adam); a step without targets is skipped;
  * a training step's pairs: its targets (label 1) and 50 negatives per target drawn as
    runtime::sample_negatives draws them: the source of a uniformly drawn target, the
    destination uniform over the concatenated active nodes of the window's snapshots (once per
    snapshot active), redrawn up to 8 times while a self pair or a target, left out after 8
    rejections (this script's own RNG, numpy's PCG64 from --seed, not Halo's counter RNG);
  * the scorer (nn::PairScorer): s(u, v) = w2 . relu(e_u A + e_v B + b1) + b2, EvolveGCN's MLP on
    [e_u, e_v] with its first weight split in two; hidden 100; computed as Halo does, P = E A +
    b1 and Q = E B per node, then per pair (the same products as the MLP on the concatenation);
  * loss: cross-entropy weighted 0.9 (targets) / 0.1 (negatives), normalised by the summed
    weights; Glorot-uniform initialisation, zero biases, as Halo's (other random numbers);
  * epoch time: the training pass over the training steps (sampling, forward, loss, backward,
    Adam), median over the epochs, as Halo's epoch_time_s;
  * after every epoch the validation steps are scored over every ordered pair u != v of the
    step: MRR (per source with a target: mean of 1 / rank among the N - 1 candidates, ties the
    mean of the ranks they span; averaged over those sources, then over the steps), MAP
    (scikit-learn's average precision over all the step's pairs, tied scores one threshold,
    averaged over the steps) and AUC; the epoch of highest validation MAP is kept (first on
    ties) and the test steps are scored once with its parameters.
"""
import argparse
import copy
import json
import statistics
import sys
import time
import warnings

import numpy as np
import torch
import torch.nn.functional as F

NEGATIVE_DRAWS = 8  # runtime::kNegativeDraws
warnings.filterwarnings("ignore", message="Sparse CSR tensor support is in beta state")


def emit(**record):
    print(json.dumps(record), flush=True)


# ---- data ---------------------------------------------------------------------------------------

class Temporal:
    """The arrays of a temporal export, per step."""

    def __init__(self, path):
        d = np.load(path)
        self.meta = json.loads(bytes(d["meta_json"]).decode())
        if self.meta.get("format") != "halo-temporal-link":
            sys.exit(f"{path}: not a temporal export (halo datasets export --snapshots N)")
        self.n = int(d["num_nodes"])
        self.steps = int(d["num_steps"])
        self.num_features = int(d["num_features"])
        self.window = int(d["window"])
        self.train_begin, self.train_end = int(d["train_begin"]), int(d["train_end"])
        self.val_end, self.test_end = int(d["val_end"]), int(d["test_end"])
        self.feature = torch.from_numpy(d["feature"].astype(np.int64))  # [T, N]
        cut = lambda off, *keys: [tuple(d[k][off[t]:off[t + 1]] for k in keys)
                                  for t in range(self.steps)]
        self.gcn = cut(d["gcn_offsets"], "gcn_row", "gcn_col", "gcn_weight")
        self.edges = cut(d["edge_offsets"], "edge_src", "edge_dst")
        self.active = [a for (a,) in cut(d["active_offsets"], "active")]
        self.targets = cut(d["target_offsets"], "target_src", "target_dst")
        # Each step's targets as sorted keys u * N + v (the negatives' membership test).
        self.target_keys = [np.sort(s.astype(np.int64) * self.n + v) for s, v in self.targets]

    def gcn_csr(self, t):
        r, c, w = self.gcn[t]
        crow = np.zeros(self.n + 1, np.int64)
        np.add.at(crow, r.astype(np.int64) + 1, 1)
        return torch.sparse_csr_tensor(torch.from_numpy(np.cumsum(crow)),
                                       torch.from_numpy(c.astype(np.int64)),
                                       torch.from_numpy(w.copy()), (self.n, self.n))

    def edge_index(self, t):
        s, v = self.edges[t]
        return torch.from_numpy(np.vstack([s, v]).astype(np.int64))


def check_gcn_norm(data):
    """PyG's gcn_norm of the exported symmetric snapshot (self-loops added) equals the exported
    matrix, at every step: the normalisation the pyg-temporal layers compute is Halo's."""
    from torch_geometric.nn.conv.gcn_conv import gcn_norm
    worst = 0.0
    for t in range(data.steps):
        ei, w = gcn_norm(data.edge_index(t), None, data.n, add_self_loops=True)
        mine = torch.sparse_coo_tensor(ei[[1, 0]], w, (data.n, data.n)).coalesce().to_dense()
        r, c, v = data.gcn[t]
        ref = torch.zeros(data.n, data.n)
        ref[torch.from_numpy(r.astype(np.int64)), torch.from_numpy(c.astype(np.int64))] = \
            torch.from_numpy(v)
        worst = max(worst, float((mine - ref).abs().max()))
    if worst > 1e-6:
        sys.exit(f"PyG's gcn_norm differs from the exported GCN matrix by {worst}")
    return worst


# ---- models -------------------------------------------------------------------------------------

def glorot(rows, cols):
    p = torch.empty(rows, cols)
    torch.nn.init.xavier_uniform_(p)  # U(-a, a), a = sqrt(6 / (rows + cols)): Halo's glorot
    return torch.nn.Parameter(p)


class MatrixGruLayer(torch.nn.Module):
    """One EvolveGCN-O layer's weight: Q_0 (rows x cols) and the matrix GRU that evolves it."""

    def __init__(self, rows, cols):
        super().__init__()
        self.q0 = glorot(rows, cols)
        for g in ("z", "r", "h"):
            setattr(self, "w_" + g, glorot(rows, rows))
            setattr(self, "u_" + g, glorot(rows, rows))
            setattr(self, "b_" + g, torch.nn.Parameter(torch.zeros(rows, cols)))

    def evolve(self, steps):
        q = self.q0
        for _ in range(steps):
            z = torch.sigmoid(self.w_z @ q + self.u_z @ q + self.b_z)
            r = torch.sigmoid(self.w_r @ q + self.u_r @ q + self.b_r)
            h = torch.tanh(self.w_h @ q + self.u_h @ (r * q) + self.b_h)
            q = (1 - z) * q + z * h
        return q


class EvolveGcnO(torch.nn.Module):
    """Halo's EvolveGCN-O: H1 = relu(A X Q1), H2 = relu((A H1) Q2) at the window's last step."""

    def __init__(self, data, hidden):
        super().__init__()
        self.layer1 = MatrixGruLayer(data.num_features, hidden)
        self.layer2 = MatrixGruLayer(hidden, hidden)
        self.data = data
        self.adj = [data.gcn_csr(t) for t in range(data.steps)]  # before any timing

    def out_features(self):
        return self.layer2.q0.shape[1]

    def forward(self, t):
        """The embeddings that predict step t (window t-W .. t-1)."""
        w = self.data.window
        q1, q2 = self.layer1.evolve(w), self.layer2.evolve(w)
        last = t - 1
        a = self.adj[last]
        h1 = torch.relu(a @ F.embedding(self.data.feature[last], q1))  # one-hot X Q1: a gather
        return torch.relu((a @ h1) @ q2)


def load_evolvegcno():
    """PyG Temporal's EvolveGCNO class. `import torch_geometric_temporal` fails with
    torch_geometric 2.8 (the package's __init__ imports every model, and one imports
    torch_geometric.utils.to_dense_adj, since renamed), so its evolvegcno.py is loaded on its own
    (it needs torch, torch_geometric and torch_sparse only)."""
    import importlib.util
    spec = importlib.util.find_spec("torch_geometric_temporal")
    if spec is None:
        sys.exit("pyg-temporal: torch-geometric-temporal is not installed "
                 "(pip install --no-deps torch-geometric-temporal==0.54.0)")
    import os
    path = os.path.join(os.path.dirname(spec.origin), "nn", "recurrent", "evolvegcno.py")
    module_spec = importlib.util.spec_from_file_location("pygt_evolvegcno", path)
    module = importlib.util.module_from_spec(module_spec)
    sys.modules[module_spec.name] = module  # PyG's MessagePassing inspects its module
    module_spec.loader.exec_module(module)  # ImportError without torch_sparse
    return module.EvolveGCNO


class PygTemporalEvolveGcnO(torch.nn.Module):
    """Two of PyG Temporal's EvolveGCNO layers (F wide each), ReLU after each."""

    def __init__(self, data):
        super().__init__()
        EvolveGCNO = load_evolvegcno()
        self.layer1 = EvolveGCNO(data.num_features)
        self.layer2 = EvolveGCNO(data.num_features)
        self.data = data
        self.eye = torch.eye(data.num_features)

    def out_features(self):
        return self.data.num_features

    def forward(self, t):
        # The library's layer carries no state from one call to the next (module docstring):
        # only the window's last snapshot reaches the output.
        last = t - 1
        x = self.eye[self.data.feature[last]]  # dense one-hot N x F
        ei = self.data.edge_index(last)
        h1 = torch.relu(self.layer1(x, ei))
        return torch.relu(self.layer2(h1, ei))


class PairScorer(torch.nn.Module):
    """nn::PairScorer: s(u, v) = w2 . relu(e_u A + e_v B + b1) + b2."""

    def __init__(self, width, hidden):
        super().__init__()
        self.a, self.b = glorot(width, hidden), glorot(width, hidden)
        self.b1 = torch.nn.Parameter(torch.zeros(hidden))
        self.w2 = glorot(hidden, 1)
        self.b2 = torch.nn.Parameter(torch.zeros(1))

    def prepare(self, e):
        return e @ self.a + self.b1, e @ self.b

    def pairs(self, pq, src, dst):
        p, q = pq
        # F.embedding: the gather whose backward is fastest on CPU (p[src]'s index_put_ with
        # accumulation is several times slower on 2 threads).
        hidden = torch.relu(F.embedding(src, p) + F.embedding(dst, q))
        return (hidden @ self.w2).squeeze(1) + self.b2

    def all_pairs(self, pq, chunk=16):
        """The N x N matrix of scores s(u, v), a few rows at a time into one buffer."""
        p, q = pq
        w2 = self.w2.squeeze(1)
        out = torch.empty(p.shape[0], q.shape[0])
        buf = torch.empty(chunk, q.shape[0], q.shape[1])
        for i in range(0, p.shape[0], chunk):
            m = min(chunk, p.shape[0] - i)
            torch.add(p[i:i + m, None, :], q[None], out=buf[:m])
            buf[:m].clamp_(min=0)
            torch.matmul(buf[:m], w2, out=out[i:i + m])
        return out + self.b2


# ---- sampling and metrics -----------------------------------------------------------------------

def sample_negatives(rng, src, keys, pool, n, count):
    """runtime::sample_negatives' rule with numpy's generator: up to `count` (u, v) pairs, each
    drawn until it is neither a self pair nor a target, at most NEGATIVE_DRAWS times (the
    rejected ones redrawn together, round by round)."""
    u = np.empty(count, np.int64)
    v = np.empty(count, np.int64)
    left = np.arange(count)
    for _ in range(NEGATIVE_DRAWS):
        if len(left) == 0:
            break
        du = src[rng.integers(0, len(src), size=len(left))].astype(np.int64)
        k = rng.integers(0, len(pool) if len(pool) else n, size=len(left))
        dv = pool[k].astype(np.int64) if len(pool) else k
        key = du * n + dv
        at = np.minimum(np.searchsorted(keys, key), len(keys) - 1)
        ok = (du != dv) & (keys[at] != key)
        u[left[ok]], v[left[ok]] = du[ok], dv[ok]
        left = left[~ok]
    keep = np.ones(count, bool)
    keep[left] = False  # rejected NEGATIVE_DRAWS times: left out
    return u[keep], v[keep]


def mrr_of_rows(scores, src, dst):
    """EvolveGCN's MRR as Halo computes it: per source with a target, the mean over its targets
    of 1 / rank among the N - 1 other nodes (rank 1 + higher + tied others / 2), averaged over
    those sources. `scores` is N x N; its diagonal is excluded."""
    rows = np.unique(src)
    s = scores[rows].clone()
    s[torch.arange(len(rows)), torch.from_numpy(rows)] = -float("inf")  # u itself: never counted
    srt, _ = torch.sort(s, dim=1)
    row_of = np.searchsorted(rows, src)
    val = s[torch.from_numpy(row_of), torch.from_numpy(dst.astype(np.int64))]
    r = torch.from_numpy(row_of)
    lo = torch.searchsorted(srt[r], val[:, None], right=False).squeeze(1)
    hi = torch.searchsorted(srt[r], val[:, None], right=True).squeeze(1)
    higher = s.shape[1] - hi
    rank = 1 + higher.double() + (hi - lo - 1).double() / 2
    per = np.zeros(len(rows))
    cnt = np.zeros(len(rows))
    np.add.at(per, row_of, (1 / rank).numpy())
    np.add.at(cnt, row_of, 1)
    return float(np.mean(per / cnt))


def ap_and_auc(scores, labels):
    """Average precision (scikit-learn's: tied scores one threshold) and ROC AUC (ties 1/2)."""
    order = np.argsort(-scores, kind="stable")
    s, y = scores[order], labels[order]
    ends = np.r_[np.nonzero(np.diff(s))[0], len(s) - 1]  # last entry of each tie group
    tp = np.cumsum(y, dtype=np.float64)[ends]
    seen = ends + 1.0
    fp = seen - tp
    pos, neg = tp[-1], fp[-1]
    dtp = np.diff(np.r_[0.0, tp])
    dfp = np.diff(np.r_[0.0, fp])
    ap = float(np.sum(dtp / pos * tp / seen))
    auc = float(np.sum(dtp * ((neg - fp) + dfp / 2)) / (pos * neg)) if neg > 0 else float("nan")
    return ap, auc


@torch.no_grad()
def score_steps(model, scorer, data, begin, end):
    """Mean MRR, MAP and AUC over the steps [begin, end) with targets."""
    mrr, ap, auc = [], [], []
    n = data.n
    off_diag = ~np.eye(n, dtype=bool)
    for t in range(begin, end):
        src, dst = data.targets[t]
        if len(src) == 0:
            continue
        s = scorer.all_pairs(scorer.prepare(model(t)))
        mrr.append(mrr_of_rows(s, src, dst))
        lab = np.zeros((n, n), np.int8)
        lab[src, dst] = 1
        a, c = ap_and_auc(s.numpy()[off_diag], lab[off_diag])
        ap.append(a)
        auc.append(c)
    mean = lambda v: float(np.mean(v)) if v else float("nan")
    return mean(mrr), mean(ap), mean(auc)


# ---- training -----------------------------------------------------------------------------------

def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--system", default="torch", choices=["torch", "pyg-temporal", "pyg"])
    ap.add_argument("--workload", default="evolvegcn", choices=["evolvegcn"])
    ap.add_argument("--graph", required=True, help="halo datasets export --snapshots N's .npz")
    ap.add_argument("--epochs", type=int, default=200)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--hidden", type=int, default=100, help="embedding width (torch only)")
    ap.add_argument("--scorer-hidden", type=int, default=100)
    ap.add_argument("--negatives", type=int, default=50)
    ap.add_argument("--positive-weight", type=float, default=0.9)
    ap.add_argument("--negative-weight", type=float, default=0.1)
    ap.add_argument("--lr", type=float, default=0.001)
    ap.add_argument("--weight-decay", type=float, default=0.0)
    args = ap.parse_args()
    torch.set_num_threads(args.threads)
    torch.manual_seed(args.seed)
    rng = np.random.default_rng(args.seed)
    data = Temporal(args.graph)
    system = "pyg-temporal" if args.system in ("pyg", "pyg-temporal") else "torch"
    if system == "pyg-temporal":
        check_gcn_norm(data)
        model = PygTemporalEvolveGcnO(data)
    else:
        model = EvolveGcnO(data, args.hidden)
    scorer = PairScorer(model.out_features(), args.scorer_hidden)
    params = list(model.parameters()) + list(scorer.parameters())
    opt = torch.optim.Adam(params, lr=args.lr, weight_decay=args.weight_decay)
    emit(system=system, nodes=data.n, steps=data.steps, features=data.num_features,
         window=data.window, train_steps=[data.train_begin, data.train_end],
         val_steps=[data.train_end, data.val_end], test_steps=[data.val_end, data.test_end],
         embedding=model.out_features(), parameters=sum(p.numel() for p in params),
         threads=torch.get_num_threads())
    times, best = [], None
    for epoch in range(1, args.epochs + 1):
        t0 = time.perf_counter()
        model.train()
        losses = []
        for t in range(data.train_begin, data.train_end):
            src, dst = data.targets[t]
            if len(src) == 0:
                continue
            pool = np.concatenate(data.active[t - data.window:t])
            ns, nd = sample_negatives(rng, src, data.target_keys[t], pool, data.n,
                                      args.negatives * len(src))
            us = torch.from_numpy(np.concatenate([src.astype(np.int64), ns]))
            vs = torch.from_numpy(np.concatenate([dst.astype(np.int64), nd]))
            y = torch.zeros(len(us))
            y[:len(src)] = 1
            w = torch.full((len(us),), args.negative_weight)
            w[:len(src)] = args.positive_weight
            opt.zero_grad()
            logits = scorer.pairs(scorer.prepare(model(t)), us, vs)
            loss = F.binary_cross_entropy_with_logits(logits, y, weight=w,
                                                      reduction="sum") / w.sum()
            loss.backward()
            opt.step()
            losses.append(float(loss))
        times.append(time.perf_counter() - t0)
        model.eval()
        val_mrr, val_map, _ = score_steps(model, scorer, data, data.train_end, data.val_end)
        if best is None or val_map > best[0]:  # NaN never wins; the first on ties
            best = (val_map, val_mrr, epoch, copy.deepcopy(model.state_dict()),
                    copy.deepcopy(scorer.state_dict()))
        emit(epoch=epoch, train_loss=float(np.mean(losses)), val_mrr=val_mrr, val_map=val_map,
             epoch_time_s=times[-1])
    if best is None:
        best = (float("nan"), float("nan"), args.epochs, model.state_dict(), scorer.state_dict())
    model.load_state_dict(best[3])
    scorer.load_state_dict(best[4])
    model.eval()
    test_mrr, test_map, test_auc = score_steps(model, scorer, data, data.val_end, data.test_end)
    emit(summary=True, system=system, workload="evolvegcn",
         epoch_time_median_s=statistics.median(times), epoch_time_min_s=min(times),
         best_epoch=best[2], val_mrr=best[1], val_map=best[0], test_mrr=test_mrr,
         test_map=test_map, test_auc=test_auc, final_train_loss=float(np.mean(losses)))


if __name__ == "__main__":
    main()
