"""Device model and registry: what a chip or switch ASIC can carry.

The catalog entries, each with its source, live in :mod:`fabricsim.fabrics.devices`
and register themselves here; audits and the validator look devices up by the
node's ``model`` attribute.  Users add their own with :func:`register_device`.
"""
from __future__ import annotations

from dataclasses import dataclass, field

__all__ = ["Device", "DEVICES", "register_device", "device"]


@dataclass(frozen=True)
class Device:
    """One chip or switch ASIC's I/O budget.

    Attributes
    ----------
    name : catalog key (the node's ``model``).
    kind : ``"chip"`` or ``"switch"``.
    lanes : SerDes lanes (one TX and one RX differential pair each).
    lane_gbps : highest data rate per lane per direction, Gb/s.
    signal_gbps : line rate per lane (212.5 for "200G" PAM4), Gb/s; informational.
    port_modes : ``(ports, port_gbps)`` configurations the device supports.
    lanes_by_tier : for chips, how many lanes face each tier (``{"local": 24, "global": 8}``).
    can_reduce : switch can reduce in the network (NVLink SHARP).
    latency_ns : port-to-port latency of a switch (0 for chips).
    pairs_per_lane : differential pairs per lane (TX + RX).
    placeholder : a budget-free stand-in (``generic-chip``, ``generic-switch``), not a part:
        its lanes and capacity describe nothing real, so the audit does not report them as a
        part's figures.
    source : where the figures come from; tag F / F2 / I as in FACTS.md.
    """

    name: str
    kind: str
    lanes: int
    lane_gbps: float
    signal_gbps: float = 0.0
    port_modes: tuple[tuple[int, float], ...] = ()
    lanes_by_tier: dict[str, int] = field(default_factory=dict)
    can_reduce: bool = False
    latency_ns: float = 0.0
    pairs_per_lane: int = 2
    placeholder: bool = False
    description: str = ""
    source: str = ""

    @property
    def capacity_gbps(self) -> float:
        """Aggregate data rate per direction, Gb/s."""
        return self.lanes * self.lane_gbps

    def ports_at(self, port_gbps: float) -> int:
        """Ports of ``port_gbps`` the device offers if every lane runs at that port speed."""
        per_port = port_gbps / self.lane_gbps
        return int(self.lanes // per_port) if per_port >= 1 else self.lanes


DEVICES: dict[str, Device] = {}


def register_device(dev: Device) -> Device:
    """Add ``dev`` to the registry (replacing one of the same name) and return it."""
    if dev.kind not in ("chip", "switch"):
        raise ValueError(f"device kind {dev.kind!r} is not 'chip' or 'switch'")
    DEVICES[dev.name] = dev
    return dev


def device(name: str) -> Device:
    """Look up a device, with the valid names in the error."""
    try:
        return DEVICES[name]
    except KeyError:
        raise ValueError(f"unknown device {name!r}; choose one of: {', '.join(sorted(DEVICES))}") from None
