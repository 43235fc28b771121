"""The commands that trade files with other tools: ``export`` (GraphML, node-link JSON, ASTRA-sim, SimAI,
InfraGraph) and the ``import`` group (NCCL topology dumps, InfraGraph documents, Chakra traces).

They are :mod:`fabricsim.cli`'s commands (``fabricsim export``, ``fabricsim import ...``), kept in their own
module as the seam between fabricsim and the formats it reads and writes; the writers, readers and the text
they print are library functions (``topo.export``, ``topo.export_text``, ``fabrics.nccl_topo``,
``fabrics.infragraph_io``, ``collectives.runs.chakra_to_mix``).
"""
from __future__ import annotations

from pathlib import Path

import click

from .cli_options import EXPORT_SUFFIXES, Command, Group, Number, OutputPath, fabric_output, set_option, written
from .fabrics.loader import load_fabric
from .topo.console import progress as _progress
from .topo.errors import about

__all__ = ["export_cmd", "import_grp"]


@click.command("export", cls=Command)
@click.argument("fabric")
@set_option
@click.option("-o", "--output", "output", required=True, type=OutputPath(EXPORT_SUFFIXES),
              help="Output file: .graphml, .json (node-link, or InfraGraph with --format infragraph), .yml "
                   "(ASTRA-sim network config) or .txt (SimAI ns-3 topology).")
@click.option("--format", "fmt", type=click.Choice(["graphml", "json", "astra-sim", "simai", "infragraph"]),
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
    from .fabrics.userfile import export_fabric
    from .topo import export as X
    from .topo.export_text import EXPORT_FORMATS, export_lines
    suffix = Path(output).suffix.lower()
    fmt = fmt or next(f for f, sfx in EXPORT_FORMATS.items() if suffix in sfx)
    if suffix not in EXPORT_FORMATS[fmt]:
        raise click.BadParameter(f"{output!r}: --format {fmt} writes {' or '.join(EXPORT_FORMATS[fmt])} files",
                                 param_hint="--output")
    G = load_fabric(fabric, sets)
    write = {"astra-sim": X.write_astra, "simai": X.write_simai, "infragraph": X.write_infragraph}.get(fmt,
                                                                                                   export_fabric)
    out = written(write, output, G, say=False)
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


@import_grp.command("nccl-topo")
@click.argument("xml_file", metavar="FILE.xml", type=click.Path(dir_okay=False))
@click.option("--nodes", type=click.IntRange(1), default=1, show_default=True,
              help="Copies of the node, joined rail-optimized (GPU r of every node on rail r's leaf, spines).")
@click.option("--nic-gbps", type=Number(0.0, 1e7, open_lo=True, unit=" Gb/s"), default=None,
              help="Per-direction NIC port rate, Gb/s (default: each <net>'s speed).")
@click.option("--spine-oversubscription", type=Number(0.0, 1e6, open_lo=True), default=1.0, show_default=True,
              help="Leaf down:up bandwidth with --nodes > 1 (1 = non-blocking).")
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
