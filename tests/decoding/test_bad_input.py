"""Decoding search and n-grams: bounded work and named errors (issue #22)."""

from __future__ import annotations

import time

import numpy as np
import pytest

from nextword.decoding import (
    NGramLM,
    beam_search,
    exhaustive_search,
    greedy,
    lookahead_search,
    pad_to_length,
    random_table_model,
    sequence_log_prob,
    table_model,
)

LM = random_table_model(12, 2, np.random.default_rng(0))


def test_lookahead_search_is_bounded_like_exhaustive_search() -> None:
    t0 = time.process_time()
    with pytest.raises(ValueError, match="use a smaller window or top_k"):
        lookahead_search(LM.next_logits, [0], 12, window=12)
    with pytest.raises(ValueError, match="exhaustive_search would enumerate"):
        exhaustive_search(LM.next_logits, [0], 12)
    assert time.process_time() - t0 < 1.0
    # within the bound nothing changes: window 1 is greedy
    assert lookahead_search(LM.next_logits, [0], 4, window=1) == greedy(LM.next_logits, [0], 4)


@pytest.mark.parametrize(
    "call",
    [
        lambda: greedy(LM.next_logits, None, 2),
        lambda: greedy(LM.next_logits, "01", 2),
        lambda: sequence_log_prob(LM.next_logits, None, 0),
        lambda: pad_to_length(None, 3, 0),
    ],
)
def test_none_and_strings_as_ids_are_named(call) -> None:
    with pytest.raises(TypeError, match="(prompt|tokens).* integer token id"):
        call()


def test_special_ids_and_scalars_are_checked() -> None:
    with pytest.raises(ValueError, match="eos_id must be >= 0"):
        greedy(LM.next_logits, [0], 2, eos_id=-1)
    with pytest.raises(TypeError, match="pad_id must be an integer"):
        pad_to_length([0], 3, "0")
    with pytest.raises(TypeError, match="length_penalty must be a real number"):
        beam_search(LM.next_logits, [0], 2, 2, length_penalty=None)
    with pytest.raises(TypeError, match="next_logits must be a callable"):
        greedy(3, [0], 2)


def test_ngram_of_a_huge_vocabulary_is_lazy_and_refuses_dense_vectors_by_name() -> None:
    t0 = time.process_time()
    lm = NGramLM(10**9, 2)  # allocates nothing
    with pytest.raises(ValueError, match=r"dense \(vocab_size,\) vector would allocate 1e\+09"):
        lm.next_logits([0])
    assert time.process_time() - t0 < 0.5


def test_ngram_inputs_are_named() -> None:
    lm = NGramLM(3, 2)
    with pytest.raises(TypeError, match="sequences must be"):
        lm.fit(5)
    with pytest.raises(ValueError, match="context"):
        lm.counts([0, 1, 2])
    with pytest.raises(TypeError, match="k .* must be a real number"):
        NGramLM(3, 2, k=None)
    with pytest.raises(TypeError, match=r"table\[\(\)\]: logits must be a numeric array"):
        table_model(3, 2, {(): "x"})
    # an int seed is np.random.default_rng's seed
    assert LM.sample(5, 1) == LM.sample(5, np.random.default_rng(1))
