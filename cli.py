"""The ``fabricsim`` command line: parses, calls the library, formats.  No figure is computed here."""
from __future__ import annotations

import json
import math
import sys
import time
from pathlib import Path

import click

from . import fabrics as _fabrics
from .topo.errors import FabricError

FILE_SUFFIXES = (".toml", ".graphml", ".json")


# --------------------------------------------------------------------------- helpers
def _progress(msg: str) -> None:
    click.echo(f"fabricsim: {msg}", err=True)


def _parse_sets(sets: tuple[str, ...]) -> dict[str, str]:
    out = {}
    for item in sets:
        key, eq, val = item.partition("=")
        if not eq or not key.strip():
            raise click.BadParameter(f"{item!r} is not key=value (e.g. --set racks=8)", param_hint="--set")
        out[key.strip()] = val.strip()
    return out


def load_fabric(spec: str, sets: tuple[str, ...] = ()):
    """A catalog name or a file (.toml, .graphml, .json) -> graph; bad input -> exit 2 with one line."""
    params = _parse_sets(sets)
    try:
        if spec.endswith(FILE_SUFFIXES) or Path(spec).is_file():
            from .fabrics.userfile import load_fabric as load_file
            return load_file(spec, **params)
        return _fabrics.build(spec, **params)
    except FabricError as exc:
        raise click.BadParameter(str(exc), param_hint="FABRIC") from None
    except ValueError as exc:
        hint = "--set" if params and spec in _fabrics.FABRICS else "FABRIC"
        raise click.BadParameter(str(exc), param_hint=hint) from None


def _emit_json(obj) -> None:
    click.echo(json.dumps(obj, indent=2, sort_keys=False, default=_json_default))


def _json_default(o):
    if hasattr(o, "as_dict"):
        return o.as_dict()
    if hasattr(o, "item"):
        return o.item()
    if isinstance(o, (set, frozenset, tuple)):
        return list(o)
    raise TypeError(f"not JSON serialisable: {type(o).__name__}")


def _fmt(v) -> str:
    if isinstance(v, float):
        if math.isinf(v):
            return "inf"
        return f"{v:,.6g}" if abs(v) < 1e6 else f"{v:,.0f}"
    if isinstance(v, int):
        return f"{v:,}"
    return str(v)


def _table(rows: list[list], header: list[str]) -> str:
    cells = [[str(h) for h in header]] + [[_fmt(c) if not isinstance(c, str) else c for c in r] for r in rows]
    widths = [max(len(r[i]) for r in cells) for i in range(len(header))]
    lines = ["  ".join(c.ljust(w) for c, w in zip(r, widths)).rstrip() for r in cells]
    lines.insert(1, "  ".join("-" * w for w in widths).rstrip())
    return "\n".join(lines)


class _Group(click.Group):
    """Library errors become one-line messages, never tracebacks."""

    def invoke(self, ctx):
        try:
            return super().invoke(ctx)
        except FabricError as exc:
            raise click.ClickException(str(exc)) from None
        except MemoryError:
            raise click.ClickException("out of memory; try the link-load bound (--bound-only)") from None


# --------------------------------------------------------------------------- commands
@click.group(cls=_Group, context_settings={"help_option_names": ["-h", "--help"], "max_content_width": 100})
@click.version_option(package_name="fabricsim")
def main():
    """fabricsim: audit AI-accelerator fabrics, price collectives on them, ask what failures cost.

    \b
    Start here:
      fabricsim list                          the catalog of fabrics
      fabricsim audit jalapeno-rack           port, lane and bandwidth budgets
      fabricsim audit jalapeno-pod --set racks=8 --json
      fabricsim export nvl72 -o nvl72.graphml a graph you can edit and load back

    FABRIC is a catalog name or a file: a .toml naming a generic builder and its
    parameters, or a .graphml / node-link .json graph that follows the graph contract.
    Figures are per direction; GB/s = 1e9 bytes/s, Gb/s = 1e9 bits/s.
    """


@main.command("list")
@click.option("--json", "as_json", is_flag=True, help="Print a JSON array instead of a table.")
def list_cmd(as_json):
    """List the catalog: name, chips, switches, description, source."""
    from .topo.contract import CHIP, KIND
    rows = []
    for name in sorted(_fabrics.FABRICS):
        fab = _fabrics.FABRICS[name]
        G = _fabrics.build(name)
        n_chips = sum(1 for _, d in G.nodes(data=True) if d.get(KIND) == CHIP)
        rows.append({"name": name, "chips": n_chips, "switches": G.number_of_nodes() - n_chips,
                     "description": fab.description, "source": fab.source,
                     "inferred": str(G.graph.get("inferred", "")),
                     "params": {k: p.default for k, p in _fabrics.param_specs(name).items()}})
    if as_json:
        _emit_json(rows)
        return
    short = [d if len(d) <= 90 else d[:89] + "…" for d in (r["description"] for r in rows)]
    click.echo(_table([[r["name"], r["chips"], r["switches"], d] for r, d in zip(rows, short)],
                      ["fabric", "chips", "switches", "description"]))
    click.echo("\nSources: " + "; ".join(f"{r['name']}: {r['source']}" for r in rows))
    click.echo("Inferred (I): " + "; ".join(f"{r['name']}: {r['inferred']}" for r in rows if r["inferred"]))
    click.echo("Parameters: fabricsim audit FABRIC --set key=value (see `fabricsim params FABRIC`).")


@main.command("params")
@click.argument("fabric")
def params_cmd(fabric):
    """Show a catalog fabric's parameters, their defaults and valid values."""
    from .fabrics.registry import _describe
    try:
        specs = _fabrics.param_specs(fabric)
    except ValueError as exc:
        raise click.BadParameter(str(exc), param_hint="FABRIC") from None
    doc = (_fabrics.FABRICS[fabric].builder.__doc__ or "").strip().splitlines()[0]
    click.echo(f"{fabric}: {doc}")
    click.echo(_table([[k, str(p.default), _describe(p.annotation)] for k, p in specs.items()],
                      ["parameter", "default", "accepts"]))


_set_option = click.option("--set", "sets", multiple=True, metavar="KEY=VALUE",
                           help="Override a fabric parameter (repeatable), e.g. --set racks=8.")


@main.command("audit")
@click.argument("fabric")
@_set_option
@click.option("--json", "as_json", is_flag=True, help="Print the audit as JSON (schema in README).")
@click.option("--all", "show_all", is_flag=True, help="List every finding, not just failures and notes.")
@click.option("--no-hops", is_flag=True, help="Skip hop distances (faster on the biggest fabrics).")
@click.option("--no-bisection", is_flag=True, help="Skip the bisection max-flow.")
def audit_cmd(fabric, sets, as_json, show_all, no_hops, no_bisection):
    """Check a fabric's wiring against its devices' port, lane and bandwidth budgets.

    Reports totals (chips, switch ASICs, differential pairs on copper, optical links
    and ports, tier capacities) per fabric and per rack, each switch's down against up
    bandwidth, lane-rate mismatches, hop diameter and mean between chips, and the
    bisection bandwidth per direction with the halves it cuts.  Exits 1 when a budget
    check fails.
    """
    from .topo.audit import audit
    G = load_fabric(fabric, sets)
    big = G.number_of_nodes() > 4000
    if big:
        _progress(f"auditing {G.number_of_nodes():,} nodes and {G.number_of_edges():,} links ...")
    t0 = time.perf_counter()
    a = audit(G, hops=not no_hops, bisect=not no_bisection)
    if big:
        _progress(f"audit took {time.perf_counter() - t0:.1f} s")
    if as_json:
        _emit_json(a.as_dict())
    else:
        click.echo(_format_audit(a, show_all))
    if not a.ok:
        sys.exit(1)


def _format_audit(a, show_all: bool) -> str:
    out = [f"{a.fabric}  " + " ".join(f"{k}={v}" for k, v in a.params.items()),
           f"chips {a.chips:,}   switch ASICs {a.switches:,}   hop diameter {a.diameter_hops}   "
           f"mean hops {a.mean_hops:.3f}",
           f"bisection {a.bisection_GBps:,.1f} GB/s per direction  (halves: {a.bisection_halves})"]
    if a.relay_pairs:
        out.append(f"{a.relay_pairs:,} chip pairs are reachable only by relaying through a chip "
                   f"(rail-only / PXN); hop counts include the relay")
    if a.unreachable_pairs:
        out.append(f"PARTIAL: {a.unreachable_pairs:,} chip pairs have no path at all")
    if a.inferred:
        out.append(f"inferred (I, not published): {a.inferred}")
    out.append("")
    per_rack = {k[:-len("_per_rack")] for k in a.totals if k.endswith("_per_rack")}
    rows = [[k, v, a.totals.get(f"{k}_per_rack", "")] for k, v in a.totals.items()
            if not k.endswith("_per_rack")]
    out.append(_table(rows, ["total", "fabric", "per rack" if per_rack else ""]))
    out.append("")
    failed = [f for f in a.findings if not f.ok]
    notes: dict[tuple, list] = {}
    for f in a.findings:
        if f.ok and f.note:
            notes.setdefault((f.check, f.note), []).append(f.where)
    if notes:
        out.append("Notes:")
        for (check, note), where in notes.items():
            more = f" and {len(where) - 1:,} more" if len(where) > 1 else ""
            out.append(f"  {check}: {note}  ({where[0]}{more})")
    if show_all:
        out.append(_table([[f.where, f.check, f.used, f.available, f.unit, "ok" if f.ok else "FAIL", f.note]
                           for f in a.findings], ["where", "check", "used", "available", "unit", "", "note"]))
    if failed:
        out.append(f"FAILED: {len(failed):,} of {len(a.findings):,} budget checks")
        groups: dict[str, list] = {}
        for f in failed:
            groups.setdefault(f.check, []).append(f)
        for check, fs in groups.items():
            f = fs[0]
            out.append(f"  {check}: {len(fs):,} x, e.g. {f.where}: {_fmt(f.used)} of {_fmt(f.available)} "
                       f"{f.unit}" + (f" ({f.note})" if f.note else ""))
    else:
        out.append(f"OK: all {len(a.findings):,} budget checks pass")
    return "\n".join(out)


@main.command("export")
@click.argument("fabric")
@_set_option
@click.option("-o", "--output", "output", required=True, type=click.Path(dir_okay=False),
              help="Output file: .graphml or .json (node-link).")
def export_cmd(fabric, sets, output):
    """Write a fabric's graph to GraphML or node-link JSON (loads back with FABRIC=FILE)."""
    if not output.endswith((".graphml", ".json")):
        raise click.BadParameter(f"{output!r}: use a .graphml or .json file name", param_hint="--output")
    G = load_fabric(fabric, sets)
    from .fabrics.userfile import export_fabric
    export_fabric(G, output)
    click.echo(f"wrote {output}: {G.number_of_nodes():,} nodes, {G.number_of_edges():,} links", err=True)


@main.command("draw")
@click.argument("fabric")
@_set_option
@click.option("-o", "--output", "output", required=True, type=click.Path(dir_okay=False),
              help="Output picture: .png or .svg (.pdf works too).")
@click.option("--expand", default=None, help="Which rack / group / slice to draw in full: an index, '1,2' or "
              "'all' (default: the first; big fabrics show the rest collapsed).")
@click.option("--dpi", type=click.IntRange(40, 600), default=110, show_default=True, help="PNG resolution.")
def draw_cmd(fabric, sets, output, expand, dpi):
    """Draw a fabric: tiers as layers, NVL72 as planes, a torus slice, Boardfly groups.

    Large fabrics are drawn at a level that stays readable: one rack (or group, or torus
    slice) expanded and the others collapsed.  The legend gives tiers and link media.
    """
    if not output.lower().endswith((".png", ".svg", ".pdf")):
        raise click.BadParameter(f"{output!r}: use a .png, .svg or .pdf file name", param_hint="--output")
    G = load_fabric(fabric, sets)
    from .topo.draw import draw_fabric
    try:
        draw_fabric(G, output, expand=expand, dpi=dpi)
    except ValueError as exc:
        raise click.BadParameter(str(exc), param_hint="--expand") from None
    click.echo(f"wrote {output}", err=True)


# --------------------------------------------------------------------------- pricing
_UNITS = {"b": 1, "kb": 10**3, "mb": 10**6, "gb": 10**9, "tb": 10**12,
          "kib": 2**10, "mib": 2**20, "gib": 2**30, "tib": 2**40}


def parse_size(text: str) -> float:
    """``64MiB`` -> 67108864.0; B, KiB, MiB, GiB, TiB, KB, MB, GB, TB; a bare number is bytes."""
    import re
    m = re.fullmatch(r"\s*([0-9]*\.?[0-9]+(?:[eE][+-]?[0-9]+)?)\s*([A-Za-z]*)\s*", text)
    unit = m[2].lower() if m else ""
    if not m or (unit and unit not in _UNITS):
        raise click.BadParameter(f"{text!r} is not a size; use a number with B, KiB, MiB, GiB, KB, MB or GB "
                                 f"(e.g. 64MiB)", param_hint="--size")
    value = float(m[1]) * _UNITS.get(unit, 1)
    if value <= 0:
        raise click.BadParameter(f"{text!r}: the size must be positive", param_hint="--size")
    return value


def _price_options(fn):
    opts = [
        click.option("--size", "size", required=True, help="S as nccl-tests defines it: per-rank buffer for "
                     "all-reduce, whole buffer for the others. 64MiB, 1GiB, 512KB ..."),
        click.option("--group-size", type=int, help="Chips per group; all groups run at once "
                     "(default: one group of every chip)."),
        click.option("--count", type=click.IntRange(min=1), help="With --group-size: run only this many groups "
                     "(the size then need not divide the chips), e.g. one 64-chip group on every fabric."),
        click.option("--placement", default="packed", show_default=True,
                     help="With --group-size: packed | spread | random[:SEED]."),
        click.option("--mesh", help="A parallelism mesh over chip ranks, TP innermost, e.g. tp=8,ep=32,dp=8."),
        click.option("--over", help="With --mesh: the dimension whose groups communicate (tp, ep, dp ...)."),
        click.option("--groups", "groups_file", type=click.Path(), help="JSON file: a list of groups, each a "
                     "list of chip ranks or node ids."),
        click.option("--algorithm", default="auto", show_default=True,
                     help="ring, direct, halving-doubling, hierarchical, torus-rings, nvls (all-reduce); "
                     "direct, pairwise, hierarchical (all-to-all); auto picks the cheapest."),
        click.option("--split", type=click.Choice(["equal", "capacity"]), default="equal", show_default=True,
                     help="ECMP split over next hops: equal, or weighted by surviving capacity."),
        click.option("--tiers", type=click.Choice(["rule", "any"]), default="rule", show_default=True,
                     help="rule: the fabric's tier rules (Jalapeño: same rack local, other racks global); "
                     "any: every shortest path."),
        click.option("--efficiency", type=float, default=None, help="Calibration: fraction of line rate the "
                     "links deliver (0-1]. Default 1."),
        click.option("--step-latency-us", type=float, default=None, help="Per-step overhead in microseconds "
                     "(default: the fabric's, else 1 us)."),
        click.option("--calibration", type=click.Path(), help="TOML file with efficiency and/or "
                     "step_latency_us (measured nccl-tests fits)."),
        click.option("--bound-only", is_flag=True, help="Price by the link-load bound only (fast, no fairness)."),
        click.option("--per-flow", is_flag=True, help="Route and solve every flow even where symmetry (torus "
                     "translations, interchangeable chips or positions) lets the phase be solved as classes "
                     "(exact either way; a slower cross-check)."),
    ]
    for o in reversed(opts):
        fn = o(fn)
    return fn


def _calibration(efficiency, step_latency_us, calibration):
    eff, step = efficiency, step_latency_us
    if calibration:
        import tomllib
        try:
            data = tomllib.loads(Path(calibration).read_text())
        except OSError as exc:
            raise click.BadParameter(f"{calibration}: {exc.strerror}", param_hint="--calibration") from None
        except tomllib.TOMLDecodeError as exc:
            raise click.BadParameter(f"{calibration}: {exc}", param_hint="--calibration") from None
        unknown = set(data) - {"efficiency", "step_latency_us"}
        if unknown:
            raise click.BadParameter(f"{calibration}: unknown key(s) {', '.join(sorted(unknown))}; valid: "
                                     f"efficiency, step_latency_us", param_hint="--calibration")
        eff = data.get("efficiency", eff) if eff is None else eff
        step = data.get("step_latency_us", step) if step is None else step
    if eff is not None and not 0 < eff <= 1:
        raise click.BadParameter(f"efficiency {eff} must be in (0, 1]", param_hint="--efficiency")
    if step is not None and step < 0:
        raise click.BadParameter(f"step latency {step} us must be >= 0", param_hint="--step-latency-us")
    return (1.0 if eff is None else float(eff)), (None if step is None else float(step) * 1000.0)


def _groups_for(G, group_size, placement, mesh, over, groups_file, count=None):
    from . import collectives as C
    from .topo.errors import BadInput
    chosen = [x for x in (group_size, mesh, groups_file) if x]
    if len(chosen) > 1:
        raise click.UsageError("give one of --group-size, --mesh or --groups")
    try:
        if mesh:
            if not over:
                raise click.UsageError("--mesh needs --over DIM (which dimension's groups communicate)")
            return C.by_mesh(G, C.parse_mesh(mesh), over)
        if groups_file:
            return C.from_file(G, groups_file)
        size = group_size or len(C.placement.chip_ranks(G))
        return C.by_size(G, size, placement, count=count)
    except BadInput as exc:
        raise click.BadParameter(str(exc), param_hint="placement") from None


def _price(G, collective, opts, groups=None):
    from . import collectives as C
    from .topo.errors import BadInput
    eff, step_ns = _calibration(opts["efficiency"], opts["step_latency_us"], opts["calibration"])
    size = parse_size(opts["size"])
    if groups is None:
        groups = _groups_for(G, opts["group_size"], opts["placement"], opts["mesh"], opts["over"],
                             opts["groups_file"], opts["count"])
    try:
        return C.price(G, collective, groups=groups, size_bytes=size, algorithm=opts["algorithm"],
                       split=opts["split"], tiers=opts["tiers"], efficiency=eff, step_overhead_ns=step_ns,
                       bound_only=opts["bound_only"], symmetry=not opts["per_flow"])
    except BadInput as exc:
        raise click.BadParameter(str(exc), param_hint="options") from None


def _collective_arg(fn):
    from .collectives import COLLECTIVES
    return click.argument("collective", type=click.Choice(COLLECTIVES))(fn)


def _us(s) -> str:
    return "n/a" if s is None or (isinstance(s, float) and math.isnan(s)) else f"{s * 1e6:,.2f} us"


def _format_report(r) -> str:
    out = [f"{r.collective} on {r.fabric}: {r.groups:,} group(s) of {r.group_size}, S = {_fmt_bytes(r.size_bytes)}, "
           f"algorithm {r.algorithm} ({r.mode})",
           f"time {_us(r.time_s)} = bandwidth {_us(r.bandwidth_time_s)} + latency {_us(r.latency_s)}   "
           f"(link-load bound {_us(r.bound_s)})",
           f"algbw {r.algbw_GBps:,.1f} GB/s   busbw {r.busbw_GBps:,.1f} GB/s"]
    for note in r.notes:
        out.append(f"note: {note}")
    if r.phases:
        out.append("")
        out.append(_table([[p.name, p.repeat, p.flows, _fmt_bytes(p.bytes_per_flow), _us(p.step_bandwidth_s),
                            _us(p.step_latency_s), p.events, _us(p.time_s)] for p in r.phases],
                          ["phase", "steps", "flows/step", "bytes/flow", "bw/step", "lat/step", "events",
                           "time"]))
    if r.bottlenecks:
        out.append("")
        out.append("Busiest links (utilization over the bandwidth time):")
        out.append(_table([[b["link"], b["tier"], f"{b['utilization']:.1%}", f"{b['capacity_GBps']:,.1f}"]
                           for b in r.bottlenecks[:5]], ["link", "tier", "util", "GB/s"]))
    if r.unreachable_pairs.get("count"):
        out.append(f"PARTIAL: {r.unreachable_pairs['count']:,} pairs have no route, e.g. "
                   + "; ".join(r.unreachable_pairs["examples"]))
    if r.broken_groups.get("count"):
        out.append(f"PARTIAL: {r.broken_groups['count']:,} groups lost a chip, e.g. {r.broken_groups['examples'][:2]}")
    return "\n".join(out)


def _fmt_bytes(b: float) -> str:
    for unit, k in (("GiB", 2**30), ("MiB", 2**20), ("KiB", 2**10)):
        if b >= k:
            return f"{b / k:,.4g} {unit}"
    return f"{b:,.0f} B"


@main.command("price")
@_collective_arg
@click.option("--fabric", "fabric", required=True, help="A catalog name or a fabric file.")
@_set_option
@_price_options
@click.option("--json", "as_json", is_flag=True, help="Print the cost report as JSON (schema in README).")
@click.option("--plot", "plot", type=click.Path(dir_okay=False),
              help="Also write a chart (.png/.svg): time per phase and link utilization by tier.")
def price_cmd(collective, fabric, sets, as_json, plot, **opts):
    """Price a collective for every group of a placement at once.

    \b
    Examples:
      fabricsim price all-reduce --fabric jalapeno-rack --group-size 8 --size 64MiB
      fabricsim price all-to-all --fabric jalapeno-pod --group-size 256 --size 1GiB
      fabricsim price all-to-all --fabric jalapeno-pod --mesh tp=8,ep=256 --over ep --size 256MiB
      fabricsim price all-reduce --fabric nvl72 --size 1GiB --algorithm nvls --json

    Time = bandwidth (flow-level max-min with contention between all groups, event by
    event) + latency (per step: slowest route's link and switch latency + overhead).
    """
    G = load_fabric(fabric, sets)
    t0 = time.perf_counter()
    r = _price(G, collective, opts)
    if time.perf_counter() - t0 > 2:
        _progress(f"priced in {time.perf_counter() - t0:.1f} s")
    if plot:
        from .collectives.plots import plot_price
        plot_price(r, plot, G=G)
        _progress(f"wrote {plot}")
    if as_json:
        _emit_json(r.as_dict())
    else:
        click.echo(_format_report(r))


@main.command("compare")
@_collective_arg
@click.option("--fabrics", "fabric_list", required=True,
              help="Comma-separated catalog names or files, e.g. jalapeno-rack,nvl72,torus; 'all': the catalog.")
@_price_options
@click.option("--json", "as_json", is_flag=True, help="Print a JSON array of cost reports.")
@click.option("--plot", "plot", type=click.Path(dir_okay=False),
              help="Also write a chart (.png/.svg) of time and busbw per fabric.")
def compare_cmd(collective, fabric_list, as_json, plot, **opts):
    """Price the same collective on several fabrics, one table.

    The same group size, size and algorithm choice apply on every fabric (auto picks
    per fabric).  A group size that does not divide a fabric's chips is an error for
    that fabric.

    \b
    Example:
      fabricsim compare all-reduce --fabrics jalapeno-rack,nvl72,torus --group-size 64 --size 256MiB
    """
    names = [f.strip() for f in fabric_list.split(",") if f.strip()]
    if names == ["all"]:
        names = sorted(_fabrics.FABRICS)
    if not names:
        raise click.BadParameter("no fabrics given", param_hint="--fabrics")
    reports = []
    for name in names:
        _progress(f"pricing on {name} ...")
        G = load_fabric(name)
        reports.append(_price(G, collective, opts))
    if plot:
        from .collectives.plots import plot_compare
        plot_compare(reports, plot)
        _progress(f"wrote {plot}")
    if as_json:
        _emit_json([r.as_dict() for r in reports])
        return
    click.echo(_table([[r.fabric, r.algorithm, r.groups, _us(r.time_s), _us(r.bandwidth_time_s),
                        _us(r.latency_s), f"{r.algbw_GBps:,.1f}", f"{r.busbw_GBps:,.1f}",
                        "PARTIAL" if r.partial else ""] for r in reports],
                      ["fabric", "algorithm", "groups", "time", "bandwidth", "latency", "algbw GB/s",
                       "busbw GB/s", ""]))


# --------------------------------------------------------------------------- failures
@main.command("domains")
@click.argument("fabric")
@_set_option
@click.option("--class", "classes", multiple=True, help="Only this class (repeatable), e.g. --class rail-switch.")
@click.option("--all", "show_all", is_flag=True, help="List every domain id, not just a few per class.")
@click.option("--json", "as_json", is_flag=True, help="Print {class: [domain ...]} as JSON.")
def domains_cmd(fabric, sets, classes, show_all, as_json):
    """List what can fail together: the failure domains of a fabric and their spec spelling.

    \b
    Spec grammar (for --fail and sweep --class):
      node:ID  link:A--B  lanes:A--B=K  chip:ID  switch:ID  ROLE-switch:ID
      tray:r03/t05  switch-tray:r03/st6  rack:3  cube:5  board:17  group:3  plane:4  rail:2
      ocs:12  harness:7
    """
    from .topo.failures import domains
    from .topo.errors import BadInput
    G = load_fabric(fabric, sets)
    try:
        D = domains(G, classes or None)
    except BadInput as exc:
        raise click.BadParameter(str(exc), param_hint="--class") from None
    if as_json:
        _emit_json({c: [d.as_dict() for d in ds] for c, ds in D.items()})
        return
    rows = []
    for c, ds in D.items():
        ids = [d.id for d in ds]
        shown = ids if show_all or len(ids) <= 4 else ids[:3] + [f"... ({len(ids) - 3:,} more)"]
        rows.append([c, len(ds), f"{c}:{ds[0].id}" if ds else "", ", ".join(shown)])
    click.echo(_table(rows, ["class", "domains", "spec example", "ids"]))


_fail_option = click.option("--fail", "fails", multiple=True, metavar="SPEC",
                            help="A failure (repeatable): node:ID, link:A--B, lanes:A--B=K, tray:ID, rail:2 ... "
                            "(see `fabricsim domains FABRIC`).")


@main.command("whatif")
@_collective_arg
@click.option("--fabric", "fabric", required=True, help="A catalog name or a fabric file.")
@_set_option
@_fail_option
@_price_options
@click.option("--json", "as_json", is_flag=True, help="Print baseline, degraded and what changed as JSON.")
def whatif_cmd(collective, fabric, sets, fails, as_json, **opts):
    """Price a collective on the intact fabric and with failures applied, side by side.

    Groups are placed on the intact fabric; a group that loses a chip is reported
    broken.  Traffic reroutes around the failures (--split equal or capacity over the
    surviving next hops); rail-only fabrics relay through the rack where a rail is lost.

    \b
    Examples:
      fabricsim whatif all-reduce --fabric jalapeno-rack --group-size 8 --size 64MiB --fail local-switch:r00/lsw0
      fabricsim whatif all-to-all --fabric jalapeno-pod --set leaf=static --fail rail-switch:rail3/sw5 \\
          --group-size 2048 --size 1GiB --algorithm direct
    """
    from .collectives.whatif import whatif
    from .topo.errors import BadInput
    if not fails:
        raise click.UsageError("give at least one --fail SPEC (see `fabricsim domains FABRIC`)")
    G = load_fabric(fabric, sets)
    groups = _groups_for(G, opts["group_size"], opts["placement"], opts["mesh"], opts["over"], opts["groups_file"],
                         opts["count"])
    eff, step_ns = _calibration(opts["efficiency"], opts["step_latency_us"], opts["calibration"])
    try:
        w = whatif(G, list(fails), collective, groups=groups, size_bytes=parse_size(opts["size"]),
                   algorithm=opts["algorithm"], split=opts["split"], tiers=opts["tiers"], efficiency=eff,
                   step_overhead_ns=step_ns, bound_only=opts["bound_only"], symmetry=not opts["per_flow"])
    except BadInput as exc:
        raise click.BadParameter(str(exc), param_hint="--fail") from None
    if as_json:
        _emit_json(w.as_dict())
    else:
        click.echo(_format_whatif(w))


def _format_whatif(w) -> str:
    b, d = w.baseline, w.degraded
    out = ["failed: " + "; ".join(f"{f['spec']} ({_removed(f)})" for f in w.failed),
           _table([["time", _us(b.time_s), _us(d.time_s)],
                   ["bandwidth", _us(b.bandwidth_time_s), _us(d.bandwidth_time_s)],
                   ["latency", _us(b.latency_s), _us(d.latency_s)],
                   ["busbw GB/s", f"{b.busbw_GBps:,.1f}", f"{d.busbw_GBps:,.1f}"],
                   ["algorithm", b.algorithm, d.algorithm]], ["", "baseline", "degraded"]),
           f"slowdown x{w.slowdown:.6g} (bandwidth x{w.bandwidth_slowdown:.6g})" + ("   PARTIAL" if w.partial else "")]
    ac = w.affected_chips
    out.append(f"affected chips: {ac.get('count', 0):,} (lost {ac.get('lost', 0):,}, tier bandwidth changed "
               f"{ac.get('tier_bandwidth_changed', 0):,}, in slowed groups {ac.get('in_slowed_groups', 0):,})")
    for tier, hist in w.tier_bandwidth.get("by_tier", {}).items():
        before, after = hist.get("before", {}), hist.get("after", {})
        out.append(f"  {tier} GB/s per chip: before {_hist(before)}  after {_hist(after)}")
    if w.affected_groups:
        worst = w.affected_groups[:3]
        out.append(f"affected groups: {len(w.affected_groups):,}, e.g. " + "; ".join(
            f"group {g['group']}: " + ("broken" if g.get("broken") else f"x{g['slowdown']:.6g}") for g in worst))
    if w.new_bottlenecks:
        out.append("new bottlenecks: " + "; ".join(f"{x['link']} {x['utilization']:.0%}" for x in w.new_bottlenecks[:3]))
    out.extend(f"note: {n}" for n in w.notes)
    out.extend(f"degraded: {n}" for n in d.notes)
    return "\n".join(out)


def _removed(f: dict) -> str:
    parts = []
    for key, word in (("nodes_removed", "nodes"), ("edges_removed", "links"),
                      ("incident_edges_removed", "links with them"), ("lanes_removed", "lanes")):
        v = f.get(key)
        n = len(v) if isinstance(v, (list, tuple)) else v
        if n:
            parts.append(f"{n:,} {word}")
    return ", ".join(parts) or "nothing"


def _hist(h: dict) -> str:
    return ", ".join(f"{v:,} at {k}" for k, v in h.items()) or "-"


@main.command("sweep")
@_collective_arg
@click.option("--fabric", "fabric", required=True, help="A catalog name or a fabric file.")
@_set_option
@click.option("--class", "failure_class", required=True, help="Failure class to sweep: rail-switch, local-switch, "
              "tray, link, rail, rack ... (`fabricsim domains FABRIC` lists them).")
@click.option("--n", "n", type=click.IntRange(1, 3), default=1, show_default=True,
              help="Failures per scenario: 1 = every single failure (N-1), 2 = every pair (N-2).")
@click.option("--samples", type=click.IntRange(min=1), help="Price this many random scenarios instead of all.")
@click.option("--seed", type=int, default=0, show_default=True, help="Seed for --samples.")
@click.option("--workers", type=click.IntRange(min=1), default=1, show_default=True,
              help="Local worker processes (ignored with --scheduler).")
@click.option("--scheduler", metavar="tcp://HOST:PORT", help="Run the scenarios on an existing Dask distributed "
              "scheduler (pip install 'fabricsim[dask]'); each worker builds the fabric once.")
@click.option("--resume", "results_file", type=click.Path(dir_okay=False), help="Append each scenario's result "
              "to this file as it arrives; rerun with the same file to skip what is already done.")
@_price_options
@click.option("--json", "as_json", is_flag=True, help="Print the ranked scenarios and summary as JSON.")
@click.option("--top", type=click.IntRange(min=1), default=10, show_default=True, help="Scenarios shown in the table.")
@click.option("--plot", "plot", type=click.Path(dir_okay=False), help="Write sorted slowdowns and their "
              "distribution to a PNG or SVG.")
def sweep_cmd(collective, fabric, sets, failure_class, n, samples, seed, workers, scheduler, results_file, as_json,
              top, plot, **opts):
    """Price every failure of a class (or pairs, or random samples), ranked worst first.

    \b
    Example:
      fabricsim sweep all-to-all --fabric jalapeno-pod --class rail-switch --group-size 2048 \\
          --size 1GiB --algorithm direct --workers 2
    """
    from .collectives.dask_runner import sweep_runner
    from .collectives.whatif import sweep
    from .topo.errors import BadInput
    G = load_fabric(fabric, sets)   # checks the fabric and --set before any work is shipped
    groups = None
    if opts["mesh"] or opts["groups_file"] or opts["count"]:
        groups = _groups_for(G, opts["group_size"], opts["placement"], opts["mesh"], opts["over"],
                             opts["groups_file"], opts["count"])
    eff, step_ns = _calibration(opts["efficiency"], opts["step_latency_us"], opts["calibration"])

    def progress(done, total, result):
        if done == 1 or done == total or done % max(1, total // 20) == 0:
            _progress(f"{done:,}/{total:,} scenarios")

    try:
        runner = sweep_runner(workers, scheduler=scheduler, results_file=results_file)
    except BadInput as exc:
        raise click.BadParameter(str(exc), param_hint="--scheduler" if scheduler else "--resume") from None
    if scheduler:
        _progress(f"connected to {scheduler}")
    try:
        s = sweep(fabric, _parse_sets(sets), failure_class, n=n, samples=samples, seed=seed, collective=collective,
                  size_bytes=parse_size(opts["size"]), group_size=None if groups else opts["group_size"],
                  placement=opts["placement"],
                  groups=groups, runner=runner, progress=progress, algorithm=opts["algorithm"],
                  split=opts["split"], tiers=opts["tiers"], efficiency=eff, step_overhead_ns=step_ns,
                  bound_only=opts["bound_only"], symmetry=not opts["per_flow"])
    except BadInput as exc:
        raise click.BadParameter(str(exc), param_hint="options") from None
    finally:
        getattr(runner, "close", lambda: None)()
    if plot:
        from .collectives.plots import plot_sweep
        plot_sweep(s, plot)
        _progress(f"wrote {plot}")
    if as_json:
        _emit_json(s.as_dict())
        return
    sm = s.summary
    click.echo(f"{s.collective} on {s.fabric}, {sm['count']:,} scenarios of {s.n} x {s.failure_class}, "
               f"algorithm {s.algorithm}; baseline {_us(s.baseline.time_s)}")
    click.echo(f"slowdown: min x{_x(sm.get('min'))}  median x{_x(sm.get('median'))}  p90 x{_x(sm.get('p90'))}  "
               f"max x{_x(sm.get('max'))}  ({sm.get('distinct', 0)} distinct; {sm.get('partial', 0)} partial)")
    click.echo(_table([["; ".join(sc["failed"]), f"x{_x(sc['slowdown'])}", _us(sc.get("time_s")),
                        "PARTIAL" if sc.get("partial") else ""] for sc in s.scenarios[:top]],
                      ["failed", "slowdown", "time", ""]))
    for note in s.notes:
        click.echo(f"note: {note}")


def _x(v) -> str:
    return "n/a" if v is None or (isinstance(v, float) and math.isnan(v)) else f"{v:.6g}"


if __name__ == "__main__":  # pragma: no cover
    main()
