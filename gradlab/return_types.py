"""The named tuples that ops return, as ``torch.return_types``: ``x.sort()`` gives ``sort(values, indices)``.

Each is a plain ``namedtuple`` named after its op, so ``values, indices = x.topk(3)`` unpacks and
``result.indices`` reads by name, exactly as in PyTorch.
"""

from collections import namedtuple

sort = namedtuple("sort", ("values", "indices"))
topk = namedtuple("topk", ("values", "indices"))
kthvalue = namedtuple("kthvalue", ("values", "indices"))
median = namedtuple("median", ("values", "indices"))
nanmedian = namedtuple("nanmedian", ("values", "indices"))
mode = namedtuple("mode", ("values", "indices"))
cummax = namedtuple("cummax", ("values", "indices"))
cummin = namedtuple("cummin", ("values", "indices"))

__all__ = ["sort", "topk", "kthvalue", "median", "nanmedian", "mode", "cummax", "cummin"]
