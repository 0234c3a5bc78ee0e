"""Checkers of the Part 2 exercises: a right answer passes, wrong ones raise ExerciseCheckError."""

from __future__ import annotations

import numpy as np
import pytest

from nextword.booktools.exercises.checks import ExerciseCheckError, check_ex_p2_01, check_ex_p2_02, check_ex_p2_03
from nextword.theory.formulation import diffusion as dd
from nextword.theory.formulation import ssm
from nextword.theory.formulation import kl_decomposition


def _not_implemented(*args):
    raise NotImplementedError("stub")


def test_p2_01_right_and_wrong():
    assert check_ex_p2_01(lambda p, q, V, L: kl_decomposition(p, q, V, L).per_position)
    with pytest.raises(ExerciseCheckError):  # reversed KL direction D(pi || p)
        check_ex_p2_01(lambda p, q, V, L: kl_decomposition(q, p, V, L).per_position)
    with pytest.raises(ExerciseCheckError, match="shape"):  # returns the joint KL only
        check_ex_p2_01(lambda p, q, V, L: kl_decomposition(p, q, V, L).joint)
    with pytest.raises(ExerciseCheckError):  # unweighted: forgets the prefix probabilities
        check_ex_p2_01(lambda p, q, V, L: kl_decomposition(p, q, V, L).cross_entropy)
    with pytest.raises(ExerciseCheckError, match="NotImplementedError"):
        check_ex_p2_01(_not_implemented)


def _weighted_terms(weight, first, second, V, L):
    import itertools

    from nextword.theory.formulation import kl_divergence

    return np.array(
        [
            sum(
                np.prod([weight(pre[:m])[pre[m]] for m in range(l)]) * kl_divergence(first(pre), second(pre))
                for pre in itertools.product(range(V), repeat=l)
            )
            for l in range(L)
        ]
    )


def test_p2_01_names_the_mixed_up_laws():
    """Prefixes weighted by the model, or the KL reversed at each prefix: each is named (they were not)."""
    with pytest.raises(ExerciseCheckError, match="weighted by the model q"):
        check_ex_p2_01(lambda p, q, V, L: _weighted_terms(q, p, q, V, L))
    with pytest.raises(ExerciseCheckError, match=r"KL\(q ‖ p\) at each prefix"):
        check_ex_p2_01(lambda p, q, V, L: _weighted_terms(p, q, p, V, L))


def test_p2_01_names_uniform_and_unweighted_prefixes():
    """leftex: prefixes weighted uniformly (1/V^(l−1)) or not at all failed with no diagnosis."""
    with pytest.raises(ExerciseCheckError, match="weighted uniformly"):
        check_ex_p2_01(lambda p, q, V, L: _weighted_terms(lambda prefix: np.full(V, 1.0 / V), p, q, V, L))
    with pytest.raises(ExerciseCheckError, match="not weighted"):
        check_ex_p2_01(lambda p, q, V, L: _weighted_terms(lambda prefix: np.ones(V), p, q, V, L))


def test_p2_01_names_an_off_by_one_prefix_and_a_mean_over_prefixes():
    """exg (a student's slips): term t conditioned on t tokens (one position late), and the p-weighted KLs
    averaged over the V^(t-1) prefixes instead of summed, failed with no diagnosis."""
    with pytest.raises(ExerciseCheckError, match="likely mistake: off by one position"):
        check_ex_p2_01(lambda p, q, V, L: kl_decomposition(p, q, V, L + 1).per_position[1:])
    with pytest.raises(ExerciseCheckError, match="likely mistake: a mean over the V\\^\\(t−1\\) prefixes"):
        check_ex_p2_01(lambda p, q, V, L: kl_decomposition(p, q, V, L).per_position / float(V) ** np.arange(L))


def test_p2_02_names_a_mask_row_with_rates():
    """leftex: an absorbing generator whose loop did not skip the mask (its row −β, or β to itself then −β)
    was told only 'row 0 sums to −1'; the slip is now named."""

    def every_row(V, mask, beta):
        Q = np.zeros((V, V))
        for i in range(V):
            Q[i, mask] = beta
            Q[i, i] = -beta
        return Q

    with pytest.raises(ExerciseCheckError, match="did not skip"):
        check_ex_p2_02(dd.uniform_generator, every_row, dd.reverse_generator)


def test_p2_02_names_the_rate_and_transpose_mistakes():
    """Rate β/(V−1) to the other states was diagnosed as 'a factor 2 too large'; Q_ij p_j/p_i got no diagnosis."""

    def others(V, beta):
        return beta * (np.ones((V, V)) - V * np.eye(V)) / (V - 1)

    with pytest.raises(ExerciseCheckError, match=r"rate β/\(V−1\) to each other state") as err:
        check_ex_p2_02(others, dd.absorbing_generator, dd.reverse_generator)
    assert "factor 2" not in str(err.value)

    def no_transpose(Q, p):
        R = Q * p[None, :] / p[:, None]
        np.fill_diagonal(R, 0.0)
        np.fill_diagonal(R, -R.sum(axis=1))
        return R

    with pytest.raises(ExerciseCheckError, match="uses the forward rate z → y"):
        check_ex_p2_02(dd.uniform_generator, dd.absorbing_generator, no_transpose)


def test_p2_02_right_and_wrong():
    right = (dd.uniform_generator, dd.absorbing_generator, dd.reverse_generator)
    assert check_ex_p2_02(*right)

    def printed_uniform(V, beta):  # Example 9.2 as printed (rows sum to 1)
        Q = np.full((V, V), beta / V)
        np.fill_diagonal(Q, 1 - (V - 1) * beta / V)
        return Q

    with pytest.raises(ExerciseCheckError, match="not a rate matrix"):
        check_ex_p2_02(printed_uniform, *right[1:])
    with pytest.raises(ExerciseCheckError):  # mask row wrongly leaves the mask
        check_ex_p2_02(right[0], lambda V, m, b: dd.uniform_generator(V, b), right[2])
    with pytest.raises(ExerciseCheckError):  # forgets the transpose in (D.1)

        def no_transpose(Q, p):
            R = Q * p[None, :] / p[:, None]
            np.fill_diagonal(R, 0.0)
            np.fill_diagonal(R, -R.sum(axis=1))
            return R

        check_ex_p2_02(right[0], right[1], no_transpose)
    with pytest.raises(ExerciseCheckError, match="NotImplementedError"):
        check_ex_p2_02(_not_implemented, _not_implemented, _not_implemented)


def test_p2_03_right_and_wrong():
    def scan(Ab, Bb, C, D, h, v0):
        return ssm.ssm_scan(Ab, Bb, C, D, h, v0)[1]

    assert check_ex_p2_03(ssm.discretize_zoh, scan)

    def zoh_with_inverse(A, B, dt):  # fails for singular A
        Ab = __import__("scipy.linalg").linalg.expm(A * dt)
        return Ab, np.linalg.solve(A, (Ab - np.eye(len(A))) @ B)

    with pytest.raises(ExerciseCheckError, match="singular|LinAlgError"):
        check_ex_p2_03(zoh_with_inverse, scan)
    with pytest.raises(ExerciseCheckError, match="Abar"):  # Euler instead of the exact hold
        check_ex_p2_03(ssm.discretize_euler, scan)

    def scan_updated_first(Ab, Bb, C, D, h, v0):
        v, _ = ssm.ssm_scan(Ab, Bb, C, D, h, v0)
        return (v @ Ab.T + h @ Bb.T) @ C.T + h @ D.T

    with pytest.raises(ExerciseCheckError, match="off by one"):
        check_ex_p2_03(ssm.discretize_zoh, scan_updated_first)
    with pytest.raises(ExerciseCheckError, match="NotImplementedError"):
        check_ex_p2_03(_not_implemented, _not_implemented)


def test_p2_03_dt_left_out_and_previous_input_named():
    """leftex: zoh without dt (a step of 1) got no diagnosis for Abar and was told 'Bbar = exp(dt A) B' for Bbar
    (a coincidence at A = 0, the wrong mistake); a scan feeding the state h[k − 1] got no diagnosis."""

    def scan(Ab, Bb, C, D, h, v0):
        return ssm.ssm_scan(Ab, Bb, C, D, h, v0)[1]

    with pytest.raises(ExerciseCheckError) as info:
        check_ex_p2_03(lambda A, B, dt: ssm.discretize_zoh(A, B, 1.0), scan)
    message = str(info.value)
    assert "dt is missing: Abar = exp(dt A)" in message and "either dt is missing" in message

    def scan_previous_input(Ab, Bb, C, D, h, v0):
        v, out = np.asarray(v0, float), []
        for k in range(len(h)):
            out.append(C @ v + D @ h[k])
            v = Ab @ v + Bb @ h[k - 1]
        return np.array(out)

    with pytest.raises(ExerciseCheckError, match="fed the previous input"):
        check_ex_p2_03(ssm.discretize_zoh, scan_previous_input)


def test_p2_03_a_list_pair_passes_and_the_block_elementwise_pinv_and_transposed_d_slips_are_named():
    """ex10: zoh returning [Abar, Bbar] was refused ("got list"); np.exp for expm, pinv(A) at A = 0, dt left off
    the B block, and D h_i as h_i D got no diagnosis (or, for the block, only 'dt is missing')."""
    import scipy.linalg

    def scan(Ab, Bb, C, D, h, v0):
        return ssm.ssm_scan(Ab, Bb, C, D, h, v0)[1]

    assert check_ex_p2_03(lambda A, B, dt: list(ssm.discretize_zoh(A, B, dt)), scan)
    with pytest.raises(ExerciseCheckError, match="np.exp is elementwise"):
        check_ex_p2_03(lambda A, B, dt: (np.exp(A * dt), ssm.discretize_zoh(A, B, dt)[1]), scan)

    def zoh_pinv(A, B, dt):
        Ab = scipy.linalg.expm(A * dt)
        return Ab, np.linalg.pinv(A) @ (Ab - np.eye(len(A))) @ B

    with pytest.raises(ExerciseCheckError, match="pseudo-inverse"):
        check_ex_p2_03(zoh_pinv, scan)

    def zoh_block_dt_on_a_only(A, B, dt):
        s, d = B.shape
        M = np.zeros((s + d, s + d))
        M[:s, :s], M[:s, s:] = A * dt, B
        E = scipy.linalg.expm(M)
        return E[:s, :s], E[:s, s:]

    with pytest.raises(ExerciseCheckError, match="only A was multiplied by dt"):
        check_ex_p2_03(zoh_block_dt_on_a_only, scan)

    def scan_d_transposed(Ab, Bb, C, D, h, v0):
        return ssm.ssm_scan(Ab, Bb, C, D.T, h, v0)[1]

    with pytest.raises(ExerciseCheckError, match="D is transposed"):
        check_ex_p2_03(ssm.discretize_zoh, scan_d_transposed)


def test_p2_02_whole_transpose_and_p2_03_ignored_v0_are_named():
    """Reverse rates with y and z swapped throughout (Q̄ transposed) and a scan that starts from 0 instead of v0
    got no diagnosis."""

    def swapped(Q, p):
        R = Q * p[:, None] / p[None, :]
        np.fill_diagonal(R, 0.0)
        np.fill_diagonal(R, -R.sum(axis=1))
        return R

    with pytest.raises(ExerciseCheckError, match="transpose of Q̄"):
        check_ex_p2_02(dd.uniform_generator, dd.absorbing_generator, swapped)

    def scan_from_zero(Ab, Bb, C, D, h, v0):
        return ssm.ssm_scan(Ab, Bb, C, D, h, np.zeros_like(v0))[1]

    with pytest.raises(ExerciseCheckError, match="initial state v0 is ignored"):
        check_ex_p2_03(ssm.discretize_zoh, scan_from_zero)
