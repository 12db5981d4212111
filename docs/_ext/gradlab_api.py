"""Write the API reference's pages before Sphinx reads them: one page per public module, its names from the code.

Each page (``docs/api/generated/<module>.md``) lists the module's public names in an autosummary table and
then documents each one with autodoc, so a name added to gradlab appears here on the next build with no
edit to the docs. Public means: in the module's ``__all__`` where it has one, else every name without a
leading underscore that is not itself a module.
"""

from __future__ import annotations

import importlib
import inspect
from pathlib import Path

# module, title, what the page says about it
MODULES = [
    ("gradlab", "gradlab", "Tensors, creation, the torch-level functions, dtypes, devices, saving and loading."),
    ("gradlab.autograd", "gradlab.autograd", "`Function`, the engine as steps, grad modes, `grad` and `gradcheck`."),
    ("gradlab.nn", "gradlab.nn", "`Module`, the layers, the losses."),
    ("gradlab.nn.functional", "gradlab.nn.functional", "The layers and losses as functions."),
    ("gradlab.nn.init", "gradlab.nn.init", "Initialising parameters."),
    ("gradlab.optim", "gradlab.optim", "Optimizers."),
    ("gradlab.optim.lr_scheduler", "gradlab.optim.lr_scheduler", "Learning-rate schedules."),
    ("gradlab.data", "gradlab.data", "Toy data sets, the digits, MNIST files, a text, and `gradlab.utils.data`'s loaders."),
    ("gradlab.jit", "gradlab.jit", "A forward pass traced as a tape."),
    ("gradlab.lab", "gradlab.lab", "Graph capture, layout and the widgets."),
]


def public_names(module) -> list[str]:
    names = getattr(module, "__all__", None)
    if names is None:
        names = [name for name in vars(module) if not name.startswith("_")]
    return [name for name in names if not inspect.ismodule(getattr(module, name, None))]


def home(obj, exported_by: list[str]) -> str:
    """The page a class is documented on in full: the listed module its ``__module__`` lies deepest in."""
    where = getattr(obj, "__module__", "") or ""
    inside = [name for name in exported_by if where == name or where.startswith(name + ".")]
    return max(inside, key=len) if inside else exported_by[0]


def entry(module_name: str, name: str, obj, homes: dict) -> list[str]:
    """The reST that documents one public name."""
    if inspect.isclass(obj):
        # autodoc registers a class under its canonical name too, so a class that several modules export
        # (gradlab.no_grad is gradlab.autograd.no_grad) is documented on its home page only, and
        # the others point there.
        home_module = homes[id(obj)]
        if home_module != module_name:
            return [f".. rubric:: {name}", "", f"The same class as :class:`{home_module}.{name}`."]
        return [f".. autoclass:: {name}"]
    if callable(obj):
        return [f".. autofunction:: {name}"]
    # A constant (a dtype, pi, a table of modes): its value, not the docstring of its type.
    value = repr(obj)
    lines = [f".. py:data:: {name}", f"   :type: {type(obj).__module__}.{type(obj).__qualname__}"]
    if len(value) <= 80 and "\n" not in value:
        lines.append(f"   :value: {value}")
    return lines


def page(module_name: str, title: str, blurb: str, homes: dict) -> str:
    module = importlib.import_module(module_name)
    names = public_names(module)
    lines = [f"# {title}", "", blurb, "", "```{eval-rst}", f".. currentmodule:: {module_name}", "",
             ".. autosummary::", "   :nosignatures:", ""]
    # Constants stay out of the table: autosummary would summarise them by their type's docstring.
    lines += [f"   {name}" for name in names if callable(getattr(module, name))]
    lines.append("")
    for name in names:
        lines += entry(module_name, name, getattr(module, name), homes)
        lines.append("")
    lines.append("```")
    return "\n".join(lines) + "\n"


def class_homes() -> dict:
    """id(class) -> the module whose page documents it in full."""
    exported_by: dict = {}
    for module_name, _, _ in MODULES:
        module = importlib.import_module(module_name)
        for name in public_names(module):
            obj = getattr(module, name)
            if inspect.isclass(obj):
                exported_by.setdefault(id(obj), (obj, []))[1].append(module_name)
    return {key: home(obj, modules) for key, (obj, modules) in exported_by.items()}


def write_pages(app) -> None:
    out = Path(app.srcdir) / "api" / "generated"
    out.mkdir(parents=True, exist_ok=True)
    homes = class_homes()
    wanted = {f"{name}.md": page(name, title, blurb, homes) for name, title, blurb in MODULES}
    for stale in out.glob("*.md"):
        if stale.name not in wanted:
            stale.unlink()
    for filename, text in wanted.items():
        path = out / filename
        if not path.exists() or path.read_text() != text:   # unchanged pages keep their mtime: no rebuild
            path.write_text(text)


def setup(app):
    app.connect("builder-inited", write_pages)
    return {"parallel_read_safe": True}
