# %% [markdown]
# # 4.8 Robustness to embedding noise (§7.3, Fig. 7.5)
#
# *Source: Agarwal et al., §7.3 (Fig. 7.5 and the table beside it).*
#
# The paper's probe: after training, add Gaussian noise $\mathcal N(0,\sigma^2I)$ to the embedding
# layer, sweep $\sigma\in[0,0.5]$ in 11 steps, average each level over 5 draws, and report the
# validation BPC and the **degradation ratio** $\mathrm{BPC}(\sigma)/\mathrm{BPC}(0)$. It reports
# that the margin-trained model degrades less (2.46× vs. 2.58× at $\sigma=0.5$).
#
# We run the same probe (`nextword.torch.robustness.noise_curve`) on the two models of
# [barrier_training](barrier_training.ipynb) — reusing them if that notebook ran first, training
# them otherwise. Implementation details that matter for reading the numbers:
#
# * the noise is added to the **token embeddings** (before the learned positions are added; the
#   sum is the same as adding it after);
# * each draw $k$ uses one standard-normal tensor $z_k$ for every $\sigma$ (common random numbers),
#   so $\sigma\mapsto\mathrm{BPC}$ is smooth and the two arms see the same noise;
# * $\sigma$ is in **absolute** units, so its effect depends on the scale of the embeddings. We
#   therefore also run the probe at noise levels relative to each model's embedding RMS.
#
# | | paper | default here | `FULL=1` |
# |---|---|---|---|
# | models | §7.1 SmallGPT on WikiText-2 | $d=64$, $T=64$, 200 steps, tiny Shakespeare | as the paper |
# | σ grid × draws | 11 × 5 | 11 × 3 | 11 × 5 |
# | validation text | full split | 48 windows of 64 chars | full split |

# %%
import os

import matplotlib.pyplot as plt
import sympy as sp
import sympy.stats as ss
import torch

from nextword.booktools.plotting import use_book_style
from nextword.torch.book import (PAPER_FIG75, RESULTS_DIR, experiment_config, runs_dir,
                                 saved_results)
from nextword.torch.data import eval_windows, load_char_data
from nextword.torch.robustness import evaluate_bpc, noise_curve
from nextword.torch.sweep import lambda_dir
from nextword.torch.train import CKPT, load_checkpoint, save_json, train_or_load

FULL = os.environ.get("FULL", "0") == "1"
torch.set_num_threads(1)
use_book_style()

# %% [markdown]
# ## 1. What a given σ means
#
# For an embedding row $x$ and noise $\sigma z$, $z\sim\mathcal N(0,I_d)$, the expected
# signal-to-noise power per coordinate is $\mathrm{RMS}(x)^2/\mathbb E[(\sigma z_i)^2]$. Sympy:

# %%
sigma_s, rms = sp.symbols("sigma RMS", positive=True)
z = ss.Normal("z", 0, 1)
noise_power = sp.simplify(ss.E((sigma_s * z) ** 2))
snr = sp.simplify(rms**2 / noise_power)
print("E[(sigma z)^2] =", noise_power, "   SNR per coordinate =", snr)
assert sp.simplify(noise_power - sigma_s**2) == 0

# %% [markdown]
# So the same absolute $\sigma$ is a milder perturbation for a model with larger embeddings. Any
# training change that rescales the embeddings changes the probe's difficulty; comparing arms at
# equal $\sigma/\mathrm{RMS}(E)$ removes that confound.
#
# ## 2. The two models and their noise curves

# %%
root = runs_dir(FULL)
cfg = {lam: experiment_config(FULL, lambda_margin=lam) for lam in (0.0, 0.05)}
res = {lam: train_or_load(cfg[lam], lambda_dir(root, lam), progress=False, robustness=True)
       for lam in (0.0, 0.05)}
if FULL:                                   # keep the paper-sized noise curves with the book
    RESULTS_DIR.mkdir(exist_ok=True)
    for lam in res:
        save_json(res[lam], RESULTS_DIR / f"barrier_{'ce' if lam == 0 else 'margin'}_full.json")
data = load_char_data(cfg[0.0].data, max_chars=cfg[0.0].max_chars)
vx, vy = eval_windows(data.val, block_size=cfg[0.0].block_size, max_windows=cfg[0.0].eval_windows)
models = {lam: load_checkpoint(lambda_dir(root, lam) / CKPT)[0] for lam in (0.0, 0.05)}
name = {0.0: "CE only", 0.05: "CE + margin"}

nc = {lam: res[lam]["noise_curve"] for lam in res}
sig = nc[0.0]["sigmas"]
print(f"{'sigma':>6s} | {'BPC CE':>7s} {'BPC margin':>10s} | {'deg CE':>6s} {'deg margin':>10s}")
for i, s in enumerate(sig):
    print(f"{s:6.2f} | {nc[0.0]['bpc_mean'][i]:7.3f} {nc[0.05]['bpc_mean'][i]:10.3f} | "
          f"{nc[0.0]['degradation'][i]:6.3f} {nc[0.05]['degradation'][i]:10.3f}")
print("paper at sigma = 0.5: BPC CE {:.3f}, margin {:.3f}; degradation CE {:.2f}x, margin {:.2f}x".format(
    PAPER_FIG75["ce"]["bpc_sigma_0.5"], PAPER_FIG75["margin"]["bpc_sigma_0.5"],
    PAPER_FIG75["ce"]["degradation"], PAPER_FIG75["margin"]["degradation"]))

# %% [markdown]
# **Checks.** The σ = 0 point is the clean validation BPC recorded at the end of training; the
# degradation ratio starts at exactly 1; noise hurts (BPC at σ = 0.5 is higher than clean); and a
# noisy evaluation is reproducible from its seed.

# %%
for lam in res:
    c = nc[lam]
    assert abs(c["bpc_mean"][0] - res[lam]["final_val_bpc"]) < 1e-9
    assert c["degradation"][0] == 1.0 and c["bpc_mean"][-1] > c["bpc_mean"][0]
g1, g2 = (torch.Generator().manual_seed(5) for _ in range(2))
b1 = evaluate_bpc(models[0.0], vx, vy, noise_std=0.25, generator=g1)
b2 = evaluate_bpc(models[0.0], vx, vy, noise_std=0.25, generator=g2)
assert b1 == b2
print(f"reproducible noisy evaluation at sigma = 0.25: {b1:.4f} == {b2:.4f}")

# %% [markdown]
# ## 3. Equal *relative* noise
#
# The embedding RMS of the two models, and the probe repeated at $\sigma = \rho\cdot\mathrm{RMS}(E)$
# for relative levels $\rho$:

# %%
emb_rms = {lam: float(models[lam].wte.weight.detach().pow(2).mean().sqrt()) for lam in models}
for lam in models:
    print(f"{name[lam]:12s} embedding RMS = {emb_rms[lam]:.4f}   sigma = 0.5 is {0.5 / emb_rms[lam]:.2f} x RMS")
rho = [0.0, 1.0, 2.0, 3.0, 4.0, 5.0, 6.0]
rel = {lam: noise_curve(models[lam], vx, vy, sigmas=[r * emb_rms[lam] for r in rho],
                        draws=cfg[lam].noise_draws, seed=cfg[lam].seed) for lam in models}
print(f"{'rho':>4s} | {'deg CE':>6s} {'deg margin':>10s}")
for i, r in enumerate(rho):
    print(f"{r:4.1f} | {rel[0.0]['degradation'][i]:6.3f} {rel[0.05]['degradation'][i]:10.3f}")

# %%
fig, axes = plt.subplots(1, 3, figsize=(12, 3.6))
for lam, color in ((0.0, "C0"), (0.05, "C2")):
    c = nc[lam]
    axes[0].errorbar(c["sigmas"], c["bpc_mean"], yerr=c["bpc_std"], fmt="o-", color=color,
                     capsize=2, label=name[lam])
    axes[1].plot(c["sigmas"], c["degradation"], "o-", color=color, label=name[lam])
    axes[2].plot(rho, rel[lam]["degradation"], "o-", color=color, label=name[lam])
axes[0].set(title="(a) BPC under embedding noise", xlabel=r"$\sigma$", ylabel="bits / char")
axes[1].set(title=r"(b) degradation BPC($\sigma$)/BPC(0)", xlabel=r"$\sigma$")
axes[2].set(title="(c) degradation at equal relative noise", xlabel=r"$\sigma$ / RMS(E)")
axes[0].legend()
plt.tight_layout()
plt.show()

# %% [markdown]
# **Figure (cf. Fig. 7.5).** (a) Validation BPC against absolute noise (error bars: standard deviation
# over the draws); (b) the degradation ratio; (c) the degradation ratio at equal noise relative to
# each model's embedding scale.
#
# ## 4. What this run shows, and what it does not

# %%
d_abs = nc[0.0]["degradation"][-1] - nc[0.05]["degradation"][-1]
d_rel = rel[0.0]["degradation"][-1] - rel[0.05]["degradation"][-1]
spread = max(nc[0.0]["bpc_std"][-1], nc[0.05]["bpc_std"][-1]) / nc[0.0]["bpc_mean"][0]
print(f"degradation(CE) - degradation(margin) at sigma = 0.5: {d_abs:+.3f}   (paper: "
      f"{PAPER_FIG75['ce']['degradation'] - PAPER_FIG75['margin']['degradation']:+.2f})")
print(f"same at rho = 6 (relative noise):                    {d_rel:+.3f}")
print(f"draw-to-draw spread of the ratio at sigma = 0.5:     {spread:.3f}")
assert abs(d_abs) < 0.1 and abs(d_rel) < 0.1

# %% [markdown]
# In the default run the two arms degrade alike: the difference in the degradation ratio at
# $\sigma=0.5$ is a few thousandths, of the order of the draw-to-draw spread, and it stays that small
# at equal relative noise. We do **not** reproduce the paper's 12-point advantage — but neither does
# this small run refute it: the models are 200 steps old, the margin penalty carries weight
# $0.05\times\lvert\mathcal L_{\rm margin}\rvert\approx0.07$ nats, and the corpus is different.
# Differences we expect from scale alone: the absolute BPC levels, and the size of the degradation
# (our clean BPC is higher, so the ratios are smaller). What is not a matter of scale is the
# confound of §1: whenever a penalty changes the embedding scale, a fixed absolute σ is a
# different perturbation for the two arms, so a fair robustness comparison needs panel (c) as well
# as panel (b). With `FULL=1` on a GPU the notebook runs the paper's configuration; saved full runs
# under `book/results/` are shown below.

# %%
full = {lam: saved_results(f"barrier_{'ce' if lam == 0 else 'margin'}_full") for lam in (0.0, 0.05)}
if all(r and "noise_curve" in r for r in full.values()):
    print(f"saved full run: {full[0.0]['hardware']}, {full[0.0]['date']}")
    for lam, r in full.items():
        c = r["noise_curve"]
        print(f"  {name[lam]:12s} clean {c['bpc_mean'][0]:.3f}  sigma=0.5 {c['bpc_mean'][-1]:.3f}  "
              f"degradation {c['degradation'][-1]:.2f}x")
else:
    print("no full (paper-sized) noise curves saved under book/results/ yet")
