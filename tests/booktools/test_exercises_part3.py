"""Checkers of the Part 3 exercises: right answers pass, wrong ones raise ExerciseCheckError."""

from __future__ import annotations

import numpy as np
import pytest

from nextword.attention import scaled_dot_product_attention, softmax
from nextword.data import sticky_markov_chain
from nextword.booktools.exercises.checks import (
    ExerciseCheckError,
    check_ex_p3_01,
    check_ex_p3_02,
    check_ex_p3_03,
    check_ex_p3_04,
)
from nextword.theory.dynamics import (
    advantage_matrix,
    compatibility_matrix,
    dominant_query_loss_change,
    first_order_loss_change,
    score_gradient,
)
from nextword.theory.dynamics import markov_entropy_rate


# --- exercise 01 ------------------------------------------------------------------------------
def _sg(alpha, U, V):
    return score_gradient(alpha, compatibility_matrix(U, V))


def _adv(alpha, U, V):
    return advantage_matrix(alpha, compatibility_matrix(U, V))


def test_p3_01_right_answer_passes(capsys):
    assert check_ex_p3_01(_sg, _adv)
    assert "✓" in capsys.readouterr().out


@pytest.mark.parametrize(
    "wrong",
    [
        lambda a, U, V: -_sg(a, U, V),  # descent direction instead of the gradient
        lambda a, U, V: a * (U @ V.T),  # forgot to centre
        lambda a, U, V: _sg(a, U, V)[:, :-1],  # wrong shape
    ],
)
def test_p3_01_wrong_score_gradient_fails(wrong):
    with pytest.raises(ExerciseCheckError):
        check_ex_p3_01(wrong, _adv)


@pytest.mark.parametrize(
    "wrong, named",
    [
        (lambda a, U, V: a * (U @ V.T), "not subtracted"),
        (lambda a, U, V: a * (U @ V.T - (U @ V.T).mean(1, keepdims=True)), "equal weights"),
        (lambda a, U, V: a * (U @ V.T - (a * (U @ V.T)).sum(0, keepdims=True)), "down a column"),
    ],
)
def test_p3_01_score_gradient_slips_named(wrong, named):
    """readex2: no centring, an unweighted mean, or the mean over the queries failed undiagnosed."""
    with pytest.raises(ExerciseCheckError, match=named):
        check_ex_p3_01(wrong, _adv)


def test_p3_01_wrong_advantage_or_stub_fails():
    with pytest.raises(ExerciseCheckError):
        check_ex_p3_01(_sg, lambda a, U, V: -_adv(a, U, V))

    def stub(*args):
        raise NotImplementedError("todo")

    with pytest.raises(ExerciseCheckError, match="NotImplementedError"):
        check_ex_p3_01(stub, _adv)


# --- exercise 02 ------------------------------------------------------------------------------
ALPHA_BAD = np.array([[0.9, 0.1], [0.4, 0.6]])
U_BAD = np.array([[1.0, 0.0], [-1.0, 0.0]])


def test_p3_02_right_answer_passes():
    assert check_ex_p3_02(first_order_loss_change, dominant_query_loss_change, ALPHA_BAD, U_BAD, 0)


def test_p3_02_wrong_formula_fails():
    def no_alpha_factor(alpha, U, j, eta):
        return -eta * (U @ (alpha[:, j] @ U))

    with pytest.raises(ExerciseCheckError):
        check_ex_p3_02(no_alpha_factor, dominant_query_loss_change, ALPHA_BAD, U_BAD, 0)
    with pytest.raises(ExerciseCheckError):
        check_ex_p3_02(
            first_order_loss_change, lambda a, U, j, eta: -eta * a[:, j] * np.sum(U * U, 1), ALPHA_BAD, U_BAD, 0
        )


def test_p3_02_slips_named():
    """r9ex: these slips failed with no diagnosis (only the bare numbers)."""
    fo, dom = first_order_loss_change, dominant_query_loss_change
    first = {
        "the factor α_ij in front is missing": lambda a, U, j, eta: -eta * (U @ (a[:, j] @ U)),
        "α_ij² in front": lambda a, U, j, eta: -eta * a[:, j] ** 2 * (U @ (a[:, j] @ U)),
        "the sum leaves out r = i": lambda a, U, j, eta: fo(a, U, j, eta) + eta * a[:, j] ** 2 * np.sum(U * U, 1),
        "j is already the 0-based index": lambda a, U, j, eta: fo(a, U, (j - 1) % len(a), eta),
    }
    for named, wrong in first.items():
        with pytest.raises(ExerciseCheckError, match=named):
            check_ex_p3_02(wrong, dom, ALPHA_BAD, U_BAD, 0)
    second = {
        "α_jj²": lambda a, U, j, eta: -eta * a[j, j] ** 2 * np.sum(U * U, 1),
        "the wrong axis": lambda a, U, j, eta: -eta * a[:, j] ** 2 * np.sum(U * U),
        "j is already the 0-based index": lambda a, U, j, eta: dom(a, U, (j - 1) % len(a), eta),
    }
    for named, wrong in second.items():
        with pytest.raises(ExerciseCheckError, match=named):
            check_ex_p3_02(fo, wrong, ALPHA_BAD, U_BAD, 0)


def test_p3_02_bad_counterexamples_fail():
    aligned = np.array([[1.0, 0.0], [1.0, 0.0]])  # users agree: nobody's loss rises
    with pytest.raises(ExerciseCheckError, match="rises"):
        check_ex_p3_02(first_order_loss_change, dominant_query_loss_change, ALPHA_BAD, aligned, 0)
    with pytest.raises(ExerciseCheckError, match="row-stochastic"):
        check_ex_p3_02(first_order_loss_change, dominant_query_loss_change, 2 * ALPHA_BAD, U_BAD, 0)
    with pytest.raises(ExerciseCheckError, match="j_bad"):
        check_ex_p3_02(first_order_loss_change, dominant_query_loss_change, ALPHA_BAD, U_BAD, 5)


@pytest.mark.parametrize(
    "wrong, named",
    [
        (lambda a, U, j, eta: -eta * a[:, j] * (U @ U[j]), "not the error u_j"),
        (lambda a, U, j, eta: -eta * a[j, :] * (U @ (a[:, j] @ U)), "in the factor"),
        (lambda a, U, j, eta: -eta * a[:, j] * (U @ (a[j, :] @ U)), "in ū_j"),
    ],
)
def test_p3_02_half_transposed_or_u_j_named(wrong, named):
    """readex2: ū_j taken as u_j, or row j of α in only one of the two places, failed undiagnosed."""
    with pytest.raises(ExerciseCheckError, match=named):
        check_ex_p3_02(wrong, dominant_query_loss_change, ALPHA_BAD, U_BAD, 0)


# --- exercise 03 ------------------------------------------------------------------------------
def _transition(n, stay, rule):
    if rule == "line_distance":  # the statement's non-circulant contrast (not a rule of the library)
        i, k = np.indices((n, n))
        w = np.abs(i - k).astype(float)
        return (1 - stay) * w / w.sum(1, keepdims=True) + stay * np.eye(n)
    return sticky_markov_chain(n, stay, rule=rule).transition


def test_p3_03_right_answer_passes():
    assert check_ex_p3_03(_transition, markov_entropy_rate, "inverse_circular_distance")


def test_p3_03_wrong_answers_fail():
    with pytest.raises(ExerciseCheckError, match="1.8833"):
        check_ex_p3_03(_transition, markov_entropy_rate, "circular_distance")

    def row_entropy_only(P):  # assumes a uniform stationary law: wrong for the random chain
        plogp = np.where(P > 0, P * np.log(np.where(P > 0, P, 1.0)), 0.0)
        return float(-plogp.sum(axis=1).mean())

    with pytest.raises(ExerciseCheckError, match="random 4-state"):
        check_ex_p3_03(_transition, row_entropy_only, "inverse_circular_distance")
    with pytest.raises(ExerciseCheckError):
        check_ex_p3_03(
            lambda n, s, r: _transition(n, s, "uniform_others"), markov_entropy_rate, "inverse_circular_distance"
        )


def _line_distance_transition(n, stay, rule):  # |i - j| where the ring distance is due
    if rule == "line_distance":
        return _transition(n, stay, rule)
    i, k = np.indices((n, n))
    w = {"uniform_others": (i != k).astype(float), "circular_distance": np.abs(i - k).astype(float)}.get(
        rule, np.where(i != k, 1.0 / np.maximum(np.abs(i - k), 1), 0.0)
    )
    return (1 - stay) * w / w.sum(1, keepdims=True) + stay * np.eye(n)


def test_p3_03_line_distance_and_column_entropy_named():
    """readex2: |i - j| for the ring distance, and P log P summed down the columns, failed undiagnosed."""
    with pytest.raises(ExerciseCheckError, match="on a circle"):
        check_ex_p3_03(_line_distance_transition, markov_entropy_rate, "inverse_circular_distance")

    def column_entropy(P):
        pi = np.linalg.matrix_power(P, 200)[0]
        plogp = np.where(P > 0, P * np.log(np.where(P > 0, P, 1.0)), 0.0)
        return float(-(pi * plogp.sum(0)).sum())

    with pytest.raises(ExerciseCheckError, match="down the columns"):
        check_ex_p3_03(_transition, column_entropy, "inverse_circular_distance")


def test_p3_03_column_normalisation_fails_and_is_named():
    """leftex (readex2 left it): normalising the weights by column sums passed, since the three ring rules'
    weights are circulant (column sums = row sums); the statement's non-circulant "line_distance" rule tells them
    apart, and the slip is named. The ring distance used on the line is named too."""

    def by_columns(n, stay, rule):
        if rule != "line_distance":
            return _transition(n, stay, rule)  # identical for circulant weights
        i, k = np.indices((n, n))
        w = np.abs(i - k).astype(float)
        return (1 - stay) * w / w.sum(0, keepdims=True) + stay * np.eye(n)

    with pytest.raises(ExerciseCheckError, match="normalised down the columns") as info:
        check_ex_p3_03(by_columns, markov_entropy_rate, "inverse_circular_distance")
    assert "5 of 6 checks passed" in str(info.value)

    def ring_on_the_line(n, stay, rule):
        if rule != "line_distance":
            return _transition(n, stay, rule)
        return _transition(n, stay, "circular_distance")

    with pytest.raises(ExerciseCheckError, match="on a line, states 0 and n − 1"):
        check_ex_p3_03(ring_on_the_line, markov_entropy_rate, "inverse_circular_distance")


def test_p3_01_row_means_without_keepdims_named():
    """leftex: (alpha * B).sum(axis=1) without keepdims=True broadcasts row j's mean into column j; it failed with
    no diagnosis in both functions."""

    def sg(alpha, U, V):
        B = U @ V.T
        return alpha * (B - np.sum(alpha * B, axis=1))

    def adv(alpha, U, V):
        B = U @ V.T
        return -(B - np.sum(alpha * B, axis=1))

    with pytest.raises(ExerciseCheckError, match="without keepdims=True") as info:
        check_ex_p3_01(sg, adv)
    assert "0 of 2 checks passed" in str(info.value) and str(info.value).count("without keepdims=True") == 2


# --- exercise 04 ------------------------------------------------------------------------------
def _em_value_step(params, X, y, value_lr, sign=1.0, causal=True, transpose=True, one_hot=True, lstsq=True):
    Q, K, V = X @ params.W_Q, X @ params.W_K, X @ params.W_V
    G, alpha = scaled_dot_product_attention(Q, K, V, causal=causal, return_weights=True)
    P = softmax(G @ params.W_O + params.b)
    if one_hot:
        P[np.arange(len(y)), y] -= 1.0
    dV = -sign * value_lr * (alpha.T if transpose else alpha) @ (P @ params.W_O.T)
    return params.W_V + (np.linalg.lstsq(X, dV, rcond=None)[0] if lstsq else X.T @ dV)


def test_p3_04_right_answer_passes():
    assert check_ex_p3_04(_em_value_step)


def test_p3_04_wrong_answers_fail():
    with pytest.raises(ExerciseCheckError, match="wrong way"):
        check_ex_p3_04(lambda p, X, y, lr: _em_value_step(p, X, y, lr, sign=-1.0))
    with pytest.raises(ExerciseCheckError, match="without the causal mask"):  # named now (was: no diagnosis)
        check_ex_p3_04(lambda p, X, y, lr: _em_value_step(p, X, y, lr, causal=False))
    with pytest.raises(ExerciseCheckError, match="shape"):
        check_ex_p3_04(lambda p, X, y, lr: _em_value_step(p, X, y, lr).T)
    with pytest.raises(ExerciseCheckError, match="α U instead of αᵀ U"):  # named now (was: no diagnosis)
        check_ex_p3_04(lambda p, X, y, lr: _em_value_step(p, X, y, lr, transpose=False))


def test_p3_04_error_without_one_hot_and_gradient_back_projection_named():
    """leftex: δ = p without − e_y, and Xᵀ ΔV in place of the least-squares map back to W_V, failed undiagnosed."""
    with pytest.raises(ExerciseCheckError, match="lacks its − e_"):
        check_ex_p3_04(lambda p, X, y, lr: _em_value_step(p, X, y, lr, one_hot=False))
    with pytest.raises(ExerciseCheckError, match="mapped back by Xᵀ ΔV"):
        check_ex_p3_04(lambda p, X, y, lr: _em_value_step(p, X, y, lr, lstsq=False))


def test_p3_02_row_j_in_the_dominant_term_and_p3_03_right_eigenvector_named():
    """leftex: α_ji² (row j) in Eq. (43) failed undiagnosed; π from eig(P) (the right eigenvector, constant) was
    only told 'averaged with equal weights' (the effect, not the slip)."""
    with pytest.raises(ExerciseCheckError, match="row j of α .α_ji²."):
        check_ex_p3_02(
            first_order_loss_change,
            lambda a, U, j, eta: -eta * a[j, :] ** 2 * np.sum(U * U, axis=1),
            np.array([[0.9, 0.1], [0.4, 0.6]]),
            np.array([[1.0, 0.0], [-1.0, 0.0]]),
            0,
        )

    def right_eigenvector(P):
        w, vecs = np.linalg.eig(P)
        pi = np.real(vecs[:, np.argmin(np.abs(w - 1))])
        pi = pi / pi.sum()
        return float(-(pi * (P * np.log(np.where(P > 0, P, 1.0))).sum(1)).sum())

    with pytest.raises(ExerciseCheckError, match="RIGHT eigenvector"):
        check_ex_p3_03(_transition, right_eigenvector, "inverse_circular_distance")
