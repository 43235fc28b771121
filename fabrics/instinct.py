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
from .registry import register

__all__ = ["instinct", "GENERATIONS"]

GPUS = 8                  # 8 GPUs per node (F)
LINKS_PER_GPU = GPUS - 1  # 7 xGMI links to the 7 peers (F)
LANES_PER_LINK = 16       # x16 links (F: xGMI is 16 lanes wide, CDNA 3 white paper)
LINK_NS = 300.0           # link + SerDes latency, not published (I)

# generation -> (device name, bidirectional GB/s per link, source tag)
GENERATIONS = {
    "mi300x": ("mi300x", 128.0, "F: AMD MI300X data sheet"),
    "mi355x": ("mi355x", 153.6, "F2: AMD MI355X product page via humeconsulting.co"),
}


def _lane_gbps(bidir_GBps: float) -> float:
    """Per-lane per-direction Gb/s of a x16 link of ``bidir_GBps`` bidirectional (D)."""
    return bidir_GBps / 2 * 8 / LANES_PER_LINK


for _gen, (_dev, _bidir, _tag) in GENERATIONS.items():
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
        raise ValueError(f"generation={generation!r}; choose one of: {', '.join(GENERATIONS)}")
    dev, bidir, _ = GENERATIONS[generation]
    G = full_mesh(chips=GPUS, lanes_per_link=LANES_PER_LINK, lane_gbps=_lane_gbps(bidir), chip_model=dev,
                  medium="pcb", tier="xgmi", latency_ns=LINK_NS)
    G = nx.relabel_nodes(G, {f"xpu{i:02d}": f"gpu{i}" for i in range(GPUS)})
    for _, d in G.nodes(data=True):
        d.update(rack=0, tray=0)
    G.graph.update(generation=generation, family="infinity-fabric",  # collectives/cost/families/infinity-fabric.toml
                   inferred="link latency inferred (300 ns)")
    return G
