"""A compiled step's program as the lab's ``Graph``: one box per backend call it makes, in the op it ran for.

``gl.lab.GraphView(step)`` draws what ``gl.compile.make_step`` runs after its first call:

* each instruction is an op node named by its primitive (``matmul``, ``iadd``, ``log_softmax_backward``),
  with the contract's words for it, its output's shape and dtype, and its line of the listing;
* nodes sit in a box per phase — forward, backward (the engine's own backward, as recorded) and
  update — in the box of the module their op ran in, and in a box of the op when it made several;
* a run of elementwise calls fused into one kernel is a super-node, closed at first, that opens to
  show the calls it does;
* inputs, parameters (named as the model names them) and buffers are leaves; a write into an array
  (``iadd``, ``setitem``) is where later readers of that array read from.

A program keeps no values, so the graph offers only the "kind" colouring.
"""

from __future__ import annotations

from ..backends.contract import FUSED_KERNELS, PRIMITIVES
from .graph import Graph, GraphNode, Group

WORDS = {name: text for names, text in {**PRIMITIVES, **FUSED_KERNELS}.items() for name in names.split()}
CATEGORY = {
    **dict.fromkeys(("add", "sub", "mul", "div", "neg", "iadd", "isub", "imul", "pow"), "arithmetic"),
    **dict.fromkeys(("matmul", "matmul_into", "einsum"), "matmul"),
    **dict.fromkeys(("sum", "prod", "max", "min", "all", "any", "argmax", "argmin", "cumsum", "logsumexp",
                     "fold_windows", "add_at"), "reduction"),
    **dict.fromkeys(("reshape", "permute", "broadcast_to", "getitem", "setitem", "concatenate", "stack", "astype",
                     "copy", "full", "zeros", "ones", "empty", "arange", "asarray", "sliding_windows", "take_along_axis",
                     "diagonal", "flip", "roll", "pad"), "shape"),
    **dict.fromkeys(("layer_norm", "layer_norm_backward"), "normalization"),
}
PHASES = {"forward": "forward", "backward": "backward (the engine's, as recorded)", "update": "update"}


def is_compiled_step(obj) -> bool:
    """True for a ``gl.compile.make_step`` step (by type name, so capture need not import the compiler)."""
    return type(obj).__name__ == "CompiledStep" and hasattr(obj, "cache")


def is_program(obj) -> bool:
    """True for a planned ``Program`` (one piece of a step with segments, say)."""
    return type(obj).__name__ == "Program" and hasattr(obj, "instrs") and hasattr(obj, "slots")


def program_of(step):
    """(program, module classes by path) of a compiled step's most recent signature, or why there is none (str)."""
    if step.fallback is not None:
        return f"this step runs eagerly, so there is no program to draw: {step.fallback}"
    if not step.cache:
        return "the step has not been called yet: it compiles on its first call, step(x, y); then draw it"
    compiled = list(step.cache.values())[-1]
    programs = compiled.programs()
    if len(programs) != 1:
        return (f"the step runs as {len(programs)} programs (segments={step.segments}): draw one of them, "
                "gl.lab.GraphView(list(step.cache.values())[-1].programs()[0])")
    return programs[0], getattr(compiled.tape, "modules", None) or {}


def program_to_graph(program, names: dict, modules: dict) -> Graph:
    """The program drawn as a graph; ``names`` maps id(tensor) -> its name in the model ("0.weight"),
    ``modules`` a module's path -> its class name ("0" -> "Linear")."""
    graph = Graph(source="program", modes=("kind",))
    lines = program.listing().splitlines()
    producer: dict = {}  # slot -> node id of what made (or last wrote) it
    leaf_names = {program.inputs[i]: f"input {i}" for i in range(len(program.inputs))}
    accumulated: dict = {}  # id(leaf) -> node id of its "accumulate into .grad"
    sizes = _sizes(program)
    for phase in dict.fromkeys(ins.phase for ins in program.instrs):
        graph.groups[phase] = Group(phase, PHASES.get(phase, phase), None)
    for n, ins in enumerate(program.instrs):
        inner = getattr(ins.fn, "instrs", None)  # a fused run: the calls it does in one kernel
        if inner:
            gid = f"fused{n}"
            graph.groups[gid] = Group(gid, "fused: " + " · ".join(i.name for i in inner),
                                      _op_group(graph, inner[0], sizes, modules) if len({id(i.op) for i in inner}) == 1
                                      else ins.phase,
                                      closed=True)
            for step in inner:
                _add(graph, program, step, gid, f"fused into instruction {n}", lines[n], producer, leaf_names, names)
            continue
        node = _add(graph, program, ins, _op_group(graph, ins, sizes, modules), f"instruction {n}", lines[n], producer,
                    leaf_names, names)
        leaf = getattr(ins.fn, "leaf", None)
        leaf = getattr(ins.fn, "param", None) if leaf is None else leaf
        if leaf is not None:  # the engine's AccumulateGrad, or the optimizer's update of that parameter
            if id(leaf) in accumulated:
                graph.edges.append((accumulated[id(leaf)], node.id))
            accumulated[id(leaf)] = node.id
    loss = program.results.get("loss")
    graph.outputs.extend([producer[loss]] if loss in producer else [])
    graph.freed = False
    return graph


def _op_group(graph, ins, sizes, modules) -> str:
    """Where an instruction is drawn: in its phase's box, in the box of the module its op ran in, in a box of
    the op itself when the op made several calls there (boxes made when first needed)."""
    op, parent = ins.op, ins.phase
    if op is None:
        return parent
    if op.module:
        gid = f"{ins.phase}:{op.module}"
        if gid not in graph.groups:
            kind = modules.get(op.module)
            graph.groups[gid] = Group(gid, f"{op.module} ({kind})" if kind else f"module {op.module}", parent)
        parent = gid
    if sizes.get((ins.phase, op.index), 0) < 2 or modules.get(op.module) == op.name:  # (a Linear's Linear: one box)
        return parent
    gid = f"{ins.phase}/{op.index}"
    if gid not in graph.groups:
        graph.groups[gid] = Group(gid, op.name, parent)
    return gid


def _sizes(program) -> dict:
    """(phase, op index) -> how many calls the program makes for that op there (a fused run's counted inside)."""
    sizes: dict = {}
    for ins in program.instrs:
        for step in getattr(ins.fn, "instrs", None) or (ins,):
            if step.op is not None:
                key = (step.phase, step.op.index)
                sizes[key] = sizes.get(key, 0) + 1
    return sizes


def _add(graph, program, ins, group, where, line, producer, leaf_names, names) -> GraphNode:
    """One instruction's node, its edges from what it reads, and the slots it makes (or writes) from now on."""
    out = program.slots[ins.outs[0]] if len(ins.outs) == 1 else None
    op = ins.op
    node = graph.add(GraphNode(
        graph.new_id(), "op", ins.name, ins.name, group=group,
        input_shapes=[list(program.slots[i].shape) for i in ins.ins if i is not None and program.slots[i].shape],
        output_shape=list(out.shape) if out is not None and out.shape is not None else None,
        dtype=str(getattr(out, "dtype", "") or ""), device=program.backend.name,
        source=f"program {where} · {ins.phase}" + (f" · for {op.name}" + (f" in module {op.module}" if op.module else "")
                                                  if op is not None else ""),
        code=line.strip(), words=WORDS.get(ins.name, _engine_words(ins)), requires_grad=False,
        category=CATEGORY.get(ins.name, "other" if ins.name not in WORDS else "elementwise"),
    ), ins)
    for i in dict.fromkeys(i for i in ins.ins if i is not None):
        if i not in producer:
            producer[i] = _leaf(graph, program, i, leaf_names, names).id
        graph.edges.append((producer[i], node.id))
    for o in ins.outs:
        producer[o] = node.id
    if not ins.outs and ins.ins and not ins.pure and ins.name in WORDS:  # a write: readers from now on read it here
        producer[ins.ins[0]] = node.id
    return node


def _engine_words(ins) -> str:
    if ins.name.startswith("accumulate"):
        return "the gradient of a parameter, final here: set as its .grad (or added into it), as AccumulateGrad does"
    if ins.phase == "update":
        return "the optimizer's step for one parameter (Optimizer._update), run as soon as its gradient is final"
    if ins.name.startswith("guard"):
        return "a value read back to the host, read again each run: if it differs from the traced one, the step runs eagerly"
    if ins.name.startswith("check"):
        return "an op's check of its input's values, run again each time (a bad value raises the op's error)"
    if ins.name.startswith("rebind"):
        return "a buffer the step gave a new array (a running statistic): the tensor is handed this one, each run"
    return "a call of the backend, as the recorded step made it"


def _constant_name(value) -> str:
    """"constant", or "constant 1.0" for an array holding one value throughout."""
    import numpy as np

    try:
        flat = np.asarray(value).reshape(-1)
    except Exception:  # (an array off the host: named plainly)
        return "constant"
    if flat.size and flat.dtype.kind in "biuf" and bool((flat == flat[0]).all()):
        return f"constant {flat[0].item():g}"
    return "constant"


def _leaf(graph, program, slot, leaf_names, names) -> GraphNode:
    """An input, a parameter or buffer (read live each run) or a constant, named as the model names it."""
    s = program.slots[slot]
    tensor = program.externals.get(slot)
    if tensor is not None:
        name = names.get(id(tensor), f"{'parameter' if tensor.requires_grad else 'tensor'} {tuple(s.shape)}")
        kind, words = ("param" if tensor.requires_grad else "input"), "read as it is at the start of each run"
    elif slot in leaf_names:
        name, kind, words = leaf_names[slot], "input", "an input of the step: filled in by each call"
    else:
        name, kind = _constant_name(program.constants.get(slot)), "input"
        words = ("made once, when the step was compiled: host data given to asarray, or an array filled from no "
                 "other array (the ones of 1 − y) that no call writes into")
    return graph.add(GraphNode(graph.new_id(), kind, name, name, output_shape=list(s.shape) if s.shape else None,
                               dtype=str(s.dtype or ""), words=words, requires_grad=kind == "param",
                               source=f"program slot %{slot}"))
