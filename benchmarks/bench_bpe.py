"""Byte-level BPE: training / encoding / decoding speed and compression, against references.

Usage::

    .venv/bin/python benchmarks/bench_bpe.py                 # ~2-3 min on 2 busy cores
    .venv/bin/python benchmarks/bench_bpe.py --full          # slow references on the whole corpus (~40+ min)

Prints CPU seconds (``time.process_time``, all threads of this process; medians over
``--repeats`` runs) next to each reference and the ratio reference / ours, all from this one run.
References (every one run here; no number is copied from elsewhere):

* "minbpe-style": minbpe's O(merges × n) trainer (recount every pair after each merge; ``max`` over a
  dict) as :func:`nextword.tokenizers.trainer.reference_train` writes it — minbpe is not on PyPI. It is run on a ``--prefix-kb`` prefix by
  default (the full runs take ~10 min without split and ~30 min with the GPT-4 split), and ours
  is timed on the same prefix for the ratio. The merges of both are checked to be identical.
* HF ``tokenizers`` (Rust, GPT-2 split, ByteLevel alphabet), if importable; our ``tie_break="hf"``
  must reproduce its merge list exactly (checked here on the whole corpus).
* ``tiktoken`` built from our merges (Rust), if importable, for encode/decode speed.
The last block ("goals") prints the ratios of ``benchmarks/targets.py``, all measured in this run:
encode throughput / tiktoken's (GPT-4 split; warm = the piece cache filled by an earlier call,
cold = a fresh tokenizer's first call; building the tokenizer is timed apart, as tiktoken's is not
timed), decode throughput from a Python list and from an int64 array / tiktoken's, and training
speed / HF tokenizers' — ours and the references run interleaved (a, b, a, b, ...), medians, with
the 1-minute load average, since the CPU may be shared (ratios are robust to load, absolute
seconds are not). ``--quick`` skips the slow minbpe-style references; ``--targets FILE`` appends
the goals' rows to FILE for ``make bench``'s table.

The corpus is tiny Shakespeare, found through ``nextword.data.find_data_file`` and read (gunzipped)
with ``nextword.data.read_data_text``.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import time
from collections.abc import Callable

import numpy as np

from nextword.tokenizers import bytes_to_unicode
from nextword.data import SHA256, find_data_file, read_data_text
from nextword.tokenizers import SPLIT_PATTERNS, BPETokenizer
from nextword.tokenizers.trainer import reference_train


def cpu(fn: Callable[[], object], repeats: int) -> tuple[float, object]:
    """Median CPU seconds of ``fn`` over ``repeats`` runs, and its last result."""
    times, out = [], None
    for _ in range(repeats):
        t = time.process_time()
        out = fn()
        times.append(time.process_time() - t)
    return statistics.median(times), out


def interleaved(fns: dict[str, Callable[[], object]], repeats: int) -> dict[str, float]:
    """Median CPU seconds of each function, the runs interleaved (a, b, a, b, ...) after one warm-up each."""
    for fn in fns.values():
        fn()
    times: dict[str, list[float]] = {name: [] for name in fns}
    for _ in range(repeats):
        for name, fn in fns.items():
            t = time.process_time()
            fn()
            times[name].append(time.process_time() - t)
    return {name: statistics.median(ts) for name, ts in times.items()}


def hf_train(text: str, vocab_size: int):
    """HF tokenizers BPE with the GPT-2 split (ByteLevel pre-tokenizer, full byte alphabet)."""
    from tokenizers import Tokenizer, models, pre_tokenizers, trainers

    tk = Tokenizer(models.BPE())
    tk.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=True)
    trainer = trainers.BpeTrainer(
        vocab_size=vocab_size,
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        special_tokens=[],
        show_progress=False,
    )
    tk.train_from_iterator([text], trainer=trainer)
    return tk


def hf_merge_bytes(tk) -> list[tuple[bytes, bytes]]:
    u2b = {c: b for b, c in bytes_to_unicode().items()}
    merges = json.loads(tk.to_str())["model"]["merges"]
    return [
        tuple(bytes(u2b[ch] for ch in part) for part in (m.split(" ") if isinstance(m, str) else m)) for m in merges
    ]


def row(label: str, ours: float, ref: float | None, ref_label: str, note: str = "") -> None:
    ratio = f"{ref / ours:8.1f}x" if ref is not None and ours > 0 else "       -"
    ref_s = f"{ref:9.3f}" if ref is not None else "        -"
    print(f"{label:<44} {ours:9.3f} {ref_s}  {ratio}  {ref_label} {note}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--vocab", type=int, default=4096, help="vocabulary size (4096 = 3,840 merges)")
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--prefix-kb", type=int, default=100, help="prefix for the slow no-split reference")
    ap.add_argument("--split-prefix-kb", type=int, default=25, help="prefix for the slow GPT-4-split reference")
    ap.add_argument("--full", action="store_true", help="run the slow references on the whole corpus")
    ap.add_argument("--quick", action="store_true", help="skip the slow minbpe-style references")
    ap.add_argument("--targets", default=None, help="append the goals' rows to this file (make bench)")
    ap.add_argument(
        "--corpus-kb",
        type=int,
        default=None,
        help="use only the first N KB of the corpus (a smoke test: tests/test_readme_commands.py)",
    )
    args = ap.parse_args()

    name = "tinyshakespeare/input.txt"  # packaged gzipped: read_data_text gunzips it and checks its digest
    text = read_data_text(find_data_file(name), sha256=SHA256[name])
    if args.corpus_kb is not None:
        text = text.encode("utf-8")[: args.corpus_kb * 1000].decode("utf-8", errors="ignore")
    nbytes = len(text.encode("utf-8"))
    merges = args.vocab - 256
    print(
        f"tiny Shakespeare: {nbytes:,} bytes; vocab {args.vocab} ({merges} merges); "
        f"CPU s = time.process_time medians of {args.repeats}"
    )
    print(f"{'task':<44} {'ours':>9} {'reference':>9}  {'ratio':>8}  reference")

    # --- training, no split ------------------------------------------------------------------
    t_raw, tok_raw = cpu(lambda: BPETokenizer.train(text, args.vocab), args.repeats)
    row("train, no split, full corpus", t_raw, None, "")
    n = nbytes if args.full else args.prefix_kb * 1000
    prefix = text.encode("utf-8")[:n].decode("utf-8", errors="ignore")
    if not args.quick:
        t_ours, tok_p = cpu(lambda: BPETokenizer.train(prefix, args.vocab), args.repeats)
        t_ref, ref_merges = cpu(lambda: reference_train([prefix.encode()], merges), 1)
        same = tok_p.merge_list() == ref_merges
        row(
            f"train, no split, first {n // 1000} KB",
            t_ours,
            t_ref,
            "minbpe-style (nextword.tokenizers.trainer.reference_train), measured",
            f"[merges identical: {same}]",
        )

    # --- training, GPT-4 split -----------------------------------------------------------------
    t_g4, tok_g4 = cpu(lambda: BPETokenizer.train(text, args.vocab, pattern="gpt4"), args.repeats)
    try:
        t_hf, hf = cpu(lambda: hf_train(text, args.vocab), args.repeats)
    except ImportError:
        t_hf, hf = None, None
    row("train, GPT-4 split, full corpus", t_g4, t_hf, "HF tokenizers (Rust, GPT-2 split), measured")
    t_hfmode, tok_hf = cpu(lambda: BPETokenizer.train(text, args.vocab, pattern="gpt2", tie_break="hf"), args.repeats)
    note = ""
    if hf is not None:
        ours_b = [(tok_hf.token_bytes(a), tok_hf.token_bytes(b)) for a, b in tok_hf.merges]
        note = f"[merge list identical to HF: {ours_b == hf_merge_bytes(hf)}]"
    row("train, GPT-2 split, tie_break='hf'", t_hfmode, t_hf, "HF tokenizers, measured", note)
    n = nbytes if args.full else args.split_prefix_kb * 1000
    prefix = text.encode("utf-8")[:n].decode("utf-8", errors="ignore")
    import regex

    if not args.quick:
        t_ours, tok_p = cpu(lambda: BPETokenizer.train(prefix, args.vocab, pattern="gpt4"), args.repeats)
        chunks = [c.encode() for c in regex.findall(SPLIT_PATTERNS["gpt4"], prefix)]
        t_ref, ref_merges = cpu(lambda: reference_train(chunks, merges), 1)
        row(
            f"train, GPT-4 split, first {n // 1000} KB",
            t_ours,
            t_ref,
            "minbpe-style Regex (nextword.tokenizers.trainer.reference_train), measured",
            f"[merges identical: {tok_p.merge_list() == ref_merges}]",
        )

    # --- encoding / decoding -------------------------------------------------------------------
    mb = nbytes / 1e6

    def fresh_tokenizers(n: int):
        """``n`` tokenizers with empty caches, built before the clock starts."""
        return iter([BPETokenizer(tok_g4.merge_list(), pattern="gpt4") for _ in range(n)])

    t_build, _ = cpu(lambda: BPETokenizer(tok_g4.merge_list(), pattern="gpt4"), args.repeats)
    fresh = fresh_tokenizers(args.repeats)
    t_cold, ids = cpu(lambda: next(fresh).encode(text), args.repeats)
    t_warm, _ = cpu(lambda: tok_g4.encode(text), args.repeats)
    enc = None
    try:
        import tiktoken

        ranks = {tok_g4.token_bytes(i): i for i in range(256 + len(tok_g4.merges))}
        enc = tiktoken.Encoding(name="bench", pat_str=tok_g4.pattern, mergeable_ranks=ranks, special_tokens={})
        t_tt, tt_ids = cpu(lambda: enc.encode_ordinary(text), args.repeats)
        same = f"[ids identical to tiktoken: {tt_ids == ids}]"
    except ImportError:
        t_tt, same = None, ""
    row("build the tokenizer from its merges (s)", t_build, None, "")
    row("encode, GPT-4 split, cold cache (s)", t_cold, t_tt, "tiktoken from our merges", same)
    row("encode, GPT-4 split, warm cache (s)", t_warm, t_tt, "tiktoken from our merges")
    print(f"{'':<44} encode throughput: {mb / t_cold:.1f} MB/s cold, {mb / t_warm:.1f} MB/s warm")
    t_raw_enc, _ = cpu(lambda: tok_raw.encode(text), 1)
    row("encode, no split (one 1.1 MB chunk) (s)", t_raw_enc, None, "")
    arr = np.asarray(ids, dtype=np.int64)
    t_dec, out = cpu(lambda: tok_g4.decode(arr), max(args.repeats, 5))
    assert out == text
    t_dec_list, _ = cpu(lambda: tok_g4.decode(ids), max(args.repeats, 5))
    t_tt_dec = cpu(lambda: enc.decode(ids), max(args.repeats, 5))[0] if enc is not None else None
    row("decode, int64 array (s)", t_dec, t_tt_dec, "tiktoken decode (list)")
    row("decode, list of int (s)", t_dec_list, t_tt_dec, "tiktoken decode (list)")
    print(f"{'':<44} decode throughput: {mb / t_dec:.0f} MB/s from an array, {mb / t_dec_list:.0f} MB/s from a list")

    # --- the goals (benchmarks/targets.py), as ratios from this run ------------------------------
    # Ours and the references alternate (a, b, c, a, b, c, ...), so a change in the machine's load
    # falls on all of them alike; each figure is a median of CPU seconds.
    import sys
    from pathlib import Path

    sys.path.insert(0, str(Path(__file__).resolve().parent))
    from targets import record

    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    print(f"\ngoals (this run, interleaved medians; 1-min load average {load:.1f} on {os.cpu_count()} CPUs)")
    reps = max(args.repeats, 9)
    fresh = fresh_tokenizers(reps + 1)
    fns: dict[str, Callable[[], object]] = {
        "encode warm": lambda: tok_g4.encode(text),
        "encode cold": lambda: next(fresh).encode(text),
        "regex split": lambda: tok_g4._split.findall(text),
        "decode list": lambda: tok_g4.decode(ids),
        "decode array": lambda: tok_g4.decode(arr),
    }
    if enc is not None:
        fns["tiktoken encode"] = lambda: enc.encode_ordinary(text)
        fns["tiktoken decode"] = lambda: enc.decode(ids)
    med = interleaved(fns, reps)
    size = f"{mb:.2f} MB" if args.corpus_kb is None else f"the first {args.corpus_kb} KB"
    if enc is not None:
        tt, td = med["tiktoken encode"], med["tiktoken decode"]
        print(
            f"  encode: ours {mb / med['encode warm']:.1f} MB/s warm, {mb / med['encode cold']:.1f} MB/s cold, "
            f"tiktoken {mb / tt:.1f} MB/s; the split alone {mb / med['regex split']:.1f} MB/s"
        )
        print(
            f"  decode: ours {mb / med['decode list']:.0f} MB/s from a list, {mb / med['decode array']:.0f} MB/s "
            f"from an int64 array, tiktoken {mb / td:.0f} MB/s"
        )
        record(
            args.targets,
            "decode_list",
            td / med["decode list"],
            what=f"BPE decode from a Python list ({size}, vocab {args.vocab})",
        )
        record(args.targets, "decode_array", td / med["decode array"], what=f"BPE decode from an int64 array ({size})")
        record(
            args.targets,
            "encode_cold",
            tt / med["encode cold"],
            what=f"BPE encode, GPT-4 split, fresh tokenizer ({size})",
            detail=f"warm (pieces cached by an earlier call): {tt / med['encode warm']:.2f}x; building the "
            f"tokenizer from its merges: {t_build:.3f} s, not included",
        )
    else:
        print("  tiktoken is not installed: the encode and decode goals are not measured")
    fns = {
        "train no split": lambda: BPETokenizer.train(text, args.vocab),
        "train gpt4": lambda: BPETokenizer.train(text, args.vocab, pattern="gpt4"),
    }
    if t_hf is not None:
        fns["hf"] = lambda: hf_train(text, args.vocab)
    med = interleaved(fns, args.repeats)
    print(f"  train, no split, {merges} merges: {med['train no split']:.2f} s")
    if t_hf is not None:
        print(
            f"  train, {merges} merges: HF tokenizers (GPT-2 split) {med['hf']:.2f} s, ours (GPT-4 split) {med['train gpt4']:.2f} s"
        )
        record(
            args.targets,
            "bpe_train",
            med["hf"] / med["train gpt4"],
            what=f"BPE training, {merges} merges, GPT-4 split ({size})",
        )
    else:
        print("  HF tokenizers is not installed: the training goal is not measured")

    # --- compression at vocab 1024 ------------------------------------------------------------
    for pattern in (None, "gpt4"):
        tok = BPETokenizer.train(text, 1024, pattern=pattern)
        bpt = nbytes / len(tok.encode(text))
        print(f"compression at vocab 1024, pattern={pattern!s:<5}: {bpt:.3f} bytes/token")


if __name__ == "__main__":
    main()
