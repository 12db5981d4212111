"""After each notebook cell: how a widget redraws once the cell that changed what it shows has ended.

A training loop or a ``loss.backward()`` runs while the kernel is busy, so a widget notes what
changed and draws it when IPython's ``post_execute`` event says the cell is over.
"""

from __future__ import annotations


class CellListener:
    """``callback`` run after each cell IPython executes, removable like a hook."""

    def __init__(self, shell, callback):
        self.shell, self.callback = shell, callback
        shell.events.register("post_execute", callback)

    def remove(self) -> None:
        if self.callback in self.shell.events.callbacks.get("post_execute", ()):
            self.shell.events.unregister("post_execute", self.callback)


def after_each_cell(callback) -> CellListener | None:
    """Call ``callback()`` after each cell from now on; None outside IPython (nothing to listen to)."""
    try:
        from IPython import get_ipython
    except ImportError:  # pragma: no cover
        return None
    shell = get_ipython()
    return None if shell is None else CellListener(shell, callback)
