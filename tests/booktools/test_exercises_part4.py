"""Checkers of the Part 4 exercises: a right answer passes, wrong ones raise ExerciseCheckError."""

from __future__ import annotations

import numpy as np
import pytest
from scipy.optimize import brentq

from nextword.booktools.exercises.checks import (
    ExerciseCheckError,
    check_ex_p4_01,
    check_ex_p4_02,
    check_ex_p4_03,
    check_ex_p4_04,
)
from nextword.booktools.exercises.subchecks import sub_check_results
from nextword.theory.barrier import (
    jacobian_diagonal_block,
    matrix_margins,
    paper_diagonal_block,
    scalar_attention_variance,
    scalar_margin,
    support_tokens,
)


def _not_implemented(*args):
    raise NotImplementedError("stub")


def test_p4_01_right_and_wrong():
    assert check_ex_p4_01(lambda x, a: scalar_margin(x, a=a), lambda x, a: support_tokens(scalar_margin(x, a=a)))
    with pytest.raises(ExerciseCheckError):  # uses 1 + a Var (wrong sign)
        check_ex_p4_01(
            lambda x, a: 1 + a * scalar_attention_variance(x, a=a), lambda x, a: support_tokens(scalar_margin(x, a=a))
        )
    with pytest.raises(ExerciseCheckError, match="the largest margin; support tokens attain the smallest"):
        check_ex_p4_01(
            lambda x, a: scalar_margin(x, a=a), lambda x, a: np.array([int(np.argmax(scalar_margin(x, a=a)))])
        )
    with pytest.raises(ExerciseCheckError, match="NotImplementedError"):
        check_ex_p4_01(_not_implemented, _not_implemented)


def _margins(x, a, *, centred=True, a_in_logits=True, a_in_margin=True):
    m = np.ones(len(x))
    for t in range(1, len(x)):
        w = np.exp((a if a_in_logits else 1.0) * x[t] * x[:t])
        w /= w.sum()
        m[t] = 1.0 - (a if a_in_margin else 1.0) * np.sum(w * (x[:t] - (w @ x[:t] if centred else 0.0)) ** 2)
    return m


@pytest.mark.parametrize(
    "kwargs, named",
    [
        ({"centred": False}, "second moment"),
        ({"a_in_logits": False}, "the logits are a x_t x_s"),
        ({"a_in_margin": False}, "the factor a is missing"),
    ],
)
def test_p4_01_margin_slips_named(kwargs, named):
    """readex2: the second moment for Var_t, or a dropped from the logits or the margin, failed undiagnosed,
    and a right support() fed by those margins was told 'the largest margin'."""
    with pytest.raises(ExerciseCheckError, match=named) as err:
        check_ex_p4_01(lambda x, a: _margins(x, a, **kwargs), lambda x, a: support_tokens(_margins(x, a, **kwargs)))
    assert "the largest margin" not in str(err.value)


def test_p4_01_support_of_all_largest_margins_named():
    with pytest.raises(ExerciseCheckError, match="the largest margin"):
        check_ex_p4_01(
            lambda x, a: scalar_margin(x, a=a),
            lambda x, a: np.flatnonzero(scalar_margin(x, a=a) >= scalar_margin(x, a=a).max() - 1e-12),
        )


def test_p4_02_right_and_wrong():
    def right(X, t, W_Q, W_K, W_V):
        return jacobian_diagonal_block(X, t, W_Q=W_Q, W_K=W_K, W_V=W_V)

    assert check_ex_p4_02(right)

    def paper(X, t, W_Q, W_K, W_V):  # the (14) form with the covariance of the values
        return paper_diagonal_block(X, W_Q, W_K, W_V)[t]

    with pytest.raises(ExerciseCheckError, match="Eq. \\(14\\) form .* covariance of the values"):
        check_ex_p4_02(paper)
    with pytest.raises(ExerciseCheckError, match="shape"):
        check_ex_p4_02(lambda X, t, W_Q, W_K, W_V: np.eye(2))

    def a_transposed(X, t, W_Q, W_K, W_V):  # I - (I - right) with A^T in place of A: built from the parts
        if t == 0:
            return np.eye(X.shape[1])
        from nextword.attention import softmax

        past = X[:t]
        alpha = softmax((past @ W_K.T) @ (W_Q @ X[t]))
        v = past @ W_V.T
        cross = (alpha[:, None] * (v - alpha @ v)).T @ (past - alpha @ past)
        assert np.allclose(np.eye(X.shape[1]) - cross @ (W_K.T @ W_Q), right(X, t, W_Q, W_K, W_V))
        return np.eye(X.shape[1]) - cross @ (W_Q.T @ W_K)

    with pytest.raises(ExerciseCheckError, match="A transposed"):  # named now (was: no diagnosis)
        check_ex_p4_02(a_transposed)


def _block(
    X,
    t,
    W_Q,
    W_K,
    W_V,
    *,
    swap=False,
    scale=1.0,
    scale_derivative=False,
    include_self=False,
    uncentred=False,
    unmasked=None,
    early=False,
    rows=False,
    equal=False,
    left=False,
):
    if unmasked is not None:  # no causal mask: every position, or every other one
        past = X if unmasked == "all" else np.delete(X, t, axis=0)
    elif t == 0 or (early and t == 1):
        return np.eye(X.shape[1])
    else:
        past = X[: t + 1] if include_self else X[: t - 1] if early else X[:t]
    s = scale * (past @ W_K.T) @ (W_Q @ X[t])
    alpha = np.exp(s - s.max()) / np.exp(s - s.max()).sum()
    if equal:
        alpha = np.full(len(past), 1 / len(past))
    v = past @ (W_V if rows else W_V.T)
    cross = (alpha[:, None] * (v - alpha @ v)).T @ (past - alpha @ past)
    if uncentred:
        cross = (alpha[:, None] * v).T @ past
    if left:
        return np.eye(X.shape[1]) - (W_K.T @ W_Q) @ cross
    return np.eye(X.shape[1]) - (scale if scale_derivative else 1.0) * (cross.T if swap else cross) @ (W_K.T @ W_Q)


@pytest.mark.parametrize(
    "kwargs, named",
    [
        ({"swap": True}, "factors are swapped"),
        ({"scale": 2**-0.5}, "1/√d_k in the weights:"),
        ({"scale": 2**-0.5, "scale_derivative": True}, "1/√d_k in the weights and their derivative"),
        ({"uncentred": True}, "the means are not subtracted"),  # exg: a student's slips, undiagnosed before
        ({"unmasked": "all"}, "no causal mask: the sums run over every position s"),
        ({"unmasked": "others"}, "no causal mask: the sums run over every other position s ≠ t"),
        # r9ex: four more slips failed with bare numbers
        ({"early": True}, "the sums stop one position early"),
        ({"rows": True}, "the values as rows x_s W_V"),
        ({"equal": True}, "the covariance with equal weights 1/t"),
        ({"left": True}, "A on the left"),
    ],
)
def test_p4_02_swapped_outer_product_and_sqrt_dk_named(kwargs, named):
    """readex2: (x_s − x̄)(v_s − v̄)ᵀ A, and the transformer's 1/√d_k in these logits, failed undiagnosed."""
    assert np.allclose(
        _block(np.eye(3), 2, np.eye(3), np.eye(3), np.eye(3)),
        jacobian_diagonal_block(np.eye(3), 2, W_Q=np.eye(3), W_K=np.eye(3), W_V=np.eye(3)),
    )
    with pytest.raises(ExerciseCheckError, match=named):
        check_ex_p4_02(lambda X, t, W_Q, W_K, W_V: _block(X, t, W_Q, W_K, W_V, **kwargs))


def _var_x1(w, s):
    return s**2 * (1 + w**2) / (1 - w**2) ** 2


def _cov_x1_x2(w, s):
    return s**2 * 2 * w / (1 - w**2) ** 2


def test_p4_04_right_and_wrong():
    assert check_ex_p4_04(_var_x1, _cov_x1_x2)
    with pytest.raises(ExerciseCheckError):  # the length-1 answer
        check_ex_p4_04(lambda w, s: s**2, _cov_x1_x2)
    with pytest.raises(ExerciseCheckError, match="NotImplementedError"):
        check_ex_p4_04(_not_implemented, _not_implemented)
    # leftex: σ² (J Jᵀ)_00, the map ε = J x used the wrong way round, failed with no diagnosis
    with pytest.raises(ExerciseCheckError, match="J itself, not its inverse"):
        check_ex_p4_04(lambda w, s: s**2 * (1 + w**2), _cov_x1_x2)
    # σ² M for σ² M Mᵀ (M = (I − W)⁻¹): the covariance of a linear map of the noise taken as the map itself
    with pytest.raises(ExerciseCheckError, match=r"as if Cov\(x\) were σ² M"):
        check_ex_p4_04(lambda w, s: s**2 / (1 - w**2), _cov_x1_x2)
    with pytest.raises(ExerciseCheckError, match=r"as if Cov\(x\) were σ² M"):
        check_ex_p4_04(_var_x1, lambda w, s: s**2 * w / (1 - w**2))


def _moments_with(sign: float):
    """Var(x_1) and Cov(x_1, x_2) from x = (I − sign·W)⁻¹ ε (sign = −1: the slip (I + W)⁻¹)."""

    def cov(w, s):
        M = np.linalg.inv(np.eye(2) - sign * np.array([[0.0, w], [w, 0.0]]))
        return s**2 * (M @ M.T)

    return (lambda w, s: float(cov(w, s)[0, 0])), (lambda w, s: float(cov(w, s)[0, 1]))


def test_p4_04_sign_slip_i_plus_w_fails_on_the_covariance_and_is_named():
    """leftex: (I + W)⁻¹ for (I − W)⁻¹ passed, since Var(x_1) is even in w. The exercise now also asks for
    Cov(x_1, x_2), odd in w: the slip keeps the variance (1 of 2 sub-checks) and is named on the covariance."""
    var, cov = _moments_with(+1.0)
    assert check_ex_p4_04(var, cov)
    var_slip, cov_slip = _moments_with(-1.0)
    results = dict(sub_check_results("p4_04", var_slip, cov_slip))
    assert len(results) == 2
    var_label, cov_label = list(results)
    assert results[var_label] is None  # the variance cannot show the slip
    assert "sign of w_V flipped" in results[cov_label] and "(I + W)⁻¹" in results[cov_label]
    with pytest.raises(ExerciseCheckError, match=r"(?s)1 of 2 checks passed.*\(I \+ W\)⁻¹ε instead of \(I − W\)⁻¹ε"):
        check_ex_p4_04(var_slip, cov_slip)


@pytest.mark.parametrize(
    "cov, named",
    [
        (lambda w, s: 0.0, "the length-1 answer 0"),
        (lambda w, s: s**2 * w / (1 - w**2) ** 2, "one noise term only"),
        (lambda w, s: 2 * w / (1 + w**2), "the correlation, not the covariance"),
        # revex: σ for σ² passes at σ = 1 and w = 0; at (w, σ) = (−0.3, 2) it equals the one-noise-term slip
        # (both half the answer), which the checker named instead
        (lambda w, s: 2 * w * s / (1 - w**2) ** 2, "σ instead of σ²"),
    ],
)
def test_p4_04_covariance_slips_named(cov, named):
    with pytest.raises(ExerciseCheckError, match=named):
        check_ex_p4_04(_var_x1, cov)


def test_p4_03_right_and_wrong():
    X = 2.5 * np.array([[0.0, 0.0], [1.0, 0.3], [-0.6, 0.8], [0.2, -0.1]])
    assert check_ex_p4_03(X, np.eye(2), np.eye(2))
    with pytest.raises(ExerciseCheckError, match="spectral margin"):  # small context: ρ < 1
        check_ex_p4_03(0.3 * X, np.eye(2), np.eye(2))
    with pytest.raises(ExerciseCheckError, match="shape"):
        check_ex_p4_03(np.ones((3, 1)), np.eye(1), np.eye(1))
    # an eigenvalue of Σ_t A exactly at 1: det = 0, so not a counterexample
    c = brentq(lambda s: matrix_margins(s * X, np.eye(2), np.eye(2)).det[-1], 0.6, 0.65)
    with pytest.raises(ExerciseCheckError, match="singular"):
        check_ex_p4_03(c * X, np.eye(2), np.eye(2))


def test_p4_03_transposed_x_and_a_counterexample_at_an_earlier_row_are_named():
    """exf trials: X given as (d, T) failed with a bare shape message; a context whose counterexample is at an
    earlier row (the last row's query then concentrates its weights, ρ < 1) failed without saying so."""
    X = 2.5 * np.array([[0.0, 0.0], [1.0, 0.3], [-0.6, 0.8], [0.2, -0.1]])
    with pytest.raises(ExerciseCheckError, match="X is transposed"):
        check_ex_p4_03(X.T, np.eye(2), np.eye(2))
    with pytest.raises(ExerciseCheckError, match="W_Q and W_K are transposed"):
        check_ex_p4_03(X, np.ones((2, 3)), np.ones((2, 3)))
    # revex: X (3, 2) right and W_Q, W_K (2, 3) transposed was named 'X is transposed' only; the shapes fit both
    with pytest.raises(ExerciseCheckError, match=r"either X is transposed.*; or W_Q and W_K are transposed"):
        check_ex_p4_03(X[:3], np.ones((2, 3)), np.ones((2, 3)))
    longer = np.vstack([X, [[10.0, 3.0]]])  # the 5th query points at row 1: its weights concentrate there
    assert matrix_margins(longer, np.eye(2), np.eye(2)).spectral[-1] > 0
    with pytest.raises(ExerciseCheckError, match=r"(?s)earlier row.*position 3.*end X at row 3"):
        check_ex_p4_03(longer, np.eye(2), np.eye(2))


def test_p4_02_own_token_in_the_sums_is_named_not_called_float32():
    """leftex: sums over s ≤ t (the token itself included) are off by ~1e-6 at t = 1 for the checker's X, and were
    told 'the error is at float32 round-off level — compute in float64' (the wrong mistake)."""
    with pytest.raises(ExerciseCheckError, match="the sums run over s ≤ t") as info:
        check_ex_p4_02(lambda X, t, W_Q, W_K, W_V: _block(X, t, W_Q, W_K, W_V, include_self=True))
    assert "float32" not in str(info.value)


def test_p4_01_plain_mean_not_called_equal_weights():
    """leftex: Var_t centred at the plain mean of the past (weights right) was told 'equal weights over the past'
    (on x = [0, 2, 1] the two coincide); now that case names both, and a case telling them apart names the mean."""

    def plain_mean(x, a):
        m = np.ones(len(x))
        for t in range(1, len(x)):
            w = np.exp(a * x[t] * x[:t])
            w /= w.sum()
            m[t] = 1.0 - a * np.sum(w * (x[:t] - x[:t].mean()) ** 2)
        return m

    with pytest.raises(ExerciseCheckError, match="in the mean x̄_t or everywhere"):
        check_ex_p4_01(plain_mean, lambda x, a: support_tokens(plain_mean(x, a)))
    with pytest.raises(ExerciseCheckError, match="around the plain mean of the past"):
        check_ex_p4_01(  # on x = [0, 2, 1] it is right up to x_2; from the 4th token on the two slips differ
            lambda x, a: plain_mean(x, a) if len(x) > 3 else scalar_margin(x, a=a),
            lambda x, a: support_tokens(scalar_margin(x, a=a)),
        )


def test_p4_03_a_context_without_spread_is_named():
    """ex10: with T = 2 (or equal earlier rows) Σ_t = 0 whatever W_Q, W_K are; the check only said 'push an
    eigenvalue of Σ_t A past 1', which no choice of W_Q, W_K can do."""
    W = 3.0 * np.eye(2)
    with pytest.raises(ExerciseCheckError, match=r"Σ_t = 0.*one row"):
        check_ex_p4_03(np.array([[1.0, 0.0], [0.0, 0.0]]), W, W)
    with pytest.raises(ExerciseCheckError, match=r"Σ_t = 0.*all equal"):
        check_ex_p4_03(np.array([[1.0, 2.0], [1.0, 2.0], [0.0, 0.0]]), W, W)


def test_p4_03_a_counterexample_only_with_the_current_position_included_is_named():
    """ex10: a context that is a counterexample only when the last position also attends to itself failed with
    'push an eigenvalue of Σ_t A past 1' and no word about the strict context s < t."""
    X = np.array([[-1.32, 4.74], [0.54, -1.03], [6.88, -0.87], [-3.29, 0.54]])
    W = 0.63 * np.eye(2)
    inclusive = matrix_margins(X, W, W, include_current=True)
    assert inclusive.spectral[-1] <= 0 and abs(inclusive.det[-1]) >= 0.1
    with pytest.raises(ExerciseCheckError, match=r"also attends to itself.*strict"):
        check_ex_p4_03(X, W, W)
