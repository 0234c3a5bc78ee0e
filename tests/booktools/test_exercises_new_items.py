"""Checkers of the issue-#20 exercises (Part 3 Ex. 05, Part 5 Ex. 05): right answers pass, wrong ones fail."""

from __future__ import annotations

import numpy as np
import pytest

from nextword.booktools.exercises.checks import ExerciseCheckError
from nextword.booktools.exercises.checks.new_items import check_ex_p3_05, check_ex_p5_05
from nextword.theory.dynamics import compatibility_matrix, head_forward, score_gradient, upstream_gradient
from nextword.theory.svflow.gradients import hybrid_gradients


def _key_gradient(params, X, y):
    fw = head_forward(params, X)
    dS = score_gradient(fw.alpha, compatibility_matrix(upstream_gradient(fw.probs, y, params.W_O), fw.V))
    return dS.T @ fw.Q / np.sqrt(fw.Q.shape[1])


def test_p3_05():
    assert check_ex_p3_05(_key_gradient, lambda G: -1.0 / (G - 1))
    with pytest.raises(ExerciseCheckError, match="key_gradient"):
        check_ex_p3_05(lambda p, X, y: _key_gradient(p, X, y) * np.sqrt(p.W_Q.shape[1]), lambda G: -1.0 / (G - 1))
    with pytest.raises(ExerciseCheckError, match="key_gradient"):  # forgot the centring
        check_ex_p3_05(
            lambda p, X, y: (
                (
                    head_forward(p, X).alpha
                    * compatibility_matrix(upstream_gradient(head_forward(p, X).probs, y, p.W_O), head_forward(p, X).V)
                ).T
                @ head_forward(p, X).Q
                / np.sqrt(p.W_Q.shape[1])
            ),
            lambda G: -1.0 / (G - 1),
        )
    with pytest.raises(ExerciseCheckError, match="simplex_cosine"):
        check_ex_p3_05(_key_gradient, lambda G: 0.0)  # "orthogonal"

    def unfinished(*args):
        raise NotImplementedError("stub")

    with pytest.raises(ExerciseCheckError, match="NotImplementedError"):
        check_ex_p3_05(unfinished, lambda G: -1.0 / (G - 1))


def test_p5_05():
    def right(x0, layer, W_cls, y, beta):
        return hybrid_gradients(x0, [layer], W_cls, y, beta).grad_b_g[0]

    assert check_ex_p5_05(right)

    def uncentred(x0, layer, W_cls, y, beta):
        g = hybrid_gradients(x0, [layer], W_cls, y, beta)
        q = g.forward.q[0]
        return q * (g.A[0] + beta * g.R[0])

    with pytest.raises(ExerciseCheckError, match="not centred"):  # readex2: was failed without a diagnosis
        check_ex_p5_05(uncentred)
    with pytest.raises(ExerciseCheckError, match="logit_gradient"):  # sign of the self term flipped
        check_ex_p5_05(
            lambda x0, layer, W, y, beta: right(x0, layer, W, y, -beta) if beta else right(x0, layer, W, y, 1.0)
        )


def test_p3_05_and_p5_05_name_the_typical_slips():
    """Missing 1/√d_k, dS for dSᵀ, η without q(z), R with the wrong sign: each is named (none was, or only as
    'every value is 1.41 times the expected one')."""
    cos = lambda G: -1.0 / (G - 1)  # noqa: E731
    with pytest.raises(ExerciseCheckError, match="forget to divide by √d"):
        check_ex_p3_05(lambda p, X, y: _key_gradient(p, X, y) * np.sqrt(p.W_Q.shape[1]), cos)

    def untransposed(params, X, y):
        fw = head_forward(params, X)
        dS = score_gradient(fw.alpha, compatibility_matrix(upstream_gradient(fw.probs, y, params.W_O), fw.V))
        return dS @ fw.Q / np.sqrt(fw.Q.shape[1])

    with pytest.raises(ExerciseCheckError, match="dS Q instead of dSᵀ Q"):
        check_ex_p3_05(untransposed, cos)

    def eta_only(x0, layer, W_cls, y, beta):
        g = hybrid_gradients(x0, [layer], W_cls, y, beta)
        return g.grad_b_g[0] / g.forward.q[0]

    with pytest.raises(ExerciseCheckError, match="without the factor q"):
        check_ex_p5_05(eta_only)

    def r_flipped(x0, layer, W_cls, y, beta):
        task = hybrid_gradients(x0, [layer], W_cls, y, 0.0).grad_b_g[0]
        return 2 * task - hybrid_gradients(x0, [layer], W_cls, y, beta).grad_b_g[0]

    with pytest.raises(ExerciseCheckError, match="R.z. with the wrong sign"):
        check_ex_p5_05(r_flipped)


def test_p3_05_names_the_off_by_one_cosine_and_the_uncentred_or_key_gradient():
    """leftex: simplex_cosine = −1/G was told 'a factor 2 too small (a missing factor 2 of a derivative?)' (the
    wrong mistake, a coincidence at G = 2); the uncentred advantage and dSᵀ K failed undiagnosed."""
    cos = lambda G: -1.0 / (G - 1)  # noqa: E731
    with pytest.raises(ExerciseCheckError, match="−1/G: the G unit vectors sum to zero") as info:
        check_ex_p3_05(_key_gradient, lambda G: -1.0 / G)
    assert "factor 2" not in str(info.value)

    def uncentred(params, X, y):
        fw = head_forward(params, X)
        B = compatibility_matrix(upstream_gradient(fw.probs, y, params.W_O), fw.V)
        return (fw.alpha * B).T @ fw.Q / np.sqrt(fw.Q.shape[1])

    with pytest.raises(ExerciseCheckError, match="not centred"):
        check_ex_p3_05(uncentred, cos)

    def with_keys(params, X, y):
        fw = head_forward(params, X)
        dS = score_gradient(fw.alpha, compatibility_matrix(upstream_gradient(fw.probs, y, params.W_O), fw.V))
        return dS.T @ fw.K / np.sqrt(fw.Q.shape[1])

    with pytest.raises(ExerciseCheckError, match="dSᵀ K: key j"):
        check_ex_p3_05(with_keys, cos)


def test_p5_05_names_the_classifier_on_x0_the_task_sign_and_the_missing_log_variance():
    """leftex: the classifier applied to x⁰, δ₁ with the wrong sign (named only at β = 0, as 'wrong sign
    everywhere') and likelihoods without −(d/2) log σ² failed with no diagnosis."""
    from nextword.booktools.exercises.checks.new_items import _logit_gradient_variant
    from nextword.theory.svflow.gradients import random_gaussian_layer

    rng = np.random.default_rng(0)
    layer = random_gaussian_layer(3, 4, rng)
    x0, W = rng.normal(size=3), rng.normal(size=(3, 2))
    np.testing.assert_allclose(  # with no slip the variant is the library's gradient
        _logit_gradient_variant(x0, layer, W, 1, 0.7), hybrid_gradients(x0, [layer], W, 1, 0.7).grad_b_g[0], rtol=1e-10
    )
    for kwargs, named in (
        ({"classify_x0": True}, "the classifier is applied to x⁰"),
        ({"task_sign": -1.0}, "δ₁ has the wrong sign"),
        ({"log_var_term": False}, "lack their −.d/2. log σ_z² term"),
    ):
        with pytest.raises(ExerciseCheckError, match=named):
            check_ex_p5_05(
                lambda x0, layer, W_cls, y, beta: _logit_gradient_variant(x0, layer, W_cls, y, beta, **kwargs)
            )


def test_p3_05_causal_mask_mean_loss_and_floor_division_are_named():
    """ex10: a causal mask (the §2.1 head has none), the mean loss for the summed (9) and -1 // (G - 1) got no
    diagnosis, or 'every value is 0.25 times' and 'a factor 2 too large'."""
    cos = lambda G: -1.0 / (G - 1)  # noqa: E731

    def key_gradient(params, X, y, *, causal=False, per_position=1.0):
        fw = head_forward(params, X, causal=causal)
        dS = score_gradient(fw.alpha, compatibility_matrix(upstream_gradient(fw.probs, y, params.W_O), fw.V))
        return per_position * dS.T @ fw.Q / np.sqrt(fw.Q.shape[1])

    with pytest.raises(ExerciseCheckError, match="a causal mask"):
        check_ex_p3_05(lambda p, X, y: key_gradient(p, X, y, causal=True), cos)
    with pytest.raises(ExerciseCheckError, match="the mean loss"):
        check_ex_p3_05(lambda p, X, y: key_gradient(p, X, y, per_position=1 / len(X)), cos)
    with pytest.raises(ExerciseCheckError, match="floor division"):
        check_ex_p3_05(key_gradient, lambda G: -1 // (G - 1))


def test_p3_05_plain_mean_transposed_b_and_logits_are_named():
    """ex10: np.mean for the α-weighted mean (the hint warns of it), B = V Uᵀ and logits passed to
    upstream_gradient for the probabilities all failed with no diagnosis."""
    cos = lambda G: -1.0 / (G - 1)  # noqa: E731

    def key_gradient(params, X, y, *, slip):
        fw = head_forward(params, X)
        U = upstream_gradient(fw.logits if slip == "logits" else fw.probs, y, params.W_O)
        B = (U @ fw.V.T).T if slip == "B.T" else U @ fw.V.T
        centre = B.mean(axis=1, keepdims=True) if slip == "mean" else (fw.alpha * B).sum(axis=1, keepdims=True)
        return (fw.alpha * (B - centre)).T @ fw.Q / np.sqrt(fw.Q.shape[1])

    for slip, named in (("mean", "plain mean"), ("B.T", "B transposed"), ("logits", "not the logits")):
        with pytest.raises(ExerciseCheckError, match=named):
            check_ex_p3_05(lambda p, X, y: key_gradient(p, X, y, slip=slip), cos)  # noqa: B023


def test_p3_05_transposed_alpha_is_named():
    """ex10: α_ji for α_ij inside dS (query i's weights are row i) failed with no diagnosis."""

    def key_gradient(params, X, y):
        fw = head_forward(params, X)
        a, B = fw.alpha.T, upstream_gradient(fw.probs, y, params.W_O) @ fw.V.T
        return (a * (B - (a * B).sum(axis=1, keepdims=True))).T @ fw.Q / np.sqrt(fw.Q.shape[1])

    with pytest.raises(ExerciseCheckError, match="α transposed"):
        check_ex_p3_05(key_gradient, lambda G: -1.0 / (G - 1))
