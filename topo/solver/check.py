"""The max-min certificate: :func:`check_maxmin` turns rates into readable findings."""
from __future__ import annotations

import numpy as np

from .inputs import _per_flow, _prepare
from .segments import _segment_reduce

# Findings listed one by one before check_maxmin summarises the rest.
_MAX_FINDINGS = 10


def check_maxmin(flow_piece, piece_link, capacity_Bps, rate_Bps, *, weights=None,
                 multiplicity=None, rtol: float = 1e-7) -> list[str]:
    """Check rates against capacity and the max-min certificate.

    Parameters
    ----------
    flow_piece, piece_link, capacity_Bps, weights, multiplicity
        As in :func:`maxmin_rates`.
    rate_Bps : array_like, shape (F,)
        Rates to check (per single flow of each row).
    rtol : float, optional
        Relative tolerance of every comparison.

    Returns
    -------
    list of str
        One finding per violating link or flow (the first few of each kind, then
        a count of the rest); empty when the rates are max-min fair.

    Notes
    -----
    Rates are weighted max-min fair exactly when no link is over capacity and
    every flow crosses a saturated link on which its ``rate / weight`` is the
    largest among the flows crossing it.  The per-link maximum is computed
    factored: per piece over its flows, then per link over its pieces.

    Examples
    --------
    >>> import numpy as np, scipy.sparse as sp
    >>> P, Q = sp.csr_array(np.ones((2, 1))), sp.csr_array(np.ones((1, 1)))
    >>> check_maxmin(P, Q, [10.0], [5.0, 5.0])
    []
    >>> check_maxmin(P, Q, [10.0], [4.0, 6.0])
    ['flow 0 (4 B/s) has no saturated link on which its rate/weight is the largest']
    """
    P, Q, cap = _prepare(flow_piece, piece_link, capacity_Bps)
    F = P.shape[0]
    w = _per_flow(weights, F, "weights", positive=True)
    m = _per_flow(multiplicity, F, "multiplicity", positive=True)
    rate = _per_flow(rate_Bps, F, "rate_Bps", positive=False)
    findings: list[str] = []

    load = Q.T @ (P.T @ (m * rate))
    finite = np.isfinite(cap)
    over = np.flatnonzero(finite & (load > cap * (1.0 + rtol)))
    for l in over[:_MAX_FINDINGS]:
        findings.append(f"link {int(l)} carries {load[l]:.6g} B/s, over its capacity "
                        f"{cap[l]:.6g} B/s")
    if over.size > _MAX_FINDINGS:
        findings.append(f"... and {over.size - _MAX_FINDINGS} more links over capacity")

    level = rate / w
    Pc, Qc = P.tocsc(), Q.tocsc()
    piece_max = _segment_reduce(np.maximum, Pc.indptr, level[Pc.indices], -np.inf)
    link_max = _segment_reduce(np.maximum, Qc.indptr, piece_max[Qc.indices], -np.inf)
    saturated = finite & (load >= cap * (1.0 - rtol))
    # Smallest per-link maximum among the saturated links each flow crosses:
    # the flow is certified when its own level reaches it.
    cert = np.where(saturated, link_max, np.inf)
    piece_cert = _segment_reduce(np.minimum, Q.indptr, cert[Q.indices], np.inf)
    flow_cert = _segment_reduce(np.minimum, P.indptr, piece_cert[P.indices], np.inf)
    bad = np.flatnonzero(~(flow_cert <= level * (1.0 + rtol)))
    for f in bad[:_MAX_FINDINGS]:
        findings.append(f"flow {int(f)} ({rate[f]:.6g} B/s) has no saturated link on which "
                        f"its rate/weight is the largest")
    if bad.size > _MAX_FINDINGS:
        findings.append(f"... and {bad.size - _MAX_FINDINGS} more flows without a bottleneck")
    return findings
