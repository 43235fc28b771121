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
         cap, mw, w, perm,
         state, piece_cnt, link_cnt, aw, used, sat_at,
         rel_tol, level, rnd, n_left, k_window, bottlenecks, unit,
         pstamp, plink, dp, dc, tpieces, lstamp, dl, window, rlinks, tlinks, stamp,
         levels_out, new_out, frozen, freeze_round, rate, bottleneck, stats):
    """Fill until every present flow is frozen; mutates the state arrays in place.

    ``Pp, Pi, Pd`` / ``Cp, Ci`` are flow_piece as CSR / CSC, ``Qp, Qi, Qd`` /
    ``Rp, Ri`` piece_link likewise (``unit``: every ``Pd`` is 1, not read).  The
    rows, ``mw`` and ``w`` may be stored in another order (see :func:`layout`):
    ``perm`` maps a stored row to the flow it is (empty: the identity), and
    ``Ci`` holds stored rows.  ``state`` is the frozen flags of the stored rows as bytes
    (0 open, 1 frozen; 2 marks a row frozen in the running round).  ``pstamp, plink, dp, dc,
    tpieces`` (per piece) and ``lstamp, dl, window, rlinks, tlinks`` (per link) are
    scratch; entries stamped ``<= stamp`` are stale.  Writes each round's level to
    ``levels_out``, the frozen flows, in freeze order, to ``new_out``, and for each of
    them (by flow) its flag in ``frozen`` (when the rows are stored apart, else
    ``frozen`` is ``state``), round ``freeze_round``, rate (``w`` times the level) and,
    when ``bottlenecks``, bottleneck link (a flow under several of a round's pieces
    takes the link of the highest-id one, as the numpy path).  Adds window refills
    and window entries scanned to ``stats[0]`` and ``stats[1]``.

    Loads only grow while filling, so the caller updates the peak utilization
    from the final loads.  Returns (rounds, rows frozen, flow entries gathered,
    next stamp, status): status 0 when done, 1 when a present flow has no finite
    level left.
    """
    L = sat_at.size
    tol1 = 1.0 + rel_tol
    permuted = perm.size > 0
    nw, out, k = 0, -1.0, max(min(k_window, L), 1)
    ra, rb, xw = np.empty(256, np.int64), np.empty(256, np.int64), np.empty(256)
    rows = np.empty(max(n_left, 1), np.int64)  # stored rows of the round's frozen flows
    ep, ev = np.empty(1024, np.int64), np.empty(1024)
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
        # Freeze their unfrozen flows, then sum their weight and entries per piece.
        first = n_new
        stamp += 1
        ntp = 0
        for i in range(npc):
            q = tp[i]
            bl = plink[q]
            stats[2] += Cp[q + 1] - Cp[q]
            for e in range(Cp[q], Cp[q + 1]):
                r = Ci[e]
                st = state[r]
                if st == 0:
                    state[r] = 2  # frozen in this round (1 once the round is over)
                    rows[n_new - first] = r
                    f = perm[r] if permuted else r
                    new_out[n_new] = f
                    if bottlenecks:
                        bottleneck[f] = bl
                    n_new += 1
                elif bottlenecks and st == 2:
                    # pieces go in increasing id: the highest-id one's link stays
                    bottleneck[perm[r] if permuted else r] = bl
        n_left -= n_new - first
        # The new rows' entries, gathered in separate passes: independent loads
        # (rows scattered over memory) overlap instead of waiting one by one.
        m_new = n_new - first
        if ra.size < m_new:
            ra = np.empty(2 * m_new, np.int64)
            rb = np.empty(2 * m_new, np.int64)
            xw = np.empty(2 * m_new)
        ne = 0
        for i in range(m_new):
            r = rows[i]
            ra[i] = Pp[r]
            rb[i] = Pp[r + 1]
            xw[i] = mw[r]
            f = new_out[first + i]
            state[r] = 1
            if permuted:
                frozen[f] = 1
            freeze_round[f] = rnd
            rate[f] = w[r] * level
            ne += rb[i] - ra[i]
        work += ne
        if ep.size < ne:
            ep = np.empty(2 * ne, np.int64)
            ev = np.empty(2 * ne)
        ne = 0
        for i in range(m_new):
            x = xw[i]
            for e2 in range(ra[i], rb[i]):
                ep[ne] = Pi[e2]
                ev[ne] = x if unit else Pd[e2] * x
                ne += 1
        for j in range(ne):
            p = ep[j]
            if pstamp[p] != stamp:
                pstamp[p] = stamp
                dp[p] = 0.0
                dc[p] = 0
                tpieces[ntp] = p
                ntp += 1
            dp[p] += ev[j]
            dc[p] += 1
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
def layout(Pp, Pi, Pd, mw, w, unit, Qp, Qi, Qd, cap, min_run,
           col_rows, perm, at, rows_ptr, rows_idx, rows_val, rows_mw, rows_w, piece_w):
    """Store the rows of CSR (Pp, Pi, Pd) grouped by the piece likely to freeze them.

    A row's key is its piece of lowest estimated level: over the piece's links, the
    least capacity over the link's share of stored entries (a count, not weights:
    only the order matters, and any order gives the same results).  Rows of one key
    are stored together, in their original order, so the filling reads a round's
    frozen rows nearly in sequence instead of one cache miss each.  Writes the
    stored rows (``rows_ptr, rows_idx``, ``rows_val`` unless ``unit``, their
    ``rows_mw``, and ``rows_w`` unless it is empty), ``perm`` (stored row -> row), ``at``
    (row -> stored row), ``piece_w`` (zeroed by the caller: ``P.T @ mw``, summed in
    the order scipy sums it) and the column structure: for each column its stored
    rows, in increasing original row (``col_rows``).  Rows already in runs of one key
    (``min_run`` long on average) stay where they are: only ``col_rows`` (the rows
    themselves) and ``piece_w`` are written.  Returns the column pointers and whether
    the rows were stored.
    """
    F, K, L = Pp.size - 1, Qp.size - 1, cap.size
    ptr = np.zeros(K + 1, np.int64)
    # entries per column, and ``piece_w = P.T @ mw`` summed in scipy's order (row by row)
    for r in range(F):
        x = mw[r]
        for e in range(Pp[r], Pp[r + 1]):
            c = Pi[e]
            ptr[c + 1] += 1
            piece_w[c] += x if unit else Pd[e] * x
    # estimated level of each piece: min over its links of cap / (entries on the link)
    load = np.zeros(L)
    for q in range(K):
        for e in range(Qp[q], Qp[q + 1]):
            load[Qi[e]] += Qd[e] * ptr[q + 1]
    plevel = np.full(K, np.inf)
    for q in range(K):
        for e in range(Qp[q], Qp[q + 1]):
            l = Qi[e]
            if load[l] > 0.0:
                v = cap[l] / load[l]
                if v < plevel[q]:
                    plevel[q] = v
    for c in range(K):
        ptr[c + 1] += ptr[c]
    # each row's key (kept in ``at`` until the next pass), the keys' sizes and runs
    start = np.zeros(K + 1, np.int64)
    runs, prev = 0, -1
    for r in range(F):
        best, kb = np.inf, 0
        for e in range(Pp[r], Pp[r + 1]):
            c = Pi[e]
            if plevel[c] < best or e == Pp[r]:
                best, kb = plevel[c], c
        at[r] = kb
        start[kb + 1] += 1
        if kb != prev:
            runs += 1
            prev = kb
    if runs * min_run <= F:
        # already grouped (flows listed source by source, say): the columns only
        nxt = ptr[:-1].copy()
        for r in range(F):
            for e in range(Pp[r], Pp[r + 1]):
                c = Pi[e]
                col_rows[nxt[c]] = r
                nxt[c] += 1
        return ptr, False
    for c in range(K):
        start[c + 1] += start[c]
    # stored position of each row, and the stored rows' lengths
    for r in range(F):
        kb = at[r]
        s = start[kb]
        start[kb] = s + 1
        at[r] = s
        rows_ptr[s + 1] = Pp[r + 1] - Pp[r]
    rows_ptr[0] = 0
    for i in range(F):
        rows_ptr[i + 1] += rows_ptr[i]
    # Scattered writes go to one open line per key and array: a pass for the per-row
    # arrays, one for the entries and the columns keeps fewer lines open at a time.
    for r in range(F):
        s = at[r]
        perm[s] = r
        rows_mw[s] = mw[r]
        if rows_w.size:   # empty when w is mw (every multiplicity 1)
            rows_w[s] = w[r]
    nxt = ptr[:-1].copy()
    for r in range(F):
        s = at[r]
        o = rows_ptr[s]
        for e in range(Pp[r], Pp[r + 1]):
            c = Pi[e]
            rows_idx[o] = c
            if not unit:
                rows_val[o] = Pd[e]
            o += 1
            col_rows[nxt[c]] = s
            nxt[c] += 1
    return ptr, True
