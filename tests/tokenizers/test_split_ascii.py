"""Long ASCII text (issue 49): the GPT-4 split computed with numpy (``split_ascii.split_starts``) gives
the ``regex`` module's pieces, and the piece table (``piece_table.PieceTable``) gives the ids of the
per-piece merge loop — cold, warm, after it is cleared, for pieces of every length (one word, two
words, the dict of longer ones, the linked-list merge past 64 bytes) and when every hash collides."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from nextword.tokenizers import BPETokenizer
from nextword.tokenizers import piece_table
from nextword.tokenizers.bpe import _TABLE_MIN
from nextword.tokenizers.split_ascii import split_starts

regex = pytest.importorskip("regex")

# every class the GPT-4 pattern tells apart on ASCII: the contraction letters in both cases, other
# letters, digits, the six whitespace characters, the apostrophe, punctuation, NUL, \x1c (whitespace
# for Python's str but not for the regex module) and DEL
ALPHABET = "sdmtlvreSDMTLVRExZ0123456789 \t\n\r\x0b\x0c'.,-!\x00\x1c\x7f"
SAMPLE = (
    "First Citizen:\nBefore we proceed any further, hear me speak.\n\nAll:\nSpeak, speak.\n"
    "We know't, we'll  have corn at our own price.\t \n  numbers 12345 678 and   spaces\r\n"
    "'S 'Ll don'T ''s .'re x'vex  \n\n  .\n\n--\r\n word\x00\x00\x00\x00\x00\x00\x00\x00\x00 end\n"
) * 4


def pieces(text: str) -> list[str]:
    starts = split_starts(text.encode("ascii")).tolist()
    return [text[a:b] for a, b in zip(starts, starts[1:] + [len(text)])]


def regex_pieces(text: str) -> list[str]:
    from nextword.tokenizers.bpe import SPLIT_PATTERNS

    return regex.findall(SPLIT_PATTERNS["gpt4"], text)


@settings(max_examples=400, deadline=None)
@given(st.one_of(st.text(alphabet=ALPHABET, max_size=80), st.text(alphabet=st.characters(max_codepoint=127))))
def test_numpy_split_is_the_regex_split(text):
    assert pieces(text) == regex_pieces(text)


def test_numpy_split_on_long_random_text():
    rng = np.random.default_rng(0)
    for _ in range(20):
        text = "".join(rng.choice(list(ALPHABET), size=int(rng.integers(200, 2000))))
        assert pieces(text) == regex_pieces(text)
    assert pieces(SAMPLE) == regex_pieces(SAMPLE)
    assert pieces("") == [] and pieces("1234567") == ["123", "456", "7"]


@pytest.fixture(scope="module")
def tok() -> BPETokenizer:
    return BPETokenizer.train(SAMPLE, 330, pattern="gpt4")


def per_piece(tok: BPETokenizer, text: str) -> list[int]:
    """The oracle: the regex module's split and the per-piece merge loop."""
    return [i for p in regex_pieces(text) for i in tok._encode_bytes(p.encode())]


def table_ids(tok: BPETokenizer, text: str) -> list[int]:
    data = text.encode("ascii")
    return tok._pieces.ids(data, split_starts(data))


@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.text(alphabet=ALPHABET, min_size=1, max_size=80))
def test_piece_table_gives_the_per_piece_ids_cold_and_warm(tok, text):
    fresh = BPETokenizer(tok.merge_list(), pattern="gpt4")
    expect = per_piece(tok, text)
    assert table_ids(fresh, text) == expect  # cold
    assert table_ids(fresh, text) == expect  # warm
    both = text + " " + text[::-1]
    assert table_ids(fresh, both) == per_piece(tok, both)  # some known, some new


def test_long_text_takes_the_table_and_matches_the_str_cache(tok):
    text = SAMPLE * (_TABLE_MIN // len(SAMPLE) + 1) + "y" * 20 + " " + "ab" * 40 + "\n" + "x" * 150 + "."
    assert len(text) >= _TABLE_MIN
    fresh = BPETokenizer(tok.merge_list(), pattern="gpt4")
    expect = per_piece(tok, text)
    assert fresh.encode(text) == expect and fresh.encode(text) == expect
    assert fresh._pieces._long  # pieces over 15 bytes went through the dict
    assert len(fresh._pieces._off) > 0
    assert fresh._encode_pieces(text) == expect  # the str-keyed cache agrees
    assert fresh.decode(expect) == text


def test_piece_table_forgets_past_its_limit(tok):
    fresh = BPETokenizer(tok.merge_list(), pattern="gpt4")
    fresh._pieces = piece_table.PieceTable(fresh._merge_pieces, limit=5)
    for text in (SAMPLE, SAMPLE[::-1], SAMPLE.upper(), SAMPLE):
        assert table_ids(fresh, text) == per_piece(tok, text)
    assert len(fresh._pieces._off) < 5 + len(set(regex_pieces(SAMPLE)))


def test_piece_table_when_every_hash_collides(tok, monkeypatch):
    """With the multiplier 0 every piece hashes to position 0 and to the same 64-bit value: the
    probe chains run through the table, and the new pieces, whose hashes all agree, are entered
    one probe round at a time (``WordTable._enter``) instead of by the sort."""
    monkeypatch.setattr(piece_table, "_MIX0", np.uint64(0))
    fresh = BPETokenizer(tok.merge_list(), pattern="gpt4")
    text = SAMPLE[:300]
    assert table_ids(fresh, text) == per_piece(tok, text)
    assert table_ids(fresh, text + "q") == per_piece(tok, text + "q")


@settings(max_examples=60, deadline=None)
@given(
    st.lists(st.tuples(st.integers(0, 9), st.integers(0, 3)), min_size=1, max_size=300),
    st.sampled_from(["real", "weak"]),
)
def test_put_new_numbers_each_distinct_key_once(pairs, hashing):
    """``put_new`` gives equal keys one number and different keys different numbers, and ``find``
    then returns them: by the sort (the real hash) and by the probe rounds it falls back to when
    different keys share a hash ("weak": only three hash values)."""
    table = piece_table.WordTable(bits=4)
    if hashing == "weak":
        table._hash = lambda w0, w1: (w0 % np.uint64(3)) << np.uint64(62)
    w0 = np.array([a for a, _ in pairs], dtype=np.uint64) * np.uint64(0x1234567)
    w1 = np.array([b for _, b in pairs], dtype=np.uint64)
    number, rep = table.put_new(w0, w1, 7)
    keys = list(zip(w0.tolist(), w1.tolist()))
    assert len(rep) == len(set(keys))  # one number per distinct key
    assert sorted(set(number.tolist())) == list(range(7, 7 + len(rep)))
    for i, key in enumerate(keys):
        assert keys[rep[number[i] - 7]] == key  # the representative of its number is the same key
    assert np.array_equal(table.find(w0, w1), number)
