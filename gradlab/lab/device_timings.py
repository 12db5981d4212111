"""``DeviceTimings``: the same function timed on every device, as a live bar chart with "run again".

Python times (``compare_devices``) and draws (``timing_chart.to_svg``); the front end
(``widgets/device_timings.js``) shows that drawing and asks for a new run. While a run goes, each
device's row is redrawn as it finishes, so a slow device does not hide the others.
"""

from __future__ import annotations

from . import timing_chart
from .frontend import bundle, stylesheet
from .timing import compare_compiled, compare_devices

try:
    import anywidget
    import traitlets
except ImportError as error:  # pragma: no cover - depends on the extra
    raise ImportError("gradlab's lab widgets need anywidget and ipywidgets: pip install 'gradlab[lab]'") from error


class DeviceTimings(anywidget.AnyWidget):
    """``gl.lab.DeviceTimings(fn, *args)``: ``fn(*args)`` timed on each device (see ``compare_devices``), and
    with ``torch=(torch_fn, *torch_args)`` the same step written for PyTorch on its CPU and CUDA as rows below;
    ``gl.lab.DeviceTimings.compare_compiled(model, loss_fn, x, y, optimizer=opt)``: a training step eager and
    compiled on each device, two bars per device (see ``compare_compiled``).

    ``table`` is the latest ``compare_devices`` table; ``run()`` (or the "run again" button) times
    again; ``to_svg()`` and ``plot()`` give the static chart and a matplotlib Figure.
    """

    svg = traitlets.Unicode("").tag(sync=True)
    rows = traitlets.List([]).tag(sync=True)  # each row's fields, for the front end and for tests
    measured = traitlets.Unicode("").tag(sync=True)
    running = traitlets.Bool(False).tag(sync=True)
    runs = traitlets.Int(0).tag(sync=True)  # how many runs have finished
    notice = traitlets.Unicode("").tag(sync=True)

    _esm = bundle("device_timings.js")
    _css = stylesheet()

    def __init__(self, fn, *args, devices=None, repeats: int = 25, warmup: int = 2, budget_s: float | None = 2.0,
                 torch=None):
        self._start(compare_devices, (fn, *args), dict(devices=devices, repeats=repeats, warmup=warmup,
                                                       budget_s=budget_s, torch=torch))

    @classmethod
    def compare_compiled(cls, model, loss_fn, *inputs, optimizer=None, segments=1, devices=None, repeats: int = 25,
                         warmup: int = 2, budget_s: float | None = 2.0) -> "DeviceTimings":
        """Eager and compiled side by side on each device: two bars per device, the compiled one with
        "× eager" (see ``gl.lab.compare_compiled``): ``DeviceTimings.compare_compiled(model, loss_fn, x, y,
        optimizer=opt)``, or ``(model, None, x)`` for a forward."""
        widget = cls.__new__(cls)
        widget._start(compare_compiled, (model, loss_fn, *inputs),
                      dict(optimizer=optimizer, segments=segments, devices=devices, repeats=repeats, warmup=warmup,
                           budget_s=budget_s))
        return widget

    def _start(self, timer, args, options) -> None:
        super().__init__()
        self._call = (timer, args, options)
        self.table = None
        self.run()  # bad arguments raise here, before the widget is shown
        self.on_msg(self._on_front_end_message)

    def run(self):
        """Time every device again; the chart redraws as each device finishes. Returns the table."""
        timer, args, options = self._call
        self.running, self.notice = True, ""
        try:
            self.table = timer(*args, on_update=self._show, **options)
        finally:
            self.running = False
        self.runs += 1
        self._show(self.table)
        return self.table

    def _show(self, table) -> None:
        self.table = table
        pending = frozenset(r.device if not r.variant else (r.device, r.variant) for r in table
                            if r.available and not r.timed and not r.error) if self.running else frozenset()
        with self.hold_sync():
            self.measured = table.measured
            self.rows = [row.to_dict() for row in table]
            self.svg = timing_chart.to_svg(table, pending, run=self.runs)

    def _on_front_end_message(self, _, content, buffers=None) -> None:
        try:
            if content.get("type") != "run":
                raise ValueError(f"unknown request from the front end: {content.get('type')!r}")
            self.run()
        except Exception as error:  # shown in the widget, never a silent failure in the comm thread
            self.running = False
            self.notice = f"{type(error).__name__}: {error}"

    # --- pictures ---------------------------------------------------------------------------------

    def to_svg(self) -> str:
        """The chart as it is drawn now, as standalone SVG text."""
        return timing_chart.to_svg(self.table, run=self.runs)

    def plot(self):
        """The chart as a matplotlib Figure (needs matplotlib: pip install "gradlab[lab]")."""
        return timing_chart.plot(self.table)

    def _repr_mimebundle_(self, **kwargs):
        """The widget view, plus a static SVG for GitHub, nbviewer and nbconvert."""
        bundle_ = super()._repr_mimebundle_(**kwargs)
        data, metadata = bundle_ if isinstance(bundle_, tuple) else (bundle_, {})
        return {**data, "image/svg+xml": self.to_svg()}, metadata
