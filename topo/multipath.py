"""Multipath max-min fair rates: the allocation of adaptive routing (``split="adaptive"``).

With a fixed split (``equal``, ``capacity``: ECMP hashing) a flow's share of each link
is set by the routing, and :mod:`fabricsim.topo.solver` fills the rates.  Adaptive
routing (Broadcom Tomahawk cognitive routing / packet spraying, NVIDIA Spectrum-X
adaptive routing, UEC multipath transports) instead moves each flow's traffic among
the paths it is allowed to use until no path is busier than another it could take.
The model of that here is the **multipath max-min fair allocation**: over every way
of splitting each flow over its allowed paths, the rate vector whose sorted values
are lexicographically largest (Radunović & Le Boudec, "A unified framework for
max-min and min-max fairness with applications", IEEE/ACM ToN 2007; Nace & Pióro,
"Max-min fairness and its applications to routing and load-balancing in
communication networks: a tutorial", IEEE Comm. Surveys 2008).  The rate vector is
unique; the split achieving it need not be.

Allowed paths
    A flow may use every path in the support of its fixed-split route: the links its
    ``equal`` route puts a positive share on (the per-destination shortest-path DAG of
    ECMP on the flow's tier, with the relay legs of a relayed flow).  Every path from
    source to destination inside that support is one the policy allows, so adaptive
    routing changes how a flow spreads, never where it may go.

Method (exact, a linear program per level)
    Progressive filling: at each level solve, with HiGHS (``scipy.optimize.linprog``,
    ``method="highs"``), maximise ``t`` subject to ``rate_f >= w_f t`` for the unfrozen
    flows, ``rate_f`` held at its value for the frozen ones, flow conservation of every
    commodity on its arcs, and link capacity.  A flow whose ``rate_f >= w_f t`` row has
    a positive dual is tight in every optimum (complementary slackness holds for every
    optimal primal-dual pair), so it cannot exceed the level: it freezes there.  The
    duals of those rows sum to 1 over ``w_f``, so every level freezes at least one flow,
    and the filling ends in at most F programs (in practice a few per level).
    Commodities: flows with one destination share one commodity (the arc formulation
    with a supply variable per flow) where that is exact, i.e. where the union of
    their supports allows each of them no path outside its own support (checked per
    flow); any other flow is a commodity of its own.  Symmetry classes (a
    :class:`~fabricsim.topo.routing.Quotient`) are one commodity each: a class's
    representative routes on the real links, and its arc flows, times the class's
    multiplicity, load the link orbits (capacity: the orbit's sum).  The rate vector is
    unique and the fold's symmetries map the problem onto itself, so averaging any
    optimum over them gives a symmetric one with the same rates: the quotient program
    is exact.

Completion times (:func:`simulate`)
    As :func:`fabricsim.topo.solver.simulate`: solve the rates, advance to the earliest
    finish, retire the flows finishing within ``rel_tol`` of it, re-solve the rest.  The
    lower bound is the adaptive one: the least time any split could take (the
    min-congestion program, ``max t`` with ``rate_f >= bytes_f t``).

Public names
------------
Paths, paths_of, simulate, maxmin_rates, AdaptiveRates, AdaptiveResult, MAX_ARCS
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp

from .errors import FabricError

__all__ = ["Paths", "paths_of", "paths_for", "maxmin_rates", "simulate", "AdaptiveRates", "AdaptiveResult", "MAX_ARCS",
           "MAX_FLOWS"]

# Arc variables (commodity x link) one program may have.  HiGHS's time per program grows
# fast with the arcs of many overlapping commodities (measured on the shared 2-core VM:
# ~10 k arcs of a 32-chip pod all-to-all 0.1-0.5 s; 16 k arcs of a 64-chip ECMP torus
# all-to-all 20-37 s), and a filling solves a few programs per level and per event (I).
MAX_ARCS = 12_000
# Flows a phase may list before routing when no symmetry fold applies: each flow needs
# its route's support and a supply variable (I: keeps routing and the check under seconds).
MAX_FLOWS = 20_000
# A ``rate_f >= w_f t`` row whose dual exceeds this (the duals sum to 1 over w_f,
# weights normalised to at most 1) is binding: the flow freezes.
_DUAL_TOL = 1e-9
# Frozen rates are held in [rate (1 - _HOLD), rate] so that roundoff in the previous
# program cannot make the next infeasible.  Small: the capacity the hold frees, summed
# over F rows, must stay far below a probe's threshold (_PROBE x _PROBE_TOL of the level).
_HOLD = 1e-12
# When HiGHS's own tolerance (_TOL) left a held rate a hair over what the next program can carry (it reports
# "infeasible"), the hold is widened step by step and the program solved again: a fallback, never the first try.
_RELAX = (_HOLD, 1e-10, 1e-8, 1e-6)
# Probes give each undecided row a slack of at most _PROBE x the level (x its weight); a
# slack above _PROBE_TOL of that bound proves the row can exceed the level.
_PROBE = 0.1
# HiGHS method (scipy.optimize.linprog): "highs" lets HiGHS choose (dual simplex here)
_METHOD = "highs"
_PROBE_TOL = 1e-5
# HiGHS feasibility tolerances (its default 1e-7), in the normalised units (levels O(1))
_TOL = 1e-9


@dataclass(frozen=True)
class Paths:
    """A multipath problem: each flow (row) spreads over the arcs of its commodity.

    Attributes
    ----------
    n_rows : int
        Flows (or symmetry classes).
    row_com : numpy.ndarray of int64, shape (F,)
        Commodity of each row.
    row_src : numpy.ndarray of int64, shape (F,)
        Source node of each row (where its supply enters its commodity).
    multiplicity : numpy.ndarray of float64, shape (F,)
        Flows each row stands for (1, or a class's size); one per commodity.
    arc_com, arc_tail, arc_head : numpy.ndarray of int64, shape (A,)
        Commodity and end nodes of each arc.
    arc_link : numpy.ndarray of int64, shape (A,)
        The link (index into the link table) each arc runs on.
    com_sink : numpy.ndarray of int64, shape (K,)
        Destination node of each commodity.
    link_group : numpy.ndarray of int64, shape (L,)
        Capacity constraint of each link (the link itself, or its symmetry orbit).
    group_capacity_Bps : numpy.ndarray of float64, shape (Gr,)
        Capacity of each constraint, bytes/s (an orbit's: the sum over its links).
    """

    n_rows: int
    row_com: np.ndarray
    row_src: np.ndarray
    multiplicity: np.ndarray
    arc_com: np.ndarray
    arc_tail: np.ndarray
    arc_head: np.ndarray
    arc_link: np.ndarray
    com_sink: np.ndarray
    link_group: np.ndarray
    group_capacity_Bps: np.ndarray

    @property
    def n_arcs(self) -> int:
        return len(self.arc_com)

    def group_load(self, arc_flow: np.ndarray) -> np.ndarray:
        """Load of each constraint (bytes/s, or bytes) from per-arc flows of one row each."""
        w = arc_flow * self.multiplicity[self._com_row()][self.arc_com]
        return np.bincount(self.link_group[self.arc_link], weights=w, minlength=len(self.group_capacity_Bps))

    def _com_row(self) -> np.ndarray:
        """A row of each commodity (multiplicity is one per commodity)."""
        out = np.zeros(len(self.com_sink), np.int64)
        out[self.row_com] = np.arange(self.n_rows)
        return out


def paths_of(shares, link_src, link_dst, src_node, dst_node, *, link_group=None, group_capacity_Bps=None,
             capacity_Bps=None, multiplicity=None, aggregate: bool = True) -> Paths:
    """The multipath problem of flows whose allowed links are the support of ``shares``.

    Parameters
    ----------
    shares : sparse matrix, shape (F, L)
        A fixed-split route per flow (``Routes.shares()``); its positive entries are the
        links the flow may use.  Every row must be non-empty (a reachable flow).
    link_src, link_dst : array_like of int, shape (L,)
        End nodes of each directed link (``LinkTable.src`` / ``dst``).
    src_node, dst_node : array_like of int, shape (F,)
        Source and destination node of each flow.
    link_group, group_capacity_Bps : array_like, optional
        Capacity constraint per link and each constraint's capacity (a quotient's link
        orbits and orbit capacities); default: each link its own, ``capacity_Bps``.
    capacity_Bps : array_like, shape (L,), optional
        Per-link capacity when ``link_group`` is not given.
    multiplicity : array_like, shape (F,), optional
        Flows per row (a class's size); default 1.
    aggregate : bool
        Share one commodity among flows to one destination where exact (see the module
        notes); False: a commodity per row.

    Returns
    -------
    Paths

    Examples
    --------
    >>> import numpy as np, scipy.sparse as sp
    >>> # node 0 -> node 1 over two parallel links (0 and 1), one flow
    >>> p = paths_of(sp.csr_array([[0.5, 0.5]]), [0, 0], [1, 1], [0], [1], capacity_Bps=[3.0, 4.0])
    >>> p.n_arcs, maxmin_rates(p).rate_Bps.tolist()
    (2, [7.0])
    """
    S = sp.csr_array(shares)
    S.eliminate_zeros()
    F, L = S.shape
    link_src = np.asarray(link_src, np.int64)
    link_dst = np.asarray(link_dst, np.int64)
    src_node = np.asarray(src_node, np.int64)
    dst_node = np.asarray(dst_node, np.int64)
    if link_group is None:
        if capacity_Bps is None:
            raise ValueError("give capacity_Bps, or link_group with group_capacity_Bps")
        link_group = np.arange(L)
        group_capacity_Bps = np.asarray(capacity_Bps, np.float64)
    link_group = np.asarray(link_group, np.int64)
    group_capacity_Bps = np.asarray(group_capacity_Bps, np.float64)
    mult = np.ones(F) if multiplicity is None else np.asarray(multiplicity, np.float64)
    counts = np.diff(S.indptr)
    if F and counts.min() == 0:
        raise ValueError(f"flow {int(np.argmin(counts))} has no route; pass reachable flows only")
    row_com = np.arange(F, dtype=np.int64)
    if aggregate and F:
        row_com = _aggregate(S, link_src, link_dst, src_node, dst_node, mult)
    K = int(row_com.max()) + 1 if F else 0
    # arcs: the union of the supports of each commodity's rows
    keys = np.repeat(row_com, counts) * L + S.indices
    keys = np.unique(keys)
    arc_com, arc_link = keys // L, keys % L
    com_sink = np.zeros(K, np.int64)
    com_sink[row_com] = dst_node
    return Paths(F, row_com, src_node, mult, arc_com, link_src[arc_link], link_dst[arc_link], arc_link, com_sink,
                 link_group, group_capacity_Bps)


def _aggregate(S, link_src, link_dst, src_node, dst_node, mult) -> np.ndarray:
    """Commodity per row: one per destination (and multiplicity) where the union of the rows'
    supports gives no row a path outside its own support, else the row's own."""
    from scipy.sparse import csgraph
    F, L = S.shape
    row_com = np.full(F, -1, np.int64)
    key = np.unique(np.stack([dst_node, np.unique(mult, return_inverse=True)[1]]), axis=1, return_inverse=True)[1]
    key = np.asarray(key).ravel()
    n_com = 0
    order = np.argsort(key, kind="stable")
    bounds = np.flatnonzero(np.diff(key[order])) + 1
    for rows in np.split(order, bounds):
        if len(rows) == 1:
            row_com[rows] = n_com
            n_com += 1
            continue
        sub = S[rows]
        links = np.unique(sub.indices)
        nodes, inv = np.unique(np.concatenate([link_src[links], link_dst[links]]), return_inverse=True)
        u, v = inv[:len(links)], inv[len(links):]
        n = len(nodes)
        A = sp.csr_matrix((np.ones(len(links)), (u, v)), shape=(n, n))
        d = int(np.searchsorted(nodes, dst_node[rows[0]]))
        back = np.zeros(n, bool)
        back[csgraph.breadth_first_order(A.T.tocsr(), d, directed=True, return_predecessors=False)] = True
        ok = np.zeros(len(rows), bool)
        for i, f in enumerate(rows):
            s = int(np.searchsorted(nodes, src_node[f]))
            fwd = np.zeros(n, bool)
            fwd[csgraph.breadth_first_order(A, s, directed=True, return_predecessors=False)] = True
            allowed = links[fwd[u] & back[v]]
            own = np.sort(sub.indices[sub.indptr[i]:sub.indptr[i + 1]])
            ok[i] = np.array_equal(allowed, own)
        shared = rows[ok]
        if len(shared):
            row_com[shared] = n_com
            n_com += 1
        for f in rows[~ok]:
            row_com[f] = n_com
            n_com += 1
    return row_com


@dataclass(frozen=True)
class AdaptiveRates:
    """Multipath max-min fair rates (see :func:`maxmin_rates`).

    Attributes
    ----------
    rate_Bps : numpy.ndarray, shape (F,)
        Rate of one flow of each row, bytes/s (0 for rows left out).
    arc_flow_Bps : numpy.ndarray, shape (A,)
        A split achieving them: each arc's flow for one flow of its commodity's rows.
    n_levels : int
        Distinct fill levels.
    n_programs : int
        Linear programs solved.
    """

    rate_Bps: np.ndarray
    arc_flow_Bps: np.ndarray
    n_levels: int
    n_programs: int


class _Program:
    """The constant part of the level programs of a :class:`Paths` (normalised units)."""

    def __init__(self, p: Paths):
        self.p = p
        F, A = p.n_rows, p.n_arcs
        cap = p.group_capacity_Bps
        used_groups = np.unique(p.link_group[p.arc_link]) if A else np.zeros(0, np.int64)
        finite = used_groups[np.isfinite(cap[used_groups])]
        if F and not len(finite):
            raise ValueError("no flow crosses a capacity-limited link: rates are unbounded")
        # units: rates in R = (largest capacity) / (flows), so levels are O(1); multiplicities
        # over their largest, so every coefficient is at most 1
        mult = p.multiplicity
        self.m_max = float(mult.max()) if F else 1.0
        capmax = float(np.max(cap[finite])) if len(finite) else 1.0
        self.scale = capmax / max(float(mult.sum()), 1.0)
        # conservation rows: (commodity, node) pairs other than the sink
        cn = np.concatenate([p.arc_com, p.arc_com, p.row_com])
        nn = np.concatenate([p.arc_tail, p.arc_head, p.row_src])
        key_all = np.stack([cn, nn])
        uniq, inv = np.unique(key_all, axis=1, return_inverse=True)
        inv = np.asarray(inv).ravel()
        not_sink = uniq[1] != p.com_sink[uniq[0]]
        row_id = np.full(uniq.shape[1], -1, np.int64)
        row_id[not_sink] = np.arange(int(not_sink.sum()))
        ids = row_id[inv]
        n_eq = int(not_sink.sum())
        tail_r, head_r, src_r = ids[:A], ids[A:2 * A], ids[2 * A:]
        # variables: t, rate (F), arc flow (A)
        rows = np.concatenate([tail_r, head_r, src_r])
        cols = np.concatenate([1 + F + np.arange(A), 1 + F + np.arange(A), 1 + np.arange(F)])
        vals = np.concatenate([np.ones(A), -np.ones(A), -np.ones(F)])
        keep = rows >= 0
        self.A_eq = sp.csr_matrix((vals[keep], (rows[keep], cols[keep])), shape=(n_eq, 1 + F + A))
        self.b_eq = np.zeros(n_eq)
        # capacity rows: finite constraints touched by arcs
        g = p.link_group[p.arc_link]
        gi = np.full(len(cap), -1, np.int64)
        gi[finite] = np.arange(len(finite))
        on = gi[g] >= 0
        m = p.multiplicity[p._com_row()][p.arc_com] / self.m_max
        self.A_cap = sp.csr_matrix((m[on], (gi[g[on]], 1 + F + np.flatnonzero(on))), shape=(len(finite), 1 + F + A))
        self.b_cap = cap[finite] / (self.scale * self.m_max)
        self.n_vars = 1 + F + A
        self.calls = 0

    def level(self, w: np.ndarray, open_: np.ndarray, held: np.ndarray, *, t_fix: float | None = None,
              probe: np.ndarray | None = None, eps: float = 0.0):
        """One program in normalised units.

        Rows ``open_`` run at ``>= w t``, the others are held at ``held``.  Without
        ``t_fix``: maximise ``t``.  With it: ``t = t_fix`` and rows ``probe`` (a subset of
        ``open_``) get a slack ``0 <= s_f <= eps w_f`` on top (``rate_f >= w_f t + s_f``);
        maximise the slacks' sum.

        Returns (objective, per-open-row dual of its level row, rates, arc flows, slack per
        probe row).
        """
        from scipy.optimize import linprog
        F, nv = self.p.n_rows, self.n_vars
        rows = np.flatnonzero(open_)
        pr = np.zeros(0, np.int64) if probe is None else np.flatnonzero(probe[rows])   # positions in rows
        n_s = len(pr)
        n_all = nv + n_s
        lev = sp.csr_matrix((np.concatenate([w[rows], -np.ones(len(rows)), np.ones(n_s)]),
                             (np.concatenate([np.arange(len(rows))] * 2 + [pr]),
                              np.concatenate([np.zeros(len(rows), np.int64), 1 + rows, nv + np.arange(n_s)]))),
                            shape=(len(rows), n_all))
        A_cap = self.A_cap if not n_s else sp.hstack([self.A_cap, sp.csr_matrix((self.A_cap.shape[0], n_s))])
        A_eq = self.A_eq if not n_s else sp.hstack([self.A_eq, sp.csr_matrix((self.A_eq.shape[0], n_s))])
        A_ub = sp.vstack([A_cap, lev], format="csr")
        b_ub = np.concatenate([self.b_cap, np.zeros(len(rows))])
        lo = np.zeros(n_all)
        hi = np.full(n_all, np.inf)
        shut = np.flatnonzero(~open_)
        hi[1 + shut] = held[shut]
        c = np.zeros(n_all)
        if t_fix is None:
            c[0] = -1.0
        else:
            hi[nv:] = eps * w[rows[pr]]
            c[nv:] = -1.0
        for relax in _RELAX:
            lo[1 + shut] = held[shut] * (1 - relax)
            if t_fix is not None:
                lo[0] = hi[0] = t_fix * (1 - relax)
            self.calls += 1
            res = linprog(c, A_ub=A_ub, b_ub=b_ub, A_eq=A_eq, b_eq=self.b_eq, bounds=np.stack([lo, hi], 1),
                          method=_METHOD,
                          options={"primal_feasibility_tolerance": _TOL, "dual_feasibility_tolerance": _TOL})
            if res.status != 2:          # 2: infeasible -- roundoff in the held rates; widen the hold
                break
        if res.status == 3:
            raise ValueError("a flow crosses no capacity-limited link: rates are unbounded")
        if res.status != 0:
            raise FabricError(f"the max-min solver could not solve a fill level (HiGHS: {res.message}); "
                              f"--bound-only gives the link-load bound without it")
        dual = -np.asarray(res.ineqlin.marginals)[len(self.b_cap):]
        x = res.x
        return float(-res.fun), dual, x[1:1 + F], x[1 + F:nv], x[nv:]


def maxmin_rates(paths: Paths, *, weights=None, active=None, _program: _Program | None = None) -> AdaptiveRates:
    """Weighted multipath max-min fair rates, by progressive filling with a linear program per level.

    Each level: ``max t`` (rows with a positive dual on their level row are blocked);
    then probes at ``t`` fixed: maximise the sum of slacks ``0 <= s_f <= eps w_f`` of
    the rows not known blocked; rows with a positive slack can exceed the level, and
    once a probe's optimum is 0 the rest cannot (the probe proves it).  Blocked rows
    freeze at the level, the others go on to the next.  Exact: each row's status is
    proved by a program, none is guessed.

    Parameters
    ----------
    paths : Paths
    weights : array_like, shape (F,), optional
        Positive per-row weights (default 1): at fill level ``t`` an unfrozen row runs
        at ``weights[f] * t``.
    active : array_like of bool, shape (F,), optional
        Rows taking part (default all); the others get rate 0 and no arcs.

    Returns
    -------
    AdaptiveRates

    Examples
    --------
    >>> import numpy as np, scipy.sparse as sp
    >>> # two flows 0->2 and 1->2 share link 2 (node 2's only way in) of capacity 10
    >>> S = sp.csr_array([[1.0, 0, 1.0], [0, 1.0, 1.0]])
    >>> p = paths_of(S, [0, 1, 3], [3, 3, 2], [0, 1], [2, 2], capacity_Bps=[100.0, 100.0, 10.0])
    >>> maxmin_rates(p).rate_Bps.tolist()
    [5.0, 5.0]
    """
    F = paths.n_rows
    w = np.ones(F) if weights is None else np.asarray(weights, np.float64)
    if w.shape != (F,) or not np.all(w > 0):
        raise ValueError(f"weights must be {F} positive numbers")
    act = np.ones(F, bool) if active is None else np.asarray(active, bool)
    prog = _program or _Program(paths)
    wn = w / w.max() if F else w
    rate = np.zeros(F)
    open_ = act.copy()
    held = np.zeros(F)
    arc = np.zeros(paths.n_arcs)
    levels = 0
    calls0 = prog.calls
    while open_.any():
        t, dual, _, x = prog.level(wn, open_, held)[:4]
        levels += 1
        rows = np.flatnonzero(open_)
        blocked = np.zeros(F, bool)
        blocked[rows[dual > _DUAL_TOL * max(1.0, float(np.max(dual, initial=0.0)))]] = True
        if not blocked.any():
            blocked[rows[int(np.argmax(dual))]] = True
        unknown = open_ & ~blocked
        can_rise = np.zeros(F, bool)
        eps = _PROBE * t
        while unknown.any():
            gain, _, _, xp, slack = prog.level(wn, open_, held, t_fix=t, probe=unknown, eps=eps)
            up = slack > _PROBE_TOL * eps * wn[unknown]
            if not up.any():
                break                               # no unknown row can exceed t: all blocked
            idx = np.flatnonzero(unknown)[up]
            can_rise[idx] = True
            unknown[idx] = False
        stop = open_ & ~can_rise
        held[stop] = wn[stop] * t
        open_ &= can_rise
        arc = x
    rate[act] = held[act] * prog.scale
    # the last level's program carries every row at (within _HOLD of) its rate: every
    # row still open froze at that level; rows left out carry nothing (held at 0)
    return AdaptiveRates(rate, arc * prog.scale, levels, prog.calls - calls0)


@dataclass(frozen=True)
class AdaptiveResult:
    """Completion of a phase under multipath max-min fair sharing (see :func:`simulate`).

    Attributes
    ----------
    time_s : float
    finish_s : numpy.ndarray, shape (F,)
    events : int
    n_levels, n_programs : int
        Fill levels and linear programs over all events.
    group_bytes : numpy.ndarray, shape (Gr,)
        Bytes each capacity constraint (link, or link orbit: the orbit's total) carried.
    first_rates_Bps : numpy.ndarray, shape (F,)
    bound_s : float
        The least time any split of the flows over their paths could take (every link
        within capacity): a lower bound on ``time_s``.
    """

    time_s: float
    finish_s: np.ndarray
    events: int
    n_levels: int
    n_programs: int
    group_bytes: np.ndarray
    first_rates_Bps: np.ndarray
    bound_s: float


def bound_s(paths: Paths, size_bytes, _program: _Program | None = None) -> tuple[float, np.ndarray]:
    """The min-congestion time: ``1 / max t`` with every row at ``>= bytes_f t``; with its group bytes."""
    size = np.asarray(size_bytes, np.float64)
    act = size > 0
    if not act.any():
        return 0.0, np.zeros(len(paths.group_capacity_Bps))
    prog = _program or _Program(paths)
    wn = np.where(act, size, 1.0) / size[act].max()
    t, _, r, x = prog.level(wn, act, np.zeros(paths.n_rows))[:4]
    time = 1.0 / (t * prog.scale / size[act].max())
    return time, paths.group_load(x * prog.scale * time)


def simulate(paths: Paths, size_bytes, *, weights=None, rel_tol: float = 1e-9) -> AdaptiveResult:
    """Event-driven completion under multipath max-min fair sharing.

    Parameters
    ----------
    paths : Paths
    size_bytes : array_like, shape (F,)
        Bytes of one flow of each row (>= 0; empty rows finish at 0).
    weights : array_like, shape (F,), optional
    rel_tol : float
        Rows finishing within this relative distance of the earliest retire together.

    Returns
    -------
    AdaptiveResult

    Raises
    ------
    ValueError
        When a row with bytes gets rate 0 (a zero-capacity link) and would never finish.

    Examples
    --------
    >>> import numpy as np, scipy.sparse as sp
    >>> p = paths_of(sp.csr_array([[0.5, 0.5]]), [0, 0], [1, 1], [0], [1], capacity_Bps=[3.0, 4.0])
    >>> simulate(p, [14.0]).time_s
    2.0
    """
    F = paths.n_rows
    size = np.asarray(size_bytes, np.float64)
    if size.shape != (F,) or np.any(size < 0):
        raise ValueError(f"size_bytes must be {F} numbers >= 0")
    prog = _Program(paths)
    bnd, _ = bound_s(paths, size, prog)
    left = size.copy()
    alive = size > 0
    finish = np.zeros(F)
    first = np.zeros(F)
    gbytes = np.zeros(len(paths.group_capacity_Bps))
    now, events, levels = 0.0, 0, 0
    while alive.any():
        r = maxmin_rates(paths, weights=weights, active=alive, _program=prog)
        if events == 0:
            first = r.rate_Bps.copy()
        rate = r.rate_Bps[alive]
        if np.any(rate <= 0):
            raise ValueError(f"{int(np.sum(rate <= 0))} flows get rate 0 and would never finish")
        levels += r.n_levels
        idx = np.flatnonzero(alive)
        dt = left[idx] / rate
        step = float(dt.min())
        done = idx[dt <= step * (1 + rel_tol)]
        gbytes += paths.group_load(r.arc_flow_Bps) * step
        left[idx] -= rate * step
        now += step
        finish[done] = now
        left[done] = 0.0
        alive[done] = False
        events += 1
    return AdaptiveResult(float(finish.max()) if F else 0.0, finish, events, levels, prog.calls, gbytes, first, bnd)


def paths_for(G, src, dst, *, tiers: str = "rule", links=None, capacity_Bps=None, aggregate: bool = True):
    """The multipath problem of flows between chip ranks on ``G``: their ``equal`` routes' supports.

    Parameters
    ----------
    G : networkx.Graph
    src, dst : array_like of int, shape (F,)
        Chip ranks.
    tiers, links
        As in :func:`fabricsim.topo.routing.route`.
    capacity_Bps : array_like, shape (L,), optional
        Per-link capacity (default the link table's line rate).
    aggregate : bool
        As in :func:`paths_of`.

    Returns
    -------
    (Paths, reachable)
        The problem over the reachable flows, and which flows are reachable.

    Examples
    --------
    >>> from fabricsim.fabrics import build
    >>> G = build("jalapeno-rack", trays=1)        # 8 chips on 6 switches, 100 GB/s per link
    >>> p, ok = paths_for(G, [0], [1])
    >>> float(maxmin_rates(p).rate_Bps[0]) / 1e9    # 6 disjoint two-hop paths of 100 GB/s
    600.0
    """
    from .routing import core, link_table, route
    lt = link_table(G) if links is None else links
    r = route(G, src, dst, split="equal", tiers=tiers, links=lt)
    ok = np.asarray(r.reachable, bool)
    rows = np.flatnonzero(ok)
    node = core._net(G, lt).node_of_rank
    cap = lt.capacity_Bps if capacity_Bps is None else np.asarray(capacity_Bps, np.float64)
    p = paths_of(r.shares(rows), lt.src, lt.dst, node[np.asarray(src)[rows]], node[np.asarray(dst)[rows]],
                 capacity_Bps=cap, aggregate=aggregate)
    return p, ok
