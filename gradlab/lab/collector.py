"""Build a big drawing with Python's cycle collector paused: it would walk the whole heap, again and again.

Each new object counts towards the next collection, and a collection of the oldest generation visits every
object the kernel holds: a recording of 20,000 operations is hundreds of thousands of them. Drawing it makes
as many again, all kept (the graph, its boxes), so half the time went on collections that found nothing to
free. Paused while drawing, the collector runs once afterwards, as usual, when the counts say so.
"""

from __future__ import annotations

import gc
from contextlib import contextmanager


@contextmanager
def collector_paused():
    """Pause the cycle collector inside the block (if it was running); reference counting still frees."""
    running = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if running:
            gc.enable()
