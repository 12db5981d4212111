"""Old against new: the chain of tiny adds and the MLP step of two commits, in alternating subprocesses.

    python benchmarks/compare_commits.py 61685b1 9ebceac    # two commits
    python benchmarks/compare_commits.py main .             # main against this working tree as it is

Each commit is written out with ``git archive`` into a temporary folder (a folder given as it is, such
as ``.``, is used in place). Every measurement runs in a fresh subprocess that imports that folder's
gradlab and this checkout's workloads (``bench_engine.chain``, ``bench_training``'s MLP step), so both
sides run the same benchmark code. The rounds alternate old and new (and PyTorch, when it imports),
each pair in the other order from the last, so the machine's load falls on all of them alike: read
the ratios, which hold up on a loaded machine far better than the times do.
"""

from __future__ import annotations

import argparse
import io
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import tarfile
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
WORKLOADS = ("chain", "mlp")


# --- the worker: one subprocess, one tree (or torch), both workloads ---------------------------------------


def _load_library(tree: str):
    """gradlab from ``tree`` (imported before the benchmark modules, which put this checkout on the path), or torch."""
    if tree == "torch":
        sys.path.insert(0, HERE)
        from _timing import try_import_torch

        return try_import_torch()
    sys.path.insert(0, tree)
    import gradlab

    imported_from = os.path.dirname(os.path.dirname(os.path.abspath(gradlab.__file__)))
    if imported_from != os.path.abspath(tree):
        raise RuntimeError(f"compare_commits: meant to import gradlab from {tree}, got {gradlab.__file__}")
    return gradlab


def _mlp_step(lib):
    import numpy as np

    import bench_training

    lib.manual_seed(0)
    rng = np.random.default_rng(0)
    x = lib.tensor(rng.standard_normal((128, 784)).astype(np.float32))
    y = lib.tensor(rng.integers(0, 10, 128))
    return bench_training.training_step(lib, bench_training.mlp(lib), x, y)


def _workload(lib, name: str):
    """The function one call of which is a sample: the chain of adds, or one MLP training step."""
    import bench_engine

    return bench_engine.chain(lib) if name == "chain" else _mlp_step(lib)


def count_worker(tree: str, name: str, runs: int) -> None:
    """Run ``runs`` calls of a workload under callgrind, which counts the instructions inside ``functools.reduce``
    only (``--toggle-collect``); instrumenting starts after the imports and the warm-up, which would take minutes."""
    import functools

    lib = _load_library(tree)
    sys.path.insert(0, HERE)
    fn = _workload(lib, name)
    for _ in range(3):
        fn()
    subprocess.run(["callgrind_control", "--instr=on", str(os.getpid())], check=True, capture_output=True)
    functools.reduce(lambda _, __: fn(), range(runs), None)


def worker(tree: str, repeats: int, stat: str) -> dict:
    """Seconds per call (the ``stat`` of ``repeats`` runs) of each workload, with ``tree``'s gradlab or with torch."""
    lib = _load_library(tree)
    sys.path.insert(0, HERE)
    import bench_engine
    from _timing import measure

    chain = measure(_workload(lib, "chain"), repeats=repeats * 4, warmup=10)[stat] / bench_engine.CHAIN
    mlp = measure(_workload(lib, "mlp"), repeats=repeats, warmup=3)[stat]
    return {"chain": chain, "mlp": mlp}


# --- the driver: check out both sides, alternate subprocesses, report -------------------------------------


def checkout(spec: str, into: str) -> tuple[str, str]:
    """(folder holding the tree, its label): a folder as it is, or the commit ``spec`` written out by git archive."""
    if os.path.isdir(os.path.join(spec, "gradlab")):
        return os.path.abspath(spec), f"{spec} (as it is)"
    def git(*args) -> bytes:
        return subprocess.run(["git", *args], cwd=HERE, check=True, capture_output=True).stdout

    commit = git("rev-parse", "--short", f"{spec}^{{commit}}").decode().strip()
    top = git("rev-parse", "--show-toplevel").decode().strip()
    archive = git("-C", top, "archive", "--format=tar", commit)  # (run in benchmarks/, it would take that folder only)
    folder = os.path.join(into, commit)
    with tarfile.open(fileobj=io.BytesIO(archive)) as tar:
        tar.extractall(folder, **({"filter": "data"} if hasattr(tarfile, "data_filter") else {}))  # (Python < 3.11.4)
    return folder, commit if commit == spec else f"{spec} ({commit})"


def run_worker(tree: str, repeats: int, stat: str, env: dict) -> dict:
    done = subprocess.run([sys.executable, os.path.abspath(__file__), "--worker", tree, "--repeats", str(repeats),
                           "--stat", stat],
                          capture_output=True, text=True, env=env, cwd=tempfile.gettempdir())
    if done.returncode != 0:
        raise SystemExit(f"compare_commits: the run of {tree} failed:\n{done.stderr}")
    return json.loads(done.stdout.strip().splitlines()[-1])


COUNTED_RUNS = {"chain": 10, "mlp": 2}


def count_instructions(tree: str, env: dict) -> dict:
    """Instructions per op of the chain and per MLP step, counted by valgrind's callgrind: with PYTHONHASHSEED
    fixed and one BLAS thread they repeat from run to run (within ~1% between checkouts in other folders),
    however loaded the machine is. They are not times: PyTorch's C++ does more per instruction."""
    env = dict(env, PYTHONHASHSEED="0", OMP_NUM_THREADS="1", OPENBLAS_NUM_THREADS="1", MKL_NUM_THREADS="1")
    counts = {}
    for name, runs in COUNTED_RUNS.items():
        done = subprocess.run(["valgrind", "--tool=callgrind", "--callgrind-out-file=/dev/null", "--instr-atstart=no",
                               "--collect-atstart=no", "--toggle-collect=functools_reduce", sys.executable,
                               os.path.abspath(__file__), "--worker", tree, "--count", name, "--repeats", str(runs)],
                              capture_output=True, text=True, env=env, cwd=tempfile.gettempdir())
        collected = re.search(r"Collected : (\d+)", done.stderr)
        if done.returncode != 0 or collected is None or collected.group(1) == "0":
            raise SystemExit(f"compare_commits: counting the instructions of {tree} ({name}) failed:\n{done.stderr}")
        counts[name] = int(collected.group(1)) / runs / (100 if name == "chain" else 1)  # (the chain: per op)
    return counts


def report_instructions(labels: dict, counts: dict) -> None:
    print("\ninstructions (callgrind: steady from run to run, whatever the load; not a time)")
    for name, title in (("chain", "chain of 100 adds, per op"), ("mlp", "MLP step (matrix products included)")):
        figures = ", ".join(f"{side} {counts[side][name]:,.0f}" for side in labels)
        print(f"   {title:36s} {figures};  new / old {counts['new'][name] / counts['old'][name]:.3f}")


def torch_importable(env: dict) -> bool:
    return subprocess.run([sys.executable, "-c", "import torch"], capture_output=True, env=env).returncode == 0


def _span(values, scale: float, digits: int) -> str:
    low, high = min(values) * scale, max(values) * scale
    return f"{low:.{digits}f}–{high:.{digits}f}" if len(values) > 1 else f"{low:.{digits}f}"


def report(labels: dict, results: dict, stat: str) -> None:
    units = {"chain": ("chain of 100 adds, 16-element float32, fwd + bwd", "µs/op", 1e6, 2),
             "mlp": ("MLP 784-256-256-10 SGD step, batch 128", "ms", 1e3, 3)}
    for workload in WORKLOADS:
        title, unit, scale, digits = units[workload]
        print(f"\n{title} ({unit}; one value per pair: the {stat} of its runs)")
        for side, label in labels.items():
            values = [r[workload] for r in results[side]]
            print(f"   {side:5s} {label:32s} {_span(values, scale, digits):>15s}  "
                  f"[{', '.join(f'{v * scale:.{digits}f}' for v in values)}]")
        ratios = [new[workload] / old[workload] for old, new in zip(results["old"], results["new"])]
        print(f"   new / old   {_span(ratios, 1, 3)}  (median {statistics.median(ratios):.3f})")
        if "torch" in results:
            for side in ("old", "new"):
                ratios = [r[workload] / t[workload] for r, t in zip(results[side], results["torch"])]
                print(f"   {side} / torch {_span(ratios, 1, 3)}  (median {statistics.median(ratios):.3f})")
        best = {side: min(r[workload] for r in runs) for side, runs in results.items()}
        print("   fastest pair of each: " + ", ".join(f"{side} {v * scale:.{digits}f}" for side, v in best.items())
              + f";  new / old {best['new'] / best['old']:.3f}"
              + (f", new / torch {best['new'] / best['torch']:.3f}" if "torch" in best else "")
              + "  (the least disturbed by other load)")


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("old", nargs="?", help="a commit (or a folder holding a gradlab tree)")
    parser.add_argument("new", nargs="?", help="a commit, or '.' for this working tree as it is")
    parser.add_argument("--pairs", type=int, default=3, help="interleaved old/new pairs (default 3)")
    parser.add_argument("--repeats", type=int, default=30, help="timed MLP steps per run; 4x as many chains")
    parser.add_argument("--stat", choices=("median", "min"), default="median",
                        help="each run's figure: the median of its repeats, or the fastest (steadier when loaded)")
    parser.add_argument("--threads", type=int, help="BLAS and torch threads (default: the libraries' own)")
    parser.add_argument("--no-torch", action="store_true", help="leave PyTorch out even when it imports")
    parser.add_argument("--instructions", action="store_true",
                        help="count instructions with valgrind instead of timing (slow; immune to the machine's load)")
    parser.add_argument("--worker", help=argparse.SUPPRESS)
    parser.add_argument("--count", choices=WORKLOADS, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.worker:
        if args.count:
            count_worker(args.worker, args.count, args.repeats)
        else:
            print(json.dumps(worker(args.worker, args.repeats, args.stat)))
        return
    if args.instructions and not (shutil.which("valgrind") and shutil.which("callgrind_control")):
        parser.error("--instructions needs valgrind (with callgrind_control), e.g. apt-get install valgrind")
    if args.old is None or args.new is None:
        parser.error("give the two commits to compare: compare_commits.py OLD NEW")
    env = dict(os.environ)
    if args.threads:
        for name in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
            env[name] = str(args.threads)
    with tempfile.TemporaryDirectory(prefix="gradlab-compare-") as scratch:
        trees, labels = {}, {}
        for side, spec in (("old", args.old), ("new", args.new)):
            trees[side], labels[side] = checkout(spec, scratch)
        if not args.no_torch and torch_importable(env):
            trees["torch"], labels["torch"] = "torch", "PyTorch (same run)"
        if args.instructions:
            report_instructions(labels, {side: count_instructions(tree, env) for side, tree in trees.items()})
            return
        print(f"python {sys.version.split()[0]}, {os.cpu_count()} cpus, load average "
              f"{', '.join(f'{x:.1f}' for x in os.getloadavg())}; {args.pairs} pairs, "
              f"threads {args.threads or 'default'}, {args.stat} of each run")
        results = {side: [] for side in trees}
        for pair in range(args.pairs):
            order = list(trees) if pair % 2 == 0 else ["new", "old"] + [s for s in trees if s == "torch"]
            for side in order:
                results[side].append(run_worker(trees[side], args.repeats, args.stat, env))
            print(f"   pair {pair + 1}: " + ", ".join(
                f"{side} {results[side][-1]['chain'] * 1e6:.2f} µs/op" for side in trees), flush=True)
        report(labels, results, args.stat)


if __name__ == "__main__":
    main()
