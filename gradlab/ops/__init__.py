"""Differentiable operations: each a Function whose forward calls backend primitives.

One file per family (arithmetic, elementwise maths, reductions, statistics, views, joining,
splitting, padding, reordering, repeat, indexing, linear algebra, conversion); each also holds
the Tensor methods of its family as a mixin (``shape`` gathers the shape families' into one).
"""
