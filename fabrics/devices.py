"""The device catalog: chips and switch ASICs, every figure with its source.

Sources and tags follow ``shared/FACTS.md``: F found first-hand, F2 second-hand
(a default the user can override), I inferred here.
"""
from __future__ import annotations

from ..topo.devices import Device, register_device

# --- OpenAI Jalapeño inference ASIC (seed 003 §2.1) -------------------------------------
# One I/O chiplet: 32 SerDes lanes at 200 Gb/s data (the "800G" figure is a 4-lane port).
# 24 lanes = 6 x 800G face the local (rack) tier, 8 lanes = 1.6 Tb/s face the global tier.
JALAPENO = register_device(Device(
    name="jalapeno", kind="chip", lanes=32, lane_gbps=200.0, signal_gbps=212.5,
    port_modes=((6, 800.0), (1, 1600.0)), lanes_by_tier={"local": 24, "global": 8},
    description="OpenAI Jalapeño XPU: 32 x 200G lanes, 24 local (6 x 800G) + 8 global (1.6T)",
    source="seed 003 §2.1, §3.3 (F): lane split from differential-pair counts 48 + 16 = 64"))

# --- Broadcom Tomahawk 6 (seed 003 §2.1, §3.2; Broadcom product brief) -------------------
# Both SKUs are 102.4 Tb/s; they differ in SerDes: 512 x 212.5G PAM4 (200G data) or
# 1,024 x 106.25G PAM4 (100G data).
TH6_200G = register_device(Device(
    name="BCM78914", kind="switch", lanes=512, lane_gbps=200.0, signal_gbps=212.5,
    port_modes=((64, 1600.0), (128, 800.0), (256, 400.0), (512, 200.0)), latency_ns=450.0,
    description="Broadcom Tomahawk 6, 102.4 Tb/s, 512 x 200G SerDes",
    source="seed 003 §2.1 (F) + Broadcom TH6 brief (F2); latency_ns is a cut-through default (I)"))
TH6_100G = register_device(Device(
    name="BCM78910", kind="switch", lanes=1024, lane_gbps=100.0, signal_gbps=106.25,
    port_modes=((64, 1600.0), (128, 800.0), (256, 400.0), (512, 200.0)), latency_ns=450.0,
    description="Broadcom Tomahawk 6, 102.4 Tb/s, 1,024 x 100G SerDes (8 lanes per 800G port)",
    source="seed 003 §2.1 (F) + Broadcom TH6 brief (F2)"))

# --- NVIDIA NVL72 (FACTS §2) ----------------------------------------------------------------
# Blackwell GPU: 18 NVLink5 links x 2 lanes x 200G per direction = 900 GB/s per direction.
B200 = register_device(Device(
    name="blackwell-gpu", kind="chip", lanes=36, lane_gbps=200.0, signal_gbps=212.5,
    port_modes=((18, 400.0),), lanes_by_tier={"nvlink": 36},
    description="NVIDIA Blackwell (GB200/GB300) GPU: 18 NVLink5 links, 900 GB/s per direction",
    source="NVIDIA GB200 NVL72 spec (F); lanes per link F2"))
NVSWITCH5 = register_device(Device(
    name="nvlink5-switch", kind="switch", lanes=144, lane_gbps=200.0, signal_gbps=212.5,
    port_modes=((72, 400.0),), can_reduce=True, latency_ns=300.0,
    description="NVLink5 switch chip: 72 ports x 2 x 200G, NVLink SHARP in-network reduction",
    source="NVIDIA NVLink switch spec (F); latency_ns default (I)"))
# Vera Rubin NVL72: 3.6 TB/s bidir per GPU = 1.8 TB/s per direction = 36 links x 2 x 200G (I).
RUBIN = register_device(Device(
    name="rubin-gpu", kind="chip", lanes=72, lane_gbps=200.0, signal_gbps=212.5,
    port_modes=((36, 400.0),), lanes_by_tier={"nvlink": 72},
    description="NVIDIA Rubin GPU: 3.6 TB/s bidir NVLink6 (inferred 36 links x 2 x 200G)",
    source="NVIDIA Vera Rubin NVL72 (F: 3.6 TB/s bidir); link layout inferred (I)"))
NVSWITCH6 = register_device(Device(
    name="nvlink6-switch", kind="switch", lanes=144, lane_gbps=200.0, signal_gbps=212.5,
    port_modes=((72, 400.0),), can_reduce=True, latency_ns=300.0,
    description="NVLink6 switch chip: inferred 72 ports x 2 x 200G",
    source="FACTS §2 (F: 36 chips per rack; I: 72 ports each)"))

# --- NVIDIA HGX 8-GPU nodes (fabrics/hgx.py) -------------------------------------------------
# A100 SXM: 12 NVLink 3 links x 25 GB/s per direction = 300 GB/s (600 GB/s bidir, F: NVIDIA A100 data
# sheet / A100 Tensor Core GPU Architecture white paper); a link is 4 differential pairs per direction
# at 50 Gb/s (F: A100 white paper, "four ... pairs", halved from V100's eight at twice the rate).
A100 = register_device(Device(
    name="a100-sxm", kind="chip", lanes=48, lane_gbps=50.0, signal_gbps=50.0,
    port_modes=((12, 200.0),), lanes_by_tier={"nvlink": 48},
    description="NVIDIA A100 SXM GPU: 12 NVLink 3 links x 4 lanes x 50G, 300 GB/s per direction",
    source="NVIDIA A100 white paper (F: 12 links, 600 GB/s bidir, 4 pairs per link at 50 Gb/s)"))
# H100 / H200 SXM: 18 NVLink 4 links x 25 GB/s per direction = 450 GB/s (900 GB/s bidir, F: NVIDIA H100
# and H200 data sheets); a link is 2 lanes per direction of 100G PAM4 (F2: Hopper white paper, NVLink 4
# halves the pairs per link again at twice the rate; 2 x 100G = 200 Gb/s = 25 GB/s, D).
H100 = register_device(Device(
    name="h100-sxm", kind="chip", lanes=36, lane_gbps=100.0, signal_gbps=106.25,
    port_modes=((18, 200.0),), lanes_by_tier={"nvlink": 36},
    description="NVIDIA H100 SXM GPU: 18 NVLink 4 links x 2 lanes x 100G, 450 GB/s per direction",
    source="NVIDIA H100 data sheet (F: 18 links, 900 GB/s bidir); 2 lanes per link F2 (Hopper white paper)"))
H200 = register_device(Device(
    name="h200-sxm", kind="chip", lanes=36, lane_gbps=100.0, signal_gbps=106.25,
    port_modes=((18, 200.0),), lanes_by_tier={"nvlink": 36},
    description="NVIDIA H200 SXM GPU: H100's NVLink 4 (18 links, 450 GB/s per direction), 141 GB HBM3e",
    source="NVIDIA H200 data sheet (F: NVLink 900 GB/s bidir, same 18 links as H100); 2 lanes per link F2"))
# H800 SXM: H100's die with NVLink cut to 400 GB/s bidir = 200 GB/s per direction (F2: secondary spec pages;
# DeepEP measures ~160 GB/s); 8 of NVLink 4's links x 25 GB/s (D: 200 / 25; which links stay is I).
H800 = register_device(Device(
    name="h800-sxm", kind="chip", lanes=16, lane_gbps=100.0, signal_gbps=106.25,
    port_modes=((8, 200.0),), lanes_by_tier={"nvlink": 16},
    description="NVIDIA H800 SXM GPU: 8 NVLink 4 links x 2 lanes x 100G, 200 GB/s per direction",
    source="H800 spec pages (F2: NVLink 400 GB/s bidir); 8 links D; DeepEP README (F: ~160 GB/s measured)"))
# Second-generation NVSwitch (HGX A100): 36 NVLink 3 ports (F2: NVIDIA NVLink/NVSwitch generation table,
# 1.8 TB/s per chip = 36 x 50 GB/s bidir); no in-network reduction (F: SHARP arrived with gen 3).
NVSWITCH2 = register_device(Device(
    name="nvswitch2", kind="switch", lanes=144, lane_gbps=50.0, signal_gbps=50.0,
    port_modes=((36, 200.0),), can_reduce=False, latency_ns=300.0,
    description="NVSwitch gen 2 (HGX A100): 36 NVLink 3 ports x 4 x 50G, no in-network reduction",
    source="NVIDIA NVLink/NVSwitch pages (F2: 36 ports, 1.8 TB/s); latency_ns default (I)"))
# Third-generation NVSwitch (HGX H100/H200, "NVLink 4 switch"): 64 NVLink 4 ports, 3.2 TB/s bidir,
# NVLink SHARP in-network reduction and multicast (F: NVIDIA technical blog "Upgrading Multi-GPU
# Interconnectivity with the Third-Generation NVIDIA NVSwitch", 2022).
NVSWITCH3 = register_device(Device(
    name="nvswitch3", kind="switch", lanes=128, lane_gbps=100.0, signal_gbps=106.25,
    port_modes=((64, 200.0),), can_reduce=True, latency_ns=300.0,
    description="NVSwitch gen 3 (HGX H100/H200): 64 NVLink 4 ports x 2 x 100G, NVLink SHARP",
    source="NVIDIA 3rd-gen NVSwitch blog (F: 64 ports, SHARP); lanes per port F2; latency_ns default (I)"))

# --- scale-out switches (fabrics/cluster.py) --------------------------------------------------
# InfiniBand ports are 4X (four lanes, F: InfiniBand Architecture Specification); the data sheets give
# the port count and aggregate, the lanes follow (D).  Quantum switches aggregate in the network
# (SHARP, F: data sheets); a graph sets ``reduces`` on them only when it models SHARP on.
QM8700 = register_device(Device(
    name="QM8700", kind="switch", lanes=160, lane_gbps=50.0, signal_gbps=53.125,
    port_modes=((40, 200.0),), can_reduce=True, latency_ns=130.0,
    description="NVIDIA Quantum QM8700 HDR InfiniBand: 40 x 200G ports, 16 Tb/s bidir, SHARPv2",
    source="NVIDIA QM8700 data sheet (F: 40 x 200 Gb/s, 16 Tb/s, 130 ns port to port); 4X lanes D"))
QM9700 = register_device(Device(
    name="QM9700", kind="switch", lanes=256, lane_gbps=100.0, signal_gbps=106.25,
    port_modes=((64, 400.0), (128, 200.0)), can_reduce=True, latency_ns=130.0,
    description="NVIDIA Quantum-2 QM9700 NDR InfiniBand: 64 x 400G ports, 51.2 Tb/s bidir, SHARPv3",
    source="NVIDIA QM9700 data sheet (F: 64 x 400 Gb/s in 32 OSFP, 51.2 Tb/s); 4X lanes D; latency I (as QM8700)"))
Q3400 = register_device(Device(
    name="Q3400", kind="switch", lanes=576, lane_gbps=200.0, signal_gbps=212.5,
    port_modes=((144, 800.0), (288, 400.0)), can_reduce=True, latency_ns=130.0,
    description="NVIDIA Quantum-X800 Q3400 XDR InfiniBand: 144 x 800G ports, 115.2 Tb/s bidir, SHARPv4",
    source="NVIDIA Quantum-X800 data sheet (F: 144 x 800 Gb/s, 115.2 Tb/s); 4X lanes D; latency I"))
TH5 = register_device(Device(
    name="BCM78900", kind="switch", lanes=512, lane_gbps=100.0, signal_gbps=106.25,
    port_modes=((64, 800.0), (128, 400.0), (256, 200.0)), latency_ns=450.0,
    description="Broadcom Tomahawk 5, 51.2 Tb/s Ethernet, 512 x 100G SerDes (RoCE scale-out leaf/spine)",
    source="Broadcom Tomahawk 5 product brief (F: 51.2 Tb/s, 512 x 100G PAM4); latency_ns as TH6 (I)"))

# --- scale-out NICs: a GPU with its NIC is one chip node ---------------------------------------
# The graph has no NIC node: the GPU's chip node carries its NIC's 4X port (tier ``rail``), as NCCL pairs
# each GPU with the NIC behind its PCIe switch.  nic key -> (product, Gb/s per direction, lanes, source)
NICS = {
    "cx6": ("ConnectX-6 HDR", 200.0, 4, "F: NVIDIA DGX A100 user guide, 8 x ConnectX-6 200 Gb/s HDR, one per GPU"),
    "cx7": ("ConnectX-7 NDR", 400.0, 4, "F: NVIDIA DGX H100/B200 user guides, 8 x ConnectX-7 400 Gb/s, one per GPU"),
    "cx8": ("ConnectX-8 XDR", 800.0, 4, "F: NVIDIA DGX B300 / GB300 specs, ConnectX-8 SuperNIC 800 Gb/s per GPU"),
    "pollara": ("Pensando Pollara 400", 400.0, 4,
                "F: amd.com Pensando Pollara 400 AI NIC page (400 Gb/s Ethernet, UEC-ready RDMA); 4 x 100G "
                "lanes I; one NIC per GPU behind the node's PCIe switches F2 (AMD Hot Chips 2025 via wccftech)"),
}


def gpu_with_nic(gpu: str, nic: str) -> Device:
    """Register (once) and return the chip device of GPU ``gpu`` with its NIC ``nic`` (a key of NICS).

    Name ``"<gpu>+<nic>"``; lanes and ports are the GPU's plus the NIC's 4X port, whose lanes form the
    chip's ``rail`` tier budget; the lane rate is the faster of the two (the audit's per-lane check).
    """
    from ..topo.devices import DEVICES, device
    name = f"{gpu}+{nic}"
    if name in DEVICES:
        return DEVICES[name]
    base = device(gpu)
    product, nic_gbps, nic_lanes, nic_src = NICS[nic]
    return register_device(Device(
        name=name, kind="chip", lanes=base.lanes + nic_lanes,
        lane_gbps=max(base.lane_gbps, nic_gbps / nic_lanes), signal_gbps=base.signal_gbps,
        port_modes=base.port_modes + ((1, nic_gbps),),
        lanes_by_tier={**base.lanes_by_tier, "rail": nic_lanes},
        description=f"{base.description}; with one {product} NIC ({nic_gbps:g} Gb/s, {nic_lanes} lanes, tier rail)",
        source=f"GPU: {base.source}. NIC: {nic_src}"))
