"""Collective algorithms: (groups, size) -> phases of concurrent flows.

Size conventions follow nccl-tests: for all-reduce ``size_bytes`` is the buffer per
rank; for all-gather, reduce-scatter and all-to-all it is the whole buffer per rank
(count x type size x ranks).  A :class:`Phase` holds the flows of *every* group at
once (so contention between groups is priced) and a ``repeat`` count: identical
steps, such as the 2(n-1) steps of a ring all-reduce, are solved once and repeated.

Each algorithm is one :class:`Algorithm` record in :data:`ALGORITHM_RECORDS` (its collectives,
phases builder, the rank order it reads, in-network or not, auto's limits); other modules ask
the record, and :data:`ALGORITHMS` (collective -> {name: builder}) is a live view of it.
Adding an algorithm is one :func:`register` call.
"""
from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from functools import cached_property
from typing import Callable, Sequence

import networkx as nx
import numpy as np

from ..topo.contract import CHIP, KIND, RANK
from ..topo.errors import BadInput

__all__ = ["Phase", "with_pair_bytes", "FabricView", "COLLECTIVES", "ALGORITHMS", "algorithms_for", "phases", "view_of",
           "Algorithm", "ALGORITHM_RECORDS", "ORDERS", "AUTO_PAIRWISE_MAX", "algorithm_record", "register",
           "unregister"]

COLLECTIVES = ("all-reduce", "all-gather", "reduce-scatter", "all-to-all")


@dataclass(frozen=True)
class Phase:
    """Concurrent flows of one step pattern, repeated ``repeat`` times.

    Flows are given by structure, not listed: ``rows`` holds chip ranks (one row per
    set of chips exchanging together: a group, or a sub-group such as a rack's share of
    it), and every row runs the same pattern of member pairs: ``pairs[:, i] = (a, b)``
    means member ``a`` sends ``flow_bytes`` to member ``b``; ``pairs=None`` means every
    ordered pair of distinct members (an all-to-all exchange).  Flow
    ``f = row * pairs_per_row + i``, with all-pairs in row-major (a, b) order.  The
    per-flow arrays (``src``, ``dst``, ``size_bytes``, ``group``) are built on first
    use; the symmetry-aware engine prices a large phase without ever building them.

    All-to-all-v is unequal bytes per flow: ``pair_bytes[row, i]`` (shape (R, p)) then
    gives each flow's bytes and ``flow_bytes`` is their mean (for reports); ``None``
    (every phase that is not built from a traffic matrix) means ``flow_bytes`` each.
    Symmetry classes assume equal sizes, so pricing solves such a phase flow by flow;
    :func:`with_pair_bytes` keeps a matrix that turns out uniform on the uniform path.
    """

    name: str
    rows: np.ndarray                 # (R, m) chip ranks
    flow_bytes: float                # bytes per flow per step
    row_group: np.ndarray            # (R,) collective group of each row
    repeat: int = 1
    in_network: bool = False         # flows are chip -> reducing switches -> chips (NVLS): see pricing
    pairs: np.ndarray | None = None  # (2, p) member pairs; None: every ordered pair
    pair_bytes: np.ndarray | None = None  # (R, p) bytes of each flow (all-to-all-v); None: flow_bytes each
    # phases of one stage number (>= 0) pipeline through their tiers together (NCCL's tree:
    # chunks leave the node while the next ones are still reduced inside it), so their
    # transfers overlap; -1: the phase runs after the one before
    stage: int = -1

    @property
    def unordered(self) -> bool:
        """Every ordered pair of members: the members' order within a row is immaterial."""
        return self.pairs is None

    @property
    def pairs_per_row(self) -> int:
        m = self.rows.shape[1]
        return m * (m - 1) if self.pairs is None else self.pairs.shape[1]

    @property
    def n_flows(self) -> int:
        return self.rows.shape[0] * self.pairs_per_row

    @cached_property
    def _pair_ab(self) -> tuple[np.ndarray, np.ndarray]:
        if self.pairs is None:
            return np.nonzero(~np.eye(self.rows.shape[1], dtype=bool))
        return self.pairs[0], self.pairs[1]

    @property
    def pair_a(self) -> np.ndarray:
        """Sending member of each pair, shape (p,)."""
        return self._pair_ab[0]

    @property
    def pair_b(self) -> np.ndarray:
        """Receiving member of each pair, shape (p,)."""
        return self._pair_ab[1]

    @cached_property
    def src(self) -> np.ndarray:
        """Sending chip rank of each flow, shape (F,)."""
        return self.rows[:, self.pair_a].ravel()

    @cached_property
    def dst(self) -> np.ndarray:
        """Receiving chip rank of each flow, shape (F,)."""
        return self.rows[:, self.pair_b].ravel()

    @cached_property
    def size_bytes(self) -> np.ndarray:
        """Bytes of each flow per step, shape (F,)."""
        if self.pair_bytes is not None:
            return np.asarray(self.pair_bytes, dtype=np.float64).ravel()
        return np.full(self.n_flows, self.flow_bytes)

    @cached_property
    def group(self) -> np.ndarray:
        """Collective group of each flow, shape (F,)."""
        return np.repeat(self.row_group, self.pairs_per_row)

    @cached_property
    def rows_disjoint(self) -> bool:
        """No chip is in two rows."""
        flat = self.rows.ravel()
        return bool(flat.size == 0 or np.bincount(flat).max() <= 1)

    def messages_per_rank(self) -> int:
        """Most flows any one chip sends in the step."""
        if self.n_flows == 0:
            return 0
        if self.pair_bytes is not None:
            # all-to-all-v: a flow of zero bytes is no message
            sent = self.size_bytes > 0
            return int(np.bincount(self.src[sent]).max()) if sent.any() else 0
        if self.pairs is None:
            return self.rows.shape[1] - 1
        if self.rows_disjoint:
            return int(np.bincount(self.pairs[0]).max())
        return int(np.bincount(self.src).max())

    def bytes_across(self, domain: np.ndarray, reach: np.ndarray | None = None) -> float:
        """Bytes of one step whose two ends lie in different ``domain`` values (racks)."""
        if self.pair_bytes is not None:
            across = domain[self.src] != domain[self.dst]
            if reach is not None:
                across &= reach
            return float(self.size_bytes[across].sum())
        if reach is None and self.unordered:
            # every ordered pair of a row: m(m-1) pairs less those inside one domain
            R, m = self.rows.shape
            dom = np.sort(domain[self.rows], axis=1)
            same = 0
            if m:
                starts = np.ones((R, m), bool)
                starts[:, 1:] = dom[:, 1:] != dom[:, :-1]
                run_id = np.cumsum(starts.ravel()) - 1
                counts = np.bincount(run_id)
                same = int((counts * (counts - 1)).sum())
            return float((R * m * (m - 1) - same) * self.flow_bytes)
        across = domain[self.src] != domain[self.dst]
        if reach is not None:
            across &= reach
        return float(np.count_nonzero(across) * self.flow_bytes)

    def with_(self, **changes) -> "Phase":
        """A copy with some fields changed (the per-flow arrays are rebuilt on use)."""
        return replace(self, **changes)


def with_pair_bytes(ph: Phase, pair_bytes: np.ndarray) -> Phase:
    """``ph`` carrying ``pair_bytes`` (R, p) per flow; a constant array keeps the uniform phase.

    Only provably equal sizes fold: a matrix whose flows all carry the same bytes is
    priced exactly as the uniform collective (symmetry classes included).
    """
    B = np.asarray(pair_bytes, dtype=np.float64)
    if B.shape != (ph.rows.shape[0], ph.pairs_per_row):
        raise BadInput(f"per-flow bytes have shape {B.shape}; the phase needs {(ph.rows.shape[0], ph.pairs_per_row)}")
    if B.size == 0 or np.all(B == B.flat[0]):
        return ph.with_(flow_bytes=float(B.flat[0]) if B.size else ph.flow_bytes, pair_bytes=None)
    B.flags.writeable = False
    return ph.with_(flow_bytes=float(B.mean()), pair_bytes=B)


@dataclass(frozen=True)
class FabricView:
    """What algorithms need to know about the fabric, by chip rank."""

    n_chips: int
    domain: np.ndarray | None       # rack (or other scale-up domain) of each rank, -1 when unknown
    coords: np.ndarray | None       # (n, 3) torus coordinates, or None
    reduces: bool                   # every chip is linked to switches that reduce in the network
    graph: object = field(default=None, compare=False, repr=False)    # the fabric, for what is built on demand
    reducers: tuple = field(default=(), compare=False, repr=False)   # per rank: its reducing switches (NVLS)

    @cached_property
    def linked(self) -> dict:
        """Ranks each chip has a direct chip-to-chip link to (no switch between): the graph rings are
        laid on.  Built on first use (ring-linked), not for every price."""
        G = self.graph
        if G is None:
            return {}
        nodes, out = G.nodes, {}
        for node, d in G.nodes(data=True):
            if d.get(KIND) != CHIP:
                continue
            mates = [nodes[m][RANK] for m in G.adj[node] if nodes[m].get(KIND) == CHIP and RANK in nodes[m]]
            if mates:
                out[d[RANK]] = frozenset(mates)
        return out


def view_of(G: nx.Graph) -> FabricView:
    """Collect ranks' racks, torus coordinates and in-network reduction from ``G``."""
    from ..topo.graphcache import memo       # cached while G is pinned (topo.graphcache)
    return memo(G, ("view_of",), lambda: _view_of(G))


def _view_of(G: nx.Graph) -> FabricView:
    chips = [(d[RANK], n, d) for n, d in G.nodes(data=True) if d.get(KIND) == CHIP]
    n = max((r for r, _, _ in chips), default=-1) + 1
    domain = np.full(n, -1, dtype=np.int64)
    coords = np.full((n, 3), -1, dtype=np.int64)
    has_rack = has_xyz = True
    nodes = G.nodes
    reducing = {m for m, d in G.nodes(data=True) if d.get(KIND) == "switch" and d.get("reduces")}
    reduces = bool(chips) and bool(reducing)
    reducers: list = [frozenset()] * n
    adj = G.adj
    for r, node, d in chips:
        if "rack" in d:
            domain[r] = d["rack"]
        else:
            has_rack = False
        if all(k in d for k in "xyz"):
            coords[r] = (d["x"], d["y"], d["z"])
        else:
            has_xyz = False
        nbrs = adj[node]
        if reducing:
            # NVLS: the chip reaches switches that reduce (its NICs and other links may go elsewhere)
            red = frozenset(m for m in nbrs if m in reducing)
            reducers[r] = red
            if not red:
                reduces = False
    return FabricView(n, domain if has_rack else None, coords if has_xyz else None, reduces, G,
                      tuple(reducers))


def _groups_array(groups: Sequence[Sequence[int]]) -> np.ndarray:
    sizes = {len(g) for g in groups}
    if len(sizes) != 1:
        raise BadInput(f"all groups must have the same size; got sizes {sorted(sizes)}")
    return np.asarray(groups, dtype=np.int64)


def _shift(G: np.ndarray, k: int, size: float, name: str, repeat: int) -> Phase:
    """Every member i of every group sends ``size`` bytes to member (i + k) mod n."""
    g, n = G.shape
    a = np.arange(n)
    return Phase(name, G, float(size), np.arange(g), repeat, pairs=np.stack([a, (a + k) % n]))


def _all_pairs(G: np.ndarray, size: float, name: str, repeat: int) -> Phase:
    """Every member sends ``size`` bytes to every other member of its group."""
    return Phase(name, G, float(size), np.arange(G.shape[0]), repeat)


# ----------------------------------------------------------------------------- ring, direct, rhd
def _ring(collective: str, G: np.ndarray, S: float, view: FabricView) -> list[Phase]:
    n = G.shape[1]
    steps = {"all-reduce": 2 * (n - 1), "all-gather": n - 1, "reduce-scatter": n - 1}[collective]
    return [_shift(G, 1, S / n, f"ring step ({steps} identical steps)", steps)]


# Hamiltonian search budget: steps per member before ring-linked gives up on a cycle (then on a path).
# I, measured: 4x4x4 and 4x4x8 tori need more than 8n steps for a cycle and find one within 50n
# (14 ms / 27 ms); 64n on a 512-chip group costs ~0.15 s
RING_SEARCH_EXPANSIONS_PER_MEMBER = 64
# Largest group ring-linked searches (I: measured, the search and the extra solve cost ~0.4 s and
# ~0.6 s on a 9,216-chip Ironwood group, where a path closed through the fabric lost to the rank-order
# ring; groups that large on chip-linked fabrics are tori, which torus-rings / torus-concurrent serve)
RING_LINKED_MAX_MEMBERS = 512


def _linked_walk(members: np.ndarray, linked: dict, cycle: bool, budget: int) -> list[int] | None:
    """A walk through every member over direct links, as member indices; ``cycle``: closing too.

    Depth-first from member 0 (a path: from each member in turn, fewest links first), next
    the unvisited neighbour with the fewest unvisited neighbours (Warnsdorff's rule), at most
    ``budget`` steps.  None when no walk was found within the budget.
    """
    n = len(members)
    where = {int(r): i for i, r in enumerate(members)}
    adj = [sorted(where[m] for m in linked.get(int(r), ()) if m in where) for r in members]
    if any(not a for a in adj):
        return None
    starts = [0] if cycle else sorted(range(n), key=lambda i: (len(adj[i]), i))
    steps = 0
    for start in starts:
        seen = np.zeros(n, dtype=bool)
        seen[start] = True
        path = [start]
        stack = [iter(sorted(adj[start], key=lambda j: (len(adj[j]), j)))]
        while stack:
            if len(path) == n and (not cycle or start in adj[path[-1]]):
                return path
            steps += 1
            if steps > budget:
                return None
            nxt = next(stack[-1], None)
            if nxt is None:
                stack.pop()
                seen[path.pop()] = False
                continue
            if seen[nxt]:
                continue
            seen[nxt] = True
            path.append(nxt)
            free = [j for j in adj[nxt] if not seen[j]]
            stack.append(iter(sorted(free, key=lambda j: (sum(not seen[k] for k in adj[j]), j))))
    return None


def _ring_linked(collective: str, G: np.ndarray, S: float, view: FabricView) -> list[Phase]:
    """The ring in an order whose neighbours are directly linked, where the group's links allow.

    Graph-based, for any fabric with chip-to-chip links: each group's members are ordered
    along a Hamiltonian cycle of the links among them (every ring flow on its own link, one
    direction), else along a Hamiltonian path, the closing flow routed by the fabric (it may
    take the path's unused reverse directions).  A group laid as its translate (the same
    member indices) reuses the first group's order, so symmetry folds still apply.  auto
    prices it next to ``ring`` (the given rank order) and keeps the faster.
    """
    if not view.linked:
        raise BadInput("ring-linked needs chips linked to each other directly (this fabric joins them "
                       "through switches); use ring", param="algorithm")
    g, n = G.shape
    if n > RING_LINKED_MAX_MEMBERS:
        raise BadInput(f"ring-linked orders groups of up to {RING_LINKED_MAX_MEMBERS} chips, not {n:,}; "
                       f"use ring, torus-rings or torus-concurrent", param="algorithm")
    budget = RING_SEARCH_EXPANSIONS_PER_MEMBER * n + 64

    def links_along(row: np.ndarray, order: list[int], closed: bool) -> bool:
        hops = len(order) if closed else len(order) - 1
        return all(int(row[order[(i + 1) % n]]) in view.linked.get(int(row[order[i]]), ())
                   for i in range(hops))

    rows, kinds = [], set()
    order, closed = None, False
    for members in G:
        if order is None or not links_along(members, order, closed):
            order, closed = _linked_walk(members, view.linked, True, budget), True
            if order is None:
                order, closed = _linked_walk(members, view.linked, False, budget), False
            if order is None:
                raise BadInput(f"ring-linked found no walk over direct links through the {n} members of "
                               f"a group (or gave up after {budget:,} steps); use ring", param="algorithm")
        rows.append(members[order])
        kinds.add(closed)
    how = "a cycle of direct links" if kinds == {True} else "direct links, closed through the fabric"
    steps = {"all-reduce": 2 * (n - 1), "all-gather": n - 1, "reduce-scatter": n - 1}[collective]
    return [_shift(np.stack(rows), 1, S / n, f"ring over {how} ({steps} identical steps)", steps)]


def _direct(collective: str, G: np.ndarray, S: float, view: FabricView, traffic=None) -> list[Phase]:
    n = G.shape[1]
    if collective == "all-to-all":
        ph = _all_pairs(G, S / n, "direct all-to-all", 1)
        if traffic is not None:
            # flow (a, b) of a row carries traffic[group, a, b]; all-pairs order is row-major
            ph = with_pair_bytes(ph, traffic[:, ~np.eye(n, dtype=bool)])
        return [ph]
    repeat = 2 if collective == "all-reduce" else 1   # all-reduce = direct reduce-scatter + all-gather
    return [_all_pairs(G, S / n, "one-shot exchange of S/n with every peer", repeat)]


def _halving_doubling(collective: str, G: np.ndarray, S: float, view: FabricView) -> list[Phase]:
    n = G.shape[1]
    if n & (n - 1):
        raise BadInput(f"halving-doubling needs a power-of-two group size, not {n}; try ring or direct",
                       param="algorithm")
    out = []
    idx = np.arange(n)
    k, size = n // 2, S / 2
    # reduce-scatter halves the data each step with partner i XOR n/2, n/4, ...; the
    # all-gather retraces the same partners and sizes in reverse, hence repeat 2
    repeat = 2 if collective == "all-reduce" else 1
    while k >= 1:
        out.append(Phase(f"exchange with rank xor {k}", G, float(size), np.arange(G.shape[0]), repeat,
                         pairs=np.stack([idx, idx ^ k])))
        k //= 2
        size /= 2
    return out


# ----------------------------------------------------------------------------- hierarchical
def _domains(G: np.ndarray, view: FabricView, name: str = "hierarchical") -> tuple[np.ndarray, int, int]:
    """Members of each group arranged (group, domain, position); d domains of m chips each.

    ``name``: the algorithm asking, named in the errors.
    """
    if view.domain is None:
        raise BadInput(f"{name} needs racks or nodes (a 'rack' attribute on chips); this fabric has none",
                       param="algorithm")
    g, n = G.shape
    out = []
    for members in G:
        dom = view.domain[members]
        uniq = np.unique(dom)
        order = np.lexsort((members, dom))
        arranged = members[order].reshape(len(uniq), -1) if n % len(uniq) == 0 else None
        if arranged is None or not all((view.domain[row] == row_d).all() for row, row_d in zip(arranged, uniq)):
            raise BadInput(f"{name} needs every group spread evenly over its racks (nodes)", param="algorithm")
        out.append(arranged)
    A = np.stack(out)
    d, m = A.shape[1], A.shape[2]
    if d < 2 or m < 2:
        raise BadInput(f"{name} needs groups spanning 2+ racks (nodes) with 2+ chips in each (got {d} x {m})",
                       param="algorithm")
    return A, d, m


def _hierarchical(collective: str, G: np.ndarray, S: float, view: FabricView, traffic=None) -> list[Phase]:
    A, d, m = _domains(G, view)
    g = A.shape[0]
    n = d * m
    if collective == "all-to-all":
        # rail-aligned: first inside the rack, chip (D, i) hands chip (D, j) everything bound
        # for position j of every rack (S/n x d); then across racks between chips of the
        # same position only, which in a rail-only fabric share a rail: (D, j) -> (D', j)
        intra = A.reshape(g * d, m)
        inter = A.transpose(0, 2, 1).reshape(g * m, d)
        p1 = _all_pairs(intra, S / n * d, "inside racks: gather by destination position", 1)
        p2 = _all_pairs(inter, S / n * m, "across racks between chips of the same position", 1)
        if traffic is not None:
            p1, p2 = _hierarchical_bytes(p1, p2, G, traffic, view, g, d, m)
        return [_regroup(p1, g, d), _regroup(p2, g, m)]
    # reduce-scatter inside each rack (ring of m), all-reduce across racks among chips of
    # the same position (ring of d on S/m), all-gather inside each rack
    intra = A.reshape(g * d, m)
    inter = A.transpose(0, 2, 1).reshape(g * m, d)
    if collective == "all-reduce":
        return [_regroup(_shift(intra, 1, S / m, "inside racks: ring reduce-scatter + all-gather", 2 * (m - 1)), g, d),
                _regroup(_shift(inter, 1, S / (m * d), "across racks: ring all-reduce", 2 * (d - 1)), g, m)]
    # reduce-scatter (S is the whole buffer): a ring of m inside each rack leaves S/m per
    # chip, then a ring of d across racks leaves S/n; all-gather runs the same in reverse
    return [_regroup(_shift(intra, 1, S / m, "inside racks: ring", m - 1), g, d),
            _regroup(_shift(inter, 1, S / n, "across racks: ring", d - 1), g, m)]


def _hierarchical_bytes(p1: Phase, p2: Phase, G: np.ndarray, traffic: np.ndarray, view: FabricView,
                        g: int, d: int, m: int) -> tuple[Phase, Phase]:
    """All-to-all-v through the racks: each stage carries the sums of the matrix it aggregates."""
    # member index (in the group's own order) of the chip at (rack D, position i), the
    # arrangement _domains made: sorted by rack, then by rank
    pos = np.stack([np.lexsort((members, view.domain[members])) for members in G]).reshape(g, d, m)
    T = np.stack([traffic[k][np.ix_(pos[k].ravel(), pos[k].ravel())] for k in range(g)]).reshape(g, d, m, d, m)
    # stage 1: (D, i) -> (D, j) carries what (D, i) sends to position j of every rack D'
    s1 = T.sum(axis=3).reshape(g * d, m, m)
    # stage 2: (D, j) -> (D', j) carries what every chip (D, i) of rack D sends to (D', j)
    s2 = T.sum(axis=2).transpose(0, 3, 1, 2).reshape(g * m, d, d)
    return (with_pair_bytes(p1, s1[:, ~np.eye(m, dtype=bool)]),
            with_pair_bytes(p2, s2[:, ~np.eye(d, dtype=bool)]))


def _regroup(p: Phase, g: int, sub: int) -> Phase:
    """Sub-groups were numbered group*sub + k; report flows under their collective group."""
    return p.with_(row_group=p.row_group // sub)


# ----------------------------------------------------------------------------- NCCL trees across domains
def _tree_phases(collective: str, G: np.ndarray, S: float, view: FabricView, in_network: bool) -> list[Phase]:
    """NCCL's Tree / NVLSTree all-reduce across domains, its tiers pipelined (one stage).

    Inside each domain the group's m chips reduce-scatter and all-gather (a ring of m, or
    NVLS in the domain's reducing switches); across domains the chips of one position
    all-reduce their S/m shard over their own NICs (a ring of d: rail-matched).  Chunks
    move through both tiers at once, so the tiers' transfers overlap (the engine takes
    the slower tier's, unless the two share links) while each chunk still pays both
    tiers' step latencies.
    """
    if collective != "all-reduce":
        raise BadInput("tree and nvls-tree price all-reduce (NCCL runs its trees for all-reduce only)",
                       param="algorithm")
    A, d, m = _domains(G, view, "nvls-tree" if in_network else "tree")
    g = A.shape[0]
    intra = A.reshape(g * d, m)
    inter = A.transpose(0, 2, 1).reshape(g * m, d)
    if in_network:
        if not view.reduces or not view.reducers:
            raise BadInput("nvls-tree needs switches that reduce in the network inside each domain", param="algorithm")
        for members in intra:
            if not frozenset.intersection(*(view.reducers[int(r)] for r in members)):
                raise BadInput("nvls-tree needs each domain's chips linked to the same reducing switches",
                               param="algorithm")
        a = np.arange(m)
        first = Phase("inside domains: NVLS reduce-scatter + all-gather", intra, float(S), np.arange(g * d), 1,
                      in_network=True, pairs=np.stack([a, a]), stage=0)
    else:
        first = _shift(intra, 1, S / m, "inside domains: ring reduce-scatter + all-gather", 2 * (m - 1))
        first = first.with_(stage=0)
    across = _shift(inter, 1, S / (m * d), "across domains: ring all-reduce of each position's shard",
                    2 * (d - 1)).with_(stage=0)
    return [_regroup(first, g, d), _regroup(across, g, m)]


def _tree(collective: str, G: np.ndarray, S: float, view: FabricView) -> list[Phase]:
    return _tree_phases(collective, G, S, view, in_network=False)


def _nvls_tree(collective: str, G: np.ndarray, S: float, view: FabricView) -> list[Phase]:
    return _tree_phases(collective, G, S, view, in_network=True)


# ----------------------------------------------------------------------------- rail rings (NCCL multi-node)
def _zigzag_paths(m: int) -> np.ndarray:
    """``m`` orders of ``0..m-1``: Walecki's m/2 edge-disjoint Hamiltonian paths of the complete
    graph K_m and their reverses (an odd ``m`` gets the rotations instead).

    Path k starts at member k and ends at k + m/2, so over the m orders every member
    starts one and ends one: each chip is where exactly one channel enters its domain and
    one leaves it.  On a full mesh (xGMI) the paths share no link, so the channels use
    every link once; behind a switch the order is immaterial.
    """
    if m % 2:
        return np.stack([(np.arange(m) + c) % m for c in range(m)])
    zig = [0]
    for i in range(1, m):
        zig.append((i + 1) // 2 if i % 2 else m - i // 2)
    base = np.asarray(zig)
    fwd = np.stack([(base + k) % m for k in range(m // 2)])
    return np.concatenate([fwd, fwd[:, ::-1]])


def _rail_rings(collective: str, G: np.ndarray, S: float, view: FabricView) -> list[Phase]:
    """NCCL's ring across domains: one ring (channel) per chip of a domain, each over all ranks.

    Channel c runs through every domain along an order of its members (see
    :func:`_zigzag_paths`) and domains alternate direction, so the ring leaves a domain
    and enters the next at chips of the same position (the same rail) and the m channels
    leave each domain at m different chips: every NIC carries one channel's crossing, as
    NCCL binds channels to NICs.  The tiers overlap (one pipeline, not a node phase and a
    network phase one after the other).  Each channel carries S/m.
    """
    A, d, m = _domains(G, view, "rail-rings")
    g, n = A.shape[0], d * m
    orders = _zigzag_paths(m)
    rows = []
    for c in range(m):
        fwd, back = orders[c], orders[c][::-1]
        per_domain = [A[:, j, fwd if j % 2 == 0 else back] for j in range(d)]
        rows.append(np.concatenate(per_domain, axis=1))          # (g, n)
    R = np.stack(rows, axis=1).reshape(g * m, n)
    steps = {"all-reduce": 2 * (n - 1), "all-gather": n - 1, "reduce-scatter": n - 1}[collective]
    a = np.arange(n)
    return [Phase(f"{m} rings over all {n} ranks, one leaving each domain at each chip ({steps} identical steps)",
                  R, float(S / n / m), np.repeat(np.arange(g), m), steps, pairs=np.stack([a, (a + 1) % n]))]


# ----------------------------------------------------------------------------- torus rings
def _torus_rings(collective: str, G: np.ndarray, S: float, view: FabricView) -> list[Phase]:
    if view.coords is None:
        raise BadInput("torus-rings needs chips with x, y, z coordinates (a torus fabric)", param="algorithm")
    g, n = G.shape
    C = view.coords[G]                                   # (g, n, 3)
    data = S
    lines_by_dim = []
    for axis in range(3):
        ext = [len(np.unique(C[k, :, axis])) for k in range(g)]
        if len(set(ext)) != 1:
            raise BadInput("torus-rings needs every group to be a box of the same shape", param="algorithm")
        lines_by_dim.append(ext[0])
    if int(np.prod(lines_by_dim)) != n:
        raise BadInput(f"torus-rings needs each group to be a full box of chips; a group of {n} spans "
                       f"{'x'.join(map(str, lines_by_dim))}", param="algorithm")
    # per dimension, a bidirectional ring: half the data each way, so both directions
    # of every ring link carry traffic (the way TPU collectives use the torus)
    rs_phases = []
    for axis, k in enumerate(lines_by_dim):
        if k < 2:
            continue
        other = [a for a in range(3) if a != axis]
        lines, grp = [], []
        for gi in range(g):
            members, cc = G[gi], C[gi]
            order = np.lexsort((cc[:, axis], cc[:, other[1]], cc[:, other[0]]))
            rings = members[order].reshape(-1, k)        # one row per line along this axis
            lines.append(rings)
            grp.append(np.full(len(rings), gi))
        a = np.arange(k)
        size = data / k / 2
        steps = k - 1
        # each member sends to both ring neighbours (forward i+1 and backward i-1)
        rs_phases.append(Phase(f"axis {'xyz'[axis]}: bidirectional ring of {k}", np.concatenate(lines),
                               float(size), np.concatenate(grp), steps,
                               pairs=np.stack([np.concatenate([a, a]), np.concatenate([(a + 1) % k, (a - 1) % k])])))
        data /= k
    if collective == "all-reduce":
        # the all-gather retraces the reduce-scatter's rings in reverse order: same sizes
        return [p.with_(repeat=2 * p.repeat) for p in rs_phases]
    if collective in ("reduce-scatter", "all-gather"):
        # S is the whole buffer: reduce-scatter of S ends with S/n per rank
        return rs_phases
    raise BadInput("torus-rings prices all-reduce, reduce-scatter and all-gather; use direct for all-to-all",
                   param="algorithm")


def _box(G: np.ndarray, view: FabricView, name: str) -> tuple[np.ndarray, tuple[int, int, int]]:
    """Each group's members in box order (x, then y, then z position in the group), and the box's extents.

    ``rows[g, (ix * ky + iy) * kz + iz]`` is the member of group g at the ix-th x, iy-th y and
    iz-th z coordinate the group holds, so one member pattern fits every group alike.
    """
    if view.coords is None:
        raise BadInput(f"{name} needs chips with x, y, z coordinates (a torus fabric)", param="algorithm")
    g, n = G.shape
    C = view.coords[G]                                   # (g, n, 3)
    pos = np.empty_like(C)
    ext = np.empty((g, 3), dtype=np.int64)
    for axis in range(3):
        for k in range(g):
            vals, pos[k, :, axis] = np.unique(C[k, :, axis], return_inverse=True)
            ext[k, axis] = len(vals)
    if (ext != ext[0]).any():
        raise BadInput(f"{name} needs every group to be a box of the same shape", param="algorithm")
    kx, ky, kz = (int(e) for e in ext[0])
    if kx * ky * kz != n:
        raise BadInput(f"{name} needs each group to be a full box of chips; a group of {n} spans {kx}x{ky}x{kz}",
                       param="algorithm")
    local = (pos[:, :, 0] * ky + pos[:, :, 1]) * kz + pos[:, :, 2]       # (g, n), a permutation per group
    rows = np.empty_like(G)
    np.put_along_axis(rows, local, G, axis=1)
    return rows, (kx, ky, kz)


def _torus_concurrent(collective: str, G: np.ndarray, S: float, view: FabricView) -> list[Phase]:
    """Every axis at once: one shard of the buffer per axis, each reducing along the axes in a rotated order.

    With A axes of extent >= 2 (a_0 .. a_{A-1}), shard i holds the share
    s_i = S w_i / sum(w), w_i = k_i / (k_i - 1), and runs its reduce-scatter along
    a_i, a_{i+1}, ... (indices mod A): at stage j every axis carries one shard's rings, as
    TPU collectives use every ICI link of a box at once.  Each ring is bidirectional (half of
    the shard's data each way, as ``torus-rings``).  The weights balance stage 0, which moves
    the most data: shard i's ring of k_i moves s_i (k_i - 1) / k_i per chip, the same for
    every i; later stages carry 1/k as much (the LP optimum of the stage sums in every shape
    we tried but 2x4x8, where it is 4% above).  A stage's rings run side by side over disjoint
    links (one axis each), so a stage of rings of different lengths is priced as
    R = max(k - 1) steps, each flow carrying its ring's whole stage traffic / R per step:
    the bandwidth time is the longest ring's, the latency R steps.  All-gather retraces the
    stages in reverse with the same sizes (all-reduce: both, each stage's repeat doubled).
    """
    if collective not in ("all-reduce", "reduce-scatter", "all-gather"):
        raise BadInput("torus-concurrent prices all-reduce, reduce-scatter and all-gather; "
                       "use direct for all-to-all", param="algorithm")
    rows, ext = _box(G, view, "torus-concurrent")
    axes = [a for a in range(3) if ext[a] >= 2]
    A = len(axes)
    if A < 2:
        raise BadInput(f"torus-concurrent needs a box with 2 or more axes of extent >= 2 "
                       f"(got {'x'.join(map(str, ext))}); use torus-rings", param="algorithm")
    g, n = rows.shape
    k = np.array([ext[a] for a in axes], dtype=np.float64)
    w = k / (k - 1)
    share = S * w / w.sum()                              # bytes of shard i
    # member index -> its (x, y, z) position in the box, and the neighbours along each axis
    idx = np.arange(n)
    pos = np.stack(np.unravel_index(idx, ext), axis=1)   # (n, 3)
    stride = np.array([ext[1] * ext[2], ext[2], 1])

    def neighbour(axis: int, step: int) -> np.ndarray:
        p = pos[:, axis]
        return idx + ((p + step) % ext[axis] - p) * stride[axis]

    out = []
    data = share.copy()                                  # shard i's bytes entering the stage
    for j in range(A):
        on = [axes[(i + j) % A] for i in range(A)]       # axis of shard i at stage j
        kk = np.array([ext[a] for a in on])
        R = int(kk.max() - 1)
        per_flow = data * (kk - 1) / kk / 2 / R          # bytes per flow per step, per shard
        a_idx, b_idx, sizes = [], [], []
        for i, a in enumerate(on):
            for step in (1, -1):                         # forward and backward ring
                a_idx.append(idx)
                b_idx.append(neighbour(a, step))
                sizes.append(np.full(n, per_flow[i]))
        pairs = np.stack([np.concatenate(a_idx), np.concatenate(b_idx)])
        rings = " ".join(f"{'xyz'[a]}{ext[a]}" for a in on)      # shard 1's ring first
        name = f"stage {j + 1}/{A}: shards on rings {rings}"
        ph = Phase(name, rows, float(per_flow[0]), np.arange(g), R, pairs=pairs)
        out.append(with_pair_bytes(ph, np.broadcast_to(np.concatenate(sizes), (g, pairs.shape[1]))))
        data = data / kk
    if collective == "all-reduce":
        return [p.with_(name=p.name + " (RS+AG)", repeat=2 * p.repeat) for p in out]
    if collective == "all-gather":
        return [p.with_(name="all-gather " + p.name) for p in reversed(out)]
    return out


# ----------------------------------------------------------------------------- in-network (NVLS)
def _nvls(collective: str, G: np.ndarray, S: float, view: FabricView) -> list[Phase]:
    if not view.reduces:
        raise BadInput("nvls needs switches that reduce in the network (e.g. nvl72's NVLink switches)",
                       param="algorithm")
    g, n = G.shape
    if view.reducers:
        for members in G:
            if not frozenset.intersection(*(view.reducers[int(r)] for r in members)):
                raise BadInput("nvls needs every member of a group linked to the same reducing switches; this "
                               "group spans switch domains (e.g. two NVLink domains): use ring or rail-rings",
                               param="algorithm")
    # each rank pushes its S bytes into the switches, which reduce and multicast S back:
    # priced in pricing from the chips' links to the switches (src == dst marks the rank)
    a = np.arange(n)
    return [Phase("push to switches, reduce, multicast back", G, float(S), np.arange(g), 1, in_network=True,
                  pairs=np.stack([a, a]))]


def _pairwise(collective: str, G: np.ndarray, S: float, view: FabricView, traffic=None) -> list[Phase]:
    n = G.shape[1]
    out = [_shift(G, k, S / n, f"pairwise step {k}: send to rank + {k}", 1) for k in range(1, n)]
    if traffic is not None:
        a = np.arange(n)
        out = [with_pair_bytes(ph, traffic[:, a, (a + k) % n]) for k, ph in zip(range(1, n), out)]
    return out


AlgorithmFn = Callable[[str, np.ndarray, float, FabricView], list]

# what of the groups' rank order an algorithm's phases read (the symmetry it preserves): "set" every pair
# or every member alike (groups as sets), "rotation" member i -> i + k (rank order up to rotation),
# "exact" partners i xor k (rank order exactly); None: it reads racks or torus coordinates
ORDERS = ("set", "rotation", "exact")
# auto does not try pairwise all-to-all above this size: n-1 separate solves (I: a run-time bound)
AUTO_PAIRWISE_MAX = 64


@dataclass(frozen=True)
class Algorithm:
    """A collective algorithm: the phases it builds and the properties other code asks about.

    Code outside this module asks the record (``ALGORITHM_RECORDS[name].order``), never
    compares an algorithm's name: a new algorithm is one :func:`register` call.

    Attributes
    ----------
    name : str
    collectives : tuple of str
        The collectives it implements (a subset of :data:`COLLECTIVES`).
    build : callable
        ``build(collective, groups (g, n), size_bytes, view, [traffic=]) -> list[Phase]``;
        raises BadInput when the grouping does not fit it.
    order : {"set", "rotation", "exact"} or None
        What of the groups' rank order its phases read, so which relabellings of a
        fabric keep its flows (:mod:`fabricsim.collectives.whatif.orbits`): ``set``
        (every pair or member alike), ``rotation`` (member i -> i + k), ``exact``
        (partners i xor k); None where its phases come from racks or torus coordinates.
    in_network : bool
        Its phases reduce in the network (switches that reduce, NVLS).
    always_applies : bool
        It fits any grouping: auto lists it without building its phases.
    auto_max_members : int, optional
        Auto skips it for groups of more members (with ``auto_skip_why`` in the note).
    auto_skip_why : str
    """

    name: str
    collectives: tuple[str, ...]
    build: Callable
    order: str | None = None
    in_network: bool = False
    always_applies: bool = False
    auto_max_members: int | None = None
    auto_skip_why: str = ""

    def __post_init__(self):
        bad = [c for c in self.collectives if c not in COLLECTIVES]
        if bad or not self.collectives:
            raise BadInput(f"algorithm {self.name!r}: collective {bad[0] if bad else None!r} is not one of: "
                           f"{', '.join(COLLECTIVES)}")
        if self.order is not None and self.order not in ORDERS:
            raise BadInput(f"algorithm {self.name!r}: order {self.order!r} is not one of: {', '.join(ORDERS)}, "
                           f"or None")


_REDUCING = ("all-reduce", "reduce-scatter", "all-gather")
# registration order is the order auto tries them and error messages list them
ALGORITHM_RECORDS: dict[str, Algorithm] = {a.name: a for a in (
    Algorithm("ring", _REDUCING, _ring, order="rotation", always_applies=True),
    Algorithm("ring-linked", _REDUCING, _ring_linked),
    Algorithm("direct", _REDUCING + ("all-to-all",), _direct, order="set", always_applies=True),
    Algorithm("pairwise", ("all-to-all",), _pairwise, order="rotation", always_applies=True,
              auto_max_members=AUTO_PAIRWISE_MAX, auto_skip_why="n-1 steps"),
    Algorithm("halving-doubling", _REDUCING, _halving_doubling, order="exact"),
    Algorithm("hierarchical", _REDUCING + ("all-to-all",), _hierarchical),
    Algorithm("rail-rings", _REDUCING, _rail_rings),
    Algorithm("tree", ("all-reduce",), _tree),
    Algorithm("nvls-tree", ("all-reduce",), _nvls_tree, in_network=True),
    Algorithm("torus-rings", _REDUCING, _torus_rings),
    Algorithm("torus-concurrent", _REDUCING, _torus_concurrent),
    Algorithm("nvls", ("all-reduce",), _nvls, order="set", in_network=True),
)}
# the collectives in the order listings name them
_COLLECTIVE_ORDER = ("all-reduce", "reduce-scatter", "all-gather", "all-to-all")


def register(algorithm: Algorithm) -> Algorithm:
    """Add an algorithm (price, auto and the what-if symmetry use it at once).

    Refuses a name already taken; :func:`unregister` removes it again.
    """
    if not isinstance(algorithm, Algorithm):
        raise BadInput(f"register takes an Algorithm, not {type(algorithm).__name__}")
    if algorithm.name in ALGORITHM_RECORDS or algorithm.name == "auto":
        raise BadInput(f"algorithm {algorithm.name!r} is already registered; unregister it first")
    ALGORITHM_RECORDS[algorithm.name] = algorithm
    return algorithm


def unregister(name: str) -> Algorithm:
    """Remove the algorithm ``name`` (see :func:`register`) and return it."""
    try:
        return ALGORITHM_RECORDS.pop(name)
    except KeyError:
        raise BadInput(f"algorithm {name!r} is not registered; registered: {', '.join(ALGORITHM_RECORDS)}") \
            from None


def algorithm_record(name: str) -> Algorithm | None:
    """The record of algorithm ``name``, or None (``auto``, or a name nothing registered)."""
    return ALGORITHM_RECORDS.get(name)


class _ByCollective(Mapping):
    """``ALGORITHMS[collective][name] -> build``, read live from :data:`ALGORITHM_RECORDS`."""

    def _table(self) -> dict:
        out: dict[str, dict[str, AlgorithmFn]] = {c: {} for c in _COLLECTIVE_ORDER}
        for a in ALGORITHM_RECORDS.values():
            for c in a.collectives:
                out[c][a.name] = a.build
        return {c: v for c, v in out.items() if v}

    def __getitem__(self, collective):
        return self._table()[collective]

    def __iter__(self):
        return iter(self._table())

    def __len__(self) -> int:
        return len(self._table())

    def __repr__(self) -> str:
        return repr({c: list(v) for c, v in self._table().items()})


# collective -> {algorithm name: phases builder}, the view most callers read
ALGORITHMS: Mapping[str, Mapping[str, AlgorithmFn]] = _ByCollective()


def _check_collective(collective: str) -> None:
    if collective not in ALGORITHMS:
        from ..topo.errors import close_matches
        raise BadInput(f"unknown collective {collective!r}{close_matches(collective, ALGORITHMS)}; "
                       f"choose one of: {', '.join(ALGORITHMS)}")


def algorithms_for(collective: str, groups: Sequence[Sequence[int]], view: FabricView) -> list[str]:
    """The algorithms that apply to this collective, fabric and grouping (auto's candidates)."""
    _check_collective(collective)
    G = _groups_array(groups)
    ok = []
    for name, fn in ALGORITHMS[collective].items():
        if ALGORITHM_RECORDS[name].always_applies:
            ok.append(name)
            continue
        try:
            fn(collective, G, 1.0, view)   # every group must fit the algorithm, not just the first
        except BadInput:
            continue
        ok.append(name)
    return ok


def phases(collective: str, algorithm: str, groups: Sequence[Sequence[int]], size_bytes: float,
           view: FabricView, traffic: np.ndarray | None = None) -> list[Phase]:
    """The phases of ``collective`` by ``algorithm`` for all ``groups`` at once.

    ``traffic`` (all-to-all only): bytes member a of a group sends member b, shape
    (n, n) for every group alike or (groups, n, n); the all-to-all-v's flows carry it
    (see :mod:`fabricsim.collectives.traffic`).  The diagonal stays on the chip.
    """
    _check_collective(collective)
    algos = ALGORITHMS[collective]
    if algorithm not in algos:
        from ..topo.errors import close_matches
        raise BadInput(f"unknown algorithm {algorithm!r} for {collective}{close_matches(algorithm, algos)}; "
                       f"choose one of: auto, {', '.join(algos)}", param="algorithm")
    if not size_bytes > 0:
        raise BadInput(f"size {size_bytes!r} must be a positive number of bytes")
    G = _groups_array(groups)
    if traffic is None:
        return algos[algorithm](collective, G, float(size_bytes), view)
    if collective != "all-to-all":
        raise BadInput(f"a traffic matrix gives an all-to-all-v; {collective} takes --size only")
    T = np.asarray(traffic, dtype=np.float64)
    g, n = G.shape
    if T.ndim == 2:
        T = np.broadcast_to(T, (g,) + T.shape)
    if T.shape != (g, n, n):
        raise BadInput(f"traffic matrix of shape {T.shape[-2:] if T.ndim >= 2 else T.shape} for {g} group(s) "
                       f"of {n} ranks; it must be {n} x {n} (one row per rank of a group)"
                       + (f" and one matrix per group ({g})" if T.ndim == 3 and T.shape[1:] == (n, n) else ""))
    return algos[algorithm](collective, G, float(size_bytes), view, traffic=T)
