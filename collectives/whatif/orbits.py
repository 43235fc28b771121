"""Orbits of failure scenarios: solve one scenario per orbit of a sweep's symmetry group.

A relabelling ``sigma`` of nodes that maps the fabric onto itself (links onto links with
equal attributes), the collective's groups onto groups and the routing policy's choices
onto its choices maps the degraded fabric of scenario ``e`` onto that of ``sigma(e)``, and
every flow, rate and finish time with it: the two scenarios have the same price.  The
sweep then solves one representative per orbit of scenarios under the group the
generators span, and reports every scenario with its orbit's result.

Public names
------------
Generator
    One node permutation, with its name and whether it keeps in-rack positions.
candidate_generators
    Generators built from the fabric's structure (before any check).
Symmetry, fabric_symmetry
    The generators verified on a fabric for a collective's groups and algorithm, and
    the refused ones with one sentence each.
Orbits, scenario_orbits
    A sweep's scenarios partitioned into orbits (union-find over generator images),
    their representatives and, per scenario, the path from its representative.
failure_symmetry
    For one scenario (``whatif --explain``): the verified generators, those that
    keep its failures (its stabilizer's generators) and its orbit in its class.

How generators are built (:func:`candidate_generators`)
------------------------------------------------------
* ``twins``: nodes with equal attributes and identical neighbourhoods (same
  neighbours over links with equal attributes) are interchangeable: per class one
  transposition and one cycle (together they span every permutation of the class).
  A Jalapeño rack's chips and its local switches, a rail's switches (and those of the
  other rail of the same leaf), NVL72's GPUs and switch chips.  Nodes linked to each
  other with equal closed neighbourhoods (each one's neighbours and itself) likewise:
  the GPUs of a full mesh (MI355X's eight).
* label permutations: the nodes carrying ``rack`` / ``cube`` / ``group`` / ``plane`` /
  ``rail`` / ``tray`` / ``switch_tray`` / ``column`` value ``a`` are matched, in graph order,
  with those carrying value ``b`` (a transposition of two values and a cycle of all):
  rack permutations, NVL72 tray and switch-chip permutations, Boardfly group
  permutations (the cycle holds there; a transposition of two groups does not).
* Jalapeño leaf / rail-pair permutations: leaf ``i`` of every rack with its two rails.
* torus (``routing="dor"``): a translation by one along each axis and the reflection
  of each axis longer than 2 (no axis swaps: dimension order is a routing choice).
* which of these a fabric gets is its routing policy's ``generators`` (``topo.routing.Policy``):
  ``dor`` offers torus and twins, ``tiered`` twins, labels and leaf/rail pairs, ``ecmp`` twins
  and labels; the labels the policy ``reads`` must be mapped consistently.
* a user fabric's ``G.graph["symmetry"]``: a JSON list of ``{"name", "map": {node: node}}``
  (nodes not named stay fixed).

How each is verified (:func:`fabric_symmetry`)
---------------------------------------------
A candidate is used only if it (1) maps every node onto a node with the same
attributes (labels excepted: ``rank``, ``rack``, ``tray``, ``column``, ... are names);
(2) maps every link onto a link with the same attributes (the shared-fate tags
``ocs``/``harness`` are names too; ``wrap`` is only drawn); (3) maps the labels the
routing reads consistently (``rack`` for the tier rule, ``column``/``circuit`` where
patches route by them, torus coordinates as ``x -> +-x + t`` per axis); (4) maps every
group onto a group: as a set for order-free algorithms (direct, nvls), as a rotation of
its rank order for rings (ring, pairwise; a reflection reverses every flow and is
refused), in rank order exactly for halving-doubling (the algorithm record's ``order``,
:data:`fabricsim.collectives.algorithms.ALGORITHM_RECORDS`); algorithms that read racks or
coordinates (hierarchical, torus-rings; ``order=None``) refuse every generator; (5) under the tier
rule, a generator that moves in-rack positions is *conditional*: relays are chosen by
in-rack position and rank, so it holds only for scenarios whose degraded global tier
still joins every chip (checked on each orbit's representative; an orbit that relays
is split by the position-keeping generators).  Per failure class, a generator joins a
scenario to its image where every failed domain's image is a domain of the class; one that
maps no domain of the class onto a domain is refused for that class (a fabric automorphism
keeps the price of any scenario it maps onto a scenario, whatever it does to the others).
On a torus whose links differ only in ``medium`` (Ironwood: copper inside a cube, optical
between cubes), the unit translations are verified with the medium left out (no price reads
it) and used beside the cube translations (:func:`_medium_blind_translations`).
"""
from __future__ import annotations

import copy
import json
import math
from dataclasses import dataclass, field
from typing import Any, Callable, Sequence

import networkx as nx
import numpy as np

from ...topo.contract import CHIP, KIND, RANK
from ...topo.errors import BadInput

__all__ = ["Generator", "candidate_generators", "Symmetry", "fabric_symmetry", "Orbits", "scenario_orbits",
           "failure_symmetry",
           "LABEL_NODE_ATTRS", "LABEL_EDGE_ATTRS", "COSMETIC_EDGE_ATTRS"]

# node attributes that name a node's place (not what it is): a generator may change them
LABEL_NODE_ATTRS = ("rank", "rack", "tray", "column", "circuit", "switch_tray", "rail", "plane", "cube", "board",
                    "group", "x", "y", "z", "w")
# edge attributes that name shared fate (checked through the failure domains, not per link)
LABEL_EDGE_ATTRS = ("ocs", "harness")
# edge attributes only drawings read (topo/draw.py): routing and pricing never do
COSMETIC_EDGE_ATTRS = ("wrap",)
# labels a generator may permute by value
PERMUTED_LABELS = ("rack", "cube", "group", "plane", "rail", "tray", "switch_tray", "column")
AXES = ("x", "y", "z", "w")
MAX_N_KEYED = 4                                   # scenario keys k**n must fit in int64


@dataclass(frozen=True)
class Generator:
    """A node permutation of a fabric (``perm[i]`` is the image of node ``i`` in ``G.nodes`` order).

    ``positional``: it keeps every chip's in-rack position (relay choices); set by
    :func:`fabric_symmetry`.
    """

    name: str
    family: str
    perm: np.ndarray = field(repr=False, compare=False)
    positional: bool = True
    alt: str = ""          # candidates sharing ``alt``: only the first that verifies is used


class _Index:
    """Node and link arrays of one fabric, in ``G.nodes`` / ``G.edges`` order."""

    def __init__(self, G: nx.Graph):
        self.G = G
        self.nodes = list(G.nodes)
        self.n = len(self.nodes)
        self.index = {v: i for i, v in enumerate(self.nodes)}
        self.by_str = {str(v): i for i, v in enumerate(self.nodes)}
        node_data = [d for _, d in G.nodes(data=True)]
        self.node_sig, self.node_attr_names = _signatures(node_data, LABEL_NODE_ATTRS)
        self.labels: dict[str, np.ndarray] = {}
        for a in LABEL_NODE_ATTRS:
            vals = [d.get(a) for d in node_data]
            if any(isinstance(v, (int, np.integer)) and not isinstance(v, bool) for v in vals):
                self.labels[a] = np.array([int(v) if isinstance(v, (int, np.integer)) and not isinstance(v, bool)
                                           else -1 for v in vals], np.int64)
        idx = self.index
        edges = list(G.edges(data=True))
        self.eu = np.fromiter((idx[u] for u, _, _ in edges), np.int64, len(edges))
        self.ev = np.fromiter((idx[v] for _, v, _ in edges), np.int64, len(edges))
        self.edge_sig, self.edge_attr_names = _signatures([d for *_, d in edges],
                                                          LABEL_EDGE_ATTRS + COSMETIC_EDGE_ATTRS)
        key = np.minimum(self.eu, self.ev) * self.n + np.maximum(self.eu, self.ev)
        self.edge_order = np.argsort(key, kind="stable")
        self.edge_key = key[self.edge_order]
        self.is_chip = np.array([d.get(KIND) == CHIP for _, d in G.nodes(data=True)])
        self.rank = np.array([int(d[RANK]) if d.get(KIND) == CHIP else -1 for _, d in G.nodes(data=True)], np.int64)

    def edge_image(self, perm: np.ndarray) -> np.ndarray:
        """Index of the image of every link under ``perm``; -1 where the image is not a link."""
        pu, pv = perm[self.eu], perm[self.ev]
        k = np.minimum(pu, pv) * self.n + np.maximum(pu, pv)
        pos = np.minimum(np.searchsorted(self.edge_key, k), len(self.edge_key) - 1)
        found = self.edge_key[pos] == k if len(k) else np.zeros(0, bool)
        return np.where(found, self.edge_order[pos], -1)

    def link(self, e: int) -> str:
        return f"{self.nodes[self.eu[e]]}--{self.nodes[self.ev[e]]}"


_MISSING = object()


def _signatures(dicts: list[dict], skip: Sequence[str]) -> tuple[np.ndarray, dict[int, dict]]:
    """An id per attribute dict (equal ids: equal attributes, ``skip`` left out), and each id's attributes."""
    keys = sorted({k for d in dicts for k in d} - set(skip))
    ids: dict[tuple, int] = {}
    out = np.empty(len(dicts), np.int64)
    for i, d in enumerate(dicts):
        t = tuple(d.get(k, _MISSING) for k in keys)
        try:
            out[i] = ids.setdefault(t, len(ids))
        except TypeError:                       # an unhashable value: compare its text
            t = tuple(repr(v) if not isinstance(v, (int, float, str, bool)) else v for v in t)
            out[i] = ids.setdefault(t, len(ids))
    names = {j: {k: v for k, v in zip(keys, t) if v is not _MISSING} for t, j in ids.items()}
    return out, names


# ---------------------------------------------------------------------------------------
# Candidates
# ---------------------------------------------------------------------------------------
def _cycle_perm(n: int, members: list[list[int]], shift: int = 1) -> np.ndarray:
    """The permutation taking block ``members[i]`` onto ``members[(i + shift) % m]`` element by element."""
    perm = np.arange(n)
    m = len(members)
    for i, blk in enumerate(members):
        perm[blk] = members[(i + shift) % m]
    return perm


def _swap_perm(n: int, a: list[int], b: list[int]) -> np.ndarray:
    perm = np.arange(n)
    perm[a], perm[b] = b, a
    return perm


def _plural(word: str) -> str:
    """``switch`` -> ``switches``, ``chip`` -> ``chips``."""
    return word + ("es" if word.endswith(("s", "sh", "ch", "x")) else "s")


def _twins(ix: _Index, read: Sequence[str]) -> list[Generator]:
    nbr: dict[int, list] = {i: [] for i in range(ix.n)}
    for e, (u, v) in enumerate(zip(ix.eu.tolist(), ix.ev.tolist())):
        s = int(ix.edge_sig[e])
        nbr[u].append((v, s))
        nbr[v].append((u, s))
    classes: dict[tuple, list[int]] = {}
    lab = [ix.labels[a] for a in read if a in ix.labels]
    for i in range(ix.n):
        attrs = (int(ix.node_sig[i]), tuple(int(x[i]) for x in lab))
        classes.setdefault((*attrs, "open", tuple(sorted(nbr[i]))), []).append(i)
        # linked to each other as well: equal closed neighbourhoods (a full mesh of chips);
        # a sketch key (neighbour ids and link kinds apart), the verification decides
        closed = (tuple(sorted({w for w, _ in nbr[i]} | {i})), tuple(sorted(x for _, x in nbr[i])))
        if nbr[i]:
            classes.setdefault((*attrs, "closed", closed), []).append(i)
    out = []
    for key, members in classes.items():
        if len(members) < 2:
            continue
        d0 = ix.G.nodes[ix.nodes[members[0]]]
        what = f"{d0['role']} switch" if d0.get("role") else str(d0.get(KIND, "node"))
        mesh = ", linked to each other" if key[2] == "closed" else ""
        label = f"{len(members)} interchangeable {_plural(what)}{mesh} like {ix.nodes[members[0]]}"
        out.append(Generator(f"twins: swap {ix.nodes[members[0]]}, {ix.nodes[members[1]]} ({label})", "twins",
                             _swap_perm(ix.n, [members[0]], [members[1]])))
        if len(members) > 2:
            out.append(Generator(f"twins: cycle the {label}", "twins",
                                 _cycle_perm(ix.n, [[m] for m in members])))
    return out


def _label_perms(ix: _Index, refused: list) -> list[Generator]:
    out = []
    for a in PERMUTED_LABELS:
        lab = ix.labels.get(a)
        if lab is None:
            continue
        vals = sorted(set(lab[lab >= 0].tolist()))
        if len(vals) < 2:
            continue
        blocks = [np.flatnonzero(lab == v).tolist() for v in vals]
        if len({len(b) for b in blocks}) > 1:
            refused.append((f"{a} permutations", f"the {a} values carry different numbers of nodes "
                            f"({', '.join(sorted({str(len(b)) for b in blocks}))})"))
            continue
        out.append(Generator(f"{a} transposition {vals[0]} <-> {vals[1]}", a,
                             _swap_perm(ix.n, blocks[0], blocks[1])))
        if len(vals) > 2:
            out.append(Generator(f"{a} cycle {vals[0]} -> {vals[1]} -> ... -> {vals[-1]} -> {vals[0]}", a,
                                 _cycle_perm(ix.n, blocks)))
        if len(vals) >= 4:
            # the cycle's square: it may keep pairs of values together where the cycle splits them
            out.append(Generator(f"{a} shift by two ({vals[0]} -> {vals[2]}, ...)", a, _cycle_perm(ix.n, blocks, 2)))
    return out


def _leaf_rails(ix: _Index) -> list[Generator]:
    """Jalapeño: leaf ``i`` of every rack moved with the rails it carries."""
    G = ix.G
    rack, rail = ix.labels.get("rack"), ix.labels.get("rail")
    if rack is None or rail is None:
        return []
    leaves: dict[int, list[int]] = {}
    for i, v in enumerate(ix.nodes):
        if G.nodes[v].get("role") == "leaf" and rack[i] >= 0:
            leaves.setdefault(int(rack[i]), []).append(i)
    if not leaves or len({len(x) for x in leaves.values()}) > 1:
        return []
    k = len(next(iter(leaves.values())))
    if k < 2:
        return []
    # rails of leaf position p: the rails of its rail-switch neighbours, the same in every rack
    rails_of = []
    for p in range(k):
        sets = {frozenset(int(rail[ix.index[w]]) for w in G[ix.nodes[leaves[r][p]]] if rail[ix.index[w]] >= 0)
                for r in leaves}
        if len(sets) != 1:
            return []
        rails_of.append(sorted(next(iter(sets))))
    if len({len(x) for x in rails_of}) > 1 or not rails_of[0]:
        return []
    by_rail = {r: np.flatnonzero(rail == r).tolist() for r in set(rail[rail >= 0].tolist())}
    blocks = []
    for p in range(k):
        blk = [leaves[r][p] for r in sorted(leaves)]
        for r in rails_of[p]:
            blk += by_rail[r]
        blocks.append(blk)
    if len({len(b) for b in blocks}) > 1:
        return []
    out = [Generator("leaf/rail-pair transposition: leaf 0 with its rails <-> leaf 1 with its rails", "rail",
                     _swap_perm(ix.n, blocks[0], blocks[1]))]
    if k > 2:
        out.append(Generator(f"leaf/rail-pair cycle of the {k} leaves of every rack with their rails", "rail",
                             _cycle_perm(ix.n, blocks)))
    if k >= 4:
        # leaves 0, 1 <-> 2, 3: keeps the global switch trays (2 leaves each) whole
        out.append(Generator(f"leaf/rail-pair shift by two of the {k} leaves of every rack with their rails",
                             "rail", _cycle_perm(ix.n, blocks, 2)))
    return out


def _torus(ix: _Index) -> list[Generator]:
    dims = [int(x) for x in str(ix.G.graph.get("dims", "")).split("x") if x.strip().isdigit()]
    axes = [a for a in AXES[:len(dims)] if a in ix.labels]
    if not dims or len(axes) != len(dims):
        return []
    coords = np.stack([ix.labels[a] for a in axes], 1)
    if (coords < 0).any():
        return []
    flat = np.ravel_multi_index(coords.T, dims)
    node_at = np.full(int(np.prod(dims)), -1, np.int64)
    node_at[flat] = np.arange(ix.n)
    if (node_at < 0).any():
        return []
    out = []
    for i, (a, k) in enumerate(zip(axes, dims)):
        if k < 2:
            continue
        # the smallest step that verifies (1 on a plain torus; the cube edge where links differ by medium)
        for step in (t for t in range(1, k) if k % t == 0):
            c = coords.copy()
            c[:, i] = (c[:, i] + step) % k
            out.append(Generator(f"translation by {step} along {a}", "translation",
                                 node_at[np.ravel_multi_index(c.T, dims)], alt=f"translation {a}"))
        if k > 2:
            # x -> c - x: the first centre that verifies (0 on a plain torus)
            for centre in range(k):
                c = coords.copy()
                c[:, i] = (centre - c[:, i]) % k
                out.append(Generator(f"reflection of {a} (x -> {centre} - x mod {k})", "reflection",
                                     node_at[np.ravel_multi_index(c.T, dims)], alt=f"reflection {a}"))
    return out


def _annotated(ix: _Index, refused: list) -> list[Generator]:
    raw = ix.G.graph.get("symmetry")
    if not raw:
        return []
    try:
        items = json.loads(raw) if isinstance(raw, str) else raw
        out = []
        for k, item in enumerate(items):
            perm = np.arange(ix.n)
            for a, b in dict(item["map"]).items():
                perm[ix.by_str[str(a)]] = ix.by_str[str(b)]
            out.append(Generator(f"annotation {item.get('name', k)!s}", "annotation", perm))
        return out
    except (ValueError, TypeError, KeyError, AttributeError, IndexError) as exc:
        refused.append(("the fabric's symmetry annotation", f"it is not a JSON list of {{name, map}} over node ids "
                        f"({type(exc).__name__}: {str(exc)[:80]})"))
        return []


# builders of each kind of candidate a routing policy may offer (topo.routing.GENERATOR_KINDS), called as
# build(G, ix, refused)
GENERATOR_BUILDERS: dict[str, Callable] = {
    "torus": lambda G, ix, refused: _torus(ix),
    "twins": lambda G, ix, refused: _twins(ix, _read_labels(G, ix)),
    "labels": lambda G, ix, refused: _label_perms(ix, refused),
    "leaf-rails": lambda G, ix, refused: _leaf_rails(ix),
}


def candidate_generators(G: nx.Graph, ix: _Index | None = None, refused: list | None = None) -> list[Generator]:
    """Node permutations suggested by the fabric's structure, not yet verified (see the module docstring)."""
    from ...topo.routing import policy_of
    ix = ix or _Index(G)
    refused = [] if refused is None else refused
    out = _annotated(ix, refused)
    for kind in policy_of(G).generators:          # the kinds the routing policy's routes can keep, in its order
        out += GENERATOR_BUILDERS[kind](G, ix, refused)
    return out


def _read_labels(G: nx.Graph, ix: _Index) -> tuple[str, ...]:
    """Labels the routing reads (so twins must share them and generators map them consistently)."""
    from ...topo.routing import policy_of
    read = list(policy_of(G).reads)
    if any(d.get("patch") for _, d in G.nodes(data=True)):
        read += ["column", "circuit"]
    return tuple(a for a in read if a in ix.labels)


# ---------------------------------------------------------------------------------------
# Verification
# ---------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Symmetry:
    """The generators verified on a fabric for one collective's groups and algorithm.

    Attributes
    ----------
    generators : tuple of Generator
        Verified (``positional=False``: conditional on no relay, see the module docstring).
    refused : tuple of (name, reason)
    conditional : str
        Why non-positional generators are conditional ('' when none is).
    """

    generators: tuple
    refused: tuple
    conditional: str = ""
    ix: Any = field(default=None, repr=False, compare=False)

    def explain(self) -> dict:
        return {"generators": [{"name": g.name, "family": g.family,
                                **({"conditional": self.conditional} if not g.positional else {})}
                               for g in self.generators],
                "refused": [{"name": n, "reason": r} for n, r in self.refused]}


def _position_key(G: nx.Graph, ix: _Index) -> np.ndarray:
    """In-rack position of each chip as the relay reads it (routing.leaf.positions): (tray, column), else rank order."""
    rack = ix.labels.get("rack")
    key = np.full(ix.n, -1, np.int64)
    if rack is None:
        return key
    chips = np.flatnonzero(ix.is_chip & (rack >= 0))
    tray, col = ix.labels.get("tray"), ix.labels.get("column")
    if tray is not None and col is not None and np.all(tray[chips] >= 0) and np.all(col[chips] >= 0):
        key[chips] = tray[chips] * (int(col.max()) + 1) + col[chips]
        return key
    o = chips[np.lexsort((ix.rank[chips], rack[chips]))]
    r = rack[o]
    key[o] = np.arange(len(o)) - np.searchsorted(r, r, "left")
    return key


def _consistent(lab: np.ndarray, perm: np.ndarray) -> str:
    """'' when value(n) -> value(perm(n)) is a bijection on the values; else why not."""
    has = lab >= 0
    if not np.array_equal(has, has[perm]):
        return "moves a node that has it onto one that has not"
    a, b = lab[has], lab[perm][has]
    m = int(max(a.max(initial=0), b.max(initial=0))) + 1
    pairs = np.unique(a * m + b)
    pa, pb = pairs // m, pairs % m
    if len(np.unique(pa)) != len(pairs):
        v = pa[np.flatnonzero(np.diff(pa) == 0)[0]]
        return f"splits the nodes of value {int(v)} over several values"
    if len(np.unique(pb)) != len(pairs):
        return "merges the nodes of two values"
    return ""


def _affine(lab: np.ndarray, perm: np.ndarray, k: int) -> bool:
    a, b = lab, lab[perm]
    return bool(len(np.unique((b - a) % k)) == 1 or len(np.unique((b + a) % k)) == 1)


def _group_check(ix: _Index, perm: np.ndarray, groups: np.ndarray, order: str) -> str:
    rank_img = np.full(int(ix.rank.max()) + 1, -1, np.int64)
    rank_img[ix.rank[ix.is_chip]] = ix.rank[perm][ix.is_chip]
    if (rank_img[groups] < 0).any():
        return "it moves a grouped chip onto a node that is not a chip"
    img = rank_img[groups]
    if order == "set":
        a = {tuple(sorted(g)) for g in groups.tolist()}
        b = {tuple(sorted(g)) for g in img.tolist()}
        return "" if a == b else "it maps a group onto chips that are not one group"
    if order == "rotation":
        def norm(rows):
            out = set()
            for g in rows:
                i = int(np.argmin(g))
                out.add(tuple(np.roll(g, -i).tolist()))
            return out
        a, b = norm(groups), norm(img)
        if a == b:
            return ""
        if norm(groups) == norm(img[:, ::-1]):
            return ("it reverses a group's ring order: a reflected ring sends every flow the other way, which is "
                    "not proven to cost the same")
        return "it maps a group onto chips that are not one group in ring order (up to rotation)"
    a = {tuple(g) for g in groups.tolist()}
    b = {tuple(g) for g in img.tolist()}
    return "" if a == b else "it does not map every group onto a group in the same rank order"


def fabric_symmetry(G: nx.Graph, groups: Sequence[Sequence[int]], algorithm: str, *,
                    intact_relays: bool | None = None) -> Symmetry:
    """Verify :func:`candidate_generators` for ``groups`` and ``algorithm`` (see the module docstring).

    Parameters
    ----------
    G : networkx.Graph
        The intact fabric.
    groups : the collective's groups of chip ranks.
    algorithm : str
        A resolved algorithm name (not ``auto``).
    intact_relays : bool, optional
        Whether the intact fabric's routes relay (computed when not given).

    Examples
    --------
    >>> from fabricsim.fabrics import build
    >>> G = build("torus", dims=(4, 4, 4))
    >>> s = fabric_symmetry(G, [list(range(64))], "direct")
    >>> [g.family for g in s.generators]
    ['translation', 'reflection', 'translation', 'reflection', 'translation', 'reflection']
    """
    from ...topo.routing import policy_of
    from ..algorithms import algorithm_record
    ix = _Index(G)
    refused: list = []
    cands = candidate_generators(G, ix, refused)
    sizes = {len(g) for g in groups}
    if len(sizes) > 1:
        return Symmetry((), (("every generator", "the groups differ in size"),), "", ix)
    groups_a = np.asarray([[int(r) for r in g] for g in groups], np.int64).reshape(len(groups), -1)
    chip_ranks = set(ix.rank[ix.is_chip].tolist())
    if not set(groups_a.ravel().tolist()) <= chip_ranks:
        return Symmetry((), (("every generator", "a group names a rank that no chip has"),), "", ix)
    # what of the groups' rank order the algorithm's phases read (its record's order)
    record = algorithm_record(algorithm)
    order = record.order if record is not None else None
    if order is None:
        return Symmetry((), (("every generator", f"algorithm {algorithm!r} builds its phases from racks or torus "
                                                 f"coordinates; no generator is proven to keep them"),), "", ix)
    tier_rule = policy_of(G).tier_rule
    read = _read_labels(G, ix)
    pos = _position_key(G, ix) if tier_rule else None
    conditional = ""
    if tier_rule:
        relays = RelayCheck(G)(()) if intact_relays is None else intact_relays
        conditional = ("relays are chosen by in-rack position and rank, so a generator that moves positions holds "
                       "only where the degraded global tier still joins every chip (checked per orbit)")
    ok = []
    alt_done: set[str] = set()
    alt_why: dict[str, tuple[str, str]] = {}
    for g in cands:
        if g.alt and g.alt in alt_done:
            continue
        why = _verify(ix, g.perm, read, groups_a, order, algorithm)
        if why and g.alt:
            alt_why.setdefault(g.alt, (g.name, why))       # the first refusal speaks for the family
            continue
        if g.alt:
            alt_done.add(g.alt)
        if not why and pos is not None:
            chips = ix.is_chip & (pos >= 0)
            positional = bool(np.array_equal(pos[g.perm][chips], pos[chips]))
            if not positional:
                if relays:
                    why = ("it moves chips' in-rack positions, and the intact fabric's routes relay (rail-only "
                           "PXN): a relay is chosen by position and rank, so the routes would not follow")
                else:
                    g = Generator(g.name, g.family, g.perm, positional=False)
        if why:
            refused.append((g.name, why))
        else:
            ok.append(g)
    refused += [nw for a, nw in alt_why.items() if a not in alt_done]
    ok += _medium_blind_translations(ix, ok, read, groups_a, order, algorithm)
    if not cands and not refused:
        refused.append(("every generator", "the fabric's structure suggests none: no torus axes, no rack / rail / "
                        "tray / group labels whose values could be permuted, no interchangeable nodes and no "
                        "symmetry annotation (G.graph['symmetry'])"))
    return Symmetry(tuple(ok), tuple(refused), conditional if any(not g.positional for g in ok) else "", ix)


# Edge attributes no price reads (routing, the solver and the step model read capacity, lanes,
# latency, hops and tier; ``medium`` is read by the bill of materials and the drawings only).
_PRICE_BLIND_EDGE = ("medium",)


def _medium_blind_translations(ix: _Index, ok: list, read: Sequence[str], groups: np.ndarray, order: str,
                               algorithm: str) -> list:
    """Unit translations of a torus whose links differ only in ``medium`` (Ironwood: copper in a
    cube, optical between cubes), verified with the medium left out of the link comparison.

    Where links differ by medium, :func:`_torus`'s translation that verifies is the cube edge (4),
    which keeps cubes, trays and OCSes; a translation by one maps a copper link onto an optical
    one with the same capacity, lanes, latency and hops, so every price is kept.  It is added
    beside the cube translation, not instead of it: a class it does not map onto itself
    (cubes) still folds by the cube step, and classes it maps in part (OCSes along the other
    axes) fold where it does (:func:`_domain_images`).  ``[]`` where the unit translation already
    verified or the fabric is no torus.
    """
    from ...topo.routing import policy_of
    if "torus" not in policy_of(ix.G).generators:      # the routing keeps no torus maps
        return []
    have = {g.name for g in ok}
    cands = [g for g in _torus(ix) if g.family == "translation" and g.name.startswith("translation by 1 along ")
             and g.name not in have]
    if not cands:
        return []
    edges = [d for *_, d in ix.G.edges(data=True)]
    if not any(a in d for d in edges for a in _PRICE_BLIND_EDGE):
        return []
    blind = copy.copy(ix)
    blind.edge_sig, blind.edge_attr_names = _signatures(edges, LABEL_EDGE_ATTRS + COSMETIC_EDGE_ATTRS
                                                        + _PRICE_BLIND_EDGE)
    out = []
    for g in cands:
        if not _verify(blind, g.perm, read, groups, order, algorithm):
            out.append(Generator(g.name + " (links differ only in medium, which no price reads)", g.family,
                                 g.perm))
    return out


def _differing(a: dict, b: dict) -> str:
    """The attributes two attribute dicts disagree on, sorted and comma-separated."""
    return ", ".join(sorted(k for k in set(a) | set(b) if a.get(k) != b.get(k)))


def _verify(ix: _Index, perm: np.ndarray, read: Sequence[str], groups: np.ndarray, order: str | None,
            algorithm: str) -> str:
    if len(perm) != ix.n or np.bincount(perm, minlength=ix.n).max(initial=0) > 1:
        return "it is not a permutation of the nodes"
    bad = np.flatnonzero(ix.node_sig[perm] != ix.node_sig)
    if len(bad):
        i = int(bad[0])
        diff = _differing(ix.node_attr_names[int(ix.node_sig[i])],
                          ix.node_attr_names[int(ix.node_sig[perm[i]])])
        return f"it maps {ix.nodes[i]} onto {ix.nodes[perm[i]]}, which differs in {diff}"
    img = ix.edge_image(perm)
    miss = np.flatnonzero(img < 0)
    if len(miss):
        e = int(miss[0])
        return (f"it maps link {ix.link(e)} onto {ix.nodes[perm[ix.eu[e]]]}--{ix.nodes[perm[ix.ev[e]]]}, "
                f"which is not a link")
    bad = np.flatnonzero(ix.edge_sig[img] != ix.edge_sig)
    if len(bad):
        e = int(bad[0])
        diff = _differing(ix.edge_attr_names[int(ix.edge_sig[e])],
                          ix.edge_attr_names[int(ix.edge_sig[img[e]])])
        return f"it maps link {ix.link(e)} onto {ix.link(int(img[e]))}, which differs in {diff}"
    dims = [int(x) for x in str(ix.G.graph.get("dims", "")).split("x") if x.strip().isdigit()]
    for a in read:
        why = _consistent(ix.labels[a], perm)
        if why:
            return f"it does not map the {a} label the routing reads consistently: it {why}"
        if a in AXES and AXES.index(a) < len(dims) and not _affine(ix.labels[a], perm, dims[AXES.index(a)]):
            return f"it does not map coordinate {a} as x -> +-x + t (dimension-order routes would change)"
    return _group_check(ix, perm, groups, order)


def _relays(H: nx.Graph) -> bool:
    """Whether the tier rule's routes on ``H`` relay: its global tier does not join every chip."""
    from ...topo.routing import core, link_table
    lt = link_table(H)
    net = core.node_arrays(H, lt)
    chips = net.node_of_rank[net.node_of_rank >= 0]
    if not len(chips):
        return False
    return not core.Reach(net, lt.tier == "global").joins(chips)


class RelayCheck:
    """``check(domains)``: whether the tier rule relays once ``domains`` have failed, as
    :func:`_relays` on the degraded graph says, computed on the intact link table with the
    failed links masked out (no copy of the graph).  Fabrics with patch switches (whose
    forwarding links are not the graph's edges) take the copy: ``apply_failures``.
    """

    def __init__(self, G: nx.Graph):
        from ...topo.contract import LANES
        from ...topo.routing import core, link_table
        self.G, self._core, self._lanes = G, core, LANES
        self.patched = any(d.get("patch") for _, d in G.nodes(data=True))
        if self.patched:
            return
        self.lt = link_table(G)
        self.net = core.node_arrays(G, self.lt)
        self.idx = {v: i for i, v in enumerate(self.lt.nodes)}
        n = len(self.lt.nodes)
        self.n = n
        key = self.lt.src.astype(np.int64) * n + self.lt.dst
        self.order = np.argsort(key, kind="stable")
        self.keys = key[self.order]
        self.glob = np.asarray(self.lt.tier == "global")
        self.chips = self.net.node_of_rank[self.net.node_of_rank >= 0]

    def _links(self, u: int, v: int) -> list[int]:
        out = []
        for k in (u * self.n + v, v * self.n + u):
            i = np.searchsorted(self.keys, k)
            if i < len(self.keys) and self.keys[i] == k:
                out.append(int(self.order[i]))
        return out

    def __call__(self, doms: Sequence) -> bool:
        if self.patched:
            from ...topo.failures import apply_failures
            return _relays(apply_failures(self.G, [f"node:{n}" for d in doms for n in d.nodes]
                                          + [f"link:{u}--{v}" if d.lanes is None else f"lanes:{u}--{v}={d.lanes}"
                                             for d in doms for u, v in d.edges])[0])
        mask = self.glob.copy()
        dead = np.array([self.idx[x] for d in doms for x in d.nodes if x in self.idx], np.int64)
        if len(dead):
            mask &= ~(np.isin(self.lt.src, dead) | np.isin(self.lt.dst, dead))
        lost: dict[tuple, int] = {}
        for d in doms:
            for u, v in d.edges:
                lost[(u, v)] = lost.get((u, v), 0) + (self.G.edges[u, v][self._lanes] if d.lanes is None
                                                      else int(d.lanes))
        for (u, v), k in lost.items():
            if k >= self.G.edges[u, v][self._lanes]:
                mask[self._links(self.idx[u], self.idx[v])] = False
        chips = self.chips[~np.isin(self.chips, dead)] if len(dead) else self.chips
        if not len(chips):
            return False
        return not self._core.Reach(self.net, mask).joins(chips)


# ---------------------------------------------------------------------------------------
# Scenario orbits
# ---------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Orbits:
    """A sweep's scenarios partitioned into orbits.

    Attributes
    ----------
    orbit : numpy.ndarray of int64, shape (S,)
        Orbit of each scenario; orbits are numbered by their first scenario.
    reps : numpy.ndarray of int64, shape (O,)
        The representative (first) scenario of each orbit.
    size : numpy.ndarray of int64, shape (O,)
    used, refused : tuple
        Generator names used for this class; ``(name, reason)`` refused for it.
    notes : tuple of str
    """

    orbit: np.ndarray
    reps: np.ndarray
    size: np.ndarray
    used: tuple
    refused: tuple
    notes: tuple = ()
    # the BFS forest over the scenario space (every domain for n = 1, else the scenarios)
    member: np.ndarray = field(default=None, repr=False, compare=False)   # space index of each scenario
    order: np.ndarray = field(default=None, repr=False, compare=False)    # space indices, parents first
    pred: np.ndarray = field(default=None, repr=False, compare=False)     # parent in the space, -1 at roots
    pred_gen: np.ndarray = field(default=None, repr=False, compare=False)  # generator taking parent to it
    gens: tuple = field(default=(), repr=False, compare=False)

    @property
    def n_orbits(self) -> int:
        return len(self.reps)

    def map_nodes(self, rep_nodes: dict[int, np.ndarray]) -> dict[int, np.ndarray]:
        """Node indices given per representative scenario, carried to every scenario of its orbit
        (the image under the generator word from the representative, along the BFS tree)."""
        if self.order is None:
            return {int(r): np.asarray(v, np.int64) for r, v in rep_nodes.items()}
        at = {int(self.member[r]): np.asarray(v, np.int64) for r, v in rep_nodes.items()}
        pred, pg, perms = self.pred, self.pred_gen, [g.perm for g in self.gens]
        for v in self.order.tolist():
            p = int(pred[v])
            if p >= 0 and v not in at and p in at:
                at[v] = perms[int(pg[v])][at[p]]
        return {i: at[m] for i, m in enumerate(self.member.tolist()) if m in at}


def _domain_images(ix: _Index, doms: list, gens: list[Generator], partial: bool = False
                   ) -> tuple[list[np.ndarray], list[tuple]]:
    """Per generator, the domain index of each domain's image (None where a generator is refused).

    ``partial``: a generator that maps some domains onto domains of the class and others not is
    kept with -1 at the others (a fabric automorphism maps the scenario of a domain whose image is
    a domain onto that domain's scenario, whatever it does to the rest); refused only when no
    domain maps.  Otherwise one domain whose image is not a domain refuses it."""
    k = len(doms)
    images, refused = [], []
    single_node = all(len(d.nodes) == 1 and not d.edges for d in doms)
    single_edge = all(len(d.edges) == 1 and not d.nodes for d in doms)
    if single_node:
        dom_of = np.full(ix.n, -1, np.int64)
        at = np.array([ix.index[d.nodes[0]] for d in doms], np.int64)
        dom_of[at] = np.arange(k)
    elif single_edge:
        e_of = {}
        for e, (u, v) in enumerate(zip(ix.eu.tolist(), ix.ev.tolist())):
            e_of[(u, v)] = e
            e_of[(v, u)] = e
        dom_of = np.full(len(ix.eu), -1, np.int64)
        at = np.array([e_of[(ix.index[d.edges[0][0]], ix.index[d.edges[0][1]])] for d in doms], np.int64)
        dom_of[at] = np.arange(k)
    else:
        e_of = {}
        for e, (u, v) in enumerate(zip(ix.eu.tolist(), ix.ev.tolist())):
            e_of[(u, v)] = e
            e_of[(v, u)] = e
        sets = [(frozenset(ix.index[n] for n in d.nodes), frozenset(e_of[(ix.index[u], ix.index[v])]
                                                                     for u, v in d.edges), d.lanes) for d in doms]
        key_of = {s: i for i, s in enumerate(sets)}
    for g in gens:
        if single_node:
            img = dom_of[g.perm[at]]
        elif single_edge:
            img = dom_of[ix.edge_image(g.perm)[at]]
        else:
            eimg = ix.edge_image(g.perm)
            img = np.array([key_of.get((frozenset(g.perm[list(nd)].tolist()) if nd else frozenset(),
                                        frozenset(eimg[list(ed)].tolist()) if ed else frozenset(), ln), -1)
                            for nd, ed, ln in sets], np.int64)
        if (img < 0).all() or ((img < 0).any() and not partial):
            j = int(np.flatnonzero(img < 0)[0])
            refused.append((g.name, f"it maps domain {doms[j].id!r} onto elements that are not one domain of "
                                    f"the class"))
            images.append(None)
        else:
            images.append(img)
    return images, refused


def scenario_orbits(sym: Symmetry, doms: list, combos: Sequence[tuple], *,
                    needs_positional: Callable[[tuple], bool] | None = None) -> Orbits:
    """Partition ``combos`` (tuples of indices into ``doms``) into orbits under ``sym``'s generators.

    Parameters
    ----------
    sym : Symmetry
        From :func:`fabric_symmetry`.
    doms : list of Domain
        The swept failure class's domains (:func:`~fabricsim.topo.failures.domains`).
    combos : sequence of tuple of int
        The scenarios (sorted index tuples, all of one length ``n``).
    needs_positional : callable, optional
        ``needs_positional(combo)`` tells whether a representative's routes relay;
        orbits whose representative does are split using position-keeping generators
        only.  Needed when ``sym.conditional`` is set (then a check per orbit).

    Returns
    -------
    Orbits

    Notes
    -----
    Union-find over generator images, as the connected components of the graph with
    an edge ``s -> g(s)`` per scenario and generator (``scipy.sparse.csgraph``):
    the orbits of the group the generators span.  All C(k, n) scenarios (or, for
    ``n = 1``, all domains) are folded at once; a sample of ``n >= 2`` scenarios folds
    only where a generator maps one sampled scenario onto another.
    """
    from scipy.sparse import csgraph, csr_matrix
    ix = sym.ix
    S = len(combos)
    k = len(doms)
    C = np.asarray(combos, np.int64).reshape(S, -1) if S else np.zeros((0, 1), np.int64)
    n = C.shape[1]
    notes = []
    images, refused = _domain_images(ix, doms, list(sym.generators), partial=True)
    gens = [g for g, im in zip(sym.generators, images) if im is not None]
    images = [im for im in images if im is not None]
    part = [g.name for g, im in zip(gens, images) if (im < 0).any()]
    if part:
        notes.append(f"partial generators (they map only some domains of the class onto domains, and fold "
                     f"those): {'; '.join(part)}")
    if n > MAX_N_KEYED or float(k) ** n >= 2 ** 62:
        ids = np.arange(S, dtype=np.int64)
        return Orbits(ids, ids.copy(), np.ones(S, np.int64), (), tuple(sym.refused) + tuple(refused),
                      (f"scenarios of {n} failures are not folded (keys of {k}^{n} do not fit in 64 bits)",))
    # every scenario space the images may land in: all of it for n = 1, else the combos
    full = n == 1 or S == math.comb(k, n)
    if n == 1 and S < k:
        space = np.arange(k, dtype=np.int64)[:, None]
    else:
        space = C
    pw = np.array([k ** (n - 1 - t) for t in range(n)], np.int64)
    skeys = space @ pw
    order = np.argsort(skeys, kind="stable")
    sorted_keys = skeys[order]
    V = len(space)
    src, dst, lab = [], [], []
    dense = n == 1 and V == k and bool(np.array_equal(space[:, 0], np.arange(k)))   # keys are the indices
    for gi, im in enumerate(images):
        if dense:
            s = np.flatnonzero(im >= 0)
            t = im[s]
        else:
            mapped = im[space]
            key = np.sort(mapped, axis=1) @ pw
            pos = np.minimum(np.searchsorted(sorted_keys, key), V - 1)
            hit = (sorted_keys[pos] == key) & (mapped >= 0).all(axis=1)
            s = np.flatnonzero(hit)
            t = order[pos[hit]]
        mv = s != t
        src.append(s[mv])
        dst.append(t[mv])
        lab.append(np.full(int(mv.sum()), gi, np.int64))
    if not full and n > 1 and gens:
        notes.append("sampled scenarios fold only where a generator maps one sampled scenario onto another")
    src = np.concatenate(src) if src else np.zeros(0, np.int64)
    dst = np.concatenate(dst) if dst else np.zeros(0, np.int64)
    lab = np.concatenate(lab) if lab else np.zeros(0, np.int64)
    positional = np.array([g.positional for g in gens], bool)

    def components(mask):
        A = csr_matrix((np.ones(int(mask.sum())), (src[mask], dst[mask])), shape=(V, V))
        return csgraph.connected_components(A, directed=True, connection="weak")[1]

    keep = np.ones(len(src), bool)
    comp = components(keep)
    split_n = 0
    if needs_positional is not None and not positional.all() and len(src):
        # first member of each component (in space order) is its representative
        swept = C[:, 0] if space is not C else np.arange(S)
        cs, first = np.unique(comp[swept], return_index=True)
        relay = np.zeros(comp.max() + 1, bool)
        sizes = np.bincount(comp)
        for c, f in zip(cs.tolist(), first.tolist()):
            if sizes[c] > 1 and needs_positional(tuple(int(x) for x in C[f])):
                relay[c] = True
        if relay.any():
            split_n = int(relay.sum())
            keep = ~(relay[comp[src]] & ~positional[lab])
            comp = components(keep)
    if split_n:
        notes.append(f"{split_n} orbit(s) relay after their failure: split by the generators that keep in-rack "
                     f"positions")
    # restrict to the scenarios swept
    scomp = comp if space is C else comp[C[:, 0]]
    _, first_idx, inv = np.unique(scomp, return_index=True, return_inverse=True)
    # number orbits by their first scenario
    o_order = np.argsort(first_idx, kind="stable")
    renum = np.empty_like(o_order)
    renum[o_order] = np.arange(len(o_order))
    orbit = renum[inv.reshape(-1)]
    reps = first_idx[o_order]
    size = np.bincount(orbit, minlength=len(reps))
    # BFS from each representative over s -> g(s) in the space, for carrying images along
    member = np.arange(S) if space is C else C[:, 0]
    order_sp = pred_sp = pg_sp = None
    if len(src) and keep.any():
        s_, d_, l_ = src[keep], dst[keep], lab[keep]
        kk, first = np.unique(s_ * V + d_, return_index=True)
        s_, d_, l_ = s_[first], d_[first], l_[first]
        rep_space = member[reps]            # one per component that holds a scenario
        root = V
        rows = np.concatenate([s_, np.full(len(rep_space), root)])
        cols = np.concatenate([d_, rep_space])
        A = csr_matrix((np.ones(len(rows)), (rows, cols)), shape=(V + 1, V + 1))
        order_bfs, preds = csgraph.breadth_first_order(A, root, directed=True, return_predecessors=True)
        order_sp = order_bfs[order_bfs != root]
        pred_sp = np.full(V, -1, np.int64)
        pg_sp = np.full(V, -1, np.int64)
        p = preds[order_sp].astype(np.int64)
        inner = p != root
        q = order_sp[inner]
        pred_sp[q] = p[inner]
        pg_sp[q] = l_[np.searchsorted(kk, p[inner] * V + q)]
    o = Orbits(orbit, reps, size, tuple(g.name for g in gens), tuple(sym.refused) + tuple(refused),
               tuple(notes), member, order_sp, pred_sp, pg_sp, tuple(gens))
    return o


def _firsts(comp: np.ndarray) -> np.ndarray:
    _, first = np.unique(comp, return_index=True)
    return first


# ---------------------------------------------------------------------------------------
# One scenario: which verified symmetries its failures keep, and its orbit
# ---------------------------------------------------------------------------------------
def failure_symmetry(G: nx.Graph, groups: Sequence[Sequence[int]], algorithm: str, specs: Sequence[str]) -> dict:
    """What ``whatif --explain`` shows of the symmetry: generators verified on the intact fabric,
    those that map the failed elements onto themselves (they span a subgroup of its stabilizer),
    and, for one failure, the size of its orbit among the domains of its class.

    Examples
    --------
    >>> from fabricsim.fabrics import build
    >>> G = build("torus", dims=(4, 4, 4))
    >>> d = failure_symmetry(G, [list(range(64))], "direct", ["link:c00.00.00--c01.00.00"])
    >>> d["orbit_size"], [g["name"] for g in d["stabilizer"]]
    (64, ['reflection of y (x -> 0 - x mod 4)', 'reflection of z (x -> 0 - x mod 4)'])
    """
    from ...topo.failures import never_kept, parse_spec, preserved_symmetries, resolve
    sym = fabric_symmetry(G, groups, algorithm)
    ix = sym.ix
    parsed = [parse_spec(s) for s in specs]
    doms = resolve(G, parsed)
    e_of = {}
    for e, (u, v) in enumerate(zip(ix.eu.tolist(), ix.ev.tolist())):
        e_of[(u, v)] = e_of[(v, u)] = e
    nodes = sorted({ix.index[n] for d in doms for n in d.nodes})
    edges = sorted({e_of[(ix.index[u], ix.index[v])] for d in doms for u, v in d.edges})
    keep, skipped = [], set()
    skip = set.intersection(*(set(never_kept(p.cls)) for p in parsed)) if parsed else set()
    for g in sym.generators:
        if g.family in skip:
            skipped.add(g.family)          # it moves every node: it keeps no failure of these classes
            continue
        img_n = sorted(g.perm[nodes].tolist()) if nodes else []
        img_e = sorted(ix.edge_image(g.perm)[edges].tolist()) if edges else []
        if img_n == nodes and img_e == edges:
            keep.append(g)
    out = {"generators": sym.explain()["generators"], "refused": sym.explain()["refused"],
           "stabilizer": [{"name": g.name, "family": g.family} for g in keep],
           "preserves": {p.cls: preserved_symmetries(p.cls) for p in parsed},
           "not_checked": sorted(skipped)}
    if len(parsed) == 1:
        from ...topo.failures import domains as _domains
        cls = parsed[0].cls
        try:
            cdoms = _domains(G, [cls])[cls]
        except BadInput:
            cdoms = []
        ids = [d.id for d in cdoms]
        if doms[0].id in ids:
            orb = scenario_orbits(sym, cdoms, [(i,) for i in range(len(cdoms))])
            o = int(orb.orbit[ids.index(doms[0].id)])
            out["orbit_size"] = int(orb.size[o])
            out["class_orbits"] = orb.n_orbits
            out["class_domains"] = len(cdoms)
    if sym.conditional:
        out["conditional"] = sym.conditional
    return out
