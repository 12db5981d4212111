"""Training-step speed against PyTorch CPU, as ratios measured in one run.

1. MLP 784-256-256-10 (ReLU), cross-entropy, SGD step, batch 128.
2. CNN: Conv2d 1→16 and 16→32 (3×3, pad 1), ReLU, 2×2 max-pool after each, Linear to 10;
   cross-entropy, SGD step; input 64×1×28×28.
3. A pre-norm TransformerEncoderLayer, forward + backward: batch 16, 64 tokens, width 128,
   4 heads, MLP 512, GELU, dropout 0.

The same code builds both models (``lib`` is gradlab or torch), and the weights are copied from
the PyTorch model so both compute the same numbers. Run: python benchmarks/bench_training.py
"""

from __future__ import annotations

import os
import sys

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))
sys.path.insert(0, os.path.dirname(__file__))

import gradlab  # noqa: E402
from _timing import interleaved, print_against_torch, try_import_torch  # noqa: E402


def mlp(lib):
    nn = lib.nn
    return nn.Sequential(nn.Linear(784, 256), nn.ReLU(), nn.Linear(256, 256), nn.ReLU(), nn.Linear(256, 10))


def cnn(lib):
    nn = lib.nn
    return nn.Sequential(
        nn.Conv2d(1, 16, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
        nn.Conv2d(16, 32, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
        nn.Flatten(), nn.Linear(32 * 7 * 7, 10),
    )


def transformer(lib):
    return lib.nn.TransformerEncoderLayer(128, 4, dim_feedforward=512, dropout=0.0, activation="gelu",
                                          batch_first=True, norm_first=True)


def copy_weights(source, target):
    """Load the PyTorch model's weights into the gradlab model (the state dicts share names)."""
    state = {name: gradlab.tensor(value.detach().numpy()) for name, value in source.state_dict().items()}
    target.load_state_dict(state)


def training_step(lib, model, x, y, lr=0.01):
    optimizer = lib.optim.SGD(model.parameters(), lr=lr)

    def step():
        optimizer.zero_grad()
        loss = lib.nn.functional.cross_entropy(model(x), y)
        loss.backward()
        optimizer.step()

    return step


def forward_backward(model, x):
    def step():
        model.zero_grad()
        model(x).sum().backward()

    return step


def main():
    torch = try_import_torch()
    if torch is None:
        print("PyTorch is not installed: these benchmarks are ratios against it (pip install torch==2.13.0)")
        return
    print(f"numpy {np.__version__}, torch {torch.__version__}, {os.cpu_count()} cpus, torch threads {torch.get_num_threads()}")
    rng = np.random.default_rng(0)
    cases = {
        "MLP 784-256-256-10 SGD step, batch 128": (mlp, rng.standard_normal((128, 784)), rng.integers(0, 10, 128), "train"),
        "CNN SGD step, 64x1x28x28": (cnn, rng.standard_normal((64, 1, 28, 28)), rng.integers(0, 10, 64), "train"),
        "pre-norm transformer block fwd+bwd, 16x64x128": (transformer, rng.standard_normal((16, 64, 128)), None, "fwdbwd"),
    }
    for title, (build, x_np, y_np, kind) in cases.items():
        torch.manual_seed(0)
        torch_model = build(torch)
        gradlab_model = build(gradlab)
        copy_weights(torch_model, gradlab_model)
        xt, xg = torch.tensor(x_np, dtype=torch.float32), gradlab.tensor(x_np, dtype=gradlab.float32)
        if kind == "train":
            yt, yg = torch.tensor(y_np), gradlab.tensor(y_np)
            candidates = {"gradlab": training_step(gradlab, gradlab_model, xg, yg),
                          "torch": training_step(torch, torch_model, xt, yt)}
        else:
            candidates = {"gradlab": forward_backward(gradlab_model, xg), "torch": forward_backward(torch_model, xt)}
        times = interleaved(candidates, rounds=5, repeats=10, warmup=2)
        print_against_torch(title, times)


if __name__ == "__main__":
    main()
