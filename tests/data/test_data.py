"""Tests for nextword.data (data lookup, corpora, batches) and the synthetic sources it re-exports."""

from __future__ import annotations

import fnmatch
import gzip
import hashlib
import itertools
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import nextword.data as data
from nextword.data import (
    STICKY_RULES,
    Corpus,
    DataChecksumError,
    DataNotFoundError,
    IIDSource,
    MarkovSource,
    batches,
    candidate_data_dirs,
    data_dir,
    find_data_file,
    load_corpus,
    markov_source,
    read_data_text,
    read_wikitext2,
    sticky_markov_chain,
)
from nextword.tokenizers import CharTokenizer

FIXTURES = Path(__file__).parent.parent / "fixtures"


# ---------------------------------------------------------------------------- data_dir
SHAKESPEARE = "tinyshakespeare/input.txt"


@pytest.fixture
def isolated(monkeypatch, tmp_path):
    """No real data place is visible: env var unset, packaged dir, HOME and XDG cache all in tmp."""
    monkeypatch.setattr(data, "PACKAGE_DATA_DIR", tmp_path / "package")
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    monkeypatch.delenv("NEXTWORD_DATA_DIR", raising=False)
    return tmp_path


def test_lookup_order_env_then_package_then_cache(isolated, monkeypatch):
    package, cache, env = isolated / "package", isolated / "xdg" / "nextword" / "data", isolated / "mine"
    assert candidate_data_dirs() == [package, cache]
    monkeypatch.setenv("NEXTWORD_DATA_DIR", str(env))
    assert candidate_data_dirs() == [env, package, cache]
    for d in (env, package, cache):
        d.mkdir(parents=True)
    assert data_dir() == env
    # a file is found as itself or gzipped, in the first directory that has either
    (cache / "tinyshakespeare").mkdir()
    (cache / SHAKESPEARE).write_text("cache", encoding="utf-8")
    assert find_data_file(SHAKESPEARE) == cache / SHAKESPEARE
    (package / "tinyshakespeare").mkdir()
    (package / (SHAKESPEARE + ".gz")).write_bytes(gzip.compress(b"package"))
    assert find_data_file(SHAKESPEARE) == package / (SHAKESPEARE + ".gz")
    assert data_dir(SHAKESPEARE) == package
    (env / "tinyshakespeare").mkdir()
    (env / SHAKESPEARE).write_text("To be.", encoding="utf-8")
    assert find_data_file(SHAKESPEARE) == env / SHAKESPEARE
    assert read_data_text(find_data_file(SHAKESPEARE)) == "To be."


def test_required_file_skips_dirs_without_it(isolated, monkeypatch):
    env = isolated / "empty"
    env.mkdir()
    cache = isolated / "xdg" / "nextword" / "data"
    (cache / "x").mkdir(parents=True)
    (cache / "x" / "f.txt").write_text("hi", encoding="utf-8")
    monkeypatch.setenv("NEXTWORD_DATA_DIR", str(env))
    assert data_dir("x/f.txt") == cache


def test_error_lists_every_searched_place(isolated, monkeypatch):
    monkeypatch.setenv("NEXTWORD_DATA_DIR", str(isolated / "nowhere"))
    with pytest.raises(DataNotFoundError) as info:
        data_dir(SHAKESPEARE)
    msg = str(info.value)
    for place in candidate_data_dirs():
        assert str(place / SHAKESPEARE) in msg
    assert len(candidate_data_dirs()) == 3 and "NEXTWORD_DATA_DIR" in msg
    with pytest.raises(DataNotFoundError):
        load_corpus("shakespeare")
    with pytest.raises(DataNotFoundError):
        load_corpus("wikitext2")


def test_checksum_is_verified_when_loading_by_name(isolated, monkeypatch):
    env = isolated / "mine"
    (env / "tinyshakespeare").mkdir(parents=True)
    (env / SHAKESPEARE).write_text("Not Shakespeare.\n" * 20, encoding="utf-8")
    monkeypatch.setenv("NEXTWORD_DATA_DIR", str(env))
    with pytest.raises(DataChecksumError, match=data.SHA256[SHAKESPEARE]):
        load_corpus("shakespeare")
    # the same text by path, or from an explicit root, is the user's own text: no checksum
    assert load_corpus(env / SHAKESPEARE).train.startswith("Not Shakespeare.")
    assert load_corpus("shakespeare", root=env / "tinyshakespeare").train.startswith("Not Shakespeare.")


# ---------------------------------------------------------------------------- the packaged corpus
PACKAGED = Path(data.__file__).parent / "tinyshakespeare" / "input.txt.gz"


def test_packaged_shakespeare_is_found_without_any_setting(monkeypatch, tmp_path):
    """A clone with nothing beside it: no NEXTWORD_DATA_DIR, an empty cache, and still the corpus."""
    monkeypatch.delenv("NEXTWORD_DATA_DIR", raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert PACKAGED.is_file() and PACKAGED.stat().st_size < 500_000
    assert find_data_file(SHAKESPEARE) == PACKAGED
    c = load_corpus("shakespeare")
    assert c.source == PACKAGED
    text = c.train + c.val
    assert hashlib.sha256(text.encode("utf-8")).hexdigest() == data.SHA256[SHAKESPEARE]
    assert c.train.startswith("First Citizen:") and len(c.val) == len(text) - int(0.9 * len(text))
    assert len(text.splitlines()) == 40000


def test_packaged_shakespeare_is_declared_package_data():
    """pyproject.toml ships the gzipped corpus with a non-editable install (wheel) too."""
    tomllib = pytest.importorskip("tomllib")  # Python >= 3.11
    pyproject = tomllib.loads((Path(__file__).resolve().parents[2] / "pyproject.toml").read_text(encoding="utf-8"))
    globs = pyproject["tool"]["setuptools"]["package-data"]["nextword.data"]
    rel = PACKAGED.relative_to(PACKAGED.parents[1]).as_posix()
    assert any(fnmatch.fnmatch(rel, g) for g in globs), (rel, globs)


def test_damaged_gzip_is_reported(tmp_path):
    bad = tmp_path / "input.txt.gz"
    bad.write_bytes(gzip.compress(b"First Citizen:\n"))
    with pytest.raises(DataChecksumError, match="expected"):
        read_data_text(bad, sha256=data.SHA256[SHAKESPEARE])
    assert read_data_text(bad) == "First Citizen:\n"


def test_product_never_looks_beside_the_checkout():
    """The library knows nothing of the machines it was built on: no development folder beside the
    checkout (the one our own machines have) is named in its code or docs."""
    beside = "/".join(("..", "sha" + "red"))  # spelled in pieces so that this file does not name it either
    repo = Path(__file__).resolve().parents[2]
    files = [*(repo / "nextword").rglob("*.py"), repo / "README.md", repo / "book" / "README.md"]
    offenders = [str(p) for p in files if p.is_file() and beside in p.read_text(encoding="utf-8")]
    assert not offenders


# ---------------------------------------------------------------------------- corpora
def test_shakespeare_from_root(tmp_path):
    text = "".join(f"line {i}\n" for i in range(100))
    (tmp_path / "input.txt").write_text(text, encoding="utf-8")
    c = load_corpus("shakespeare", root=tmp_path)
    assert isinstance(c, Corpus) and c.test is None
    assert c.train + c.val == text and len(c.val) == len(text) - int(0.9 * len(text))
    c2 = load_corpus(tmp_path / "input.txt", val_fraction=0.5)
    assert c2.train + c2.val == text and abs(len(c2.train) - len(c2.val)) <= 1
    with pytest.raises(ValueError, match="val_fraction"):
        load_corpus(tmp_path / "input.txt", val_fraction=1.0)


def test_wikitext2_fixture_character_level():
    for c in (
        load_corpus("wikitext2", root=FIXTURES),
        load_corpus(FIXTURES / "wikitext-2-raw"),
        read_wikitext2(FIXTURES),
    ):
        assert c.name == "wikitext2"
        raw = {
            k: (FIXTURES / "wikitext-2-raw" / f).read_text(encoding="utf-8") for k, f in data.WIKITEXT2_FILES.items()
        }
        assert (c.train, c.val, c.test) == (raw["train"], raw["val"], raw["test"])
    tok = CharTokenizer.train(c.train)
    assert tok.decode(tok.encode(c.train)) == c.train
    val_ids = tok.encode(c.val)
    unseen = {ch for ch in c.val if ch not in c.train}
    assert unseen and sum(i == tok.UNK for i in val_ids) == sum(ch in unseen for ch in c.val)


def test_wikitext2_missing_and_unknown(tmp_path):
    (tmp_path / "wiki.train.raw").write_text(" a \n", encoding="utf-8")
    with pytest.raises(DataNotFoundError, match="wiki.valid.raw"):
        read_wikitext2(tmp_path)
    with pytest.raises(ValueError, match="unknown corpus"):
        load_corpus("no-such-corpus-anywhere")


# ---------------------------------------------------------------------------- batches
def test_batches_shapes_and_targets():
    ids = np.arange(50) * 3
    got = list(batches(ids, 4, 8, np.random.default_rng(0), num_batches=5))
    assert len(got) == 5
    for x, y in got:
        assert x.shape == y.shape == (4, 8) and x.dtype == np.int64
        assert (y[:, :-1] == x[:, 1:]).all() and (y == x + 3).all()
        assert x.min() >= 0 and y.max() <= ids.max()
    a = next(batches(ids, 4, 8, np.random.default_rng(1)))
    b = next(batches(list(ids), 4, 8, np.random.default_rng(1)))
    assert (a[0] == b[0]).all()
    # every valid window can be drawn (offsets span [0, len - block - 1])
    starts = {int(x[0, 0]) for x, _ in itertools.islice(batches(np.arange(12), 1, 10, np.random.default_rng(2)), 200)}
    assert starts == {0, 1}


@pytest.mark.parametrize(
    "args, err",
    [
        ((np.zeros((2, 5), int), 1, 2), ValueError),
        ((np.arange(5.0), 1, 2), TypeError),
        ((np.arange(5), 0, 2), ValueError),
        ((np.arange(5), 1, 5), ValueError),
        ((np.arange(5), 1, True), TypeError),
        ((None, 1, 2), TypeError),
        (([[0, 1], [2]], 1, 2), ValueError),
        ((np.arange(20), 10**12, 2), ValueError),
    ],
)
def test_batches_bad_input(args, err):
    with pytest.raises(err, match="ids|batch_size|block_size"):
        batches(*args, np.random.default_rng(0))  # checked on the call, not on the first next()
    with pytest.raises(TypeError, match="rng"):
        batches(np.arange(5), 1, 2, "0")
    with pytest.raises(ValueError, match="num_batches"):
        batches(np.arange(5), 1, 2, 0, num_batches=-1)


def test_batches_int_seed_is_default_rng():
    a = next(batches(np.arange(30), 2, 4, 7))
    b = next(batches(np.arange(30), 2, 4, np.random.default_rng(7)))
    assert all(np.array_equal(u, v) for u, v in zip(a, b))


def test_non_utf8_corpus_names_the_file(tmp_path):
    path = tmp_path / "latin1.txt"
    path.write_bytes("caf\xe9\n".encode("latin-1") * 20)
    with pytest.raises(ValueError, match="latin1.txt.*not UTF-8"):
        load_corpus(path)
    with pytest.raises(TypeError, match="name"):
        load_corpus(None)
    with pytest.raises(ValueError, match="val_fraction"):
        load_corpus(path, val_fraction=float("nan"))


# ---------------------------------------------------------------------------- synthetic sources
def _h(p):
    p = np.asarray(p, dtype=float)
    p = p[p > 0]
    return float(-(p * np.log(p)).sum())


def _rate_by_enumeration(src: MarkovSource) -> float:
    """H(X_1..X_{k+1}) - H(X_1..X_k) of the stationary process, by enumerating all paths."""
    m, k = src.num_symbols, src.order
    pi = src.stationary_distribution()
    joint = {}
    for path in itertools.product(range(m), repeat=k + 1):
        joint[path] = pi[path[:k]] * src.transition[path]
    marg = {}
    for path, p in joint.items():
        marg[path[:k]] = marg.get(path[:k], 0.0) + p
    return _h(list(joint.values())) - _h(list(marg.values()))


def test_iid_source():
    p = np.array([0.5, 0.25, 0.125, 0.125])
    src = IIDSource(p)
    assert src.entropy_rate() == pytest.approx(1.75 * np.log(2))
    assert src.entropy_rate_bits() == pytest.approx(1.75)
    x = src.sample(40000, np.random.default_rng(0))
    assert x.shape == (40000,) and np.allclose(np.bincount(x, minlength=4) / 40000, p, atol=0.01)
    with pytest.raises(ValueError, match="sum to 1"):
        IIDSource(np.array([0.5, 0.4]))


@pytest.mark.parametrize("order", [0, 1, 2, 3])
def test_markov_entropy_rate_by_enumeration(order):
    src = markov_source(3, order, np.random.default_rng(order), concentration=0.7)
    if order:
        pi = src.stationary_distribution()
        assert pi.shape == (3,) * order and pi.sum() == pytest.approx(1.0)
        # stationarity: the law of the next context equals pi
        nxt = (
            np.einsum("a...,a...->...", pi, src.transition)
            if order == 1
            else np.einsum("a...,a...y->...y", pi, src.transition)
        )
        assert np.allclose(nxt, pi, atol=1e-10)
    assert src.entropy_rate() == pytest.approx(_rate_by_enumeration(src), abs=1e-10)
    assert src.entropy_rate_bits() == pytest.approx(src.entropy_rate() / np.log(2))


def test_markov_sample_matches_transition():
    src = markov_source(3, 2, np.random.default_rng(5))
    x = src.sample(60000, np.random.default_rng(6))
    counts = np.zeros((3, 3, 3))
    np.add.at(counts, (x[:-2], x[1:-1], x[2:]), 1)
    ctx = counts.sum(-1, keepdims=True)
    assert np.allclose(counts / ctx, src.transition, atol=0.03)
    assert np.allclose(ctx[..., 0] / ctx.sum(), src.stationary_distribution(), atol=0.01)
    plug_in = -(counts / counts.sum() * np.log(np.where(counts > 0, counts / ctx, 1))).sum()
    assert plug_in == pytest.approx(src.entropy_rate(), abs=0.01)


@pytest.mark.parametrize("rule", sorted(STICKY_RULES))
def test_sticky_chain_rules(rule):
    n, s = 8, 0.3
    src = sticky_markov_chain(n, s, np.random.default_rng(0), rule=rule)
    t = src.transition
    assert t.shape == (n, n) and np.allclose(t.sum(1), 1.0) and (t >= 0).all()
    pi = src.stationary_distribution()
    assert np.allclose(pi @ t, pi, atol=1e-12)
    if rule == "uniform_all":
        assert np.allclose(np.diag(t), s + (1 - s) / n)
    else:
        assert np.allclose(np.diag(t), s)
    assert src.entropy_rate() == pytest.approx(_rate_by_enumeration(src), abs=1e-12)
    d = np.minimum(np.arange(1, n), n - np.arange(1, n))  # distance from state 0 to states 1..n-1
    closed = {
        "uniform_others": _h([s] + [(1 - s) / (n - 1)] * (n - 1)),
        "uniform_all": _h([s + (1 - s) / n] + [(1 - s) / n] * (n - 1)),
        "circular_distance": _h(np.r_[s, (1 - s) * d / d.sum()]),
        "inverse_circular_distance": _h(np.r_[s, (1 - s) / d / (1 / d).sum()]),
    }
    if rule in closed:  # circulant: pi uniform, rate = entropy of row 0
        assert np.allclose(pi, 1 / n)
        assert src.entropy_rate() == pytest.approx(closed[rule], abs=1e-12)


def test_sticky_chain_sample_stays():
    src = sticky_markov_chain(5, 0.6)
    x = src.sample(20000, np.random.default_rng(3))
    assert np.mean(x[1:] == x[:-1]) == pytest.approx(0.6, abs=0.02)
    assert src.sample(0, np.random.default_rng(0)).shape == (0,)


@pytest.mark.parametrize(
    "kwargs",
    [
        dict(num_states=1, stay_prob=0.3),
        dict(num_states=4, stay_prob=1.5),
        dict(num_states=4, stay_prob=0.3, rule="nope"),
        dict(num_states=4, stay_prob=0.3, rule="dirichlet"),
    ],
)
def test_sticky_chain_bad_input(kwargs):
    with pytest.raises(ValueError):
        sticky_markov_chain(**kwargs)


def test_markov_bad_input():
    with pytest.raises(ValueError, match="shape"):
        MarkovSource(np.full((2, 3), 1 / 3))
    with pytest.raises(ValueError, match="non-negative"):
        MarkovSource(np.array([[1.5, -0.5], [0.5, 0.5]]))
    with pytest.raises(TypeError, match="rng"):
        sticky_markov_chain(3, 0.5).sample(5, "42")
    src = sticky_markov_chain(3, 0.5)  # an int seed is np.random.default_rng's seed
    assert np.array_equal(src.sample(9, 42), src.sample(9, np.random.default_rng(42)))
    with pytest.raises(ValueError, match="length"):
        sticky_markov_chain(3, 0.5).sample(-1, np.random.default_rng(0))


@settings(max_examples=15, deadline=None)
@given(st.integers(2, 6), st.floats(0.0, 1.0))
def test_sticky_rate_bounds(n, s):
    """0 <= H <= ln n, with H = ln n exactly for the uniform_all chain at s = 0."""
    for rule in ("uniform_others", "uniform_all", "inverse_circular_distance"):
        h = sticky_markov_chain(n, s, rule=rule).entropy_rate()
        assert -1e-12 <= h <= np.log(n) + 1e-12
    assert sticky_markov_chain(n, 0.0, rule="uniform_all").entropy_rate() == pytest.approx(np.log(n))
