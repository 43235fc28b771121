"""A machine as NCCL sees it: read an NCCL topology dump (``NCCL_TOPO_DUMP_FILE``) into a fabric.

NCCL writes the topology it detected as XML when ``NCCL_TOPO_DUMP_FILE`` is set and reads the same
format back with ``NCCL_TOPO_FILE``.  The elements read here (element and attribute names from NCCL
dumps quoted in public issues and notes, F; bandwidth constants from NVIDIA/nccl ``src/graph/topo.h``, F)::

    <system version="1">
      <cpu numaid="0" arch="x86_64" vendor="GenuineIntel" ...>
        <pci busid="0000:18:00.0" class="0x030200" link_speed="32.0 GT/s PCIe" link_width="16">
          <gpu dev="0" sm="90" rank="0" gdr="1">
            <nvlink target="0000:05:00.0" count="5" tclass="0x068000"/>   (to an NVSwitch)
            <c2c bw="..." count="..."/>                                   (Grace C2C, GB200 / GB300)
          </gpu>
        </pci>
        <pci busid="0000:19:00.0" class="0x020700" ...>                   (0x0207: InfiniBand, 0x0200: Ethernet)
          <nic><net name="mlx5_0" dev="0" speed="400000" port="1" latency="0" maxconn="131072" gdr="1"/></nic>
        </pci>
      </cpu>
    </system>

* ``class`` / ``tclass`` are PCI class codes: ``0x0302..`` a GPU, ``0x0680..`` an NVSwitch (also the
  class of the placeholder target ``fffffff:ff:ff.0`` an NVL72 GPU reports for its whole switch
  fabric), ``0x0604..`` a PCIe bridge / switch, ``0x0207..`` an InfiniBand NIC, ``0x0200..``
  Ethernet (RoCE) (PCI-SIG class codes, F).
* ``sm`` is the compute capability x 10 (80 A100, 90 H100 / H200, 100 B200 / GB200, 103 B300 / GB300, F).
* a GPU's ``nvlink`` elements group its links by far end: ``count`` links to ``target`` (a bus id).
  An HGX H100 lists four NVSwitch targets with 5/5/4/4 links; a GB200 / GB300 GPU one placeholder
  target with 18 links (dumps quoted in NVIDIA/nccl issues, F).
* ``net`` ``speed`` is in Mb/s (NCCL's ``ncclNetProperties_t.speed``, F: 400000 for NDR 400G).

Mapping onto the graph contract
-------------------------------
* each ``gpu`` -> a chip (``gpu<rank>``), device by ``sm`` (:data:`SM_NODE`), with its NIC as the
  ``"<gpu>+<nic>"`` device when the node has NICs (as the catalog's HGX nodes);
* each distinct NVSwitch ``target`` -> a switch (``nvsw<j>``, role ``nvlink``, ``reduces=True`` from
  sm 90 on: NVLink SHARP, F); a GPU's ``count`` links -> one bundle of ``count x lanes_per_link``
  lanes at the generation's lane rate (the catalog's NVLink figures, :data:`fabricsim.fabrics.hgx.NODE_TYPES`);
* ``nvlink`` to another GPU (``tclass`` 0x0302..) -> a direct chip bundle;
* each ``net`` paired with the GPU nearest it in the PCI tree -> that chip's 4X port to the leaf of
  its rail (``rail<r>``), at ``speed`` (or ``nic_gbps``);
* PCIe bridges, CPUs and C2C links are not priced (NCCL's collectives run over NVLink and the NICs);
  they are counted in the graph attribute ``notes``.

NCCL's own per-link NVLink figures (``topo.h``: SM80 20.0, SM90 20.6, SM100 40.1 GB/s, F) are what
its graph search assumes a link delivers; the graph carries the signalling rate (the data sheet's
25 / 25 / 50 GB/s) like every catalog fabric, and the cost families' efficiency turns that into a
delivered rate.  The NCCL figure is kept on each NVLink bundle as ``nccl_GBps`` for reference.
"""
from __future__ import annotations

import json
import math
import xml.etree.ElementTree as ET
from dataclasses import dataclass
from pathlib import Path

import networkx as nx

from ..topo.builders import check_rate, check_size
from ..topo.contract import CHIP, SWITCH, add_bundle, validate
from ..topo.devices import device
from ..topo.errors import BadInput
from .cluster import _check_count, _place
from .devices import NICS, gpu_with_nic
from .hgx import BOARD_NS, NODE_TYPES, scale_out
from .nvl72 import COPPER_NS

__all__ = ["read_nccl_topo", "NcclNode", "parse_nccl_topo", "SM_NODE", "NCCL_NVLINK_GBps"]

GPU_CLASS, NVSWITCH_CLASS, BRIDGE_CLASS = "0x0302", "0x0680", "0x0604"   # PCI-SIG class codes (F)
IB_CLASS, ETH_CLASS = "0x0207", "0x0200"                                   # PCI-SIG class codes (F)
# sm -> the catalog node type whose GPU, NVLink lanes and switch it has (NVIDIA CUDA compute
# capabilities, F: 8.0 A100, 9.0 H100/H200, 10.0 B200/GB200, 10.3 B300/GB300)
SM_NODE = {80: "a100", 90: "h100", 100: "b200", 103: "b300"}
# NCCL's per-link NVLink bandwidth by sm, GB/s (NVIDIA/nccl src/graph/topo.h SM*_NVLINK_BW, F)
NCCL_NVLINK_GBps = {60: 18.0, 70: 20.0, 80: 20.0, 86: 12.0, 90: 20.6, 100: 40.1, 103: 40.1}
# scale-out leaf by network and NIC rate (Gb/s): Quantum HDR / NDR / XDR (F, as fabrics/hgx.py); RoCE:
# Tomahawk 5 (I, as the AMD rail cluster)
PLACEHOLDER = "fffffff"   # bus id prefix of the switch fabric outside the node (NVL72 dumps, F)
IB_LEAVES = ((200.0, "QM8700"), (400.0, "QM9700"), (800.0, "Q3400"))
ROCE_LEAF = "BCM78900"


@dataclass(frozen=True)
class NcclNode:
    """One node read from a dump: what the graph is built from.

    ``gpus``: (bus id, sm, dev, rank) in rank order; ``switch_links``: per GPU, {target bus id: links};
    ``gpu_links``: (gpu index, gpu index, links); ``nics``: per GPU its (net name, Gb/s or None), or
    empty; ``network``: ``infiniband`` | ``roce``; ``notes``: what was counted but not modelled.
    """

    path: str
    gpus: tuple
    switch_links: tuple
    gpu_links: tuple
    nics: tuple
    network: str
    notes: tuple
    inferred: tuple


def _where(el: ET.Element) -> str:
    attrs = " ".join(f'{k}="{v}"' for k, v in list(el.attrib.items())[:3])
    return f"<{el.tag}{' ' + attrs if attrs else ''}>"


def _attr(path, el: ET.Element, key: str, kind=str):
    if key not in el.attrib:
        raise BadInput(f"{path}: {_where(el)} has no '{key}' attribute")
    raw = el.attrib[key]
    try:
        return kind(raw) if kind is not int else int(raw, 0)
    except ValueError:
        raise BadInput(f"{path}: {_where(el)} {key}={raw!r} is not {'an integer' if kind is int else 'a number'}") \
            from None


def _ancestors(parents: dict, el: ET.Element) -> list:
    out = []
    while el in parents:
        el = parents[el]
        out.append(el)
    return out[::-1]


def parse_nccl_topo(path) -> NcclNode:
    """Read an NCCL topology dump into a :class:`NcclNode`; :class:`BadInput` in one line when malformed.

    Examples
    --------
    >>> from importlib.resources import files
    >>> n = parse_nccl_topo(files("fabricsim") / "examples/nccl_topo/hgx_h100.xml")
    >>> len(n.gpus), sorted(n.switch_links[0].values()), n.network
    (8, [4, 4, 5, 5], 'infiniband')
    """
    from ..topo.inputs import read_input_bytes
    path = str(path)
    raw = read_input_bytes(path, "an NCCL topology XML dump (NCCL_TOPO_DUMP_FILE)")
    try:
        root = ET.fromstring(raw)
    except ET.ParseError as exc:
        raise BadInput(f"{path}: not well-formed XML: {exc}") from None
    if root.tag != "system":
        raise BadInput(f"{path}: the root element is <{root.tag}>; an NCCL topology dump starts with <system>")
    parents = {c: p for p in root.iter() for c in p}
    gpu_els = list(root.iter("gpu"))
    if not gpu_els:
        raise BadInput(f"{path}: no <gpu> element under <system>; an NCCL dump lists each GPU as "
                       f"<pci class=\"0x030200\"><gpu .../></pci>")
    raw = []
    for el in gpu_els:
        pci = parents.get(el)
        if pci is None or pci.tag != "pci" or "busid" not in pci.attrib:
            raise BadInput(f"{path}: {_where(el)} is not inside a <pci busid=...> element")
        sm = _attr(path, el, "sm", int)
        if sm not in SM_NODE:
            raise BadInput(f"{path}: {_where(el)} sm={sm} has no NVLink node type here; valid: "
                           f"{', '.join(map(str, SM_NODE))}")
        dev = _attr(path, el, "dev", int)
        rank = _attr(path, el, "rank", int) if "rank" in el.attrib else None
        raw.append((pci.attrib["busid"].lower(), sm, dev, rank, el))
    inferred: list[str] = []
    ranks = [r[3] for r in raw]
    if None in ranks or sorted(ranks) != list(range(len(raw))):
        inferred.append("ranks in document order (the dump's rank attributes are not 0..N-1 once each)")
    else:
        raw.sort(key=lambda r: r[3])
    if len({r[1] for r in raw}) > 1:
        raise BadInput(f"{path}: <gpu> elements mix sm {sorted({r[1] for r in raw})}; one GPU generation per node")
    index = {r[0]: i for i, r in enumerate(raw)}
    if len(index) != len(raw):
        raise BadInput(f"{path}: two <gpu> elements share a pci busid; one GPU per <pci> element")
    switch_links, gpu_links, other, c2c = [], {}, 0, 0
    for i, (busid, sm, dev, rank, el) in enumerate(raw):
        to_sw: dict[str, int] = {}
        for nv in el.findall("nvlink"):
            target = _attr(path, nv, "target").lower()
            count = _attr(path, nv, "count", int)
            tclass = _attr(path, nv, "tclass").lower()
            if count < 1:
                raise BadInput(f"{path}: {_where(nv)} count={count} is not a positive link count")
            if tclass.startswith(NVSWITCH_CLASS):
                to_sw[target] = to_sw.get(target, 0) + count
            elif tclass.startswith(GPU_CLASS):
                if target not in index:
                    raise BadInput(f"{path}: {_where(nv)} targets GPU {target}, which no <pci busid> in the file is")
                j = index[target]
                key = (min(i, j), max(i, j))
                gpu_links[key] = max(gpu_links.get(key, 0), count)   # each side lists the same links
            else:
                other += count
        c2c += sum(_attr(path, c, "count", int) for c in el.findall("c2c"))
        if not to_sw and not any(i in k for k in gpu_links) and not any(
                nv.attrib.get("tclass", "").lower().startswith(GPU_CLASS) for nv in el.findall("nvlink")):
            raise BadInput(f"{path}: {_where(el)} (pci {busid}) has no <nvlink> element to an NVSwitch or GPU; "
                           f"PCIe-only GPUs are not modelled")
        switch_links.append(to_sw)
    # NICs: every <net>, paired with the GPU that shares the deepest PCI ancestor (NCCL's GPU-NIC affinity)
    nets = []
    for nic in root.iter("nic"):
        nets += [(n, nic) for n in nic.findall("net")]
    if not nets and any(True for _ in root.iter("net")):
        raise BadInput(f"{path}: <net> elements must sit inside a <nic> element")
    pcis = [p for p in root.iter("pci")]
    notes = [f"PCIe: {sum(p.attrib.get('class', '').lower().startswith(BRIDGE_CLASS) for p in pcis)} "
             f"bridge(s) / switch(es) and {len(pcis)} PCI device(s) in the dump, not priced"]
    if c2c:
        notes.append(f"C2C: {c2c} GPU-to-Grace link(s), not priced (host memory traffic)")
    if other:
        notes.append(f"{other} NVLink(s) to a CPU or other device class, not priced")
    dumped_sw = {p.attrib.get("busid", "").lower() for p in pcis
                 if p.attrib.get("class", "").lower().startswith(NVSWITCH_CLASS)}
    targets = {t for s in switch_links for t in s}
    if dumped_sw - targets:
        notes.append(f"{len(dumped_sw - targets)} NVSwitch PCI device(s) no GPU links to, left out")
    nics: list = []
    network = "infiniband"
    if nets:
        if len(nets) < len(raw):
            raise BadInput(f"{path}: {len(nets)} <net> element(s) for {len(raw)} GPUs; the rail model gives each "
                           f"GPU its own NIC port: give one <nic><net/></nic> per GPU")
        gpu_anc = [_ancestors(parents, r[4]) for r in raw]
        free = list(range(len(nets)))
        for i in range(len(raw)):
            def shared(k):
                anc = _ancestors(parents, nets[k][1])
                return sum(1 for a, b in zip(gpu_anc[i], anc) if a is b)
            k = max(free, key=lambda k: (shared(k), -k))
            free.remove(k)
            net = nets[k][0]
            name = _attr(path, net, "name")
            speed = _attr(path, net, "speed", float) / 1000.0 if "speed" in net.attrib else None
            if speed is not None and (not math.isfinite(speed) or speed <= 0):
                raise BadInput(f"{path}: {_where(net)} speed={net.attrib['speed']!r} is not a positive rate in Mb/s")
            nics.append((name, speed))
        if free:
            notes.append(f"{len(free)} NIC port(s) beyond one per GPU (storage / management), not priced")
        classes = set()
        for k in range(len(nets)):
            anc = [a for a in _ancestors(parents, nets[k][1]) if a.tag == "pci"]
            if anc:
                classes.add(anc[-1].attrib.get("class", "").lower()[:6])
        names = " ".join(n for n, _ in nics).lower()
        if ETH_CLASS in classes or "roce" in names:
            network = "roce"
        elif IB_CLASS in classes or names.startswith("mlx") or " ib" in f" {names}":
            network = "infiniband"
        else:
            inferred.append("network InfiniBand (the NICs' PCI class and names do not say)")
    return NcclNode(path, tuple(r[:4] for r in raw), tuple(switch_links),
                    tuple((i, j, c) for (i, j), c in sorted(gpu_links.items())), tuple(nics), network,
                    tuple(notes), tuple(inferred))


def _nic_device(rate_gbps: float) -> str:
    """The smallest catalog NIC at least ``rate_gbps`` fast (its lane budget bounds the audit)."""
    fit = sorted((v[1], k) for k, v in NICS.items() if k != "pollara" and v[1] >= rate_gbps - 1e-9)
    if not fit:
        raise BadInput(f"nic_gbps={rate_gbps:g} is faster than every catalog NIC; valid: up to "
                       f"{max(v[1] for v in NICS.values()):g} Gb/s")
    return fit[0][1]


def _leaf(network: str, rate_gbps: float) -> str:
    if network == "roce":
        return ROCE_LEAF
    return next((m for r, m in IB_LEAVES if rate_gbps <= r + 1e-9), IB_LEAVES[-1][1])


def _node_graph(n: NcclNode, model: str) -> tuple[nx.Graph, list[str]]:
    """One node's GPUs and NVLink switches; its chip ids in rank order."""
    t = NODE_TYPES[SM_NODE[n.gpus[0][1]]]
    sw_dev = device(t.switch)
    nccl = NCCL_NVLINK_GBps[n.gpus[0][1]]
    G = nx.Graph(routing="ecmp")
    chips = [f"gpu{i}" for i in range(len(n.gpus))]
    for i, cid in enumerate(chips):
        G.add_node(cid, kind=CHIP, model=model, forwards=False, rank=i, rack=0, tray=0)
    targets = sorted({t_ for s in n.switch_links for t_ in s})
    for j, target in enumerate(targets):
        sid = f"nvsw{j}"
        lanes = sum(s.get(target, 0) for s in n.switch_links) * t.lanes_per_link
        G.add_node(sid, kind=SWITCH, model=t.switch, role="nvlink", forwards=True, rack=0, plane=j,
                   latency_ns=sw_dev.latency_ns, busid=target, asics=max(1, math.ceil(lanes / sw_dev.lanes)))
        if t.reduces:
            G.nodes[sid]["reduces"] = True    # NVLink SHARP from NVSwitch gen 3 (sm 90) on (F)
        # switches outside the node (NVL72's switch trays) are reached over the rack's copper spine
        outside = target.startswith(PLACEHOLDER)
        for i, s in enumerate(n.switch_links):
            if target in s:
                add_bundle(G, chips[i], sid, lanes=s[target] * t.lanes_per_link, lane_gbps=t.lane_gbps,
                           port_gbps=t.lanes_per_link * t.lane_gbps, medium="copper" if outside else "pcb",
                           tier="nvlink", latency_ns=COPPER_NS if outside else BOARD_NS,
                           nccl_GBps=nccl * s[target])
    for i, j, c in n.gpu_links:
        add_bundle(G, chips[i], chips[j], lanes=c * t.lanes_per_link, lane_gbps=t.lane_gbps,
                   port_gbps=t.lanes_per_link * t.lane_gbps, medium="pcb", tier="nvlink", latency_ns=BOARD_NS,
                   nccl_GBps=nccl * c)
    return G, chips


def read_nccl_topo(path, *, nodes: int = 1, nic_gbps: float = 0.0, spine_oversubscription: float = 1.0) -> nx.Graph:
    """A fabric from an NCCL topology dump: one node, or ``nodes`` copies joined rail-optimized.

    Parameters
    ----------
    path : str or path-like
        The XML NCCL wrote with ``NCCL_TOPO_DUMP_FILE``.
    nodes : int
        Copies of the node; above 1 they are joined as :func:`fabricsim.fabrics.cluster.rail_cluster`
        joins HGX nodes (GPU ``r`` of every node on rail ``r``'s leaf, leaves joined by spines).
    nic_gbps : float
        Per-direction NIC port rate, Gb/s; 0 (default) takes each ``net``'s ``speed``.
    spine_oversubscription : float
        Leaf down:up bandwidth with ``nodes`` > 1 (1 = non-blocking).

    Returns
    -------
    networkx.Graph
        Passes :func:`fabricsim.topo.contract.validate`; graph attributes ``name`` (the file's stem),
        ``source`` (the file), ``family`` (nvlink3/4/5 by ``sm``), ``families`` (tier -> cost family),
        ``inferred`` (what was assumed) and ``notes`` (what was counted but not modelled).

    Examples
    --------
    >>> from importlib.resources import files
    >>> G = read_nccl_topo(files("fabricsim") / "examples/nccl_topo/hgx_h100.xml")
    >>> G.graph["family"], [G.edges["gpu0", f"nvsw{j}"]["lanes"] // 2 for j in range(4)]
    ('nvlink4', [5, 4, 4, 5])
    """
    _check_count("nodes", nodes)
    n = parse_nccl_topo(path)
    kind = SM_NODE[n.gpus[0][1]]
    t = NODE_TYPES[kind]
    inferred = list(n.inferred)
    if nic_gbps:
        check_rate("nic_gbps", nic_gbps)
    if n.nics:
        speeds = {s for _, s in n.nics}
        if nic_gbps:
            rate = float(nic_gbps)
        elif None in speeds:
            raise BadInput(f"{n.path}: <net name=\"{next(nm for nm, s in n.nics if s is None)}\"> has no 'speed' "
                           f"attribute (Mb/s); give --nic-gbps")
        elif len(speeds) > 1:
            raise BadInput(f"{n.path}: the GPUs' <net> speeds differ ({', '.join(f'{s:g}' for s in sorted(speeds))} "
                           f"Gb/s); give one rate with --nic-gbps")
        else:
            rate = speeds.pop()
        nic = _nic_device(rate)
        model = gpu_with_nic(t.gpu, nic).name
    elif nodes > 1:
        raise BadInput(f"{n.path}: nodes={nodes} needs NICs to join the nodes, and the dump has no <nic><net/> element")
    else:
        model, rate = t.gpu, 0.0
    node, chips = _node_graph(n, model)
    per = len(chips)
    check_size(f"{nodes:,} copies of {Path(str(path)).name}", nodes=nodes * (node.number_of_nodes() + 2 * per),
               links=nodes * (node.number_of_edges() + 2 * per))
    if nodes == 1:
        G = node
        if n.nics:
            scale_out(G, [[c] for c in chips], nic_gbps=rate, leaf_model=_leaf(n.network, rate))
    else:
        w = len(str(nodes - 1))
        G = nx.Graph(routing="ecmp")
        for k in range(nodes):
            _place(G, node, k, f"n{k:0{w}d}/", per)
        rails = [[f"n{k:0{w}d}/{c}" for k in range(nodes)] for c in chips]
        scale_out(G, rails, nic_gbps=rate, leaf_model=_leaf(n.network, rate), spine=True,
                  oversubscription=spine_oversubscription)
    tiers = {d["tier"] for *_, d in G.edges(data=True)}
    families = {"nvlink": t.family, **{x: n.network for x in ("rail", "spine") if x in tiers}}
    if any(len(s) == 1 and next(iter(s)).startswith(PLACEHOLDER) for s in n.switch_links):
        inferred.append("the NVLink switch fabric the dump shows as one placeholder target is one switch node "
                        "carrying this node's links only (its other trays are outside the dump)")
    inferred.append("NVLink lanes and rate from the catalog's " + kind + " node; link latencies inferred "
                    "(2 ns board, 5 ns copper spine, 50 ns optics); switch latencies the device catalog's")
    if n.nics:
        inferred.append(f"NIC device {nic} and leaf {_leaf(n.network, rate)} chosen by rate ({rate:g} Gb/s)")
    G.graph.update(name=Path(str(path)).stem, source=str(path), family=t.family,
                   families=json.dumps(families, sort_keys=True), generation=kind, builder="nccl-topo",
                   params=json.dumps({"nodes": nodes, "nic_gbps": nic_gbps,
                                      "spine_oversubscription": spine_oversubscription}),
                   description=f"NCCL topology dump {Path(str(path)).name}: {nodes} x {per} GPUs (sm "
                               f"{n.gpus[0][1]}), {sum(1 for _, d in G.nodes(data=True) if d.get('role') == 'nvlink')}"
                               f" NVLink switch node(s), {len(n.nics)} NIC(s) per node",
                   inferred="; ".join(inferred), notes="; ".join(n.notes))
    bad = validate(G)
    if bad:   # a builder bug, not the user's: say so in one line
        raise BadInput(f"{path}: the imported graph breaks the contract: {bad[0]}")
    return G
