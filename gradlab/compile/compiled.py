"""One input signature, compiled: its program (and the tape of ops it came from), and how a run hands back the loss.

The program itself adds each gradient into its ``.grad`` as soon as it is final (as backward
does); on MLX, where the program is one pure function, the gradients (and rebound buffers) come
back as results and are written here.
"""

from __future__ import annotations

from ..autograd.grad_mode import no_grad
from .mlx_runner import runner


class Compiled:
    """One recorded signature lowered to one program: ``run`` fills the ``.grad``s and gives the loss.
    ``tape`` is the tracer's list of the ops the step ran (the lab links each call back to its op)."""

    def __init__(self, tape, program):
        self.tape, self.program = tape, program
        self.handed = list(program.handed.items())  # a pure program's gradients and arrays (MLX)
        self._run = runner(program)
        self.updates = any(ins.phase == "update" for ins in program.instrs)  # the program moves the parameters

    def run(self, arrays):
        """Run the program on the input arrays; returns the loss array."""
        program = self.program
        env = program.environment()
        for slot, a in zip(program.inputs, arrays):
            env[slot] = a
        with no_grad():
            self._run(env)
        slot = program.results.get("input_grad")
        self.input_grad = env[slot] if slot is not None else None  # a piece's gradient for the piece before it
        for name, (tensor, how) in self.handed:
            if how == "grad":
                accumulate(tensor, env[program.results[name]])
            else:
                tensor.array = env[program.results[name]]
        return env[program.results["loss"]]

    def programs(self):
        return [self.program]


def accumulate(leaf, g) -> None:
    """``leaf.grad += g`` (the first gradient kept as it is: a result of a pure function is the caller's)."""
    if leaf.grad is None:
        leaf.grad = leaf._wrap(g)
    else:
        leaf.grad.add_(leaf._wrap(g))
