"""The heterogeneous workloads of bench/peers/peer.py: R-GCN and HGT node classification on a
typed graph that `halo datasets export` wrote (heco_acm, synthetic-mag), in PyG and in DGL.

    peer.py --system pyg|dgl --workload rgcn|hgt|rgcn-mb --graph G.npz [options]

The model is Halo's (docs/cli.md, "Heterogeneous datasets"; nn/hetero_model.cpp):
  * input per node type t: x_t P_t + c_t for a type with features (sparse features stay sparse:
    a torch sparse CSR product, its backward with a transposed copy of x_t made once), for a
    featureless type zeros or a learnable embedding row per node (--featureless
    zero|embedding|auto; auto: an embedding for a type with fewer nodes than the target type,
    zeros otherwise). The embeddings are nn.Embedding(sparse=True) updated by
    torch.optim.SparseAdam (no weight decay), as Halo's SparseEmbedding; every dense parameter
    by Adam with weight decay. This stage is the same plain torch code for both peers;
  * --layers layers, dropout on every layer's input (the input stage's output included), ReLU
    between layers; the last layer computes the target type only (its relations into the target);
  * R-GCN: out_d = x_d W_self[d] + b[d] + sum over the relations r into d of
    mean_{s in N_r(d)} x_s W_r (0 for a node without such neighbours); the last layer outputs the
    classes. DGL: HeteroGraphConv(GraphConv(norm="right", bias=False), aggregate="sum") plus a
    per-type Linear self-loop (the DGL R-GCN example's form). PyG: HeteroConv(SAGEConv(aggr="mean",
    root_weight=False, bias=False), aggr="sum") plus the same per-type Linear self-loop, on the
    full graph each relation a torch sparse CSR adj_t (--pyg-adj; edge_index and torch-sparse's
    SparseTensor time about the same on heco_acm), mini-batch its sampled edge_index;
  * HGT: the library's HGTConv, --hidden wide with --heads heads, every layer gated-residual, then
    a Linear classifier on the target type. DGL: dgl.nn.HGTConv on the homogenised graph
    (ntype / etype ids, nodes and edges sorted by type: presorted=True), the last layer on a
    block whose destinations are the target nodes; dgl.nn.HGTConv (2.1) has no activation
    before its output projection (its docstring's sigma is not in its code), so the projection
    is wrapped to apply GELU first, as PyG's HGTConv and Halo do. Differences left: DGL's K, Q,
    V and output projections (TypedLinear) have no biases (Halo's and PyG's have); Halo's GELU
    is the tanh approximation, PyG's the exact one (the DGL wrapper uses the tanh one); DGL's
    last layer holds attention and message matrices for every relation (it uses those into the
    target); the libraries initialise their layers their own way (Glorot in Halo);
  * loss: cross entropy (mean NLL) over the training nodes; after each epoch an evaluation
    without dropout; the epoch kept is the one of best validation accuracy (ties: lower
    validation loss), and its test Macro-F1 (mean over the classes present, labelled or
    predicted, of 2 TP / (2 TP + FP + FN), as Halo's and scikit-learn's average="macro") and
    Micro-F1 (the accuracy) are reported;
  * the epoch time is the training step (forward, loss, backward, optimizer steps); full graph:
    the median over the epochs. rgcn-mb: an epoch is the target type's training nodes in shuffled
    batches of --batch (the first --max-batches of them when given), each sampled with up to
    f neighbours PER RELATION per layer (--fanouts input layer first, as Halo's: DGL's
    NeighborSampler takes that order, PyG's NeighborLoader counts hops from the seeds and gets it
    reversed), sampling and feature gathering (and embedding lookups) included. DGL and Halo
    sample per layer (block l's destinations are block l+1's sources, each sampling its own
    neighbours per layer); PyG samples each node once, at the hop that reaches it, and its
    layers run on that one subgraph: a seed's first layer aggregates the neighbours its
    last-layer fan-out drew. With pyg-lib PyG trims the subgraph to each layer
    (torch_geometric.utils.trim_to_layer, its hierarchical sampling), so its layers compute
    about the rows the next layer reads; with torch-sparse as the sampler (pyg-lib has no PyPI
    wheel) the sampler gives no per-hop counts, and every layer runs on the whole sample, as
    PyG's examples do.
    --full-eval evaluates on the full graph after each epoch (not timed); without it no accuracy
    is reported for rgcn-mb.
"""
import json
import statistics
import time
import warnings

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn


def emit(**record):
    print(json.dumps(record), flush=True)


# ---- the typed graph ---------------------------------------------------------------------

def tkey(t):
    """Node type t's key in the peers' dictionaries (names stay out of module keys)."""
    return f"t{t}"


def rkey(r):
    return f"r{r}"


def load_hetero(path):
    d = np.load(path)
    meta = json.loads(bytes(d["meta_json"]).decode())
    types = []
    for t, nt in enumerate(meta["node_types"]):
        x = None
        if nt["features"] == "dense":
            x = torch.from_numpy(d[f"x_{t}"])
        elif nt["features"] == "sparse":
            ip, ix, xd = d[f"x_{t}_indptr"], d[f"x_{t}_indices"], d[f"x_{t}_data"]
            shape = tuple(int(s) for s in d[f"x_{t}_shape"])
            rows = np.repeat(np.arange(shape[0]), np.diff(ip))
            idx = torch.from_numpy(np.vstack([rows, ix]).astype(np.int64))
            x = torch.sparse_coo_tensor(idx, torch.from_numpy(xd), shape).coalesce()
        types.append({"name": nt["name"], "n": int(nt["num_nodes"]), "x": x})
    rels = []
    for r, rel in enumerate(meta["relations"]):
        indptr = d[f"rel_{r}_indptr"].astype(np.int64)
        indices = d[f"rel_{r}_indices"].astype(np.int64)
        assert indptr.shape[0] == types[rel["dst"]]["n"] + 1, f"relation {rel['name']}: indptr"
        rels.append({"name": rel["name"], "src": int(rel["src"]), "dst": int(rel["dst"]),
                     "indptr": indptr, "indices": indices})
    g = {"meta": meta, "types": types, "rels": rels, "target": int(meta["target"]),
         "num_classes": int(d["num_classes"]),
         "y": torch.from_numpy(d["y"].astype(np.int64))}
    for k in ("train_idx", "val_idx", "test_idx"):
        g[k] = torch.from_numpy(d[k].astype(np.int64))
    return g


def rel_coo(rel):
    """(sources, destinations) of a relation, type-local ids, grouped by destination."""
    dst = np.repeat(np.arange(rel["indptr"].shape[0] - 1), np.diff(rel["indptr"]))
    return rel["indices"], dst


def featureless_choice(g, mode):
    """Per type: 'features', 'embedding' or 'zero' (--featureless; auto: an embedding for a
    featureless type with fewer nodes than the target type, as Halo's auto)."""
    n_target = g["types"][g["target"]]["n"]
    out = []
    for t in g["types"]:
        if t["x"] is not None:
            out.append("features")
        elif mode == "auto":
            out.append("embedding" if t["n"] < n_target else "zero")
        else:
            out.append(mode)
    return out


def macro_micro_f1(pred, y):
    """Macro-F1 over the classes present (labelled or predicted) and Micro-F1 (= accuracy)."""
    pred, y = np.asarray(pred), np.asarray(y)
    if y.size == 0:
        return None, None
    c = int(max(pred.max(), y.max())) + 1
    tp = np.bincount(y[pred == y], minlength=c).astype(np.float64)
    denom = np.bincount(pred, minlength=c) + np.bincount(y, minlength=c)  # 2TP + FP + FN
    present = denom > 0
    return float(np.mean(2 * tp[present] / denom[present])), float(np.mean(pred == y))


# ---- the shared parts of the model ---------------------------------------------------------

def glorot_(w):
    nn.init.xavier_uniform_(w)
    return w


class Linear(nn.Linear):
    """nn.Linear initialised as Halo's: Glorot-uniform weight, zero bias."""

    def reset_parameters(self):
        glorot_(self.weight)
        if self.bias is not None:
            nn.init.zeros_(self.bias)


class _SparseProduct(torch.autograd.Function):
    """X W for a constant sparse X (CSR), its backward X^T dY with X^T prepared once: torch's own
    backward of torch.sparse.mm transposes X at every step (on heco_acm's paper features ten
    times the product itself), which would time torch's sparse support, not the peers."""

    @staticmethod
    def forward(ctx, w, x, xt):
        ctx.xt = xt
        return torch.sparse.mm(x, w)

    @staticmethod
    def backward(ctx, dy):
        return torch.sparse.mm(ctx.xt, dy), None, None


class HeteroInput(nn.Module):
    """The input stage: per node type a projection of its features, an embedding or zeros."""

    def __init__(self, g, hidden, choice):
        super().__init__()
        self.hidden, self.choice = hidden, choice
        self.x = [t["x"] for t in g["types"]]
        self.n = [t["n"] for t in g["types"]]
        with warnings.catch_warnings():  # "Sparse CSR tensor support is in beta state"
            warnings.simplefilter("ignore")
            self.csr = [(x.to_sparse_csr(), x.t().coalesce().to_sparse_csr())
                        if x is not None and x.is_sparse else None for x in self.x]
        self.weight, self.bias = nn.ParameterDict(), nn.ParameterDict()
        self.emb = nn.ModuleDict()
        for t, c in enumerate(choice):
            if c == "features":
                w = torch.empty(self.x[t].shape[1], hidden)
                self.weight[tkey(t)] = nn.Parameter(glorot_(w))
                self.bias[tkey(t)] = nn.Parameter(torch.zeros(hidden))
            elif c == "embedding":
                e = nn.Embedding(self.n[t], hidden, sparse=True)
                glorot_(e.weight)
                self.emb[tkey(t)] = e

    def forward(self, ids=None):
        """ids: per type key the node ids whose rows are wanted (a mini-batch), else all."""
        out = {}
        for t, c in enumerate(self.choice):
            k = tkey(t)
            sel = None if ids is None else ids.get(k)
            if ids is not None and sel is None:
                continue
            if c == "features":
                x = self.x[t]
                if sel is None and self.csr[t] is not None:
                    xw = _SparseProduct.apply(self.weight[k], *self.csr[t])
                else:
                    x = x if sel is None else x.index_select(0, sel)
                    xw = torch.sparse.mm(x, self.weight[k]) if x.is_sparse else x @ self.weight[k]
                out[k] = xw + self.bias[k]
            elif c == "embedding":
                out[k] = self.emb[k](torch.arange(self.n[t]) if sel is None else sel)
            else:
                out[k] = torch.zeros(self.n[t] if sel is None else sel.numel(), self.hidden)
        return out


class HeteroModel(nn.Module):
    """Input stage, then the layers (dropout before each, ReLU between), the target's rows, and
    for HGT a Linear classifier. graphs[l] is what layer l runs on (system-specific); a callable
    graphs[l] is given the layer's input and returns it trimmed with the layer's graph."""

    def __init__(self, inputs, layers, dropout, target, classifier=None):
        super().__init__()
        self.inputs, self.layers, self.classifier = inputs, nn.ModuleList(layers), classifier
        self.dropout, self.target = dropout, tkey(target)

    def forward(self, graphs, ids=None, num_seeds=None):
        h = self.inputs(ids)
        for l, (layer, graph) in enumerate(zip(self.layers, graphs)):
            if l:
                h = {k: F.relu(v) for k, v in h.items()}
            h = {k: F.dropout(v, self.dropout, self.training) for k, v in h.items()}
            if callable(graph):
                h, graph = graph(l, h)
            h = layer(graph, h)
        out = h[self.target]
        if num_seeds is not None:
            out = out[:num_seeds]
        return out if self.classifier is None else self.classifier(out)


def optimizers(model, args):
    sparse = [p for m in model.modules() if isinstance(m, nn.Embedding) for p in m.parameters()]
    ids = {id(p) for p in sparse}
    dense = [p for p in model.parameters() if id(p) not in ids]
    opts = [torch.optim.Adam(dense, lr=args.lr, weight_decay=args.weight_decay)]
    if sparse:
        opts.append(torch.optim.SparseAdam(sparse, lr=args.lr))
    return opts


# ---- DGL --------------------------------------------------------------------------------------

def dgl_heterograph(g):
    """The typed graph as a DGL heterograph, each relation from its destination-major CSR (CSC
    to DGL: what its neighbour sampler and in-degree normalisation read)."""
    import dgl
    data = {}
    for r, rel in enumerate(g["rels"]):
        ip, ix = torch.from_numpy(rel["indptr"]), torch.from_numpy(rel["indices"])
        data[(tkey(rel["src"]), rkey(r), tkey(rel["dst"]))] = (
            "csc", (ip, ix, torch.arange(ix.numel())))
    return dgl.heterograph(data, {tkey(t): ty["n"] for t, ty in enumerate(g["types"])})


class DglRgcnLayer(nn.Module):
    def __init__(self, g, rels, dst_types, din, dout):
        super().__init__()
        from dgl.nn import GraphConv, HeteroGraphConv
        self.dst_types = dst_types
        self.conv = HeteroGraphConv({rkey(r): GraphConv(din, dout, norm="right", bias=False,
                                                       allow_zero_in_degree=True) for r in rels},
                                    aggregate="sum")
        self.loop = nn.ModuleDict({t: Linear(din, dout) for t in self.dst_types})

    def forward(self, graph, h):
        # (sources, destinations): HeteroGraphConv then skips the relations into other types
        # (the last layer's), on the whole graph as on a block.
        dst = {t: h[t][:graph.num_dst_nodes(t)] if graph.is_block else h[t]
               for t in self.dst_types if t in h}
        out = self.conv(graph, (h, dst))
        return {t: self.loop[t](x) + out[t] if t in out else self.loop[t](x)
                for t, x in dst.items()}


class _GeluThen(nn.Module):
    """dgl.nn.HGTConv's output projection with GELU before it (see the module docstring)."""

    def __init__(self, inner):
        super().__init__()
        self.inner = inner

    def forward(self, x, x_type, sorted_by_type=False):
        return self.inner(F.gelu(x, approximate="tanh"), x_type, sorted_by_type)


class DglHgtLayer(nn.Module):
    """dgl.nn.HGTConv on the homogenised graph: the type dictionary concatenated in the
    homogeneous order (target type first), the output split back."""

    def __init__(self, order, hidden, heads, num_etypes, target_only):
        super().__init__()
        from dgl.nn import HGTConv
        self.order, self.target_only = order, target_only
        self.conv = HGTConv(hidden, hidden // heads, heads, len(order), num_etypes, dropout=0.0)
        self.conv.linear_a = _GeluThen(self.conv.linear_a)

    def forward(self, graph, h):
        block, ntype, etype, sizes = graph
        x = torch.cat([h[k] for k in self.order])
        y = self.conv(block, x, ntype, etype, presorted=True)
        if self.target_only:
            return {self.order[0]: y}
        return dict(zip(self.order, torch.split(y, sizes)))


def dgl_hgt_graphs(g):
    """Per layer (block, ntype, etype, sizes): the whole homogenised graph, and for the last
    layer a block whose destinations are the target nodes (numbered first)."""
    import dgl
    order = hgt_order(g)
    sizes = [g["types"][t]["n"] for t in order]
    offset = dict(zip(order, np.concatenate([[0], np.cumsum(sizes)[:-1]]).tolist()))
    n = int(sum(sizes))
    src, dst, ety = [], [], []
    for r, rel in enumerate(g["rels"]):  # edges in relation order: sorted by etype
        s, d = rel_coo(rel)
        src.append(s + offset[rel["src"]])
        dst.append(d + offset[rel["dst"]])
        ety.append(np.full(s.shape[0], r))
    src, dst, ety = (torch.from_numpy(np.concatenate(a).astype(np.int64)) for a in (src, dst, ety))
    ntype = torch.cat([torch.full((k,), i, dtype=torch.int64) for i, k in enumerate(sizes)])
    whole = dgl.graph((src, dst), num_nodes=n)
    into = dst < sizes[0]  # target nodes are 0 .. n_target - 1
    last = dgl.create_block((src[into], dst[into]), num_src_nodes=n, num_dst_nodes=sizes[0])
    return (whole, ntype, ety, sizes), (last, ntype, ety[into], sizes)


def hgt_order(g):
    """The homogenised graph's type order: the target type first (ids 0 .. n_target - 1)."""
    return [g["target"]] + [t for t in range(len(g["types"])) if t != g["target"]]


# ---- PyG --------------------------------------------------------------------------------------

def pyg_edge_types(g):
    return [(tkey(rel["src"]), rkey(r), tkey(rel["dst"])) for r, rel in enumerate(g["rels"])]


def pyg_edge_index_dict(g, adj):
    """edge_index ([2, E]: sources, destinations) per relation, or with adj="csr" the torch sparse
    CSR adj_t (destination rows) that PyG's layers aggregate with one SpMM."""
    out = {}
    for et, rel in zip(pyg_edge_types(g), g["rels"]):
        if adj == "sparsetensor":
            from torch_sparse import SparseTensor
            ns, nd = g["types"][rel["src"]]["n"], g["types"][rel["dst"]]["n"]
            s_, d_ = rel_coo(rel)
            out[et] = SparseTensor(row=torch.from_numpy(d_), col=torch.from_numpy(s_),
                                   sparse_sizes=(nd, ns), is_sorted=True, trust_data=True)
        elif adj == "csr":
            ns, nd = g["types"][rel["src"]]["n"], g["types"][rel["dst"]]["n"]
            ix = torch.from_numpy(rel["indices"])
            out[et] = torch.sparse_csr_tensor(torch.from_numpy(rel["indptr"]), ix,
                                              torch.ones(ix.numel()), (nd, ns))
        else:
            s, d = rel_coo(rel)
            out[et] = torch.from_numpy(np.vstack([s, d]))
    return out


class PygRgcnLayer(nn.Module):
    def __init__(self, g, rels, dst_types, din, dout):
        super().__init__()
        from torch_geometric.nn import HeteroConv, SAGEConv
        ets = pyg_edge_types(g)
        self.dst_types = dst_types
        with warnings.catch_warnings():  # the last layer updates the target type only
            warnings.filterwarnings("ignore", message="There exist node types")
            self.conv = HeteroConv({ets[r]: SAGEConv((din, din), dout, aggr="mean",
                                                     root_weight=False, bias=False) for r in rels},
                                   aggr="sum")
        self.loop = nn.ModuleDict({t: Linear(din, dout) for t in self.dst_types})

    def forward(self, edge_index_dict, h):
        out = self.conv(h, edge_index_dict)
        return {t: self.loop[t](h[t]) + out[t] if t in out else self.loop[t](h[t])
                for t in self.dst_types if t in h}


class PygHgtLayer(nn.Module):
    def __init__(self, g, rels, hidden, heads):
        super().__init__()
        from torch_geometric.nn import HGTConv
        ets = pyg_edge_types(g)
        self.ets = [ets[r] for r in rels]
        metadata = ([tkey(t) for t in range(len(g["types"]))], self.ets)
        with warnings.catch_warnings():
            warnings.filterwarnings("ignore", message="There exist node types")
            self.conv = HGTConv(hidden, hidden, metadata, heads=heads)

    def forward(self, edge_index_dict, h):
        out = self.conv(h, {et: edge_index_dict[et] for et in self.ets})
        return {k: v for k, v in out.items() if v is not None}


# ---- building the model -----------------------------------------------------------------------

def build(args, g):
    """The model of args.workload for args.system."""
    choice = featureless_choice(g, args.featureless)
    hidden, nc, target = args.hidden, g["num_classes"], g["target"]
    all_rels = list(range(len(g["rels"])))
    into_target = [r for r, rel in enumerate(g["rels"]) if rel["dst"] == target]
    nl = args.layers
    rels_of = lambda l: into_target if l + 1 == nl else all_rels
    classifier = None
    if args.workload in ("rgcn", "rgcn-mb"):
        # Every type's rows (a self-loop term at least), the target's alone in the last layer.
        dst_of = lambda l: ([tkey(target)] if l + 1 == nl else
                            [tkey(t) for t in range(len(g["types"]))])
        width = lambda l: (hidden, nc if l + 1 == nl else hidden)
        layer = DglRgcnLayer if args.system == "dgl" else PygRgcnLayer
        layers = [layer(g, rels_of(l), dst_of(l), *width(l)) for l in range(nl)]
    else:
        if hidden % args.heads:
            raise SystemExit(f"peer.py: --heads {args.heads} must divide --hidden {hidden}")
        classifier = Linear(hidden, nc)
        if args.system == "dgl":
            keys = [tkey(t) for t in hgt_order(g)]
            layers = [DglHgtLayer(keys, hidden, args.heads, len(g["rels"]), l + 1 == nl)
                      for l in range(nl)]
        else:
            layers = [PygHgtLayer(g, rels_of(l), hidden, args.heads) for l in range(nl)]
    model = HeteroModel(HeteroInput(g, hidden, choice), layers, args.dropout, target, classifier)
    emit(model=args.workload, system=args.system,
         featureless={t["name"]: c for t, c in zip(g["types"], choice)},
         parameters=sum(p.numel() for p in model.parameters()))
    return model


def full_graphs(args, g):
    """What each layer runs on over the whole graph."""
    nl = args.layers
    if args.system == "dgl":
        if args.workload == "hgt":
            whole, last = dgl_hgt_graphs(g)
            return [whole] * (nl - 1) + [last]
        return [dgl_heterograph(g)] * nl
    eid = pyg_edge_index_dict(g, args.pyg_adj if args.workload != "hgt" else "edge_index")
    return [eid] * nl


def evaluate(model, graphs, g):
    """(val accuracy, val loss, test predictions) without dropout, on the full graph."""
    model.eval()
    with torch.no_grad():
        out = model(graphs)
    y, va, te = g["y"], g["val_idx"], g["test_idx"]
    pred = out.argmax(1)
    val_acc = float((pred[va] == y[va]).float().mean()) if len(va) else float("nan")
    val_loss = float(F.cross_entropy(out[va], y[va])) if len(va) else float("nan")
    return val_acc, val_loss, pred[te].numpy()


class Best:
    """The epoch of best validation accuracy (ties: lower validation loss); the last without
    validation nodes."""

    def __init__(self, g):
        self.g, self.rec = g, None

    def update(self, epoch, val_acc, val_loss, test_pred):
        key = (val_acc, -val_loss)
        no_val = len(self.g["val_idx"]) == 0
        if self.rec is None or no_val or key > self.rec[0]:
            self.rec = (key, epoch, test_pred)

    def fields(self):
        if self.rec is None:
            return {}
        (val_acc, neg_loss), epoch, pred = self.rec
        macro, micro = macro_micro_f1(pred, self.g["y"][self.g["test_idx"]].numpy())
        return {"best_epoch": epoch, "val_accuracy": val_acc, "val_loss": -neg_loss,
                "test_macro_f1": macro, "test_micro_f1": micro, "test_accuracy": micro}


# ---- full graph -------------------------------------------------------------------------------

def run_full(args, g):
    model = build(args, g)
    graphs = full_graphs(args, g)
    opts = optimizers(model, args)
    y, tr = g["y"], g["train_idx"]
    times, best = [], Best(g)
    for epoch in range(1, args.epochs + 1):
        t0 = time.perf_counter()
        model.train()
        for o in opts:
            o.zero_grad()
        loss = F.cross_entropy(model(graphs)[tr], y[tr])
        loss.backward()
        for o in opts:
            o.step()
        times.append(time.perf_counter() - t0)
        val_acc, val_loss, test_pred = evaluate(model, graphs, g)
        best.update(epoch, val_acc, val_loss, test_pred)
        emit(epoch=epoch, train_loss=float(loss), val_accuracy=val_acc, epoch_time_s=times[-1])
    emit(summary=True, system=args.system, workload=args.workload, dataset=g["meta"]["name"],
         epoch_time_median_s=statistics.median(times), epoch_time_min_s=min(times),
         final_train_loss=float(loss), epochs=args.epochs, hidden=args.hidden,
         dropout=args.dropout, featureless=args.featureless, **best.fields())


# ---- mini-batch R-GCN -------------------------------------------------------------------------

class DglBatches:
    def __init__(self, args, g, fanouts):
        import dgl
        self.graph = dgl_heterograph(g)
        sampler = dgl.dataloading.NeighborSampler(fanouts)  # ints: per edge type, input layer first
        self.loader = dgl.dataloading.DataLoader(
            self.graph, {tkey(g["target"]): g["train_idx"]}, sampler, batch_size=args.batch,
            shuffle=True, drop_last=False)
        self.target = tkey(g["target"])

    def __iter__(self):
        for input_nodes, output_nodes, blocks in self.loader:
            yield blocks, input_nodes, None, output_nodes[self.target]


class PygBatches:
    def __init__(self, args, g, fanouts):
        self.layers = len(fanouts)
        from torch_geometric.data import HeteroData
        from torch_geometric.loader import NeighborLoader
        from torch_geometric.utils import trim_to_layer
        data = HeteroData()
        for t, ty in enumerate(g["types"]):
            data[tkey(t)].num_nodes = ty["n"]
        eid = pyg_edge_index_dict(g, "edge_index")
        for et, ei in eid.items():
            data[et].edge_index = ei
        self.target = tkey(g["target"])
        hops = list(reversed(fanouts))  # PyG: hop 1 (the seeds' neighbours) first
        self.loader = NeighborLoader(data, num_neighbors={et: hops for et in eid},
                                     input_nodes=(self.target, g["train_idx"]),
                                     batch_size=args.batch, shuffle=True)
        self.trim = trim_to_layer

    def __iter__(self):
        for b in self.loader:
            ids = {k: b[k].n_id for k in b.node_types}
            eid = b.edge_index_dict
            try:
                nodes, edges = b.num_sampled_nodes_dict, b.num_sampled_edges_dict
            except (AttributeError, KeyError):  # not given by torch-sparse's sampler
                nodes = edges = None
            if nodes and edges and all(v is not None for v in nodes.values()):
                def layer_graph(l, h, eid=eid, nodes=nodes, edges=edges):
                    h, e, _ = self.trim(l, nodes, edges, h, eid)
                    return h, e
                graphs = [layer_graph] * self.layers
            else:  # sampled by torch-sparse: no per-hop counts, every layer on the whole sample
                graphs = [eid] * self.layers
            bs = b[self.target].batch_size
            yield graphs, ids, bs, b[self.target].n_id[:bs]


def run_minibatch(args, g):
    fanouts = [int(f) for f in args.fanouts.split(",")]
    args.layers = len(fanouts)
    model = build(args, g)
    batches = (DglBatches if args.system == "dgl" else PygBatches)(args, g, fanouts)
    eval_graphs = full_graphs(args, g) if args.full_eval else None
    opts = optimizers(model, args)
    y = g["y"]
    times, counts, best = [], [], Best(g)
    for epoch in range(1, args.epochs + 1):
        model.train()
        total, seen, nb = 0.0, 0, 0
        t0 = time.perf_counter()
        for graphs, ids, num_seeds, seeds in batches:
            for o in opts:
                o.zero_grad()
            out = model(graphs, ids, num_seeds)
            loss = F.cross_entropy(out, y[seeds])
            loss.backward()
            for o in opts:
                o.step()
            total += float(loss) * len(seeds)
            seen += len(seeds)
            nb += 1
            if args.max_batches and nb >= args.max_batches:
                break
        times.append(time.perf_counter() - t0)
        counts.append(nb)
        rec = dict(epoch=epoch, train_loss=total / max(seen, 1), epoch_time_s=times[-1],
                   batches=nb, seconds_per_batch=times[-1] / max(nb, 1))
        if eval_graphs is not None:
            val_acc, val_loss, test_pred = evaluate(model, eval_graphs, g)
            best.update(epoch, val_acc, val_loss, test_pred)
            rec["val_accuracy"] = val_acc
        emit(**rec)
    med = statistics.median(times)
    emit(summary=True, system=args.system, workload=args.workload, dataset=g["meta"]["name"],
         fanouts=args.fanouts, batch_size=args.batch, batches_per_epoch=counts[-1],
         max_batches=args.max_batches, epoch_time_median_s=med, epoch_time_min_s=min(times),
         seconds_per_batch_median=statistics.median(t / max(c, 1) for t, c in zip(times, counts)),
         final_train_loss=total / max(seen, 1), epochs=args.epochs, hidden=args.hidden,
         dropout=args.dropout, featureless=args.featureless, **best.fields())


def run(args):
    """Entry point from peer.py."""
    defaults = {"hidden": 64, "dropout": 0.5 if args.workload == "hgt" else 0.8,
                "epochs": 1 if args.workload == "rgcn-mb" else 80}
    for k, v in defaults.items():
        if getattr(args, k) is None:
            setattr(args, k, v)
    if args.system == "dgl":
        import dgl
        dgl.seed(args.seed)
    g = load_hetero(args.graph)
    (run_minibatch if args.workload == "rgcn-mb" else run_full)(args, g)
