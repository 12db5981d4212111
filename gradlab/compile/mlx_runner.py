"""On MLX a planned program becomes one pure function of arrays, handed to ``mx.compile``.

MLX is lazy: each op only records work. ``mx.compile`` traces a function once and fuses the
work it recorded into kernels of its own. The program is such a function once its inputs *and*
parameters are arguments — so during that one trace each parameter tensor holds the traced
argument in place of its array, and later calls feed the current parameters in. A program with
an op that reads a value on the host while it runs (cross-entropy checks its class indices)
cannot be traced that way; it then runs instruction by instruction, as on the other backends.
"""

from __future__ import annotations


def compiled_runner(program):
    """A ``run(env)`` for the program that executes it through ``mx.compile``."""
    import mlx.core as mx

    inputs = list(program.inputs)
    externals = list(program.externals.items())
    results = [slot for slot in program.results.values() if slot is not None]

    def pure(*arrays):
        env = program.environment()
        for slot, a in zip(inputs, arrays):
            env[slot] = a
        held = [(t, t.array) for _, t in externals]
        try:
            for (slot, t), a in zip(externals, arrays[len(inputs):]):
                t.array = env[slot] = a  # a generic op reads the live tensor: let it see the traced argument
            program.run_steps(env)
        finally:
            for t, a in held:
                t.array = a
        return [env[slot] for slot in results]

    fast = mx.compile(pure)
    state = {"compiled": True}

    def run(env):
        if not state["compiled"]:
            return program.run(env)
        try:
            outs = fast(*[env[slot] for slot in inputs], *[t.array for _, t in externals])
        except ValueError as error:  # an op reads a value on the host (a range check): mx.compile cannot trace it
            if "eval" not in str(error):
                raise
            state["compiled"] = False
            program.mx_compile_error = str(error)
            return program.run(env)
        for slot, out in zip(results, outs):
            env[slot] = out
        return env

    run.state = state
    return run


def runner(program):
    """How a program runs on its backend: through ``mx.compile`` on MLX (unless it writes into what it was
    given or draws random numbers: ``program.impure``), else its own loop."""
    if getattr(program.backend, "name", "") == "mlx" and program.impure is None:
        return compiled_runner(program)
    return program.run
