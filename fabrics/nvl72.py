"""NVIDIA NVL72: 72 GPUs, one NVLink switch hop, in-network reduction in every switch chip.

Figures: ``shared/FACTS.md`` §2 (NVIDIA GB200/GB300 NVL72 and Vera Rubin NVL72 specs).

Layout (all generations):

* 18 compute trays x 4 GPUs = 72 GPUs (F); GPU ids ``gpu00``..``gpu71``, ``rank`` =
  id, ``tray = rank // 4``, ``rack = 0``.
* switch trays of NVLink switch chips, ids ``nvsw00``...; ``switch_tray``, ``plane``
  (= the chip's index: one chip is one plane of the fabric).
* every GPU has one link of 2 lanes x 200G per direction to every switch chip, so every
  switch chip has 72 ports, all facing GPUs (single hop, non-blocking).

GB200/GB300: 9 switch trays x 2 NVLink5 chips = 18 (F); 18 links x 50 GB/s = 900 GB/s per
direction per GPU (F; 2 lanes per link F2); 18 x 72 = 1,296 links.
Vera Rubin: 36 NVLink6 chips, 4 per tray (F); 3.6 TB/s bidir per GPU (F) = 36 links x 2 x
200G per direction, one link per GPU per chip, 72 ports per chip (I: the layout is not
published; recorded in the graph attribute ``inferred``).
"""
from __future__ import annotations

from typing import Literal

import networkx as nx

from ..topo.builders import switched_domain
from ..topo.devices import Device, register_device
from .registry import register
from ..topo.errors import BadInput

__all__ = ["nvl72", "GENERATIONS", "ACCELERATORS"]

# GB300 (Blackwell Ultra) keeps GB200's NVLink5 I/O; only the GPU differs (1.4 kW vs 1.2 kW
# package TDP, FACTS §2 "power", seed). Registered here so audits can name it.
B300 = register_device(Device(
    name="blackwell-ultra-gpu", kind="chip", lanes=36, lane_gbps=200.0, signal_gbps=212.5,
    port_modes=((18, 400.0),), lanes_by_tier={"nvlink": 36},
    description="NVIDIA Blackwell Ultra (GB300) GPU: 18 NVLink5 links, 900 GB/s per direction, 1.4 kW",
    source="NVIDIA GB300 NVL72 spec (F: same NVLink5 as GB200); lanes per link F2"))

GPUS = 72                 # FACTS §2: 72 GPUs (F)
GPUS_PER_TRAY = 4         # FACTS §2: 18 compute trays x 4 GPUs (F)
LANES_PER_LINK = 2        # FACTS §2: 2 lanes x 200G each way per NVLink5 link (F2)
LANE_GBPS = 200.0         # 212.5G PAM4 signalling = 200G data (F2)
COPPER_NS = 5.0           # NVLink spine copper cartridges, ~1 m at 5 ns/m (I)

# generation -> (GPU device, switch device, switch chips, chips per switch tray, what is inferred)
GENERATIONS = {
    "gb200": ("blackwell-gpu", "nvlink5-switch", 18, 2, ""),          # 9 trays x 2 chips (F)
    "gb300": ("blackwell-ultra-gpu", "nvlink5-switch", 18, 2, ""),    # same NVLink as GB200 (F)
    # 9 trays x 4 NVLink6 chips = 36 (F); 36 links x 2 x 200G per GPU and 72 ports per chip (I)
    "vera-rubin": ("rubin-gpu", "nvlink6-switch", 36, 4,
                   "switch layout inferred: 36 NVLink6 chips x 72 ports, one 2 x 200G link from "
                   "every GPU to every chip (3.6 TB/s bidir per GPU is published, the wiring is not)"),
}

# accelerator (topo/accelerators.toml) -> the generations whose rack it ships in.  GB200 and GB300
# share the NVLink5 rack (same switch trays, F: NVIDIA GB300 NVL72 spec), so either GPU fits either
# NVLink5 generation; Rubin ships only in Vera Rubin NVL72.
ACCELERATORS = {"gb200": ("gb200", "gb300"), "gb300": ("gb200", "gb300"), "rubin": ("vera-rubin",)}
# generation -> the accelerator it ships with when ``accelerator`` is not given
_DEFAULT_ACCELERATOR = {"gb200": "gb200", "gb300": "gb300", "vera-rubin": "rubin"}


@register("nvl72", description="NVIDIA NVL72: 72 GPUs in 18 trays, one NVLink switch hop with in-network "
                               "reduction; GB200/GB300 18 NVLink5 chips, Vera Rubin 36 NVLink6 chips "
                               "(Vera Rubin wiring inferred)",
          source="NVIDIA GB200/GB300/Vera Rubin NVL72 specs (F); lanes per link F2; FACTS §2")
def nvl72(*, generation: Literal["gb200", "gb300", "vera-rubin"] = "gb200",
          accelerator: Literal["auto", "gb200", "gb300", "rubin"] = "auto") -> nx.Graph:
    """One NVL72 rack.

    Parameters
    ----------
    generation : ``"gb200"`` | ``"gb300"`` | ``"vera-rubin"``
        GB200 and GB300 share the NVLink5 fabric (18 switch chips) and differ in the GPU;
        Vera Rubin has 36 NVLink6 switch chips and twice the GPU bandwidth.
    accelerator : ``"auto"`` | ``"gb200"`` | ``"gb300"`` | ``"rubin"``
        The GPU's roofline entry (``topo/accelerators.toml``); ``"auto"`` (default) takes the
        generation's own GPU (GB200 at the defaults).  GB200 and GB300 fit either NVLink5
        generation, and the GPU device follows the accelerator (``--set accelerator=gb300``
        alone gives a GB300 NVL72); Rubin needs ``generation=vera-rubin``.

    Returns
    -------
    networkx.Graph
        GPUs ``gpu00``..``gpu71`` (``tray``, ``rack=0``, ``forwards=False``), switch
        chips ``nvsw00``... (role ``nvlink``, ``switch_tray``, ``plane``, ``reduces=True``),
        one 2-lane bundle per GPU and switch chip (tier ``nvlink``, copper).  Graph
        attributes ``generation``, ``accelerator`` and ``inferred`` (empty when nothing is).

    Examples
    --------
    >>> G = nvl72()
    >>> G.number_of_edges(), G.degree("nvsw00")
    (1296, 72)
    """
    if generation not in GENERATIONS:
        raise BadInput(f"generation={generation!r}; choose one of: {', '.join(GENERATIONS)}")
    if accelerator == "auto":
        accelerator = _DEFAULT_ACCELERATOR[generation]
    elif accelerator not in ACCELERATORS:
        raise BadInput(f"accelerator={accelerator!r}; choose one of: auto, {', '.join(ACCELERATORS)}")
    elif generation not in ACCELERATORS[accelerator]:
        raise BadInput(f"accelerator={accelerator!r} does not ship in an NVL72 of generation={generation!r}; "
                       f"choose generation={' or '.join(ACCELERATORS[accelerator])}")
    elif accelerator in GENERATIONS:
        generation = accelerator        # gb200 / gb300 on NVLink5: the GPU device follows the accelerator
    gpu, switch, chips, per_tray, inferred = GENERATIONS[generation]
    G = switched_domain(chips=GPUS, planes=chips, lanes_per_link=LANES_PER_LINK, lane_gbps=LANE_GBPS,
                        chip_model=gpu, switch_model=switch, tier="nvlink", role="nvlink", medium="copper",
                        latency_ns=COPPER_NS, chips_per_tray=GPUS_PER_TRAY, switches_per_tray=per_tray,
                        chip_prefix="gpu", switch_prefix="nvsw")
    for n, d in G.nodes(data=True):
        if d["kind"] == "switch":
            d["reduces"] = True  # NVLink SHARP (NVLS) in every switch chip (F); device can_reduce=True
    # the step model's constants (collectives/cost/families): Blackwell NVLink 5, Rubin NVLink 6
    G.graph.update(generation=generation, accelerator=accelerator, inferred=inferred,
                   family="nvlink6" if generation == "vera-rubin" else "nvlink5")
    return G
