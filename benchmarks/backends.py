"""Every available backend against the numpy backend, as ratios measured in one run.

Through gradlab's ops (forward + backward where it says so): matmul 1024², conv2d, softmax,
log_softmax, cross-entropy, layer norm and GELU at 4096×1024, the spiral MLP's and the digits CNN's
training steps (the models of examples/). Then the fused kernels themselves, called on the backends'
arrays (forward + backward kernel), so the figures exist whether or not an op routes through them.
Backends that do not load here (numba, mlx, cuda without their package or device) are listed with
the reason. Compile time (numba's first call of each kernel) is measured on its own, before timing.

    python benchmarks/backends.py            # all of it
    python benchmarks/backends.py --quick    # fewer repeats
    python benchmarks/backends.py --threshold  # where numba's parallel loops start to pay
"""

from __future__ import annotations

import argparse
import os
import sys
import time

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))
sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "examples"))
sys.path.insert(0, os.path.dirname(__file__))

import gradlab as gl  # noqa: E402
import gradlab.nn.functional as F  # noqa: E402
from _timing import interleaved  # noqa: E402

ROWS, COLS = 4096, 1024
CANDIDATES = ("cpu", "numba", "mlx", "cuda")


def available_backends():
    """The devices whose backend loads, and for the others the reason (the RuntimeError's message)."""
    found, missing = [], {}
    for name in CANDIDATES:
        try:
            device = gl.device(name)
            device.backend  # noqa: B018 (loads it: the clear RuntimeError names the missing extra)
            gl.tensor([1.0], device=device).sum().item()
            found.append(name)
        except RuntimeError as error:
            missing[name] = str(error).split("\n")[0]
    return found, missing


def sync(t):
    t.device.backend.synchronize()
    return t


def moved(model, device):
    """The model's parameters on ``device`` (the same values: one seed builds every copy)."""
    for p in model.parameters():
        p.data = gl.tensor(p.detach().numpy(), device=device)
    return model


# --- the cases through gradlab's ops ------------------------------------------------------------------

def op_cases(device, rng):
    def t(array, grad=False):
        return gl.tensor(array, device=device, requires_grad=grad)

    x_np = rng.standard_normal((ROWS, COLS)).astype(np.float32)
    g = t(rng.standard_normal((ROWS, COLS)).astype(np.float32))
    a, b = t(rng.standard_normal((1024, 1024)).astype(np.float32)), t(rng.standard_normal((1024, 1024)).astype(np.float32))
    target = gl.tensor(rng.integers(0, COLS, ROWS), device=device)
    weight, bias = t(rng.standard_normal(COLS).astype(np.float32), True), t(rng.standard_normal(COLS).astype(np.float32), True)
    images = t(rng.standard_normal((32, 16, 32, 32)).astype(np.float32), True)
    filters = t(rng.standard_normal((32, 16, 3, 3)).astype(np.float32) * 0.1, True)
    conv_grad = t(rng.standard_normal((32, 32, 32, 32)).astype(np.float32))

    def fwd_bwd(f):
        def run():
            x = t(x_np, True)
            f(x).backward(g)
            sync(x.grad)
        return run

    def conv():
        images.grad = filters.grad = None
        F.conv2d(images, filters, padding=1).backward(conv_grad)
        sync(filters.grad)

    def ce():
        x = t(x_np, True)
        F.cross_entropy(x, target).backward()
        sync(x.grad)

    return {
        "matmul 1024² (forward)": lambda: sync(a @ b),
        "conv2d 32×16×32×32, 3×3→32, fwd+bwd": conv,
        "softmax fwd+bwd": fwd_bwd(lambda x: x.softmax(1)),
        "log_softmax fwd+bwd": fwd_bwd(lambda x: x.log_softmax(1)),
        "cross_entropy fwd+bwd": ce,
        "layer_norm fwd+bwd": fwd_bwd(lambda x: F.layer_norm(x, (COLS,), weight, bias)),
        "gelu fwd+bwd": fwd_bwd(F.gelu),
        "spiral MLP step (Adam, batch 32)": training_step("mlp", device, rng),
        "digits CNN step (Adam, batch 64)": training_step("cnn", device, rng),
    }


def training_step(kind, device, rng):
    import digits_cnn
    import spiral_mlp

    gl.manual_seed(0)
    if kind == "mlp":
        model, x, y = spiral_mlp.build_model(), rng.standard_normal((32, 2)), rng.integers(0, 2, 32)
    else:
        model, x, y = digits_cnn.build_model(), rng.standard_normal((64, 1, 8, 8)), rng.integers(0, 10, 64)
    model = moved(model, device)
    optimizer = gl.optim.Adam(model.parameters(), lr=1e-3)
    xs, ys = gl.tensor(x.astype(np.float32), device=device), gl.tensor(y, device=device)

    def step():
        optimizer.zero_grad()
        loss = F.cross_entropy(model(xs), ys)
        loss.backward()
        optimizer.step()
        loss.item()

    return step


# --- the fused kernels on backend arrays -------------------------------------------------------------

def kernel_cases(backend, rng):
    """Forward + backward kernel pairs on (4096, 1024) float32 arrays. A backend without the kernel
    (the numpy backend before the fused kernels reach it) runs the composition its op uses instead."""
    x = rng.standard_normal((ROWS, COLS)).astype(np.float32)
    g = rng.standard_normal((ROWS, COLS)).astype(np.float32)
    w, bb = rng.standard_normal(COLS).astype(np.float32), rng.standard_normal(COLS).astype(np.float32)
    index = rng.integers(0, COLS, (ROWS, 1))
    scale = np.full((ROWS, 1), 1.0 / ROWS, np.float32)
    classes = backend.arange(0, COLS, 1, gl.int64)  # NllLoss.backward's class positions, (C,) for (N, C)
    has = {name: getattr(backend, name, None) for name in
           ("softmax_backward", "log_softmax_backward", "gelu", "gelu_backward", "layer_norm", "layer_norm_backward")}

    def softmax():
        y = backend.softmax(x, 1)
        if has["softmax_backward"]:
            return backend.softmax_backward(y, g, 1)
        return backend.mul(y, backend.sub(g, backend.sum(backend.mul(g, y), (1,), True)))

    def log_softmax():
        y = backend.log_softmax(x, 1)
        if has["log_softmax_backward"]:
            return backend.log_softmax_backward(y, g, 1)
        return backend.sub(g, backend.mul(backend.exp(y), backend.sum(g, (1,), True)))

    def cross_entropy():
        # what eager cross-entropy runs: log_softmax, then NllLoss's backward (−g/N at each row's target,
        # in NllLoss.backward's backend calls) and LogSoftmax's backward on that gradient
        logp = backend.log_softmax(x, 1)
        onehot = backend.astype(backend.eq(index, classes), gl.float32)
        grad_logp = backend.mul(onehot, backend.neg(scale))
        if has["log_softmax_backward"]:
            return backend.log_softmax_backward(logp, grad_logp, 1)
        return backend.sub(grad_logp, backend.mul(backend.exp(logp), backend.sum(grad_logp, (1,), True)))

    def gelu():
        if has["gelu"]:
            out, saved = backend.gelu(x, "none")
            return backend.gelu_backward(g, x, saved, "none")
        cdf = backend.ndtr(x)  # what Gelu.forward and its array backward do
        backend.mul(x, cdf)
        slope = backend.exp(backend.mul(backend.mul(x, x), -0.5))
        return backend.mul(backend.add(backend.mul(backend.mul(slope, x), 0.3989422804014327), cdf), g)

    def layer_norm():
        if has["layer_norm"]:
            out, saved = backend.layer_norm(x, w, bb, 1, 1e-5)
            return backend.layer_norm_backward(g, x, w, saved, 1, (True, True, True))
        mean = backend.mul(backend.sum(x, (1,), True), 1.0 / COLS)  # what Normalize does, in its backend calls
        xh = backend.sub(x, mean)
        inv = backend.div(1.0, backend.sqrt(backend.add(backend.mul(backend.sum(backend.mul(xh, xh), (1,), True),
                                                                    1.0 / COLS), 1e-5)))
        xh = backend.mul(xh, inv)
        backend.add(backend.mul(xh, w), bb)
        gy = backend.mul(g, w)
        mg = backend.mul(backend.sum(gy, (1,), True), 1.0 / COLS)
        mgx = backend.mul(backend.sum(backend.mul(gy, xh), (1,), True), 1.0 / COLS)
        backend.sum(backend.mul(g, xh), (0,)), backend.sum(g, (0,))
        return backend.mul(backend.sub(backend.sub(gy, mg), backend.mul(xh, mgx)), inv)

    return {
        "kernel: softmax + backward": softmax,
        "kernel: log_softmax + backward": log_softmax,
        "kernel: log_softmax + nll + backward": cross_entropy,
        "kernel: gelu + backward": gelu,
        "kernel: layer_norm + backward": layer_norm,
        "kernel: exp": lambda: backend.exp(x),
        "kernel: tanh": lambda: backend.tanh(x),
    }


# --- running and printing --------------------------------------------------------------------------

def timed_first_calls(cases):
    """Run each case once (numba compiles or loads its kernels here); seconds per case."""
    first = {}
    for name, fn in cases.items():
        start = time.perf_counter()
        fn()
        first[name] = time.perf_counter() - start
    return first


def table(title, results, devices, first):
    print(f"\n{title}")
    head = f"{'case':46s} {'numpy ms':>9s}" + "".join(f" {d + ' ms':>10s} {'× numpy':>8s}" for d in devices[1:])
    print(head)
    print("-" * len(head))
    for case, times in results.items():
        row = f"{case:46s} {times['cpu'] * 1e3:9.2f}"
        for d in devices[1:]:
            row += f" {times[d] * 1e3:10.2f} {times['cpu'] / times[d]:7.2f}×"
        print(row)
    slow = [f"{case} on {d}: {first[d][case]:.2f} s" for case in results for d in devices[1:]
            if case in first.get(d, {}) and first[d][case] > 0.2]
    if slow:
        print("first calls over 0.2 s (compiling or loading kernels, plus one run): " + "; ".join(slow))


def threshold_sweep(rounds, repeats):
    """Where numba's parallel loop starts to pay: its softmax kernel on two threads against its serial
    twin, and its exp against numpy's, over growing sizes (rows of 256 float32)."""
    from gradlab.backends import numba_kernels as K

    print("\nnumba's PARALLEL_MIN_SIZE: where the parallel kernel starts to pay (µs, median)")
    print(f"{'elements':>9s} {'softmax serial':>15s} {'parallel':>9s} {'exp numpy':>10s} {'numba':>7s}")
    for n in (1024, 4096, 16384, 32768, 65536, 262144):
        x = np.random.default_rng(0).standard_normal((n // 256, 256)).astype(np.float32)
        out = np.empty_like(x)
        flat, flat_out = x.reshape(-1), out.reshape(-1)
        t = interleaved({"serial": lambda: K.softmax_rows_serial(x, out), "parallel": lambda: K.softmax_rows(x, out),
                         "exp numpy": lambda: np.exp(x), "exp numba": lambda: K.map_exp(flat, flat_out)},
                        rounds=rounds, repeats=repeats * 20, warmup=3)
        print(f"{n:9d} {t['serial'] * 1e6:15.1f} {t['parallel'] * 1e6:9.1f} {t['exp numpy'] * 1e6:10.1f} "
              f"{t['exp numba'] * 1e6:7.1f}")


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true", help="fewer rounds and repeats")
    parser.add_argument("--threshold", action="store_true", help="only the sweep behind numba's PARALLEL_MIN_SIZE")
    args = parser.parse_args()
    rounds, repeats = (2, 3) if args.quick else (3, 5)
    if args.threshold:
        threshold_sweep(rounds, repeats)
        return
    devices, missing = available_backends()
    print(f"numpy {np.__version__}, {os.cpu_count()} cpus; backends: {', '.join(devices)}")
    for name, why in missing.items():
        print(f"  {name}: not measured ({why})")
    if "numba" in devices:
        import numba

        from gradlab.backends.numba_backend import NumbaBackend

        start = time.perf_counter()
        times = gl.device("numba").backend.warm_up()
        print(f"numba {numba.__version__}, threading layer {numba.threading_layer()}, "
              f"{numba.config.NUMBA_NUM_THREADS} threads: warm_up() compiled/loaded {len(times)} kernels in "
              f"{time.perf_counter() - start:.2f} s (slowest: " +
              ", ".join(f"{k} {v:.2f} s" for k, v in sorted(times.items(), key=lambda kv: -kv[1])[:3]) + ")")
        assert isinstance(gl.device("numba").backend, NumbaBackend)

    per_device = {d: op_cases(d, np.random.default_rng(0)) for d in devices}
    first = {d: timed_first_calls(cases) for d, cases in per_device.items()}
    results = {}
    for case in per_device["cpu"]:
        results[case] = interleaved({d: per_device[d][case] for d in devices}, rounds=rounds, repeats=repeats, warmup=1)
    table("through gradlab's ops, float32 (median ms; × numpy = numpy time / this backend's time)", results, devices,
          first)

    hosted = [d for d in devices if d in ("cpu", "numba")]
    kernels = {d: kernel_cases(gl.device(d).backend, np.random.default_rng(1)) for d in hosted}
    first_k = {d: timed_first_calls(cases) for d, cases in kernels.items()}
    results = {case: interleaved({d: kernels[d][case] for d in hosted}, rounds=rounds, repeats=repeats, warmup=1)
               for case in kernels["cpu"]}
    table(f"fused kernels on backend arrays, ({ROWS}, {COLS}) float32", results, hosted, first_k)


if __name__ == "__main__":
    main()
