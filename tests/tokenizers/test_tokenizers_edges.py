"""Tokenizer edges (issues #19 speed paths and #22 bad input): the piece cache gives the ids of the
per-piece merge loop, cold and warm, the list-decoding gather refuses what the array path
refuses, special-token ids are ints (and a large one costs no time), and a bare string is not a
collection of special tokens."""

from __future__ import annotations

import time

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from nextword.tokenizers import BPETokenizer

pytest.importorskip("regex")

SAMPLE = (
    "First Citizen:\nBefore we proceed any further, hear me speak.\n\nAll:\nSpeak, speak.\n"
    "We know't, we'll  have corn at our own price.\t \n  numbers 12345 678 and   spaces\r\n"
    "ünïcödé — “quotes”, emoji 🙂👍🏽 and CJK 漢字かな. (paren) 'quote' \u00a0nbsp \x1c sep\n"
) * 4


@pytest.fixture(scope="module")
def toks() -> dict[str, BPETokenizer]:
    return {p: BPETokenizer.train(SAMPLE, 330, pattern=p) for p in ("gpt2", "gpt4")}


# an alphabet with every character class the split patterns distinguish, spaces of all kinds
ALPHABET = "ab Z'sdtlv19 .,!(\n\r\t\u00a0\u2028\x1c\x0bé漢🙂"


def per_piece(tok: BPETokenizer, text: str, pattern: str) -> list[int]:
    """The oracle: the ``regex`` module's split and the per-piece merge loop (``_encode_bytes``)."""
    import regex

    from nextword.tokenizers.bpe import SPLIT_PATTERNS

    return [i for ch in regex.findall(SPLIT_PATTERNS[pattern], text) for i in tok._encode_bytes(ch.encode())]


@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.text(alphabet=ALPHABET, max_size=40), st.sampled_from(["gpt2", "gpt4"]))
def test_piece_cache_cold_and_warm_gives_the_per_piece_ids(toks, text, pattern):
    tok = toks[pattern]
    expect = per_piece(tok, text, pattern)
    fresh = BPETokenizer(tok.merge_list(), pattern=pattern)
    assert fresh.encode(text) == expect  # cold: pieces learned from this text
    assert fresh.encode(text) == expect  # warm: pieces from the cache
    assert fresh.encode(text + " " + text) == per_piece(tok, text + " " + text, pattern)  # some cached, some new
    assert fresh.decode(expect) == text


@settings(max_examples=150, deadline=None)
@given(st.text(alphabet=st.characters(max_codepoint=127), max_size=60), st.sampled_from(["gpt2", "gpt4"]))
def test_ascii_split_is_the_regex_modules_split(text, pattern):
    """On ASCII text the named patterns are split by ``re`` with [A-Za-z], [0-9] and the regex
    module's whitespace spelled out: the pieces must be exactly the ``regex`` module's."""
    import regex

    from nextword.tokenizers.bpe import SPLIT_PATTERNS, _compile

    assert _compile(pattern).findall(text) == regex.findall(SPLIT_PATTERNS[pattern], text)


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    st.one_of(st.text(alphabet=ALPHABET, max_size=60), st.text(alphabet="abc d'\nxyz0", max_size=200)),
    st.sampled_from(["gpt2", "gpt4"]),
)
def test_merging_many_pieces_at_once_equals_the_per_piece_loop(toks, text, pattern):
    """A fresh tokenizer merges all new pieces in one vectorised batch; the oracle is the regex
    module's split and the per-piece merge loop (``_encode_bytes``), piece by piece."""
    import regex

    from nextword.tokenizers.bpe import SPLIT_PATTERNS

    tok = toks[pattern]
    expect = [i for ch in regex.findall(SPLIT_PATTERNS[pattern], text) for i in tok._encode_bytes(ch.encode())]
    assert BPETokenizer(tok.merge_list(), pattern=pattern).encode(text) == expect
    assert BPETokenizer(tok.merge_list(), pattern=pattern)._encode_pieces(text) == expect


def test_pieces_longer_than_the_batch_limit(toks):
    """Pieces over 64 bytes leave the batch for the linked-list merge; the result is the same."""
    import regex

    from nextword.tokenizers.bpe import SPLIT_PATTERNS

    text = "x" * 150 + " abc " + "ab" * 40 + "\n" * 80 + " é" * 3 + "é" * 70
    for pattern, tok in toks.items():
        expect = [i for ch in regex.findall(SPLIT_PATTERNS[pattern], text) for i in tok._encode_bytes(ch.encode())]
        assert BPETokenizer(tok.merge_list(), pattern=pattern).encode(text) == expect
        assert BPETokenizer(tok.merge_list(), pattern=pattern)._encode_pieces("x" * 100) == tok._encode_bytes(
            b"x" * 100
        )


def test_piece_cache_on_a_corpus_and_a_custom_pattern(toks):
    for pattern, tok in toks.items():
        assert tok.encode(SAMPLE) == per_piece(tok, SAMPLE, pattern)
    custom = BPETokenizer(toks["gpt2"].merge_list(), pattern=r"\S+|\s+")
    assert custom.decode(custom.encode(SAMPLE)) == SAMPLE


def test_list_decoding_refuses_what_arrays_refuse(toks):
    tok = toks["gpt4"]
    ids = tok.encode(SAMPLE)
    assert tok.decode(ids) == tok.decode(np.asarray(ids)) == tok.decode(tuple(ids)) == SAMPLE
    assert tok.decode([]) == "" and tok.decode([65]) == "A"
    for bad in ([65, -1], [-1], [65, 330], [65, 10**9]):
        with pytest.raises(ValueError, match="unknown token id"):
            tok.decode(bad)
    for bad in ([65, 1.0], [1.0], [65, "66"], ["66"]):
        with pytest.raises(ValueError, match="ints"):
            tok.decode(bad)
    gap = BPETokenizer(special_tokens={"<s>": 1000})  # ids 256..999 unknown
    with pytest.raises(ValueError, match="unknown token id 500"):
        gap.decode([65, 500])
    assert gap.decode([65, 1000]) == "A<s>"


@pytest.mark.parametrize("n", [2047, 2048, 2049, 2050, 4096, 4097, 6000])
def test_list_decoding_in_blocks(toks, n):
    """Lists are gathered in blocks of 2,048 ids: every length around a block edge (a last block of
    one id included) decodes as the array path does, and a bad id in a later block is still named."""
    tok = toks["gpt4"]
    ids = (tok.encode(SAMPLE) * (n // 100 + 1))[:n]
    assert len(ids) == n
    assert tok.decode_bytes(ids) == tok.decode_bytes(np.asarray(ids)) == tok.decode_bytes(tuple(ids))
    for bad, match in ((-1, "unknown token id -1"), (330, "unknown token id 330"), (1.0, "ints")):
        with pytest.raises(ValueError, match=match):
            tok.decode(ids[:-1] + [bad])


def test_special_token_ids_are_ints_and_cheap():
    with pytest.raises(TypeError, match="special token '<s>' must be an integer"):
        BPETokenizer(special_tokens={"<s>": "300"})
    with pytest.raises(TypeError, match="special_tokens must be a mapping"):
        BPETokenizer(special_tokens=["<s>"])  # type: ignore[arg-type]
    t0 = time.process_time()
    tok = BPETokenizer(special_tokens={"<s>": 2**24 - 1})
    assert tok.decode([65, 2**24 - 1]) == "A<s>"
    with pytest.raises(ValueError, match="unknown token id 300"):
        tok.decode([300])
    assert time.process_time() - t0 < 1.0  # used to loop over every id below 2**24 (seconds)
    assert tok.special_tokens == {"<s>": 2**24 - 1}


def test_a_bare_string_is_not_a_list_of_special_tokens():
    with pytest.raises(TypeError, match=r"wrap it in a list: \['<s>'\]"):
        BPETokenizer.train("abc abc", 260, special_tokens="<s>")
    with pytest.raises(TypeError, match="must contain strings"):
        BPETokenizer.train("abc abc", 260, special_tokens=["<s>", 5])
    tok = BPETokenizer.train("abc abc", 260, special_tokens=("<s>",))
    assert list(tok.special_tokens) == ["<s>"]


def test_a_vocabulary_too_large_for_the_id_packing_is_named():
    with pytest.raises(ValueError, match=r"vocab_size must be < 2\*\*21"):
        BPETokenizer.train("abc abc", 10**7)


def test_re_whitespace_covers_the_split_patterns_whitespace():
    """The word cut (``re``'s ``\\S`` before a space) is only sound if every character the
    ``regex`` module calls whitespace is whitespace for ``re`` too — checked over all of Unicode."""
    import re

    import regex

    everything = "".join(map(chr, range(0x110000)))
    assert set(regex.findall(r"\s", everything)) <= set(re.findall(r"\s", everything))
