"""SVFlow's torch parts (Part 5): ``hybrid`` training of a 2-D Gaussian SVFlow and its measurements
(``hybrid_runs``), the prefix-shuffling ``probe`` of a causal LM, and the trained character ``lm``."""
