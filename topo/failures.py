"""Failure domains and failure specs: what can fail together, and a degraded copy of the graph.

Public names
------------
Domain, domains, domain_classes
    The failure domains of a graph, by class, derived from the graph contract's
    attributes (so a user's GraphML or JSON fabric gets them too).
FailureSpec, parse_spec, SPEC_GRAMMAR
    The failure spec language (one string per failure).
apply_failures
    A degraded copy of a graph with the failures applied, and what each removed.
chip_tier_bandwidth
    Each chip's link capacity per tier, GB/s per direction, on the forwarding graph.
PRESERVES, preserved_symmetries, NEVER_KEPT, never_kept
    Per failure class, the symmetries of the intact fabric a failure of that class
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
from typing import Any, Callable, Iterable

import networkx as nx

from .contract import (CAPACITY_GBPS, CHIP, bundle_gbps, KIND, LANE_GBPS, LANES, PATCH, PORT_GBPS, RANK, ROLE, SWITCH, TIER,
                       forwarding_graph)
from .errors import BadInput, close_matches

__all__ = ["Domain", "domains", "domain_classes", "FailureSpec", "parse_spec", "apply_failures",
           "chip_tier_bandwidth", "SPEC_GRAMMAR", "NODE_TAG_CLASSES", "EDGE_TAG_CLASSES", "PRESERVES",
           "preserved_symmetries", "NEVER_KEPT", "never_kept"]

# Node tags whose equal values fail together: class name -> attribute.
NODE_TAG_CLASSES = {"rack": "rack", "cube": "cube", "board": "board", "group": "group", "plane": "plane",
                    "rail": "rail"}
# Edge tags whose equal values fail together (the shared-fate tags of the contract).
EDGE_TAG_CLASSES = {"ocs": "ocs", "harness": "harness"}
# the failure classes every fabric may have (plus ROLE-switch, one per switch role)
FIXED_CLASSES = ("node", "chip", "switch", "link", "lanes", "tray", "switch-tray") + tuple(NODE_TAG_CLASSES) + \
    tuple(EDGE_TAG_CLASSES)
_CLASS_ORDER = ("node", "chip", "switch", "*-switch", "link", "lanes", "tray", "switch-tray", "rack", "cube",
                "board", "group", "plane", "rail", "ocs", "harness")
SPEC_GRAMMAR = ("node:ID | link:A--B | lanes:A--B=K | chip:ID | switch:ID | ROLE-switch:ID | tray:ID | "
                "switch-tray:ID | rack:N | cube:N | board:N | group:N | plane:N | rail:N | ocs:N | harness:N")
# What a failure of each class keeps of the fabric's symmetries: the generators that map the
# failed domain onto itself (collectives.whatif.orbits checks each one; this is the statement in words).
PRESERVES = {
    "node": "the symmetries that fix the node: permutations of the racks, rails, planes and interchangeable "
            "nodes it is not among (a chip also fixes its group)",
    "chip": "permutations of the other racks and of the other chips of its rack that keep its group; on a torus, "
            "the reflections through the chip",
    "switch": "permutations of the racks, rails and planes it is not in, and of its interchangeable peers "
              "other than itself",
    "*-switch": "permutations of the racks, rails and planes it is not in, and of the other switches of its "
                "role and rail/rack (a rail switch: rack permutations, the other rails, the other switches of "
                "its rail)",
    "link": "the symmetries that fix both ends or swap them: on a torus, the reflections of the other axes "
            "through the link and of its own axis about its midpoint (no translation); in a pod, permutations "
            "of the racks, rails and interchangeable chips and switches the link does not touch",
    "lanes": "as its link: the symmetries that fix both ends or swap them",
    "tray": "permutations of the other trays and racks; the tray's chips stay interchangeable among themselves",
    "switch-tray": "permutations of the other switch trays; the chips stay interchangeable",
    "rack": "permutations of the other racks (or cubes), and every symmetry inside a rack",
    "cube": "the translations and reflections that map the cube onto itself; permutations of the other cubes",
    "board": "permutations of the other boards that keep the board's group and wiring",
    "group": "the group permutations that fix the group (a Boardfly's cyclic shifts move every group: none)",
    "plane": "permutations of the other planes; the chips stay interchangeable",
    "rail": "rack permutations, permutations of the other rails, and of the failed rail's switches among "
            "themselves",
    "ocs": "the symmetries that map the switch's links onto themselves (racks, rails the switch does not carry)",
    "harness": "the symmetries that map the harness's links onto themselves",
}


# Generator families (collectives.whatif.orbits) a failure of the class can never keep: a nontrivial
# translation of a torus moves every node, so it fixes no single node, link or bundle of lanes
# (it can keep a tag set such as an OCS's links, or a cube).  The stabilizer check skips them.
NEVER_KEPT = {c: ("translation",) for c in ("node", "chip", "switch", "*-switch", "link", "lanes", "tray")}


def never_kept(cls: str) -> tuple[str, ...]:
    """Generator families a failure of ``cls`` never keeps (see :data:`NEVER_KEPT`)."""
    return NEVER_KEPT.get("*-switch" if cls.endswith("-switch") and cls != "switch-tray" else cls, ())


def preserved_symmetries(cls: str) -> str:
    """What a failure of class ``cls`` keeps of the fabric's symmetries, in words (see :data:`PRESERVES`).

    Examples
    --------
    >>> preserved_symmetries("rail")
    "rack permutations, permutations of the other rails, and of the failed rail's switches among themselves"
    """
    if cls in PRESERVES:
        return PRESERVES[cls]
    if cls.endswith("-switch"):
        return PRESERVES["*-switch"]
    return "the symmetries that map the failed domain onto itself"


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


def _class_nodes(G: nx.Graph, cls: str) -> list[Domain]:
    out = []
    for n, d in G.nodes(data=True):
        kind = d.get(KIND)
        if cls == "chip" and kind != CHIP or cls == "switch" and kind != SWITCH:
            continue
        if cls.endswith("-switch") and cls != "switch" and not (kind == SWITCH and _role_class(str(d.get(ROLE)))
                                                                 == cls):
            continue
        what = f"chip (rank {d.get(RANK)})" if kind == CHIP else f"{d.get(ROLE, '')} switch ({d.get('model', '?')})"
        out.append(Domain(str(n), what, nodes=(n,)))
    return out


def _class_links(G: nx.Graph) -> list[Domain]:
    return [Domain(_link_id(u, v), f"{d.get(LANES)} x {d.get(LANE_GBPS):g}G {d.get(TIER)} "
                                   f"{d.get('medium', '')}".rstrip(), edges=((u, v),))
            for u, v, d in G.edges(data=True)]


def _class_lanes(G: nx.Graph) -> list[Domain]:
    return [Domain(_link_id(u, v) + "=1", f"1 of {d[LANES]} lanes of a {d.get(TIER)} link", edges=((u, v),),
                   lanes=1)
            for u, v, d in G.edges(data=True)
            if _num(d.get(LANES)) and d[LANES] >= 2 and not _ambiguous_lanes(G, u, v, d)]


def _class_tray(G: nx.Graph) -> list[Domain]:
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


def _class_switch_tray(G: nx.Graph) -> list[Domain]:
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


def _class_edge_tag(G: nx.Graph, cls: str) -> list[Domain]:
    attr = EDGE_TAG_CLASSES[cls]
    groups: dict[int, list] = defaultdict(list)
    for u, v, d in G.edges(data=True):
        if _num(d.get(attr)):
            groups[d[attr]].append((u, v))
    name = {"ocs": "optical circuit switch", "harness": "cable harness"}[cls]
    return [Domain(str(val), f"{name} {val}: {len(groups[val])} link(s)", edges=tuple(groups[val]))
            for val in sorted(groups)]


def domain_classes(G: nx.Graph) -> list[str]:
    """The failure-domain classes ``G`` has, in a stable order (cheap: no domain is built)."""
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
    out = ["node"] + (["chip"] if has_chip else []) + (["switch"] if has_switch else [])
    out += [_role_class(r) for r in sorted(roles)]
    if G.number_of_edges():
        out.append("link")
    if multi_lane:
        out.append("lanes")
    if "tray" in node_attrs:
        out.append("tray")
    if "switch_tray" in node_attrs:
        out.append("switch-tray")
    out += [c for c, a in NODE_TAG_CLASSES.items() if a in node_attrs]
    out += [c for c, a in EDGE_TAG_CLASSES.items() if a in edge_attrs]
    return out


def _class_domains(G: nx.Graph, cls: str) -> list[Domain]:
    if cls in ("node", "chip", "switch") or cls.endswith("-switch") and cls != "switch-tray":
        return _class_nodes(G, cls)
    if cls == "link":
        return _class_links(G)
    if cls == "lanes":
        return _class_lanes(G)
    if cls == "tray":
        return _class_tray(G)
    if cls == "switch-tray":
        return _class_switch_tray(G)
    if cls in NODE_TAG_CLASSES:
        return _class_node_tag(G, cls)
    if cls in EDGE_TAG_CLASSES:
        return _class_edge_tag(G, cls)
    raise BadInput(f"unknown failure class {cls!r}{close_matches(cls, FIXED_CLASSES)}; "
                   f"choose one of: {', '.join(domain_classes(G))}", param="failure_class")


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
        raise BadInput(f"failure spec {text!r} is not CLASS:ID ({SPEC_GRAMMAR}); {_EXAMPLES}")
    if cls not in FIXED_CLASSES and not (cls.endswith("-switch") and len(cls) > len("-switch")):
        raise BadInput(f"unknown failure class {cls!r} in {text!r}{close_matches(cls, FIXED_CLASSES)}; "
                       f"choose one of: {', '.join(FIXED_CLASSES)}, or ROLE-switch (e.g. rail-switch)")
    lanes = None
    if cls == "lanes":
        link, eq, k = ident.rpartition("=")
        if not eq or not link:
            raise BadInput(f"failure spec {text!r}: lanes needs a count, lanes:A--B=K (e.g. lanes:A--B=2)")
        try:
            lanes = int(k)
        except ValueError:
            raise BadInput(f"failure spec {text!r}: lane count {k!r} is not an integer") from None
        if lanes < 1:
            raise BadInput(f"failure spec {text!r}: lane count {lanes} must be at least 1")
        ident = link.strip()
    if cls in ("link", "lanes") and "--" not in ident:
        raise BadInput(f"failure spec {text!r}: a link is spelled A--B (two node ids joined by --)")
    return FailureSpec(cls, ident, lanes)


class _Index:
    """Node-id and link lookups of one graph, by their string spelling."""

    def __init__(self, G: nx.Graph):
        self.G = G
        self.nodes = {str(n): n for n in G.nodes}
        self.order = {n: i for i, n in enumerate(G.nodes)}

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


def _resolve(G: nx.Graph, spec: FailureSpec, index: _Index, cache: dict) -> Domain:
    """The domain a spec names in ``G`` (raises BadInput with close matches)."""
    cls = spec.cls
    if cls == "node":
        n = index.node(spec.id, spec)
        return Domain(str(n), "", nodes=(n,))
    if cls in ("link", "lanes"):
        u, v = index.link(spec)
        d = G.edges[u, v]
        if cls == "link":
            return Domain(_link_id(u, v), "", edges=((u, v),))
        if spec.lanes > d[LANES]:
            raise BadInput(f"failure spec {spec.text!r}: link {u}--{v} has {d[LANES]} lane(s); fail 1 to "
                           f"{d[LANES]} ({d[LANES]} removes the link)")
        why = _ambiguous_lanes(G, u, v, d)
        if why and spec.lanes < d[LANES]:
            raise BadInput(f"failure spec {spec.text!r}: cannot fail some lanes of {u}--{v}: {why}; fail the "
                           f"whole link (link:{u}--{v}) or the far-side switch instead")
        return Domain(_link_id(u, v) + f"={spec.lanes}", "", edges=((u, v),), lanes=spec.lanes)
    _check_class(G, cls, cache.setdefault("_classes", domain_classes(G)))
    if cls in ("chip", "switch") or (cls.endswith("-switch") and cls != "switch-tray"):
        n = index.nodes.get(spec.id)
        if n is not None:
            d = G.nodes[n]
            ok = (d.get(KIND) == CHIP if cls == "chip" else
                  d.get(KIND) == SWITCH if cls == "switch" else
                  d.get(KIND) == SWITCH and _role_class(str(d.get(ROLE))) == cls)
            if ok:
                return Domain(str(n), "", nodes=(n,))
    if cls not in cache:
        doms = _class_domains(G, cls)
        by_norm = {_norm(x.id): x for x in doms}
        if cls in ("tray", "switch-tray"):
            # one rack: ids omit it (t05); the spelling with it (r00/t05) names the same tray
            for x in doms:
                d = G.nodes[x.nodes[0]]
                outer = d.get("rack", d.get("cube"))
                if not x.id.startswith("r") and _num(outer):
                    by_norm.setdefault(_norm(f"r{outer}/{x.id}"), x)
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
    index = _Index(G)
    cache: dict = {}
    resolved = [(s, _resolve(G, s, index, cache)) for s in parsed]
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
