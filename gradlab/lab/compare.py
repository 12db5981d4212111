"""``gl.lab.compare_engines(loss, torch_loss, model, torch_model)``: one model in gradlab and in PyTorch, side by side.

The same model written twice (same module names, the same weights copied across) must give the same
gradients after both backward passes, up to float rounding. This module matches the two models'
parameters by name, module by module, and for each says whether the models agree on it (in both, the
same shape, the same weights) and how far apart its two gradients are: the largest |Δ| and that over the
largest |∂L/∂W|. Models that do not match are said not to, parameter by parameter, and only what matches
is compared. Each engine's graph is drawn as that engine built it, next to the other. Nothing here
imports torch: a PyTorch model's parameters are read by ``pytorch/compare.py``.
"""

from __future__ import annotations

import dataclasses
from collections import Counter
from html import escape

import numpy as np

from ..nn.modules.module import Module
from ..tensor import Tensor
from .arguments import described
from .colors import ALARM_INK, AXIS_INK, PASS_INK, html_ink
from .pytorch import is_torch_module, is_torch_tensor
from .summary import as_numpy

TOLERANCE = {"low": 1e-4, "float64": 1e-10}  # the largest relative difference that is the same gradient
MODE, LIMITS = "difference", (1e-8, 1.0)  # the views' colour mode: each parameter's relative difference
COPY_WEIGHTS = "torch_model.load_state_dict({k: torch.tensor(v.numpy()) for k, v in model.state_dict().items()})"
TABLE_STYLE = (".gl-compare-table th, .gl-compare-table td { padding: 2px 10px 2px 0; text-align: left; "
               "border-bottom: 1px solid var(--jp-border-color2, #e5e7eb); } .gl-compare-table th { font-weight: 600; "
               "color: var(--jp-ui-font-color2, #6b7280); }")
SYMBOLS = {"same": "✓", "differs": "✗", "no gradient": "○", "mismatch": "✗"}


@dataclasses.dataclass
class Side:
    """One parameter as one engine holds it: shape, dtype, values and gradient (float64 host copies)."""

    name: str
    shape: list
    dtype: str
    value: np.ndarray
    grad: np.ndarray | None


@dataclasses.dataclass
class Row:
    """One parameter of the comparison: each engine's side (None where the model has no such parameter),
    the verdict and why, and the gradient difference when both sides have one."""

    name: str
    module: str
    gradlab: Side | None
    torch: Side | None
    verdict: str  # "same", "differs", "no gradient" or "mismatch" (the models disagree on this parameter)
    why: str
    max_abs: float | None = None  # max |∂L/∂W in gradlab − ∂L/∂W in PyTorch|
    relative: float | None = None  # max_abs / the largest |∂L/∂W| of either engine
    tolerance: float | None = None

    def to_dict(self) -> dict:
        return {"name": self.name, "module": self.module, "verdict": self.verdict, "why": self.why,
                "max_abs": self.max_abs, "relative": self.relative, "tolerance": self.tolerance,
                "gradlab_shape": self.gradlab.shape if self.gradlab else None,
                "torch_shape": self.torch.shape if self.torch else None}


def gradlab_sides(model) -> dict:
    """{name: Side} of a gradlab model's parameters."""
    sides = {}
    for name, p in model.named_parameters():
        grad = None if p.grad is None else as_numpy(p.grad).astype(np.float64)
        sides[name] = Side(name, list(p.shape), p.dtype.name, as_numpy(p).astype(np.float64), grad)
    return sides


def module_of(name: str) -> str:
    """'blocks.0.fc.weight' -> 'blocks.0.fc'; a parameter of the model itself -> ''."""
    return name.rpartition(".")[0]


def tolerance_for(*sides) -> float:
    low = any(side.dtype not in ("float64",) for side in sides)
    return TOLERANCE["low" if low else "float64"]


def match(gradlab: dict, torch: dict, tolerance: float | None = None) -> list:
    """One Row per parameter name in either model, gradlab's order first, then those only PyTorch has."""
    rows = []
    for name in [*gradlab, *(n for n in torch if n not in gradlab)]:
        g, t = gradlab.get(name), torch.get(name)
        rows.append(_row(name, g, t, tolerance))
    return rows


def _row(name, g, t, tolerance) -> Row:
    module = module_of(name)
    if t is None or g is None:
        only, other = ("gradlab", "PyTorch") if t is None else ("PyTorch", "gradlab")
        return Row(name, module, g, t, "mismatch", f"only in the {only} model: the {other} model has no "
                                                   f"parameter {name!r}")
    if g.shape != t.shape:
        return Row(name, module, g, t, "mismatch", f"shapes differ: {g.shape} in gradlab, {t.shape} in PyTorch")
    tol = tolerance if tolerance is not None else tolerance_for(g, t)
    weights = _relative(g.value, t.value)
    if weights[1] > tol:
        return Row(name, module, g, t, "mismatch",
                   f"the weights differ (max |Δ| {weights[0]:.3g}): not the same numbers, so their gradients cannot "
                   "agree", tolerance=tol)
    if g.grad is None or t.grad is None:
        missing = [engine for engine, side in (("gradlab", g), ("PyTorch", t)) if side.grad is None]
        losses = "both losses" if len(missing) == 2 else "its loss"
        return Row(name, module, g, t, "no gradient", f"no gradient in {' or '.join(missing)}: call backward() on "
                                                      f"{losses} first, or the parameter is not used by the loss",
                   tolerance=tol)
    max_abs, relative = _relative(g.grad, t.grad)
    verdict = "same" if relative <= tol else "differs"
    why = (f"the same gradient: relative difference {relative:.1e} ≤ {tol:.0e}" if verdict == "same" else
           f"the gradients differ: max |Δ| {max_abs:.3g} is {relative:.1e} of the largest |∂L/∂W| (tolerance "
           f"{tol:.0e})")
    return Row(name, module, g, t, verdict, why, max_abs, relative, tol)


def _relative(a: np.ndarray, b: np.ndarray) -> tuple:
    """(max |a − b|, that over the largest |a| or |b|): 0 where both are all zero, inf where one is not finite."""
    if not (np.isfinite(a).all() and np.isfinite(b).all()):
        return float("inf"), float("inf")
    max_abs = float(np.max(np.abs(a - b), initial=0.0))
    scale = max(float(np.max(np.abs(a), initial=0.0)), float(np.max(np.abs(b), initial=0.0)))
    return max_abs, (max_abs / scale if scale > 0 else 0.0)


class EngineComparison:
    """The two engines' parameters matched, each one's verdict, and (``widget``) both graphs side by side.

    ``rows`` holds one Row per parameter; ``models_match`` says whether the two models have the same
    parameters, shapes and weights; ``same`` whether every gradient then agrees. ``select(name)``
    selects a parameter in both graphs (a click on one selects it in the other too)."""

    def __init__(self, rows: list, modules: dict, losses: tuple, views=None):
        self.rows, self.modules, self.losses = rows, modules, losses
        self.views = views  # (gradlab's GraphView, PyTorch's GraphView), or None where not drawn
        self._widget = None

    @property
    def mismatches(self) -> list:
        return [row for row in self.rows if row.verdict == "mismatch"]

    @property
    def models_match(self) -> bool:
        return not self.mismatches

    @property
    def same(self) -> bool:
        return self.models_match and all(row.verdict == "same" for row in self.rows)

    def __getitem__(self, name: str) -> Row:
        for row in self.rows:
            if row.name == name:
                return row
        raise KeyError(f"compare_engines: no parameter {name!r}; the parameters are "
                       f"{', '.join(row.name for row in self.rows)}")

    def headline(self) -> str:
        """One sentence: do the models match, and do their gradients agree."""
        g_loss, t_loss = self.losses
        loss = f"loss {g_loss:.6g} in gradlab, {t_loss:.6g} in PyTorch"
        if not self.models_match:
            parts = []
            only_g = [r.name for r in self.mismatches if r.torch is None]
            only_t = [r.name for r in self.mismatches if r.gradlab is None]
            shapes = [r for r in self.mismatches if r.gradlab and r.torch and r.gradlab.shape != r.torch.shape]
            weights = [r.name for r in self.mismatches if r.gradlab and r.torch and r.gradlab.shape == r.torch.shape]
            if only_g:
                parts.append(f"{_count(only_g, 'parameter')} only in gradlab ({', '.join(only_g)})")
            if only_t:
                parts.append(f"{_count(only_t, 'parameter')} only in PyTorch ({', '.join(only_t)})")
            if shapes:
                parts.append(f"{_count(shapes, 'shape')} {'differs' if len(shapes) == 1 else 'differ'} ("
                             + ", ".join(f"{r.name}: {r.gradlab.shape} vs {r.torch.shape}" for r in shapes) + ")")
            if weights:
                parts.append(f"different weights in {', '.join(weights)} (copy them across first: "
                             f"{COPY_WEIGHTS})")
            return (f"These are not the same model: {'; '.join(parts)}. Only parameters in both, of the same shape "
                    f"and weights, are compared; each graph is its own engine's ({loss}).")
        count = len(self.rows)
        compared = [r for r in self.rows if r.relative is not None]
        if self.same:
            worst = max(compared, key=lambda r: r.relative)
            return (f"The same model in both engines ({_count(self.rows, 'parameter')} in "
                    f"{_count(self.modules, 'module')}), and the same gradients: all {count} agree, the largest "
                    f"relative difference {worst.relative:.1e} at {worst.name} ({loss}).")
        differ = [r.name for r in self.rows if r.verdict == "differs"]
        missing = [r.name for r in self.rows if r.verdict == "no gradient"]
        said = []
        if differ:
            said.append(f"{len(differ)} of {count} gradients differ ({', '.join(differ)})")
        if missing:
            said.append(f"{len(missing)} have no gradient in one engine ({', '.join(missing)})")
        return f"The same model in both engines, but {'; '.join(said)} ({loss})."

    def graphs_line(self) -> str:
        """How the two graphs differ in their operations: counts, and the op names one engine has more of."""
        if self.views is None:
            return ""
        counts = [Counter(n.op for n in view.graph.nodes.values() if n.kind == "op") for view in self.views]
        g, t = counts
        line = f"Graphs: gradlab's backward has {sum(g.values())} operations, PyTorch's {sum(t.values())}"
        more = []
        for engine, mine, theirs in (("gradlab", g, t), ("PyTorch", t, g)):
            extra = [f"{op} ×{mine[op] - theirs[op]}" for op in mine if mine[op] > theirs[op]]
            if extra:
                more.append(f"{engine}'s alone: {', '.join(extra)}")
        line += ("; " + "; ".join(more) if more else ", the same ones") + "."
        if any(view.graph.freed for view in self.views):  # said once here, not in each view
            line += (" Both backwards have run, so what forward saved is freed: a node shows its gradient, not what "
                     "it saved.")
        return line

    # --- text and HTML ------------------------------------------------------------------------------

    def table(self) -> list:
        """The rows as the table shows them: module, parameter, shape, max ``|Δ|``, relative, verdict, why."""
        lines = []
        for module, rows in self._by_module():
            for row in rows:
                shapes = [_shape(side.shape) for side in (row.gradlab, row.torch) if side is not None]
                lines.append([self._module_label(module), row.name, " vs ".join(dict.fromkeys(shapes)),
                              _figure(row.max_abs), _figure(row.relative, ".1e"),
                              f"{SYMBOLS[row.verdict]} {row.verdict}", row.why])
        return lines

    HEAD = ("module", "parameter", "shape", "max |Δ∂L/∂W|", "relative", "verdict", "")

    def __str__(self):
        cells = [list(self.HEAD)] + self.table()
        widths = [max(len(line[i]) for line in cells) for i in range(len(self.HEAD) - 1)]
        lines = ["  ".join(c.ljust(w) for c, w in zip(line[:-1], widths)) + "  " + line[-1] for line in cells]
        return "\n".join([self.headline(), *([self.graphs_line()] if self.views else []), *lines])

    def __repr__(self):
        return str(self)

    def to_html(self) -> str:
        """The headline and the table, inked in the learner's JupyterLab theme (the widget's top, and a saved
        notebook's picture of it)."""
        ink = html_ink(PASS_INK if self.same else ALARM_INK)
        inks = {"same": html_ink(PASS_INK), "differs": html_ink(ALARM_INK), "mismatch": html_ink(ALARM_INK),
                "no gradient": html_ink(AXIS_INK)}
        head = "".join(f"<th>{escape(h)}</th>" for h in self.HEAD[:-1])
        body = []
        for (module, param, shape, max_abs, relative, verdict, why), row in zip(self.table(), self._rows_in_order()):
            body.append(f'<tr class="gl-compare-row gl-compare-{row.verdict.replace(" ", "-")}" '
                        f'data-param="{escape(param)}"><td>{escape(module)}</td><td><code>{escape(param)}</code></td>'
                        f"<td>{escape(shape)}</td><td>{escape(max_abs)}</td><td>{escape(relative)}</td>"
                        f'<td style="color:{inks[row.verdict]};font-weight:600" title="{escape(why)}">'
                        f"{escape(verdict)}</td></tr>")
        notes = "".join(f'<li><code>{escape(r.name)}</code>: {escape(r.why)}</li>' for r in self.rows
                        if r.verdict != "same")
        return (f'<div class="gl-compare" style="font-family:Helvetica,Arial,sans-serif;font-size:12.5px;'
                f'color:var(--jp-ui-font-color1, #1f2937)"><style>{TABLE_STYLE}</style>'
                f'<p class="gl-compare-headline" style="border-left:4px solid {ink};padding:4px 10px;margin:4px 0">'
                f"<b>{escape(self.headline())}</b></p>"
                + (f'<p class="gl-compare-graphs" style="margin:2px 0 6px 14px">{escape(self.graphs_line())}</p>'
                   if self.views else "") +
                f'<table class="gl-compare-table" style="border-collapse:collapse"><thead><tr>{head}</tr></thead>'
                f"<tbody>{''.join(body)}</tbody></table>"
                + (f'<ul class="gl-compare-notes" style="margin:4px 0">{notes}</ul>' if notes else "") + "</div>")

    def _by_module(self) -> list:
        order: dict = {}
        for row in self.rows:
            order.setdefault(row.module, []).append(row)
        return list(order.items())

    def _rows_in_order(self) -> list:
        return [row for _, rows in self._by_module() for row in rows]

    def _module_label(self, module: str) -> str:
        g_type, t_type = self.modules.get(module, (None, None))
        name = module or "(the model)"
        if g_type == t_type or t_type is None or g_type is None:
            return f"{name} ({g_type or t_type})"
        return f"{name} ({g_type} in gradlab, {t_type} in PyTorch)"

    # --- both graphs, linked ------------------------------------------------------------------------

    def select(self, name: str) -> None:
        """Select parameter ``name`` in both graphs (where each has it)."""
        self[name]  # a clear error for a name that is no parameter
        for view in self._views_or_error():
            node = self._param_nodes(view).get(name)
            if node is not None:
                view.reveal(node)

    def _views_or_error(self):
        if self.views is None:
            raise ValueError("compare_engines(..., draw=False) drew no graphs; call it with draw=True (the default)")
        return self.views

    @staticmethod
    def _param_nodes(view) -> dict:
        return {name: node_id for node_id, name in view._compare_params.items()}

    @property
    def widget(self):
        """Both graphs side by side under the table: gradlab's on the left, PyTorch's on the right."""
        if self._widget is None:
            self._widget = _widget(self)
        return self._widget

    def saved_html(self) -> str:
        """The table and, side by side, both graphs as drawn now (SVG): what a saved notebook shows."""
        if self.views is None:
            return self.to_html()
        columns = "".join(f'<div style="flex:1 1 0;min-width:0"><b>{engine}</b>{view.to_svg()}</div>'
                          for engine, view in zip(("gradlab", "PyTorch"), self.views))
        return (self.to_html() + '<div class="gl-compare-graphs-saved" style="display:flex;gap:12px;'
                'font-family:Helvetica,Arial,sans-serif"><style>.gl-compare-graphs-saved svg { max-width: 100%; '
                f'height: auto; }}</style>{columns}</div>')

    def _repr_mimebundle_(self, **kwargs):
        """The live widget where there is one, and for GitHub, nbviewer and nbconvert the table and both graphs."""
        if self.views is None:
            return {"text/plain": str(self), "text/html": self.to_html()}, {}
        bundle_ = self.widget._repr_mimebundle_(**kwargs)
        data, metadata = bundle_ if isinstance(bundle_, tuple) else (bundle_, {})
        return {**data, "text/html": self.saved_html()}, metadata


def _count(items, word: str) -> str:
    n = len(items)
    return f"{n} {word}{'' if n == 1 else 's'}"


def _shape(shape: list) -> str:
    return "×".join(map(str, shape)) or "scalar"


def _figure(value, spec=".3g") -> str:
    return "—" if value is None else format(value, spec)


def _widget(comparison):
    """The table (HTML) above two columns, each an engine's name over its GraphView."""
    import ipywidgets

    top = ipywidgets.HTML(comparison.to_html())
    columns = []
    for engine, view in zip(("gradlab", "PyTorch"), comparison.views):
        title = ipywidgets.HTML(f'<b class="gl-compare-engine" style="font-family:Helvetica,Arial,sans-serif">'
                                f"{engine}</b>")
        column = ipywidgets.VBox([title, view], layout=ipywidgets.Layout(flex="1 1 0", min_width="0"))
        columns.append(column)
    box = ipywidgets.VBox([top, ipywidgets.HBox(columns, layout=ipywidgets.Layout(width="100%"))])
    box.add_class("gradlab-compare")
    return box


# --- compare_engines: checking, reading, drawing ---------------------------------------------------------

def compare_engines(loss, torch_loss, model, torch_model, *, tolerance: float | None = None,
                    draw: bool = True) -> EngineComparison:
    """The same model in gradlab and in PyTorch, compared after both backward passes.

    ``loss`` and ``model`` are gradlab's, ``torch_loss`` and ``torch_model`` PyTorch's; the two models have
    the same module names (a port that changed its imports). Each parameter is matched by name; its
    gradients compare by their largest ``|Δ|`` over the largest ``|∂L/∂W|`` (the same within ``tolerance``:
    1e-4 in float32, 1e-10 in float64). ``draw=False`` compares without drawing the graphs."""
    _check(loss, torch_loss, model, torch_model, tolerance)
    from .pytorch.compare import loss_number, torch_sides

    torch = {name: Side(**fields) for name, fields in torch_sides(torch_model).items()}
    rows = match(gradlab_sides(model), torch, tolerance)
    modules = _module_types(model, torch_model, {row.module for row in rows})
    comparison = EngineComparison(rows, modules, (float(loss.item()), loss_number(torch_loss)))
    if draw:
        comparison.views = _views(comparison, loss, torch_loss, model, torch_model)
    return comparison


def _check(loss, torch_loss, model, torch_model, tolerance) -> None:
    call = "compare_engines(loss, torch_loss, model, torch_model)"
    if is_torch_tensor(loss) or is_torch_module(model):
        raise TypeError(f"{call}: gradlab's loss and model come first, PyTorch's second; got a torch "
                        f"{'tensor' if is_torch_tensor(loss) else 'model'} first")
    if not isinstance(loss, Tensor):
        raise TypeError(f"{call}: loss is the gradlab loss (a gradlab Tensor), got {described(loss)}")
    if not isinstance(model, Module):
        raise TypeError(f"{call}: model is the gradlab model (a gradlab.nn.Module), got {described(model)}")
    if not is_torch_tensor(torch_loss):
        raise TypeError(f"{call}: torch_loss is the PyTorch loss (a torch.Tensor), got {described(torch_loss)}")
    if not is_torch_module(torch_model):
        raise TypeError(f"{call}: torch_model is the PyTorch model (a torch.nn.Module), got "
                        f"{described(torch_model)}")
    for which, value in (("loss", loss), ("torch_loss", torch_loss)):
        if value.numel() != 1:
            raise ValueError(f"{call}: {which} is the one number backward started from, got shape "
                             f"{list(value.shape)}; pass the scalar loss")
    if tolerance is not None and (isinstance(tolerance, bool) or not isinstance(tolerance, (int, float))
                                  or not tolerance > 0):
        raise ValueError(f"compare_engines(..., tolerance=...): a positive relative difference such as 1e-4, got "
                         f"{tolerance!r}")


def _module_types(model, torch_model, paths) -> dict:
    """{module path: (its class name in gradlab, in PyTorch)} for the modules that own the parameters."""
    g_modules, t_modules = dict(model.named_modules()), dict(torch_model.named_modules())
    return {path: (type(g_modules[path]).__name__ if path in g_modules else None,
                   type(t_modules[path]).__name__ if path in t_modules else None) for path in paths}


def _views(comparison, loss, torch_loss, model, torch_model) -> tuple:
    """Each engine's own graph of its loss, its parameters named by the model, coloured by their difference."""
    from .graph_view import GraphView

    views = []
    for engine, root, owner in (("gradlab", loss, model), ("PyTorch", torch_loss, torch_model)):
        params = dict(owner.named_parameters())
        view = GraphView(root, names=params if engine == "gradlab" else owner)
        view._compare_params = {}  # node id -> parameter name: what a selection in the other view is matched by
        for name, p in params.items():
            node = view.graph.node_for(p)
            if node is not None:
                view._compare_params[node.id] = name
        sizes = {}
        for node_id, name in view._compare_params.items():
            row = comparison[name]
            if row.verdict == "mismatch" and row.relative is None:
                sizes[node_id] = LIMITS[1]  # nothing to compare it with: drawn at the top, as wrong
            elif row.relative is not None:
                sizes[node_id] = min(max(row.relative, LIMITS[0]), LIMITS[1])
        view.add_color_mode(MODE, sizes, "gradient difference, gradlab vs PyTorch (max |Δ| / max |∂L/∂W|, log)",
                            label="difference between the engines", missing="not a parameter",
                            text=lambda v: f"{v:.0e}", limits=LIMITS)
        view.color_mode = MODE
        if view.graph.freed:
            view.notice = ""  # the table says it once, for both graphs (graphs_line)
        view.add_class("gradlab-compare-" + ("gradlab" if engine == "gradlab" else "torch"))
        views.append(view)
    _link(*views)
    return tuple(views)


def _link(left, right) -> None:
    """A parameter selected in one graph is selected in the other (by its name; other nodes stay apart)."""
    def follow(source, target):
        def on_select(change):
            name = source._compare_params.get(change["new"])
            targets = {n: i for i, n in target._compare_params.items()}
            if name in targets and target.selected != targets[name]:
                target.reveal(targets[name])
        source.observe(on_select, "selected")
    follow(left, right)
    follow(right, left)
