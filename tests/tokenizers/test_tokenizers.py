"""Tests for nextword.tokenizers (+ bpe_trainer, bpe_io).

The fast trainer is checked against the straightforward O(merges × n) references ``reference_train`` and
``reference_encode`` of :mod:`nextword.tokenizers.trainer` (the minbpe rule: recount every pair, ``max`` over a
dict in scan order, merge left to right), against Hugging Face ``tokenizers`` (tie_break="hf") and against a
``tiktoken.Encoding`` built from our own merges — the external oracles run only when those packages are importable.
"""

from __future__ import annotations

import json

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from nextword.tokenizers import bytes_to_unicode, learn_bpe, train_merges
from nextword.tokenizers import SPLIT_PATTERNS, BPETokenizer, CharTokenizer
from nextword.tokenizers.trainer import reference_encode, reference_train

pytest.importorskip("regex")
import regex  # noqa: E402

SAMPLE = (
    "First Citizen:\nBefore we proceed any further, hear me speak.\n\nAll:\nSpeak, speak.\n\n"
    "First Citizen:\nYou are all resolved rather to die than to famish?\n\nAll:\nResolved. resolved.\n\n"
    "First Citizen:\nFirst, you know Caius Marcius is chief enemy to the people.\n\n"
    "All:\nWe know't, we know't.\n\nFirst Citizen:\nLet us kill him, and we'll have corn at our own price.\n"
    "Is't a verdict?\n\nAll:\nNo more talking on't; let it be done: away, away!\n\n"
    "Second Citizen:\nOne word, good citizens.\n\nnumbers 12345 678 and   spaces\t\ttabs  \r\n"
    "ünïcödé — “quotes”, emoji 🙂🙂👍🏽 and CJK 漢字かな.\n"
)
TEXT = SAMPLE * 6  # about 4 KB: every pair count, tie and overlap the tests need


# ---------------------------------------------------------------------------- references
@pytest.fixture(scope="module")
def trained() -> dict[str, BPETokenizer]:
    return {
        "raw": BPETokenizer.train(TEXT, 400),
        "gpt4": BPETokenizer.train(TEXT, 400, pattern="gpt4", special_tokens=["<|endoftext|>", "<|fim prefix|>"]),
        "emoji": BPETokenizer.train("🙂👍🏽 e\u0301 \x00 漢字 " * 40, 300, pattern="gpt2"),
    }


# ---------------------------------------------------------------------------- Example 2.1
def test_example_2_1_exact():
    r = learn_bpe("abcababc", names="de")
    assert ["".join(s) for s in r.trace] == ["abcababc", "dcddc", "ede"]
    assert r.merges == ((("a", "b"), "d"), (("d", "c"), "e"))
    assert r.vocab == tuple("abcde") and r.sequence == tuple("ede")
    one = learn_bpe("abcababc", 1, names="de")  # stopped early: V_1 = {a, b, c, d}
    assert one.vocab == tuple("abcd") and "".join(one.sequence) == "dcddc"


def test_learn_bpe_generic_symbols_and_errors():
    r = learn_bpe([1, 2, 1, 2, 1, 2])
    assert r.merges[0] == ((1, 2), (1, 2)) and r.sequence == (((1, 2), (1, 2)), (1, 2))
    assert learn_bpe("abc").merges == ()  # no pair occurs twice
    with pytest.raises(ValueError, match="names ran out"):
        learn_bpe("abababab", names="x")
    with pytest.raises(ValueError, match="num_merges"):
        learn_bpe("abab", -1)
    with pytest.raises(ValueError, match="already exists"):
        learn_bpe(["a", "b", "ab", "a", "b"])


def test_learn_bpe_agrees_with_train_merges():
    data = b"abcababcaaabbbabab"
    ours = train_merges([data], 10)
    r = learn_bpe(list(data), names=range(256, 300))
    assert [(a, b, x) for (a, b), x in r.merges] == ours[: len(r.merges)]


# ---------------------------------------------------------------------------- trainer vs reference
@pytest.fixture(params=[None, 1, 16], ids=["lists", "numpy", "both"])
def vector_min(request, monkeypatch):
    """Run the trainer with its numpy pass off, for every merge, and for merges of 16+ occurrences."""
    import nextword.tokenizers.trainer as bpe_trainer

    monkeypatch.setattr(bpe_trainer, "_VECTOR_MIN", request.param)
    return request.param


@pytest.mark.parametrize("pattern", [None, "gpt2", "gpt4"])
def test_merges_match_reference(pattern, vector_min):
    num = 300 if pattern is None else 200
    tok = BPETokenizer.train(TEXT, 256 + num, pattern=pattern)
    chunks = [TEXT.encode()] if pattern is None else [c.encode() for c in regex.findall(SPLIT_PATTERNS[pattern], TEXT)]
    assert tok.merge_list() == reference_train(chunks, num)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    st.lists(st.lists(st.integers(0, 3), min_size=0, max_size=12), min_size=1, max_size=8),
    st.integers(1, 25),
)
def test_train_merges_property(chunks, num):
    """Small alphabets: ties and overlapping runs everywhere; dedup with weights must not matter;
    the numpy merge passes (every merge, or the larger ones among Python passes) give the list passes' merges; chunks
    given as bytes or as lists of ints (empty ones among them) give the same merges."""
    import nextword.tokenizers.trainer as bpe_trainer

    data = [bytes(c) for c in chunks]
    expect = reference_train(data, num)
    counts: dict[bytes, int] = {}
    for c in data:
        counts[c] = counts.get(c, 0) + 1
    saved = bpe_trainer._VECTOR_MIN
    try:
        for vector_min in (None, 1, 3):
            bpe_trainer._VECTOR_MIN = vector_min
            assert train_merges(data, num) == expect, vector_min
            assert train_merges(list(counts), num, weights=list(counts.values())) == expect, vector_min
        # bytes chunks are joined at once, other sequences checked one by one: the same merges
        assert train_merges([list(c) for c in data], num) == expect
        assert train_merges([list(c) for c in counts], num, weights=list(counts.values())) == expect
    finally:
        bpe_trainer._VECTOR_MIN = saved


def test_train_merges_validation():
    with pytest.raises(ValueError, match="tie_break"):
        train_merges([b"ab"], 1, tie_break="last")
    with pytest.raises(ValueError, match="weights"):
        train_merges([b"ab", b"cd"], 1, weights=[1])
    assert train_merges([b"", b"a"], 5) == []


# ---------------------------------------------------------------------------- encoding
@pytest.mark.parametrize("name", ["raw", "gpt4"])
def test_encode_matches_reference(trained, name):
    tok = trained[name]
    merges = tok.merge_list()
    text = SAMPLE + "unseen words: zyzzyva quixotic"
    if tok.pattern is None:
        expect = reference_encode(text.encode(), merges)  # one long chunk: the O(n log n) path
    else:
        expect = [i for c in regex.findall(tok.pattern, text) for i in reference_encode(c.encode(), merges)]
    assert tok.encode(text) == expect


@settings(max_examples=150, deadline=None)
@given(st.text(max_size=60), st.sampled_from(["raw", "gpt4", "emoji"]))
def test_roundtrip_arbitrary_unicode(trained, s, name):
    tok = trained[name]
    ids = tok.encode(s)
    assert tok.decode(ids) == s
    assert tok.decode(np.asarray(ids, dtype=np.int64)) == s


@pytest.mark.parametrize(
    "s", ["👩\u200d👩\u200d👧\u200d👦🏳️\u200d🌈", "e\u0301\u0327a\u0300", "\x00\x00a\x00", "\r\n\t \u2028", ""]
)
def test_roundtrip_edge_strings(trained, s):
    for tok in trained.values():
        assert tok.decode(tok.encode(s)) == s


def test_lone_surrogate(trained):
    tok = trained["gpt4"]
    with pytest.raises(ValueError, match="surrogate"):
        tok.encode("ok \ud800 no")
    assert tok.decode(tok.encode("a\ud800b", errors="replace")) == "a\ufffdb"
    ids = tok.encode("a\udfffb", errors="surrogatepass")
    assert tok.decode(ids, errors="surrogatepass") == "a\udfffb"
    with pytest.raises(ValueError, match="surrogate"):  # the surrogatepass result is not cached
        tok.encode("a\udfffb")


def test_special_tokens(trained):
    tok = trained["gpt4"]
    eot = tok.special_tokens["<|endoftext|>"]
    assert eot == 256 + len(tok.merges) and tok.vocab_size == 400
    s = "hi<|endoftext|>there <|fim prefix|>"
    with pytest.raises(ValueError, match="special token"):
        tok.encode(s)
    ids = tok.encode(s, allowed_special="all")
    assert eot in ids and tok.decode(ids) == s
    only = tok.encode(s, allowed_special={"<|endoftext|>"})
    assert tok.special_tokens["<|fim prefix|>"] not in only and tok.decode(only) == s
    assert eot not in tok.encode(s, allowed_special="none")
    with pytest.raises(ValueError, match="unregistered"):
        tok.encode(s, allowed_special={"<|nope|>"})
    assert tok.encode_batch(["a b", "c"]) == [tok.encode("a b"), tok.encode("c")]


def test_views(trained):
    tok = trained["raw"]
    for (a, b), x in tok.merges.items():
        assert tok.vocab[x] == tok.token_bytes(a) + tok.token_bytes(b)
    assert list(tok.merges.values()) == list(range(256, 256 + len(tok.merges)))
    assert tok.vocab_size == len(tok.vocab) == 400


# ---------------------------------------------------------------------------- bad input
def test_bad_input(trained, tmp_path):
    with pytest.raises(ValueError, match="vocab_size"):
        BPETokenizer.train("abc", 257, special_tokens=["<a>", "<b>"])
    with pytest.raises(ValueError, match="vocab_size"):
        BPETokenizer.train("abc", 100)
    with pytest.raises(TypeError):
        BPETokenizer.train(b"abc", 300)
    tok = trained["gpt4"]
    for bad in ([1, 2, 400], [-1], [5, 10**9]):
        with pytest.raises(ValueError, match="unknown token id"):
            tok.decode(bad)
    with pytest.raises(ValueError, match="ints"):
        tok.decode([1.5, 2.0])
    with pytest.raises(ValueError):
        BPETokenizer([(1, 999, 256)])
    gap = BPETokenizer(special_tokens={"<s>": 1000})
    with pytest.raises(ValueError, match="unknown token id 500"):
        gap.decode([65, 500])
    assert gap.decode([65, 1000]) == "A<s>"


# ---------------------------------------------------------------------------- files
def test_save_load_json(trained, tmp_path):
    for name, tok in trained.items():
        path = tmp_path / f"{name}.json"
        tok.save(path)
        back = BPETokenizer.load(path)
        assert back.merges == tok.merges and back.pattern == tok.pattern
        assert back.special_tokens == tok.special_tokens
        assert back.encode(TEXT, allowed_special="all") == tok.encode(TEXT, allowed_special="all")
    doc = json.loads((tmp_path / "gpt4.json").read_text(encoding="utf-8"))
    assert doc["format"] == "nextword-bpe" and doc["version"] == 1


@pytest.mark.parametrize(
    "content",
    [
        "{not json",
        json.dumps({"format": "nextword-bpe", "version": 2, "merges": []}),
        json.dumps({"format": "other", "version": 1, "merges": []}),
        json.dumps({"format": "nextword-bpe", "version": 1, "merges": [[1, 2]]}),
        json.dumps({"format": "nextword-bpe", "version": 1, "merges": [[1, 2, 256], [999, 2, 257]]}),
        json.dumps({"format": "nextword-bpe", "version": 1, "merges": [], "special_tokens": {"x": 5}}),
    ],
)
def test_load_bad_json_names_file(tmp_path, content):
    path = tmp_path / "broken.json"
    path.write_text(content, encoding="utf-8")
    with pytest.raises(ValueError, match="broken.json"):
        BPETokenizer.load(path)


def test_minbpe_format_roundtrip(trained, tmp_path):
    tok = BPETokenizer(
        trained["gpt4"].merge_list(), pattern="gpt4", special_tokens={"<|end of text|>": 400, "<|ünï|>": 401}
    )
    path = tmp_path / "tok.model"
    tok.save_minbpe(path)
    text = path.read_bytes().decode("utf-8")
    assert text.startswith("minbpe v1\n" + SPLIT_PATTERNS["gpt4"] + "\n2\n<|end of text|> 400\n")
    back = BPETokenizer.load_minbpe(path)
    assert back.pattern == tok.pattern and back.special_tokens == tok.special_tokens
    s = "a<|end of text|> b <|ünï|>" + SAMPLE
    assert back.encode(s, allowed_special="all") == tok.encode(s, allowed_special="all")


def test_minbpe_file_as_minbpe_writes_it(tmp_path):
    """A Basic-tokenizer file: empty pattern line, no specials, merges "idx1 idx2"."""
    path = tmp_path / "basic.model"
    path.write_text("minbpe v1\n\n0\n97 97\n256 97\n98 100\n", encoding="utf-8")
    tok = BPETokenizer.load_minbpe(path)
    assert tok.pattern is None and tok.merge_list() == [(97, 97, 256), (256, 97, 257), (98, 100, 258)]
    assert tok.encode("aaabdaaabac") == [257, 258, 257, 98, 97, 99]
    bad = tmp_path / "bad.model"
    bad.write_text("minbpe v2\n\n0\n", encoding="utf-8")
    with pytest.raises(ValueError, match="bad.model"):
        BPETokenizer.load_minbpe(bad)
    bad.write_text("minbpe v1\n\n3\nx 300\n", encoding="utf-8")
    with pytest.raises(ValueError, match="bad.model"):
        BPETokenizer.load_minbpe(bad)


# ---------------------------------------------------------------------------- external oracles
def test_tiktoken_encoding_from_our_merges(trained):
    tiktoken = pytest.importorskip("tiktoken")
    tok = trained["gpt4"]
    ranks = {tok.token_bytes(i): i for i in range(256 + len(tok.merges))}
    assert len(ranks) == 256 + len(tok.merges)  # no two merges share bytes here
    enc = tiktoken.Encoding(
        name="nextword-test", pat_str=tok.pattern, mergeable_ranks=ranks, special_tokens=tok.special_tokens
    )
    text = SAMPLE + "The quick brown fox 123456 — ünïcödé <|endoftext|>"
    assert enc.encode_ordinary(text) == tok.encode(text, allowed_special="none")
    assert enc.encode(text, allowed_special="all") == tok.encode(text, allowed_special="all")


def test_hf_tie_break_reproduces_hf_tokenizers():
    tk_mod = pytest.importorskip("tokenizers")
    from tokenizers import Tokenizer, models, pre_tokenizers, trainers

    hf = Tokenizer(models.BPE())
    hf.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=True)
    trainer = trainers.BpeTrainer(
        vocab_size=600, initial_alphabet=pre_tokenizers.ByteLevel.alphabet(), special_tokens=[], show_progress=False
    )
    hf.train_from_iterator([TEXT], trainer=trainer)
    u2b = {c: b for b, c in bytes_to_unicode().items()}
    merges = json.loads(hf.to_str())["model"]["merges"]
    hf_pairs = [
        tuple(bytes(u2b[ch] for ch in part) for part in (m.split(" ") if isinstance(m, str) else m)) for m in merges
    ]
    ours = BPETokenizer.train(TEXT, 600, pattern="gpt2", tie_break="hf")
    assert [(ours.token_bytes(a), ours.token_bytes(b)) for a, b in ours.merges] == hf_pairs
    assert tk_mod is not None


# ---------------------------------------------------------------------------- CharTokenizer
def test_char_tokenizer():
    tok = CharTokenizer.train("hello world")
    assert tok.vocab_size == len(set("hello world")) + 1
    assert tok.decode(tok.encode("hello")) == "hello"
    ids = tok.encode("hez\ud800")
    assert ids[2] == CharTokenizer.UNK == ids[3] and tok.decode(ids) == "he\ufffd\ufffd"
    assert tok.encode_array("lol").dtype == np.int64
    with pytest.raises(ValueError):
        tok.decode([tok.vocab_size])
    with pytest.raises(ValueError):
        CharTokenizer(["a", "a"])


@settings(max_examples=50, deadline=None)
@given(st.text(min_size=1, max_size=50))
def test_char_tokenizer_roundtrip(s):
    tok = CharTokenizer.train(s)
    assert tok.decode(tok.encode(s)) == s
    assert all(0 < i < tok.vocab_size for i in tok.encode(s))


@settings(max_examples=40, deadline=None)
@given(st.text(alphabet="abc d'\n1é", min_size=1, max_size=80), st.integers(257, 300))
def test_hf_tie_break_property(text, vocab_size):
    """Small alphabets make every count a tie: the HF rule must still match merge for merge."""
    pytest.importorskip("tokenizers")
    from tokenizers import Tokenizer, models, pre_tokenizers, trainers

    hf = Tokenizer(models.BPE())
    hf.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=True)
    hf.train_from_iterator(
        [text],
        trainer=trainers.BpeTrainer(
            vocab_size=vocab_size, initial_alphabet=pre_tokenizers.ByteLevel.alphabet(), show_progress=False
        ),
    )
    u2b = {c: b for b, c in bytes_to_unicode().items()}
    hf_pairs = [
        tuple(bytes(u2b[ch] for ch in part) for part in (m.split(" ") if isinstance(m, str) else m))
        for m in json.loads(hf.to_str())["model"]["merges"]
    ]
    ours = BPETokenizer.train(text, vocab_size, pattern="gpt2", tie_break="hf")
    assert [(ours.token_bytes(a), ours.token_bytes(b)) for a, b in ours.merges] == hf_pairs
