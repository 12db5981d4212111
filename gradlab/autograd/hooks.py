"""``RemovableHandle``: what every ``register_*hook`` (and ``autograd.subscribe``) returns.

Hooks live either in a dict under the handle's ``id`` (as PyTorch keeps module hooks) or in a
list that the handle takes its hook out of; ``remove()`` undoes the registration either way, and
``with handle:`` removes the hook when the block ends.
"""

from __future__ import annotations

import itertools


class RemovableHandle:
    """A registration that can be undone: ``handle.remove()`` (``torch.utils.hooks.RemovableHandle``).

    ``hooks`` is the dict (keyed by ``handle.id``) or the list that holds the hook; for a list give
    the ``hook`` itself. ``extra_dict`` names more dicts or sets keyed by the id (flags such as
    'called with kwargs') that ``remove()`` cleans up too.
    """

    _next_id = itertools.count()

    def __init__(self, hooks, *, extra_dict=None, hook=None):
        self.id = next(RemovableHandle._next_id)
        self.hooks = hooks
        self.hook = hook
        if extra_dict is None:
            extra_dict = ()
        self.extra = tuple(extra_dict) if isinstance(extra_dict, (list, tuple)) else (extra_dict,)

    def remove(self) -> None:
        hooks = self.hooks
        if isinstance(hooks, dict):
            hooks.pop(self.id, None)
        else:
            for i, h in enumerate(hooks):
                if h is self.hook:  # by identity: one function registered twice has two handles
                    del hooks[i]
                    break
        for flags in self.extra:
            if isinstance(flags, dict):
                flags.pop(self.id, None)
            else:
                flags.discard(self.id)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.remove()
        return False

    def __repr__(self):
        return f"<RemovableHandle id={self.id}>"
