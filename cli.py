"""The ``fabricsim`` command line: parses options, calls the library, formats what it returns.

No figure is computed here and nothing is orchestrated: the runs are ``collectives.runs``, the text
``collectives.report_text`` and the results' ``to_text()``, fabric loading ``fabrics.loader``; the click
machinery (option types, shared option groups, the error path: a library ``BadInput`` names its
parameter and :data:`PARAMS` maps it to the command's option) comes first, then the commands.
"""
from __future__ import annotations

import os
import re
import sys
from pathlib import Path

import click

from .fabrics.loader import load_fabric, parse_sets
from .topo.console import progress as _progress
from .topo.console import timed, to_json
from .topo.errors import BadInput, FabricError, about
from .topo.text import table as _table
from .topo.units import parse_size  # noqa: F401  (``from fabricsim.cli import parse_size``: the one size rule)


# =========================================================================== click machinery
PLOT_SUFFIXES = (".png", ".svg", ".pdf")

# ONE table: a library parameter (BadInput.param) -> the click parameter(s) that carry it, first found on the
# command wins; a name not listed is its own click name.  The option shown is that parameter's longest flag
# (or an argument's metavar); a parameter the command lacks shows as --name ("options": the price options).
PARAMS = {"groups": ("groups_file",), "traffic": ("traffic_path",), "moe": ("moe_spec",), "set": ("sets",),
           "failures": ("fails",), "parts": ("parts_file",),
           "fabrics": ("fabric_list",), "fabric": ("fabric", "fabric_list"), "rates": ("rates_file",),
           "resume": ("results_file",), "chakra": ("chakra_dir",), "failure_class": ("failure_class", "classes"),
           "classes": ("classes", "failure_class"), "fails": ("fails",), "output": ("output", "out_dir"),
           "options": (), "constants": ("chip_sets",)}


def option_for(ctx: click.Context, param: str) -> str:
    names = PARAMS.get(param, (param,))
    for name in names:
        for p in ctx.command.params:
            if p.name == name:
                return max(p.opts, key=len) if isinstance(p, click.Option) else p.human_readable_name
    return "--" + param.replace("_", "-") if names else param


# --------------------------------------------------------------------------- options documented by the library
def lib(source: str):
    """The library object ``"module:NAME"`` (under the package), imported when an option first needs it."""
    import importlib
    module, _, name = source.partition(":")
    return getattr(importlib.import_module(f"{__package__}.{module}"), name)


class Option(click.Option):
    """An option whose help is its library parameter's: ``doc`` ("module:Name", under the package) names the
    function or class whose numpydoc ``Parameters`` entry documents it (:func:`topo.text.param_docs`), read only
    when help is printed; so ``help(fn)`` in a notebook and ``--help`` say the same, written once."""

    def __init__(self, *decls, doc: str | None = None, **kw):
        super().__init__(*decls, **kw)
        self.doc = doc

    def get_help_record(self, ctx):
        if self.doc and not self.help:
            self.help = library_help(ctx, self.doc, self.name)
        return super().get_help_record(ctx)


def library_help(ctx: click.Context, doc: str, dest: str) -> str:
    """The help of option ``dest``: ``doc``'s entry for it, ``name`` of another parameter shown as its option."""
    from .topo.text import param_docs
    docs = param_docs(lib(doc))
    text = docs.get(dest) or next(docs[p] for p, dests in PARAMS.items() if dest in dests and p in docs)
    own = {p.name for p in ctx.command.params} | {p for p, d in PARAMS.items() if set(d) & {q.name for q in
                                                                                             ctx.command.params}}
    text = re.sub(r"\s*\(:\w+:`[^`]+`\)", "", text)                                  # (:func:`x`): the library's
    text = re.sub(r":\w+:`~?([^`]+)`", lambda m: m[1].rsplit(".", 1)[-1], text)   # :func:`~a.b` -> b
    text = re.sub(r'``"([^"`]*)"``', r"'\1'", text)
    text = re.sub(r"``([\w-]+)``", lambda m: option_for(ctx, m[1]) if m[1] in own else m[1], text)
    first = text.split(" ", 1)[0].rstrip(":;,")   # a sentence starts upper case; a value as it is typed
    plain = first.replace("-", "").isalpha() and first.islower() and first not in _values(ctx, dest)
    return (text[:1].upper() + text[1:] if plain else text).replace("``", "'")


def _values(ctx, dest) -> set:
    """Values option ``dest`` takes as typed (its choices and default): help starting with one keeps its case."""
    p = next((p for p in ctx.command.params if p.name == dest), None)
    return set(getattr(p.type, "choices", ()) or ()) | ({p.default} if p is not None and isinstance(p.default, str)
                                                        else set())


def opt(*decls, doc: str | None = None, **kw):
    """``click.option`` documented by the library (:class:`Option`) when ``doc`` is given."""
    return click.option(*decls, cls=Option, doc=doc, **kw)


RUNS = "collectives.runs"
PRICE, GROUP, SWEEP, ATLAS = f"{RUNS}:price_options", f"{RUNS}:GroupSpec", f"{RUNS}:sweep_job", f"{RUNS}:atlas_job"


# --------------------------------------------------------------------------- option types
class Number(click.ParamType):
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
            v = float("nan")
        if not (v == v and abs(v) != float("inf") and (v > self.lo if self.open_lo else v >= self.lo) and v <= self.hi):
            rng = f"{'(' if self.open_lo else '['}{self.lo:g}, {self.hi:g}]"
            self.fail(f"{value!r} is not a finite number in {rng}{self.unit}", param, ctx)
        return v


class OutputPath(click.ParamType):
    """An output file name with one of ``suffixes`` (case-insensitive; or "module:NAME", a library dict of
    formats -> suffixes) in a directory that exists."""

    name = "FILE"

    def __init__(self, suffixes: tuple[str, ...] = PLOT_SUFFIXES):
        self.suffixes = suffixes

    def convert(self, value, param, ctx):
        if isinstance(self.suffixes, str):
            self.suffixes = tuple(dict.fromkeys(x for sfx in lib(self.suffixes).values() for x in sfx))
        if not str(value).lower().endswith(self.suffixes) or Path(value).suffix.lower() not in self.suffixes:
            self.fail(f"{str(value)[:120]!r}: use a file name ending in {', '.join(self.suffixes)}", param, ctx)
        try:
            parent_ok = Path(value).parent.is_dir()
        except (OSError, ValueError):
            parent_ok = False
        if not parent_ok:
            self.fail(f"{str(value)[:120]!r}: directory {str(Path(value).parent)[:120]!r} does not exist", param, ctx)
        return value


class Choice(click.Choice):
    """click.Choice over a library registry ("module:NAME" under the package: a tuple, or a dict's keys; ``drop``
    left out), read when first needed: choices are never retyped here, and ``fabricsim --help`` and commands
    without the option do not import the library (numpy, scipy) for it."""

    def __init__(self, source: str, drop: tuple = ()):
        self.source, self.drop = source, drop
        super().__init__(())

    @property
    def choices(self):
        return tuple(c for c in lib(self.source) if c not in self.drop)

    @choices.setter
    def choices(self, _value):   # click.Choice.__init__ assigns it; the library registry owns the list
        pass


# --------------------------------------------------------------------------- errors, output
def shown(path) -> str:
    return str(path) if len(str(path)) <= 120 else f"{str(path)[:60]}... ({len(str(path)):,} characters)"


def write_error(exc: OSError, path) -> click.ClickException:
    """An OSError writing ``path`` as one line: the file and the system's reason."""
    return click.ClickException(f"cannot write {shown(path)}: {exc.strerror or exc}")


def emit(obj) -> None:
    click.echo(to_json(obj))


def show(result, as_json: bool, plot=None, plot_fn: str = "", *, data=None, text: str | None = None, **kw) -> None:
    """The chart of ``result`` by ``plot_fn`` ("module:function" under the package, imported only then) if
    ``plot`` names a file; then ``result``'s JSON (``data``, default ``as_dict()``) or text (``text``, default
    ``to_text()``) on stdout."""
    if plot:
        written(lib(plot_fn), plot, result, **kw)
    emit(result.as_dict() if data is None else data) if as_json else click.echo(text or result.to_text())


def written(write, path, *args, say: bool = True, **kw):
    """``write(*args, path, **kw)`` (a plot or a file), said on stderr unless ``say`` is off; an OSError is one line."""
    try:
        out = write(*args, path, **kw)
    except OSError as exc:
        raise write_error(exc, path) from None
    if say:
        _progress(f"wrote {path}")
    return out


class OneLineError(click.UsageError):
    """A bad value: the help hint and ``Error: ...``, without click's usage block (kept where the usage itself
    is wrong: a missing argument, an unknown option, options that do not go together)."""

    def show(self, file=None) -> None:
        file = file if file is not None else sys.stderr
        if self.ctx is not None and self.ctx.help_option_names:   # the error last, as click prints its own
            click.echo(f"Try '{self.ctx.command_path} {max(self.ctx.help_option_names, key=len)}' for help.", file=file)
        click.echo(f"Error: {self.format_message()}", file=file)


def quiet_broken_pipe() -> None:
    """stdout was closed by the reader (``| head``): end quietly, as a shell tool does (exit 141 = SIGPIPE)."""
    import os
    try:   # later flushes (at exit too) go nowhere instead of raising again
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
    except (OSError, ValueError, AttributeError):   # no real file descriptor (e.g. a test runner's buffer)
        pass
    sys.exit(141)


class Command(click.Command):
    """A library ``BadInput`` that names its parameter becomes a bad value of this command's option."""

    def invoke(self, ctx):
        try:
            return super().invoke(ctx)
        except BadInput as exc:
            if exc.param is None:
                raise click.ClickException(str(exc)) from None
            raise click.BadParameter(str(exc), ctx=ctx, param_hint=option_for(ctx, exc.param)) from None


class Group(click.Group):
    """Library errors become one-line messages, never tracebacks; a closed stdout ends quietly."""

    command_class = Command
    group_class = type

    def parse_args(self, ctx, args):
        try:
            return super().parse_args(ctx, args)
        except BrokenPipeError:   # `fabricsim --help | head -1`
            quiet_broken_pipe()

    def invoke(self, ctx):
        import numpy as np   # every command loads it anyway
        from .topo.builders import building
        try:
            # A figure that overflows or turns NaN is refused where the result is checked, in one line;
            # numpy's RuntimeWarnings on the way there would only be noise above it.  A build that takes
            # seconds says its size first (never a silent wait).
            with np.errstate(over="ignore", invalid="ignore", divide="ignore"), building(_progress):
                return super().invoke(ctx)
        except click.MissingParameter:   # the usage is what is wrong: click's usage block helps
            raise
        except click.BadParameter as exc:   # a bad value: one line and the hint
            raise OneLineError(exc.format_message(), ctx=exc.ctx) from None
        except BrokenPipeError:
            quiet_broken_pipe()
        except FabricError as exc:
            raise click.ClickException(str(exc)) from None
        except MemoryError:
            raise click.ClickException("out of memory; try the link-load bound (--bound-only)") from None
        except OSError as exc:   # a file the commands did not catch themselves: still one line
            name = shown(exc.filename or "")
            raise click.ClickException(f"{name + ': ' if name else ''}{exc.strerror or exc}") from None


# --------------------------------------------------------------------------- shared options
def option_group(*decorators):
    def deco(fn):
        for d in reversed(decorators):
            fn = d(fn)
        return fn
    return deco


def json_option(help_text="Print JSON (schema in docs/json.md)."):
    return click.option("--json", "as_json", is_flag=True, help=help_text)


def plot_option(help_text):
    return click.option("--plot", "plot", type=OutputPath(), help=help_text)


set_option = click.option("--set", "sets", multiple=True, metavar="KEY=VALUE",
                          help="Override a fabric parameter (repeatable), e.g. --set racks=8.")
fabric_option = click.option("--fabric", "fabric", required=True, help="A catalog name or a fabric file.")
collective_arg = click.argument("collective", type=Choice("collectives:COLLECTIVES"))
RUNNER = "collectives.whatif.dask_runner:sweep_runner"
_SCHEDULER = opt("--scheduler", metavar="tcp://HOST:PORT", doc=RUNNER)
_RESUME = opt("--resume", "results_file", type=click.Path(dir_okay=False), doc=RUNNER)
worker_options = option_group(opt("--workers", type=click.IntRange(min=1), default=1, show_default=True, doc=RUNNER),
                              _SCHEDULER)
# atlas is the long study: by default it uses this machine's cores, at most 4 (each worker holds its own copy of the
# fabric and its routes: ~4 GiB on Ironwood); --workers 1 runs in one process
ATLAS_WORKERS = max(1, min(os.cpu_count() or 1, 4))
atlas_worker_options = option_group(
    click.option("--workers", type=click.IntRange(min=1), default=ATLAS_WORKERS, show_default=True,
                 help="Local worker processes solving orbit representatives at once (ignored with --scheduler); "
                      "default: this machine's cores, at most 4."), _SCHEDULER)
fabric_output = click.option("-o", "--output", "output", required=True, type=OutputPath((".json", ".graphml")),
                             help="Fabric file to write: .json (node-link) or .graphml; every command takes it as "
                                  "FABRIC.")
fail_option = opt("--fail", "fails", multiple=True, metavar="SPEC", doc=f"{RUNS}:whatif_job")
recovery_options = option_group(
    opt("--recovery", type=Choice("collectives.whatif.scenario:RECOVERIES"), default="reroute", show_default=True,
        doc=f"{RUNS}:whatif_job"),
    opt("--spares", type=click.IntRange(min=0), default=0, show_default=True, doc=f"{RUNS}:whatif_job"))


def price_option_group(size_required: bool = True):
    """The pricing commands' options (size, placement, algorithm, protocol, calibration ...), documented in
    :func:`collectives.runs.price_options` and :class:`collectives.runs.GroupSpec`."""
    return option_group(
        opt("--size", "size", required=size_required, doc=PRICE),
        opt("--group-size", type=int, doc=GROUP),
        opt("--count", type=click.IntRange(min=1), doc=GROUP),
        opt("--placement", default="auto", show_default=True, doc=GROUP),
        opt("--mesh", doc=GROUP),
        opt("--over", doc=GROUP),
        opt("--groups", "groups_file", type=click.Path(), doc=GROUP),
        opt("--algorithm", default="auto", show_default=True, doc=PRICE),
        opt("--protocol", type=Choice("collectives.engine:PROTOCOL_CHOICES"), default="auto",
            show_default=True, doc=PRICE),
        click.option("--explain", is_flag=True, help="Say which fast path priced each phase (symmetry classes, "
                     "per-flow ...) and why the others were refused."),
        opt("--split", type=Choice("collectives.engine:SPLIT_CHOICES"), default=None, doc=PRICE),
        opt("--tiers", type=Choice("topo.routing.core:TIER_MODES"), default="rule", show_default=True, doc=PRICE),
        opt("--efficiency", type=Number(1e-6, 1.0), default=None, doc=PRICE),
        opt("--step-latency-us", type=Number(0.0, 1e9, unit=" us"), default=None, doc=PRICE),
        opt("--calibration", type=click.Path(), doc=PRICE),
        opt("--bound-only", is_flag=True, doc=PRICE),
        opt("--per-flow", is_flag=True, doc=PRICE))


GROUP_KEYS = {"group_size": "group_size", "placement": "placement", "mesh": "mesh", "over": "over",
               "groups_file": "groups", "count": "count"}
PRICE_KEYS = ("algorithm", "protocol", "calibration", "split", "tiers", "efficiency", "step_latency_us",
               "bound_only", "per_flow")


def job_of(opts: dict, collective: str, size: bool = True):
    """(PriceOptions, GroupSpec) from the shared price options: checked by the library, once."""
    from .collectives.runs import GroupSpec, price_options
    options = price_options(collective, size=opts["size"] if size else None, **{k: opts[k] for k in PRICE_KEYS})
    return options, GroupSpec(**{v: opts[k] for k, v in GROUP_KEYS.items()})


def fabric_names(fabric, fabric_list) -> list[str]:
    """--fabric F or --fabrics a,b,c (one of them) -> the names."""
    if bool(fabric) == bool(fabric_list):
        raise click.UsageError("give --fabric F or --fabrics a,b,c (one of them)")
    names = [fabric] if fabric else [f.strip() for f in fabric_list.split(",") if f.strip()]
    if not names:
        raise click.BadParameter("no fabrics given", param_hint="--fabrics")
    return names


def runner_maker(workers: int, scheduler: str | None, results_file=None):
    """A maker of the sweep runner (local processes, Dask, resumable); the library calls it once inputs are checked."""
    def make():
        from .collectives.whatif.dask_runner import sweep_runner
        with about("scheduler" if scheduler else "resume"):
            runner = sweep_runner(workers, scheduler=scheduler, results_file=results_file)
        if scheduler:
            _progress(f"connected to {scheduler}")
        return runner
    return make


# --------------------------------------------------------------------------- catalog, audit, export, import, draw
@click.group(cls=Group, context_settings={"help_option_names": ["-h", "--help"], "max_content_width": 100})
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
@json_option("Print a JSON array instead of a table.")
def list_cmd(as_json):
    """List the catalog: name, chips, switches, description, source.

    Chip and switch counts come from building each fabric once; they are cached (keyed by the
    package's fabric and topology sources) so later lists read them without building.
    """
    from .fabrics.catalog_cache import catalog_rows
    from .fabrics.loader import catalog_text
    rows = catalog_rows(progress=None if as_json else _progress)   # --json: stdout only, nothing on stderr
    emit(rows) if as_json else click.echo(catalog_text(rows))


@main.command("params")
@click.argument("fabric")
def params_cmd(fabric):
    """Show a catalog fabric's parameters, their defaults and valid values."""
    from .fabrics.loader import params_table
    title, rows = params_table(fabric)
    click.echo(title + "\n" + _table(rows, ["parameter", "default", "accepts"]))


AUDIT = "topo.auditing:audit"


@main.command("audit")
@click.argument("fabric")
@set_option
@json_option("Print the audit as JSON (schema in docs/json.md).")
@click.option("--all", "show_all", is_flag=True, help="List every finding, not just failures and notes.")
@opt("--hops/--no-hops", default=True, show_default=True, doc=AUDIT)
@opt("--bisection/--no-bisection", "bisect", default=True, show_default=True, doc=AUDIT)
@opt("--parts", "parts_file", type=click.Path(dir_okay=False), default=None, doc=AUDIT)
def audit_cmd(fabric, sets, as_json, show_all, hops, bisect, parts_file):
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
    if G.number_of_nodes() > 4000:
        _progress(f"auditing {G.number_of_nodes():,} nodes and {G.number_of_edges():,} links ...")
    with timed("audit took", 0.0 if G.number_of_nodes() > 4000 else float("inf")):
        a = audit(G, hops=hops, bisect=bisect, parts=parts)
    emit(a.as_dict()) if as_json else click.echo(a.to_text(show_all))
    if not a.ok:
        sys.exit(1)


# --------------------------------------------------------------------------- export and import (files of other tools)
@click.command("export", cls=Command)
@click.argument("fabric")
@set_option
@click.option("-o", "--output", "output", required=True, type=OutputPath("topo.export_text:EXPORT_FORMATS"),
              help="Output file: .graphml, .json (node-link, or InfraGraph with --format infragraph), .yml "
                   "(ASTRA-sim network config) or .txt (SimAI ns-3 topology).")
@click.option("--format", "fmt", type=Choice("topo.export_text:EXPORT_FORMATS"),
              default=None,
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
    from .fabrics.loader import export_format, export_graph
    from .topo.export_text import export_lines
    fmt = export_format(output, fmt)      # checked before the fabric is built
    G = load_fabric(fabric, sets)
    from .topo.builders import announcer
    if announcer(G, _progress):   # GraphML of tpu8t-virgo: 24 s
        _progress(f"writing {G.number_of_nodes():,} nodes and {G.number_of_edges():,} links as {fmt} ...")
    out = written(lambda path: export_graph(G, path, fmt), output, say=False)
    click.echo("\n".join(export_lines(fmt, G, out, output)), err=True)


@click.group("import", cls=Group)
def import_grp():
    """Read a machine description (or, for chakra, a workload) written by another tool.

    \b
      fabricsim import nccl-topo topo.xml -o node.json      an NCCL_TOPO_DUMP_FILE dump
      fabricsim import nccl-topo topo.xml --nodes 4 -o cluster.json
      fabricsim import infragraph infra.json -o fabric.json   an InfraGraph document (ASTRA-sim 3.0)
      fabricsim import chakra traces/ -o jobs.toml          Chakra execution traces, for mix
    """


def _write_imported(G, output, chips_word: str, detail: str = "") -> None:
    """Write an imported fabric as a fabric file and say what it holds (and what was inferred) on stderr."""
    from .fabrics.userfile import export_fabric
    from .topo.export_text import imported_lines
    written(lambda path: export_fabric(G, path), output, say=False)
    click.echo("\n".join(imported_lines(G, output, chips_word, detail)), err=True)


NCCL_TOPO = "fabrics.nccl_topo:read_nccl_topo"


@import_grp.command("nccl-topo")
@click.argument("xml_file", metavar="FILE.xml", type=click.Path(dir_okay=False))
@opt("--nodes", type=click.IntRange(1), default=1, show_default=True, doc=NCCL_TOPO)
@opt("--nic-gbps", type=Number(0.0, 1e7, open_lo=True, unit=" Gb/s"), default=None, doc=NCCL_TOPO)
@opt("--spine-oversubscription", type=Number(0.0, 1e6, open_lo=True), default=1.0, show_default=True, doc=NCCL_TOPO)
@fabric_output
def import_nccl_topo(xml_file, nodes, nic_gbps, spine_oversubscription, output):
    """Build a fabric from an NCCL topology dump (the XML NCCL writes with NCCL_TOPO_DUMP_FILE).

    GPUs become chips (NVLink generation from sm), NVSwitch targets switches, each GPU's
    nearest <net> its NIC port to its rail's leaf; PCIe and C2C are counted, not priced.
    A malformed dump exits 2 with one line naming the element.
    """
    from .fabrics.nccl_topo import read_nccl_topo
    with about("xml_file"):
        G = read_nccl_topo(xml_file, nodes=nodes, nic_gbps=nic_gbps or 0.0,
                           spine_oversubscription=spine_oversubscription)
    _write_imported(G, output, "GPUs", f" ({G.graph['families']})")


@import_grp.command("infragraph")
@click.argument("ig_file", metavar="FILE", type=click.Path(dir_okay=False))
@fabric_output
def import_infragraph(ig_file, output):
    """Build a fabric from an InfraGraph document (.json, .yaml; needs fabricsim[infragraph]).

    xpu components become chips, switch components switches, nic and port components are
    joined through; a file written by ``export --format infragraph`` reads back into the same
    graph. A malformed file exits 2 with one line naming the element.
    """
    from .fabrics.infragraph_io import read_infragraph
    with about("ig_file"):
        G = read_infragraph(ig_file)
    _write_imported(G, output, "chips")


@import_grp.command("chakra")
@click.argument("trace_dir", metavar="DIR", type=click.Path(file_okay=False))
@click.option("-o", "--output", "output", required=True, type=OutputPath((".toml",)),
              help="Mix file to write ([[job]] tables); price it with fabricsim mix FILE --fabric F.")
def import_chakra(trace_dir, output):
    """Turn Chakra execution traces (<prefix>.<rank>.et per rank) into a mix TOML (needs fabricsim[chakra]).

    Collective nodes become jobs on their process groups' ranks, compute nodes with a
    duration delays, dependencies ``after``. A malformed trace exits 2 with one line naming
    the file and the node.
    """
    from .collectives.runs import chakra_to_mix
    w = written(chakra_to_mix, output, trace_dir, say=False)
    n_delay = sum(j.collective == "delay" for j in w.jobs)
    click.echo(f"wrote {output}: {len(w.jobs) - n_delay:,} collectives, {n_delay:,} delays, {w.ranks:,} ranks, "
               f"{len(w.groups):,} process groups", err=True)
    for note in w.notes:
        _progress(f"chakra: {note}")


main.add_command(export_cmd)
main.add_command(import_grp)


@main.command("draw")
@click.argument("fabric")
@set_option
@click.option("-o", "--output", "output", required=True, type=OutputPath(),
              help="Output picture: .png or .svg (.pdf works too).")
@opt("--expand", default=None, doc="topo.draw.figures:fabric_figure")
@opt("--dpi", type=click.IntRange(40, 600), default=110, show_default=True, doc="topo.draw.figures:fabric_figure")
def draw_cmd(fabric, sets, output, expand, dpi):
    """Draw a fabric: tiers as layers, NVL72 as planes, a torus slice, Boardfly groups.

    Large fabrics are drawn at a level that stays readable: one rack (or group, or torus
    slice) expanded and the others collapsed.  The legend gives tiers and link media.
    """
    from .topo.draw import draw_fabric
    written(draw_fabric, output, load_fabric(fabric, sets), expand=expand, dpi=dpi)


# --------------------------------------------------------------------------- pricing
@main.command("price")
@collective_arg
@fabric_option
@set_option
@price_option_group(size_required=False)   # price alone also takes --traffic / --moe instead of --size
@json_option("Print the cost report as JSON (schema in docs/json.md).")
@plot_option("Also write a chart (.png/.svg/.pdf): time per phase and link utilization by tier.")
@opt("--traffic", "traffic_path", type=click.Path(), doc=f"{RUNS}:price_traffic")
@opt("--moe", "moe_spec", metavar="SPEC", doc=f"{RUNS}:price_traffic")
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
    from .collectives.report_text import method_text, traffic_text
    from .collectives.runs import price_job, price_traffic
    vbytes = traffic_path or moe_spec
    if not vbytes and opts["size"] is None:
        raise click.UsageError("Missing option '--size' (or --traffic FILE / --moe SPEC for an all-to-all-v).")
    options, spec = job_of(opts, collective, size=opts["size"] is not None)   # checked before the fabric is built
    G = load_fabric(fabric, sets)
    with timed("priced"):
        r, summary = (price_traffic(G, collective, options, spec, traffic=traffic_path, moe=moe_spec,
                                    progress=_progress) if vbytes else (price_job(G, collective, options, spec), None))
    show(r, as_json, plot, "collectives.plots:plot_price", G=G,
         data=r.as_dict() | ({"traffic": summary} if summary is not None else {}),
         text="\n".join([r.to_text(), *([method_text(r.method, r.mode)] if opts["explain"] else []),
                         *([traffic_text(summary)] if summary is not None else [])]))


@main.command("compare")
@collective_arg
@click.option("--fabrics", "fabric_list", required=True,
              help="Comma-separated catalog names or files, e.g. jalapeno-rack,nvl72,torus; 'all': the catalog.")
@click.option("--set", "sets", multiple=True, metavar="FABRIC:KEY=VALUE",
              help="Override a parameter of one of --fabrics (repeatable), e.g. --set torus:dims=8x8x8.")
@price_option_group()
@json_option("Print a JSON array of cost reports.")
@plot_option("Also write a chart (.png/.svg/.pdf) of time and busbw per fabric.")
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
    from .collectives.placement import chip_ranks
    from .collectives.report_text import compare_text
    from .collectives.runs import compare
    from .fabrics.loader import load_fabrics
    options, spec = job_of(opts, collective)
    loaded = load_fabrics(fabric_list, sets)   # every name is checked before any fabric is built
    reports = compare([G for _, G, _ in loaded], collective, options, spec, progress=_progress)
    given, chips = [g for _, _, g in loaded], [len(chip_ranks(G)) for _, G, _ in loaded]
    labels = [r.fabric + (f"({','.join(f'{k}={v}' for k, v in g.items())})" if g else "")
              for r, g in zip(reports, given)]
    show(reports, as_json, plot, "collectives.plots:plot_compare", text=compare_text(labels, chips, reports),
         data=[{**r.as_dict(), "chips": n, "set": g} for r, n, g in zip(reports, chips, given)])


# --------------------------------------------------------------------------- failures
@main.command("domains")
@click.argument("fabric")
@set_option
@opt("--class", "classes", multiple=True, doc="topo.failures:domains")
@click.option("--all", "show_all", is_flag=True, help="List every domain id, not just a few per class.")
@json_option("Print {class: [domain ...]} as JSON.")
def domains_cmd(fabric, sets, classes, show_all, as_json):
    """List what can fail together: the failure domains of a fabric and their spec spelling.

    \b
    Spec grammar (for --fail and sweep --class):
      node:ID  link:A--B  lanes:A--B=K  chip:ID  switch:ID  ROLE-switch:ID
      tray:r03/t05  switch-tray:r03/st6  rack:3  cube:5  board:17  group:3  plane:4  rail:2
      ocs:12  harness:7
    """
    from .collectives.report_text import domains_text
    from .topo.failures import domains
    G = load_fabric(fabric, sets)
    with about("classes"):
        D = domains(G, classes or None)
    emit({c: [d.as_dict() for d in ds] for c, ds in D.items()}) if as_json else click.echo(domains_text(D, show_all))


@main.command("whatif")
@collective_arg
@fabric_option
@set_option
@fail_option
@price_option_group()
@recovery_options
@json_option("Print baseline, degraded and what changed as JSON.")
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
    from .collectives.runs import whatif_job
    from .collectives.whatif.text import whatif_method_text
    if not fails:
        raise click.UsageError("give at least one --fail SPEC (see `fabricsim domains FABRIC`)")
    options, spec = job_of(opts, collective)
    G = load_fabric(fabric, sets)
    w = whatif_job(G, fails, collective, options, spec, recovery=recovery, spares=spares, explain=opts["explain"],
                   progress=_progress)
    show(w, as_json, text=w.to_text() + (f"\n{whatif_method_text(w.method)}" if opts["explain"] else ""))


@main.command("sweep")
@collective_arg
@fabric_option
@set_option
@opt("--class", "failure_class", required=True, doc=SWEEP)
@opt("--n", "n", type=click.IntRange(1, 3), default=1, show_default=True, doc=SWEEP)
@opt("--samples", type=click.IntRange(min=1), doc=SWEEP)
@opt("--seed", type=int, default=0, show_default=True, doc=SWEEP)
@worker_options
@_RESUME
@opt("--fold/--no-fold", "fold", default=True, show_default=True, doc=SWEEP)
@opt("--budget-s", type=Number(1e-3, 1e9, unit=" s"), default=None, doc=SWEEP)
@price_option_group()
@recovery_options
@json_option("Print the ranked scenarios and summary as JSON.")
@click.option("--top", type=click.IntRange(min=1), default=10, show_default=True, help="Scenarios shown in the table.")
@plot_option("Write sorted slowdowns and their distribution to a PNG, SVG or PDF.")
def sweep_cmd(collective, fabric, sets, failure_class, n, samples, seed, workers, scheduler, results_file, as_json,
              top, plot, fold, budget_s=None, recovery="reroute", spares=0, **opts):
    """Price every failure of a class (or pairs, or random samples), ranked worst first.

    \b
    Example:
      fabricsim sweep all-to-all --fabric jalapeno-pod --class rail-switch --group-size 2048 \\
          --size 1GiB --algorithm direct --workers 2
    """
    from .collectives.report_text import sweep_text
    from .collectives.runs import sweep_job
    from .collectives.whatif.text import SweepProgress, sweep_method_text
    options, spec = job_of(opts, collective)
    G = load_fabric(fabric, sets)   # checks the fabric and --set before any work is shipped
    progress = SweepProgress()
    try:
        s = sweep_job(fabric, parse_sets(sets), G, failure_class, collective, options, spec, n=n, samples=samples,
                      seed=seed, fold=fold, recovery=recovery, spares=spares, budget_s=budget_s,
                      make_runner=runner_maker(workers, scheduler, results_file), progress=progress, note=_progress)
    finally:
        progress.close()
    show(s, as_json, plot, "collectives.plots:plot_sweep", text=sweep_text(s, top) + (f"\n{sweep_method_text(s.method)}"
                                                                    if opts["explain"] else ""))


@main.command("atlas")
@click.argument("fabric")
@click.option("--collective", "collective", required=True, type=Choice("collectives:COLLECTIVES"),
              help="The collective every scenario prices.")
@set_option
@opt("--classes", "classes", metavar="A,B", doc=ATLAS)
@opt("--max-orbits", type=click.IntRange(min=1), default=512, show_default=True, doc=ATLAS)
@opt("--budget-s", type=Number(1e-3, 1e9, unit=" s"), default=120.0, show_default=True, doc=ATLAS)
@atlas_worker_options
@click.option("--availability", "avail", is_flag=True, help="Also the year's expected degradation per class "
              "from failure rates (collectives/whatif/failure_rates.toml, or --rates).")
@click.option("--rates", "rates_file", type=click.Path(dir_okay=False), help="TOML of [classes.NAME] rate_per_year "
              "and repair_h over the default rates (implies --availability).")
@click.option("--samples", type=click.IntRange(min=2), help="With --availability: also a Monte Carlo over this "
              "many sampled years.")
@click.option("--seed", type=click.IntRange(0, 2 ** 63 - 1), default=0, show_default=True,
              help="Seed of the Monte Carlo.")
@opt("--n2-shared", is_flag=True, doc=ATLAS)
@price_option_group()
@json_option("Print the atlas (and availability) as JSON.")
@plot_option("Write the slowdowns per class (a box each) to a PNG, SVG or PDF.")
def atlas_cmd(fabric, collective, sets, classes, max_orbits, budget_s, workers, scheduler, avail, rates_file,
              samples, seed, n2_shared, as_json, plot, **opts):
    """Every failure class of FABRIC, N-1: blast radius and slowdowns per class (and availability).

    \b
    Example:
      fabricsim atlas jalapeno-pod --collective all-to-all --group-size 2048 --size 1GiB
      fabricsim atlas jalapeno-pod --set racks=2 --collective all-to-all --size 1GiB --availability --samples 400
    """
    from .collectives.runs import atlas_job
    from .collectives.whatif.atlas import availability, check_monte_carlo, load_rates
    if opts["explain"]:
        raise click.UsageError("atlas has no --explain; `fabricsim sweep --class C --explain` explains one class")
    if samples is not None and not (avail or rates_file):
        raise click.UsageError("--samples is the availability Monte Carlo: give it with --availability")
    check_monte_carlo(samples, seed)   # before the atlas, which may take minutes
    options, spec = job_of(opts, collective)
    G = load_fabric(fabric, sets)
    rates = None
    if avail or rates_file:
        with about("rates"):
            rates = load_rates(rates_file)
    wanted = None if classes is None else [c.strip() for c in classes.split(",") if c.strip()]
    a = atlas_job(fabric, parse_sets(sets), G, collective, options, spec, classes=wanted, max_orbits=max_orbits,
                  budget_s=budget_s, n2_shared=n2_shared, make_runner=runner_maker(workers, scheduler),
                  progress=_progress)
    av = availability(a, rates, samples=samples, seed=seed, progress=_progress) if rates is not None else None
    show(a, as_json, plot, "collectives.whatif.atlas:plot_atlas",
         data=a.as_dict() | ({"availability": av.as_dict()} if av else {}),
         text=a.to_text() + (f"\n{av.to_text()}" if av is not None else ""))


# --------------------------------------------------------------------------- calibrate (issue 13)
@main.command("calibrate")
@click.argument("logs", nargs=-1, required=True, type=click.Path(dir_okay=True))
@click.option("--fabric", "fabric", required=True, help="The fabric the logs were measured on.")
@set_option
@opt("--group-size", type=click.IntRange(min=1), doc=f"{RUNS}:calibrate_logs")
@opt("--mesh", doc=f"{RUNS}:calibrate_logs")
@opt("--over", doc=f"{RUNS}:calibrate_logs")
@click.option("-o", "--output", "output", type=click.Path(dir_okay=False),
              help="Write the calibration TOML here (one section per fitted collective).")
@json_option("Print fits and points as JSON (schema in docs/json.md).")
@opt("--collective", type=Choice("collectives:COLLECTIVES"), doc=f"{RUNS}:calibrate_logs")
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
    from .collectives.report_text import calibration_text
    from .collectives.runs import calibrate_logs
    G = load_fabric(fabric, sets)
    res = calibrate_logs(G, logs, collective=collective, group_size=group_size, mesh=mesh, over=over)
    if output:
        try:
            Path(output).write_text(res.toml())
        except OSError as exc:
            raise click.BadParameter(f"{output}: {exc.strerror}", param_hint="-o") from None
    emit(res.as_dict()) if as_json else click.echo(calibration_text(res))
    if output:
        _progress(f"wrote {output}")


# --------------------------------------------------------------------------- step (issue 15), serve (issue 25)
STEP, SERVE = f"{RUNS}:step_jobs", "collectives.serve:serve"
model_fabrics = option_group(
    click.option("--fabric", "fabric", help="A catalog name or a fabric file."), set_option,
    click.option("--fabrics", "fabric_list", help="Comma-separated fabrics: the same run on each (--set "
                 "FABRIC:KEY=VALUE as compare's)."))


@main.command("step")
@opt("--model", "model", required=True, doc=STEP)
@model_fabrics
@opt("--mesh", "mesh", required=True, doc=STEP)
@opt("--phase", type=Choice("collectives.jobs.step:PHASES"), default="decode", show_default=True, doc=STEP)
@opt("--batch", type=int, default=1, show_default=True, doc=STEP)
@opt("--seq", type=int, doc=STEP)
@opt("--compute-us", "compute_us", type=Number(0.0, 1e300, unit=" us"), doc=STEP)
@opt("--dispatch-dtype", type=Choice("collectives.traffic.moe:DTYPE_BYTES"), default="fp8", show_default=True, doc=STEP)
@opt("--combine-dtype", type=Choice("collectives.traffic.moe:DTYPE_BYTES"), default="bf16", show_default=True, doc=STEP)
@opt("--skew", default="balanced", show_default=True, doc=STEP)
@opt("--seed", type=click.IntRange(min=0), default=0, show_default=True, doc=STEP)
@opt("--dedup", type=Choice("collectives.traffic:DEDUPS"), default="rank", show_default=True, doc=STEP)
@plot_option("Write a stacked bar per fabric (communication per token by collective) to a .png, .svg or .pdf.")
@json_option("Print the step as JSON (an array with --fabrics).")
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
    from .collectives.report_text import steps_text
    from .collectives.runs import step_jobs
    names = fabric_names(fabric, fabric_list)
    if sets and len(names) > 1:
        raise click.UsageError("--set applies to one --fabric, not to --fabrics")
    graphs = {n: load_fabric(n, sets, param="fabric" if fabric else "fabrics") for n in names}
    results = step_jobs(graphs, model, mesh, progress=_progress, **opts)
    show(results, as_json, plot, "collectives.jobs.step:plot_step", per_token=True,
         text=steps_text(results, opts["compute_us"]),
         data=results[0].as_dict() if fabric else [r.as_dict() for r in results])


@main.command("serve")
@opt("--model", "model", required=True, doc=SERVE)
@model_fabrics
@opt("--isl", type=int, default=8192, show_default=True, doc=SERVE)
@opt("--osl", type=int, default=1024, show_default=True, doc=SERVE)
@opt("--mesh", "mesh", default="search", show_default=True, doc=SERVE)
@opt("--concurrency", type=click.IntRange(min=1), doc=SERVE)
@opt("--max-concurrency", "max_concurrency", type=click.IntRange(min=1), doc=SERVE)
@opt("--menu", type=Choice("collectives.serve.menu:MENUS"), default="search", show_default=True, doc=SERVE)
@opt("--mtp", type=int, default=0, show_default=True, doc=SERVE)
@opt("--library", type=Choice("collectives.serve.network:LIBRARY_CHOICES"), default="auto", show_default=True,
     doc=SERVE)
@opt("--overlap", type=Choice("collectives.serve.model:OVERLAPS"), default="none", show_default=True, doc=SERVE)
@opt("--disaggregate", "disaggregate", metavar="prefill=P,decode=D", doc=SERVE)
@opt("--chip-set", "chip_sets", multiple=True, metavar="KEY=VALUE", doc=SERVE)
@opt("--fail", "fails", multiple=True, metavar="SPEC", doc="collectives.serve:serve_failed")
@opt("--fail-class", "failure_class", metavar="CLASS", doc="collectives.serve:serve_failure_class")
@opt("--fold/--no-fold", default=True, show_default=True, doc="collectives.serve:serve_failure_class")
@plot_option("Write the tokens/s/kW vs tokens/s/user frontier per fabric to a .png, .svg or .pdf.")
@json_option("Print JSON (an array with --fabrics).")
def serve_cmd(model, fabric, sets, fabric_list, isl, osl, mesh, concurrency, max_concurrency, menu, mtp, library,
              overlap, disaggregate, chip_sets, fails, failure_class, fold, plot, as_json):
    """Token economics of serving MODEL on a fabric: TPOT, TTFT, tokens/s per user, chip and kW, $/Mtok.

    Each step is priced per layer from the chip's roofline (compute, HBM), the network
    (the flow solver, with a named communication library) and kernel launches; a
    concurrency sweep searches the mesh per point.  See collectives/serve/.

    \b
    Examples:
      fabricsim serve --model gpt-oss-120b --fabric jalapeno-rack
      fabricsim serve --model deepseek-r1 --fabric nvl72 --set generation=gb300 --mtp 1 --json
      fabricsim serve --model kimi-k2 --fabrics jalapeno-rack,nvl72 --set nvl72:accelerator=gb300 --plot f.png
      fabricsim serve --model deepseek-r1 --fabric jalapeno-pod --fail-class rail-switch --concurrency 256
      fabricsim serve --model deepseek-r1 --fabric jalapeno-rack --chip-set prefill_compute_efficiency=0.25
    """
    from .collectives.serve import serve, serve_failed, serve_failure_class
    if fails and failure_class:
        raise click.UsageError("give --fail SPEC or --fail-class CLASS, not both")
    if not fold and not failure_class:
        raise click.UsageError("--no-fold goes with --fail-class CLASS")
    if plot and (fails or failure_class):
        raise click.UsageError("--plot draws the healthy sweep's frontier; run it without --fail / --fail-class")
    from .fabrics.loader import load_fabrics
    fabric_names(fabric, fabric_list)
    # one fabric: --set KEY=VALUE; --fabrics: --set FABRIC:KEY=VALUE (as compare)
    graphs = [load_fabric(fabric, sets)] if fabric else [G for _, G, _ in load_fabrics(fabric_list, sets)]
    kw = dict(isl=isl, osl=osl, mesh=None if mesh == "search" else mesh, concurrency=concurrency, mtp=mtp,
              library=library, overlap=overlap, progress=_progress, max_concurrency=max_concurrency, menu=menu,
              disaggregate=disaggregate, constants=chip_sets)
    with about("model"):
        results = [serve_failed(G, model, fails, **kw) if fails else
                   serve_failure_class(G, model, failure_class, fold=fold, **kw) if failure_class else
                   serve(G, model, **kw) for G in graphs]
    show(results, as_json, plot, "collectives.serve:plot_frontier",
         text="\n\n".join(r.to_text() for r in results),
         data=results[0].as_dict() if fabric else [r.as_dict() for r in results])


# --------------------------------------------------------------------------- mix (issue 15), design (issue 28)
@main.command("mix")
@click.argument("spec", type=click.Path(dir_okay=False), required=False)
@opt("--chakra", "chakra_dir", type=click.Path(file_okay=False), default=None, doc=f"{RUNS}:mix_job")
@fabric_option
@set_option
@opt("--split", type=Choice("collectives.engine:SPLIT_CHOICES", drop=("adaptive",)), default=None,
     doc=f"{RUNS}:mix_job")
@opt("--tiers", type=Choice("topo.routing.core:TIER_MODES"), default="rule", show_default=True, doc=f"{RUNS}:mix_job")
@opt("--efficiency", type=Number(1e-6, 1.0), default=None, doc=f"{RUNS}:mix_job")
@opt("--step-latency-us", type=Number(0.0, 1e9, unit=" us"), default=None, doc=f"{RUNS}:mix_job")
@json_option("Print the mix result as JSON (schema in docs/json.md).")
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
    from .collectives.report_text import mix_text
    from .collectives.runs import mix_job
    if (spec is None) == (chakra_dir is None):
        raise click.UsageError("give a SPEC file or --chakra DIR (one of them)")
    G = load_fabric(fabric, sets)
    with timed("mixed"):
        r = mix_job(G, spec, chakra=chakra_dir, split=split, tiers=tiers, efficiency=efficiency,
                    step_latency_us=step_latency_us, progress=_progress)
    emit(r.as_dict()) if as_json else click.echo(mix_text(r))


DESIGN = "collectives.design:design"


@main.command("design")
@click.argument("space", type=click.Path(dir_okay=False))
@opt("--workers", type=click.IntRange(min=1), default=1, show_default=True, doc=RUNNER)
@_SCHEDULER
@_RESUME
@opt("--prune/--no-prune", default=True, show_default=True, doc=DESIGN)
@opt("--search", type=Choice("collectives.design.search:SEARCHES"), default="auto", show_default=True, doc=DESIGN)
@opt("--evaluations", type=click.IntRange(min=1), default=500, show_default=True, doc=DESIGN)
@opt("--seed", type=click.IntRange(min=0), default=0, show_default=True, doc=DESIGN)
@opt("--budget-s", type=Number(1e-3, 1e9, unit=" s"), default=None, doc=DESIGN)
@click.option("-o", "--output-dir", "out_dir", type=click.Path(file_okay=False),
              help="Write each Pareto-front design as a fabric file (node-link JSON) into this folder.")
@plot_option("Write the priced designs and the front to a PNG.")
@json_option("Print the search as JSON (builder, evaluated, pruned, pareto, all).")
def design_cmd(space, workers, scheduler, results_file, prune, search, evaluations, seed, budget_s, out_dir, plot,
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
    from .collectives.runs import design_job
    from .fabrics import build
    from .fabrics.loader import write_fabrics
    from .fabrics.registry import builder_params
    sp, r = design_job(space, build=build, builders=builder_params(), make_runner=runner_maker(workers, scheduler),
                       progress=_progress, prune=prune, search=search, evaluations=evaluations, seed=seed,
                       budget_s=budget_s, results_file=results_file)
    if out_dir:
        try:
            write_fabrics(sp.builder, [(p.params, sp.params_text(p.params)) for p in r.front()], out_dir)
        except OSError as exc:
            raise write_error(exc, out_dir) from None
        _progress(f"wrote {len(r.pareto)} fabric file(s) into {out_dir}")
    show(r, as_json, plot, "collectives.design:plot_front")


if __name__ == "__main__":  # pragma: no cover
    main()
