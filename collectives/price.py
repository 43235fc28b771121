"""Pricing: routes + solver -> a cost report for a collective on a fabric.

Model (say it where users see it; the README repeats it):

* Bandwidth: each phase's flows (every group at once) are routed by the fabric's
  policy and solved by the flow-level max-min solver with event-driven completion;
  a phase's step ends when its last flow ends.  Identical steps are solved once and
  multiplied by their count.  Phases run one after another.
* Latency: every step adds the slowest route's latency (links plus switches), a
  per-step overhead (software, synchronisation: ``step_overhead_ns`` on the graph,
  else 1 us) and, where a rank sends to k peers in the step, (k - 1) per-message
  overheads (200 ns unless overridden): why a hierarchical all-to-all, with fewer
  and larger messages, wins at small sizes and loses at large ones.
* Phases run one after another (no pipelining between phases).
* Calibration: ``efficiency`` scales every link's capacity (a measured fraction of
  line rate, e.g. 0.94 for NVLink at large sizes).
* algbw = S / time, busbw = algbw x 2(n-1)/n (all-reduce) or x (n-1)/n (others),
  with S as nccl-tests defines it (the per-rank buffer for all-reduce, the whole
  buffer for all-gather, reduce-scatter and all-to-all).
"""
from __future__ import annotations

import functools
import math
from dataclasses import dataclass, field
from typing import Any, Sequence

import networkx as nx
import numpy as np

from ..topo.contract import CHIP, KIND, RANK
from ..topo.errors import BadInput, TooLarge
from .algorithms import ALGORITHMS, Phase, algorithms_for, phases, view_of

__all__ = ["CostReport", "PhaseReport", "price", "busbw_factor", "DEFAULT_STEP_OVERHEAD_NS",
           "AUTO_PAIRWISE_MAX"]

# Per-step overhead when a fabric sets none: ~1 us covers a kernel's synchronisation
# and protocol handshake per step (NCCL's LL/Simple protocols measure a few us per
# step on NVLink; I, override with --step-latency-us or calibrate).
DEFAULT_STEP_OVERHEAD_NS = 1000.0
# Per-message cost: a rank that sends to k peers in one step issues k messages (an
# all-to-all's n-1 sends); each beyond the first adds this much (I: descriptor and
# doorbell cost of a GPU-initiated send, order 0.1-0.5 us; calibrate to measurements).
DEFAULT_MESSAGE_OVERHEAD_NS = 200.0
# auto does not try pairwise all-to-all above this size: n-1 separate solves
AUTO_PAIRWISE_MAX = 64
BOTTLENECKS_SHOWN = 10


def busbw_factor(collective: str, n: int) -> float:
    """nccl-tests bus bandwidth factor."""
    return 2 * (n - 1) / n if collective == "all-reduce" else (n - 1) / n


@dataclass(frozen=True)
class PhaseReport:
    name: str
    repeat: int
    flows: int
    bytes_per_flow: float
    step_bandwidth_s: float      # one step, flow-level (or the bound in bound-only mode)
    step_latency_s: float
    step_bound_s: float
    events: int
    time_s: float                # repeat x (bandwidth + latency)
    saturated_links: int

    def as_dict(self) -> dict[str, Any]:
        return dict(self.__dict__)


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
    alternatives: dict = field(default_factory=dict)      # auto: algorithm -> time_s
    # per directed link of topo.routing.link_table(G): bytes over the whole collective and
    # utilization over its bandwidth time (what ``bottlenecks`` ranks); not in the JSON
    link_bytes: Any = field(default=None, repr=False, compare=False)
    link_utilization: Any = field(default=None, repr=False, compare=False)

    def as_dict(self) -> dict[str, Any]:
        d = {k: getattr(self, k) for k in (
            "collective", "algorithm", "fabric", "group_size", "groups", "size_bytes", "time_s",
            "bandwidth_time_s", "latency_s", "bound_s", "algbw_GBps", "busbw_GBps")}
        d["phases"] = [p.as_dict() for p in self.phases]
        d.update(bottlenecks=list(self.bottlenecks), unreachable_pairs=self.unreachable_pairs,
                 broken_groups=self.broken_groups, partial=self.partial, mode=self.mode,
                 notes=list(self.notes), alternatives=self.alternatives)
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


def _rank_nodes(G: nx.Graph) -> dict[int, Any]:
    return {d[RANK]: n for n, d in G.nodes(data=True) if d.get(KIND) == CHIP}


def _examples(pairs, by_rank, k=5) -> list[str]:
    return [f"{by_rank.get(int(s), s)} -> {by_rank.get(int(d), d)}" for s, d in pairs[:k]]


def price(G: nx.Graph, collective: str, *, groups: Sequence[Sequence[int]], size_bytes: float | None = None,
          algorithm: str = "auto", traffic: np.ndarray | None = None, split: str = "equal", tiers: str = "rule", efficiency: float = 1.0,
          step_overhead_ns: float | None = None, message_overhead_ns: float | None = None,
          bound_only: bool = False,
          memory_limit_bytes: int | None = None, symmetry: bool = True,
          reference: nx.Graph | None = None) -> CostReport:
    """Price ``collective`` of ``size_bytes`` for every group of ``groups`` at once on ``G``.

    Parameters
    ----------
    G : fabric graph (possibly degraded by failures).
    collective : ``all-reduce``, ``all-gather``, ``reduce-scatter`` or ``all-to-all``.
    groups : chip ranks of each group (all the same size).
    size_bytes : S as nccl-tests defines it for the collective (with ``traffic``: omit it;
        S is then the mean bytes per rank, the matrix's mean row sum).
    algorithm : a name from ``ALGORITHMS[collective]`` or ``auto`` (the cheapest that applies).
    traffic : all-to-all-v: bytes rank a of a group sends rank b, (n, n) for every group or
        (groups, n, n); unequal flows are solved
        flow by flow, a uniform matrix prices exactly as the uniform all-to-all.
    split : ``equal`` over next hops (ECMP hashing) or ``capacity``-weighted.
    tiers : ``rule`` (the fabric's tier rules) or ``any`` (every shortest path).
    efficiency : fraction of line rate links deliver (calibration), in (0, 1].
    step_overhead_ns : per-step overhead; the graph's ``step_overhead_ns`` or 1 us by default.
    message_overhead_ns : cost of each message beyond the first a rank sends in one step;
        the graph's ``message_overhead_ns`` or 200 ns by default.
    bound_only : price by the link-load bound alone (cheap; no fairness, no events).
    memory_limit_bytes : refuse (:class:`TooLarge`) a phase whose estimate exceeds this
        (default: the memory available).
    symmetry : solve translation classes of flows where the fabric and the phase allow it
        (an intact DOR torus whose groups tile it): exact, and far smaller.  ``False``
        routes and solves every flow (a cross-check).

    Returns
    -------
    CostReport

    Examples
    --------
    >>> from fabricsim.fabrics import build
    >>> from fabricsim.collectives import by_size
    >>> G = build("jalapeno-rack")
    >>> r = price(G, "all-reduce", groups=by_size(G, 8), size_bytes=2**26, algorithm="ring")
    >>> round(r.bandwidth_time_s / (2 * 7 / 8 * 2**26 / 600e9), 9)
    1.0
    """
    if collective not in ALGORITHMS:
        phases(collective, "ring", groups, size_bytes, view_of(G))  # raises the named error
    if not 0 < efficiency <= 1:
        raise BadInput(f"efficiency {efficiency} must be in (0, 1]")
    if split not in ("equal", "capacity"):
        raise BadInput(f"split {split!r}; choose equal or capacity")
    if tiers not in ("rule", "any"):
        raise BadInput(f"tiers {tiers!r}; choose rule or any")
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
    present = set(_rank_nodes(G))
    by_rank = _rank_nodes(G)
    ok_idx = [i for i, g in enumerate(groups) if all(r in present for r in g)]
    broken = [i for i, g in enumerate(groups) if i not in set(ok_idx)]
    broken_info = {"count": len(broken), "examples": [
        {"group": i, "lost": [r for r in groups[i] if r not in present][:4]} for i in broken[:5]]}
    live = [groups[i] for i in ok_idx]
    if traffic is not None and traffic.ndim == 3 and len(traffic) == len(groups):
        traffic = traffic[ok_idx]            # one matrix per group: keep the priced groups'
    overhead_ns = step_overhead_ns if step_overhead_ns is not None else float(
        G.graph.get("step_overhead_ns", DEFAULT_STEP_OVERHEAD_NS))
    msg_ns = message_overhead_ns if message_overhead_ns is not None else float(
        G.graph.get("message_overhead_ns", DEFAULT_MESSAGE_OVERHEAD_NS))
    common = dict(split=split, tiers=tiers, efficiency=efficiency, overhead_s=overhead_ns * 1e-9,
                  message_s=msg_ns * 1e-9,
                  bound_only=bound_only, memory_limit_bytes=memory_limit_bytes, symmetry=symmetry,
                  reference=reference if (bound_only and symmetry and not broken) else None, traffic=traffic)
    n = len(groups[0])
    if not live:
        nan = float("nan")
        return CostReport(collective, algorithm, G.graph.get("name", "?"), n, len(groups), float(size_bytes),
                          nan, nan, nan, nan, 0.0, 0.0, (), (), {"count": 0, "examples": []}, broken_info,
                          True, "none", ("every group lost a chip: nothing to price",))
    if algorithm == "auto":
        cands = [a for a in algorithms_for(collective, live, view)
                 if not (a == "pairwise" and n > AUTO_PAIRWISE_MAX)]
        trials = {a: _price_one(G, collective, a, live, size_bytes, view, by_rank, **common) for a in cands}
        best = min(trials, key=lambda a: (trials[a]["time_s"], a))
        res = trials[best]
        alts = {a: t["time_s"] for a, t in trials.items()}
        ranked = ", ".join(f"{a} {alts[a] * 1e6:,.1f} us" for a in sorted(alts, key=alts.get))
        skipped = " (pairwise skipped: n-1 steps above n=64)" if n > AUTO_PAIRWISE_MAX and \
            "pairwise" in ALGORITHMS[collective] else ""
        notes = (f"auto picked {best}: {ranked}{skipped}",)
    else:
        best = algorithm
        res = _price_one(G, collective, algorithm, live, size_bytes, view, by_rank, **common)
        alts, notes = {}, ()
    notes = notes + tuple(res["notes"])
    t = res["time_s"]
    algbw = size_bytes / t / 1e9 if t > 0 else float("inf")
    partial = bool(broken) or res["unreachable"]["count"] > 0
    if broken:
        notes += (f"PARTIAL: {len(broken)} of {len(groups)} groups lost a chip and were not priced",)
    if res["unreachable"]["count"]:
        notes += (f"PARTIAL: {res['unreachable']['count']:,} chip pairs have no route; their bytes were "
                  f"not priced",)
    return CostReport(
        collective=collective, algorithm=best, fabric=G.graph.get("name", "?"), group_size=n,
        groups=len(groups), size_bytes=float(size_bytes), time_s=t, bandwidth_time_s=res["bandwidth_s"],
        latency_s=res["latency_s"], bound_s=res["bound_s"], algbw_GBps=algbw,
        busbw_GBps=algbw * busbw_factor(collective, n), phases=tuple(res["phases"]),
        bottlenecks=tuple(res["bottlenecks"]), unreachable_pairs=res["unreachable"], broken_groups=broken_info,
        partial=partial, mode="link-load bound" if bound_only else "flow-level", notes=notes,
        group_time_s=tuple(res["group_time_s"]), group_ids=tuple(ok_idx), alternatives=alts,
        link_bytes=res["link_bytes"], link_utilization=res["link_utilization"])


def _price_one(G, collective, algorithm, groups, size_bytes, view, by_rank, *, split, tiers, efficiency,
               overhead_s, message_s, bound_only, memory_limit_bytes, symmetry, reference, traffic=None) -> dict:
    from ..topo import routing
    plist = phases(collective, algorithm, groups, size_bytes, view, traffic=traffic)
    table = routing.link_table(G)
    cap = np.asarray(table.capacity_Bps, dtype=np.float64) * efficiency
    link_bytes = np.zeros(len(cap))
    group_t = np.zeros(len(groups))
    reports, notes = [], []
    bw_total = lat_total = bound_total = 0.0
    unreachable_pairs: list = []
    n_unreachable = 0
    relayed = 0
    cross_bytes = 0.0
    sym_notes: set[str] = set()
    ctx = _Ctx(G, table, cap, len(groups), split, tiers, bound_only, memory_limit_bytes, symmetry, reference)
    for ph in plist:
        st = _price_phase(ph, ctx)
        if st.note:
            sym_notes.add(st.note)
        n_unreachable += st.unreachable
        unreachable_pairs.extend(st.examples)
        relayed += st.relayed
        messages = ph.messages_per_rank()
        step_lat = st.latency_ns * 1e-9 + overhead_s + max(messages - 1, 0) * message_s
        group_t += ph.repeat * (st.group_finish_s + step_lat)
        link_bytes += ph.repeat * st.link_bytes
        bw_total += ph.repeat * st.time_s
        lat_total += ph.repeat * step_lat
        bound_total += ph.repeat * st.bound_s
        if view.domain is not None and not ph.in_network:
            cross_bytes += ph.repeat * ph.bytes_across(view.domain, st.reach)
        sat = int(np.sum(st.link_bytes >= cap * st.time_s * (1 - 1e-9))) if st.time_s > 0 else 0
        reports.append(PhaseReport(ph.name, ph.repeat, ph.n_flows - st.unreachable, float(ph.flow_bytes),
                                   float(st.time_s), float(step_lat), float(st.bound_s), int(st.events),
                                   float(ph.repeat * (st.time_s + step_lat)), sat))
    if any(ph.in_network for ph in plist):
        notes.append("in-network reduction is priced at link rate (ideal switch reduction); public "
                     "nccl-tests results on GB200 NVL72 reach 835-847 GB/s busbw at 4-8 GiB, so calibrate "
                     "with --efficiency to match measurements")
    if view.domain is not None and cross_bytes > 0:
        per_chip = cross_bytes / max(1, len({r for g in groups for r in g}))
        notes.append(f"each chip sends {per_chip / size_bytes:.4g} x S across racks on average "
                     f"({algorithm}); no algorithm moves less than the cross-rack share of the data, so "
                     f"the slower tier paces every cross-rack collective")
    if sym_notes:
        notes.append("symmetry (exact): " + "; ".join(sorted(sym_notes)))
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
                    "capacity_GBps": float(cap[i] / 1e9)} for i in top if util[i] > 0]
    return {"time_s": bw_total + lat_total, "bandwidth_s": bw_total, "latency_s": lat_total,
            "bound_s": bound_total + lat_total, "phases": reports, "bottlenecks": bottlenecks,
            "unreachable": {"count": n_unreachable,
                            "examples": _examples(unreachable_pairs, by_rank)},
            "group_time_s": group_t.tolist(), "notes": notes, "link_bytes": _frozen(link_bytes),
            "link_utilization": _frozen(util)}


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


def _price_phase(ph: Phase, ctx: _Ctx) -> _Step:
    """Price one step of ``ph``: in-network, by symmetry classes, by the intact classes'
    correction (a bound on a degraded torus), or flow by flow."""
    from ..topo import routing, solver
    if ph.in_network:
        return _step_in_network(ph, ctx)
    guard = functools.partial(_guard_before_routing, solver, n_links=len(ctx.cap), bound_only=ctx.bound_only,
                              limit=ctx.memory_limit_bytes)
    q = _quotient(ctx.G, ph, ctx.table, ctx.split, ctx.tiers, ctx.symmetry, guard)
    if q is not None:
        return _step_classes(ph, q, ctx)
    if ctx.reference is not None:
        ctx.table_ref = ctx.table_ref or routing.link_table(ctx.reference)
        d = _defect_bound(ctx.reference, ctx.G, ph, ctx.table, ctx.cap, ctx.split, ctx.tiers, ctx.table_ref)
        if d is not None:
            g_fin = np.zeros(ctx.n_groups)
            g_fin[np.unique(ph.row_group)] = d["time_s"]     # the bound: every group takes the phase's time
            note = (f"{d['describe']} on the intact fabric, less the {d['touched']:,} flows the failures "
                    f"touch, rerouted (link-load bound)")
            return _Step(d["time_s"], d["time_s"], d["link_bytes"], d["latency_ns"], 0, g_fin,
                         d["unreachable"], d["examples"], note=note)
    return _step_flows(ph, ctx)


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


def _step_flows(ph: Phase, ctx: _Ctx) -> _Step:
    """Every flow routed and solved."""
    from ..topo import routing, solver
    # all-to-all-v: a flow of no bytes is no flow (a sparse MoE matrix routes only its copies)
    sel = np.flatnonzero(ph.size_bytes > 0) if ph.pair_bytes is not None else None
    src, dst = (ph.src, ph.dst) if sel is None else (ph.src[sel], ph.dst[sel])
    try:
        _guard_before_routing(solver, len(src), len(ctx.cap), ctx.bound_only, ctx.memory_limit_bytes)
    except TooLarge as exc:
        if ctx.symmetry:
            raise
        raise TooLarge(f"{exc}; or leave out --per-flow, so symmetry classes can solve it") from None
    routes = routing.route(ctx.G, src, dst, split=ctx.split, tiers=ctx.tiers, links=ctx.table)
    ok = np.asarray(routes.reachable, dtype=bool)
    reach = ok if sel is None else np.zeros(ph.n_flows, dtype=bool)
    if sel is not None:
        reach[sel] = ok
    bad = np.flatnonzero(~ok)
    examples = list(zip(src[bad[:5]].tolist(), dst[bad[:5]].tolist()))
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


def _quotient(G, ph: Phase, table, split: str, tiers: str, enabled: bool, guard=None):
    """The phase's symmetry classes (see :mod:`fabricsim.topo.symmetry`), or None."""
    # classes assume every flow carries flow_bytes: unequal bytes (all-to-all-v) go flow by flow
    if not enabled or not ph.rows_disjoint or ph.pair_bytes is not None:
        return None
    from ..topo import symmetry
    return (symmetry.translation_quotient(G, ph.rows, ph.pairs, links=table, split=split, guard=guard)
            or symmetry.twin_quotient(G, ph.rows, ph.pairs, links=table, split=split, tiers=tiers, guard=guard))


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


def _in_network(ph: Phase, G, table, cap):
    """NVLS: each rank pushes S into its reducing switches and receives S back (multicast).

    Every rank's links to the switches carry S up and S down, split by capacity as the
    switches share the reduction evenly per byte of link; the step takes the longest
    of those transfers.  Returns (step s, bound s, link bytes, per-flow finish, latency ns, events).
    """
    index = {n: i for i, n in enumerate(table.nodes)}
    by_rank = _rank_nodes(G)
    lb = np.zeros(len(cap))
    finish = np.zeros(len(ph.src))
    lat = 0.0
    src_idx = np.asarray(table.src)
    dst_idx = np.asarray(table.dst)
    lat_links = np.asarray(table.latency_ns)
    for f, (r, size) in enumerate(zip(ph.src, ph.size_bytes)):
        c = index[by_rank[int(r)]]
        up = np.nonzero(src_idx == c)[0]
        down = np.nonzero(dst_idx == c)[0]
        t_up = size / cap[up].sum()
        t_down = size / cap[down].sum()
        lb[up] += size * cap[up] / cap[up].sum()
        lb[down] += size * cap[down] / cap[down].sum()
        finish[f] = max(t_up, t_down)
        lat = max(lat, float(lat_links[up].max() + lat_links[down].max()))
    t = float(finish.max()) if finish.size else 0.0
    return t, t, lb, finish, lat, 1
