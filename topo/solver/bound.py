"""The link-load lower bound: the busiest link's bytes / capacity (:func:`link_load_bound`)."""
from __future__ import annotations

import numpy as np

from .inputs import _per_flow, _prepare
from .results import Bound, _readonly

def link_load_bound(flow_piece, piece_link, capacity_Bps, size_bytes, *,
                    multiplicity=None) -> Bound:
    """Busiest link's bytes / capacity: a lower bound on any schedule's time.

    Parameters
    ----------
    flow_piece, piece_link, capacity_Bps
        As in :func:`maxmin_rates`.
    size_bytes : array_like, shape (F,)
        Bytes of one flow of each row.
    multiplicity : array_like, shape (F,), optional
        Identical flows per row (default 1).

    Returns
    -------
    Bound
        ``time_s`` (inf when a zero-capacity link must carry bytes), bytes per
        link, and the busiest link.

    Examples
    --------
    >>> import numpy as np, scipy.sparse as sp
    >>> b = link_load_bound(sp.csr_array(np.ones((2, 1))), sp.csr_array(np.ones((1, 1))),
    ...                     [10.0], [5.0, 15.0])
    >>> b.time_s, b.busiest_link
    (2.0, 0)
    """
    P, Q, cap = _prepare(flow_piece, piece_link, capacity_Bps)
    F = P.shape[0]
    size = _per_flow(size_bytes, F, "size_bytes", positive=False)
    m = _per_flow(multiplicity, F, "multiplicity", positive=True)
    return _bound(P, Q, cap, m * size)


def _bound(P, Q, cap, bytes_per_row) -> Bound:
    link_bytes = Q.T @ (P.T @ bytes_per_row)
    with np.errstate(divide="ignore", invalid="ignore"):
        t = np.where(link_bytes > 0, link_bytes / cap, 0.0)
    busiest = int(np.argmax(t)) if t.size else 0
    time_s = float(t[busiest]) if t.size else 0.0
    return Bound(time_s=time_s, link_bytes=_readonly(link_bytes), busiest_link=busiest)
