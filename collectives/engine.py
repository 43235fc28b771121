"""The price engine: routes + solver + step model -> a cost report for a collective.

One engine prices every collective (:func:`run`); :func:`fabricsim.collectives.price`
is its keyword wrapper and the CLI builds one :class:`PriceOptions`.

Bandwidth
    Each phase's flows (every group at once) are routed by the fabric's policy and
    solved by the flow-level max-min solver with event-driven completion; a step ends
    when its last flow ends.  Identical steps are solved once and multiplied by their
    count; phases run one after another.  Where symmetry allows, a phase is solved as
    classes of flows (``method`` in the report says which fold ran, or why none did).

Step model (``protocol``)
    How a phase's solved transfer and its latencies make a time -- per protocol, from the
    fabric's cost families -- lives with the cost model:
    :mod:`fabricsim.collectives.cost.step_model`.

The pipeline, each step typed and usable on its own: :func:`plan` (groups, candidates,
the step model) -> :func:`solve` (an algorithm's phases routed and solved: a
:class:`SolvedPhases`, shared by every protocol) -> :func:`cost` (a protocol's
:class:`~fabricsim.collectives.cost.step_model.PhaseTimes`) -> :func:`run` keeps the
cheapest as a :class:`CostReport`.

algbw = S / time, busbw = algbw x 2(n-1)/n (all-reduce) or x (n-1)/n (others), with S
as nccl-tests defines it (the per-rank buffer for all-reduce, the whole buffer for
all-gather, reduce-scatter and all-to-all).
"""
from __future__ import annotations

import dataclasses
import functools
import math
from dataclasses import dataclass, field
from typing import Any, Sequence

import networkx as nx
import numpy as np

from ..topo import text as _text
from ..topo.contract import CHIP, KIND, RANK
from ..topo.errors import BadInput, TooLarge
from .algorithms import ALGORITHM_RECORDS, ALGORITHMS, AUTO_PAIRWISE_MAX, Phase, algorithms_for, phases, view_of
from .cost.step_model import (DEFAULT_MESSAGE_OVERHEAD_NS, DEFAULT_STEP_OVERHEAD_NS, PhaseReport, PhaseTimes,
                              StepModel, link_efficiency)

__all__ = ["CostReport", "PhaseReport", "PriceOptions", "PROTOCOL_CHOICES", "SPLIT_CHOICES", "run", "busbw_factor", "solve_capacity_Bps",
           "PhasePlan", "SolvedPhases", "PhaseTimes", "plan", "solve", "cost", "in_network_flows",
           "DEFAULT_STEP_OVERHEAD_NS", "DEFAULT_MESSAGE_OVERHEAD_NS", "AUTO_PAIRWISE_MAX"]

BOTTLENECKS_SHOWN = 10
PROTOCOL_CHOICES = ("auto", "ll", "ll128", "simple", "ideal")
# equal / capacity: fixed per-hop shares (topo.routing); adaptive: multipath max-min (collectives.adaptive);
# the same tuple as topo.routing.SPLIT_CHOICES (not imported here: routing loads on use)
SPLIT_CHOICES = ("equal", "capacity", "adaptive")


def busbw_factor(collective: str, n: int) -> float:
    """nccl-tests bus bandwidth factor."""
    return 2 * (n - 1) / n if collective == "all-reduce" else (n - 1) / n


@dataclass(frozen=True)
class CostReport:
    collective: str
    algorithm: str
    fabric: str
    group_size: int
    groups: int
    size_bytes: float
    time_s: float
    bandwidth_time_s: float
    latency_s: float
    bound_s: float
    algbw_GBps: float
    busbw_GBps: float
    phases: tuple
    bottlenecks: tuple
    unreachable_pairs: dict
    broken_groups: dict
    partial: bool
    mode: str                            # "flow-level" or "link-load bound"
    notes: tuple = ()
    group_time_s: tuple = field(default=(), repr=False)   # per priced group, in input order
    group_ids: tuple = field(default=(), repr=False)      # index of each priced group in the input
    alternatives: dict = field(default_factory=dict)      # auto: algorithm -> time_s (its best protocol)
    # per directed link of topo.routing.link_table(G): bytes over the whole collective and
    # utilization over its bandwidth time (what ``bottlenecks`` ranks); not in the JSON
    link_bytes: Any = field(default=None, repr=False, compare=False)
    link_utilization: Any = field(default=None, repr=False, compare=False)
    protocol: str = "ideal"              # the protocol priced: ll | ll128 | simple | ideal (protocol effects off)
    # which fast path priced the phases: {"path", "quotient_size", "flows", "refused": [{"method", "reason"}], "phases"}
    method: dict = field(default_factory=dict, compare=False)
    base_latency_s: float = 0.0          # per call, before the first step (launch + base latency)
    channels: int | None = None          # channels NCCL runs this call on (its size's); None: ideal model
    split: str = "equal"                 # the routing split that ran: equal | capacity | adaptive
    split_source: str = "given"          # why: "given", or "fabric default (...)" (topo.routing.switching)

    def summary(self) -> str:
        """One line: what was priced, how, and what it costs (what a notebook shows)."""
        from .cost.calibrate import size_text
        how = f"{self.algorithm}/{self.protocol}" + ("" if self.channels is None else f" on {self.channels} channels")
        cost = ("nothing priced" if not math.isfinite(self.time_s) else
                f"{self.time_s * 1e6:,.2f} us, busbw {self.busbw_GBps:,.1f} GB/s")
        return (f"{self.collective} on {self.fabric}: {self.groups:,} group(s) of {self.group_size:,}, "
                f"{size_text(self.size_bytes)}, {how}: {cost}" + (", PARTIAL" if self.partial else ""))

    def to_text(self) -> str:
        """The report as ``fabricsim price`` prints it: headline, time split, busbw, notes, phases, busiest links, what is partial."""
        out = [f"{self.collective} on {self.fabric}: {self.groups:,} group(s) of {self.group_size}, S = {_text.fmt_bytes(self.size_bytes)}, "
               f"algorithm {self.algorithm}, protocol {self.protocol}"
               f"{'' if self.channels is None else f', {self.channels} channels'} ({self.mode})",
               f"time {_text.us(self.time_s)} = bandwidth {_text.us(self.bandwidth_time_s)} + latency {_text.us(self.latency_s)}   "
               f"(link-load bound {_text.us(self.bound_s)})",
               f"algbw {self.algbw_GBps:,.1f} GB/s   busbw {self.busbw_GBps:,.1f} GB/s"]
        for note in self.notes:
            out.append(f"note: {note}")
        if self.phases:
            out.append("")
            out.append(_text.table([[p.name, p.repeat, p.flows, _text.fmt_bytes(p.bytes_per_flow), _text.us(p.step_bandwidth_s),
                                _text.us(p.step_latency_s), p.events, _text.us(p.time_s)] for p in self.phases],
                              ["phase", "steps", "flows/step", "bytes/flow", "bw/step", "lat/step", "events",
                               "time"]))
        if self.bottlenecks:
            out.append("")
            out.append("Busiest links (utilization over the bandwidth time):")
            out.append(_text.table([[b["link"], b["tier"], f"{b['utilization']:.1%}", f"{b['capacity_GBps']:,.1f}"]
                               for b in self.bottlenecks[:5]], ["link", "tier", "util", "GB/s"]))
        if self.unreachable_pairs.get("count"):
            out.append(f"PARTIAL: {self.unreachable_pairs['count']:,} pairs have no route, e.g. "
                       + "; ".join(self.unreachable_pairs["examples"]))
        if self.broken_groups.get("count"):
            out.append(f"PARTIAL: {self.broken_groups['count']:,} groups lost a chip, e.g. {self.broken_groups['examples'][:2]}")
        return "\n".join(out)

    def __repr__(self) -> str:
        return f"CostReport({self.summary()})"

    def _repr_html_(self) -> str:
        from html import escape
        rows = "".join(f"<tr><td>{escape(p.name)}</td><td>{p.repeat}</td><td>{p.time_s * 1e6:,.2f} us</td></tr>"
                       for p in self.phases)
        notes = "".join(f"<li>{escape(n)}</li>" for n in self.notes)
        return (f"<b>{escape(self.summary())}</b><table><tr><th>phase</th><th>steps</th><th>time</th></tr>{rows}"
                f"</table><ul>{notes}</ul>")

    def as_dict(self) -> dict[str, Any]:
        d = {k: getattr(self, k) for k in (
            "collective", "algorithm", "protocol", "channels", "fabric", "group_size", "groups", "size_bytes", "time_s",
            "bandwidth_time_s", "latency_s", "bound_s", "algbw_GBps", "busbw_GBps", "split", "split_source")}
        d["phases"] = [p.as_dict() for p in self.phases]
        d.update(bottlenecks=list(self.bottlenecks), unreachable_pairs=self.unreachable_pairs,
                 broken_groups=self.broken_groups, partial=self.partial, mode=self.mode,
                 notes=list(self.notes), alternatives=self.alternatives, method=self.method)
        return _finite(d)


def _finite(obj):
    """JSON has no inf/nan: write null for them."""
    if isinstance(obj, float) and not math.isfinite(obj):
        return None
    if isinstance(obj, dict):
        return {k: _finite(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [_finite(v) for v in obj]
    return obj


@dataclass(frozen=True)
class PriceOptions:
    """Every pricing option, carried as one value from the CLI to the engine.

    ``efficiency`` / ``step_overhead_ns`` / ``message_overhead_ns``: ``None`` means the
    model's own (ideal: 1, the graph's or 1 us, the graph's or 200 ns; otherwise the
    calibration's, else the fabric family's); a value overrides them for every collective.
    """

    size_bytes: float | None = None
    algorithm: str = "auto"
    protocol: str = "auto"
    calibration: Any = None              # collectives.cost.calibration.Calibration (lookup(c, a, p) -> dict)
    split: str | None = None             # None: the fabric's declared one (topo.routing.switching.default_split)
    tiers: str = "rule"
    efficiency: float | None = None
    step_overhead_ns: float | None = None
    message_overhead_ns: float | None = None
    bound_only: bool = False
    memory_limit_bytes: int | None = None
    symmetry: bool = True

    def replace(self, **changes) -> "PriceOptions":
        return dataclasses.replace(self, **changes)

    def price_kwargs(self) -> dict[str, Any]:
        """The options as ``price()`` keywords, without the size (whatif and sweep pass those on)."""
        return {f.name: getattr(self, f.name) for f in dataclasses.fields(self) if f.name != "size_bytes"}

    def check(self) -> None:
        if self.efficiency is not None and not (isinstance(self.efficiency, (int, float)) and
                                                0 < self.efficiency <= 1):
            raise BadInput(f"efficiency {self.efficiency} must be in (0, 1]", param="efficiency")
        for name in ("step_overhead_ns", "message_overhead_ns"):
            v = getattr(self, name)
            if v is not None and not (isinstance(v, (int, float)) and v >= 0 and math.isfinite(v)):
                raise BadInput(f"{name} {v!r} must be a number >= 0")
        if self.split is not None and self.split not in SPLIT_CHOICES:
            raise BadInput(f"split {self.split!r}; choose one of: {', '.join(SPLIT_CHOICES)}", param="split")
        if self.tiers not in ("rule", "any"):
            raise BadInput(f"tiers {self.tiers!r}; choose rule or any")
        if self.protocol not in PROTOCOL_CHOICES:
            raise BadInput(f"protocol {self.protocol!r}; choose one of: {', '.join(PROTOCOL_CHOICES)}",
                           param="protocol")
        if self.calibration is not None and not callable(getattr(self.calibration, "lookup", None)):
            raise BadInput("calibration must be a Calibration (see fabricsim.collectives.cost.calibration)")


@dataclass(frozen=True)
class CalibrationTable:
    """A calibration as plain dicts, with the contract's ``lookup``: what a sweep ships to workers.

    (A :class:`~fabricsim.collectives.cost.calibration.Calibration` may hold read-only
    mapping proxies, which do not pickle.)  Most specific wins: flat < collective <
    collective.algorithm < collective.algorithm.protocol.
    """

    flat: dict
    sections: dict
    path: str | None = None

    @classmethod
    def of(cls, cal):
        if cal is None or isinstance(cal, cls):
            return cal
        return cls(dict(cal.flat), {k: dict(v) for k, v in cal.sections.items()}, getattr(cal, "path", None))

    def lookup(self, collective: str, algorithm: str | None, protocol: str | None) -> dict[str, float]:
        from .cost.calibration import merged
        return merged(self.flat, self.sections, collective, algorithm, protocol)


def _rank_nodes(G: nx.Graph) -> dict[int, Any]:
    return {d[RANK]: n for n, d in G.nodes(data=True) if d.get(KIND) == CHIP}


def _examples(pairs, by_rank, k=5) -> list[str]:
    return [f"{by_rank.get(int(s), s)} -> {by_rank.get(int(d), d)}" for s, d in pairs[:k]]


@dataclass(frozen=True)
class PhasePlan:
    """A price before any routing: the groups it prices, the candidate algorithms, the step model.

    ``groups`` are all the groups asked for (input order); ``live`` the ones whose chips all
    exist (``group_ids`` their indices), ``broken`` what the others lost.  ``candidates``
    are the algorithms :func:`solve` will be asked for (``auto``: every one that applies and
    the family lets auto pick; else the one named).
    """

    collective: str
    groups: tuple
    live: tuple
    group_ids: tuple
    broken: dict
    size_bytes: float
    opts: PriceOptions
    candidates: tuple
    G: Any = field(repr=False, compare=False, default=None)
    view: Any = field(repr=False, compare=False, default=None)
    model: Any = field(repr=False, compare=False, default=None)      # cost.step_model.StepModel
    traffic: Any = field(repr=False, compare=False, default=None)
    reference: Any = field(repr=False, compare=False, default=None)
    by_rank: Any = field(repr=False, compare=False, default=None)
    split_source: str = "given"          # why opts.split: "given" or "fabric default (...)"

    @property
    def split_default(self) -> bool:
        """The split is the fabric's default (not given): where adaptive cannot run, equal replaces it."""
        return self.split_source != "given"

    @property
    def group_size(self) -> int:
        return len(self.groups[0])


def plan(G: nx.Graph, collective: str, groups: Sequence[Sequence[int]], opts: PriceOptions, *,
         traffic: np.ndarray | None = None, reference: nx.Graph | None = None) -> PhasePlan:
    """Check the inputs and lay out a price: groups, candidates and the step model (no routing)."""
    size_bytes = opts.size_bytes
    if collective not in ALGORITHMS:
        phases(collective, "ring", groups, size_bytes, view_of(G))  # raises the named error
    opts.check()
    split_source = "given"
    if opts.split is None:
        from ..topo.routing.switching import default_split
        split, split_source = default_split(G)
        opts = opts.replace(split=split)
    if traffic is not None:
        # all-to-all-v (issue 15): S is the mean per-rank send buffer, diagonal included,
        # so a uniform matrix of S/n per pair is the uniform all-to-all of S
        traffic = np.asarray(traffic, dtype=np.float64)
        if size_bytes is not None or collective != "all-to-all":
            raise BadInput("a traffic matrix gives an all-to-all-v of its own bytes: no size, all-to-all only")
        size_bytes = float(traffic.sum(axis=-1).mean()) if traffic.size else 0.0
    if not (isinstance(size_bytes, (int, float)) and size_bytes > 0 and math.isfinite(size_bytes)):
        raise BadInput(f"size {size_bytes!r} must be a positive number of bytes")
    groups = [tuple(int(r) for r in g) for g in groups]
    if not groups:
        raise BadInput("no groups to price")
    view = view_of(G)
    by_rank = _rank_nodes(G)
    present = set(by_rank)
    if not G.graph.get("failed"):
        # an intact fabric has every rank 0..N-1: a missing one is a typo, not a failure
        bad = next((r for g in groups for r in g if r not in present), None)
        if bad is not None:
            raise BadInput(f"group rank {bad} is not a chip of {G.graph.get('name', 'this fabric')}: ranks are "
                           f"0..{len(present) - 1}")
    ok_idx = [i for i, g in enumerate(groups) if all(r in present for r in g)]
    ok_set = set(ok_idx)
    broken = [i for i in range(len(groups)) if i not in ok_set]
    broken_info = {"count": len(broken), "examples": [
        {"group": i, "lost": [r for r in groups[i] if r not in present][:4]} for i in broken[:5]]}
    live = [groups[i] for i in ok_idx]
    if traffic is not None and traffic.ndim == 3 and len(traffic) == len(groups):
        traffic = traffic[ok_idx]            # one matrix per group: keep the priced groups'
    model = StepModel(G, collective, opts, float(size_bytes), len(groups[0]))
    ctx_ref = reference if (opts.bound_only and opts.symmetry and not broken) else None
    n = len(groups[0])
    if not live:
        cands: list = []
    elif opts.algorithm == "auto":
        cands = [a for a in algorithms_for(collective, live, view)
                 if not _auto_skips(a, n)
                 and (opts.protocol == "ideal" or model.family.auto_allows(collective, a))]
    else:
        cands = [opts.algorithm]
    return PhasePlan(collective, tuple(groups), tuple(live), tuple(ok_idx), broken_info, float(size_bytes), opts,
                     tuple(cands), G, view, model, traffic, ctx_ref, by_rank, split_source)


def _auto_skips(algorithm: str, n: int) -> bool:
    """Auto does not try ``algorithm`` for groups of ``n`` members (its record's ``auto_max_members``)."""
    limit = ALGORITHM_RECORDS[algorithm].auto_max_members
    return limit is not None and n > limit


def solve(p: PhasePlan, algorithm: str) -> "SolvedPhases":
    """Route and solve ``algorithm``'s phases for every live group of ``p`` at once (every protocol reuses it).

    A default ``adaptive`` split (the fabric's, not given) that cannot run here (a phase too
    big for the multipath program) is replaced by ``equal`` for the algorithm, and a note
    says so; a given ``adaptive`` refuses with its :class:`BadInput`.
    """
    from .adaptive import AdaptiveRefused
    try:
        return _solve(p.G, p.collective, algorithm, list(p.live), p.size_bytes, p.view, p.by_rank, p.opts,
                      p.reference, p.traffic, p.model.link_efficiency())
    except AdaptiveRefused as exc:
        if not p.split_default:
            raise
        why = str(exc).removeprefix("--split adaptive: ").split("; use --split equal")[0]
        s = _solve(p.G, p.collective, algorithm, list(p.live), p.size_bytes, p.view, p.by_rank,
                   p.opts.replace(split="equal"), p.reference, p.traffic, p.model.link_efficiency())
        note = (f"split: the fabric's default adaptive could not run {algorithm} ({why}); priced with equal "
                f"(fixed ECMP shares) instead")
        return dataclasses.replace(s, notes=(note,) + s.notes, split="equal")


def cost(p: PhasePlan, solved: "SolvedPhases", algorithm: str, protocol: str) -> PhaseTimes:
    """One protocol's times for a solved algorithm (the step model, :mod:`.cost.step_model`)."""
    return p.model.time(solved, algorithm, protocol, len(p.live))


def run(G: nx.Graph, collective: str, groups: Sequence[Sequence[int]], opts: PriceOptions, *,
        traffic: np.ndarray | None = None, reference: nx.Graph | None = None) -> CostReport:
    """Price ``collective`` for every group of ``groups`` at once on ``G`` (see :func:`price`):
    :func:`plan`, then :func:`solve` and :func:`cost` each candidate, keep the cheapest.

    ``G`` is pinned for the call (:func:`fabricsim.topo.graphcache.pinned`): the candidates, the
    equal-split solve and the adaptive certificate share one link table and their routes."""
    from ..topo.graphcache import pinned
    with pinned(G):
        return _run(G, collective, groups, opts, traffic=traffic, reference=reference)


def _cross_rack_note(G: nx.Graph, groups, cross_bytes: float, size_bytes: float, algorithm: str) -> str | None:
    """The cross-rack share of the data, said only where a chip's tiers differ in bandwidth (a uniform
    fabric such as a torus of cubes has no slower tier to name)."""
    from ..topo.routing import link_table
    ranks = {r for g in groups for r in g}
    lt = link_table(G)                      # the call's own (the graph is pinned while it is priced)
    chip = next((n for n, d in G.nodes(data=True) if d.get("rank") == min(ranks)), None)
    out = lt.src == lt.node_index.get(chip, -1)
    tiers: dict[str, float] = {}
    for t, c in zip(lt.tier[out].tolist(), lt.capacity_gbps[out].tolist()):
        tiers[t] = tiers.get(t, 0.0) + c / 8.0          # GB/s per direction, per tier
    if len(tiers) < 2 or max(tiers.values()) <= min(tiers.values()) * (1 + 1e-9):
        return None
    slow, fast = min(tiers, key=tiers.get), max(tiers, key=tiers.get)
    per_chip = cross_bytes / max(1, len(ranks))
    return (f"each chip sends {per_chip / size_bytes:.4g} x S across racks on average ({algorithm}); no algorithm "
            f"moves less than the cross-rack share of the data, and a chip's {slow} tier has "
            f"{tiers[slow]:,.4g} GB/s against {tiers[fast]:,.4g} GB/s on its {fast} tier")


def _run(G: nx.Graph, collective: str, groups: Sequence[Sequence[int]], opts: PriceOptions, *,
         traffic: np.ndarray | None = None, reference: nx.Graph | None = None) -> CostReport:
    p = plan(G, collective, groups, opts, traffic=traffic, reference=reference)
    pl = p                                   # (p is reused as a protocol name below)
    groups, size_bytes, model, broken_info = p.groups, p.size_bytes, p.model, p.broken
    kept = set(p.group_ids)
    broken = [i for i in range(len(groups)) if i not in kept]
    ok_idx = list(p.group_ids)
    n = p.group_size
    if not p.live:
        nan = float("nan")
        return CostReport(collective, opts.algorithm, G.graph.get("name", "?"), n, len(groups), float(size_bytes),
                          nan, nan, nan, nan, nan, nan, (), (), {"count": 0, "examples": []}, broken_info,
                          True, "none", ("every group lost a chip: nothing to price",),
                          protocol=opts.protocol, method={"path": "none", "quotient_size": 0, "flows": 0,
                                                          "refused": []}, split=p.opts.split,
                          split_source=p.split_source)
    cands = p.candidates
    trials = {}
    for a in cands:
        solved = solve(p, a)
        for proto in model.protocols(a):
            trials[(a, proto)] = (solved, cost(p, solved, a, proto))
    if not trials:
        runs = sorted({p for a in cands for p in model.family.protocols_for(a)})
        raise BadInput(f"protocol {opts.protocol!r} is not available for {', '.join(cands)} on the "
                       f"{model.family.name} family, which runs {', '.join(runs) or 'no protocol'} there; "
                       f"choose auto, ideal{''.join(', ' + p for p in runs)}", param="protocol")
    best = min(trials, key=lambda k: (trials[k][1].time_s, k))
    solved, timed = trials[best]
    alts: dict = {}
    notes: tuple = ()
    if opts.algorithm == "auto":
        for (a, p), (_, t) in trials.items():
            alts[a] = min(alts.get(a, math.inf), t.time_s)
        ranked = ", ".join(f"{a} {alts[a] * 1e6:,.1f} us" for a in sorted(alts, key=alts.get))
        skipped = "".join(f" ({a} skipped: {ALGORITHM_RECORDS[a].auto_skip_why} above "
                          f"n={ALGORITHM_RECORDS[a].auto_max_members})"
                          for a in ALGORITHMS[collective] if _auto_skips(a, n))
        notes = (f"auto picked {best[0]}: {ranked}{skipped}",)
    if opts.protocol == "auto":
        per_proto = sorted(((t.time_s, p) for (a, p), (_, t) in trials.items() if a == best[0]))
        notes += ("protocol auto picked " + best[1] + ": " +
                  ", ".join(f"{p} {t * 1e6:,.1f} us" for t, p in per_proto),)
    split_source = pl.split_source
    if pl.split_default and solved.split != pl.opts.split:
        split_source += f"; {pl.opts.split} could not run, {solved.split} instead"
    elif pl.split_default and solved.split != "equal":
        notes += (f"split {solved.split}: {pl.split_source}",)
    notes = notes + tuple(solved.notes) + tuple(timed.notes) + model.families.notes()
    t = timed.time_s
    algbw = size_bytes / t / 1e9 if t > 0 else float("inf")
    partial = bool(broken) or solved.unreachable["count"] > 0
    if broken:
        notes += (f"PARTIAL: {len(broken)} of {len(groups)} groups lost a chip and were not priced",)
    if solved.unreachable["count"]:
        notes += (f"PARTIAL: {solved.unreachable['count']:,} chip pairs have no route; their bytes were "
                  f"not priced",)
    return CostReport(
        collective=collective, algorithm=best[0], fabric=G.graph.get("name", "?"), group_size=n,
        groups=len(groups), size_bytes=float(size_bytes), time_s=t, bandwidth_time_s=timed.bandwidth_s,
        latency_s=timed.latency_s, bound_s=timed.bound_s, algbw_GBps=algbw,
        busbw_GBps=algbw * busbw_factor(collective, n), phases=timed.phases,
        bottlenecks=tuple(solved.bottlenecks), unreachable_pairs=solved.unreachable, broken_groups=broken_info,
        partial=partial, mode="link-load bound" if opts.bound_only else "flow-level", notes=notes,
        group_time_s=timed.group_time_s, group_ids=tuple(ok_idx), alternatives=alts,
        link_bytes=solved.link_bytes, link_utilization=solved.link_utilization, protocol=best[1],
        method=solved.method, base_latency_s=timed.base_s, channels=timed.channels, split=solved.split,
        split_source=split_source)


# ----------------------------------------------------------------------------- the step model
@dataclass(frozen=True)
class SolvedPhases:
    """One algorithm's phases routed and solved (at the solve efficiency): what every protocol reuses."""

    plist: tuple                 # Phase per phase
    steps: tuple                 # _Step per phase
    messages: tuple              # most messages a rank sends per step, per phase
    solve_efficiency: float
    n_groups: int
    bottlenecks: tuple
    unreachable: dict
    notes: tuple
    link_bytes: Any
    link_utilization: Any
    method: dict
    tiers: tuple = ()            # per phase: the link tiers its flows cross
    cross_share: tuple = ()      # per phase: share of its bytes between domains (racks, nodes); None unknown
    per_link_efficiency: bool = False   # the solve's capacities carry each tier's delivered fraction
    links: tuple = ()            # per phase: the links its flows use (indices into the link table)
    split: str = "equal"         # the split the phases were solved with


def _capacity(raw: np.ndarray, tier_of: np.ndarray, solve_eff: float, tier_eff: dict | None) -> np.ndarray:
    """The solve's link capacities: raw line rate x the given efficiency, or each tier's family's fraction."""
    if tier_eff:
        # tiers of different families: each link runs at its own family's delivered rate
        return raw * np.array([tier_eff.get(t, 1.0) for t in tier_of.tolist()])
    return raw * solve_eff


def solve_capacity_Bps(G: nx.Graph, opts: PriceOptions, table=None) -> np.ndarray:
    """Per directed link of ``link_table(G)``: the capacity a price with ``opts`` solves at.

    Raw line rate x the given efficiency (1 when none), or, on a fabric whose tiers have
    families of different delivered fractions, each tier's fraction (protocol models only).
    A phase report's ``rate_scale`` is relative to these.
    """
    from ..topo import routing
    from .cost.family import families_of
    table = table if table is not None else routing.link_table(G)
    return _capacity(np.asarray(table.capacity_Bps, dtype=np.float64), np.asarray(table.tier).astype(str),
                     opts.efficiency if opts.efficiency is not None else 1.0, link_efficiency(families_of(G), opts))


def _solve(G, collective, algorithm, groups, size_bytes, view, by_rank, opts: PriceOptions, reference,
           traffic=None, tier_eff: dict | None = None) -> SolvedPhases:
    from ..topo import routing
    plist = phases(collective, algorithm, groups, size_bytes, view, traffic=traffic)
    table = routing.link_table(G)
    solve_eff = opts.efficiency if opts.efficiency is not None else 1.0
    raw = np.asarray(table.capacity_Bps, dtype=np.float64)
    tier_of = np.asarray(table.tier).astype(str)
    cap = _capacity(raw, tier_of, solve_eff, tier_eff)
    link_bytes = np.zeros(len(cap))
    notes = []
    bw_total = 0.0
    unreachable_pairs: list = []
    n_unreachable = 0
    relayed = 0
    cross_bytes = 0.0
    sym_notes: set[str] = set()
    ctx = _Ctx(G, table, cap, len(groups), opts.split, opts.tiers, opts.bound_only, opts.memory_limit_bytes,
               opts.symmetry, reference)
    steps, messages, crossed, shares, used_links = [], [], [], [], []
    for ph in plist:
        st = _price_phase(ph, ctx)
        used = np.flatnonzero(np.asarray(st.link_bytes) > 0)
        used_links.append(used)
        crossed.append(tuple(sorted(set(tier_of[used].tolist()))))
        total = ph.n_flows * ph.flow_bytes
        across = ph.bytes_across(view.domain, st.reach) if view.domain is not None and not ph.in_network else None
        shares.append(across / total if across is not None and total > 0 else None)
        if st.note:
            sym_notes.add(st.note)
        n_unreachable += st.unreachable
        unreachable_pairs.extend(st.examples)
        relayed += st.relayed
        link_bytes += ph.repeat * st.link_bytes
        bw_total += ph.repeat * st.time_s
        if across is not None:
            cross_bytes += ph.repeat * across
        st.saturated = int(np.sum(st.link_bytes >= cap * st.time_s * (1 - 1e-9))) if st.time_s > 0 else 0
        steps.append(st)
        messages.append(ph.messages_per_rank())
    if any(ph.in_network for ph in plist) and opts.protocol == "ideal":
        notes.append("in-network reduction is priced at link rate (ideal switch reduction); public "
                     "nccl-tests results on GB200 NVL72 reach 835-847 GB/s busbw at 4-8 GiB, so calibrate "
                     "with --efficiency to match measurements")
    if view.domain is not None and cross_bytes > 0:
        note = _cross_rack_note(G, groups, cross_bytes, size_bytes, algorithm)
        if note:
            notes.append(note)
    if sym_notes:
        notes.append("symmetry (exact): " + "; ".join(sorted(sym_notes)))
    if opts.split == "adaptive":
        from .adaptive import NOTE
        notes.append(NOTE)
    if relayed:
        notes.append(f"{relayed:,} flows (per step) relay through a chip in their own rack to reach a rail "
                     f"they are not wired to (rail-only, PXN); the relay's local traffic is priced")
    util = np.divide(link_bytes, cap * bw_total, out=np.zeros_like(link_bytes), where=cap * bw_total > 0)
    top = np.argsort(-util, kind="stable")[:BOTTLENECKS_SHOWN]
    if bw_total > 0:
        # ties hide how widespread the bottleneck is: count the saturated links per tier
        full = util >= 1 - 1e-9
        if full.any():
            tiers_, counts = np.unique(np.asarray(table.tier)[full].astype(str), return_counts=True)
            notes.append("saturated for the whole bandwidth time: " + ", ".join(
                f"{c:,} {t} links" for t, c in zip(tiers_, counts)))
    nodes = table.nodes
    bottlenecks = [{"link": f"{nodes[table.src[i]]} -> {nodes[table.dst[i]]}", "tier": str(table.tier[i]),
                    "utilization": float(util[i]), "bytes": float(link_bytes[i]),
                    "capacity_GBps": float(raw[i] / 1e9)} for i in top if util[i] > 0]
    return SolvedPhases(tuple(plist), tuple(steps), tuple(messages), solve_eff, len(groups), tuple(bottlenecks),
                   {"count": n_unreachable, "examples": _examples(unreachable_pairs, by_rank)},
                   tuple(notes), _frozen(link_bytes), _frozen(util), _method(plist, steps, opts),
                   tuple(crossed), tuple(shares), bool(tier_eff), tuple(used_links), opts.split)


# which fold is the most telling when phases differ: the costliest path wins the headline
_PATH_RANK = {"per-flow": 0, "bound": 1, "stabilizer": 2, "positions": 3, "twins": 4, "translations": 5,
              "in-network": 6, "automorphisms": 5}


def _method(plist, steps, opts: PriceOptions) -> dict:
    per_phase = [{"phase": ph.name, "path": st.path, "quotient_size": st.quotient_size,
                  "flows": int(ph.n_flows)} for ph, st in zip(plist, steps)]
    refused, seen = [], set()
    for st in steps:
        for m, reason in st.refused:
            if reason and (m, reason) not in seen:
                seen.add((m, reason))
                refused.append({"method": m, "reason": reason})
    head = min(per_phase, key=lambda p: (_PATH_RANK.get(p["path"], 0), -p["flows"]))
    path = "bound" if opts.bound_only and head["path"] == "per-flow" else head["path"]
    return {"path": path, "quotient_size": int(sum(p["quotient_size"] for p in per_phase)),
            "flows": int(sum(p["flows"] for p in per_phase)), "refused": refused, "phases": per_phase}


@dataclass
class _Ctx:
    """What every phase of one price shares."""

    G: nx.Graph
    table: Any
    cap: np.ndarray
    n_groups: int
    split: str
    tiers: str
    bound_only: bool
    memory_limit_bytes: int | None
    symmetry: bool
    reference: nx.Graph | None
    table_ref: Any = None


@dataclass
class _Step:
    """One step of a phase, priced: the same fields whichever way it was solved."""

    time_s: float                     # bandwidth time of the step (the solver's, or the bound)
    bound_s: float                    # link-load bound of the step
    link_bytes: np.ndarray            # (L,) bytes per link in one step
    latency_ns: float                 # slowest route
    events: int
    group_finish_s: np.ndarray        # (groups,) each collective group's slowest flow
    unreachable: int = 0              # flows without a route
    examples: list = field(default_factory=list)      # a few of them, (src, dst) ranks
    relayed: int = 0                  # flows relaying through a chip (PXN)
    reach: np.ndarray | None = None   # per-flow reachability where flows were listed
    note: str | None = None           # how symmetry was used
    path: str = "per-flow"            # which fast path: translations | twins | positions | stabilizer | per-flow | bound | in-network
    quotient_size: int = 0            # classes solved (0: flows listed)
    refused: tuple = ()               # (method, reason) of folds that did not hold
    saturated: int = 0                # links full for the step's bandwidth time


def _price_phase(ph: Phase, ctx: _Ctx) -> _Step:
    """Price one step of ``ph``: in-network, by symmetry classes, by the intact classes'
    correction (a bound on a degraded torus), or flow by flow."""
    from ..topo import routing, solver
    if ph.in_network:
        st = _step_in_network(ph, ctx)
        st.path = "in-network"
        return st
    guard = functools.partial(_guard_before_routing, solver, n_links=len(ctx.cap), bound_only=ctx.bound_only,
                              limit=ctx.memory_limit_bytes)
    if ctx.split == "adaptive":
        from .adaptive import step_adaptive
        return step_adaptive(ph, ctx, guard)
    f, refused = _fold(ctx.G, ph, ctx.table, ctx.split, ctx.tiers, ctx.symmetry, guard)
    if f is not None and f.quotient is None and ctx.reference is None:
        # a degraded torus: the symmetries that fix its failures (a bound-only price with
        # the intact reference takes the intact classes' correction below instead)
        s = _fold_stabilizer(ctx.G, ph, ctx.table, ctx.split, guard)
        if s is not None:
            refused.extend(s.attempts())
            f = s
    if f is not None and f.quotient is not None:
        st = _step_classes(ph, f.quotient, ctx)
        st.path, st.quotient_size = f.method, int(f.quotient.n_classes)
        st.refused = tuple((m, r) for m, r in refused if r)
        return st
    if ctx.reference is not None:
        ctx.table_ref = ctx.table_ref or routing.link_table(ctx.reference)
        d = _defect_bound(ctx.reference, ctx.G, ph, ctx.table, ctx.cap, ctx.split, ctx.tiers, ctx.table_ref)
        if d is not None:
            g_fin = np.zeros(ctx.n_groups)
            g_fin[np.unique(ph.row_group)] = d["time_s"]     # the bound: every group takes the phase's time
            note = (f"{d['describe']} on the intact fabric, less the {d['touched']:,} flows the failures "
                    f"touch, rerouted (link-load bound)")
            return _Step(d["time_s"], d["time_s"], d["link_bytes"], d["latency_ns"], 0, g_fin,
                         d["unreachable"], d["examples"], note=note, path="bound",
                         refused=tuple(refused))
    st = _step_flows(ph, ctx)
    st.refused = tuple(refused)
    return st


def _step_in_network(ph: Phase, ctx: _Ctx) -> _Step:
    step_bw, step_bound, lb, finish, lat_ns, events = _in_network(ph, ctx.G, ctx.table, ctx.cap)
    g_fin = np.zeros(ctx.n_groups)
    if finish.size:
        np.maximum.at(g_fin, ph.group, finish)
    return _Step(step_bw, step_bound, lb, lat_ns, events, g_fin)


def _step_classes(ph: Phase, q, ctx: _Ctx) -> _Step:
    """Symmetry classes: every flow of a class has the class's rate and finish."""
    from ..topo import solver
    P, Q, capO = q.routes.flow_piece, q.piece_orbit, q.orbit_capacity(ctx.cap)
    sizes = np.full(q.n_classes, ph.flow_bytes)
    if ctx.bound_only:
        b = solver.link_load_bound(P, Q, capO, sizes, multiplicity=q.multiplicity)
        step_bw = step_bound = b.time_s
        lb, finish, events = q.per_link(b.link_bytes), np.full(q.n_classes, step_bw), 0
    else:
        r = solver.simulate(P, Q, capO, sizes, multiplicity=q.multiplicity)
        step_bw, step_bound, lb = r.time_s, r.bound_s, q.per_link(r.link_bytes)
        finish, events = np.asarray(r.finish_s), r.events
    # rows of one orbit are alike: each finishes with its orbit's slowest class
    orbit_fin = np.zeros(int(q.row_orbit.max()) + 1)
    np.maximum.at(orbit_fin, q.row_orbit[q.rep_row], finish)
    g_fin = np.zeros(ctx.n_groups)
    np.maximum.at(g_fin, ph.row_group, orbit_fin[q.row_orbit])
    return _Step(step_bw, step_bound, lb, float(np.max(q.routes.latency_ns)), events, g_fin,
                 relayed=int(q.multiplicity[np.asarray(q.routes.relayed)].sum()), note=q.describe())


def _flow_pairs(ph: Phase) -> tuple:
    """``(sel, src, dst)``: the pairs a phase routes; ``sel`` indexes them among its flows (None: all).

    All-to-all-v: a flow of no bytes is no flow (a sparse MoE matrix routes only its copies).
    """
    sel = np.flatnonzero(ph.size_bytes > 0) if ph.pair_bytes is not None else None
    src, dst = (ph.src, ph.dst) if sel is None else (ph.src[sel], ph.dst[sel])
    return sel, src, dst


def _reached(ph: Phase, sel, src, dst, routes) -> tuple:
    """``(ok, reach, bad, examples)``: routed pairs with a route, the phase's flows with one, the
    pairs without, and up to five of those as (src, dst) ranks."""
    ok = np.asarray(routes.reachable, dtype=bool)
    reach = ok if sel is None else np.zeros(ph.n_flows, dtype=bool)
    if sel is not None:
        reach[sel] = ok
    bad = np.flatnonzero(~ok)
    return ok, reach, bad, list(zip(src[bad[:5]].tolist(), dst[bad[:5]].tolist()))


def _step_flows(ph: Phase, ctx: _Ctx, routes=None) -> _Step:
    """Every flow routed (unless ``routes`` of its pairs with ``ctx.split`` are given) and solved."""
    from ..topo import routing, solver
    sel, src, dst = _flow_pairs(ph)
    if routes is None:
        try:
            _guard_before_routing(solver, len(src), len(ctx.cap), ctx.bound_only, ctx.memory_limit_bytes)
        except TooLarge as exc:
            if ctx.symmetry:
                raise
            raise TooLarge(f"{exc}; or leave out --per-flow, so symmetry classes can solve it") from None
        routes = routing.route(ctx.G, src, dst, split=ctx.split, tiers=ctx.tiers, links=ctx.table)
    ok, reach, bad, examples = _reached(ph, sel, src, dst, routes)
    P = routes.flow_piece[np.flatnonzero(ok)]
    Q = routes.piece_link
    sizes = ph.size_bytes[reach]
    cap = ctx.cap
    if P.shape[0] == 0:
        step_bw = step_bound = 0.0
        lb, finish, events = np.zeros(len(cap)), np.zeros(0), 0
    elif ctx.bound_only:
        b = solver.link_load_bound(P, Q, cap, sizes)
        step_bw = step_bound = b.time_s
        # without fairness, a flow's finish is the bound of its busiest link
        lb, finish, events = np.asarray(b.link_bytes), np.full(P.shape[0], step_bw), 0
    else:
        solver.guard_memory(solver.estimate_memory_bytes(
            n_flows=P.shape[0], nnz_flow_piece=P.nnz, n_pieces=Q.shape[0], nnz_piece_link=Q.nnz,
            n_links=Q.shape[1]), limit_bytes=ctx.memory_limit_bytes)
        r = solver.simulate(P, Q, cap, sizes)
        step_bw, step_bound, lb = r.time_s, r.bound_s, np.asarray(r.link_bytes)
        finish, events = np.asarray(r.finish_s), r.events
    g_fin = np.zeros(ctx.n_groups)
    if finish.size:
        np.maximum.at(g_fin, ph.group[reach], finish)
    lat_ns = float(np.max(np.asarray(routes.latency_ns)[ok])) if ok.any() else 0.0
    return _Step(step_bw, step_bound, lb, lat_ns, events, g_fin, len(bad), examples,
                 relayed=int(np.asarray(routes.relayed)[ok].sum()), reach=reach)


def _frozen(a: np.ndarray) -> np.ndarray:
    a = np.asarray(a)
    a.flags.writeable = False
    return a


# Routing keeps ~3 pieces per flow (measured: pod 3.0, torus DOR 2.9) and a working set
# of ~110 bytes per flow while it builds them (85M torus flows peaked at 8.7 GiB).
PIECES_PER_FLOW = 3
ROUTING_BYTES_PER_FLOW = 110


def _guard_before_routing(solver, n_flows: int, n_links: int, bound_only: bool, limit) -> None:
    """Refuse a phase that would not fit before routing allocates it (not an OOM kill)."""
    from ..topo.errors import TooLarge
    routing_bytes = ROUTING_BYTES_PER_FLOW * n_flows
    if bound_only:
        try:
            solver.guard_memory(routing_bytes, limit_bytes=limit, n_flows=n_flows)
        except TooLarge:
            raise TooLarge(f"even the link-load bound needs ~{routing_bytes / 2**30:.1f} GiB to route "
                           f"{n_flows:,} flows; price fewer or smaller groups") from None
        return
    est = solver.estimate_memory_bytes(n_flows=n_flows, nnz_flow_piece=PIECES_PER_FLOW * n_flows,
                                       n_pieces=max(1, n_flows // 64), nnz_piece_link=max(1, n_flows // 16),
                                       n_links=n_links)
    solver.guard_memory(max(est, routing_bytes), limit_bytes=limit, n_flows=n_flows)


def _fold(G, ph: Phase, table, split: str, tiers: str, enabled: bool, guard=None):
    """The routing policy's symmetry fold of the phase (see :func:`fabricsim.topo.routing.fold`).

    Returns (Fold or None, [(method, reason) refused]).
    """
    if not enabled:
        return None, [("symmetry", "turned off (per-flow cross-check)")]
    # classes assume every flow carries flow_bytes: unequal bytes (all-to-all-v) go flow by flow
    if ph.pair_bytes is not None:
        return None, [("classes", "unequal bytes per flow (all-to-all-v) are solved flow by flow")]
    if not ph.rows_disjoint:
        return None, [("classes", "a chip is in two rows of the phase, so rows cannot be folded")]
    from ..topo import routing
    f = routing.fold(G, ph.rows, ph.pairs, links=table, split=split, tiers=tiers, guard=guard)
    return f, list(f.attempts())


def _fold_stabilizer(G, ph: Phase, table, split: str, guard):
    """The policy's stabilizer fold of a phase its own fold refused (a ``dor`` torus; None where the
    policy has none).

    All-to-all rows only: the reflections it uses reverse a ring's order, so an ordered
    pattern (ring, shift) is refused with that reason.
    """
    from ..topo import routing
    stabilizer = routing.policy_of(G).stabilizer
    if stabilizer is None:
        return None
    if ph.pairs is not None:
        return routing.Fold.refuse("stabilizer", "an ordered pattern (ring, shift), not an all-to-all: the "
                                   "reflections that fix a failure would reverse it")
    return stabilizer(G, ph.rows, links=table, split=split, guard=guard)


def _defect_bound(ref, G, ph: Phase, table, cap, split: str, tiers: str, table_ref) -> dict | None:
    """Link-load bound of ``ph`` on ``G``, a degraded copy of the symmetric ``ref``, or None.

    Loads are linear in the flows, and a failure changes the routes only of the flows
    whose routes it touches (dimension-order routing keeps every other route): so the
    loads are ``ref``'s, from its translation classes, less those flows' old routes
    plus their new ones on ``G``.  Exact; ``G``'s links are matched to ``ref``'s by name.
    """
    from ..topo import routing, solver, symmetry
    if ph.in_network or not ph.rows_disjoint or ph.pair_bytes is not None:   # equal sizes only
        return None
    q = symmetry.translation_quotient(ref, ph.rows, ph.pairs, links=table_ref, split=split,
                                      guard=functools.partial(_guard_before_routing, solver, n_links=len(cap),
                                                              bound_only=True, limit=None))
    if q is None:
        return None
    pairs = table._pairs()
    names = table_ref.nodes
    to_G = np.fromiter((pairs.get((names[a], names[b]), -1) for a, b in
                        zip(table_ref.src.tolist(), table_ref.dst.tolist())), np.int64, len(table_ref))
    src, dst, cls = symmetry.flows_through(q, np.flatnonzero(to_G < 0))
    size = ph.flow_bytes
    sizes = np.full(q.n_classes, size)
    intact = q.per_link(solver.link_load_bound(q.routes.flow_piece, q.piece_orbit,
                                               q.orbit_capacity(table_ref.capacity_Bps), sizes,
                                               multiplicity=q.multiplicity).link_bytes)
    unreachable, examples = 0, []
    lat = 0.0
    if len(src):
        old = routing.link_loads(ref, src, dst, size, split=split, tiers=tiers, links=table_ref)
        intact = np.maximum(intact - old.link_bytes, 0.0)
    lb = np.zeros(len(table))
    kept = to_G >= 0
    lb[to_G[kept]] = intact[kept]
    # classes with a member the failures left alone keep their intact latency
    touched = np.bincount(cls, minlength=q.n_classes)
    left = touched < q.multiplicity
    if left.any():
        lat = float(np.max(q.routes.latency_ns[left]))
    if len(src):
        new = routing.link_loads(G, src, dst, size, split=split, tiers=tiers, links=table)
        ok = new.reachable
        lb += new.link_bytes
        if ok.any():
            lat = max(lat, float(np.max(new.latency_ns[ok])))
        lost = np.flatnonzero(~ok)
        unreachable, examples = len(lost), list(zip(src[lost[:5]].tolist(), dst[lost[:5]].tolist()))
    with np.errstate(divide="ignore", invalid="ignore"):
        t = np.where(lb > 0, lb / cap, 0.0)
    return {"time_s": float(t.max()) if t.size else 0.0, "link_bytes": lb, "latency_ns": lat,
            "unreachable": unreachable, "examples": examples, "touched": len(src), "describe": q.describe()}


def reducing_links(G, table) -> np.ndarray:
    """Per directed link of ``table``: one end is a switch that reduces in the network (NVLS)."""
    red = np.array([bool(G.nodes[n].get("reduces")) and G.nodes[n].get(KIND) == "switch" for n in table.nodes])
    return red[np.asarray(table.src)] | red[np.asarray(table.dst)]


def in_network_flows(G, ph: Phase, table, cap: np.ndarray):
    """NVLS as flows, the one in-network model (price solves it alone, mix beside other jobs).

    Each rank pushes its S into the reducing switches it is linked to and receives S back
    (multicast): one flow per rank over its links to those switches, up and down, each
    link taking the share of S its capacity is of the rank's (the switches share the
    reduction evenly per byte of link).  Alone, a flow's rate is the smaller of its up
    and down capacity.  Returns (flow_piece (F, L), piece_link (L, L) identity, bytes).
    """
    import scipy.sparse as sp
    index = {n: i for i, n in enumerate(table.nodes)}
    by_rank = _rank_nodes(G)
    src_idx, dst_idx = np.asarray(table.src), np.asarray(table.dst)
    reducing = reducing_links(G, table)
    rows, cols, vals = [], [], []
    for f, r in enumerate(ph.src):
        c = index[by_rank[int(r)]]
        for links in (np.flatnonzero((src_idx == c) & reducing), np.flatnonzero((dst_idx == c) & reducing)):
            rows.extend([f] * len(links))
            cols.extend(links.tolist())
            vals.extend((cap[links] / cap[links].sum()).tolist())
    F, L = len(ph.src), len(cap)
    P = sp.csr_array((vals, (rows, cols)), shape=(F, L))
    return P, sp.identity(L, format="csr"), np.asarray(ph.size_bytes, dtype=np.float64)


def _in_network(ph: Phase, G, table, cap):
    """NVLS priced by the solver on :func:`in_network_flows`.

    Returns (step s, bound s, link bytes, per-flow finish, latency ns, events); the
    latency is the slowest rank's slowest link up plus its slowest link down.
    """
    from ..topo import solver
    P, Q, sizes = in_network_flows(G, ph, table, cap)
    if P.shape[0] == 0:
        return 0.0, 0.0, np.zeros(len(cap)), np.zeros(0), 0.0, 0
    r = solver.simulate(P, Q, cap, sizes)
    src_idx = np.asarray(table.src)
    index = {n: i for i, n in enumerate(table.nodes)}
    by_rank = _rank_nodes(G)
    lat_links = np.asarray(table.latency_ns)
    lat = 0.0
    for f, rk in enumerate(ph.src):
        links = P.indices[P.indptr[f]:P.indptr[f + 1]]
        up = src_idx[links] == index[by_rank[int(rk)]]
        lat = max(lat, float(lat_links[links[up]].max() + lat_links[links[~up]].max()))
    return float(r.time_s), float(r.bound_s), np.asarray(r.link_bytes), np.asarray(r.finish_s), lat, int(r.events)
