"""Policy ``tiered``: Jalapeño's tier rule, with the rail-only relay.

A pair in one rack (node attribute ``rack``) uses the ``local`` tier only, a pair in
two racks the ``global`` tier only, each by ECMP on its tier (:func:`.ecmp._route_on`).
Where the global tier has no path (rail-only wiring, a failed rail) the flow relays:
it crosses the local tier to a chip of its own rack that has a global path to the
destination, then the global tier (NCCL PXN, Wang et al. 2023; the relay is chosen in
:mod:`.leaf`).  ``tiers="any"`` drops the tier rule (plain ECMP, relaying only where
ECMP has no path).

Fallback order with ``tiers="rule"``: the pair's own tier; then, for a pair in two
racks, a relay through its own rack; then any shortest path (ECMP over every tier);
else unreachable (empty row).

Symmetry fold (:func:`fold_tiered`): twins (:func:`.ecmp.fold_twins`), which hand over
to in-rack positions (:func:`.leaf.fold_positions`) when the routes relay.
"""
from __future__ import annotations

import numpy as np

from .core import PolicyRoutes, _assemble, _compact_inplace, _Net, _Part, _reach
from .ecmp import _route_on, fold_twins
from .leaf import _fold_positions, _relay_plan
from .quotient import Fold

__all__ = ["route_tiered", "fold_tiered"]


def route_tiered(net: _Net, s, d, split: str, tiers: str) -> PolicyRoutes:
    """Jalapeño's tier rule with relays.

    Each pair is split into legs (a direct pair is one leg; a relayed pair two or three),
    the legs of a tier are deduplicated and routed together, and each flow's row is the
    sum of its legs' rows: every leg carries the whole flow, so conservation holds.
    """
    lt = net.lt
    L, F = len(lt), len(s)
    all_links = np.ones(L, bool)
    if tiers == "rule":
        rack = net.attr.get("rack", np.full(net.n, -1, np.int64))
        if len(rack) and -2**31 < rack.min() and rack.max() < 2**31 - 1:
            rack = rack.astype(np.int32)                   # the per-flow gathers below: half the bytes
        rack_s = rack[s]
        intra = rack_s == rack[d]
        intra &= rack_s >= 0
        del rack_s
        lmask, gmask = lt.tier == "local", lt.tier == "global"
        lreach, greach = _reach(net, lmask), _reach(net, gmask)
    else:
        intra = np.zeros(F, bool)
        lmask = gmask = all_links
        lreach = greach = _reach(net, all_links)
    inter = ~intra
    # an inter-rack pair goes direct where the global tier joins it: every pair when it
    # joins all chips (an intact pod), else by the per-pair test
    if greach.joins(net.node_of_rank[net.node_of_rank >= 0]):
        need = np.zeros(F, bool)
    else:
        need = inter & ~greach(s, d)
    if need.any():
        m1 = np.full(F, -1, np.int64)
        m2 = np.full(F, -1, np.int64)
        m1[need], m2[need] = _relay_plan(net, s[need], d[need], lreach, greach)
        relay = np.where(m1 >= 0, m1, m2)
        fr = np.flatnonzero(relay >= 0)
        f1, f2 = np.flatnonzero(m1 >= 0), np.flatnonzero(m2 >= 0)
    else:
        m1 = m2 = relay = None                             # no relays: skip their bookkeeping
        fr = f1 = f2 = np.zeros(0, np.int64)
    fi, fg = np.flatnonzero(intra), np.flatnonzero(inter & ~need)
    del inter, need
    if relay is not None:
        ga = np.where(m1[fr] >= 0, m1[fr], s[fr])
        gb = np.where(m2[fr] >= 0, m2[fr], d[fr])
        m2_f2, m1_f1 = m2[f2], m1[f1]
    else:
        ga = gb = m2_f2 = m1_f1 = fr
    # every leg once: pairs on the local links (intra, relay legs in either rack), on the
    # global links (inter, relay middle legs); duplicates (an all-to-all's relay legs are
    # also direct pairs) are routed once

    def cat(*arrs):
        arrs = [x for x in arrs if len(x)]
        return arrs[0] if len(arrs) == 1 else np.concatenate(arrs) if arrs else np.zeros(0, np.int64)

    legs = [(lmask, lreach, cat(s[fi], s[f1], m2_f2), cat(d[fi], m1_f1, d[f2])),
            (gmask, greach, cat(s[fg], ga), cat(d[fg], gb))]
    n_local = len(legs[0][2])
    if tiers == "any":
        legs = [(all_links, lreach, cat(legs[0][2], legs[1][2]), cat(legs[0][3], legs[1][3]))]
    # rows[i]: the row of each leg in its tier's part; None: row i (no duplicates to merge)
    parts, rows = [], []
    for mask, reach_fn, a, b in legs:
        if len(fr):
            inv = a * net.n
            inv += b
            keys = _compact_inplace(inv, net.n * net.n)
            a, b = keys // net.n, keys % net.n
        else:
            inv = None if tiers == "rule" else np.arange(len(a))
        parts.append(_route_on(net, mask, a, b, split, reach_fn))
        rows.append(inv)
    del legs, a, b
    if tiers == "any":
        k_l = k_g = 0
        r_l, r_g = rows[0][:n_local], rows[0][n_local:]
    else:
        k_l, k_g = 0, 1
        r_l, r_g = rows
    nI, n1, nG = len(fi), len(f1), len(fg)
    lp, gp = parts[k_l], parts[k_g]
    if r_l is None:                                        # no relays: the parts route fi and fg in order
        rl_i = rg_d = None
        rl_1 = rl_2 = rg_r = fr
    else:
        rl_i, rl_1, rl_2 = r_l[:nI], r_l[nI:nI + n1], r_l[nI + n1:]
        rg_d, rg_r = r_g[:nG], r_g[nG:]

    def rows_of(x, r):
        return x if r is None else x[r]

    reach = np.zeros(F, bool)
    hops = np.zeros(F, np.int32)
    lat = np.zeros(F)
    reach[fi], hops[fi], lat[fi] = rows_of(lp.reach, rl_i), rows_of(lp.hops, rl_i), rows_of(lp.lat, rl_i)
    reach[fg], hops[fg], lat[fg] = rows_of(gp.reach, rg_d), rows_of(gp.hops, rg_d), rows_of(gp.lat, rg_d)
    reach[fr], hops[fr], lat[fr] = gp.reach[rg_r], gp.hops[rg_r], gp.lat[rg_r]
    reach[f1] &= lp.reach[rl_1]
    hops[f1] += lp.hops[rl_1]
    lat[f1] += lp.lat[rl_1]
    reach[f2] &= lp.reach[rl_2]
    hops[f2] += lp.hops[rl_2]
    lat[f2] += lp.lat[rl_2]
    contrib = [(k_l, fi, rl_i), (k_l, f1, rl_1), (k_l, f2, rl_2), (k_g, fg, rg_d), (k_g, fr, rg_r)]
    n_contrib = len(contrib)
    # still without a route under the rule: any shortest path over every tier
    rest = np.flatnonzero(~reach)
    if len(rest) and tiers == "rule":
        allr = _reach(net, all_links)
        rest = rest[allr(s[rest], d[rest])]
        if len(rest):
            ap = _route_on(net, all_links, s[rest], d[rest], split, allr)
            parts.append(ap)
            contrib.append((len(parts) - 1, rest, None))
            reach[rest], hops[rest], lat[rest] = ap.reach, ap.hops, ap.lat
            if relay is not None:
                relay[rest] = -1
    # drop rows of flows that stayed unreachable or were rerouted by the fallback
    if len(rest) or not reach.all():
        keep = reach.copy()
        keep[rest] = False
        contrib = [(k, f[keep[f]], (np.arange(len(f)) if r is None else r)[keep[f]])
                   for k, f, r in contrib[:n_contrib]] + contrib[n_contrib:]
    fp, pl = _assemble(F, L, parts, contrib, disjoint=relay is None)
    relay2 = None
    if relay is not None:
        relay[~reach] = -1
        relay2 = np.where((m1 >= 0) & (m2 >= 0) & (relay >= 0), m2, -1)   # both sides relay
    return PolicyRoutes(_Part(fp, pl, reach, hops, lat), relay, relay2)


def fold_tiered(G, rows, pairs=None, *, links=None, split: str = "equal", tiers: str = "rule",
                guard=None) -> Fold:
    """The tier policy's symmetry fold: twins, handing over to in-rack positions where routes relay.

    The tier rule treats twins alike (they share rack and links), so
    :func:`.ecmp.fold_twins` holds while no flow relays; a relay is chosen by in-rack
    position, so then only permutations of positions applied in every rack at once
    keep the routes (:func:`.leaf._fold_positions`).

    Examples
    --------
    >>> import numpy as np
    >>> from fabricsim.fabrics import build
    >>> f = fold_tiered(build("jalapeno-pod", racks=2, rail_wiring="per-port"), np.arange(256)[None, :])
    >>> f.method, [m for m, _ in f.attempts()], f.quotient.n_classes
    ('positions', ['twins', 'positions'], 72)
    """
    return fold_twins(G, rows, pairs, links=links, split=split, tiers=tiers, guard=guard,
                      positional=_fold_positions)
