"""Random programs, compiled from their recorded backend calls, give eager's numbers bit for bit (numpy).

Each program is a short random straight-line function of an input and a few parameters, drawn from a
palette of ops (elementwise, broadcasting, matmul, reductions, views, in-place writes, softmax). It is
run as a ``gl.compile.make_step`` and eagerly on a twin model, on fresh inputs every call: the first
call traces, the later ones run the program, whose buffers, in-place chains and fused kernels must
change no bit of any loss, gradient or (with an optimizer) parameter.
"""

from __future__ import annotations

import copy
import warnings

import numpy as np
import pytest

import gradlab as gl
from helpers import assert_same_bits, device_marks

nn, F = gl.nn, gl.nn.functional
ROWS, COLS = 4, 5

UNARY = {
    "neg": lambda a: -a, "exp∘tanh": lambda a: a.tanh().exp(), "tanh": lambda a: a.tanh(),
    "sigmoid": lambda a: a.sigmoid(), "relu": F.relu, "gelu": F.gelu, "silu": F.silu, "abs": lambda a: a.abs(),
    "square": lambda a: a * a, "clamp": lambda a: a.clamp(-0.5, 0.5), "softmax": lambda a: a.softmax(-1),
    "log_softmax": lambda a: F.log_softmax(a, -1), "scale": lambda a: a * 2.5, "shift": lambda a: a + 1,
    "rsub": lambda a: 3 - a, "half": lambda a: a / 2, "leaky": lambda a: F.leaky_relu(a, 0.1),
    "cumsum": lambda a: a.cumsum(1), "flip": lambda a: a.flip(1), "roll": lambda a: a.roll(1, 1),
    "reshaped": lambda a: a.reshape(COLS, ROWS).t().t().reshape(ROWS, COLS),
    "transposed twice": lambda a: a.t().contiguous().t(), "sliced": lambda a: gl.cat([a[:, :2], a[:, 2:]], 1),
    "row sum": lambda a: a.sum(1, keepdim=True), "col mean": lambda a: a.mean(0, keepdim=True),
    "row max": lambda a: a.amax(1, keepdim=True), "layer_norm": lambda a: F.layer_norm(a, (COLS,)),
}
BINARY = {
    "add": lambda a, b: a + b, "sub": lambda a, b: a - b, "mul": lambda a, b: a * b,
    "safe div": lambda a, b: a / (b * b + 1), "maximum": gl.maximum, "where": lambda a, b: gl.where(a > b, a, b),
}


def _in_place(a, b):
    """A value of the program's own, written in place (an add into a clone, then a scale)."""
    c = (a + b).clone()
    c.add_(b)
    c.mul_(0.5)
    return c


class RandomProgram(nn.Module):
    """``steps`` random ops over a pool of values: the input, earlier results and three parameters."""

    def __init__(self, seed, steps=8):
        super().__init__()
        rng = np.random.default_rng(seed)
        self.w = nn.Parameter(gl.tensor(rng.standard_normal((COLS, COLS)) * 0.5))
        self.p = nn.Parameter(gl.tensor(rng.standard_normal((ROWS, COLS))))
        self.b = nn.Parameter(gl.tensor(rng.standard_normal(COLS)))
        kinds = ["unary"] * 5 + ["binary"] * 4 + ["matmul", "param", "in place"]
        self.program = []
        for _ in range(steps):
            kind = kinds[rng.integers(len(kinds))]
            name = (list(UNARY)[rng.integers(len(UNARY))] if kind == "unary" else
                    list(BINARY)[rng.integers(len(BINARY))] if kind in ("binary", "param") else kind)
            self.program.append((kind, name, int(rng.integers(1 << 30)), int(rng.integers(1 << 30))))

    def forward(self, x):
        pool = [x]
        for kind, name, i, j in self.program:
            a, c = pool[i % len(pool)], pool[j % len(pool)]
            if kind == "unary":
                pool.append(UNARY[name](a))
            elif kind == "binary":
                pool.append(BINARY[name](a, c))
            elif kind == "param":
                pool.append(BINARY[name](a, self.p if i % 2 else self.b))
            elif kind == "matmul":
                pool.append((a + 0 * self.p) @ self.w if a.shape != (ROWS, COLS) else a @ self.w)
            else:
                pool.append(_in_place(a, c))
        return sum(pool[1:], pool[0] * self.b)  # every value reaches the loss


def _weighted(out, y):
    return (out * y).sum()


SEEDS = ([pytest.param(seed, "cpu", id=f"numpy-{seed}") for seed in range(60)]
         + [pytest.param(seed, "numba", id=f"numba-{seed}", marks=device_marks("numba")) for seed in range(8)])


@pytest.mark.parametrize("seed", [pytest.param(seed, marks=device_marks("mlx")) for seed in range(8)])
def test_a_random_program_on_mlx_runs_through_mx_compile_with_eagers_numbers(seed):
    """MLX's program is one pure function for mx.compile, which may fuse its steps: equal to float32's rounding."""
    gl.manual_seed(seed)
    model = RandomProgram(seed).float().to("mlx")
    twin = copy.deepcopy(model)
    step = gl.compile.make_step(twin, _weighted)
    rng = np.random.default_rng(1000 + seed)
    for _ in range(3):
        x, y = (gl.tensor(rng.standard_normal((ROWS, COLS)), dtype=gl.float32, device="mlx") for _ in range(2))
        model.zero_grad()
        twin.zero_grad()
        want = _weighted(model(x), y)
        want.backward()
        got = step(x, y)
        np.testing.assert_allclose(got.item(), want.item(), rtol=1e-5, atol=1e-5)
        for p, q in zip(model.parameters(), twin.parameters()):
            assert (p.grad is None) == (q.grad is None)
            if p.grad is not None:
                np.testing.assert_allclose(q.grad.cpu().numpy(), p.grad.cpu().numpy(), rtol=1e-4, atol=1e-5)
    (compiled,) = step.cache.values()
    assert step.fallback is None and compiled.program.instrs


# (slow: without a GPU, numba's CUDA simulator runs a Python thread per GPU thread)
@pytest.mark.parametrize("seed", [pytest.param(seed, marks=device_marks("cuda", slow=True)) for seed in range(2)])
def test_a_random_program_on_cuda_runs_its_recorded_calls_on_device_arrays(seed):
    gl.manual_seed(seed)
    model = RandomProgram(seed, steps=5).float().to("cuda")
    twin = copy.deepcopy(model)
    step = gl.compile.make_step(twin, _weighted)
    rng = np.random.default_rng(seed)
    for _ in range(3):
        x, y = (gl.tensor(rng.standard_normal((ROWS, COLS)), dtype=gl.float32, device="cuda") for _ in range(2))
        model.zero_grad()
        twin.zero_grad()
        want = _weighted(model(x), y)
        want.backward()
        assert_same_bits(step(x, y).cpu().numpy(), want.detach().cpu().numpy(), "the loss")
        for p, q in zip(model.parameters(), twin.parameters()):
            assert (p.grad is None) == (q.grad is None)
            if p.grad is not None:  # the same kernels in the same order: the same bits
                assert_same_bits(q.grad.cpu().numpy(), p.grad.cpu().numpy(), "a gradient")
    (compiled,) = step.cache.values()
    assert step.fallback is None and compiled.program.instrs


@pytest.mark.parametrize("seed, device", SEEDS)
def test_a_random_program_compiles_to_eagers_bits(seed, device):
    gl.manual_seed(seed)
    model = RandomProgram(seed).double().to(device)
    twin = copy.deepcopy(model)
    with_optimizer = seed % 2 == 1
    opt = gl.optim.SGD(model.parameters(), lr=0.05, momentum=0.9) if with_optimizer else None
    twin_opt = gl.optim.SGD(twin.parameters(), lr=0.05, momentum=0.9) if with_optimizer else None
    step = gl.compile.make_step(twin, _weighted, optimizer=twin_opt)
    rng = np.random.default_rng(1000 + seed)
    with warnings.catch_warnings():
        warnings.simplefilter("error", gl.compile.CompileWarning)
        for call in range(4):
            x = gl.tensor(rng.standard_normal((ROWS, COLS)), device=device)
            y = gl.tensor(rng.standard_normal((ROWS, COLS)), device=device)
            if opt is not None:
                opt.zero_grad()
            else:
                model.zero_grad()
                twin.zero_grad()
            want = _weighted(model(x), y)
            want.backward()
            if opt is not None:
                opt.step()
            got = step(x, y)
            assert_same_bits(got.numpy(), want.detach().numpy(), f"call {call}: the loss")
            for (name, p), q in zip(model.named_parameters(), twin.parameters()):
                assert (p.grad is None) == (q.grad is None), f"call {call}: {name}.grad"
                if p.grad is not None:
                    assert_same_bits(q.grad.numpy(), p.grad.numpy(), f"call {call}: {name}.grad")
                assert_same_bits(q.detach().numpy(), p.detach().numpy(), f"call {call}: {name}")
    (compiled,) = step.cache.values()
    assert step.traces == 1 and step.fallback is None


def test_gradients_accumulate_across_calls_without_an_optimizer():
    model = RandomProgram(7).double()
    twin = copy.deepcopy(model)
    step = gl.compile.make_step(twin, _weighted)
    rng = np.random.default_rng(0)
    for _ in range(3):  # no zero_grad: each call adds into .grad, as backward does
        x, y = gl.tensor(rng.standard_normal((ROWS, COLS))), gl.tensor(rng.standard_normal((ROWS, COLS)))
        _weighted(model(x), y).backward()
        step(x, y)
    for (name, p), q in zip(model.named_parameters(), twin.parameters()):
        assert (p.grad is None) == (q.grad is None), name
        if p.grad is not None:
            assert_same_bits(q.grad.numpy(), p.grad.numpy(), name)


def test_a_custom_function_compiles_from_its_calls_with_no_rule():
    class Cube(gl.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            return x * x * x

        @staticmethod
        def backward(ctx, g):
            (x,) = ctx.saved_tensors
            return g * 3 * x * x

    model = nn.Linear(COLS, COLS).double()
    twin = copy.deepcopy(model)
    step = gl.compile.make_step(twin, lambda out, y: (Cube.apply(out) * y).sum())
    rng = np.random.default_rng(3)
    for _ in range(3):
        x, y = gl.tensor(rng.standard_normal((ROWS, COLS))), gl.tensor(rng.standard_normal((ROWS, COLS)))
        model.zero_grad()
        twin.zero_grad()
        (Cube.apply(model(x)) * y).sum().backward()
        step(x, y)
        for p, q in zip(model.parameters(), twin.parameters()):
            assert_same_bits(q.grad.numpy(), p.grad.numpy(), "grad")
    (compiled,) = step.cache.values()
    names = [ins.name for ins in compiled.program.instrs]
    assert "matmul" in names and not any("Cube" in n for n in names)
    steps = [i for ins in compiled.program.instrs for i in getattr(ins.fn, "instrs", None) or (ins,)]  # fused runs opened
    assert any(ins.op is not None and ins.op.name == "Cube" for ins in steps)  # each call linked back to its op
    assert "Cube" in compiled.program.listing()


class Scaled(nn.Module):
    """max_pool1d(x · s): max-pooling asks whether a window holds a NaN (a host read) on every call."""

    def __init__(self):
        super().__init__()
        self.s = nn.Parameter(gl.ones(1, dtype=gl.float64))

    def forward(self, x):
        return F.max_pool1d(x * self.s, 2)


def test_a_host_read_is_a_guard_and_a_value_check_runs_every_time():
    model = nn.Embedding(10, COLS).double()
    step = gl.compile.make_step(model, lambda out, y: (out * y).sum())
    y = gl.ones(3, COLS, dtype=gl.float64)
    step(gl.tensor([1, 2, 3]), y)
    step(gl.tensor([4, 5, 6]), y)
    (compiled,) = step.cache.values()
    assert any(ins.name.startswith("check") for ins in compiled.program.instrs)
    with pytest.raises(IndexError, match="index out of range in self: index 12"):  # checked by the program's run
        step(gl.tensor([1, 12, 3]), y)
    assert step.fallback is None

    pooled = gl.compile.make_step(Scaled(), lambda out, y: out.sum())
    x, unused = gl.randn(1, 2, 6, dtype=gl.float64), gl.zeros(1)
    pooled(x, unused)
    pooled(x, unused)
    assert pooled.fallback is None and any(ins.name.startswith("guard") for ins in
                                           next(iter(pooled.cache.values())).program.instrs)
    with pytest.warns(gl.compile.CompileWarning, match="read back to the host"):
        loss = pooled(gl.tensor([[[1.0, float("nan"), 2.0, 3.0, 4.0, 5.0]] * 2], dtype=gl.float64), unused)
    assert np.isnan(loss.item())  # eager's answer: max-pooling passes the NaN on


def test_one_array_given_as_two_inputs_is_another_signature():
    model = nn.Linear(COLS, COLS).double()
    twin = copy.deepcopy(model)
    step = gl.compile.make_step(twin, _weighted)
    x = gl.randn(ROWS, COLS, dtype=gl.float64)
    step(x, x)
    step(x, x)
    a, b = gl.randn(ROWS, COLS, dtype=gl.float64), gl.randn(ROWS, COLS, dtype=gl.float64)
    twin.zero_grad()
    got = step(a, b)  # the program traced for step(x, x) read one array for both: this one must not
    assert got.item() == _weighted(model(a), b).item() and len(step.cache) == 2


@pytest.mark.parametrize("layer", [pytest.param("batch norm", marks=device_marks("mlx")), pytest.param("dropout", marks=device_marks("mlx"))])
def test_on_mlx_a_step_that_writes_a_buffer_or_draws_runs_call_by_call_as_eager(layer):
    """mx.compile traces one pure function once: a running statistic written inside it would stay there, a
    random draw would be frozen. Such a program runs call by call instead, with eager's numbers."""
    gl.manual_seed(0)
    middle = nn.BatchNorm1d(8) if layer == "batch norm" else nn.Dropout(0.5)
    eager = nn.Sequential(nn.Linear(6, 8), middle, nn.Linear(8, 3)).to("mlx")
    model = copy.deepcopy(eager)
    step = gl.compile.make_step(model, _weighted)
    x, y = gl.randn(5, 6, device="mlx"), gl.randn(5, 3, device="mlx")
    for seed in range(3):
        eager.zero_grad()
        model.zero_grad()
        gl.manual_seed(seed)
        _weighted(eager(x), y).backward()
        gl.manual_seed(seed)
        step(x, y)
        for p, q in zip(eager.parameters(), model.parameters()):
            np.testing.assert_allclose(q.grad.cpu().numpy(), p.grad.cpu().numpy(), rtol=1e-5, atol=1e-6)
        for a, b in zip(eager.buffers(), model.buffers()):
            np.testing.assert_allclose(b.cpu().numpy(), a.cpu().numpy(), rtol=1e-6, atol=1e-7)
    (compiled,) = step.cache.values()
    assert step.fallback is None and compiled.program.instrs
    assert compiled.program.impure.startswith("setitem" if layer == "batch norm" else "random_uniform")


@pytest.mark.parametrize("segments", [2, 3, "auto"])
def test_segments_compile_each_piece_from_its_record_with_eagers_bits(segments):
    """Each piece of a Sequential records its own forward and its backward from the next piece's gradient;
    run again during backward, the same calls give the same bits."""
    gl.manual_seed(0)
    model = nn.Sequential(nn.Linear(COLS, 16), nn.Tanh(), nn.Linear(16, 16), nn.GELU(), nn.Linear(16, COLS)).double()
    twin = copy.deepcopy(model)
    opt = gl.optim.Adam(model.parameters(), lr=0.01)
    step = gl.compile.make_step(twin, _weighted, optimizer=gl.optim.Adam(twin.parameters(), lr=0.01), segments=segments)
    rng = np.random.default_rng(5)
    for call in range(4):
        x, y = gl.tensor(rng.standard_normal((ROWS, COLS))), gl.tensor(rng.standard_normal((ROWS, COLS)))
        opt.zero_grad()
        want = _weighted(model(x), y)
        want.backward()
        opt.step()
        assert_same_bits(step(x, y).numpy(), want.detach().numpy(), f"call {call}: the loss")
        for (name, p), q in zip(model.named_parameters(), twin.parameters()):
            assert_same_bits(q.detach().numpy(), p.detach().numpy(), f"call {call}: {name}")
    (compiled,) = step.cache.values()
    assert step.fallback is None
    if step.segments > 1:  # ("auto" may find one program fastest here)
        assert isinstance(compiled, gl.compile.segments.Pieces), type(compiled).__name__
        assert len(compiled.forwards) == len(compiled.backwards) == step.segments - 1


class _WritesIntoZeros(nn.Module):
    """Makes a zeros array each call and writes into it: it must be made afresh every run, not kept."""

    def __init__(self):
        super().__init__()
        self.w = nn.Parameter(gl.tensor(np.linspace(-1, 1, COLS)))

    def forward(self, x):
        buf = gl.zeros(ROWS, COLS, dtype=gl.float64)
        buf[0] = x[0]
        buf.add_(x.detach())
        return (buf * self.w).sigmoid() + self.w.sum()


def test_an_array_filled_from_nothing_is_a_constant_unless_something_writes_into_it():
    model = _WritesIntoZeros()
    twin = copy.deepcopy(model)
    step = gl.compile.make_step(twin, _weighted)
    rng = np.random.default_rng(11)
    for call in range(3):
        x, y = gl.tensor(rng.standard_normal((ROWS, COLS))), gl.tensor(rng.standard_normal((ROWS, COLS)))
        model.zero_grad()
        twin.zero_grad()
        want = _weighted(model(x), y)
        want.backward()
        assert_same_bits(step(x, y).numpy(), want.detach().numpy(), f"call {call}: the loss")
        assert_same_bits(twin.w.grad.numpy(), model.w.grad.numpy(), f"call {call}: w.grad")
        twin.w.grad.mul_(0)  # the user writes into .grad: no constant of the program may change with it
    (compiled,) = step.cache.values()
    program = compiled.program
    names = [ins.name for ins in program.instrs]
    assert "zeros" in names  # written into (setitem, iadd): made every run
    assert "full" not in names and "ones" not in names and program.constants  # sigmoid's 1 - y, the seed: made once


@pytest.mark.parametrize("device", [pytest.param("cpu", id="numpy"), pytest.param("numba", marks=device_marks("numba")),
                                    pytest.param("mlx", marks=device_marks("mlx")),
                                    pytest.param("cuda", marks=device_marks("cuda", slow=True))])  # (the simulator)
def test_a_compiled_forward_runs_its_record_and_gives_back_the_results_shape(device):
    """gl.compile(fn): the forward's calls recorded once under no_grad; every tensor of a nested result comes back
    in its place, with eager's numbers (bit for bit where the backend is numpy's)."""
    gl.manual_seed(0)
    model = nn.Sequential(nn.Linear(6, 8), nn.GELU(), nn.LayerNorm(8), nn.Linear(8, 3)).to(device).eval()
    fast = gl.compile(lambda x: (model(x), {"sum": model(x).sum(), "x": x}, "a label"))
    with warnings.catch_warnings():
        warnings.simplefilter("error", gl.compile.CompileWarning)
        for call in range(3):
            x = gl.randn(4, 6).to(device)
            out, extras, label = fast(x)
            with gl.no_grad():
                want = model(x)
            same = assert_same_bits if device in ("cpu", "numba") else lambda a, b, what: np.testing.assert_allclose(a, b, 1e-5, 1e-6)
            same(out.cpu().numpy(), want.cpu().numpy(), f"call {call}: the output")
            same(extras["sum"].cpu().numpy(), want.sum().cpu().numpy(), f"call {call}: the sum")
            assert extras["x"].cpu().numpy().tolist() == x.cpu().numpy().tolist() and label == "a label"
            assert out.grad_fn is None and out.device == x.device
    assert fast.traces == 1 and fast.fallback is None and len(fast.cache) == 1


class _MatmulInto(gl.autograd.Function):
    """x @ w whose backward writes w's gradient with matmul_into (its out is the last argument), as attention's does."""

    @staticmethod
    def forward(ctx, x, w):
        ctx.save_for_backward(x, w)
        return x @ w

    @staticmethod
    def backward(ctx, g):
        x, w = ctx.saved_tensors
        b = g.device.backend
        out = b.empty(tuple(w.shape), gl.float64)
        b.matmul_into(b.permute(x.array, (1, 0)), g.array, out)
        return g @ w.t(), g._wrap(out)


def test_a_gradient_written_by_matmul_into_is_final_only_after_that_write():
    """w's .grad is the array matmul_into wrote: its update must come after that write, not after the empty()."""
    model = nn.Linear(COLS, COLS, bias=False).double()
    twin = copy.deepcopy(model)
    w = nn.Parameter(gl.randn(COLS, COLS, dtype=gl.float64))
    eager_w = nn.Parameter(w.detach().clone())
    step = gl.compile.make_step(twin, lambda out, y: (_MatmulInto.apply(out, w) * y).sum(),
                                optimizer=gl.optim.SGD(list(twin.parameters()) + [w], lr=0.1, momentum=0.9))
    opt = gl.optim.SGD(list(model.parameters()) + [eager_w], lr=0.1, momentum=0.9)
    rng = np.random.default_rng(4)
    for call in range(4):
        x, y = gl.tensor(rng.standard_normal((ROWS, COLS))), gl.tensor(rng.standard_normal((ROWS, COLS)))
        opt.zero_grad()
        want = (_MatmulInto.apply(model(x), eager_w) * y).sum()
        want.backward()
        opt.step()
        assert_same_bits(step(x, y).numpy(), want.detach().numpy(), f"call {call}: the loss")
        assert_same_bits(w.grad.numpy(), eager_w.grad.numpy(), f"call {call}: w.grad")
        assert_same_bits(w.detach().numpy(), eager_w.detach().numpy(), f"call {call}: w")
    assert step.fallback is None
