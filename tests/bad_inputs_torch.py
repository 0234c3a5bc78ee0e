"""The bad-input sweep of the torch path's public API (issue 48): the model, the embedding prior and its
margin, the training configuration, and checkpoint loading (a truncated, a foreign and a wrong-version file).

Same classification as :mod:`tests.bad_inputs` (named / raw / silent / documented / hang); every case is
one call with one bad argument among valid ones. ``tests/test_bad_inputs.py`` asserts that no case is raw,
silent or a hang. ``python -m tests.bad_inputs_torch [--list]`` prints the counts.
"""

from __future__ import annotations

import sys
from pathlib import Path

import torch

from nextword.torch.barrier import config as barrier_config
from nextword.torch.barrier import prior
from nextword.torch.barrier.train import build, load_checkpoint
from nextword.torch.models.gpt import SmallGPT, SmallGPTConfig
from nextword.torch.training import checkpoint
from tests.bad_inputs import Bad, Outcome, Spec, bad_count, bad_real, classify, optional

B, T, D, V = 2, 5, 4, 7


def _x() -> torch.Tensor:
    return torch.randn(B, T, D, generator=torch.Generator().manual_seed(0)) * 0.3


def _W() -> torch.Tensor:
    return torch.eye(D) * 0.1


def _tokens() -> torch.Tensor:
    return torch.arange(B * T).reshape(B, T) % V


def _E() -> torch.Tensor:
    return torch.randn(V, D, generator=torch.Generator().manual_seed(1)) * 0.3


def _gpt() -> SmallGPT:
    torch.manual_seed(0)
    return SmallGPT(SmallGPTConfig(vocab_size=V, max_len=8, num_layers=1, num_heads=2, d_model=8))


def bad_tensor(shape: tuple[int, ...]) -> list[Bad]:
    """Bad float tensors for an argument of ``shape``: NaN, inf, a values near float32's overflow in 2-D,
    one axis more or fewer, an empty batch, integers, None, a list."""
    nan, inf = torch.ones(shape), torch.ones(shape)
    nan.view(-1)[0], inf.view(-1)[-1] = float("nan"), float("inf")
    return [
        Bad(nan, tag="nan"),
        Bad(inf, tag="inf"),
        Bad(torch.full(shape, 3e38), ok=True, tag="near overflow"),  # a named error or a finite result
        Bad(torch.ones(shape + (2,)), tag="ndim+1"),
        Bad(torch.ones(shape[1:]), tag="ndim-1"),
        Bad(torch.ones((0,) + shape[1:]), tag="empty"),
        Bad(torch.ones(shape, dtype=torch.int64), tag="int64"),
        Bad(None),
        Bad([[1.0, 2.0]], tag="list"),
    ]


def bad_positions(T: int) -> list[Bad]:
    """Bad ``positions`` ``(B, P)`` (None is the documented "all"): the batch does not match, 0 or T
    (position 0 has no past), floats, a 1-D array."""
    return optional(
        [
            Bad(torch.ones(B + 1, 2, dtype=torch.int64), tag="batch B+1"),
            Bad(torch.zeros(B, 2, dtype=torch.int64), tag="position 0"),
            Bad(torch.full((B, 2), T, dtype=torch.int64), tag="position T"),
            Bad(torch.ones(B, 2), tag="float"),
            Bad(torch.ones(2, dtype=torch.int64), tag="1-D"),
            Bad("1,2"),
        ]
    )


def bad_ids(shape: tuple[int, int], upper: int) -> list[Bad]:
    return [
        Bad(torch.full(shape, upper), tag="id >= V"),
        Bad(torch.full(shape, -1), tag="negative id"),
        Bad(torch.ones(shape), tag="float ids"),
        Bad(torch.ones(shape[1], dtype=torch.int64), tag="1-D"),
        Bad(torch.ones((shape[0], 9), dtype=torch.int64), tag="longer than max_len"),
        Bad(None),
    ]


def bad_method(valid: str) -> list[Bad]:
    return [Bad("nope", tag="unknown name"), Bad(None), Bad(3), Bad(valid.upper(), tag="upper case")]


def _files(tmp: Path) -> dict[str, Path]:
    """A good checkpoint and three bad ones: truncated, foreign (a torch file of something else, a text
    file), and a wrong version (the right keys, a configuration from a version with other fields)."""
    tmp.mkdir(parents=True, exist_ok=True)
    cfg = barrier_config.preset("tiny")
    gpt, pri = build(cfg, V, torch.device("cpu"))
    good = tmp / "good.pt"
    torch.save({"model": gpt.state_dict(), "prior": pri.state_dict(), "config": cfg.to_dict(), "vocab_size": V}, good)
    data = good.read_bytes()
    (tmp / "truncated.pt").write_bytes(data[: len(data) // 2])
    torch.save({"weights": torch.ones(3)}, tmp / "foreign.pt")
    (tmp / "text.pt").write_text("not a checkpoint\n")
    newer = cfg.to_dict() | {"a_setting_from_another_version": 1}
    torch.save({"model": gpt.state_dict(), "prior": pri.state_dict(), "config": newer, "vocab_size": V}, tmp / "v2.pt")
    wrong_shapes = {"model": gpt.state_dict(), "prior": pri.state_dict(), "config": cfg.to_dict(), "vocab_size": V + 3}
    torch.save(wrong_shapes, tmp / "shapes.pt")
    (tmp / "folder").mkdir(exist_ok=True)
    return {p.stem: p for p in tmp.iterdir()}


def specs(tmp: Path) -> list[Spec]:
    f = _files(tmp / "ckpt")
    bad_files = [
        Bad(f["truncated"], tag="truncated", names="truncated"),
        Bad(f["foreign"], tag="foreign torch file", names="foreign"),
        Bad(f["text"], tag="text file", names="text"),
        Bad(f["v2"], tag="wrong version", names="version"),
        Bad(f["shapes"], tag="other vocabulary", names="vocab_size"),
        Bad(tmp / "missing.pt", tag="missing", names="missing"),
        Bad(f["folder"], tag="folder without checkpoint", names="folder"),
        Bad(None, names="path"),
        Bad(3, names="path"),
    ]
    return [
        Spec(
            "SmallGPTConfig",
            SmallGPTConfig,
            dict(vocab_size=V, max_len=8, num_layers=1, num_heads=2, d_model=8),
            {
                "vocab_size": optional(bad_count(1)),  # None: the corpus decides
                "max_len": bad_count(1),
                "num_layers": bad_count(1),
                "num_heads": bad_count(1) + [Bad(3, tag="does not divide d_model")],
                "d_model": bad_count(1),
                "dropout": bad_real(0.0, inclusive=True, hi=1.0),
                "init_std": bad_real(0.0, inclusive=True),
            },
        ),
        Spec(
            "SmallGPT.forward",
            lambda idx, targets: _gpt()(idx, targets),
            dict(idx=_tokens(), targets=_tokens()),
            {
                "idx": bad_ids((B, T), V),
                "targets": optional(
                    bad_ids((B, T), V)[:3] + [Bad(torch.ones(B, T + 1, dtype=torch.int64), tag="shape")]
                ),
            },
        ),
        Spec(
            "sample_positions",
            prior.sample_positions,
            dict(B=B, T=T, k=2),
            {"B": bad_count(1), "T": bad_count(2), "k": bad_count(1) + [Bad(T, tag="k = T")]},
        ),
        Spec(
            "attention_rows",
            prior.attention_rows,
            dict(x=_x(), W=_W(), positions=None),
            {"x": bad_tensor((B, T, D)), "W": bad_tensor((D, D)), "positions": bad_positions(T)},
        ),
        Spec(
            "covariances",
            prior.covariances,
            dict(x=_x(), W=_W(), positions=None, method="direct"),
            {"positions": bad_positions(T), "method": bad_method("direct")},
        ),
        Spec(
            "margin_loss",
            prior.margin_loss,
            dict(x=_x(), W=_W(), positions=None, method="direct"),
            {
                "x": bad_tensor((B, T, D)),
                "W": bad_tensor((D, D)),
                "positions": bad_positions(T),
                "method": bad_method("direct"),
            },
        ),
        Spec(
            "margin_loss_tokens",
            prior.margin_loss_tokens,
            dict(tokens=_tokens(), embedding=_E(), W=_W(), positions=None, method="sylvester"),
            {
                "tokens": bad_ids((B, T), V)[:4] + [Bad(None)],
                "embedding": bad_tensor((V, D)),
                "W": bad_tensor((D, D)),
                "positions": bad_positions(T),
                "method": bad_method("sylvester"),
            },
        ),
        Spec(
            "EmbeddingPrior",
            prior.EmbeddingPrior,
            dict(d=D),
            {"d": bad_count(1), "init_std": bad_real(0.0, inclusive=True)},  # 0: W = 0, uniform attention
        ),
        Spec(
            "preset",
            barrier_config.preset,
            dict(name="tiny"),
            {"name": [Bad("huge", tag="unknown preset"), Bad(None), Bad(3)]},
        ),
        Spec(
            "preset overrides",
            lambda **kw: barrier_config.preset("tiny", **kw),
            dict(lambda_margin=0.05, steps=3, batch_size=4, lr=1e-3, margin_method="sylvester"),
            {  # None keeps the preset's value (documented)
                "lambda_margin": optional(bad_real(0.0, inclusive=True)),
                "steps": optional(bad_count(1)),
                "batch_size": optional(bad_count(1)),
                "lr": optional(bad_real(0.0)),
                "margin_method": optional(bad_method("sylvester")),
            },
        ),
        Spec(  # the generic reader returns any readable torch file; load_checkpoint judges its contents
            "read_checkpoint",
            checkpoint.read_checkpoint,
            dict(where=f["good"]),
            {
                "where": [
                    Bad(
                        b.value,
                        ok=b.tag in ("foreign torch file", "wrong version", "other vocabulary"),
                        tag=b.tag,
                        names="where" if b.names == "path" else b.names,
                    )
                    for b in bad_files
                ]
            },
        ),
        Spec("load_checkpoint", load_checkpoint, dict(path=f["good"]), {"path": bad_files}),
    ]


def sweep(tmp: Path) -> list[Outcome]:
    outs = []
    for s in specs(tmp):
        kind, detail = classify(lambda: s.fn(**s.base), "", True)
        if kind != "documented":
            raise AssertionError(f"the valid baseline call of {s.name} failed: {kind} {detail}")
        for arg, bads in s.bad.items():
            for b in bads:
                kw = dict(s.base, **{arg: b.value})
                kind, detail = classify(lambda: s.fn(**kw), arg, b.ok, b.names)
                outs.append(Outcome(s.name, arg, b.tag or repr(b.value)[:40], kind, detail))
    return outs


if __name__ == "__main__":
    import collections
    import tempfile

    outs = sweep(Path(tempfile.mkdtemp(prefix="nextword-torch-bad-")))
    print(len(outs), "cases:", dict(collections.Counter(o.kind for o in outs)))
    for o in outs:
        if o.kind not in ("named", "documented") or "--list" in sys.argv:
            print(f"{o.kind:10s} {o.spec}({o.arg}={o.value}): {o.detail}")
