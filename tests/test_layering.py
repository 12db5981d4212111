"""Imports flow one way: lab → nn/optim/data/io/training → tensor → ops → autograd → backends.

The test reads every gradlab module's imports with ``ast`` (at module level and inside
functions alike, since both run) and fails on an import cycle between gradlab modules, and on
an import from a lower layer into a higher one, except the ones docs/architecture.md names
(``ALLOWED_UPWARD``). A new module must be given a layer in ``LAYERS``.
"""

from __future__ import annotations

import ast
import pathlib
from typing import NamedTuple

import pytest

GRADLAB = pathlib.Path(__file__).resolve().parent.parent / "gradlab"

# Bottom first. A module belongs to the layer of the longest prefix below that names it.
LAYERS = (
    # dtypes: the DType objects every backend maps
    ("backends", ("gradlab.dtypes", "gradlab.return_types", "gradlab.size", "gradlab.layouts", "gradlab.backends")),
    ("autograd", ("gradlab.autograd", "gradlab.generator")),  # generator: the random state, below every op
    ("ops", ("gradlab.ops",)),
    ("tensor", ("gradlab.tensor", "gradlab.tensor_types", "gradlab.creation", "gradlab.random", "gradlab.printing",
                "gradlab.scalar", "gradlab.linalg", "gradlab.special", "gradlab.cuda",
                "gradlab.factories", "gradlab.settings", "gradlab.testing", "gradlab.distributed", "gradlab.naming",
                "gradlab.dlpack")),
    ("nn/optim/data/io/training", ("gradlab.nn", "gradlab.optim", "gradlab.data", "gradlab.utils", "gradlab.io",
                                   "gradlab.amp", "gradlab.cpu", "gradlab.cuda.amp",
                                   "gradlab.training", "gradlab.jit", "gradlab.compile")),
    ("lab", ("gradlab.lab",)),
    ("package", ("gradlab",)),  # gradlab/__init__.py gathers the public names of every layer
)

# Upward imports that docs/architecture.md names: module -> (highest layer it may import, the reason).
ALLOWED_UPWARD = {
    "gradlab.autograd.functional": (
        "tensor",
        "jacobian/hessian/vjp keep PyTorch's place (torch.autograd.functional) but are tools built on Tensor; "
        "gradlab/__init__.py imports them after Tensor exists (docs/architecture.md)",
    ),
}

# Cycles that another branch is removing: the set of modules in the cycle -> why it is tolerated for now.
KNOWN_CYCLES = {
}


class Import(NamedTuple):
    importer: str
    target: str
    line: int
    in_function: bool

    def where(self) -> str:
        place = "inside a function" if self.in_function else "at module level"
        return f"{_path_of(self.importer)}:{self.line} ({place}) imports {self.target}"


def _modules(root: pathlib.Path) -> dict:
    """Dotted module name -> (file, is_package), for every .py file under gradlab/."""
    modules = {}
    for path in sorted(root.rglob("*.py")):
        parts = list(path.relative_to(root.parent).with_suffix("").parts)
        is_package = parts[-1] == "__init__"
        modules[".".join(parts[:-1] if is_package else parts)] = (path, is_package)
    return modules


def _targets(node, module: str, is_package: bool, modules: dict) -> list:
    """The gradlab modules one import statement loads (a name that is not a module means its package)."""
    if isinstance(node, ast.Import):
        return [alias.name for alias in node.names if alias.name.split(".")[0] == "gradlab"]
    if node.level:
        package = module.split(".") if is_package else module.split(".")[:-1]
        package = package[: len(package) - (node.level - 1)]
        base = ".".join(package + ([node.module] if node.module else []))
    else:
        base = node.module or ""
        if base.split(".")[0] != "gradlab":
            return []
    return [f"{base}.{alias.name}" if f"{base}.{alias.name}" in modules else base for alias in node.names]


class _ImportFinder(ast.NodeVisitor):
    def __init__(self, module, is_package, modules):
        self.module, self.is_package, self.modules = module, is_package, modules
        self.depth, self.found = 0, []

    def _function(self, node):
        self.depth += 1
        self.generic_visit(node)
        self.depth -= 1

    visit_FunctionDef = visit_AsyncFunctionDef = visit_Lambda = _function

    def _import(self, node):
        for target in _targets(node, self.module, self.is_package, self.modules):
            if target != self.module:
                self.found.append(Import(self.module, target, node.lineno, self.depth > 0))

    visit_Import = visit_ImportFrom = _import


def imports_of(root: pathlib.Path = GRADLAB) -> list:
    """Every import between gradlab modules, module-level and function-level."""
    modules = _modules(root)
    found = []
    for module, (path, is_package) in modules.items():
        finder = _ImportFinder(module, is_package, modules)
        finder.visit(ast.parse(path.read_text(encoding="utf-8"), filename=str(path)))
        found.extend(finder.found)
    return found


def layer_of(module: str):
    """(index, name) of the module's layer, or None if no entry in LAYERS names it or a package above it."""
    best = None
    for index, (name, prefixes) in enumerate(LAYERS):
        for prefix in prefixes:
            inside = module.startswith(prefix + ".") and prefix != "gradlab"  # the package itself, not all of it
            if (module == prefix or inside) and (best is None or len(prefix) > best[0]):
                best = (len(prefix), index, name)
    return best and best[1:]


def reach_of(module: str, allowed=ALLOWED_UPWARD) -> int:
    """The highest layer the module may import: its own, or the one its ALLOWED_UPWARD entry names."""
    if module in allowed:
        return next(i for i, (name, _) in enumerate(LAYERS) if name == allowed[module][0])
    return layer_of(module)[0]


def upward_imports(imports, allowed=ALLOWED_UPWARD) -> list:
    """The imports that reach a layer above their own, less those allowed: (import, own layer, its layer)."""
    found = []
    for imp in imports:
        own_name, (theirs, their_name) = layer_of(imp.importer)[1], layer_of(imp.target)
        if theirs > reach_of(imp.importer, allowed):
            found.append((imp, own_name, their_name))
    return found


def import_cycles(imports) -> list:
    """Each group of modules that import each other (in a circle), as one import path around it."""
    graph = {}
    for imp in imports:
        graph.setdefault(imp.importer, {}).setdefault(imp.target, imp)
        graph.setdefault(imp.target, {})
    cycles = []
    for group in _strongly_connected(graph):
        if len(group) > 1:
            cycles.append((frozenset(group), _path_around(graph, group)))
    return cycles


def _strongly_connected(graph) -> list:
    """Tarjan's algorithm, iteratively: the groups in which every module reaches every other."""
    index, low, on_stack, stack, groups, counter = {}, {}, set(), [], [], [0]
    for start in graph:
        if start in index:
            continue
        work = [(start, iter(graph[start]))]
        index[start] = low[start] = counter[0]
        counter[0] += 1
        stack.append(start)
        on_stack.add(start)
        while work:
            node, children = work[-1]
            for child in children:
                if child not in index:
                    index[child] = low[child] = counter[0]
                    counter[0] += 1
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(graph[child])))
                    break
                if child in on_stack:
                    low[node] = min(low[node], index[child])
            else:
                work.pop()
                if work:
                    low[work[-1][0]] = min(low[work[-1][0]], low[node])
                if low[node] == index[node]:
                    group = set()
                    while True:
                        member = stack.pop()
                        on_stack.discard(member)
                        group.add(member)
                        if member == node:
                            break
                    groups.append(group)
    return groups


def _path_around(graph, group) -> list:
    """The imports of one shortest circle through the group's first module (breadth-first)."""
    start = min(group)
    came_from, frontier = {start: None}, [start]
    while frontier:
        following = []
        for node in frontier:
            for child, imp in graph[node].items():
                if child == start:
                    path = [imp]
                    while came_from[node] is not None:
                        path.append(came_from[node])
                        node = came_from[node].importer
                    return path[::-1]
                if child in group and child not in came_from:
                    came_from[child] = imp
                    following.append(child)
        frontier = following
    return []


def _path_of(module: str) -> str:
    path, _ = _GRADLAB_MODULES.get(module, (None, False))
    return str(path.relative_to(GRADLAB.parent)) if path else module


_GRADLAB_MODULES = _modules(GRADLAB)
IMPORTS = imports_of()


# --- the rules, on gradlab itself ---------------------------------------------------------------


def test_every_module_has_a_layer():
    modules = sorted(_GRADLAB_MODULES)
    assert len(modules) > 50  # the walk found the package
    unplaced = [m for m in modules if layer_of(m) is None]
    assert not unplaced, (
        "these modules have no layer: add each to LAYERS in tests/test_layering.py (and to the picture in "
        "docs/architecture.md if it starts a new area): " + ", ".join(unplaced)
    )


def test_no_import_cycles_between_gradlab_modules():
    cycles = [(group, path) for group, path in import_cycles(IMPORTS) if group not in KNOWN_CYCLES]
    assert not cycles, "import cycles (each import in the circle; break one of them):\n" + "\n\n".join(
        "\n".join("  " + imp.where() for imp in path) for _, path in cycles
    )


def test_imports_flow_down_the_layers():
    found = upward_imports(IMPORTS)
    assert not found, "imports that reach up a layer (imports flow lab → nn/optim/data → tensor → ops → autograd " \
        "→ backends; move the code down, or pass what it needs in):\n" + "\n".join(
            f"  {imp.where()}: layer '{own}' may not import layer '{theirs}' above it" for imp, own, theirs in found
        )


def test_each_allowed_exception_is_still_needed():
    ranks = {name: i for i, (name, _) in enumerate(LAYERS)}
    unused = [module for module in ALLOWED_UPWARD
              if not any(imp.importer == module and layer_of(imp.target)[0] > layer_of(module)[0] for imp in IMPORTS)]
    assert not unused, f"ALLOWED_UPWARD entries no import needs any more (remove them): {unused}"
    assert all(layer in ranks for layer, _ in ALLOWED_UPWARD.values())


def test_the_package_imports_its_layers_bottom_up():
    """gradlab/__init__.py reads as the picture: backends first, then autograd, ops, tensor, ..., nn, optim, data, io."""
    tree = ast.parse((GRADLAB / "__init__.py").read_text(encoding="utf-8"))
    modules = _GRADLAB_MODULES
    order = []
    for node in tree.body:  # module level only: functions (the lazy gradlab.lab) run later
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            for target in _targets(node, "gradlab", True, modules):
                if target != "gradlab":
                    order.append((reach_of(target), target, node.lineno))  # a tool on Tensor comes after it
    backwards = [(a, b) for a, b in zip(order, order[1:]) if b[0] < a[0]]
    assert not backwards, "gradlab/__init__.py imports a lower layer after a higher one:\n" + "\n".join(
        f"  line {b[2]} imports {b[1]} (layer '{LAYERS[b[0]][0]}') after line {a[2]} imported {a[1]} "
        f"(layer '{LAYERS[a[0]][0]}')" for a, b in backwards
    )


def test_ops_never_import_tensor():
    assert not [imp for imp in IMPORTS if imp.importer.startswith("gradlab.ops") and imp.target == "gradlab.tensor"]


# --- the checks themselves catch what they are for ----------------------------------------------


def test_an_upward_import_is_reported_with_its_place():
    (imp, own, theirs), = upward_imports([Import("gradlab.ops.shape", "gradlab.tensor", 12, True)])
    assert (own, theirs) == ("ops", "tensor") and imp.where().endswith(":12 (inside a function) imports gradlab.tensor")


def test_an_allowed_import_is_not_reported():
    assert upward_imports([Import("gradlab.autograd.functional", "gradlab.tensor", 3, False)]) == []
    assert upward_imports([Import("gradlab.autograd.functional", "gradlab.nn", 3, False)])  # only up to tensor


def test_a_cycle_is_reported_as_the_imports_around_it():
    imports = [Import("gradlab.tensor", "gradlab.random", 5, True), Import("gradlab.random", "gradlab.creation", 9, False),
               Import("gradlab.creation", "gradlab.tensor", 2, False), Import("gradlab.ops.shape", "gradlab.dtypes", 1, False)]
    ((group, path),) = import_cycles(imports)
    assert group == {"gradlab.tensor", "gradlab.random", "gradlab.creation"}
    assert [(imp.importer, imp.target) for imp in path] == [
        ("gradlab.creation", "gradlab.tensor"), ("gradlab.tensor", "gradlab.random"), ("gradlab.random", "gradlab.creation")]


@pytest.mark.parametrize("module, layer", [
    ("gradlab.backends.numpy_backend", "backends"), ("gradlab.dtypes", "backends"), ("gradlab.autograd.engine", "autograd"),
    ("gradlab.ops.shape", "ops"), ("gradlab.random", "tensor"), ("gradlab.nn.modules.rnn", "nn/optim/data/io/training"),
    ("gradlab.lab.capture", "lab"), ("gradlab", "package"),
])
def test_a_module_belongs_to_the_layer_of_its_longest_prefix(module, layer):
    assert layer_of(module)[1] == layer


def test_a_new_top_level_module_has_no_layer_until_it_is_given_one():
    assert layer_of("gradlab.a_module_nobody_placed") is None
