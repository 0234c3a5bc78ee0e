# %% [markdown]
# # Part 2: checking the paper, a second pass (Baptista, Stuart, Tran)
#
# A reference page, not a lesson. The lessons of this part check the paper's mathematics where they teach
# it ([2.1](01_tokenisation_bpe.ipynb) to [2.9](09_examples_appendix.ipynb)). This page is a second reader's
# pass over the numbers the paper quotes about published models and data: the model its §7 illustrations
# use, and the sizes of training corpora in Remark 4.2. Each section names the item, computes what the
# published sources allow and asserts it. A claim that fails is recorded in the
# [errata ledger](../ERRATA.md); every verdict is in the [coverage map](../coverage.yaml).

# %%
print("Part 2, second pass: sizes quoted in §7 and Remark 4.2")

# %% [markdown]
# ## §7: "the Qwen-2.5 model with 3B parameters", from its published configuration
#
# §7 runs its illustrations with "the Qwen-2.5 model with 3B parameters" (§7.5 names it
# Qwen2.5-3B-Instruct). Its `config.json` on Hugging Face (`Qwen/Qwen2.5-3B-Instruct`, as copied with its
# `_name_or_path` by `osllmai-community/Qwen2.5-3B-Instruct`; the base model `Qwen/Qwen2.5-3B` has the same
# sizes) gives the architecture: `hidden_size` 2048, `num_hidden_layers` 36, `num_attention_heads` 16,
# `num_key_value_heads` 2, `intermediate_size` 11008, `vocab_size` 151936, `tie_word_embeddings` true.
# The parameters of a Qwen2 decoder (biases on the query, key and value projections only; two RMS norms per
# layer and one at the end; a gated MLP of three matrices; the output layer shares the embedding table):

# %%
cfg = {"hidden": 2048, "layers": 36, "heads": 16, "kv_heads": 2, "mlp": 11008, "vocab": 151936}
head_dim = cfg["hidden"] // cfg["heads"]
kv_width = cfg["kv_heads"] * head_dim
attention = (cfg["hidden"] * cfg["hidden"] + cfg["hidden"]  # query projection and its bias
             + 2 * (cfg["hidden"] * kv_width + kv_width)  # key and value projections and biases
             + cfg["hidden"] * cfg["hidden"])  # output projection, no bias
mlp = 3 * cfg["hidden"] * cfg["mlp"]  # gate, up and down projections
per_layer = attention + mlp + 2 * cfg["hidden"]  # plus two RMS norm weights
embedding = cfg["vocab"] * cfg["hidden"]  # shared with the output layer
total = cfg["layers"] * per_layer + embedding + cfg["hidden"]  # plus the final norm
print(f"per layer {per_layer:,}; embedding table {embedding:,}; total {total:,} = {total / 1e9:.2f} billion")
print(f"without the embedding table: {(total - embedding) / 1e9:.2f} billion")
assert 2.9e9 < total < 3.2e9

# %% [markdown]
# The published configuration has about 3.09 billion parameters (2.77 billion outside the embedding table):
# "3B" holds.

# %% [markdown]
# ## Remark 4.2: the sizes of training corpora, against the cited works
#
# Remark 4.2 quotes three sizes: LLaMA-3 was trained on "about 15 trillion multilingual tokens" [44], LLaMA-2
# on "2 trillion tokens" [95], and the human-generated text on the web "contains a median of 3100 trillion
# tokens", to be used up "between 2026 and 2032" [98]. The models' cards say "over 15 trillion tokens"
# (Llama 3) and "2 trillion tokens" (Llama 2). Reference [98] (Villalobos et al., "Will we run out of data?")
# estimates the stock of public human-generated text at about 300 trillion tokens, with a 90% interval from
# 100 to 1000 trillion, fully used between 2026 and 2032.

# %%
quoted = {"Llama 3": 15e12, "Llama 2": 2e12, "stock of human text (median)": 3100e12}
published = {"Llama 3": 15e12, "Llama 2": 2e12, "stock of human text (median)": 300e12}
stock_interval = (100e12, 1000e12)  # [98]: 90% interval
for name in quoted:
    print(f"{name:30s} quoted {quoted[name] / 1e12:6,.0f} trillion, published {published[name] / 1e12:5,.0f} trillion, "
          f"ratio {quoted[name] / published[name]:.2f}")
print(f"the quoted median is {quoted['stock of human text (median)'] / stock_interval[1]:.1f} times the upper end "
      f"of [98]'s 90% interval")
assert quoted["Llama 3"] == published["Llama 3"] and quoted["Llama 2"] == published["Llama 2"]
assert quoted["stock of human text (median)"] > 3 * stock_interval[1]

# %% [markdown]
# The two models' training-corpus sizes are as published. The stock of text is not: 3100 trillion tokens
# is 10.33 times the cited estimate and 3.1 times the top of its 90% interval: an order of magnitude too
# large. The years 2026–2032 are the cited ones. Recorded in the ledger (row "Remark 4.2, the stock of
# human-generated text").
