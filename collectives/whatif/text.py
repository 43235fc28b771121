"""What ``fabricsim whatif`` / ``sweep`` print, as library functions a notebook can call too.

:func:`whatif_text` is a :class:`~fabricsim.collectives.whatif.scenario.WhatIf` as text
(``WhatIf.to_text()``); :func:`sweep_method_text` and :func:`whatif_method_text` are ``--explain``;
:class:`SweepProgress` is the progress bar a sweep draws on a stream (stderr by default).
"""
from __future__ import annotations

import math
import sys
import time

from ...topo.text import gbps, table, us
from ...topo.text import hist as hist_text
from ...topo.text import x as x_text

__all__ = ["whatif_text", "recovery_text", "removed_text", "SweepProgress", "duration_text", "generators_text",
           "method_of_text", "sweep_method_text", "whatif_method_text"]


def whatif_text(w) -> str:
    b, d = w.baseline, w.degraded
    priced = math.isfinite(d.time_s)
    out = ["failed: " + "; ".join(f"{f['spec']} ({removed_text(f)})" for f in w.failed),
           table([["time", us(b.time_s), us(d.time_s)],
                   ["bandwidth", us(b.bandwidth_time_s), us(d.bandwidth_time_s)],
                   ["latency", us(b.latency_s), us(d.latency_s)],
                   ["busbw GB/s", gbps(b.busbw_GBps), gbps(d.busbw_GBps)],
                   ["algorithm", b.algorithm, d.algorithm if priced else "n/a"],
                   ["protocol", b.protocol, d.protocol if priced else "n/a"]],
                  ["", "baseline", "restarted" if w.recovery.get("mode") == "restart" else "degraded"])]
    if priced:
        out.append(f"slowdown {x_text(w.slowdown)} (bandwidth {x_text(w.bandwidth_slowdown)})"
                   + ("   PARTIAL: over what could be priced only" if w.partial else ""))
    else:
        lost_all = d.broken_groups.get("count", 0) == d.groups
        out.append("slowdown n/a: " + ("every group lost a chip" if lost_all else "no group could be priced")
                   + ", nothing was priced after the failures")
    out.append(recovery_text(w.recovery))
    ac = w.affected_chips
    out.append(f"affected chips: {ac.get('count', 0):,} (lost {ac.get('lost', 0):,}, cut off {ac.get('cut_off', 0):,}"
               f", tier bandwidth changed {ac.get('tier_bandwidth_changed', 0):,}"
               f"{', along their paths ' + format(ac['path_bandwidth_changed'], ',') if ac.get('path_bandwidth_changed') else ''}"
               f", in slowed groups "
               f"{ac.get('in_slowed_groups', 0):,})")
    n_lost = w.tier_bandwidth.get("chips_lost", 0)
    for tier, hist in w.tier_bandwidth.get("by_tier", {}).items():
        before, after = hist.get("before", {}), hist.get("after", {})
        gone = ", ".join(x for x in (hist_text(after, empty=""), f"{n_lost:,} lost" if n_lost else "") if x) or "-"
        out.append(f"  {tier} GB/s per chip: before {hist_text(before)}  after {gone}")
        paths = w.tier_bandwidth.get("by_tier_paths", {}).get(tier, {})
        if paths and paths != hist:   # a loss beyond the chips' own links (their switches' uplinks)
            gone = ", ".join(x for x in (hist_text(paths.get("after", {}), empty=""),
                                         f"{n_lost:,} lost" if n_lost else "") if x) or "-"
            out.append(f"  {tier} GB/s per chip along its paths (its share of its switches' uplinks): before "
                       f"{hist_text(paths.get('before', {}))}  after {gone}")
    if w.affected_groups:
        worst = w.affected_groups[:3]
        out.append(f"affected groups: {len(w.affected_groups):,}, e.g. " + "; ".join(
            f"group {g['group']}: " + ("broken" if g.get("broken") else x_text(g["slowdown"])) for g in worst))
    if w.new_bottlenecks:
        out.append("new bottlenecks: " + "; ".join(f"{x['link']} {x['utilization']:.0%}" for x in w.new_bottlenecks[:3]))
    out.extend(f"note: {n}" for n in w.notes)
    out.extend(f"degraded: {n}" for n in d.notes)
    return "\n".join(out)

def recovery_text(r: dict) -> str:
    if r.get("mode") != "restart":
        return "recovery: reroute (the job keeps its chips; traffic routes around the failures)"
    d = r["chips_dropped"]
    return (f"recovery: restart ({r['placement']}): {r['ranks_after']:,} of {r['ranks_before']:,} ranks in "
            f"{r['groups_after']:,} group(s) of {r['group_size_after']}; lost {r['ranks_lost']:,} rank(s), "
            f"{r['groups_lost']:,} group(s)"
            + (f"; spares used {r['spares_used']} of {r['spares']}" if r["spares"] else "; no spares")
            + f"; chips dropped: {d['lost']} lost, {d['cut_off']} cut off, {d['disconnected']} disconnected"
            + ("" if r["shrunk"] == "none" else
               f"\n  the job shrank: per byte of its payload (ranks x S) x{r['per_byte_slowdown']:.6g} "
               f"the intact job's time (the slowdown above is per collective, same S per rank)"))

def removed_text(f: dict) -> str:
    parts = []
    for key, word in (("nodes_removed", "nodes"), ("edges_removed", "links"),
                      ("incident_edges_removed", "links with them"), ("lanes_removed", "lanes")):
        v = f.get(key)
        n = len(v) if isinstance(v, (list, tuple)) else v
        if n:
            parts.append(f"{n:,} {word}")
    return ", ".join(parts) or "nothing"

class SweepProgress:
    """A sweep's progress on stderr: a bar with the scenarios done, the orbits solved and an ETA.

    ``sweep()`` calls it once per scenario in the parent process, whatever the runner
    (local pool or Dask), after ``plan(scenarios, orbits)``.  The ETA is the time per
    representative solved so far times those left (each representative prices its
    whole orbit).  Nothing is shown for a sweep that ends within ``after_s`` seconds.
    On a terminal the bar is redrawn in place (every 0.1 s or new percent); when stderr
    is not a terminal (a log, CI) it writes one plain line per 10% step, and only once
    the sweep has run ``log_after_s`` seconds, so short sweeps leave logs alone.
    Progress goes to stderr only, so ``--json`` output on stdout stays clean.
    """

    WIDTH = 24

    def __init__(self, stream=None, *, after_s: float = 2.0, log_after_s: float = 10.0, tty: bool | None = None,
                 clock=time.monotonic):
        self.stream = stream if stream is not None else sys.stderr
        self.tty = bool(getattr(self.stream, "isatty", lambda: False)()) if tty is None else tty
        self.after_s, self.log_after_s, self.clock = after_s, log_after_s, clock
        self.t0 = clock()
        self.scenarios = self.orbits = None
        self.solved, self._orbit_seen = 0, set()
        self._drawn = False
        self._last_draw = -1.0
        self._last_pct = -1
        self._last_step = -1
        self.last = ""

    def plan(self, scenarios: int, orbits: int) -> None:
        self.scenarios, self.orbits = int(scenarios), int(orbits)

    def line(self, done: int, total: int) -> str:
        el = self.clock() - self.t0
        frac = done / total if total else 1.0
        fill = int(round(frac * self.WIDTH))
        units, of = (self.solved, self.orbits) if self.orbits else (done, total)
        eta = el / units * (of - units) if units else float("nan")
        orbit = f", {self.solved:,}/{self.orbits:,} orbits solved" if self.orbits and self.orbits < total else ""
        tail = "done" if done >= total else (f"ETA {duration_text(eta)}" if math.isfinite(eta) else "ETA ?")
        return (f"fabricsim: sweep [{'#' * fill}{'.' * (self.WIDTH - fill)}] {frac:4.0%} {done:,}/{total:,} "
                f"scenarios{orbit}, {duration_text(el)} elapsed, {tail}")

    def __call__(self, done: int, total: int, result: dict) -> None:
        o = result.get("orbit") if isinstance(result, dict) else None
        key = o if o is not None else ("scenario", done)
        if key not in self._orbit_seen:
            self._orbit_seen.add(key)
            self.solved += 1
        now = self.clock()
        el = now - self.t0
        if self.tty:
            if el < self.after_s and not self._drawn:
                return
            pct = int(100 * done / total) if total else 100
            # an orbit's scenarios arrive together: redraw at each new percent too, not only every 0.1 s
            if done < total and now - self._last_draw < 0.1 and pct == self._last_pct:
                return
            self._last_draw, self._last_pct = now, pct
            self.last = self.line(done, total)
            self.stream.write("\r" + self.last + "\x1b[K")
            self._drawn = True
            if done >= total:
                self.stream.write("\n")
                self._drawn = False
            self.stream.flush()
            return
        step = int(10 * done / total) if total else 10
        if el < self.log_after_s or (step == self._last_step and done < total):
            return
        if done >= total and self._last_step < 0:
            return                               # nothing shown so far: a short sweep stays quiet
        self._last_step = step
        self.last = self.line(done, total)
        self.stream.write(self.last + "\n")
        self.stream.flush()

    def close(self) -> None:
        """End a bar left mid-line (an error or an interrupt)."""
        if self.tty and self._drawn:
            self.stream.write("\n")
            self.stream.flush()
            self._drawn = False

def duration_text(s: float) -> str:
    if not math.isfinite(s):
        return "?"
    if s < 60:
        return f"{s:.1f} s"
    if s < 3600:
        return f"{int(s // 60)} min {int(s % 60):02d} s"
    return f"{int(s // 3600)} h {int(s % 3600 // 60):02d} min"

def generators_text(m: dict, limit: int = 12) -> list[str]:
    out = []
    gens = m.get("generators", [])
    fams: dict[str, int] = {}
    for g in gens:
        fams[g["family"]] = fams.get(g["family"], 0) + 1
    out.append(f"  generators used: {len(gens)}" + (f" ({', '.join(f'{k} {v}' for k, v in fams.items())})"
                                                    if gens else ""))
    out.extend(f"    {g['name']}" + (" [conditional]" if g.get("conditional") else "") for g in gens[:limit])
    if len(gens) > limit:
        out.append(f"    ... ({len(gens) - limit} more)")
    cond = next((g["conditional"] for g in gens if g.get("conditional")), "")
    if cond:
        out.append(f"  conditional: {cond}")
    ref = m.get("refused", [])
    out.append(f"  generators refused: {len(ref)}")
    out.extend(f"    {r['name']}: {r['reason']}" for r in ref[:limit])
    if len(ref) > limit:
        out.append(f"    ... ({len(ref) - limit} more)")
    return out

def method_of_text(m) -> str:
    if not isinstance(m, dict) or not m:
        return ""
    return ", ".join(f"{k}={v}" for k, v in m.items() if not isinstance(v, (list, dict)))

def sweep_method_text(m: dict) -> str:
    if not m.get("fold"):
        return f"method: no orbit folding ({m.get('reason', 'off')})"
    out = [f"method: {m['scenarios']:,} scenarios in {m['orbits']:,} orbit(s), "
           f"{len(m.get('representatives', [])):,} representative(s) solved"]
    out.extend(generators_text(m))
    if m.get("preserves"):
        out.append(f"  a {m['failure_class']} failure keeps: {m['preserves']}")
    out.extend(f"  note: {n}" for n in m.get("notes", []))
    reps = m.get("representatives", [])
    out.append("  representatives:")
    for r in reps[:20]:
        how = method_of_text(r.get("method"))
        out.append(f"    orbit {r['orbit']:,} ({r['orbit_size']:,} scenarios): {'; '.join(r['failed'])}"
                   + (f"  [{how}]" if how else ""))
    if len(reps) > 20:
        out.append(f"    ... ({len(reps) - 20:,} more)")
    return "\n".join(out)

def whatif_method_text(m: dict) -> str:
    out = ["method:"]
    for name in ("baseline", "degraded"):
        how = method_of_text(m.get(name))
        if how:
            out.append(f"  {name} price: {how}")
    sym = m.get("symmetry")
    if sym:
        out.extend(generators_text(sym))
        stab = sym.get("stabilizer", [])
        out.append(f"  kept by the failure: {len(stab)} of {len(sym.get('generators', []))} generator(s)"
                   + (": " + "; ".join(g["name"] for g in stab[:6]) + (" ..." if len(stab) > 6 else "")
                      if stab else ""))
        if sym.get("not_checked"):
            out.append(f"  not checked: {', '.join(sym['not_checked'])} (they move every node, so they keep no "
                       f"failure of this class)")
        if "orbit_size" in sym:
            out.append(f"  its orbit: {sym['orbit_size']:,} of the class's {sym['class_domains']:,} domains "
                       f"({sym['class_orbits']:,} orbit(s)): a sweep prices them all alike")
        for cls, text in sym.get("preserves", {}).items():
            out.append(f"  a {cls} failure keeps: {text}")
    return "\n".join(out)
