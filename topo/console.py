"""What a run says while it works, and results as JSON: one progress printer and one JSON emitter.

A notebook user and the CLI share them: ``progress`` is the ``progress=`` callback the long-running
entry points take (``sweep``, ``mix``, ``serve``, ``design`` ...); ``to_json`` is what ``--json`` prints.
"""
from __future__ import annotations

import json
import sys
import time
from contextlib import contextmanager

__all__ = ["progress", "ticker", "timed", "to_json"]


def progress(msg: str) -> None:
    """Write ``fabricsim: msg`` to stderr (stdout stays the result's alone)."""
    print(f"fabricsim: {msg}", file=sys.stderr, flush=True)


def _default(o):
    if hasattr(o, "as_dict"):
        return o.as_dict()
    if hasattr(o, "item"):      # a numpy scalar
        return o.item()
    if isinstance(o, (set, frozenset, tuple)):
        return list(o)
    raise TypeError(f"not JSON serialisable: {type(o).__name__}")


def to_json(obj) -> str:
    """``obj`` (results' ``as_dict()``, numpy scalars, sets) as indented JSON text, keys in their order.

    Examples
    --------
    >>> print(to_json({"a": (1, 2)}))
    {
      "a": [
        1,
        2
      ]
    }
    """
    return json.dumps(obj, indent=2, sort_keys=False, default=_default)


def ticker(say, every_s: float = 5.0):
    """How far a long loop is: ``tick(done, total, text)`` says ``{text()}, N s, ETA M s ...`` through ``say``
    when more than ``every_s`` seconds have passed since it last spoke (``text`` is built only then; the ETA is
    the time per item so far x the items left).  ``say`` None: silent.

    Examples
    --------
    >>> tick = ticker(print, every_s=-1.0)       # speak at every tick
    >>> tick(0, 10, lambda: "routed 0 of 10")     # doctest: +ELLIPSIS
    routed 0 of 10, 0 s, ETA ... s ...
    """
    if say is None:
        return lambda done, total, text: None
    t0 = said = time.monotonic()

    def tick(done: int, total: int, text) -> None:
        nonlocal said
        now = time.monotonic()
        if now - said > every_s:
            said = now
            say(f"{text()}, {now - t0:.0f} s, ETA {(now - t0) * (total - done) / max(done, 1):.0f} s ...")
    return tick


@contextmanager
def timed(what: str, threshold_s: float = 2.0, say=None):
    """Say ``{what} in N s`` (through ``say``, default :func:`progress`) when the block took over ``threshold_s``.

    Examples
    --------
    >>> with timed("priced", say=print):
    ...     pass
    """
    t0 = time.perf_counter()
    yield
    if time.perf_counter() - t0 > threshold_s:
        (say or progress)(f"{what} in {time.perf_counter() - t0:.1f} s")
