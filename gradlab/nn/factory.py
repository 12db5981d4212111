"""``nn.factory_kwargs``: the device/dtype keyword arguments a layer passes on to the tensors it creates."""

from __future__ import annotations

_SIMPLE_KEYS = {"device", "dtype", "memory_format"}


def factory_kwargs(kwargs):
    """kwargs checked and flattened for factory functions (``empty(10, **factory_kwargs(kwargs))``).

    An explicit ``factory_kwargs`` entry is merged in (for a signature whose own ``dtype`` means something
    else); an unknown key, or one given twice, is an error now rather than at the factory call.
    """
    if kwargs is None:
        return {}
    expected = _SIMPLE_KEYS | {"factory_kwargs"}
    if not kwargs.keys() <= expected:
        raise TypeError(f"unexpected kwargs {kwargs.keys() - expected}")
    merged = dict(kwargs.get("factory_kwargs", {}))
    for key in _SIMPLE_KEYS:
        if key in kwargs:
            if key in merged:
                raise TypeError(f"{key} specified twice, in **kwargs and in factory_kwargs")
            merged[key] = kwargs[key]
    return merged
