"""What an export wrote and what its target format loses, as lines for stderr (``fabricsim export`` prints them;
a notebook can too).  Every count is read from the graph and the writer's result."""
from __future__ import annotations

__all__ = ["EXPORT_FORMATS", "export_lines", "imported_lines"]

# format -> the file suffixes it writes (the first match of -o's suffix picks the default format)
EXPORT_FORMATS = {"graphml": (".graphml",), "json": (".json",), "astra-sim": (".yml", ".yaml"), "simai": (".txt",),
                  "infragraph": (".json",)}


def export_lines(fmt: str, G, out, path) -> list[str]:
    """The first line says what was written to ``path``; the rest (``fabricsim: ...``) what the mapping loses.

    ``out`` is the writer's result: an ``AstraNetwork``, ``SimaiTopology`` or ``InfraGraphDocument`` for
    those formats, anything for graphml / json (the graph's own counts are printed).
    """
    if fmt == "astra-sim":
        return ([f"wrote {path}: {' x '.join(f'{d.topology}({d.npus})' for d in out.dims)} = {out.npus:,} NPUs"]
                + [f"fabricsim: the ASTRA-sim mapping loses: {x}" for x in out.losses])
    if fmt == "simai":
        return ([f"wrote {path}: {len(out.gpus):,} GPUs ({out.gpus_per_server} per server), {len(out.nvswitches):,} "
                 f"NVSwitches, {len(out.switches):,} switches, {len(out.links):,} links; losses in {path}.json"]
                + [f"fabricsim: the SimAI mapping loses: {x}" for x in out.losses])
    if fmt == "infragraph":
        infra = out.infrastructure
        return ([f"wrote {path}: {sum(i['count'] for i in infra['instances']):,} device instances, "
                 f"{G.number_of_edges():,} bundles in {len(infra['edges']):,} edge entries of {len(infra['links']):,} "
                 f"link classes (InfraGraph)"]
                + [f"fabricsim: InfraGraph carries only as annotations: {x}" for x in out.notes])
    return [f"wrote {path}: {G.number_of_nodes():,} nodes, {G.number_of_edges():,} links"]


def imported_lines(G, path, chips_word: str = "chips", detail: str = "") -> list[str]:
    """What an imported fabric written to ``path`` holds (chips, switches, links), and what was inferred."""
    from .contract import CHIP, KIND
    chips = sum(1 for _, d in G.nodes(data=True) if d.get(KIND) == CHIP)
    return ([f"wrote {path}: {chips:,} {chips_word}, {G.number_of_nodes() - chips:,} switches, "
             f"{G.number_of_edges():,} links{detail}"]
            + [f"fabricsim: {what}: {G.graph[what]}" for what in ("inferred", "notes") if G.graph.get(what)])
