"""Part 5 exercise checkers: a right answer passes, wrong answers raise ExerciseCheckError."""

from __future__ import annotations

import numpy as np
import pytest

from nextword.booktools.exercises.checks import ExerciseCheckError
from nextword.booktools.exercises.checks.part5 import check_ex_p5_01, check_ex_p5_02, check_ex_p5_03, check_ex_p5_04
from nextword.theory.svflow import sphere as sp


def test_p5_01():
    assert check_ex_p5_01(sp.exp_map, sp.retraction, 3.0)
    with pytest.raises(ExerciseCheckError, match="slope"):
        check_ex_p5_01(sp.exp_map, sp.retraction, 2.0)
    with pytest.raises(ExerciseCheckError, match="retraction"):
        check_ex_p5_01(sp.exp_map, lambda x, v: x + v, 3.0)  # forgot to normalise
    with pytest.raises(ExerciseCheckError, match="exp_map"):
        check_ex_p5_01(lambda x, v: np.cos(1.0) * x + np.sin(1.0) * v, sp.retraction, 3.0)

    def unfinished(x, v):
        raise NotImplementedError("stub")

    with pytest.raises(ExerciseCheckError, match="NotImplementedError"):
        check_ex_p5_01(unfinished, sp.retraction, 3.0)


def test_p5_01_names_mixed_log_bases():
    """leftex: log10 on one axis and ln on the other (slope 3 ln 10 = 6.91 or 3 / ln 10 = 1.30) was only told
    'not the order of the retraction error'."""
    for slope in (3 * np.log(10), 3 / np.log(10)):
        with pytest.raises(ExerciseCheckError, match="different bases"):
            check_ex_p5_01(sp.exp_map, sp.retraction, slope)


def test_p5_01_names_a_fit_with_one_linear_axis():
    """leftex left: a semi-log fit (log error against r: slope about 313 on the statement's steps) got only the
    generic message; so did error against log r. Both are named now, from a random unit x and tangent."""
    rng = np.random.default_rng(5)
    x = rng.standard_normal(5)
    x /= np.linalg.norm(x)
    w = rng.standard_normal(5)
    w -= (w @ x) * x
    w /= np.linalg.norm(w)
    rs = np.logspace(-3, -1.5, 10)
    errs = np.array([np.linalg.norm(sp.retraction(x, r * w) - sp.exp_map(x, r * w)) for r in rs])
    assert abs(np.polyfit(np.log(rs), np.log(errs), 1)[0] - 3.0) < 0.01
    with pytest.raises(ExerciseCheckError, match="semi-log fit"):
        check_ex_p5_01(sp.exp_map, sp.retraction, np.polyfit(rs, np.log(errs), 1)[0])
    with pytest.raises(ExerciseCheckError, match="without the log of the error"):
        check_ex_p5_01(sp.exp_map, sp.retraction, np.polyfit(np.log(rs), errs, 1)[0])


def test_p5_02():
    assert check_ex_p5_02(lambda k, d: float(sp.vmf_log_normalizer(k, d)))
    with pytest.raises(ExerciseCheckError, match="not finite"):
        check_ex_p5_02(lambda k, d: float(sp.vmf_log_normalizer_naive(k, d)))
    with pytest.raises(ExerciseCheckError, match="off by the same constant"):
        check_ex_p5_02(lambda k, d: float(sp.vmf_log_normalizer(k, d)) + np.log(2))  # wrong constant


def test_p5_02_names_log_ive_as_log_i():
    """readex2: log ive used as log I (κ not added back) failed with no diagnosis."""
    with pytest.raises(ExerciseCheckError, match="log ive.* used as log I"):
        check_ex_p5_02(lambda k, d: float(sp.vmf_log_normalizer(k, d)) + k)


def test_p5_02_names_nu_d_over_2():
    """ν = d/2 for the order (κ^ν and I_ν): the detector for it compared with a wrong value and never fired."""
    from scipy import special

    def nu_half_d(kappa, d):
        nu = d / 2
        with np.errstate(divide="ignore"):  # ive underflows in high dimension: -inf there, like a student's
            return float(nu * np.log(kappa) - d / 2 * np.log(2 * np.pi) - (np.log(special.ive(nu, kappa)) + kappa))

    with pytest.raises(ExerciseCheckError, match=r"likely mistake: ν = d/2; the order .* is ν = d/2 − 1"):
        check_ex_p5_02(nu_half_d)


def test_p5_02_names_nu_d_minus_1_over_2_and_log_pi():
    """leftex: ν = (d − 1)/2 and (d/2) log π for (d/2) log 2π failed with no diagnosis."""
    from scipy import special

    def nu_wrong(kappa, d):  # ν = (d − 1)/2, in log space (finite where the check's cases need it)
        nu = (d - 1) / 2
        return (
            float(sp.vmf_log_normalizer(kappa, d + 1)) + 0.5 * np.log(2 * np.pi)
            if d > 16
            else float(nu * np.log(kappa) - d / 2 * np.log(2 * np.pi) - (np.log(special.ive(nu, kappa)) + kappa))
        )

    with pytest.raises(ExerciseCheckError, match=r"ν = \(d − 1\)/2"):
        check_ex_p5_02(nu_wrong)
    with pytest.raises(ExerciseCheckError, match="log π: the normaliser has"):
        check_ex_p5_02(lambda k, d: float(sp.vmf_log_normalizer(k, d)) + d / 2 * np.log(2))


def test_p5_03_names_a_mean_over_z_and_epsilon_without_q():
    """leftex: the ELBO as a mean over the Z components (not the q-weighted sum) and ε without its q(z) weight
    failed with no diagnosis."""

    def mean_over_z(f, x):
        q = np.exp(f.log_q(x))
        return (q * (f.log_lik(x) - np.log(5) - f.log_q(x))).mean(-1)

    with pytest.raises(ExerciseCheckError, match="a mean over the Z = 5 components"):
        check_ex_p5_03(mean_over_z, lambda f, x: f.epsilon(x))

    def eps_without_q(f, x):
        return np.einsum("nz,nzd->nd", f.log_post(x) - f.log_q(x), f.grad_log_q(x))

    with pytest.raises(ExerciseCheckError, match="ε without the weight q"):
        check_ex_p5_03(lambda f, x: f.elbo(x), eps_without_q)


def test_p5_03_names_the_missing_prior():
    with pytest.raises(ExerciseCheckError, match="the prior term is missing"):
        check_ex_p5_03(lambda f, x: f.elbo(x) + np.log(5), lambda f, x: f.epsilon(x))  # Z = 5 in the checker


def test_p5_03_names_the_missing_entropy():
    """readex2: E_q[log p(x, z)] without −E_q[log q] failed undiagnosed."""

    def no_entropy(f, x):
        q = np.exp(f.log_q(x))
        return (q * (f.log_lik(x) - np.log(5))).sum(-1)

    with pytest.raises(ExerciseCheckError, match="the entropy term"):
        check_ex_p5_03(no_entropy, lambda f, x: f.epsilon(x))


@pytest.mark.parametrize(
    "elbo, named",
    [
        (lambda f, x: f.elbo(x) + 2 * _prior_kl(f, x), "the KL term is added"),
        (lambda f, x: f.elbo(x) + 2 * np.log(5), "the prior's sign is flipped"),
        (lambda f, x: f.elbo(x) / np.log(2), "log base 2 instead of e"),
    ],
)
def test_p5_03_names_an_added_kl_a_flipped_prior_and_bits(elbo, named):
    """exg (a student's slips): +KL, the prior's log Z with the wrong sign and an ELBO in bits failed undiagnosed
    (the flipped prior was called 'a missing additive term')."""
    with pytest.raises(ExerciseCheckError, match=f"likely mistake: {named}"):
        check_ex_p5_03(elbo, lambda f, x: f.epsilon(x))


def _prior_kl(f, x):
    log_q = f.log_q(x)
    return (np.exp(log_q) * (log_q + np.log(log_q.shape[-1]))).sum(-1)


def test_p5_03_names_epsilon_as_a_mean_over_z():
    """exg: ε divided by Z (a mean over the components) failed undiagnosed."""
    with pytest.raises(ExerciseCheckError, match="ε is a mean over the Z = 5 components"):
        check_ex_p5_03(lambda f, x: f.elbo(x), lambda f, x: f.epsilon(x) / 5)


def test_p5_03():
    assert check_ex_p5_03(lambda f, x: f.elbo(x), lambda f, x: f.epsilon(x))
    with pytest.raises(ExerciseCheckError, match="Prop. 3.2"):
        check_ex_p5_03(lambda f, x: f.log_marginal(x), lambda f, x: f.epsilon(x))  # the evidence, not the ELBO
    with pytest.raises(ExerciseCheckError, match="Thm. 3.3"):
        check_ex_p5_03(lambda f, x: f.elbo(x), lambda f, x: -f.epsilon(x))  # sign error
    with pytest.raises(ExerciseCheckError, match="shape"):
        check_ex_p5_03(lambda f, x: f.elbo(x)[:, None], lambda f, x: f.epsilon(x))


def test_p5_04():
    good = np.array([[0.5 + 1e-9, 0.5 - 1e-9]] * 3 + [[0.0, 1.0]])
    assert check_ex_p5_04(good)
    with pytest.raises(ExerciseCheckError, match="uniform"):
        check_ex_p5_04(np.array([[0.9, 0.1], [0.1, 0.9]]))  # J = 1/2 with a uniform marginal
    with pytest.raises(ExerciseCheckError, match="below"):
        check_ex_p5_04(np.array([[0.9, 0.1], [0.8, 0.2]]))  # collapsed: J well above 1/2
    with pytest.raises(ExerciseCheckError, match="probabilities"):
        check_ex_p5_04(np.array([[0.9, 0.3], [0.1, 0.9]]))
    with pytest.raises(ExerciseCheckError, match="shape"):
        check_ex_p5_04(np.ones(4) / 4)


def test_p5_04_transposed_gates_are_named():
    """ex10: gates as (2, N), one column per input, got only 'must have shape (N, 2)' or 'row sums [0.5 1.5]'."""
    good = np.array([[0.5 + 1e-9, 0.5 - 1e-9]] * 3 + [[0.0, 1.0]])
    with pytest.raises(ExerciseCheckError, match="transposed"):
        check_ex_p5_04(good.T)
    with pytest.raises(ExerciseCheckError, match="columns sum to 1: transposed"):
        check_ex_p5_04(np.array([[0.5, 0.0], [0.5, 1.0]]))


def test_p5_04_exact_ties_pass_with_the_convention_named(capsys):
    """leftex (readex2 left it): gates tied exactly at (1/2, 1/2) pass only by arg-max's tie-break to column 0;
    the ✓ says so (and the statement and hint), nearly tied gates get no such note."""
    assert check_ex_p5_04(np.array([[0.5, 0.5]] * 3 + [[0.0, 1.0]]))
    out = capsys.readouterr().out
    assert "3 of your rows are tied exactly" in out and "lower index" in out
    # exg: page 5.3 numbers the experts from 1 (column 0 of the gates is expert 1), and so does the note
    assert "expert 1 (column 0)" in out and "expert 2 (column 1)" in out and "expert 0" not in out
    assert check_ex_p5_04(np.array([[0.5 + 1e-9, 0.5 - 1e-9]] * 3 + [[0.0, 1.0]]))
    assert "tied exactly" not in capsys.readouterr().out


@pytest.mark.parametrize(
    "slip, named",
    [
        ("kappa_power", "κ\\^\\(d/2\\): the power of κ"),
        ("two_pi_power", "\\(2π\\)\\^\\(d/2 − 1\\)"),
        ("minus_kappa", "log ive\\(ν, κ\\) − κ"),
        ("plus_bessel", "\\+ log I_ν\\(κ\\): the Bessel function is in the denominator"),
        ("series_gamma", "Γ\\(m \\+ ν\\) in the power series"),
    ],
)
def test_p5_02_more_slips_named(slip, named):
    """r9ex: these slips of Eq. (18) and of the power series failed with bare numbers."""
    from scipy import special

    def log_i(nu, kappa):
        m = np.arange(400)
        lower = nu + (0 if slip == "series_gamma" else 1)  # Γ(m + ν + 1), or the slip Γ(m + ν)
        series = float(
            special.logsumexp((2 * m + nu) * np.log(kappa / 2) - special.gammaln(m + 1) - special.gammaln(m + lower))
        )
        with np.errstate(divide="ignore"):
            scaled = float(np.log(special.ive(nu, kappa)))
        if kappa < 50:
            return series
        return scaled - kappa if slip == "minus_kappa" else scaled + kappa

    def wrong(kappa, d):
        nu = d / 2 - 1
        if slip == "minus_kappa":
            with np.errstate(divide="ignore"):
                li = float(np.log(special.ive(nu, kappa))) - kappa
        else:
            li = log_i(nu, kappa)
        k_pow = d / 2 if slip == "kappa_power" else nu
        pi_pow = nu if slip == "two_pi_power" else d / 2
        return k_pow * np.log(kappa) - pi_pow * np.log(2 * np.pi) + (li if slip == "plus_bessel" else -li)

    with pytest.raises(ExerciseCheckError, match=named):
        check_ex_p5_02(wrong)
