"""Timing helpers shared by the benchmarks: warm up, repeat, report the median and spread."""

from __future__ import annotations

import statistics
import time


def measure(fn, repeats: int = 30, warmup: int = 3, inner: int = 1) -> dict:
    """Run fn ``warmup`` times, then time ``repeats`` runs of ``inner`` calls each; seconds per call."""
    for _ in range(warmup):
        fn()
    samples = []
    for _ in range(repeats):
        start = time.perf_counter()
        for _ in range(inner):
            fn()
        samples.append((time.perf_counter() - start) / inner)
    samples.sort()
    return {
        "min": samples[0],
        "median": statistics.median(samples),
        "p10": samples[len(samples) // 10],
        "p90": samples[(len(samples) * 9) // 10],
    }


def interleaved(candidates: dict, rounds: int = 5, **kwargs) -> dict:
    """Measure several candidates in alternating rounds, so machine noise hits them all alike."""
    results = {name: [] for name in candidates}
    for _ in range(rounds):
        for name, fn in candidates.items():
            results[name].append(measure(fn, **kwargs)["median"])
    return {name: statistics.median(times) for name, times in results.items()}


def print_against_torch(title: str, times: dict, note: str = "") -> None:
    """One case's medians, gradlab's and torch's, and their ratio."""
    print(f"\n{title}")
    for name, seconds in times.items():
        print(f"   {name:8s} {seconds * 1e3:8.2f} ms")
    print(f"   gradlab / torch = {times['gradlab'] / times['torch']:.2f}x{note}")


def try_import_torch():
    try:
        import torch

        torch.set_num_threads(max(1, torch.get_num_threads()))
        return torch
    except ImportError:
        return None
