"""AMD Helios: 72 MI455X GPUs on a single-hop UALink switched domain.

Figures (F unless marked):

* 72 GPUs in 18 compute trays x 4 GPUs (AMD CES 2026 via awesomeagents.ai, F2).
* 3.6 TB/s bidir UALink per GPU (AMD Advancing AI 2025, The Register 2025-06-12) = 1.8 TB/s
  per direction = 72 lanes x 200G (UALink 200G lanes); 72 x 3.6 = 259.2 ~ "260 TB/s" rack.
* The switches are not published (I).  Inference: a 102.4 Tb/s switch of 512 x 200G lanes
  (native UALink silicon, or the Broadcom Ethernet switches of the first UALink-over-Ethernet
  systems).  72 GPUs x 72 lanes = 5,184 lanes > 10 switches' 5,120, so at least 11; with
  every GPU giving every switch the same lanes the count must divide 72: 12 switches,
  6 lanes (3 x 400G ports) from every GPU to each, 432 of 512 lanes used per switch.
  ``switches`` picks another divisor (18, 24, 36, 72).  Switch trays are not modelled.
"""
from __future__ import annotations

import networkx as nx

from ..topo.builders import switched_domain
from ..topo.devices import Device, register_device
from .registry import register
from ..topo.errors import BadInput

__all__ = ["helios", "VALID_SWITCHES"]

GPUS = 72               # F
GPUS_PER_TRAY = 4       # 18 compute trays x 4 (F2)
GPU_LANES = 72          # 1.8 TB/s per direction / 200G (F: 3.6 TB/s bidir; 200G lanes)
LANE_GBPS = 200.0       # UALink 200G (F)
SWITCH_LANES = 512      # 102.4 Tb/s / 200G (I)
COPPER_NS = 5.0         # rack backplane/cable ~1 m (I)
VALID_SWITCHES = tuple(s for s in range(1, GPU_LANES + 1)
                       if GPU_LANES % s == 0 and GPUS * GPU_LANES // s <= SWITCH_LANES)  # 12, 18, 24, 36, 72

MI455X = register_device(Device(
    name="mi455x", kind="chip", lanes=GPU_LANES, lane_gbps=LANE_GBPS, signal_gbps=212.5,
    port_modes=((36, 400.0),), lanes_by_tier={"ualink": GPU_LANES},
    description="AMD Instinct MI455X: 3.6 TB/s bidir UALink = 72 x 200G lanes per direction",
    source="AMD Advancing AI 2025 / CES 2026 (F: 3.6 TB/s per GPU); lane count from 200G lanes (I)"))
UALINK_SWITCH = register_device(Device(
    name="ualink-switch-102t", kind="switch", lanes=SWITCH_LANES, lane_gbps=LANE_GBPS, signal_gbps=212.5,
    port_modes=((128, 800.0), (256, 400.0), (512, 200.0)), latency_ns=300.0,
    description="UALink scale-up switch, 102.4 Tb/s = 512 x 200G lanes (inferred part)",
    source="I: Helios switches are not published; sized like a 102.4T switch; latency_ns default (I)"))


@register("helios", description="AMD Helios: 72 MI455X GPUs, 3.6 TB/s bidir UALink each, one switch hop; "
                                "switch count not published, inferred 12 x 512-lane 200G switches",
          source="AMD Advancing AI 2025 / CES 2026 (F: 72 GPUs, 3.6 TB/s, 260 TB/s); trays F2; switches I")
def helios(*, switches: int = 12) -> nx.Graph:
    """One Helios rack.

    Parameters
    ----------
    switches : int
        UALink switches (I): a divisor of 72 whose share of lanes fits a 512-lane
        switch, one of 12, 18, 24, 36, 72.  Each GPU gives ``72 / switches`` lanes
        to every switch.

    Returns
    -------
    networkx.Graph
        GPUs ``gpu00``..``gpu71`` (``tray``, ``rack=0``), switches ``ualsw00``... (role
        ``ualink``, ``plane``), tier ``ualink``; graph attribute ``inferred``.

    Examples
    --------
    >>> G = helios()
    >>> G.edges["gpu00", "ualsw00"]["lanes"], G.degree("ualsw00")
    (6, 72)
    """
    if switches not in VALID_SWITCHES:
        raise BadInput(f"switches={switches!r}; choose one of: {', '.join(map(str, VALID_SWITCHES))} "
                         f"(divisors of {GPU_LANES} lanes that fit {SWITCH_LANES}-lane switches)")
    lanes = GPU_LANES // switches
    port_lanes = next(k for k in (4, 2, 1) if lanes % k == 0)   # widest whole port: 800G, 400G or 200G
    G = switched_domain(chips=GPUS, planes=switches, lanes_per_link=port_lanes, lane_gbps=LANE_GBPS,
                        chip_model="mi455x", switch_model="ualink-switch-102t", tier="ualink", role="ualink",
                        medium="copper", latency_ns=COPPER_NS, chips_per_tray=GPUS_PER_TRAY,
                        chip_prefix="gpu", switch_prefix="ualsw")
    # switched_domain gave one port per pair; widen each bundle to the GPU's full share
    for u, v, e in G.edges(data=True):
        e["lanes"] = lanes
        e["capacity_gbps"] = lanes * LANE_GBPS
    G.graph["inferred"] = (f"switch count and wiring inferred: {switches} switches of {SWITCH_LANES} x 200G, "
                           f"{lanes} lanes from every GPU to every switch")
    G.graph["family"] = "ualink"  # step model constants: collectives/cost/families/ualink.toml
    G.graph["accelerator"] = "mi455x"    # roofline entry in topo/accelerators.toml
    return G
