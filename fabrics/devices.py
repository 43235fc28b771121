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
