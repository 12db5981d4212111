"""The ``graphviz.Digraph`` that ``make_dot`` and ``GraphView.to_dot()`` return, for a machine without ``dot``.

A Digraph is only DOT text until Graphviz's ``dot`` program lays it out; where that program is missing,
graphviz says "failed to execute PosixPath('dot')" and a notebook shows that traceback instead of a
picture. This Digraph says what to install instead, and a notebook shows gradlab's own drawing of the
same graph (with a line saying so), since gradlab lays out graphs itself. Only this module imports graphviz.
"""

from __future__ import annotations

from html import escape

import graphviz

from .colors import AXIS_INK, html_ink

INSTALL_DOT = ("apt install graphviz (Debian, Ubuntu), conda install -c conda-forge graphviz, "
               "or brew install graphviz (macOS)")


class DotNotFound(graphviz.ExecutableNotFound):
    """Graphviz's ``dot`` program is not installed: rendering the DOT text needs it (writing it does not)."""

    def __init__(self, asked: str) -> None:
        RuntimeError.__init__(  # (graphviz's __init__ would write its own message)
            self, f"{asked} needs Graphviz's dot program, which is not installed (not on PATH). Install Graphviz: "
                  f"{INSTALL_DOT}. The DOT text needs no dot: print(dot.source), or dot.save('graph.gv').")


class DotPicture(graphviz.Digraph):
    """A Digraph whose rendering says what to install when ``dot`` is missing, and that still shows in a
    notebook then: ``fallback()``, when set, gives gradlab's SVG of the same graph."""

    fallback = None  # () -> SVG text of the same graph, drawn by gradlab (set by the code that made it)

    def render(self, *args, **kwargs):
        try:
            return super().render(*args, **kwargs)
        except graphviz.ExecutableNotFound:
            raise DotNotFound("Rendering the graph to a file (render, view)") from None

    def pipe(self, *args, **kwargs):
        try:
            return super().pipe(*args, **kwargs)
        except graphviz.ExecutableNotFound:
            raise DotNotFound("Rendering the graph (pipe, or showing it)") from None

    def _repr_mimebundle_(self, include=None, exclude=None, **kwargs):
        try:
            return super()._repr_mimebundle_(include, exclude, **kwargs)
        except graphviz.ExecutableNotFound:
            if self.fallback is None:
                raise
            note = (f"Graphviz's dot program is not installed, so this is gradlab's own drawing of the same graph. "
                    f"For Graphviz's: {INSTALL_DOT}.")
            svg = self.fallback()
            shown = f'<p class="gl-dot-note" style="font-size: 0.9em; color: {html_ink(AXIS_INK)}">{escape(note)}</p>'
            return {"text/html": shown + svg, "image/svg+xml": svg, "text/plain": note}
