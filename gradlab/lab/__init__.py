"""gradlab.lab: see the engine work, in a notebook.

``record()`` watches a forward pass; ``GraphView`` draws the graph of a tensor, a recording or a
``Scalar``; ``BackpropStepper`` walks the engine's real backward through it one node at a time.
The widgets load ipywidgets and anywidget only when first used.
"""

from .capture import CaptureError, capture
from .record import Recording, record

__all__ = ["BackpropStepper", "CaptureError", "GraphView", "Recording", "capture", "check_node", "record"]


def __getattr__(name):
    if name == "GraphView":
        from .graph_view import GraphView
        return GraphView
    if name == "BackpropStepper":
        from .backprop_stepper import BackpropStepper
        return BackpropStepper
    if name == "check_node":
        from .check import check_node
        return check_node
    raise AttributeError(f"module 'gradlab.lab' has no attribute {name!r}")
