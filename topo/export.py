"""Fabrics out to ASTRA-sim: a graph mapped onto the analytical backend's dimensions.

ASTRA-sim 2.x's analytical network (``astra-network-analytical``) takes a YAML file with
one entry per dimension, innermost first::

    topology: [ Ring, FullyConnected, Switch ]
    npus_count: [ 2, 8, 4 ]        # NPUs per dimension; NPUs = the product
    bandwidth: [ 200.0, 100.0, 50.0 ]   # GB/s, per link per direction
    latency: [ 50.0, 500.0, 2000.0 ]    # ns, per link

(format: astra-sim/astra-network-analytical ``example_network.yml`` and ``input/*.yml``).
NPU ``i`` has coordinate ``i mod n0`` in dimension 0, ``(i // n0) mod n1`` in dimension 1,
and so on; :func:`astra_network` orders the dimensions so that NPU ``i`` is the chip of rank
``i`` and says so when the fabric's ranks are not nested that way.

The mapping reads the graph's structure and the contract's domain tags, not the fabric's
name, so a new catalog entry maps when it is built the same way:

* a torus (graph attribute ``dims``, chips only): one ``Ring`` per dimension longer than 1,
  bandwidth = one link's rate (a ring of 2 is one bundle of both links: half of it);
* chips only, nested domains (``board`` or ``tray``, then ``group`` or ``rack``, then the
  whole fabric): the innermost domain is a ``Ring`` (a cycle) or ``FullyConnected`` (a
  clique); every higher level whose sub-domains are pairwise linked is ``FullyConnected``
  with bandwidth = the capacity between two sub-domains / the chips of one (each chip's
  share of the pair's links): Boardfly, a full mesh, LPX-style trays;
* chips on switches: one ``Switch`` per switched level: the rack (switches whose links all
  stay in one rack, or the first switch above the chips) and the racks (switches above
  those), bandwidth = a chip's capacity into that level, capped by the uplinks' share;
  chip-to-chip links inside a tray in front of the switches (Maia-style) become a
  ``FullyConnected`` dimension first.

Latency per dimension is the one-way link latency; for a ``Switch`` it folds the switch
latencies in (ASTRA-sim's ``Switch`` crosses two links: chip to switch, switch to chip, so
each carries half the switches' delay).  What the mapping loses (planes merged, in-network
reduction, rail-only relays, Boardfly's wiring, OCS ...) is listed in ``losses``.
"""
from __future__ import annotations

import math
from collections import defaultdict
from dataclasses import dataclass

import networkx as nx

from .contract import CAPACITY_GBPS, CHIP, KIND, LATENCY_NS, RANK, chips as chip_list, params_of
from .errors import BadInput

__all__ = ["Dimension", "AstraNetwork", "astra_network", "write_astra", "SimaiTopology", "simai_topology",
           "write_simai", "InfraGraphDocument", "infragraph_document", "write_infragraph"]

TOPOLOGIES = ("Ring", "FullyConnected", "Switch")


@dataclass(frozen=True)
class Dimension:
    """One ASTRA-sim dimension."""

    topology: str            # Ring | FullyConnected | Switch
    npus: int
    bandwidth_GBps: float    # per link, per direction
    latency_ns: float        # per link
    what: str                # the part of the fabric it stands for


@dataclass(frozen=True)
class AstraNetwork:
    """A fabric as ASTRA-sim analytical dimensions, innermost first, and what the mapping loses."""

    fabric: str
    dims: tuple[Dimension, ...]
    losses: tuple[str, ...]

    @property
    def npus(self) -> int:
        return math.prod(d.npus for d in self.dims)

    def as_yaml(self, header: str = "") -> str:
        """The network.yml text: four keys, one entry per dimension, comments for the rest."""
        def row(vals):
            return "[ " + ", ".join(vals) + " ]"
        out = [f"# ASTRA-sim 2.x analytical network config for {self.fabric}, written by fabricsim"]
        out += [f"# {line}" for line in header.splitlines()]
        out.append(f"# {' x '.join(str(d.npus) for d in self.dims)} = {self.npus:,} NPUs; NPU i = fabricsim chip rank i")
        for i, d in enumerate(self.dims):
            out.append(f"# dimension {i}: {d.topology} of {d.npus}: {d.what}")
        if self.losses:
            out.append("# What this mapping loses:")
            out += [f"#   - {x}" for x in self.losses]
        out += ["",
                f"topology: {row(d.topology for d in self.dims)}",
                f"npus_count: {row(str(d.npus) for d in self.dims)}",
                f"bandwidth: {row(repr(float(d.bandwidth_GBps)) for d in self.dims)}  # GB/s",
                f"latency: {row(repr(float(d.latency_ns)) for d in self.dims)}  # ns", ""]
        return "\n".join(out)


def _refuse(G, why: str):
    raise BadInput(f"{G.graph.get('name', 'this fabric')}: cannot be mapped onto ASTRA-sim dimensions "
                   f"(Ring, FullyConnected, Switch): {why}")


def _uniform(vals, what: str, losses: list, unit: str) -> float:
    lo, hi = min(vals), max(vals)
    if hi > lo * (1 + 1e-9):
        losses.append(f"{what} ranges {lo:g}..{hi:g} {unit}; ASTRA-sim takes one figure, the lowest")
    return lo


def _lat(G, u, v) -> float:
    return float(G.edges[u, v][LATENCY_NS])


def _node_lat(G, n) -> float:
    return float(G.nodes[n].get(LATENCY_NS, 0.0) or 0.0)


# --------------------------------------------------------------------------- tori
def _torus(G, chips, losses) -> list[Dimension]:
    ks = [int(k) for k in str(G.graph["dims"]).split("x")]
    axes = "xyzw"
    dims = []
    # ranks are row-major with the last ring fastest: ASTRA's dimension 0 is the last ring
    for a in reversed(range(len(ks))):
        k = ks[a]
        if k == 1:
            continue
        edges = [(u, v, d) for u, v, d in G.edges(data=True) if d.get("axis") == axes[a]]
        if not edges:
            _refuse(G, f"the {k}-ring along {axes[a]} has no links")
        per_link = [d[CAPACITY_GBPS] / (2 if k == 2 else 1) / 8 for *_, d in edges]
        bw = _uniform(per_link, f"link rate along {axes[a]}", losses, "GB/s")
        lat = _uniform([d[LATENCY_NS] for *_, d in edges], f"link latency along {axes[a]}", losses, "ns")
        dims.append(Dimension("Ring", k, bw, lat, f"the {k}-chip rings along {axes[a]}"))
    if any(d.get("ocs") is not None for *_, d in G.edges(data=True)):
        losses.append("optical circuit switches are fixed links here (no reconfiguration, no OCS failure domain)")
    return dims


# --------------------------------------------------------------------------- nested chip domains
def _partitions(G, chips) -> list[tuple[str, dict]]:
    """Nested chip partitions, finest first, ending with the whole fabric."""
    nd = G.nodes
    levels = []
    if all("board" in nd[c] for c in chips):
        levels.append(("board", {c: nd[c]["board"] for c in chips}))
    elif all("tray" in nd[c] for c in chips):
        levels.append(("tray", {c: (nd[c].get("rack", 0), nd[c]["tray"]) for c in chips}))
    for key in ("group", "rack"):
        if all(key in nd[c] for c in chips):
            levels.append((key, {c: nd[c][key] for c in chips}))
    levels.append(("fabric", {c: 0 for c in chips}))
    out = []
    for name, part in levels:
        n_dom = len(set(part.values()))
        if out and n_dom >= len(set(out[-1][1].values())):
            continue   # no coarser than the level below: not a new level
        if out and any(part[a] != part[b] for a, b in _same(out[-1][1])):
            continue   # does not nest the level below
        if n_dom == len(chips):
            continue   # every chip its own domain
        out.append((name, part))
    return out


def _same(part: dict):
    """Pairs (first chip of a domain, another chip of it): enough to test nesting."""
    first = {}
    for c, d in part.items():
        if d in first:
            yield first[d], c
        else:
            first[d] = c


def _members(part: dict) -> dict:
    out = defaultdict(list)
    for c, d in part.items():
        out[d].append(c)
    return out


def _chip_levels(G, chips, losses, direct, *, innermost_only: bool = False) -> tuple[list[Dimension], dict]:
    """Dimensions for the chip-to-chip links; returns them and the partition they cover."""
    parts = _partitions(G, chips)[:1] if innermost_only else _partitions(G, chips)
    dims: list[Dimension] = []
    name0, p0 = parts[0]
    kinds, bws, lats, sizes = set(), [], [], set()
    for dom, members in _members(p0).items():
        H = direct.subgraph(members)
        k = len(members)
        sizes.add(k)
        m = H.number_of_edges()
        if k >= 3 and m == k * (k - 1) // 2:
            kinds.add("FullyConnected")
            per = [d[CAPACITY_GBPS] / 8 for *_, d in H.edges(data=True)]
        elif k >= 2 and nx.is_connected(H) and (m == k == max(dict(H.degree()).values()) * k // 2 or k == 2):
            kinds.add("Ring")
            per = [d[CAPACITY_GBPS] / (2 if k == 2 and d.get("lanes", 2) % 2 == 0 and
                                       d.get("port_gbps", 0) < d[CAPACITY_GBPS] else 1) / 8
                   for *_, d in H.edges(data=True)]
        else:
            _refuse(G, f"the chips of {name0} {dom} are neither a ring nor fully connected "
                       f"({k} chips, {m} links)")
        bws += per
        lats += [d[LATENCY_NS] for *_, d in H.edges(data=True)]
    if len(kinds) > 1 or len(sizes) > 1:
        _refuse(G, f"its {name0}s differ ({', '.join(sorted(kinds))}; sizes {sorted(sizes)})")
    k = sizes.pop()
    scope = "the whole fabric" if name0 == "fabric" else f"a {name0}"
    dims.append(Dimension(kinds.pop(), k, _uniform(bws, f"{name0} link rate", losses, "GB/s"),
                          _uniform(lats, f"{name0} link latency", losses, "ns"), f"chips of {scope}, direct links"))
    below = p0
    for name, part in parts[1:]:
        units = {d: set(m) for d, m in _members(below).items()}
        unit_of = below
        pair_cap: dict = defaultdict(float)
        pair_lat: dict = defaultdict(list)
        for u, v, d in direct.edges(data=True):
            a, b = unit_of[u], unit_of[v]
            if a != b and part[u] == part[v]:
                pair_cap[frozenset((a, b))] += d[CAPACITY_GBPS]
                pair_lat[frozenset((a, b))].append(d[LATENCY_NS])
        counts = set()
        caps, lats = [], []
        for dom, members in _members(part).items():
            subs = sorted({unit_of[c] for c in members}, key=str)
            counts.add(len(subs))
            for i, a in enumerate(subs):
                for b in subs[i + 1:]:
                    key = frozenset((a, b))
                    if key not in pair_cap:
                        _refuse(G, f"{name} {dom}: its {name0}s {a} and {b} have no direct link "
                                   f"(ASTRA-sim's FullyConnected needs every pair)")
                    caps.append(pair_cap[key] / 8 / len(units[a]))
                    lats.append(min(pair_lat[key]))
        if len(counts) > 1:
            _refuse(G, f"its {name}s hold different numbers of {name0}s ({sorted(counts)})")
        n = counts.pop()
        dims.append(Dimension("FullyConnected", n, _uniform(caps, f"per-chip share of the {name0}-pair links",
                                                            losses, "GB/s"),
                              _uniform(lats, f"{name0}-pair link latency", losses, "ns"),
                              f"{name0}s of {'the whole fabric' if name == 'fabric' else 'a ' + name}, each "
                              f"chip's share of the links between two {name0}s"))
        if len(units[next(iter(units))]) > 1:
            losses.append(f"links between {name0}s land on particular chips; ASTRA-sim gives every chip an "
                          f"equal share and no hops inside the {name0} to reach them")
        below, name0 = part, name
    return dims, below


# --------------------------------------------------------------------------- switched tiers
def _switched(G, chips, losses, start_part) -> list[Dimension]:
    """Switch dimensions above ``start_part`` (a chip partition already mapped, or None)."""
    nd = G.nodes
    is_chip = {n: nd[n].get(KIND) == CHIP for n in G}
    up_of = {s: [t for t in G[s] if not is_chip[t]] for s in G if not is_chip[s]}
    racks = {c: nd[c].get("rack", 0) for c in chips}
    n_racks = len(set(racks.values()))
    from .routing import policy_of
    tiered = policy_of(G).tier_rule
    rack_size = defaultdict(int)
    for c in chips:
        rack_size[racks[c]] += 1
    # the rack level: switches whose chips all sit in one rack; "local" ones have no uplinks
    in_rack, above = defaultdict(float), defaultdict(float)
    rack_lat, up_lat = defaultdict(list), defaultdict(list)
    for c in chips:
        for s in G[c]:
            if is_chip[s]:
                continue
            d = G.edges[c, s]
            chip_set = {racks[t] for t in G[s] if is_chip[t]}
            pure = not up_of[s]
            if n_racks > 1 and len(chip_set) > 1:
                _refuse(G, f"switch {s} joins chips of several racks directly; only rack-local switches "
                           f"under a switched upper tier map onto Switch dimensions")
            reach = sum(1 for t in G[s] if is_chip[t])
            if reach != rack_size[racks[c]]:
                where = "its rack" if n_racks > 1 else "the fabric"
                _refuse(G, f"switch {s} reaches {reach} of the {rack_size[racks[c]]} chips of {where}; "
                           f"ASTRA-sim's Switch joins every chip of a dimension in one hop")
            if pure or not tiered and n_racks == 1:
                in_rack[c] += d[CAPACITY_GBPS] / 8
                rack_lat[c].append(d[LATENCY_NS] + _node_lat(G, s) / 2)
            if not pure:
                down = sum(G.edges[s, t][CAPACITY_GBPS] for t in G[s] if is_chip[t])
                up = sum(G.edges[s, t][CAPACITY_GBPS] for t in up_of[s])
                above[c] += d[CAPACITY_GBPS] / 8 * min(1.0, up / down)
                top = max(up_of[s], key=lambda t: _node_lat(G, t))
                up_lat[c].append(d[LATENCY_NS] + _node_lat(G, s) + _lat(G, s, top) + _node_lat(G, top) / 2)
    if not tiered and n_racks > 1:
        # ECMP over a leaf: the leaf switches the rack's own traffic too
        for c in chips:
            for s in G[c]:
                if not is_chip[s] and up_of[s]:
                    in_rack[c] += G.edges[c, s][CAPACITY_GBPS] / 8
                    rack_lat[c].append(G.edges[c, s][LATENCY_NS] + _node_lat(G, s) / 2)
    per_rack = len(chips) // n_racks
    inner_units = 1 if start_part is None else len(chips) // len(set(start_part.values()))
    dims = []
    if any(in_rack.values()):
        if set(in_rack) != set(chips):
            _refuse(G, "some chips have no switch in their rack")
        n = per_rack // inner_units
        if n > 1:
            dims.append(Dimension("Switch", n, _uniform(list(in_rack.values()), "per-chip rack-switch bandwidth",
                                                        losses, "GB/s"),
                                  _uniform([min(v) for v in rack_lat.values()], "rack switch latency", losses, "ns"),
                                  "chips of a rack, every switch of its tier as one"))
    if n_racks > 1:
        if set(above) != set(chips):
            _refuse(G, "some chips have no path to the tier above their rack")
        dims.append(Dimension("Switch", n_racks, _uniform(list(above.values()), "per-chip bandwidth above the rack",
                                                          losses, "GB/s"),
                              _uniform([min(v) for v in up_lat.values()], "latency above the rack", losses, "ns"),
                              "racks: a chip and the chips of the same index in every other rack"))
    return dims


def _check_ranks(G, chips, dims, losses) -> None:
    """ASTRA-sim's NPU i is the chip of rank i when ranks nest like the dimensions (domain-major)."""
    # rank order must keep each innermost unit contiguous; a cheap check on racks and trays
    nd = G.nodes
    for key in ("rack", "group", "board"):
        if all(key in nd[c] for c in chips):
            seq = [nd[c][key] for c in chips]   # chips are in rank order
            runs = sum(1 for a, b in zip(seq, seq[1:]) if a != b) + 1
            if runs != len(set(seq)):
                losses.append(f"chip ranks are not grouped by {key}; NPU i is rank i, so ASTRA-sim's "
                              f"dimensions do not follow the {key}s")


def astra_network(G: nx.Graph) -> AstraNetwork:
    """Map ``G`` onto ASTRA-sim analytical dimensions; :class:`BadInput` when it does not map.

    Examples
    --------
    >>> from fabricsim.fabrics import build
    >>> net = astra_network(build("torus", dims=(4, 4, 4), link_GBps=90.0))
    >>> [(d.topology, d.npus, d.bandwidth_GBps) for d in net.dims]
    [('Ring', 4, 90.0), ('Ring', 4, 90.0), ('Ring', 4, 90.0)]
    >>> [(d.topology, d.npus) for d in astra_network(build("nvl72")).dims]
    [('Switch', 72)]
    """
    chips = chip_list(G)
    if len(chips) < 2:
        _refuse(G, f"it has {len(chips)} chip(s)")
    losses: list[str] = []
    has_switch = len(chips) < G.number_of_nodes()
    direct = nx.Graph()
    direct.add_nodes_from(chips)
    direct.add_edges_from((u, v, d) for u, v, d in G.edges(data=True)
                          if G.nodes[u].get(KIND) == CHIP and G.nodes[v].get(KIND) == CHIP)
    if "dims" in G.graph and not has_switch:
        dims = _torus(G, chips, losses)
    elif not has_switch:
        dims, _ = _chip_levels(G, chips, losses, direct)
    else:
        start = None
        dims = []
        if direct.number_of_edges():
            # chip-to-chip links in front of the switches: only the innermost level (a tray)
            parts = _partitions(G, chips)
            if parts[0][0] not in ("tray", "board"):
                _refuse(G, "it mixes switches with chip-to-chip links that are not inside trays or boards")
            sub = {c: parts[0][1][c] for c in chips}
            for u, v in direct.edges:
                if sub[u] != sub[v]:
                    _refuse(G, f"chip link {u} -- {v} leaves its {parts[0][0]} while switches join the rest")
            dims += _chip_levels(G, chips, losses, direct, innermost_only=True)[0]
            start = sub
        dims += _switched(G, chips, losses, start)
        first = [s for s in G[chips[0]] if G.nodes[s].get(KIND) != CHIP]
        if len(first) > 1:
            losses.append(f"a chip's {len(first)} switches (planes, tiers) become one Switch per dimension, "
                          f"their bandwidth summed; one plane's failure or imbalance is not modelled")
        if any(G.nodes[s].get("reduces") for s in G):
            losses.append("in-network reduction (NVLS / SHARP) is not modelled: ASTRA-sim's Switch only forwards")
        if any(G.nodes[s].get("role") == "rail" for s in G):
            losses.append("rail-only wiring: a rail switch joins one chip column of every rack, so pairs of other "
                          "indices relay through the rack (PXN); ASTRA-sim's outer Switch joins same-index "
                          "chips only and has no relays")
        if any(G.nodes[s].get("patch") for s in G):
            losses.append("static (patched) leaves are modelled as switches")
    if not dims:
        _refuse(G, "no dimension has more than one chip")
    if math.prod(d.npus for d in dims) != len(chips):
        _refuse(G, f"its dimensions cover {math.prod(d.npus for d in dims):,} NPUs but it has {len(chips):,} chips")
    if "dims" not in G.graph:
        _check_ranks(G, chips, dims, losses)
    if any(d.get("ocs") is not None for *_, d in G.edges(data=True)) and not any("optical circuit" in x for x in losses):
        losses.append("optical circuit switches are fixed links here (no reconfiguration, no OCS failure domain)")
    media = {d.get("medium") for *_, d in G.edges(data=True)}
    if len(media) > 1:
        losses.append(f"link media ({', '.join(sorted(m for m in media if m))}) differ only in the latencies above")
    return AstraNetwork(str(G.graph.get("name", "fabric")), tuple(dims), tuple(dict.fromkeys(losses)))


def write_astra(G: nx.Graph, path) -> AstraNetwork:
    """Write ``G`` as an ASTRA-sim network.yml at ``path``; return the mapping (its ``losses`` too)."""
    net = astra_network(G)
    params = params_of(G)
    header = "parameters: " + ", ".join(f"{k}={v}" for k, v in params.items()) if params else ""
    with open(path, "w", encoding="utf-8") as fh:
        fh.write(net.as_yaml(header))
    return net


# --------------------------------------------------------------------------- SimAI (ns-3)
# SimAI's ns-3 backend (F: aliyun/SimAI at cef83f9d, astra-sim-alibabacloud/inputs/topo/gen_Topo_Template.py
# writes it, astra-sim/network_frontend/ns3/common.h SetupNetwork reads it with ``>>``, so fields are
# whitespace-separated and a comment line would be read as numbers: no comments, the losses go to a
# sidecar JSON file; DataRate and Delay strings go to ns-3 as written) reads:
#   line 1: node_num gpus_per_server nvswitch_num switch_num link_num gpu_type
#   line 2: the NVSwitch ids, then the switch ids (GPUs are ids 0 .. node_num - nvswitch_num - switch_num - 1)
#   then one line per link: src dst bandwidth latency error_rate, e.g. ``0 8 400Gbps 0.0005ms 0``
# GPU ``i`` is in server ``i // gpus_per_server``; same-server pairs go through the server's NVSwitches.
SIMAI_GPU_TYPES = ("A100", "A800", "H100", "H800")   # the types SimAI's reader names; others become NONE (F)
SIMAI_SCALE_UP_ROLES = ("nvlink",)                    # switch roles SimAI models as NVSwitch nodes


@dataclass(frozen=True)
class SimaiTopology:
    """A fabric as SimAI's ns-3 topology: header fields, links, the id of each graph node, the losses."""

    fabric: str
    gpus_per_server: int
    gpu_type: str
    gpus: tuple            # graph node ids of GPUs 0 .. n-1 (rank order)
    nvswitches: tuple      # graph node ids of the NVSwitch nodes, in id order
    switches: tuple        # graph node ids of the other switches, in id order
    links: tuple           # (src id, dst id, bandwidth_gbps, latency_ns)
    losses: tuple[str, ...]

    @property
    def node_ids(self) -> dict:
        return {n: i for i, n in enumerate(self.gpus + self.nvswitches + self.switches)}

    def as_text(self) -> str:
        """The topology file: header, switch-id line, one ``src dst bw latency error_rate`` line per link."""
        n_gpu, n_nv, n_sw = len(self.gpus), len(self.nvswitches), len(self.switches)
        out = [f"{n_gpu + n_nv + n_sw} {self.gpus_per_server} {n_nv} {n_sw} {len(self.links)} {self.gpu_type}",
               " ".join(str(i) for i in range(n_gpu, n_gpu + n_nv + n_sw))]
        out += [f"{u} {v} {_num(bw)}Gbps {_num(lat / 1e6, 9)}ms 0" for u, v, bw, lat in self.links]
        return "\n".join(out) + "\n"

    def sidecar(self) -> dict:
        """What the text cannot say: the fabric, the graph node of every id, the losses."""
        ids = self.node_ids
        return {"format": "SimAI ns-3 topology (aliyun/SimAI)", "fabric": self.fabric,
                "header": ["node_num", "gpus_per_server", "nvswitch_num", "switch_num", "link_num", "gpu_type"],
                "nodes": {str(i): str(n) for n, i in ids.items()}, "losses": list(self.losses)}


def _num(x: float, digits: int = 6) -> str:
    """``400``, ``0.0005``: a plain decimal (no exponent, no trailing zeros) as SimAI's files spell them."""
    if float(x).is_integer():
        return str(int(x))
    return f"{x:.{digits}f}".rstrip("0").rstrip(".")


def simai_topology(G: nx.Graph) -> SimaiTopology:
    """Map ``G`` onto SimAI's ns-3 topology; :class:`BadInput` when it does not map.

    GPUs are the chips in rank order; switches of role ``nvlink`` become NVSwitch nodes (their
    scale-up domain, the chips they join, is SimAI's server, which must be the same size everywhere
    and contiguous in rank order); every other switch a network switch.  Each bundle is one link at
    its per-direction capacity; its delay is the link latency plus half the latency of each switch
    it touches, so a chip-to-chip path carries every switch it crosses once.

    Examples
    --------
    >>> from fabricsim.fabrics import build
    >>> t = simai_topology(build("hgx-h100"))
    >>> t.as_text().splitlines()[0], t.as_text().splitlines()[2]
    ('20 8 4 8 40 H100', '0 8 1000Gbps 0.000152ms 0')
    """
    name = str(G.graph.get("name", "fabric"))
    chips = chip_list(G)
    if not chips:
        raise BadInput(f"{name}: cannot be written for SimAI: it has no chips")
    for u, v in G.edges:
        if G.nodes[u].get(KIND) == CHIP and G.nodes[v].get(KIND) == CHIP:
            raise BadInput(f"{name}: cannot be written for SimAI: {u} -- {v} is a direct chip-to-chip link; SimAI's "
                           f"ns-3 joins GPUs only through NVSwitch or network switches (a torus or xGMI mesh "
                           f"does not map)")
    nv = [n for n, d in G.nodes(data=True) if d.get(KIND) != CHIP and d.get("role") in SIMAI_SCALE_UP_ROLES]
    sw = [n for n, d in G.nodes(data=True) if d.get(KIND) != CHIP and n not in set(nv)]
    losses = []
    if nv:
        H = nx.Graph()
        H.add_nodes_from(chips)
        H.add_edges_from((u, v) for u, v in G.edges if u in set(nv) or v in set(nv))
        rank = {c: i for i, c in enumerate(chips)}
        comps = [sorted(rank[c] for c in comp if c in rank) for comp in nx.connected_components(H)]
        comps = [c for c in comps if c]
        per = len(comps[0])
        bad = next((c for c in comps if len(c) != per or c != list(range(c[0], c[0] + per)) or c[0] % per), None)
        if bad is not None:
            raise BadInput(f"{name}: cannot be written for SimAI: its NVLink domains are not equal blocks of "
                           f"consecutive ranks (ranks {bad[0]}..{bad[-1]}, {len(bad)} chips, vs {per}); SimAI's "
                           f"server is GPUs i // gpus_per_server")
        # NVSwitch ids in server order, so server k's switches precede server k+1's
        first = {s: min(rank[c] for c in G[s] if c in rank) if any(c in rank for c in G[s]) else len(chips)
                 for s in nv}
        nv.sort(key=lambda s: first[s])
    else:
        per = 1
        losses.append("no NVLink switches: every GPU is its own SimAI server (gpus_per_server 1), so no pair "
                      "takes SimAI's intra-server NVLink path; the scale-up switches are network switches here")
    models = {str(G.nodes[c].get("model", "")).lower() for c in chips}
    gpu_type = next((t for t in SIMAI_GPU_TYPES if all(m.startswith(t.lower()) for m in models)), "NONE")
    if gpu_type == "NONE":
        losses.append(f"GPU type NONE: SimAI names only {', '.join(SIMAI_GPU_TYPES)} (chips here: "
                      f"{', '.join(sorted(models))})")
    ids = {n: i for i, n in enumerate(chips + nv + sw)}
    half = {n: float(G.nodes[n].get("latency_ns", 0.0)) / 2 for n in nv + sw}
    links = tuple(sorted((min(ids[u], ids[v]), max(ids[u], ids[v]), float(d[CAPACITY_GBPS]),
                          float(d[LATENCY_NS]) + half.get(u, 0.0) + half.get(v, 0.0))
                         for u, v, d in G.edges(data=True)))
    losses.append("lanes and ports: each bundle is one link of its total per-direction capacity (lane count, "
                  "port speed, a lane's failure and the audit's budgets are not in the format)")
    losses.append("switch latency is folded into the link delays (half of each switch's latency on each of its "
                  "links); SimAI adds its own queueing")
    losses.append(f"routing: fabricsim's {G.graph.get('routing', 'ecmp')!r} policy is not carried; SimAI routes "
                  f"with its own ECMP over shortest paths and its NVSwitch rule for same-server pairs")
    tags = sorted({t for _, d in G.nodes(data=True) for t in d if t in
                   ("rack", "tray", "switch_tray", "board", "group", "plane", "cube", "column", "rail")}
                  | {t for *_, d in G.edges(data=True) for t in d if t in ("ocs", "harness", "rail")})
    if tags:
        losses.append(f"failure domains ({', '.join(tags)}) are not in the format (node ids map back to the graph "
                      f"in this file's 'nodes')")
    if any(G.nodes[n].get("reduces") for n in nv + sw):
        losses.append("in-network reduction (NVLS / SHARP) flags are not carried; SimAI chooses NVLS from its "
                      "own configuration")
    if any(G.nodes[n].get("asics", 1) > 1 for n in nv + sw):
        losses.append("a switch node standing for several ASICs is one SimAI switch")
    if any(G.nodes[n].get("role") == "rail" for n in sw):
        losses.append("rail-only wiring: fabricsim relays cross-rail pairs through the rack (PXN); SimAI's "
                      "routing has no relays")
    if any(G.nodes[n].get("patch") for n in sw):
        losses.append("static (patched) leaves are written as switches")
    media = {d.get("medium") for *_, d in G.edges(data=True)}
    losses.append(f"link media and tiers ({', '.join(sorted(m for m in media if m))}) are not in the format; "
                  f"only their rates and delays are")
    return SimaiTopology(name, per, gpu_type, tuple(chips), tuple(nv), tuple(sw), links, tuple(losses))


def write_simai(G: nx.Graph, path) -> SimaiTopology:
    """Write ``G`` as a SimAI ns-3 topology at ``path`` and its losses to ``path + ".json"``.

    SimAI reads the topology with C++ ``>>`` and no comment syntax, so what the mapping loses,
    and which graph node each id stands for, go to the sidecar JSON file beside it.
    """
    import json
    topo = simai_topology(G)
    with open(path, "w", encoding="utf-8") as fh:
        fh.write(topo.as_text())
    with open(f"{path}.json", "w", encoding="utf-8") as fh:
        json.dump(topo.sidecar(), fh, indent=1)
    return topo


# --------------------------------------------------------------------------- InfraGraph (ASTRA-sim 3.0)
# InfraGraph 3.1.0 (F: the `infragraph` wheel's infragraph.proto / docs/openapi.yaml, MIT, keysight/infragraph):
# an Infrastructure holds device templates (components with a count and a type: xpu, switch, nic, port ...),
# instances of them (name, device, count), links (name, physical bandwidth and latency) and edges between
# instance endpoints ``instance[i]`` / ``component[j]`` with a scheme (one2one, many2many) and a link name.
# Annotations attach free string attributes to nodes (``instance.i.component.j`` or a prefix of it), edges,
# links and the graph.  The service's own infragraph response is {"infrastructure": ..., "annotations": ...}
# (InfraGraphService.populate_infragraph_dict); the file written here has that shape.
INFRAGRAPH_ANNOTATION = "fabricsim"        # prefix of this writer's bookkeeping annotations
INFRAGRAPH_EDGE_TAGS = ("ocs", "harness", "circuit_lanes")   # per-bundle tags: edge annotations, not link classes
_IG_COMPONENT = {CHIP: ("xpu", "xpu"), "switch": ("asic", "switch")}   # fabricsim kind -> (component name, type)


def _ig_name(s: str) -> str:
    """An InfraGraph name: the service parses ``[A-Za-z0-9_-]+`` (anything else becomes ``-``)."""
    return "".join(ch if (ch.isascii() and ch.isalnum()) or ch in "_-" else "-" for ch in str(s)) or "-"


def _ig_type(vals) -> str:
    kinds = {type(v).__name__ for v in vals}
    return kinds.pop() if len(kinds) == 1 and next(iter(vals)).__class__ in (str, int, float, bool) else "json"


def _ig_str(v, t: str) -> str:
    """One annotation value (annotations are strings): the type is recorded once per attribute."""
    import json
    if t == "json":
        return json.dumps(v)
    if t == "bool":
        return "true" if v else "false"
    return repr(v) if t == "float" else str(v)


@dataclass(frozen=True)
class InfraGraphDocument:
    """A fabric as an InfraGraph document: the ``infrastructure`` and ``annotations`` dicts, and the notes.

    ``notes`` say which fabricsim facts InfraGraph's infrastructure model has no field for and are carried
    as annotations only (a reader that ignores annotations loses them).
    """

    fabric: str
    infrastructure: dict
    annotations: dict
    notes: tuple[str, ...]

    def as_dict(self) -> dict:
        return {"infrastructure": self.infrastructure, "annotations": self.annotations}


def infragraph_document(G: nx.Graph) -> InfraGraphDocument:
    """Map ``G`` onto InfraGraph: one device and instance per (kind, model), one link per bundle class.

    Chips are ``xpu`` components, switches ``switch`` components (named ``asic``), one per device
    instance; every bundle is one edge of the expanded graph whose link carries the bundle's
    per-direction capacity (Gb/s) and one-way latency (ns).  Edges are written compactly with the
    schema's slices: a many2many entry per rectangle (every chip of a rack on every switch of it),
    a one2one entry per run at a constant index offset (a torus ring), a single pair otherwise.
    Every node, bundle and graph attribute goes into annotations (one entry per run of indices
    with equal values), with its type in the graph annotation ``fabricsim.types``, so the file
    reads back (:func:`fabricsim.fabrics.infragraph_io.read_infragraph`) into the same graph.

    Examples
    --------
    >>> from fabricsim.fabrics import build
    >>> doc = infragraph_document(build("mi355x"))
    >>> [(i["name"], i["count"]) for i in doc.infrastructure["instances"]]
    [('chip-mi355x', 8)]
    >>> [(e["ep1"]["instance"], e["ep2"]["instance"], e["scheme"]) for e in doc.infrastructure["edges"]][:2]
    [('chip-mi355x[0:7]', 'chip-mi355x[1:8]', 'one2one'), ('chip-mi355x[0:6]', 'chip-mi355x[2:8]', 'one2one')]
    >>> doc = infragraph_document(build("nvl72"))      # 72 GPUs x 18 switches: one many2many entry
    >>> [(e["ep1"]["instance"], e["ep2"]["instance"], e["scheme"]) for e in doc.infrastructure["edges"]]
    [('chip-blackwell-gpu[0:72]', 'switch-nvlink5-switch[0:18]', 'many2many')]
    """
    import json
    name = str(G.graph.get("name", "fabric"))
    if G.number_of_nodes() == 0:
        raise BadInput(f"{name}: cannot be written as InfraGraph: it has no nodes")
    groups: dict = {}
    for n, d in G.nodes(data=True):
        kind = d.get(KIND)
        if kind not in _IG_COMPONENT:
            raise BadInput(f"{name}: node {n}: kind {kind!r} does not map to InfraGraph; valid: chip, switch")
        groups.setdefault((kind, str(d.get("model", "unknown"))), []).append(n)
    for key, members in groups.items():
        if key[0] == CHIP and all(RANK in G.nodes[c] for c in members):
            members.sort(key=lambda c: G.nodes[c][RANK])
    devices, instances, where = [], [], {}
    used: set = set()
    for (kind, model), members in groups.items():
        dev = _ig_name(f"{kind}-{model}")
        while dev in used:
            dev += "_"
        used.add(dev)
        comp, ctype = _IG_COMPONENT[kind]
        devices.append({"name": dev, "description": f"fabricsim {kind} {model}",
                        "components": [{"name": comp, "description": model, "count": 1, "choice": ctype}],
                        "links": [], "edges": []})
        instances.append({"name": dev, "device": dev, "count": len(members)})
        for i, n in enumerate(members):
            where[n] = (dev, i, comp)
    # attribute types, one per attribute name and place
    types = {"graph": {k: _ig_type([v]) for k, v in G.graph.items()}, "node": {}, "edge": {}}
    for place, items in (("node", [d for _, d in G.nodes(data=True)]), ("edge", [d for *_, d in G.edges(data=True)])):
        seen: dict = {}
        for d in items:
            for k, v in d.items():
                seen.setdefault(k, []).append(v)
        types[place] = {k: _ig_type(vs) for k, vs in seen.items()}
    # links: one per class of bundles with equal attributes (per-bundle tags aside)
    link_of: dict = {}
    links, link_ann, edge_ann = [], [], []
    pairs: dict = {}          # (link, instance 1, instance 2) -> [(index 1, index 2)]
    for u, v, d in G.edges(data=True):
        cls = tuple(sorted((k, _ig_str(x, types["edge"][k])) for k, x in d.items() if k not in INFRAGRAPH_EDGE_TAGS))
        if cls not in link_of:
            link = _ig_name(f"l{len(links)}-{d.get('tier', 'link')}")
            link_of[cls] = link
            phys = {}
            if CAPACITY_GBPS in d:
                phys["bandwidth"] = {"choice": "gigabits_per_second", "gigabits_per_second": float(d[CAPACITY_GBPS])}
            if LATENCY_NS in d:
                phys["latency"] = {"choice": "ns", "ns": float(d[LATENCY_NS])}
            desc = ", ".join(f"{k}={x}" for k, x in cls)
            links.append({"name": link, "description": f"fabricsim bundle (per direction): {desc}", "physical": phys})
            link_ann.append({"name": link, "attributes": [{"attribute": k, "value": x} for k, x in cls]})
        (i1, x1, c1), (i2, x2, c2) = where[u], where[v]
        if (i2, x2) < (i1, x1):
            (i1, x1, c1), (i2, x2, c2) = (i2, x2, c2), (i1, x1, c1)
        pairs.setdefault((link_of[cls], i1, i2), []).append((x1, x2))
        tags = [{"attribute": k, "value": _ig_str(x, types["edge"][k])} for k, x in d.items() if k in INFRAGRAPH_EDGE_TAGS]
        if tags:
            edge_ann.append({"ep1": f"{i1}.{x1}.{c1}.0", "ep2": f"{i2}.{x2}.{c2}.0", "attributes": tags})
    comp_of = {dev: comp for dev, _, comp in where.values()}
    edges = []
    for (link, i1, i2), ps in pairs.items():
        for scheme, a, b in _ig_blocks(ps, same=i1 == i2):
            edges.append({"ep1": {"instance": f"{i1}[{a}]", "component": f"{comp_of[i1]}[0]"},
                          "ep2": {"instance": f"{i2}[{b}]", "component": f"{comp_of[i2]}[0]"},
                          "scheme": scheme, "link": link})
    node_ann = _ig_node_annotations(G, where, types)
    notes = _ig_notes(G)
    graph_ann = [{"attribute": k, "value": _ig_str(v, types["graph"][k])} for k, v in G.graph.items()]
    graph_ann += [{"attribute": f"{INFRAGRAPH_ANNOTATION}.types", "value": json.dumps(types, sort_keys=True)},
                  {"attribute": f"{INFRAGRAPH_ANNOTATION}.notes", "value": json.dumps(list(notes))}]
    description = (f"{G.graph.get('description', name)} | written by fabricsim; carried only as annotations: "
                   + "; ".join(notes))
    infra = {"name": _ig_name(name), "description": description, "devices": devices, "links": links,
             "instances": instances, "edges": edges}
    ann = {"nodes": node_ann, "edges": edge_ann, "links": link_ann, "graph": graph_ann}
    return InfraGraphDocument(name, infra, ann, notes)


def _ig_slice(lo: int, hi: int) -> str:
    """Indices lo..hi (inclusive) as the service's slice: ``5`` or ``0:128``."""
    return str(lo) if lo == hi else f"{lo}:{hi + 1}"


def _ig_runs(xs) -> list[tuple[int, int]]:
    """Sorted integers as (first, last) runs of consecutive values."""
    runs: list = []
    for x in xs:
        if runs and x == runs[-1][1] + 1:
            runs[-1][1] = x
        else:
            runs.append([x, x])
    return [(a, b) for a, b in runs]


def _ig_blocks(pairs, *, same: bool):
    """(scheme, slice 1, slice 2) covering the index pairs exactly: many2many rectangles, one2one diagonals.

    Rectangles: consecutive first indices with the same run of second indices (every chip of a rack
    on every switch of it).  What is left: runs along a constant offset (a torus ring's links), as
    one2one slices.  Within one instance (``same``) only one2one is used: a product would also join
    the reversed pairs.
    """
    left = set(pairs)
    out = []
    if not same:
        by_first: dict = {}
        for a, b in sorted(pairs):
            by_first.setdefault(a, []).append(b)
        row_runs = {a: _ig_runs(bs) for a, bs in by_first.items()}
        full = {a: rs[0] for a, rs in row_runs.items() if len(rs) == 1 and rs[0][1] > rs[0][0]}
        for lo, hi in _ig_runs(sorted(full)):
            a = lo
            while a <= hi:                       # split the run where the second-index range changes
                z = a
                while z + 1 <= hi and full[z + 1] == full[a]:
                    z += 1
                b0, b1 = full[a]
                out.append(("many2many", _ig_slice(a, z), _ig_slice(b0, b1)))
                left -= {(x, y) for x in range(a, z + 1) for y in range(b0, b1 + 1)}
                a = z + 1
    by_offset: dict = {}
    for a, b in sorted(left):
        by_offset.setdefault(b - a, []).append(a)
    for off, firsts in by_offset.items():
        for lo, hi in _ig_runs(firsts):
            out.append(("one2one", _ig_slice(lo, hi), _ig_slice(lo + off, hi + off)))
    return out


def _ig_node_annotations(G: nx.Graph, where: dict, types: dict) -> list[dict]:
    """Node annotations, one entry per run of consecutive instance indices with equal values."""
    from collections import defaultdict
    vals: dict = defaultdict(dict)      # (instance, attribute, value) -> indices
    for order, (n, d) in enumerate(G.nodes(data=True)):
        dev, i, _ = where[n]
        items = [(f"{INFRAGRAPH_ANNOTATION}.id", str(n)), (f"{INFRAGRAPH_ANNOTATION}.order", str(order))]
        items += [(k, _ig_str(x, types["node"][k])) for k, x in d.items()]
        for k, x in items:
            vals[(dev, k, x)][i] = True
    entries: dict = {}                  # name -> attributes
    for (dev, k, x), idx in vals.items():
        for lo, hi in _ig_runs(sorted(idx)):
            name = f"{dev}.{lo}" if lo == hi else f"{dev}[{lo}:{hi + 1}]"
            entries.setdefault(name, []).append({"attribute": k, "value": x})
    return [{"name": name, "attributes": attrs} for name, attrs in entries.items()]


def _ig_notes(G: nx.Graph) -> tuple[str, ...]:
    """What InfraGraph's infrastructure model has no field for (so it rides in annotations only)."""
    notes = [f"routing policy {G.graph.get('routing', 'ecmp')!r} (InfraGraph describes wiring, not routing)"]
    tags = sorted({t for _, d in G.nodes(data=True) for t in d if t in ("rack", "tray", "switch_tray", "board",
                                                                          "group", "plane", "cube", "column",
                                                                          "rail", "circuit")}
                  | {t for *_, d in G.edges(data=True) for t in d if t in INFRAGRAPH_EDGE_TAGS})
    if tags:
        notes.append(f"failure-domain and placement tags ({', '.join(tags)}) as node and edge annotations")
    notes.append("chip models, switch roles and ranks as node annotations (devices are named kind-model)")
    notes.append("lanes, lane rate, port speed, medium and tier as link annotations; a link's physical bandwidth "
                 "is the bundle's per-direction capacity (Gb/s), and the schema's float is 32-bit, so the exact "
                 "capacity and latency are annotations too")
    if any(G.nodes[n].get(LATENCY_NS) for n in G):
        notes.append("switch latency as a node annotation (InfraGraph gives latency to links only)")
    if any(G.nodes[n].get("reduces") for n in G):
        notes.append("in-network reduction (NVLS / SHARP) as the switch annotation 'reduces'")
    if any(G.nodes[n].get("asics", 1) > 1 for n in G):
        notes.append("a switch node standing for several ASICs ('asics') is one switch component")
    if G.graph.get("inferred"):
        notes.append("which figures are inferred (graph annotation 'inferred'); InfraGraph has no provenance field")
    return tuple(notes)


def write_infragraph(G: nx.Graph, path) -> InfraGraphDocument:
    """Write ``G`` as an InfraGraph JSON document at ``path``; validated by the ``infragraph`` package.

    Raises :class:`BadInput` when the package is not installed (``pip install 'fabricsim[infragraph]'``)
    or the graph does not map.
    """
    import json
    try:
        from infragraph import Annotation, Infrastructure
    except ImportError:
        raise BadInput("--format infragraph needs the infragraph package: pip install 'fabricsim[infragraph]'") \
            from None
    doc = infragraph_document(G)
    # the package's models check names, types and enums of both halves (raises on a schema error)
    Infrastructure().deserialize(doc.infrastructure)
    Annotation().deserialize(doc.annotations)
    with open(path, "w", encoding="utf-8") as fh:
        json.dump(doc.as_dict(), fh, indent=1)
    return doc
