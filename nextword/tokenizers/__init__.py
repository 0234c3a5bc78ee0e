"""Tokenisation (formulation paper §2): byte-level BPE (``bpe`` the tokenizer, ``trainer`` the merge
learner, also over symbol sequences, ``formats`` its JSON and minbpe files) and ``characters``.
"""

from nextword.tokenizers.characters import (
    CharTokenizer,
)
from nextword.tokenizers.trainer import (
    BPEResult,
    learn_bpe,
    train_merges,
    hf_byte_rank,
    bytes_to_unicode,
)
from nextword.tokenizers.bpe import (
    BPETokenizer,
    SPLIT_PATTERNS,
)
from nextword.tokenizers.formats import (
    FORMAT,
    VERSION,
    BPEFile,
    save_json,
    load_json,
    save_minbpe,
    load_minbpe,
)

__all__ = [
    "CharTokenizer",
    "BPEResult",
    "learn_bpe",
    "train_merges",
    "hf_byte_rank",
    "bytes_to_unicode",
    "BPETokenizer",
    "SPLIT_PATTERNS",
    "FORMAT",
    "VERSION",
    "BPEFile",
    "save_json",
    "load_json",
    "save_minbpe",
    "load_minbpe",
]
