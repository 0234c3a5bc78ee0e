"""A sweep of bad inputs over the public callables of the numpy core (issue #22).

Each public callable gets a valid baseline call and, per argument, a list of bad (or extreme)
values; every variant is called once and classified as

* ``named``      -- a ``ValueError``/``TypeError`` (or subclass) whose message names the argument,
                    with no numpy-internals wording;
* ``raw``        -- any other exception, or a ``ValueError``/``TypeError`` that does not name the
                    argument or speaks numpy internals ("could not be broadcast", ...);
* ``silent``     -- a value came back although the input is invalid, or it contains NaN;
* ``documented`` -- a value came back for an input the docstring allows (an int seed, a huge
                    but legal length), and it is finite;
* ``hang``       -- the call took longer than a second (cut at ``CUT_S``).

Run it as ``python -m tests.bad_inputs`` (counts, ``--list`` for every non-named case). Covers
positions, embedding, decoder + KV cache, decoding search, n-grams, corpora, synthetic sources and
evaluation; attention, norms, filters/sampling and tokenizers have their own edge tests.
``tests/test_bad_inputs.py`` asserts that no case is raw, silent or a hang.

Counts of this sweep (1063 bad inputs, 61 callables), before the validation layer was applied
(commit 0988a66): named 688, raw 242, silent 114, documented 15, hang 4; after: named 1027,
raw 0, silent 0, documented 36, hang 0.

The second sweep (issue #33, :func:`specs_second`: None/int/str where a sequence, path, cache or
dtype is expected, floats and bools used as integers, width 0, overflow, on the tokenizers, the
BPE trainer, attention, blocks, norms, activations, metrics and data paths) brings it to 1342 bad
inputs against 92 callables: before its fixes (commit 54991ff) named 1199, raw 74, silent 22,
documented 47, hang 0; after: named 1293, raw 0, silent 0, documented 49, hang 0. Every other
public callable of the library (chapter6, theory.*) is swept coarsely by
:mod:`tests.bad_inputs_theory`.
"""

from __future__ import annotations

import signal
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

import numpy as np

import nextword.data as data
from nextword import embedding, positions
from nextword.attention.kv_cache import KVCache, LayerKVCache
from nextword.data import synthetic
from nextword.decoder import DecoderConfig, DecoderLM
from nextword import attention
from nextword.decoder import layers
from nextword.decoding import filters, generation, ngram
from nextword.tokenizers import BPETokenizer, CharTokenizer
from nextword.tokenizers import trainer as bpe_trainer
from nextword.evaluation import metrics, two_sample

LIMIT_S = 1.0  # a call slower than this is a "hang"
CUT_S = 3.0  # calls are interrupted after this
INTERNALS = (
    "could not be broadcast",
    "core dimension",
    "zero-size array",
    "'NoneType' object",
    "has no attribute",
    "not iterable",
    "unsupported operand",
    "out of bounds",
    "invalid literal",
    "cannot be interpreted",
    "can't multiply",
    "ufunc",
    "Unable to allocate",
    "setting an array element",
    "inhomogeneous",
    "only integer",
    "object of type",
    "not subscriptable",
    "codec can't decode",
)


@dataclass(frozen=True)
class Bad:
    """One argument value to try; ``ok``: the docstring allows it (a finite result is fine)."""

    value: Any
    ok: bool = False
    tag: str = ""
    names: str = ""  # what the error must name instead of the argument (e.g. the file's name)


def _nan(shape: tuple[int, ...]) -> np.ndarray:
    a = np.ones(shape)
    a.flat[0] = np.nan
    return a


def _inf(shape: tuple[int, ...]) -> np.ndarray:
    a = np.ones(shape)
    a.flat[-1] = np.inf
    return a


def bad_count(minimum: int = 1, huge: bool = False) -> list[Bad]:
    """Bad values for an integer count ``>= minimum`` (``huge``: a size that must be refused)."""
    out = [Bad(minimum - 1), Bad(2.5), Bad("3"), Bad(None), Bad(True), Bad(float("nan"))]
    if huge:
        out.append(Bad(10**12, tag="huge"))
    return out


def bad_real(lo: float | None = None, *, inclusive: bool = False, hi: float | None = None) -> list[Bad]:
    out = [
        Bad(float("nan")),
        Bad(float("inf")),
        Bad(float("-inf")),
        Bad("1.0"),
        Bad(None),
        Bad(np.array([1.0, 2.0]), tag="array"),
    ]
    if lo is not None:
        out.append(Bad(lo - 1.0))
        if not inclusive:
            out.append(Bad(lo))
    if hi is not None:
        out.append(Bad(hi + 1.0))
    return out


def bad_array(shape: tuple[int, ...]) -> list[Bad]:
    return [
        Bad(_nan(shape), tag="nan"),
        Bad(_inf(shape), tag="inf"),
        Bad(np.ones(shape + (2,)), tag="ndim+1"),
        Bad(np.ones((0,) + shape[1:]), tag="empty"),
        Bad(np.full(shape, "a"), tag="str"),
        Bad(None),
        Bad("abc"),
        Bad(np.ones(shape, dtype=complex), tag="complex"),
        Bad([[1.0, 2.0], [3.0]], tag="ragged"),
    ]


def bad_values(shape: tuple[int, ...]) -> list[Bad]:
    """``bad_array`` for functions that take any leading axes: the extra axis and the empty array are
    documented inputs there (batched input; an empty result as torch returns), so they are not listed."""
    return [b for b in bad_array(shape) if b.tag not in ("ndim+1", "empty")]


def bad_ids(upper: int) -> list[Bad]:
    return [
        Bad([-1]),
        Bad([upper]),
        Bad([0.5]),
        Bad(None),
        Bad("01"),
        Bad([[0, 1], [2]], tag="ragged"),
        Bad([10**30], tag="bigint"),
        Bad([True, False], tag="bools"),
    ]


def bad_prompt() -> list[Bad]:
    """Bad prompts for a decoder; an id beyond V is refused by the model, which names its prefix."""
    return [
        b if b.value != [10**9] else Bad([10**9], names="prefix", tag="id >= V (model names it)")
        for b in bad_ids(10**9)[:-2]
    ]


def bad_rng(required: bool = True) -> list[Bad]:
    return [
        Bad(42, ok=True, tag="int seed"),
        Bad(np.random.SeedSequence(1), ok=True, tag="SeedSequence"),
        Bad("seed"),
        Bad(1.5),
        Bad(np.random.RandomState(0), tag="RandomState"),
        Bad(-3),
    ] + ([] if required else [Bad(None, ok=True)])


def optional(bads: list[Bad]) -> list[Bad]:
    """The same list for an argument whose default is ``None``: ``None`` is then a documented value."""
    return [Bad(None, ok=True, tag="None") if b.value is None else b for b in bads]


def bad_str() -> list[Bad]:
    return [Bad(3), Bad(None), Bad(["a"])]


@dataclass(frozen=True)
class Spec:
    """A callable, a valid baseline call, and bad values per argument."""

    name: str
    fn: Callable[..., Any]
    base: dict[str, Any]
    bad: dict[str, list[Bad]] = field(default_factory=dict)


# ---------------------------------------------------------------------- fixtures for the specs
def _lm(**over: Any) -> DecoderLM:
    cfg = DecoderConfig(vocab_size=5, d_model=4, num_heads=2, num_layers=1, max_len=8, **over)
    return DecoderLM(cfg, rng=np.random.default_rng(0))


def _table() -> ngram.NGramLM:
    return ngram.random_table_model(3, 2, np.random.default_rng(0))


def _model(prefix: list[int]) -> np.ndarray:
    return _TABLE.next_logits(prefix)


_TABLE = ngram.random_table_model(3, 2, np.random.default_rng(0))


def _nan_model(prefix: list[int]) -> np.ndarray:
    return np.array([0.0, np.nan, 1.0])


def _batches(**kw: Any) -> Any:
    return next(data.batches(**kw))


def _bad_utf8(tmp: Path) -> Path:
    p = tmp / "latin1.txt"
    p.write_bytes("caf\xe9 au lait\n".encode("latin-1") * 10)
    return p


def _good_text(tmp: Path) -> Path:
    p = tmp / "good.txt"
    p.write_text("to be or not to be\n" * 10, encoding="utf-8")
    return p


def specs(tmp: Path) -> list[Spec]:
    """Every spec; ``tmp`` is a scratch directory for the file cases."""
    G = np.random.default_rng
    x34 = np.ones((3, 4))
    p3 = np.array([0.2, 0.3, 0.5])
    T2 = np.array([[0.9, 0.1], [0.2, 0.8]])
    samp = np.arange(6.0)
    return [
        # ---- positions
        Spec(
            "rope_frequencies",
            positions.rope_frequencies,
            dict(d=4),
            dict(d=bad_count(huge=True), base=bad_real(1.0, inclusive=False)),
        ),
        Spec(
            "sinusoidal_encoding",
            positions.sinusoidal_encoding,
            dict(num_positions=3, d_model=4),
            dict(num_positions=bad_count(huge=True), d_model=bad_count(huge=True), base=bad_real(1.0)),
        ),
        Spec(
            "sinusoidal_shift_matrix",
            positions.sinusoidal_shift_matrix,
            dict(k=1.0, d_model=4),
            dict(k=bad_real(), d_model=bad_count(huge=True) + [Bad(3)], base=bad_real(1.0)),
        ),
        Spec(
            "rope_rotation_matrix",
            positions.rope_rotation_matrix,
            dict(position=1.0, d=4),
            dict(position=bad_real(), d=bad_count(huge=True) + [Bad(3)], base=bad_real(1.0)),
        ),
        Spec(
            "apply_rope",
            positions.apply_rope,
            dict(x=x34, positions=np.arange(3.0)),
            dict(
                x=bad_array((3, 4))[:-3] + [Bad(np.ones((3, 3)), tag="odd d")],
                positions=optional(bad_array((3,))) + [Bad(np.arange(4.0), tag="wrong T")],
                base=bad_real(1.0),
            ),
        ),
        Spec(
            "LearnedPositionalEmbedding",
            positions.LearnedPositionalEmbedding,
            dict(max_len=8, d_model=4, rng=G(0)),
            dict(
                max_len=bad_count(huge=True),
                d_model=bad_count(huge=True),
                rng=bad_rng(False),
                std=bad_real(0.0, inclusive=True),
                dtype=[Bad(np.int64), Bad("banana"), Bad(complex)],
            ),
        ),
        Spec(
            "LearnedPositionalEmbedding.__call__",
            lambda positions: positions_table()(positions),
            dict(positions=3),
            dict(positions=bad_ids(8) + [Bad(9), Bad(0), Bad(-1), Bad(2.0)]),
        ),
        # ---- embedding
        Spec("embed", embedding.embed, dict(table=x34, ids=[0, 2]), dict(table=bad_array((3, 4)), ids=bad_ids(3))),
        Spec(
            "one_hot",
            embedding.one_hot,
            dict(ids=[0, 2], vocab_size=3),
            dict(ids=bad_ids(3), vocab_size=bad_count(huge=True), dtype=[Bad("banana"), Bad(object, tag="object")]),
        ),
        Spec(
            "embedding_grad",
            embedding.embedding_grad,
            dict(ids=[0, 2], grad_output=np.ones((2, 4)), vocab_size=3),
            dict(ids=bad_ids(3), grad_output=bad_array((2, 4)), vocab_size=bad_count(huge=True)),
        ),
        Spec(
            "TokenEmbedding",
            embedding.TokenEmbedding,
            dict(vocab_size=5, d_model=4, rng=G(0)),
            dict(
                vocab_size=bad_count(huge=True),
                d_model=bad_count(huge=True),
                rng=bad_rng(False),
                std=bad_real(0.0, inclusive=True),
                dtype=[Bad(np.int64), Bad("banana"), Bad(complex)],
            ),
        ),
        # ---- decoder and KV cache
        Spec(
            "DecoderConfig",
            DecoderConfig,
            dict(vocab_size=5, d_model=4, num_heads=2, num_layers=1, max_len=8),
            dict(
                vocab_size=bad_count(huge=True),
                d_model=bad_count(huge=True),
                num_heads=bad_count() + [Bad(3)],
                num_layers=bad_count(),
                max_len=bad_count(),
                d_ff=optional(bad_count(huge=True)),
                eps=bad_real(0.0, inclusive=True),
                emb_std=bad_real(0.0, inclusive=True),
                rope_base=bad_real(1.0),
                positional=bad_str() + [Bad("rotary")],
                dtype=[Bad(np.float64), Bad("int64")],
                causal=[Bad("yes"), Bad(None)],
            ),
        ),
        Spec(
            "DecoderLM",
            DecoderLM,
            dict(config=DecoderConfig(5, 4, 2, 1, 8), rng=G(0)),
            dict(config=[Bad(None), Bad({"vocab_size": 5})], rng=bad_rng(False)),
        ),
        Spec(
            "DecoderLM(max_len=10**8).logits",
            lambda tokens: _lm_big().logits(tokens),
            dict(tokens=[0, 1]),
            dict(tokens=[Bad([0, 1, 2], ok=True, tag="first forward, max_len 1e8")]),
        ),
        Spec(
            "DecoderLM.logits",
            lambda tokens, head_mask=None: _lm().logits(tokens, head_mask=head_mask),
            dict(tokens=[0, 1]),
            dict(
                tokens=bad_ids(5) + [Bad([]), Bad(np.zeros((2, 0), dtype=int), tag="T=0")],
                head_mask=optional(bad_array((1, 2))),
            ),
        ),
        Spec(
            "DecoderLM.next_logits",
            lambda prefix: _lm().next_logits(prefix),
            dict(prefix=[0, 1]),
            dict(prefix=bad_ids(5) + [Bad([]), Bad(3)]),
        ),
        Spec(
            "DecoderLM.load_parameters",
            lambda params: _lm().load_parameters(params, strict=False),
            dict(params={"tok_emb": np.ones((5, 4))}),
            dict(
                params=[
                    Bad({"tok_emb": _nan((5, 4))}),
                    Bad({"tok_emb": np.ones((4, 5))}),
                    Bad({"tok_emb": "x"}),
                    Bad(None),
                    Bad([("tok_emb", 1.0)]),
                ]
            ),
        ),
        Spec(
            "DecoderLM.logits_cached",
            lambda tokens, cache: _lm().logits_cached(tokens, cache),
            dict(tokens=[0, 1], cache=KVCache(1, 8)),
            dict(tokens=bad_ids(5), cache=[Bad(None), Bad(KVCache(2)), Bad(LayerKVCache())]),
        ),
        Spec(
            "KVCache", KVCache, dict(num_layers=2), dict(num_layers=bad_count(huge=True), capacity=bad_count(huge=True))
        ),
        Spec(
            "LayerKVCache.append",
            lambda k, v: LayerKVCache(4).append(k, v),
            dict(k=np.ones((2, 3, 4)), v=np.ones((2, 3, 4))),
            dict(k=bad_array((2, 3, 4)) + [Bad([1.0, 2.0])], v=bad_array((2, 3, 4))),
        ),
        Spec(
            "LayerKVCache.truncate",
            lambda length: _cache3().truncate(length),
            dict(length=1),
            dict(length=[Bad(-1), Bad(4), Bad(1.5), Bad(None), Bad("1"), Bad(float("nan"))]),
        ),
        # ---- decoding search
        Spec(
            "greedy",
            generation.greedy,
            dict(next_logits=_model, prompt=[0], max_new_tokens=3),
            dict(
                next_logits=[Bad(None), Bad(3), Bad(_nan_model)],
                prompt=bad_prompt(),
                max_new_tokens=bad_count(0),
                eos_id=[Bad(-1), Bad("1"), Bad(1.5)],
            ),
        ),
        Spec(
            "exhaustive_search",
            generation.exhaustive_search,
            dict(next_logits=_model, prompt=[0], length=2),
            dict(
                next_logits=[Bad(None), Bad(_nan_model)],
                prompt=bad_prompt(),
                length=bad_count(0) + [Bad(40, tag="huge")],
                vocab_size=optional(bad_count()) + [Bad(7)],
                eos_id=[Bad(-1), Bad("1")],
            ),
        ),
        Spec(
            "lookahead_search",
            generation.lookahead_search,
            dict(next_logits=_model, prompt=[0], max_new_tokens=3, window=2),
            dict(
                next_logits=[Bad(None), Bad(_nan_model)],
                prompt=bad_prompt(),
                max_new_tokens=bad_count(0),
                window=bad_count() + [Bad(30, ok=True, tag="window > max_new_tokens")],
                top_k=optional(bad_count()),
                eos_id=[Bad(-1), Bad("1")],
            ),
        ),
        Spec(
            "beam_search",
            generation.beam_search,
            dict(next_logits=_model, prompt=[0], max_new_tokens=3, beam_width=2),
            dict(
                next_logits=[Bad(None), Bad(_nan_model)],
                prompt=bad_prompt(),
                max_new_tokens=bad_count(0),
                beam_width=bad_count(),
                length_penalty=bad_real()[:5],
                eos_id=[Bad(-1), Bad("1")],
            ),
        ),
        Spec(
            "mixed",
            generation.mixed,
            dict(next_logits=_model, prompt=[0], num_sampled=1, max_new_tokens=3, rng=G(0)),
            dict(prompt=bad_prompt(), num_sampled=bad_count(0) + [Bad(4)], max_new_tokens=bad_count(0), rng=bad_rng()),
        ),
        Spec(
            "sequence_log_prob",
            generation.sequence_log_prob,
            dict(next_logits=_model, tokens=[0, 1, 2], start=1),
            dict(
                next_logits=[Bad(None), Bad(_nan_model)],
                tokens=[Bad([3], ok=True, tag="[3], nothing scored") if b.value == [3] else b for b in bad_ids(3)[:-2]],
                start=[Bad(-1), Bad(4), Bad(1.0), Bad(None)],
                eos_id=[Bad(-1), Bad("1")],
                pad_id=[Bad(-1), Bad("1")],
            ),
        ),
        Spec(
            "pad_to_length",
            generation.pad_to_length,
            dict(tokens=[0, 1], length=4, pad_id=0),
            dict(
                tokens=[b for b in bad_ids(10**9)[:-2] if b.value != [10**9]],
                length=bad_count(0) + [Bad(10**12, tag="huge")],
                pad_id=[Bad(-1), Bad("0"), Bad(None), Bad(1.5)],
            ),
        ),
        # ---- n-grams
        Spec(
            "NGramLM",
            ngram.NGramLM,
            dict(vocab_size=3, order=2),
            dict(
                vocab_size=bad_count() + [Bad(10**9, ok=True, tag="large V, lazy")],
                order=bad_count() + [Bad(10**6, ok=True, tag="large order, lazy")],
                k=bad_real(0.0, inclusive=True),
            ),
        ),
        Spec(
            "NGramLM(10**9, 2).next_logits",
            lambda prefix: ngram.NGramLM(10**9, 2).next_logits(prefix),
            dict(prefix=[0]),
            dict(prefix=[Bad([1], tag="allocates V floats", names="vocab_size")]),
        ),
        Spec(
            "NGramLM.fit",
            lambda sequences: ngram.NGramLM(3, 2).fit(sequences),
            dict(sequences=[[0, 1, 2]]),
            dict(
                sequences=[
                    Bad(None),
                    Bad("012"),
                    Bad([[0, 3]]),
                    Bad([[0.5, 1]]),
                    Bad(np.ones((2, 2, 2), int)),
                    Bad(5),
                    Bad([[-1]]),
                ]
            ),
        ),
        Spec(
            "NGramLM.set_logits",
            lambda context, logits: ngram.NGramLM(3, 2).set_logits(context, logits),
            dict(context=[0], logits=np.zeros(3)),
            dict(context=bad_ids(3) + [Bad([0, 1])], logits=bad_array((3,)) + [Bad(np.full(3, -np.inf))]),
        ),
        Spec(
            "NGramLM.next_logits",
            lambda prefix: _table().next_logits(prefix),
            dict(prefix=[0]),
            dict(prefix=bad_ids(3)[:-2] + [Bad(3)]),
        ),
        Spec(
            "NGramLM.log_prob",
            lambda tokens, start=0: _table().log_prob(tokens, start),
            dict(tokens=[0, 1]),
            dict(tokens=bad_ids(3)[:-2], start=[Bad(-1), Bad(3), Bad(0.5), Bad(None)]),
        ),
        Spec(
            "NGramLM.sample",
            lambda length, rng, prefix=(): _table().sample(length, rng, prefix),
            dict(length=3, rng=G(0)),
            dict(length=bad_count(0) + [Bad(10**12, tag="huge")], rng=bad_rng(), prefix=bad_ids(3)[:-2]),
        ),
        Spec(
            "NGramLM.counts",
            lambda context: ngram.NGramLM(3, 2).counts(context),
            dict(context=[0]),
            dict(context=bad_ids(3)[:-2] + [Bad([0, 1, 2])]),
        ),
        Spec(
            "random_table_model",
            ngram.random_table_model,
            dict(vocab_size=3, order=2, rng=G(0)),
            dict(vocab_size=bad_count(huge=True), order=bad_count(huge=True), rng=bad_rng(), temperature=bad_real(0.0)),
        ),
        Spec(
            "table_model",
            ngram.table_model,
            dict(vocab_size=3, order=2, table={(): np.zeros(3)}),
            dict(
                table=[Bad(None), Bad({(): "x"}), Bad({(5,): np.zeros(3)}), Bad({"0": np.zeros(3)}), Bad([np.zeros(3)])]
            ),
        ),
        # ---- corpora and synthetic sources
        Spec(
            "load_corpus",
            data.load_corpus,
            dict(name=_good_text(tmp)),
            dict(
                name=[
                    Bad(_bad_utf8(tmp), tag="latin-1 file", names="latin1.txt"),
                    Bad(None),
                    Bad(3),
                    Bad(tmp / "missing.txt"),
                ],
                val_fraction=bad_real(0.0, hi=1.0),
                root=[Bad(3)],
            ),
        ),
        Spec(
            "read_wikitext2",
            data.read_wikitext2,
            dict(directory=Path(__file__).parent / "fixtures"),
            dict(directory=[Bad(None), Bad(3), Bad(tmp, names="directory", tag="no wiki.*.raw")]),
        ),
        Spec(
            "batches",
            _batches,
            dict(ids=np.arange(20), batch_size=2, block_size=4, rng=G(0)),
            dict(
                ids=bad_ids(10**9)[:-2] + [Bad(np.arange(3))],
                batch_size=bad_count(huge=True),
                block_size=bad_count(),
                rng=bad_rng(),
                num_batches=[Bad(-1), Bad(1.5), Bad("2")],
            ),
        ),
        Spec(
            "entropy",
            synthetic.entropy,
            dict(p=p3),
            dict(
                p=[Bad(b.value, ok=True, tag="rows of weights") if b.tag == "ndim+1" else b for b in bad_array((3,))]
                + [Bad(np.array([-0.5, 1.5]))],
                axis=[Bad(5), Bad(1.5), Bad("0")],
            ),
        ),
        Spec(
            "IIDSource", synthetic.IIDSource, dict(probs=p3), dict(probs=bad_array((3,)) + [Bad(np.array([0.5, 0.6]))])
        ),
        Spec(
            "IIDSource.sample",
            lambda length, rng: synthetic.IIDSource(p3).sample(length, rng),
            dict(length=3, rng=G(0)),
            dict(length=bad_count(0) + [Bad(10**12, tag="huge")], rng=bad_rng()),
        ),
        Spec(
            "MarkovSource",
            synthetic.MarkovSource,
            dict(transition=T2),
            dict(transition=bad_array((2, 2)) + [Bad(np.ones((2, 3)) / 3)], description=[Bad(3)]),
        ),
        Spec(
            "MarkovSource.sample",
            lambda length, rng: synthetic.MarkovSource(T2).sample(length, rng),
            dict(length=3, rng=G(0)),
            dict(length=bad_count(0) + [Bad(10**12, tag="huge")], rng=bad_rng()),
        ),
        Spec(
            "markov_source",
            synthetic.markov_source,
            dict(num_symbols=3, order=1, rng=G(0)),
            dict(
                num_symbols=bad_count(huge=True),
                order=bad_count(0, huge=True),
                rng=bad_rng(),
                concentration=bad_real(0.0),
            ),
        ),
        Spec(
            "sticky_markov_chain",
            synthetic.sticky_markov_chain,
            dict(num_states=4, stay_prob=0.3),
            dict(
                num_states=bad_count(2, huge=True),
                stay_prob=bad_real(0.0, inclusive=True, hi=1.0),
                rule=bad_str() + [Bad("sticky")],
            ),
        ),
        # ---- evaluation
        *[
            Spec(
                f.__name__,
                f,
                dict(log_probs=np.log([0.5, 0.25])),
                dict(log_probs=bad_array((2,))[:-1] + [Bad(np.array([0.5]))]),
            )
            for f in (metrics.cross_entropy, metrics.bits_per_token, metrics.perplexity)
        ],
        Spec(
            "energy_distance",
            metrics.energy_distance,
            dict(x=samp, y=samp + 1),
            dict(x=bad_array((6,)), y=bad_array((6,)) + [Bad(np.ones((6, 2)), tag="other d")]),
        ),
        Spec(
            "mmd_squared",
            metrics.mmd_squared,
            dict(x=samp, y=samp + 1, bandwidth=1.0),
            dict(x=bad_array((6,)), y=bad_array((6,)), bandwidth=bad_real(0.0)),
        ),
        Spec(
            "median_heuristic_bandwidth",
            metrics.median_heuristic_bandwidth,
            dict(x=samp, y=samp + 1),
            dict(x=bad_array((6,)), y=bad_array((6,))),
        ),
        Spec(
            "crps_sample",
            metrics.crps_sample,
            dict(samples=samp, observation=1.0),
            dict(samples=bad_array((6,)), observation=bad_real()[:5]),
        ),
        Spec(
            "crps_gaussian",
            metrics.crps_gaussian,
            dict(mu=0.0, sigma=1.0, observation=0.5),
            dict(
                mu=bad_real()[:5],
                sigma=bad_real(0.0)[:5] + [Bad(0.0), Bad(-1.0)],
                observation=bad_real()[:5]
                + [Bad(np.ones(3), ok=True, tag="broadcasts"), Bad(np.ones((2, 2)), ok=True, tag="broadcasts")],
            ),
        ),
        Spec(
            "precision_recall_f1",
            metrics.precision_recall_f1,
            dict(retrieved=[1, 2], relevant=[2, 3]),
            dict(
                retrieved=[Bad(None), Bad(3)],
                relevant=[Bad(None), Bad(3)],
                zero_division=bad_real(0.0, inclusive=True, hi=1.0),
            ),
        ),
        *[
            Spec(
                f.__name__,
                f,
                dict(confidences=np.array([0.2, 0.9]), correct=np.array([0, 1])),
                dict(
                    confidences=bad_array((2,)) + [Bad(np.array([0.2, 1.5]))],
                    correct=[Bad(np.array([0, 2])), Bad(np.array([0.5, 1.0])), Bad(None), Bad(np.ones(3))],
                    n_bins=bad_count(huge=True),
                ),
            )
            for f in (metrics.calibration_bins, metrics.expected_calibration_error)
        ],
        Spec(
            "spearman",
            metrics.spearman,
            dict(x=samp, y=samp**2),
            dict(x=bad_array((6,)), y=bad_array((6,)) + [Bad(np.ones(6))]),
        ),
        # ---- attention, norms, filters, tokenizer (fixed by the edge-case work; in the sweep and the fuzz too)
        Spec("softmax", attention.softmax, dict(x=x34), dict(x=bad_values((3, 4)))),
        Spec(
            "scaled_dot_product_attention",
            attention.scaled_dot_product_attention,
            dict(q=x34, k=x34, v=x34),
            dict(
                q=bad_values((3, 4)),
                k=bad_values((3, 4)),
                v=bad_values((3, 4)),
                mask=[Bad(np.ones((2, 2), dtype=bool), tag="wrong shape")],
                scale=[b for b in bad_real() if b.value is not None],  # None: the documented 1/sqrt(d)
            ),
        ),
        Spec(
            "MultiHeadAttention",
            attention.MultiHeadAttention,
            dict(d_model=4, num_heads=2, rng=G(0)),
            dict(d_model=bad_count(), num_heads=bad_count() + [Bad(3, tag="not a divisor")]),
        ),
        Spec(
            "layer_norm", layers.layer_norm, dict(x=x34), dict(x=bad_values((3, 4)), eps=bad_real(0.0, inclusive=True))
        ),
        Spec(
            "rms_norm",
            layers.rms_norm,
            dict(x=x34),
            dict(x=bad_values((3, 4)), eps=[b for b in bad_real(0.0, inclusive=True) if b.value is not None]),
        ),  # eps=None is torch.nn.RMSNorm's default, documented
        Spec(
            "filter_logits",
            filters.filter_logits,
            dict(logits=p3),
            dict(
                logits=bad_values((3,)),
                temperature=bad_real(0.0),
                top_k=optional(bad_count()),
                top_p=[b for b in bad_real(0.0) if b.value is not None],  # None: no top-p filter
            ),
        ),
        Spec(
            "BPETokenizer.train",
            BPETokenizer.train,
            dict(text="abab abab", vocab_size=258),
            dict(text=[Bad(None), Bad(3)], vocab_size=bad_count(256), special_tokens=[Bad("<s>", tag="a string")]),
        ),
        Spec(
            "permutation_test",
            two_sample.permutation_test,
            dict(x=samp, y=samp + 1, statistic=metrics.energy_distance, rng=G(0), exact=False, n_permutations=20),
            dict(
                x=bad_array((6,)),
                y=bad_array((6,)),
                statistic=[Bad(None), Bad(lambda a, b: np.nan)],
                n_permutations=bad_count(huge=True),
                rng=bad_rng(),
            ),
        ),
    ]


def _bpe() -> BPETokenizer:
    return BPETokenizer([(97, 98, 256)])


def _bpe_file(tmp: Path) -> Path:
    p = tmp / "bpe.json"
    _bpe().save(p)
    return p


def _block() -> layers.TransformerBlock:
    return layers.TransformerBlock(4, 2, 8, rng=np.random.default_rng(0))


def _mha() -> attention.MultiHeadAttention:
    return attention.MultiHeadAttention(4, 2, rng=np.random.default_rng(0))


def _mha_state() -> dict[str, np.ndarray]:
    m = _mha()
    return {"in_proj_weight": m.W_qkv.T, "out_proj.weight": m.W_o.T}


def specs_second(tmp: Path) -> list[Spec]:
    """The classes of issue #33 (None/int/str where a sequence, path or cache is expected; floats
    and bools used as ints; width 0; overflow) on the tokenizers, attention, norms, activations,
    metrics and data paths."""
    G = np.random.default_rng
    x34 = np.ones((3, 4))
    big = np.array([1e308, -1e308, 5e307, 0.0])
    w0 = np.ones((3, 0))
    not_a_seq = [Bad(None), Bad(5), Bad(2.5)]
    return [
        # ---- tokenizers
        Spec(
            "BPETokenizer",
            BPETokenizer,
            dict(merges=[(97, 98, 256)]),
            dict(
                merges=not_a_seq
                + [
                    Bad([(97.5, 98, 256)], tag="float id"),
                    Bad([(True, 98, 256)], tag="bool id"),
                    Bad([(97, 98)], tag="pair"),
                    Bad(["ab"], tag="str merge"),
                    Bad([(97, 98, -1)], tag="negative new id"),
                ],
                special_tokens=[Bad(["<s>"]), Bad({"<s>": 2.5}), Bad({"<s>": None}), Bad(5)],
            ),
        ),
        Spec(
            "BPETokenizer.decode",
            lambda ids: _bpe().decode(ids),
            dict(ids=[97, 256]),
            dict(
                ids=not_a_seq
                + [
                    Bad("ab"),
                    Bad([True, False], tag="bools"),
                    Bad(np.array([True, False]), tag="bool array"),
                    Bad([0.5]),
                    Bad([-1]),
                    Bad([10**6]),
                    Bad(np.ones((2, 2), int), tag="2-D"),
                ]
            ),
        ),
        Spec(
            "BPETokenizer.load",
            BPETokenizer.load,
            dict(path=_bpe_file(tmp)),
            dict(path=[Bad(None), Bad(5), Bad(["a"]), Bad(_good_text(tmp), names="good.txt", tag="not JSON")]),
        ),
        Spec(
            "BPETokenizer.save",
            lambda path: _bpe().save(path),
            dict(path=tmp / "saved.json"),
            dict(path=[Bad(None), Bad(5)]),
        ),
        Spec(
            "learn_bpe",
            bpe_trainer.learn_bpe,
            dict(symbols="abcababc"),
            dict(symbols=[Bad(None), Bad(5)], num_merges=[Bad(-1), Bad(1.5), Bad("2"), Bad(True)]),
        ),
        Spec(
            "train_merges",
            bpe_trainer.train_merges,
            dict(chunks=[b"abab", b"ab"], num_merges=2, weights=[2, 1]),
            dict(
                chunks=not_a_seq
                + [
                    Bad([[97.5, 98]], tag="float ids"),
                    Bad([np.array([97.0, 98.0])], tag="float array"),
                    Bad([[True, False]], tag="bools"),
                    Bad(["ab"], tag="str chunk"),
                    Bad([[-1, 3], [1]], names="chunk ids"),
                ],
                num_merges=bad_count(0),
                weights=[Bad([-1, 1], tag="negative"), Bad([1.5, 1], tag="float"), Bad("ab"), Bad([1, 2, 3])],
                first_id=[Bad(1.5), Bad(None), Bad(0)],
            ),
        ),
        Spec(
            "CharTokenizer",
            CharTokenizer,
            dict(chars="abc"),
            dict(chars=[Bad(None), Bad(5), Bad(["ab"]), Bad("aa")]),
        ),
        Spec(
            "CharTokenizer.decode",
            lambda ids: CharTokenizer("abc").decode(ids),
            dict(ids=[0, 1]),
            dict(ids=not_a_seq + [Bad("ab"), Bad([0.5]), Bad([9]), Bad(np.array([True]), tag="bool array")]),
        ),
        # ---- attention and blocks
        Spec(
            "MultiHeadAttention(dtype)",
            attention.MultiHeadAttention,
            dict(d_model=4, num_heads=2, rng=G(0)),
            dict(
                dtype=[Bad("banana"), Bad(np.int64), Bad(complex), Bad(None, ok=True, tag="np.dtype(None) = float64")],
                rng=bad_rng(False),
            ),
        ),
        Spec(
            "MultiHeadAttention.__call__",
            lambda X, cache=None, mask=None: _mha()(X, cache=cache, mask=mask),
            dict(X=x34),
            dict(
                X=bad_array((3, 4))[:3] + [Bad(np.ones((3, 5)), tag="width 5"), Bad(None), Bad("abc")],
                cache=[Bad("x"), Bad(5), Bad(KVCache(1), tag="a KVCache, not a layer cache")],
                mask=[Bad(np.ones((2, 2), bool), tag="wrong shape"), Bad("x")],
            ),
        ),
        Spec(
            "MultiHeadAttention.from_torch_state_dict",
            attention.MultiHeadAttention.from_torch_state_dict,
            dict(state_dict=_mha_state(), num_heads=2),
            dict(
                state_dict=[Bad(None), Bad(5), Bad("x"), Bad({})],
                num_heads=bad_count() + [Bad(3, tag="not a divisor")],
            ),
        ),
        Spec(
            "TransformerBlock.__call__",
            lambda X, cache=None: _block()(X, cache=cache),
            dict(X=x34),
            dict(
                X=bad_array((3, 4))[:3] + [Bad(np.ones((3, 5)), tag="width 5"), Bad(None)],
                cache=[Bad("x"), Bad(5)],
            ),
        ),
        Spec(
            "scaled_dot_product_attention(d=0)",
            attention.scaled_dot_product_attention,
            dict(q=w0, k=w0, v=x34, scale=1.0),  # an explicit scale: the empty dot products are 0
            dict(scale=[Bad(None, tag="default 1/sqrt(0)")]),
        ),
        *[
            Spec(
                f"{f.__name__}(axis)",
                f,
                dict(x=x34),
                dict(
                    x=[Bad(np.float64(1.0), tag="0-d")],
                    axis=[Bad(1.5), Bad("0"), Bad(True), Bad(5), Bad(-3), Bad(None)],
                ),
            )
            for f in (attention.softmax, attention.log_softmax)
        ],
        *[
            Spec(
                f"{f.__name__}(width 0)", f, dict(x=x34), dict(x=[Bad(w0, tag="width 0"), Bad(np.ones(0), tag="(0,)")])
            )
            for f in (layers.layer_norm, layers.rms_norm)
        ],
        *[
            Spec(
                f.__name__,
                f,
                dict(x=x34),
                dict(
                    x=bad_values((3, 4))
                    + [Bad([1.0, -2.0], ok=True, tag="list"), Bad(["a", "b"]), Bad(True, ok=True, tag="0-d bool")]
                ),
            )
            for f in (layers.gelu, layers.relu)
        ],
        # ---- metrics and data
        Spec(
            "token_log_probs",
            metrics.token_log_probs,
            dict(logits=np.zeros((2, 3)), targets=np.array([0, 2])),
            dict(
                logits=[
                    Bad("abc"),
                    Bad(None),
                    Bad(np.full((2, 3), "a"), tag="str array"),
                    Bad(_nan((2, 3)), tag="nan"),
                ],
                targets=[Bad("ab"), Bad(None), Bad(np.array([0.5, 1.0])), Bad(np.array([True, False])), Bad([0, 3])],
            ),
        ),
        Spec(
            "energy_distance(overflow)",
            metrics.energy_distance,
            dict(x=np.arange(4.0), y=np.arange(4.0) + 1),
            dict(
                x=[
                    Bad(big, ok=True, tag="near 1e308"),
                    Bad(big[:, None] * np.ones((1, 2)), names="x", tag="(n, 2) near 1e308"),
                ],
                y=[Bad(big * 1e-108, ok=True, tag="near 1e200"), Bad(big[:, None] * np.ones((1, 2)), names="x")],
            ),
        ),
        Spec(
            "crps_sample(overflow)",
            metrics.crps_sample,
            dict(samples=np.arange(4.0), observation=1.0),
            dict(
                samples=[Bad(big, ok=True, tag="near 1e308"), Bad(big * 1e-108, ok=True, tag="near 1e200")],
                observation=[Bad(-1e308, ok=True, tag="-1e308")],
            ),
        ),
        Spec(
            "entropy(distribution)",
            synthetic.entropy,
            dict(p=np.array([0.5, 0.5])),
            dict(p=[Bad(np.array([0.5, 0.6])), Bad(np.ones((2, 2)), tag="rows of ones"), Bad(None), Bad("ab")]),
        ),
        Spec(
            "data_dir",
            data.data_dir,
            dict(required="tinyshakespeare/input.txt"),
            dict(required=[Bad(5), Bad(["a"]), Bad(Path("x"), tag="a Path")]),
        ),
    ]


def all_specs(tmp: Path) -> list[Spec]:
    """The first sweep (issue #22) and the second (issue #33)."""
    return specs(tmp) + specs_second(tmp)


def positions_table() -> positions.LearnedPositionalEmbedding:
    return positions.LearnedPositionalEmbedding(8, 4, rng=np.random.default_rng(0))


def _lm_big() -> DecoderLM:
    cfg = DecoderConfig(vocab_size=5, d_model=4, num_heads=2, num_layers=1, max_len=10**8)
    return DecoderLM(cfg, rng=np.random.default_rng(0))


def _cache3() -> LayerKVCache:
    c = LayerKVCache(4)
    c.append(np.ones((1, 3, 2)), np.ones((1, 3, 2)))
    return c


# --------------------------------------------------------------------------------- the sweep
@dataclass(frozen=True)
class Outcome:
    spec: str
    arg: str
    value: str
    kind: str  # named / raw / silent / documented / hang
    detail: str


class _Cut(Exception):
    pass


def _alarm(signum: int, frame: object) -> None:
    raise _Cut()


def _has_nan(value: object, depth: int = 0) -> bool:
    if depth > 3:
        return False
    if isinstance(value, float):
        return value != value
    if isinstance(value, np.ndarray) and np.issubdtype(value.dtype, np.inexact):
        return bool(np.isnan(value).any())
    if isinstance(value, (tuple, list)):
        return any(_has_nan(v, depth + 1) for v in value[:50])
    return False


def names_one_of(message: str, names: tuple[str, ...]) -> bool:
    """An error message is ``named`` when it names one of ``names`` and speaks no numpy internals."""
    return any(n in message for n in names) and not any(s in message for s in INTERNALS)


def classify(fn: Callable[[], Any], arg: str, ok: bool, names: str = "") -> tuple[str, str]:
    """Run ``fn`` once and classify it (see the module docstring)."""
    old = signal.signal(signal.SIGALRM, _alarm)
    signal.setitimer(signal.ITIMER_REAL, CUT_S)
    t0 = time.perf_counter()
    try:
        result = fn()
    except _Cut:
        return "hang", f"> {CUT_S:.0f} s"
    except (ValueError, TypeError, FileNotFoundError) as exc:  # FileNotFoundError: DataNotFoundError
        msg = str(exc)
        if time.perf_counter() - t0 > LIMIT_S:
            return "hang", f"{time.perf_counter() - t0:.1f} s then {type(exc).__name__}: {msg[:80]}"
        named = names_one_of(msg, (names or arg,))
        return ("named" if named else "raw"), f"{type(exc).__name__}: {msg[:160]}"
    except Exception as exc:  # noqa: BLE001 -- the point is to see every kind
        return "raw", f"{type(exc).__name__}: {str(exc)[:160]}"
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, old)
    dt = time.perf_counter() - t0
    if dt > LIMIT_S:
        return "hang", f"{dt:.1f} s"
    if _has_nan(result):
        return "silent", "NaN in the result"
    return ("documented", "finite result") if ok else ("silent", f"returned {type(result).__name__}")


def cases(tmp: Path) -> list[tuple[Spec, str, Bad]]:
    """Every (spec, argument, bad value) triple, the baseline calls first (argument ``""``)."""
    out: list[tuple[Spec, str, Bad]] = []
    for s in all_specs(tmp):
        for arg, bads in s.bad.items():
            for b in bads:
                out.append((s, arg, b))
    return out


def run_case(s: Spec, arg: str, b: Bad) -> Outcome:
    kw = dict(s.base)
    kw[arg] = b.value
    kind, detail = classify(lambda: s.fn(**kw), arg, b.ok, b.names)
    shown = b.tag or repr(b.value)[:40]
    return Outcome(s.name, arg, shown, kind, detail)


def sweep(tmp: Path) -> list[Outcome]:
    for s in all_specs(tmp):  # the baselines must run cleanly, else the sweep is wrong
        kind, detail = classify(lambda: s.fn(**s.base), "", True)
        if kind != "documented":
            print(f"WARNING: the valid baseline call of {s.name} failed: {kind} {detail}")
    return [run_case(s, a, b) for s, a, b in cases(tmp)]


def report(outs: list[Outcome], header: str, list_all: bool) -> None:
    """Print a sweep's counts per kind under ``header`` (``list_all``: every case that is not named, first)."""
    if list_all:
        for o in outs:
            if o.kind != "named":
                print(f"{o.kind:10s} {o.spec}({o.arg}={o.value}): {o.detail}")
    counts = Counter(o.kind for o in outs)
    print(header)
    for k in ("named", "raw", "silent", "documented", "hang"):
        print(f"  {k:10s} {counts.get(k, 0)}")


def command_line(argv: list[str] | None, description: str) -> bool:
    """The sweeps' shared command line: parse ``--list`` (returned) and cap the address space at 4 GiB,
    so that a runaway allocation fails instead of swapping."""
    import argparse
    import resource

    ap = argparse.ArgumentParser(description=description)
    ap.add_argument("--list", action="store_true", help="print every case that is not a named error")
    args = ap.parse_args(argv)
    soft, hard = resource.getrlimit(resource.RLIMIT_AS)
    resource.setrlimit(resource.RLIMIT_AS, (4 * 2**30, hard))
    return args.list


def main(argv: list[str] | None = None) -> int:
    import tempfile

    list_all = command_line(argv, __doc__.splitlines()[0])
    with tempfile.TemporaryDirectory() as d:
        outs = sweep(Path(d))
    report(outs, f"{len(outs)} bad inputs against {len({o.spec for o in outs})} public callables:", list_all)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
