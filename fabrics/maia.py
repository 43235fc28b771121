"""Microsoft Maia 200: trays of 4 accelerators fully connected, a two-tier Ethernet scale-up network.

Figures (tags as in ``shared/FACTS.md``: F found, F2 second-hand, I inferred, D derived):

* On-die Ethernet NIC, 2.8 TB/s bidirectional = 1.4 TB/s per direction per accelerator, split
  between links inside the node and the network (F: Microsoft, "Deep dive into the Maia 200
  architecture",
  https://techcommunity.microsoft.com/blog/azureinfrastructureblog/deep-dive-into-the-maia-200-architecture/4489312;
  F2 https://www.glennklockwood.com/garden/processors/Maia-200 "1.4+1.4 TB/s", seed 003
  "ATL, 2.8 TB/s 双向/chip").
* Collectives up to 6,144 accelerators; two-tier scale-up on standard Ethernet; accelerators
  of a node fully connected by direct links (F, same Microsoft post).
* The wiring follows Maia 100's published pattern (F2, Hot Chips 2024 via
  https://glennklockwood.com/garden/processors/maia-100: 12 x 400GbE per chip, 3 x 400G to each
  of the 3 node peers, 3 x 400G to 3 tier-0 switches, one per plane), scaled to Maia 200 (I):
  1.4 TB/s = 11.2 Tb/s = 28 x 400G ports = 56 lanes x 200G (I: 200G SerDes); by default 7 ports
  to each of the 3 tray peers (21) and one port to a tier-0 switch in each of 7 planes (7):
  Maia 100's 3:1 split.  ``peer_ports`` and ``planes`` move the split; the ports must add up
  to 28.
* Switches (I): 102.4 Tb/s Ethernet switches of 512 x 200G lanes (Tomahawk 6 class,
  ``BCM78914``), 400G ports.  Per plane, a tier-0 switch takes 32 trays' chips (128 ports down)
  and gives 2 x 400G to each of 64 tier-1 switches (128 up): non-blocking; 6,144 chips = 48
  tier-0 switches per plane, each tier-1 switch uses 96 of its 256 ports.
* Link latency: copper in the tray and to tier 0, ~1 m (5 ns), optics to tier 1, ~10 m (50 ns) (I).
"""
from __future__ import annotations

import networkx as nx

from ..topo.contract import CHIP, SWITCH, add_bundle
from ..topo.devices import Device, device, register_device
from .registry import register
from ..topo.errors import BadInput

__all__ = ["maia200"]

TRAY = 4                   # accelerators per tray, fully connected (F; 4 as Maia 100, F2)
PORTS = 28                 # 400G ports per chip: 11.2 Tb/s per direction (D from 1.4 TB/s, F)
PORT_GBPS = 400.0          # 400GbE, as Maia 100 (F2)
LANE_GBPS = 200.0          # 200G SerDes (I)
CHIPS_PER_T0 = 128         # 128 x 400G down per tier-0 switch (I)
T1_PER_PLANE = 64          # tier-1 switches per plane, 2 x 400G from every tier-0 (I)
T1_PORTS_PER_T0 = 2        # (I)
COPPER_NS, OPTICAL_NS = 5.0, 50.0   # (I)

MAIA200 = register_device(Device(
    name="maia200", kind="chip", lanes=PORTS * 2, lane_gbps=LANE_GBPS, signal_gbps=212.5,
    port_modes=((PORTS, PORT_GBPS),), lanes_by_tier={"tray": PORTS * 2, "maia-t0": PORTS * 2},
    description="Microsoft Maia 200: on-die Ethernet, 2.8 TB/s bidir = 28 x 400G (inferred 56 x 200G lanes)",
    source="Microsoft Maia 200 deep dive (F: 2.8 TB/s bidir, shared scale-up/scale-out); 400G ports F2 "
           "(Maia 100); 200G lanes I"))


@register("maia200", description="Microsoft Maia 200: 6,144 accelerators, 1.4 TB/s per direction each over "
                                 "on-die Ethernet; trays of 4 fully connected by direct links, two-tier "
                                 "Ethernet switches in 7 planes (port split and switches inferred from Maia 100)",
          source="Microsoft Maia 200 deep dive, techcommunity.microsoft.com (F: 2.8 TB/s bidir, 6,144, two "
                 "tiers, node fully connected); Maia 100 Hot Chips 2024 via glennklockwood.com (F2: 3 x 400G "
                 "per peer, 3 planes); 28-port split, 102.4T switches, latencies I")
def maia200(*, accelerators: int = 6144, peer_ports: int = 7, planes: int = 7) -> nx.Graph:
    """A Maia 200 scale-up domain.

    Parameters
    ----------
    accelerators : int
        Chips, a multiple of 128 (one tier-0 switch's worth) up to 16,384 (6,144, F).
    peer_ports : int
        400G ports from each chip to each of its 3 tray peers (7, I; Maia 100 had 3).
    planes : int
        Switch planes; each chip has ``(28 - 3 * peer_ports) / planes`` ports to its tier-0
        switch in every plane (7 planes of 1 port, I; Maia 100 had 3 of 1).

    Returns
    -------
    networkx.Graph
        Chips ``m0042`` (``tray``, ``rack`` = tier-0 group of 32 trays, ``forwards=False``),
        tier-0 switches ``p3/t0-05`` (role ``tier0``, ``plane``), tier-1 ``p3/t1-12`` (role
        ``tier1``); tiers ``tray`` (chip--chip), ``maia-t0``, ``maia-t1``; ``routing="ecmp"``.

    Examples
    --------
    >>> G = maia200(accelerators=256)
    >>> sum(G.edges["m0000", m]["capacity_gbps"] for m in G["m0000"]) / 8   # GB/s per direction
    1400.0
    """
    for name, v, lo in (("accelerators", accelerators, CHIPS_PER_T0), ("peer_ports", peer_ports, 0),
                        ("planes", planes, 1)):
        if isinstance(v, bool) or not isinstance(v, int) or v < lo:
            raise BadInput(f"{name}={v!r} must be an integer >= {lo}")
    t1_ports = device("BCM78914").ports_at(PORT_GBPS)
    max_chips = CHIPS_PER_T0 * (t1_ports // T1_PORTS_PER_T0)
    if accelerators % CHIPS_PER_T0 or accelerators > max_chips:
        raise BadInput(f"accelerators={accelerators}: must be a multiple of {CHIPS_PER_T0} (one tier-0 "
                         f"switch of chips) up to {max_chips:,} (the tier-1 switches' {t1_ports} ports)")
    net_ports = PORTS - (TRAY - 1) * peer_ports
    if net_ports < planes or net_ports % planes:
        raise BadInput(f"peer_ports={peer_ports}, planes={planes}: {PORTS} - 3 x {peer_ports} = {net_ports} "
                         f"ports left for the network must split evenly over the planes (and be >= planes)")
    per_plane = net_ports // planes
    lanes_per_port = int(PORT_GBPS // LANE_GBPS)
    # Maia 200 runs its own collectives over standard Ethernet; no per-step figures are published, so the
    # tomahawk-ethernet family (NCCL's NET rows, RoCE goodput) stands in, I: collectives/cost/families/
    G = nx.Graph(routing="ecmp", family="tomahawk-ethernet")
    sw = device("BCM78914")
    n_t0 = accelerators // CHIPS_PER_T0
    ids = [f"m{i:04d}" for i in range(accelerators)]
    for i, cid in enumerate(ids):
        G.add_node(cid, kind=CHIP, model=MAIA200.name, forwards=False, rank=i, tray=i // TRAY,
                   rack=i // CHIPS_PER_T0)
    kw = dict(lane_gbps=LANE_GBPS, port_gbps=PORT_GBPS)
    if peer_ports:
        for base in range(0, accelerators, TRAY):
            for a in range(TRAY):
                for b in range(a + 1, TRAY):
                    add_bundle(G, ids[base + a], ids[base + b], lanes=peer_ports * lanes_per_port, medium="copper",
                               tier="tray", latency_ns=COPPER_NS, **kw)
    for p in range(planes):
        t1 = [f"p{p}/t1-{j:02d}" for j in range(T1_PER_PLANE)]
        for j, sid in enumerate(t1):
            G.add_node(sid, kind=SWITCH, model=sw.name, role="tier1", forwards=True, plane=p,
                       latency_ns=sw.latency_ns)
        for k in range(n_t0):
            t0 = f"p{p}/t0-{k:02d}"
            G.add_node(t0, kind=SWITCH, model=sw.name, role="tier0", forwards=True, plane=p, rack=k,
                       latency_ns=sw.latency_ns)
            for cid in ids[k * CHIPS_PER_T0:(k + 1) * CHIPS_PER_T0]:
                add_bundle(G, cid, t0, lanes=per_plane * lanes_per_port, medium="copper", tier="maia-t0",
                           latency_ns=COPPER_NS, **kw)
            for sid in t1:
                add_bundle(G, t0, sid, lanes=T1_PORTS_PER_T0 * lanes_per_port, medium="optical", tier="maia-t1",
                           latency_ns=OPTICAL_NS, **kw)
    G.graph["inferred"] = (f"wiring inferred from Maia 100's pattern: {peer_ports} x 400G to each of the 3 tray "
                           f"peers, {per_plane} x 400G to a tier-0 switch in each of {planes} planes; 102.4T "
                           f"switches (128 chips per tier-0, {T1_PER_PLANE} tier-1 per plane); 200G lanes; "
                           f"link latencies")
    G.graph["accelerator"] = "maia200"   # roofline entry in topo/accelerators.toml
    return G
