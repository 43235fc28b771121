"""Retiring flows from a filling: what :func:`~.events.simulate`'s event loop does to it (private).

:class:`_Retire` is mixed into :class:`~.fill._Fill` and keeps the event loop's state:
which rows are present (``gone``: retired, or empty from the start), exact counts of
present entries per piece and of live pieces per link (``alive_piece_cnt``,
``alive_link_cnt``: a link whose count drops to 0 is idle) and when each link went idle
(``busy_until``).  :meth:`_Retire.retire` rolls the filling back to the first round a
retired row froze in; :meth:`_Retire.drop` and :meth:`_Retire.finish_all` retire rows that
reopen nothing, with no rollback; :meth:`_Retire.compact` drops retired rows.
"""
from __future__ import annotations

import numpy as np

from .segments import _count_alive, _row_positions, _segment_reduce, _unique

# simulate's incremental rollbacks recompute the per-link sums exactly once
# their work since the last recomputation reaches this share of all entries:
# roundoff cannot pile up over many events, at O(1) amortised cost.
_RESYNC_SHARE = 1.0


class _Retire:
    """Rows retiring from a progressive filling (mixed into :class:`~.fill._Fill`, private).

    The filling calls :meth:`_init_present` when built and :meth:`_resync_present` from
    its exact recomputation; the rest is called by :func:`~.events.simulate`.  Retired
    rows count as frozen with rate 0.
    """

    def _init_present(self, F: int, gone: np.ndarray | None) -> None:
        """Rows present (not ``gone``: retired, or empty from the start) and the links' clocks."""
        # Time each link's last present flow finished (set by retire's caller clock).
        self.busy_until = np.zeros(self.L)
        self.gone = np.zeros(F, dtype=bool) if gone is None else gone.copy()

    def _resync_present(self, is_open: np.ndarray) -> None:
        """Exact counts of present entries per piece and live pieces per link (in ``_resync``)."""
        # Same for every row still present, frozen or not: a link whose count
        # drops to 0 carries nothing, whatever roundoff ``used`` holds.
        if self.gone.any():
            self.alive_piece_cnt = _count_alive(self.Pc, ~self.gone)
            self.alive_link_cnt = self._link_count(self.alive_piece_cnt)
        else:
            self.alive_piece_cnt = np.diff(self.Pc.indptr).astype(np.int64)
            self.alive_link_cnt = self.link_cnt.copy() if is_open.all() else \
                self._link_count(self.alive_piece_cnt)

    def _entries(self, rows: np.ndarray) -> int:
        """Stored entries of ``rows`` (an index array)."""
        indptr = self.P.indptr
        return int(np.sum(indptr[rows + 1] - indptr[rows]))

    def retire(self, done: np.ndarray, now: float) -> tuple[np.ndarray, np.ndarray]:
        """Remove rows ``done`` (finished at ``now``) and roll back the rounds they took part in.

        Returns the reopened rows and the rates they had until now.
        """
        r_star = int(self.freeze_round[done].min())
        self.gone[done] = True
        self.freeze_round[done] = -1
        reopen = np.flatnonzero(self.freeze_round >= r_star)
        old_rate = self.rate[reopen]
        n_entries = self._entries(done) + self._entries(reopen)
        if n_entries >= self.big_rollback or self.work + n_entries >= self.resync_cost * _RESYNC_SHARE:
            # A large rollback, or enough incremental updates to owe an exact
            # recomputation: both cost O(nnz).
            carried = self.alive_link_cnt > 0
            self._forget(done, reopen)
            self._resync()
            self.busy_until[carried & (self.alive_link_cnt == 0)] = now
        else:
            # Retired and reopened rows both drop their frozen load; reopened ones
            # grow again, so their weight and counts come back.
            both = np.concatenate([done, reopen])
            pieces, dload, _ = self._per_piece(both, self.m[both] * self.rate[both])
            links_load, dl, _ = self._to_links(pieces, dload)
            self.used[links_load] -= dl
            pieces_d, _, dc = self._per_piece(done, None)
            old = self.alive_piece_cnt[pieces_d]
            self.alive_piece_cnt[pieces_d] -= dc
            self._pieces_changed(pieces_d, self.alive_piece_cnt, old, self.alive_link_cnt, -1)
            # Links whose last present flow just left: idle from now on, load exactly 0.
            idle = links_load[self.alive_link_cnt[links_load] == 0]
            self.used[idle] = 0.0
            self.busy_until[idle] = now
            links_open = np.zeros(0, dtype=np.int64)
            if reopen.size:
                pieces_r, dw, dc = self._per_piece(reopen, self.mw[reopen])
                old = self.piece_cnt[pieces_r]
                self.piece_cnt[pieces_r] += dc
                self._pieces_changed(pieces_r, self.piece_cnt, old, self.link_cnt, +1)
                links_open, dl, _ = self._to_links(pieces_r, dw)
                self.aw[links_open] += dl
            self._forget(done, reopen)
            self._refresh(_unique(np.concatenate([links_load, links_open]), self.L))
            self.window = None  # levels may have dropped
        del self.levels[r_star:]
        self.n_left = int(reopen.size)
        return reopen, old_rate

    def reopens(self, done: np.ndarray) -> bool:
        """Whether retiring rows ``done`` reopens any other row (see :meth:`retire`)."""
        r_star = int(self.freeze_round[done].min())
        return int(np.count_nonzero(self.freeze_round >= r_star)) > done.size

    def drop(self, done: np.ndarray, at: np.ndarray) -> None:
        """Retire rows ``done`` (finishing at times ``at``) that reopen no other row.

        The same bookkeeping as :meth:`retire` without a rollback: their load
        leaves their links, and a link whose last present flow leaves is idle
        from that flow's finish time on.
        """
        r_star = int(self.freeze_round[done].min())
        n_entries = self._entries(done)
        if n_entries >= self.big_rollback and at.size and at.min() == at.max():
            # Most of the matrix at one time: recompute exactly (matvecs) rather
            # than gather every entry, as retire does for a large rollback.
            carried = self.alive_link_cnt > 0
            self.gone[done] = True
            self._forget(done, done[:0])
            self._resync()
            self.busy_until[carried & (self.alive_link_cnt == 0)] = at[0]
            del self.levels[r_star:]
            self.n_left = 0
            return
        self.gone[done] = True
        pieces, dload, dc = self._per_piece(done, self.m[done] * self.rate[done])
        links, dl, _ = self._to_links(pieces, dload)
        self.used[links] -= dl
        old = self.alive_piece_cnt[pieces]
        self.alive_piece_cnt[pieces] -= dc
        self._pieces_changed(pieces, self.alive_piece_cnt, old, self.alive_link_cnt, -1)
        idle = links[self.alive_link_cnt[links] == 0]
        if idle.size and at.min() == at.max():
            self.used[idle] = 0.0
            self.busy_until[idle] = at[0]
        elif idle.size:
            self.used[idle] = 0.0
            # Each link's last finish: per piece first, then per link (a piece's
            # links are not expanded once per flow).
            pos, cnt = _row_positions(self.P.indptr, done)
            piece_last = np.zeros(self.K)
            np.maximum.at(piece_last, self.P.indices[pos], np.repeat(at, cnt))
            pos2, cnt2 = _row_positions(self.Q.indptr, pieces)
            last = np.zeros(self.L)
            np.maximum.at(last, self.Q.indices[pos2], np.repeat(piece_last[pieces], cnt2))
            self.busy_until[idle] = last[idle]
        self._forget(done, done[:0])
        del self.levels[r_star:]
        self.n_left = 0
        if self.work >= self.resync_cost * _RESYNC_SHARE:
            self._resync()
        else:
            self._refresh(links)
            self.window = None

    def finish_all(self, done: np.ndarray, at: np.ndarray) -> None:
        """Retire every present row at once, ``done`` finishing at times ``at``.

        What :meth:`drop` leaves after a run of quiet events that ends the phase:
        each link that carried one of them is busy until the last of them finishes.
        """
        row_at = np.zeros(self.P.shape[0])
        row_at[done] = at
        piece_last = _segment_reduce(np.maximum, self.Pc.indptr, row_at[self.Pc.indices], 0.0)
        last = _segment_reduce(np.maximum, self.Qc.indptr, piece_last[self.Qc.indices], 0.0)
        carried = self.alive_link_cnt > 0
        self.busy_until[carried] = last[carried]
        self.alive_link_cnt[:] = 0
        self.alive_piece_cnt[:] = 0
        self.gone[done] = True   # the filling is over: rates stay as they were
        self.n_left = 0

    def _forget(self, done, reopen):
        for rows in (done, reopen):
            self.rate[rows] = 0.0
            self.freeze_round[rows] = -1
            self.bottleneck[rows] = -1
        self.frozen[reopen] = False

    def compact(self) -> np.ndarray:
        """Drop retired rows (once they are the majority); return the kept row ids."""
        if self.changed:
            raise RuntimeError("compact() before take_changed() would lose row ids")
        keep = np.flatnonzero(~self.gone)
        self._set_rows(self.P[keep], self.w[keep], self.m[keep])
        for name in ("gone", "frozen", "freeze_round", "rate", "bottleneck"):
            setattr(self, name, getattr(self, name)[keep])
        return keep
