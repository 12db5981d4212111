"""numpy's spellings ``axis=`` and ``keepdims=``, accepted wherever PyTorch accepts them.

PyTorch's argument parser lets every native function with a ``keepdim`` argument be called with
numpy's names: ``counts.sum(1, keepdims=True)``, ``x.mean(axis=0)``. Here one wrapper does the
renaming, and ``accept_numpy_spellings`` puts it on each function of a namespace (``gradlab.*``,
``Tensor``'s methods, ``gradlab.linalg``) that has a ``keepdim`` argument. ``gradlab.norm`` and
``Tensor.norm`` are left alone: in PyTorch they are Python functions, which refuse numpy's names.
"""

from __future__ import annotations

import functools
import inspect
import types

SPELLINGS = {"keepdims": "keepdim", "axis": "dim"}  # numpy's name -> PyTorch's


def numpy_spellings(fn):
    """``fn`` that also takes ``keepdims=`` for ``keepdim=`` and ``axis=`` for ``dim=``."""
    name = fn.__name__

    @functools.wraps(fn)
    def accepting_numpy_spellings(*args, **kwargs):
        if "keepdims" in kwargs or "axis" in kwargs:
            _rename(name, kwargs)
        return fn(*args, **kwargs)

    accepting_numpy_spellings.numpy_spellings = True
    return accepting_numpy_spellings


def _rename(name: str, kwargs: dict) -> None:
    for numpy_name, torch_name in SPELLINGS.items():
        if numpy_name in kwargs:
            if torch_name in kwargs:
                raise TypeError(f"{name}() got both {torch_name}= and {numpy_name}= (numpy's spelling of the same "
                                f"argument); pass one of them")
            kwargs[torch_name] = kwargs.pop(numpy_name)


def _takes_keepdim(fn) -> bool:
    code = getattr(inspect.unwrap(fn), "__code__", None)
    return code is not None and "keepdim" in code.co_varnames[:code.co_argcount + code.co_kwonlyargcount]


def accept_numpy_spellings(namespace, leave=()) -> None:
    """Wrap each public function of ``namespace`` (a module's ``globals()``, or a class) that takes ``keepdim``,
    except the names in ``leave``."""
    is_class = isinstance(namespace, type)
    for name in dir(namespace) if is_class else list(namespace):
        fn = inspect.getattr_static(namespace, name) if is_class else namespace[name]
        if (name.startswith("_") or name in leave or not isinstance(fn, types.FunctionType)
                or getattr(fn, "numpy_spellings", False) or not _takes_keepdim(fn)):
            continue
        if is_class:
            setattr(namespace, name, numpy_spellings(fn))
        else:
            namespace[name] = numpy_spellings(fn)
