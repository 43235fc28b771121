"""The solver's frozen results: :class:`Rates`, :class:`FlowResult`, :class:`Bound`.

Their arrays are read-only (:func:`_readonly`), so a result can be shared without a copy.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

@dataclass(frozen=True)
class Rates:
    """Max-min fair rates (see :func:`maxmin_rates`).

    Attributes
    ----------
    rate_Bps : ndarray, shape (F,)
        Rate of one flow of each row, bytes/s.
    bottleneck_link : ndarray of int64, shape (F,)
        A saturated link on which the flow was frozen.
    n_levels : int
        Progressive-filling rounds (distinct bottleneck levels, up to ``rel_tol``).
    """

    rate_Bps: np.ndarray
    bottleneck_link: np.ndarray
    n_levels: int


@dataclass(frozen=True)
class FlowResult:
    """Completion times of a phase of flows (see :func:`simulate`).

    Attributes
    ----------
    time_s : float
        Time the last flow finishes.
    finish_s : ndarray, shape (F,)
        Finish time of each flow row.
    events : int
        Retirement events (rate solves).
    n_levels : int
        Filling rounds computed over all events (rounds redone after a
        retirement count again).
    link_bytes : ndarray, shape (L,)
        Bytes carried by each link over the phase.
    link_busy_s : ndarray, shape (L,)
        Time during which each link carried traffic (until the last flow
        crossing it finished).
    peak_utilization : ndarray, shape (L,)
        Maximum over events of load / capacity (0 for unlimited links).
    utilization : ndarray, shape (L,)
        Average utilization over the phase, ``link_bytes / (capacity * time_s)``.
    first_rates_Bps : ndarray, shape (F,)
        Rates of the first event (all flows present).
    bound_s : float
        The link-load lower bound (:func:`link_load_bound`); ``time_s >= bound_s``.
    """

    time_s: float
    finish_s: np.ndarray
    events: int
    n_levels: int
    link_bytes: np.ndarray
    link_busy_s: np.ndarray
    peak_utilization: np.ndarray
    utilization: np.ndarray
    first_rates_Bps: np.ndarray
    bound_s: float


@dataclass(frozen=True)
class Bound:
    """Link-load lower bound (see :func:`link_load_bound`).

    Attributes
    ----------
    time_s : float
        Max over links of bytes / capacity.
    link_bytes : ndarray, shape (L,)
        Bytes each link must carry.
    busiest_link : int
        The link attaining ``time_s`` (0 when nothing moves).
    """

    time_s: float
    link_bytes: np.ndarray
    busiest_link: int


def _readonly(a: np.ndarray) -> np.ndarray:
    a.flags.writeable = False
    return a
