"""NVIDIA Groq 3 LPX: 256 LPUs in 32 trays of 8, joined by direct chip-to-chip links, no switch.

Figures (tags as in ``shared/FACTS.md``: F found, F2 second-hand, I inferred, D derived):

* 256 LPUs = 32 liquid-cooled trays x 8 chips (F2: NVIDIA GTC 2026 via
  https://bitcoinnewsinvest.com/nvidia-unveils-groq-3-lpx-rack-system-for-ultra-low-latency-ai-inference;
  256 chips per rack also seed 003 and seed 000).
* 96 chip-to-chip (C2C) links x 112 Gb/s per chip, "2.5 TB/s bidirectional" per chip (F2, same
  page).  96 x 112 Gb/s = 10.75 Tb/s = 1,344 GB/s per direction, 2.69 TB/s bidir (D; the quoted
  2.5 TB/s is 7% lower, so it is probably counted at the data rate).
* 640 TB/s scale-up per rack = 256 x 2.5 TB/s (F: NVIDIA; seed 003 "柜内铜 640 TB/s", copper).
* No switches: every LPU is "processor and router", the compiler schedules the network (F2, seed 000).
* The rack wiring is not published (I).  Two readings, the parameter ``inter``:

  - ``fullmesh``: the 8 chips of a tray fully connected (9 links per peer pair = 63 links), and
    every chip one link to the chip in the same slot of each of the other 31 trays (31 links):
    94 of 96 links wired, 2 spare per chip.  A chip in another tray and another slot is 2 hops
    (through the same-slot chip or the tray peer).
  - ``dragonfly``: as Groq's first generation (F2: Hot Chips 2022, D. Abts, "Dragonfly Topology":
    8 GroqCards per node fully connected, 4 global ports per card, via
    https://vengineer.hatenablog.com/entry/2022/08/31/090000_1): the tray is the
    group, fully connected by 8-link bundles (56 links), and each chip has ``global_ports``
    (4) ports of 10 links each toward other trays (40 links), 96 wired; 32 ports per tray and
    31 other trays: one port per tray pair (Kim et al.'s consecutive arrangement), one spare
    port per tray.  Worst case local, global, local: 3 hops.

* Link latency, including the forwarding chip's delay, 250 ns per hop (I: not published).
* Step model: the ``groq-c2c`` family (``collectives/cost/families/groq-c2c.toml``): compiler-scheduled
  transfers, one protocol at full rate, efficiency 0.93 = 2.5 TB/s quoted / 2.69 TB/s line rate (D).
"""
from __future__ import annotations

from typing import Literal

import networkx as nx

from ..topo.builders import global_pairs
from ..topo.contract import CHIP, add_bundle
from ..topo.devices import Device, register_device
from .registry import register
from ..topo.errors import BadInput

__all__ = ["groq_lpx"]

TRAYS = 32                # F2
CHIPS_PER_TRAY = 8        # F2
C2C_LINKS = 96            # per chip (F2)
LINK_GBPS = 112.0         # per C2C link per direction (F2)
HOP_NS = 250.0            # per hop, link + forwarding (I)

LPU = register_device(Device(
    name="groq3-lpu", kind="chip", lanes=C2C_LINKS, lane_gbps=LINK_GBPS,
    port_modes=((C2C_LINKS, LINK_GBPS),), lanes_by_tier={"c2c": C2C_LINKS},
    description="NVIDIA Groq 3 LPU: 96 C2C links x 112 Gb/s (2.5 TB/s bidir quoted), chip forwards",
    source="NVIDIA GTC 2026 via bitcoinnewsinvest.com (F2: 96 x 112G, 2.5 TB/s bidir)"))


def _chip(t: int, s: int) -> str:
    return f"t{t:02d}/lpu{s}"


@register("groq-lpx", description="NVIDIA Groq 3 LPX rack: 256 LPUs = 32 trays x 8, 96 C2C links x 112G per "
                                  "chip, no switches; trays fully connected inside; wiring between trays "
                                  "inferred (inter=fullmesh same-slot links, or dragonfly like Groq gen 1)",
          source="NVIDIA GTC 2026 via bitcoinnewsinvest.com (F2: 256 = 32 x 8, 96 x 112G, 2.5 TB/s, 640 TB/s); "
                 "seed 003 (F: 640 TB/s copper); gen-1 dragonfly F2; rack wiring and 250 ns hops I")
def groq_lpx(*, inter: Literal["fullmesh", "dragonfly"] = "fullmesh", trays: int = TRAYS,
             global_links: int = 1, global_ports: int = 4) -> nx.Graph:
    """One LPX rack.

    Parameters
    ----------
    inter : ``"fullmesh"`` | ``"dragonfly"``
        How trays are joined (I, see the module notes).
    trays : int
        Trays of 8 chips, 2..32 (32, F2).  Fewer trays keep the per-link widths.
    global_links : int
        Full mesh only: links from each chip to its same-slot chip in every other tray (1, I);
        the tray links get ``(96 - global_links * (trays - 1)) // 7`` per chip pair.
    global_ports : int
        Dragonfly only: global ports per chip (4, as Groq gen 1); local links per peer pair
        ``96 // (7 + global_ports)``, global port width the rest over ``global_ports``.

    Returns
    -------
    networkx.Graph
        Chips ``t03/lpu5`` (``tray``, ``rack=0``, ``group`` = tray, ``forwards=True``), tier
        ``c2c``, ``span`` ``tray`` or ``global``; ``routing="ecmp"``; graph ``inferred``.

    Examples
    --------
    >>> G = groq_lpx()
    >>> G.number_of_nodes(), sum(e["lanes"] for *_, e in G.edges("t00/lpu0", data=True))
    (256, 94)
    """
    if isinstance(trays, bool) or not isinstance(trays, int) or not 2 <= trays <= TRAYS:
        raise BadInput(f"trays={trays!r} is out of range; valid: 2..{TRAYS}")
    peers = CHIPS_PER_TRAY - 1
    if inter == "fullmesh":
        if isinstance(global_links, bool) or not isinstance(global_links, int) or global_links < 1 \
                or global_links * (trays - 1) > C2C_LINKS - peers:
            raise BadInput(f"global_links={global_links!r} is out of range; valid: 1.."
                             f"{(C2C_LINKS - peers) // (trays - 1)} with {trays} trays (96 links per chip, at "
                             f"least one to each tray peer)")
        local = (C2C_LINKS - global_links * (trays - 1)) // peers     # 9 with 32 trays
        inferred = (f"rack wiring inferred: trays fully connected inside ({local} links per chip pair), "
                    f"each chip {global_links} link(s) to its same-slot chip in every other tray; "
                    f"{peers * local + global_links * (trays - 1)} of {C2C_LINKS} links wired; 250 ns per hop")
    elif inter == "dragonfly":
        if isinstance(global_ports, bool) or not isinstance(global_ports, int) or not 1 <= global_ports <= 8:
            raise BadInput(f"global_ports={global_ports!r} is out of range; valid: 1..8")
        if CHIPS_PER_TRAY * global_ports < trays - 1:
            raise BadInput(f"global_ports={global_ports} gives {CHIPS_PER_TRAY * global_ports} global ports "
                             f"per tray, fewer than the {trays - 1} other trays; use at least "
                             f"{-(-(trays - 1) // CHIPS_PER_TRAY)}")
        local = C2C_LINKS // (peers + global_ports)            # 8 with 4 global ports
        width = (C2C_LINKS - peers * local) // global_ports   # 10
        inferred = (f"rack wiring inferred: dragonfly of trays (as Groq gen 1), {local} links per chip pair "
                    f"in a tray, {global_ports} global ports of {width} links per chip, one port per tray "
                    f"pair; 250 ns per hop")
    else:
        raise BadInput(f"inter={inter!r}; choose one of: fullmesh, dragonfly")
    # compiler-scheduled C2C, no NCCL protocols: collectives/cost/families/groq-c2c.toml
    G = nx.Graph(routing="ecmp", family="groq-c2c")
    for t in range(trays):
        for s in range(CHIPS_PER_TRAY):
            G.add_node(_chip(t, s), kind=CHIP, model=LPU.name, forwards=True, rank=t * CHIPS_PER_TRAY + s,
                       rack=0, tray=t, group=t)
    kw = dict(lane_gbps=LINK_GBPS, port_gbps=LINK_GBPS, tier="c2c", latency_ns=HOP_NS)
    for t in range(trays):
        for s in range(CHIPS_PER_TRAY):
            for s2 in range(s + 1, CHIPS_PER_TRAY):
                add_bundle(G, _chip(t, s), _chip(t, s2), lanes=local, medium="pcb", span="tray", **kw)
    if inter == "fullmesh":
        for t in range(trays):
            for t2 in range(t + 1, trays):
                for s in range(CHIPS_PER_TRAY):
                    add_bundle(G, _chip(t, s), _chip(t2, s), lanes=global_links, medium="copper", span="global",
                               **kw)
    else:
        per_pair = CHIPS_PER_TRAY * global_ports // (trays - 1)
        for g1, j1, g2, j2, _ in global_pairs(trays, CHIPS_PER_TRAY * global_ports, per_pair):
            u, v = _chip(g1, j1 // global_ports), _chip(g2, j2 // global_ports)
            if G.has_edge(u, v):   # two ports of one tray pair on the same two chips: one wider bundle
                G.edges[u, v]["lanes"] += width
                G.edges[u, v]["capacity_gbps"] = G.edges[u, v]["lanes"] * LINK_GBPS
            else:
                add_bundle(G, u, v, lanes=width, medium="copper", span="global", **kw)
    G.graph.update(inferred=inferred, inter=inter, accelerator="groq3-lpu")  # topo/accelerators.toml
    return G
