"""The command line's click machinery, shared by every command of :mod:`fabricsim.cli`.

Option types that give better messages than the library's checks (finite numbers in a range, output files),
the shared option groups (price, recovery, workers ...), the error path (a library ``BadInput`` names its
parameter; :data:`PARAMS` is the one table from that parameter to the command's option) and the closed-pipe
exit.  Nothing is computed or orchestrated here; commands and their help live in ``cli.py``.
"""
from __future__ import annotations

import sys
from pathlib import Path

import click

from .topo.console import progress as _progress
from .topo.console import to_json
from .topo.errors import BadInput, FabricError, about

PLOT_SUFFIXES = (".png", ".svg", ".pdf")
DTYPES = ("fp8", "bf16", "fp16", "fp32")   # collectives.traffic.moe.DTYPE_BYTES (a test checks they agree)

# ONE table: a library parameter (BadInput.param) -> the click parameter(s) that carry it, first found on the
# command wins; a name not listed is its own click name.  The option shown is that parameter's longest flag
# (or an argument's metavar); a parameter the command lacks shows as --name ("options": the price options).
PARAMS = {"groups": ("groups_file",), "traffic": ("traffic_path",), "moe": ("moe_spec",), "set": ("sets",),
           "fabrics": ("fabric_list",), "fabric": ("fabric", "fabric_list"), "rates": ("rates_file",),
           "resume": ("results_file",), "chakra": ("chakra_dir",), "failure_class": ("failure_class", "classes"),
           "classes": ("classes", "failure_class"), "fails": ("fails",), "output": ("output", "out_dir"),
           "options": ()}


def option_for(ctx: click.Context, param: str) -> str:
    names = PARAMS.get(param, (param,))
    for name in names:
        for p in ctx.command.params:
            if p.name == name:
                return max(p.opts, key=len) if isinstance(p, click.Option) else p.human_readable_name
    return "--" + param.replace("_", "-") if names else param


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
    """An output file name with one of ``suffixes`` (case-insensitive) in a directory that exists."""

    name = "FILE"

    def __init__(self, suffixes: tuple[str, ...] = PLOT_SUFFIXES):
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


class CollectiveChoice(click.Choice):
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


# --------------------------------------------------------------------------- errors, output
def shown(path) -> str:
    return str(path) if len(str(path)) <= 120 else f"{str(path)[:60]}... ({len(str(path)):,} characters)"


def write_error(exc: OSError, path) -> click.ClickException:
    """An OSError writing ``path`` as one line: the file and the system's reason."""
    return click.ClickException(f"cannot write {shown(path)}: {exc.strerror or exc}")


def emit(obj) -> None:
    click.echo(to_json(obj))


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
        try:
            # A figure that overflows or turns NaN is refused where the result is checked, in one line;
            # numpy's RuntimeWarnings on the way there would only be noise above it.
            with np.errstate(over="ignore", invalid="ignore", divide="ignore"):
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
collective_arg = click.argument("collective", type=CollectiveChoice())
worker_options = option_group(
    click.option("--workers", type=click.IntRange(min=1), default=1, show_default=True,
                 help="Local worker processes (ignored with --scheduler)."),
    click.option("--scheduler", metavar="tcp://HOST:PORT", help="Run the scenarios on an existing Dask distributed "
                 "scheduler (pip install 'fabricsim[dask]'); each worker builds the fabric once."))
fabric_output = click.option("-o", "--output", "output", required=True, type=OutputPath((".json", ".graphml")),
                             help="Fabric file to write: .json (node-link) or .graphml; every command takes it as "
                                  "FABRIC.")
EXPORT_SUFFIXES = (".graphml", ".json", ".yml", ".yaml", ".txt")   # topo.export_text.EXPORT_FORMATS' (a test checks)
fail_option = click.option("--fail", "fails", multiple=True, metavar="SPEC", help="A failure (repeatable): node:ID, "
                            "link:A--B, lanes:A--B=K, tray:ID, rail:2 ... (see `fabricsim domains FABRIC`).")
recovery_options = option_group(
    click.option("--recovery", type=click.Choice(["reroute", "restart"]), default="reroute", show_default=True,
                 help="reroute: the job keeps its chips, traffic routes around the failures; restart: the job is "
                 "placed again on the surviving chips (and spares), all-to-all groups shrink, other collectives "
                 "lose whole groups."),
    click.option("--spares", type=click.IntRange(min=0), default=0, show_default=True, help="With --recovery "
                 "restart: hold the N highest-ranked chips out of the job, used first on restart."))
def price_option_group(size_required: bool = True):
    """The pricing commands' options (size, placement, algorithm, protocol, calibration ...)."""
    o = click.option
    return option_group(
        o("--size", "size", required=size_required, help="S as nccl-tests defines it: per-rank buffer for all-reduce, "
          "whole buffer for the others, in bytes: 64MiB, 1GiB, 512KB ... (B = bytes; a lower-case b means bits and is "
          "refused)."),
        o("--group-size", type=int, help="Chips per group; all groups run at once (default: one group of every chip)."),
        o("--count", type=click.IntRange(min=1), help="With --group-size: run only this many groups (the size then "
          "need not divide the chips), e.g. one 64-chip group on every fabric."),
        o("--placement", default="auto", show_default=True, help="With --group-size: packed | spread | random[:SEED] | "
          "slice (a torus: the most compact boxes, e.g. Ironwood's 4x4x4 cubes; elsewhere whole trays/racks/boards) | "
          "auto (prices packed and slice, keeps the cheaper, says which in a note)."),
        o("--mesh", help="A parallelism mesh over chip ranks, TP innermost, e.g. tp=8,ep=32,dp=8."),
        o("--over", help="With --mesh: the dimension whose groups communicate (tp, ep, dp ...)."),
        o("--groups", "groups_file", type=click.Path(), help="JSON file: a list of groups, each a list of chip ranks "
          "or node ids."),
        o("--algorithm", default="auto", show_default=True, help="ring, ring-linked, direct, halving-doubling, "
          "hierarchical, torus-rings, torus-concurrent, nvls (all-reduce); direct, pairwise, hierarchical "
          "(all-to-all); auto picks the cheapest."),
        o("--protocol", type=click.Choice(["auto", "ll", "ll128", "simple", "ideal"]), default="auto",
          show_default=True, help="Step model: auto picks algorithm and protocol per size (NCCL-style, the fabric "
          "family's constants); ideal = protocol effects off (raw line rate, closed forms)."),
        o("--explain", is_flag=True, help="Say which fast path priced each phase (symmetry classes, per-flow ...) and "
          "why the others were refused."),
        o("--split", type=click.Choice(["equal", "capacity", "adaptive"]), default=None,
          help="Routing split: ECMP equal over next hops, weighted by surviving capacity, or adaptive (each flow "
          "spreads over all its equal-cost paths; multipath max-min fair rates, exact LP). Default: what the "
          "fabric's switches do (its declared switching: adaptive on Jalapeno, NVL72 / rail clusters; equal "
          "elsewhere); where adaptive cannot run it falls back to equal with a note."),
        o("--tiers", type=click.Choice(["rule", "any"]), default="rule", show_default=True, help="rule: the fabric's "
          "tier rules (Jalapeño: same rack local, other racks global); any: every shortest path."),
        o("--efficiency", type=Number(1e-6, 1.0), default=None, help="Calibration: fraction of line rate the links "
          "deliver (0-1], for every collective. Default: the fabric family's (ideal: 1)."),
        o("--step-latency-us", type=Number(0.0, 1e9, unit=" us"), default=None, help="Per-step overhead in "
          "microseconds (default: the fabric's, else 1 us)."),
        o("--calibration", type=click.Path(), help="TOML file of efficiency / step_latency_us, flat or in "
          "[collective] / [collective.algorithm] sections (`fabricsim calibrate` writes one)."),
        o("--bound-only", is_flag=True, help="Price by the link-load bound only (fast, no fairness)."),
        o("--per-flow", is_flag=True, help="Route and solve every flow even where symmetry (torus translations, "
          "interchangeable chips or positions) lets the phase be solved as classes (exact either way; a slower "
          "cross-check)."))


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


