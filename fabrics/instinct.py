"""AMD Instinct 8-GPU node: eight GPUs fully connected by Infinity Fabric (xGMI), no switch.

Figures (tags as in ``shared/FACTS.md``: F found, F2 second-hand, I inferred, D derived):

* 8 GPUs per node (OAM, one universal base board), every GPU one xGMI link to each of the
  other 7: a full mesh, no switch (F: AMD CDNA 3 white paper and MI300X data sheet,
  https://www.amd.com/content/dam/amd/en/documents/instinct-tech-docs/white-papers/amd-cdna-3-white-paper.pdf
  and https://www.amd.com/content/dam/amd/en/documents/instinct-tech-docs/data-sheets/amd-instinct-mi300x-data-sheet.pdf;
  MLPerf system descriptions list 8 accelerators per node on XGMI,
  https://raw.githubusercontent.com/mlcommons/inference_results_v6.0/main/closed/AMD/results/87xMI355X_22xEPYC_9575F/summary.html).
* MI300X: 7 links x 128 GB/s bidirectional = 64 GB/s per direction (F, data sheet: "peak
  Infinity Fabric link bandwidth 128 GB/s", 896 GB/s aggregate).  As lanes: x16 at 32 Gb/s
  per lane per direction = 512 Gb/s = 64 GB/s (D).
* MI355X: 7 links x 153.6 GB/s bidirectional = 76.8 GB/s per direction (F2: AMD's MI355X
  product page lists 153.6 GB/s peak Infinity Fabric link bandwidth; found here only
  second-hand, https://humeconsulting.co/amd-mi355x-strong-node-level-inference-but-not-yet-rack-scale
  "~153 GB/s of bidirectional bandwidth").  As lanes: x16 at 38.4 Gb/s (D).
* Link latency is not published; 300 ns of link and SerDes is used (I).
* Step model: the ``infinity-fabric`` family (``collectives/cost/families/infinity-fabric.toml``):
  RCCL's base and xGMI step latencies, AMD's ~75% usable of raw link rate (F for MI300X, I for MI355X).

The node is one ``full_mesh`` (:func:`fabricsim.topo.builders.full_mesh`): every pair one
link, chips do not forward, ``routing="ecmp"`` finds exactly the direct link.  RCCL drives
all seven links at once (several rings or a direct algorithm); the ``direct`` algorithm of
:mod:`fabricsim.collectives.algorithms` does that here, and ``auto`` picks it because a
single ring uses one link of seven.
"""
from __future__ import annotations

from typing import Literal

import networkx as nx

from ..topo.builders import full_mesh
from ..topo.devices import Device, register_device
from ..topo.errors import BadInput
from .hgx import NodeType, check_nics, families_json, nic_rate, scale_out, with_nics
from .registry import register

__all__ = ["instinct", "instinct_node", "xgmi_node", "GENERATIONS", "NODE_GENERATIONS", "AMD_NODE_TYPES"]

GPUS = 8                  # 8 GPUs per node (F)
LINKS_PER_GPU = GPUS - 1  # 7 xGMI links to the 7 peers (F)
LANES_PER_LINK = 16       # x16 links (F: xGMI is 16 lanes wide, CDNA 3 white paper)
LINK_NS = 300.0           # link + SerDes latency, not published (I)

# generation -> (device name, bidirectional GB/s per link, source tag)
GENERATIONS = {
    "mi300x": ("mi300x", 128.0, "F: AMD MI300X data sheet"),
    "mi355x": ("mi355x", 153.6, "F2: AMD MI355X product page via humeconsulting.co"),
}
# MI325X: the MI300X's CDNA 3 silicon with HBM3E; the MI325X platform is a drop-in replacement for the
# MI300X platform with the same seven x16 Infinity Fabric links (F2: AMD MI325X product page via
# wiaix.com, "Seven Infinity Fabric links", "drop-in replacement for the Instinct MI300X Platform"), so
# its link keeps MI300X's 128 GB/s bidirectional (I: AMD's MI325X figure not re-read here).
NODE_GENERATIONS = {**GENERATIONS,
                    "mi325x": ("mi325x", 128.0, "F2: AMD MI325X platform = MI300X platform's xGMI (wiaix.com)")}


def _lane_gbps(bidir_GBps: float) -> float:
    """Per-lane per-direction Gb/s of a x16 link of ``bidir_GBps`` bidirectional (D)."""
    return bidir_GBps / 2 * 8 / LANES_PER_LINK


for _gen, (_dev, _bidir, _tag) in NODE_GENERATIONS.items():
    register_device(Device(
        name=_dev, kind="chip", lanes=LINKS_PER_GPU * LANES_PER_LINK, lane_gbps=_lane_gbps(_bidir),
        port_modes=((LINKS_PER_GPU, LANES_PER_LINK * _lane_gbps(_bidir)),),
        lanes_by_tier={"xgmi": LINKS_PER_GPU * LANES_PER_LINK},
        description=f"AMD Instinct {_gen.upper()}: 7 xGMI x16 links, {_bidir:g} GB/s bidir each",
        source=f"{_tag} ({_bidir:g} GB/s bidir per link, 7 links); x16 at {_lane_gbps(_bidir):g} Gb/s per "
               f"lane is derived"))


@register("mi355x", description="AMD Instinct 8-GPU node: 8 GPUs fully connected by Infinity Fabric (xGMI), "
                                "7 x16 links per GPU, no switch; MI355X 153.6 GB/s bidir per link, MI300X 128 "
                                "(link latency inferred)",
          source="AMD MI300X data sheet / CDNA 3 white paper (F: 7 links x 128 GB/s bidir); MI355X 153.6 GB/s "
                 "per link (F2, AMD product page via humeconsulting.co); x16 lane rate derived; 300 ns link I")
def instinct(*, generation: Literal["mi300x", "mi355x"] = "mi355x") -> nx.Graph:
    """One AMD Instinct 8-GPU node.

    Parameters
    ----------
    generation : ``"mi300x"`` | ``"mi355x"``
        The GPU: 128 GB/s (MI300X) or 153.6 GB/s (MI355X) bidirectional per xGMI link.

    Returns
    -------
    networkx.Graph
        GPUs ``gpu0``..``gpu7`` (``rank``, ``rack=0``, ``tray=0``, ``forwards=False``), one
        x16 bundle per GPU pair (tier ``xgmi``, ``pcb``); graph attributes ``generation``
        and ``inferred``.

    Examples
    --------
    >>> G = instinct()
    >>> G.number_of_edges(), G.degree("gpu0"), G.edges["gpu0", "gpu1"]["capacity_gbps"] / 8
    (28, 7, 76.8)
    """
    if generation not in GENERATIONS:
        raise BadInput(f"generation={generation!r}; choose one of: {', '.join(GENERATIONS)}")
    G = xgmi_node(generation)
    G.graph.update(generation=generation, accelerator=generation, family="infinity-fabric",  # collectives/cost/families/infinity-fabric.toml
                   inferred="link latency inferred (300 ns)")
    return G


def xgmi_node(generation: str) -> nx.Graph:
    """One 8-GPU xGMI full mesh (no NICs): GPUs ``gpu0``..``gpu7``, ``rack=0``, ``tray=0``."""
    dev, bidir, _ = NODE_GENERATIONS[generation]
    G = full_mesh(chips=GPUS, lanes_per_link=LANES_PER_LINK, lane_gbps=_lane_gbps(bidir), chip_model=dev,
                  medium="pcb", tier="xgmi", latency_ns=LINK_NS)
    G = nx.relabel_nodes(G, {f"xpu{i:02d}": f"gpu{i}" for i in range(GPUS)})
    for _, d in G.nodes(data=True):
        d.update(rack=0, tray=0)
    return G


# Scale-out of an Instinct node: one 400G NIC per GPU (AMD Pensando Pollara 400, F: amd.com product page;
# ConnectX-7 400G in many MI300X deployments, same rate), RoCE over Ethernet leaves (Broadcom Tomahawk 5,
# 51.2 Tb/s, I: the switch is the operator's choice).  Scale-up family infinity-fabric, network roce.
AMD_NODE_TYPES = {g: NodeType(gpu=dev, switch=None, links=(), lanes_per_link=LANES_PER_LINK,
                              lane_gbps=_lane_gbps(bidir), reduces=False, nic="pollara", leaf="BCM78900",
                              network="roce", family="infinity-fabric", tier="xgmi")
                  for g, (dev, bidir, _) in NODE_GENERATIONS.items()}


@register("instinct-node", description="AMD Instinct 8-GPU node with scale-out: MI300X / MI325X / MI355X xGMI "
                                       "full mesh (7 x16 links per GPU) plus one 400G NIC per GPU to 8 rail "
                                       "leaves (RoCE; link latency inferred)",
          source="AMD MI300X data sheet (F: 7 x 128 GB/s bidir); MI325X same xGMI F2; MI355X 153.6 GB/s F2; "
                 "Pensando Pollara 400 (F: 400 Gb/s); one NIC per GPU F2; Tomahawk 5 leaves I; 300 ns link I")
def instinct_node(*, generation: Literal["mi300x", "mi325x", "mi355x"] = "mi355x", nics: int = 8,
                  nic_gbps: float = 400.0) -> nx.Graph:
    """An AMD Instinct 8-GPU node with its scale-out NICs (``mi355x`` is the same node without them).

    Parameters
    ----------
    generation : ``"mi300x"`` | ``"mi325x"`` | ``"mi355x"``
        The GPU: 128 GB/s (MI300X, MI325X) or 153.6 GB/s (MI355X) bidirectional per xGMI link.
    nics : int
        0 (no scale-out NICs) or 8 (one per GPU, the default).
    nic_gbps : float
        Per-direction rate of each NIC port, Gb/s (Pollara 400: 400).

    Returns
    -------
    networkx.Graph
        The :func:`instinct` mesh (tier ``xgmi``) plus, with NICs, rail leaves ``rail0``..``rail7``
        each joined to GPU ``r`` (tier ``rail``); ``families`` maps ``xgmi`` to infinity-fabric and
        ``rail`` to roce.

    Examples
    --------
    >>> G = instinct_node(generation="mi325x")
    >>> G.degree("gpu0"), G.edges["gpu0", "rail0"]["capacity_gbps"]
    (8, 400.0)
    """
    if generation not in NODE_GENERATIONS:
        raise BadInput(f"generation={generation!r} is not valid: choose one of {', '.join(NODE_GENERATIONS)}")
    check_nics(nics)
    t = AMD_NODE_TYPES[generation]
    rate = nic_rate(nic_gbps, t.nic_gbps)
    G = xgmi_node(generation)
    if nics:
        with_nics(G, t.gpu, t.nic)
        scale_out(G, [[f"gpu{g}"] for g in range(GPUS)], nic_gbps=rate, leaf_model=t.leaf)
    G.graph.update(generation=generation, accelerator=generation, family=t.family, families=families_json(G, "xgmi", t.family, t.network),
                   inferred="link latency inferred (300 ns xGMI, 50 ns optics); leaf switch inferred")
    return G
