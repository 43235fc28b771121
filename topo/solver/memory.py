"""Memory guard: :func:`estimate_memory_bytes` of a flow-level problem and :func:`guard_memory`,
which refuses one that would not fit (:class:`~fabricsim.topo.errors.TooLarge`)."""
from __future__ import annotations

from ..errors import TooLarge

_GIB = 1024.0**3


def estimate_memory_bytes(*, n_flows: int, nnz_flow_piece: int, n_pieces: int,
                          nnz_piece_link: int, n_links: int) -> int:
    """Conservative peak memory of :func:`simulate` on a problem of this size.

    Parameters
    ----------
    n_flows, nnz_flow_piece, n_pieces, nnz_piece_link, n_links : int
        Rows and stored entries of ``flow_piece`` and ``piece_link``, and links.

    Returns
    -------
    int
        Bytes.

    Notes
    -----
    Per stored flow-piece entry (78 bytes): the caller's CSR and its rows
    regrouped for the compiled filling (12 bytes each: float64 value, int32
    index), the solver's column structure (4), the compacted survivors' rows in
    :func:`simulate` (at most half of that again), and the temporaries of a round
    that freezes most flows at once (~36 bytes: gathered link keys, masks,
    running counts, int64 gather positions).  Per flow 28 float64-sized vectors
    (rates, sizes, finish times, weights and their regrouped copies, masks, row
    lengths, the row order and matrix-vector results); per piece and per link 16.
    Measured peak RSS of the benchmark cases (inputs included) is 54-70 % of the
    estimate before the regrouped copy was added (72 bytes, 24 vectors).

    Examples
    --------
    >>> estimate_memory_bytes(n_flows=10, nnz_flow_piece=20, n_pieces=5,
    ...                       nnz_piece_link=10, n_links=4) > 0
    True
    """
    for name, v in (("n_flows", n_flows), ("nnz_flow_piece", nnz_flow_piece),
                    ("n_pieces", n_pieces), ("nnz_piece_link", nnz_piece_link),
                    ("n_links", n_links)):
        if int(v) != v or v < 0:
            raise ValueError(f"{name}={v!r} must be a nonnegative integer")
    per_entry = 2 * 12 + 4 + 14 + 36
    total = ((int(nnz_flow_piece) + int(nnz_piece_link)) * per_entry
             + int(n_flows) * 28 * 8
             + (int(n_pieces) + int(n_links)) * 16 * 8
             + (1 << 20))
    return int(total)


def _available_bytes() -> float:
    """MemAvailable from /proc/meminfo, or 8 GiB when it cannot be read."""
    try:
        with open("/proc/meminfo") as fh:
            for line in fh:
                if line.startswith("MemAvailable:"):
                    return float(line.split()[1]) * 1024.0
    except OSError:
        pass
    return 8.0 * _GIB


def guard_memory(estimate_bytes: int, *, limit_bytes: int | None = None,
                 n_flows: int | None = None) -> None:
    """Raise :class:`TooLarge` when a flow-level problem would not fit in memory.

    Parameters
    ----------
    estimate_bytes : int
        From :func:`estimate_memory_bytes`.
    limit_bytes : int, optional
        Budget; default 60 % of ``MemAvailable`` (8 GiB when unreadable), so
        the machine keeps room for everything else.
    n_flows : int, optional
        Named in the message when given.

    Raises
    ------
    TooLarge
        Naming the estimate, the budget and the cheaper link-load bound.

    Examples
    --------
    >>> guard_memory(1000, limit_bytes=10_000)
    """
    if limit_bytes is None:
        limit_bytes = 0.6 * _available_bytes()
    if estimate_bytes > limit_bytes:
        flows = f" ({n_flows:,} flows)" if n_flows is not None else ""
        raise TooLarge(
            f"the flow-level problem needs ~{estimate_bytes / _GIB:.1f} GiB{flows} and only "
            f"{limit_bytes / _GIB:.1f} GiB is available; use the link-load bound "
            f"(--bound-only) instead")
