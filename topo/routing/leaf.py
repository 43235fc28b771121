"""Switched and leaf-spine tiers: factored ECMP routes, and the rail-only PXN relay.

Fast paths of ECMP (:func:`.ecmp._route_on` tries them before the generic DAGs):

* single switched tier (Jalapeño rack, NVL72, a patched rail of ``leaf=static``):
  chip -> switch -> chip through the switches ``C`` adjacent to both ends;
  pieces ``up(s, C)`` and ``down(d, C)``, 2 per flow (:func:`_switched`, :func:`_common`);
* leaf-spine tier (the Jalapeño global tier with ``leaf=switched``): pieces ``up(s)``,
  ``mid(rack profile of s, leaves of d)`` and ``down(d)``, 3 per flow (:func:`_leafspine`).

The relay (rail-only wiring, a failed rail: NCCL PXN, Wang et al. 2023) is chosen by
in-rack position (:func:`positions`, :func:`_relays`, :func:`_relay_plan`); the tier
rule (:mod:`.tiered`) routes each leg.  Its symmetry fold, :func:`fold_positions`,
permutes positions in every rack at once, which keeps those relays.
"""
from __future__ import annotations

import warnings

import numpy as np
import scipy.sparse as sp

from .core import _DENSE_CELLS, LinkTable, _chunks, _compact, _compact_inplace, _empty_part, _itype, _Net, _Part, \
    _Reach, _row_ids
from .quotient import Fold, _classes_on_orbits

__all__ = ["positions"]


# ---------------------------------------------------------------------------------------
# Fast path 1: a single switched tier (chips -- switches -- chips)
# ---------------------------------------------------------------------------------------
def _switched(net: _Net, mask: np.ndarray, s: np.ndarray, d: np.ndarray, split: str):
    """Factored routes where every chip's neighbours are switches that connect only to chips.

    Then every path is chip -> switch -> chip, and ECMP takes the common switches of
    least hop cost (a patched rail circuit counts 2 per side, a local switch 1).
    Returns a list of ``(pair indices, part)``, or ``None`` when the links in ``mask``
    are not a single switched tier; pairs left out have no common switch.
    """
    lt = net.lt
    la = np.flatnonzero(mask)
    u, v = lt.src[la].astype(np.int64), lt.dst[la].astype(np.int64)
    chip = net.is_chip
    from_chip = chip[u]
    if not from_chip.any() or chip[v[from_chip]].any() or not net.fwd[v[from_chip]].all():
        return None
    sw = np.zeros(net.n, bool)
    sw[v[from_chip]] = True
    if not chip[v[sw[u]]].all():            # a chip-facing switch with a switch neighbour: not one tier
        return None
    # hop cost per switch: the same on all its links; with forwarding chips, one cost only
    # (else a path through a chip could undercut a costly common switch)
    lh = lt.hops[la].astype(np.int64)
    hmax = np.zeros(net.n, np.int64)
    hmin = np.full(net.n, np.iinfo(np.int64).max)
    at_sw = sw[u]
    np.maximum.at(hmax, u[at_sw], lh[at_sw])
    np.minimum.at(hmin, u[at_sw], lh[at_sw])
    if (hmax[sw] != hmin[sw]).any() or (len(np.unique(hmax[sw])) > 1 and net.fwd[chip].any()):
        return None
    chips_n = np.flatnonzero(chip)
    sws = np.flatnonzero(sw)
    Nc, S = len(chips_n), len(sws)
    if Nc * S > _DENSE_CELLS:
        return None
    cidx = np.full(net.n, -1, np.int64)
    cidx[chips_n] = np.arange(Nc)
    sidx = np.full(net.n, -1, np.int64)
    sidx[sws] = np.arange(S)
    up = np.full((Nc, S), -1, np.int64)
    down = np.full((S, Nc), -1, np.int64)
    fu = from_chip
    up[cidx[u[fu]], sidx[v[fu]]] = la[fu]
    fs = sw[u] & chip[v]
    down[sidx[u[fs]], cidx[v[fs]]] = la[fs]
    handled, part = _common(lt, up, down, cidx[s], cidx[d], split, hmax[sws])
    return [(None if handled.all() else np.flatnonzero(handled), part)]


def _common(lt: LinkTable, up: np.ndarray, down: np.ndarray, sc: np.ndarray, dc: np.ndarray, split: str,
            sw_hops: np.ndarray):
    """Routes chip -> C -> chip through the switches C adjacent to both ends of least hop cost.

    ``up`` (chips x switches) and ``down`` (switches x chips) hold link ids (-1: none),
    ``sc``, ``dc`` are chip indices into them, ``sw_hops`` the hop cost of each side of a
    switch.  Pieces: up(s, C) and down(d, C, s's capacity profile), keyed with
    ``np.unique``-free dense compaction.  Returns ``(handled, part)``.
    """
    Nc = up.shape[0]
    M = up >= 0
    mid, mfirst = _row_ids(M)
    Um = M[mfirst]
    nm = len(mfirst)
    pm_inv, pm = _compact(mid[sc] * nm + mid[dc], nm * nm)
    C = Um[pm // nm] & Um[pm % nm]
    # keep the common switches of least cost
    cost = np.where(C, sw_hops[None, :], np.iinfo(np.int64).max)
    best = cost.min(axis=1, initial=np.iinfo(np.int64).max)
    C &= cost == best[:, None]
    cid, cfirst = _row_ids(C)
    Cset = C[cfirst]
    nonempty = Cset.any(axis=1)
    c_hops = 2 * np.where(nonempty, best[cfirst], 0)
    ckey = cid[pm_inv]
    handled = nonempty[ckey]
    if not handled.any():
        return handled, _empty_part(0, len(lt))
    if not nonempty.all():
        sc, dc, ckey = sc[handled], dc[handled], ckey[handled]
    F = len(sc)
    nC = len(cfirst)
    capup = np.where(M, lt.capacity_gbps[np.maximum(up, 0)], 0.0)
    if split == "capacity":
        prof, pfirst = _row_ids(capup)
        profrow = capup[pfirst]
    else:
        prof, pfirst = np.zeros(Nc, np.int64), np.zeros(1, np.int64)
        profrow = M[:1].astype(float)
    nP = len(pfirst)
    up_inv, up_keys = _compact(sc * nC + ckey, Nc * nC)
    dn_inv, dn_keys = _compact((dc * nC + ckey) * nP + prof[sc], Nc * nC * nP)
    Ku = len(up_keys)
    K = Ku + len(dn_keys)
    # piece rows, one group per distinct switch set C (a handful on real fabrics)
    p_rows, p_cols, p_vals = [], [], []
    uc, uk = up_keys // nC, up_keys % nC
    dkey, dprof = dn_keys // nP, dn_keys % nP
    dchip, dk = dkey // nC, dkey % nC
    for k in np.flatnonzero(nonempty):
        members = np.flatnonzero(Cset[k])
        sel = np.flatnonzero(uk == k)
        if len(sel):
            w = capup[uc[sel]][:, members] if split == "capacity" else np.ones((len(sel), len(members)))
            p_rows.append(np.repeat(sel, len(members)))
            p_cols.append(up[uc[sel]][:, members].ravel())
            p_vals.append((w / w.sum(axis=1, keepdims=True)).ravel())
        sel = np.flatnonzero(dk == k)
        if len(sel):
            w = profrow[dprof[sel]][:, members] if split == "capacity" else np.ones((len(sel), len(members)))
            p_rows.append(Ku + np.repeat(sel, len(members)))
            p_cols.append(down[members][:, dchip[sel]].T.ravel())
            p_vals.append((w / w.sum(axis=1, keepdims=True)).ravel())
    pl = sp.csr_matrix((np.concatenate(p_vals), (np.concatenate(p_rows), np.concatenate(p_cols))),
                       shape=(K, len(lt)))
    # latency: the slowest switch of C
    latup = np.where(M, lt.latency_ns[np.maximum(up, 0)], -np.inf)
    latdn = np.where(down >= 0, lt.latency_ns[np.maximum(down, 0)], -np.inf)
    a_max, a_min = np.max(latup, axis=1), np.min(np.where(M, latup, np.inf), axis=1)
    b_max, b_min = np.max(latdn, axis=0), np.min(np.where(down >= 0, latdn, np.inf), axis=0)
    if np.all((a_max == a_min) | ~M.any(1)) and np.all((b_max == b_min) | ~(down >= 0).any(0)):
        lat = a_max[sc] + b_max[dc]
    else:
        lat = np.empty(F)
        order = np.argsort(ckey, kind="stable")
        ks, kstart = np.unique(ckey[order], return_index=True)
        kend = np.append(kstart[1:], F)
        for k, a0, a1 in zip(ks, kstart, kend):
            sel = order[a0:a1]
            members = np.flatnonzero(Cset[k])
            lat[sel] = np.max(latup[sc[sel]][:, members] + latdn[members][:, dc[sel]].T, axis=1)
    part = _Part(None, pl, np.ones(F, bool), c_hops[ckey].astype(np.int32), lat, (up_inv, Ku + dn_inv))
    return handled, part


# ---------------------------------------------------------------------------------------
# Fast path 2: a leaf-spine tier (chips -- leaves -- spines -- leaves -- chips)
# ---------------------------------------------------------------------------------------
def _leafspine(net: _Net, mask: np.ndarray, s: np.ndarray, d: np.ndarray, split: str):
    """Factored 4-hop routes on a two-level Clos (the Jalapeño global tier with switching leaves).

    Pairs that share a leaf go through their common leaves (2 hops); pairs with a
    leaf -> spine -> leaf path take every such shortest path (4 hops).  Returns a list
    of ``(pair indices, part)``, or ``None`` when the tier is not leaf-spine shaped.
    """
    lt = net.lt
    la = np.flatnonzero(mask)
    u, v = lt.src[la].astype(np.int64), lt.dst[la].astype(np.int64)
    chip, fwd = net.is_chip, net.fwd
    fc = chip[u]
    if not fc.any() or chip[v[fc]].any():
        return None
    leaf = np.zeros(net.n, bool)
    leaf[v[fc]] = True
    fl = leaf[u] & ~chip[v]
    spine = np.zeros(net.n, bool)
    spine[v[fl]] = True
    if (leaf & spine).any() or not leaf[v[spine[u]]].all() or not fwd[leaf | spine].all() or not spine.any():
        return None
    if fwd[u[fc]].any():
        return None                                      # forwarding chips: paths through chips too
    if not (chip | leaf | spine)[u].all():
        return None
    h = np.unique(lt.hops[la])
    if len(h) != 1:
        return None
    h = int(h[0])
    chips_n, leaves, spines = np.flatnonzero(chip), np.flatnonzero(leaf), np.flatnonzero(spine)
    Nc, NL, NS = len(chips_n), len(leaves), len(spines)
    if Nc * NL > _DENSE_CELLS or NL * NS > _DENSE_CELLS // 8:
        return None
    ix = np.full(net.n, -1, np.int64)
    ix[chips_n] = np.arange(Nc)
    ix[leaves] = np.arange(NL)
    ix[spines] = np.arange(NS)
    CL = np.full((Nc, NL), -1, np.int64)
    LC = np.full((NL, Nc), -1, np.int64)
    LS = np.full((NL, NS), -1, np.int64)
    SL = np.full((NS, NL), -1, np.int64)
    for A, a_ok, b_ok in ((CL, chip, leaf), (LC, leaf, chip), (LS, leaf, spine), (SL, spine, leaf)):
        sel = a_ok[u] & b_ok[v]
        A[ix[u[sel]], ix[v[sel]]] = la[sel]
    cap = lt.capacity_gbps
    llat = lt.latency_ns

    def weights(A):
        return np.where(A >= 0, cap[np.maximum(A, 0)] if split == "capacity" else 1.0, 0.0)

    wCL, wLS, wSL = weights(CL), weights(LS), weights(SL)
    mLS, mSL = LS >= 0, SL >= 0
    cp, cpfirst = _row_ids(wCL if split == "capacity" else CL >= 0)
    ls, lsfirst = _row_ids((LC >= 0).T)
    ncp, nls = len(cpfirst), len(lsfirst)
    # combo per flow: key cp[ix[s]] * nls + ls[ix[d]], compacted; per-flow arrays used as
    # indices stay int64 (numpy converts narrower index arrays on every use)
    cp_n = np.full(net.n, -1, np.int64)
    ls_n = np.full(net.n, -1, np.int64)
    cp_n[chips_n], ls_n[chips_n] = cp, ls
    comb_inv = np.empty(len(s), np.int64)
    for c0, c1 in _chunks(len(s)):
        key = cp_n[s[c0:c1]]
        key *= nls
        key += ls_n[d[c0:c1]]
        comb_inv[c0:c1] = key
    combs = _compact_inplace(comb_inv, ncp * nls)
    nK = len(combs)
    ok = np.zeros(nK, bool)
    shared = np.zeros(nK, bool)
    wvec = np.zeros((nK, NL))
    arrive = np.zeros((nK, NL))
    mid_rows, mid_cols, mid_vals = [], [], []
    mlat = np.full(nK, -np.inf)
    mlat_pairs = []
    for k, key in enumerate(combs):
        a, b = cpfirst[key // nls], lsfirst[key % nls]
        Ls, Ld = wCL[a] > 0, LC[:, b] >= 0
        if (Ls & Ld).any():
            shared[k] = True                             # a shared leaf: 2 hops through the common leaves
            continue
        if not Ld.any():
            continue
        Sd = mSL[:, Ld].any(axis=1)
        useL = Ls & (mLS & Sd[None, :]).any(axis=1)
        if not useL.any():
            continue
        ok[k] = True
        w = np.where(useL, wCL[a], 0.0)
        w /= w.sum()
        q = np.where(Sd[None, :] & useL[:, None], wLS, 0.0)
        qs = q.sum(axis=1, keepdims=True)
        q = np.divide(q, qs, out=np.zeros_like(q), where=qs > 0)
        upm = w[:, None] * q                             # (NL, NS) mass on leaf -> spine
        m_sp = upm.sum(axis=0)
        r = np.where(Ld[None, :], wSL, 0.0)
        rs = r.sum(axis=1, keepdims=True)
        r = np.divide(r, rs, out=np.zeros_like(r), where=rs > 0)
        dnm = m_sp[:, None] * r                          # (NS, NL) mass on spine -> leaf
        wvec[k] = w
        arrive[k] = dnm.sum(axis=0)
        i1, j1 = np.nonzero(upm)
        i2, j2 = np.nonzero(dnm)
        mid_rows.append(np.full(len(i1) + len(i2), k))
        mid_cols.append(np.concatenate([LS[i1, j1], SL[i2, j2]]))
        mid_vals.append(np.concatenate([upm[i1, j1], dnm[i2, j2]]))
        # slowest leaf -> spine -> leaf per (first leaf, last leaf)
        l1, l2 = np.flatnonzero(useL), np.flatnonzero(arrive[k] > 0)
        tot = (np.where(upm[l1] > 0, llat[np.maximum(LS[l1], 0)], -np.inf)[:, :, None]
               + np.where(dnm[:, l2] > 0, llat[np.maximum(SL[:, l2], 0)], -np.inf)[None, :, :])
        pair_lat = tot.max(axis=1)                       # (len l1, len l2)
        mlat[k] = pair_lat.max()
        mlat_pairs.append((l1, l2, pair_lat))
    out = []
    if shared.any():
        two = np.flatnonzero(shared[comb_inv])
        handled2, part2 = _common(lt, CL, LC, ix[s[two]], ix[d[two]], split, np.full(NL, h))
        out.append((two[handled2], part2))
    if not ok.any():
        return out
    handled = None if ok.all() else ok[comb_inv]          # None: every flow
    comb = comb_inv
    if handled is not None:
        s, d, comb = s[handled], d[handled], comb_inv[handled]
    del comb_inv
    F = len(s)
    # compact the combos actually used, then the up/down pieces keyed by their share vectors
    kept = np.flatnonzero(ok)
    kmap = np.full(nK, -1, np.int64)
    kmap[kept] = np.arange(len(kept))
    wid, wfirst = _row_ids(np.round(wvec[kept], 12))
    aid, afirst = _row_ids(np.round(arrive[kept], 12))
    kc = comb if len(kept) == nK else kmap[comb]           # kmap is the identity when every combo is kept
    del comb
    latCL = np.where(CL >= 0, llat[np.maximum(CL, 0)], np.nan)
    latLC = np.where(LC >= 0, llat[np.maximum(LC, 0)], np.nan)
    with np.errstate(all="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)   # a chip with no leaf left: an all-NaN row
        a_c = np.nanmax(latCL, axis=1)
        b_c = np.nanmax(latLC, axis=0)
        const = (np.all((np.nanmin(latCL, axis=1) == a_c) | np.isnan(a_c))
                 and np.all((np.nanmin(latLC, axis=0) == b_c) | np.isnan(b_c)))
    # per flow, by chunks: up piece key ix[s] * nw + wid[kc], down piece key ix[d] * na + aid[kc]
    # (compacted below) and, when chip <-> leaf latencies are constant per chip, the latency
    # a_c[ix[s]] + mlat[kc] + b_c[ix[d]] (summed in that order)
    nw, na = len(wfirst), len(afirst)
    up_inv = np.empty(F, _itype(Nc * nw))
    dn_inv = np.empty(F, _itype(Nc * na))
    lat = np.empty(F)
    mlat_k = mlat[kept]
    for c0, c1 in _chunks(F):
        sc, dc, kcc = ix[s[c0:c1]], ix[d[c0:c1]], kc[c0:c1]
        key = sc * nw
        key += wid[kcc]
        up_inv[c0:c1] = key
        key = dc * na
        key += aid[kcc]
        dn_inv[c0:c1] = key
        if const:
            lat_c = a_c[sc]
            lat_c += mlat_k[kcc]
            lat_c += b_c[dc]
            lat[c0:c1] = lat_c
    up_keys = _compact_inplace(up_inv, Nc * nw)
    dn_keys = _compact_inplace(dn_inv, Nc * na)
    Ku, Km = len(up_keys), len(kept)
    K = Ku + Km + len(dn_keys)
    # up pieces: chip -> its usable leaves
    uchip, uw = up_keys // len(wfirst), wvec[kept][wfirst][up_keys % len(wfirst)]
    ui, uj = np.nonzero(uw)
    # down pieces: the leaves of d -> d
    dchip, dw = dn_keys // len(afirst), arrive[kept][afirst][dn_keys % len(afirst)]
    di, dj = np.nonzero(dw)
    mr = np.concatenate([mid_rows[i] for i in range(len(mid_rows))])
    mid_rows_k = kmap[mr]
    rows = np.concatenate([ui, Ku + mid_rows_k, Ku + Km + di])
    cols = np.concatenate([CL[uchip[ui], uj], np.concatenate(mid_cols), LC[dj, dchip[di]]])
    vals = np.concatenate([uw[ui, uj], np.concatenate(mid_vals), dw[di, dj]])
    pl = sp.csr_matrix((vals, (rows, cols)), shape=(K, len(lt)))
    if not const:
        # latency: the slowest chip -> leaf -> spine -> leaf -> chip per flow, by combo
        order = np.argsort(kc, kind="stable")
        ks, kstart = np.unique(kc[order], return_index=True)
        kend = np.append(kstart[1:], F)
        ok_idx = np.flatnonzero(ok)
        for k, a0, a1 in zip(ks, kstart, kend):
            sel = order[a0:a1]
            l1, l2, pair_lat = mlat_pairs[int(np.searchsorted(ok_idx, kept[k]))]
            tot = latCL[ix[s[sel]]][:, l1][:, :, None] + pair_lat[None] + latLC[l2][:, ix[d[sel]]].T[:, None, :]
            lat[sel] = np.nanmax(tot.reshape(len(sel), -1), axis=1)
    mid_col = kc                                           # kc is ours: shifted in place
    mid_col += Ku
    dn_col = dn_inv.astype(_itype(K), copy=False)
    dn_col += Ku + Km
    out.append((None if handled is None else np.flatnonzero(handled),
                _Part(None, pl, np.ones(F, bool), np.full(F, 4 * h, np.int32), lat, (up_inv, mid_col, dn_col))))
    return out


# ---------------------------------------------------------------------------------------
# Tiered (Jalapeño) with rail-only relay
# ---------------------------------------------------------------------------------------
def positions(net: _Net):
    """(rack index, in-rack position index) per node, -1 where not a racked chip; and the table."""
    rack = net.attr.get("rack", np.full(net.n, -1, np.int64)).copy()
    rack[~net.is_chip] = -1
    tray, col = net.attr.get("tray"), net.attr.get("column")
    chips_r = np.flatnonzero(rack >= 0)
    if tray is not None and col is not None and np.all(tray[chips_r] >= 0) and np.all(col[chips_r] >= 0):
        key = tray * (int(col.max()) + 1) + col
    else:
        # in-rack index: order of rank within the rack
        key = np.full(net.n, -1, np.int64)
        o = chips_r[np.lexsort((net.rank[chips_r], rack[chips_r]))]
        r_sorted = rack[o]
        first = np.searchsorted(r_sorted, r_sorted, "left")
        key[o] = np.arange(len(o)) - first
    rid_inv, racks = _compact(rack[chips_r])
    kid_inv, keys = _compact(key[chips_r])
    ridx = np.full(net.n, -1, np.int64)
    kidx = np.full(net.n, -1, np.int64)
    ridx[chips_r], kidx[chips_r] = rid_inv, kid_inv
    table = np.full((len(racks), len(keys)), -1, np.int64)
    table[rid_inv, kid_inv] = chips_r
    return ridx, kidx, table


def _relays(net: _Net, s, d, lreach: _Reach, greach: _Reach):
    """Relay chip per pair (s, d) of different racks, -1 where no chip of s's rack serves.

    First choice: the chip of s's rack at d's position in its rack; else the chip of
    s's rack with a path to d closest in rank to that position; it must differ from
    s and be reachable from s on the first-leg links.
    """
    ridx, kidx, table = positions(net)
    rs, kd = ridx[s], kidx[d]
    ok_r = (rs >= 0) & (kd >= 0)
    if ok_r.all():                                         # the usual case: no masked copies
        m = table[rs, kd]
    else:
        m = np.full(len(s), -1, np.int64)
        m[ok_r] = table[rs[ok_r], kd[ok_r]]
    del kd, ok_r
    good = m >= 0
    if good.all():
        good = (m != s) & greach(m, d) & lreach(s, m)
    else:
        good[good] = (m[good] != s[good]) & greach(m[good], d[good]) & lreach(s[good], m[good])
    bad = np.flatnonzero(~good & (rs >= 0))
    m[~good] = -1
    if len(bad):
        # rare (degraded) cases: one search per (rack, destination), then per pair
        rank = net.rank
        order = np.lexsort((d[bad], rs[bad]))
        bad = bad[order]
        key = rs[bad] * net.n + d[bad]
        starts = np.flatnonzero(np.r_[True, key[1:] != key[:-1]])
        ends = np.append(starts[1:], len(bad))
        for a0, a1 in zip(starts, ends):
            grp = bad[a0:a1]
            r, dd = rs[grp[0]], d[grp[0]]
            cands = table[r][table[r] >= 0]
            cands = cands[greach(cands, np.full(len(cands), dd))]
            if not len(cands):
                continue
            pos0 = table[r, kidx[dd]] if kidx[dd] >= 0 else -1
            target = rank[pos0] if pos0 >= 0 else rank[table[r][table[r] >= 0]].min() + max(kidx[dd], 0)
            cands = cands[np.lexsort((rank[cands], np.abs(rank[cands] - target)))]
            for f in grp:
                ok = (cands != s[f]) & lreach(np.full(len(cands), s[f]), cands)
                if ok.any():
                    m[f] = cands[np.argmax(ok)]
    return m


_MISSING = object()


def _relay_plan(net: _Net, s, d, lreach: _Reach, greach: _Reach):
    """Relay chips ``(m1, m2)`` per pair of different racks without a global path (-1: none).

    ``m1`` in s's rack (source side, tried first: s -> m1 local, m1 -> d global), else
    ``m2`` in d's rack (destination side: s -> m2 global, m2 -> d local, for a
    destination that lost its global links), else both (s -> m1 -> m2 -> d).
    """
    m1 = _relays(net, s, d, lreach, greach)
    m2 = np.full(len(s), -1, np.int64)
    left = m1 < 0
    if left.any():
        # the same choice seen from the destination (reachability is symmetric)
        m2[left] = _relays(net, d[left], s[left], lreach, greach)
    left = np.flatnonzero((m1 < 0) & (m2 < 0))
    if not len(left):
        return m1, m2
    ridx, kidx, table = positions(net)
    rank = net.rank
    cache: dict = {}

    def one(x):
        return np.array([x], np.int64)

    def valid(f, a, b):
        return (a != s[f] and b != d[f] and lreach(one(s[f]), one(a))[0] and lreach(one(b), one(d[f]))[0])

    def closest(cands, r, k):
        pos0 = table[r, k] if k >= 0 else -1
        target = rank[pos0] if pos0 >= 0 else rank[cands].min()
        return cands[np.lexsort((rank[cands], np.abs(rank[cands] - target)))]

    for f in left:
        r1, r2 = ridx[s[f]], ridx[d[f]]
        if r1 < 0 or r2 < 0:
            continue
        key = (r1, r2, kidx[d[f]])
        got = cache.get(key, _MISSING)
        # "no relay" is cached too: for a rack pair cut off from each other it holds for
        # every pair of chips, and recomputing it per pair cost O(rack) Python calls each
        if got is _MISSING or (got is not None and not valid(f, *got)):
            got = None
            A = table[r1][table[r1] >= 0]
            A = A[(A != s[f]) & lreach(np.full(len(A), s[f]), A)]
            B = table[r2][table[r2] >= 0]
            B = B[(B != d[f]) & lreach(B, np.full(len(B), d[f]))]
            if len(A) and len(B):
                for a in closest(A, r1, kidx[d[f]]):
                    Bm = B[greach(np.full(len(B), a), B)]
                    if len(Bm):
                        got = (a, closest(Bm, r2, kidx[a])[0])
                        break
            cache[key] = got
        if got is not None:
            m1[f], m2[f] = got
    return m1, m2


# ---------------------------------------------------------------------------------------
# Symmetry fold: in-rack positions (what keeps the relays)
# ---------------------------------------------------------------------------------------
def _fold_positions(G, lt, net, rows, X, cls, row_of, split, tiers, guard) -> Fold:
    """Twin classes for a fabric whose routes relay by in-rack position (rail-only PXN).

    The relay of a pair is the chip of the source's rack at the destination's position
    (or the mirror of it), so the moves that keep routes are the permutations of
    positions applied in *every* rack at once.  Positions ``p`` and ``p'`` are
    interchangeable when in every rack the chips there are twins and in one row.  Under
    those moves a pair is classified by its two (rack, position class) cells and, when
    the classes agree across two racks, by whether the positions are equal.  Each
    representative's relay is checked to be that positional choice (not a fallback
    chosen by rank), and a flow relaying on both sides is refused.

    Called by :func:`.ecmp.fold_twins` (with its twin classes ``cls``, the row of each
    node ``row_of`` and the rows' nodes ``X``) when the tier policy's routes relay.
    """
    from . import route
    M = "positions"

    def no(reason: str) -> Fold:
        return Fold.refuse(M, reason)

    u, v = lt.src.astype(np.int64), lt.dst.astype(np.int64)
    if (net.is_chip[u] & net.is_chip[v]).any():
        return no("chips are linked to chips directly (positions are defined for switched racks)")
    ridx, kidx, table = positions(net)
    if (ridx[X] < 0).any():
        return no("a group's chip has no rack")
    n = len(lt.nodes)
    present = table >= 0
    T0 = np.maximum(table, 0)
    # a position's class: its chips' twin classes and rows, rack by rack
    key = np.concatenate([np.where(present, cls[T0], -1), np.where(present, row_of[T0], -2)], axis=0).T
    pid = np.unique(key, axis=0, return_inverse=True)[1].ravel().astype(np.int64)
    nK = int(pid.max()) + 1
    by_class = np.argsort(pid, kind="stable")
    start = np.searchsorted(pid[by_class], np.arange(nK + 1))
    size = np.diff(start)
    first = by_class[start[:-1]]
    second = by_class[np.minimum(start[:-1] + 1, len(pid) - 1)]
    cell = np.full(n, -1, np.int64)
    cell[table[present]] = (np.nonzero(present)[0] * nK + pid[np.nonzero(present)[1]])
    rank = net.rank
    reps_s, reps_d, reps_row, mult = [], [], [], []
    for r in range(X.shape[0]):
        cells = np.unique(cell[X[r]])
        ra, ka = cells // nK, cells % nK
        j = len(cells)
        a, b = np.repeat(np.arange(j), j), np.tile(np.arange(j), j)
        ra_a, ra_b, ka_a, ka_b = ra[a], ra[b], ka[a], ka[b]
        same_cell = a == b
        same_class = (ka_a == ka_b) & ~same_cell          # one class in two racks
        other = ka_a != ka_b
        sz_a, sz_b = size[ka_a], size[ka_b]
        src1 = table[ra_a, first[ka_a]]
        # (1) two positions of one cell; (2) one class, two racks: same position, other
        # positions; (3) two classes
        picks = [(same_cell & (sz_a >= 2), src1, table[ra_b, second[ka_b]], sz_a * (sz_a - 1)),
                 (same_class, src1, table[ra_b, first[ka_b]], sz_a),
                 (same_class & (sz_a >= 2), src1, table[ra_b, second[ka_b]], sz_a * (sz_a - 1)),
                 (other, src1, table[ra_b, first[ka_b]], sz_a * sz_b)]
        for sel, sn, dn, mm in picks:
            reps_s.append(rank[sn[sel]])
            reps_d.append(rank[dn[sel]])
            reps_row.append(np.full(int(sel.sum()), r, np.int64))
            mult.append(mm[sel])
    rep_src, rep_dst = np.concatenate(reps_s), np.concatenate(reps_d)
    multiplicity = np.concatenate(mult).astype(np.int64)
    R, m = rows.shape
    if multiplicity.sum() != R * m * (m - 1):
        return no("the position classes do not cover the phase's flows (groups cut across positions)")
    if 4 * len(rep_src) > R * m * (m - 1):
        return no(f"too few interchangeable positions to gain: {len(rep_src):,} classes for "
                  f"{R * m * (m - 1):,} flows (needs at least 4 flows per class)")
    if guard is not None:
        guard(len(rep_src))
    routes = route(G, rep_src, rep_dst, split=split, tiers=tiers, links=lt)
    if not np.all(routes.reachable):
        return no("a representative flow has no route")
    if routes.relay2_rank is not None and (routes.relay2_rank >= 0).any():
        return no("a flow relays on both sides (both ends lost their rail links): those relays are chosen "
                  "by rank, not position")
    relayed = np.flatnonzero(routes.relayed)
    if len(relayed):
        sn = net.node_of_rank[rep_src[relayed]]
        dn = net.node_of_rank[rep_dst[relayed]]
        got = net.node_of_rank[routes.relay_rank[relayed]]
        positional = (got == table[ridx[sn], kidx[dn]]) | (got == table[ridx[dn], kidx[sn]])
        if not positional.all():
            return no("a relay is a fallback chosen by rank (the chip at the positional choice has no path), "
                      "not by position")
    key_node = np.where(cell >= 0, n + cell, np.arange(n))
    link_orbit = np.unique(key_node[u] * (n + n * nK + 1) + key_node[v], return_inverse=True)[1].astype(np.int64)
    return _classes_on_orbits(M, "permuting positions", link_orbit, lt, multiplicity, rep_src, rep_dst,
                              np.concatenate(reps_row), routes, R, no)
