"""Google TPU 8i Boardfly: a dragonfly whose routers are boards of 4 chips.

Figures: ``shared/FACTS.md`` §3 (seed 000 and 004 for the 1,152 chips and 7 hops; the
board/group/OCS structure is second-hand, F2).

* board: 4 chips in a ring on the board (pcb), 16 external ports per board (F2).
* group: 8 boards, fully meshed by copper, one link per pair of boards (F2).
* pod: up to 36 groups joined through optical circuit switches (F2): 36 x 8 x 4 = 1,152.
  OCSes are passive, so an inter-group link is a direct optical chip-to-chip edge tagged
  ``ocs`` (no extra hop).
* per chip: 19.2 Tb/s ICI = 2.4 TB/s bidir (F2) = 9.6 Tb/s per direction over 6 ports
  (2 ring + 4 external) = 1.6 Tb/s = 200 GB/s per link = 8 lanes x 200G (I).
* global links per group pair: 2 (I).  A group has 8 x (16 - 7) = 72 optical ports; 36
  groups use 35 x 2 = 70 of them, which is how "up to 36" fits (the ports alone would allow
  37 groups; 38 is refused).

Worst path 2 ring + 1 copper + 1 optical + 1 copper + 2 ring = 7 hops (F2) holds only with
a good port placement (I); see :func:`fabricsim.topo.builders.boardfly` for ``spread``
(7 hops, verified) and ``naive`` (ports filled in order: 9-11 hops).
"""
from __future__ import annotations

from typing import Literal

import networkx as nx

from ..topo.builders import boardfly as boardfly_builder, check_rate
from ..topo.devices import Device, register_device
from .registry import register

__all__ = ["boardfly"]

CHIP_PORTS = 6            # 2 ring + 4 external per chip: 16 external ports per board / 4 chips (F2, I)
LANE_GBPS = 200.0         # 200G SerDes (I: same generation as Ironwood's 4 x 200G links)
HOP_NS = 1000.0           # ~1 us per ICI hop (F for TPU tori, FACTS §3; assumed here), folded into links

TPU_8I = register_device(Device(
    name="tpu-8i", kind="chip", lanes=48, lane_gbps=LANE_GBPS,
    port_modes=((CHIP_PORTS, 1600.0),), lanes_by_tier={"ici": 48},
    description="Google TPU 8i: 19.2 Tb/s ICI (2.4 TB/s bidir) = 48 x 200G lanes, 6 ports of 8 lanes",
    source="seed 000/004 via FACTS §3 (F2: 19.2 Tb/s); 6 ports x 8 lanes split (I)"))


@register("boardfly", description="Google TPU 8i Boardfly: boards of 4 chips in a ring, groups of 8 boards "
                                  "in a copper full mesh, 36 groups through optical circuit switches "
                                  "(1,152 chips, 7 hops worst case with spread port placement)",
          source="seed 000, 004 (F: 1,152 chips, 7 hops); board/group/OCS structure F2; links per "
                 "group pair and port placement I")
def boardfly(*, chips_per_board: int = 4, boards_per_group: int = 8, groups: int = 36,
             ports_per_board: int = 16, links_per_group_pair: int = 2, link_GBps: float = 200.0,
             port_placement: Literal["spread", "naive"] = "spread") -> nx.Graph:
    """A Boardfly pod.

    Parameters
    ----------
    chips_per_board : chips in a board's ring (4, F2).
    boards_per_group : boards in a copper full mesh (8, F2).
    groups : groups joined by optics, 1..37 with the defaults (36, F2).
    ports_per_board : external ports of a board (16, F2).
    links_per_group_pair : optical links between two groups (2, I).
    link_GBps : every link's rate per direction, GB/s (200, I: 9.6 Tb/s / 6 ports).
    port_placement : ``spread`` (7 hops) or ``naive`` (ports filled chip 0 first: more).

    Returns
    -------
    networkx.Graph
        Chip ids ``"g03/b5/c2"``, attributes ``group``, ``board`` (global index),
        ``forwards=True``; ``routing="ecmp"``.

    Examples
    --------
    >>> G = boardfly()
    >>> G.number_of_nodes()
    1152
    """
    check_rate("link_GBps", link_GBps, unit="GB/s", scale=8.0)
    lanes = int(round(link_GBps * 8 / LANE_GBPS)) or 1
    G = boardfly_builder(chips_per_board=chips_per_board, boards_per_group=boards_per_group,
                            groups=groups, ports_per_board=ports_per_board,
                            links_per_group_pair=links_per_group_pair, lanes_per_link=lanes,
                            lane_gbps=link_GBps * 8 / lanes, port_placement=port_placement,
                            chip_model="tpu-8i", ring_latency_ns=HOP_NS, copper_latency_ns=HOP_NS,
                            optical_latency_ns=HOP_NS)
    G.graph["family"] = "tpu-ici"  # step model constants: collectives/cost/families/tpu-ici.toml
    G.graph["accelerator"] = "tpu8i"     # roofline entry in topo/accelerators.toml
    return G
