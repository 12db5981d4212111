"""``gradlab.cpu``: the CPU's answers to the questions scripts ask of ``torch.cpu``; ``amp`` inside."""

from __future__ import annotations

from . import amp  # noqa: F401


def is_available() -> bool:
    """True: the numpy backend always runs."""
    return True


def device_count() -> int:
    """1: gradlab counts the CPU as one device."""
    return 1


def current_device() -> str:
    return "cpu"


def synchronize(device=None) -> None:
    """Nothing to wait for: the numpy backend computes eagerly."""


__all__ = ["amp", "current_device", "device_count", "is_available", "synchronize"]
