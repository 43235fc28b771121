"""Pricing: ``price()``, the keyword front of the one engine (:mod:`fabricsim.collectives.engine`).

The model (bandwidth from the max-min solver, the protocol-aware step model, the fabric
families' data files) is described in the engine's docstring and the README's "Cost
model" section.  ``CostReport``, ``PhaseReport`` and ``busbw_factor`` live in the engine
and are importable from here as before.
"""
from __future__ import annotations

from typing import Any, Sequence

import networkx as nx
import numpy as np

from .engine import (AUTO_PAIRWISE_MAX, DEFAULT_MESSAGE_OVERHEAD_NS, DEFAULT_STEP_OVERHEAD_NS, PROTOCOL_CHOICES,
                     CostReport, PhaseReport, PriceOptions, _finite, busbw_factor, run)

__all__ = ["CostReport", "PhaseReport", "PriceOptions", "price", "busbw_factor", "DEFAULT_STEP_OVERHEAD_NS",
           "DEFAULT_MESSAGE_OVERHEAD_NS", "AUTO_PAIRWISE_MAX", "PROTOCOL_CHOICES"]

class _Default:
    """A keyword left out: it shows (in ``help(price)``) as the PriceOptions default it stands for,
    and is told apart from a value given, so ``options=`` keeps its own values."""

    __slots__ = ("value",)

    def __init__(self, value):
        self.value = value

    def __repr__(self) -> str:
        return repr(self.value)


_D = {f: _Default(getattr(PriceOptions(), f)) for f in ("algorithm", "protocol", "calibration", "split", "tiers",
                                                        "efficiency", "step_overhead_ns", "message_overhead_ns",
                                                        "bound_only", "memory_limit_bytes", "symmetry")}


def price(G: nx.Graph, collective: str, *, groups: Sequence[Sequence[int]], size_bytes: float | None = None,
          algorithm: str = _D["algorithm"], protocol: str = _D["protocol"], calibration=_D["calibration"],
          traffic: np.ndarray | None = None, split: str = _D["split"], tiers: str = _D["tiers"],
          efficiency: float | None = _D["efficiency"], step_overhead_ns: float | None = _D["step_overhead_ns"],
          message_overhead_ns: float | None = _D["message_overhead_ns"], bound_only: bool = _D["bound_only"],
          memory_limit_bytes: int | None = _D["memory_limit_bytes"], symmetry: bool = _D["symmetry"],
          reference: nx.Graph | None = None, options: PriceOptions | None = None) -> CostReport:
    """Price ``collective`` of ``size_bytes`` for every group of ``groups`` at once on ``G``.

    Parameters
    ----------
    G : fabric graph (possibly degraded by failures).
    collective : ``all-reduce``, ``all-gather``, ``reduce-scatter`` or ``all-to-all``.
    groups : chip ranks of each group (all the same size).
    size_bytes : S as nccl-tests defines it for the collective (with ``traffic``: omit it;
        S is then the mean bytes per rank, the matrix's mean row sum).
    algorithm : a name from ``ALGORITHMS[collective]`` or ``auto`` (the cheapest that applies).
    protocol : ``auto`` (default, as in the CLI: the cheapest algorithm *and* protocol
        under the fabric family's step model, as NCCL's tuner picks), ``ll``, ``ll128``,
        ``simple``, or ``ideal`` (protocol effects off: raw line rate x ``efficiency``
        and the fixed per-step overheads; the closed forms of the bandwidth model).
    calibration : a :class:`~fabricsim.collectives.cost.calibration.Calibration`: its
        efficiency / base and step latency replace the family's per collective,
        algorithm and protocol.
    traffic : all-to-all-v: bytes rank a of a group sends rank b, (n, n) for every group or
        (groups, n, n); unequal flows are solved
        flow by flow, a uniform matrix prices exactly as the uniform all-to-all.
    split : ``equal`` over next hops (ECMP hashing), ``capacity``-weighted, or ``adaptive``
        (adaptive routing: each flow spreads over all its equal-cost paths, multipath max-min
        fair rates; :mod:`fabricsim.collectives.adaptive`).
    tiers : ``rule`` (the fabric's tier rules) or ``any`` (every shortest path).
    efficiency : fraction of line rate links deliver, in (0, 1]; overrides the calibration
        and the family for every collective (``None``: ideal 1, else theirs).
    step_overhead_ns : per-step latency; overrides the calibration and the family (ideal:
        the graph's ``step_overhead_ns`` or 1 us by default).
    message_overhead_ns : cost of each message beyond the first a rank sends in one step;
        the graph's ``message_overhead_ns`` or 200 ns by default (in series for ideal,
        spread over the family's channels otherwise).
    bound_only : price by the link-load bound alone (cheap; no fairness, no events).
    memory_limit_bytes : refuse (:class:`TooLarge`) a phase whose estimate exceeds this
        (default: the memory available).
    symmetry : solve symmetry classes of flows where the fabric and the phase allow it
        (exact, and far smaller).  ``False`` routes and solves every flow (a cross-check).
    options : a :class:`PriceOptions` holding any of the above; keywords given as well
        override it.

    Returns
    -------
    CostReport

    Examples
    --------
    >>> from fabricsim.fabrics import build
    >>> from fabricsim.collectives import by_size
    >>> G = build("jalapeno-rack")
    >>> r = price(G, "all-reduce", groups=by_size(G, 8), size_bytes=2**26, algorithm="ring", protocol="ideal")
    >>> round(r.bandwidth_time_s / (2 * 7 / 8 * 2**26 / 600e9), 9)
    1.0
    >>> r = price(G, "all-reduce", groups=by_size(G, 8), size_bytes=2**26, algorithm="ring")
    >>> r.protocol, round(r.bandwidth_time_s / (2 * 7 / 8 * 2**26 / (600e9 * 0.977)), 9)
    ('simple', 1.0)
    """
    given = {k: v for k, v in dict(algorithm=algorithm, protocol=protocol, calibration=calibration, split=split,
                                   tiers=tiers, efficiency=efficiency, step_overhead_ns=step_overhead_ns,
                                   message_overhead_ns=message_overhead_ns, bound_only=bound_only,
                                   memory_limit_bytes=memory_limit_bytes, symmetry=symmetry).items()
             if not isinstance(v, _Default)}
    opts = (options or PriceOptions()).replace(**given)
    if size_bytes is not None or options is None:
        opts = opts.replace(size_bytes=size_bytes)
    return run(G, collective, groups, opts, traffic=traffic, reference=reference)
