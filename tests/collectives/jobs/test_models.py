"""The model catalog: the published figures, and one-line errors naming the field for bad files."""
from __future__ import annotations

import pytest

from fabricsim.collectives.jobs.models import MODEL_KEYS, Model, load_model, model_from_dict, model_names
from fabricsim.topo.errors import BadInput

# (layers, first_dense, hidden, heads, kv_heads, experts, top_k, shared) from each config.json
PUBLISHED = {
    "deepseek-r1": (61, 3, 7168, 128, 128, 256, 8, 1),
    "kimi-k2": (61, 1, 7168, 64, 64, 384, 8, 1),
    "gpt-oss-120b": (36, 0, 2880, 64, 8, 128, 4, 0),
}
GOOD = {"layers": 4, "first_dense": 1, "hidden": 64, "heads": 8, "experts": 16, "top_k": 2}


def test_catalog_lists_the_three_models():
    assert model_names() == sorted(PUBLISHED)


@pytest.mark.parametrize("name", sorted(PUBLISHED))
def test_catalog_figures(name):
    m = load_model(name)
    assert (m.layers, m.first_dense, m.hidden, m.heads, m.kv_heads, m.experts, m.top_k, m.shared) == PUBLISHED[name]
    assert m.name == name and m.source and m.description
    assert m.moe_layers + m.dense_layers == m.layers
    assert [m.kind(i) for i in range(m.layers)].count("moe") == m.layers - m.first_dense


def test_deepseek_layers():
    m = load_model("deepseek-r1")
    assert (m.dense_layers, m.moe_layers) == (3, 58)
    assert [m.kind(i) for i in (0, 2, 3, 60)] == ["dense", "dense", "moe", "moe"]


def test_file_round_trip(tmp_path):
    p = tmp_path / "tiny.toml"
    p.write_text("layers = 4\nfirst_dense = 1\nhidden = 64\nheads = 8\nkv_heads = 2\nexperts = 16\ntop_k = 2\n")
    m = load_model(str(p))
    assert m == Model(name="tiny", layers=4, first_dense=1, hidden=64, heads=8, kv_heads=2, experts=16, top_k=2)
    assert m.moe_layers == 3


def test_dense_model():
    m = model_from_dict({"layers": 3, "hidden": 64, "heads": 4})
    assert (m.moe_layers, m.dense_layers, m.kv_heads) == (0, 3, 4)
    assert {m.kind(i) for i in range(3)} == {"dense"}


@pytest.mark.parametrize("change, match", [
    ({"hiden": 64}, r"unknown key 'hiden' \(did you mean hidden\b.*; valid: name"),
    ({"layers": None}, r"missing key 'layers'"),
    ({"hidden": "7168"}, r"hidden = '7168' must be an integer, not str"),
    ({"layers": True}, r"layers = True must be an integer, not bool"),
    ({"heads": 8.0}, r"heads = 8.0 must be an integer, not float"),
    ({"first_dense": 5}, r"first_dense = 5 > layers = 4"),
    ({"top_k": 17}, r"top_k = 17 must be in 1..experts = 16"),
    ({"top_k": 0}, r"top_k = 0 must be in 1..experts = 16"),
    ({"top_k": None}, r"missing key 'top_k'"),
    ({"experts": 0}, r"top_k = 2 / shared = 0 given but experts = 0"),
    ({"kv_heads": 3}, r"kv_heads = 3 must divide heads = 8"),
    ({"layers": 0}, r"layers = 0 must be at least 1"),
    ({"shared": -1}, r"shared = -1 must be at least 0"),
    ({"name": 3}, r"name = 3 must be a string, not int"),
])
def test_bad_fields(change, match):
    data = {k: v for k, v in {**GOOD, **change}.items() if v is not None}
    with pytest.raises(BadInput, match=r"^m\.toml: " + match):
        model_from_dict(data, "m.toml")


def test_bad_files(tmp_path):
    with pytest.raises(BadInput, match="cannot read .*; expected a model TOML file"):
        load_model(str(tmp_path / "none.toml"))
    bad = tmp_path / "bad.toml"
    bad.write_text("layers = = 3\n")
    with pytest.raises(BadInput, match=r"bad\.toml: .*line 1"):
        load_model(str(bad))
    latin = tmp_path / "latin.toml"
    latin.write_bytes(b"name = '\xe9'\n")
    with pytest.raises(BadInput, match=r"latin.toml:1: not UTF-8 text \(byte 0xe9\)"):
        load_model(str(latin))


def test_unknown_name():
    with pytest.raises(BadInput, match=r"unknown model 'deepseek'.*choose one of: deepseek-r1, gpt-oss-120b, kimi-k2"):
        load_model("deepseek")


def test_every_key_is_documented():
    from fabricsim.collectives.jobs import models
    assert all(f"{k} =" in models.__doc__ for k in MODEL_KEYS)


# --- absurd sizes: refused in one line before any pricing (issue 26 item 8) ------------------
@pytest.mark.parametrize("key,value", [("layers", 10**9), ("hidden", 10**12), ("heads", 10**7),
                                       ("experts", 10**8), ("shared", 10**5)])
def test_absurd_sizes_are_refused(key, value):
    spec = {"layers": 4, "hidden": 64, "heads": 8, "experts": 8, "top_k": 2} | {key: value}
    with pytest.raises(BadInput, match=f"{key} = {value:,} is past the model's range"):
        model_from_dict(spec, "m.toml")


from hypothesis import given, settings, strategies as st  # noqa: E402

_sizes = st.one_of(st.integers(-3, 300), st.integers(2**20, 2**70), st.booleans(), st.floats(), st.text(max_size=3))


@settings(max_examples=60, deadline=None)
@given(spec=st.dictionaries(st.sampled_from(["layers", "first_dense", "hidden", "heads", "kv_heads", "experts",
                                             "top_k", "shared", "name", "bogus"]), _sizes, max_size=9))
def test_any_model_spec_is_a_model_within_bounds_or_one_line(spec):
    try:
        m = model_from_dict(spec, "m.toml")
    except BadInput as exc:
        assert "\n" not in str(exc) and str(exc).startswith("m.toml")
        return
    for key, (_, _, low, high) in MODEL_KEYS.items():
        v = getattr(m, key)
        assert (low is None or v >= low) and (high is None or v <= high)
