"""Torch char data: vocabulary with <unk>, deterministic epoch batches, DDP shards, WikiText fixture, fetch."""

from __future__ import annotations

import doctest
import hashlib
import zipfile

import pytest

torch = pytest.importorskip("torch")

from nextword.torch.training import data as D  # noqa: E402
from nextword.torch.training import fetch  # noqa: E402


def test_doctests():
    assert doctest.testmod(D).failed == 0


def test_epoch_batches_are_shifted_windows_and_deterministic():
    ids = torch.arange(1000)
    x, y = D.epoch_batch(ids, block_size=8, batch_size=4, seed=1, epoch=2, step_in_epoch=3)
    assert x.shape == y.shape == (4, 8)
    assert torch.equal(y, x + 1)
    x2, _ = D.epoch_batch(ids, block_size=8, batch_size=4, seed=1, epoch=2, step_in_epoch=3)
    assert torch.equal(x, x2)
    x3, _ = D.epoch_batch(ids, block_size=8, batch_size=4, seed=1, epoch=3, step_in_epoch=3)
    assert not torch.equal(x, x3)


def test_epoch_windows_do_not_overlap_within_an_epoch():
    ids = torch.arange(500)
    spe = D.steps_per_epoch(500, 8, 4)
    starts = torch.cat(
        [D.epoch_batch(ids, block_size=8, batch_size=4, seed=0, epoch=0, step_in_epoch=s)[0][:, 0] for s in range(spe)]
    )
    assert len(set(starts.tolist())) == starts.numel()
    assert torch.all((starts[:, None] - starts[None, :]).abs()[~torch.eye(starts.numel(), dtype=bool)] >= 8)


def test_distributed_shards_make_up_the_global_batch():
    ids = torch.arange(3000)
    full, _ = D.epoch_batch(ids, block_size=16, batch_size=6, seed=0, epoch=0, step_in_epoch=1)
    parts = [
        D.epoch_batch(ids, block_size=16, batch_size=6, seed=0, epoch=0, step_in_epoch=1, rank=r, world_size=3)[0]
        for r in range(3)
    ]
    assert torch.equal(torch.cat(parts), full)


def test_eval_windows_cover_split_without_overlap():
    x, y = D.eval_windows(torch.arange(41), block_size=10)
    assert x.shape == (4, 10) and torch.equal(x[:, 0], torch.tensor([0, 10, 20, 30]))
    assert torch.equal(y, x + 1)
    xs, _ = D.eval_windows(torch.arange(401), block_size=10, max_windows=5)
    assert xs.shape[0] == 5


def _write_wikitext(directory):
    directory.mkdir(parents=True)
    train = " \n = Valkyria Chronicles III = \n \n Senjō no Valkyria 3 : Unrecorded Chronicles . \n"
    valid = " \n = Homarus gammarus = \n \n Homarus gammarus , known as the European lobster ... \n"
    test = " \n = Robert Boulter = \n \n Robert Boulter is an English actor . \n"
    for name, text in (("wiki.train.raw", train), ("wiki.valid.raw", valid), ("wiki.test.raw", test)):
        (directory / name).write_text(text, encoding="utf-8")
    return train, valid


def test_wikitext_fixture_parses_with_unknown_val_characters(tmp_path):
    train, valid = _write_wikitext(tmp_path / "wikitext-2-raw")
    data = D.load_char_data(str(tmp_path / "wikitext-2-raw"))
    assert data.name == "wikitext2"
    assert data.vocab.chars == "".join(sorted(set(train))) and data.vocab.vocab_size == len(set(train)) + 1
    assert data.train.numel() == len(train) and data.val.numel() == len(valid)
    unseen = sum(c not in set(train) for c in valid)
    assert unseen > 0 and int((data.val == 0).sum()) == unseen
    assert "ō" in data.vocab.chars  # unicode kept


def test_vocab_is_the_library_char_tokenizer_with_tensors_at_the_boundary(tmp_path):
    from nextword.tokenizers import CharTokenizer

    v = CharTokenizer.train("hello")
    ids = D.encode(v, "holez")
    assert ids.dtype == torch.long and ids.tolist() == [2, 4, 3, 1, 0]  # sorted "ehlo" at 1..4, unseen → 0
    assert v.decode(ids.numpy()) == "hole\ufffd"
    (tmp_path / "empty.txt").write_text("")
    with pytest.raises(ValueError):
        D.load_char_data(str(tmp_path / "empty.txt"))


def test_fetch_checks_sha256_with_local_archive(tmp_path):
    src = tmp_path / "src"
    _write_wikitext(src / "wikitext-2-raw")
    archive = tmp_path / "wikitext-2-raw-v1.zip"
    with zipfile.ZipFile(archive, "w") as z:
        for f in (src / "wikitext-2-raw").iterdir():
            z.write(f, f"wikitext-2-raw/{f.name}")
    digest = hashlib.sha256(archive.read_bytes()).hexdigest()
    assert fetch.sha256_of(archive) == digest
    with pytest.raises(fetch.FetchError, match="sha256"):
        fetch.fetch_wikitext2(tmp_path / "bad", urls=(archive.as_uri(),), sha256="0" * 64)
    out = fetch.fetch_wikitext2(tmp_path / "good", urls=(archive.as_uri(),), sha256=digest)
    assert sorted(p.name for p in out.iterdir()) == ["wiki.test.raw", "wiki.train.raw", "wiki.valid.raw"]
    assert D.load_char_data(str(out)).train.numel() > 0


def test_tiny_shakespeare_ids_are_those_the_saved_runs_were_trained_with():
    """The whole corpus gets the ids of the former torch vocabulary (``<unk>`` = 0, then the sorted
    characters of the training split), so every saved run keeps its numbers."""
    data = D.load_char_data("shakespeare")
    from nextword.data import load_corpus

    corpus = load_corpus("shakespeare")
    stoi = {c: i + 1 for i, c in enumerate(sorted(set(corpus.train)))}
    for split, ids in ((corpus.train, data.train), (corpus.val, data.val)):
        assert ids.dtype == torch.long
        assert ids.tolist() == [stoi.get(c, 0) for c in split]
