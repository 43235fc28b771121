"""Drawings and charts: every catalog fabric draws, layouts follow the graph's structure,
labels do not overlap, utilization and pricing charts produce files."""
from __future__ import annotations

import math

import numpy as np
import pytest
from matplotlib.backends.backend_agg import FigureCanvasAgg

from fabricsim.collectives import by_size, price
from fabricsim.collectives.plots import link_utilization, plot_compare, plot_price, plot_sweep
from fabricsim.fabrics import FABRICS, build
from fabricsim.topo import builders
from fabricsim.topo.draw import (bundle_utilization, draw_fabric, draw_utilization, fabric_figure, layout_kind,
                                 utilization_figure)
from fabricsim.topo.routing import link_table

SLOW = {"ironwood", "tpu8t-virgo"}   # 9,216 chips: the build alone takes about a second; Virgo 134,400
FABRIC_PARAMS = [pytest.param(n, marks=pytest.mark.slow) if n in SLOW else n for n in sorted(FABRICS)]

EXPECTED_LAYOUT = {"jalapeno-rack": "layered", "jalapeno-pod": "layered", "nvl72": "layered", "helios": "layered",
                   "torus": "torus", "ironwood": "torus", "boardfly": "boardfly",
                   "maia200": "layered", "tpu8t-virgo": "layered", "tpu8t": "torus", "groq-lpx": "generic",
                   "mi355x": "generic", "hgx-a100": "layered", "hgx-h100": "layered", "hgx-b200": "layered",
                   "hgx-b300": "layered", "instinct-node": "layered", "rail-cluster": "layered",
                   "nvl72-cluster": "layered"}


def _texts(fig) -> list[str]:
    out = [t.get_text() for ax in fig.axes for t in ax.texts] + [t.get_text() for t in fig.texts]
    for leg in fig.legends:
        out += [t.get_text() for t in leg.get_texts()]
    return out


def _overlapping_labels(fig) -> list[tuple[str, str]]:
    """Pairs of non-empty texts whose boxes overlap by more than a pixel each way, and texts off the figure."""
    FigureCanvasAgg(fig).draw()
    r = fig.canvas.get_renderer()
    texts = [t for ax in fig.axes for t in ax.texts] + list(fig.texts)
    for leg in fig.legends:
        texts += leg.get_texts()
    boxes = [(t.get_text(), t.get_window_extent(r)) for t in texts if t.get_text().strip()]
    bad = []
    for i, (ta, a) in enumerate(boxes):
        for tb, b in boxes[i + 1:]:
            if min(a.x1, b.x1) - max(a.x0, b.x0) > 1 and min(a.y1, b.y1) - max(a.y0, b.y0) > 1:
                bad.append((ta, tb))
    W, H = fig.bbox.width, fig.bbox.height
    bad += [(t, "<outside the figure>") for t, bb in boxes
            if bb.x0 < -1 or bb.y0 < -1 or bb.x1 > W + 1 or bb.y1 > H + 1]
    return bad


@pytest.mark.parametrize("suffix", [".png", ".svg"])
@pytest.mark.parametrize("name", FABRIC_PARAMS)
def test_every_catalog_fabric_draws(name, suffix, tmp_path):
    out = tmp_path / f"{name}{suffix}"
    draw_fabric(build(name), out)
    data = out.read_bytes()
    if suffix == ".png":
        assert data[:8] == b"\x89PNG\r\n\x1a\n"
    else:
        assert b"<svg" in data[:2000]


@pytest.mark.parametrize("name", FABRIC_PARAMS)
def test_layout_follows_structure(name):
    assert layout_kind(build(name)) == EXPECTED_LAYOUT[name]


@pytest.mark.parametrize("name", FABRIC_PARAMS)
def test_labels_do_not_overlap(name):
    assert _overlapping_labels(fabric_figure(build(name))) == []


@pytest.mark.parametrize("name, legend", [
    ("jalapeno-pod", {"chip", "local switch", "leaf switch", "rail switch", "local tier, copper (4 x 200G)",
                      "global tier, copper (2 x 200G)", "global tier, optical (16 x 200G)"}),
    ("nvl72", {"chip", "nvlink switch", "nvlink tier, copper (2 x 200G)"}),
    ("boardfly", {"pcb, ring on a board (8 x 200G)", "copper, between boards of a group (8 x 200G)",
                  "optical, between groups (8 x 200G)"}),
    ("torus", {"ici tier, copper (4 x 200G)", "wraparound link (continues at the opposite edge)"}),
])
def test_legend_names_tiers_and_link_kinds(name, legend):
    fig = fabric_figure(build(name))
    assert legend <= {t.get_text() for leg in fig.legends for t in leg.get_texts()}


def test_pod_expands_one_rack_and_collapses_the_rest():
    texts = _texts(fabric_figure(build("jalapeno-pod")))
    assert "rack 0 expanded, 15 other racks collapsed to boxes" in "\n".join(texts)
    assert sum(1 for t in texts if t in {f"r{i}" for i in range(1, 16)}) == 15


def test_pod_expand_picks_the_rack():
    texts = "\n".join(_texts(fabric_figure(build("jalapeno-pod", racks=4), expand=2)))
    assert "rack 2 expanded" in texts
    assert "r0" in texts.split("\n")


def test_pod_expand_all():
    G = build("jalapeno-pod", racks=2)
    assert "all 2 racks expanded" in "\n".join(_texts(fabric_figure(G, expand="all")))


def test_static_leaf_is_marked_as_patch():
    fig = fabric_figure(build("jalapeno-pod", racks=2, leaf="static"))
    assert "leaf switch (static patch)" in _texts(fig)


def test_nvl72_is_drawn_as_planes():
    text = "\n".join(_texts(fabric_figure(build("nvl72"))))
    assert "each of the 18 nvlink switches (18 planes)" in text


def test_inferred_fabric_says_so():
    assert any(t.startswith("inferred:") or "\ninferred:" in t
               for t in _texts(fabric_figure(build("nvl72", generation="vera-rubin"))))


def test_torus_slice_and_strip():
    text = "\n".join(_texts(fabric_figure(build("torus"), expand=3)))
    assert "the x-y slice at z = 3 (8 x 12 chips)" in text
    assert "12 slices" in text


def test_ironwood_frames_cubes():
    G = build("ironwood", dims=(8, 8, 4))
    text = "\n".join(_texts(fabric_figure(G)))
    assert "cube 0" in text and "4x4x4 cubes" in text


def test_boardfly_expands_one_group():
    text = "\n".join(_texts(fabric_figure(build("boardfly"), expand=7)))
    assert "group 7 expanded" in text and "35 groups collapsed" in text


@pytest.mark.parametrize("name, expand, match", [
    ("jalapeno-pod", 99, r"expand=99 is not a rack of this fabric; choose one of: 0, 1, 2"),
    ("torus", 12, r"expand=12 is not a slice \(z\) of this fabric"),
    ("torus", 2.5, r"a torus expands one slice"),
    ("nvl72", 3, r"expand=3: nvl72 is a single rack, drawn whole"),
    ("boardfly", 36, r"expand=36 is not a group of this fabric"),
])
def test_bad_expand_names_the_choices(name, expand, match):
    G = build(name)
    with pytest.raises(ValueError, match=match):
        fabric_figure(G, expand=expand)


def test_missing_directory_is_a_clear_error(tmp_path):
    with pytest.raises(ValueError, match="does not exist"):
        draw_fabric(build("nvl72"), tmp_path / "nope" / "x.png")


@pytest.mark.parametrize("G", [
    builders.leaf_spine(leaves=6, chips_per_leaf=8, spines=4),
    builders.dragonfly(p=2, a=4, h=2),
    builders.full_mesh(chips=8),
    builders.torus((8,)),
    builders.torus((2, 3)),
    builders.torus((2, 3, 4, 2)),
], ids=["leaf-spine", "dragonfly", "full-mesh", "ring", "torus-2x3", "torus-4d"])
def test_generic_builders_draw(G, tmp_path):
    draw_fabric(G, tmp_path / "g.png")
    assert _overlapping_labels(fabric_figure(G)) == []


def test_ring_of_two_is_drawn_straight():
    # the x ring of 2 is one doubled bundle between grid neighbours, not a wraparound stub
    fig = fabric_figure(builders.torus((2, 3)))
    assert any("wraparound" in t for t in _texts(fig))   # the y ring of 3 has one


def test_degraded_graph_draws(tmp_path):
    G = build("jalapeno-pod", racks=2)
    G.remove_nodes_from(["rail0/sw0", "r00/xpu005", "r00/lsw2"])
    draw_fabric(G, tmp_path / "degraded.png")


# ---------------------------------------------------------------------------------------- utilization
@pytest.fixture(scope="module")
def rack_allreduce():
    G = build("jalapeno-rack")
    groups = by_size(G, 8)
    r = price(G, "all-reduce", groups=groups, size_bytes=2 ** 24, algorithm="ring")
    u = link_utilization(G, "all-reduce", groups=groups, size_bytes=2 ** 24, algorithm=r.algorithm)
    return G, r, u


def test_link_utilization_matches_the_reported_bottlenecks(rack_allreduce):
    G, r, u = rack_allreduce
    assert u.shape == (len(link_table(G)),)
    assert float(u.max()) == pytest.approx(r.bottlenecks[0]["utilization"])


def test_link_utilization_matches_on_a_tiered_pod():
    G = build("jalapeno-pod", racks=2)
    groups = by_size(G, 256)
    r = price(G, "all-to-all", groups=groups, size_bytes=2 ** 22, algorithm="direct")
    u = link_utilization(G, "all-to-all", groups=groups, size_bytes=2 ** 22, algorithm="direct")
    lt = link_table(G)
    for b in r.bottlenecks:
        src, dst = b["link"].split(" -> ")
        assert u[lt.index(src, dst)] == pytest.approx(b["utilization"])


def test_draw_utilization(rack_allreduce, tmp_path):
    G, _, u = rack_allreduce
    draw_utilization(G, u, tmp_path / "util.png")
    assert (tmp_path / "util.png").stat().st_size > 0
    fig = utilization_figure(G, u)
    assert "link utilization over the bandwidth time (%)" in [a.get_ylabel() for a in fig.axes]
    assert _overlapping_labels(fig) == []


def test_utilization_focus_expands_the_busiest_rack():
    G = build("jalapeno-pod", racks=3)
    lt = link_table(G)
    u = np.zeros(len(lt))
    u[lt.index("r02/xpu007", "r02/lsw1")] = 0.9
    text = "\n".join(_texts(utilization_figure(G, u)))
    assert "rack 2 expanded" in text and "busiest 90%" in text


def test_static_patch_load_lands_on_both_physical_links():
    G = build("jalapeno-pod", racks=2, leaf="static")
    lt = link_table(G)
    virtual = [i for i in range(len(lt)) if lt.hops[i] == 2]
    u = np.zeros(len(lt))
    u[virtual[0]] = 0.5
    folded = bundle_utilization(G, u)
    assert len(folded) == 2 and all(G.has_edge(*k) for k in folded)
    assert any(G.nodes[n].get("patch") for k in folded for n in k)


def test_bundle_utilization_shape_error():
    with pytest.raises(ValueError, match=r"expected \(1536,\)"):
        bundle_utilization(build("jalapeno-rack"), np.zeros(3))


def test_utilization_from_mapping(tmp_path):
    G = build("nvl72")
    draw_utilization(G, {("gpu00", "nvsw03"): 1.0, ("gpu05", "nvsw00"): 0.4}, tmp_path / "m.svg",
                     bottlenecks=["gpu00 -> nvsw03"])


# ---------------------------------------------------------------------------------------- charts
def test_plot_price_with_and_without_utilization(rack_allreduce, tmp_path):
    G, r, u = rack_allreduce
    plot_price(r, tmp_path / "a.png")
    plot_price(r, tmp_path / "b.svg", G=G, link_utilization=u)
    assert (tmp_path / "a.png").stat().st_size > 0 and (tmp_path / "b.svg").stat().st_size > 0
    with pytest.raises(ValueError, match="needs G"):
        plot_price(r, tmp_path / "c.png", link_utilization=u)


def test_plot_compare(tmp_path):
    reps = [price(build(n), "all-reduce", groups=by_size(build(n), 8), size_bytes=2 ** 24)
            for n in ("jalapeno-rack", "nvl72")]
    plot_compare(reps, tmp_path / "c.png")
    plot_compare({"rack": reps[0], "nvl": reps[1]}, tmp_path / "c.svg")
    assert (tmp_path / "c.png").stat().st_size > 0 and (tmp_path / "c.svg").stat().st_size > 0
    with pytest.raises(ValueError, match="no reports"):
        plot_compare([], tmp_path / "d.png")


@pytest.mark.parametrize("sweep", [
    [1.0, 1.14, 1.14, 2.0, math.inf],
    {"rail0/sw0": 1.14, "r00/lsw0": 1.02},
    [{"failure": "rail0/sw0", "slowdown": 1.14}, {"failure": "r01/gsw2", "slowdown": 1.3}],
], ids=["floats", "mapping", "rows"])
def test_plot_sweep(sweep, tmp_path):
    plot_sweep(sweep, tmp_path / "s.png", title="one rail switch down")
    assert (tmp_path / "s.png").stat().st_size > 0


def test_plot_sweep_needs_slowdowns(tmp_path):
    with pytest.raises(ValueError, match="no slowdowns"):
        plot_sweep([], tmp_path / "s.png")
    with pytest.raises(ValueError, match="has no slowdown"):
        plot_sweep([{"failure": "x"}], tmp_path / "s.png")


def test_plot_sweep_reads_a_sweep(tmp_path):
    from fabricsim.collectives.whatif import sweep
    s = sweep("jalapeno-rack", None, "local-switch", collective="all-reduce", size_bytes=2 ** 24, group_size=8,
              algorithm="ring")
    plot_sweep(s, tmp_path / "sweep.png")
    assert (tmp_path / "sweep.png").stat().st_size > 0


@pytest.mark.parametrize("name, expand, text", [
    ("jalapeno-pod", "3", "rack 3 expanded"),
    ("torus", "5", "slice at z = 5"),
    ("boardfly", "2", "group 2 expanded"),
])
def test_expand_as_the_command_line_spells_it(name, expand, text):
    assert text in "\n".join(_texts(fabric_figure(build(name), expand=expand)))


def test_expand_string_that_is_not_a_number():
    with pytest.raises(ValueError, match=r"expand='rack3': give a rack, group or slice number"):
        fabric_figure(build("nvl72"), expand="rack3")
