"""Differentiable operations: each a Function whose forward calls backend primitives.

One file per family (arithmetic, elementwise maths, reductions, shape, indexing, linear
algebra, conversion); each also holds the Tensor methods of its family as a mixin.
"""
