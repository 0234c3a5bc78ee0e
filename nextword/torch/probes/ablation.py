"""Ablations and length extrapolation for the torch :class:`~nextword.torch.models.lm.TinyLM` (Chapter 6).

Measurement helpers behind §6.5's Fig. 6.28 (positional variants at longer lengths) and
Exercise 12 (remove the mask, the positions, all heads but one, or the residuals):

* :func:`token_nll` — teacher-forced per-token losses ``(N, L-1)`` of sequences ``(N, L)``,
  optionally with heads switched off (the probe of :func:`nextword.chapter6.probing.head_ablation_effects`).
* :func:`prefix_nll` — the *honest* per-token losses: the prediction of token ``t+1`` sees only
  tokens ``0..t`` (one forward pass per prefix). Equal to :func:`token_nll` for a causal model;
  for a model trained without the mask it exposes the leak (Exercise 3/12).
* :func:`position_losses` — mean loss at each position of windows of length ``L`` cut from a
  stream; the curve of Fig. 6.28 (NaN where a learned table has no row).
* :data:`ABLATIONS`, :func:`ablated_config`, :func:`with_config` — the four ablations as config
  changes, for retraining (``ablated_config``) or applied to trained weights (``with_config``).

torch is imported lazily, so importing this module is cheap.

>>> from nextword.torch.models.lm import LMConfig
>>> ablated_config(LMConfig(vocab_size=5, d_model=8, num_heads=2, num_layers=1, max_len=8), "no mask").causal
False
"""

from __future__ import annotations

import dataclasses
from typing import TYPE_CHECKING, Any

import numpy as np

from nextword._validate import check_positive_int

if TYPE_CHECKING:  # pragma: no cover
    from nextword.torch.models.lm import LMConfig, TinyLM

__all__ = ["ABLATIONS", "ablated_config", "with_config", "token_nll", "prefix_nll", "position_losses"]

#: Exercise 12's ablations as :class:`~nextword.torch.models.lm.LMConfig` changes.
ABLATIONS: dict[str, dict[str, Any]] = {
    "no mask": {"causal": False},
    "no positions": {"positional": "none"},
    "single head": {"num_heads": 1},
    "no residual": {"residual": False},
}


def ablated_config(config: "LMConfig", name: str) -> "LMConfig":
    """``config`` with the ablation ``name`` (a key of :data:`ABLATIONS`, or ``"baseline"``) applied."""
    if name == "baseline":
        return config
    if name not in ABLATIONS:
        raise ValueError(f"name must be 'baseline' or one of {list(ABLATIONS)}, got {name!r}")
    return dataclasses.replace(config, **ABLATIONS[name])


def with_config(model: "TinyLM", **changes: Any) -> "TinyLM":
    """A new model with ``model``'s trained weights and a changed config (test-time ablation).

    E.g. ``with_config(m, causal=False)`` lets a model trained with the mask see the future;
    ``with_config(m, positional="none")`` drops its positional encoding (a learned table is simply
    not loaded). Changes that alter parameter shapes (``num_heads`` excepted: it only regroups
    the columns of ``W_qkv``) raise.
    """
    from nextword.torch.models.lm import TinyLM

    cfg = dataclasses.replace(model.config, **changes)
    new = TinyLM(cfg, seed=0)
    sd = dict(model.state_dict())
    if cfg.positional != "learned":
        sd.pop("pos_emb", None)
    mine = new.state_dict()
    bad = sorted(set(mine) ^ set(sd)) + [k for k in mine if k in sd and mine[k].shape != sd[k].shape]
    if bad:
        raise ValueError(f"changes {changes} alter the parameters ({bad[:4]}...); retrain instead")
    new.load_state_dict(sd)
    new.eval()
    return new


def _ids(ids: object) -> np.ndarray:
    x = np.asarray(ids)
    if x.ndim != 2 or x.dtype.kind not in "iu" or x.shape[1] < 2:
        raise ValueError(f"ids must be integer token ids of shape (N, L) with L >= 2, got {x.shape} {x.dtype}")
    return x.astype(np.int64)


def token_nll(model: "TinyLM", ids: object, *, head_mask: object = None, batch_size: int = 128) -> np.ndarray:
    """Teacher-forced losses ``(N, L-1)`` in nats: entry ``[n, t]`` is ``−log p(ids[n, t+1] | model on ids[n, :-1])``.

    One forward pass over ``ids[:, :-1]`` per batch, so a non-causal model may look ahead;
    ``head_mask (num_layers, num_heads)`` switches heads off (0) as in ``TinyLM.forward``.
    """
    import torch
    import torch.nn.functional as F

    from nextword.torch.training.token_lm import torch_threads

    x = _ids(ids)
    batch_size = check_positive_int(batch_size, "batch_size")
    out = np.empty((x.shape[0], x.shape[1] - 1))
    model.eval()
    with torch.no_grad(), torch_threads(1):
        for i in range(0, x.shape[0], batch_size):
            chunk = torch.from_numpy(x[i : i + batch_size])  # (B, L)
            logits = model(chunk[:, :-1], head_mask=head_mask)  # (B, L-1, V)
            nll = F.cross_entropy(logits.transpose(1, 2), chunk[:, 1:], reduction="none")  # (B, L-1)
            out[i : i + batch_size] = nll.double().numpy()
    return out


def prefix_nll(model: "TinyLM", ids: object, *, batch_size: int = 128) -> np.ndarray:
    """Honest losses ``(N, L-1)``: ``[n, t]`` predicts ``ids[n, t+1]`` from the model run on ``ids[n, :t+1]`` only.

    This is how generation uses the model (Fig. 6.17): the future does not exist yet. Costs
    ``L-1`` forward passes; for a causal model it equals :func:`token_nll` (up to rounding).
    """
    import torch
    import torch.nn.functional as F

    from nextword.torch.training.token_lm import torch_threads

    x = _ids(ids)
    batch_size = check_positive_int(batch_size, "batch_size")
    N, L = x.shape
    out = np.empty((N, L - 1))
    model.eval()
    with torch.no_grad(), torch_threads(1):
        for i in range(0, N, batch_size):
            chunk = torch.from_numpy(x[i : i + batch_size])  # (B, L)
            for t in range(L - 1):
                last = model(chunk[:, : t + 1])[:, -1]  # (B, V): sees tokens 0..t only
                out[i : i + batch_size, t] = F.cross_entropy(last, chunk[:, t + 1], reduction="none").double().numpy()
    return out


def position_losses(model: "TinyLM", stream: object, length: int, *, num_windows: int = 64) -> np.ndarray:
    """Mean teacher-forced loss at each position of ``num_windows`` windows of ``length`` targets.

    Windows of ``length + 1`` tokens are cut consecutively from the 1-D ``stream`` (no overlap),
    so position ``t`` of the result (shape ``(length,)``) is the loss of predicting token ``t+1``
    from ``t+1`` tokens of context. For a model with a learned table shorter than ``length`` the
    result is all NaN: there are no embeddings for the later positions (§6.5).
    """
    s = np.asarray(stream)
    length = check_positive_int(length, "length")
    num_windows = check_positive_int(num_windows, "num_windows")
    if s.ndim != 1 or s.dtype.kind not in "iu":
        raise ValueError(f"stream must be a 1-D integer array, got {s.shape} {s.dtype}")
    if s.size < num_windows * (length + 1):
        raise ValueError(f"stream has {s.size} tokens, need num_windows * (length + 1) = {num_windows * (length + 1)}")
    c = model.config
    if c.positional == "learned" and length > c.max_len:
        return np.full(length, np.nan)
    windows = s[: num_windows * (length + 1)].reshape(num_windows, length + 1)  # (W, length+1)
    return token_nll(model, windows).mean(axis=0)
