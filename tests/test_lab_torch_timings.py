"""DeviceTimings and compare_devices with PyTorch's rows: the same step, the same clock, torch's own devices.

What a table says without torch is tested in test_lab_timing_without_torch.py. No timed assertion: the
tests count calls and check copies, never how fast anything ran.
"""

from __future__ import annotations

import pytest

import gradlab as gl
from gradlab.lab import timing
from gradlab.lab.timing import compare_devices

NO_TORCH_REASON = "PyTorch is not installed (pip install torch==2.13.0)"


torch = pytest.importorskip("torch", reason=NO_TORCH_REASON)


def gradlab_step(model, x, y):
    loss = ((model(x) - y) ** 2).mean()
    loss.backward()
    return loss


def torch_pair():
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(3, 8), torch.nn.ReLU(), torch.nn.Linear(8, 2))
    return model, torch.randn(16, 3), torch.randn(16, 2)


def gradlab_pair():
    gl.manual_seed(0)
    model = gl.nn.Sequential(gl.nn.Linear(3, 8), gl.nn.ReLU(), gl.nn.Linear(8, 2))
    return model, gl.randn(16, 3), gl.randn(16, 2)


def test_the_torch_rows_run_the_torch_step_as_often_as_gradlabs_rows_run_theirs():
    calls = {"gradlab": [], "torch": []}

    def counted(engine):
        def step(model, x, y):
            calls[engine].append((model, x))
            return gradlab_step(model, x, y)
        return step

    model, x, y = gradlab_pair()
    t_model, tx, ty = torch_pair()
    table = compare_devices(counted("gradlab"), model, x, y, devices=["cpu"], repeats=7, warmup=3, budget_s=None,
                            torch=(counted("torch"), t_model, tx, ty))
    assert [r.device for r in table] == ["cpu", "torch:cpu", "torch:cuda"]
    assert len(calls["gradlab"]) == len(calls["torch"]) == 1 + 3 + 7  # first call, warm-up, repeats: the same
    assert table["cpu"].repeats == table["torch:cpu"].repeats == 7
    assert all(isinstance(m, torch.nn.Module) and isinstance(xx, torch.Tensor) for m, xx in calls["torch"])
    assert table["torch:cpu"].speedup == pytest.approx(table["cpu"].median_s / table["torch:cpu"].median_s)
    assert table["torch:cpu"].label == "PyTorch cpu"


def test_the_torch_rows_step_copies_and_never_the_callers_model():
    t_model, tx, ty = torch_pair()
    before = [p.detach().clone() for p in t_model.parameters()]
    seen = []

    def torch_train_step(model, weight, x, y):
        seen.append((model, weight, x))
        optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
        optimizer.zero_grad()
        loss = ((model(x) - y) ** 2).mean()
        loss.backward()
        optimizer.step()
        return loss

    compare_devices(lambda a: a, gl.randn(2), devices=["cpu"], repeats=3, budget_s=None,
                    torch=(torch_train_step, t_model, t_model[0].weight, tx, ty))
    assert all(torch.equal(p, q) for p, q in zip(t_model.parameters(), before))
    assert all(p.grad is None for p in t_model.parameters())
    model, weight, x = seen[0]
    assert model is not t_model and x is not tx and torch.equal(x, tx)
    assert weight is model[0].weight  # a model and one of its parameters stay linked in the copy
    assert not torch.equal(model[0].weight, t_model[0].weight)  # the copy trained


def test_the_cuda_row_is_timed_where_torch_has_a_gpu_and_says_why_not_elsewhere():
    t_model, tx, ty = torch_pair()
    table = compare_devices(lambda a: a, gl.randn(2), devices=["cpu"], repeats=2, budget_s=None,
                            torch=(gradlab_step, t_model, tx, ty))
    row = table["torch:cuda"]
    if torch.cuda.is_available():
        assert row.available and row.timed and "torch.cuda.synchronize()" in row.note
    elif torch.version.cuda is None:
        assert not row.available and row.reason.startswith(f"this PyTorch ({torch.__version__}) was built without "
                                                           "CUDA, so torch.cuda.is_available() is False")
    else:
        assert row.reason == "torch.cuda.is_available() is False: PyTorch sees no CUDA GPU on this machine"


def test_the_table_says_what_torch_ran_and_on_how_many_threads():
    model, x, y = gradlab_pair()
    t_model, tx, ty = torch_pair()
    table = compare_devices(gradlab_step, model, x, y, devices=["cpu"], repeats=2, budget_s=None,
                            torch=(gradlab_step, t_model, tx, ty))
    assert table.measured == ("gradlab_step(Sequential (50 parameters), Tensor 16×3 float32, Tensor 16×2 float32): "
                              "median of up to 2 repeats, after warm-up; PyTorch rows: gradlab_step(Sequential (50 "
                              "parameters), torch.Tensor 16×3 float32, torch.Tensor 16×2 float32), the same repeats "
                              "and warm-up")
    [note] = [n for n in table.notes() if n.startswith("PyTorch cpu: ")]
    assert f"PyTorch {torch.__version__} on {torch.get_num_threads()} threads (torch.get_num_threads())" in note
    assert "every row has the same repeats, warm-up and time budget" in note
    assert "PyTorch cpu" in str(table) and note in str(table)


def test_a_failing_torch_step_fails_its_rows_and_the_others_are_still_timed():
    t_model, tx, ty = torch_pair()

    def broken(model, x):
        return model(x @ torch.ones(5, 5))

    table = compare_devices(lambda a: a * 2, gl.randn(3), devices=["cpu"], repeats=2, budget_s=None,
                            torch=(broken, t_model, tx))
    assert table["cpu"].timed
    assert table["torch:cpu"].error.startswith("RuntimeError: mat1 and mat2 shapes cannot be multiplied")
    assert not table["torch:cpu"].timed


def test_the_clock_waits_for_the_torch_device_before_it_stops(monkeypatch):
    """Between starting the clock and reading it again, the torch place's settle runs (CUDA's synchronize)."""
    from gradlab.lab.pytorch.timing import TorchPlace

    events = []
    monkeypatch.setattr(TorchPlace, "settle", lambda self, result: events.append("settle"))
    clock = timing._clock
    monkeypatch.setattr(timing, "_clock", lambda: events.append("clock") or clock())
    t_model, tx, ty = torch_pair()
    compare_devices(lambda a: a, gl.randn(2), devices=["cpu"], repeats=1, warmup=0, budget_s=None,
                    torch=(lambda m, x: events.append("step") or m(x), t_model, tx))
    torch_events = events[events.index("step") - 1:]
    assert torch_events[:4] == ["clock", "step", "settle", "clock"]


# --- the widget ---------------------------------------------------------------------------------------

def test_device_timings_draws_the_torch_rows_beside_gradlabs():
    pytest.importorskip("anywidget", reason="the widget needs anywidget: pip install 'gradlab[lab]'")
    model, x, y = gradlab_pair()
    t_model, tx, ty = torch_pair()
    widget = gl.lab.DeviceTimings(gradlab_step, model, x, y, devices=["cpu"], repeats=3, budget_s=None,
                                  torch=(gradlab_step, t_model, tx, ty))
    assert [row["label"] for row in widget.rows] == ["cpu (numpy)", "PyTorch cpu", "PyTorch cuda"]
    assert widget.rows[1]["repeats"] == 3
    assert 'data-device="torch:cpu"' in widget.svg and ">PyTorch cpu</text>" in widget.svg
    if not torch.cuda.is_available():
        assert 'class="gl-dt-row gl-dt-unavailable" data-device="torch:cuda"' in widget.svg
    widget.run()  # "run again" times the torch rows again too
    assert widget.runs == 2 and widget.table["torch:cpu"].timed
