"""OpenAI Jalapeño: the 128-chip flattened local domain and the 2,048-chip rail-only pod.

Figures: ``shared/FACTS.md`` §1, from the article ``seeds/003`` §2.1 and §3.

Physical layout used by both builders (a chip's *slot* is its place in its tray):

* rack: ``trays`` chip trays x ``chips_per_tray`` chips; 6 local switch trays of one
  Tomahawk 6 each; every chip has one 4-lane 800G copper port to each local switch.
* global tier (pod only): 4 global ASICs per rack ("leaves", 2 trays of 2); leaf ``i``
  carries rails ``2i`` and ``2i+1``; each leaf has 51.2 Tb/s down (backplane copper)
  and 32 x 1.6T optical ports up, 2 x 1.6T to each of the 16 rail switches of its rails.
* a chip's *column* is its slot: rail switch ``j`` of every rail serves column ``j``,
  16 chips per rack (seed 003 §3.3: "每台 rail 交换机在每柜下挂 16 颗 XPU").
"""
from __future__ import annotations

from typing import Literal

import networkx as nx

from ..topo.builders import check_size
from ..topo.contract import CHIP, SWITCH, add_bundle
from ..topo.devices import device
from .registry import register
from ..topo.errors import BadInput

# Link latencies: passive copper backplane ~1 m, optics through a passive optical
# switch ~10 m of fibre at 5 ns/m. Inferred defaults (I), overridable per edge.
COPPER_NS = 5.0
OPTICAL_NS = 50.0
LOCAL_SWITCHES = 6          # seed 003 §2.1: 6 x 1U local switch trays, one TH6 each (F)
LEAVES_PER_RACK = 4         # 2 global switch trays x 2 TH6 (F2: the source says "we think")
RAILS = 8                   # rail-only global domain, 8 rails (F)
LOCAL_PORT_LANES = 4        # one 800G port = 4 x 200G lanes per chip per local switch (F)
UPLINK_PORT_GBPS = 1600.0   # front-panel 1.6T optics (F)


def _chip_id(rack: int, idx: int) -> str:
    return f"r{rack:02d}/xpu{idx:03d}"


def _add_rack(G: nx.Graph, rack: int, *, trays: int, chips_per_tray: int, local_switch: str,
              chip_model: str = "jalapeno") -> list[str]:
    """Add one rack's chips and local tier to ``G``; return the chip ids in slot order."""
    chip = device(chip_model)
    sw = device(local_switch)
    lane_gbps = chip.lane_gbps  # the chip drives its lanes at its own rate; audit checks the far end
    n = trays * chips_per_tray
    ids = []
    for idx in range(n):
        tray, slot = divmod(idx, chips_per_tray)
        cid = _chip_id(rack, idx)
        G.add_node(cid, kind=CHIP, model=chip_model, forwards=False, rank=rack * n + idx,
                   rack=rack, tray=tray, column=slot)
        ids.append(cid)
    for s in range(LOCAL_SWITCHES):
        sid = f"r{rack:02d}/lsw{s}"
        G.add_node(sid, kind=SWITCH, model=sw.name, role="local", forwards=True, rack=rack,
                   switch_tray=s, latency_ns=sw.latency_ns)
        for cid in ids:
            add_bundle(G, cid, sid, lanes=LOCAL_PORT_LANES, lane_gbps=lane_gbps,
                       port_gbps=LOCAL_PORT_LANES * lane_gbps, medium="copper", tier="local",
                       latency_ns=COPPER_NS)
    return ids


def _check_common(trays: int, chips_per_tray: int, local_switch: str) -> None:
    if trays < 1:
        raise BadInput(f"trays={trays} must be at least 1")
    if chips_per_tray < 1:
        raise BadInput(f"chips_per_tray={chips_per_tray} must be at least 1")
    if local_switch not in ("BCM78914", "BCM78910"):
        raise BadInput(f"local_switch={local_switch!r}; choose BCM78914 or BCM78910")


@register("jalapeno-rack", description="OpenAI Jalapeño rack: 128 chips, 6 Tomahawk 6 local switches, "
                                       "flattened single-hop local domain",
          source="seed 003 §2.1, §3.2 (Hot Chips 2026 slides via SemiAnalysis)")
def jalapeno_rack(*, trays: int = 16, chips_per_tray: int = 8,
                  local_switch: Literal["BCM78914", "BCM78910"] = "BCM78914") -> nx.Graph:
    """One Jalapeño local domain.

    Parameters
    ----------
    trays : chip trays ("Vindaloo", 1U, F), 16 by default.
    chips_per_tray : chips per tray, 8 by default (F).
    local_switch : Tomahawk 6 SKU of the 6 local switches; ``BCM78910`` has 100G
        lanes and is flagged by the audit against the chip's 200G lanes.

    Examples
    --------
    >>> G = jalapeno_rack()
    >>> G.number_of_nodes(), G.number_of_edges()
    (134, 768)
    """
    _check_common(trays, chips_per_tray, local_switch)
    n = trays * chips_per_tray
    check_size(f"a Jalapeño rack of {trays:,} trays x {chips_per_tray:,} chips", nodes=n + LOCAL_SWITCHES,
               links=n * LOCAL_SWITCHES)
    G = nx.Graph(routing="ecmp", family="tomahawk-ethernet", accelerator="jalapeno")
    _add_rack(G, 0, trays=trays, chips_per_tray=chips_per_tray, local_switch=local_switch)
    return G


@register("jalapeno-pod", description="OpenAI Jalapeño pod: 16 racks x 128 chips, local tier per rack "
                                      "+ 8-rail rail-only global tier (2,048 chips)",
          source="seed 003 §3.3-3.4 (SemiAnalysis rail diagram); global trays F2")
def jalapeno_pod(*, racks: int = 16, trays: int = 16, chips_per_tray: int = 8,
                 rail_wiring: Literal["per-lane", "per-port"] = "per-lane",
                 leaf: Literal["switched", "static"] = "switched",
                 local_switch: Literal["BCM78914", "BCM78910"] = "BCM78914",
                 rail_switch: Literal["BCM78914", "BCM78910"] = "BCM78914") -> nx.Graph:
    """The Jalapeño global domain: ``racks`` local domains joined by 8 rails.

    Parameters
    ----------
    racks : racks in the pod (16 in the article, F).
    trays, chips_per_tray, local_switch : as in :func:`jalapeno_rack`.
    rail_wiring : ``per-lane`` (reading A, preferred by the source: each chip has one
        200G lane to each rail) or ``per-port`` (reading B: each chip's 1.6T port goes
        whole to rail = its slot, on rail switch = tray // 2).
    leaf : ``switched`` (the in-rack global ASICs switch, so each leaf pair of rails
        is a leaf-spine) or ``static`` (each chip lane is patched through to one fixed
        rail switch, as the article's failure table assumes; modelled with the
        contract's ``patch`` attribute).
    rail_switch : Tomahawk 6 SKU of the 64 rail switches.

    Notes
    -----
    Rail switch ``(r, j)`` of rail ``r`` takes 2 x 1.6T from leaf ``r // 2`` of every
    rack, so with 16 racks it uses 51.2 of its 102.4 Tb/s; the audit reports the rest
    as unused.  The passive optical switch between each rack's front panel and the
    rails is modelled as a shared-fate tag ``ocs`` = rack on the uplinks (I: one per rack).
    """
    _check_common(trays, chips_per_tray, local_switch)
    if racks < 1:
        raise BadInput(f"racks={racks} must be at least 1")
    n = trays * chips_per_tray   # chips per rack
    check_size(f"a Jalapeño pod of {racks:,} racks x {n:,} chips",
               nodes=racks * (n + LOCAL_SWITCHES + LEAVES_PER_RACK) + RAILS * chips_per_tray,
               links=racks * (n * (LOCAL_SWITCHES + LEAVES_PER_RACK) + 2 * LEAVES_PER_RACK * chips_per_tray))
    if chips_per_tray != RAILS:
        raise BadInput(f"chips_per_tray={chips_per_tray}: the rail wiring needs one chip column per "
                         f"rail switch, so chips_per_tray must be {RAILS}")
    if rail_wiring == "per-port" and trays % 2:
        raise BadInput(f"trays={trays}: per-port wiring puts 2 trays on each rail switch; use an even count")
    chip = device("jalapeno")
    rs_dev = device(rail_switch)
    leaf_dev = device("BCM78914")
    global_lanes = chip.lanes_by_tier["global"]            # 8 lanes, one per rail (F)
    lanes_per_leaf = global_lanes // LEAVES_PER_RACK        # 2: the rails 2i, 2i+1 of leaf i
    G = nx.Graph(routing="tiered", leaf=leaf, rail_wiring=rail_wiring, family="tomahawk-ethernet",
                 accelerator="jalapeno")
    switches_per_rail = chips_per_tray                      # one rail switch per column (F: 8 per rail)
    for r in range(RAILS):
        for j in range(switches_per_rail):
            G.add_node(f"rail{r}/sw{j}", kind=SWITCH, model=rs_dev.name, role="rail", forwards=True,
                       rail=r, column=j, circuit=r * switches_per_rail + j, latency_ns=rs_dev.latency_ns)
    for rack in range(racks):
        ids = _add_rack(G, rack, trays=trays, chips_per_tray=chips_per_tray, local_switch=local_switch)
        leaves = []
        for i in range(LEAVES_PER_RACK):
            lid = f"r{rack:02d}/gsw{i}"
            attrs = dict(kind=SWITCH, model=leaf_dev.name, role="leaf", forwards=leaf == "switched",
                         rack=rack, switch_tray=LOCAL_SWITCHES + i // 2, latency_ns=leaf_dev.latency_ns)
            if leaf == "static":
                attrs["patch"] = "column" if rail_wiring == "per-lane" else "circuit"
            G.add_node(lid, **attrs)
            leaves.append(lid)
        for cid in ids:
            slot, tray = G.nodes[cid]["column"], G.nodes[cid]["tray"]
            if rail_wiring == "per-lane":
                # one 200G lane per rail: 2 lanes to each leaf (its two rails)
                for lid in leaves:
                    add_bundle(G, cid, lid, lanes=lanes_per_leaf, lane_gbps=chip.lane_gbps,
                               port_gbps=lanes_per_leaf * chip.lane_gbps, medium="copper",
                               tier="global", latency_ns=COPPER_NS, circuit_lanes=1)
            else:
                # the whole 1.6T port to rail = slot, through the leaf that carries that rail
                G.nodes[cid]["circuit"] = slot * switches_per_rail + tray // 2
                add_bundle(G, cid, leaves[slot // 2], lanes=global_lanes, lane_gbps=chip.lane_gbps,
                           port_gbps=global_lanes * chip.lane_gbps, medium="copper", tier="global",
                           latency_ns=COPPER_NS, circuit_lanes=global_lanes)
        # uplinks: leaf i -> every switch of rails 2i, 2i+1, 2 x 1.6T each (F: "16x (2x1.6T)")
        up_lanes = 2 * int(UPLINK_PORT_GBPS // chip.lane_gbps)
        for i, lid in enumerate(leaves):
            for r in (2 * i, 2 * i + 1):
                for j in range(switches_per_rail):
                    add_bundle(G, lid, f"rail{r}/sw{j}", lanes=up_lanes, lane_gbps=chip.lane_gbps,
                               port_gbps=UPLINK_PORT_GBPS, medium="optical", tier="global",
                               latency_ns=OPTICAL_NS, ocs=rack)
    return G
