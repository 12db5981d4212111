"""What ``gl.lab.record()`` adds to a PyTorch forward (the lab on PyTorch), beside what PyTorch's own
watching costs: a no-op ``TorchFunctionMode`` (what record() uses) and a no-op ``TorchDispatchMode``.

    python benchmarks/bench_lab_torch.py

The same two models as bench_lab.py, in plain ``torch.nn``: the spiral MLP (batch 32) and a pre-norm
transformer block 16×8×64. Each figure is a ratio to the plain forward, all measured in one run,
interleaved. One thread (``torch.set_num_threads(1)``): the machine's other cores are not ours.
"""

from __future__ import annotations

import torch
from torch.overrides import TorchFunctionMode
from torch.utils._python_dispatch import TorchDispatchMode

import gradlab as gl
from _timing import interleaved


class NoFunctionMode(TorchFunctionMode):
    def __torch_function__(self, func, types, args=(), kwargs=None):
        return func(*args, **(kwargs or {}))


class NoDispatchMode(TorchDispatchMode):
    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        return func(*args, **(kwargs or {}))


def mlp_forward():
    nn = torch.nn
    model = nn.Sequential(nn.Linear(2, 32), nn.ReLU(), nn.Linear(32, 32), nn.ReLU(), nn.Linear(32, 2))
    x, y = torch.randn(32, 2), torch.randint(0, 2, (32,))
    loss_fn = nn.CrossEntropyLoss()
    return lambda: loss_fn(model(x), y)


def transformer_forward():
    block = torch.nn.TransformerEncoderLayer(d_model=64, nhead=4, dim_feedforward=128, norm_first=True, dropout=0.0,
                                             batch_first=True)
    x = torch.randn(16, 8, 64)
    return lambda: block(x).sum()


def inside(context):
    def wrap(fn):
        def run():
            with context():
                return fn()
        return run
    return wrap


def main() -> None:
    torch.manual_seed(0)
    torch.set_num_threads(1)
    ways = {"record()": inside(gl.lab.record), "no-op TorchFunctionMode": inside(NoFunctionMode),
            "no-op TorchDispatchMode": inside(NoDispatchMode)}
    print("a PyTorch forward inside each / the plain forward (same run, interleaved):")
    for name, make in (("spiral MLP, batch 32", mlp_forward), ("pre-norm transformer block 16×8×64", transformer_forward)):
        fn = make()
        times = interleaved({"plain": fn, **{way: wrap(fn) for way, wrap in ways.items()}}, rounds=5, repeats=40)
        ratios = ", ".join(f"{way} {times[way] / times['plain']:.2f}×" for way in ways)
        print(f"  {name:36s} {ratios}  ({times['plain'] * 1e6:.0f} µs plain)")
    with gl.lab.record() as rec:
        transformer_forward()()
    print(f"\n(the block: {len(rec.torch.events)} torch calls kept, {len(rec.calls)} module calls)")


if __name__ == "__main__":
    main()
