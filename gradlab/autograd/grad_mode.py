"""Whether operations are being recorded: ``no_grad``, ``enable_grad``, ``set_grad_enabled``, ``inference_mode``.

The mode belongs to a thread, as in PyTorch: ``no_grad()`` in one thread leaves recording on in
the others, and a new thread starts with recording on. Each context manager also works as a
decorator, of functions and of generator functions.
"""

from __future__ import annotations

import functools
import threading


class ThreadMode:
    """One thread's grad mode. Change ``enabled`` only through ``set_enabled``, which keeps
    ``threads_off`` up to date."""

    __slots__ = ("enabled", "inference")

    def __init__(self):
        self.enabled = True
        self.inference = False

    def __del__(self):  # a thread that ended with recording off no longer counts
        if not self.enabled and threads_off is not None:  # (None: the interpreter is shutting down)
            threads_off.discard(id(self))


# The ThreadModes (by id) whose recording is off. Function.apply reads only this set while it is
# empty (28 ns) and asks its own thread (a thread-local, ~140 ns) only otherwise, so grad mode per
# thread costs the recorded path nothing. Each thread adds and removes only its own entry, and a
# set's add and discard are atomic, so no lock is needed.
threads_off: set = set()


class _PerThread(threading.local):
    def __init__(self):
        self.mode = ThreadMode()  # runs once in each thread: every thread starts with recording on


per_thread = _PerThread()  # per_thread.mode: the calling thread's ThreadMode


def thread_mode() -> ThreadMode:
    """The calling thread's grad mode."""
    return per_thread.mode


def set_enabled(mode: ThreadMode, enabled: bool) -> None:
    """Turn recording on or off for the thread that owns ``mode`` (call it from that thread)."""
    mode.enabled = enabled
    if enabled:
        threads_off.discard(id(mode))
    else:
        threads_off.add(id(mode))


def is_grad_enabled() -> bool:
    """True when new operations are recorded for backward (in this thread)."""
    return not threads_off or per_thread.mode.enabled


def is_inference_mode_enabled() -> bool:
    return per_thread.mode.inference


class _CallingThread:
    """``grad_state.enabled`` and ``grad_state.inference``: the calling thread's mode, read and set."""

    __slots__ = ()

    @property
    def enabled(self) -> bool:
        return not threads_off or per_thread.mode.enabled

    @enabled.setter
    def enabled(self, value: bool) -> None:
        set_enabled(per_thread.mode, bool(value))

    @property
    def inference(self) -> bool:
        return per_thread.mode.inference

    @inference.setter
    def inference(self, value: bool) -> None:
        per_thread.mode.inference = bool(value)


grad_state = _CallingThread()


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
        mode = per_thread.mode
        self._saved = (mode.enabled, mode.inference)
        enabled, mode.inference = self._target()
        set_enabled(mode, enabled)
        return self

    def __exit__(self, *exc):
        _restore(self._saved)
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
        return False, per_thread.mode.inference


class enable_grad(_ModeSwitch):
    """Record the graph again inside a no_grad block."""

    def _target(self):
        return True, per_thread.mode.inference


class set_grad_enabled(_ModeSwitch):
    """Turn recording on or off by a flag; takes effect at once, and restores on exit when used with ``with``."""

    _bare_decorator = False

    def __init__(self, mode: bool):
        self.mode = bool(mode)
        state = per_thread.mode
        self._saved = (state.enabled, state.inference)
        set_enabled(state, self.mode)

    def _args(self):
        return (self.mode,)

    def __enter__(self):
        return self  # the switch already happened in __init__, as in PyTorch

    def __call__(self, fn):
        _restore(self._saved)  # as a decorator, switch only inside fn
        return super().__call__(fn)


class inference_mode(_ModeSwitch):
    """Like no_grad, for code that will never need gradients (``torch.inference_mode``)."""

    def __init__(self, mode: bool = True):
        self.mode = bool(mode)

    def _target(self):
        return not self.mode, self.mode  # inference_mode(False) turns recording back on, as in PyTorch

    def _args(self):
        return (self.mode,)


def _restore(saved: tuple) -> None:
    mode = per_thread.mode
    set_enabled(mode, saved[0])
    mode.inference = saved[1]
