"""One failure scenario: the price of a collective before and after failures, side by side.

Public names
------------
WhatIf, whatif
    One scenario: baseline and degraded cost reports side by side, the slowdown,
    the chips and groups affected and by how much, the new bottlenecks.
PRICE_OPTIONS
    The :func:`~fabricsim.collectives.price` options a whatif or a sweep passes through.
RECOVERIES, SHRINKABLE, job_groups, survivors, restart_job
    Recovery after the failures: ``reroute`` (the job keeps its chips, traffic routes
    around the failures) or ``restart`` (the job is placed again on the chips that
    survive, on spares first, shrinking when too few survive).

A sweep of many scenarios is :mod:`fabricsim.collectives.whatif.sweeps`.

Notes
-----
* The slowdown is ``degraded.time_s / baseline.time_s`` (``bandwidth_slowdown`` the
  same for the bandwidth part alone).  Where the degraded price is partial (groups
  that lost a chip, pairs without a route), the slowdown covers what was priced, and
  the result says so (``partial``): a cut-off chip does not make a collective faster.
* ``whatif`` lets ``algorithm="auto"`` choose again on the degraded graph (a sweep
  resolves it once, on the intact fabric); both reports name the algorithm.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, Iterable, Sequence

import networkx as nx
import numpy as np

from ...topo import routing as _routing
from ...topo.contract import CHIP, FORWARDS, KIND, RANK
from ...topo.errors import BadInput
from ...topo.failures import apply_failures, chip_tier_bandwidth
from ...topo.contract import forwarding_graph
from ..placement import by_size, chip_ranks, parse_placement
from ..price import CostReport, _finite, price

__all__ = ["WhatIf", "whatif", "PRICE_OPTIONS", "RECOVERIES", "SHRINKABLE", "job_groups", "survivors",
           "restart_job"]

RECOVERIES = ("reroute", "restart")
# collectives whose groups may shrink on restart (an EP all-to-all spreads its experts over fewer
# ranks); the others keep their group size and lose whole groups (I: a modelling choice, see Notes)
SHRINKABLE = ("all-to-all",)

# price() options a whatif or sweep passes through
PRICE_OPTIONS = ("algorithm", "split", "tiers", "efficiency", "step_overhead_ns", "bound_only",
                 "memory_limit_bytes", "symmetry", "protocol", "calibration", "message_overhead_ns")
# a group whose time moved by less than this (relative) is unaffected: float noise of the solver
REL_TOL = 1e-9
BOTTLENECKS_SHOWN = 10


def _ratio(a: float, b: float) -> float:
    if not (math.isfinite(a) and math.isfinite(b)) or b <= 0:
        return float("nan")
    return float(a / b)


def _check_price_kwargs(kw: dict) -> None:
    bad = [k for k in kw if k not in PRICE_OPTIONS]
    if bad:
        raise BadInput(f"unknown price option(s) {', '.join(map(repr, bad))}; valid: {', '.join(PRICE_OPTIONS)}")


def _key(v: float) -> str:
    return f"{v:.6g}"


# ---------------------------------------------------------------------------------------
# Recovery: restart on the surviving chips
# ---------------------------------------------------------------------------------------
def check_recovery(recovery: str, spares: int) -> None:
    """Refuse an unknown recovery, a bad spare count, or spares without a restart (one line)."""
    if recovery not in RECOVERIES:
        raise BadInput(f"unknown recovery {recovery!r}; choose one of: {', '.join(RECOVERIES)}", param="recovery")
    if not isinstance(spares, int) or isinstance(spares, bool) or spares < 0:
        raise BadInput(f"spares {spares!r} must be an integer >= 0", param="spares")
    if spares and recovery != "restart":
        raise BadInput(f"spares {spares}: spare chips are used only by recovery 'restart' (reroute keeps the job "
                       f"on its chips)", param="spares")


def _rule_groups(pool: Sequence[int], group_size: int, placement: str, count: int) -> tuple:
    """``count`` groups of ``group_size`` by the placement rule of :func:`by_size`, applied by position over
    the chip ranks ``pool`` (sorted): over ranks ``0 .. N-1`` it gives exactly ``by_size``'s groups."""
    m = len(pool)
    strategy, seed = parse_placement(placement)
    pos = np.arange(m)
    if strategy == "random":
        order = np.random.default_rng(seed).permutation(m)
    elif strategy == "spread":
        order = pos[: m - m % group_size].reshape(group_size, -1).T.ravel()
    else:
        order = pos
    usable = (m // group_size) * group_size
    idx = order[:usable].reshape(m // group_size, group_size)[:count]
    arr = np.asarray(pool, dtype=np.int64)
    return tuple(tuple(int(r) for r in arr[g]) for g in idx)


def job_groups(G: nx.Graph, group_size: int, placement: str = "packed", spares: int = 0,
               count: int | None = None) -> tuple:
    """The job's groups on the intact fabric with the ``spares`` highest-ranked chips held out.

    ``spares=0`` is :func:`~fabricsim.collectives.by_size` itself.  With spares, the rule is
    applied over ranks ``0 .. chips-spares-1`` and the job takes ``count`` groups (default:
    as many whole groups as fit; the chips left over stay idle).

    Examples
    --------
    >>> from fabricsim.fabrics import build
    >>> G = build("jalapeno-pod", racks=2, trays=4)
    >>> job_groups(G, 8, spares=8)[-1]
    (48, 49, 50, 51, 52, 53, 54, 55)
    """
    check_recovery("restart", spares)
    if not spares:
        return by_size(G, group_size, placement, count=count)
    ranks = chip_ranks(G)
    if spares >= len(ranks):
        raise BadInput(f"spares {spares} leave no chip for the job: {G.graph.get('name', 'the fabric')!r} has "
                       f"{len(ranks):,} chips", param="spares")
    pool = ranks[: len(ranks) - spares]
    if group_size < 2 or group_size > len(pool):
        raise BadInput(f"group size {group_size} does not fit the {len(pool):,} chips left beside {spares} "
                       f"spare(s) (2 .. {len(pool):,})", param="group_size")
    most = len(pool) // group_size
    if count is not None and not 1 <= count <= most:
        raise BadInput(f"count {count} groups of {group_size} do not fit the {len(pool):,} chips left beside "
                       f"{spares} spare(s); at most {most}", param="count")
    return _rule_groups(pool.tolist(), group_size, placement, most if count is None else count)


def survivors(H: nx.Graph) -> tuple[list[int], dict[str, int]]:
    """Chips a restarted job can use on the degraded graph ``H``, and why the others were dropped.

    Returns
    -------
    ranks : list of int
        Sorted ranks of the chips present, with a link left, in the connected component
        of ``forwarding_graph(H)`` holding the most chips (ties: lowest rank).
    dropped : dict
        ``cut_off`` (present, no link left) and ``disconnected`` (links left, outside that
        component); chips missing from ``H`` are counted by the caller.
    """
    F = forwarding_graph(H)
    chips = {n: int(d[RANK]) for n, d in F.nodes(data=True) if d.get(KIND) == CHIP}
    cut = [n for n in chips if F.degree(n) == 0]
    best: list = []
    for comp in nx.connected_components(F):
        mine = [chips[n] for n in comp if n in chips and F.degree(n) > 0]
        if mine and (len(mine) > len(best) or (len(mine) == len(best) and min(mine) < min(best))):
            best = mine
    keep = sorted(best)
    return keep, {"cut_off": len(cut), "disconnected": len(chips) - len(cut) - len(keep)}


def restart_job(G: nx.Graph, H: nx.Graph, collective: str, groups: Sequence[Sequence[int]], *,
                placement: str = "packed", spares: int = 0) -> tuple[tuple, dict]:
    """Re-place the job ``groups`` (placed on ``G`` by ``placement`` with ``spares`` held out) on ``H``'s survivors.

    Returns
    -------
    groups : tuple of tuple of int
        The restarted job's groups (ranks of ``H``).
    recovery : dict
        ``mode`` ("restart"), ``placement``, ``spares``, ``spares_used`` (spare chips in the
        new placement), ``chips_dropped`` (``lost``, ``cut_off``, ``disconnected``: chips the
        job or the spares had that a restart cannot use), ``ranks_before`` / ``ranks_after`` /
        ``ranks_lost``, ``groups_before`` / ``groups_after`` / ``groups_lost``,
        ``group_size_before`` / ``group_size_after``, ``shrunk`` ("none", "groups" or
        "ranks"), ``moved`` (ranks of the job now on another chip).

    Raises
    ------
    BadInput
        ``groups`` are not the placement rule's groups (a restart must know the rule), or
        not one group fits the survivors.
    """
    check_recovery("restart", spares)
    groups = tuple(tuple(int(r) for r in g) for g in groups)
    sizes = {len(g) for g in groups}
    if len(sizes) != 1:
        raise BadInput("restart re-places groups of one size; these groups have sizes "
                       f"{', '.join(map(str, sorted(sizes)))}", param="recovery")
    g_size, n_groups = sizes.pop(), len(groups)
    all_ranks = chip_ranks(G)
    pool0 = all_ranks[: len(all_ranks) - spares].tolist()
    if groups != _rule_groups(pool0, g_size, placement, n_groups):
        raise BadInput(f"restart re-places the job by its placement rule, and these {n_groups} group(s) of {g_size} "
                       f"are not the '{placement}' groups over chips 0..{len(pool0) - 1}; place the job with a "
                       f"group size and placement (not a mesh or a groups file), or use recovery 'reroute'",
                       param="recovery")
    alive, dropped = survivors(H)
    spare_set = set(all_ranks[len(all_ranks) - spares:].tolist()) if spares else set()
    in_h = set(chip_ranks(H).tolist())
    job_set = set(r for g in groups for r in g)
    used = job_set | spare_set
    alive_set = set(alive)
    n_lost = sum(1 for r in used if r not in in_h)
    gone = {"lost": n_lost, "cut_off": 0, "disconnected": 0}
    # count only the chips of the job and its spares (other idle chips do not matter to it)
    if dropped["cut_off"] or dropped["disconnected"]:
        F = forwarding_graph(H)
        deg = {int(d[RANK]): F.degree(n) for n, d in F.nodes(data=True) if d.get(KIND) == CHIP}
        for r in used:
            if r in in_h and r not in alive_set:
                gone["cut_off" if deg.get(r, 0) == 0 else "disconnected"] += 1
    # the pool: the job's own surviving chips, the surviving spares, and nothing else (idle chips the job
    # never had stay idle: a restart asks for the same allocation)
    pool = sorted(r for r in alive if r in used)
    need = g_size * n_groups
    shrunk = "none"
    if len(pool) >= need:
        new_size, new_n = g_size, n_groups
    elif collective in SHRINKABLE:
        new_size, new_n, shrunk = len(pool) // n_groups, n_groups, "ranks"
        if new_size < 2:
            raise BadInput(f"restart: {len(pool):,} chip(s) survive for {n_groups:,} {collective} group(s); "
                           f"a group needs at least 2 ranks, so the job cannot restart", param="recovery")
    else:
        new_size, new_n, shrunk = g_size, len(pool) // g_size, "groups"
        if new_n < 1:
            raise BadInput(f"restart: {len(pool):,} chip(s) survive, fewer than one group of {g_size}; "
                           f"the job cannot restart ({collective} groups keep their size)", param="recovery")
    new = _rule_groups(pool, new_size, placement, new_n)
    old_pos = [r for g in groups for r in g]
    new_pos = [r for g in new for r in g]
    moved = sum(1 for a, b in zip(old_pos, new_pos) if a != b) + max(0, len(old_pos) - len(new_pos))
    info = {"mode": "restart", "placement": placement, "spares": int(spares),
            "spares_used": sum(1 for r in new_pos if r in spare_set), "chips_dropped": gone,
            "ranks_before": need, "ranks_after": len(new_pos), "ranks_lost": need - len(new_pos),
            "groups_before": n_groups, "groups_after": new_n, "groups_lost": n_groups - new_n,
            "group_size_before": g_size, "group_size_after": new_size, "shrunk": shrunk, "moved": moved}
    return new, info


# ---------------------------------------------------------------------------------------
# One scenario
# ---------------------------------------------------------------------------------------
@dataclass(frozen=True)
class WhatIf:
    """Baseline and degraded prices of one collective, and what the failures changed.

    Attributes
    ----------
    failed : tuple of dict
        The failures as applied (see :func:`~fabricsim.topo.failures.apply_failures`).
    baseline, degraded : CostReport
    slowdown, bandwidth_slowdown : float
        ``degraded / baseline`` of ``time_s`` and of ``bandwidth_time_s``; NaN when
        nothing could be priced after the failures.
    partial : bool
        The degraded price left out broken groups or pairs without a route.
    affected_chips : dict
        ``count``, ``lost``, ``cut_off``, ``tier_bandwidth_changed``, ``in_slowed_groups``,
        ``path_bandwidth_changed`` (chips whose bandwidth along their paths changed, see
        ``by_tier_paths``) and ``chips``: one entry per affected chip (``chip``, ``rank``, ``lost``,
        ``cut_off``, ``tier_GBps_before``, ``tier_GBps_after``, ``group``,
        ``group_slowdown``), by rank.  A chip is affected if it was lost, its link
        capacity on some tier changed, or its group's time changed.  A lost chip (failed
        itself) has ``tier_GBps_after`` None; a chip that is present but has no link left
        is ``cut_off`` and shows 0 GB/s on each of its tiers.
    affected_groups : tuple of dict
        ``{group, slowdown, time_s, baseline_time_s}`` for groups whose time changed
        by more than 1e-9 relative, and ``{group, broken: True, lost}`` for groups
        that lost a chip; broken first, then worst first.
    tier_bandwidth : dict
        ``chips_lost``, ``chips_cut_off``, ``by_tier_paths`` (the same histograms of each chip's
        bandwidth along its paths: :func:`.path_bandwidth.path_tier_bandwidth`, which counts
        its share of its switches' uplinks) and ``by_tier``: per tier, how many chips
        have each link capacity (GB/s) before and after; after, a chip that lost every
        link of a tier counts at ``"0"`` and lost chips are not counted (``chips_lost``),
        so after + lost = before.
    new_bottlenecks : tuple of dict
        Links among the busiest after the failures (utilization within 1e-6 of the
        degraded maximum) whose load, bytes / capacity, grew: they took diverted traffic
        or lost capacity.  ``{link, tier, utilization, baseline_utilization,
        load_growth, capacity_GBps}``, busiest first, at most 10.
    notes : tuple of str
    method : dict
        What ran: ``baseline`` / ``degraded`` (each price's ``method`` where the cost
        reports carry one) and, with ``explain=True``, ``symmetry``
        (:func:`~fabricsim.collectives.whatif.orbits.failure_symmetry`: generators verified
        and refused with reasons, those that keep the failures, the failure's orbit).
    recovery : dict
        ``mode``: ``reroute`` (the job kept its chips) or ``restart``; a restart adds
        :func:`restart_job`'s record and ``per_byte_slowdown`` (slowdown x ranks before /
        ranks after: time per byte of the job's payload against the intact job).  With
        restart, ``degraded`` is the restarted job's price and ``affected_groups`` lists
        the intact job's groups that lost a chip (``broken``; the restart re-placed them).
    """

    failed: tuple
    baseline: CostReport
    degraded: CostReport
    slowdown: float
    bandwidth_slowdown: float
    partial: bool
    affected_chips: dict
    affected_groups: tuple
    tier_bandwidth: dict
    new_bottlenecks: tuple
    notes: tuple = ()
    method: dict = field(default_factory=dict)
    recovery: dict = field(default_factory=lambda: {"mode": "reroute"})

    def to_text(self) -> str:
        """The what-if as ``fabricsim whatif`` prints it (:func:`~fabricsim.collectives.whatif.text.whatif_text`)."""
        from .text import whatif_text
        return whatif_text(self)

    def as_dict(self) -> dict[str, Any]:
        """The JSON form (``fabricsim whatif --json``); NaN and inf become null."""
        return _finite({
            "failed": [dict(f) for f in self.failed],
            "baseline": self.baseline.as_dict(), "degraded": self.degraded.as_dict(),
            "slowdown": self.slowdown, "bandwidth_slowdown": self.bandwidth_slowdown, "partial": self.partial,
            "affected_chips": self.affected_chips, "affected_groups": [dict(g) for g in self.affected_groups],
            "tier_bandwidth": self.tier_bandwidth, "new_bottlenecks": [dict(b) for b in self.new_bottlenecks],
            "notes": list(self.notes), "method": self.method, "recovery": dict(self.recovery)})


def _tier_hist(tb: dict[int, dict[str, float]], ranks: Iterable[int]) -> dict[str, dict[str, int]]:
    out: dict[str, dict[str, int]] = {}
    for r in ranks:
        for t, v in tb.get(r, {}).items():
            h = out.setdefault(t, {})
            h[_key(v)] = h.get(_key(v), 0) + 1
    return {t: dict(sorted(h.items(), key=lambda kv: -float(kv[0]))) for t, h in sorted(out.items())}


def _new_bottlenecks(G: nx.Graph, H: nx.Graph, base: CostReport, deg: CostReport) -> tuple:
    """Busiest links after the failures whose load (bytes / capacity) grew: they took diverted
    traffic or lost capacity, so they pace the degraded collective (matched by link name)."""
    ub, ud, bb, bd = base.link_utilization, deg.link_utilization, base.link_bytes, deg.link_bytes
    if any(x is None for x in (ub, ud, bb, bd)) or not len(ud) or not np.max(ud) > 0:
        return ()
    lb, ld = _routing.link_table(G), _routing.link_table(H)
    index_b = {(lb.nodes[u], lb.nodes[v]): i for i, (u, v) in enumerate(zip(lb.src, lb.dst))}
    hot = np.flatnonzero(np.asarray(ud) >= (1 - 1e-6) * float(np.max(ud)))
    out = []
    for i in hot:
        key = (ld.nodes[ld.src[i]], ld.nodes[ld.dst[i]])
        j = index_b.get(key)
        load_d = float(bd[i]) / float(ld.capacity_gbps[i])
        load_b = float(bb[j]) / float(lb.capacity_gbps[j]) if j is not None else 0.0
        if load_d <= load_b * (1 + 1e-6):
            continue
        out.append({"link": f"{key[0]} -> {key[1]}", "tier": str(ld.tier[i]), "utilization": float(ud[i]),
                    "baseline_utilization": float(ub[j]) if j is not None else None,
                    "load_growth": load_d / load_b if load_b > 0 else None,
                    "capacity_GBps": float(ld.capacity_gbps[i] / 8)})
    out.sort(key=lambda x: (-x["utilization"], -(x["load_growth"] or math.inf), x["link"]))
    return tuple(out[:BOTTLENECKS_SHOWN])


def whatif(G: nx.Graph, specs: Sequence[str], collective: str, *, groups: Sequence[Sequence[int]],
           size_bytes: float, baseline: CostReport | None = None, explain: bool = False,
           recovery: str = "reroute", spares: int = 0, placement: str = "packed", **price_kwargs) -> WhatIf:
    """Price ``collective`` on ``G`` and on ``G`` with ``specs`` failed, side by side.

    Parameters
    ----------
    G : networkx.Graph
        The intact fabric.
    specs : sequence of str
        Failure specs (:mod:`fabricsim.topo.failures` grammar), applied together.
    collective : str
    groups : groups of chip ranks, chosen on the intact fabric (a group that loses a
        chip is reported broken, not re-placed).
    size_bytes : float
    baseline : CostReport, optional
        The intact price when the caller already has it (same groups and options).
    explain : bool
        Also work out which verified symmetries of the intact fabric the failures keep
        (``method["symmetry"]``; costs a symmetry check of the fabric).
    recovery : {"reroute", "restart"}
        ``reroute`` (default): the job keeps ``groups`` and traffic routes around the
        failures.  ``restart``: the job is placed again on the surviving chips by
        ``placement`` (see the module Notes); ``groups`` must be that rule's groups,
        :func:`job_groups` with the same ``spares``.
    spares : int
        With restart: the highest-ranked chips held out of the job, used first on restart.
    placement : str
        With restart: the rule ``groups`` were placed by (``packed``, ``spread``, ``random[:SEED]``).
    **price_kwargs
        ``algorithm``, ``split``, ``tiers``, ``efficiency``, ``step_overhead_ns``,
        ``bound_only``, ``memory_limit_bytes``: as :func:`~fabricsim.collectives.price`.

    Returns
    -------
    WhatIf

    Examples
    --------
    >>> from fabricsim.fabrics import build
    >>> from fabricsim.collectives import by_size
    >>> G = build("jalapeno-rack")
    >>> w = whatif(G, ["local-switch:r00/lsw0"], "all-reduce", groups=by_size(G, 8), size_bytes=2**30,
    ...            algorithm="ring")
    >>> round(w.bandwidth_slowdown, 9)
    1.2
    """
    _check_price_kwargs(price_kwargs)
    check_recovery(recovery, spares)
    groups = [tuple(int(r) for r in g) for g in groups]
    H, applied = apply_failures(G, specs)
    rec: dict = {"mode": recovery}
    run_groups = groups
    if recovery == "restart":
        run_groups, info = restart_job(G, H, collective, groups, placement=placement, spares=spares)
        rec.update(info)
    base = baseline if baseline is not None else price(G, collective, groups=groups, size_bytes=size_bytes,
                                                       **price_kwargs)
    deg = price(H, collective, groups=run_groups, size_bytes=size_bytes, reference=G, **price_kwargs)
    slow = _ratio(deg.time_s, base.time_s)
    bw_slow = _ratio(deg.bandwidth_time_s, base.bandwidth_time_s)
    if recovery == "restart":
        rec["per_byte_slowdown"] = slow * rec["ranks_before"] / rec["ranks_after"]

    # groups
    present = set(chip_ranks(H).tolist())
    bt = dict(zip(base.group_ids, base.group_time_s))
    dt = dict(zip(deg.group_ids, deg.group_time_s))
    if recovery == "restart":
        # the restarted job's groups are not the intact job's: only which intact groups lost a chip compares
        alive = set(survivors(H)[0])
        dt = {i: None for i in base.group_ids if all(r in alive for r in groups[i])}
    affected_groups, per_group = [], {}
    for i in base.group_ids:
        if recovery == "restart" and i in dt:
            continue
        if i not in dt:
            per_group[i] = None
            affected_groups.append({"group": int(i), "broken": True, "slowdown": None,
                                    "lost": [r for r in groups[i] if r not in present]})
            continue
        s = _ratio(dt[i], bt[i])
        per_group[i] = s
        if not math.isfinite(s) or abs(s - 1.0) > REL_TOL:
            affected_groups.append({"group": int(i), "slowdown": s, "time_s": float(dt[i]),
                                    "baseline_time_s": float(bt[i])})
    affected_groups.sort(key=lambda g: (not g.get("broken", False),
                                        -g["slowdown"] if g["slowdown"] is not None and math.isfinite(g["slowdown"])
                                        else -math.inf, g["group"]))

    # chips
    tb0, tb1 = chip_tier_bandwidth(G), chip_tier_bandwidth(H)
    node_of = {d[RANK]: n for n, d in G.nodes(data=True) if d.get(KIND) == CHIP}
    group_of: dict[int, int] = {}
    for i, g in enumerate(groups):
        for r in g:
            group_of.setdefault(r, i)
    # a chip still present keeps every tier it had, at 0 GB/s where no link of that tier is left, so the
    # per-tier counts after the failures add up: present chips (cut off ones at 0) + lost chips = all chips
    tb1 = {r: {**{t: 0.0 for t in tb0.get(r, {})}, **v} for r, v in tb1.items()}
    chips, n_lost, n_cut, n_bw, n_slow = [], 0, 0, 0, 0
    for r, before in tb0.items():
        lost = r not in tb1
        after = tb1.get(r)
        cut_off = not lost and bool(before) and not any(v > 0 for v in after.values())
        changed = not lost and (set(before) != set(after) or any(
            abs(before[t] - after[t]) > REL_TOL * max(before[t], 1.0) for t in before))
        gi = group_of.get(r)
        gs = per_group.get(gi) if gi is not None else None
        slowed = gi is not None and gi in per_group and (gs is None or not math.isfinite(gs)
                                                          or abs(gs - 1.0) > REL_TOL)
        if not (lost or changed or slowed):
            continue
        n_lost += lost
        n_cut += cut_off
        n_bw += changed
        n_slow += slowed
        chips.append({"chip": str(node_of.get(r, r)), "rank": int(r), "lost": lost, "cut_off": cut_off,
                      "tier_GBps_before": before, "tier_GBps_after": after, "group": gi, "group_slowdown": gs})
    affected_chips = {"count": len(chips), "lost": n_lost, "cut_off": n_cut, "tier_bandwidth_changed": n_bw,
                      "in_slowed_groups": n_slow, "chips": chips}
    tiers = {}
    h0, h1 = _tier_hist(tb0, tb0), _tier_hist(tb1, tb1)
    for t in sorted(set(h0) | set(h1)):
        tiers[t] = {"before": h0.get(t, {}), "after": h1.get(t, {})}
    tiers_out = {"chips_lost": n_lost, "chips_cut_off": n_cut, "by_tier": tiers}
    # along the chips' paths (their share of their switches' uplinks): a loss one hop out shows here
    from .path_bandwidth import path_tier_bandwidth
    pb0, pb1 = path_tier_bandwidth(G), path_tier_bandwidth(H)
    pb1 = {r: {**{t: 0.0 for t in pb0.get(r, {})}, **v} for r, v in pb1.items()}
    affected_chips["path_bandwidth_changed"] = sum(
        1 for r, b in pb0.items() if r in pb1 and any(abs(b[t] - pb1[r].get(t, 0.0)) > REL_TOL * max(b[t], 1.0)
                                                      for t in b))
    p0, p1 = _tier_hist(pb0, pb0), _tier_hist(pb1, pb1)
    tiers_out["by_tier_paths"] = {t: {"before": p0.get(t, {}), "after": p1.get(t, {})}
                                  for t in sorted(set(p0) | set(p1))}

    new_bn = _new_bottlenecks(G, H, base, deg)

    notes = []
    partial = bool(deg.partial)
    priced = math.isfinite(deg.time_s)
    n_broken = deg.broken_groups.get("count", 0)
    if not priced:
        why = (f"every group lost a chip ({n_broken:,} of {len(groups):,})" if n_broken == len(groups)
               else "no group could be priced")
        notes.append(f"PARTIAL: nothing could be priced after the failures: {why}; no slowdown")
    elif partial:
        n_pairs = deg.unreachable_pairs.get("count", 0)
        why = ""
        if n_pairs and not any(d.get(FORWARDS) for _, d in H.nodes(data=True)):
            why = (" (nothing on this fabric relays traffic: chips do not forward and there are no switches, "
                   "so a pair whose direct links failed is unreachable)")
        notes.append("PARTIAL: the degraded price leaves out "
                     + " and ".join(x for x in (
                         f"{n_broken:,} broken group(s)" if n_broken else "",
                         f"{n_pairs:,} chip pair(s) without a route{why}" if n_pairs else "") if x)
                     + "; the slowdown covers only what could be priced")
    if recovery == "restart":
        how = {"none": "kept its size", "groups": f"lost {rec['groups_lost']:,} whole group(s) of {rec['group_size_before']}",
               "ranks": f"shrank every group from {rec['group_size_before']} to {rec['group_size_after']} ranks"}
        notes.append(f"restart: the job was placed again ({placement}) on the surviving chips"
                     + (f" and {rec['spares_used']} of {spares} spare(s)" if spares else "")
                     + f": {rec['ranks_after']:,} of {rec['ranks_before']:,} ranks, {how[rec['shrunk']]}"
                     + ("" if rec["shrunk"] == "none" else
                        f"; per byte of its payload (ranks x S) it runs x{rec['per_byte_slowdown']:.6g} "
                        f"the intact job's time"))
    if priced and deg.algorithm != base.algorithm:
        notes.append(f"the algorithm changed: {base.algorithm} on the intact fabric, {deg.algorithm} degraded")
    method: dict = {}
    for name, rep in (("baseline", base), ("degraded", deg)):
        m = getattr(rep, "method", None)
        if isinstance(m, dict):
            method[name] = dict(m)
    if explain:
        from .orbits import failure_symmetry
        method["symmetry"] = failure_symmetry(G, groups, deg.algorithm if deg.algorithm == base.algorithm
                                              else base.algorithm, [a["spec"] for a in applied])
    return WhatIf(tuple(applied), base, deg, slow, bw_slow, partial, affected_chips, tuple(affected_groups),
                  tiers_out, new_bn, tuple(notes), method, rec)
