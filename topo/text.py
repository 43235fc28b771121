"""Plain-text formatting shared by every result's ``to_text()`` (and so by the CLI).

Units as the CLI prints them: times in microseconds (``us``), sizes in binary units
(``fmt_bytes``), slowdowns as ``x1.2`` (``x``), tables as aligned columns (``table``).
A figure that is missing prints as ``n/a`` or ``-``, never as 0.
"""
from __future__ import annotations

import math

__all__ = ["fmt", "table", "us", "fmt_bytes", "x", "pct", "hist", "gbps"]


def fmt(v) -> str:
    """A table cell: floats to 6 significant digits (whole above a million), ints with commas."""
    if isinstance(v, float):
        if math.isinf(v):
            return "inf"
        return f"{v:,.6g}" if abs(v) < 1e6 else f"{v:,.0f}"
    if isinstance(v, int):
        return f"{v:,}"
    return str(v)


def table(rows: list[list], header: list[str]) -> str:
    """Aligned columns with a rule under the header.

    >>> print(table([["a", 1], ["bb", 2.5]], ["name", "value"]))
    name  value
    ----  -----
    a     1
    bb    2.5
    """
    cells = [[str(h) for h in header]] + [[fmt(c) if not isinstance(c, str) else c for c in r] for r in rows]
    widths = [max(len(r[i]) for r in cells) for i in range(len(header))]
    lines = ["  ".join(c.ljust(w) for c, w in zip(r, widths)).rstrip() for r in cells]
    lines.insert(1, "  ".join("-" * w for w in widths).rstrip())
    return "\n".join(lines)


def us(s) -> str:
    """Seconds as microseconds (``1,234.57 us``); ``n/a`` for None or NaN."""
    return "n/a" if s is None or (isinstance(s, float) and math.isnan(s)) else f"{s * 1e6:,.2f} us"


def fmt_bytes(b: float) -> str:
    """Bytes in binary units (``1 GiB``, ``64 MiB``)."""
    for unit, k in (("GiB", 2**30), ("MiB", 2**20), ("KiB", 2**10)):
        if b >= k:
            return f"{b / k:,.4g} {unit}"
    return f"{b:,.0f} B"


def x(v) -> str:
    """A slowdown as ``x1.2``; ``n/a`` (no ``x``) when there is none (nothing priced)."""
    return "n/a" if v is None or not math.isfinite(v) else f"x{v:.6g}"


def pct(v) -> str:
    """A fraction as a percentage to 4 significant digits; ``n/a`` for None."""
    return "n/a" if v is None else f"{100 * v:.4g}%"


def hist(h: dict, empty: str = "-") -> str:
    """A histogram ``{value: count}`` as ``count at value, ...``."""
    return ", ".join(f"{v:,} at {k}" for k, v in h.items()) or empty


def gbps(v) -> str:
    """A bandwidth figure to one decimal; ``n/a`` for None or non-finite."""
    return f"{v:,.1f}" if v is not None and math.isfinite(v) else "n/a"
