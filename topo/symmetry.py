"""Symmetry classes: solve one flow per orbit instead of every flow, exactly.

The max-min fair allocation is unique, so a symmetry -- a relabelling of chips and
switches that maps the fabric, its routes and the phase's flows onto themselves --
gives every flow of an orbit the same rate and every link of an orbit the same load.
The engine then solves one *class* per orbit of flows (a representative flow) on one
*link orbit* per orbit of links:

* a class row stands for ``multiplicity`` flows (the solver's ``multiplicity``),
* a link orbit's capacity is the sum over its links, and a class's share on it is the
  sum of its representative's shares on the orbit's links,

so every load, rate and finish time is the per-flow problem's, while the sizes shrink
by the orbit sizes.  Each routing policy owns its fold (which symmetries its routes
keep is the policy's business), in :mod:`fabricsim.topo.routing`; this module keeps
the names callers know, returning a :class:`Quotient` or ``None``:

:func:`translation_quotient`
    ``routing.torus.fold_translations``: translations of an intact dimension-order
    torus under which the groups tile it the same way (the lattice ``t_1 Z x t_2 Z x
    ...`` with the smallest step per axis; diagonal-only symmetries are not searched).
    The 9,216-chip all-to-all (85 M flows) becomes 9,215 classes on 6 link orbits.
:func:`twin_quotient`
    ``routing.tiered.fold_tiered``: interchangeable chips (same rack, same links to the
    same neighbours) within one all-to-all row (``routing.ecmp.fold_twins``): a
    switched rack's chips.  The 2,048-chip pod all-to-all is 256 classes.  Where routes
    relay by in-rack position (rail-only PXN), positions interchangeable in every rack
    at once are used instead (``routing.leaf._fold_positions``).
:func:`flows_through`
    For a failure on a symmetric torus: the flows whose routes it touches, so a
    link-load bound of the degraded fabric is the intact one corrected by them.

Anything that breaks a symmetry -- a failed link on a torus, unequal capacities or
latencies, groups that do not tile, a relay chosen by rank -- gives ``None`` here and
the caller routes every flow; :func:`fabricsim.topo.routing.fold` returns the same
outcome as a :class:`~fabricsim.topo.routing.Fold` carrying the reason.
"""
from __future__ import annotations

import networkx as nx

from .routing import Fold, Quotient, flows_through
from .routing import tiered as _tiered
from .routing import torus as _torus

__all__ = ["Quotient", "Fold", "translation_quotient", "twin_quotient", "flows_through"]


def translation_quotient(G: nx.Graph, rows, pairs=None, *, links=None,
                         split: str = "equal", guard=None) -> Quotient | None:
    """Translation classes of a phase on an intact DOR torus, or ``None``.

    ``fold_translations(...).quotient`` (see
    :func:`fabricsim.topo.routing.torus.fold_translations` for the parameters and the
    reason when there is none).

    Examples
    --------
    >>> import numpy as np
    >>> from fabricsim.fabrics import build
    >>> G = build("torus", dims="4x4x4")
    >>> q = translation_quotient(G, np.arange(64)[None, :])
    >>> q.n_classes, int(q.multiplicity[0]), q.n_flows == 64 * 63
    (63, 64, True)
    """
    return _torus.fold_translations(G, rows, pairs, links=links, split=split, guard=guard).quotient


def twin_quotient(G: nx.Graph, rows, pairs=None, *, links=None, split: str = "equal",
                  tiers: str = "rule", guard=None) -> Quotient | None:
    """Twin (or, where routes relay, position) classes of an all-to-all phase, or ``None``.

    ``fold_tiered(...).quotient`` (see :func:`fabricsim.topo.routing.ecmp.fold_twins`
    and :func:`fabricsim.topo.routing.tiered.fold_tiered`).  Ordered patterns and
    dimension-order fabrics give ``None``.

    Examples
    --------
    >>> import numpy as np
    >>> from fabricsim.fabrics import build
    >>> G = build("jalapeno-rack")
    >>> q = twin_quotient(G, np.arange(128)[None, :])
    >>> q.n_classes, q.n_flows == 128 * 127
    (1, True)
    """
    return _tiered.fold_tiered(G, rows, pairs, links=links, split=split, tiers=tiers, guard=guard).quotient
