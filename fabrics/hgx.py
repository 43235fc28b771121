"""NVIDIA HGX 8-GPU nodes: eight SXM GPUs on one baseboard, NVSwitch chips, one scale-out NIC per GPU.

Figures (F found, F2 second-hand, D derived, I inferred), per generation:

=========  ===========  ======================  ==========================  =======================  =====
node       GPU          NVLink per GPU          NVSwitch chips, links/GPU   NIC per GPU              NVLS
=========  ===========  ======================  ==========================  =======================  =====
hgx-a100   A100 SXM     12 x 25 GB/s = 300 (F)  6 x gen 2, 2 each (F)       ConnectX-6 HDR 200G (F)  no
hgx-h100   H100 / H200  18 x 25 GB/s = 450 (F)  4 x gen 3, 5/4/4/5 (F2)     ConnectX-7 NDR 400G (F)  yes
hgx-b200   B200         18 x 50 GB/s = 900 (F)  2 x NVLink 5, 9 + 9 (F2)    ConnectX-7 NDR 400G (F)  yes
hgx-b300   B300         18 x 50 GB/s = 900 (F)  2 x NVLink 5, 9 + 9 (F2)    ConnectX-8 XDR 800G (F)  yes
=========  ===========  ======================  ==========================  =======================  =====

Sources: NVIDIA A100 / H100 / H200 / B200 / B300 data sheets (links and GB/s per GPU, F); "Introducing
NVIDIA HGX A100" and "Introducing NVIDIA HGX H100" technical blogs (6 and 4 NVSwitch chips, every GPU
reaches every switch, F); the third-generation NVSwitch blog (64 ports, NVLink SHARP, F); the H100 link
split 5/4/4/5 over the four switches is NVIDIA's DGX H100 NVLink topology (Hot Chips 34 NVSwitch talk; F2,
not re-read here); HGX B200 has two NVLink switch chips (Computex 2024 bare board, F2), so each GPU's 18
links split 9 + 9 (D: 8 GPUs x 9 = 72 = one NVLink 5 switch chip's ports, F); DGX A100 / H100 / B200 /
B300 user guides list 8 compute NICs, one per GPU (F).

Layout: GPUs ``gpu0``..``gpu7`` (``rank``, ``rack=0``, ``tray=0``, ``forwards=False``), switch chips
``nvsw0``... (role ``nvlink``, ``plane``, ``reduces=True`` from gen 3 on), one bundle per GPU and switch
(tier ``nvlink``, ``pcb``: the baseboard).  With ``nics=8`` each GPU's NIC port (4X) goes to a rail leaf
``rail0``..``rail7`` (role ``leaf``, ``rail``; tier ``rail``, optical), so one node alone prices its
NICs; :mod:`fabricsim.fabrics.cluster` joins many nodes' rail leaves through spines.

A GPU with its NIC is one chip node (device ``"<gpu>+<nic>"``, :func:`fabricsim.fabrics.devices.gpu_with_nic`):
the NIC hangs off the GPU's PCIe switch and NCCL pairs the two, so the graph keeps no NIC node.

Notes
-----
* The ``nvls`` algorithm needs every switch a GPU reaches to reduce; a rail leaf does not (SHARP is
  off unless a cluster turns it on), so NVLS is offered on ``nics=0`` nodes and on clusters with
  ``sharp=True``.  That check lives in :func:`fabricsim.collectives.algorithms.view_of`.
* Unequal bundles (H100's 5/4/4/5): ECMP's default ``split="equal"`` puts a quarter of a GPU pair's flow
  on each switch, so a 4-link switch saturates first (400 of 450 GB/s per GPU); ``--split capacity``
  spreads per link as the NVLink hardware does.
"""
from __future__ import annotations

import json
import math
from dataclasses import dataclass
from typing import Literal

import networkx as nx

from ..topo.builders import check_rate, check_size
from ..topo.contract import CHIP, SWITCH, add_bundle
from ..topo.devices import device
from ..topo.errors import BadInput
from .devices import NICS, gpu_with_nic
from .registry import register

__all__ = ["NodeType", "NODE_TYPES", "nvlink_node", "scale_out", "families_json", "NIC_CHOICES", "GPUS"]

GPUS = 8                  # 8 SXM GPUs per HGX baseboard (F)
BOARD_NS = 2.0            # baseboard trace GPU -- NVSwitch, ~0.3 m (I)
OPTICAL_NS = 50.0         # NIC -- leaf and leaf -- spine: ~10 m of fibre at 5 ns/m (I, as fabrics/jalapeno.py)
NIC_CHOICES = (0, GPUS)   # no scale-out NICs, or one per GPU
NETWORK_FAMILY = {"infiniband": "infiniband", "roce": "roce"}   # collectives/cost/families/*.toml


@dataclass(frozen=True)
class NodeType:
    """One node generation: its GPU, scale-up wiring and default scale-out NIC and switch.

    ``links`` is the number of NVLinks from each GPU to each switch chip (empty for a switchless
    xGMI mesh); ``leaf`` the scale-out switch device; ``network`` ``infiniband`` or ``roce``.
    """

    gpu: str
    switch: str | None
    links: tuple[int, ...]
    lanes_per_link: int
    lane_gbps: float
    reduces: bool
    nic: str
    leaf: str
    network: str
    family: str
    tier: str = "nvlink"

    @property
    def nic_gbps(self) -> float:
        return NICS[self.nic][1]

    @property
    def scale_up_GBps(self) -> float:
        """Per-direction scale-up bandwidth of one GPU, GB/s (D: links x lanes x rate / 8)."""
        return sum(self.links) * self.lanes_per_link * self.lane_gbps / 8


NODE_TYPES = {
    # 12 links, 2 to each of 6 NVSwitch gen 2 (F); 4 lanes x 50G per link (F); no NVLS (F)
    "a100": NodeType("a100-sxm", "nvswitch2", (2,) * 6, 4, 50.0, False, "cx6", "QM8700", "infiniband", "nvlink3"),
    # 18 links, 5/4/4/5 over 4 NVSwitch gen 3 (F2); 2 lanes x 100G per link (F2); NVLS (F)
    "h100": NodeType("h100-sxm", "nvswitch3", (5, 4, 4, 5), 2, 100.0, True, "cx7", "QM9700", "infiniband", "nvlink4"),
    "h200": NodeType("h200-sxm", "nvswitch3", (5, 4, 4, 5), 2, 100.0, True, "cx7", "QM9700", "infiniband", "nvlink4"),
    # H800: 8 links, 2 to each of the 4 NVSwitch gen 3 (I: the split); CX7 400G per GPU (F: DeepEP's H800 + CX7)
    "h800": NodeType("h800-sxm", "nvswitch3", (2, 2, 2, 2), 2, 100.0, True, "cx7", "QM9700", "infiniband", "nvlink4"),
    # 18 links, 9 + 9 over 2 NVLink 5 switch chips (F2/D); 2 lanes x 200G per link (F2, as NVL72); NVLS (F)
    "b200": NodeType("blackwell-gpu", "nvlink5-switch", (9, 9), 2, 200.0, True, "cx7", "QM9700", "infiniband",
                     "nvlink5"),
    "b300": NodeType("blackwell-ultra-gpu", "nvlink5-switch", (9, 9), 2, 200.0, True, "cx8", "Q3400", "infiniband",
                     "nvlink5"),
}


def families_json(G: nx.Graph, scale_up_tier: str, scale_up_family: str, network: str) -> str:
    """The ``families`` graph attribute: each link tier of ``G`` -> its cost family, as JSON."""
    tiers = {d["tier"] for *_, d in G.edges(data=True)}
    fam = {scale_up_tier: scale_up_family}
    fam.update({t: NETWORK_FAMILY[network] for t in ("rail", "spine") if t in tiers})
    return json.dumps(fam, sort_keys=True)


def check_nics(nics: int) -> None:
    if isinstance(nics, bool) or nics not in NIC_CHOICES:
        raise BadInput(f"nics={nics!r} is not valid: choose 0 (no scale-out NICs) or {GPUS} (one per GPU)")


def nvlink_node(t: NodeType) -> nx.Graph:
    """One HGX node's GPUs and NVSwitch chips (no NICs), rack 0."""
    sw = device(t.switch)
    G = nx.Graph(routing="ecmp")
    gpus = [f"gpu{g}" for g in range(GPUS)]
    for g, gid in enumerate(gpus):
        G.add_node(gid, kind=CHIP, model=t.gpu, forwards=False, rank=g, rack=0, tray=0)
    for j, links in enumerate(t.links):
        sid = f"nvsw{j}"
        G.add_node(sid, kind=SWITCH, model=t.switch, role="nvlink", forwards=True, rack=0, plane=j,
                   latency_ns=sw.latency_ns)
        if t.reduces:
            G.nodes[sid]["reduces"] = True   # NVLink SHARP (NVLS) in gen-3 NVSwitch and later (F)
        for gid in gpus:
            add_bundle(G, gid, sid, lanes=links * t.lanes_per_link, lane_gbps=t.lane_gbps,
                       port_gbps=t.lanes_per_link * t.lane_gbps, medium="pcb", tier="nvlink", latency_ns=BOARD_NS)
    return G


def _spines_for(up_ports: int, leaves: int, spine_ports: int) -> int:
    """Spine count: the fewest that divide every leaf's up ports evenly and fit the spine's ports."""
    need = math.ceil(leaves * up_ports / spine_ports)
    return next((s for s in range(max(1, need), up_ports + 1) if up_ports % s == 0), up_ports)


def scale_out(G: nx.Graph, rails: list[list], *, nic_gbps: float, leaf_model: str, spine: bool = False,
              oversubscription: float = 1.0, sharp: bool = False, nic_lanes: int = 4) -> None:
    """Add a rail-optimized scale-out network to ``G`` (in place).

    Parameters
    ----------
    rails : list of lists of chip ids
        ``rails[r]``: the chips whose NIC joins rail ``r`` (GPU ``r`` of every node).
    nic_gbps : float
        Per-direction rate of one NIC port (a 4X port of ``nic_lanes`` lanes).
    leaf_model : str
        Device of every leaf and spine switch.
    spine : bool
        Join the leaves through a spine tier (every leaf a bundle to every spine); without it every
        rail is its own island (a single node's NICs).
    oversubscription : float
        Leaf down:up bandwidth with a spine (1 = non-blocking).
    sharp : bool
        Leaves and spines reduce in the network (``reduces=True``).

    Notes
    -----
    A rail has as many leaves as its chips need at the leaf's port count (ports at ``nic_gbps``,
    less the up ports with a spine), the fewest that split the rail evenly: one leaf per rail up to 32
    nodes on a 64-port Quantum-2 at 1:1 (NVIDIA's DGX SuperPOD scalable unit, F).  Leaves carry
    ``rail`` and, with several per rail, are ``rail<r>.<j>``; spines ``spine<s>``.
    """
    dev = device(leaf_model)
    ports = dev.ports_at(nic_gbps)
    if spine:
        if isinstance(oversubscription, bool) or not isinstance(oversubscription, (int, float)) \
                or not math.isfinite(oversubscription) or oversubscription <= 0:
            raise BadInput(f"spine_oversubscription={oversubscription!r} is not valid: a finite ratio > 0")
        # the ratio's share of the ports, computed as a fraction of 1 first: ports * 1e308 would overflow to inf
        down_cap = max(1, math.floor(ports * (oversubscription / (1 + oversubscription))))
    else:
        down_cap = ports
    lane = nic_gbps / nic_lanes
    leaves: list[str] = []
    up = 0
    for r, members in enumerate(rails):
        m = len(members)
        k = next(k for k in range(max(1, math.ceil(m / down_cap)), m + 1) if m % k == 0)
        per = m // k
        if spine:
            u = per / oversubscription   # inf for a denormal ratio: refused below, never rounded
            if not math.isfinite(u) or abs(u - round(u)) > 1e-9 or round(u) < 1:
                valid = sorted(per / q for q in range(1, per + 1) if per % q == 0)
                raise BadInput(f"spine_oversubscription={oversubscription:g} gives {u:g} up ports per leaf of "
                               f"{per} nodes; it must be whole: valid ratios {', '.join(f'{v:g}' for v in valid)}")
            up = round(u)
        for j in range(k):
            lid = f"rail{r}" if k == 1 else f"rail{r}.{j}"
            G.add_node(lid, kind=SWITCH, model=leaf_model, role="leaf", forwards=True, rail=r,
                       latency_ns=dev.latency_ns)
            if sharp:
                G.nodes[lid]["reduces"] = True
            leaves.append(lid)
            for cid in members[j * per:(j + 1) * per]:
                add_bundle(G, cid, lid, lanes=nic_lanes, lane_gbps=lane, port_gbps=nic_gbps, medium="optical",
                           tier="rail", latency_ns=OPTICAL_NS, rail=r)
    if not spine:
        return
    # an oversubscription far below 1 asks for more up ports than any switch has: the spine tier's size
    # (at least leaves x up / ports spines, a bundle from every leaf to each) is refused before it is built
    need = math.ceil(len(leaves) * up / ports)
    check_size(f"a spine tier for spine_oversubscription={oversubscription:g} ({float(up):.3g} up ports per leaf)",
               nodes=need, links=len(leaves) * need)
    S = _spines_for(up, len(leaves), ports)
    w = len(str(S - 1))
    for s in range(S):
        sid = f"spine{s:0{w}d}"
        G.add_node(sid, kind=SWITCH, model=leaf_model, role="spine", forwards=True,
                   latency_ns=dev.latency_ns)
        if sharp:
            G.nodes[sid]["reduces"] = True
        for lid in leaves:
            add_bundle(G, lid, sid, lanes=up // S * nic_lanes, lane_gbps=lane, port_gbps=nic_gbps,
                       medium="optical", tier="spine", latency_ns=OPTICAL_NS)


def with_nics(G: nx.Graph, gpu: str, nic: str) -> None:
    """Every chip of ``G`` becomes the ``"<gpu>+<nic>"`` device: a GPU whose NIC port is part of its budget."""
    model = gpu_with_nic(gpu, nic).name
    for _, d in G.nodes(data=True):
        if d.get("kind") == CHIP:
            d["model"] = model


def nic_rate(nic_gbps, default: float) -> float:
    """``nic_gbps`` checked (0 means the node type's default rate)."""
    if nic_gbps == 0:
        return default
    return check_rate("nic_gbps", nic_gbps)


def hgx_node(kind: str, *, nics: int, nic_gbps: float) -> nx.Graph:
    """The HGX node of ``NODE_TYPES[kind]`` with ``nics`` NICs at ``nic_gbps`` (see the module)."""
    t = NODE_TYPES[kind]
    check_nics(nics)
    rate = nic_rate(nic_gbps, t.nic_gbps)
    G = nvlink_node(t)
    if nics:
        with_nics(G, t.gpu, t.nic)
        scale_out(G, [[f"gpu{g}"] for g in range(GPUS)], nic_gbps=rate, leaf_model=t.leaf)
    G.graph.update(generation=kind, accelerator=kind, family=t.family, families=families_json(G, "nvlink", t.family, t.network),
                   inferred="link latencies inferred (2 ns board, 50 ns optics); NVSwitch latency inferred")
    return G


@register("hgx-a100", description="NVIDIA HGX A100 8-GPU: 12 NVLink 3 links per GPU (300 GB/s per direction), "
                                  "2 to each of 6 NVSwitch gen 2, no NVLS; 8 x ConnectX-6 HDR 200G to 8 rail "
                                  "leaves (latencies inferred)",
          source="NVIDIA A100 data sheet and HGX A100 blog (F: 12 links, 6 NVSwitch); DGX A100 user guide "
                 "(F: 8 x 200G HDR); QM8700 leaves (F); link latencies I")
def hgx_a100(*, nics: int = 8, nic_gbps: float = 200.0) -> nx.Graph:
    """An HGX A100 8-GPU node.

    Parameters
    ----------
    nics : int
        0 (no scale-out NICs) or 8 (one per GPU, the default).
    nic_gbps : float
        Per-direction rate of each NIC port, Gb/s (ConnectX-6 HDR: 200).

    Examples
    --------
    >>> G = hgx_a100()
    >>> sum(e["capacity_gbps"] for *_, e in G.edges("gpu0", data=True) if e["tier"] == "nvlink") / 8
    300.0
    """
    return hgx_node("a100", nics=nics, nic_gbps=nic_gbps)


@register("hgx-h100", description="NVIDIA HGX H100/H200 8-GPU: 18 NVLink 4 links per GPU (450 GB/s per "
                                  "direction) split 5/4/4/5 over 4 NVSwitch gen 3 with NVLS; 8 x ConnectX-7 400G "
                                  "to 8 rail leaves (latencies inferred); generation=h800: 8 links, 200 GB/s",
          source="NVIDIA H100/H200 data sheets and HGX H100 blog (F: 18 links, 4 NVSwitch, SHARP); 5/4/4/5 split "
                 "F2 (DGX H100 topology); DGX H100 user guide (F: 8 x 400G CX-7); H800 NVLink 400 GB/s bidir F2, "
                 "its 2/2/2/2 split I; link latencies I")
def hgx_h100(*, generation: Literal["h100", "h200", "h800"] = "h100", nics: int = 8,
             nic_gbps: float = 400.0) -> nx.Graph:
    """An HGX H100, H200 or H800 8-GPU node.

    Parameters
    ----------
    generation : ``"h100"`` | ``"h200"`` | ``"h800"``
        The GPU; all have NVLink 4 (the H200 differs in memory, the H800 keeps 8 of the 18 links).
    nics : int
        0 (no scale-out NICs) or 8 (one per GPU, the default).
    nic_gbps : float
        Per-direction rate of each NIC port, Gb/s (ConnectX-7 NDR: 400).

    Examples
    --------
    >>> G = hgx_h100(nics=0)
    >>> [G.edges["gpu0", f"nvsw{j}"]["lanes"] // 2 for j in range(4)]
    [5, 4, 4, 5]
    """
    if generation not in ("h100", "h200", "h800"):
        raise BadInput(f"generation={generation!r} is not valid: choose one of h100, h200, h800")
    return hgx_node(generation, nics=nics, nic_gbps=nic_gbps)


@register("hgx-b200", description="NVIDIA HGX B200 8-GPU: 18 NVLink 5 links per GPU (900 GB/s per direction), "
                                  "9 + 9 over 2 NVLink 5 switch chips with NVLS; 8 x ConnectX-7 400G to 8 rail "
                                  "leaves (latencies inferred)",
          source="NVIDIA B200 data sheet (F: 1.8 TB/s bidir NVLink); 2 switch chips F2 (HGX B200 board); "
                 "9 + 9 D; DGX B200 user guide (F: 8 x 400G CX-7); link latencies I")
def hgx_b200(*, nics: int = 8, nic_gbps: float = 400.0) -> nx.Graph:
    """An HGX B200 8-GPU node.

    Parameters
    ----------
    nics : int
        0 (no scale-out NICs) or 8 (one per GPU, the default).
    nic_gbps : float
        Per-direction rate of each NIC port, Gb/s (ConnectX-7 NDR: 400).

    Examples
    --------
    >>> G = hgx_b200(nics=0)
    >>> G.degree("nvsw0"), G.edges["gpu0", "nvsw0"]["lanes"]
    (8, 18)
    """
    return hgx_node("b200", nics=nics, nic_gbps=nic_gbps)


@register("hgx-b300", description="NVIDIA HGX B300 8-GPU: 18 NVLink 5 links per GPU (900 GB/s per direction), "
                                  "9 + 9 over 2 NVLink 5 switch chips with NVLS; 8 x ConnectX-8 800G to 8 rail "
                                  "leaves (latencies inferred)",
          source="NVIDIA B300 / DGX B300 specs (F: 1.8 TB/s bidir NVLink, 8 x 800G ConnectX-8); 2 switch chips "
                 "F2; 9 + 9 D; Quantum-X800 leaves (F); link latencies I")
def hgx_b300(*, nics: int = 8, nic_gbps: float = 800.0) -> nx.Graph:
    """An HGX B300 8-GPU node.

    Parameters
    ----------
    nics : int
        0 (no scale-out NICs) or 8 (one per GPU, the default).
    nic_gbps : float
        Per-direction rate of each NIC port, Gb/s (ConnectX-8 XDR: 800).

    Examples
    --------
    >>> G = hgx_b300()
    >>> G.edges["gpu3", "rail3"]["capacity_gbps"], G.edges["gpu3", "rail3"]["rail"]
    (800.0, 3)
    """
    return hgx_node("b300", nics=nics, nic_gbps=nic_gbps)
