"""Symmetry quotients: a phase's flows folded into classes, and a fold's outcome with its reason.

:class:`Quotient` is what every policy's fold returns when a symmetry of fabric and
phase holds; :class:`Fold` wraps it with the fold's name and, when there is none, one
sentence why (what ``price --explain`` prints).  ``_fold`` and ``_uniform_within`` are
the link-orbit helpers the folds share.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import scipy.sparse as sp

__all__ = ["Quotient", "Fold", "FOLDS"]

# The folds, by the name ``Fold.method`` carries (and ``price --explain`` prints).
FOLDS = {
    "translations": "translations of an intact dimension-order torus (routing.torus.fold_translations)",
    "twins": "interchangeable chips within each all-to-all row (routing.ecmp.fold_twins)",
    "positions": "in-rack positions interchangeable in every rack at once (routing.leaf.fold_positions)",
    "stabilizer": "per-axis reflections and translations of a degraded dimension-order torus that map its "
                  "failed or unequal links onto themselves (routing.torus.fold_stabilizer)",
}


@dataclass(frozen=True)
class Quotient:
    """A phase's flows folded into classes under a symmetry of fabric and phase.

    Attributes
    ----------
    symmetry : str
        ``"translation"`` (a torus, :func:`translation_quotient`), ``"twins"``
        (interchangeable chips, :func:`twin_quotient`), ``"positions"`` (positions
        interchangeable in every rack at once, for fabrics that relay by position) or
        ``"stabilizer"`` (a degraded torus: the reflections and translations that fix
        its failures, :func:`~.torus.fold_stabilizer`; link orbits of varying size).
    period : tuple of int
        Translations and stabilizer: the translation step per torus axis (``t_i``; the
        ring length when only reflections, or nothing, fix that axis); empty for twins.
    multiplicity : numpy.ndarray of int64, shape (C,)
        Flows in each class.
    rep_src, rep_dst : numpy.ndarray of int64, shape (C,)
        Chip ranks of each class's representative flow.
    rep_row : numpy.ndarray of int64, shape (C,)
        Row (of the phase's ``rows``) holding the representative.
    routes : routing.Routes
        Routes of the representatives on the real links.
    piece_orbit : scipy.sparse.csr_matrix, shape (K, O)
        ``routes.piece_link`` with each link's column added onto its orbit's.
    link_orbit : numpy.ndarray of int64, shape (L,)
        Orbit of each link.
    orbit_size : numpy.ndarray of int64, shape (O,)
        Links in each orbit.
    row_orbit : numpy.ndarray of int64, shape (R,)
        Orbit of each row (rows of one orbit finish together).
    frame : dict
        Translations only: ``dims``, chip coordinates by rank (``coords_of_rank``), rank by
        flat position (``rank_of_pos``) and each link's source coordinates (``link_coords``),
        for :func:`flows_through`.
    """

    symmetry: str
    period: tuple
    multiplicity: np.ndarray
    rep_src: np.ndarray
    rep_dst: np.ndarray
    rep_row: np.ndarray
    routes: object
    piece_orbit: sp.csr_matrix
    link_orbit: np.ndarray
    orbit_size: np.ndarray
    row_orbit: np.ndarray
    frame: dict = field(default_factory=dict, repr=False, compare=False)

    @property
    def n_classes(self) -> int:
        return len(self.rep_src)

    @property
    def n_flows(self) -> int:
        return int(self.multiplicity.sum())

    def orbit_capacity(self, capacity_Bps: np.ndarray) -> np.ndarray:
        """Capacity of each link orbit: the sum over its links."""
        return np.bincount(self.link_orbit, weights=capacity_Bps, minlength=len(self.orbit_size))

    def per_link(self, orbit_values: np.ndarray) -> np.ndarray:
        """An orbit's total (bytes, load) spread back over its links, equally."""
        return np.asarray(orbit_values)[self.link_orbit] / self.orbit_size[self.link_orbit]

    def describe(self) -> str:
        what = {"translation": f"period {'x'.join(map(str, self.period))}",
                "twins": "interchangeable chips",
                "positions": "interchangeable positions (alike in every rack)",
                "stabilizer": f"symmetries fixing the failures (translation period {'x'.join(map(str, self.period))}"
                              f", reflections)"}[self.symmetry]
        plural = "class" if self.n_classes == 1 else "classes"
        return f"{what}: {self.n_flows:,} flows solved as {self.n_classes:,} {plural}"


@dataclass(frozen=True)
class Fold:
    """The outcome of a symmetry fold: a quotient, or the reason there is none.

    Attributes
    ----------
    quotient : Quotient or None
    method : str
        The fold that produced it or refused (a key of :data:`FOLDS`).
    reason : str
        Why there is no quotient (one sentence); empty when there is one.
    refused : tuple of Fold
        Folds tried before this one in the policy's chain that handed over (twins to
        positions when the routes relay), with their reasons.

    Examples
    --------
    >>> Fold.refuse("twins", "no two chips are twins").describe()
    'twins refused: no two chips are twins'
    """

    quotient: Quotient | None
    method: str
    reason: str = ""
    refused: tuple = ()

    @classmethod
    def refuse(cls, method: str, reason: str, refused: tuple = ()) -> "Fold":
        return cls(None, method, reason, refused)

    def __bool__(self) -> bool:
        return self.quotient is not None

    def describe(self) -> str:
        if self.quotient is not None:
            return f"{self.method}: {self.quotient.describe()}"
        return f"{self.method} refused: {self.reason}"

    def attempts(self) -> list[tuple[str, str]]:
        """``(method, reason)`` per fold tried, in order; reason empty for the one that held."""
        out = []
        for f in self.refused:
            out.extend(f.attempts())
        out.append((self.method, self.reason))
        return out


def _fold(routes, link_orbit: np.ndarray, n_orbits: int) -> sp.csr_matrix:
    L = len(link_orbit)
    fold = sp.csr_matrix((np.ones(L), (np.arange(L), link_orbit)), shape=(L, n_orbits))
    return (routes.piece_link @ fold).tocsr()


def _classes_on_orbits(method: str, moves: str, link_orbit: np.ndarray, lt, multiplicity, rep_src, rep_dst,
                       rep_row, routes, n_rows: int, no) -> Fold:
    """The twin / position folds' last step: a quotient of representatives on link orbits,
    or ``no(reason)`` when links that the symmetry exchanges differ."""
    O = int(link_orbit.max()) + 1
    differs = _uniform_within(link_orbit, O, lt)
    if differs:
        return no(f"links that {moves} exchanges differ in {differs}")
    return Fold(Quotient(method, (), multiplicity, rep_src, rep_dst, rep_row, routes,
                         _fold(routes, link_orbit, O), link_orbit, np.bincount(link_orbit, minlength=O),
                         np.arange(n_rows)), method)


def _uniform_within(link_orbit: np.ndarray, n_orbits: int, lt) -> str:
    """Which of capacity, latency, hop count differs within a link orbit ('' when none does)."""
    for name, values in (("capacity", lt.capacity_gbps), ("latency", lt.latency_ns), ("hop count", lt.hops)):
        values = np.asarray(values)
        first = np.zeros(n_orbits, values.dtype)
        first[link_orbit] = values
        if not np.array_equal(first[link_orbit], values):
            return name
    return ""
