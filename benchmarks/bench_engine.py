"""Engine overhead and large-matmul speed, as ratios measured in one run.

1. Per-op overhead: a chain of 100 adds of 16-element float32 tensors, forward + backward, in µs
   per op — gradlab, PyTorch CPU (if installed), and a bare autograd loop on numpy (the floor: the
   least any Python autograd on numpy can do).
2. A 1024×1024 float32 matmul, forward + backward: gradlab against the same three products in raw
   numpy, and against PyTorch.

Run: python benchmarks/bench_engine.py   (numbers vary run to run; read the ratios)
"""

from __future__ import annotations

import os
import platform
import sys

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))
sys.path.insert(0, os.path.dirname(__file__))

import gradlab as gl  # noqa: E402
from _timing import interleaved, try_import_torch  # noqa: E402

CHAIN = 100
SIZE = 16
N = 1024


def chain(lib):
    """y = x + w + w + ... (100 adds), then backward: almost all of the time is per-op overhead."""
    x = lib.ones(SIZE, requires_grad=True)
    w = lib.ones(SIZE, requires_grad=True)
    seed = lib.ones(SIZE)

    def run():
        y = x
        for _ in range(CHAIN):
            y = y + w
        y.backward(seed)
        x.grad = w.grad = None

    return run


class _BareNode:
    """The least an autograd can do: remember the parents, add gradients back in reverse."""

    __slots__ = ("value", "parents", "grad")

    def __init__(self, value, parents=()):
        self.value, self.parents, self.grad = value, parents, None


def bare_numpy_chain():
    x = _BareNode(np.ones(SIZE, np.float32))
    w = _BareNode(np.ones(SIZE, np.float32))
    seed = np.ones(SIZE, np.float32)

    def run():
        y = x
        tape = []
        for _ in range(CHAIN):
            y = _BareNode(np.add(y.value, w.value), (y, w))
            tape.append(y)
        y.grad = seed
        for node in reversed(tape):
            for parent in node.parents:
                parent.grad = node.grad if parent.grad is None else parent.grad + node.grad
        x.grad = w.grad = None

    return run


def matmul_candidates(torch):
    rng = np.random.default_rng(0)
    a_np = rng.standard_normal((N, N)).astype(np.float32)
    b_np = rng.standard_normal((N, N)).astype(np.float32)
    g_np = np.ones((N, N), np.float32)
    a = gl.tensor(a_np, requires_grad=True)
    b = gl.tensor(b_np, requires_grad=True)
    seed = gl.tensor(g_np)

    def gradlab_matmul():
        out = a @ b
        out.backward(seed)
        a.grad = b.grad = None

    def numpy_matmul():
        out = a_np @ b_np
        grad_a = g_np @ b_np.T
        grad_b = a_np.T @ g_np
        return out, grad_a, grad_b

    candidates = {"gradlab": gradlab_matmul, "numpy": numpy_matmul}
    if torch is not None:
        at = torch.tensor(a_np, requires_grad=True)
        bt = torch.tensor(b_np, requires_grad=True)
        gt = torch.tensor(g_np)

        def torch_matmul():
            out = at @ bt
            out.backward(gt)
            at.grad = bt.grad = None

        candidates["torch"] = torch_matmul
    return candidates


def main():
    torch = try_import_torch()
    print(f"python {platform.python_version()}, numpy {np.__version__}, "
          f"torch {torch.__version__ if torch else 'not installed'}, {os.cpu_count()} cpus")

    candidates = {"gradlab": chain(gl), "bare numpy autograd": bare_numpy_chain()}
    if torch is not None:
        candidates["torch"] = chain(torch)
    times = interleaved(candidates, rounds=5, repeats=20, warmup=3)
    print(f"\n1. chain of {CHAIN} adds of {SIZE}-element float32 tensors, forward + backward (µs per op)")
    for name, seconds in times.items():
        print(f"   {name:22s} {seconds / CHAIN * 1e6:7.2f} µs/op")
    if "torch" in times:
        print(f"   gradlab / torch = {times['gradlab'] / times['torch']:.2f}x")
    print(f"   gradlab / bare numpy autograd = {times['gradlab'] / times['bare numpy autograd']:.2f}x")

    times = interleaved(matmul_candidates(torch), rounds=3, repeats=5, warmup=1)
    print(f"\n2. {N}x{N} float32 matmul, forward + backward (ms)")
    for name, seconds in times.items():
        print(f"   {name:22s} {seconds * 1e3:7.2f} ms")
    print(f"   gradlab / numpy = {times['gradlab'] / times['numpy']:.3f}x")
    if "torch" in times:
        print(f"   gradlab / torch = {times['gradlab'] / times['torch']:.3f}x")


if __name__ == "__main__":
    main()
