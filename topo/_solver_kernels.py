"""Compiled inner loop of :mod:`fabricsim.topo.solver`'s progressive filling (private).

Needs numba (the optional extra ``fabricsim[fast]``); the solver imports this
module only when a filling has run enough rounds to pay for it, and keeps its
numpy passes when numba is missing.  :func:`fill` takes the same rounds as the
one-at-a-time filling the numpy passes reproduce (see ``_Fill.run``): the links
within ``rel_tol`` of the lowest saturation level saturate together, each
piece with unfrozen flows on one of them freezes them at that level (its
bottleneck: the lowest-id such link, a flow under several such pieces taking
the one of the highest-id piece, as ``_Fill._freeze_gather``), and the weight
moves from the active to the frozen sums of their links.  The lowest levels
come from a window of links (all links outside it stay at or above ``out``;
freezing only raises levels), refilled by one partition of all levels when it
runs dry, so a round costs the window plus the entries it freezes, not O(L).
"""
from __future__ import annotations

import numpy as np
from numba import njit

_TINY = np.finfo(np.float64).tiny
_EPS8 = 8 * np.finfo(np.float64).eps


@njit(cache=True)
def _fill_window(sat_at, k, window):
    """Links of the ``k`` lowest levels into ``window``; returns (count, out level)."""
    L = sat_at.size
    if k >= L:
        out = np.inf
    else:
        kth = np.partition(sat_at, k)[k]
        # Roundoff may leave a refreshed level a few ulps under its old value.
        out = kth * (1.0 - _EPS8) if kth < np.inf else np.inf
    n = 0
    for l in range(L):
        if sat_at[l] < out:
            window[n] = l
            n += 1
    return n, out


@njit(cache=True)
def fill(Pp, Pi, Pd, Cp, Ci, Qp, Qi, Qd, Rp, Ri,
         cap, w, mw,
         frozen, freeze_round, rate, bottleneck, piece_cnt, link_cnt, aw, used, sat_at,
         rel_tol, level, rnd, n_left, k_window, bottlenecks, unit,
         pstamp, plink, dp, dc, tpieces, lstamp, dl, window, rlinks, tlinks, stamp,
         levels_out, new_out, stats):
    """Fill until every present flow is frozen; mutates the state arrays in place.

    ``Pp, Pi, Pd`` / ``Cp, Ci`` are flow_piece as CSR / CSC, ``Qp, Qi, Qd`` /
    ``Rp, Ri`` piece_link likewise (``unit``: every ``Pd`` is 1, not read).
    ``pstamp, plink, dp, dc, tpieces`` (per piece) and ``lstamp, dl, window, rlinks,
    tlinks`` (per link) are scratch; entries stamped ``<= stamp`` are stale.  Writes
    each round's level to ``levels_out`` and the frozen rows, in freeze order, to
    ``new_out`` (rows in the order of :func:`row_order` make the reads and writes of
    a round nearly sequential); adds window refills and window entries scanned to
    ``stats[0]`` and ``stats[1]``.

    Loads only grow while filling, so the caller updates the peak utilization
    from the final loads.  Returns (rounds, rows frozen, flow entries gathered,
    next stamp, status): status 0 when done, 1 when a present flow has no finite
    level left.
    """
    L = sat_at.size
    tol1 = 1.0 + rel_tol
    nw, out, k = 0, -1.0, max(min(k_window, L), 1)
    tp = np.empty(piece_cnt.size, tpieces.dtype)  # the round's pieces, sorted in place
    fresh = False
    n_rounds, n_new, work = 0, 0, 0
    while n_left > 0:
        # Lowest level in the window; drop links that rose to ``out`` or beyond.
        v0 = np.inf
        j = 0
        for i in range(nw):
            l = window[i]
            v = sat_at[l]
            if v < out:
                window[j] = l
                j += 1
                if v < v0:
                    v0 = v
        stats[1] += nw
        nw = j
        if not (v0 * tol1 < out):
            # Not one complete round in the window: refill it (wider when a fresh
            # one holds fewer than the links tied with its lowest).
            if out == np.inf:
                return n_rounds, n_new, work, stamp, 1
            if fresh:
                k = min(L, 4 * k)
            nw, out = _fill_window(sat_at, k, window)
            stats[0] += 1
            fresh = True
            continue
        fresh = False
        thr = v0 * tol1
        if v0 > level:
            level = v0  # roundoff must not let the fill level go backwards
        nr = 0
        for i in range(nw):
            l = window[i]
            if sat_at[l] <= thr:
                rlinks[nr] = l
                nr += 1
        rl = rlinks[:nr]
        rl.sort()
        # Pieces with unfrozen flows on the round's links, each claimed by the
        # lowest-id one.
        stamp += 1
        npc = 0
        for i in range(nr):
            l = rl[i]
            sat_at[l] = np.inf
            for e in range(Rp[l], Rp[l + 1]):
                p = Ri[e]
                if piece_cnt[p] > 0 and pstamp[p] != stamp:
                    pstamp[p] = stamp
                    plink[p] = l
                    tpieces[npc] = p
                    npc += 1
        tp[:npc] = tpieces[:npc]  # a copy: tpieces is reused below
        tp[:npc].sort()
        # Freeze their unfrozen flows, summing each one's weight and entries per piece
        # (rows in the order of row_order come nearly in sequence).
        first = n_new
        stamp += 1  # from here: the pieces of the rows frozen this round
        ntp = 0
        # a flow frozen twice in one round needs two of the round's pieces
        twice = bottlenecks and npc > 1
        for i in range(npc):
            q = tp[i]
            bl = plink[q]
            stats[2] += Cp[q + 1] - Cp[q]
            for e in range(Cp[q], Cp[q + 1]):
                f = Ci[e]
                if not frozen[f]:
                    frozen[f] = True
                    freeze_round[f] = rnd
                    rate[f] = w[f] * level
                    if bottlenecks:
                        bottleneck[f] = bl
                    new_out[n_new] = f
                    n_new += 1
                    # its entries, summed per piece
                    x = mw[f]
                    work += Pp[f + 1] - Pp[f]
                    for e2 in range(Pp[f], Pp[f + 1]):
                        p = Pi[e2]
                        if pstamp[p] != stamp:
                            pstamp[p] = stamp
                            dp[p] = 0.0
                            dc[p] = 0
                            tpieces[ntp] = p
                            ntp += 1
                        dp[p] += x if unit else Pd[e2] * x
                        dc[p] += 1
                elif twice and freeze_round[f] == rnd:
                    bottleneck[f] = bl  # the highest-id piece's link, as the numpy path
        n_left -= n_new - first
        # Weight per link, moved from active to frozen; dead pieces leave the counts.
        nl = 0
        for i in range(ntp):
            p = tpieces[i]
            old = piece_cnt[p]
            piece_cnt[p] = old - dc[p]
            dead = old > 0 and piece_cnt[p] <= 0
            x = dp[p]
            stats[3] += Qp[p + 1] - Qp[p]
            for e in range(Qp[p], Qp[p + 1]):
                l = Qi[e]
                if lstamp[l] != stamp:
                    lstamp[l] = stamp
                    dl[l] = 0.0
                    tlinks[nl] = l
                    nl += 1
                dl[l] += Qd[e] * x
                if dead:
                    link_cnt[l] -= 1
        stats[4] += nl
        stats[5] += nr
        for i in range(nl):
            l = tlinks[i]
            aw[l] -= dl[l]
            used[l] += level * dl[l]
            if link_cnt[l] > 0:
                # (capacity - used) / aw, inf for an unlimited link (cap inf)
                head = cap[l] - used[l]
                if head < 0.0:
                    head = 0.0
                a = aw[l] if aw[l] > _TINY else _TINY
                sat_at[l] = head / a
            else:
                aw[l] = 0.0
                sat_at[l] = np.inf
        levels_out[n_rounds] = level
        n_rounds += 1
        rnd += 1
    return n_rounds, n_new, work, stamp, 0


@njit(cache=True)
def columns(Pp, Pi, Pd, mw, unit, counted, ptr, out, piece_w):
    """The column structure of CSR (Pp, Pi): column pointers in ``ptr`` (length
    ``n_cols + 1``; computed unless ``counted``: given), and the rows of each column in
    increasing order written to ``out`` (a counting sort); adds ``P.T @ mw`` to
    ``piece_w``, summed in scipy's order (row by row)."""
    n_cols = ptr.size - 1
    if not counted:
        ptr[:] = 0
        for e in range(Pp[0], Pp[Pp.size - 1]):
            ptr[Pi[e] + 1] += 1
        for c in range(n_cols):
            ptr[c + 1] += ptr[c]
    nxt = ptr[:-1].copy()
    for r in range(Pp.size - 1):
        x = mw[r]
        for e in range(Pp[r], Pp[r + 1]):
            c = Pi[e]
            piece_w[c] += x if unit else Pd[e] * x
            out[nxt[c]] = r
            nxt[c] += 1


@njit(cache=True)
def row_order(Pp, Pi, Pd, unit, Qp, Qi, Qd, cap, min_run, w, order, at, rows_ptr, rows_idx,
              rows_val, w_new, col_ptr):
    """Order rows of CSR (Pp, Pi, Pd) by the piece likely to freeze them.

    A row's key is its piece of lowest estimated level: over the piece's links, the
    least capacity over the link's share of stored entries (a count, not weights:
    only locality depends on it).  Rows of one key go together, in their given
    order, so a filling round finds the rows it freezes nearly in sequence instead
    of one cache miss each.  Returns False, having written nothing else, when the
    rows already come in runs of one key ``min_run`` long on average (flows listed
    source by source, say); else writes ``order`` (new row -> row), ``at`` (row ->
    new row), the rows in the new order (``rows_ptr, rows_idx``, and ``rows_val``
    unless ``unit``: every value 1), ``w`` in the new order to ``w_new`` and the
    column pointers of the rows (entries per column, summed) to ``col_ptr``, and
    returns True.  One pass over the rows places them: a cursor per key for the
    rows and one for their entries.
    """
    F, K, L = Pp.size - 1, Qp.size - 1, cap.size
    cnt = np.zeros(K, np.int64)
    for e in range(Pp[0], Pp[F]):
        cnt[Pi[e]] += 1
    # estimated level of each piece: min over its links of cap / (entries on the link)
    load = np.zeros(L)
    for q in range(K):
        for e in range(Qp[q], Qp[q + 1]):
            load[Qi[e]] += Qd[e] * cnt[q]
    plevel = np.full(K, np.inf)
    for q in range(K):
        for e in range(Qp[q], Qp[q + 1]):
            l = Qi[e]
            if load[l] > 0.0:
                v = cap[l] / load[l]
                if v < plevel[q]:
                    plevel[q] = v
    # each row's key (kept in ``at`` until the next pass), the keys' rows, entries, runs
    start, entry = np.zeros(K + 1, np.int64), np.zeros(K + 1, np.int64)
    runs, prev = 0, -1
    for r in range(F):
        best, kb = np.inf, 0
        for e in range(Pp[r], Pp[r + 1]):
            c = Pi[e]
            if plevel[c] < best or e == Pp[r]:
                best, kb = plevel[c], c
        at[r] = kb
        start[kb + 1] += 1
        entry[kb + 1] += Pp[r + 1] - Pp[r]
        if kb != prev:
            runs += 1
            prev = kb
    if runs * min_run <= F:
        return False
    col_ptr[0] = 0
    for c in range(K):
        start[c + 1] += start[c]
        entry[c + 1] += entry[c]
        col_ptr[c + 1] = col_ptr[c] + cnt[c]
    # each row to its key's next place, its entries to the key's next entries
    for r in range(F):
        kb = at[r]
        s, o = start[kb], entry[kb]
        start[kb] = s + 1
        at[r] = s
        order[s] = r
        rows_ptr[s] = o
        w_new[s] = w[r]
        for e in range(Pp[r], Pp[r + 1]):
            rows_idx[o] = Pi[e]
            if not unit:
                rows_val[o] = Pd[e]
            o += 1
        entry[kb] = o
    rows_ptr[F] = Pp[F] - Pp[0]
    return True


@njit(cache=True)
def unpermute(order, rate, bottleneck, rep, rate_out, bottleneck_out):
    """Rows back to the caller's order: ``rate_out[order] = rate`` and likewise the
    bottlenecks, each mapped through ``rep`` (link group -> its link) unless negative
    (none) or ``rep`` is empty."""
    mapped = rep.size > 0
    for s in range(order.size):
        r = order[s]
        rate_out[r] = rate[s]
        b = bottleneck[s]
        bottleneck_out[r] = rep[b] if mapped and b >= 0 else b
