"""Rail-optimized clusters: scale-up domains (HGX / Instinct nodes, NVL72 racks) joined by a NIC per GPU.

``rail-cluster``: ``nodes`` 8-GPU nodes of one type (:data:`fabricsim.fabrics.hgx.NODE_TYPES`,
:data:`fabricsim.fabrics.instinct.AMD_NODE_TYPES`).  GPU ``r`` of every node has one NIC port to the
leaf of rail ``r`` (NVIDIA DGX SuperPOD's rail-optimized compute fabric: "rail" = the GPU's position in
its node, F), the rail leaves are joined by a spine tier at ``spine_oversubscription`` (1 = non-blocking,
as the SuperPOD's fat tree, F).  ``nvl72-cluster``: ``racks`` NVL72 racks whose GPUs each have one
NIC (GB200: ConnectX-7 400G, F2 NVIDIA GB200 NVL72 compute tray, 4 x ConnectX-7 per 4-GPU tray;
GB300: ConnectX-8 800G, F NVIDIA GB300 NVL72 spec), rail = the GPU's slot in its compute tray (4 rails,
I: NVIDIA does not publish the rail assignment of an NVL72 rack here).

Tags: each node (NVL72: rack) is its own ``rack`` (the scale-up domain; node-rank = ``rank // 8``) with
``tray``; rail leaves carry ``rail``, NIC links carry ``rail``; spines carry no tag.  Leaves and spines
reduce in the network (``reduces=True``, InfiniBand SHARP) only with ``sharp=True``.

Routing (``routing="ecmp"``: shortest paths through forwarding nodes, GPUs do not forward)
------------------------------------------------------------------------------------------
* same node: GPU -> NVSwitch -> GPU (2 hops) or the direct xGMI link (1 hop); a path over the rails
  would be 4 hops (GPU ``i`` and GPU ``j`` of one node sit on different rails), so the scale-up links
  carry all of it;
* GPU ``r`` of node A -> GPU ``r`` of node B (rail-matched): GPU -> rail ``r``'s leaf -> GPU (2 hops,
  rail ``r`` only);
* cross-rail pairs (GPU ``i`` of A -> GPU ``j`` of B): over the spine, leaf ``i`` -> spine -> leaf ``j``
  (4 hops).  NCCL's PXN would instead move the data over NVLink to GPU ``j`` of node A and send it on
  rail ``j``; that relay is what the ``tiered`` policy does where a global tier has no path (Jalapeño's
  rail-only pod).  Here every rail reaches every other through the spine, which is what the fabric is
  built for (a full-bisection spine at 1:1), so plain ECMP prices it as wired, with no relay assumption;
  ring and tree collectives, which NCCL lays out rail-aligned, only use rail-matched pairs anyway.
"""
from __future__ import annotations

import json

from typing import Literal

import networkx as nx

from ..topo.builders import check_size
from ..topo.errors import BadInput
from .hgx import GPUS, NODE_TYPES, families_json, nic_rate, nvlink_node, scale_out, with_nics
from .instinct import AMD_NODE_TYPES, xgmi_node
from .nvl72 import GPUS as NVL72_GPUS
from .nvl72 import GPUS_PER_TRAY, nvl72
from .registry import register

__all__ = ["rail_cluster", "nvl72_cluster", "CLUSTER_NODES"]

CLUSTER_NODES = {**NODE_TYPES, **{g: AMD_NODE_TYPES[g] for g in ("mi300x", "mi325x", "mi355x")}}
MAX_NODES = 100_000   # sanity cap before the closed-form size check (I)


def _check_count(name: str, value) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= MAX_NODES:
        raise BadInput(f"{name}={value!r} is not valid: an integer 1..{MAX_NODES:,}")
    return value


def _check_sharp(sharp: bool, network: str, what: str) -> None:
    if sharp and network != "infiniband":
        raise BadInput(f"sharp=True needs InfiniBand switches that reduce (Quantum SHARP); {what} uses "
                       f"{network} leaves: choose sharp=False")


def _place(G: nx.Graph, H: nx.Graph, domain: int, prefix: str, per_domain: int) -> None:
    """Copy scale-up domain ``H`` into ``G`` under ``prefix``, as rack ``domain``, ranks offset."""
    H = nx.relabel_nodes(H, {n: f"{prefix}{n}" for n in H})
    for _, d in H.nodes(data=True):
        d["rack"] = domain
        if "rank" in d:
            d["rank"] += domain * per_domain
    G.update(H)


@register("rail-cluster", description="Rail-optimized cluster: N 8-GPU nodes (HGX A100/H100/H200/H800/B200/B300 or "
                                      "Instinct MI300X/MI325X/MI355X), one NIC per GPU, one leaf per rail, "
                                      "leaves joined by spines (latencies and AMD leaf switch inferred)",
          source="NVIDIA DGX SuperPOD reference architectures (F: rail-optimized, 8 rails, 32 nodes per leaf at "
                 "1:1); node figures as hgx-* / instinct-node (F, F2); link latencies I")
def rail_cluster(*, gpu: Literal["a100", "h100", "h200", "h800", "b200", "b300", "mi300x", "mi325x", "mi355x"] = "h100",
                 nodes: int = 2, nic_gbps: float = 0.0, spine_oversubscription: float = 1.0,
                 sharp: bool = False, rail_only: bool = False) -> nx.Graph:
    """``nodes`` 8-GPU nodes joined by a rail-optimized leaf-spine network.

    Parameters
    ----------
    gpu : str
        Node type: ``a100`` (HDR 200G NICs), ``h100`` / ``h200`` / ``h800`` / ``b200`` (400G), ``b300`` (800G) on
        InfiniBand; ``mi300x`` / ``mi325x`` / ``mi355x`` (400G) on RoCE.
    nodes : int
        Nodes in the cluster.
    nic_gbps : float
        Per-direction rate of every NIC port, Gb/s; 0 (default) takes the node type's NIC.
    spine_oversubscription : float
        Leaf down:up bandwidth (1 = non-blocking); the up ports of a leaf must come out whole.
    sharp : bool
        InfiniBand SHARP on: leaves and spines get ``reduces=True`` (InfiniBand node types only).
    rail_only : bool
        No spine tier (Wang et al., "How to Build Low-cost Networks for Large Language Models
        (without Sacrificing Performance)", 2023): each rail's leaves join only that rail's GPUs,
        and a pair on two rails in two nodes relays through the scale-up domain to the GPU of the
        destination's rail in its own node (NCCL PXN), as the Jalapeño pod's ``leaf=static``
        does.  The tiers are then named ``local`` (scale-up) and ``global`` (the rails) and the
        routing is ``tiered`` (the tier rule with the relay); ``spine_oversubscription`` must stay 1.

    Returns
    -------
    networkx.Graph
        Nodes ``n00/gpu0``..., ``n00/nvsw0``... (NVIDIA) with ``rack`` = node, rail leaves ``rail0``..
        (``rail<r>.<j>`` when a rail needs several), spines ``spine0``...; tiers ``nvlink`` / ``xgmi``,
        ``rail``, ``spine``; graph attributes ``family`` (the scale-up family) and ``families`` (JSON,
        tier -> family).  The routing is described in the module docstring.

    Examples
    --------
    >>> G = rail_cluster(nodes=2)
    >>> sorted(G["rail3"]), G.graph["families"]
    (['n0/gpu3', 'n1/gpu3', 'spine0'], '{"nvlink": "nvlink4", "rail": "infiniband", "spine": "infiniband"}')
    """
    if gpu not in CLUSTER_NODES:
        raise BadInput(f"gpu={gpu!r} is not valid: choose one of {', '.join(CLUSTER_NODES)}")
    t = CLUSTER_NODES[gpu]
    _check_count("nodes", nodes)
    _check_sharp(sharp, t.network, f"gpu={gpu}")
    rate = nic_rate(nic_gbps, t.nic_gbps)
    per_node_links = GPUS * len(t.links) if t.switch else GPUS * (GPUS - 1) // 2
    check_size(f"a rail cluster of {nodes:,} nodes", nodes=nodes * (GPUS + len(t.links)) + 2 * GPUS * nodes,
               links=nodes * (per_node_links + 2 * GPUS))
    node = nvlink_node(t) if t.switch else xgmi_node(gpu)
    with_nics(node, t.gpu, t.nic)
    w = len(str(nodes - 1))
    G = nx.Graph(routing="ecmp")
    for n in range(nodes):
        _place(G, node, n, f"n{n:0{w}d}/", GPUS)
    rails = [[f"n{n:0{w}d}/gpu{r}" for n in range(nodes)] for r in range(GPUS)]
    if not isinstance(rail_only, bool):
        raise BadInput(f"rail_only={rail_only!r} is not valid: true or false")
    if rail_only and spine_oversubscription != 1.0:
        raise BadInput(f"spine_oversubscription={spine_oversubscription!r} with rail_only=true: a rail-only "
                       "network has no spine; leave it at 1")
    scale_out(G, rails, nic_gbps=rate, leaf_model=t.leaf, spine=not rail_only,
              oversubscription=spine_oversubscription, sharp=sharp)
    families = families_json(G, t.tier, t.family, t.network)
    if rail_only:
        # the tier rule of policy `tiered`: in-node pairs on the scale-up tier, cross-node pairs on the rails,
        # relaying in their own node where the rails have no path (another rail)
        rename = {t.tier: "local", "rail": "global"}
        for *_, d in G.edges(data=True):
            d["tier"] = rename.get(d["tier"], d["tier"])
        G.graph["routing"] = "tiered"
        families = json.dumps({rename.get(k, k): v for k, v in json.loads(families).items()}, sort_keys=True)
    G.graph.update(generation=gpu, accelerator=gpu, family=t.family, families=families,
                   inferred="link latencies inferred (board / xGMI, 50 ns optics)"
                            + ("; RoCE leaf switch (Tomahawk 5) inferred" if t.network == "roce" else ""))
    return G


# generation -> (GPU device of nvl72, NIC, scale-out switch)
NVL72_SCALE_OUT = {"gb200": ("blackwell-gpu", "cx7", "QM9700"), "gb300": ("blackwell-ultra-gpu", "cx8", "Q3400")}


@register("nvl72-cluster", description="NVL72 racks joined by a rail-optimized InfiniBand scale-out: one NIC per "
                                       "GPU (GB200 ConnectX-7 400G, GB300 ConnectX-8 800G), 4 rails by tray slot, "
                                       "leaves and spines (rail assignment and latencies inferred)",
          source="NVIDIA GB200/GB300 NVL72 specs (F: 72 GPUs, NVLink 5; GB300 CX-8 800G per GPU); GB200 4 x CX-7 "
                 "per compute tray F2; rail = tray slot I; Quantum-2 / Quantum-X800 switches (F)")
def nvl72_cluster(*, generation: Literal["gb200", "gb300"] = "gb200", racks: int = 2, nic_gbps: float = 0.0,
                  spine_oversubscription: float = 1.0, sharp: bool = False) -> nx.Graph:
    """``racks`` NVL72 racks (:func:`fabricsim.fabrics.nvl72.nvl72`) joined by rail leaves and spines.

    Parameters
    ----------
    generation : ``"gb200"`` | ``"gb300"``
        GB200 (ConnectX-7 400G, Quantum-2 switches) or GB300 (ConnectX-8 800G, Quantum-X800).
    racks : int
        NVL72 racks.
    nic_gbps : float
        Per-direction rate of every NIC port, Gb/s; 0 (default) takes the generation's NIC.
    spine_oversubscription : float
        Leaf down:up bandwidth (1 = non-blocking).
    sharp : bool
        InfiniBand SHARP on: leaves and spines get ``reduces=True`` (the NVLink switches always reduce).

    Returns
    -------
    networkx.Graph
        GPUs ``r0/gpu00``... (``rack`` = rack, ``tray``), NVLink switches ``r0/nvsw00``..., rail leaves
        ``rail0``..``rail3`` (``rail<s>.<j>`` when a rail needs several), spines; ``families`` maps
        ``nvlink`` to nvlink5 and ``rail``, ``spine`` to infiniband.

    Examples
    --------
    >>> G = nvl72_cluster()
    >>> G.edges["r0/gpu05", "rail1.0"]["capacity_gbps"], G.nodes["r1/gpu05"]["rack"]
    (400.0, 1)
    """
    if generation not in NVL72_SCALE_OUT:
        raise BadInput(f"generation={generation!r} is not valid: choose one of {', '.join(NVL72_SCALE_OUT)}")
    _check_count("racks", racks)
    _check_sharp(sharp, "infiniband", "nvl72-cluster")
    gpu, nic, leaf = NVL72_SCALE_OUT[generation]
    from .devices import NICS
    rate = nic_rate(nic_gbps, NICS[nic][1])
    check_size(f"an NVL72 cluster of {racks:,} racks", nodes=racks * (NVL72_GPUS + 18) * 2,
               links=racks * NVL72_GPUS * (18 + 2))
    rack = nvl72(generation=generation)
    with_nics(rack, gpu, nic)
    w = len(str(racks - 1))
    G = nx.Graph(routing="ecmp")
    for r in range(racks):
        _place(G, rack, r, f"r{r:0{w}d}/", NVL72_GPUS)
    rails = [[f"r{r:0{w}d}/gpu{i:02d}" for r in range(racks) for i in range(s, NVL72_GPUS, GPUS_PER_TRAY)]
             for s in range(GPUS_PER_TRAY)]
    scale_out(G, rails, nic_gbps=rate, leaf_model=leaf, spine=True, oversubscription=spine_oversubscription,
              sharp=sharp)
    G.graph.update(generation=generation, accelerator=generation, family="nvlink5", families=families_json(G, "nvlink", "nvlink5",
                                                                                   "infiniband"),
                   inferred="rail = GPU slot in its compute tray (4 rails) inferred; link latencies inferred")
    return G
