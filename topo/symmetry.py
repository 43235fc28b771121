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
by the orbit sizes.  Three symmetries are used:

:func:`translation_quotient`
    Translations of an intact dimension-order torus under which the groups tile it
    the same way (the lattice ``t_1 Z x t_2 Z x ...`` with the smallest step per axis;
    diagonal-only symmetries are not searched).  The 9,216-chip all-to-all (85 M
    flows) becomes 9,215 classes on 6 link orbits.
:func:`twin_quotient`
    Interchangeable chips (same rack, same links to the same neighbours) within one
    all-to-all row: a switched rack's chips.  The 2,048-chip pod all-to-all is 256
    classes.  Where routes relay by in-rack position (rail-only PXN), positions
    interchangeable in every rack at once are used instead.
:func:`flows_through`
    For a failure on a symmetric torus: the flows whose routes it touches, so a
    link-load bound of the degraded fabric is the intact one corrected by them.

Anything that breaks a symmetry -- a failed link on a torus, unequal capacities or
latencies, groups that do not tile, a relay chosen by rank -- returns ``None`` and
the caller routes every flow.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import networkx as nx
import numpy as np
import scipy.sparse as sp

from .builders import AXES as _AXES   # torus coordinate attributes, x slowest

__all__ = ["Quotient", "translation_quotient", "twin_quotient", "flows_through"]



@dataclass(frozen=True)
class Quotient:
    """A phase's flows folded into classes under a symmetry of fabric and phase.

    Attributes
    ----------
    symmetry : str
        ``"translation"`` (a torus, :func:`translation_quotient`), ``"twins"``
        (interchangeable chips, :func:`twin_quotient`) or ``"positions"`` (positions
        interchangeable in every rack at once, for fabrics that relay by position).
    period : tuple of int
        Translations: the step per torus axis (``t_i``); empty for twins.
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
                "positions": "interchangeable positions (alike in every rack)"}[self.symmetry]
        plural = "class" if self.n_classes == 1 else "classes"
        return f"{what}: {self.n_flows:,} flows solved as {self.n_classes:,} {plural}"


def _fold(routes, link_orbit: np.ndarray, n_orbits: int) -> sp.csr_matrix:
    L = len(link_orbit)
    fold = sp.csr_matrix((np.ones(L), (np.arange(L), link_orbit)), shape=(L, n_orbits))
    return (routes.piece_link @ fold).tocsr()


def _uniform_within(link_orbit: np.ndarray, n_orbits: int, lt) -> bool:
    """Capacity, latency and hop count are the same on every link of an orbit."""
    for values in (lt.capacity_gbps, lt.latency_ns, lt.hops):
        values = np.asarray(values)
        first = np.zeros(n_orbits, values.dtype)
        first[link_orbit] = values
        if not np.array_equal(first[link_orbit], values):
            return False
    return True


def _dims(G: nx.Graph):
    raw = G.graph.get("dims")
    try:
        dims = tuple(int(p) for p in str(raw).lower().split("x"))
    except ValueError:
        return None
    return dims if 0 < len(dims) <= len(_AXES) and all(k >= 1 for k in dims) else None


def _divisors(k: int) -> list[int]:
    return [t for t in range(1, k + 1) if k % t == 0]


def translation_quotient(G: nx.Graph, rows, pairs=None, *, links=None,
                         split: str = "equal", guard=None) -> Quotient | None:
    """Fold a phase into translation classes on an intact DOR torus, or ``None``.

    Parameters
    ----------
    G : networkx.Graph
        A fabric with ``routing == "dor"`` and ``dims`` (other fabrics give ``None``).
    rows : array_like of int, shape (R, m)
        Chip ranks, one row per set of chips exchanging together; rows must be disjoint.
    pairs : array_like of int, shape (2, p), optional
        In every row, member ``pairs[0, i]`` sends one flow to member ``pairs[1, i]``;
        a translation must then keep the members' order.  ``None`` (default): every
        ordered pair of distinct members (an all-to-all), which a translation may
        permute.
    links : routing.LinkTable, optional
    split : str
        Passed to :func:`routing.route` for the representatives.
    guard : callable, optional
        Called with the number of representative flows before they are routed (the
        caller's memory guard: it raises to refuse).

    Returns
    -------
    Quotient or None
        ``None`` when the fabric or the phase lacks a translation symmetry (then every
        flow must be routed), or when the only symmetry is the identity.

    Examples
    --------
    >>> import numpy as np
    >>> from fabricsim.fabrics import build
    >>> G = build("torus", dims="4x4x4")
    >>> q = translation_quotient(G, np.arange(64)[None, :])
    >>> q.n_classes, int(q.multiplicity[0]), q.n_flows == 64 * 63
    (63, 64, True)
    """
    from . import routing
    if G.graph.get("routing") != "dor":
        return None
    dims = _dims(G)
    if dims is None:
        return None
    nd, N = len(dims), int(np.prod(dims))
    rows = np.asarray(rows, dtype=np.int64)
    unordered = pairs is None
    if not unordered:
        pair_a, pair_b = (np.asarray(x, dtype=np.int64) for x in pairs)
    if rows.ndim != 2 or rows.size == 0 or (unordered and rows.shape[1] < 2) or (not unordered and not len(pair_a)):
        return None
    lt = routing.link_table(G) if links is None else links
    # chips: every grid position exactly once, and nothing but chips
    n_nodes = len(lt.nodes)
    if G.number_of_nodes() != N or n_nodes != N:
        return None
    net = routing._net(G, lt)                   # node arrays, shared with the routing of the representatives
    if not net.is_chip.all() or any(a not in net.attr for a in _AXES[:nd]):
        return None
    coords = np.stack([net.attr[a] for a in _AXES[:nd]], axis=1)
    if (coords < 0).any() or (coords >= np.array(dims)).any():
        return None
    rank = net.rank
    flat = np.ravel_multi_index(tuple(coords.T), dims)
    if np.bincount(flat, minlength=N).max() != 1 or rank.min() < 0 or rank.max() >= N \
            or np.bincount(rank, minlength=N).max() != 1:
        return None
    pos_of_rank = np.empty(N, np.int64)
    pos_of_rank[rank] = flat
    rank_of_pos = np.empty(N, np.int64)
    rank_of_pos[flat] = rank
    node_of_pos = np.empty(N, np.int64)
    node_of_pos[flat] = np.arange(n_nodes)
    # links: every unit ring step from every position, once
    u, v = lt.src.astype(np.int64), lt.dst.astype(np.int64)
    disp = (coords[v] - coords[u]) % np.array(dims)
    moved = disp != 0
    if not (moved.sum(axis=1) == 1).all():
        return None
    axis = np.argmax(moved, axis=1)
    step = disp[np.arange(len(u)), axis]
    k_of = np.array(dims)[axis]
    if not ((step == 1) | (step == k_of - 1)).all():
        return None
    expected = sum(N * (2 if k > 2 else 1 if k == 2 else 0) for k in dims)
    dcode = axis * 2 + (step != 1)              # direction code: +1 or -1 along an axis (k = 2: +1 only)
    key = flat[u] * (2 * nd) + dcode
    if len(u) != expected or len(np.unique(key)) != expected:
        return None
    # the phase: rows of distinct, present chips
    if rows.min() < 0 or rows.max() >= N:
        return None
    if not unordered and (min(pair_a.min(), pair_b.min()) < 0 or max(pair_a.max(), pair_b.max()) >= rows.shape[1]):
        return None
    X = pos_of_rank[rows]                       # (R, m) grid positions
    if np.bincount(X.ravel(), minlength=N).max() > 1:
        return None
    R, m = rows.shape
    lab = np.full(N, -1, np.int64)
    lab[X] = np.arange(R)[:, None]
    mem = np.full(N, -1, np.int64)
    mem[X] = np.arange(m)[None, :]
    grid = np.arange(N).reshape(dims)

    def moved_by(a: int, t: int) -> np.ndarray:
        """Flat position of each position after a step of t along axis a."""
        return np.roll(grid, -t, axis=a).ravel()

    def invariant(shift: np.ndarray) -> bool:
        L2 = lab[shift[X]]
        if (L2 < 0).any() or not (L2 == L2[:, :1]).all():
            return False
        return unordered or bool((mem[shift[X]] == np.arange(m)[None, :]).all())

    period, gens = [], []
    for a, k in enumerate(dims):
        for t in _divisors(k):
            if t == k:
                period.append(k)
                break
            shift = moved_by(a, t)
            if invariant(shift):
                period.append(t)
                gens.append(shift)
                break
    mult = int(np.prod([k // t for k, t in zip(dims, period)]))
    if mult == 1:
        return None
    # link orbits: (position in the cell, direction); each holds exactly mult links
    cell_pos = np.ravel_multi_index(tuple((coords % np.array(period)).T), tuple(period))
    okey = cell_pos[u] * (2 * nd) + dcode
    link_orbit = np.unique(okey, return_inverse=True)[1].astype(np.int64)
    O = int(link_orbit.max()) + 1
    if (np.bincount(link_orbit, minlength=O) != mult).any():
        return None
    if not _uniform_within(link_orbit, O, lt):
        return None                              # unequal capacities or latencies break the symmetry
    # class representatives: the pairs whose sender sits in the fundamental cell
    in_cell = np.all(coords[node_of_pos] < np.array(period), axis=1)     # by flat position
    cell_x = np.flatnonzero(in_cell & (lab >= 0))
    j = mem[cell_x]                                      # member index of each cell chip
    if unordered:
        # every other member of the row, in member order
        rep_row = np.repeat(lab[cell_x], m - 1)
        others = np.ones((len(cell_x), m), bool)
        others[np.arange(len(cell_x)), j] = False
        rep_src = np.repeat(rows[lab[cell_x], j], m - 1)
        rep_dst = rows[lab[cell_x]][others]
    else:
        by_sender = np.argsort(pair_a, kind="stable")    # pattern pairs grouped by sending member
        first = np.searchsorted(pair_a[by_sender], np.arange(m))
        c = np.bincount(pair_a, minlength=m)[j]
        before = np.cumsum(c) - c
        p = by_sender[np.repeat(first[j] - before, c) + np.arange(int(c.sum()))]
        rep_row = np.repeat(lab[cell_x], c)
        rep_src = rows[rep_row, pair_a[p]]
        rep_dst = rows[rep_row, pair_b[p]]
    if (rep_src == rep_dst).any():
        return None
    if guard is not None:
        guard(len(rep_src))
    routes = routing.route(G, rep_src, rep_dst, split=split, links=lt)
    if not np.all(routes.reachable):
        return None
    piece_orbit = _fold(routes, link_orbit, O)
    # row orbits: rows joined by a generator step are one orbit
    if gens and R > 1:
        src_rows = np.concatenate([np.arange(R)] * len(gens))
        dst_rows = np.concatenate([lab[g[X[:, 0]]] for g in gens])
        A = sp.csr_matrix((np.ones(len(src_rows)), (src_rows, dst_rows)), shape=(R, R))
        from scipy.sparse import csgraph   # imported on use: it costs ~50 ms at start-up
        row_orbit = csgraph.connected_components(A, directed=False)[1].astype(np.int64)
    else:
        row_orbit = np.arange(R, dtype=np.int64)
    coords_of_rank = np.empty((N, nd), np.int64)
    coords_of_rank[rank] = coords
    frame = {"dims": dims, "coords_of_rank": coords_of_rank, "rank_of_pos": rank_of_pos, "link_coords": coords[u]}
    return Quotient("translation", tuple(period), np.full(len(rep_src), mult, np.int64), rep_src, rep_dst, rep_row,
                    routes, piece_orbit, link_orbit, np.full(O, mult, np.int64), row_orbit, frame)

def twin_quotient(G: nx.Graph, rows, pairs=None, *, links=None, split: str = "equal",
                  tiers: str = "rule", guard=None) -> Quotient | None:
    """Fold an all-to-all phase into classes of interchangeable chips, or ``None``.

    Two chips are *twins* when they sit in the same rack, neither forwards, and they
    have the same links to the same neighbours (capacity, latency, hops and tier alike,
    both directions): swapping them maps the fabric onto itself.  All chips of a
    switched rack (NVL72, the Jalapeño rack and pod, a leaf's chips in a Clos) are
    twins.  Within one row of an all-to-all, permuting the twins of the row maps the
    phase onto itself too, so the flows from twin class ``K`` to twin class ``K'`` of a
    row share one rate: one class of ``|K| |K'|`` flows (``|K| (|K| - 1)`` when ``K =
    K'``).  A link's orbit is its pair of ends with each chip replaced by its class.

    ``guard`` is as in :func:`translation_quotient`.  Routing must treat twins alike:
    ECMP and the tier rule do; a relay (rail-only PXN)
    is chosen by position, so a phase that needs relays, or has unreachable pairs, gives
    ``None`` (the caller routes every flow).  Ordered patterns (rings, shifts) give
    ``None`` too: swapping twins would reorder them.

    Examples
    --------
    >>> import numpy as np
    >>> from fabricsim.fabrics import build
    >>> G = build("jalapeno-rack")
    >>> q = twin_quotient(G, np.arange(128)[None, :])
    >>> q.n_classes, q.n_flows == 128 * 127
    (1, True)
    """
    from . import routing
    if pairs is not None or G.graph.get("routing", "ecmp") == "dor":
        return None
    rows = np.asarray(rows, dtype=np.int64)
    if rows.ndim != 2 or rows.size == 0 or rows.shape[1] < 2:
        return None
    lt = routing.link_table(G) if links is None else links
    net = routing._net(G, lt)
    n = len(lt.nodes)
    u, v = lt.src.astype(np.int64), lt.dst.astype(np.int64)
    attrs = [np.asarray(lt.capacity_gbps), np.asarray(lt.latency_ns), np.asarray(lt.hops), np.asarray(lt.tier)]
    by_u = np.argsort(u, kind="stable")
    by_v = np.argsort(v, kind="stable")
    u_start = np.searchsorted(u[by_u], np.arange(n + 1))
    v_start = np.searchsorted(v[by_v], np.arange(n + 1))
    rack = net.attr.get("rack", np.full(n, -1, np.int64))
    candidates = np.flatnonzero(net.is_chip & ~net.fwd)
    cls = np.arange(n, dtype=np.int64)          # class per node: itself unless it has twins
    sig_of = {}
    for x in candidates.tolist():
        out = by_u[u_start[x]:u_start[x + 1]]
        inn = by_v[v_start[x]:v_start[x + 1]]
        key = (int(rack[x]),
               tuple(sorted(zip(v[out].tolist(), *(a[out].tolist() for a in attrs)))),
               tuple(sorted(zip(u[inn].tolist(), *(a[inn].tolist() for a in attrs)))))
        cls[x] = sig_of.setdefault(key, x)
    if len(sig_of) == len(candidates):
        return None                              # no two chips are twins
    # the phase: rows of distinct, present chips; twins are refined by row
    flat = rows.ravel()
    if np.bincount(flat).max() > 1 or flat.max() >= len(net.node_of_rank):
        return None
    X = net.node_of_rank[rows]
    if (X < 0).any():
        return None                              # a lost chip: the caller reports the broken group
    R, m = rows.shape
    row_of = np.full(n, -1, np.int64)
    row_of[X] = np.arange(R)[:, None]
    refined = np.unique(cls * (R + 1) + row_of + 1, return_inverse=True)[1].astype(np.int64)
    # the classes of each row: members sorted by (row, class); a class's first two members
    C = refined[X]                                       # (R, m)
    order = np.argsort(C, axis=1, kind="stable")
    Cs = np.take_along_axis(C, order, axis=1)
    starts = np.ones((R, m), bool)
    starts[:, 1:] = Cs[:, 1:] != Cs[:, :-1]
    n_cls_row = starts.sum(axis=1)
    if 4 * int((n_cls_row ** 2).sum()) > R * m * (m - 1):
        return None                                      # too few twins to gain
    # representatives: per row, one flow per ordered pair of its classes
    reps_s, reps_d, reps_row, mult = [], [], [], []
    for r in range(R):
        pos = np.flatnonzero(starts[r])                  # where each class begins in the sorted row
        count = np.diff(np.append(pos, m))
        first = rows[r, order[r, pos]]
        second = rows[r, order[r, np.minimum(pos + 1, m - 1)]]
        j = len(pos)
        a, b = np.repeat(np.arange(j), j), np.tile(np.arange(j), j)
        same = a == b
        keep = ~same | (count[a] >= 2)
        a, b, same = a[keep], b[keep], same[keep]
        reps_s.append(first[a])
        reps_d.append(np.where(same, second[b], first[b]))
        reps_row.append(np.full(len(a), r, np.int64))
        mult.append(np.where(same, count[a] * (count[a] - 1), count[a] * count[b]))
    rep_src, rep_dst = np.concatenate(reps_s), np.concatenate(reps_d)
    multiplicity = np.concatenate(mult).astype(np.int64)
    if guard is not None:
        guard(len(rep_src))
    routes = routing.route(G, rep_src, rep_dst, split=split, tiers=tiers, links=lt)
    if not np.all(routes.reachable):
        return None
    if np.any(routes.relayed):
        # a relay is chosen by position: only moves that treat every rack alike keep it
        return _position_twins(G, lt, rows, X, cls, row_of, split, tiers, guard)
    # link orbits: both ends replaced by their classes (a switch is a class of its own)
    n_cls = int(refined.max()) + 1
    link_orbit = np.unique(refined[u] * n_cls + refined[v], return_inverse=True)[1].astype(np.int64)
    O = int(link_orbit.max()) + 1
    if not _uniform_within(link_orbit, O, lt):
        return None
    return Quotient("twins", (), multiplicity, rep_src, rep_dst, np.concatenate(reps_row), routes,
                    _fold(routes, link_orbit, O), link_orbit, np.bincount(link_orbit, minlength=O), np.arange(R))


def _position_twins(G, lt, rows, X, cls, row_of, split, tiers, guard) -> Quotient | None:
    """Twin classes for a fabric whose routes relay by in-rack position (rail-only PXN).

    The relay of a pair is the chip of the source's rack at the destination's position
    (or the mirror of it), so the moves that keep routes are the permutations of
    positions applied in *every* rack at once.  Positions ``p`` and ``p'`` are
    interchangeable when in every rack the chips there are twins and in one row.  Under
    those moves a pair is classified by its two (rack, position class) cells and, when
    the classes agree across two racks, by whether the positions are equal.  Each
    representative's relay is checked to be that positional choice (not a fallback
    chosen by rank), and a flow relaying on both sides gives ``None``.
    """
    from . import routing
    net = routing._net(G, lt)
    u, v = lt.src.astype(np.int64), lt.dst.astype(np.int64)
    if (net.is_chip[u] & net.is_chip[v]).any():
        return None                                      # chip-to-chip links: not handled here
    ridx, kidx, table = routing._positions(net)
    if (ridx[X] < 0).any():
        return None
    n = len(lt.nodes)
    present = table >= 0
    T0 = np.maximum(table, 0)
    # a position's class: its chips' twin classes and rows, rack by rack
    key = np.concatenate([np.where(present, cls[T0], -1), np.where(present, row_of[T0], -2)], axis=0).T
    pid = np.unique(key, axis=0, return_inverse=True)[1].ravel().astype(np.int64)
    nK = int(pid.max()) + 1
    by_class = np.argsort(pid, kind="stable")
    start = np.searchsorted(pid[by_class], np.arange(nK + 1))
    size = np.diff(start)
    first = by_class[start[:-1]]
    second = by_class[np.minimum(start[:-1] + 1, len(pid) - 1)]
    cell = np.full(n, -1, np.int64)
    cell[table[present]] = (np.nonzero(present)[0] * nK + pid[np.nonzero(present)[1]])
    rank = net.rank
    reps_s, reps_d, reps_row, mult = [], [], [], []
    for r in range(X.shape[0]):
        cells = np.unique(cell[X[r]])
        ra, ka = cells // nK, cells % nK
        j = len(cells)
        a, b = np.repeat(np.arange(j), j), np.tile(np.arange(j), j)
        ra_a, ra_b, ka_a, ka_b = ra[a], ra[b], ka[a], ka[b]
        same_cell = a == b
        same_class = (ka_a == ka_b) & ~same_cell          # one class in two racks
        other = ka_a != ka_b
        sz_a, sz_b = size[ka_a], size[ka_b]
        src1 = table[ra_a, first[ka_a]]
        # (1) two positions of one cell; (2) one class, two racks: same position, other
        # positions; (3) two classes
        picks = [(same_cell & (sz_a >= 2), src1, table[ra_b, second[ka_b]], sz_a * (sz_a - 1)),
                 (same_class, src1, table[ra_b, first[ka_b]], sz_a),
                 (same_class & (sz_a >= 2), src1, table[ra_b, second[ka_b]], sz_a * (sz_a - 1)),
                 (other, src1, table[ra_b, first[ka_b]], sz_a * sz_b)]
        for sel, sn, dn, mm in picks:
            reps_s.append(rank[sn[sel]])
            reps_d.append(rank[dn[sel]])
            reps_row.append(np.full(int(sel.sum()), r, np.int64))
            mult.append(mm[sel])
    rep_src, rep_dst = np.concatenate(reps_s), np.concatenate(reps_d)
    multiplicity = np.concatenate(mult).astype(np.int64)
    R, m = rows.shape
    if multiplicity.sum() != R * m * (m - 1) or 4 * len(rep_src) > R * m * (m - 1):
        return None
    if guard is not None:
        guard(len(rep_src))
    routes = routing.route(G, rep_src, rep_dst, split=split, tiers=tiers, links=lt)
    if not np.all(routes.reachable):
        return None
    if routes.relay2_rank is not None and (routes.relay2_rank >= 0).any():
        return None                                      # relays on both sides: chosen by rank
    relayed = np.flatnonzero(routes.relayed)
    if len(relayed):
        sn = net.node_of_rank[rep_src[relayed]]
        dn = net.node_of_rank[rep_dst[relayed]]
        got = net.node_of_rank[routes.relay_rank[relayed]]
        positional = (got == table[ridx[sn], kidx[dn]]) | (got == table[ridx[dn], kidx[sn]])
        if not positional.all():
            return None                                  # a fallback relay, chosen by rank
    key_node = np.where(cell >= 0, n + cell, np.arange(n))
    link_orbit = np.unique(key_node[u] * (n + n * nK + 1) + key_node[v], return_inverse=True)[1].astype(np.int64)
    O = int(link_orbit.max()) + 1
    if not _uniform_within(link_orbit, O, lt):
        return None
    return Quotient("positions", (), multiplicity, rep_src, rep_dst, np.concatenate(reps_row), routes,
                    _fold(routes, link_orbit, O), link_orbit, np.bincount(link_orbit, minlength=O), np.arange(R))


def flows_through(q: Quotient, links: np.ndarray):
    """The flows of a translation quotient whose routes use any of ``links``.

    A failure that removes links from a symmetric torus changes the routes of exactly
    these flows (dimension-order routes elsewhere stay as they were), so a link-load
    bound of the degraded fabric is the symmetric one less their old routes plus their
    new ones.  Found from the classes' routes: a class's representative crossing link
    ``l`` puts the translate by ``position(f) - position(l)`` on every link ``f`` of
    ``l``'s orbit; no flow list is built.

    Parameters
    ----------
    q : Quotient
        From :func:`translation_quotient`.
    links : array_like of int
        Link indices of ``q``'s link table.

    Returns
    -------
    (src, dst, cls) : numpy.ndarray of int64
        Chip ranks of each such flow (each once) and its class.
    """
    if q.symmetry != "translation":
        raise ValueError("flows_through needs a translation quotient")
    links = np.unique(np.asarray(links, dtype=np.int64))
    empty = np.zeros(0, np.int64)
    if not len(links):
        return empty, empty, empty
    fr = q.frame
    dims = np.array(fr["dims"])
    A = (q.routes.flow_piece @ q.routes.piece_link).tocoo()
    c, l = A.row.astype(np.int64), A.col.astype(np.int64)
    f_orbit = q.link_orbit[links]
    order = np.argsort(f_orbit, kind="stable")
    f_sorted, f_links = f_orbit[order], links[order]
    lo = np.searchsorted(f_sorted, q.link_orbit[l], "left")
    cnt = np.searchsorted(f_sorted, q.link_orbit[l], "right") - lo
    c, l, lo, cnt = c[cnt > 0], l[cnt > 0], lo[cnt > 0], cnt[cnt > 0]
    total = int(cnt.sum())
    if not total:
        return empty, empty, empty
    ends = np.cumsum(cnt)
    f = f_links[np.repeat(lo - (ends - cnt), cnt) + np.arange(total)]
    c, l = np.repeat(c, cnt), np.repeat(l, cnt)
    tau = (fr["link_coords"][f] - fr["link_coords"][l]) % dims
    key = np.unique(c * int(np.prod(dims)) + np.ravel_multi_index(tuple(tau.T), tuple(dims)))
    c = key // int(np.prod(dims))
    tau = np.stack(np.unravel_index(key % int(np.prod(dims)), tuple(dims)), axis=1)
    cr = fr["coords_of_rank"]

    def moved(ranks):
        return fr["rank_of_pos"][np.ravel_multi_index(tuple(((cr[ranks] + tau) % dims).T), tuple(dims))]
    return moved(q.rep_src[c]), moved(q.rep_dst[c]), c
