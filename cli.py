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
    lines.insert(1, "  ".join("-" * w for w in widths))
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
                     "params": {k: p.default for k, p in _fabrics.param_specs(name).items()}})
    if as_json:
        _emit_json(rows)
        return
    click.echo(_table([[r["name"], r["chips"], r["switches"], r["description"]] for r in rows],
                      ["fabric", "chips", "switches", "description"]))
    click.echo("\nSources: " + "; ".join(f"{r['name']}: {r['source']}" for r in rows))
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


if __name__ == "__main__":  # pragma: no cover
    main()
