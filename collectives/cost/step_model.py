"""The step model: a solved phase's transfer and latencies -> a time, per protocol.

The engine (:mod:`fabricsim.collectives.engine`) routes and solves an algorithm's phases
once (:class:`~fabricsim.collectives.engine.SolvedPhases`, at raw line rate x the given
efficiency, or each tier at its family's delivered rate where the tiers' families
differ); :class:`StepModel` prices them for each protocol with the fabric's cost families
(:mod:`.family`) and a calibration, and returns :class:`PhaseTimes` whose
:class:`PhaseReport` rows say what each phase's time is made of (``mix`` re-solves phases
beside other jobs from those parts, nothing recovered).

``ideal``
    Protocol effects off, the pre-family model exactly: links deliver their raw rate x
    ``efficiency`` (default 1); every step adds the slowest route's latency, a per-step
    overhead (``step_overhead_ns``: the graph's, else 1 us) and, where a rank sends to k
    peers in the step, (k - 1) x 200 ns in series.

``ll`` / ``ll128`` / ``simple`` (or ``auto``: the cheapest algorithm *and* protocol, as
NCCL's tuner picks by minimum modelled time)
    The fabric's families (data files with sources) give the delivered fraction of line
    rate, the protocol's fraction f (LL 1/2, LL128 0.92, Simple 1) and its cap on a rank's
    bus rate (NCCL's llMaxBw), the channels NCCL opens for a call of this size (the
    transfer runs at channels(size) / channels of the rate), a launch and a base latency
    per call, and per algorithm a step latency (the slowest family a phase crosses, on the
    share of its bytes that cross domains).  Per phase of r identical steps with step
    transfer w and step latency l:

    * ``additive`` families (NCCL's tuner, ``time = latency + bytes / bandwidth``):
      r x (w + l);
    * ``pipelined`` families (compiler-scheduled: TPU ICI, Groq C2C, and Tomahawk
      Ethernet): chunks of the protocol's buffer slot keep the steps busy back to back,
      max((r + k - 1) x l, r x w), k = ceil(step bytes / (chunk x channels)); r = 1: w + l.

    Phases run one after another, except those of one ``stage`` (a tree's tiers), whose
    transfers overlap on disjoint links (:func:`compose`).  In-network reduction (NVLS) runs
    at the family's delivered fraction for the ranks reducing together.  An efficiency from
    a calibration or the caller is the whole delivered fraction and replaces the family's
    (NVLS's too); a calibrated base latency stands for the launch as well; legacy
    ``efficiency=`` and ``step_overhead_ns=`` override every collective.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from ..algorithms import Phase
from .family import families_of

if TYPE_CHECKING:                      # types only: the engine imports this module
    import networkx as nx

    from ..engine import PriceOptions, SolvedPhases

__all__ = ["PhaseReport", "PhaseTimes", "StepModel", "compose", "phase_report", "link_efficiency",
           "DEFAULT_STEP_OVERHEAD_NS",
           "DEFAULT_MESSAGE_OVERHEAD_NS"]

# Per-step overhead of the ideal model when a fabric sets none: ~1 us covers a kernel's
# synchronisation and protocol handshake per step (I; override with --step-latency-us).
DEFAULT_STEP_OVERHEAD_NS = 1000.0
# The collectives the pipeline-fill term applies to (NCCL's collective kernels; all-to-all is p2p).
FILL_COLLECTIVES = ("all-reduce", "reduce-scatter", "all-gather")
# Per-message cost of the ideal model: each message beyond the first a rank sends in one
# step adds this much, in series (I: descriptor and doorbell cost, order 0.1-0.5 us).
DEFAULT_MESSAGE_OVERHEAD_NS = 200.0


@dataclass(frozen=True)
class PhaseReport:
    name: str
    repeat: int
    flows: int
    bytes_per_flow: float
    step_bandwidth_s: float      # one step, flow-level (or the bound in bound-only mode)
    step_latency_s: float
    step_bound_s: float
    events: int
    time_s: float                # repeat x (bandwidth + latency); pipelined: see the engine
    saturated_links: int
    # what the phase's time is made of, for code that re-solves it beside other traffic (mix):
    # each step is latency_per_step_s then its flows, whose bytes x rate_scale move through
    # the solve's link capacities (engine.solve_capacity_Bps) in step_bandwidth_s when alone
    latency_per_step_s: float = 0.0
    rate_scale: float = 1.0

    def as_dict(self) -> dict[str, Any]:
        return dict(self.__dict__)


@dataclass(frozen=True)
class PhaseTimes:
    """One (algorithm, protocol)'s times."""

    time_s: float
    bandwidth_s: float
    latency_s: float
    bound_s: float
    phases: tuple
    group_time_s: tuple
    notes: tuple = ()
    base_s: float = 0.0
    channels: int | None = None          # the channels the call runs on (None: the ideal model has none)


def link_efficiency(families, opts: "PriceOptions") -> dict | None:
    """Per-tier delivered fractions the solve runs at where the tiers' families differ, else None
    (the solve then runs at one scale, applied after): protocol models without a given efficiency."""
    if opts.protocol == "ideal" or opts.efficiency is not None or not families.mixed:
        return None
    return {t: f.efficiency for t, f in families.by_tier.items()}


class StepModel:
    """The step model's parameters for one price: options, calibration and the fabric's families."""

    def __init__(self, G: nx.Graph, collective: str, opts: PriceOptions, size_bytes: float = 0.0,
                 group_size: int = 2):
        self.G, self.collective, self.opts = G, collective, opts
        self.size_bytes, self.group_size = size_bytes, group_size
        self.families = families_of(G)
        self.family = self.families.primary

    def link_efficiency(self):
        """Per-tier delivered fractions for the solve where tiers differ, else None (one scale after)."""
        return link_efficiency(self.families, self.opts)

    def protocols(self, algorithm: str) -> tuple[str, ...]:
        p = self.opts.protocol
        if p == "ideal":
            return ("ideal",)
        have = self.family.protocols_for(algorithm)
        if p == "auto":
            return have
        return (p,) if p in have else ()

    def _cal(self, algorithm: str, protocol: str) -> dict:
        cal = self.opts.calibration
        return dict(cal.lookup(self.collective, algorithm, protocol)) if cal is not None else {}

    def time(self, s: "SolvedPhases", algorithm: str, protocol: str, n_groups: int) -> PhaseTimes:
        if protocol == "ideal":
            return self._ideal(s, algorithm)
        return self._protocol(s, algorithm, protocol)

    def _ideal(self, s: "SolvedPhases", algorithm: str) -> PhaseTimes:
        """Protocol effects off: the pre-family model, bit for bit."""
        o, G = self.opts, self.G
        cal = self._cal(algorithm, "ideal")
        eff = o.efficiency if o.efficiency is not None else float(cal.get("efficiency", 1.0))
        scale = s.solve_efficiency / eff        # 1.0 unless a calibration sets the efficiency
        if o.step_overhead_ns is not None:
            overhead_s = o.step_overhead_ns * 1e-9
        elif "step_latency_us" in cal:
            overhead_s = float(cal["step_latency_us"]) * 1e3 * 1e-9
        else:
            overhead_s = float(G.graph.get("step_overhead_ns", DEFAULT_STEP_OVERHEAD_NS)) * 1e-9
        message_s = (o.message_overhead_ns if o.message_overhead_ns is not None else float(
            G.graph.get("message_overhead_ns", DEFAULT_MESSAGE_OVERHEAD_NS))) * 1e-9
        base_s = float(cal.get("base_latency_us", 0.0)) * 1e-6
        bound_total = 0.0
        reports, parts = [], []
        for ph, st, messages in zip(s.plist, s.steps, s.messages):
            step_bw, step_bound, g_fin = st.time_s, st.bound_s, st.group_finish_s
            if scale != 1.0:
                step_bw, step_bound, g_fin = step_bw * scale, step_bound * scale, g_fin * scale
            step_lat = st.latency_ns * 1e-9 + overhead_s + max(messages - 1, 0) * message_s
            parts.append((ph.repeat * step_bw, ph.repeat * step_lat, ph.repeat * g_fin, ph.repeat * step_lat,
                          ph.repeat * step_bound))
            reports.append(phase_report(ph, st, step_bw, step_lat, step_bound, ph.repeat * (step_bw + step_lat),
                                         step_lat, scale))
        bw_total, lat_total, group_t, notes, bound_total = compose(s, parts, s.n_groups)
        if base_s:
            group_t += base_s
            lat_total += base_s
        return PhaseTimes(bw_total + lat_total, bw_total, lat_total, bound_total + lat_total, tuple(reports),
                      tuple(group_t.tolist()), notes, base_s=base_s)

    def _step_latency_s(self, algorithm: str, protocol: str, crossed, share) -> float:
        """A step's latency: the primary family's, and another family's on the share of steps that cross it.

        NCCL's tuner charges a ring (nsteps - nInterSteps) x the NVLink latency plus
        nInterSteps x the network's (tuning.cc); here the network's share is the share of
        the phase's bytes that cross domains (every step, when the fabric has none).
        """
        fams, fam = self.families, self.families.primary
        intra = fam.step_latency_us(algorithm, protocol)
        others = [fams.of(t) for t in crossed if fams.of(t) is not fam]
        others = [f.step_latency_us(algorithm, protocol) for f in others if protocol in f.protocols_for(algorithm)]
        if not others:
            return intra * 1e-6
        inter = max(others)
        w = 1.0 if share is None else share
        return ((1 - w) * intra + w * inter) * 1e-6

    def _protocol(self, s: "SolvedPhases", algorithm: str, protocol: str) -> PhaseTimes:
        """NCCL-style: launch + base latency + per phase the family's time model at the protocol's rate.

        ``additive`` (NCCL's tuner): each step costs its latency plus its transfer; ``pipelined``:
        chunks overlap them.  The transfer runs on the channels NCCL opens for a call of this size.
        """
        o, fams = self.opts, self.families
        fam = fams.primary
        cal = self._cal(algorithm, protocol)
        given = o.efficiency if o.efficiency is not None else cal.get("efficiency")
        if s.per_link_efficiency:
            # the solve ran each tier at its family's delivered rate; a given efficiency replaces the primary's
            eff_scale = 1.0 if given is None else fam.efficiency / float(given)
        else:
            eff_scale = s.solve_efficiency / float(given if given is not None else fam.efficiency)
        # the family's NVLS bound goes with the family's efficiency; a measured (calibrated or
        # given) efficiency is already all the in-network kernels deliver
        # NVLS reduces among the chips of an in-network phase's row (a tree's domain, or the group)
        in_net_n = next((ph.rows.shape[1] for ph in s.plist if ph.in_network), self.group_size)
        in_net = fam.in_network_for(in_net_n) if given is None else 1.0
        frac = fam.bw_fraction_for(algorithm, protocol)
        channels = fam.channels_for(algorithm, protocol, self.size_bytes, self.group_size)
        if o.message_overhead_ns is not None:
            message_s = o.message_overhead_ns * 1e-9
        else:
            message_s = float(self.G.graph.get("message_overhead_ns", fam.message_overhead_us * 1e3)) * 1e-9
        chunk = fam.chunk_bytes[protocol] * fam.channels
        base_s = float(cal.get("base_latency_us", fam.base_latency_us(algorithm, protocol))) * 1e-6
        # the launch of the slowest family the call crosses (a network's per-call cost beyond NVLink's)
        crossed_all = {t for ts in (s.tiers or ()) for t in ts}
        launch_us = max([fam.launch_us] + [fams.of(t).launch_us for t in crossed_all])
        launch_s = launch_us * 1e-6 if "base_latency_us" not in cal else 0.0
        # a call that crosses another family's tier (a network) runs every phase at the lowest of the
        # families' protocol fractions and caps: NCCL's tuner prices the whole algorithm with its
        # multi-node rows once the communicator spans nodes (tree LL / 3.8, llMaxBw by host)
        others = list({id(f): f for f in map(fams.of, sorted(crossed_all)) if f is not fam}.values())
        bound_total = 0.0
        reports, parts, fillable = [], [], []
        notes = []
        tiers = s.tiers or ((),) * len(s.plist)
        shares = s.cross_share or (None,) * len(s.plist)
        for ph, st, messages, crossed, share in zip(s.plist, s.steps, s.messages, tiers, shares):
            ph_frac = min([frac] + [f.bw_fraction_for(algorithm, protocol) for f in others
                                    if protocol in f.bw_fraction])
            scale = eff_scale / ph_frac
            if ph.in_network:
                scale /= in_net
            elif channels < fam.channels:
                scale *= fam.channels / channels
            caps = [c for c in [fam.cap_GBps(algorithm, protocol)] + [f.cap_GBps(algorithm, protocol) for f in others]
                    if c is not None]
            cap_GBps = min(caps) if caps and given is None and not ph.in_network else None
            capped = False
            if cap_GBps and st.time_s > 0:
                # NCCL caps the protocol's bus rate per rank (llMaxBw): a rank sends its step's
                # messages no faster than that
                floor_s = ph.flow_bytes * max(messages, 1) / (cap_GBps * 1e9)
                capped = floor_s / st.time_s > scale
                scale = max(scale, floor_s / st.time_s)
            step_bw, step_bound, g_fin = st.time_s * scale, st.bound_s * scale, st.group_finish_s * scale
            if o.step_overhead_ns is not None:
                step_s = o.step_overhead_ns * 1e-9
            elif "step_latency_us" in cal:
                step_s = float(cal["step_latency_us"]) * 1e-6
            else:
                step_s = self._step_latency_s(algorithm, protocol, crossed, share)
            # per-peer messages run over the channels in parallel (NCCL p2p), not in series
            peers = max(messages - 1, 0)
            step_lat = st.latency_ns * 1e-9 + step_s + math.ceil(peers / fam.channels) * message_s
            r = ph.repeat
            if fam.time_model == "additive" or r == 1:
                ph_t = r * (step_bw + step_lat)
                g_t = r * (g_fin + step_lat)
                per_step = step_lat
            else:
                k = max(1, math.ceil(ph.flow_bytes / chunk))
                ph_t = max((r + k - 1) * step_lat, r * step_bw)
                g_t = np.maximum((r + k - 1) * step_lat, r * g_fin)
                # the pipeline's latency left exposed per step, beyond the transfer
                per_step = max(ph_t / r - step_bw, 0.0)
            parts.append((r * step_bw, ph_t - r * step_bw, r * g_fin, g_t - r * g_fin, r * step_bound))
            # a capped rate is NCCL's measured LL rate (llMaxBw), fill included: no fill on top
            fillable.append(0.0 if capped else r * step_bw)
            reports.append(phase_report(ph, st, step_bw, step_lat, step_bound, ph_t, per_step, scale))
        if any(ph.in_network for ph in s.plist) and in_net != 1.0:
            notes.append(f"in-network reduction delivers {in_net:.3g} x the {fam.name} transport rate for "
                         f"{in_net_n} ranks (family file; an efficiency you give or calibrate replaces both)")
        if channels < fam.channels and not all(ph.in_network for ph in s.plist):
            notes.append(f"{protocol} at this size runs on {channels} of {fam.channels} channels (NCCL opens "
                         f"fewer channels for small calls): transfer at {channels}/{fam.channels} of the rate")
        if launch_s:
            who = next((f.name for f in [fam] + [fams.of(t) for t in sorted(crossed_all)] if f.launch_us == launch_us),
                       fam.name)
            notes.append(f"adds {launch_us:g} us per call for the launch ({who} family file)")
        bw_total, lat, group_t, staged, bound_total = compose(s, parts, s.n_groups)
        notes.extend(staged)
        run_channels = fam.channels if all(ph.in_network for ph in s.plist) else channels
        all_bw = sum(p[0] for p in parts)
        fill_s = self._fill_s(bw_total * (sum(fillable) / all_bw if all_bw > 0 else 0.0), run_channels, cal)
        if fill_s:
            notes.append(f"adds {fill_s * 1e6:,.1f} us of pipeline fill: {fam.fill_fraction:g} x the transfer, at "
                         f"most {run_channels} channels x {fam.fill_steps} slots x {fam.fill_slot_bytes / 1024:g} KiB "
                         f"({fam.name} family file)")
        lat += base_s + launch_s + fill_s
        group_t += base_s + launch_s + fill_s
        total = bw_total + lat
        return PhaseTimes(total, bw_total, lat, bound_total + lat, tuple(reports), tuple(group_t.tolist()),
                          tuple(notes), base_s + launch_s + fill_s, run_channels)

    def _fill_s(self, bw_s: float, channels: int, cal: dict) -> float:
        """The pipeline fill of an ``additive`` family's call: its transfer ``bw_s`` x fill bytes / bytes.

        While a call's channels fill their pipelines (``fill_steps`` slots of ``fill_slot_bytes``
        each) its bytes move at a fraction of the steady rate: the family file's ``[fill]``
        prices that as ``fill_fraction`` of the transfer again, at most the slots' capacity.
        A calibrated base latency stands for it (the fit saw the whole curve).  Only NCCL's
        collective kernels (reductions, all-gather) pay it: the constants were fitted on all-reduce
        curves, and all-to-all runs NCCL's p2p path, whose chunking differs (p2pChunkSize).
        """
        fam = self.families.primary
        if fam.time_model != "additive" or "base_latency_us" in cal or self.size_bytes <= 0 or bw_s <= 0 \
                or self.collective not in FILL_COLLECTIVES:
            return 0.0
        return bw_s * fam.fill_bytes(self.size_bytes, channels) / self.size_bytes


def compose(s: "SolvedPhases", parts: list, n_groups: int):
    """Phases' (bandwidth, latency, per-group bandwidth, per-group latency) parts -> totals.

    Phases run one after another, except phases of one ``stage`` (a tree's tiers): their
    transfers overlap, so the stage takes its slowest phase's transfer plus every phase's
    latency -- unless they share a link, when they are added (a note says so).
    Returns (bandwidth s, latency s, per-group s, notes, link-load bound s).
    """
    bw = lat = bound = 0.0
    group_t = np.zeros(n_groups)
    notes = []
    stages: dict[int, list[int]] = {}
    for i, ph in enumerate(s.plist):
        if ph.stage >= 0:
            stages.setdefault(ph.stage, []).append(i)
            continue
        b, l_, gb, gl, bd = parts[i]
        bw, lat, bound = bw + b, lat + l_, bound + bd
        group_t += gb + gl
    for members in stages.values():
        links = [s.links[i] for i in members] if s.links else []
        shared = any(np.intersect1d(links[a], links[b]).size for a in range(len(links))
                     for b in range(a + 1, len(links)))
        if shared or len(members) == 1 or not links:
            for i in members:
                b, l_, gb, gl, bd = parts[i]
                bw, lat, bound = bw + b, lat + l_, bound + bd
                group_t += gb + gl
            if shared:
                notes.append("the tree's tiers share links, so their transfers are added, not overlapped")
            continue
        bw += max(parts[i][0] for i in members)
        bound += max(parts[i][4] for i in members)
        lat += sum(parts[i][1] for i in members)
        group_t += np.max([parts[i][2] for i in members], axis=0) + sum(parts[i][3] for i in members)
        names = " and ".join(f"'{s.plist[i].name}'" for i in members)
        notes.append(f"pipelined tiers: {names} overlap (on disjoint links): the slower transfer counts")
    return bw, lat, group_t, notes, bound


def phase_report(ph: Phase, st, step_bw: float, step_lat: float, step_bound: float, time_s: float,
                  per_step: float, scale: float) -> PhaseReport:
    return PhaseReport(ph.name, ph.repeat, ph.n_flows - st.unreachable, float(ph.flow_bytes), float(step_bw),
                       float(step_lat), float(step_bound), int(st.events), float(time_s), st.saturated,
                       float(per_step), float(scale))


