"""Chapter 6 probes and ablations of trained TinyLMs: ``ablation`` (token and prefix losses),
``layer_probe`` (Figs. 6.24, 6.30) and ``fig628`` (positional encodings at a longer length, Fig. 6.28)."""
