"""The torch models: SmallGPT (§7.1, ``gpt``), the Chapter 6 TinyLM (``lm``) and the recurrent baseline (``rnn``)."""
