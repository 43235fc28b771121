"""Traffic matrices from files and the MoE router model (issue 15 items 1-2)."""
import numpy as np
import pytest

from fabricsim.collectives import by_size, price
from fabricsim.collectives.traffic import MoESpec, load_matrix, moe_traffic
from fabricsim.fabrics import build
from fabricsim.topo.errors import BadInput

BASE = "experts=256,top_k=8,tokens=1024,hidden=7168"


# ----------------------------------------------------------------------------- matrix files
def _csv(path, M):
    path.write_text("\n".join(",".join(f"{v:g}" for v in row) for row in M) + "\n")
    return path


def test_csv_and_npy_read_the_same_matrix(tmp_path):
    M = np.arange(16.0).reshape(4, 4)
    np.save(tmp_path / "m.npy", M)
    _csv(tmp_path / "m.csv", M)
    assert np.array_equal(load_matrix(tmp_path / "m.csv", 4), M)
    assert np.array_equal(load_matrix(tmp_path / "m.npy", 4), M)


def test_directory_is_one_matrix_per_group_in_name_order(tmp_path):
    d = tmp_path / "groups"
    d.mkdir()
    for k in (2, 0, 1):
        _csv(d / f"g{k}.csv", np.full((3, 3), k + 1.0))
    T = load_matrix(d, 3, n_groups=3)
    assert T.shape == (3, 3, 3)
    assert T[:, 0, 0].tolist() == [1.0, 2.0, 3.0]
    with pytest.raises(BadInput, match="holds 3 matrix file"):
        load_matrix(d, 3, n_groups=2)


@pytest.mark.parametrize("text,match", [
    ("1,2\n3\n", "line 2 has 1 fields"),
    ("1,2\n3,x\n", "line 2, field 2: 'x' is not a number"),
    ("1,2\n3,-4\n", "line 2, field 2: '-4' is negative"),
    ("1,nan\n3,4\n", "line 1, field 2: 'nan' is not finite"),
    ("1,inf\n3,4\n", "not finite"),
    ("# nothing\n\n", "empty"),
    ("1,2,3\n4,5,6\n", "2 x 3 matrix; a group of 2 ranks needs 2 x 2"),
    ("0,0\n0,0\n", "every entry is 0"),
])
def test_bad_csv_names_file_and_field(tmp_path, text, match):
    p = tmp_path / "bad.csv"
    p.write_text(text)
    with pytest.raises(BadInput, match=match) as exc:
        load_matrix(p, 2)
    assert "bad.csv" in str(exc.value) and "\n" not in str(exc.value)


def test_npz_and_junk_npy_headers(tmp_path):
    np.savez(tmp_path / "a.npz", np.ones((2, 2)))
    (tmp_path / "a.npz").rename(tmp_path / "z.npy")
    with pytest.raises(BadInput, match="npz archive"):
        load_matrix(tmp_path / "z.npy", 2)
    (tmp_path / "h.npy").write_bytes(b"\x93NUMPY\x01\x00\x10\x00{'descr': <f8, }   \n")
    with pytest.raises(BadInput, match="not a readable .npy"):
        load_matrix(tmp_path / "h.npy", 2)


def test_non_utf8_and_bad_npy(tmp_path):
    p = tmp_path / "latin.csv"
    p.write_bytes(b"1,2\n\xff,3\n")
    with pytest.raises(BadInput, match="not UTF-8"):
        load_matrix(p, 2)
    q = tmp_path / "bad.npy"
    q.write_bytes(b"not an array")
    with pytest.raises(BadInput, match="bad.npy: not a readable .npy"):
        load_matrix(q, 2)
    np.save(tmp_path / "neg.npy", -np.ones((2, 2)))
    with pytest.raises(BadInput, match="row 1, field 1 is -1; bytes must be >= 0"):
        load_matrix(tmp_path / "neg.npy", 2)
    with pytest.raises(BadInput, match="no such file"):
        load_matrix(tmp_path / "missing.csv", 2)


# ----------------------------------------------------------------------------- MoE spec
@pytest.mark.parametrize("text,match", [
    ("experts=256,top_k=8,tokens=1024", "misses hidden"),
    (BASE + ",expert=3", "unknown moe key 'expert'"),
    (BASE.replace("top_k=8", "top_k=8.5"), "top_k='8.5' must be an integer"),
    (BASE.replace("top_k=8", "top_k=300"), "top_k=300 exceeds experts=256"),
    (BASE + ",dtype=int4", "dtype='int4'; choose one of: fp8, bf16, fp16, fp32"),
    (BASE + ",skew=zipf:0", "zipf:A needs a finite exponent A > 0"),
    (BASE + ",skew=zipf:x", "zipf:A needs"),
    (BASE + ",skew=lognormal", "not uniform, balanced, zipf:A or a file"),
    (BASE + ",phase=forward", "phase='forward'; choose one of: dispatch, combine"),
    (BASE + ",placement=striped", "placement='striped'"),
    (BASE.replace("tokens=1024", "tokens=0"), "tokens=0 must be >= 1"),
    (BASE + ",tokens=3", "given twice"),
    (BASE + ",shared=-1", "shared=-1 must be >= 0"),
    (BASE + ",seed", "not key=value"),
    (BASE + ",seed=-3", "seed=-3 must be >= 0"),
    (BASE.replace("tokens=1024", "tokens=" + "9" * 30), "tokens=9+ is past the model's range"),
    (BASE.replace("experts=256", "experts=10000000"), "experts=10000000 is past the model's range"),
    (BASE + ",seed=x", "seed='x' must be an integer"),
    (BASE.replace("hidden=7168", "hidden=true"), "hidden='true' must be an integer"),
])
def test_bad_spec_one_line_naming_the_field(text, match):
    with pytest.raises(BadInput, match=match) as exc:
        MoESpec.parse(text)
    assert "\n" not in str(exc.value)


def test_too_many_routing_draws_say_so():
    with pytest.raises(BadInput, match="use skew=balanced"):
        moe_traffic(MoESpec.parse("experts=4096,top_k=8,tokens=10000000,hidden=8"), 8)
    t = moe_traffic(MoESpec.parse("experts=4096,top_k=8,tokens=10000000,hidden=8,skew=balanced,dedup=expert"), 8)
    assert t.bytes_total == 10000000 * 8 * 8


def test_contiguous_needs_multiple_of_ep():
    s = MoESpec.parse("experts=12,top_k=2,tokens=64,hidden=8,placement=contiguous,dedup=expert")
    with pytest.raises(BadInput, match="multiple of ep"):
        moe_traffic(s, 8)
    # round-robin takes any count
    assert moe_traffic(s.__class__(**{**s.__dict__, "placement": "round-robin"}), 8).bytes_total == 64 * 2 * 8


# ----------------------------------------------------------------------------- MoE traffic
@pytest.mark.parametrize("skew", ["uniform", "balanced", "zipf:1.0", "zipf:2.5"])
@pytest.mark.parametrize("ep", [8, 128])
def test_bytes_total_counts_every_copy(skew, ep):
    t = moe_traffic(MoESpec.parse(f"{BASE},dtype=fp8,skew={skew},dedup=expert"), ep)
    assert t.bytes_total == 1024 * 8 * 7168
    assert t.matrix.sum() == pytest.approx(t.bytes_total, rel=1e-12)
    assert t.bytes_local + t.bytes_network == pytest.approx(t.bytes_total, rel=1e-12)
    assert t.bytes_local == pytest.approx(np.trace(t.matrix))
    # tokens are spread evenly over the source ranks
    assert np.allclose(t.matrix.sum(axis=1), 1024 // ep * 8 * 7168)


def test_dtype_shared_and_combine():
    d = moe_traffic(MoESpec.parse(BASE + ",dtype=bf16,shared=1,seed=3,dedup=expert"), 16)
    assert d.bytes_total == 1024 * (8 + 1) * 7168 * 2
    c = moe_traffic(MoESpec.parse(BASE + ",dtype=bf16,shared=1,seed=3,phase=combine,dedup=expert"), 16)
    assert np.array_equal(c.matrix, d.matrix.T)
    assert c.imbalance == d.imbalance
    # the shared expert is on every rank: its copies stay local
    no_shared = moe_traffic(MoESpec.parse(BASE + ",dtype=bf16,seed=3,dedup=expert"), 16)
    assert d.bytes_local - no_shared.bytes_local == pytest.approx(1024 * 7168 * 2)
    assert d.bytes_network == no_shared.bytes_network


def test_balanced_is_uniform_and_ep1_is_all_local():
    t = moe_traffic(MoESpec.parse(BASE + ",skew=balanced"), 128)
    assert t.imbalance == 1.0 and np.all(t.matrix == t.matrix[0, 0])
    one = moe_traffic(MoESpec.parse(BASE), 1)
    assert one.bytes_network == 0 and one.bytes_local == one.bytes_total


def test_seed_changes_the_sample_and_is_reproducible():
    a = moe_traffic(MoESpec.parse(BASE + ",seed=1"), 32).matrix
    b = moe_traffic(MoESpec.parse(BASE + ",seed=1"), 32).matrix
    c = moe_traffic(MoESpec.parse(BASE + ",seed=2"), 32).matrix
    assert np.array_equal(a, b) and not np.array_equal(a, c)


def test_zipf_is_hot_and_contiguous_is_hotter():
    rr = moe_traffic(MoESpec.parse(BASE + ",skew=zipf:1.2"), 32)
    ct = moe_traffic(MoESpec.parse(BASE + ",skew=zipf:1.2,placement=contiguous"), 32)
    un = moe_traffic(MoESpec.parse(BASE), 32)
    assert rr.imbalance > 2 * un.imbalance
    assert ct.imbalance > rr.imbalance        # the hot experts share rank 0


def test_weights_file(tmp_path):
    w = np.zeros(16)
    w[:4] = 1.0
    p = tmp_path / "w.csv"
    p.write_text("\n".join(f"{x:g}" for x in w))
    t = moe_traffic(MoESpec.parse(f"experts=16,top_k=2,tokens=64,hidden=4,skew={p},dedup=expert"), 8)
    # only experts 0-3 (ranks 0-3) receive anything
    assert t.matrix[:, 4:].sum() == 0 and t.bytes_total == 64 * 2 * 4
    p.write_text("1\n2\n")
    with pytest.raises(BadInput, match="holds 2 expert weights; experts=16"):
        moe_traffic(MoESpec.parse(f"experts=16,top_k=2,tokens=64,hidden=4,skew={p}"), 8)
    p.write_text("1\n-2\n" + "1\n" * 14)
    with pytest.raises(BadInput, match="weight 2 is -2.0"):
        moe_traffic(MoESpec.parse(f"experts=16,top_k=2,tokens=64,hidden=4,skew={p}"), 8)


@pytest.mark.slow    # over 5 s on the 2-core machine (pytest --durations, 2026-12-04)
def test_zipf_prices_slower_than_uniform_on_jalapeno_rack():
    G = build("jalapeno-rack")
    g = by_size(G, 128)
    times = {}
    for skew in ("uniform", "zipf:1.0"):
        t = moe_traffic(MoESpec.parse(f"{BASE},dtype=fp8,skew={skew}"), 128)
        times[skew] = price(G, "all-to-all", groups=g, traffic=t.matrix, algorithm="direct")
    assert moe_traffic(MoESpec.parse(f"{BASE},skew=zipf:1.0"), 128).imbalance > 1
    assert times["zipf:1.0"].bandwidth_time_s > 2 * times["uniform"].bandwidth_time_s
    assert times["zipf:1.0"].time_s > times["uniform"].time_s


def test_flows_of_no_bytes_are_no_flows():
    """A sparse matrix routes only its copies: a cross-rack pair with no bytes adds no latency."""
    G = build("jalapeno-pod", racks=2)
    g = [list(range(256))]
    T = np.zeros((256, 256))
    T[0, 1] = 2.0**20                     # inside rack 0
    local = price(G, "all-to-all", groups=g, traffic=T, algorithm="direct")
    T[0, 200] = 1.0                       # one byte to rack 1
    cross = price(G, "all-to-all", groups=g, traffic=T, algorithm="direct")
    assert local.latency_s < cross.latency_s
    assert cross.bandwidth_time_s == pytest.approx(local.bandwidth_time_s, rel=1e-6)


def test_top1_sampling_is_proportional_to_the_weights(tmp_path):
    w = np.array([1.0, 2.0, 3.0, 4.0, 0.0, 10.0, 5.0, 5.0])
    p = tmp_path / "w.txt"
    p.write_text(" ".join(f"{x:g}" for x in w))
    t = moe_traffic(MoESpec.parse(f"experts=8,top_k=1,tokens=200000,hidden=1,skew={p}"), 8)
    got = t.matrix.sum(axis=0) / 200000           # expert e sits on rank e
    assert np.allclose(got, w / w.sum(), atol=0.005)
    assert got[4] == 0                             # weight 0 is never picked


def test_every_token_picks_distinct_experts():
    t = moe_traffic(MoESpec.parse("experts=8,top_k=8,tokens=64,hidden=1"), 8)
    assert np.all(t.matrix == 8)                   # top_k = experts: each token reaches every expert once
