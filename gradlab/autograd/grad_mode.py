"""Whether operations are being recorded: ``no_grad``, ``enable_grad``, ``set_grad_enabled``, ``inference_mode``.

One global switch, read by ``Function.apply`` on every call. Each context manager also works as a
decorator, of functions and of generator functions, as in PyTorch.
"""

from __future__ import annotations

import functools


class _GradState:
    __slots__ = ("enabled", "inference")

    def __init__(self):
        self.enabled = True
        self.inference = False


grad_state = _GradState()


def is_grad_enabled() -> bool:
    """True when new operations are recorded for backward."""
    return grad_state.enabled


def is_inference_mode_enabled() -> bool:
    return grad_state.inference


_CO_GENERATOR = 0x20  # the code flag of a generator function (what inspect.isgeneratorfunction reads)


def _is_generator_function(fn) -> bool:
    code = getattr(fn, "__code__", None)
    return code is not None and bool(code.co_flags & _CO_GENERATOR)


class _ModeSwitch:
    """Base of the grad-mode context managers: set a mode on enter, restore the old one on exit.

    ``@no_grad`` (without parentheses) works too: a function in place of the arguments is decorated.
    """

    _bare_decorator = True

    def __new__(cls, *args, **kwargs):
        if cls._bare_decorator and len(args) == 1 and not kwargs and callable(args[0]) and not isinstance(args[0], bool):
            return cls()(args[0])
        return super().__new__(cls)

    def _target(self) -> tuple[bool, bool]:
        raise NotImplementedError

    def __enter__(self):
        self._saved = (grad_state.enabled, grad_state.inference)
        grad_state.enabled, grad_state.inference = self._target()
        return self

    def __exit__(self, *exc):
        grad_state.enabled, grad_state.inference = self._saved
        return False

    def __call__(self, fn):
        if _is_generator_function(fn):
            return self._wrap_generator(fn)

        @functools.wraps(fn)
        def wrapper(*args, **kwargs):
            with self.__class__(*self._args()):
                return fn(*args, **kwargs)

        return wrapper

    def _wrap_generator(self, fn):
        """A generator runs in the mode while its body runs, and gives the caller's mode back at each yield."""
        switch = self

        @functools.wraps(fn)
        def wrapper(*args, **kwargs):
            gen = fn(*args, **kwargs)
            sent, thrown = None, None
            while True:
                try:
                    with switch.__class__(*switch._args()):
                        value = gen.send(sent) if thrown is None else gen.throw(thrown)
                except StopIteration as stop:
                    return stop.value
                sent, thrown = None, None
                try:
                    sent = yield value
                except GeneratorExit:
                    with switch.__class__(*switch._args()):
                        gen.close()
                    raise
                except BaseException as error:  # thrown in by the caller: the body handles it in the mode
                    thrown = error

        return wrapper

    def _args(self) -> tuple:
        return ()


class no_grad(_ModeSwitch):
    """Run without recording the graph: results have no grad_fn and use no memory for backward."""

    def _target(self):
        return False, grad_state.inference


class enable_grad(_ModeSwitch):
    """Record the graph again inside a no_grad block."""

    def _target(self):
        return True, grad_state.inference


class set_grad_enabled(_ModeSwitch):
    """Turn recording on or off by a flag; takes effect at once, and restores on exit when used with ``with``."""

    _bare_decorator = False

    def __init__(self, mode: bool):
        self.mode = bool(mode)
        self._saved = (grad_state.enabled, grad_state.inference)
        grad_state.enabled = self.mode

    def _args(self):
        return (self.mode,)

    def __enter__(self):
        return self  # the switch already happened in __init__, as in PyTorch

    def __call__(self, fn):
        grad_state.enabled, grad_state.inference = self._saved  # as a decorator, switch only inside fn
        return super().__call__(fn)


class inference_mode(_ModeSwitch):
    """Like no_grad, for code that will never need gradients (``torch.inference_mode``)."""

    def __init__(self, mode: bool = True):
        self.mode = bool(mode)

    def _target(self):
        return not self.mode, self.mode  # inference_mode(False) turns recording back on, as in PyTorch

    def _args(self):
        return (self.mode,)
