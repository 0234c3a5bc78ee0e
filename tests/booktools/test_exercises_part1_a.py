"""Checkers of Chapter 6 Exercises 1, 2, 3, 7, 10, 11: one right answer passes, wrong ones are rejected."""

from __future__ import annotations

import numpy as np
import pytest
import sympy as sp

from nextword.booktools.exercises.checks import (
    ExerciseCheckError,
    check_ex_p1_01,
    check_ex_p1_02,
    check_ex_p1_03,
    check_ex_p1_07,
    check_ex_p1_10,
    check_ex_p1_11,
)


def _steps(q, K):
    s = K @ q / np.sqrt(len(q))
    e = np.exp(s)
    return s, e, e / e.sum()


def test_ex01():
    assert check_ex_p1_01(_steps)
    with pytest.raises(ExerciseCheckError, match="scaled_scores"):
        check_ex_p1_01(lambda q, K: (K @ q, np.exp(K @ q), np.exp(K @ q) / np.exp(K @ q).sum()))  # no 1/sqrt(d)
    with pytest.raises(ExerciseCheckError, match="tuple"):
        check_ex_p1_01(lambda q, K: _steps(q, K)[2])
    # readex2: √n (the number of keys) for √d_k was only 'a missing or extra scale factor'
    with pytest.raises(ExerciseCheckError, match="the number of keys"):
        check_ex_p1_01(lambda q, K: _steps(q * np.sqrt(len(q)) / np.sqrt(len(K)), K))

    def stub(q, K):
        raise NotImplementedError

    with pytest.raises(ExerciseCheckError, match="NotImplementedError"):
        check_ex_p1_01(stub)


def test_ex01_wrong_sign_scores_named_downstream_too():
    """leftex left: with −k·q the exponentials and weights failed with no diagnosis (only the scores were named)."""
    with pytest.raises(ExerciseCheckError) as info:
        check_ex_p1_01(lambda q, K: _steps(-q, K))
    msg = str(info.value)
    assert "0 of 4 checks passed" not in msg and "1 of 4 checks passed" in msg  # the tuple check passes
    assert msg.count("wrong sign") == 3  # scores (generic), exponentials and weights (named)
    assert "exponentials inherit it" in msg and "weights inherit it" in msg


def test_ex01_exp_of_minus_right_scores_not_blamed_on_the_scores():
    """revex: right scores but exp(−s_j) was named 'the scores have the wrong sign (see the scaled-scores check)',
    though that check passed: the slip is the sign in the exponent, and the message now says so."""

    def minus_exp(q, K):
        s = K @ q / np.sqrt(len(q))
        e = np.exp(-s)
        return s, e, e / e.sum()

    with pytest.raises(ExerciseCheckError) as info:
        check_ex_p1_01(minus_exp)
    msg = str(info.value)
    assert "2 of 4 checks passed" in msg  # the tuple and the scores pass
    assert "see the scaled-scores check" not in msg and "inherit" not in msg
    assert "exp(−s_j) for exp(s_j)" in msg


def _attn(q, K, V):
    w = _steps(q, K)[2]
    return w, w @ V


def _hull(x, V):
    from scipy.optimize import linprog

    n = V.shape[0]
    res = linprog(np.zeros(n), A_eq=np.vstack([V.T, np.ones(n)]), b_eq=np.append(x, 1), bounds=[(0, None)] * n)
    return res.status == 0


def test_ex02():
    assert check_ex_p1_02(_attn, _hull)
    with pytest.raises(ExerciseCheckError, match="output"):
        check_ex_p1_02(lambda q, K, V: (_attn(q, K, V)[0], V.mean(0)), _hull)
    with pytest.raises(ExerciseCheckError, match="outside"):
        check_ex_p1_02(_attn, lambda x, V: True)  # accepts everything
    # a bounding-box test passed as a convex-hull test: every point it was given outside the hull was also
    # outside the values' bounding box
    box = lambda x, V: bool(np.all((x >= V.min(0) - 1e-9) & (x <= V.max(0) + 1e-9)))  # noqa: E731
    with pytest.raises(ExerciseCheckError, match="bounding-box"):
        check_ex_p1_02(_attn, box)
    # readex2: the output divided by n again was only 'a missing or extra scale factor'
    with pytest.raises(ExerciseCheckError, match="number of keys"):
        check_ex_p1_02(lambda q, K, V: (_attn(q, K, V)[0], _attn(q, K, V)[1] / len(K)), _hull)

    # leftex: a hull test without Σλ = 1 (the cone) or without λ ≥ 0 (the affine hull) was told 'a bounding-box
    # test' (the wrong mistake); unnormalised weights were only 'a missing or extra scale factor'
    def lp_hull(x, V, *, ones=True, nonneg=True):
        from scipy.optimize import linprog

        n = V.shape[0]
        A, b = (np.vstack([V.T, np.ones(n)]), np.append(x, 1)) if ones else (V.T, x)
        bounds = [(0, None) if nonneg else (None, None)] * n
        return linprog(np.zeros(n), A_eq=A, b_eq=b, bounds=bounds).status == 0

    with pytest.raises(ExerciseCheckError, match="need not sum to 1"):
        check_ex_p1_02(_attn, lambda x, V: lp_hull(x, V, ones=False))
    with pytest.raises(ExerciseCheckError, match="may be negative"):
        check_ex_p1_02(_attn, lambda x, V: lp_hull(x, V, nonneg=False))

    def unnormalised(q, K, V):
        s = K @ q / np.sqrt(len(q))
        w = np.exp(s - s.max())
        return w, w @ V

    with pytest.raises(ExerciseCheckError, match="shifted exponentials .* are not normalised"):
        check_ex_p1_02(unnormalised, _hull)


def _weights_from(scores):
    """attention_output whose weights are softmax(scores(q, K)) (numpy)."""

    def attention_output(q, K, V):
        s = scores(q, K, V)
        w = np.exp(s - s.max())
        w /= w.sum()
        return w, w @ V

    return attention_output


@pytest.mark.parametrize(
    "scores, named",
    [
        (lambda q, K, V: K @ q / len(q), "divided by d_k: the scale is 1/√d_k"),
        (lambda q, K, V: -K @ q / np.sqrt(len(q)), "softmax of −s_j: the scores q·k\\[j\\]/√d_k have the wrong sign"),
        (lambda q, K, V: K @ q / np.sqrt(V.shape[1]), "divided by √d_v with d_v = 2 the width of the values"),
    ],
)
def test_ex02_weight_slips_named_in_weights_and_output(scores, named):
    """exg (a student's slips): the weights divided by d_k, with the wrong sign or by √d_v got no diagnosis."""
    with pytest.raises(ExerciseCheckError) as info:
        check_ex_p1_02(_weights_from(scores), _hull)
    msg = str(info.value)
    assert "4 of 6 checks passed" in msg
    assert len(__import__("re").findall(rf"likely mistake: [^\n]*{named}", msg)) == 2  # weights and output


def test_ex02_strict_bounds_and_base_2_and_normalised_scores_named():
    """exg: a hull test with λ > 0 (rejects a vertex) got no diagnosis; in Exercise 1, 2**s_j for exp(s_j) and
    the scores normalised by their sum (not their exponentials) got none either."""
    from scipy.optimize import linprog

    def strict(x, V):
        n = V.shape[0]
        A, b = np.vstack([V.T, np.ones(n)]), np.append(x, 1)
        return linprog(np.zeros(n), A_eq=A, b_eq=b, bounds=[(1e-6, None)] * n).status == 0

    with pytest.raises(
        ExerciseCheckError,
        match="rejects the value vector V\\[0\\][^\n]*\n *likely mistake: "
        "coefficients required to be strictly positive",
    ):
        check_ex_p1_02(_attn, strict)

    def base2(q, K):
        s = K @ q / np.sqrt(len(q))
        e = 2.0**s
        return s, e, e / e.sum()

    def vertices_only(x, V):  # rejects every attention output (a wrong constraint would do the same)
        return any(np.allclose(x, v) for v in V)

    with pytest.raises(ExerciseCheckError, match="rejects the attention output[^\n]*\n *likely: a constraint is wrong"):
        check_ex_p1_02(_attn, vertices_only)

    with pytest.raises(ExerciseCheckError, match="powers of 2") as info:
        check_ex_p1_01(base2)
    assert "2 of 4 checks passed" in str(info.value)
    with pytest.raises(ExerciseCheckError, match="the scores s_j normalised by their sum, not the exponentials"):
        check_ex_p1_01(lambda q, K: (lambda s: (s, np.exp(s), s / s.sum()))(K @ q / np.sqrt(len(q))))


def test_ex03():
    torch = pytest.importorskip("torch")
    from nextword.data import markov_source
    from nextword.torch.models.lm import LMConfig, TinyLM
    from nextword.torch.training.token_lm import torch_threads, train_lm

    F = torch.nn.functional
    src = markov_source(4, 1, np.random.default_rng(0), concentration=0.5)
    windows = src.sample(16 * 12, np.random.default_rng(1)).reshape(16, 12)

    @torch.no_grad()
    def gen_loss(model, w):
        return float(
            torch.stack(
                [
                    F.cross_entropy(model(torch.from_numpy(w[:, :t]))[:, -1], torch.from_numpy(w[:, t]))
                    for t in range(1, w.shape[1])
                ]
            ).mean()
        )

    with torch_threads(1):
        causal = TinyLM(LMConfig(vocab_size=4, d_model=16, num_heads=2, num_layers=1, max_len=12), seed=0)
        with pytest.raises(ExerciseCheckError, match="WITHOUT the mask"):
            check_ex_p1_03(gen_loss, causal, windows, src.entropy_rate())
        leaky = TinyLM(LMConfig(vocab_size=4, d_model=16, num_heads=2, num_layers=1, max_len=12, causal=False), seed=0)
        train_lm(
            leaky,
            src.sample(4000, np.random.default_rng(2)),
            steps=120,
            batch_size=32,
            block_size=12,
            lr=1e-2,
            seed=0,
            progress=False,
        )
        assert check_ex_p1_03(gen_loss, leaky, windows, src.entropy_rate())

        @torch.no_grad()
        def teacher_forced(model, w):  # the wrong quantity: one pass over the whole window
            return float(
                F.cross_entropy(
                    model(torch.from_numpy(w[:, :-1])).reshape(-1, 4), torch.from_numpy(w[:, 1:]).reshape(-1)
                )
            )

        with pytest.raises(ExerciseCheckError, match="the teacher-forced loss \\(one pass over the whole window\\)"):
            check_ex_p1_03(teacher_forced, leaky, windows, src.entropy_rate())

        def per_window(model, w):  # written differently: one window and one prefix at a time, summed by hand
            total, count = 0.0, 0
            with torch.no_grad():
                for row in w:
                    for t in range(1, len(row)):
                        logits = model(torch.from_numpy(row[None, :t]))[0, -1].double()
                        total += float(torch.logsumexp(logits, 0) - logits[int(row[t])])
                        count += 1
            return total / count

        assert check_ex_p1_03(per_window, leaky, windows, src.entropy_rate())

        @torch.no_grad()
        def target_in_prefix(model, w):  # w[t] predicted from a pass over w[:t+1]
            return float(
                torch.stack(
                    [
                        F.cross_entropy(model(torch.from_numpy(w[:, : t + 1]))[:, -2], torch.from_numpy(w[:, t]))
                        for t in range(1, w.shape[1])
                    ]
                ).mean()
            )

        with pytest.raises(ExerciseCheckError, match="below the entropy rate .* the target is in the prefix"):
            check_ex_p1_03(target_in_prefix, leaky, windows, src.entropy_rate())

        # leftex: the typical off-by-one and reduction slips failed with no diagnosis (readex2 left the first)
        def positions(ts, *, at=-1, reduce=torch.mean):
            @torch.no_grad()
            def loss(model, w):
                nll = [
                    F.cross_entropy(
                        model(torch.from_numpy(w[:, :t]))[:, at], torch.from_numpy(w[:, t]), reduction="none"
                    )
                    for t in ts(w.shape[1])
                ]
                return float(reduce(torch.stack(nll)))

            return loss

        slips = {
            "the last position is skipped": positions(lambda L: range(1, L - 1)),
            "the first position is skipped": positions(lambda L: range(2, L)),
            "FIRST position": positions(lambda L: range(1, L), at=0),
            "the losses are summed": positions(lambda L: range(1, L), reduce=torch.sum),
            "bits": positions(lambda L: range(1, L), reduce=lambda x: x.mean() / np.log(2)),
            # r9ex: the sign and the mean probability were diagnosed as "the target is in the prefix" (both lie
            # below H), and the target two steps ahead failed with no diagnosis
            "the sign: a negative log-likelihood": positions(lambda L: range(1, L), reduce=lambda x: -x.mean()),
            "the mean probability of the next token": positions(
                lambda L: range(1, L), reduce=lambda x: torch.exp(-x).mean()
            ),
        }
        for message, wrong in slips.items():
            with pytest.raises(ExerciseCheckError, match=message):
                check_ex_p1_03(wrong, leaky, windows, src.entropy_rate())

        @torch.no_grad()
        def two_ahead(model, w):  # w[t + 1] predicted from w[:t]
            nll = [
                F.cross_entropy(model(torch.from_numpy(w[:, :t]))[:, -1], torch.from_numpy(w[:, t + 1]))
                for t in range(1, w.shape[1] - 1)
            ]
            return float(torch.stack(nll).mean())

        with pytest.raises(ExerciseCheckError, match="the target is two steps ahead"):
            check_ex_p1_03(two_ahead, leaky, windows, src.entropy_rate())


def _mi(ids, position):
    x, y = ids[:, position - 1], ids[:, -1]
    P = np.zeros((ids.max() + 1,) * 2)
    np.add.at(P, (x, y), 1.0)
    P /= P.sum()
    outer = P.sum(1, keepdims=True) @ P.sum(0, keepdims=True)
    nz = P > 0
    return float((P[nz] * np.log(P[nz] / outer[nz])).sum())


GOOD_PAIRS = [("would", "run", "syntactic"), ("code", "crash", "semantic"), ("finally", "rise", "discourse")]


def test_ex07():
    assert check_ex_p1_07(_mi, GOOD_PAIRS)
    with pytest.raises(ExerciseCheckError, match="no information"):
        check_ex_p1_07(_mi, [("engineers", "run", "syntactic")] + GOOD_PAIRS[1:])
    with pytest.raises(ExerciseCheckError, match="not semantic"):
        check_ex_p1_07(_mi, [GOOD_PAIRS[0], ("finally", "rise", "semantic"), ("code", "crash", "discourse")])
    with pytest.raises(ExerciseCheckError, match="never follows"):
        check_ex_p1_07(_mi, [GOOD_PAIRS[0], ("code", "rises", "semantic"), GOOD_PAIRS[2]])
    with pytest.raises(ExerciseCheckError, match="I\\(word"):
        check_ex_p1_07(lambda ids, p: 2 * _mi(ids, p) + 0.1, GOOD_PAIRS)


def test_ex07_plug_in_slips_named():
    """leftex: a mean over the joint table's cells, the joint entropy, and the marginals summed over the wrong
    axes (an infinite estimate) failed with no diagnosis."""

    def variant(kind):
        def mi(ids, position):
            x, y = ids[:, position - 1], ids[:, -1]
            P = np.zeros((ids.max() + 1,) * 2)
            np.add.at(P, (x, y), 1.0)
            P /= P.sum()
            nz = P > 0
            if kind == "entropy":
                return float(-(P[nz] * np.log(P[nz])).sum())
            px, py = (
                (P.sum(0)[:, None], P.sum(1)[None, :]) if kind == "swapped" else (P.sum(1)[:, None], P.sum(0)[None, :])
            )
            with np.errstate(divide="ignore"):
                terms = P[nz] * np.log(P[nz] / (px @ py)[nz])
            return float(terms.mean() if kind == "mean" else terms.sum())

        return mi

    for kind, named in (("mean", "a mean over the cells"), ("entropy", "the joint entropy"), ("swapped", "swapped")):
        with pytest.raises(ExerciseCheckError, match=named):
            check_ex_p1_07(variant(kind), GOOD_PAIRS)


def test_ex07_counts_conditional_and_target_column_named():
    """r9ex: unnormalised counts and log p(y|x) failed with only "never negative"; the second-to-last column used as
    the blank was told "an off-by-one column" (its estimate, near 0, matched an uninformative neighbour)."""

    def variant(kind):
        def mi(ids, position):
            x, y = ids[:, position - 1], ids[:, -2 if kind == "target" else -1]
            P = np.zeros((ids.max() + 1,) * 2)
            np.add.at(P, (x, y), 1.0)
            if kind != "counts":
                P /= P.sum()
            nz = P > 0
            px, py = P.sum(1, keepdims=True), P.sum(0, keepdims=True)
            outer = np.broadcast_to(px, P.shape) if kind == "conditional" else px @ py
            return float((P[nz] * np.log(P[nz] / outer[nz])).sum())

        return mi

    for kind, named in (
        ("counts", "holds counts"),
        ("conditional", "H\\(blank \\| word\\)"),
        ("target", "LAST column"),
    ):
        with pytest.raises(ExerciseCheckError, match=named):
            check_ex_p1_07(variant(kind), GOOD_PAIRS)


def test_ex10():
    sigma = sp.symbols("sigma", positive=True)

    def sim(d, s, n, rng):
        return float(np.einsum("nd,nd->n", s * rng.standard_normal((n, d)), s * rng.standard_normal((n, d))).var())

    assert check_ex_p1_10(lambda d: d * sigma**4, sim)
    with pytest.raises(ExerciseCheckError, match="variance_expression"):
        check_ex_p1_10(lambda d: d * sigma**2, sim)
    with pytest.raises(ExerciseCheckError, match="simulate_variance"):
        check_ex_p1_10(lambda d: d * sigma**4, lambda d, s, n, rng: sim(d, s, n, rng) / d)  # the scaled variance
    # readex2: the variance of the d products (not of their sum), and k left unscaled, were named as other slips
    with pytest.raises(ExerciseCheckError, match="one product"):
        check_ex_p1_10(
            lambda d: d * sigma**4,
            lambda d, s, n, rng: float((s * rng.standard_normal((n, d)) * s * rng.standard_normal((n, d))).var()),
        )
    # leftex: the standard deviation for the variance failed with no diagnosis
    with pytest.raises(ExerciseCheckError, match="the standard deviation"):
        check_ex_p1_10(
            lambda d: d * sigma**4,
            lambda d, s, n, rng: float(
                np.einsum("nd,nd->n", s * rng.standard_normal((n, d)), s * rng.standard_normal((n, d))).std()
            ),
        )
    with pytest.raises(ExerciseCheckError, match="only one of them"):
        check_ex_p1_10(
            lambda d: d * sigma**4,
            lambda d, s, n, rng: float(
                np.einsum("nd,nd->n", s * rng.standard_normal((n, d)), rng.standard_normal((n, d))).var()
            ),
        )


def _flops(T, d):
    r = 4 * T * d * d - 2 * d * d
    a = 8 * T * d * d + 4 * T * T * d
    return {"rnn": (r, 2 * r, T), "attention": (a, 2 * a, 1)}


def test_ex11():
    pytest.importorskip("torch")
    assert check_ex_p1_11(_flops)
    with pytest.raises(ExerciseCheckError, match="sequential steps"):
        check_ex_p1_11(lambda T, d: {**_flops(T, d), "attention": (*_flops(T, d)["attention"][:2], T)})
    with pytest.raises(ExerciseCheckError, match="forward FLOPs"):
        check_ex_p1_11(lambda T, d: {**_flops(T, d), "attention": (6 * T * d * d, 12 * T * d * d, 1)})  # no T^2 terms
    # readex2: one T×T product, or the output projection, left out failed undiagnosed
    with pytest.raises(ExerciseCheckError, match="one of the two T×T products"):
        check_ex_p1_11(lambda T, d: {**_flops(T, d), "attention": (8 * T * d * d + 2 * T * T * d, 1, 1)})
    with pytest.raises(ExerciseCheckError, match="output projection"):
        check_ex_p1_11(lambda T, d: {**_flops(T, d), "attention": (6 * T * d * d + 4 * T * T * d, 1, 1)})

    # r12b: multiply-adds forward, doubled for the backward pass, was told its backward "needs two products"
    # (it had them: the unit was the slip)
    def in_multiply_adds(T, d):
        return {k: (f // 2, f, s) for k, (f, _, s) in _flops(T, d).items()}

    with pytest.raises(ExerciseCheckError) as info:
        check_ex_p1_11(in_multiply_adds)
    assert "as in the forward count" in str(info.value) and "needs two products" not in str(info.value)
    with pytest.raises(ExerciseCheckError, match="needs two products"):  # a right forward, not doubled
        check_ex_p1_11(lambda T, d: {k: (f, f, s) for k, (f, _, s) in _flops(T, d).items()})


def test_ex10_sigma_squared_as_scale_and_q_dot_q_are_named_not_mistaken_for_other_slips():
    # ex10: at σ = 0.7 the checker called σ² passed as the std "one product's variance" (4σ⁸ ≈ σ⁴) and q·q
    # "d σ² instead of d σ⁴" (2σ⁴ ≈ σ²); sympy's Normal(…, sigma**2), q·q and reused names went unnamed, and a
    # one-element array crashed inside the checker
    sigma = sp.symbols("sigma", positive=True)

    def sim(d, s, n, rng, *, scale=lambda s: s, same=False):
        q = scale(s) * rng.standard_normal((n, d))
        k = q if same else scale(s) * rng.standard_normal((n, d))
        return float(np.einsum("nd,nd->n", q, k).var())

    with pytest.raises(ExerciseCheckError, match="takes the standard\\s+deviation σ as scale"):
        check_ex_p1_10(lambda d: d * sigma**4, lambda d, s, n, rng: sim(d, s, n, rng, scale=lambda s: s**2))
    with pytest.raises(ExerciseCheckError, match="Var\\(q·q\\)"):
        check_ex_p1_10(lambda d: d * sigma**4, lambda d, s, n, rng: sim(d, s, n, rng, same=True))
    assert check_ex_p1_10(lambda d: d * sigma**4, lambda d, s, n, rng: np.array([sim(d, s, n, rng)]))
    with pytest.raises(ExerciseCheckError, match="Normal\\(name, mean, std\\)"):
        check_ex_p1_10(lambda d: d * sigma**8, sim)
    with pytest.raises(ExerciseCheckError, match="Var\\(q·q\\)"):
        check_ex_p1_10(lambda d: 2 * d * sigma**4, sim)
    with pytest.raises(ExerciseCheckError, match="same name"):
        check_ex_p1_10(lambda d: d**2 * sigma**4, sim)


def test_ex10_the_sympy_symbol_inside_the_simulation_is_named():
    # ex10: the statement wrote simulate_variance(d, sigma, n, rng) while `sigma` is the notebook's sympy symbol;
    # using it in rng.normal crashed with "Cannot convert expression to float" and no diagnosis
    sigma = sp.symbols("sigma", positive=True)

    def sim(d, sigma_value, n, rng):
        return float(np.einsum("nd,nd->n", rng.normal(0, sigma, (n, d)), rng.normal(0, sigma, (n, d))).var())

    with pytest.raises(ExerciseCheckError, match="use its number argument sigma_value"):
        check_ex_p1_10(lambda d: d * sigma**4, sim)


def test_ex10_an_array_of_per_pair_or_per_coordinate_values_is_named_by_what_it_holds():
    # v10ex: n values (the dot products without .var(), or .var(axis=1)) and d values ((q * k).var(axis=0)) were
    # both called "the variance over the wrong axis?", which fits neither the missing .var() nor the missing sum
    sigma = sp.symbols("sigma", positive=True)

    def sim(d, s, n, rng, *, reduce):
        q, k = s * rng.standard_normal((n, d)), s * rng.standard_normal((n, d))
        return reduce(q * k)

    with pytest.raises(ExerciseCheckError, match=r"one value per pair: \.var\(\) missing"):
        check_ex_p1_10(lambda d: d * sigma**4, lambda d, s, n, rng: sim(d, s, n, rng, reduce=lambda p: p.sum(1)))
    with pytest.raises(ExerciseCheckError, match="one value per coordinate: the variance of each product"):
        check_ex_p1_10(lambda d: d * sigma**4, lambda d, s, n, rng: sim(d, s, n, rng, reduce=lambda p: p.var(0)))


def test_ex10_sigma_squared_in_one_of_q_k_and_the_swapped_axes_are_named():
    # r11a: σ² as the scale of only one of q, k (d σ⁶, symbolic and simulated), the sum over the n pairs with the
    # variance over the d coordinates (about n σ⁴ whatever d) and .var(axis=1).mean() ((d−1)/d σ⁴) all failed
    # with no diagnosis
    sigma = sp.symbols("sigma", positive=True)

    def sim(d, s, n, rng, *, q_scale=lambda s: s, shape=lambda n, d: (n, d), reduce=lambda p: p.sum(1).var()):
        q, k = q_scale(s) * rng.standard_normal(shape(n, d)), s * rng.standard_normal(shape(n, d))
        return float(reduce(q * k))

    with pytest.raises(ExerciseCheckError, match="d σ⁶: one of q, k got entries of variance σ⁴"):
        check_ex_p1_10(lambda d: d * sigma**4, lambda d, s, n, rng: sim(d, s, n, rng, q_scale=lambda s: s**2))
    with pytest.raises(ExerciseCheckError, match="d σ⁶: one of q, k got sigma\\*\\*2"):
        check_ex_p1_10(lambda d: d * sigma**6, sim)
    for swapped in ({"reduce": lambda p: p.sum(0).var()}, {"shape": lambda n, d: (d, n)}):
        with pytest.raises(ExerciseCheckError, match="the axes are swapped"):
            check_ex_p1_10(lambda d: d * sigma**4, lambda d, s, n, rng, kw=swapped: sim(d, s, n, rng, **kw))
    with pytest.raises(ExerciseCheckError, match=r"\(d−1\)/d · σ⁴: the variance across the d coordinates"):
        check_ex_p1_10(lambda d: d * sigma**4, lambda d, s, n, rng: sim(d, s, n, rng, reduce=lambda p: p.var(1).mean()))
