"""What the commands print for price's method and traffic, compare, sweep, mix, calibrate, step and domains,
as library functions a notebook can call on the same results (``print(sweep_text(s))``).

Every figure comes from the result passed in; these functions only lay it out.
"""
from __future__ import annotations

from ..topo.text import fmt_bytes, table, us, x

__all__ = ["method_text", "traffic_text", "compare_text", "sweep_text", "mix_text", "calibration_text",
           "steps_text", "domains_text"]


def method_text(m: dict, mode: str) -> str:
    """``price --explain``: which fast path priced each phase and why the others were refused."""
    rates = "link-load bound, not max-min rates" if mode == "link-load bound" else "exact max-min rates"
    out = ["", f"method: {m.get('path', '?')} ({m.get('flows', 0):,} flows per step, "
               f"{m.get('quotient_size', 0):,} classes solved; {rates})"]
    for p in m.get("phases", []):
        out.append(f"  {p['phase']}: {p['path']}" + (f", {p['quotient_size']:,} classes" if p["quotient_size"] else ""))
    for r in m.get("refused", []):
        out.append(f"  refused {r['method']}: {r['reason']}")
    return "\n".join(out)


def traffic_text(summary: dict) -> str:
    """An all-to-all-v's traffic totals (:func:`~fabricsim.collectives.runs.price_traffic`) in one line."""
    return (f"traffic ({summary['source']}): {fmt_bytes(summary['bytes_total'])} in all, "
            f"{fmt_bytes(summary['bytes_network'])} over the network, {fmt_bytes(summary['bytes_local'])} local; "
            f"imbalance {summary['imbalance']:.4g} (max / mean bytes received per rank)")


def compare_text(labels, chips, reports) -> str:
    """``compare``'s table: one row per fabric (label, chips, algorithm, protocol, groups, times, busbw)."""
    return table([[label, n, r.algorithm, r.protocol, r.groups, us(r.time_s), us(r.bandwidth_time_s),
                   us(r.latency_s), f"{r.algbw_GBps:,.1f}", f"{r.busbw_GBps:,.1f}", "PARTIAL" if r.partial else ""]
                  for label, n, r in zip(labels, chips, reports)],
                 ["fabric", "chips", "algorithm", "protocol", "groups", "time", "bandwidth", "latency",
                  "algbw GB/s", "busbw GB/s", ""])


def _restart_row(sc: dict) -> list:
    r = sc.get("recovery", {})
    if not r.get("restarted"):
        return ["-", "-", "n/a"]
    return [f"{r['ranks_after']:,}/{r['ranks_before']:,}", f"{r['spares_used']}", x(r["per_byte_slowdown"])]


def sweep_text(s, top: int = 10) -> str:
    """A :class:`~fabricsim.collectives.whatif.sweeps.Sweep`: summary, the ``top`` worst scenarios, notes."""
    sm = s.summary
    out = [f"{s.collective} on {s.fabric}, {sm['count']:,} scenarios of {s.n} x {s.failure_class}, "
           f"algorithm {s.algorithm}; baseline {us(s.baseline.time_s)}",
           f"slowdown: min {x(sm.get('min'))}  median {x(sm.get('median'))}  p90 {x(sm.get('p90'))}  "
           f"max {x(sm.get('max'))}  ({sm.get('distinct', 0)} distinct; {sm.get('partial', 0)} partial"
           + (f"; {sm['unpriced']} with nothing priced" if sm.get("unpriced") else "") + ")"]
    folded = bool(s.scenarios) and "orbit" in s.scenarios[0]
    restart = s.recovery.get("mode") == "restart"
    if restart:
        rs, n_sp = sm["restart"], s.recovery.get("spares", 0)
        out.append(f"recovery: restart{f' with {n_sp} spare(s)' if n_sp else ''}: "
                   f"{rs['restarted']:,} restarted, {rs['shrunk']:,} shrank, {rs['used_spares']:,} used spares"
                   + (f", {rs['refused']:,} could not restart" if rs["refused"] else "")
                   + f"; per-byte slowdown max {x(rs['per_byte_slowdown_max'])}")
    out.append(table([["; ".join(sc["failed"]), x(sc['slowdown']), us(sc.get("time_s"))]
                      + (_restart_row(sc) if restart else [])
                      + ([f"{sc['orbit']:,}", f"{sc['orbit_size']:,}"] if folded else [])
                      + ["PARTIAL" if sc.get("partial") else ""] for sc in s.scenarios[:top]],
                     ["failed", "slowdown", "time"] + (["ranks", "spares used", "per byte"] if restart else [])
                     + (["orbit", "orbit size"] if folded else []) + [""]))
    out += [f"note: {n}" for n in s.notes]
    return "\n".join(out)


def mix_text(r) -> str:
    """A :class:`~fabricsim.collectives.jobs.mix.MixResult`: makespan, one row per job, busiest links, notes."""
    out = [f"{len(r.jobs)} job(s) on {r.fabric}: makespan {us(r.makespan_s)} ({r.events:,} shared max-min solves)",
           table([[j.name, j.collective, j.algorithm, f"{j.groups} x {j.group_size}", fmt_bytes(j.bytes_total),
                   us(j.start_s), us(j.finish_s), us(j.solo_s),
                   f"x{j.time_s / j.solo_s:.4g}" if j.solo_s > 0 else "n/a"]
                  for j in r.jobs],
                 ["job", "collective", "algorithm", "groups", "bytes", "start", "finish", "alone", "slowdown"])]
    if r.bottlenecks:
        out += ["", "Busiest links (utilization over the makespan):",
                table([[b["link"], b["tier"], f"{b['utilization']:.1%}", f"{b['capacity_GBps']:,.1f}"]
                       for b in r.bottlenecks[:5]], ["link", "tier", "util", "GB/s"])]
    out += [f"note: {n}" for n in r.notes]
    return "\n".join(out)


def calibration_text(res) -> str:
    """A :class:`~fabricsim.collectives.cost.calibrate.CalibrationResult`: each fit and its points."""
    out = []
    for f in res.fits:
        label = f.section + ("" if f.protocol is None or f.protocol in f.section else f" (protocol {f.protocol})")
        out.append(f"[{label}] on {res.fabric}, {'/'.join(map(str, f.nranks))} ranks: "
                   + ", ".join(f"{k} = {v:.4g}" for k, v in f.params.items())
                   + f"; rms error {f.rms_error_pct:.2f}% (default model {f.default_rms_error_pct:.1f}%)")
        out.append(table([[fmt_bytes(p.size_bytes), f"{p.measured_time_us:,.1f}", f"{p.model_time_us:,.1f}",
                           f"{p.error_pct:+.2f}", f"{p.measured_busbw_GBps:,.1f}", f"{p.model_busbw_GBps:,.1f}"]
                          for p in f.points],
                         ["size", "measured us", "model us", "error %", "busbw GB/s", "model busbw"]))
        out += [f"note: {n}" for n in f.notes] + [""]
    return "\n".join(out)


def steps_text(results, compute_us: float | None = None) -> str:
    """One model step (``to_text``) or several fabrics' steps side by side, with what the step leaves out."""
    from .jobs.step import mesh_text, step_scope_note
    if len(results) == 1:
        return results[0].to_text(compute_us)
    first = results[0]
    kinds = list(dict.fromkeys(n for r in results for n in r.by_collective()))
    out = [f"{first.model} {first.phase}, mesh {mesh_text(first.mesh)}, {first.tokens:,} tokens per step",
           table([[r.fabric, r.chips, us(r.comm_s), us(r.comm_s / r.tokens),
                   f"{r.tokens_per_s_comm_bound:,.0f}" if r.comm_s else "-"]
                  + [us(r.by_collective().get(k, {}).get("attributed_s", 0.0)) for k in kinds]
                  + ["PARTIAL" if r.partial else ""] for r in results],
                 ["fabric", "chips", "comm/step", "comm/token", "tokens/s"] + kinds + [""])]
    out += [f"note: {r.fabric}: {n}" for r in results for n in r.notes]
    out.append(step_scope_note(compute_us))
    return "\n".join(out)


def domains_text(D: dict, show_all: bool = False) -> str:
    """Failure domains ({class: [Domain]}): count, a spec example, ids; and the symmetries each class keeps."""
    from ..topo.failures import preserved_symmetries
    rows = []
    for c, ds in D.items():
        ids = [d.id for d in ds]
        shown = ids if show_all or len(ids) <= 4 else ids[:3] + [f"... ({len(ids) - 3:,} more)"]
        rows.append([c, len(ds), f"{c}:{ds[0].id}" if ds else "", ", ".join(shown)])
    head = "\nsymmetries a failure keeps (sweep folds scenarios by them; `sweep --explain` shows which hold):"
    return "\n".join([table(rows, ["class", "domains", "spec example", "ids"]), head]
                     + [f"  {c}: {preserved_symmetries(c)}" for c in D])
