"""The ``fabricsim`` command line: parses, calls the library, formats.  No figure is computed here."""
from __future__ import annotations

import dataclasses
import json
import math
import sys
import time
from pathlib import Path

import click

from . import fabrics as _fabrics
from .topo.errors import FabricError
from .topo.text import fmt_bytes as _fmt_bytes
from .topo.text import table as _table, us as _us, x as _x

FILE_SUFFIXES = (".toml", ".graphml", ".json")
PLOT_SUFFIXES = (".png", ".svg", ".pdf")


# --------------------------------------------------------------------------- option types
class _Number(click.ParamType):
    """A finite float in [lo, hi] (``lo`` exclusive when ``open_lo``); nan, inf and 1e400 are refused."""

    name = "NUMBER"

    def __init__(self, lo: float, hi: float, *, open_lo: bool = False, unit: str = ""):
        self.lo, self.hi, self.open_lo, self.unit = lo, hi, open_lo, unit

    def convert(self, value, param, ctx):
        if isinstance(value, float):
            return value
        try:
            v = float(value)
        except (TypeError, ValueError):
            v = math.nan
        low_ok = v > self.lo if self.open_lo else v >= self.lo
        if not (math.isfinite(v) and low_ok and v <= self.hi):
            rng = f"{'(' if self.open_lo else '['}{self.lo:g}, {self.hi:g}]"
            self.fail(f"{value!r} is not a finite number in {rng}{self.unit}", param, ctx)
        return v


def _positive_finite(hi: float = 1e300, unit: str = "") -> _Number:
    return _Number(0.0, hi, open_lo=True, unit=unit)


class _OutputPath(click.ParamType):
    """An output file name with one of ``suffixes`` (case-insensitive); the message lists them."""

    name = "FILE"

    def __init__(self, suffixes: tuple[str, ...]):
        self.suffixes = suffixes

    def convert(self, value, param, ctx):
        if not str(value).lower().endswith(self.suffixes) or not Path(value).stem:
            self.fail(f"{str(value)[:120]!r}: use a file name ending in {', '.join(self.suffixes)}", param, ctx)
        try:
            parent_ok = Path(value).parent.is_dir()
        except (OSError, ValueError):
            parent_ok = False
        if not parent_ok:
            self.fail(f"{str(value)[:120]!r}: directory {str(Path(value).parent)[:120]!r} does not exist", param, ctx)
        return value


def _plot_path() -> _OutputPath:
    return _OutputPath(PLOT_SUFFIXES)


def _write_error(exc: OSError, path) -> click.ClickException:
    """An OSError writing ``path`` as one line: the file and the system's reason."""
    shown = str(path) if len(str(path)) <= 120 else f"{str(path)[:60]}... ({len(str(path)):,} characters)"
    return click.ClickException(f"cannot write {shown}: {exc.strerror or exc}")


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


def load_fabric(spec: str, sets: tuple[str, ...] = (), hint: str = "FABRIC"):
    """A catalog name or a file (.toml, .graphml, .json) -> graph; bad input -> exit 2 with one line.

    ``hint`` names the argument or option the spec came from in an error (FABRIC, --fabric ...).
    """
    params = _parse_sets(sets)
    if spec not in _fabrics.FABRICS and _is_dir(spec):
        raise click.BadParameter(f"{spec!r} is a directory; give a fabric file (.toml, .graphml, .json) "
                                 f"or a catalog name", param_hint=hint)
    try:
        if spec.endswith(FILE_SUFFIXES) or _is_file(spec):
            from .fabrics.userfile import load_fabric as load_file
            return load_file(spec, **params)
        return _fabrics.build(spec, **params)
    except ValueError as exc:   # FabricError included: a catalog builder's refusal names the key it is about
        msg = str(exc)
        about_set = spec in _fabrics.FABRICS and any(msg.startswith(f"{k}=") for k in params)
        raise click.BadParameter(msg, param_hint="--set" if about_set else hint) from None


def _is_dir(spec: str) -> bool:
    try:
        return Path(spec).is_dir()
    except (OSError, ValueError):
        return False


def _is_file(spec: str) -> bool:
    try:
        return Path(spec).is_file()
    except (OSError, ValueError):   # a name too long for the file system, or with a NUL: not a file
        return False


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


class _OneLineError(click.UsageError):
    """A bad value for an option or argument: the help hint and ``Error: ...``, without click's usage block.

    The usage block stays for errors where the usage itself is wrong (a missing argument, an unknown option,
    options that do not go together): those remain click's own exceptions.
    """

    def show(self, file=None) -> None:
        file = file if file is not None else sys.stderr
        # the hint first and the error last, as click prints its own (scripts read the last line)
        if self.ctx is not None and self.ctx.help_option_names:
            flag = max(self.ctx.help_option_names, key=len)   # --help, as click's own hint spells it
            click.echo(f"Try '{self.ctx.command_path} {flag}' for help.", file=file)
        click.echo(f"Error: {self.format_message()}", file=file)


def _quiet_broken_pipe() -> None:
    """stdout was closed by the reader (``| head``): end quietly, as a shell tool does (exit 141 = SIGPIPE)."""
    import os
    try:   # later flushes (at exit too) go nowhere instead of raising again
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    except (OSError, ValueError, AttributeError):   # no real file descriptor (e.g. a test runner's buffer)
        pass
    sys.exit(141)


class _Group(click.Group):
    """Library errors become one-line messages, never tracebacks; a closed stdout ends quietly."""

    def parse_args(self, ctx, args):
        try:
            return super().parse_args(ctx, args)
        except BrokenPipeError:   # `fabricsim --help | head -1`
            _quiet_broken_pipe()

    def invoke(self, ctx):
        import numpy as np   # every command loads it anyway
        try:
            # A figure that overflows or turns NaN is refused where the result is checked,
            # in one line; numpy's RuntimeWarnings on the way there would only be noise above it.
            with np.errstate(over="ignore", invalid="ignore", divide="ignore"):
                return super().invoke(ctx)
        except click.MissingParameter:   # the usage is what is wrong: click's usage block helps
            raise
        except click.BadParameter as exc:   # a bad value: one line and the hint
            raise _OneLineError(exc.format_message(), ctx=exc.ctx) from None
        except BrokenPipeError:
            _quiet_broken_pipe()
        except FabricError as exc:
            raise click.ClickException(str(exc)) from None
        except MemoryError:
            raise click.ClickException("out of memory; try the link-load bound (--bound-only)") from None
        except OSError as exc:   # a file the commands did not catch themselves: still one line
            name = str(exc.filename or "")
            shown = name if len(name) <= 120 else f"{name[:60]}... ({len(name):,} characters)"
            raise click.ClickException(f"{shown + ': ' if shown else ''}{exc.strerror or exc}") from None


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
    """List the catalog: name, chips, switches, description, source.

    Chip and switch counts come from building each fabric once; they are cached (keyed by the
    package's fabric and topology sources) so later lists read them without building.
    """
    from .fabrics.catalog_cache import catalog_rows
    rows = catalog_rows(progress=None if as_json else _progress)   # --json: stdout only, nothing on stderr
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
    if fabric not in _fabrics.FABRICS and (fabric.endswith(FILE_SUFFIXES) or _is_file(fabric) or _is_dir(fabric)):
        raise click.BadParameter(f"{fabric!r}: params takes a catalog name only (a fabric file's parameters "
                                 f"are in the file); choose one of: {', '.join(sorted(_fabrics.FABRICS))}",
                                 param_hint="FABRIC")
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
@click.option("--json", "as_json", is_flag=True, help="Print the audit as JSON (schema in docs/json.md).")
@click.option("--all", "show_all", is_flag=True, help="List every finding, not just failures and notes.")
@click.option("--no-hops", is_flag=True, help="Skip hop distances (faster on the biggest fabrics).")
@click.option("--no-bisection", is_flag=True, help="Skip the bisection max-flow.")
@click.option("--parts", "parts_file", type=click.Path(dir_okay=False), default=None,
              help="TOML of part prices and power overriding the built-in ones (schema: topo/parts.toml).")
def audit_cmd(fabric, sets, as_json, show_all, no_hops, no_bisection, parts_file):
    """Check a fabric's wiring against its devices' port, lane and bandwidth budgets.

    Reports totals (chips, switch ASICs, differential pairs on copper, optical links
    and ports, tier capacities) per fabric and per rack, each switch's down against up
    bandwidth, lane-rate mismatches, hop diameter and mean between chips, the
    bisection bandwidth per direction with the halves it cuts, and the bill of
    materials (parts counted from the graph, capex and power).  Exits 1 when a budget
    check fails.
    """
    from .topo import audit
    from .topo.parts import load_parts
    parts = load_parts(parts_file)   # a bad file fails here, in one line, before the fabric is built
    G = load_fabric(fabric, sets)
    big = G.number_of_nodes() > 4000
    if big:
        _progress(f"auditing {G.number_of_nodes():,} nodes and {G.number_of_edges():,} links ...")
    t0 = time.perf_counter()
    a = audit(G, hops=not no_hops, bisect=not no_bisection, parts=parts)
    if big:
        _progress(f"audit took {time.perf_counter() - t0:.1f} s")
    if as_json:
        _emit_json(a.as_dict())
    else:
        click.echo(a.to_text(show_all))
    if not a.ok:
        sys.exit(1)


EXPORT_FORMATS = {"graphml": (".graphml",), "json": (".json",), "astra-sim": (".yml", ".yaml"), "simai": (".txt",),
                  "infragraph": (".json",)}


@main.command("export")
@click.argument("fabric")
@_set_option
@click.option("-o", "--output", "output", required=True, type=_OutputPath(sum(EXPORT_FORMATS.values(), ())),
              help="Output file: .graphml, .json (node-link, or InfraGraph with --format infragraph), .yml "
                   "(ASTRA-sim network config) or .txt (SimAI ns-3 topology).")
@click.option("--format", "fmt", type=click.Choice(list(EXPORT_FORMATS)), default=None,
              help="graphml | json | astra-sim | simai | infragraph (default: from the -o extension; .yml/.yaml "
                   "is astra-sim, .txt simai, .json node-link).")
def export_cmd(fabric, sets, output, fmt):
    """Write a fabric's graph (GraphML, node-link JSON) or an ASTRA-sim 2.x network config.

    GraphML and JSON load back with FABRIC=FILE.  ``--format astra-sim`` writes the
    analytical backend's network.yml (topology, npus_count, bandwidth GB/s, latency ns,
    one entry per dimension) and says on stderr and in the file what the mapping loses.
    ``--format simai`` writes SimAI's ns-3 topology text (header, switch ids, one
    ``src dst bandwidth latency error_rate`` line per link) and, since SimAI reads no
    comments, the losses and the graph node of every id to FILE.json beside it.
    ``--format infragraph`` writes an InfraGraph document (ASTRA-sim 3.0; needs
    ``pip install 'fabricsim[infragraph]'``) that ``fabricsim import infragraph`` reads back;
    what InfraGraph has no field for rides in its annotations, listed on stderr.
    """
    suffix = Path(output).suffix.lower()
    fmt = fmt or next(f for f, sfx in EXPORT_FORMATS.items() if suffix in sfx)
    if suffix not in EXPORT_FORMATS[fmt]:
        raise click.BadParameter(f"{output!r}: --format {fmt} writes {' or '.join(EXPORT_FORMATS[fmt])} files",
                                 param_hint="--output")
    G = load_fabric(fabric, sets)
    try:
        if fmt == "astra-sim":
            from .topo.errors import BadInput
            from .topo.export import write_astra
            try:
                net = write_astra(G, output)
            except BadInput as exc:
                raise click.ClickException(str(exc)) from None
            click.echo(f"wrote {output}: {' x '.join(f'{d.topology}({d.npus})' for d in net.dims)} = "
                       f"{net.npus:,} NPUs", err=True)
            for loss in net.losses:
                _progress(f"the ASTRA-sim mapping loses: {loss}")
            return
        if fmt == "simai":
            from .topo.errors import BadInput
            from .topo.export import write_simai
            try:
                topo = write_simai(G, output)
            except BadInput as exc:
                raise click.ClickException(str(exc)) from None
            click.echo(f"wrote {output}: {len(topo.gpus):,} GPUs ({topo.gpus_per_server} per server), "
                       f"{len(topo.nvswitches):,} NVSwitches, {len(topo.switches):,} switches, "
                       f"{len(topo.links):,} links; losses in {output}.json", err=True)
            for loss in topo.losses:
                _progress(f"the SimAI mapping loses: {loss}")
            return
        if fmt == "infragraph":
            from .topo.errors import BadInput
            from .topo.export import write_infragraph
            try:
                doc = write_infragraph(G, output)
            except BadInput as exc:
                raise click.ClickException(str(exc)) from None
            infra = doc.infrastructure
            click.echo(f"wrote {output}: {sum(i['count'] for i in infra['instances']):,} device instances, "
                       f"{G.number_of_edges():,} bundles in {len(infra['edges']):,} edge entries of "
                       f"{len(infra['links']):,} link classes (InfraGraph)", err=True)
            for note in doc.notes:
                _progress(f"InfraGraph carries only as annotations: {note}")
            return
        from .fabrics.userfile import export_fabric
        export_fabric(G, output)
    except OSError as exc:
        raise _write_error(exc, output) from None
    click.echo(f"wrote {output}: {G.number_of_nodes():,} nodes, {G.number_of_edges():,} links", err=True)


@main.group("import")
def import_grp():
    """Read a machine description (or, for chakra, a workload) written by another tool.

    \b
      fabricsim import nccl-topo topo.xml -o node.json      an NCCL_TOPO_DUMP_FILE dump
      fabricsim import nccl-topo topo.xml --nodes 4 -o cluster.json
      fabricsim import infragraph infra.json -o fabric.json   an InfraGraph document (ASTRA-sim 3.0)
      fabricsim import chakra traces/ -o jobs.toml          Chakra execution traces, for mix
    """


@import_grp.command("nccl-topo")
@click.argument("xml_file", metavar="FILE.xml", type=click.Path(dir_okay=False))
@click.option("--nodes", type=click.IntRange(1), default=1, show_default=True,
              help="Copies of the node, joined rail-optimized (GPU r of every node on rail r's leaf, spines).")
@click.option("--nic-gbps", type=_positive_finite(1e7, " Gb/s"), default=None,
              help="Per-direction NIC port rate, Gb/s (default: each <net>'s speed).")
@click.option("--spine-oversubscription", type=_positive_finite(1e6), default=1.0, show_default=True,
              help="Leaf down:up bandwidth with --nodes > 1 (1 = non-blocking).")
@click.option("-o", "--output", "output", required=True, type=_OutputPath((".json", ".graphml")),
              help="Fabric file to write: .json (node-link) or .graphml; every command takes it as FABRIC.")
def import_nccl_topo(xml_file, nodes, nic_gbps, spine_oversubscription, output):
    """Build a fabric from an NCCL topology dump (the XML NCCL writes with NCCL_TOPO_DUMP_FILE).

    GPUs become chips (NVLink generation from sm), NVSwitch targets switches, each GPU's
    nearest <net> its NIC port to its rail's leaf; PCIe and C2C are counted, not priced.
    A malformed dump exits 2 with one line naming the element.
    """
    from .fabrics.nccl_topo import read_nccl_topo
    from .topo.errors import BadInput
    try:
        G = read_nccl_topo(xml_file, nodes=nodes, nic_gbps=nic_gbps or 0.0,
                           spine_oversubscription=spine_oversubscription)
    except BadInput as exc:
        raise click.BadParameter(str(exc), param_hint="FILE.xml") from None
    _write_imported(G, output, "GPUs", f" ({G.graph['families']})")


def _write_imported(G, output, chips_word: str, detail: str = "") -> None:
    """Write an imported fabric as a fabric file and say what it holds (and what was inferred) on stderr."""
    from .fabrics.userfile import export_fabric
    try:
        export_fabric(G, output)
    except OSError as exc:
        raise _write_error(exc, output) from None
    chips = sum(1 for _, d in G.nodes(data=True) if d["kind"] == "chip")
    click.echo(f"wrote {output}: {chips:,} {chips_word}, {G.number_of_nodes() - chips:,} switches, "
               f"{G.number_of_edges():,} links{detail}", err=True)
    for what in ("inferred", "notes"):
        if G.graph.get(what):
            _progress(f"{what}: {G.graph[what]}")


@import_grp.command("infragraph")
@click.argument("ig_file", metavar="FILE", type=click.Path(dir_okay=False))
@click.option("-o", "--output", "output", required=True, type=_OutputPath((".json", ".graphml")),
              help="Fabric file to write: .json (node-link) or .graphml; every command takes it as FABRIC.")
def import_infragraph(ig_file, output):
    """Build a fabric from an InfraGraph document (.json, .yaml; needs fabricsim[infragraph]).

    xpu components become chips, switch components switches, nic and port components are
    joined through; a file written by ``export --format infragraph`` reads back into the same
    graph. A malformed file exits 2 with one line naming the element.
    """
    from .fabrics.infragraph_io import read_infragraph
    from .topo.errors import BadInput
    try:
        G = read_infragraph(ig_file)
    except BadInput as exc:
        raise click.BadParameter(str(exc), param_hint="FILE") from None
    _write_imported(G, output, "chips")


@import_grp.command("chakra")
@click.argument("trace_dir", metavar="DIR", type=click.Path(file_okay=False))
@click.option("-o", "--output", "output", required=True, type=_OutputPath((".toml",)),
              help="Mix file to write ([[job]] tables); price it with fabricsim mix FILE --fabric F.")
def import_chakra(trace_dir, output):
    """Turn Chakra execution traces (<prefix>.<rank>.et per rank) into a mix TOML (needs fabricsim[chakra]).

    Collective nodes become jobs on their process groups' ranks, compute nodes with a
    duration delays, dependencies ``after``. A malformed trace exits 2 with one line naming
    the file and the node.
    """
    from .collectives.jobs.chakra import jobs_toml, load_chakra
    from .topo.errors import BadInput
    try:
        w = load_chakra(trace_dir)
    except BadInput as exc:
        raise click.BadParameter(str(exc), param_hint="DIR") from None
    try:
        Path(output).write_text(f"# from the Chakra traces in {trace_dir}, written by fabricsim\n"
                                + "".join(f"# {n}\n" for n in w.notes) + "\n" + jobs_toml(w.jobs), encoding="utf-8")
    except OSError as exc:
        raise _write_error(exc, output) from None
    n_delay = sum(j.collective == "delay" for j in w.jobs)
    click.echo(f"wrote {output}: {len(w.jobs) - n_delay:,} collectives, {n_delay:,} delays, {w.ranks:,} ranks, "
               f"{len(w.groups):,} process groups", err=True)
    for note in w.notes:
        _progress(f"chakra: {note}")


@main.command("draw")
@click.argument("fabric")
@_set_option
@click.option("-o", "--output", "output", required=True, type=_plot_path(),
              help="Output picture: .png or .svg (.pdf works too).")
@click.option("--expand", default=None, help="Which rack / group / slice to draw in full: an index, '1,2' or "
              "'all' (default: the first; big fabrics show the rest collapsed).")
@click.option("--dpi", type=click.IntRange(40, 600), default=110, show_default=True, help="PNG resolution.")
def draw_cmd(fabric, sets, output, expand, dpi):
    """Draw a fabric: tiers as layers, NVL72 as planes, a torus slice, Boardfly groups.

    Large fabrics are drawn at a level that stays readable: one rack (or group, or torus
    slice) expanded and the others collapsed.  The legend gives tiers and link media.
    """
    G = load_fabric(fabric, sets)
    from .topo.draw import draw_fabric
    try:
        draw_fabric(G, output, expand=expand, dpi=dpi)
    except ValueError as exc:
        raise click.BadParameter(str(exc), param_hint="--expand") from None
    except OSError as exc:
        raise _write_error(exc, output) from None
    click.echo(f"wrote {output}", err=True)


# --------------------------------------------------------------------------- pricing
_UNITS = {"b": 1, "kb": 10**3, "mb": 10**6, "gb": 10**9, "tb": 10**12,
          "kib": 2**10, "mib": 2**20, "gib": 2**30, "tib": 2**40}


def parse_size(text: str) -> float:
    """``64MiB`` -> 67108864.0; B, KiB, MiB, GiB, TiB, KB, MB, GB, TB; a bare number is bytes.

    The prefix ignores case (``64mB`` = 64 MB) but the final letter does not: ``B`` is bytes
    and a lower-case ``b`` means bits (``64Gb`` = 64 gigabits, as the tool prints Gb/s), which
    a buffer size is not given in, so it is refused rather than read as bytes.
    """
    import re
    m = re.fullmatch(r"\s*(-?)([0-9]*\.?[0-9]+(?:[eE][+-]?[0-9]+)?)\s*([A-Za-z]*)\s*", text)
    if m and m[1]:
        raise click.BadParameter(f"{text!r}: the size must be positive (e.g. 64MiB)", param_hint="--size")
    number, unit = (m[2], m[3]) if m else ("", "")
    if unit.endswith("b"):
        raise click.BadParameter(f"{text!r}: a lower-case b is bits; --size takes bytes, spelled with B "
                                 f"(e.g. {number}{unit[:-1].upper().replace('I', 'i')}B)", param_hint="--size")
    if not m or (unit and unit.lower() not in _UNITS):
        raise click.BadParameter(f"{text!r} is not a size; use a number with B, KiB, MiB, GiB, TiB, KB, MB, GB "
                                 f"or TB (e.g. 64MiB)", param_hint="--size")
    value = float(number) * _UNITS.get(unit.lower(), 1)
    if not math.isfinite(value) or value < 1:
        raise click.BadParameter(f"{text!r}: the size must be a finite number of bytes >= 1 B", param_hint="--size")
    if value != math.floor(value):
        raise click.BadParameter(f"{text!r} is {value:g} bytes; a size is a whole number of bytes",
                                 param_hint="--size")
    return value


def _price_options(fn):
    opts = [
        click.option("--size", "size", required=True, help="S as nccl-tests defines it: per-rank buffer for "
                     "all-reduce, whole buffer for the others, in bytes: 64MiB, 1GiB, 512KB ... (B = bytes; "
                     "a lower-case b means bits and is refused)."),
        click.option("--group-size", type=int, help="Chips per group; all groups run at once "
                     "(default: one group of every chip)."),
        click.option("--count", type=click.IntRange(min=1), help="With --group-size: run only this many groups "
                     "(the size then need not divide the chips), e.g. one 64-chip group on every fabric."),
        click.option("--placement", default="auto", show_default=True,
                     help="With --group-size: packed | spread | random[:SEED] | slice (a torus: the most compact "
                     "boxes, e.g. Ironwood's 4x4x4 cubes; elsewhere whole trays/racks/boards) | auto (prices "
                     "packed and slice, keeps the cheaper, says which in a note)."),
        click.option("--mesh", help="A parallelism mesh over chip ranks, TP innermost, e.g. tp=8,ep=32,dp=8."),
        click.option("--over", help="With --mesh: the dimension whose groups communicate (tp, ep, dp ...)."),
        click.option("--groups", "groups_file", type=click.Path(), help="JSON file: a list of groups, each a "
                     "list of chip ranks or node ids."),
        click.option("--algorithm", default="auto", show_default=True,
                     help="ring, ring-linked, direct, halving-doubling, hierarchical, torus-rings, torus-concurrent, "
                     "nvls (all-reduce); "
                     "direct, pairwise, hierarchical (all-to-all); auto picks the cheapest."),
        click.option("--protocol", type=click.Choice(["auto", "ll", "ll128", "simple", "ideal"]), default="auto",
                     show_default=True, help="Step model: auto picks algorithm and protocol per size (NCCL-style, "
                     "the fabric family's constants); ideal = protocol effects off (raw line rate, closed forms)."),
        click.option("--explain", is_flag=True, help="Say which fast path priced each phase (symmetry "
                     "classes, per-flow ...) and why the others were refused."),
        click.option("--split", type=click.Choice(["equal", "capacity", "adaptive"]), default="equal",
                     show_default=True,
                     help="Routing split: ECMP equal over next hops, weighted by surviving capacity, or adaptive "
                          "(each flow spreads over all its equal-cost paths; multipath max-min fair rates, exact LP)."),
        click.option("--tiers", type=click.Choice(["rule", "any"]), default="rule", show_default=True,
                     help="rule: the fabric's tier rules (Jalapeño: same rack local, other racks global); "
                     "any: every shortest path."),
        click.option("--efficiency", type=_Number(1e-6, 1.0), default=None, help="Calibration: fraction of line "
                     "rate the links deliver (0-1], for every collective. Default: the fabric family's (ideal: 1)."),
        click.option("--step-latency-us", type=_Number(0.0, 1e9, unit=" us"), default=None, help="Per-step overhead in microseconds "
                     "(default: the fabric's, else 1 us)."),
        click.option("--calibration", type=click.Path(), help="TOML file of efficiency / step_latency_us, "
                     "flat or in [collective] / [collective.algorithm] sections (`fabricsim calibrate` writes one)."),
        click.option("--bound-only", is_flag=True, help="Price by the link-load bound only (fast, no fairness)."),
        click.option("--per-flow", is_flag=True, help="Route and solve every flow even where symmetry (torus "
                     "translations, interchangeable chips or positions) lets the phase be solved as classes "
                     "(exact either way; a slower cross-check)."),
    ]
    for o in reversed(opts):
        fn = o(fn)
    return fn


def _calibration(efficiency, step_latency_us, calibration):
    """(efficiency or None, step latency ns or None, Calibration or None) from the options."""
    from .collectives.cost.calibration import load_calibration
    from .topo.errors import BadInput
    eff, step, cal = efficiency, step_latency_us, None
    if calibration:
        try:
            cal = load_calibration(calibration)
        except BadInput as exc:
            raise click.BadParameter(str(exc), param_hint="--calibration") from None
    if eff is not None and not 0 < eff <= 1:
        raise click.BadParameter(f"efficiency {eff} must be in (0, 1]", param_hint="--efficiency")
    if step is not None and step < 0:
        raise click.BadParameter(f"step latency {step} us must be >= 0", param_hint="--step-latency-us")
    return (None if eff is None else float(eff)), (None if step is None else float(step) * 1000.0), cal


def _check_algorithm(collective: str, algorithm: str) -> None:
    """An --algorithm the collective does not have is refused before any work."""
    from .collectives import ALGORITHMS
    from .topo.errors import close_matches
    algos = ALGORITHMS.get(collective, {})
    if algorithm != "auto" and algorithm not in algos:
        raise click.BadParameter(f"unknown algorithm {algorithm!r} for {collective}"
                                 f"{close_matches(algorithm, algos)}; choose one of: auto, {', '.join(algos)}",
                                 param_hint="--algorithm")


def _price_hint(msg: str, opts, default: str = "options") -> str:
    """The option a pricing error is about: --protocol, --algorithm or --groups where the message tells."""
    if msg.startswith("protocol"):
        return "--protocol"
    if msg.startswith("--split"):
        return "--split"
    if opts.get("algorithm", "auto") != "auto" and opts["algorithm"] in msg:
        return "--algorithm"
    if opts.get("groups_file") and "groups" in msg:
        return "--groups"
    return default


def _options(opts, collective=None, size=True):
    """The one PriceOptions the price/compare/whatif/sweep options describe."""
    from .collectives import PriceOptions
    if collective is not None:
        _check_algorithm(collective, opts["algorithm"])
    eff, step_ns, cal = _calibration(opts["efficiency"], opts["step_latency_us"], opts["calibration"])
    return PriceOptions(size_bytes=parse_size(opts["size"]) if size else None, algorithm=opts["algorithm"],
                        protocol=opts["protocol"], calibration=cal, split=opts["split"], tiers=opts["tiers"],
                        efficiency=eff, step_overhead_ns=step_ns, bound_only=opts["bound_only"],
                        symmetry=not opts["per_flow"])


def _groups_for(G, group_size, placement, mesh, over, groups_file, count=None):
    from . import collectives as C
    from .topo.errors import BadInput
    chosen = [x for x in (group_size, mesh, groups_file) if x is not None]   # 0 and '' are given, not absent
    if len(chosen) > 1:
        raise click.UsageError("give one of --group-size, --mesh or --groups")
    if over is not None and mesh is None:
        raise click.UsageError("--over DIM needs --mesh (e.g. --mesh tp=8,ep=16 --over ep)")
    if mesh is not None:
        if not over:
            raise click.UsageError("--mesh needs --over DIM (which dimension's groups communicate)")
        try:
            return C.by_mesh(G, C.parse_mesh(mesh), over)
        except BadInput as exc:
            raise click.BadParameter(str(exc), param_hint="--over" if str(exc).startswith("--over")
                                     else "--mesh") from None
    if groups_file is not None:
        try:
            return C.from_file(G, groups_file)
        except BadInput as exc:
            raise click.BadParameter(str(exc), param_hint="--groups") from None
    try:
        C.parse_placement(placement)
    except BadInput as exc:
        raise click.BadParameter(str(exc), param_hint="--placement") from None
    size = len(C.placement.chip_ranks(G)) if group_size is None else group_size
    try:
        # auto is priced where the collective is known (_auto_place); here its sizes are checked as packed's
        return C.by_size(G, size, "packed" if placement == "auto" else placement, count=count)
    except BadInput as exc:
        raise click.BadParameter(str(exc), param_hint="--count" if str(exc).startswith("count ")
                                 else "--group-size") from None


def _price(G, collective, opts, groups=None):
    from . import collectives as C
    from .topo.errors import BadInput
    options = _options(opts, collective)
    auto = groups is None and _auto(opts)
    if groups is None:
        groups = _groups_for(G, opts["group_size"], opts["placement"], opts["mesh"], opts["over"],
                             opts["groups_file"], opts["count"])
    try:
        if auto:
            return _auto_place(G, collective, opts, options).result
        return C.price(G, collective, groups=groups, options=options)
    except BadInput as exc:
        raise click.BadParameter(str(exc), param_hint=_price_hint(str(exc), opts)) from None


def _auto(opts) -> bool:
    """--placement auto with --group-size (or none): groups from a mesh or a file are as given."""
    return (opts.get("placement") == "auto" and opts.get("mesh") is None and opts.get("groups_file") is None)


def _auto_place(G, collective, opts, options, traffic=None):
    """--placement auto: price packed and slice (where they differ), keep the cheaper; the report says which."""
    from . import collectives as C
    _groups_for(G, opts["group_size"], "packed", None, None, None, opts["count"])    # the usual size errors
    size = len(C.placement.chip_ranks(G)) if opts["group_size"] is None else opts["group_size"]
    choice = C.placement.auto_place(G, size, lambda g: C.price(G, collective, groups=g, traffic=traffic,
                                                                     options=options),
                                    count=opts["count"])
    r = choice.result
    if not choice.note:
        return choice
    return dataclasses.replace(choice, result=dataclasses.replace(r, notes=(*r.notes, choice.note)))


MAX_TIME_S = 1e15   # ~30 million years: past it (or inf/NaN) a priced time is an overflow, not a result (I)


def _finite(r):
    """A report whose time is inf, NaN or absurd is not a result: say so instead of printing ``time inf us``."""
    if not (math.isfinite(r.time_s) and r.time_s <= MAX_TIME_S):
        raise click.ClickException(
            f"{r.collective} on {r.fabric}: the priced time is {r.time_s:.3g} s, not a result; a link rate, "
            f"efficiency, latency or size in the fabric or options is too far out of range")
    return r


class _CollectiveChoice(click.Choice):
    """click.Choice over ``collectives.COLLECTIVES``, read when first needed: ``fabricsim --help`` and
    commands without a collective do not import the pricing packages (numpy, scipy) for it."""

    def __init__(self):
        super().__init__(())

    @property
    def choices(self):
        from .collectives import COLLECTIVES
        return tuple(COLLECTIVES)

    @choices.setter
    def choices(self, _value):   # click.Choice.__init__ assigns it; the collectives module owns the list
        pass


def _collective_arg(fn):
    return click.argument("collective", type=_CollectiveChoice())(fn)


def _format_method(m: dict, mode: str) -> str:
    rates = "link-load bound, not max-min rates" if mode == "link-load bound" else "exact max-min rates"
    out = ["", f"method: {m.get('path', '?')} ({m.get('flows', 0):,} flows per step, "
               f"{m.get('quotient_size', 0):,} classes solved; {rates})"]
    for p in m.get("phases", []):
        out.append(f"  {p['phase']}: {p['path']}" + (f", {p['quotient_size']:,} classes" if p["quotient_size"] else ""))
    for x in m.get("refused", []):
        out.append(f"  refused {x['method']}: {x['reason']}")
    return "\n".join(out)


@main.command("price")
@_collective_arg
@click.option("--fabric", "fabric", required=True, help="A catalog name or a fabric file.")
@_set_option
@_price_options
@click.option("--json", "as_json", is_flag=True, help="Print the cost report as JSON (schema in docs/json.md).")
@click.option("--plot", "plot", type=_plot_path(),
              help="Also write a chart (.png/.svg/.pdf): time per phase and link utilization by tier.")
@click.option("--traffic", "traffic_path", type=click.Path(), help="All-to-all-v: a byte matrix per group (CSV or "
              ".npy, row a = bytes rank a sends each rank), or a directory of one file per group; replaces --size.")
@click.option("--moe", "moe_spec", metavar="SPEC", help="All-to-all-v of a MoE layer's dispatch/combine, e.g. "
              "experts=256,top_k=8,tokens=1024,hidden=7168[,dtype=fp8|bf16|fp16|fp32][,shared=1]"
              "[,skew=uniform|balanced|zipf:A|FILE][,seed=S][,phase=dispatch|combine]"
              "[,placement=round-robin|contiguous][,dedup=rank|expert] (rank, the default: one copy per token "
              "and destination rank, as DeepEP; expert: one per token and expert); replaces --size.")
def price_cmd(collective, fabric, sets, as_json, plot, traffic_path=None, moe_spec=None, **opts):
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
    _options(opts, collective, size=opts["size"] is not None)   # the options are checked before the fabric is built
    G = load_fabric(fabric, sets, hint="--fabric")
    t0 = time.perf_counter()
    summary = None
    if traffic_path or moe_spec:
        r, summary = _price_traffic(G, collective, opts, traffic_path, moe_spec)
        r = _finite(r)
    elif opts["size"] is None:
        raise click.UsageError("Missing option '--size' (or --traffic FILE / --moe SPEC for an all-to-all-v).")
    else:
        r = _finite(_price(G, collective, opts))
    if time.perf_counter() - t0 > 2:
        _progress(f"priced in {time.perf_counter() - t0:.1f} s")
    if plot:
        from .collectives.plots import plot_price
        try:
            plot_price(r, plot, G=G)
        except OSError as exc:
            raise _write_error(exc, plot) from None
        _progress(f"wrote {plot}")
    if as_json:
        d = r.as_dict()
        if summary is not None:
            d["traffic"] = summary
        _emit_json(d)
    else:
        click.echo(r.to_text())
        if opts["explain"]:
            click.echo(_format_method(r.method, r.mode))
        if summary is not None:
            click.echo(f"traffic ({summary['source']}): {_fmt_bytes(summary['bytes_total'])} in all, "
                       f"{_fmt_bytes(summary['bytes_network'])} over the network, "
                       f"{_fmt_bytes(summary['bytes_local'])} local; imbalance {summary['imbalance']:.4g} "
                       f"(max / mean bytes received per rank)")


# `price` alone also takes --traffic / --moe instead of --size (the shared options keep it required)
for _p in price_cmd.params:
    if _p.name == "size":
        _p.required = False


def _price_traffic(G, collective, opts, traffic_path, moe_spec):
    """price all-to-all --traffic / --moe: the all-to-all-v and its traffic totals (JSON "traffic")."""
    import numpy as np

    from . import collectives as C
    from .collectives import traffic as TR
    from .topo.errors import BadInput
    if traffic_path and moe_spec:
        raise click.UsageError("give --traffic or --moe, not both")
    if opts["size"] is not None:
        raise click.UsageError(f"--{'traffic' if traffic_path else 'moe'} gives the bytes; leave out --size")
    if collective != "all-to-all":
        raise click.UsageError(f"--{'traffic' if traffic_path else 'moe'} is an all-to-all-v; "
                               f"{collective} takes --size")
    options = _options(opts, collective, size=False)
    groups = _groups_for(G, opts["group_size"], opts["placement"], opts["mesh"], opts["over"],
                         opts["groups_file"], opts["count"])
    n = len(groups[0])
    try:
        if traffic_path:
            T = TR.load_matrix(traffic_path, n, len(groups))
            summary = {"source": str(traffic_path), **TR.summarize(T if T.ndim == 3 else np.broadcast_to(
                T, (len(groups),) + T.shape))}
        else:
            t = TR.moe_traffic(TR.MoESpec.parse(moe_spec), n)
            T = t.matrix
            # every EP group routes its own tokens alike: totals over the groups
            summary = {"source": "moe", **TR.summarize(np.broadcast_to(T, (len(groups),) + T.shape)),
                       "groups": len(groups), "per_group": t.as_dict()}
            summary["imbalance"] = t.imbalance
        distinct, flows = TR.distinct_flow_sizes(T)
        if distinct > 64 and flows > 4096:
            _progress(f"traffic: {distinct:,} distinct flow sizes over {flows:,} flows per group; the solver "
                      f"retires them event by event (nothing is quantised), which can take minutes")
        if _auto(opts):    # every candidate's group i carries matrix i, as packed's would
            r = _auto_place(G, collective, opts, options, traffic=T).result
        else:
            r = C.price(G, collective, groups=groups, traffic=T, options=options)
    except BadInput as exc:
        raise click.BadParameter(str(exc), param_hint="--traffic" if traffic_path else "--moe") from None
    return r, summary


@main.command("compare")
@_collective_arg
@click.option("--fabrics", "fabric_list", required=True,
              help="Comma-separated catalog names or files, e.g. jalapeno-rack,nvl72,torus; 'all': the catalog.")
@click.option("--set", "sets", multiple=True, metavar="FABRIC:KEY=VALUE",
              help="Override a parameter of one of --fabrics (repeatable), e.g. --set torus:dims=8x8x8.")
@_price_options
@click.option("--json", "as_json", is_flag=True, help="Print a JSON array of cost reports.")
@click.option("--plot", "plot", type=_plot_path(),
              help="Also write a chart (.png/.svg/.pdf) of time and busbw per fabric.")
def compare_cmd(collective, fabric_list, as_json, plot, sets=(), **opts):
    """Price the same collective on several fabrics, one table.

    The same group size, size and algorithm choice apply on every fabric (auto picks
    per fabric).  Every fabric, option and placement is checked before anything is
    priced: a group size that does not divide some fabric's chips stops the run with
    an error naming that fabric (with --count N, N groups run on every fabric and the
    group size need not divide).

    \b
    Examples:
      fabricsim compare all-reduce --fabrics jalapeno-rack,nvl72,torus --group-size 8 --size 256MiB
      fabricsim compare all-reduce --fabrics jalapeno-rack,nvl72,torus --group-size 64 --count 1 --size 256MiB
      fabricsim compare all-reduce --fabrics nvl72,torus --set torus:dims=8x8x8 --group-size 64 --count 1 --size 256MiB
    """
    from .topo.contract import CHIP, KIND
    names = [f.strip() for f in fabric_list.split(",") if f.strip()]
    if names == ["all"]:
        names = sorted(_fabrics.FABRICS)
    if not names:
        raise click.BadParameter("no fabrics given", param_hint="--fabrics")
    per_fabric = _fabric_sets(sets, names)
    _options(opts, collective)
    for name in names:     # every name before any fabric is built
        if name not in _fabrics.FABRICS and not name.endswith(FILE_SUFFIXES) and not _is_file(name):
            load_fabric(name, hint="--fabrics")    # raises: unknown fabric, with the catalog
    jobs = []
    for name in names:     # then every fabric's groups before any is priced
        G = load_fabric(name, per_fabric.get(name, ()), hint="--set" if name in per_fabric else "--fabrics")
        jobs.append((name, G, _groups_for(G, opts["group_size"], opts["placement"], opts["mesh"], opts["over"],
                                          opts["groups_file"], opts["count"])))
    reports, labels, chips = [], [], []
    for name, G, groups in jobs:
        _progress(f"pricing on {name} ...")
        reports.append(_finite(_price(G, collective, opts, None if _auto(opts) else groups)))
        given = _parse_sets(per_fabric.get(name, ()))
        labels.append(reports[-1].fabric + (f"({','.join(f'{k}={v}' for k, v in given.items())})" if given else ""))
        chips.append(sum(1 for _, d in G.nodes(data=True) if d.get(KIND) == CHIP))
    if plot:
        from .collectives.plots import plot_compare
        try:
            plot_compare(reports, plot)
        except OSError as exc:
            raise _write_error(exc, plot) from None
        _progress(f"wrote {plot}")
    if as_json:   # each report, plus the fabric's chips and the --set overrides it was built with
        _emit_json([{**r.as_dict(), "chips": n, "set": _parse_sets(per_fabric.get(name, ()))}
                    for (name, _, _), r, n in zip(jobs, reports, chips)])
        return
    click.echo(_table([[label, n, r.algorithm, r.protocol, r.groups, _us(r.time_s), _us(r.bandwidth_time_s),
                        _us(r.latency_s), f"{r.algbw_GBps:,.1f}", f"{r.busbw_GBps:,.1f}",
                        "PARTIAL" if r.partial else ""] for label, n, r in zip(labels, chips, reports)],
                      ["fabric", "chips", "algorithm", "protocol", "groups", "time", "bandwidth", "latency",
                       "algbw GB/s", "busbw GB/s", ""]))


def _fabric_sets(sets: tuple[str, ...], names: list[str]) -> dict[str, tuple[str, ...]]:
    """compare's ``--set FABRIC:KEY=VALUE`` -> {fabric: ("KEY=VALUE", ...)}; FABRIC must be one of --fabrics."""
    out: dict[str, tuple[str, ...]] = {}
    for item in sets:
        left, eq, value = item.partition("=")
        fabric, colon, key = left.rpartition(":")   # a file name may hold ':'; a parameter name does not
        fabric, key = fabric.strip(), key.strip()
        if not eq or not colon or not fabric or not key:
            raise click.BadParameter(f"{item[:120]!r} is not FABRIC:KEY=VALUE (e.g. --set torus:dims=8x8x8)",
                                     param_hint="--set")
        if fabric not in names:
            raise click.BadParameter(f"{fabric[:120]!r} in {item[:120]!r} is not one of --fabrics; choose one "
                                     f"of: {', '.join(dict.fromkeys(names))}", param_hint="--set")
        out[fabric] = (*out.get(fabric, ()), f"{key}={value}")
    return out


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
    from .topo.failures import preserved_symmetries
    click.echo("\nsymmetries a failure keeps (sweep folds scenarios by them; `sweep --explain` shows which hold):")
    for c in D:
        click.echo(f"  {c}: {preserved_symmetries(c)}")


def _explain_option(help_text: str):
    """``--explain`` on a command, unless its price options already carry one (then it is read from there)."""
    def deco(fn):
        if any(getattr(p, "name", None) == "explain" for p in getattr(fn, "__click_params__", [])):
            return fn
        return click.option("--explain", "explain", is_flag=True, help=help_text)(fn)
    return deco


_fail_option = click.option("--fail", "fails", multiple=True, metavar="SPEC",
                            help="A failure (repeatable): node:ID, link:A--B, lanes:A--B=K, tray:ID, rail:2 ... "
                            "(see `fabricsim domains FABRIC`).")


def _recovery_options(fn):
    fn = click.option("--spares", type=click.IntRange(min=0), default=0, show_default=True,
                      help="With --recovery restart: hold the N highest-ranked chips out of the job, used first "
                      "on restart.")(fn)
    return click.option("--recovery", type=click.Choice(["reroute", "restart"]), default="reroute",
                        show_default=True, help="reroute: the job keeps its chips, traffic routes around the "
                        "failures; restart: the job is placed again on the surviving chips (and spares), "
                        "all-to-all groups shrink, other collectives lose whole groups.")(fn)


def _job_groups(G, opts, recovery, spares):
    """The job's groups: as _groups_for, or for a restart the placement rule's groups with spares held out."""
    from .collectives.whatif.scenario import job_groups
    from .topo.errors import BadInput
    if spares and recovery != "restart":
        raise click.BadParameter(f"--spares {spares} needs --recovery restart (reroute keeps the job on its chips)",
                                 param_hint="--spares")
    if recovery == "restart" and (opts["mesh"] is not None or opts["groups_file"] is not None
                                  or opts["over"] is not None):
        raise click.BadParameter("restart re-places the job by --group-size and --placement; a --mesh or --groups "
                                 "job cannot be re-placed (use --recovery reroute)", param_hint="--recovery")
    if not spares:
        return _groups_for(G, opts["group_size"], opts["placement"], opts["mesh"], opts["over"], opts["groups_file"],
                           opts["count"])
    _groups_for(G, 2, opts["placement"], None, None, None, 1)      # checks --placement alone
    try:
        from .collectives.placement import chip_ranks
        size = len(chip_ranks(G)) - spares if opts["group_size"] is None else opts["group_size"]
        return job_groups(G, size, opts["placement"], spares, opts["count"])
    except BadInput as exc:
        msg = str(exc)
        raise click.BadParameter(msg, param_hint="--spares" if msg.startswith("spares") else
                                 "--count" if msg.startswith("count") else "--group-size") from None


def _check_fails(fails) -> None:
    """``--fail node:a,node:b`` is two failures in one value: refuse it and say to repeat --fail."""
    import re
    from .topo.failures import FIXED_CLASSES
    for spec in fails:
        for prefix in re.findall(r",\s*([A-Za-z][\w-]*):", spec):
            if prefix in FIXED_CLASSES or prefix.endswith("-switch"):
                parts = ' '.join(f'--fail {p.strip()}' for p in spec.split(',') if p.strip())
                raise click.BadParameter(f"{spec!r} holds several failures; repeat --fail for each "
                                         f"({parts})", param_hint="--fail")


@main.command("whatif")
@_collective_arg
@click.option("--fabric", "fabric", required=True, help="A catalog name or a fabric file.")
@_set_option
@_fail_option
@_explain_option("Say which methods priced it and which verified symmetries of the fabric the failures keep "
                 "(refused ones with the reason).")
@_price_options
@_recovery_options
@click.option("--json", "as_json", is_flag=True, help="Print baseline, degraded and what changed as JSON.")
def whatif_cmd(collective, fabric, sets, fails, as_json, recovery="reroute", spares=0, **opts):
    """Price a collective on the intact fabric and with failures applied, side by side.

    Groups are placed on the intact fabric; a group that loses a chip is reported
    broken.  Traffic reroutes around the failures (--split equal, capacity or adaptive over the
    surviving next hops); rail-only fabrics relay through the rack where a rail is lost.
    --recovery restart instead places the job again on the surviving chips (and
    --spares), as a job restarted after a failure runs, and prices that.

    \b
    Examples:
      fabricsim whatif all-reduce --fabric jalapeno-rack --group-size 8 --size 64MiB --fail local-switch:r00/lsw0
      fabricsim whatif all-to-all --fabric jalapeno-pod --set leaf=static --fail rail-switch:rail3/sw5 \\
          --group-size 2048 --size 1GiB --algorithm direct
    """
    from .collectives.whatif import whatif
    from .topo.errors import BadInput
    explain = bool(opts.pop("explain", False))
    if not fails:
        raise click.UsageError("give at least one --fail SPEC (see `fabricsim domains FABRIC`)")
    _check_fails(fails)
    size_bytes = parse_size(opts["size"])
    options = _options(opts, collective, size=False)
    G = load_fabric(fabric, sets, hint="--fabric")
    chose = None
    if _auto(opts):    # auto: the placement cheapest on the intact fabric, then its failures (and restart)
        try:
            chose = _auto_place(G, collective, opts, dataclasses.replace(options, size_bytes=size_bytes))
        except BadInput as exc:
            raise click.BadParameter(str(exc), param_hint=_price_hint(str(exc), opts, "--group-size")) from None
        opts["placement"] = chose.placement
    groups = _job_groups(G, opts, recovery, spares)
    try:
        w = whatif(G, list(fails), collective, groups=groups, size_bytes=size_bytes,
                   explain=explain, recovery=recovery, spares=spares, placement=opts["placement"],
                   **options.price_kwargs())
    except BadInput as exc:
        msg = str(exc)
        raise click.BadParameter(msg, param_hint="--recovery" if msg.startswith("restart") else
                                 _price_hint(msg, opts, "--fail")) from None
    if chose is not None and chose.note:
        w = dataclasses.replace(w, notes=(*w.notes, chose.note))
    _finite(w.baseline)
    if as_json:
        _emit_json(w.as_dict())
    else:
        click.echo(w.to_text())
        if explain:
            from .collectives.whatif.text import whatif_method_text
            click.echo(whatif_method_text(w.method))


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
@click.option("--fold/--no-fold", "fold", default=True, show_default=True, help="Solve one scenario per orbit "
              "of the fabric's verified symmetries and give every scenario its orbit's result.")
@click.option("--budget-s", type=_Number(1e-3, 1e9, unit=" s"), default=None, help="Wall seconds the sweep may be "
              "estimated to take (time per representative so far x those left); over it, it stops and says so. "
              "Default: 600 for --n 2 or more, no bound for N-1.")
@_explain_option("Say which symmetry generators folded the scenarios (refused ones with the reason), the "
                 "orbits and the representatives solved.")
@_price_options
@_recovery_options
@click.option("--json", "as_json", is_flag=True, help="Print the ranked scenarios and summary as JSON.")
@click.option("--top", type=click.IntRange(min=1), default=10, show_default=True, help="Scenarios shown in the table.")
@click.option("--plot", "plot", type=_plot_path(), help="Write sorted slowdowns and their "
              "distribution to a PNG, SVG or PDF.")
def sweep_cmd(collective, fabric, sets, failure_class, n, samples, seed, workers, scheduler, results_file, as_json,
              top, plot, fold, budget_s=None, recovery="reroute", spares=0, **opts):
    """Price every failure of a class (or pairs, or random samples), ranked worst first.

    \b
    Example:
      fabricsim sweep all-to-all --fabric jalapeno-pod --class rail-switch --group-size 2048 \\
          --size 1GiB --algorithm direct --workers 2
    """
    from .collectives.whatif.dask_runner import sweep_runner
    from .collectives.whatif import sweep
    from .topo.errors import BadInput
    from .topo.failures import domains
    explain = bool(opts.pop("explain", False))
    size_bytes = parse_size(opts["size"])
    _check_algorithm(collective, opts["algorithm"])
    G = load_fabric(fabric, sets, hint="--fabric")   # checks the fabric and --set before any work is shipped
    try:
        k = len(domains(G, [failure_class])[failure_class])
    except BadInput as exc:
        raise click.BadParameter(str(exc), param_hint="--class") from None
    if samples is not None and samples >= math.comb(k, n):
        _progress(f"--samples {samples} >= the {math.comb(k, n):,} scenarios: all of them run")
    groups = None
    if spares and recovery != "restart":
        raise click.BadParameter(f"--spares {spares} needs --recovery restart (reroute keeps the job on its chips)",
                                 param_hint="--spares")
    if recovery == "restart" and (opts["mesh"] is not None or opts["groups_file"] is not None or opts["count"]
                                  or opts["over"] is not None):
        raise click.BadParameter("restart re-places the job by --group-size and --placement; a --mesh, --groups or "
                                 "--count job cannot be re-placed (use --recovery reroute)", param_hint="--recovery")
    if opts["mesh"] is not None or opts["groups_file"] is not None or opts["count"] or opts["over"] is not None:
        groups = _groups_for(G, opts["group_size"], opts["placement"], opts["mesh"], opts["over"],
                             opts["groups_file"], opts["count"])
    options = _options(opts, collective, size=False)
    if _auto(opts):        # auto: the placement cheapest on the intact fabric is swept
        try:
            chose = _auto_place(G, collective, opts, dataclasses.replace(options, size_bytes=size_bytes))
        except BadInput as exc:
            raise click.BadParameter(str(exc), param_hint=_price_hint(str(exc), opts, "--group-size")) from None
        if groups is None:
            opts["placement"] = chose.placement    # by name: the workers cut it and the orbit folds see it
        else:
            groups = chose.groups
        if chose.note:
            _progress(chose.note)

    from .collectives.whatif.text import SweepProgress
    progress = SweepProgress()
    try:
        runner = sweep_runner(workers, scheduler=scheduler, results_file=results_file)
    except BadInput as exc:
        raise click.BadParameter(str(exc), param_hint="--scheduler" if scheduler else "--resume") from None
    if scheduler:
        _progress(f"connected to {scheduler}")
    try:
        s = sweep(fabric, _parse_sets(sets), failure_class, n=n, samples=samples, seed=seed, collective=collective,
                  size_bytes=size_bytes, group_size=None if groups else opts["group_size"],
                  placement=opts["placement"],
                  groups=groups, runner=runner, progress=progress, fold=fold, recovery=recovery, spares=spares,
                  budget_s="auto" if budget_s is None else float(budget_s), **options.price_kwargs())
    except BadInput as exc:
        msg = str(exc)
        hint = ("--class" if msg.startswith(f"{failure_class!r}") or "failure class" in msg else
                "--spares" if msg.startswith("spares") else
                "--samples" if "recovery 'restart' is more than" in msg else
                "--samples" if "samples" in msg else
                "--group-size" if msg.startswith("group size") else _price_hint(msg, opts))
        raise click.BadParameter(msg, param_hint=hint) from None
    finally:
        progress.close()
        getattr(runner, "close", lambda: None)()
    if plot:
        from .collectives.plots import plot_sweep
        try:
            plot_sweep(s, plot)
        except OSError as exc:
            raise _write_error(exc, plot) from None
        _progress(f"wrote {plot}")
    if as_json:
        _emit_json(s.as_dict())
        return
    sm = s.summary
    click.echo(f"{s.collective} on {s.fabric}, {sm['count']:,} scenarios of {s.n} x {s.failure_class}, "
               f"algorithm {s.algorithm}; baseline {_us(s.baseline.time_s)}")
    click.echo(f"slowdown: min {_x(sm.get('min'))}  median {_x(sm.get('median'))}  p90 {_x(sm.get('p90'))}  "
               f"max {_x(sm.get('max'))}  ({sm.get('distinct', 0)} distinct; {sm.get('partial', 0)} partial"
               + (f"; {sm['unpriced']} with nothing priced" if sm.get("unpriced") else "") + ")")
    folded = bool(s.scenarios) and "orbit" in s.scenarios[0]
    restart = s.recovery.get("mode") == "restart"
    if restart:
        rs = sm["restart"]
        n_sp = s.recovery.get("spares", 0)
        click.echo(f"recovery: restart{f' with {n_sp} spare(s)' if n_sp else ''}: "
                   f"{rs['restarted']:,} restarted, {rs['shrunk']:,} shrank, {rs['used_spares']:,} used spares"
                   + (f", {rs['refused']:,} could not restart" if rs["refused"] else "")
                   + f"; per-byte slowdown max {_x(rs['per_byte_slowdown_max'])}")

    def _job(sc):
        r = sc.get("recovery", {})
        if not r.get("restarted"):
            return ["-", "-", "n/a"]
        return [f"{r['ranks_after']:,}/{r['ranks_before']:,}", f"{r['spares_used']}", _x(r["per_byte_slowdown"])]
    click.echo(_table([["; ".join(sc["failed"]), _x(sc['slowdown']), _us(sc.get("time_s"))]
                       + (_job(sc) if restart else [])
                       + ([f"{sc['orbit']:,}", f"{sc['orbit_size']:,}"] if folded else [])
                       + ["PARTIAL" if sc.get("partial") else ""] for sc in s.scenarios[:top]],
                      ["failed", "slowdown", "time"] + (["ranks", "spares used", "per byte"] if restart else [])
                      + (["orbit", "orbit size"] if folded else []) + [""]))
    for note in s.notes:
        click.echo(f"note: {note}")
    if explain:
        from .collectives.whatif.text import sweep_method_text
        click.echo(sweep_method_text(s.method))


def _collective_option(fn):
    return click.option("--collective", "collective", required=True, type=_CollectiveChoice(),
                        help="The collective every scenario prices.")(fn)


@main.command("atlas")
@click.argument("fabric")
@_collective_option
@_set_option
@click.option("--classes", "classes", metavar="A,B", help="Only these failure classes, comma-separated "
              "(default: every class `fabricsim domains FABRIC` lists).")
@click.option("--max-orbits", type=click.IntRange(min=1), default=512, show_default=True,
              help="A class with more orbits to solve is reported with the reason, not run.")
@click.option("--budget-s", type=_Number(1e-3, 1e9, unit=" s"), default=120.0, show_default=True,
              help="Wall seconds per class: a class estimated (or found) to take longer is stopped and reported.")
@click.option("--workers", type=click.IntRange(min=1), default=1, show_default=True,
              help="Local worker processes (ignored with --scheduler).")
@click.option("--scheduler", metavar="tcp://HOST:PORT", help="Run the scenarios on a Dask distributed scheduler.")
@click.option("--availability", "avail", is_flag=True, help="Also the year's expected degradation per class "
              "from failure rates (collectives/whatif/failure_rates.toml, or --rates).")
@click.option("--rates", "rates_file", type=click.Path(dir_okay=False), help="TOML of [classes.NAME] rate_per_year "
              "and repair_h over the default rates (implies --availability).")
@click.option("--samples", type=click.IntRange(min=2), help="With --availability: also a Monte Carlo over this "
              "many sampled years.")
@click.option("--seed", type=int, default=0, show_default=True, help="Seed of the Monte Carlo.")
@click.option("--n2-shared", is_flag=True, help="Also N-2 within shared domains: every pair of links on one OCS "
              "or harness, every pair of same-role switches in one rack (one row each).")
@_price_options
@click.option("--json", "as_json", is_flag=True, help="Print the atlas (and availability) as JSON.")
@click.option("--plot", "plot", type=_plot_path(), help="Write the slowdowns per class (a box each) to a PNG, "
              "SVG or PDF.")
def atlas_cmd(fabric, collective, sets, classes, max_orbits, budget_s, workers, scheduler, avail, rates_file,
              samples, seed, n2_shared, as_json, plot, **opts):
    """Every failure class of FABRIC, N-1: blast radius and slowdowns per class (and availability).

    \b
    Example:
      fabricsim atlas jalapeno-pod --collective all-to-all --group-size 2048 --size 1GiB
      fabricsim atlas jalapeno-pod --set racks=2 --collective all-to-all --size 1GiB --availability --samples 400
    """
    from .collectives.whatif.atlas import atlas, availability, load_rates, plot_atlas
    from .collectives.whatif.dask_runner import sweep_runner
    from .topo.errors import BadInput
    if opts.pop("explain", False):
        raise click.UsageError("atlas has no --explain; `fabricsim sweep --class C --explain` explains one class")
    size_bytes = parse_size(opts["size"])
    _check_algorithm(collective, opts["algorithm"])
    G = load_fabric(fabric, sets)
    wanted = None
    if classes is not None:
        wanted = [c.strip() for c in classes.split(",") if c.strip()]
        from .topo.failures import domains
        try:
            domains(G, wanted or [""])
        except BadInput as exc:
            raise click.BadParameter(str(exc), param_hint="--classes") from None
    if samples is not None and not (avail or rates_file):
        raise click.UsageError("--samples is the availability Monte Carlo: give it with --availability")
    rates = None
    if avail or rates_file:
        try:
            rates = load_rates(rates_file)
        except BadInput as exc:
            raise click.BadParameter(str(exc), param_hint="--rates") from None
    groups = None
    options = _options(opts, collective, size=False)
    if _auto(opts):    # auto: the placement cheapest on the intact fabric, swept by its name
        try:
            chose = _auto_place(G, collective, opts, dataclasses.replace(options, size_bytes=size_bytes))
        except BadInput as exc:
            raise click.BadParameter(str(exc), param_hint=_price_hint(str(exc), opts, "--group-size")) from None
        opts["placement"] = chose.placement
        if chose.note:
            _progress(chose.note)
    if opts["mesh"] is not None or opts["groups_file"] is not None or opts["count"] or opts["over"] is not None:
        groups = _groups_for(G, opts["group_size"], opts["placement"], opts["mesh"], opts["over"],
                             opts["groups_file"], opts["count"])
    try:
        runner = sweep_runner(workers, scheduler=scheduler)
    except BadInput as exc:
        raise click.BadParameter(str(exc), param_hint="--scheduler") from None
    try:
        a = atlas(fabric, _parse_sets(sets), collective=collective, size_bytes=size_bytes,
                  group_size=None if groups else opts["group_size"], placement=opts["placement"], groups=groups,
                  classes=wanted, runner=runner, max_orbits=max_orbits, budget_s=float(budget_s),
                  progress=lambda m: _progress(m), n2_shared=n2_shared, **options.price_kwargs())
    except BadInput as exc:
        msg = str(exc)
        raise click.BadParameter(msg, param_hint="--group-size" if msg.startswith("group size")
                                 else _price_hint(msg, opts)) from None
    finally:
        getattr(runner, "close", lambda: None)()
    av = availability(a, rates, samples=samples, seed=seed) if rates is not None else None
    if plot:
        try:
            plot_atlas(a, plot)
        except OSError as exc:
            raise _write_error(exc, plot) from None
        _progress(f"wrote {plot}")
    if as_json:
        _emit_json(a.as_dict() | ({"availability": av.as_dict()} if av is not None else {}))
        return
    click.echo(a.to_text())
    if av is not None:
        click.echo(av.to_text())


# --------------------------------------------------------------------------- calibrate (issue 13)
@main.command("calibrate")
@click.argument("logs", nargs=-1, required=True, type=click.Path(dir_okay=True))
@click.option("--fabric", "fabric", required=True, help="The fabric the logs were measured on.")
@_set_option
@click.option("--group-size", type=click.IntRange(min=1), help="Chips per group, every group at once "
              "(default: one group of the log's rank count).")
@click.option("--mesh", help="A parallelism mesh over chip ranks, e.g. tp=8,dp=9; with --over.")
@click.option("--over", help="With --mesh: the dimension whose groups ran the measured collective.")
@click.option("-o", "--output", "output", type=click.Path(dir_okay=False),
              help="Write the calibration TOML here (one section per fitted collective).")
@click.option("--json", "as_json", is_flag=True, help="Print fits and points as JSON (schema in docs/json.md).")
@click.option("--collective", type=click.Choice(["all-reduce", "all-gather", "reduce-scatter", "all-to-all"]),
              help="The collective of a log that names no *_perf binary (pre-2.13 logs, pasted tables); "
                   "default: inferred from its columns where they tell.")
def calibrate_cmd(logs, fabric, sets, group_size, mesh, over, output, as_json, collective):
    """Fit the cost model's constants to nccl-tests logs; write a calibration file.

    \b
    Examples:
      fabricsim calibrate ar.log --fabric nvl72 -o cal.toml
      fabricsim price all-reduce --fabric nvl72 --size 1GiB --calibration cal.toml

    Per collective (and per NCCL algorithm/protocol when the log names them with
    NCCL_ALGO / NCCL_PROTO) fits efficiency, base and step latency by least squares on the
    relative time error; prints size / measured / model / error %.
    """
    from .collectives.cost.calibrate import calibrate
    from .collectives.cost.nccl_tests import parse_log
    from .topo.errors import BadInput
    G = load_fabric(fabric, sets)
    groups = None
    if group_size or mesh:
        groups = _groups_for(G, group_size, "packed", mesh, over, None)
    try:
        runs = [r for path in logs for r in parse_log(path, collective=collective)]
    except BadInput as exc:
        raise click.BadParameter(str(exc), param_hint="LOG / --collective" if collective else "LOG") from None
    try:
        res = calibrate(G, runs, groups=groups)
    except BadInput as exc:
        raise click.BadParameter(str(exc), param_hint="LOG / --group-size") from None
    if output:
        try:
            Path(output).write_text(res.toml())
        except OSError as exc:
            raise click.BadParameter(f"{output}: {exc.strerror}", param_hint="-o") from None
    if as_json:
        _emit_json(res.as_dict())
    else:
        for f in res.fits:
            label = f.section + ("" if f.protocol is None or f.protocol in f.section else f" (protocol {f.protocol})")
            click.echo(f"[{label}] on {res.fabric}, {'/'.join(map(str, f.nranks))} ranks: "
                       + ", ".join(f"{k} = {v:.4g}" for k, v in f.params.items())
                       + f"; rms error {f.rms_error_pct:.2f}% (default model {f.default_rms_error_pct:.1f}%)")
            click.echo(_table([[_fmt_bytes(p.size_bytes), f"{p.measured_time_us:,.1f}", f"{p.model_time_us:,.1f}",
                                f"{p.error_pct:+.2f}", f"{p.measured_busbw_GBps:,.1f}", f"{p.model_busbw_GBps:,.1f}"]
                               for p in f.points],
                              ["size", "measured us", "model us", "error %", "busbw GB/s", "model busbw"]))
            for note in f.notes:
                click.echo(f"note: {note}")
            click.echo("")
    if output:
        _progress(f"wrote {output}")


# --------------------------------------------------------------------------- step (issue 15)
def _step_hint(msg: str, opts) -> str:
    """The step option a library error is about, told by what the message names."""
    for start, hint in (("compute", "--compute-us"), ("dispatch dtype", "--dispatch-dtype"),
                        ("combine dtype", "--combine-dtype"), ("moe skew", "--skew"), ("seed", "--seed"),
                        ("mesh", "--mesh"), ("tp=", "--mesh"), ("ep=", "--mesh")):
        if msg.startswith(start):
            return hint
    if opts["skew"] not in ("balanced", "uniform") and msg.startswith(f"{opts['skew']}:"):
        return "--skew"     # a per-expert weights file
    if "tokens do not split evenly" in msg:
        return "--batch/--mesh"
    return "options"


def _step_one(G, fabric_spec, model, mesh, opts, verbose):
    from .collectives.jobs.step import step
    from .collectives.placement import chip_ranks
    from .topo.errors import BadInput
    # progress on stderr where the work is long: several fabrics, or a big one
    progress = (lambda msg: _progress(f"{fabric_spec}: {msg}")) if verbose or len(chip_ranks(G)) > 512 else None
    try:
        return step(G, model, mesh=mesh, phase=opts["phase"], batch=opts["batch"], seq=opts["seq"],
                    compute_us=opts["compute_us"], dispatch_dtype=opts["dispatch_dtype"],
                    combine_dtype=opts["combine_dtype"], skew=opts["skew"], seed=opts["seed"], progress=progress)
    except BadInput as exc:
        raise click.BadParameter(f"{fabric_spec}: {exc}", param_hint=_step_hint(str(exc), opts)) from None


_DTYPES = ("fp8", "bf16", "fp16", "fp32")   # collectives.traffic.moe.DTYPE_BYTES (a test checks they agree)


@main.command("step")
@click.option("--model", "model", required=True, help="A catalog model (deepseek-r1, kimi-k2, gpt-oss-120b) or "
              "a model .toml file (format in docs/guide.md).")
@click.option("--fabric", "fabric", help="A catalog name or a fabric file.")
@_set_option
@click.option("--fabrics", "fabric_list", help="Comma-separated fabrics: the same step side by side.")
@click.option("--mesh", "mesh", required=True, help="tp=..,ep=..,dp=.. over chip ranks, TP innermost "
              "(a mesh smaller than the fabric leaves the last chips idle).")
@click.option("--phase", type=click.Choice(["decode", "prefill"]), default="decode", show_default=True,
              help="decode: one token per sequence; prefill: seq tokens per sequence.")
@click.option("--batch", type=int, default=1, show_default=True, help="Sequences in the step, over the whole mesh.")
@click.option("--seq", type=int, help="Prefill: prompt tokens per sequence.")
@click.option("--compute-us", "compute_us", type=_Number(0.0, 1e300, unit=" us"), help="Compute per layer in microseconds, added in series "
              "(default: compute not modelled).")
@click.option("--dispatch-dtype", type=click.Choice(_DTYPES), default="fp8", show_default=True,
              help="MoE dispatch elements: fp8, bf16, fp16, fp32.")
@click.option("--combine-dtype", type=click.Choice(_DTYPES), default="bf16", show_default=True,
              help="MoE combine elements: fp8, bf16, fp16, fp32.")
@click.option("--skew", default="balanced", show_default=True, help="Router: balanced (uniform expectation), "
              "uniform (one sample), zipf:A (hot experts) or a file of per-expert weights.")
@click.option("--seed", type=click.IntRange(min=0), default=0, show_default=True,
              help="Seed of a sampled router (uniform, zipf).")
@click.option("--plot", "plot", type=click.Path(dir_okay=False), help="Write a stacked bar per fabric "
              "(communication per token by collective) to a .png, .svg or .pdf.")
@click.option("--json", "as_json", is_flag=True, help="Print the step as JSON (an array with --fabrics).")
def step_cmd(model, fabric, sets, fabric_list, mesh, plot, as_json, **opts):
    """Price one model step's communication: per layer, TP all-reduces and MoE dispatch/combine.

    Every layer's collectives are placed on the mesh and priced together (independent
    ones share the links, dependent ones chain); layers run one after another.  Prints
    communication per step and per token, tokens/s bound by communication, and the
    time of each collective.

    \b
    Examples:
      fabricsim step --model deepseek-r1 --fabric jalapeno-rack --mesh ep=128 --batch 1024
      fabricsim step --model kimi-k2 --fabric jalapeno-pod --mesh tp=8,ep=256 --phase prefill --batch 8 --seq 4096
      fabricsim step --model deepseek-r1 --fabrics jalapeno-rack,nvl72,torus --mesh ep=64 --batch 512 --plot step.png
    """
    from .collectives.jobs.models import load_model
    from .collectives.jobs.step import PLOT_SUFFIXES, check_mesh, step_scope_note, step_tokens
    from .collectives.placement import chip_ranks, parse_mesh
    from .collectives.traffic.moe import parse_skew
    from .topo.errors import BadInput
    if bool(fabric) == bool(fabric_list):
        raise click.UsageError("give --fabric F or --fabrics a,b,c (one of them)")
    if plot and not plot.lower().endswith(PLOT_SUFFIXES):
        raise click.BadParameter(f"{plot!r}: use a .png, .svg or .pdf file name", param_hint="--plot")
    if plot and not Path(plot).resolve().parent.is_dir():
        raise click.BadParameter(f"{plot!r}: directory {str(Path(plot).resolve().parent)!r} does not exist",
                                 param_hint="--plot")
    try:
        m = load_model(model)
    except BadInput as exc:
        raise click.BadParameter(str(exc), param_hint="--model") from None
    try:
        mesh_d = check_mesh(parse_mesh(mesh), m)
    except BadInput as exc:
        raise click.BadParameter(str(exc), param_hint="--mesh") from None
    try:
        step_tokens(opts["phase"], opts["batch"], opts["seq"])
    except BadInput as exc:
        raise click.BadParameter(str(exc), param_hint="--batch/--seq") from None
    try:
        parse_skew(opts["skew"])
    except BadInput as exc:
        raise click.BadParameter(str(exc), param_hint="--skew") from None
    names = [fabric] if fabric else [f.strip() for f in fabric_list.split(",") if f.strip()]
    if not names:
        raise click.BadParameter("no fabrics given", param_hint="--fabrics")
    if sets and len(names) > 1:
        raise click.UsageError("--set applies to one --fabric, not to --fabrics")
    graphs = []
    for name in names:     # every fabric is built and the mesh checked against it before any is priced
        G = load_fabric(name, sets, hint="--fabric" if fabric else "--fabrics")
        chips, need = len(chip_ranks(G)), math.prod(mesh_d.values())
        if need > chips:
            raise click.BadParameter(f"mesh {mesh} needs {need:,} chips but {name!r} has {chips:,}",
                                     param_hint="--mesh")
        graphs.append(G)
    results = []
    for name, G in zip(names, graphs):
        t0 = time.perf_counter()
        results.append(_step_one(G, name, m, mesh_d, opts, len(names) > 1))
        if time.perf_counter() - t0 > 2:
            _progress(f"{name}: priced in {time.perf_counter() - t0:.1f} s")
    if plot:
        from .collectives.jobs.step import plot_step
        plot_step(results, plot, per_token=True)
        _progress(f"wrote {plot}")
    if as_json:
        _emit_json(results[0].as_dict() if fabric else [r.as_dict() for r in results])
        return
    if len(results) == 1:
        click.echo(results[0].to_text(opts["compute_us"]))
        return
    from .collectives.jobs.step import mesh_text
    kinds = list(dict.fromkeys(n for r in results for n in r.by_collective()))
    click.echo(f"{m.name} {opts['phase']}, mesh {mesh_text(mesh_d)}, {results[0].tokens:,} tokens per step")
    click.echo(_table([[r.fabric, r.chips, _us(r.comm_s), _us(r.comm_s / r.tokens),
                        f"{r.tokens_per_s_comm_bound:,.0f}" if r.comm_s else "-"]
                       + [_us(r.by_collective().get(k, {}).get("attributed_s", 0.0)) for k in kinds]
                       + ["PARTIAL" if r.partial else ""] for r in results],
                      ["fabric", "chips", "comm/step", "comm/token", "tokens/s"] + kinds + [""]))
    for r in results:
        for n in r.notes:
            click.echo(f"note: {r.fabric}: {n}")
    click.echo(step_scope_note(opts["compute_us"]))


# --------------------------------------------------------------------------- serve (issue 25)
@main.command("serve")
@click.option("--model", "model", required=True, help="A catalog model (deepseek-r1, kimi-k2, gpt-oss-120b).")
@click.option("--fabric", "fabric", help="A catalog name or a fabric file.")
@_set_option
@click.option("--fabrics", "fabric_list", help="Comma-separated fabrics: the same sweep on each.")
@click.option("--isl", type=int, default=8192, show_default=True, help="Prompt tokens per request.")
@click.option("--osl", type=int, default=1024, show_default=True, help="Output tokens per request.")
@click.option("--mesh", "mesh", default="search", show_default=True,
              help="tp=..,ep=..,dp=.. over chip ranks, or 'search' (TP x EP searched per concurrency).")
@click.option("--concurrency", type=click.IntRange(min=1), help="One concurrency (users); default: sweep 1, 2, 4, ... up to the "
              "KV-cache limit.")
@click.option("--max-concurrency", "max_concurrency", type=click.IntRange(min=1),
              help="Highest concurrency of the sweep (default: the KV-cache limit).")
@click.option("--menu", default="search", show_default=True, help="search (every TP x EP mesh, concurrencies "
              "1, 2, 4, ...) or inferencex (the decode meshes and concurrencies InferenceX published for the model "
              "and chip; collectives/serve/inferencex.toml).")
@click.option("--mtp", type=int, default=0, show_default=True, help="Draft tokens per decode step (MTP).")
@click.option("--library", default="auto", show_default=True,
              help="Communication library: auto, nccl, trtllm, deepep-ll.")
@click.option("--overlap", default="none", show_default=True, help="none or two-microbatch.")
@click.option("--disaggregate", "disaggregate", metavar="prefill=P,decode=D", help="Prefill on the first P chips, "
              "decode on the next D, each prompt's KV cache moved over the fabric (collectives/serve/disagg.py).")
@click.option("--fail", "fail", multiple=True, metavar="SPEC", help="Re-price every point with this failure "
              "(repeatable; whatif's grammar, e.g. node:r00/lsw0): tokens/s per kW and TPOT before and after.")
@click.option("--plot", "plot", type=click.Path(dir_okay=False), help="Write the tokens/s/kW vs tokens/s/user "
              "frontier per fabric to a .png, .svg or .pdf.")
@click.option("--json", "as_json", is_flag=True, help="Print JSON (an array with --fabrics).")
def serve_cmd(model, fabric, sets, fabric_list, isl, osl, mesh, concurrency, max_concurrency, menu, mtp, library,
              overlap, disaggregate, fail, plot, as_json):
    """Token economics of serving MODEL on a fabric: TPOT, TTFT, tokens/s per user, chip and kW, $/Mtok.

    Each step is priced per layer from the chip's roofline (compute, HBM), the network
    (the flow solver, with a named communication library) and kernel launches; a
    concurrency sweep searches the mesh per point.  See collectives/serve/.

    \b
    Examples:
      fabricsim serve --model gpt-oss-120b --fabric jalapeno-rack
      fabricsim serve --model deepseek-r1 --fabric nvl72 --set generation=gb300 --mtp 1 --json
      fabricsim serve --model kimi-k2 --fabrics jalapeno-rack,nvl72 --set nvl72:accelerator=gb300 --plot f.png
    """
    from .collectives.serve import serve as run_serve
    from .collectives.serve import serve_failed
    from .collectives.serve.sweep import PLOT_SUFFIXES, plot_frontier
    from .topo.errors import BadInput
    if bool(fabric) == bool(fabric_list):
        raise click.UsageError("give --fabric F or --fabrics a,b,c (one of them)")
    if plot and not plot.lower().endswith(PLOT_SUFFIXES):
        raise click.BadParameter(f"{plot!r}: use a .png, .svg or .pdf file name", param_hint="--plot")
    names = [fabric] if fabric else [f.strip() for f in fabric_list.split(",") if f.strip()]
    if not names:
        raise click.BadParameter("no fabrics given", param_hint="--fabrics")
    # one fabric: --set KEY=VALUE; --fabrics: --set FABRIC:KEY=VALUE (as compare)
    per_fabric = {names[0]: sets} if fabric else _fabric_sets(sets, names)
    graphs = [load_fabric(n, per_fabric.get(n, ()), hint="--set" if n in per_fabric else
                          ("--fabric" if fabric else "--fabrics")) for n in names]
    results = []
    kw = dict(isl=isl, osl=osl, mesh=None if mesh == "search" else mesh, concurrency=concurrency, mtp=mtp,
              library=library, overlap=overlap, progress=_progress, max_concurrency=max_concurrency, menu=menu,
              disaggregate=disaggregate)
    for name, G in zip(names, graphs):
        try:
            results.append(serve_failed(G, model, fail, **kw) if fail else run_serve(G, model, **kw))
        except BadInput as exc:
            msg = str(exc)
            hint = ("--disaggregate" if "disaggregate" in msg else "--fail" if fail and "fail" in msg else "--mesh" if msg.startswith(("mesh", "tp=", "ep=", "dp=")) else
                    "--model" if msg.startswith(("unknown model", "model")) else
                    "--menu" if msg.startswith("--menu") else
                    "--max-concurrency" if msg.startswith("--max-concurrency") else
                    "--concurrency" if "concurrency" in msg.split(";")[0] else "--model/--mesh/--concurrency")
            raise click.BadParameter(msg, param_hint=hint) from None
    if fail:
        if as_json:
            _emit_json(results[0].as_dict() if fabric else [r.as_dict() for r in results])
        else:
            click.echo("\n\n".join(r.to_text() for r in results))
        return
    if plot:
        plot_frontier(results, plot)
        _progress(f"wrote {plot}")
    if as_json:
        _emit_json(results[0].as_dict() if fabric else [r.as_dict() for r in results])
        return
    click.echo("\n\n".join(r.to_text() for r in results))


# --------------------------------------------------------------------------- mix (issue 15)
@main.command("mix")
@click.argument("spec", type=click.Path(dir_okay=False), required=False)
@click.option("--chakra", "chakra_dir", type=click.Path(file_okay=False), default=None,
              help="Instead of SPEC: a directory of Chakra execution traces (<prefix>.<rank>.et, optional "
                   "communicator-group JSON); needs fabricsim[chakra].")
@click.option("--fabric", "fabric", required=True, help="A catalog name or a fabric file.")
@_set_option
@click.option("--split", type=click.Choice(["equal", "capacity"]), default="equal", show_default=True,
              help="ECMP split over next hops: equal, or weighted by surviving capacity.")
@click.option("--tiers", type=click.Choice(["rule", "any"]), default="rule", show_default=True,
              help="rule: the fabric's tier rules; any: every shortest path.")
@click.option("--efficiency", type=float, default=None, help="Fraction of line rate the links deliver (0-1], "
              "for every job. Default: each job is priced at the fabric family's figure, as price does "
              "(ideal fabrics: 1).")
@click.option("--step-latency-us", type=float, default=None, help="Per-step overhead in microseconds "
              "(default: the fabric's, else 1 us).")
@click.option("--json", "as_json", is_flag=True, help="Print the mix result as JSON (schema in docs/json.md).")
def mix_cmd(spec, chakra_dir, fabric, sets, split, tiers, efficiency, step_latency_us, as_json):
    """Run several collectives at once: [[job]] tables sharing the links in one max-min solve.

    \b
    Each [[job]]: name, collective, size | traffic | moe, group_size | mesh + over | groups,
    algorithm (default auto), after = [names] (start when those have finished);
    or collective = "delay" with a duration ("120us"): time on no link, e.g. compute.
    \b
    Example:
      fabricsim mix jobs.toml --fabric jalapeno-rack --json
      fabricsim mix --chakra traces/ --fabric nvl72      collectives of Chakra traces, compute as delays
    """
    from .collectives import jobs as J
    from .topo.errors import BadInput
    if (spec is None) == (chakra_dir is None):
        raise click.UsageError("give a SPEC file or --chakra DIR (one of them)")
    G = load_fabric(fabric, sets)
    eff, step_ns, _ = _calibration(efficiency, step_latency_us, None)
    t0 = time.perf_counter()
    try:
        if chakra_dir is not None:
            from .collectives.jobs.chakra import load_chakra
            try:
                w = load_chakra(chakra_dir)
            except BadInput as exc:
                raise click.BadParameter(str(exc), param_hint="--chakra") from None
            jobs = list(w.jobs)
            for note in w.notes:
                _progress(f"chakra: {note}")
        else:
            jobs = J.load_jobs(spec, G)
        r = J.mix(G, jobs, split=split, tiers=tiers, efficiency=eff, step_overhead_ns=step_ns, progress=_progress)
    except BadInput as exc:
        raise click.BadParameter(str(exc), param_hint="SPEC") from None
    if time.perf_counter() - t0 > 2:
        _progress(f"mixed in {time.perf_counter() - t0:.1f} s")
    if as_json:
        _emit_json(r.as_dict())
        return
    click.echo(f"{len(r.jobs)} job(s) on {r.fabric}: makespan {_us(r.makespan_s)} "
               f"({r.events:,} shared max-min solves)")
    click.echo(_table([[j.name, j.collective, j.algorithm, f"{j.groups} x {j.group_size}",
                        _fmt_bytes(j.bytes_total), _us(j.start_s), _us(j.finish_s), _us(j.solo_s),
                        f"x{j.time_s / j.solo_s:.4g}" if j.solo_s > 0 else "n/a"] for j in r.jobs],
                      ["job", "collective", "algorithm", "groups", "bytes", "start", "finish", "alone",
                       "slowdown"]))
    if r.bottlenecks:
        click.echo("")
        click.echo("Busiest links (utilization over the makespan):")
        click.echo(_table([[b["link"], b["tier"], f"{b['utilization']:.1%}", f"{b['capacity_GBps']:,.1f}"]
                           for b in r.bottlenecks[:5]], ["link", "tier", "util", "GB/s"]))
    for note in r.notes:
        click.echo(f"note: {note}")


# --------------------------------------------------------------------------- design (issue 28)
@main.command("design")
@click.argument("space", type=click.Path(dir_okay=False))
@click.option("--workers", type=click.IntRange(min=1), default=1, show_default=True,
              help="Local processes pricing designs in parallel.")
@click.option("--scheduler", metavar="tcp://HOST:PORT", help="Price the designs on a Dask distributed scheduler.")
@click.option("--resume", "results_file", type=click.Path(dir_okay=False),
              help="Keep each design's result in this file and reuse it when the run is repeated.")
@click.option("--no-prune", is_flag=True, help="Price every design inside the constraints (no bound pruning).")
@click.option("--search", type=click.Choice(["auto", "exhaustive", "nsga2"]), default="auto", show_default=True,
              help="exhaustive: every design (the exact front); nsga2: Optuna's NSGA-II proposes --evaluations "
                   "designs (the best front found; pip install 'fabricsim[design]'); auto: exhaustive up to "
                   "2,000 designs.")
@click.option("--evaluations", type=click.IntRange(min=1), default=500, show_default=True,
              help="With nsga2: distinct designs to evaluate.")
@click.option("--seed", type=click.IntRange(min=0), default=0, show_default=True, help="Seed of the nsga2 search.")
@click.option("--budget-s", type=_Number(1e-3, 1e9, unit=" s"), default=None,
              help="Stop starting new designs after this many seconds (the result says it is partial).")
@click.option("-o", "--output-dir", "out_dir", type=click.Path(file_okay=False),
              help="Write each Pareto-front design as a fabric file (node-link JSON) into this folder.")
@click.option("--plot", "plot", type=_plot_path(), help="Write the priced designs and the front to a PNG.")
@click.option("--json", "as_json", is_flag=True, help="Print the search as JSON (builder, evaluated, pruned, "
              "pareto, all).")
def design_cmd(space, workers, scheduler, results_file, no_prune, search, evaluations, seed, budget_s, out_dir, plot,
               as_json):
    """Search a builder's parameters for the Pareto front of time, capex, power, resilience.

    SPACE is a TOML file: the builder, the values its parameters may take, a workload,
    objectives and constraints:

    \b
      builder = "rail-cluster"
      [vary]
      nic_gbps = [200, 400, 800]
      spine_oversubscription = [1, 2]
      [workload]
      jobs = [{collective = "all-to-all", group_size = 16, size = "256MiB"}]
      [objectives]
      minimize = ["time_s", "capex_usd"]      # also power_kw, capex_per_chip_usd,
                                              # worst_n1_slowdown; maximize = ["chips"]
      [constraints]
      capex_usd_max = 2e6                     # *_max / *_min of capex_usd, power_kw, chips, time_s

    Each design is built and its bill of materials counted first (audit's parts); one
    outside a constraint, or whose link-load bound is already beaten by a priced design no
    worse elsewhere, is pruned without a solve (exact: the front is what pricing every
    design gives). The rest are priced flow-level, every job together as `mix` does.

    \b
    Example:
      fabricsim design examples/design/rail_cluster.toml --plot front.png
    """
    from .collectives.design import design, load_space, plot_front
    from .collectives.whatif.dask_runner import sweep_runner
    from .fabrics import build
    from .fabrics.registry import builder_params
    from .fabrics.userfile import export_fabric
    sp = load_space(space, builders=builder_params())
    runner = sweep_runner(workers, scheduler)
    _progress(f"design: {sp.size:,} design(s) of {sp.builder} ...")
    try:
        r = design(sp, build=build, runner=runner, progress=_progress, prune=not no_prune, search=search,
                   evaluations=evaluations, seed=seed, budget_s=budget_s, results_file=results_file)
    finally:
        getattr(runner, "close", lambda: None)()
    if out_dir:
        from pathlib import Path
        d = Path(out_dir)
        try:
            d.mkdir(parents=True, exist_ok=True)
            for k, p in enumerate(r.front()):
                name = "_".join(f"{k2}-{v}" for k2, v in p.params.items()).replace("/", "-")
                export_fabric(build(sp.builder, **sp.params_text(p.params)), d / f"{sp.builder}_{name}.json")
        except OSError as exc:
            raise _write_error(exc, d) from None
        _progress(f"wrote {len(r.pareto)} fabric file(s) into {d}")
    if plot:
        try:
            plot_front(r, plot)
        except OSError as exc:
            raise _write_error(exc, plot) from None
        _progress(f"wrote {plot}")
    if as_json:
        _emit_json(r.as_dict())
        return
    click.echo(r.to_text())


def __getattr__(name: str):
    """``fabricsim.cli.SweepProgress``: the progress bar moved to the library (collectives.whatif.text)."""
    if name == "SweepProgress":
        from .collectives.whatif.text import SweepProgress
        return SweepProgress
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


if __name__ == "__main__":  # pragma: no cover
    main()
