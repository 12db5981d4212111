"""The lab and the compiler: GraphView(tape) (ops, leaves, module groups, fused super-nodes, the inspector's
facts) and compare_compiled / DeviceTimings.compare_compiled (an eager and a compiled row per device).

Expectations come from the model's structure, written out here: an MLP of Linear, ReLU, a block
(Linear, LayerNorm, then ×2, + the block's input, ReLU) and a last Linear.
"""

import inspect
import re
import warnings

import numpy as np
import pytest

import gradlab as gl
import gradlab.nn as nn
import gradlab.nn.functional as F
from gradlab.lab import CaptureError, capture
from gradlab.lab.scene import Scene
from gradlab.lab.svg import render


class Block(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(8, 8)
        self.norm = nn.LayerNorm(8)

    def forward(self, x):
        return (self.norm(self.fc(x)) * 2 + x).relu()


def net():
    gl.manual_seed(0)
    return nn.Sequential(nn.Linear(4, 8), nn.ReLU(), Block(), nn.Linear(8, 3)).double()



def traced():
    model = net()
    x = gl.randn(5, 4, dtype=gl.float64)
    return model, x, gl.jit.trace(model, x)


# the tape of net(): op index -> (what ran, its module)
OPS = [("Linear", "0"), ("ReLU", "1"), ("Linear", "2.fc"), ("LayerNorm", "2.norm"), ("×2", "2"), ("+x", "2"),
       ("ReLU", "2"), ("Linear", "3")]
PARAMS = {"0.weight": "0", "0.bias": "0", "2.fc.weight": "2.fc", "2.fc.bias": "2.fc", "2.norm.weight": "2.norm",
          "2.norm.bias": "2.norm", "3.weight": "3", "3.bias": "3"}
FUSED = [[4, 5, 6]]  # ×2, + x, relu: an elementwise chain inside the block


def ops_of(graph):
    return [n for n in graph.nodes.values() if n.kind == "op"]


def test_a_tape_is_a_graph_of_its_ops_leaves_and_modules():
    model, x, tape = traced()
    assert gl.compile.fusion_groups(tape) == FUSED  # what the compiler fuses: drawn by default (below: none)
    graph = capture(tape, fused=[])
    assert graph.source == "tape"
    ops = ops_of(graph)
    assert len(ops) == len(OPS) == len(tape)
    assert [n.group for n in ops] == [module for _, module in OPS]
    assert [n.label for n in ops] == [op.name for op in tape.ops]
    assert [n.output_shape for n in ops] == [[5, 8]] * 7 + [[5, 3]]
    assert all(n.dtype == "float64" and n.device == "cpu" for n in ops)
    leaves = {n.label: n for n in graph.nodes.values() if n.kind != "op"}
    assert set(leaves) == {"input 0", *PARAMS}
    assert leaves["input 0"].kind == "input" and leaves["input 0"].output_shape == [5, 4]
    for name, module in PARAMS.items():  # a parameter sits in the module that owns it
        assert leaves[name].kind == "param" and leaves[name].group == module
    assert {g.id: g.parent for g in graph.groups.values()} == {
        "0": None, "1": None, "2": None, "2.fc": "2", "2.norm": "2", "3": None}
    assert [graph.groups[g].label for g in ("0", "1", "2", "2.fc", "2.norm")] == [
        "0 (Linear)", "1 (ReLU)", "2 (Block)", "fc (Linear)", "norm (LayerNorm)"]
    # edges: each op from what it reads; the block's add also reads the block's input (op 1's output)
    into = {n.id: sorted(graph.nodes[s].label for s, t in graph.edges if t == n.id) for n in ops}
    add = ops[5]
    assert sorted(graph.nodes[s].id for s, t in graph.edges if t == add.id) == sorted([ops[4].id, ops[1].id])
    assert into[ops[0].id] == sorted(["input 0", "0.weight", "0.bias"])
    assert into[ops[3].id] == sorted([ops[2].label, "2.norm.weight", "2.norm.bias"])
    assert len(graph.edges) == 3 + 1 + 3 + 3 + 1 + 2 + 1 + 3
    assert graph.outputs == [ops[-1].id]


def test_a_module_called_twice_is_two_groups():
    gl.manual_seed(0)
    block = nn.Linear(3, 3)
    tape = gl.jit.trace(lambda x: block(block(x).relu()), gl.randn(2, 3))
    graph = capture(tape)
    ops = ops_of(graph)
    assert len(ops) == 3
    assert ops[0].group != ops[2].group and ops[1].group is None
    assert ops[2].group == ops[0].group + "#2"
    assert len(graph.groups) == 2


def test_fused_groups_are_super_nodes_that_open():
    pytest.importorskip("anywidget", reason="the lab widgets need anywidget and ipywidgets: pip install -e '.[lab]'")
    model, x, tape = traced()
    view = gl.lab.GraphView(tape, fused=FUSED)
    graph = view.graph
    fused = [g for g in graph.groups.values() if g.label.startswith("fused")]
    assert len(fused) == 1
    group = fused[0]
    assert group.label == "fused: Mul · Add · Relu" and group.parent == "2"
    members = [n for n in ops_of(graph) if n.group == group.id]
    assert [n.source.split(" · ")[0] for n in members] == ["tape op 4", "tape op 5", "tape op 6"]
    gid = "g:" + group.id
    assert gid not in view.scene.expanded and "g:2" in view.scene.expanded  # drawn closed, its module open
    closed = f'class="gl-group gl-collapsed" data-id="{gid}"'
    assert closed in view.svg and "▸ fused: Mul · Add · Relu" in view.svg
    assert all(f'data-id="{n.id}"' not in view.svg for n in members)
    assert view.groups[gid]["sub"] == "3 ops"
    assert view.toggle(group.id) is True  # a click on it, as the front end sends
    assert all(f'data-id="{n.id}"' in view.svg for n in members)
    assert f'class="gl-group gl-expanded" data-id="{gid}"' in view.svg
    assert "open collapsed" not in view.notice  # closed on purpose, not for size
    assert view.toggle(group.id) is False and closed in view.svg


def test_the_compilers_own_fusion_groups_are_drawn():
    model, x, tape = traced()
    groups = gl.compile.fusion_groups(tape)
    graph = capture(tape)
    fused = [g for g in graph.groups.values() if g.label.startswith("fused")]
    assert len(fused) == len(groups)
    for g, ops in zip(fused, groups):
        assert g.label == "fused: " + " · ".join(tape.ops[i].name for i in ops)
        assert g.closed


def test_inspector_facts_of_a_tape_op():
    model, x, tape = traced()
    graph = capture(tape)
    norm = ops_of(graph)[3]
    op = tape.ops[3]
    assert norm.op == op.name and norm.group == "2.norm"
    assert norm.input_shapes == [[5, 8], [8], [8]] and norm.output_shape == [5, 8]
    assert norm.dtype == "float64" and norm.device == "cpu"
    assert norm.source == "tape op 3 · module 2.norm"
    assert norm.code.startswith("%") and "2.norm.weight" in norm.code and f"= {op.name}(" in norm.code
    assert norm.math == op.function.derivative
    assert norm.words == inspect.cleandoc(op.function.__doc__).split("\n\n")[0].replace("\n", " ")
    assert norm.value is None and norm.grad is None  # a tape keeps neither


def test_a_tape_is_coloured_by_kind_only_and_a_check_says_why_not():
    pytest.importorskip("anywidget", reason="the lab widgets need anywidget and ipywidgets: pip install -e '.[lab]'")
    model, x, tape = traced()
    view = gl.lab.GraphView(tape, fused=[])
    assert set(view.color_labels) == {"kind"} and view.color_mode == "kind"
    kinds = {name for name, _ in view.legends["kind"]["items"]}  # Linear, LayerNorm, ×/+, ReLU; data, weights
    assert kinds == {"matmul", "normalization", "arithmetic", "elementwise", "input", "param"}
    with pytest.raises(ValueError, match="it has 'kind'"):
        gl.lab.GraphView(tape, color="grad")
    with pytest.raises(CaptureError, match=r"cannot draw an object of type dict.*a tape \(gl.jit.trace\(model, x\)\)"):
        gl.lab.GraphView({"not": "a tape"})
    result = view.check(ops_of(view.graph)[0].id)
    assert result["ok"] is None and "a tape keeps no tensor values" in result["message"]
    svg = view.to_svg()
    assert svg.count('class="gl-node gl-kind-op') == len(tape)


def test_a_saved_tape_draws_the_same(tmp_path):
    model, x, tape = traced()
    tape.save(tmp_path / "mlp.tape")
    files = list(tmp_path.iterdir())
    loaded = gl.jit.load(files[0])
    a, b = capture(tape, fused=FUSED), capture(loaded, fused=FUSED)
    assert [n.to_json() for n in a.nodes.values()] == [n.to_json() for n in b.nodes.values()]
    assert a.edges == b.edges
    render(Scene(b))  # lays out and draws


def test_bad_input_says_what_can_be_drawn():
    model, x, tape = traced()
    with pytest.raises(CaptureError, match=r"cannot draw an object of type int.*a tape \(gl.jit.trace"):
        capture(42)
    with pytest.raises(CaptureError, match="fused= is for a tape"):
        capture(model(x).sum(), fused=FUSED)
    with pytest.raises(ValueError, match=r"group 0 names op 99, but the tape's ops are 0 \.\.\. 7"):
        capture(tape, fused=[[5, 99]])
    with pytest.raises(ValueError, match="op 5 is in group 0 and in group 1"):
        capture(tape, fused=[[4, 5], [5, 6]])
    with pytest.raises(ValueError, match="group 0 has 1 op; a fused group has 2 or more"):
        capture(tape, fused=[[4]])
    with pytest.raises(TypeError, match="fused is a list of lists of op indices"):
        capture(tape, fused=3)


# --- eager against compiled, on each device ------------------------------------------------------------

def small_step():
    gl.manual_seed(0)
    model = nn.Sequential(nn.Linear(6, 16), nn.ReLU(), nn.Linear(16, 3))
    x, y = gl.randn(8, 6), gl.randint(0, 3, (8,))
    return model, x, y


def test_compare_compiled_times_eager_and_compiled_rows():
    model, x, y = small_step()
    before = [p.detach().numpy().copy() for p in model.parameters()]
    opt = gl.optim.SGD(model.parameters(), lr=0.1)
    table = gl.lab.compare_compiled(model, F.cross_entropy, x, y, optimizer=opt, devices=["cpu"], repeats=3,
                                    warmup=0, budget_s=0.5)
    assert [(r.device, r.variant) for r in table] == [("cpu", "eager"), ("cpu", "compiled")]
    eager, compiled = table["cpu", "eager"], table["cpu", "compiled"]
    assert eager.timed and compiled.timed and not compiled.fallback and not compiled.error
    assert compiled.vs_eager == pytest.approx(eager.median_s / compiled.median_s)
    assert eager.vs_eager is None
    assert all(np.array_equal(a, p.detach().numpy()) for a, p in zip(before, model.parameters()))  # copies only
    assert all(p.grad is None for p in model.parameters())
    text = str(table)
    assert "× eager" in text and "eager vs gl.compile.make_step" in text and "training step with SGD" in text


def test_a_step_that_falls_back_says_so_in_its_row():
    class ItemInForward(nn.Module):
        def __init__(self):
            super().__init__()
            self.fc = nn.Linear(6, 3)

        def forward(self, x):
            out = self.fc(x)
            return out * 0 if out.sum().item() > 1e9 else out

    gl.manual_seed(0)
    x, y = gl.randn(8, 6), gl.randint(0, 3, (8,))
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        table = gl.lab.compare_compiled(ItemInForward(), F.cross_entropy, x, y, devices=["cpu"], repeats=2,
                                        warmup=0, budget_s=0.3)
    assert not [w for w in seen if issubclass(w.category, gl.compile.CompileWarning)]  # kept in the row
    row = table["cpu", "compiled"]
    assert row.timed and "item()" in row.fallback
    assert row.status.startswith("not compiled, ran eagerly:") and "item()" in row.status
    assert not table["cpu", "eager"].fallback
    from gradlab.lab import timing_chart

    svg = timing_chart.to_svg(table)
    assert svg.count('class="gl-dt-fallback"') == 1 and "not compiled, ran eagerly: " in svg and "· ran eagerly" in svg


def test_compare_compiled_forward_and_bad_arguments():
    model, x, y = small_step()
    table = gl.lab.compare_compiled(model, None, x, devices=["cpu"], repeats=2, warmup=0, budget_s=0.3)
    assert [r.variant for r in table] == ["eager", "compiled"] and "forward of Sequential" in table.measured
    assert "eager vs gl.compile:" in table.measured
    with pytest.raises(TypeError, match="loss_fn must be callable"):
        gl.lab.compare_compiled(model, 3, x, y)
    with pytest.raises(ValueError, match="optimizer and segments are for a training step"):
        gl.lab.compare_compiled(model, None, x, optimizer=gl.optim.SGD(model.parameters(), lr=0.1))
    with pytest.raises(TypeError, match="give the inputs of the step"):
        gl.lab.compare_compiled(model, F.cross_entropy)
    with pytest.raises(KeyError, match="no 'compiled' row for device 'mlx'"):
        table["mlx", "compiled"]


def test_device_timings_draws_an_eager_and_a_compiled_bar_per_device():
    pytest.importorskip("anywidget", reason="the lab widgets need anywidget and ipywidgets: pip install -e '.[lab]'")
    model, x, y = small_step()
    widget = gl.lab.DeviceTimings.compare_compiled(model, F.cross_entropy, x, y,
                                                   optimizer=lambda params: gl.optim.SGD(params, lr=0.1),
                                                   devices=["cpu"], repeats=2, warmup=0, budget_s=0.3)
    assert [(r["device"], r["variant"]) for r in widget.rows] == [("cpu", "eager"), ("cpu", "compiled")]
    svg = widget.svg
    assert svg.count('class="gl-dt-bar gl-dt-bar-eager"') == 1
    assert svg.count('class="gl-dt-bar gl-dt-bar-compiled"') == 1
    assert re.search(r"· [0-9.]+× eager</text>", svg)
    assert 'data-variant="compiled"' in svg and widget.runs == 1
    widget.run()
    assert widget.runs == 2 and widget.table["cpu", "compiled"].timed


class _HostSquare(gl.autograd.Function):
    """x², computed with numpy on x.array: no backend call the compiler could record."""

    @staticmethod
    def forward(ctx, x):
        return x._wrap(np.square(x.array))

    @staticmethod
    def backward(ctx, grad):
        raise AssertionError("not reached: the tape is only drawn")


def test_a_tape_the_compiler_cannot_take_is_drawn_without_fused_groups_and_says_so():
    x = gl.randn(3, 4, dtype=gl.float64)
    tape = gl.jit.trace(lambda x: (_HostSquare.apply(x * 2) + 1).relu(), x)
    graph = capture(tape)
    assert not any(g.label.startswith("fused") for g in graph.groups.values())
    assert graph.note.startswith("no fused groups drawn") and "made outside the backend's calls" in graph.note
    assert capture(traced()[2]).note == ""  # a tape it compiles: nothing to say
