"""Failure domains and failure specs: what can fail together, and a degraded copy of the graph.

Public names
------------
Domain, domains, domain_classes
    The failure domains of a graph, by class, derived from the graph contract's
    attributes (so a user's GraphML or JSON fabric gets them too).
FailureSpec, parse_spec, SPEC_GRAMMAR
    The failure spec language (one string per failure).
resolve, SpecIndex
    The domain each spec names in a graph, checked, without applying anything.
FailureClass, FAILURE_CLASSES, failure_class, register, unregister, GraphTags, graph_tags
    The registry of failure classes: each one record (its spec syntax, how a graph's
    domains of it are found, what a failure of it keeps).  Adding a class is one
    ``register(FailureClass(...))``; everything above reads the records.
apply_failures
    A degraded copy of a graph with the failures applied, and what each removed.
chip_tier_bandwidth
    Each chip's link capacity per tier, GB/s per direction, on the forwarding graph.
PRESERVES, preserved_symmetries, NEVER_KEPT, never_kept
    Per failure class (live views of the records), the symmetries of the intact fabric a failure of that class
    keeps (its stabilizer), in words, and the generator families it never keeps;
    ``whatif --explain`` and ``fabricsim domains`` show them.  The orbit code
    (:mod:`fabricsim.collectives.whatif.orbits`) computes the stabilizer itself (a generator
    keeps a failure when it maps the failed elements onto themselves) and skips the
    families a class never keeps.

Spec grammar
------------
``CLASS:ID`` names one domain of a class; ``lanes:A--B=K`` fails K lanes of a bundle::

    node:ID            a chip or switch by node id (as ``fabricsim export`` writes it)
    link:A--B          the bundle between nodes A and B (either order)
    lanes:A--B=K       K lanes of that bundle (K = its lanes removes the link; more is an error)
    chip:ID  switch:ID  <role>-switch:ID     a node, checked to be of that kind/role
                       (local-switch, leaf-switch, rail-switch, nvlink-switch, spine-switch ...)
    tray:r03/t05       a chip tray: the chips sharing rack (or cube) and tray; ``tray:t05``
                       where the fabric has a single rack
    switch-tray:r03/st6    the switches sharing rack and ``switch_tray`` (``st4`` in one rack)
    rack:3  cube:5  board:17  group:3  plane:4  rail:2
                       every node carrying that tag value (a rail: its rail switches)
    ocs:12  harness:7  every link carrying that tag (an optical circuit switch, a cable harness)

Integers in ids may be written with or without leading zeros (``rack:03`` = ``rack:3``,
``tray:r3/t5`` = ``tray:r03/t05``).  ``domains(G)`` lists every valid id; a spec naming
an id the graph lacks is refused with close matches.

Notes
-----
* A removed node takes its links with it; a removed chip breaks every collective
  group it belongs to (the pricing reports the group as broken).
* A lane failure keeps the bundle with fewer lanes: ``capacity_gbps`` = lanes x
  ``lane_gbps`` (the optimistic reading that a port runs on its surviving lanes);
  where the survivors no longer make whole ports, ``port_gbps`` drops to the widest
  port that divides them, and ``failed_lanes`` counts the lanes lost.
* Lanes of a bundle at a patch switch (Jalapeño ``leaf=static``) can be failed only
  where the bundle is one circuit (per-port wiring): with several circuits per
  bundle, or on the patch switch's far side, the graph does not say which circuit a
  lane carries, so such a lane failure is refused (fail the far-side switch or the
  link instead).
* ``column`` and ``circuit`` tags are placement/wiring tags, not shared fate: no class.
"""
from __future__ import annotations

import json
import math
import re
from collections import defaultdict
from dataclasses import dataclass
from collections.abc import Mapping, Sequence
from typing import Any, Callable, Iterable

import networkx as nx

from .contract import (CAPACITY_GBPS, CHIP, bundle_gbps, KIND, LANE_GBPS, LANES, PATCH, PORT_GBPS, RANK, ROLE, SWITCH, TIER,
                       forwarding_graph)
from .errors import BadInput, close_matches

__all__ = ["Domain", "domains", "domain_classes", "FailureSpec", "parse_spec", "resolve", "SpecIndex",
           "apply_failures", "chip_tier_bandwidth", "SPEC_GRAMMAR", "NODE_TAG_CLASSES", "EDGE_TAG_CLASSES",
           "PRESERVES", "preserved_symmetries", "NEVER_KEPT", "never_kept", "FailureClass", "FAILURE_CLASSES",
           "GraphTags", "graph_tags", "failure_class", "register", "unregister"]

# Node tags whose equal values fail together: class name -> attribute.
NODE_TAG_CLASSES = {"rack": "rack", "cube": "cube", "board": "board", "group": "group", "plane": "plane",
                    "rail": "rail"}
# Edge tags whose equal values fail together (the shared-fate tags of the contract).
EDGE_TAG_CLASSES = {"ocs": "ocs", "harness": "harness"}
SPEC_GRAMMAR = ("node:ID | link:A--B | lanes:A--B=K | chip:ID | switch:ID | ROLE-switch:ID | tray:ID | "
                "switch-tray:ID | rack:N | cube:N | board:N | group:N | plane:N | rail:N | ocs:N | harness:N")
_EXAMPLES = "e.g. node:r00/lsw0, link:A--B, lanes:A--B=2, tray:r00/t03, rail:2"


# ---------------------------------------------------------------------------------------
# Domains
# ---------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Domain:
    """One failure domain: what fails together.

    Attributes
    ----------
    id : str
        The id as a spec spells it: the spec is ``f"{class}:{id}"``.
    description : str
    nodes : tuple
        Node ids that fail (their links fail with them).
    edges : tuple of (u, v)
        Links that fail in their own right (not counting links of failed nodes).
    lanes : int or None
        For the ``lanes`` class: the lanes of ``edges[0]`` that fail.
    """

    id: str
    description: str
    nodes: tuple = ()
    edges: tuple = ()
    lanes: int | None = None

    def as_dict(self) -> dict[str, Any]:
        """JSON form: node ids as strings, links as ``"A--B"``."""
        return {"id": self.id, "description": self.description, "nodes": [str(n) for n in self.nodes],
                "edges": [_link_id(u, v) for u, v in self.edges], "lanes": self.lanes}


def _num(v: Any) -> bool:
    return isinstance(v, int) and not isinstance(v, bool)


def _norm(text: str) -> str:
    """Canonical form of an id for lookups: integers without leading zeros."""
    return re.sub(r"\d+", lambda m: str(int(m.group())), text.strip())


def _link_id(u, v) -> str:
    return f"{u}--{v}"


def _role_class(role: str) -> str:
    return f"{role}-switch"


def _tray_key(d: dict):
    """(rack or cube, tray) of a node with a tray tag."""
    outer = d.get("rack", d.get("cube"))
    return (outer if _num(outer) else None, d["tray"])


def _ambiguous_lanes(G: nx.Graph, u, v, d: dict) -> str:
    """Why lanes of bundle u--v cannot be failed one by one ("" when they can)."""
    pu, pv = G.nodes[u].get(PATCH), G.nodes[v].get(PATCH)
    if not (pu or pv):
        return ""
    p, other = (u, v) if pu else (v, u)
    if G.nodes[other].get(KIND) != CHIP:
        return (f"it is on the far side of patch switch {p}, whose circuits are counted from the chip side; "
                f"which circuits the lost lanes carried is not in the graph")
    circ = d.get("circuit_lanes")
    if circ is not None and int(circ) < d[LANES]:
        return (f"it carries {d[LANES] // int(circ)} patched circuits of {int(circ)} lane(s) through {p} and the "
                f"graph does not say which circuit a lane belongs to")
    return ""


def _node_domains(G: nx.Graph, keep: Callable[[dict], bool]) -> list[Domain]:
    """One domain per node whose attributes ``keep`` accepts, in graph order."""
    out = []
    for n, d in G.nodes(data=True):
        if not keep(d):
            continue
        kind = d.get(KIND)
        what = f"chip (rank {d.get(RANK)})" if kind == CHIP else f"{d.get(ROLE, '')} switch ({d.get('model', '?')})"
        out.append(Domain(str(n), what, nodes=(n,)))
    return out


def _is_chip(d: dict, cls: str = "") -> bool:
    return d.get(KIND) == CHIP


def _is_switch(d: dict, cls: str = "") -> bool:
    return d.get(KIND) == SWITCH


def _is_role_switch(d: dict, cls: str) -> bool:
    return d.get(KIND) == SWITCH and _role_class(str(d.get(ROLE))) == cls


def _class_links(G: nx.Graph, cls: str = "link") -> list[Domain]:
    return [Domain(_link_id(u, v), f"{d.get(LANES)} x {d.get(LANE_GBPS):g}G {d.get(TIER)} "
                                   f"{d.get('medium', '')}".rstrip(), edges=((u, v),))
            for u, v, d in G.edges(data=True)]


def _class_lanes(G: nx.Graph, cls: str = "lanes") -> list[Domain]:
    return [Domain(_link_id(u, v) + "=1", f"1 of {d[LANES]} lanes of a {d.get(TIER)} link", edges=((u, v),),
                   lanes=1)
            for u, v, d in G.edges(data=True)
            if _num(d.get(LANES)) and d[LANES] >= 2 and not _ambiguous_lanes(G, u, v, d)]


def _class_tray(G: nx.Graph, cls: str = "tray") -> list[Domain]:
    groups: dict[tuple, list] = defaultdict(list)
    for n, d in G.nodes(data=True):
        if _num(d.get("tray")):
            groups[_tray_key(d)].append(n)
    multi = len({k[0] for k in groups}) > 1
    out = []
    for (outer, tray), members in sorted(groups.items(), key=lambda kv: (kv[0][0] is not None, kv[0])):
        tid = f"r{outer:02d}/t{tray:02d}" if multi and outer is not None else f"t{tray:02d}"
        out.append(Domain(tid, f"tray {tid}: {len(members)} chip(s)", nodes=tuple(members)))
    return out


def _class_switch_tray(G: nx.Graph, cls: str = "switch-tray") -> list[Domain]:
    groups: dict[tuple, list] = defaultdict(list)
    for n, d in G.nodes(data=True):
        if _num(d.get("switch_tray")):
            rack = d.get("rack")
            groups[(rack if _num(rack) else None, d["switch_tray"])].append(n)
    multi = len({k[0] for k in groups}) > 1
    out = []
    for (rack, st), members in sorted(groups.items(), key=lambda kv: (kv[0][0] is not None, kv[0])):
        sid = f"r{rack:02d}/st{st}" if multi and rack is not None else f"st{st}"
        roles = sorted({str(G.nodes[m].get(ROLE, G.nodes[m].get(KIND))) for m in members})
        out.append(Domain(sid, f"switch tray {sid}: {len(members)} {'/'.join(roles)} ASIC(s) "
                               f"({', '.join(map(str, members[:4]))}{' ...' if len(members) > 4 else ''})",
                          nodes=tuple(members)))
    return out


def _class_node_tag(G: nx.Graph, cls: str) -> list[Domain]:
    attr = NODE_TAG_CLASSES[cls]
    groups: dict[int, list] = defaultdict(list)
    for n, d in G.nodes(data=True):
        if _num(d.get(attr)):
            groups[d[attr]].append(n)
    out = []
    for val in sorted(groups):
        members = groups[val]
        n_chips = sum(G.nodes[m].get(KIND) == CHIP for m in members)
        parts = [f"{n_chips} chip(s)"] if n_chips else []
        if len(members) > n_chips:
            parts.append(f"{len(members) - n_chips} switch(es)")
        out.append(Domain(str(val), f"{cls} {val}: {', '.join(parts)}", nodes=tuple(members)))
    return out


_EDGE_TAG_NAMES = {"ocs": "optical circuit switch", "harness": "cable harness"}


def _class_edge_tag(G: nx.Graph, cls: str) -> list[Domain]:
    attr = EDGE_TAG_CLASSES[cls]
    groups: dict[int, list] = defaultdict(list)
    for u, v, d in G.edges(data=True):
        if _num(d.get(attr)):
            groups[d[attr]].append((u, v))
    name = _EDGE_TAG_NAMES[cls]
    return [Domain(str(val), f"{name} {val}: {len(groups[val])} link(s)", edges=tuple(groups[val]))
            for val in sorted(groups)]


# ---------------------------------------------------------------------------------------
# Specs
# ---------------------------------------------------------------------------------------
@dataclass(frozen=True)
class FailureSpec:
    """One parsed failure: ``cls:id`` (with ``lanes`` for ``lanes:A--B=K``)."""

    cls: str
    id: str
    lanes: int | None = None

    @property
    def text(self) -> str:
        return f"{self.cls}:{self.id}" + (f"={self.lanes}" if self.lanes is not None else "")

    def __str__(self) -> str:
        return self.text


class SpecIndex:
    """Node-id and link lookups of one graph by their string spelling, and the domains looked up so far
    (one per graph, shared by the specs resolved against it: see :func:`resolve`)."""

    def __init__(self, G: nx.Graph):
        self.G = G
        self.nodes = {str(n): n for n in G.nodes}
        self.order = {n: i for i, n in enumerate(G.nodes)}
        self.cache: dict = {}

    def node(self, ident: str, spec: FailureSpec, what: str = "node"):
        n = self.nodes.get(ident)
        if n is None:
            raise BadInput(f"failure spec {spec.text!r}: no {what} {ident!r} in "
                           f"{self.G.graph.get('name', 'this fabric')!r}{close_matches(ident, self.nodes)}")
        return n

    def link(self, spec: FailureSpec):
        ident = spec.id
        cuts = [m.start() for m in re.finditer("--", ident)]
        for c in cuts:
            a, b = ident[:c].strip(), ident[c + 2:].strip()
            if a in self.nodes and b in self.nodes:
                u, v = self.nodes[a], self.nodes[b]
                if self.G.has_edge(u, v):
                    # the orientation G.edges reports (earlier node first), as domains() spells it
                    return (u, v) if self.order[u] < self.order[v] else (v, u)
                nbrs = sorted(map(str, self.G[u]))
                raise BadInput(f"failure spec {spec.text!r}: no link between {a!r} and {b!r}"
                               f"{close_matches(b, nbrs)}; {a!r} links to {len(nbrs)} node(s), e.g. "
                               f"{', '.join(nbrs[:4])}")
        a, b = ident[:cuts[0]].strip(), ident[cuts[0] + 2:].strip()
        bad = a if a not in self.nodes else b
        raise BadInput(f"failure spec {spec.text!r}: no node {bad!r} in "
                       f"{self.G.graph.get('name', 'this fabric')!r}{close_matches(bad, self.nodes)}")


# per-class spec parsing and lookups (the FailureClass records below use them)
def _parse_link(ident: str, text: str) -> tuple[str, int | None]:
    if "--" not in ident:
        raise BadInput(f"failure spec {text!r}: a link is spelled A--B (two node ids joined by --)")
    return ident, None


def _parse_lanes(ident: str, text: str) -> tuple[str, int | None]:
    link, eq, k = ident.rpartition("=")
    if not eq or not link:
        raise BadInput(f"failure spec {text!r}: lanes needs a count, lanes:A--B=K (e.g. lanes:A--B=2)")
    try:
        lanes = int(k)
    except ValueError:
        raise BadInput(f"failure spec {text!r}: lane count {k!r} is not an integer") from None
    if lanes < 1:
        raise BadInput(f"failure spec {text!r}: lane count {lanes} must be at least 1")
    return _parse_link(link.strip(), text)[0], lanes


def _resolve_node(G: nx.Graph, spec: FailureSpec, index: SpecIndex) -> Domain:
    n = index.node(spec.id, spec)
    return Domain(str(n), "", nodes=(n,))


def _resolve_link(G: nx.Graph, spec: FailureSpec, index: SpecIndex) -> Domain:
    u, v = index.link(spec)
    return Domain(_link_id(u, v), "", edges=((u, v),))


def _resolve_lanes(G: nx.Graph, spec: FailureSpec, index: SpecIndex) -> Domain:
    u, v = index.link(spec)
    d = G.edges[u, v]
    if spec.lanes > d[LANES]:
        raise BadInput(f"failure spec {spec.text!r}: link {u}--{v} has {d[LANES]} lane(s); fail 1 to "
                       f"{d[LANES]} ({d[LANES]} removes the link)")
    why = _ambiguous_lanes(G, u, v, d)
    if why and spec.lanes < d[LANES]:
        raise BadInput(f"failure spec {spec.text!r}: cannot fail some lanes of {u}--{v}: {why}; fail the "
                       f"whole link (link:{u}--{v}) or the far-side switch instead")
    return Domain(_link_id(u, v) + f"={spec.lanes}", "", edges=((u, v),), lanes=spec.lanes)


def _resolve_kind(keep: Callable[[dict, str], bool]) -> Callable:
    """A lookup of a node by id that must pass ``keep`` (else None: the class's domain list decides)."""
    def resolve(G: nx.Graph, spec: FailureSpec, index: SpecIndex) -> Domain | None:
        n = index.nodes.get(spec.id)
        if n is not None and keep(G.nodes[n], spec.cls):
            return Domain(str(n), "", nodes=(n,))
        return None
    return resolve


def _tray_aliases(G: nx.Graph, dom: Domain) -> list[str]:
    """One rack: ids omit it (t05); the spelling with it (r00/t05) names the same tray."""
    d = G.nodes[dom.nodes[0]]
    outer = d.get("rack", d.get("cube"))
    return [f"r{outer}/{dom.id}"] if not dom.id.startswith("r") and _num(outer) else []


# ---------------------------------------------------------------------------------------
# The failure classes
# ---------------------------------------------------------------------------------------
@dataclass(frozen=True)
class GraphTags:
    """What a graph offers failure classes, from one pass over it (:func:`domain_classes`).

    Attributes
    ----------
    roles : frozenset of str
        Switch roles.
    node_tags, edge_tags : frozenset of str
        Node / edge attributes with an integer value somewhere.
    has_chip, has_switch, has_edges : bool
    multi_lane : bool
        Some bundle has two or more lanes that can be failed one by one.
    """

    roles: frozenset
    node_tags: frozenset
    edge_tags: frozenset
    has_chip: bool
    has_switch: bool
    has_edges: bool
    multi_lane: bool


@dataclass(frozen=True)
class FailureClass:
    """One failure class: how a spec names its domains, how a graph's domains are found, what a failure keeps.

    Attributes
    ----------
    name : str
        The spec's ``CLASS`` (``rack`` in ``rack:3``).  A name starting with ``*`` is a
        family (``*-switch``: ``rail-switch``, ``leaf-switch`` ..., one class per switch
        role); its member names end with the rest of it.
    syntax : str
        How a spec of the class is written (the grammar in error messages).
    domains : callable
        ``domains(G, cls) -> list[Domain]``: the class's domains on ``G``, in a stable order.
    present : callable
        ``present(tags: GraphTags) -> list[str]``: the class names of this record ``G`` has.
    preserves : str
        What a failure of the class keeps of the fabric's symmetries, in words.
    never_kept : tuple of str
        Generator families (:mod:`fabricsim.collectives.whatif.orbits`) a failure of the
        class never keeps: the stabilizer check skips them.
    parse : callable, optional
        ``parse(ident, text) -> (ident, lanes)``: the id's own syntax (raises BadInput).
    resolve : callable, optional
        ``resolve(G, spec, index) -> Domain | None``: a direct lookup of the domain a spec
        names (None: look it up among ``domains(G, cls)``).
    any_graph : bool
        Specs of the class resolve on any graph without checking it has the class (node,
        link, lanes: their lookups name what is missing).
    aliases : callable, optional
        ``aliases(G, domain) -> list[str]``: other spellings of a domain's id.
    shared_with : tuple of str
        Tags of shared domains whose members fail together (an atlas's N-2 rows pair two
        failures of the class that share one): ``ocs`` / ``harness`` for links (one optical
        switch or cable harness carries many), ``rack`` for a rack's switches (one power shelf).
    """

    name: str
    syntax: str
    domains: Callable[[nx.Graph, str], list]
    present: Callable[[GraphTags], list]
    preserves: str = "the symmetries that map the failed domain onto itself"
    never_kept: tuple[str, ...] = ()
    parse: Callable | None = None
    resolve: Callable | None = None
    any_graph: bool = False
    aliases: Callable | None = None
    shared_with: tuple[str, ...] = ()

    @property
    def family(self) -> bool:
        """Whether the record names a family of classes (``*-switch``: one per switch role)."""
        return self.name.startswith("*")

    def matches(self, cls: str) -> bool:
        """Whether ``cls`` is this class (or, for a family, one of its members)."""
        if self.name.startswith("*"):
            rest = self.name[1:]
            return cls.endswith(rest) and len(cls) > len(rest)
        return cls == self.name


# a nontrivial translation of a torus moves every node, so it fixes no single node, link or bundle of
# lanes (it can keep a tag set such as an OCS's links, or a cube): the stabilizer check skips it
_MOVES_ALL = ("translation",)


def _always(name: str) -> Callable[[GraphTags], list]:
    return lambda tags: [name]


def _node_tag_class(name: str, preserves: str) -> FailureClass:
    return FailureClass(name, f"{name}:N", _class_node_tag,
                        lambda tags: [name] if NODE_TAG_CLASSES[name] in tags.node_tags else [], preserves)


def _edge_tag_class(name: str, preserves: str) -> FailureClass:
    return FailureClass(name, f"{name}:N", _class_edge_tag,
                        lambda tags: [name] if EDGE_TAG_CLASSES[name] in tags.edge_tags else [], preserves)


# What a failure of each class keeps of the fabric's symmetries: the generators that map the failed
# domain onto itself (collectives.whatif.orbits checks each one; ``preserves`` is the statement in words).
FAILURE_CLASSES: dict[str, FailureClass] = {c.name: c for c in (
    FailureClass("node", "node:ID", lambda G, cls: _node_domains(G, lambda d: True), _always("node"),
                 "the symmetries that fix the node: permutations of the racks, rails, planes and interchangeable "
                 "nodes it is not among (a chip also fixes its group)", _MOVES_ALL, resolve=_resolve_node,
                 any_graph=True),
    FailureClass("chip", "chip:ID", lambda G, cls: _node_domains(G, _is_chip),
                 lambda tags: ["chip"] if tags.has_chip else [],
                 "permutations of the other racks and of the other chips of its rack that keep its group; on a "
                 "torus, the reflections through the chip", _MOVES_ALL, resolve=_resolve_kind(_is_chip)),
    FailureClass("switch", "switch:ID", lambda G, cls: _node_domains(G, _is_switch),
                 lambda tags: ["switch"] if tags.has_switch else [],
                 "permutations of the racks, rails and planes it is not in, and of its interchangeable peers "
                 "other than itself", _MOVES_ALL, resolve=_resolve_kind(_is_switch)),
    FailureClass("*-switch", "ROLE-switch:ID",
                 lambda G, cls: _node_domains(G, lambda d: _is_role_switch(d, cls)),
                 lambda tags: [_role_class(r) for r in sorted(tags.roles)],
                 "permutations of the racks, rails and planes it is not in, and of the other switches of its "
                 "role and rail/rack (a rail switch: rack permutations, the other rails, the other switches of "
                 "its rail)", _MOVES_ALL, resolve=_resolve_kind(_is_role_switch), shared_with=("rack",)),
    FailureClass("link", "link:A--B", _class_links, lambda tags: ["link"] if tags.has_edges else [],
                 "the symmetries that fix both ends or swap them: on a torus, the reflections of the other axes "
                 "through the link and of its own axis about its midpoint (no translation); in a pod, "
                 "permutations of the racks, rails and interchangeable chips and switches the link does not "
                 "touch", _MOVES_ALL, parse=_parse_link, resolve=_resolve_link, any_graph=True,
                 shared_with=tuple(EDGE_TAG_CLASSES)),
    FailureClass("lanes", "lanes:A--B=K", _class_lanes, lambda tags: ["lanes"] if tags.multi_lane else [],
                 "as its link: the symmetries that fix both ends or swap them", _MOVES_ALL, parse=_parse_lanes,
                 resolve=_resolve_lanes, any_graph=True),
    FailureClass("tray", "tray:ID", _class_tray, lambda tags: ["tray"] if "tray" in tags.node_tags else [],
                 "permutations of the other trays and racks; the tray's chips stay interchangeable among "
                 "themselves", _MOVES_ALL, aliases=_tray_aliases),
    FailureClass("switch-tray", "switch-tray:ID", _class_switch_tray,
                 lambda tags: ["switch-tray"] if "switch_tray" in tags.node_tags else [],
                 "permutations of the other switch trays; the chips stay interchangeable", aliases=_tray_aliases),
    _node_tag_class("rack", "permutations of the other racks (or cubes), and every symmetry inside a rack"),
    _node_tag_class("cube", "the translations and reflections that map the cube onto itself; permutations of "
                            "the other cubes"),
    _node_tag_class("board", "permutations of the other boards that keep the board's group and wiring"),
    _node_tag_class("group", "the group permutations that fix the group (a Boardfly's cyclic shifts move every "
                             "group: none)"),
    _node_tag_class("plane", "permutations of the other planes; the chips stay interchangeable"),
    _node_tag_class("rail", "rack permutations, permutations of the other rails, and of the failed rail's "
                            "switches among themselves"),
    _edge_tag_class("ocs", "the symmetries that map the switch's links onto themselves (racks, rails the switch "
                           "does not carry)"),
    _edge_tag_class("harness", "the symmetries that map the harness's links onto themselves"),
)}
_BUILT_IN = frozenset(FAILURE_CLASSES)


def register(fc: FailureClass) -> FailureClass:
    """Add a failure class (its specs parse, its domains list and its failures apply everywhere).

    Refuses a name already taken; :func:`unregister` removes it again.
    """
    if not isinstance(fc, FailureClass):
        raise BadInput(f"register takes a FailureClass, not {type(fc).__name__}")
    if fc.name in FAILURE_CLASSES:
        raise BadInput(f"failure class {fc.name!r} is already registered; unregister it first")
    FAILURE_CLASSES[fc.name] = fc
    return fc


def unregister(name: str) -> FailureClass:
    """Remove the failure class ``name`` (see :func:`register`) and return it."""
    try:
        return FAILURE_CLASSES.pop(name)
    except KeyError:
        raise BadInput(f"failure class {name!r} is not registered; registered: {', '.join(FAILURE_CLASSES)}") \
            from None


def failure_class(cls: str) -> FailureClass | None:
    """The record of class ``cls`` (a family's for one of its members, ``rail-switch``), or None."""
    fc = FAILURE_CLASSES.get(cls)
    if fc is not None:
        return fc
    return next((f for f in FAILURE_CLASSES.values() if f.name.startswith("*") and f.matches(cls)), None)


class _Names(Sequence):
    """The registered class names that are not families, live (a registered class shows at once)."""

    def _names(self) -> tuple:
        return tuple(n for n in FAILURE_CLASSES if not n.startswith("*"))

    def __getitem__(self, i):
        return self._names()[i]

    def __len__(self) -> int:
        return len(self._names())

    def __repr__(self) -> str:
        return repr(self._names())


class _ByClass(Mapping):
    """A live mapping from each registered class name to one field of its record."""

    def __init__(self, field_name: str, keep: Callable[[Any], bool] = bool):
        self._field, self._keep = field_name, keep

    def _items(self) -> dict:
        return {n: v for n, fc in FAILURE_CLASSES.items() if self._keep(v := getattr(fc, self._field))}

    def __getitem__(self, cls):
        return self._items()[cls]

    def __iter__(self):
        return iter(self._items())

    def __len__(self) -> int:
        return len(self._items())

    def __repr__(self) -> str:
        return repr(self._items())


# the failure classes every fabric may have (plus ROLE-switch, one per switch role)
FIXED_CLASSES = _Names()
# per class: what its failure keeps (PRESERVES), the generator families it never keeps (NEVER_KEPT)
PRESERVES = _ByClass("preserves")
NEVER_KEPT = _ByClass("never_kept")


def never_kept(cls: str) -> tuple[str, ...]:
    """Generator families a failure of ``cls`` never keeps (see :attr:`FailureClass.never_kept`)."""
    fc = failure_class(cls)
    return fc.never_kept if fc is not None else ()


def preserved_symmetries(cls: str) -> str:
    """What a failure of class ``cls`` keeps of the fabric's symmetries, in words (see :data:`PRESERVES`).

    Examples
    --------
    >>> preserved_symmetries("rail")
    "rack permutations, permutations of the other rails, and of the failed rail's switches among themselves"
    """
    fc = failure_class(cls)
    return fc.preserves if fc is not None else "the symmetries that map the failed domain onto itself"


def _grammar() -> str:
    extra = "".join(f" | {fc.syntax}" for n, fc in FAILURE_CLASSES.items() if n not in _BUILT_IN)
    return SPEC_GRAMMAR + extra


def graph_tags(G: nx.Graph) -> GraphTags:
    """What ``G`` offers the failure classes (one pass over nodes and edges)."""
    roles, node_attrs, edge_attrs = set(), set(), set()
    has_chip = has_switch = False
    for _, d in G.nodes(data=True):
        if d.get(KIND) == CHIP:
            has_chip = True
        elif d.get(KIND) == SWITCH:
            has_switch = True
            if isinstance(d.get(ROLE), str):
                roles.add(d[ROLE])
        node_attrs.update(k for k, v in d.items() if _num(v))
    multi_lane = False
    for u, v, d in G.edges(data=True):
        edge_attrs.update(k for k, val in d.items() if _num(val))
        if not multi_lane and _num(d.get(LANES)) and d[LANES] >= 2 and not _ambiguous_lanes(G, u, v, d):
            multi_lane = True
    return GraphTags(frozenset(roles), frozenset(node_attrs), frozenset(edge_attrs), has_chip, has_switch,
                     G.number_of_edges() > 0, multi_lane)


def domain_classes(G: nx.Graph) -> list[str]:
    """The failure-domain classes ``G`` has, in a stable order (cheap: no domain is built)."""
    tags = graph_tags(G)
    return [c for fc in FAILURE_CLASSES.values() for c in fc.present(tags)]


def _class_domains(G: nx.Graph, cls: str) -> list[Domain]:
    fc = failure_class(cls)
    if fc is None:
        raise BadInput(f"unknown failure class {cls!r}{close_matches(cls, FIXED_CLASSES)}; "
                       f"choose one of: {', '.join(domain_classes(G))}", param="failure_class")
    return fc.domains(G, cls)


def domains(G: nx.Graph, classes: Iterable[str] | None = None) -> dict[str, list[Domain]]:
    """The failure domains of ``G`` by class.

    Parameters
    ----------
    G : networkx.Graph
        A fabric graph (catalog, user file, or a degraded copy).
    classes : iterable of str, optional
        Only these classes (each must be one ``G`` has); all of them by default.

    Returns
    -------
    dict
        Class name -> list of :class:`Domain`, classes in the order of
        :func:`domain_classes`, domains in a stable order (graph order for nodes and
        links, tag value for tagged domains).  The spec for a domain is
        ``f"{class}:{domain.id}"``.

    Examples
    --------
    >>> from fabricsim.fabrics import build
    >>> D = domains(build("nvl72"))
    >>> list(D)
    ['node', 'chip', 'switch', 'nvlink-switch', 'link', 'lanes', 'tray', 'switch-tray', 'rack', 'plane']
    >>> len(D["switch-tray"]), len(D["switch-tray"][0].nodes)
    (9, 2)
    """
    have = domain_classes(G)
    wanted = have if classes is None else list(classes)
    for c in wanted:
        _check_class(G, c, have)
    return {c: _class_domains(G, c) for c in have if c in wanted}


def _check_class(G: nx.Graph, cls: str, have: list[str] | None = None) -> None:
    have = domain_classes(G) if have is None else have
    if cls not in have:
        name = G.graph.get("name", "this fabric")
        raise BadInput(f"failure class {cls!r} is not one {name!r} has{close_matches(cls, have)}; "
                       f"choose one of: {', '.join(have)}", param="failure_class")


def parse_spec(text: str | FailureSpec) -> FailureSpec:
    """Parse one failure spec (syntax only; ids are checked against a graph when applied).

    Examples
    --------
    >>> parse_spec("lanes:r00/xpu000--r00/lsw0=2")
    FailureSpec(cls='lanes', id='r00/xpu000--r00/lsw0', lanes=2)
    >>> parse_spec("rail:2").text
    'rail:2'
    """
    if isinstance(text, FailureSpec):
        return text
    if not isinstance(text, str):
        raise BadInput(f"failure spec {text!r} is not a string; {_EXAMPLES}")
    raw = text.strip()
    cls, colon, ident = raw.partition(":")
    cls, ident = cls.strip().lower(), ident.strip()
    if not colon or not cls or not ident:
        raise BadInput(f"failure spec {text!r} is not CLASS:ID ({_grammar()}); {_EXAMPLES}")
    fc = failure_class(cls)
    if fc is None:
        raise BadInput(f"unknown failure class {cls!r} in {text!r}{close_matches(cls, FIXED_CLASSES)}; "
                       f"choose one of: {', '.join(FIXED_CLASSES)}, or ROLE-switch (e.g. rail-switch)")
    lanes = None
    if fc.parse is not None:
        ident, lanes = fc.parse(ident, text)
    return FailureSpec(cls, ident, lanes)


def resolve(G: nx.Graph, specs: Iterable[str | FailureSpec], index: SpecIndex | None = None) -> list[Domain]:
    """The domain each failure spec names in ``G``, checked (BadInput with close matches), nothing applied.

    Parameters
    ----------
    G : networkx.Graph
    specs : iterable of str or FailureSpec
    index : SpecIndex, optional
        ``SpecIndex(G)`` to share lookups over several calls on one graph.

    Examples
    --------
    >>> from fabricsim.fabrics import build
    >>> [d.nodes for d in resolve(build("jalapeno-rack"), ["node:r00/lsw0", "tray:t3"])][0]
    ('r00/lsw0',)
    """
    index = SpecIndex(G) if index is None else index
    return [_resolve(G, parse_spec(s), index) for s in specs]


def _resolve(G: nx.Graph, spec: FailureSpec, index: SpecIndex) -> Domain:
    """The domain a parsed spec names in ``G`` (raises BadInput with close matches)."""
    cls = spec.cls
    fc = failure_class(cls)
    cache = index.cache
    if fc is None:
        raise BadInput(f"unknown failure class {cls!r}{close_matches(cls, FIXED_CLASSES)}; "
                       f"choose one of: {', '.join(domain_classes(G))}")
    if fc.any_graph:
        return fc.resolve(G, spec, index)
    _check_class(G, cls, cache.setdefault("_classes", domain_classes(G)))
    if fc.resolve is not None:
        dom = fc.resolve(G, spec, index)
        if dom is not None:
            return dom
    if cls not in cache:
        doms = _class_domains(G, cls)
        by_norm = {_norm(x.id): x for x in doms}
        if fc.aliases is not None:
            for x in doms:
                for alias in fc.aliases(G, x):
                    by_norm.setdefault(_norm(alias), x)
        cache[cls] = (by_norm, [x.id for x in doms])
    by_id, ids = cache[cls]
    dom = by_id.get(_norm(spec.id))
    if dom is None:
        shown = ", ".join(ids[:8]) + (f" ... ({len(ids)} in all; `fabricsim domains` lists them)"
                                      if len(ids) > 8 else "")
        raise BadInput(f"failure spec {spec.text!r}: no {cls} {spec.id!r} in "
                       f"{G.graph.get('name', 'this fabric')!r}{close_matches(spec.id, ids)}; valid: {shown}")
    return dom


def apply_failures(G: nx.Graph, specs: Iterable[str | FailureSpec]) -> tuple[nx.Graph, list[dict]]:
    """A degraded copy of ``G`` with every failure of ``specs`` applied.

    Every spec is checked against ``G`` before anything is applied, so a bad spec
    raises :class:`~fabricsim.topo.errors.BadInput` (naming the value and close
    matches) and nothing else happens.  Overlapping specs are fine: what an
    earlier spec removed is not removed twice.

    Parameters
    ----------
    G : networkx.Graph
        The fabric (left untouched).
    specs : iterable of str or FailureSpec
        See the module docstring for the grammar.

    Returns
    -------
    degraded : networkx.Graph
        A copy without the failed nodes and links, with fewer lanes on partially
        failed bundles (``capacity_gbps`` kept = lanes x ``lane_gbps``), and
        ``graph["failed"]``: the JSON list of the applied dicts (appended to any
        failures ``G`` already carried).
    applied : list of dict
        Per spec: ``spec`` (canonical text), ``nodes_removed`` (node ids),
        ``edges_removed`` (``"A--B"`` links removed in their own right),
        ``incident_edges_removed`` (links that went with removed nodes, a count),
        ``lanes_removed`` (``{"link", "lanes", "left"}`` for partial lane failures).

    Examples
    --------
    >>> from fabricsim.fabrics import build
    >>> H, applied = apply_failures(build("jalapeno-rack"), ["node:r00/lsw0"])
    >>> applied[0]["nodes_removed"], applied[0]["incident_edges_removed"]
    (['r00/lsw0'], 128)
    """
    parsed = [parse_spec(s) for s in specs]
    index = SpecIndex(G)
    resolved = [(s, _resolve(G, s, index)) for s in parsed]
    H = G.copy()
    applied = []
    for spec, dom in resolved:
        nodes_removed, edges_removed, lanes_removed = [], [], []
        incident = 0
        for n in dom.nodes:
            if n in H:
                incident += H.degree(n)
                H.remove_node(n)
                nodes_removed.append(str(n))
        for u, v in dom.edges:
            if not H.has_edge(u, v):
                continue
            if dom.lanes is None:
                H.remove_edge(u, v)
                edges_removed.append(_link_id(u, v))
                continue
            d = H.edges[u, v]
            left = d[LANES] - dom.lanes
            if left <= 0:
                lanes_removed.append({"link": _link_id(u, v), "lanes": int(d[LANES]), "left": 0})
                H.remove_edge(u, v)
                edges_removed.append(_link_id(u, v))
                continue
            lanes_removed.append({"link": _link_id(u, v), "lanes": int(dom.lanes), "left": int(left)})
            _shrink(d, left, dom.lanes)
        applied.append({"spec": spec.text, "nodes_removed": nodes_removed, "edges_removed": edges_removed,
                        "incident_edges_removed": incident, "lanes_removed": lanes_removed})
    prior = G.graph.get("failed")
    history = json.loads(prior) if isinstance(prior, str) and prior else []
    H.graph["failed"] = json.dumps(history + applied)
    return H, applied


def _shrink(d: dict, left: int, lost: int) -> None:
    """Leave ``left`` lanes on bundle attributes ``d`` (in place), keeping the contract's sums."""
    d[LANES] = int(left)
    d[CAPACITY_GBPS] = float(left * d[LANE_GBPS])
    per_port = max(1, round(d[PORT_GBPS] / d[LANE_GBPS]))
    if left % per_port:
        # the survivors no longer make whole ports: the widest port width that divides them
        d[PORT_GBPS] = float(d[LANE_GBPS] * math.gcd(left, per_port))
    if "circuit_lanes" in d:
        d["circuit_lanes"] = int(min(int(d["circuit_lanes"]), left))
    d["failed_lanes"] = int(d.get("failed_lanes", 0)) + int(lost)


# ---------------------------------------------------------------------------------------
# Per-chip bandwidth
# ---------------------------------------------------------------------------------------
def chip_tier_bandwidth(G: nx.Graph, *, share_of: Callable[[nx.Graph], dict] | None = None,
                        ) -> dict[int, dict[str, float]]:
    """Each chip's link capacity per tier, GB/s per direction, on ``forwarding_graph(G)``.

    Patched circuits (Jalapeño ``leaf=static``) count at the width that reaches a live
    far-side switch, so a failed rail switch shows on the chips it served.  ``share_of(H)``
    (optional) maps ``(neighbour, tier)`` to the fraction of a chip's link to that
    neighbour that counts, on the forwarding graph ``H`` (1 where it says nothing).

    Returns
    -------
    dict
        Chip rank -> {tier: GB/s}; a chip with no links left maps to ``{}``.

    Examples
    --------
    >>> from fabricsim.fabrics import build
    >>> chip_tier_bandwidth(build("jalapeno-pod", racks=2))[0]
    {'local': 600.0, 'global': 200.0}
    """
    H = forwarding_graph(G)
    share = share_of(H) if share_of is not None else {}
    out: dict[int, dict[str, float]] = {}
    for n, d in H.nodes(data=True):
        if d.get(KIND) != CHIP:
            continue
        tiers: dict[str, float] = {}
        for v, e in H[n].items():
            t = str(e.get(TIER))
            tiers[t] = tiers.get(t, 0.0) + bundle_gbps(e) * share.get((v, t), 1.0) / 8.0
        out[int(d[RANK])] = tiers
    return dict(sorted(out.items()))
