"""Chakra execution traces in: per-rank communication as concurrent mix jobs with ``after`` dependencies.

A Chakra trace directory (what ASTRA-sim, LLMServingSim and COSMIC read) holds one execution
trace per rank, ``<prefix>.<rank>.et`` (ASTRA-sim's ``--workload-configuration=<dir>/<prefix>``),
and optionally the communicator groups as JSON, ``{"<pg_name>": [ranks ...]}`` (ASTRA-sim's
``--comm-group-configuration``; F: astra-sim Workload::initialize_comm_groups reads the keys as the
decimal group ids the traces' pg_name carry, the values as NPU lists, or ``{"ranks": [...]}``).  A trace file is a stream of protobuf messages, each prefixed
by its length as a varint: one ``GlobalMetadata``, then ``Node`` messages (F: mlcommons/chakra
``src/third_party/utils/protolib.py`` encodeMessage / decodeMessage; gzip-compressed files are
read too, as its openFileRd does).

Schema facts used (F: mlcommons/chakra ``schema/protobuf/et_def.proto`` at 6dc63e1, package
``ChakraProtoMsg``; the message definitions below are written here from those facts, built at
run time with the ``protobuf`` package, ``pip install 'fabricsim[chakra]'``):

* ``Node``: id (1, uint64), name (2), type (3, NodeType), ctrl_deps (4) and data_deps (5)
  (repeated uint64), start_time_micros (6), duration_micros (7), attr (10, AttributeProto);
* ``NodeType``: COMP_NODE 4, COMM_SEND_NODE 5, COMM_RECV_NODE 6, COMM_COLL_NODE 7 (others:
  metadata, memory, storage, batch, checkpoint);
* ``AttributeProto``: name (1) and a oneof value (int32 7, int64 9, uint32 11, uint64 13,
  bool 27, string 29, ...);
* collective attributes (F: chakra ``src/converter/pytorch_converter.py``, ``src/feeder/
  et_feeder_node.cpp``): ``comm_type`` (CollectiveCommType: ALL_REDUCE 0, REDUCE 1,
  ALL_GATHER 2, GATHER 3, SCATTER 4, BROADCAST 5, ALL_TO_ALL 6, REDUCE_SCATTER 7,
  REDUCE_SCATTER_BLOCK 8, BARRIER 9), ``comm_size`` (bytes of the op's input tensors on one
  rank: chakra ``pytorch_node.comm_size`` sums the inputs), ``pg_name``.

The mapping:

* every collective node is one rank's part of a collective; the k-th collective node on
  process group P in every member rank's trace is the same collective (NCCL issues a
  communicator's collectives in the same order on every rank), one mix job on P's ranks;
  its members must agree on type and size;
* S (nccl-tests' size, as ``price`` takes it) = comm_size, except all-gather: S = comm_size x
  the group's ranks (F: astra-sim ``Ring`` sets final_data_size = data_size x nodes for All_Gather,
  data_size for All_Reduce and All_to_All, data_size / nodes for Reduce_Scatter: comm_size is one
  rank's shard of an all-gather and the whole buffer otherwise, as nccl-tests' S is);
* a compute node with a recorded duration becomes a delay job of that duration
  (:mod:`fabricsim.collectives.jobs.delays`); the other nodes (compute without a duration,
  metadata, memory, sends and receives) pass their dependencies through and are counted in
  the notes;
* dependencies (ctrl_deps and data_deps) become ``after``: a job comes after the nearest jobs
  its node depends on, on every member rank;
* trace rank r is chip rank r of the fabric; ranks of a process group come from the JSON file,
  else from the traces that use the group (in rank order); a node without pg_name uses every
  rank of the directory.

A malformed or unsupported trace raises :class:`~fabricsim.topo.errors.BadInput` in one line
naming the file and the node.
"""
from __future__ import annotations

import gzip
import json
import re
from dataclasses import dataclass
from pathlib import Path

from ...topo.errors import BadInput
from .delays import DELAY
from .mix import Job

__all__ = ["messages", "read_trace", "write_trace", "ChakraWorkload", "load_chakra", "jobs_toml", "COMM_TYPES"]

# CollectiveCommType -> fabricsim collective (F: et_def.proto); None: no fabricsim collective prices it
COMM_TYPES = {0: "all-reduce", 1: None, 2: "all-gather", 3: None, 4: None, 5: None, 6: "all-to-all",
              7: "reduce-scatter", 8: "reduce-scatter", 9: None}
COMM_NAMES = {0: "ALL_REDUCE", 1: "REDUCE", 2: "ALL_GATHER", 3: "GATHER", 4: "SCATTER", 5: "BROADCAST",
              6: "ALL_TO_ALL", 7: "REDUCE_SCATTER", 8: "REDUCE_SCATTER_BLOCK", 9: "BARRIER"}
NODE_TYPES = {0: "INVALID_NODE", 1: "METADATA_NODE", 2: "MEM_LOAD_NODE", 3: "MEM_STORE_NODE", 4: "COMP_NODE",
              5: "COMM_SEND_NODE", 6: "COMM_RECV_NODE", 7: "COMM_COLL_NODE", 8: "STORAGE_NODE",
              9: "BATCH_NODE", 10: "CHECKPOINT_NODE"}
COMP_NODE, COMM_COLL_NODE = 4, 7
_TRACE = re.compile(r"^(?P<prefix>.+)\.(?P<rank>\d+)\.et(?:\.gz)?$")
_MAX_MESSAGE_BYTES = 1 << 30        # a length prefix past 1 GiB is a damaged file, not a node (I)
_MESSAGES: dict = {}


def messages() -> dict:
    """The Chakra message classes ``{"GlobalMetadata", "Node", "AttributeProto"}`` (protobuf, built once)."""
    if _MESSAGES:
        return _MESSAGES
    try:
        from google.protobuf import descriptor_pb2, descriptor_pool, message_factory
    except ImportError:
        raise BadInput("Chakra traces need the protobuf package: pip install 'fabricsim[chakra]'") from None
    F = descriptor_pb2.FieldDescriptorProto
    fd = descriptor_pb2.FileDescriptorProto(name="fabricsim_chakra_et.proto", package="ChakraProtoMsg",
                                            syntax="proto3")

    def msg(name, fields, oneof=None):
        m = fd.message_type.add(name=name)
        if oneof:
            m.oneof_decl.add(name=oneof)
        for num, fname, ftype, label, tname, in_oneof in fields:
            f = m.field.add(name=fname, number=num, type=ftype, label=label)
            if tname:
                f.type_name = f".ChakraProtoMsg.{tname}"
            if in_oneof:
                f.oneof_index = 0
    opt, rep = F.LABEL_OPTIONAL, F.LABEL_REPEATED
    msg("AttributeProto", [(1, "name", F.TYPE_STRING, opt, None, False),
                           (2, "doc_string", F.TYPE_STRING, opt, None, False),
                           (3, "double_val", F.TYPE_DOUBLE, opt, None, True),
                           (5, "float_val", F.TYPE_FLOAT, opt, None, True),
                           (7, "int32_val", F.TYPE_INT32, opt, None, True),
                           (9, "int64_val", F.TYPE_INT64, opt, None, True),
                           (11, "uint32_val", F.TYPE_UINT32, opt, None, True),
                           (13, "uint64_val", F.TYPE_UINT64, opt, None, True),
                           (15, "sint32_val", F.TYPE_SINT32, opt, None, True),
                           (17, "sint64_val", F.TYPE_SINT64, opt, None, True),
                           (27, "bool_val", F.TYPE_BOOL, opt, None, True),
                           (29, "string_val", F.TYPE_STRING, opt, None, True)], oneof="value")
    msg("GlobalMetadata", [(1, "version", F.TYPE_STRING, opt, None, False),
                           (2, "attr", F.TYPE_MESSAGE, rep, "AttributeProto", False)])
    msg("Node", [(1, "id", F.TYPE_UINT64, opt, None, False), (2, "name", F.TYPE_STRING, opt, None, False),
                 (3, "type", F.TYPE_INT32, opt, None, False),     # NodeType (an enum is a varint on the wire)
                 (4, "ctrl_deps", F.TYPE_UINT64, rep, None, False), (5, "data_deps", F.TYPE_UINT64, rep, None, False),
                 (6, "start_time_micros", F.TYPE_UINT64, opt, None, False),
                 (7, "duration_micros", F.TYPE_UINT64, opt, None, False),
                 (10, "attr", F.TYPE_MESSAGE, rep, "AttributeProto", False)])
    pool = descriptor_pool.DescriptorPool()
    pool.Add(fd)
    for name in ("AttributeProto", "GlobalMetadata", "Node"):
        _MESSAGES[name] = message_factory.GetMessageClass(pool.FindMessageTypeByName(f"ChakraProtoMsg.{name}"))
    return _MESSAGES


def _varint(buf: bytes, pos: int) -> tuple[int, int]:
    result = shift = 0
    while True:
        if pos >= len(buf):
            raise ValueError("the file ends inside a length prefix")
        b = buf[pos]
        pos += 1
        result |= (b & 0x7F) << shift
        if not b & 0x80:
            return result, pos
        shift += 7
        if shift >= 64:
            raise ValueError("a length prefix longer than 10 bytes")


def read_trace(path) -> tuple:
    """``(GlobalMetadata, [Node ...])`` of one Chakra trace file (plain or gzip)."""
    from google.protobuf.message import DecodeError
    M = messages()
    path = Path(path)
    try:
        raw = path.read_bytes()
        if raw[:2] == b"\x1f\x8b":
            raw = gzip.decompress(raw)
    except OSError as exc:     # gzip.BadGzipFile is an OSError
        raise BadInput(f"{path}: {getattr(exc, 'strerror', None) or exc}") from None
    except EOFError:
        raise BadInput(f"{path}: the gzip stream is cut short") from None
    pos, k, meta, nodes = 0, 0, None, []
    while pos < len(raw):
        start = pos
        what = "GlobalMetadata" if k == 0 else f"node message {k}"
        try:
            size, pos = _varint(raw, pos)
            if size > _MAX_MESSAGE_BYTES or pos + size > len(raw):
                raise ValueError(f"its length prefix says {size:,} bytes but {len(raw) - pos:,} remain")
            msg = (M["GlobalMetadata"] if k == 0 else M["Node"])()
            msg.ParseFromString(raw[pos:pos + size])
        except (ValueError, DecodeError, RecursionError) as exc:
            raise BadInput(f"{path}: {what} at byte {start:,}: not a Chakra {what.split()[0]} "
                           f"({' '.join(str(exc).split()) or type(exc).__name__})") from None
        pos += size
        if k == 0:
            meta = msg
        else:
            nodes.append(msg)
        k += 1
    if meta is None:
        raise BadInput(f"{path}: empty; a Chakra trace starts with a GlobalMetadata message")
    return meta, nodes


def write_trace(path, nodes, version: str = "0.0.4") -> Path:
    """Write ``nodes`` (Node messages) as a Chakra trace file: GlobalMetadata, then the nodes, length-prefixed."""
    M = messages()
    path = Path(path)

    def varint(n):
        out = bytearray()
        while True:
            b, n = n & 0x7F, n >> 7
            out.append(b | (0x80 if n else 0))
            if not n:
                return bytes(out)
    with open(path, "wb") as fh:
        for m in [M["GlobalMetadata"](version=version), *nodes]:
            body = m.SerializeToString()
            fh.write(varint(len(body)) + body)
    return path


def _attrs(node) -> dict:
    out = {}
    for a in node.attr:
        which = a.WhichOneof("value")
        out[a.name] = getattr(a, which) if which else None
    return out


@dataclass(frozen=True)
class ChakraWorkload:
    """A Chakra trace directory as mix jobs: ``jobs`` (collectives and delays) and what was left out."""

    jobs: tuple
    ranks: int
    groups: dict                 # pg name -> ranks
    notes: tuple[str, ...]


def _files(d: Path) -> tuple[dict, Path | None]:
    if not d.is_dir():
        raise BadInput(f"{d}: not a directory of Chakra traces (<prefix>.<rank>.et files)")
    traces, prefixes = {}, set()
    for p in sorted(d.iterdir()):
        m = _TRACE.match(p.name)
        if m and p.is_file():
            prefixes.add(m["prefix"])
            traces[int(m["rank"])] = p
    if not traces:
        raise BadInput(f"{d}: no Chakra traces (<prefix>.<rank>.et files)")
    if len(prefixes) > 1:
        raise BadInput(f"{d}: traces of several workloads ({', '.join(sorted(prefixes))}); one prefix per directory")
    missing = sorted(set(range(max(traces) + 1)) - set(traces))
    if missing:
        raise BadInput(f"{d}: no trace for rank {missing[0]} (ranks 0..{max(traces)} need one file each)")
    jsons = sorted(p for p in d.iterdir() if p.suffix == ".json" and p.is_file())
    if len(jsons) > 1:
        raise BadInput(f"{d}: several JSON files ({', '.join(p.name for p in jsons)}); keep one communicator "
                       f"group file")
    return traces, (jsons[0] if jsons else None)


def _comm_groups(path: Path, n_ranks: int) -> dict:
    from ...topo.inputs import read_input_text
    try:
        data = json.loads(read_input_text(path, "a communicator group JSON file"))
    except json.JSONDecodeError as exc:
        where = f"line {exc.lineno}, column {exc.colno}: " if isinstance(exc, json.JSONDecodeError) else ""
        raise BadInput(f"{path}: {where}not a communicator group file ({getattr(exc, 'msg', exc)})") from None
    if not isinstance(data, dict):
        raise BadInput(f"{path}: a communicator group file is an object {{\"pg_name\": [ranks ...]}}")
    out = {}
    for name, ranks in data.items():
        if isinstance(ranks, dict) and "ranks" in ranks:    # {"ranks": [...], "dimensions": [...]} form
            ranks = ranks["ranks"]
        if not (isinstance(ranks, list) and ranks and all(isinstance(r, int) and not isinstance(r, bool)
                                                          for r in ranks)):
            raise BadInput(f"{path}: group {name!r}: {ranks!r} is not a list of ranks")
        bad = [r for r in ranks if not 0 <= r < n_ranks]
        if bad or len(set(ranks)) != len(ranks):
            raise BadInput(f"{path}: group {name!r}: rank {bad[0] if bad else ranks} is not one of the traces' "
                           f"ranks 0..{n_ranks - 1} (each once)")
        out[str(name)] = list(ranks)
    return out


def load_chakra(directory) -> ChakraWorkload:
    """Read a Chakra trace directory into mix jobs (see the module docstring for the mapping).

    Examples
    --------
    >>> import tempfile, pathlib
    >>> M = messages()
    >>> d = pathlib.Path(tempfile.mkdtemp())
    >>> for r in range(2):
    ...     ar = M["Node"](id=1, name="ar", type=7, attr=[M["AttributeProto"](name="comm_type", int64_val=0),
    ...                                                   M["AttributeProto"](name="comm_size", int64_val=2**20)])
    ...     _ = write_trace(d / f"step.{r}.et", [ar])
    >>> w = load_chakra(d)
    >>> [(j.name, j.collective, j.groups, j.size_bytes) for j in w.jobs]
    [('world#0 ar', 'all-reduce', ((0, 1),), 1048576.0)]
    """
    d = Path(directory)
    traces, group_file = _files(d)
    n = len(traces)
    declared = _comm_groups(group_file, n) if group_file else {}
    per_rank, topo_of = {}, {}
    for r, p in traces.items():
        _, nodes = read_trace(p)
        by_id = {}
        for node in nodes:
            if node.id in by_id:
                raise BadInput(f"{p}: node {node.id} ({node.name!r}) repeats an id; each node once")
            by_id[node.id] = node
        for node in nodes:
            for dep in list(node.ctrl_deps) + list(node.data_deps):
                if dep not in by_id:
                    raise BadInput(f"{p}: node {node.id} ({node.name!r}) depends on node {dep}, which the trace "
                                   f"does not hold")
        from graphlib import CycleError, TopologicalSorter
        try:
            topo = list(TopologicalSorter({nid: list(nd.ctrl_deps) + list(nd.data_deps)
                                           for nid, nd in by_id.items()}).static_order())
        except CycleError as exc:
            cyc = exc.args[1]
            raise BadInput(f"{p}: node {cyc[0]} ({by_id[cyc[0]].name!r}) depends on itself through "
                           f"{' -> '.join(map(str, cyc))}") from None
        per_rank[r] = (p, by_id)
        topo_of[r] = topo
    # every collective node, per rank, in id order per process group
    coll: dict = {}            # (pg, k) -> {rank: node}
    seq: dict = {}             # (rank, node id) -> (pg, k)
    skipped: dict = {}
    users: dict = {}           # pg -> ranks using it (a set)
    for r, (p, by_id) in per_rank.items():
        count: dict = {}
        for nid in sorted(by_id):
            node = by_id[nid]
            if node.type == COMM_COLL_NODE:
                a = _attrs(node)
                pg = str(a.get("pg_name") or "world")
                k = count.get(pg, 0)
                count[pg] = k + 1
                coll.setdefault((pg, k), {})[r] = node
                seq[(r, nid)] = (pg, k)
                users.setdefault(pg, set()).add(r)
            elif node.type != COMP_NODE or not node.duration_micros:
                what = NODE_TYPES.get(node.type, f"type {node.type}")
                what = "COMP_NODE without a duration" if node.type == COMP_NODE else what
                skipped[what] = skipped.get(what, 0) + 1
    groups = {}
    for pg, ranks in users.items():
        if pg in declared:
            groups[pg] = declared[pg]
        elif pg == "world":
            groups[pg] = list(range(n))
        else:
            groups[pg] = sorted(ranks)
    # collectives: members agree on type and size; every member holds it
    jobs, name_of = [], {}
    for (pg, k), members in coll.items():
        want = groups[pg]
        r0 = min(members)
        p0, node0 = per_rank[r0][0], members[r0]
        stray = sorted(set(members) - set(want))
        if stray:
            raise BadInput(f"{per_rank[stray[0]][0]}: node {members[stray[0]].id} ({members[stray[0]].name!r}): "
                           f"rank {stray[0]} is not in process group {pg!r} (ranks {want})")
        lost = sorted(set(want) - set(members))
        if lost:
            raise BadInput(f"{per_rank[lost[0]][0]}: has no collective #{k} on process group {pg!r}; rank {r0} "
                           f"has node {node0.id} ({node0.name!r}) there (every member issues each collective)")
        a0 = _attrs(node0)
        for r, node in members.items():
            a = _attrs(node)
            for key in ("comm_type", "comm_size"):
                if a.get(key) is None:
                    raise BadInput(f"{per_rank[r][0]}: node {node.id} ({node.name!r}): a COMM_COLL_NODE without "
                                   f"{key}")
                if a[key] != a0[key]:
                    raise BadInput(f"{per_rank[r][0]}: node {node.id} ({node.name!r}): {key} {a[key]} but rank "
                                   f"{r0}'s node {node0.id} ({node0.name!r}), the same collective #{k} on "
                                   f"{pg!r}, has {a0[key]}")
        ctype, size = int(a0["comm_type"]), int(a0["comm_size"])
        coll_name = COMM_TYPES.get(ctype)
        if coll_name is None:
            valid = ", ".join(f"{COMM_NAMES[c]} ({c})" for c, v in COMM_TYPES.items() if v)
            raise BadInput(f"{p0}: node {node0.id} ({node0.name!r}): comm_type "
                           f"{COMM_NAMES.get(ctype, ctype)} has no fabricsim collective; priced: {valid}")
        if len(want) < 2:
            raise BadInput(f"{p0}: node {node0.id} ({node0.name!r}): process group {pg!r} has one rank; "
                           f"a collective needs two or more")
        if size < 1:
            raise BadInput(f"{p0}: node {node0.id} ({node0.name!r}): comm_size {size} must be >= 1 byte")
        s = float(size * len(want)) if coll_name == "all-gather" else float(size)
        name = f"{pg}#{k}" + (f" {node0.name}" if node0.name else "")
        name_of[(pg, k)] = name
        jobs.append([name, coll_name, (tuple(want),), s, (pg, k)])
    # delays and dependencies
    delays = {}
    for r, (p, by_id) in per_rank.items():
        for nid in sorted(by_id):
            node = by_id[nid]
            if node.type == COMP_NODE and node.duration_micros:
                delays[(r, nid)] = f"rank{r} {nid}" + (f" {node.name}" if node.name else "")

    def job_of(r, nid):
        if (r, nid) in seq:
            return name_of[seq[(r, nid)]]
        return delays.get((r, nid))
    near: dict = {}            # (rank, node id) -> names of the nearest jobs the node depends on
    for r, (p, by_id) in per_rank.items():
        for nid in topo_of[r]:          # dependencies first: no recursion however long a chain
            node = by_id[nid]
            out: set = set()
            for dep in dict.fromkeys(list(node.ctrl_deps) + list(node.data_deps)):
                j = job_of(r, dep)
                out |= {j} if j else near[(r, dep)]
            near[(r, nid)] = out

    def after(r, nid):
        return near[(r, nid)]
    out_jobs = []
    for name, coll_name, grp, s, key in jobs:
        deps: set = set()
        for r, node in coll[key].items():
            deps |= after(r, node.id)
        deps.discard(name)
        out_jobs.append(Job(name, coll_name, grp, s, after=tuple(sorted(deps))))
    for (r, nid), name in delays.items():
        node = per_rank[r][1][nid]
        out_jobs.append(Job(name, DELAY, (), None, None, DELAY, tuple(sorted(after(r, nid))),
                            delay_s=node.duration_micros * 1e-6))    # D: micros -> s
    notes = [f"trace rank r is chip rank r ({n} ranks)"]
    if skipped:
        notes.append("not priced, dependencies passed through: "
                     + ", ".join(f"{c:,} {w}" for w, c in sorted(skipped.items())))
    if not out_jobs:
        raise BadInput(f"{d}: the traces hold no collective and no timed compute node; nothing to price")
    return ChakraWorkload(tuple(out_jobs), n, groups, tuple(notes))


def jobs_toml(jobs) -> str:
    """The ``[[job]]`` tables of ``jobs`` (collectives with explicit groups, delays), for ``fabricsim mix``."""
    def s(x):
        return json.dumps(x)     # a TOML basic string: JSON's escapes are TOML's
    out = []
    for j in jobs:
        out.append("[[job]]")
        out.append(f"name = {s(j.name)}")
        out.append(f"collective = {s(j.collective)}")
        if j.collective == DELAY:
            out.append(f"duration = {j.delay_s!r}")
        else:
            out.append(f"size = {int(j.size_bytes) if float(j.size_bytes).is_integer() else j.size_bytes!r}")
            out.append(f"groups = {json.dumps([list(g) for g in j.groups])}")
            if j.algorithm != "auto":
                out.append(f"algorithm = {s(j.algorithm)}")
        if j.after:
            out.append(f"after = {json.dumps(list(j.after))}")
        out.append("")
    return "\n".join(out)
