"""``gl.lab.GraphView(step)``: a compiled step drawn as the program it runs (gradlab/lab/program_graph.py).

One node per backend call (a fused run's calls inside its closed group), in boxes per phase, module and op;
parameters named as the model names them; a step with no program to show says why instead of drawing.
"""

from __future__ import annotations

import warnings

import pytest

import gradlab as gl
from gradlab.lab.capture import CaptureError, capture

nn, F = gl.nn, gl.nn.functional


def compiled_mlp(calls=2):
    gl.manual_seed(0)
    model = nn.Sequential(nn.Linear(6, 8), nn.Tanh(), nn.Linear(8, 3))
    step = gl.compile.make_step(model, F.cross_entropy, optimizer=gl.optim.SGD(model.parameters(), lr=0.1))
    x, y = gl.randn(5, 6), gl.tensor([0, 1, 2, 0, 1])
    for _ in range(calls):
        step(x, y)
    return model, step


def test_every_call_of_the_program_is_a_node_in_its_phase_module_and_op():
    model, step = compiled_mlp()
    program = next(iter(step.cache.values())).program
    graph = capture(step)
    calls = [i for ins in program.instrs for i in getattr(ins.fn, "instrs", None) or (ins,)]
    ops = [n for n in graph.nodes.values() if n.kind == "op"]
    assert [n.op for n in ops] == [i.name for i in calls]  # in program order, fused runs opened
    assert {"forward", "backward", "update"} <= set(graph.groups)
    assert graph.groups["forward:0"].label == "0 (Linear)" and graph.groups["backward:2"].parent == "backward"
    matmul = next(n for n in ops if n.op == "matmul")
    assert matmul.group == "forward:0" and matmul.words == "matrix product with batch broadcasting"
    assert "for Linear in module 0" in matmul.source and "matmul(" in matmul.code
    leaves = {n.label: n for n in graph.nodes.values() if n.kind != "op"}
    assert {name for name, _ in model.named_parameters()} <= set(leaves) and leaves["0.weight"].kind == "param"
    assert {"input 0", "input 1"} <= set(leaves)
    ones = [n for label, n in leaves.items() if label == "constant 1"]  # the loss's seed, made once
    assert ones and ones[0].words.startswith("made once") and not {"ones", "full"} & {i.name for i in calls}
    updates = [n for n in ops if n.op == "SGD update"]
    assert len(updates) == 4 and all(n.group == "update" for n in updates)
    for update in updates:  # each update follows its parameter's accumulate
        (source,) = [a for a, b in graph.edges if b == update.id]
        assert graph.nodes[source].op == "accumulate into .grad"
    assert graph.outputs and graph.nodes[graph.outputs[0]].source.startswith("program")  # the loss


def test_a_fused_run_is_a_closed_group_of_its_calls():
    gl.manual_seed(0)
    model = nn.Linear(4, 4)
    step = gl.compile.make_step(model, lambda out, y: (out * y * y * 2 - y).sum())  # an elementwise chain
    x = gl.randn(3, 4)
    step(x, x.abs())
    graph = capture(step)
    fused = [g for g in graph.groups.values() if g.label.startswith("fused: ")]
    assert fused and all(g.closed for g in fused)
    inside = [n for n in graph.nodes.values() if n.group == fused[0].id]
    assert len(inside) >= 3 and fused[0].label == "fused: " + " · ".join(n.op for n in inside)


def test_a_step_with_nothing_to_draw_says_why():
    _, step = compiled_mlp(calls=0)
    with pytest.raises(CaptureError, match=r"has not been called yet: it compiles on its first call"):
        gl.lab.GraphView(step)
    model = nn.Linear(3, 1)
    eager = gl.compile.make_step(model, lambda out, y: out.sum() * out.sum().item())
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", gl.compile.CompileWarning)
        eager(gl.randn(2, 3), gl.randn(2, 1))
    with pytest.raises(CaptureError, match=r"runs eagerly, so there is no program to draw: .*item\(\)"):
        gl.lab.GraphView(eager)
    deep = nn.Sequential(nn.Linear(3, 3), nn.ReLU(), nn.Linear(3, 2))
    pieces = gl.compile.make_step(deep, F.cross_entropy, segments=2)
    pieces(gl.randn(4, 3), gl.tensor([0, 1, 0, 1]))
    with pytest.raises(CaptureError, match=r"runs as 3 programs \(segments=2\): draw one of them"):
        gl.lab.GraphView(pieces)
    one = list(pieces.cache.values())[-1].programs()[0]
    assert any(n.kind == "op" for n in capture(one).nodes.values())  # a program itself can be drawn
    with pytest.raises(CaptureError, match="fused= is for a tape"):
        capture(compiled_mlp()[1], fused=[[0, 1]])


def test_check_this_node_on_a_program_says_to_record_instead():
    from gradlab.lab.node_check import check_node

    _, step = compiled_mlp()
    view = gl.lab.GraphView(step)
    node = next(n for n in view.graph.nodes.values() if n.kind == "op")
    with pytest.raises(CaptureError, match="a compiled program keeps no tensor values"):
        check_node(view, node.id)
