"""The lab reads the engine only through its public surface.

The lab draws what the engine really did, so it is tempting to reach into the engine's private
fields (what a node saved, whether backward freed it). Those fields change with the engine; the
names a learner can also call stay. The engine gives the lab what it needs in public —
``Node.freed``, ``Node.inspect_saved()``, ``Node.output_shapes``, ``Node.sequence_nr``,
``Node.forward_trace``, ``Recording.op_records()``, ``gradlab.backends.device.device_info`` — and
an AST scan of ``gradlab/lab`` fails on an underscore name imported from an engine package, or an
underscore attribute of the engine read off an object that is not the lab's own.
"""

from __future__ import annotations

import ast
import pathlib
import traceback

import pytest

import gradlab as gl
from gradlab.autograd.function import SavedValue
from gradlab.backends.device import device_info

GRADLAB = pathlib.Path(__file__).resolve().parent.parent / "gradlab"
ENGINE = ("autograd", "ops", "tensor", "tensor_types", "nn", "backends")  # below the lab: gradlab.<these>


def _is_private(name: str) -> bool:
    return name.startswith("_") and not name.startswith("__") and not (name.startswith("_repr_") and name.endswith("_"))


def _engine_names(tree) -> set:
    """Every underscore name an engine file defines or spells: functions, classes, variables, attributes
    it assigns, and names in strings (``__slots__``, ``setattr(self, "_parameters", ...)``)."""
    names = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.add(node.name)
        elif isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
            names.add(node.id)
        elif isinstance(node, ast.Attribute) and isinstance(node.ctx, ast.Store):
            names.add(node.attr)
        elif isinstance(node, ast.Constant) and isinstance(node.value, str) and node.value.isidentifier():
            names.add(node.value)
    return {name for name in names if _is_private(name)}


def _own_fields(tree) -> set:
    """The underscore fields a lab file's own classes have (methods, class attributes, ``self._x = ...``):
    a class may use its own private fields, in the file that defines it."""
    names = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ClassDef):
            for item in node.body:
                if isinstance(item, (ast.FunctionDef, ast.AsyncFunctionDef)):
                    names.add(item.name)
                elif isinstance(item, (ast.Assign, ast.AnnAssign)):
                    targets = item.targets if isinstance(item, ast.Assign) else [item.target]
                    names.update(t.id for t in targets if isinstance(t, ast.Name))
        elif (isinstance(node, ast.Attribute) and isinstance(node.ctx, ast.Store)
              and isinstance(node.value, ast.Name) and node.value.id in ("self", "cls")):
            names.add(node.attr)
    return {name for name in names if _is_private(name)}


def _engine_files():
    for name in ENGINE:
        path = GRADLAB / name
        yield from sorted(path.rglob("*.py")) if path.is_dir() else [path.with_suffix(".py")]


NAMEDTUPLE_API = {"_fields", "_asdict", "_replace", "_make"}  # public in Python, though they start with _


def engine_privates() -> set:
    """Every underscore name the engine packages define (less namedtuple's public API)."""
    names = set()
    for path in _engine_files():
        names |= _engine_names(ast.parse(path.read_text()))
    return names - NAMEDTUPLE_API


def _engine_module(node: ast.ImportFrom) -> bool:
    """Whether a ``from ... import`` in a file of gradlab/lab/ reads from an engine package."""
    if node.level:
        package = ["gradlab", "lab"][: 3 - node.level] if node.level <= 2 else []
        module = ".".join(package + ([node.module] if node.module else []))
    else:
        module = node.module or ""
    parts = module.split(".")
    return len(parts) > 1 and parts[0] == "gradlab" and parts[1] in ENGINE


def violations(source: str, filename: str, privates: set) -> list:
    """Where a lab file uses a private name of the engine: imported, as an attribute, or through getattr."""
    tree = ast.parse(source)
    own = _own_fields(tree)
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and _engine_module(node):
            found += [f"{filename}:{node.lineno} imports {a.name} from {node.module}" for a in node.names
                      if _is_private(a.name)]
        elif isinstance(node, ast.Attribute) and node.attr in privates and node.attr not in own:
            if not (isinstance(node.value, ast.Name) and node.value.id in ("self", "cls")):
                found.append(f"{filename}:{node.lineno} uses {ast.unparse(node)}")
        elif (isinstance(node, ast.Call) and getattr(node.func, "id", None) in ("getattr", "hasattr", "setattr")
              and len(node.args) > 1 and isinstance(node.args[1], ast.Constant)
              and node.args[1].value in privates and node.args[1].value not in own):
            found.append(f"{filename}:{node.lineno} uses {ast.unparse(node)}")
    return sorted(found, key=lambda where: int(where.split(":")[1].split()[0]))


def test_the_lab_uses_no_private_name_of_the_engine():
    privates = engine_privates()
    found = []
    for path in sorted((GRADLAB / "lab").glob("*.py")):
        found += violations(path.read_text(), path.name, privates)
    assert not found, ("gradlab/lab reads the engine's private names; use (or add) the public surface "
                       "(Node.freed, Node.inspect_saved(), ...):\n  " + "\n  ".join(found))


def test_the_scan_finds_each_kind_of_private_use():
    source = (
        "from ..autograd.function import _FREED, Node\n"
        "from ..backends.device import _load_backend\n"
        "class Mine:\n"
        "    def __init__(self):\n"
        "        self._own = 1\n"
        "    def draw(self, node, rec):\n"
        "        leaf._grad = None\n"
        "        return node._saved, self._saved_versions, rec._own, getattr(node, '_output_shapes', None)\n"
    )
    found = violations(source, "example.py", engine_privates())
    assert found == [
        "example.py:1 imports _FREED from autograd.function",
        "example.py:2 imports _load_backend from backends.device",
        "example.py:7 uses leaf._grad",
        "example.py:8 uses node._saved",
        "example.py:8 uses getattr(node, '_output_shapes', None)",
    ]


# --- the public surface itself ----------------------------------------------------------------------------

def test_freed_says_whether_backward_released_what_forward_saved():
    x = gl.tensor([1.0, 2.0], requires_grad=True)
    y = (x * x).sum()
    node = y.grad_fn.next_functions[0][0]  # the Mul, which saved x twice
    assert not node.freed
    y.backward(retain_graph=True)
    assert not node.freed
    y.backward()
    assert node.freed and node.inspect_saved() is None


def test_inspect_saved_names_the_saved_inputs_and_outputs():
    x = gl.tensor([0.5, 1.0], requires_grad=True)
    w = gl.tensor([2.0, 3.0], requires_grad=True)
    (a, output_a), (b, output_b) = (x * w).grad_fn.inspect_saved()
    assert a is x and b is w and output_a is output_b is None  # the inputs themselves
    y = x.exp()  # exp saves its own output (kept without its history), and None in the input's place
    assert [type(s) for s in y.grad_fn.inspect_saved()] == [SavedValue, SavedValue]
    nothing, out = y.grad_fn.inspect_saved()
    assert nothing == (None, None)
    assert out.output == 0 and out.tensor.array is y.array and out.tensor.grad_fn is None


def test_inspect_saved_checks_no_versions():
    x = gl.tensor([1.0, 2.0], requires_grad=True)
    a = x * 1.0
    y = a * a
    a.add_(1.0)  # changes what y's node saved
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        y.grad_fn.saved_tensors
    assert [s.tensor.tolist() for s in y.grad_fn.inspect_saved()] == [[2.0, 3.0], [2.0, 3.0]]


def test_output_shapes_and_sequence_nr():
    x = gl.ones(4, 3, requires_grad=True)
    first, second = x.split([1, 3])
    node = first.grad_fn
    assert node.output_shapes == ((1, 3), (3, 3))
    leaf = node.next_functions[0][0]
    assert leaf.name() == "AccumulateGrad" and leaf.output_shapes == ((4, 3),)
    later = (second * 2).grad_fn
    assert node.sequence_nr < later.sequence_nr < leaf.sequence_nr  # leaves' nodes come after every op


def test_forward_trace_is_kept_while_detect_anomaly_is_on():
    x = gl.ones(2, requires_grad=True)
    assert (x * 2).grad_fn.forward_trace is None
    with gl.autograd.detect_anomaly():
        y = x * 2
    trace = y.grad_fn.forward_trace
    assert all(isinstance(frame, traceback.FrameSummary) for frame in trace)
    assert any(frame.filename == __file__ and "x * 2" in frame.line for frame in trace)


def test_a_recording_lists_its_op_records_while_it_runs_and_after():
    x = gl.ones(3, requires_grad=True)
    with gl.lab.record() as rec:
        y = x.exp()
        assert [r.function.__name__ for r in rec.op_records()] == ["Exp"]
        (y * 2).sum()
    assert [r for r in rec.op_records()] == [op.record for op in rec.ops]


def test_device_info_tries_one_device_type():
    assert device_info("cpu").available
    with pytest.raises(ValueError, match="unknown device type 'tpu'; the known types are cpu"):
        device_info("tpu")
