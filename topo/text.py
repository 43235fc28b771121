"""Plain-text formatting shared by every result's ``to_text()`` (and so by the CLI).

Units as the CLI prints them: times in microseconds (``us``), sizes in binary units
(``fmt_bytes``), slowdowns as ``x1.2`` (``x``), tables as aligned columns (``table``).
A figure that is missing prints as ``n/a`` or ``-``, never as 0.
"""
from __future__ import annotations

import functools
import inspect
import math
import re

__all__ = ["fmt", "table", "us", "fmt_bytes", "x", "pct", "hist", "gbps", "param_docs"]


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


_TYPE_WORDS = re.compile(r"^[\w.\[\], |/\"-]*(, optional)?$")


@functools.lru_cache(maxsize=None)
def param_docs(obj) -> dict[str, str]:
    """``{parameter: description}`` from the numpydoc ``Parameters`` section of ``obj``'s docstring.

    Both spellings the package uses are read: ``name : type`` with the description indented below, and
    ``name : description`` on one line (continued, indented, below).  ``a, b : ...`` documents both.
    The CLI shows these texts as its options' help, so a parameter is documented once, for both.

    Examples
    --------
    >>> def f(a, b, c):
    ...     '''Parameters
    ...     ----------
    ...     a : int
    ...         Chips per group.
    ...     b, c : the ``b`` and ``c`` of it,
    ...         continued.
    ...     '''
    >>> param_docs(f)
    {'a': 'Chips per group.', 'b': 'the ``b`` and ``c`` of it, continued.', 'c': 'the ``b`` and ``c`` of it, continued.'}
    """
    lines = inspect.cleandoc(inspect.getdoc(obj) or "").splitlines()
    out: dict[str, str] = {}
    try:
        i = next(k for k in range(len(lines) - 1) if lines[k].strip() == "Parameters" and
                 set(lines[k + 1].strip()) == {"-"}) + 2
    except StopIteration:
        return out
    names: list[str] = []
    head, body = "", []

    def flush():
        if names:
            typed = len(head) <= 50 and bool(_TYPE_WORDS.match(head)) and body
            text = " ".join(body if typed else [head, *body]).strip()
            out.update({n: text for n in names})

    for line in lines[i:]:
        if not line.strip():
            continue
        if not line.startswith(" "):
            if set(line.strip()) == {"-"}:     # the next section's underline: its title was read as an entry
                names.clear()
                break
            flush()
            left, _, head = line.partition(" : ")
            names, body = [n.strip() for n in left.split(",") if n.strip()], []
            head = head.strip()
        else:
            body.append(line.strip())
    flush()
    return out
