"""gradlab's CUDA backend against PyTorch CUDA, as ratios measured in one run (the issue-8 GPU check).

The models of bench_training.py at GPU sizes: the MLP step at batch 512, the CNN step at batch 256,
and the pre-norm transformer block forward + backward at 32×128×256. Both libraries run on the same
GPU with the same weights; each timed step ends with a synchronize, so queued work is counted.
The goal the issue sets is ≤ 2× PyTorch CUDA.

    python benchmarks/gpu_vs_torch.py                  # on 'cuda' (needs a GPU, numba-cuda and torch's CUDA build)
    python benchmarks/gpu_vs_torch.py --device cpu --tiny   # a quick check of the script itself, anywhere
"""

from __future__ import annotations

import argparse
import os
import sys

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))
sys.path.insert(0, os.path.dirname(__file__))

import gradlab  # noqa: E402
from _timing import interleaved, print_against_torch, try_import_torch  # noqa: E402
from bench_training import cnn, copy_weights, forward_backward, mlp, training_step  # noqa: E402


def transformer(lib, width):
    return lib.nn.TransformerEncoderLayer(width, 4, dim_feedforward=4 * width, dropout=0.0, activation="gelu",
                                          batch_first=True, norm_first=True)


def synchronized(step, *syncs):
    def run():
        step()
        for sync in syncs:
            sync()

    return run


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--device", default="cuda", help="the device both libraries run on (default: cuda)")
    parser.add_argument("--tiny", action="store_true", help="small shapes and few repeats: checks the script runs")
    args = parser.parse_args()
    torch = try_import_torch()
    if torch is None:
        print("PyTorch is not installed: this benchmark is a ratio against it")
        return
    if args.device.startswith("cuda") and not torch.cuda.is_available():
        print("PyTorch has no CUDA here (its CPU build, or no GPU): nothing to compare against")
        return
    device = gradlab.device(args.device)  # raises gradlab's own message when the backend cannot load
    sync_gradlab = device.backend.synchronize
    sync_torch = torch.cuda.synchronize if args.device.startswith("cuda") else (lambda: None)
    batch, width, tokens = (16, 32, 8) if args.tiny else (512, 256, 128)
    rng = np.random.default_rng(0)
    cases = {
        f"MLP 784-256-256-10 SGD step, batch {batch}":
            (mlp, rng.standard_normal((batch, 784)), rng.integers(0, 10, batch), "train"),
        f"CNN SGD step, {batch // 2}x1x28x28":
            (cnn, rng.standard_normal((batch // 2, 1, 28, 28)), rng.integers(0, 10, batch // 2), "train"),
        f"pre-norm transformer block fwd+bwd, {batch // 16 or 1}x{tokens}x{width}":
            (lambda lib: transformer(lib, width), rng.standard_normal((batch // 16 or 1, tokens, width)), None, "fwdbwd"),
    }
    print(f"gradlab on {device} ({device.backend.name}), torch {torch.__version__} on {args.device}")
    for title, (build, x_np, y_np, kind) in cases.items():
        torch.manual_seed(0)
        torch_model, gradlab_model = build(torch), build(gradlab)
        copy_weights(torch_model, gradlab_model)
        torch_model.to(args.device)
        gradlab_model.to(device)
        xt = torch.tensor(x_np, dtype=torch.float32, device=args.device)
        xg = gradlab.tensor(x_np, dtype=gradlab.float32, device=device)
        if kind == "train":
            yt, yg = torch.tensor(y_np, device=args.device), gradlab.tensor(y_np, device=device)
            steps = {"gradlab": training_step(gradlab, gradlab_model, xg, yg),
                     "torch": training_step(torch, torch_model, xt, yt)}
        else:
            steps = {"gradlab": forward_backward(gradlab_model, xg), "torch": forward_backward(torch_model, xt)}
        candidates = {"gradlab": synchronized(steps["gradlab"], sync_gradlab),
                      "torch": synchronized(steps["torch"], sync_torch)}
        rounds, repeats = (1, 2) if args.tiny else (5, 10)
        times = interleaved(candidates, rounds=rounds, repeats=repeats, warmup=2)
        print_against_torch(title, times, "   (goal ≤ 2x)")


if __name__ == "__main__":
    main()
