"""Speed of the lab's graph layout (gradlab.lab.layout) on graphs the size of real models.

Two synthetic autograd graphs of about 2,000 nodes each, shaped like what graph capture records:
1. a 12-layer transformer — groups nested 3 deep (`layers`, `layers.N`, `layers.N.attn`,
   `layers.N.mlp`, ...), per-head attention, layer norms and GELUs spelled out in primitive ops,
   residual connections and a tied embedding (25 long skip edges);
2. a deep MLP — 333 blocks of Linear + ReLU, each `N` holding an `N.fc` (an nn.Sequential).

For each: the first place() with the top-level groups collapsed, place() fully expanded, and
expanding one more module after a full layout (where the per-group cache does the work). Also,
for scale, the transformer with no groups at all (one layout of every node).

Run: python benchmarks/bench_layout.py   (median of 5 runs, seconds)
"""

from __future__ import annotations

import os
import platform
import statistics
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))

from gradlab.lab.layout import GraphLayout  # noqa: E402

RUNS = 5


class _Recorder:
    """Builds a graph the way capture does: nodes in execution order, each in a module path."""

    def __init__(self):
        self.node_sizes, self.edges, self.group_of, self.group_parent = {}, [], {}, {}

    def group(self, path):
        parts = path.split(".")
        for i in range(1, len(parts) + 1):
            name = ".".join(parts[:i])
            parent = ".".join(parts[: i - 1]) or None
            # numbered children of a container (layers.0) hang under it, as in named_modules()
            self.group_parent.setdefault(name, parent)
        return path

    def op(self, name, inputs=(), group=None, size=(96.0, 28.0)):
        node = f"{name}#{len(self.node_sizes)}"
        self.node_sizes[node] = size
        self.group_of[node] = self.group(group) if group else None
        self.edges.extend((i, node) for i in inputs)
        return node

    def param(self, name, group):
        return self.op(name, (), group, size=(72.0, 24.0))

    def graph(self):
        return self.node_sizes, self.edges, self.group_of, self.group_parent


def _linear(rec, x, group):
    w, b = rec.param("weight", group), rec.param("bias", group)
    t = rec.op("TBackward0", [w], group)
    return rec.op("AddBackward0", [rec.op("MmBackward0", [x, t], group), b], group)


def _layer_norm(rec, x, group):
    mean = rec.op("MeanBackward0", [x], group)
    centred = rec.op("SubBackward0", [x, mean], group)
    var = rec.op("MeanBackward0", [rec.op("PowBackward0", [centred], group)], group)
    std = rec.op("SqrtBackward0", [rec.op("AddBackward0", [var], group)], group)
    normed = rec.op("DivBackward0", [centred, std], group)
    gain, shift = rec.param("weight", group), rec.param("bias", group)
    return rec.op("AddBackward0", [rec.op("MulBackward0", [normed, gain], group), shift], group)


def _softmax(rec, x, group):
    shifted = rec.op("SubBackward0", [x, rec.op("AmaxBackward0", [x], group)], group)
    e = rec.op("ExpBackward0", [shifted], group)
    return rec.op("DivBackward0", [e, rec.op("SumBackward0", [e], group)], group)


def _gelu(rec, x, group):
    cube = rec.op("PowBackward0", [x], group)
    inner = rec.op("AddBackward0", [x, rec.op("MulBackward0", [cube], group)], group)
    t = rec.op("TanhBackward0", [rec.op("MulBackward0", [inner], group)], group)
    half = rec.op("MulBackward0", [rec.op("AddBackward0", [t], group)], group)
    return rec.op("MulBackward0", [x, half], group)


def transformer(n_layers=12, heads=8, grouped=True):
    """About 2,000 nodes: a GPT-style model spelled out in the primitive ops autograd records."""
    rec = _Recorder()

    def g(path):
        return path if grouped else None

    tokens = rec.op("tokens", size=(72.0, 24.0))
    table = rec.param("embed.weight", g("embed"))
    x = rec.op("EmbeddingBackward0", [tokens, table], g("embed"))
    x = rec.op("AddBackward0", [x, rec.param("pos", g("embed"))], g("embed"))
    mask = rec.op("causal_mask", size=(72.0, 24.0))
    for n in range(n_layers):
        block = f"layers.{n}"
        h = _layer_norm(rec, x, g(f"{block}.ln1"))
        attn = f"{block}.attn"
        q, k, v = (_linear(rec, h, g(attn)) for _ in range(3))
        outs = []
        for head in range(heads):
            qh, kh, vh = (rec.op("SliceBackward0", [t], g(attn)) for t in (q, k, v))
            scores = rec.op("MmBackward0", [qh, rec.op("TBackward0", [kh], g(attn))], g(attn))
            scores = rec.op("AddBackward0", [rec.op("MulBackward0", [scores], g(attn)), mask], g(attn))
            p = rec.op("MulBackward0", [_softmax(rec, scores, g(attn))], g(attn))
            outs.append(rec.op("MmBackward0", [p, vh], g(attn)))
        y = _linear(rec, rec.op("CatBackward0", outs, g(attn)), g(attn))
        x = rec.op("AddBackward0", [x, rec.op("MulBackward0", [y], g(block))], g(block))
        h = _layer_norm(rec, x, g(f"{block}.ln2"))
        mlp = f"{block}.mlp"
        h = _linear(rec, _gelu(rec, _linear(rec, h, g(mlp)), g(mlp)), g(mlp))
        x = rec.op("AddBackward0", [x, rec.op("MulBackward0", [h], g(block))], g(block))
    x = _layer_norm(rec, x, g("ln_f"))
    logits = rec.op("MmBackward0", [x, rec.op("TBackward0", [table], g("head"))], g("head"))
    targets = rec.op("targets", size=(72.0, 24.0))
    rec.op("NllLossBackward0", [logits, targets], g("loss"), size=(140.0, 32.0))
    return rec.graph()


def deep_mlp(blocks=333):
    """About 2,000 nodes: Linear + ReLU, over and over."""
    rec = _Recorder()
    x = rec.op("input", size=(72.0, 24.0))
    for n in range(blocks):
        x = rec.op("ReluBackward0", [_linear(rec, x, f"{n}.fc")], f"{n}")  # as in nn.Sequential
    rec.op("MseLossBackward0", [x, rec.op("target", size=(72.0, 24.0))], "loss")
    return rec.graph()


def groups_at_depth(group_parent, depth):
    def level(g):
        d = 0
        while g is not None:
            g, d = group_parent.get(g), d + 1
        return d

    return {g for g in group_parent if level(g) <= depth}


def median_seconds(fn, runs=RUNS):
    samples = []
    for _ in range(runs):
        start = time.perf_counter()
        fn()
        samples.append(time.perf_counter() - start)
    return statistics.median(samples)


def measure(graph):
    node_sizes, edges, group_of, group_parent = graph
    everything = set(group_parent)
    # the module to open last: the biggest one (most nodes of its own), nearest the middle
    members, first = {}, {}
    for i, node in enumerate(node_sizes):
        group = group_of[node]
        if group is not None:
            members[group] = members.get(group, 0) + 1
            first.setdefault(group, i)
    middle = max(members, key=lambda g: (members[g], -abs(first[g] - len(node_sizes) / 2)), default=None)
    row = {"nodes": len(node_sizes), "edges": len(edges), "groups": len(group_parent)}
    if group_parent:
        row["collapsed"] = median_seconds(
            lambda: GraphLayout(node_sizes, edges, group_of, group_parent).place(set()))
    row["expanded"] = median_seconds(
        lambda: GraphLayout(node_sizes, edges, group_of, group_parent).place(everything))
    if middle is not None:
        samples = []
        for _ in range(RUNS):
            layout = GraphLayout(node_sizes, edges, group_of, group_parent)
            layout.place(everything - {middle})
            start = time.perf_counter()
            layout.place(everything)
            samples.append(time.perf_counter() - start)
        row["expand one"] = statistics.median(samples)
        row["opened"] = middle
    return row


def main():
    print(f"python {platform.python_version()}, {os.cpu_count()} cpus; median of {RUNS} runs, seconds")
    rows = {
        "transformer, 12 layers": measure(transformer()),
        "deep MLP, 333 blocks": measure(deep_mlp()),
        "transformer, no groups": measure(transformer(grouped=False)),
    }
    print(f"\n{'graph':24s} {'nodes':>6s} {'edges':>6s} {'groups':>6s} "
          f"{'collapsed':>10s} {'expanded':>9s} {'expand one':>11s}")
    for name, r in rows.items():
        def cell(k, width):
            return f"{r[k]:{width}.3f}" if k in r else f"{'-':>{width}s}"

        print(f"{name:24s} {r['nodes']:6d} {r['edges']:6d} {r['groups']:6d} "
              f"{cell('collapsed', 10)} {cell('expanded', 9)} {cell('expand one', 11)}")
    print("\ncollapsed: first place() with the top-level groups shown as boxes; expanded: every "
          "group open;\nexpand one: open one module after a full layout of the rest "
          f"({rows['transformer, 12 layers'].get('opened')} for the transformer).")


if __name__ == "__main__":
    main()
