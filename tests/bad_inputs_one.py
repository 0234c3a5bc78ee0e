"""One bad argument among valid ones, for every public callable of the numpy library (issue 48).

The coarse sweep (:mod:`tests.bad_inputs_theory`) puts the same bad value in *every* required
argument at once, so the first argument a callable checks is the only one tried. Here each of the
public callables (the same list, from the packages' ``__all__``) gets a valid baseline call
(:data:`BASELINES`, written in a small language of named fixtures, :data:`FIXTURES`), and then
*one* argument at a time is replaced by a value of each bad class of :data:`CLASSES` while the
others stay valid. The outcome is classified as in :mod:`tests.bad_inputs`; a ``ValueError``/``TypeError``
counts as ``named`` only when it names *that* argument.

A baseline is ``"name=fixture name=fixture ..."`` (positional or keyword by the parameter's kind);
a fixture is a key of :data:`FIXTURES`, or a Python literal (``3``, ``0.5``, ``'strict'``). Callables whose
baseline needs objects built for them (a model, a task, a callable of the right shape) have a
builder in :func:`custom_baselines` instead. ``python -m tests.bad_inputs_one --search`` proposes a
baseline for every callable without one (an error-guided search over the fixtures: each failed try
moves the argument its error names to its next candidate); ``--list`` prints every case that is not
a named error.
"""

from __future__ import annotations

import ast
import inspect
import itertools
import os
import re
from pathlib import Path
from typing import Any, Callable

import numpy as np

from tests.bad_inputs import Outcome, classify, command_line, names_one_of, report
from tests.bad_inputs_theory import public_callables


def _rng(seed: int) -> np.random.Generator:
    return np.random.default_rng(seed)


def _stochastic(shape: tuple[int, ...], seed: int) -> np.ndarray:
    a = _rng(seed).uniform(0.5, 1.5, size=shape)
    return a / a.sum(axis=-1, keepdims=True)


def _unit(shape: tuple[int, ...], seed: int) -> np.ndarray:
    a = _rng(seed).normal(size=shape)
    return a / np.linalg.norm(a, axis=-1, keepdims=True)


def _generator4() -> np.ndarray:
    Q = np.full((4, 4), 1.0 / 3.0)
    np.fill_diagonal(Q, -1.0)
    return Q


#: the named fixtures a baseline is written in (built afresh for every call: nothing is shared)
FIXTURES: dict[str, Callable[[], Any]] = {
    "M": lambda: _rng(1).normal(size=(4, 4)) * 0.5,  # a (4, 4) matrix
    "M34": lambda: _rng(2).normal(size=(3, 4)) * 0.5,
    "M43": lambda: _rng(3).normal(size=(4, 3)) * 0.5,
    "v": lambda: _rng(4).normal(size=4) * 0.5,  # a (4,) vector
    "B": lambda: _rng(5).normal(size=(2, 4, 4)) * 0.5,  # a batch of (4, 4) matrices
    "P": lambda: _stochastic((4, 4), 6),  # rows are distributions
    "p": lambda: _stochastic((4,), 7),  # a distribution
    "logP": lambda: np.log(_stochastic((4, 4), 6)),
    "logp": lambda: np.log(_stochastic((4,), 7)),
    "BP": lambda: _stochastic((2, 4, 4), 8),
    "U": lambda: _unit((4, 4), 9),  # rows on the unit sphere
    "u": lambda: _unit((4,), 10),
    "pos": lambda: np.array([0.5, 1.0, 1.5, 2.0]),  # positive entries
    "ids": lambda: np.array([0, 1, 2, 3]),
    "ids2": lambda: np.array([[0, 1, 2, 3], [3, 2, 1, 0]]),
    "Q": _generator4,  # a rate matrix (rows sum to 0)
    "rng": lambda: _rng(0),
    "ident": lambda: lambda x: np.asarray(x, dtype=float),
    "zeros_fn": lambda: lambda x: np.zeros_like(np.asarray(x, dtype=float)),
}

#: the candidates the search tries for a parameter, by its annotation
_CANDIDATES = {
    "int": ["3", "2", "4", "1", "0"],
    "float": ["0.5", "1.0", "0.1", "2.0"],
    "bool": ["False", "True"],
    "rng": ["rng"],
    "call": ["ident", "zeros_fn"],
    "array": ["M", "v", "P", "p", "logP", "logp", "U", "u", "pos", "ids", "B", "BP", "Q", "M34", "M43", "ids2", "3"],
}


def _kind(p: inspect.Parameter) -> str:
    ann = str(p.annotation)
    name = p.name.lower()
    if "Generator" in ann or name == "rng":
        return "rng"
    if "Callable" in ann or name in ("fn", "f", "field", "divergence", "statistic", "next_logits", "logits_fn"):
        return "call"
    if ann.startswith("bool"):
        return "bool"
    if ann.startswith("int"):
        return "int"
    if ann.startswith("float"):
        return "float"
    return "array"


def build(value: str) -> Any:
    """One fixture by name, or a Python literal."""
    if value in FIXTURES:
        return FIXTURES[value]()
    return ast.literal_eval(value)


def parse(baseline: str) -> dict[str, str]:
    return dict(item.split("=", 1) for item in baseline.split())


def call_with(fn: Callable[..., Any], kw: dict[str, Any]) -> Any:
    """Call ``fn`` with ``kw``, passing positional-only parameters by position."""
    sig = inspect.signature(fn)
    args = [kw.pop(p.name) for p in sig.parameters.values() if p.kind == p.POSITIONAL_ONLY and p.name in kw]
    return fn(*args, **kw)


# --------------------------------------------------------------------------------- baselines
#: valid baseline calls in the fixture language (found by ``--search``, then checked by hand)
BASELINES: dict[str, str] = {
    "attention.softmax": "x=M",
    "attention.log_softmax": "x=M",
    "attention.causal_mask": "T=3",
    "attention.band_mask": "T=3 radius=3",
    "attention.scaled_dot_product_attention": "q=M k=M v=M",
    "attention.MultiHeadAttention": "d_model=4 num_heads=2",
    "attention.mask_from_torch": "attn_mask=M",
    "attention.key_mask_from_torch": "key_padding_mask=M",
    "attention.attention_backward": "X=M W_Q=M W_K=M W_V=M upstream=M",
    "attention.cross_entropy_upstream": "G=logP W_O=M b_O=logp targets=ids",
    "attention.LayerKVCache": "",
    "attention.KVCache": "num_layers=3",
    "decoder.layer_norm": "x=M",
    "decoder.rms_norm": "x=M",
    "decoder.gelu": "x=M",
    "decoder.relu": "x=M",
    "decoder.feed_forward": "x=M W1=M b1=v W2=M b2=v",
    "decoder.TransformerBlock": "d_model=4 num_heads=2 d_ff=8",
    "decoder.DecoderConfig": "vocab_size=5 d_model=4 num_heads=2 num_layers=1 max_len=8",
    "decoding.log_softmax": "logits=M",
    "decoding.apply_temperature": "logits=M t=0.5",
    "decoding.top_k_filter": "logits=M k=3",
    "decoding.top_p_filter": "logits=M p=0.5",
    "decoding.filter_logits": "logits=M",
    "decoding.pad_to_length": "tokens=ids length=4 pad_id=2",
    "decoding.NGramLM": "vocab_size=3 order=2",
    "decoding.random_table_model": "vocab_size=3 order=2 rng=rng",
    "data.data_dir": "",
    "data.candidate_data_dirs": "",
    "data.batches": "ids=ids batch_size=2 block_size=2 rng=rng",
    "data.IIDSource": "probs=p",
    "data.MarkovSource": "transition=P",
    "data.markov_source": "num_symbols=3 order=2 rng=rng",
    "data.sticky_markov_chain": "num_states=3 stay_prob=0.5",
    "data.synthetic.entropy": "p=P",
    "embedding.embed": "table=M ids=ids",
    "embedding.one_hot": "ids=ids vocab_size=4",
    "embedding.embedding_grad": "ids=ids grad_output=P vocab_size=4",
    "embedding.TokenEmbedding": "vocab_size=3 d_model=3",
    "positions.sinusoidal_encoding": "num_positions=3 d_model=3",
    "positions.sinusoidal_shift_matrix": "k=0.5 d_model=2",
    "positions.LearnedPositionalEmbedding": "max_len=3 d_model=3",
    "positions.rope_frequencies": "d=3",
    "positions.apply_rope": "x=M",
    "positions.rope_rotation_matrix": "position=0.5 d=2",
    "tokenizers.learn_bpe": "symbols=v",
    "tokenizers.train_merges": "chunks=ids2 num_merges=1",
    "tokenizers.hf_byte_rank": "",
    "tokenizers.bytes_to_unicode": "",
    "tokenizers.BPETokenizer": "",
    "evaluation.token_log_probs": "logits=M targets=ids",
    "evaluation.cross_entropy": "log_probs=logP",
    "evaluation.bits_per_token": "log_probs=logP",
    "evaluation.perplexity": "log_probs=logP",
    "evaluation.energy_distance": "x=M y=M",
    "evaluation.mmd_squared": "x=M y=M bandwidth=0.5",
    "evaluation.median_heuristic_bandwidth": "x=M y=M",
    "evaluation.crps_sample": "samples=v observation=0.5",
    "evaluation.crps_gaussian": "mu=M sigma=P observation=M",
    "evaluation.precision_recall_f1": "retrieved=logp relevant=v",
    "evaluation.spearman": "x=ids y=p",
    "numerics.central_difference": "fn=ident x=M",
    "chapter6.RunningExampleSource": "",
    "chapter6.attention_to_offset": "weights=P offset=1",
    "chapter6.normalized_entropy": "weights=P",
    "chapter6.permutation_sensitivity": "logits_fn=zeros_fn ids=ids2 position=3 rng=rng",
    "chapter6.rnn_states": "X=M W_x=M W_h=M",
    "chapter6.rnn_state_jacobian": "X=M W_x=M W_h=M s=1 t=3",
    "chapter6.rnn_graph": "T=3",
    "chapter6.attention_graph": "T=3",
    "chapter6.path_lengths": "adjacency=M source=0",
    "chapter6.copy_task": "num_seqs=3 length=3 vocab=3 rng=rng",
    "chapter6.linear_state_recall": "length=3 state_dim=3 vocab=3 rng=rng",
    "chapter6.attention_recall": "length=3 vocab=3 rng=rng",
    "theory.barrier.context_mask": "L=3",
    "theory.barrier.attention_stats": "X=M W_Q=M W_K=M",
    "theory.barrier.attention_residual": "X=M W_Q=M W_K=M",
    "theory.barrier.causal_residual": "X=M W_Q=M W_K=M",
    "theory.barrier.residual_jacobian": "X=M W_Q=M W_K=M",
    "theory.barrier.diagonal_blocks": "X=M W_Q=M W_K=M",
    "theory.barrier.jacobian_diagonal_block": "X=M t=2 W_Q=M W_K=M",
    "theory.barrier.paper_diagonal_block": "X=M W_Q=M W_K=M",
    "theory.barrier.scalar_margin": "x=M a=0.5",
    "theory.barrier.scalar_attention_variance": "x=M a=0.5",
    "theory.barrier.matrix_margins": "X=M W_Q=M W_K=M",
    "theory.barrier.sequence_margin": "margins=M",
    "theory.barrier.support_tokens": "margins=v",
    "theory.barrier.noise_log_density": "X=M W_Q=M W_K=M sigma=0.5",
    "theory.barrier.log_barrier": "X=M W_Q=M W_K=M",
    "theory.barrier.embedding_log_density": "X=M W_Q=M W_K=M sigma=0.5",
    "theory.barrier.DepthLayer": "W_Q=M W_K=M W_V=M",
    "theory.barrier.emission_probs": "x=M W_out=v b_out=v",
    "theory.barrier.token_law_quadrature": "n=2 a=0.5 w_v=0.5 sigma=0.5 W_out=p b_out=v grid=pos",
    "theory.barrier.token_law_monte_carlo": "x=M W_out=v b_out=v",
    "theory.dynamics.HeadParams": "W_Q=M W_K=M W_V=M W_O=M b=v",
    "theory.dynamics.cross_entropy": "log_probs=M y=ids",
    "theory.dynamics.per_position_loss": "log_probs=M y=ids",
    "theory.dynamics.upstream_gradient": "probs=P y=ids W_O=P",
    "theory.dynamics.compatibility_matrix": "U=M V=M",
    "theory.dynamics.expected_compatibility": "alpha=P B=M",
    "theory.dynamics.advantage_matrix": "alpha=P B=M",
    "theory.dynamics.score_gradient": "alpha=P B=M",
    "theory.dynamics.responsibility_signal": "alpha=P U=M",
    "theory.dynamics.value_update": "alpha=P U=M lr=0.5",
    "theory.dynamics.first_order_loss_change": "alpha=P U=M j=1 lr=0.5",
    "theory.dynamics.dominant_query_loss_change": "alpha=P U=M j=1 lr=0.5",
    "theory.dynamics.column_usage": "alpha=P",
    "theory.dynamics.value_norms": "V=M",
    "theory.dynamics.pca_fit": "points=M",
    "theory.dynamics.ToyConfig": "",
    "theory.dynamics.attention_entropy": "alpha=P",
    "theory.dynamics.sticky_means": "num_states=3 d_x=3 rng=rng",
    "theory.dynamics.make_sticky_task": "states=ids means=logP rng=rng",
    "theory.dynamics.markov_entropy_rate": "transition_matrix=P",
    "theory.dynamics.mean_cross_entropy": "log_probs=logP targets=ids",
    "theory.dynamics.accuracy": "log_probs=logP targets=ids",
    "theory.dynamics.predictive_entropy": "log_probs=logP",
    "theory.dynamics.mean_kl": "log_p=logP log_q=logP",
    "theory.dynamics.ProtocolConfig": "",
    "theory.formulation.kl_divergence": "p=pos q=p",
    "theory.formulation.enumerate_sequences": "V=3 L=3",
    "theory.formulation.rl_objective": "pi=p pi_ref=p reward=v beta=0.5",
    "theory.formulation.kl_regularised_optimum": "pi_ref=p reward=v beta=0.5",
    "theory.formulation.rl_empirical_objective": "log_pi=v log_pi_ref=v reward=v beta=0.5",
    "theory.formulation.bigram_counts": "seqs=ids2 V=4",
    "theory.formulation.table_loss_and_grad": "W=M counts=P",
    "theory.formulation.fit_table": "W0=M counts=P steps=20",
    "theory.formulation.fit_lora": "W0=M counts=P rank=3 rng=rng steps=20",
    "theory.formulation.table_kl": "P_true=P W=P weights=v",
    "theory.formulation.generator_violations": "Q=M",
    "theory.formulation.check_generator": "Q=Q",
    "theory.formulation.uniform_generator": "V=3",
    "theory.formulation.absorbing_generator": "V=3 mask=2",
    "theory.formulation.sequence_generator": "Q=Q L=2",
    "theory.formulation.transition_matrix": "Q=Q t=2.0",
    "theory.formulation.forward_marginal": "p0=BP Q=Q t=0.1",
    "theory.formulation.gillespie": "Q=Q x0=ids t_end=0.1 rng=rng",
    "theory.formulation.tau_leaping": "Q=Q x0=ids t_end=1.0 n_steps=2 rng=rng",
    "theory.formulation.euler_transition_matrix": "Q=Q tau=0.5",
    "theory.formulation.reverse_generator": "Q=Q p=p",
    "theory.formulation.sample_reverse": "p0=p Q=Q T=2.0 n_steps=4 n_samples=2 rng=rng",
    "theory.formulation.probability_ratios": "p=p",
    "theory.formulation.score_entropy_loss": "s=Q p=p",
    "theory.formulation.denoising_score_entropy_loss": "s=P p0=p P_t=P",
    "theory.formulation.discretize_zoh": "A=M B=M dt=0.5",
    "theory.formulation.discretize_euler": "A=M B=M dt=0.5",
    "theory.formulation.ssm_scan": "Abar=M Bbar=M C=M D=M h=M v0=v",
    "theory.formulation.ssm_kernel": "Abar=M Bbar=M C=M T=3",
    "theory.formulation.ssm_convolve": "Abar=M Bbar=M C=M D=M h=M v0=v",
    "theory.formulation.AttentionParams": "Q=M K=M V=M",
    "theory.formulation.mean_pool": "h=M",
    "theory.formulation.max_pool": "h=M",
    "theory.formulation.soft_max_pool": "h=M beta=0.5",
    "theory.formulation.empirical_measure": "h=M",
    "theory.svflow.categorical_kl": "log_q=logP log_p=logP",
    "theory.svflow.kl_to_uniform": "log_q=logP",
    "theory.svflow.entropy": "log_q=logP",
    "theory.svflow.log_posterior": "log_lik=M",
    "theory.svflow.log_marginal": "log_lik=M",
    "theory.svflow.elbo": "log_q=logP log_lik=M",
    "theory.svflow.svflow_field": "q=M scores=M",
    "theory.svflow.variational_error": "log_q=logP log_post=logP grad_log_q=M",
    "theory.svflow.softmax_grad_log": "q=M grad_logits=M",
    "theory.svflow.gaussian_log_density": "x=M means=M log_vars=M",
    "theory.svflow.gaussian_score": "x=M means=M log_vars=M",
    "theory.svflow.GaussianSVFlow": "q_means=M q_log_vars=M p_means=M p_log_vars=M",
    "theory.svflow.tangent_projection": "x=U v=v",
    "theory.svflow.retraction": "x=U v=v",
    "theory.svflow.log_bessel_iv": "nu=P x=P",
    "theory.svflow.log_bessel_iv_naive": "nu=pos x=p",
    "theory.svflow.sphere_log_area": "d=3",
    "theory.svflow.vmf_log_normalizer": "kappa=P d=3",
    "theory.svflow.vmf_log_normalizer_naive": "kappa=P d=3",
    "theory.svflow.vmf_log_density": "x=U mu=U kappa=ids",
    "theory.svflow.vmf_score": "mu=U kappa=P",
    "theory.svflow.vmf_mean_resultant_length": "kappa=P d=3",
    "theory.svflow.vmf_sample": "mu=u kappa=0.5 n=2 rng=rng",
    "theory.svflow.vmf_attention_params": "W_q=M W_k=M keys=M",
    "theory.svflow.vmf_attention_log_posterior": "x_q=M kappa=P mu=M",  # a concentration: kappa >= 0
    "theory.svflow.head_output": "x_q=M keys=M values=M W_q=M W_k=M W_v=M W_o=M",
    "theory.svflow.load_balancing_loss": "gates=P",
    "theory.svflow.prefix_shuffle": "tokens=ids p=0.5 rng=rng",
    "theory.svflow.prefix_shuffle_rates": "N=3 p=0.5",
    "theory.svflow.shuffle_rate_bins": "r=M",
    "theory.svflow.head_svflow_metrics": "x=U attn=P out_vectors=M",
    "theory.svflow.svflow_metrics_from_loglik": "log_lik=M attn=P d=3",
}


def custom_baselines(tmp: Path) -> dict[str, Callable[[], dict[str, Any]]]:
    """Baselines that need objects built for them (a config, a model, a task, a callable, a file
    under the scratch folder ``tmp``)."""
    from nextword import chapter6
    from nextword.data import synthetic
    from nextword.decoder import DecoderConfig
    from nextword.decoding import ngram
    from nextword.theory import barrier, dynamics, formulation
    from nextword.tokenizers import BPETokenizer, save_json, save_minbpe

    G = _rng
    M, M34, U, P = FIXTURES["M"], FIXTURES["M34"], FIXTURES["U"], FIXTURES["P"]
    table = ngram.random_table_model(4, 2, G(0))
    bpe = BPETokenizer([(97, 98, 256)])
    text = tmp / "text.txt"
    text.write_text("to be or not to be\n" * 10, encoding="utf-8")
    json_file, minbpe_file = tmp / "bpe.json", tmp / "bpe.model"
    save_json(bpe, json_file)
    save_minbpe(bpe, minbpe_file)
    wiki = tmp / "wikitext-2"
    wiki.mkdir(exist_ok=True)
    for split in ("train", "valid", "test"):
        (wiki / f"wiki.{split}.raw").write_text(" = A = \n the cat sat on the mat . \n" * 20, encoding="utf-8")
    corpus = tmp / "corpus.txt"
    corpus.write_text("the cat sat on the mat. " * 40, encoding="utf-8")

    def head() -> dynamics.HeadParams:
        return dynamics.HeadParams.init(4, 2, 2, 3, rng=G(0))

    def task() -> Any:
        return dynamics.make_sticky_task(np.array([0, 1, 2, 1, 0]), G(1).normal(size=(3, 4)), rng=G(2))

    def layer() -> barrier.DepthLayer:
        return barrier.DepthLayer(M(), M(), M())

    def att() -> formulation.AttentionParams:
        return formulation.AttentionParams(M(), M(), M())

    def block() -> formulation.BlockParams:
        return formulation.BlockParams(
            att(), G(3).normal(size=(6, 4)), np.zeros(6), G(4).normal(size=(4, 6)), np.zeros(4)
        )

    def next_probs(prefix: Any) -> np.ndarray:
        return np.full(3, 1.0 / 3.0)

    return {
        "attention.causal_alignment": lambda: dict(causal=True),
        "decoder.DecoderLM": lambda: dict(config=DecoderConfig(5, 4, 2, 1, 8), rng=G(0)),
        "decoding.greedy": lambda: dict(next_logits=table.next_logits, prompt=[0], max_new_tokens=3),
        "decoding.exhaustive_search": lambda: dict(next_logits=table.next_logits, prompt=[0], length=2),
        "decoding.beam_search": lambda: dict(next_logits=table.next_logits, prompt=[0], max_new_tokens=3, beam_width=2),
        "decoding.lookahead_search": lambda: dict(next_logits=table.next_logits, prompt=[0], max_new_tokens=3),
        "decoding.sequence_log_prob": lambda: dict(next_logits=table.next_logits, tokens=[0, 1, 2, 3], start=1),
        "decoding.sample": lambda: dict(next_logits=table.next_logits, prompt=[0], max_new_tokens=3, rng=G(0)),
        "decoding.mixed": lambda: dict(
            next_logits=table.next_logits, prompt=[0], num_sampled=1, max_new_tokens=3, rng=G(0)
        ),
        "decoding.table_model": lambda: dict(vocab_size=3, order=2, table={(): np.log([0.5, 0.4, 0.1])}),
        "data.find_data_file": lambda: dict(relative="tinyshakespeare/input.txt"),
        "data.read_data_text": lambda: dict(path=text),
        "data.load_corpus": lambda: dict(name=corpus),
        "data.read_wikitext2": lambda: dict(directory=wiki),
        "tokenizers.CharTokenizer": lambda: dict(chars="abc"),
        "tokenizers.save_json": lambda: dict(tok=BPETokenizer([(97, 98, 256)]), path=tmp / "saved.json"),
        "tokenizers.load_json": lambda: dict(path=json_file),
        "tokenizers.save_minbpe": lambda: dict(tok=BPETokenizer([(97, 98, 256)]), path=tmp / "saved.model"),
        "tokenizers.load_minbpe": lambda: dict(path=minbpe_file),
        "evaluation.calibration_bins": lambda: dict(
            confidences=np.array([0.2, 0.6, 0.9, 0.7]), correct=np.array([False, True, True, False])
        ),
        "evaluation.expected_calibration_error": lambda: dict(
            confidences=np.array([0.2, 0.6, 0.9, 0.7]), correct=np.array([False, True, True, False])
        ),
        "evaluation.permutation_test": lambda: dict(
            x=np.arange(4.0),
            y=np.arange(4.0) + 1,
            statistic=lambda a, b: float(np.mean(a) - np.mean(b)),
            rng=G(0),
            n_permutations=20,
            exact=False,
        ),
        "numerics.rk4": lambda: dict(f=lambda y, t: -y, y0=np.array([1.0, 2.0]), t_end=1.0, n=10),
        "chapter6.attention_to_keys": lambda: dict(weights=FIXTURES["BP"](), key_positions=np.array([0, 1])),
        "chapter6.head_profile": lambda: dict(weights=_stochastic((2, 3, 4, 4), 11)),
        "chapter6.head_ablation_effects": lambda: dict(
            nll_fn=lambda mask: np.ones((2, 4)) * (1.0 if mask is None else 1.0 + 0.1 * (1 - mask).sum()),
            num_layers=1,
            num_heads=2,
            groups={"all": np.ones((2, 4), dtype=bool)},
        ),
        "chapter6.AgreementTask": lambda: dict(filler=synthetic.markov_source(3, 2, G(0))),
        "chapter6.sequential_depth": lambda: dict(adjacency=chapter6.rnn_graph(4)),
        "theory.barrier.layer_residual": lambda: dict(X_cur=M(), X_prev=U(), layer=layer()),
        "theory.barrier.layer_diagonal_blocks": lambda: dict(X_cur=M(), X_prev=U(), layer=layer()),
        "theory.barrier.deep_residual": lambda: dict(xs=np.stack([M(), U()]), prior=(M(), M(), M()), layers=[layer()]),
        "theory.barrier.deep_log_barrier": lambda: dict(
            xs=np.stack([M(), U()]), prior=(M(), M(), M()), layers=[layer()]
        ),
        "theory.barrier.sample_scalar_process": lambda: dict(
            n_samples=2, L=3, a=0.5, w_v=-1.0, sigma=0.5, rng=G(0), iters=20
        ),
        "theory.dynamics.simulate_toy": lambda: dict(config=dynamics.ToyConfig(steps=3), rng=G(0)),
        "theory.dynamics.head_forward": lambda: dict(params=head(), X=M()),
        "theory.dynamics.head_gradients": lambda: dict(params=head(), X=M(), y=np.array([0, 1, 2, 1])),
        "theory.dynamics.attention_diagnostics": lambda: dict(params=head(), X=M(), y=np.array([0, 1, 2, 1])),
        "theory.dynamics.exact_value_update_loss_change": lambda: dict(
            alpha=P(), V=M(), W_O=G(5).normal(size=(4, 3)), b=np.zeros(3), y=np.array([0, 1, 2, 1]), j=1, lr=0.5
        ),
        "theory.dynamics.bayes_filter_log_probs": lambda: dict(task=task(), transition_matrix=_stochastic((3, 3), 12)),
        "theory.dynamics.train_protocol": lambda: dict(
            protocol="sgd",
            params=dynamics.HeadParams.init(4, 2, 2, 3, rng=G(0)),
            task=task(),
            config=dynamics.ProtocolConfig(steps=2),
        ),
        "theory.dynamics.run_sticky_experiment": lambda: dict(
            config=dynamics.StickyExperimentConfig(
                num_states=3, d_x=4, d_k=2, d_v=2, batch=2, T=6, eval_T=8, protocol=dynamics.ProtocolConfig(steps=2)
            ),
            rng=G(0),
        ),
        "theory.dynamics.same_symbol_attention": lambda: dict(alpha=np.tril(_stochastic((4, 4), 13)), task=task()),
        "theory.formulation.sequence_distribution": lambda: dict(next_probs=next_probs, V=3, L=2),
        "theory.formulation.markov_next_probs": lambda: dict(source=synthetic.markov_source(3, 1, G(0))),
        "theory.formulation.kl_decomposition": lambda: dict(p_next=next_probs, q_next=next_probs, V=3, L=2),
        "theory.formulation.position_losses": lambda: dict(seqs=np.array([[0, 1], [2, 2]]), q_next=next_probs, V=3),
        "theory.formulation.shared_prefix_estimate": lambda: dict(
            seqs=np.array([[0, 1], [2, 2]]), q_next=next_probs, V=3
        ),
        "theory.formulation.reverse_marginals": lambda: dict(
            p0=FIXTURES["p"](), Q=FIXTURES["Q"](), times=np.array([1.0, 0.5, 0.1])
        ),
        "theory.formulation.ssm_exact_state": lambda: dict(
            A=-np.eye(2), B=np.ones((2, 1)), v0=np.zeros(2), h=lambda t: np.array([1.0]), times=np.array([0.0, 0.5])
        ),
        "theory.formulation.BlockParams": lambda: dict(
            att=att(), W1=G(3).normal(size=(6, 4)), b1=np.zeros(6), W2=G(4).normal(size=(4, 6)), b2=np.zeros(4)
        ),
        "theory.formulation.att": lambda: dict(h=M(), params=att()),
        "theory.formulation.attention_block": lambda: dict(h=M(), params=block()),
        "theory.formulation.set_transformer": lambda: dict(h=M(), blocks=[block()]),
        "theory.formulation.next_token_distribution": lambda: dict(h=M(), blocks=[block()], B=M34()),
        "theory.svflow.euler_flow": lambda: dict(x0=M(), field=lambda x, t: -x, n_steps=2, dt=0.5),
        "theory.svflow.spherical_euler_flow": lambda: dict(
            x0=U(), field=lambda x, t: np.roll(x, 1, axis=-1), n_steps=2, dt=0.1
        ),
        "theory.svflow.rk4_flow_with_divergence": lambda: dict(  # v(x) = -x: div v = -d at every point
            x0=M(),
            field=lambda x: -x,
            divergence=lambda x: np.full(x.shape[:-1], -float(x.shape[-1])),
            t_end=0.5,
            n_steps=3,
        ),
        "theory.svflow.exp_map": lambda: dict(x=np.array([1.0, 0.0]), v=np.array([0.0, 0.5])),
        "theory.svflow.multihead_as_expectation": lambda: dict(
            x_q=M(), keys=M(), values=M(), heads=[(M(), M(), M(), M()), (U(), U(), U(), U())]
        ),
    }


# --------------------------------------------------------------------------------- the sweep
#: the bad classes: value, and whether a returned value is acceptable (then it must be finite)
CLASSES: tuple[str, ...] = ("None", "str", "bool", "float", "int", "width 0", "overflow", "nan")


#: the naive formulas the book shows failing: their docstrings say the result is inf or NaN where float64
#: overflows, so a NaN from an input near overflow is what they document, not a silent failure
NON_FINITE_DOCUMENTED = ("theory.svflow.log_bessel_iv_naive", "theory.svflow.vmf_log_normalizer_naive")

#: callables whose docstring reads ``causal=None`` as "no causal mask" (see ``causal_alignment``)
NONE_MEANS_NO_MASK = ("attention.scaled_dot_product_attention", "attention.causal_alignment")


def _free_text(p: inspect.Parameter) -> bool:
    """A string is a valid value: a required str (a text, a name, a path) or a free-text option."""
    ann = str(p.annotation)
    return ("str" in ann or "Iterable" in ann or "Path" in ann) and (
        p.default is p.empty or p.name in ("description", "unk_token", "pattern", "sha256", "required", "names")
    )


def bad_value(p: inspect.Parameter, cls: str, base_value: Any) -> tuple[Any, bool] | None:
    """The bad value of class ``cls`` for parameter ``p`` and whether a finite result is acceptable
    (``None``: the class does not apply to this parameter)."""
    ann = str(p.annotation)
    kind = _kind(p)
    int_only = kind == "int"
    if cls == "None":  # fine where it is the default, or where the annotation allows it (feed_forward's b1=None)
        return None, p.default is None or "None" in ann
    if cls == "str":
        return "abc", _free_text(p)
    if cls == "bool":
        return True, not int_only and kind not in ("call", "rng")
    if cls == "float":
        return 2.5, not int_only and kind not in ("call", "rng")
    if cls == "int":
        return 3, kind in ("int", "float", "array", "rng")
    if cls == "width 0":
        return np.ones((3, 0)), kind == "array"
    if cls == "overflow":
        return np.full((3, 4), 1e308), kind == "array"
    if cls == "nan":  # the baseline's own float array with one NaN: a silent NaN is wrong
        if not (isinstance(base_value, np.ndarray) and np.issubdtype(base_value.dtype, np.floating)):
            return None
        bad = base_value.copy()
        bad.flat[0] = np.nan
        return bad, False
    raise KeyError(cls)


def baseline_builders(tmp: Path) -> dict[str, Callable[[], dict[str, Any]]]:
    out: dict[str, Callable[[], dict[str, Any]]] = {}
    for name, text in BASELINES.items():
        spec = parse(text)
        out[name] = lambda spec=spec: {k: build(v) for k, v in spec.items()}
    out.update(custom_baselines(tmp))
    return out


def _names_another(message: str, fn: Callable[..., Any], arg: str) -> bool:
    """The message names another parameter of ``fn`` as a word (one lower-case letter is too
    common a word to count) and speaks no numpy internals."""
    others = [p for p in inspect.signature(fn).parameters if p != arg and (len(p) > 1 or p.isupper())]
    return names_one_of(message, ("",)) and any(re.search(rf"(?<![\w.]){re.escape(p)}(?!\w)", message) for p in others)


def run_case(
    name: str, fn: Callable[..., Any], base: Callable[[], dict[str, Any]], arg: str, cls: str
) -> Outcome | None:
    p = inspect.signature(fn).parameters[arg]
    kw = base()
    got = bad_value(p, cls, kw.get(arg, None if p.default is p.empty else p.default))
    if got is None:
        return None
    value, ok = got
    if cls == "None" and (arg == "dtype" or (arg == "causal" and name.endswith(NONE_MEANS_NO_MASK))):
        ok = True  # documented: None is no causal mask (causal_alignment); np.dtype(None) is float64
    kw[arg] = value
    kind, detail = classify(lambda: call_with(fn, kw), arg, ok)
    if kind == "silent" and cls == "overflow" and name in NON_FINITE_DOCUMENTED:
        kind, detail = "documented", "inf or NaN near overflow, as its docstring says"
    if kind == "raw" and detail.startswith(("ValueError", "TypeError", "DataNotFoundError", "FileNotFoundError")):
        message = detail.split(": ", 1)[-1]
        if cls == "str" and "'abc'" in message:  # a name that is not there: the error quotes it
            kind = "named"
        elif len(arg) == 1 and names_one_of(message, (arg.upper() + " ",)):  # x, written X in the message
            kind = "named"
        elif "overflows float64 (finite inputs too large)" in message:  # check_no_overflow's refusal
            kind = "named"
        elif _names_another(message, fn, arg):
            # a shape or range that does not fit another argument: the error names that one (which
            # of two arguments that disagree is the wrong one, only the caller knows)
            kind = "partner"
    return Outcome(name, arg, cls, kind, detail)


def warm(tmp: Path) -> None:
    """Call every baseline once, untimed: a first call may import scipy (seconds), which is not a hang."""
    import importlib.util

    if importlib.util.find_spec("tqdm"):  # train_merges(progress=True) imports it: seconds on a loaded machine
        importlib.import_module("tqdm.auto")
    fns = dict(public_callables()[0])
    for name, base in baseline_builders(tmp).items():
        try:
            call_with(fns[name], base())
        except Exception:  # noqa: BLE001 -- check_baselines reports it
            pass


def sweep(tmp: Path, names: set[str] | None = None) -> tuple[list[Outcome], list[str]]:
    """Every (callable, argument, class) case; and the callables without a baseline. Runs in ``tmp``
    (a bad path such as ``"abc"`` given to a writer is written there, not into the caller's folder)."""
    old = os.getcwd()
    os.chdir(tmp)
    try:
        return _sweep(tmp, names)
    finally:
        os.chdir(old)


def _sweep(tmp: Path, names: set[str] | None) -> tuple[list[Outcome], list[str]]:
    fns, _ = public_callables()
    builders = baseline_builders(tmp)
    warm(tmp)
    outs: list[Outcome] = []
    missing = []
    for name, fn in fns:
        if names is not None and name not in names:
            continue
        if name not in builders:
            missing.append(name)
            continue
        params = [
            p for p in inspect.signature(fn).parameters.values() if p.kind not in (p.VAR_POSITIONAL, p.VAR_KEYWORD)
        ]
        for p, cls in itertools.product(params, CLASSES):
            o = run_case(name, fn, builders[name], p.name, cls)
            for _ in range(2):  # a slow call on a loaded machine is timed again before it counts as a hang
                if o is not None and o.kind == "hang":
                    o = run_case(name, fn, builders[name], p.name, cls)
            if o is not None:
                outs.append(o)
    return outs, missing


def check_baselines(tmp: Path) -> list[str]:
    """Every baseline call must run and return something finite."""
    fns = dict(public_callables()[0])
    warm(tmp)
    wrong = []
    for name, base in baseline_builders(tmp).items():
        kind, detail = classify(lambda: call_with(fns[name], base()), "", True)
        if kind != "documented":
            wrong.append(f"{name}: {kind} {detail}")
    return wrong


def not_yet_named(outs: list[Outcome]) -> set[str]:
    """``"spec(arg=class)"`` of every case that is raw, silent or a hang."""
    return {f"{o.spec}({o.arg}={o.value})" for o in outs if o.kind in ("raw", "silent", "hang")}


#: The cases this sweep still finds, listed so that the test fails on a new one and on a fixed one
#: still listed (remove it then). See the module docstring for the counts.
KNOWN = frozenset(
    line.strip()
    for line in (Path(__file__).with_name("bad_inputs_one_known.txt")).read_text(encoding="utf-8").splitlines()
    if line.strip() and not line.startswith("#")
)


# --------------------------------------------------------------------------------- the search
def search(fn: Callable[..., Any], tries: int = 300) -> str | None:
    """An error-guided search for a valid baseline: start every required parameter at its first
    candidate; after each failure move the parameter the error names (else one at random) on."""
    sig = inspect.signature(fn)
    params = [
        p for p in sig.parameters.values() if p.default is p.empty and p.kind not in (p.VAR_POSITIONAL, p.VAR_KEYWORD)
    ]
    if not params:
        return ""
    cands = {p.name: _CANDIDATES[_kind(p)] for p in params}
    idx = dict.fromkeys(cands, 0)
    r = np.random.default_rng(0)
    seen = set()
    for _ in range(tries):
        key = tuple(idx.values())
        text = " ".join(f"{k}={cands[k][i]}" for k, i in idx.items())
        if key not in seen:
            seen.add(key)
            spec = parse(text)
            kind, detail = classify(lambda: call_with(fn, {k: build(v) for k, v in spec.items()}), "", True)
            if kind == "documented":
                return text
        else:
            detail = ""
        named = [k for k in sorted(cands, key=len, reverse=True) if k in detail.split(": ", 1)[-1]]
        k = named[0] if named and r.uniform() < 0.8 else list(cands)[r.integers(len(cands))]
        idx[k] = (idx[k] + 1) % len(cands[k])
    return None


def main(argv: list[str] | None = None) -> int:
    import sys
    import tempfile
    import time
    import warnings

    argv = list(argv if argv is not None else sys.argv[1:])
    do_search, do_known = "--search" in argv, "--known" in argv
    argv = [a for a in argv if a not in ("--search", "--known")]
    list_all = command_line(argv, __doc__.splitlines()[0])
    with warnings.catch_warnings(), np.errstate(all="ignore"), tempfile.TemporaryDirectory() as d:
        warnings.simplefilter("ignore")
        tmp = Path(d)
        if do_search:
            builders = baseline_builders(tmp)
            for name, fn in public_callables()[0]:
                if name not in builders:
                    found = search(fn)
                    print(f'    "{name}": "{found}",' if found is not None else f"    # {name}: not found")
            return 0
        for line in check_baselines(tmp):
            print("BASELINE FAILS:", line)
        t0 = time.perf_counter()
        outs, missing = sweep(tmp)
        print(f"sweep: {time.perf_counter() - t0:.1f} s")
        if do_known:  # rewrite the list of known cases (keep its comment lines)
            path = Path(__file__).with_name("bad_inputs_one_known.txt")
            head = [ln for ln in path.read_text(encoding="utf-8").splitlines() if ln.startswith("#")]
            path.write_text("\n".join(head + sorted(not_yet_named(outs))) + "\n", encoding="utf-8")
    report(outs, f"{len(outs)} one-argument cases against {len({o.spec for o in outs})} callables:", list_all)
    print(f"  partner    {sum(o.kind == 'partner' for o in outs)} (the error names the other argument of a mismatch)")
    if missing:
        print(f"{len(missing)} callables without a baseline: {', '.join(missing)}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
