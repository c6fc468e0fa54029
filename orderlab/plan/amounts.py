"""The words for a plan's figures: bytes and seconds as a person reads them, in refusals and in `validate --plan`."""

from __future__ import annotations


def size(count: float) -> str:
    """8e12 -> '8.0 TB' (decimal units, as disks and `free -h --si` count)."""
    for unit, scale in (("PB", 1e15), ("TB", 1e12), ("GB", 1e9), ("MB", 1e6), ("kB", 1e3)):
        if count >= scale:
            return f"{count / scale:,.1f} {unit}" if count < 100 * scale else f"{count / scale:,.0f} {unit}"
    return f"{count:,.0f} B"


def duration(seconds: float) -> str:
    """1.3e8 -> '4.1 years'; 90 -> '1.5 min'."""
    for unit, scale in (("years", 365 * 86400), ("days", 86400), ("h", 3600), ("min", 60)):
        if seconds >= scale:
            return f"{seconds / scale:,.1f} {unit}"
    return f"{seconds:.1f} s"
