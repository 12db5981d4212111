"""What GradientFlow raises and warns, in a module of their own: each engine's reader raises them too."""


class FlowError(ValueError):
    """A GradientFlow asked for something it cannot give (no parameters, no backward yet, no such layer)."""


class FlowWarning(UserWarning):
    """The model changed under a GradientFlow: a layer was replaced, added or removed during training."""
