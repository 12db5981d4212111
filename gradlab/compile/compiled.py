"""One input signature, compiled: its tape and program, and how a run hands back the loss and gradients."""

from __future__ import annotations

from ..autograd.grad_mode import no_grad
from .mlx_runner import runner


class Compiled:
    """One traced signature planned as one program: ``run`` gives the loss and each leaf's gradient."""

    def __init__(self, tape, program):
        self.tape, self.program = tape, program
        self.leaves = [(tape.externals[int(name[5:])], slot) for name, slot in program.results.items()
                       if name.startswith("grad:")]
        self.fresh = fresh_slots(program)
        self._run = runner(program)

    def run(self, arrays):
        """(loss array, [(leaf, gradient array, whether that array is the program's own)])."""
        program = self.program
        env = program.environment()
        for slot, a in zip(program.inputs, arrays):
            env[slot] = a
        with no_grad():
            self._run(env)
        slot = program.results.get("input_grad")
        self.input_grad = env[slot] if slot is not None else None  # a piece's gradient for the piece before it
        return env[program.results["loss"]], [(leaf, env[slot], slot in self.fresh) for leaf, slot in self.leaves]

    def programs(self):
        return [self.program]


def fresh_slots(program) -> set:
    """Slots made by instructions that return memory of their own: their arrays can become a .grad as they are."""
    return {o for ins in program.instrs if ins.fresh and ins.ufunc is None for o in ins.outs}
