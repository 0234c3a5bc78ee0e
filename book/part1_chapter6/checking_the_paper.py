# %% [markdown]
# # Part 1: checking the chapter, a second pass (Chapter 6)
#
# A reference page, not a lesson. The lessons of this part check the chapter where they teach it
# ([6.1](6_1_parallel_attention.ipynb) to [6.8](6_8_ablations.ipynb)); this page is a second
# reader's pass over what the chapter says about other sources: the published models it names and what it
# attributes to the original transformer paper (Vaswani et al., 2017, §3.5). Each section names the item,
# computes what can be computed and asserts it. A claim that fails is recorded in the
# [errata ledger](../ERRATA.md); every verdict is in the [coverage map](../coverage.yaml).

# %%
import numpy as np

from nextword.positions import rope_frequencies, rope_rotation_matrix, sinusoidal_encoding

print("sinusoidal table of 4 positions x 8 dimensions:", sinusoidal_encoding(4, 8).shape)

# %% [markdown]
# ## §6.5: "the base 10000 was empirically determined" by Vaswani et al.
#
# §6.5 says that "the choice of base frequency 10000 was empirically determined in the original transformer
# paper by Vaswani et al. through experimentation on machine translation tasks with typical sequence lengths
# around 100-200 tokens". The cited paper (§3.5, "Positional Encoding") does not report such an experiment.
# It gives the base without a reason of its own, says that the wavelengths then "form a geometric
# progression from 2π to 10000 · 2π", motivates the sinusoid by the hope that the model can attend by
# relative positions, and reports one experiment on positions: replacing the sinusoid by learned embeddings,
# with nearly identical results (its Table 3, row (E)); it keeps the sinusoid because it "may allow the
# model to extrapolate" to longer sequences than those seen in training (the claim
# [6.5](6_5_positional_encoding.ipynb) tests). What its formula implies for the base it chose, at
# its model width d_model = 512:

# %%
d_model, base = 512, 10000.0  # Vaswani et al.'s base model and base
omegas = base ** (-2 * np.arange(d_model // 2) / d_model)  # ω_m of the pair (2m, 2m+1) of PE, m = 0..255
assert np.allclose(sinusoidal_encoding(2, d_model)[1, 0::2], np.sin(omegas), atol=1e-12)  # PE(1, 2m) = sin(ω_m)
wavelengths = 2 * np.pi / omegas  # positions per full turn of pair m
ratios = wavelengths[1:] / wavelengths[:-1]
print(f"{len(wavelengths)} wavelengths from {wavelengths[0]:.4f} (= 2π) to {wavelengths[-1]:,.0f} positions")
print(f"constant ratio between neighbours: {bool(np.allclose(ratios, ratios[0]))}, {ratios[0]:.6f} = base^(2/d_model)")
print(f"the longest wavelength is {wavelengths[-1] / 200:,.0f} times a 200-token sentence")
assert np.isclose(wavelengths[0], 2 * np.pi) and np.allclose(ratios, base ** (2 / d_model))
assert wavelengths[-1] / 200 > 100  # the scale the base sets has nothing to do with 100-200-token inputs

# %% [markdown]
# The formula gives the geometric progression from 2π that the cited paper describes; it ends just below
# the paper's "10000 · 2π", an end point reached only as $d_{\text{model}}\to\infty$ (the exponent stops at
# $(d_{\text{model}}-2)/d_{\text{model}}$, the same slip [6.5](6_5_positional_encoding.ipynb) notes in the
# chapter). Its longest wavelength, 60,611 positions, is hundreds of times the 100–200
# tokens the chapter mentions: nothing in the choice is tuned to those lengths, and the paper reports no
# experiment on the base. The attribution is not supported by the cited source; recorded in the ledger
# (row "§6.5, the base 10000 of the sinusoidal encoding").

# %% [markdown]
# ## §6.5: RoPE "in LLaMA, PaLM, and GPT-NeoX", against published configurations
#
# §6.5 says that RoPE "has become popular in recent large language models including LLaMA, PaLM, and
# GPT-NeoX" and, later, that such models use it "combined with techniques like position interpolation for
# even longer contexts". The models' configurations on Hugging Face say how they encode positions. GPT-NeoX
# (`EleutherAI/gpt-neox-20b`, as copied with its `_name_or_path` by several repositories, e.g.
# `Dahoas/gptneox-sft-static`) prints `rotary_pct: 0.25`, `rotary_emb_base: 10000`, `hidden_size: 6144`,
# `num_attention_heads: 64`; LLaMA (`meta-llama/Llama-3.2-1B`, duplicated by `Emm9625/Llama-3.2-1B-chatml`)
# prints `rope_theta: 500000.0`, `head_dim: 64` and a `rope_scaling` of type `llama3` with `factor: 32.0`
# from `original_max_position_embeddings: 8192`. PaLM has no public configuration.

# %%
neox = {"hidden_size": 6144, "num_attention_heads": 64, "rotary_pct": 0.25, "rotary_emb_base": 10000.0}
llama = {"head_dim": 64, "rope_theta": 500000.0, "factor": 32.0, "original_max_position_embeddings": 8192}
neox_head = neox["hidden_size"] // neox["num_attention_heads"]
neox_rotated = int(neox["rotary_pct"] * neox_head)
print(f"GPT-NeoX-20B: head width {neox_head}, rotated coordinates per head {neox_rotated} "
      f"({neox['rotary_pct']:.0%}); the other {neox_head - neox_rotated} carry no position")

# a partial rotation still gives scores that depend on the offset only: rotate 24 of 96 coordinates
rng = np.random.default_rng(6)
q, k = rng.normal(size=neox_head), rng.normal(size=neox_head)


def partial_rope(x, position):
    """RoPE on the first `neox_rotated` coordinates of x (96,), the rest unchanged (GPT-NeoX's rotary_pct)."""
    R = rope_rotation_matrix(position, neox_rotated, base=neox["rotary_emb_base"])
    return np.concatenate([R @ x[:neox_rotated], x[neox_rotated:]])


scores = [partial_rope(q, i) @ partial_rope(k, i - 3) for i in (3, 10, 50)]  # offset 3 at three places
print("scores at offset 3, positions 3, 10, 50:", np.round(scores, 6).tolist())
assert np.allclose(scores, scores[0], atol=1e-9)

longest = {name: 2 * np.pi / rope_frequencies(64, b)[-1] for name, b in
           (("base 10000 (the book's default)", 10000.0), ("Llama 3.2, rope_theta", llama["rope_theta"]))}
print("longest RoPE wavelength for a head of width 64:", {n: f"{w:,.0f}" for n, w in longest.items()})
print(f"Llama 3.2's rope_scaling factor x original_max_position_embeddings: "
      f"{llama['factor'] * llama['original_max_position_embeddings']:,.0f} (a product, not its context length)")
stretch = longest["Llama 3.2, rope_theta"] / longest["base 10000 (the book's default)"]
print(f"ratio of the two longest wavelengths: {stretch:.1f}")
assert stretch > 40

# %% [markdown]
# Both public configurations use rotary embeddings, and Llama 3.2's `rope_scaling` is the kind of
# extension to longer contexts the chapter mentions (type `llama3`, factor 32 over an original 8,192
# positions). The line printed above multiplies the two; that product is not the model's context: the
# `llama3` rule divides the low frequencies by the factor, keeps the high ones and blends the band between
# (by `low_freq_factor` and `high_freq_factor`), and the published configuration gives its
# own maximum length in `max_position_embeddings`, which this page does not check.
# Two details go beyond the chapter's description. GPT-NeoX rotates only a quarter of each head's
# coordinates (24 of 96), where the chapter describes the query and key vectors as rotated; for given
# contents the scores still depend on the positions only through the offset (asserted above). LLaMA 3.2
# (the chapter names no version; this is the one checked) uses a base of 500,000; the chapter gives RoPE
# no base, and the book's `rope_frequencies` uses the sinusoidal table's 10,000 by default. The larger
# base makes the longest wavelength 44.2 times longer. PaLM's use of RoPE is stated in its paper but has no public
# configuration to check here.
