"""compare_devices and DeviceTimings: rows per device, copies, synchronisation inside the clock, bad input.

A recording device (the conformance suite's fake device, noting when it is told to materialize and
synchronize) stands in for a lazy accelerator, so these run on any machine; the MLX test runs where
MLX is installed.
"""

import subprocess
import sys

import numpy as np
import pytest
from conformance.fake_backend import FakeDeviceBackend

import gradlab as gl
import gradlab.nn as nn
import gradlab.nn.functional as F
from gradlab.backends import device as device_module
from gradlab.backends.device import DeviceInfo
from gradlab.lab import timing

LAZY = "lazyfake"
EVENTS = []  # what the recording device and the watched clock saw, in order


class RecordingBackend(FakeDeviceBackend):
    """The fake device, noting each materialize (with the arrays it was given) and synchronize."""

    name = LAZY

    def materialize(self, arrays):
        EVENTS.append(("materialize", [id(a) for a in arrays]))

    def synchronize(self):
        EVENTS.append(("synchronize",))


@pytest.fixture
def lazy_device(monkeypatch):
    """The recording device exists for one test, and is forgotten after it."""
    monkeypatch.setitem(device_module._BACKENDS, LAZY, (__name__, "RecordingBackend", None))
    EVENTS.clear()
    yield LAZY
    device_module._backend_objects.pop(LAZY, None)
    device_module._named.pop(LAZY, None)
    device_module._instances.pop((LAZY, None), None)


@pytest.fixture
def watched_clock(monkeypatch):
    real = timing._clock

    def clock():
        EVENTS.append(("clock",))
        return real()

    monkeypatch.setattr(timing, "_clock", clock)


def small_model():
    gl.manual_seed(0)
    return nn.Sequential(nn.Linear(3, 8), nn.ReLU(), nn.Linear(8, 2))


def sgd_step(model, x, y):
    """A training step written out, since the function gets each device's own copy of model and data."""
    loss = F.cross_entropy(model(x), y)
    for p in model.parameters():
        p.grad = None
    loss.backward()
    with gl.no_grad():
        for p in model.parameters():
            p -= 0.1 * p.grad
    return loss


def calls_between_clock_reads(events):
    """For each call of the timed function: the events from the clock read before it to the one after."""
    spans = []
    for i, event in enumerate(events):
        if event[0] == "call":
            start = max(j for j in range(i) if events[j][0] == "clock")
            end = min(j for j in range(i, len(events)) if events[j][0] == "clock")
            spans.append(events[start:end + 1])
    return spans


# --- rows per device ------------------------------------------------------------------------------------

def test_every_known_device_gets_a_row_and_unavailable_ones_say_why():
    x = gl.randn(4, 4)
    table = gl.lab.compare_devices(lambda a: a @ a, x, repeats=3, budget_s=0.2)
    known = gl.devices()
    assert [row.device for row in table] == [info.type for info in known]
    for row, info in zip(table, known):
        simulated = info.type == "cuda" and gl.cuda.is_simulated()  # the test suite runs CUDA on the simulator
        assert row.available is (info.available and not simulated)
        if simulated:
            assert row.reason == timing.SIMULATED and row.median_s is None
        elif not info.available:
            assert row.reason == info.reason and row.median_s is None
        else:
            assert row.error == "" and row.repeats == 3 and len(row.times) == 3
    assert table["cpu"].speedup == 1.0


def test_a_device_that_is_not_installed_names_the_extra(monkeypatch):
    """mlx made uninstallable for the test: its row gives the reason with the pip line, the others run."""
    monkeypatch.setitem(sys.modules, "mlx", None)
    monkeypatch.setitem(sys.modules, "mlx.core", None)
    monkeypatch.delitem(sys.modules, "gradlab.backends.mlx_backend", raising=False)
    monkeypatch.delitem(device_module._backend_objects, "mlx", raising=False)
    table = gl.lab.compare_devices(lambda a: a + 1, gl.ones(3), devices=["cpu", "mlx"], repeats=2)
    assert not table["mlx"].available
    assert 'pip install "gradlab[mlx]"' in table["mlx"].reason
    assert table["cpu"].timed
    assert 'pip install "gradlab[mlx]"' in str(table)


def test_cuda_on_the_simulator_is_not_timed_unless_named(monkeypatch):
    monkeypatch.setattr(timing, "known_devices", lambda: [DeviceInfo("cpu", True), DeviceInfo("cuda", True)])
    monkeypatch.setattr(timing, "_simulated", lambda: True)
    calls = []
    table = gl.lab.compare_devices(lambda a: calls.append(a.device.type), gl.ones(2), repeats=2, warmup=0)
    assert not table["cuda"].available
    assert "Python thread per GPU thread" in table["cuda"].reason and "devices=[..., 'cuda']" in table["cuda"].reason
    assert set(calls) == {"cpu"}
    assert table.notes() == []  # the greyed row says it already
    monkeypatch.setattr(timing, "device_info", lambda type_: DeviceInfo(type_, True))
    rows = timing._rows_for(["cuda"])
    assert rows[0].available and "simulator" in rows[0].note


def test_a_function_that_fails_on_one_device_shows_the_error_there_and_the_others_run(lazy_device):
    def only_on_the_device(x):
        if x.device.type == "cpu":
            raise ValueError("no numpy today")
        return x * 2

    table = gl.lab.compare_devices(only_on_the_device, gl.ones(3), devices=["cpu", lazy_device], repeats=2)
    assert table["cpu"].error == "ValueError: no numpy today" and table["cpu"].median_s is None
    assert table[lazy_device].timed and table[lazy_device].error == ""
    assert table[lazy_device].speedup is None  # there is no numpy time to compare with
    assert "ValueError: no numpy today" in str(table)


def test_a_model_reached_by_name_is_an_error_that_says_to_pass_it(lazy_device):
    model = small_model()
    table = gl.lab.compare_devices(lambda x: model(x), gl.ones(2, 3), devices=["cpu", lazy_device], repeats=2)
    assert table["cpu"].timed
    assert "same device" in table[lazy_device].error
    assert "pass every model and tensor the function uses as an argument" in table[lazy_device].error


# --- synchronisation: the work is done before the clock stops ---------------------------------------------

def test_a_lazy_result_is_evaluated_before_the_clock_stops(lazy_device, watched_clock):
    results = []

    def double(x):
        EVENTS.append(("call",))
        out = x * 2
        results.append(out)
        return out

    gl.lab.compare_devices(double, gl.ones(5), devices=[lazy_device], repeats=4, warmup=1, budget_s=None)
    spans = calls_between_clock_reads(EVENTS)
    assert len(spans) == len(results) == 1 + 1 + 4  # first call, warm-up, repeats
    for span, out in zip(spans, results):
        assert [e[0] for e in span] == ["clock", "call", "materialize", "synchronize", "clock"]
        assert id(out.array) in span[2][1]  # the returned tensor is among what is evaluated


def test_what_a_training_step_changes_in_place_is_evaluated_too(lazy_device, watched_clock):
    """A step returns nothing useful to wait on: the parameters and gradients it changed are evaluated."""
    seen = []

    def step(model, x, y):
        EVENTS.append(("call",))
        sgd_step(model, x, y)
        seen.append([(p.array, p.grad.array) for p in model.parameters()])

    gl.lab.compare_devices(step, small_model(), gl.randn(6, 3), gl.tensor([0, 1, 0, 1, 1, 0]),
                           devices=[lazy_device], repeats=2, warmup=0)
    spans = calls_between_clock_reads(EVENTS)
    for span, arrays in zip(spans, seen):
        evaluated = set(span[2][1])
        assert all(id(weight) in evaluated and id(grad) in evaluated for weight, grad in arrays)


def test_an_mlx_result_is_evaluated_inside_the_timed_region(monkeypatch, watched_clock):
    if not any(d.type == "mlx" and d.available for d in gl.devices()):
        pytest.skip("MLX is not installed here: pip install 'gradlab[mlx]'")
    import mlx.core as mx

    backend = gl.device("mlx").backend
    real_materialize, real_synchronize = backend.materialize, backend.synchronize
    results = []

    def materialize(arrays):
        EVENTS.append(("materialize", [id(a) for a in arrays]))
        real_materialize(arrays)

    def synchronize():
        EVENTS.append(("synchronize",))
        real_synchronize()

    monkeypatch.setattr(backend, "materialize", materialize)
    monkeypatch.setattr(backend, "synchronize", synchronize)

    def matmul(a, b):
        EVENTS.append(("call",))
        out = a @ b
        results.append(out)
        return out

    EVENTS.clear()
    a = gl.randn(64, 64)
    table = gl.lab.compare_devices(matmul, a, a, devices=["mlx"], repeats=3, warmup=0)
    assert table["mlx"].timed
    if sys.platform == "linux":  # mlx[cpu]: the table says so, since the figures are the CPU's
        assert "mlx: MLX runs on the CPU here" in str(table)
    for span, out in zip(calls_between_clock_reads(EVENTS), results):
        assert isinstance(out.array, mx.array)
        assert [e[0] for e in span] == ["clock", "call", "materialize", "synchronize", "clock"]
        assert id(out.array) in span[2][1]


# --- the caller's objects stay where they are ---------------------------------------------------------

def test_copies_are_made_per_device_and_the_callers_objects_never_move(lazy_device):
    model = small_model()
    before = [p.detach().numpy().copy() for p in model.parameters()]
    x = gl.randn(6, 3, requires_grad=True)
    y = gl.tensor([0, 1, 0, 1, 1, 0])
    seen = []

    def step(model, batch, extra):
        seen.append((model[0].weight.device.type, batch["x"].device.type, batch["x"].requires_grad,
                     extra[0].device.type, extra[1]))
        return sgd_step(model, batch["x"], batch["y"])

    table = gl.lab.compare_devices(step, model, {"x": x, "y": y}, (x, "not a tensor"),
                                   devices=["cpu", lazy_device], repeats=2, warmup=0)
    assert table["cpu"].timed and table[lazy_device].timed
    assert {s for s in seen} == {("cpu", "cpu", True, "cpu", "not a tensor"),
                                 (lazy_device, lazy_device, True, lazy_device, "not a tensor")}
    for p, values in zip(model.parameters(), before):
        assert p.device.type == "cpu" and p.grad is None
        np.testing.assert_array_equal(p.detach().numpy(), values)  # the steps changed the copies only
    assert x.device.type == "cpu" and x.grad is None


def test_an_object_given_twice_is_copied_once():
    model = small_model()
    moved = timing.copy_to_device([model, model[0].weight], gl.device("cpu"))
    assert moved[1] is moved[0][0].weight and moved[1] is not model[0].weight


# --- the table ------------------------------------------------------------------------------------------

def test_the_table_holds_median_spread_compile_and_every_time():
    a = gl.randn(32, 32)

    def matmul(x, y):
        return x @ y

    table = gl.lab.compare_devices(matmul, a, a, devices=["cpu"], repeats=8, budget_s=None)
    row = table["cpu"]
    for field in ("device", "available", "reason", "median_s", "spread_s", "speedup", "compile_s", "error",
                  "repeats", "times"):
        assert hasattr(row, field)
    assert row.repeats == len(row.times) == 8
    assert row.median_s == float(np.median(row.times))
    q1, q3 = np.percentile(row.times, [25, 75])
    assert row.spread_s == pytest.approx(q3 - q1)
    assert row.compile_s == pytest.approx(max(row.first_s - row.median_s, 0.0))
    assert table.measured.startswith("matmul(Tensor 32×32 float32, Tensor 32×32 float32)")  # as the code names it
    assert "up to 8 repeats" in table.measured
    text = str(table)
    assert text.splitlines()[0] == table.measured and "cpu (numpy)" in text and "spread (IQR)" in text


def test_the_time_budget_stops_the_repeats_and_the_row_says_so():
    table = gl.lab.compare_devices(lambda a: a.sum(), gl.ones(3), devices=["cpu"], repeats=50, budget_s=1e-9)
    row = table["cpu"]
    assert row.repeats == 1 and row.asked == 50
    assert row.status == "1 of 50 repeats (the time budget ran out)"
    assert row.spread_s is None  # one time has no spread


def test_the_html_table_escapes_what_it_shows():
    def fails(x):
        raise ValueError("<b>bold</b>")

    html = gl.lab.compare_devices(fails, gl.ones(2), devices=["cpu"], repeats=1)._repr_html_()
    assert "&lt;b&gt;bold&lt;/b&gt;" in html and "<b>" not in html


# --- bad input: refused before any work -------------------------------------------------------------------

def counting():
    calls = []
    return calls, lambda *args: calls.append(args)


def test_an_unknown_device_is_a_clear_error_before_any_work():
    calls, fn = counting()
    with pytest.raises(ValueError, match=r"compare_devices: devices=\['cpu', 'tpu'\]: unknown device 'tpu': "
                                         r"expected one of 'cpu', 'numba', 'cuda', 'mlx'"):
        gl.lab.compare_devices(fn, gl.ones(2), devices=["cpu", "tpu"])
    assert calls == []


@pytest.mark.parametrize("kwargs, message", [
    ({"repeats": 0}, r"compare_devices: repeats must be an integer >= 1, got 0"),
    ({"warmup": -1}, r"compare_devices: warmup must be an integer >= 0, got -1"),
    ({"budget_s": 0}, r"compare_devices: budget_s must be a positive number of seconds \(or None"),
    ({"devices": []}, r"compare_devices: devices=\[\] names no device; leave it out to time every device"),
])
def test_bad_options_are_refused_before_any_work(kwargs, message):
    calls, fn = counting()
    with pytest.raises(ValueError, match=message):
        gl.lab.compare_devices(fn, gl.ones(2), **kwargs)
    assert calls == []


def test_something_that_is_not_a_function_is_refused():
    x = gl.ones(2)
    with pytest.raises(TypeError, match=r"compare_devices: the first argument must be the function to time, got "
                                        r"Tensor 2 float32; pass the function itself: compare_devices\(step, model, x\)"):
        gl.lab.compare_devices(x * 2, x)


def test_timing_works_without_anywidget():
    """Scripts use compare_devices and its chart with no widget package installed."""
    code = ("import sys; sys.modules['anywidget'] = None; sys.modules['ipywidgets'] = None\n"
            "import gradlab as gl\nfrom gradlab.lab import timing_chart\n"
            "t = gl.lab.compare_devices(lambda a: a + 1, gl.ones(2), devices=['cpu'], repeats=2)\n"
            "assert t['cpu'].timed and '<svg' in timing_chart.to_svg(t)\n"
            "assert 'anywidget' not in [m for m in sys.modules if sys.modules[m] is not None]\n")
    subprocess.run([sys.executable, "-c", code], check=True)


# --- the widget ------------------------------------------------------------------------------------------

def widget(**kwargs):
    pytest.importorskip("anywidget", reason="the lab widgets need anywidget and ipywidgets: pip install -e '.[lab]'")
    return gl.lab.DeviceTimings(sgd_step, small_model(), gl.randn(6, 3), gl.tensor([0, 1, 0, 1, 1, 0]),
                                repeats=3, warmup=0, **kwargs)


def test_the_widget_draws_a_row_per_device_with_its_state(lazy_device, monkeypatch):
    monkeypatch.setattr(timing, "known_devices", lambda: [DeviceInfo("cpu", True), DeviceInfo(LAZY, True),
                                                          DeviceInfo("cuda", False, "no GPU <here>")])
    monkeypatch.setattr(timing, "_simulated", lambda: False)
    view = widget()
    assert [r["device"] for r in view.rows] == ["cpu", LAZY, "cuda"]
    assert view.runs == 1 and not view.running
    assert 'class="gl-dt-row gl-dt-timed" data-device="cpu"' in view.svg
    assert 'class="gl-dt-row gl-dt-timed" data-device="lazyfake"' in view.svg
    assert 'class="gl-dt-row gl-dt-unavailable" data-device="cuda"' in view.svg
    assert "no GPU &lt;here&gt;" in view.svg  # reasons are escaped
    assert view.svg.count('class="gl-dt-bar"') == 2
    assert "1.00× numpy" in view.svg  # the cpu bar's speedup
    assert view.measured.startswith("sgd_step(Sequential (50 parameters), Tensor 6×3 float32, Tensor 6 int64)")


def test_run_again_from_the_front_end_redraws_as_each_device_finishes(lazy_device):
    view = widget(devices=["cpu", lazy_device])
    drawn = []
    view.observe(lambda change: drawn.append(change["new"]), "svg")
    view._on_front_end_message(None, {"type": "run"})
    assert view.runs == 2 and view.notice == ""
    assert 'gl-dt-pending" data-device="cpu"' in drawn[0] and 'gl-dt-pending" data-device="lazyfake"' in drawn[0]
    assert "timing…" in drawn[0]
    assert any('gl-dt-timed" data-device="cpu"' in svg and 'gl-dt-pending" data-device="lazyfake"' in svg
               for svg in drawn), "no drawing showed the cpu row done while the other device was still timing"
    assert 'gl-dt-timed" data-device="lazyfake"' in drawn[-1] and 'data-run="2"' in drawn[-1]
    assert drawn[-1].count(">3 repeats</text>") == 2


def test_one_device_is_timed_after_the_other(lazy_device):
    """Not interleaved: each device's row is final when it is drawn, its calls unmixed with another's."""
    order = []
    gl.lab.compare_devices(lambda x: order.append(x.device.type), gl.ones(2), devices=["cpu", lazy_device],
                           repeats=3, warmup=1, budget_s=None)
    assert order == ["cpu"] * 5 + [lazy_device] * 5  # first call, warm-up, three repeats


def test_the_widget_reports_an_unknown_request_in_its_notice(lazy_device):
    view = widget(devices=["cpu"])
    view._on_front_end_message(None, {"type": "explode"})
    assert view.notice == "ValueError: unknown request from the front end: 'explode'"


def test_the_widget_refuses_bad_input_before_any_work():
    pytest.importorskip("anywidget")
    with pytest.raises(ValueError, match=r"unknown device 'gpu'"):
        gl.lab.DeviceTimings(lambda a: a, gl.ones(2), devices=["gpu"])


def test_the_widget_has_a_static_picture_and_a_matplotlib_figure():
    view = widget(devices=["cpu"])
    data, _ = view._repr_mimebundle_()
    assert data["image/svg+xml"].startswith("<svg") and 'data-device="cpu"' in data["image/svg+xml"]
    assert "application/vnd.jupyter.widget-view+json" in data
    pytest.importorskip("matplotlib", reason='plot() needs matplotlib: pip install "gradlab[lab]"')
    figure = view.plot()
    assert type(figure).__name__ == "Figure"
    assert [t.get_text() for t in figure.axes[0].get_yticklabels()] == ["cpu (numpy)"]
