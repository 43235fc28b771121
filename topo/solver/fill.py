"""Progressive filling: the state :class:`_Fill` and :func:`maxmin_rates`.

:class:`_Fill` keeps, per link, the active weight of the unfrozen flows and the load
of the frozen ones, and fills in passes of independent rounds (numpy) or through the
compiled loop (see :mod:`.compiled`).  What :func:`~.events.simulate`'s event loop
does to it (retiring finished rows, rolling the filling back) is the mixin
:class:`~.retire._Retire`, with that loop's state.
"""
from __future__ import annotations

import numpy as np
import scipy.sparse as sp

from . import compiled
from .retire import _Retire
from .compiled import _columns, _kernel_module, _regrouped, _row_order
from .groups import _constraints
from .inputs import _check_routable, _multiplicity, _per_flow, _prepare, _unit, _weight
from .results import Rates, _readonly
from .segments import _count_alive, _group_sum, _row_positions, _segment_reduce, _unique

# Smallest active weight used as a divisor: a link that still carries unfrozen
# flows has a positive weight; this only shields the division from roundoff.
_TINY = np.finfo(np.float64).tiny
# A round freezing at least this share of all flow-piece entries uses
# whole-matrix products instead of gathers: fewer, smaller temporaries.  At most
# 1/share rounds can be that large, so the total stays O(nnz).
_MATVEC_SHARE = 1.0 / 16
# Candidate links one filling pass considers at most (it adapts below this).
_MAX_BATCH = 4096
# Flow entries a pass may gather at least (see _Fill._pass; adapts, at most the
# big-round size).
_MIN_BUDGET = 4096


class _Fill(_Retire):
    """Progressive-filling state that survives retirements (private).

    Rows of ``P`` are flows.  :meth:`run` fills until every remaining flow is
    frozen.  :meth:`~.retire._Retire.retire` (the mixin :class:`~.retire._Retire`)
    removes finished flows and rolls the filling back to the first round any of
    them froze in: earlier rounds never saw them saturate a link, so they replay
    unchanged (see :func:`~.events.simulate`).

    Per link it keeps the *active weight* ``aw`` (sum over unfrozen flows of
    ``m w A``) and the load ``used`` of the frozen ones, so a link saturates at
    level ``(capacity - used) / aw``.  Exact integer counts of unfrozen entries
    per piece and of live pieces per link decide when a link has no unfrozen
    flow left, so floating residue in ``aw`` never creates a spurious level.
    """

    def __init__(self, P, Q, Qc, cap, w, m, rel_tol, *, unit=None, col_ptr=None, gone=None,
                 bottlenecks=True, peak_load=False):
        F = P.shape[0]
        # whole rows on their pieces (the common case): the kernel skips reading them
        # (``unit``: known already; stays true for any subset of the rows)
        self.unit_rows = _unit(P) if unit is None else unit
        # simulate() reports no bottlenecks; skipping them saves a pass over all
        # entries in every big round.
        self.bottlenecks = bottlenecks
        self.Q, self.Qc, self.cap, self.rel_tol = Q, Qc, cap, rel_tol
        self.K, self.L = Q.shape
        self.q_len = np.diff(Q.indptr)
        self.limited = np.isfinite(cap)
        # Highest load / capacity any run has left on each link: loads only grow
        # while filling, so updating it where a freeze adds load is enough.
        # (``peak_load``: the highest load itself, for links that stand for a group)
        self.inv_cap = np.zeros(self.L)
        np.divide(1.0, cap, out=self.inv_cap, where=self.limited & (cap > 0))
        if peak_load:
            self.inv_cap[:] = 1.0
        self.peak = np.zeros(self.L)
        self._set_rows(P, w, m, col_ptr)
        self._init_present(F, gone)
        self.frozen = self.gone.copy()  # retired rows count as frozen with rate 0
        self.freeze_round = np.full(F, -1, dtype=np.int32)  # rounds < 2**31: one per link at most
        self.rate = np.zeros(F)
        self.bottleneck = np.full(F, -1, dtype=np.int64)
        self.levels: list[float] = []
        self.rounds = 0  # rounds computed, including ones redone after a rollback
        self.changed: list[np.ndarray] = []  # rows frozen since take_changed()
        self.n_left = int(F - self.gone.sum())
        self.batch = 16  # candidate links per filling pass (see run); adapts
        self.budget = float(_MIN_BUDGET)  # and flow entries it may look at
        self.window, self.window_k, self.window_out = None, 512, np.inf
        self._touch = np.full(self.L, 1 << 62, dtype=np.int64)  # scratch, reset after use
        self._plink = np.full(self.K, self.L, dtype=np.int64)
        self._pmax = np.full(self.K, -1, dtype=np.int64)
        self._pcnt = np.zeros(self.K, dtype=np.int64)
        self._scratch, self._stamp = None, 0  # the compiled filling's (see _run_kernel)
        self.kernel_stats = np.zeros(6, dtype=np.int64)  # its window refills, entries scanned
        self._resync()

    # ----------------------------------------------------------------- state

    def _set_rows(self, P, w, m, col_ptr=None):
        """Take rows ``P`` (``col_ptr``: their column pointers, when known)."""
        self.P, self.w, self.m, self.mw = P, w, m, _weight(w, m)
        self.Pc = _columns(P, self.mw, self.unit_rows, ptr=col_ptr)
        self.big = max(P.nnz * _MATVEC_SHARE, 1.0)
        # An exact recomputation costs O(nnz + pieces + links): rollbacks weigh against that.
        self.resync_cost = P.nnz + self.Q.nnz + self.K + self.L
        self.big_rollback = max(self.resync_cost * _MATVEC_SHARE, 1.0)

    def _resync(self):
        """Recompute counts, weights and loads exactly from the flow states (O(nnz))."""
        P, Q, L = self.P, self.Q, self.L
        is_open = ~self.frozen
        if is_open.all():
            self.piece_cnt = np.diff(self.Pc.indptr).astype(np.int64)
            self.aw = Q.T @ (P.T @ self.mw if self.Pc.piece_w is None else self.Pc.piece_w)
        else:
            self.piece_cnt = _count_alive(self.Pc, is_open)
            self.aw = Q.T @ (P.T @ np.where(is_open, self.mw, 0.0))
        self.link_cnt = self._link_count(self.piece_cnt)
        self.aw[self.link_cnt == 0] = 0.0
        self._resync_present(is_open)
        if self.frozen.any():
            self.used = Q.T @ (P.T @ (self.m * self.rate))  # rate is 0 unless frozen and present
        else:
            self.used = np.zeros(L)
        self.sat_at = np.full(L, np.inf)
        self._refresh(np.arange(L))
        self.window = None  # levels may have dropped
        self.work = 0  # incremental entries since this exact recomputation

    def _link_count(self, piece_cnt):
        return np.bincount(self.Q.indices[np.repeat(piece_cnt > 0, self.q_len)],
                           minlength=self.L).astype(np.int64)

    def _refresh(self, links):
        ok = (self.link_cnt[links] > 0) & self.limited[links]
        head = np.maximum(self.cap[links] - self.used[links], 0.0)
        with np.errstate(over="ignore"):  # retired links divide by _TINY; masked just below
            self.sat_at[links] = np.where(ok, head / np.maximum(self.aw[links], _TINY), np.inf)

    def _per_piece(self, flows, per_flow):
        """Distinct pieces of ``flows``, the sum of ``per_flow * P`` and the entry count."""
        pos, cnt = _row_positions(self.P.indptr, flows)
        self.work += pos.size
        vals = None if per_flow is None else self.P.data[pos] * np.repeat(per_flow, cnt)
        return _group_sum(self.P.indices[pos], vals, self.K)

    def _to_links(self, pieces, per_piece):
        pos, cnt = _row_positions(self.Q.indptr, pieces)
        vals = None if per_piece is None else self.Q.data[pos] * np.repeat(per_piece, cnt)
        return _group_sum(self.Q.indices[pos], vals, self.L)

    def _pieces_changed(self, pieces, cnt, old_cnt, link_cnt, sign):
        """Update ``link_cnt`` for pieces whose count crossed zero; return touched links."""
        flipped = pieces[(cnt[pieces] > 0) != (old_cnt > 0)]
        if flipped.size == 0:
            return np.zeros(0, dtype=np.int64)
        if flipped.size * 64 < self.L:
            # Few pieces: count into the links directly (integer counts, any order).
            pos, _ = _row_positions(self.Q.indptr, flipped)
            links = self.Q.indices[pos]
            np.add.at(link_cnt, links, sign)
            return links
        links, _, n = self._to_links(flipped, None)
        link_cnt[links] += sign * n
        return links

    # ----------------------------------------------------------------- filling

    def run(self) -> None:
        """Fill until every present flow is frozen.

        Each pass takes the ``batch`` links of lowest saturation level, groups
        them into rounds (links within ``rel_tol`` of a round's lowest level
        saturate together) and freezes, in one set of vector operations, the
        longest run of rounds that do not depend on each other: a round depends
        on an earlier one when a flow frozen by the earlier one crosses one of
        its links.  Freezing only raises the saturation levels of the links it
        touches, so every round of that run is exactly the round the one-at-a-
        time filling would take next.
        """
        level = self.levels[-1] if self.levels else 0.0
        while self.n_left:
            if self.rounds >= compiled._KERNEL_ROUNDS_ANY or self.P.shape[0] >= compiled._KERNEL_ROWS:
                kernels = _kernel_module()
                if kernels is not None:
                    self._run_kernel(kernels, level)
                    return
            level = self._pass(level)

    def _run_kernel(self, kernels, level: float) -> None:
        """The rest of the filling through the compiled loop (same rounds as :meth:`_pass`)."""
        K, L = self.K, self.L
        if self._scratch is None:
            self._scratch = (np.zeros(K, np.int64), np.zeros(K, np.int64), np.zeros(K),
                             np.zeros(K, np.int64), np.zeros(K, np.int64),
                             np.zeros(L, np.int64), np.zeros(L),
                             np.zeros(L, np.int64), np.zeros(L, np.int64), np.zeros(L, np.int64))
        n, stamp0 = self.n_left, self._stamp
        levels_out = np.empty(n)
        new_out = np.empty(n, dtype=np.int32 if self.P.shape[0] < 2**31 else np.int64)
        P, Pc, Q, Qc = self.P, self.Pc, self.Q, self.Qc
        n_rounds, n_new, work, self._stamp, status = kernels.fill(
            P.indptr, P.indices, P.data, Pc.indptr, Pc.indices,
            Q.indptr, Q.indices, Q.data, Qc.indptr, Qc.indices,
            self.cap, self.w, self.mw,
            self.frozen, self.freeze_round, self.rate, self.bottleneck, self.piece_cnt,
            self.link_cnt, self.aw, self.used, self.sat_at,
            float(self.rel_tol), float(level), len(self.levels), n, compiled._KERNEL_WINDOW,
            self.bottlenecks, self.unit_rows, *self._scratch, self._stamp, levels_out, new_out,
            self.kernel_stats)
        # Loads only grew: the peak over the rounds is the final load on the links
        # the rounds touched (stamped after stamp0), as the numpy path has it.
        hit = np.flatnonzero(self._scratch[5] > stamp0)
        self.peak[hit] = np.maximum(self.peak[hit], self.used[hit] * self.inv_cap[hit])
        self.levels.extend(levels_out[:n_rounds].tolist())
        self.rounds += n_rounds
        self.n_left -= n_new
        self.work += work
        self.changed.append(new_out[:n_new])
        self.window = None  # the numpy passes' window no longer matches
        if status:  # pragma: no cover - _check_routable rules this out
            raise RuntimeError(f"{self.n_left} flows left with no capacity-limited link")

    def _candidates(self):
        """Window links sorted by (level, id), and a level no link outside reaches.

        The window holds the lowest-level links when built (one O(L) partition);
        freezing only raises levels, so until a retirement lowers some, a link
        outside it stays at or above ``out`` and the window is reused, shrinking
        as its links saturate or rise past ``out``.
        """
        fresh = self.window is None
        if fresh:
            L = self.L
            k = max(self.window_k, 2 * self.batch)
            if k >= L:
                idx, out = np.arange(L), np.inf
            else:
                part = np.argpartition(self.sat_at, k)
                idx, out = part[:k], float(self.sat_at[part[k]])
            # Roundoff may leave a refreshed level a few ulps under its old value.
            self.window, self.window_out = idx, out * (1.0 - 8 * np.finfo(np.float64).eps)
        out = self.window_out
        vals = self.sat_at[self.window]
        keep = vals < out
        idx, vals = self.window[keep], vals[keep]
        if fresh:
            order = np.lexsort((idx, vals))
        else:
            # Kept in order since built; only the links a pass touched moved (up):
            # a stable sort of nearly sorted values is about linear.
            order = np.argsort(vals, kind="stable")
        idx, vals = idx[order], vals[order]
        self.window = idx
        return idx, vals, out, fresh

    def _pass(self, level: float) -> float:
        """One batch of rounds (see :meth:`run`); returns the last round's level."""
        K, L = self.K, self.L
        while True:
            links, vals, out, fresh = self._candidates()
            b = self.batch
            if links.size < b and not fresh and out < np.inf:
                self.window = None  # running low: a fresh window holds more
                continue
            if links.size > b:
                links, vals, out = links[:b], vals[:b], float(vals[b])
            if links.size and vals[0] * (1.0 + self.rel_tol) < out:
                break
            # Not one complete round: widen the batch, rebuild the window (wider
            # when a fresh one was too narrow: more tied links than it holds).
            if links.size >= b:
                self.batch = min(L, 4 * b)
            elif not fresh:
                self.window = None
            elif self.window_k < L:
                self.window, self.window_k = None, min(L, 4 * max(self.window_k, b))
            else:  # pragma: no cover - _check_routable rules this out
                raise RuntimeError(f"{self.n_left} flows left with no capacity-limited link")
        n = links.size
        # Live pieces on the candidate links, in candidate order, and the first
        # candidate each piece appears on: its flows freeze in that one's round.
        pos, cnt = _row_positions(self.Qc.indptr, links)
        pieces = self.Qc.indices[pos].astype(np.int64)
        ppos = np.repeat(np.arange(n), cnt)
        keep = self.piece_cnt[pieces] > 0
        pieces, ppos = pieces[keep], ppos[keep]
        upieces, first = np.unique(pieces, return_index=True)
        upos = ppos[first]
        up_len = self.Pc.indptr[upieces + 1] - self.Pc.indptr[upieces]
        ent = np.bincount(upos, weights=up_len, minlength=n)
        cum = np.cumsum(ent)
        r0 = int(np.searchsorted(vals, vals[0] * (1.0 + self.rel_tol), side="right"))
        if cum[r0 - 1] >= min(self.big, max(self.budget, self.big / 8)):
            # A first round over the look-ahead budget goes alone (a big one through
            # whole-matrix products): no look-ahead gathers for it.
            return self._one_round(links[:r0], max(level, float(vals[0])))
        # Bound the work spent looking ahead: candidates up to ``budget`` flow
        # entries (round 0 whole), so big rounds do not drag in thousands.
        if n > 1 and cum[-1] > self.budget:
            n_keep = max(int(np.searchsorted(cum, self.budget, side="right")), r0, 1)
            if n_keep < n:
                out = float(vals[n_keep])
                n, links, vals, ent = n_keep, links[:n_keep], vals[:n_keep], ent[:n_keep]
                sel = ppos < n
                pieces, ppos = pieces[sel], ppos[sel]
                sel = upos < n
                upieces, upos, up_len = upieces[sel], upos[sel], up_len[sel]
        # Unfrozen flows of each piece, at the earliest candidate they come under.
        fpos_, fcnt = _row_positions(self.Pc.indptr, upieces)
        flows = self.Pc.indices[fpos_]
        fq = np.repeat(upos, fcnt)
        fpiece = np.repeat(np.arange(upieces.size), fcnt)
        keep = ~self.frozen[flows]
        flows, fq, fpiece = flows[keep], fq[keep], fpiece[keep]
        order = np.argsort(fq, kind="stable")
        dflows, dfirst = np.unique(flows[order], return_index=True)
        dq = fq[order][dfirst]
        # Per link, the earliest candidate whose flows touch it; per piece, the
        # candidate after which none of its flows is left unfrozen (if any).
        tpos, tcnt = _row_positions(self.P.indptr, dflows)
        tp = self.P.indices[tpos]
        tq_p = np.repeat(dq, tcnt)
        tpos2, tcnt2 = _row_positions(self.Q.indptr, tp)
        tl = self.Q.indices[tpos2]
        touch, pmax, pcnt = self._touch, self._pmax, self._pcnt
        np.minimum.at(touch, tl, np.repeat(tq_p, tcnt2))
        tq = touch[links].tolist()
        touch[tl] = 1 << 62  # reset the scratch arrays
        np.maximum.at(pmax, tp, tq_p)
        np.add.at(pcnt, tp, 1)
        dies = np.where(pcnt[pieces] == self.piece_cnt[pieces], pmax[pieces], 1 << 62)
        pmax[tp] = -1
        pcnt[tp] = 0
        # A candidate dies (its count drops to 0) after the candidate where its last
        # live piece empties: from then on it is skipped, not a dependency.
        kill = np.full(n, -1, dtype=np.int64)
        np.maximum.at(kill, ppos, dies)
        # Walk the candidates in order: rounds exactly as the one-at-a-time filling.
        lab = [-1] * n
        kill, ent, vl = kill.tolist(), ent.tolist(), vals.tolist()
        tol1, big = 1.0 + self.rel_tol, self.big
        lv: list[float] = []
        r, start, thr, r_ent, q = -1, 0, -np.inf, 0.0, 0
        for q in range(n):
            v = vl[q]
            if r >= 0 and v <= thr:  # within the current round
                if tq[q] < start:
                    if kill[q] < start:
                        continue  # dead by then
                    r -= 1  # touched and alive: its level moved; drop this round
                    lv.pop()
                    break
                lab[q] = r
                r_ent += ent[q]
                continue
            if r >= 0 and r_ent >= big:  # a big round goes alone, through matvecs
                if r >= 1:
                    r -= 1
                    lv.pop()
                break
            if tq[q] < q:
                if kill[q] < q:
                    continue
                break
            thr = v * tol1
            if thr >= out:
                break
            r, start, r_ent = r + 1, q, ent[q]
            level = max(level, v)  # roundoff must not let the fill level go backwards
            lv.append(level)
            lab[q] = r
        else:
            if r >= 1 and r_ent >= big:
                r -= 1
                lv.pop()
        n_rounds = r + 1
        lab = np.asarray(lab, dtype=np.int64)
        lab[lab >= n_rounds] = -1
        acc = lab >= 0
        # Each piece's bottleneck: the lowest-id accepted link of its round it lies on
        # (the one-at-a-time filling takes a round's links in id order).
        e_ok = acc[ppos]
        plink = self._plink
        np.minimum.at(plink, pieces[e_ok], links[ppos[e_ok]])
        up_link = plink[upieces]
        plink[pieces] = L
        rnd = len(self.levels)
        if n_rounds == 1:
            sel = lab[upos] == 0
            self.levels.append(lv[0])
            self.rounds += 1
            self.sat_at[links[acc]] = np.inf
            if int(up_len[sel].sum()) >= big:
                self._freeze_whole(upieces[sel], up_link[sel], rnd, lv[0])
            else:
                self._freeze_gather(upieces[sel], up_link[sel], rnd, lv[0])
        else:
            flab = lab[fq]
            sel = flab >= 0
            self._freeze_rounds(lv, rnd, links[acc], flows[sel], flab[sel],
                                up_link[fpiece[sel]])
        # Next batch: about twice the candidates and entries this pass used, more
        # if it used all.
        used_q = int(np.flatnonzero(acc)[-1]) + 1
        used_all = used_q >= n - 1
        self.batch = int(min(L, _MAX_BATCH, max(16, 4 * n if used_all else 2 * used_q)))
        used_ent = float(cum[min(used_q, cum.size) - 1])
        self.budget = min(max(self.big, _MIN_BUDGET),
                          max(_MIN_BUDGET, 4 * (self.budget if used_all else used_ent)))
        return lv[-1]

    def _one_round(self, sat: np.ndarray, level: float) -> float:
        """Saturate links ``sat`` (one round) and freeze their pieces' flows."""
        rnd = len(self.levels)
        self.levels.append(level)
        self.rounds += 1
        sat = np.sort(sat)
        self.sat_at[sat] = np.inf
        # Pieces touching a saturated link that still carry unfrozen flows: all
        # their flows cross that link and freeze now, so each is spent once.
        pos, cnt = _row_positions(self.Qc.indptr, sat)
        pieces = self.Qc.indices[pos].astype(np.int64)
        plinks = np.repeat(sat, cnt)
        keep = self.piece_cnt[pieces] > 0
        pieces, plinks = pieces[keep], plinks[keep]
        if pieces.size > 1:
            pieces, first = np.unique(pieces, return_index=True)
            plinks = plinks[first]
        n_entries = int(np.sum(self.Pc.indptr[pieces + 1] - self.Pc.indptr[pieces]))
        if n_entries >= self.big:
            self._freeze_whole(pieces, plinks, rnd, level)
        else:
            self._freeze_gather(pieces, plinks, rnd, level)
        return level

    def _freeze_rounds(self, lv, rnd, sat, flows, flab, fblink):
        """Freeze several independent rounds at once (see :meth:`_pass`).

        ``flows`` (possibly repeated) are the unfrozen flows of each round,
        ``flab`` their round, ``fblink`` a saturated link of it they cross.
        """
        K, L = self.K, self.L
        n_ok = len(lv)
        self.levels.extend(lv)
        self.rounds += n_ok
        self.sat_at[sat] = np.inf
        lv = np.asarray(lv)
        if self.bottlenecks:
            self.bottleneck[flows] = fblink  # a repeated flow may take any of its links
        new, first = np.unique(flows, return_index=True)
        nlab = flab[first]
        self.frozen[new] = True
        self.freeze_round[new] = rnd + nlab
        self.rate[new] = self.w[new] * lv[nlab]
        self.changed.append(new)
        self.n_left -= new.size
        # Per (round, piece): weight and entry count of the newly frozen flows.
        pos, cnt = _row_positions(self.P.indptr, new)
        self.work += pos.size
        key, dp, dc = _group_sum(np.repeat(nlab, cnt) * K + self.P.indices[pos],
                                 self.P.data[pos] * np.repeat(self.mw[new], cnt), n_ok * K)
        pieces, plab = key % K, key // K
        touched = _unique(pieces, K)
        old = self.piece_cnt[touched]
        np.subtract.at(self.piece_cnt, pieces, dc)
        # Per (round, link): weight moved from active to frozen, applied round by round.
        pos, cnt = _row_positions(self.Q.indptr, pieces)
        lkey, dl, _ = _group_sum(np.repeat(plab, cnt) * L + self.Q.indices[pos],
                                 self.Q.data[pos] * np.repeat(dp, cnt), n_ok * L)
        links, llab = lkey % L, lkey // L
        np.subtract.at(self.aw, links, dl)
        np.add.at(self.used, links, lv[llab] * dl)
        links = _unique(links, L)
        self.peak[links] = np.maximum(self.peak[links], self.used[links] * self.inv_cap[links])
        self._pieces_changed(touched, self.piece_cnt, old, self.link_cnt, -1)
        self.aw[links[self.link_cnt[links] == 0]] = 0.0
        self._refresh(links)

    def _freeze_gather(self, pieces, plinks, rnd, level):
        """Freeze the flows of ``pieces`` through their rows only."""
        pos, cnt = _row_positions(self.Pc.indptr, pieces)
        flows = self.Pc.indices[pos]
        keep = ~self.frozen[flows]
        flows = flows[keep]
        if self.bottlenecks:
            # A flow under several spent pieces may take any of their links.
            self.bottleneck[flows] = np.repeat(plinks, cnt)[keep]
        new = _unique(flows, self.P.shape[0])
        self.frozen[new] = True
        self.freeze_round[new] = rnd
        self.rate[new] = self.w[new] * level
        self.changed.append(new)
        self.n_left -= new.size
        touched, dp, dc = self._per_piece(new, self.mw[new])
        old = self.piece_cnt[touched]
        self.piece_cnt[touched] -= dc
        links, dl, _ = self._to_links(touched, dp)
        self.aw[links] -= dl
        self.used[links] += level * dl
        self.peak[links] = np.maximum(self.peak[links], self.used[links] * self.inv_cap[links])
        self._pieces_changed(touched, self.piece_cnt, old, self.link_cnt, -1)
        self.aw[links[self.link_cnt[links] == 0]] = 0.0
        self._refresh(links)  # the dead pieces' links are among them

    def _freeze_whole(self, pieces, plinks, rnd, level):
        """Freeze the flows of ``pieces`` with whole-matrix products (a big round)."""
        P, Q, K, L = self.P, self.Q, self.K, self.L
        hit = np.zeros(K)
        hit[pieces] = 1.0
        new_mask = (P @ hit > 0) & ~self.frozen
        new = np.flatnonzero(new_mask)
        if self.bottlenecks:
            link_of = np.full(K, L, dtype=np.int32 if L < 2**31 - 1 else np.int64)
            link_of[pieces] = plinks
            first_link = _segment_reduce(np.minimum, P.indptr, link_of[P.indices], L,
                                         nonempty=True)
            self.bottleneck[new] = first_link[new]
        self.frozen |= new_mask
        self.freeze_round[new] = rnd
        self.rate[new] = self.w[new] * level
        self.changed.append(new)
        self.n_left -= new.size
        d_link = Q.T @ (P.T @ np.where(new_mask, self.mw, 0.0))
        self.used += level * d_link
        np.maximum(self.peak, self.used * self.inv_cap, out=self.peak)
        if self.n_left == 0:  # everything frozen: the counts are known without a pass
            self.piece_cnt[:] = 0
            self.link_cnt[:] = 0
            self.aw[:] = 0.0
            self.sat_at[:] = np.inf
            return
        if self.n_left * 4 < self.P.shape[0]:
            # Few flows left: count their entries rather than scan every piece.
            pos, _ = _row_positions(P.indptr, np.flatnonzero(~self.frozen))
            self.piece_cnt = np.bincount(P.indices[pos], minlength=K).astype(np.int64)
        else:
            self.piece_cnt = _count_alive(self.Pc, ~self.frozen)
        self.link_cnt = self._link_count(self.piece_cnt)
        self.aw -= d_link
        self.aw[self.link_cnt == 0] = 0.0
        self._refresh(np.arange(L))

    # ----------------------------------------------------------------- results

    def take_changed(self) -> np.ndarray:
        """Rows frozen (given a rate) since the last call."""
        out = np.concatenate(self.changed) if self.changed else np.zeros(0, dtype=np.int64)
        self.changed = []
        return out


def maxmin_rates(flow_piece, piece_link, capacity_Bps, *, weights=None, multiplicity=None,
                 rel_tol: float = 1e-9) -> Rates:
    """Weighted max-min fair rates of fixed-split flows, by progressive filling.

    Parameters
    ----------
    flow_piece : sparse matrix, shape (F, K)
        Share of each flow's rate on each piece (nonnegative; CSR preferred).
    piece_link : sparse matrix, shape (K, L)
        Share of each piece on each link (nonnegative; CSR preferred).
    capacity_Bps : array_like, shape (L,)
        Link capacities, bytes/s; ``inf`` marks an unlimited link.
    weights : array_like, shape (F,), optional
        Positive per-flow weights (default 1).
    multiplicity : array_like, shape (F,), optional
        Positive number of identical flows each row stands for (default 1).
    rel_tol : float, optional
        Links whose saturation levels are within this relative distance of the
        lowest saturate in the same round.

    Returns
    -------
    Rates
        Per-flow rate (bytes/s, for one flow of the row), a bottleneck link per
        flow, and the number of filling rounds.

    Raises
    ------
    ValueError
        On mismatched shapes, negative entries, or flows that cross no
        capacity-limited link (remove unroutable flows first).

    Notes
    -----
    All unfrozen flows grow at ``weights[f] * t``; when a link's capacity is
    used up, every unfrozen flow crossing it (``A[f, l] > 0``) freezes at that
    level.  Independent rounds are frozen together (see the module notes);
    ``A = flow_piece @ piece_link`` is never formed.

    Examples
    --------
    >>> import numpy as np, scipy.sparse as sp
    >>> one_link = sp.csr_array(np.ones((1, 1)))
    >>> r = maxmin_rates(sp.csr_array(np.ones((3, 1))), one_link, [90.0])
    >>> r.rate_Bps.tolist(), r.n_levels
    ([30.0, 30.0, 30.0], 1)
    """
    P, Q, cap = _prepare(flow_piece, piece_link, capacity_Bps)
    F = P.shape[0]
    w = _per_flow(weights, F, "weights", positive=True)
    m = _multiplicity(multiplicity, F)
    if not (np.isfinite(rel_tol) and rel_tol >= 0):
        raise ValueError(f"rel_tol={rel_tol!r} must be a finite number >= 0")
    _check_routable(P, Q, cap)
    lg, Qf, Qfc, capf = _constraints(Q, cap)
    # the filling's rows, regrouped for the compiled filling (see _row_order)
    unit = _unit(P)
    order, _, P, col_ptr, (w, m) = _regrouped(P, Qf, capf, unit, w, m)
    fill = _Fill(P, Qf, Qfc, capf, w, m, rel_tol, unit=unit, col_ptr=col_ptr)
    fill.run()
    rate, bottleneck = fill.rate, fill.bottleneck
    if order is not None:   # back to the caller's rows, and links (one compiled pass)
        rate, bottleneck = np.empty(F), np.empty(F, np.int64)
        _kernel_module().unpermute(order, fill.rate, fill.bottleneck,
                                   lg.rep if lg is not None else np.zeros(0, np.int64), rate, bottleneck)
    elif lg is not None and bottleneck.size and bottleneck.min() >= 0:
        np.take(lg.rep, bottleneck, out=bottleneck, mode="clip")  # in place: ids are < G
    elif lg is not None:
        bottleneck = np.where(bottleneck >= 0, lg.rep[np.maximum(bottleneck, 0)], -1)
    return Rates(rate_Bps=_readonly(rate), bottleneck_link=_readonly(bottleneck),
                 n_levels=len(fill.levels))


def _warm_up() -> bool:
    """Load the compiled filling now (compile it, the first time on a machine).

    Benchmarks call it to time the one-off cost apart from the solve; returns
    whether the kernel is available.
    """
    kernels = _kernel_module()
    if kernels is not None:
        for idx in (np.int32, np.int64):   # scipy's two index types: one specialization each
            one = sp.csr_array((np.ones(1), np.zeros(1, idx), np.arange(2, dtype=idx)), shape=(1, 1))
            # what a filling of many rows runs: _row_order, _columns, the filling, unpermute
            _, _, _, _, ptr = _row_order(one, one, np.ones(1), True, np.ones(1), force=True)
            fill = _Fill(one, one, one.tocsc(), np.ones(1), np.ones(1), np.ones(1), 1e-9)
            for known in (None, ptr):
                fill.Pc = _columns(one, fill.mw, True, ptr=known, force=True)
            fill._run_kernel(kernels, 0.0)
            kernels.unpermute(np.zeros(1, idx), fill.rate, fill.bottleneck, np.zeros(1, np.int64),
                              np.empty(1), np.empty(1, np.int64))
    return kernels is not None
