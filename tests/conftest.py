import inspect
import os
import re
import shutil
import sys

import pytest

sys.path.insert(0, os.path.dirname(__file__))  # so tests can `from helpers import ...`

# The CUDA backend's kernels run on numba's simulator where there is no NVIDIA GPU (CI, laptops): numba reads
# NUMBA_ENABLE_CUDASIM once, when numba.cuda is first imported, so it is set here, before any test can
# import it. A machine with a GPU (its device node and nvidia-smi both there) runs them for real; a value
# already in the environment is left as it is.
if "NUMBA_ENABLE_CUDASIM" not in os.environ and (not os.path.exists("/dev/nvidia0") or shutil.which("nvidia-smi") is None):
    os.environ["NUMBA_ENABLE_CUDASIM"] = "1"


# --- the optional pieces ------------------------------------------------------------------------------------
# torch, numba, numba-cuda, MLX and Chromium may be missing on a user's machine; the tests that use them must
# then skip and say why. `--only-using torch` (or `numba,mlx,cuda`, or `browser`) runs just the tests whose code
# or id names one of those pieces, so .ci/run can prove that promise in a few minutes on a venv without them
# (the other tests do not care whether they are there).


def pytest_addoption(parser):
    parser.addoption("--only-using", default="", metavar="PIECES",
                     help="run only the tests whose source or id names one of these comma-separated words "
                          "(torch, numba, mlx, cuda, browser): what .ci/run checks on a venv without them")


def pytest_collection_modifyitems(config, items):
    pieces = [p.strip() for p in config.getoption("--only-using").split(",") if p.strip()]
    if not pieces:
        return
    names = re.compile(r"\b(" + "|".join(map(re.escape, pieces)) + r")\b")
    kept, dropped = [], []
    for item in items:
        (kept if names.search(_source_of(item)) else dropped).append(item)
    config.hook.pytest_deselected(items=dropped)
    items[:] = kept


def _source_of(item) -> str:
    """The test's own code and its node id (path and parameters): where a use of an optional piece shows."""
    try:
        source = inspect.getsource(item.function)
    except (OSError, TypeError):
        source = ""
    return source + " " + item.nodeid


# --- a notebook's shell, for the widgets that redraw when a cell ends ---------------------------------------

@pytest.fixture
def notebook_shell(monkeypatch):
    """A stand-in for IPython's shell: ``shell.events.callbacks["post_execute"]`` holds what a widget
    asked to run after each cell; calling it is what IPython does when a cell ends."""
    IPython = pytest.importorskip("IPython")

    class Events:
        def __init__(self):
            self.callbacks = {}

        def register(self, event, callback):
            self.callbacks.setdefault(event, []).append(callback)

        def unregister(self, event, callback):
            self.callbacks[event].remove(callback)

    class Shell:
        events = Events()

    monkeypatch.setattr(IPython, "get_ipython", lambda: Shell)
    return Shell
