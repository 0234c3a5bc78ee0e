"""Dynamics §6.2/§8.2 design toy: hand-written gradients against finite differences and the library head."""

import numpy as np
import pytest

from nextword.theory.dynamics import HeadParams, head_gradients
from nextword.theory.dynamics.design import (
    DesignConfig,
    design_forward_backward,
    group_key_cosines,
    retrieval_task,
    train_design,
)

FIELDS = ("W_Q", "W_K", "W_V", "W_O", "b")


def _setup(seed=0):
    rng = np.random.default_rng(seed)
    task = retrieval_task(3, 4, n_seq=3, rng=rng)
    params = HeadParams.init(7, 4, 4, 4, rng=rng, scale=0.5)
    return task, params, rng


@pytest.mark.parametrize("value_norm", [False, True])
@pytest.mark.parametrize("dropout", [0.0, 0.3])
def test_gradients_match_finite_differences(value_norm, dropout):
    task, params, rng = _setup()
    keep = (rng.random((3, task.X.shape[1], task.X.shape[1])) >= dropout).astype(float) if dropout else None
    st = design_forward_backward(params, task.X, task.y, value_norm=value_norm, keep=keep, dropout=dropout)
    h = 1e-6
    for name in FIELDS:
        W = getattr(params, name)
        fd = np.zeros_like(W)
        for idx in np.ndindex(W.shape):
            E = np.zeros_like(W)
            E[idx] = h
            plus = HeadParams(**{**{f: getattr(params, f) for f in FIELDS}, name: W + E})
            minus = HeadParams(**{**{f: getattr(params, f) for f in FIELDS}, name: W - E})
            fd[idx] = (
                design_forward_backward(plus, task.X, task.y, value_norm=value_norm, keep=keep, dropout=dropout).loss
                - design_forward_backward(minus, task.X, task.y, value_norm=value_norm, keep=keep, dropout=dropout).loss
            ) / (2 * h)
        np.testing.assert_allclose(st.grads[name], fd, atol=1e-8, err_msg=name)


def test_plain_head_agrees_with_library_head_gradients():
    task, params, _ = _setup(1)
    st = design_forward_backward(params, task.X, task.y)
    ref = head_gradients(params, task.X, task.y, reduction="mean")
    assert abs(st.loss - ref.loss) < 1e-12
    for name in FIELDS:
        np.testing.assert_allclose(st.grads[name], getattr(ref, name), atol=1e-12)


def test_training_learns_the_routing_and_keys_separate():
    task, params, rng = _setup(2)
    run = train_design(task, params, DesignConfig(steps=150, lr=1.0), rng=rng)
    assert run.losses[-1] < 0.5 * run.losses[0]
    assert run.key_cos[-1] < run.key_cos[0]


def test_bad_input_is_named():
    task, params, rng = _setup()
    with pytest.raises(ValueError, match="dropout"):
        DesignConfig(dropout=1.0)
    with pytest.raises(ValueError, match="X"):
        design_forward_backward(params, task.X[0], task.y)
    with pytest.raises(ValueError, match="keep"):
        design_forward_backward(params, task.X, task.y, keep=np.ones((1, 2, 2)), dropout=0.1)
    with pytest.raises(ValueError, match="n_groups"):
        retrieval_task(1, 3, n_seq=2, rng=rng)
    assert group_key_cosines(np.eye(3), 3).tolist() == [0.0, 0.0, 0.0]
