"""``gradlab.cuda.Event`` and ``Stream``: PyTorch's names for timing GPU work, on numba's CUDA events.

GPU work is queued: the host races ahead, so a host clock measures the queueing, not the work. An
event is a mark in the GPU's queue; the time between two marks is what the GPU spent between them.
In numba's simulator nothing is queued (every kernel runs on the host before its launch returns)
and numba's simulated events keep no time, so there the host clock is the honest measure.
"""

from __future__ import annotations

import time


def _driver(op):
    """numba.cuda, imported on first use, or a clear error naming ``op`` when this process has no CUDA
    device (nor numba's simulator, NUMBA_ENABLE_CUDASIM=1) or no numba-cuda."""
    reason = _driver_missing()
    if reason:
        raise RuntimeError(f"gradlab.cuda.{op}: CUDA is not available here: {reason}")
    from numba import cuda

    return cuda


def _driver_missing():
    """Why numba.cuda cannot drive a device here, or '' when it can (a GPU, or the simulator)."""
    import importlib.util

    if importlib.util.find_spec("numba") is None or importlib.util.find_spec("numba_cuda") is None:
        return 'numba-cuda is not installed; install it with: pip install "gradlab[cuda]"'
    try:
        from numba import cuda
    except ImportError as error:  # numba-cuda without the CUDA bindings
        return f"numba.cuda cannot be imported ({error})"
    if not cuda.is_available():
        return "no NVIDIA GPU or driver was found (set NUMBA_ENABLE_CUDASIM=1 to run on numba's simulator)"
    return ""


class Event:
    """A mark in the GPU's queue: ``start.record(); ...; end.record(); end.synchronize();
    start.elapsed_time(end)`` gives the milliseconds the GPU spent between the two."""

    def __init__(self, enable_timing: bool = False, blocking: bool = False, interprocess: bool = False):
        cuda = _driver("Event")
        self.enable_timing = bool(enable_timing)
        self._simulated = bool(cuda.config.ENABLE_CUDASIM)
        self._event = None if self._simulated else cuda.event(timing=self.enable_timing)
        self._recorded_at = None

    def record(self, stream=None) -> None:
        """Put the mark in the queue (of ``stream``, else the default stream that gradlab's kernels use)."""
        if self._simulated:
            self._recorded_at = time.perf_counter()
        else:
            self._event.record(_numba_stream(stream))
            self._recorded_at = True

    def synchronize(self) -> None:
        """Wait until the GPU has reached the mark."""
        if self._recorded_at is not None and not self._simulated:
            self._event.synchronize()

    def query(self) -> bool:
        """Whether the GPU has reached the mark (always True in the simulator, which queues nothing)."""
        return self._simulated or self._recorded_at is None or self._event.query()

    def wait(self, stream=None) -> None:
        """Make later work on ``stream`` wait until the GPU has reached this mark."""
        if not self._simulated and self._recorded_at is not None:
            self._event.wait(_numba_stream(stream))

    def elapsed_time(self, end_event: "Event") -> float:
        """Milliseconds between this mark and ``end_event``'s (both recorded, both with enable_timing=True)."""
        if not (self.enable_timing and end_event.enable_timing):
            raise RuntimeError("Event.elapsed_time: both events must be created with enable_timing=True, "
                               "e.g. gradlab.cuda.Event(enable_timing=True)")
        if self._recorded_at is None or end_event._recorded_at is None:
            raise RuntimeError("Event.elapsed_time: both events must be recorded (call .record()) before the "
                               "time between them can be measured")
        if self._simulated:
            return (end_event._recorded_at - self._recorded_at) * 1000.0
        end_event.synchronize()
        return float(self._event.elapsed_time(end_event._event))

    def __repr__(self):
        return f"<gradlab.cuda.Event enable_timing={self.enable_timing}>"


class Stream:
    """A queue of GPU work. gradlab's kernels all go to the default stream (``current_stream()``), so a
    new Stream is useful for ordering events and for waiting, not for running ops on."""

    def __init__(self, device=None, priority: int = 0, _numba=None):
        cuda = _driver("Stream")
        self._stream = _numba if _numba is not None else cuda.stream()

    def synchronize(self) -> None:
        """Wait until everything queued on this stream has run."""
        self._stream.synchronize()

    def wait_event(self, event: Event) -> None:
        """Make later work on this stream wait for ``event``."""
        event.wait(self)

    def record_event(self, event: Event | None = None) -> Event:
        """Record ``event`` (a new one if None) on this stream and return it."""
        event = Event() if event is None else event
        event.record(self)
        return event

    def __repr__(self):
        return f"<gradlab.cuda.Stream {self._stream}>"


def _numba_stream(stream):
    if stream is None:
        return 0  # numba's name for the default stream
    return stream._stream if isinstance(stream, Stream) else stream
