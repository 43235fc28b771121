"""Event-driven completion times: :func:`simulate` and its quiet-event shortcuts.

Rates are solved, time advances to the earliest finish, finished flows retire and
the filling is rolled back only as far as they reach (:meth:`~.fill._Fill.retire`).
Events that reopen no flow are taken together: :func:`_quiet_events` after a run of
them, :func:`_quiet_tail` when every remaining event is one.
"""
from __future__ import annotations

import bisect

import numpy as np

from .bound import _bound
from .compiled import _regrouped
from .fill import _Fill
from .groups import _constraints
from .inputs import _check_routable, _multiplicity, _per_flow, _prepare, _unit
from .results import FlowResult, _readonly
from .segments import _row_positions

# simulate takes events that reopen no flow together (one sort) after this
# many in a row; a sort of the flows costs more than a few single events.
_QUIET_STREAK = 8
# simulate tries to take every remaining event at once (_quiet_tail) after a fill
# that re-solved at least a quarter of this many rows or more.
_TAIL_MIN_ROWS = 4096


def simulate(flow_piece, piece_link, capacity_Bps, size_bytes, *, weights=None,
             multiplicity=None, rel_tol: float = 1e-9) -> FlowResult:
    """Event-driven completion of a phase of flows under max-min fair sharing.

    Parameters
    ----------
    flow_piece, piece_link, capacity_Bps, weights, multiplicity, rel_tol
        As in :func:`maxmin_rates`.
    size_bytes : array_like, shape (F,)
        Bytes of one flow of each row (>= 0; empty flows finish at 0).

    Returns
    -------
    FlowResult
        Finish times, per-link bytes and utilization, the first event's rates
        and the link-load bound.

    Raises
    ------
    ValueError
        As :func:`maxmin_rates`, or when a flow with bytes gets rate 0 (a
        zero-capacity bottleneck) and would never finish.

    Notes
    -----
    Rates are solved, time advances to the earliest finish, flows finishing
    within relative ``rel_tol`` of it retire together, and the survivors keep
    their remaining bytes and are re-solved on their own.

    The re-solve is not done from scratch.  A retired flow froze in some
    filling round r and crossed no link that saturated earlier, so rounds
    before the earliest such r replay identically without the retired flows:
    only the flows frozen from that round on are reopened and filled again.
    When flows of equal size and weight finish, they are the fastest, frozen
    last, and reopen nothing: the other finish times stand, no rollback is
    needed, and after a run of such events the following ones are taken
    together from one sort of the earliest finish times.  With mixed sizes an
    event may redo many rounds (``n_levels`` counts them).

    Examples
    --------
    >>> import numpy as np, scipy.sparse as sp
    >>> r = simulate(sp.csr_array(np.ones((2, 1))), sp.csr_array(np.ones((1, 1))),
    ...              [1.0], [1.0, 2.0])
    >>> r.finish_s.tolist(), r.events
    ([2.0, 3.0], 2)
    """
    P, Q, cap = _prepare(flow_piece, piece_link, capacity_Bps)
    F, L = P.shape[0], Q.shape[1]
    size = _per_flow(size_bytes, F, "size_bytes", positive=False)
    w = _per_flow(weights, F, "weights", positive=True)
    m = _multiplicity(multiplicity, F)
    if not (np.isfinite(rel_tol) and rel_tol >= 0):
        raise ValueError(f"rel_tol={rel_tol!r} must be a finite number >= 0")
    _check_routable(P, Q, cap)
    bound = _bound(P, Q, cap, m * size)
    lg, Qf, Qfc, capf = _constraints(Q, cap)

    finish = np.zeros(F)
    first_rates = np.zeros(F)
    # rows: current row -> original flow (regrouped for the compiled filling, see
    # _row_order, or after dropping rows); None while rows are the flows
    unit = _unit(P)
    rows, _, Pf, col_ptr, (w, m, size_r) = _regrouped(P, Qf, capf, unit, w, m, size)
    # Empty flows finish at time 0 and never take part.
    fill = _Fill(Pf, Qf, Qfc, capf, w, m, rel_tol, unit=unit, col_ptr=col_ptr, gone=size_r <= 0,
                 bottlenecks=False, peak_load=lg is not None)
    # Per current row: bytes left at time ``since`` and the projected finish
    # time; only rows whose rate changes are touched, so an event costs
    # O(rows) numpy work plus the rounds it re-solves.
    left_bytes, since = size_r.copy(), np.zeros(F)
    finish_at = np.full(F, np.inf)
    n_alive = int(np.sum(size > 0))
    now = 0.0
    events = 0
    quiet_k = 1024  # flows _quiet_events sorts at a time; adapts
    streak = 0  # consecutive events that reopened nothing
    while n_alive:
        if n_alive * 2 < finish_at.size:
            # Compacting costs O(nnz) but halves the rows, so O(nnz) overall.
            keep = fill.compact()
            rows = keep if rows is None else rows[keep]
            left_bytes, since, finish_at = left_bytes[keep], since[keep], finish_at[keep]
        fill.run()
        changed = fill.take_changed()
        rate = fill.rate[changed]
        if np.any(rate <= 0):
            flow = int(changed[np.flatnonzero(rate <= 0)[0]])
            flow = flow if rows is None else int(rows[flow])
            pieces = P.indices[P.indptr[flow]:P.indptr[flow + 1]]
            pos, _ = _row_positions(Q.indptr, pieces)
            links = np.unique(Q.indices[pos])
            zero = links[cap[links] == 0]
            where = f"zero-capacity link {int(zero[0])}" if zero.size else "a saturated link"
            raise ValueError(f"{int(np.sum(rate <= 0))} flows get rate 0 (e.g. flow {flow}, "
                             f"which crosses {where}) and would never finish")
        if events == 0:
            first_rates[slice(None) if rows is None else rows] = fill.rate
        since[changed] = now
        finish_at[changed] = now + left_bytes[changed] / rate
        if changed.size * 4 >= n_alive and n_alive >= _TAIL_MIN_ROWS:
            # The fill re-solved much of what is left: when every coming event
            # reopens nothing, take them all from one sort (the filter costs
            # O(rows), as the fill did).
            tail = _quiet_tail(finish_at, fill.freeze_round, now, rel_tol)
            if tail is not None:
                rows_q, at, n_ev = tail
                events += n_ev
                finish[rows_q if rows is None else rows[rows_q]] = at
                fill.finish_all(rows_q, at)
                now = float(at[-1])
                n_alive = 0
                break
        t_next = float(finish_at.min())
        done = np.flatnonzero(finish_at <= now + (t_next - now) * (1.0 + rel_tol))
        quiet = n_alive > done.size and not fill.reopens(done)
        if quiet and streak >= _QUIET_STREAK:
            # Retiring them changes no other rate, so the next finish times stand:
            # after a run of such events, take every following one at once.
            rows_q, at, n_ev, quiet_k = _quiet_events(finish_at, fill.freeze_round, now,
                                                      rel_tol, quiet_k)
            if n_ev:
                now = float(at[-1])
                events += n_ev
                finish[rows_q if rows is None else rows[rows_q]] = at
                finish_at[rows_q] = np.inf
                n_alive -= rows_q.size
                fill.drop(rows_q, at)
                streak = streak if n_ev >= _QUIET_STREAK else 0
                continue
        streak = streak + 1 if quiet else 0
        now = t_next
        events += 1
        finish[done if rows is None else rows[done]] = now
        finish_at[done] = np.inf
        n_alive -= done.size
        if quiet:
            fill.drop(done, np.full(done.size, now))  # no rollback needed
        elif n_alive:
            reopen, old_rate = fill.retire(done, now)
            left_bytes[reopen] -= old_rate * (now - since[reopen])
            finish_at[reopen] = np.inf
    n_levels = fill.rounds
    peak = fill.peak
    # Every present flow has a positive rate, so a link is busy until the last
    # flow crossing it finishes; links still carrying flows ran to the end.
    busy = fill.busy_until
    busy[fill.alive_link_cnt > 0] = now
    limited = np.isfinite(cap) & (cap > 0)
    if lg is not None:
        # a group's load, scaled to each of its links (peak: the group's highest load)
        busy = lg.per_link(busy)
        peak = np.zeros(L)
        np.divide(lg.scale * lg.per_link(fill.peak), cap, out=peak, where=limited)

    time_s = float(finish.max()) if F else 0.0
    utilization = np.zeros(L)
    if time_s > 0:
        utilization[limited] = bound.link_bytes[limited] / (cap[limited] * time_s)
    return FlowResult(time_s=time_s, finish_s=_readonly(finish), events=events,
                      n_levels=int(n_levels), link_bytes=bound.link_bytes,
                      link_busy_s=_readonly(busy), peak_utilization=_readonly(peak),
                      utilization=_readonly(utilization), first_rates_Bps=_readonly(first_rates),
                      bound_s=bound.time_s)


def _quiet_tail(finish_at, freeze_round, now, rel_tol):
    """Every coming event at once, when none of them reopens a flow; else None.

    The events are the ones :func:`simulate`'s loop would take one by one (groups
    finishing within ``rel_tol`` of the earliest, each retired when its earliest
    freeze round lies above every later flow's, see :func:`_quiet_events`).  A
    necessary condition is checked first in O(rows): a flow frozen in a later
    round must not finish after one of an earlier round by more than a group's
    tolerance.  Returns the rows in finish order, their finish times and the
    number of events.
    """
    alive = np.flatnonzero(finish_at < np.inf)
    if alive.size == 0:
        return None
    fr = freeze_round[alive]
    ft = finish_at[alive]
    # rounds are small integers: a stable sort of uint16 is a radix sort
    by_round = np.argsort(fr.astype(np.uint16) if fr.max() < 1 << 16 else fr, kind="stable")
    fr_sorted = fr[by_round]
    starts = np.flatnonzero(np.r_[True, fr_sorted[1:] != fr_sorted[:-1]])
    ft_round = ft[by_round]
    lo = np.minimum.reduceat(ft_round, starts)
    hi = np.maximum.reduceat(ft_round, starts)
    later_hi = np.append(np.maximum.accumulate(hi[::-1])[::-1][1:], -np.inf)
    # members of one group lie within (t - now) * rel_tol of its earliest time t
    if np.any(later_hi > lo + (lo - now) * rel_tol):
        return None
    if np.array_equal(lo, hi):
        # one finish time per round (equal sizes and weights): group the rounds
        cnt = np.diff(np.append(starts, fr.size))
        order = np.argsort(lo, kind="stable")
        ft_u, fr_u, cnt_u = lo[order], fr_sorted[starts][order].astype(np.int64), cnt[order]
        rows = alive[by_round]
        seg = np.repeat(np.argsort(order), cnt)  # each row's position in the sorted rounds
    else:
        order = np.argsort(ft)
        ft_u, fr_u, cnt_u = ft[order], fr[order].astype(np.int64), None
        rows, seg = alive[order], None
    suf = np.append(np.maximum.accumulate(fr_u[::-1])[::-1], -1)
    n, i, ends = ft_u.size, 0, []
    while i < n:
        t = float(ft_u[i])
        thr = now + (t - now) * (1.0 + rel_tol)
        j = int(np.searchsorted(ft_u, thr, "right"))
        if j < n and int(fr_u[i:j].min()) <= suf[j]:
            return None  # this group reopens flows: the loop re-solves
        ends.append(j)
        now, i = t, j
    first = np.array([0] + ends[:-1])
    at = np.repeat(ft_u[first], np.diff(np.append(first, n)))   # per sorted entry
    return rows, (at if seg is None else at[seg]), len(ends)


def _quiet_events(finish_at, freeze_round, now, rel_tol, k):
    """The coming events, in order, whose retirement reopens no other flow.

    Flows frozen in round r only see links that no earlier round saturated, so
    retiring a group whose earliest round lies above every remaining flow's
    leaves every remaining rate as it is: the finish times already projected
    stand, and the next group is found by the same rule, without a re-solve.
    Groups are formed as :func:`simulate` forms them (finishing within
    ``rel_tol`` of the earliest).  Only the ``k`` earliest flows are sorted.

    Returns the rows retired (in finish order), their finish times, the number
    of events, and the ``k`` to use next time.
    """
    alive = np.flatnonzero(finish_at < np.inf)
    n = alive.size
    if k < n:
        part = np.argpartition(finish_at[alive], k)
        cand = alive[part[:k]]
        t_out = float(finish_at[alive[part[k]]])
        fr_out = int(freeze_round[alive[part[k:]]].max())
    else:
        cand, t_out, fr_out = alive, np.inf, -1
    cand = cand[np.argsort(finish_at[cand], kind="stable")]
    ft = finish_at[cand]
    fr = freeze_round[cand].astype(np.int64)
    # Highest round among the flows from position j on (those outside included).
    suf = np.append(np.maximum.accumulate(fr[::-1])[::-1], -1)
    np.maximum(suf, fr_out, out=suf)
    ft_list = ft.tolist()
    i, nc, ends, short = 0, cand.size, [], False
    while i < nc:
        t = ft_list[i]
        thr = now + (t - now) * (1.0 + rel_tol)
        if thr >= t_out:
            short = True  # the group may reach past the sorted flows
            break
        j = bisect.bisect_right(ft_list, thr, i)
        if int(fr[i:j].min()) <= suf[j]:
            break  # this one reopens flows: a re-solve
        ends.append(j)
        now, i = t, j
    # Sort more flows next time when these ran out (or nearly): large groups late
    # in a phase would otherwise leave a few events per sort.
    next_k = min(4 * k, 1 << 24) if (short or i >= nc - 1) and k < n else k
    if not ends:
        return cand[:0], ft[:0], 0, next_k
    starts = np.array([0] + ends[:-1])
    at = np.repeat(ft[starts], np.diff(np.append(starts, i)))
    return cand[:i], at, len(ends), next_k
