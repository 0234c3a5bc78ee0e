"""The glossary's definitions that state a convention agree with the code (issue 45 #5, #6).

Each entry of :data:`CONVENTIONS` names a glossary term, the phrase its definition must contain (the
convention, stated), the phrase it must not (the convention's opposite, as the glossary once had it), and a
check that the library keeps that convention: token ids count from 0 (the tokenizers), a one-hot *row*
vector picks out a *row* of a matrix (``x W``: ``nextword.embedding``, the projections of
``nextword.attention``), an attention score comes before the softmax and a weight after it. The checks of
the definitions are shown to fail on the old wording.
"""

from __future__ import annotations

import re

import numpy as np
import pytest

from nextword.booktools import teaching


def _ids_count_from_zero() -> None:
    from nextword.tokenizers.bpe import BPETokenizer
    from nextword.tokenizers.characters import CharTokenizer

    chars = CharTokenizer.train("abcab")
    assert sorted(set(chars.encode("abc?"))) == list(range(chars.vocab_size))  # 0 (unknown), 1, 2, 3
    bpe = BPETokenizer.train("abcab abcab abcab", 260)
    ids = bpe.encode("abcab abcab abcab") + bpe.encode("\x00")
    assert min(ids) == 0 and max(ids) <= bpe.vocab_size - 1 and bpe.decode([0]) == "\x00"


def _rows_times_matrices() -> None:
    from nextword.attention import MultiHeadAttention
    from nextword.embedding import embed, one_hot

    rng = np.random.default_rng(0)
    table = rng.normal(size=(5, 3))
    ids = np.array([4, 0, 2])
    assert np.array_equal(one_hot(ids, 5) @ table, embed(table, ids))  # x E: row v of E
    assert np.array_equal(embed(table, ids), table[ids])
    mha = MultiHeadAttention(4, 1, rng=rng)
    X = rng.normal(size=(3, 4))
    q_row = X[1] @ mha.W_q  # q[i] = e[i] W^Q, a row vector times the matrix
    weights = mha(X, return_weights=True)[1]  # (heads, T, T)
    scores = (X @ mha.W_q) @ (X @ mha.W_k).T / np.sqrt(4)
    scores = np.where(np.tril(np.ones((3, 3), bool)), scores, -np.inf)  # causal, as the module is by default
    assert np.allclose((X @ mha.W_q)[1], q_row)
    expected = np.exp(scores - scores.max(-1, keepdims=True))
    assert np.allclose(np.squeeze(weights), expected / expected.sum(-1, keepdims=True))


def _scores_before_weights_after() -> None:
    from nextword.attention import scaled_dot_product_attention, softmax

    rng = np.random.default_rng(1)
    q, k, v = (rng.normal(size=(4, 2)) for _ in range(3))
    out, weights = scaled_dot_product_attention(q, k, v, return_weights=True)
    scores = q @ k.T / np.sqrt(2)
    assert np.allclose(weights, softmax(scores, axis=-1)) and np.allclose(weights.sum(-1), 1.0)
    assert np.allclose(out, weights @ v) and (scores < 0).any()  # scores are any real number; weights are not


#: ``{term: (the phrase its definition states, the opposite it must not state, the code's check)}``.
CONVENTIONS = {
    "token": (r"from 0 to", r"from 1 to", _ids_count_from_zero),
    "one-hot vector": (r"row vector .* picks out\s+row", r"column", _rows_times_matrices),
    "attention score": (r"before\*? the softmax", r"after\*? the softmax", _scores_before_weights_after),
    "attention weight": (r"after\*? the softmax", r"before\*? the softmax", _scores_before_weights_after),
}


def _states(definition: str, phrase: str, opposite: str) -> list[str]:
    problems = []
    if not re.search(phrase, definition, re.S):
        problems.append(f"does not state the convention /{phrase}/")
    if re.search(opposite, definition, re.S):
        problems.append(f"states the opposite /{opposite}/")
    return problems


@pytest.mark.parametrize("term", list(CONVENTIONS))
def test_a_definition_that_states_a_convention_states_the_codes(term):
    phrase, opposite, code_keeps_it = CONVENTIONS[term]
    definition = teaching.glossary_terms()[term]
    assert _states(definition, phrase, opposite) == [], f"glossary entry {term!r}: {definition}"
    code_keeps_it()


def test_the_old_definitions_fail():
    old_token = "A tokeniser cuts a text into tokens and labels each with an integer from 1 to the vocabulary size."
    old_one_hot = "Multiplying a matrix by the one-hot vector of place $v$ picks out the matrix's column $v$."
    assert _states(old_token, *CONVENTIONS["token"][:2]) == [
        "does not state the convention /from 0 to/",
        "states the opposite /from 1 to/",
    ]
    assert len(_states(old_one_hot, *CONVENTIONS["one-hot vector"][:2])) == 2


def test_the_glossary_has_the_terms_later_pages_lean_on_and_one_rope_entry():
    terms = teaching.glossary_terms()
    for term in ("coupling", "logit lens", "ece", "rank correlation", "spearman correlation", "pca", "mmd"):
        assert term in terms, term
    assert terms["rope"] == terms["rotary position embedding"]  # one entry, two names
    text = teaching.GLOSSARY.read_text(encoding="utf-8")
    assert text.count("\nRoPE\n") == 1


def test_terms_on_consecutive_lines_share_one_definition(tmp_path):
    glossary = tmp_path / "glossary.md"
    glossary.write_text("```{glossary}\n:sorted:\n\nalpha\nA\n  The first.\n\nbeta\n  The second.\n```\n")
    assert teaching.glossary_terms(glossary) == {"alpha": "The first.", "a": "The first.", "beta": "The second."}
