"""Time one function on every device: the same work, copied to each device, warmed up and synchronised.

``compare_devices(fn, *args)`` copies the Modules and Tensors among ``args`` to each device, calls
``fn`` once on its own (numba compiles or loads its kernels there), warms up, then times ``repeats``
calls. Lazy and asynchronous devices (MLX records work and runs it later, CUDA queues kernels) are made
to finish everything the call produced or changed before the clock stops, or the clock would stop early.

``compare_devices(step, model, x, y, torch=(torch_step, torch_model, tx, ty))`` adds PyTorch's CPU (and CUDA)
rows: the same step written for torch, timed by the same clock with the same repeats and warm-up
(``pytorch/timing.py`` copies its arguments and waits for CUDA), so the table shows what the real
framework costs beside gradlab's devices.

``compare_compiled(model, loss_fn, x, y, optimizer=opt)`` times a training step twice on each device:
eager (``loss_fn(model(x), y).backward()`` and ``opt.step()``) and ``gl.compile.make_step`` on its own
copy of the model and optimizer; ``compare_compiled(model, None, x)`` times a forward, eager under
``no_grad`` against ``gl.compile(model)``. Each compiled row says how many times faster than eager it is,
and, when the step could not be compiled and ran eagerly, why.
"""

from __future__ import annotations

import dataclasses
import math
import statistics
import time
import warnings
from html import escape

from ..backends.device import Device, device_info, devices as known_devices, resolve_device
from ..nn.modules.module import Module
from ..tensor import Tensor
from .pytorch import is_torch
from .device_copy import copy_to_device as copy_between_devices

_clock = time.perf_counter  # one name, so a test can watch when the clock is read

LABELS = {"cpu": "cpu (numpy)"}  # how a device type reads in a table; the others read as their own name

SIMULATED = ("numba's CUDA simulator (NUMBA_ENABLE_CUDASIM=1): a Python thread per GPU thread, so its times "
             "mean nothing; not timed unless asked for by name (devices=[..., 'cuda'])")

NO_TORCH = "PyTorch is not installed: pip install torch"
TORCH_PREFIX = "torch:"  # a PyTorch row's device reads "torch:cpu", "torch:cuda"

MIXED_DEVICES_HINT = ("pass every model and tensor the function uses as an argument of compare_devices, so "
                      "that each device gets its own copy; objects the function reaches by name stay where they are")


@dataclasses.dataclass
class DeviceRow:
    """One device's result: available or the reason not, and when timed its median and spread.

    ``spread_s`` is the interquartile range of ``times`` (the middle half of the repeats lies within
    it); ``compile_s`` is the first call minus the median (numba compiles or loads its kernels there).
    """

    device: str
    available: bool
    reason: str = ""
    median_s: float | None = None
    spread_s: float | None = None
    speedup: float | None = None
    compile_s: float | None = None
    error: str = ""
    first_s: float | None = None
    repeats: int = 0  # how many timed repeats ran
    asked: int = 0  # how many were asked for (fewer ran when the time budget ran out)
    times: list = dataclasses.field(default_factory=list)
    note: str = ""
    variant: str = ""  # "eager" or "compiled" in compare_compiled's table, "" in compare_devices'
    vs_eager: float | None = None  # a compiled row: this device's eager median / this one
    fallback: str = ""  # a compiled row that ran eagerly: why (the CompileWarning's reason)

    @property
    def label(self) -> str:
        if self.device.startswith(TORCH_PREFIX):
            return "PyTorch " + self.device[len(TORCH_PREFIX):]
        kind = self.device.split(":")[0]
        return LABELS.get(kind, kind) + self.device[len(kind):]

    @property
    def timed(self) -> bool:
        return self.median_s is not None

    @property
    def quartiles(self) -> tuple:
        """(first, third) quartile of the repeats: the ends of the spread whisker."""
        if len(self.times) < 2:
            return (self.median_s, self.median_s)
        q1, _, q3 = statistics.quantiles(self.times, n=4, method="inclusive")
        return (q1, q3)

    @property
    def status(self) -> str:
        """What this row says when it holds no time: the reason, the error, or how many repeats ran."""
        if not self.available:
            return self.reason
        if self.error:
            return self.error
        if self.fallback:
            return f"not compiled, ran eagerly: {self.fallback}"
        if not self.timed:
            return "waiting to be timed"
        if self.repeats < self.asked:
            return f"{self.repeats} of {self.asked} repeats (the time budget ran out)"
        return f"{self.repeats} repeats"

    def to_dict(self) -> dict:
        return {**dataclasses.asdict(self), "label": self.label, "status": self.status,
                "quartiles": list(self.quartiles)}


class DeviceTimes(list):
    """compare_devices' table: a list of DeviceRow, one per device, with what was measured.

    ``table["mlx"]`` finds a row by device; ``print(table)`` and a notebook show it as a table.
    """

    def __init__(self, rows=(), measured: str = ""):
        super().__init__(rows)
        self.measured = measured

    def __getitem__(self, key):
        if isinstance(key, tuple) and len(key) == 2 and all(isinstance(k, str) for k in key):
            device, variant = key  # table["cpu", "compiled"]
            for row in self:
                if (row.device == device or row.device.split(":")[0] == device) and row.variant == variant:
                    return row
            raise KeyError(f"no {variant!r} row for device {device!r}; the rows are "
                           f"{', '.join(f'{r.device} {r.variant}'.strip() for r in self)}")
        if isinstance(key, str):
            for row in self:
                if row.device == key or row.device.split(":")[0] == key:
                    return row
            raise KeyError(f"no row for device {key!r}; the rows are {', '.join(r.device for r in self)}")
        return super().__getitem__(key)

    def columns(self) -> list:
        """Each row as the cells a table shows: device, median, spread, × numpy, compile, status (and,
        comparing compiled with eager, the variant and × eager)."""
        if not self.has_variants:
            return [[row.label, _ms(row.median_s), _ms(row.spread_s), _ratio(row.speedup), _ms(row.compile_s),
                     row.status] for row in self]
        return [[row.label, row.variant, _ms(row.median_s), _ms(row.spread_s), _ratio(row.vs_eager),
                 _ratio(row.speedup), _ms(row.compile_s), row.status] for row in self]

    HEAD = ("device", "median", "spread (IQR)", "× numpy", "compile", "")
    VARIANT_HEAD = ("device", "", "median", "spread (IQR)", "× eager", "× numpy", "first call extra", "")

    @property
    def has_variants(self) -> bool:
        return any(row.variant for row in self)

    def head(self) -> tuple:
        return self.VARIANT_HEAD if self.has_variants else self.HEAD

    def notes(self) -> list:
        """What is worth knowing about a device beyond its figures (MLX on the CPU, CUDA simulated)."""
        return list(dict.fromkeys(f"{row.label}: {row.note}" for row in self if row.note and row.available))

    def __str__(self):
        head = self.head()
        cells = [list(head)] + self.columns()
        widths = [max(len(line[i]) for line in cells) for i in range(len(head) - 1)]
        lines = ["  ".join(c.ljust(w) for c, w in zip(line[:-1], widths)) + "  " + line[-1] for line in cells]
        return "\n".join([self.measured, *lines, *self.notes()])

    def __repr__(self):
        return str(self)

    def _repr_html_(self):
        head = "".join(f"<th>{escape(h)}</th>" for h in self.head())
        body = "".join("<tr>" + "".join(f"<td>{escape(c)}</td>" for c in line) + "</tr>" for line in self.columns())
        notes = "".join(f"<p>{escape(note)}</p>" for note in self.notes())
        return (f"<div class='gl-device-table'><p>{escape(self.measured)}</p>"
                f"<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>{notes}</div>")


def compare_devices(fn, *args, devices=None, repeats: int = 25, warmup: int = 2, budget_s: float | None = 2.0,
                    on_update=None, torch=None) -> DeviceTimes:
    """Time ``fn(*args)`` on each device: a table of rows (device, available, reason, median_s,
    spread_s, speedup over numpy, compile_s, error, repeats run and every time).

    ``torch=(torch_fn, *torch_args)`` adds a row for PyTorch's CPU and one for its CUDA (with the reason
    when there is none): the same work written for torch, its models and tensors copied to each torch
    device as gradlab's are, timed with the same repeats, warm-up and budget; × numpy compares it with
    gradlab's numpy row too.

    ``devices`` defaults to every device type gradlab knows; one that cannot load gets a row with the
    reason. Modules and Tensors among ``args`` (also inside lists, tuples and dicts) are copied to
    each device; the caller's own are never moved. ``budget_s`` bounds the warm-up and repeats of one
    device (the first call always runs). ``on_update(table)`` is called with the rows before timing
    starts and again as each device finishes.
    """
    if not callable(fn):
        raise TypeError(f"compare_devices: the first argument must be the function to time, got "
                        f"{describe(fn)}; pass the function itself: compare_devices(step, model, x)")
    _check_count("repeats", repeats, 1)
    _check_count("warmup", warmup, 0)
    _check_budget(budget_s)
    _check_on_update("compare_devices", on_update)
    torch_call = _check_torch_call(torch)
    measured = describe_call(fn, args, repeats)
    rows = _rows_for(devices)
    if torch_call is not None:
        rows += _torch_rows()
        measured += (f"; PyTorch rows: {describe_call(torch_call[0], torch_call[1:], repeats, timed=False)}, the same "
                     "repeats and warm-up")
    table = DeviceTimes(rows, measured)
    if on_update is not None:
        on_update(table)
    _time_rows(table, fn, args, repeats, warmup, budget_s, on_update, torch_call=torch_call)
    return table


def _check_torch_call(call):
    """``torch=(torch_fn, *torch_args)``, checked: the function first, then what it is called with."""
    if call is None:
        return None
    if not isinstance(call, (tuple, list)) or not call or not callable(call[0]):
        raise TypeError(f"compare_devices(fn, *args, torch=...): torch is the same work written for PyTorch, as "
                        f"(torch_fn, *torch_args), e.g. torch=(torch_step, torch_model, x, y); got {describe(call)}")
    return tuple(call)


def _torch_rows() -> list:
    """PyTorch's CPU and CUDA rows; when torch is not installed, both say so."""
    try:
        from .pytorch import timing as torch_timing
    except ModuleNotFoundError as error:
        if error.name != "torch":
            raise
        return [DeviceRow(TORCH_PREFIX + kind, False, NO_TORCH) for kind in ("cpu", "cuda")]
    rows = []
    for kind in torch_timing.DEVICES:
        available, reason = torch_timing.availability(kind)
        rows.append(DeviceRow(TORCH_PREFIX + kind, available, reason,
                              note=torch_timing.note(kind) if available else ""))
    return rows


def compare_compiled(model, loss_fn, *inputs, optimizer=None, segments=1, devices=None, repeats: int = 25,
                     warmup: int = 2, budget_s: float | None = 2.0, on_update=None) -> DeviceTimes:
    """Time a training step eager and compiled on each device: two rows per device, "eager" and "compiled".

    ``compare_compiled(model, loss_fn, x, y, optimizer=opt)`` mirrors ``gl.compile.make_step``: the eager
    row runs ``opt.zero_grad(); loss_fn(model(x), y).backward(); opt.step()``, the compiled row
    ``make_step(model, loss_fn, optimizer=opt, segments=segments)(x, y)``, each on its own copy of the
    model, the inputs and the optimizer (rebuilt as ``type(opt)(params, **opt.defaults)``, or
    ``optimizer=lambda params: ...``); the caller's are never changed. Without an optimizer both fill
    ``.grad`` only. ``loss_fn=None`` times a forward instead: ``model(*inputs)`` under ``no_grad``
    against ``gl.compile(model)``.

    A compiled row's ``vs_eager`` is the device's eager median over its own (2.0 = twice as fast);
    its first call, which traces and plans, is ``first_s`` (its extra time is ``compile_s``). When the
    step cannot be compiled (``.item()`` in forward...) it runs eagerly: the row's ``fallback`` says why,
    and the ``CompileWarning`` is kept in the row instead of printed. The other options are
    ``compare_devices``'.
    """
    if not callable(model):
        raise TypeError(f"compare_compiled: the first argument must be the model (a Module or function), got "
                        f"{describe(model)}")
    for name, value, example in (("the first argument (the model)", model, "nn.Linear(3, 1)"),
                                 ("loss_fn", loss_fn, "nn.MSELoss()")):
        if isinstance(value, type):
            raise TypeError(f"compare_compiled: {name} is the class {value.__name__}, not one of its objects; make "
                            f"one first: {value.__name__}(...), e.g. {example}")
    if loss_fn is not None and not callable(loss_fn):
        raise TypeError(f"compare_compiled: loss_fn must be callable as loss_fn(output, target) (or None to time "
                        f"a forward), got {describe(loss_fn)}")
    if loss_fn is None and (optimizer is not None or segments != 1):
        raise ValueError("compare_compiled: optimizer and segments are for a training step; give loss_fn too")
    if not inputs:
        raise TypeError("compare_compiled: give the inputs of the step, e.g. compare_compiled(model, loss_fn, x, y)")
    if optimizer is not None and not callable(optimizer) and not hasattr(optimizer, "defaults"):
        raise TypeError(f"compare_compiled: optimizer must be a gradlab optimizer or a function params -> "
                        f"optimizer, got {describe(optimizer)}")
    _check_count("repeats", repeats, 1)
    _check_count("warmup", warmup, 0)
    _check_budget(budget_s)
    _check_on_update("compare_compiled", on_update)
    rows = []
    for row in _rows_for(devices):
        if not row.available:
            rows.append(row)
            continue
        for variant in ("eager", "compiled"):
            rows.append(dataclasses.replace(row, variant=variant, times=[]))
    what = (f"training step{' with ' + _optimizer_name(optimizer) if optimizer is not None else ''}"
            if loss_fn is not None else "forward")
    args = (model, *inputs)
    compiled = "gl.compile.make_step" if loss_fn is not None else "gl.compile"
    table = DeviceTimes(rows, f"{what} of {describe(model)} on {', '.join(describe(x) for x in inputs)}, eager vs "
                              f"{compiled}: median of up to {repeats} repeats, after warm-up")
    if on_update is not None:
        on_update(table)
    variants = {"eager": _eager_variant(loss_fn, optimizer),
                "compiled": _compiled_variant(loss_fn, optimizer, segments)}
    _time_rows(table, None, args, repeats, warmup, budget_s, on_update, prepare=lambda row: variants[row.variant])
    return table


def _optimizer_name(optimizer) -> str:
    return type(optimizer).__name__ if hasattr(optimizer, "defaults") else "the optimizer made by the function given"


def _new_optimizer(optimizer, model):
    """An optimizer like the caller's, for this copy of the model (its state starts fresh)."""
    if optimizer is None:
        return None
    if hasattr(optimizer, "defaults") and hasattr(optimizer, "step"):
        return type(optimizer)(model.parameters(), **optimizer.defaults)
    return optimizer(model.parameters())


def _eager_variant(loss_fn, optimizer):
    """prepare(copies) -> the eager step on them."""
    from ..autograd.grad_mode import no_grad

    def prepare(moved):
        model = moved[0]
        if loss_fn is None:
            def forward(model, *inputs):
                with no_grad():
                    return model(*inputs)
            return forward
        opt = _new_optimizer(optimizer, model)

        def step(model, x, *targets):
            if opt is not None:
                opt.zero_grad()
            loss = loss_fn(model(x), *targets)
            loss.backward()
            if opt is not None:
                opt.step()
            return loss
        return step
    return prepare


def _compiled_variant(loss_fn, optimizer, segments):
    """prepare(copies) -> the compiled step (or forward) on them; it notes a fallback in its row."""
    from .. import compile as gl_compile

    def prepare(moved, row):
        model = moved[0]
        if loss_fn is None:
            compiled = gl_compile.compile(model)
        else:
            compiled = gl_compile.make_step(model, loss_fn, optimizer=_new_optimizer(optimizer, model),
                                            segments=segments)

        def run(model, *inputs):
            if row.fallback:  # already eager: it warns no more
                return compiled(*inputs)
            with warnings.catch_warnings():  # the row says it, once, instead
                warnings.simplefilter("ignore", gl_compile.CompileWarning)
                out = compiled(*inputs)
            if compiled.fallback and not row.fallback:
                row.fallback = compiled.fallback
            return out
        return run
    prepare.wants_row = True
    return prepare


def _check_budget(budget_s):
    if budget_s is not None and not (isinstance(budget_s, (int, float)) and budget_s > 0):
        raise ValueError(f"compare_devices: budget_s must be a positive number of seconds (or None for no "
                         f"budget), got {budget_s!r}")


def _check_on_update(call, on_update):
    if on_update is not None and not callable(on_update):
        raise TypeError(f"{call}: on_update is a function it calls with the table as each device finishes "
                        f"(on_update(table)), or None; got {describe(on_update)}")


def _check_count(name, value, least):
    if isinstance(value, bool) or not isinstance(value, int) or value < least:
        raise ValueError(f"compare_devices: {name} must be an integer >= {least}, got {value!r}")


# --- which devices, and why some cannot be timed ----------------------------------------------------

def _rows_for(devices) -> list:
    """A row for each device asked for (every known type when None), unavailable ones with their reason.

    Every device string is checked before any work: an unknown one is an error, not a row.
    """
    by_name = devices is not None
    if devices is None:
        info = {found.type: found for found in known_devices()}
        wanted = [Device(type_) for type_ in info]
    else:
        listed = [devices] if isinstance(devices, (str, Device)) else list(devices)
        wanted = []
        for spec in listed:
            try:
                wanted.append(resolve_device(spec))
            except (RuntimeError, TypeError) as error:
                raise ValueError(f"compare_devices: devices={devices!r}: {error}") from None
        if not wanted:
            raise ValueError("compare_devices: devices=[] names no device; leave it out to time every device")
        info = {device.type: device_info(device.type) for device in wanted}
    rows, seen = [], set()
    for device in wanted:
        if device in seen:
            continue
        seen.add(device)
        found = info[device.type]
        row = DeviceRow(str(device), found.available, found.reason)
        if found.available and device.type == "cuda" and _simulated():
            row.note = SIMULATED
            if not by_name:
                row.available, row.reason = False, SIMULATED
        if found.available and device.type == "mlx":
            row.note = _mlx_note()
        rows.append(row)
    return rows


def _simulated() -> bool:
    from .. import cuda

    return cuda.is_simulated()


def _mlx_note() -> str:
    import mlx.core as mx

    if mx.default_device() == mx.cpu:
        return "MLX runs on the CPU here (mlx[cpu] on Linux); on Apple silicon it uses the GPU"
    return ""


# --- copying the arguments to a device ---------------------------------------------------------------

def copy_to_device(value, device):
    """``value`` with every gradlab Module and Tensor in it copied to ``device`` (device_copy.py)."""
    return copy_between_devices(value, device, Module, Tensor)


def tensors_in(value, found=None) -> list:
    """Every Tensor inside ``value`` (lists, tuples, dicts, a Module's parameters and buffers), once each."""
    found = {} if found is None else found
    if isinstance(value, Tensor):
        found.setdefault(id(value), value)
    elif isinstance(value, Module):
        for tensor in (*value.parameters(), *value.buffers()):
            found.setdefault(id(tensor), tensor)
    elif isinstance(value, (list, tuple)):
        for item in value:
            tensors_in(item, found)
    elif isinstance(value, dict):
        for item in value.values():
            tensors_in(item, found)
    return list(found.values())


def settle(backend, result, changed) -> None:
    """Make the device finish the work: compute the result's tensors and the arguments' tensors and
    gradients (a training step changes them in place), then wait for the queue to drain.

    On MLX nothing runs until evaluated; on CUDA kernels are queued. On numpy both calls do nothing.
    """
    arrays = []
    for tensor in (*tensors_in(result), *changed):
        arrays.append(tensor.array)
        if tensor.grad is not None:
            arrays.append(tensor.grad.array)
    backend.materialize(arrays)
    backend.synchronize()


# --- timing: one device after the other -------------------------------------------------------------

class _DeviceClock:
    """One device's copies of the arguments, and its calls timed with the device made to finish.

    A failure anywhere (copying the arguments, the function itself) becomes the row's error."""

    def __init__(self, row: DeviceRow, fn, args, budget_s, prepare=None):
        self.row, self.fn, self.budget_s, self.spent = row, fn, budget_s, 0.0
        self.place = _place_of(row.device)
        self.moved = self.place.copy(list(args))
        if prepare is not None:  # a variant (compare_compiled): the function to time, made from these copies
            self.fn = prepare(self.moved, row) if getattr(prepare, "wants_row", False) else prepare(self.moved)

    def call(self) -> float:
        start = _clock()
        self.place.settle(self.fn(*self.moved))
        return _clock() - start

    def within_budget(self) -> bool:
        return self.budget_s is None or self.spent <= self.budget_s

    def warm_up(self, count) -> None:
        """Calls that are not kept: caches, allocators and lazy imports settle (half the budget at most)."""
        for _ in range(count):
            if self.budget_s is not None and self.spent > self.budget_s / 2:
                break
            self.spent += self.call()

    def take(self, count) -> None:
        """Up to ``count`` more timed calls, while the budget lasts."""
        row = self.row
        for _ in range(count):
            if len(row.times) >= row.asked or (row.times and not self.within_budget()):
                break
            elapsed = self.call()
            self.spent += elapsed
            row.times.append(elapsed)


class _GradlabPlace:
    """One of gradlab's devices: the arguments copied there, and ``settle`` on what a call produced or changed."""

    def __init__(self, spec: str):
        device = resolve_device(spec)
        self.device, self.backend, self.changed = device, device.backend, []

    def copy(self, args: list) -> list:
        moved = copy_to_device(args, self.device)
        self.changed = tensors_in(moved)
        return moved

    def settle(self, result) -> None:
        settle(self.backend, result, self.changed)


def _place_of(device: str):
    """Where a row runs: one of gradlab's devices, or PyTorch's (``torch:cpu``), whose module loads only then."""
    if device.startswith(TORCH_PREFIX):
        from .pytorch.timing import TorchPlace
        return TorchPlace(device[len(TORCH_PREFIX):])
    return _GradlabPlace(device)


def _time_rows(table, fn, args, repeats, warmup, budget_s, on_update, prepare=None, torch_call=None) -> None:
    """Each device in turn: the first call timed apart, warm-up, then its repeats; the table is
    summarised and shown after each device.

    One device after the other: a row is final once drawn, and one device's thread pools and caches
    (MLX's, OpenBLAS's, numba's) are not mixed into another's calls. The price: a machine that gets
    busy part-way through slows some devices and not others; the spread shows it, and a rerun helps.
    """
    for row in table:
        if not row.available:
            continue
        row_fn, row_args = (torch_call[0], torch_call[1:]) if row.device.startswith(TORCH_PREFIX) else (fn, args)
        clock = _start(row, row_fn, row_args, repeats, warmup, budget_s, prepare(row) if prepare else None)
        if clock is not None:
            try:
                clock.take(repeats)
            except Exception as error:  # this device's row carries it; the other devices still run
                _record_error(row, error)
                row.times = []
        _summarize(table)
        if on_update is not None:
            on_update(table)


def _start(row, fn, args, repeats, warmup, budget_s, prepare=None):
    """Copy the arguments to the row's device, time the first call apart, warm up: the device's
    clock, or None when any of it failed (the row then carries the error)."""
    row.asked = repeats
    try:
        clock = _DeviceClock(row, fn, args, budget_s, prepare)
        row.first_s = clock.call()
        clock.warm_up(warmup)
        return clock
    except Exception as error:  # this device's row carries it; the other devices still run
        _record_error(row, error)
        return None


def _record_error(row, error) -> None:
    message = str(error).strip().split("\n")[0]
    if "same device" in message:
        message += f" — {MIXED_DEVICES_HINT}"
    row.error = f"{type(error).__name__}: {message}"


def _summarize(table) -> None:
    """Median, spread (interquartile range) and compile time of each row's times; then the speedups."""
    for row in table:
        if not row.times:
            row.repeats, row.median_s = 0, None
            continue
        row.repeats = len(row.times)
        row.median_s = statistics.median(row.times)
        q1, q3 = row.quartiles
        row.spread_s = q3 - q1 if len(row.times) >= 2 else None
        row.compile_s = max(row.first_s - row.median_s, 0.0)
    _add_speedups(table)


def _add_speedups(table: DeviceTimes) -> None:
    """× numpy = the numpy (cpu) median / this device's median, when the cpu row was timed (comparing
    variants, the cpu row of the same variant); × eager = this device's eager median / its compiled one."""
    for row in table:
        reference = next((r for r in table if r.device == "cpu" and r.variant == row.variant and r.timed), None)
        row.speedup = reference.median_s / row.median_s if reference and row.timed and row.median_s > 0 else None
        if row.variant == "compiled":
            eager = next((r for r in table if r.device == row.device and r.variant == "eager" and r.timed), None)
            row.vs_eager = eager.median_s / row.median_s if eager and row.timed and row.median_s > 0 else None


# --- saying what was measured ----------------------------------------------------------------------

def describe_call(fn, args, repeats, timed: bool = True) -> str:
    """'step(Sequential (4,738 parameters), Tensor 64×2 float32, Tensor 64 int64): median of 25 repeats'."""
    name = (getattr(fn, "__qualname__", None) or type(fn).__name__).split("<locals>.")[-1]  # as the code names it
    call = f"{name}({', '.join(describe(a) for a in args)})"
    return f"{call}: median of up to {repeats} repeats, after warm-up" if timed else call


def describe(value) -> str:
    """A short description of one argument: a tensor's shape and dtype, a model's size."""
    if is_torch(value):
        from .pytorch.timing import describe as describe_torch
        return describe_torch(value) or type(value).__name__
    if isinstance(value, Tensor):
        shape = "×".join(str(n) for n in value.shape) or "scalar"
        return f"Tensor {shape} {value.dtype.name}"
    if isinstance(value, Module):
        count = sum(p.numel() for p in value.parameters())
        return f"{type(value).__name__} ({count:,} parameters)"
    if isinstance(value, (list, tuple)):
        inner = ", ".join(describe(v) for v in value[:4]) + (", …" if len(value) > 4 else "")
        return f"[{inner}]" if isinstance(value, list) else f"({inner})"
    if isinstance(value, dict):
        return "{" + ", ".join(f"{k}: {describe(v)}" for k, v in list(value.items())[:4]) + "}"
    text = repr(value)
    return text if len(text) <= 24 else type(value).__name__


def _ms(seconds) -> str:
    if seconds is None:
        return "—"
    if seconds >= 1:
        return f"{seconds:.2f} s"
    if seconds >= 1e-3:
        return f"{seconds * 1e3:.3g} ms"
    return f"{seconds * 1e6:.3g} µs"


def _ratio(value) -> str:
    if value is None or not math.isfinite(value):
        return "—"
    return f"{value:.2f}×"
