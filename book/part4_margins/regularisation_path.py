# %% [markdown]
# # 4.9 The regularisation path in λ_m (§7.4, Table 1, Fig. 7.6)
#
# *Source: Agarwal et al., §7.4 (Table 1, Fig. 7.6), with §3.4 (Fig. 3.3) and §4.*
#
# §7.4 trains seven models that differ only in the penalty weight
# $\lambda_m\in\{0,0.005,0.01,0.02,0.05,0.1,0.2\}$ and reports, on the validation set: clean BPC,
# BPC under embedding noise $\sigma=0.3$, their ratio (degradation), the prior's attention entropy
# $H_t=-\sum_{s<t}\alpha_{ts}\log\alpha_{ts}$, the SNR $\lVert x\rVert_{\rm RMS}/\lVert e\rVert_{\rm RMS}$ of the
# prior's residual $e_t=x_t-\mu_t$, and $\operatorname{tr}(\Sigma_t)/\mathrm{RMS}(x)^2$. The paper reads a
# U-shaped noisy BPC with an optimum at $\lambda_m=0.02$, and interprets $\lambda_m$ as moving
# $\det(I-\Sigma_tA)$ away from zero.
#
# Here `nextword.torch.runs.sweep.run_sweep` trains one model per $\lambda_m$ and tabulates the same
# columns, plus two that locate the prior relative to the barrier: the mean
# $\operatorname{tr}(\Sigma_tA)$ (sign of the coupling, §3.4) and the final penalty. CLI:
# `nextword sweep --config quick`. Two runs of it appear below:
#
# * **default** (§2): the seven $\lambda_m$ of Table 1 on the notebooks' miniature (the $\lambda_m=0$
#   and $0.05$ runs are shared with [barrier_training](barrier_training.ipynb)) — the mechanics; a few
#   minutes on one CPU core the first time, seconds when the runs are cached;
# * **saved run** (§3): an earlier sweep that `make results` trains once on a 2-core CPU at a larger,
#   longer schedule than the miniature (`book/results/barrier_sweep`: five λ, $d=64$, 250 steps);
# * **Table 1 at full size** (§4): all seven λ at the model size and schedule of the trained pair, trained
#   on a lent GPU (NVIDIA H200) — at the CPU tier's settings (one seed) and at the paper's preset with the
#   exact penalty (two seeds). The conclusions are drawn from §4.

# %%
import os

import matplotlib.pyplot as plt
import numpy as np
import sympy as sp
import torch

from nextword.booktools.display import produced
from nextword.booktools.plotting import use_book_style
from nextword.provenance import load_curves, load_result
from nextword.torch.training.data import eval_windows, load_char_data
from nextword.torch.runs.book import PAPER_TABLE1, all_saved, experiment_config, runs_dir
from nextword.torch.training.loop import load_checkpoint
from nextword.torch.barrier.robustness import noise_curve
from nextword.torch.runs.sweep import PAPER_LAMBDAS, lambda_dir, run_sweep

FULL = os.environ.get("FULL", "0") == "1"
torch.set_num_threads(1)
use_book_style()

# %% [markdown]
# ## 1. A one-dimensional picture of the path
#
# Take the scalar penalty of Eq. (21) at a fixed attention variance $V>0$, weighted by $\lambda$,
# and a quadratic term $a^2/(2\tau)$ standing in for whatever keeps the coupling bounded (weight
# decay, the CE term). The minimiser solves $f'(a)=0$ on the admissible side $1-aV>0$:

# %%
a = sp.symbols("a", real=True)
lam, tau, V = sp.symbols("lambda tau V", positive=True)
f = -lam * sp.log(1 - a * V) + a**2 / (2 * tau)
roots = sp.solve(sp.diff(f, a), a)
admissible = [r for r in roots if sp.simplify((1 - r * V).subs({lam: 1, tau: 1, V: 1})) > 0]
a_star = admissible[0]
print("stationary points:", roots)
print("admissible minimiser a* =", a_star)
print("d a*/d lambda =", sp.simplify(sp.diff(a_star, lam)))
# a* < 0 and decreasing in lambda, for any positive lambda, tau, V (checked on a grid)
for vals in [(0.01, 1, 1), (0.2, 3, 0.5), (1, 0.1, 10)]:
    sub = dict(zip((lam, tau, V), vals))
    assert float(a_star.subs(sub)) < 0 and float(sp.diff(a_star, lam).subs(sub)) < 0
    assert float(sp.diff(f, a, 2).subs(sub).subs(a, a_star.subs(sub))) > 0

# %% [markdown]
# The admissible minimiser is **negative** and moves further from zero as $\lambda$ grows
# ($a^*\approx-\lambda\tau V$ for small $\lambda$); with $\tau\to\infty$ it runs off to $-\infty$
# (at fixed $V$ the penalty alone is unbounded below). In this picture increasing $\lambda_m$ does
# not widen a margin to the barrier $1-aV=0$ — the barrier lies on the other side, at $a=1/V>0$;
# it pushes the coupling into the no-barrier regime of Fig. 3.3(c–d). Section 3 checks whether the
# trained models behave the same way.
#
# ## 2. The default sweep (mechanics)

# %%
cfg = experiment_config(FULL)
table = run_sweep(cfg, PAPER_LAMBDAS, runs_dir(FULL), progress=False)
rows = table["rows"]

print("ours (default run):")
print(f"{'lambda':>6s} {'BPC':>6s} {'BPC.3':>6s} {'Deg':>5s} {'H':>5s} {'SNR':>6s} {'trS/RMS2':>8s} "
      f"{'tr(SA)':>7s} {'penalty':>8s}")
for r in rows:  # trained on this page: every number but lambda goes through produced()
    print(f"{r['lambda']:6.3f} {produced(r['bpc'], '6.3f')} {produced(r['bpc_sigma'], '6.3f')} "
          f"{produced(r['degradation'], '5.3f')} {produced(r['entropy'], '5.2f')} {produced(r['snr'], '6.3f')} "
          f"{produced(r['normalised_var'], '8.1f')} {produced(r['trace_sigma_A'], '7.3f')} {produced(r['margin'], '8.3f')}")
print("\npaper, Table 1 (WikiText-2, §7.1 model):")
print(f"{'lambda':>6s} {'BPC':>6s} {'BPC.3':>6s} {'Deg':>5s} {'H':>5s} {'SNR':>6s} {'trS/RMS2':>8s}")
for lam_p, bpc, bpcs, deg, H, snr, var in PAPER_TABLE1:
    print(f"{lam_p:6.3f} {bpc:6.3f} {bpcs:6.3f} {deg:5.2f} {H:5.2f} {snr:6.3f} {var:8.1f}")

# %% [markdown]
# **Checks.** What we assert is what this sweep shows: (i) the baseline's prior is untouched by
# training ($W$ gets no gradient at $\lambda_m=0$), so its coupling stays at its tiny initial value;
# (ii) for every $\lambda_m>0$ the trained coupling is negative, $\operatorname{tr}(\Sigma_tA)<0$, and
# the penalty is negative ($\lvert\det\rvert>1$); (iii) both get monotonically more negative as
# $\lambda_m$ grows — the direction predicted by §1; (iv) the clean BPC moves by less than 0.1 BPC
# across the whole path.

# %%
lams = [r["lambda"] for r in rows]
tr_sa = [r["trace_sigma_A"] for r in rows]
pen = [r["margin"] for r in rows]
bpc = [r["bpc"] for r in rows]
assert lams == list(PAPER_LAMBDAS)
assert abs(tr_sa[0]) < 0.01 and abs(pen[0]) < 0.01
assert all(t < 0 for t in tr_sa[1:]) and all(p < 0 for p in pen[1:])
assert all(np.diff(tr_sa[1:]) < 0) and all(np.diff(pen[1:]) < 0)
assert max(bpc) - min(bpc) < 0.1
print(f"clean BPC range over the path: {produced(max(bpc) - min(bpc), '.3f')} BPC (paper: "
      f"{max(r[1] for r in PAPER_TABLE1) - min(r[1] for r in PAPER_TABLE1):.3f})")

# %% [markdown]
# **Is a robustness gain a scale effect?** Noise is added in absolute units, and the penalty also
# changes the embedding scale (the `embedding_rms` column). Repeating the σ = 0.3 probe at the same
# noise *relative* to each model's embedding RMS — $\sigma_\lambda = 0.3\cdot\mathrm{RMS}(E_\lambda)/
# \mathrm{RMS}(E_0)$, equal to 0.3 for the baseline — separates the two effects. In this miniature the
# differences between neighbouring $\lambda_m$ are a few thousandths, the size of a change of CPU
# kernel, so the cell prints them and asserts only what is exact; §3 draws the conclusion from the
# saved, trained sweep.

# %%
root = runs_dir(FULL)
data = load_char_data(cfg.data, max_chars=cfg.max_chars)
vx, vy = eval_windows(data.val, block_size=cfg.block_size, max_windows=cfg.eval_windows)
rms0 = rows[0]["embedding_rms"]
rel_deg = []
for r in rows:
    gpt = load_checkpoint(lambda_dir(root, r["lambda"]))[0]
    curve = noise_curve(gpt, vx, vy, sigmas=[0.0, 0.3 * r["embedding_rms"] / rms0],
                        draws=cfg.noise_draws, seed=cfg.seed)
    rel_deg.append(curve["degradation"][1])
print(f"{'lambda':>6s} {'emb RMS':>8s} {'Deg (sigma=0.3)':>16s} {'Deg (equal relative noise)':>27s}")
for r, dr in zip(rows, rel_deg):
    print(f"{r['lambda']:6.3f} {produced(r['embedding_rms'], '8.3f')} {produced(r['degradation'], '16.3f')} "
          f"{produced(dr, '27.3f')}")
assert abs(rel_deg[0] - rows[0]["degradation"]) < 1e-5  # same probe for the baseline (rows may come from the run cache, written under other CPU kernels: round-off)

# %%
def plot_path(lams, bpc, bpc_sigma, deg, rel_deg, tr_sa, pen, title=None):
    """Fig. 7.6-style panels along the path: BPC, degradation (fixed and relative σ), coupling and penalty."""
    x = np.arange(len(lams))
    fig, axes = plt.subplots(1, 3, figsize=(12.5, 3.6))
    axes[0].plot(x, bpc, "o-", color="C0", label="clean")
    axes[0].plot(x, bpc_sigma, "o-", color="C3", label=r"$\sigma=0.3$")
    axes[0].set(title="(a) validation BPC", ylabel="bits / char")
    axes[1].plot(x, deg, "o-", color="C3", label=r"$\sigma=0.3$")
    axes[1].plot(x, rel_deg, "s--", color="C1", label="equal relative noise")
    axes[1].set(title=r"(b) degradation BPC$_{\sigma}$/BPC")
    axes[2].plot(x, tr_sa, "o-", color="C2", label=r"mean tr$(\Sigma_tA)$")
    axes[2].plot(x, pen, "s--", color="C4", label=r"$\mathcal{L}_{\rm margin}$")
    axes[2].axhline(0.0, color="k", lw=0.8)
    axes[2].set(title="(c) coupling and penalty after training")
    for ax in axes:
        ax.legend()
        ax.set_xticks(x, [f"{v:g}" for v in lams])
        ax.set_xlabel(r"$\lambda_m$")
    if title:
        fig.suptitle(title, y=1.02)
    plt.tight_layout()
    plt.show()


plot_path(lams, bpc, [r["bpc_sigma"] for r in rows], [r["degradation"] for r in rows], rel_deg, tr_sa, pen)

# %% [markdown]
# **Figure (default run, mechanics).** (a) Clean and noisy validation BPC along the path (equally
# spaced $\lambda_m$ values on the axis); (b) the degradation ratio; (c) the coupling
# $\operatorname{tr}(\Sigma_tA)$ and the penalty of the trained priors. Panel (c) has no counterpart
# in the paper; it is the quantity the margin interpretation is about.
#
# **Reading the default path.** Asserted above: increasing $\lambda_m$ drives
# $\operatorname{tr}(\Sigma_tA)$ and the penalty monotonically *down*, as the one-dimensional picture
# of §1 predicts — the priors end in the negative-coupling regime where
# $\lvert\det(I-\Sigma_tA)\rvert>1$ and no degeneracy boundary exists ("moving away from $\det=0$" is
# true but vacuous: the path moves away from $\det=1$, upwards; see `book/ERRATA.md`); and the clean
# BPC barely moves along the path. Printed, not asserted: the degradation at fixed σ and at equal
# relative noise (the last table). In this miniature their differences between neighbouring
# $\lambda_m$ are of the size of a change of CPU kernel, so no robustness conclusion is drawn from it.
#
# ## 3. An earlier, smaller saved sweep (CPU, five λ, $d=64$, 250 steps)
#
# `make results` trains one model per $\lambda_m$ once (`nextword results run
# barrier_sweep`) and saves the table, including the degradation at equal relative noise. Once saved,
# everything below is read from that file.

# %%
SAVED = all_saved("barrier_sweep")

# %%
if SAVED:
    sw = load_result("barrier_sweep")
    swc = sw["config"]
    print(f"saved run: produced by `{sw['command']}` at `{sw['commit'][:12]}` on {sw['created'][:10]} "
          f"(wall time {sw['wall_time_s'] / 60:.0f} min for {len(swc['lambdas'])} models)")
    print(f"each model: d_model={swc['model']['d_model']}, T={swc['model']['max_len']}, batch {swc['batch_size']}, "
          f"{swc['steps']} steps, lr {swc['lr']:g}, margin on k={swc['margin_positions']} positions, data {swc['data']}; "
          f"noise sigma = {sw['data']['sigma']}, {swc['noise_draws']} draws")
    srows = sw["data"]["rows"]
    print(f"{'lambda':>6s} {'BPC':>6s} {'BPC.3':>6s} {'Deg':>5s} {'Deg rel':>7s} {'H':>5s} {'SNR':>6s} "
          f"{'trS/RMS2':>8s} {'tr(SA)':>7s} {'penalty':>8s} {'emb RMS':>7s}")
    for r in srows:
        print(f"{r['lambda']:6.3f} {r['bpc']:6.3f} {r['bpc_sigma']:6.3f} {r['degradation']:5.3f} "
              f"{r['relative_degradation']:7.3f} {r['entropy']:5.2f} {r['snr']:6.3f} {r['normalised_var']:8.1f} "
              f"{r['trace_sigma_A']:7.3f} {r['margin']:8.3f} {r['embedding_rms']:7.3f}")
    sl = load_curves("barrier_sweep")
    s_bpc, s_tr, s_pen = sl["bpc"], sl["trace_sigma_A"], sl["margin"]
    print(f"clean BPC range over the saved path: {s_bpc.max() - s_bpc.min():.3f} BPC")

# %%
if SAVED:
    plot_path(sl["lambda"], sl["bpc"], sl["bpc_sigma"], sl["degradation"], sl["relative_degradation"], s_tr, s_pen,
              title="saved run, cpu tier")

# %% [markdown]
# **Figure (saved run, cpu tier).** The three panels of the default run's figure for the saved sweep: (a) clean
# and noisy validation BPC along the path, (b) the degradation ratio, (c) the coupling
# $\operatorname{tr}(\Sigma_tA)$ and the penalty of the trained priors.
#
# What the saved path shows (asserted below on the saved numbers, so the check does not depend on this CPU):
# as $\lambda_m$ grows the clean bits per character rise a little, the coupling $\operatorname{tr}(\Sigma_t A)$
# is driven further below zero and the token embeddings grow. The absolute degradation under noise falls with
# $\lambda_m$, as Table 1 / Fig. 7.6 report, but the degradation at noise *relative to each model's embedding
# RMS* rises: along this path the robustness gain is the embedding scale growing, the same reading as the
# trained pair in `robustness_to_noise`. The models are undertrained (see the clean BPC), so this re-checks
# the direction of the paper's λ path, not its sizes.

# %%
if SAVED:
    lam = [r["lambda"] for r in srows]
    col = {k: np.array([r[k] for r in srows]) for k in
           ("bpc", "trace_sigma_A", "embedding_rms", "degradation", "relative_degradation")}
    assert lam == sorted(lam)
    rising = {k: bool(np.all(np.diff(col[k]) > 0)) for k in ("bpc", "embedding_rms", "relative_degradation")}
    falling = {k: bool(np.all(np.diff(col[k]) < 0)) for k in ("trace_sigma_A", "degradation")}
    print("rises with lambda:", rising)
    print("falls with lambda:", falling)
    assert all(rising.values()) and all(falling.values())

# %% [markdown]
# ## 4. Table 1 at full size: the seven λ, trained on a GPU
#
# The sweep of §3 is smaller than the pair it is compared with. Table 1's seven values of $\lambda_m$ were
# trained at the pair's model size ($d=128$, 4 heads, 2 blocks, $T=256$, batch 64, 1220 steps) on a lent
# NVIDIA H200 by `nextword gpu-check`, three times over:
#
# * **CPU-tier settings** (lr $3\cdot10^{-3}$, penalty on $k=16$ positions; seed 0) — the settings of the saved
#   CPU pair, so its $\lambda_m=0$ and $0.05$ rows are that pair retrained on another device;
# * **the paper's preset** (lr $10^{-3}$, exact penalty on all positions), seeds 0 and 1.
#
# Each model's noise curve was saved at several $\sigma$, so the degradation can also be read at *equal
# relative noise*: $\sigma_\lambda = 0.2\cdot\mathrm{RMS}(E_\lambda)/\mathrm{RMS}(E_0)$, linearly interpolated on
# the model's own curve (the saved grid is 0.1 apart at the CPU-tier settings and 0.05 at the paper's
# preset; $0.2$ rather than Table 1's $0.3$ keeps every $\sigma_\lambda$ inside the grid).

# %%
def gpu_sweep_rows(name):
    """The rows of a saved GPU sweep, with the degradation at equal relative noise added."""
    rows = load_result(name)["data"]["rows"]
    rms0 = rows[0]["embedding_rms"]
    for r in rows:
        curve = r["noise_absolute"]
        sigma_rel = 0.2 * r["embedding_rms"] / rms0
        assert sigma_rel <= max(curve["sigmas"])
        r["relative_degradation"] = float(np.interp(sigma_rel, curve["sigmas"], curve["degradation"]))
    return rows


GPU_SWEEPS = {
    "cpu-tier settings, seed 0": "gpu_barrier_sweep",
    "paper preset, seed 0": "gpu_barrier_sweep_paper",
    "paper preset, seed 1": "gpu_barrier_sweep_paper_seed1",
}
gpu_rows = {label: gpu_sweep_rows(name) for label, name in GPU_SWEEPS.items()}
print(f"device: {load_result('gpu_barrier_sweep')['data']['gpu']['name']}")
for label, rows in gpu_rows.items():
    print(f"\n{label}")
    print(f"{'lambda':>6s} {'BPC':>6s} {'BPC.3':>6s} {'Deg':>5s} {'Deg rel':>7s} {'H':>5s} {'SNR':>6s} "
          f"{'trS/RMS2':>8s} {'tr(SA)':>8s} {'emb RMS':>7s}")
    for r in rows:
        print(f"{r['lambda']:6.3f} {r['bpc']:6.3f} {r['bpc_sigma']:6.3f} {r['degradation']:5.3f} "
              f"{r['relative_degradation']:7.3f} {r['entropy']:5.2f} {r['snr']:6.3f} {r['normalised_var']:8.1f} "
              f"{r['trace_sigma_A']:8.2f} {r['embedding_rms']:7.4f}")

# %%
fig, axes = plt.subplots(1, 3, figsize=(12.5, 3.6))
x = np.arange(len(PAPER_LAMBDAS))
for (label, rows), style in zip(gpu_rows.items(), ("o-", "s--", "^:")):
    axes[0].plot(x, [r["bpc"] for r in rows], style, label=label)
    axes[1].plot(x, [r["degradation"] for r in rows], style, label=label)
    axes[2].plot(x, [r["relative_degradation"] for r in rows], style, label=label)
axes[0].plot(x, [row[1] for row in PAPER_TABLE1], "kx-", label="Table 1 (WikiText-2)")
axes[1].plot(x, [row[3] for row in PAPER_TABLE1], "kx-", label="Table 1 (WikiText-2)")
axes[0].set(title="(a) clean validation BPC", ylabel="bits / char")
axes[1].set(title=r"(b) degradation at $\sigma=0.3$")
axes[2].set(title=r"(c) degradation at equal relative noise")
for ax in axes:
    ax.set_xticks(x, [f"{v:g}" for v in PAPER_LAMBDAS])
    ax.set_xlabel(r"$\lambda_m$")
axes[0].legend(fontsize=8)
plt.tight_layout()
plt.show()

# %% [markdown]
# **Figure 4.9.2.** The seven λ of Table 1 at full size, three sweeps trained on a GPU, beside Table 1's own
# numbers (black crosses; WikiText-2, so only the shapes compare). (a) Clean bits per character rise with
# λ in every sweep, far more than Table 1's 3 %. (b) At the paper's preset the degradation at σ = 0.3 has no
# U-shaped optimum: it is flat to λ = 0.02 and then rises, in both seeds; at the CPU-tier settings it falls
# all the way — but there (a) shows the clean BPC rising by 42 %, and the degradation is a ratio over the
# clean BPC. (c) At equal relative noise the CPU-tier path is flat until λ = 0.02 and falls only where the
# clean model has become much worse.

# %%
for label in ("paper preset, seed 0", "paper preset, seed 1"):
    rows = gpu_rows[label]
    bpc, deg = np.array([r["bpc"] for r in rows]), np.array([r["degradation"] for r in rows])
    tr_sa, rms = np.array([r["trace_sigma_A"] for r in rows]), np.array([r["embedding_rms"] for r in rows])
    assert bpc[-1] > 1.06 * bpc[0], label                 # clean BPC rises > 6 % (Table 1: 3 %)
    assert deg.min() > 0.97 * deg[0], label               # no λ improves robustness by 3 % (Table 1: 11 %)
    assert deg[-1] > deg[0], label                        # the strongest penalty is the least robust
    assert np.all(np.diff(tr_sa) < 0), label              # the coupling is driven further below zero
    assert np.all(np.diff(rms) > 0), label                # and the embeddings grow
rows = gpu_rows["cpu-tier settings, seed 0"]
bpc, deg = np.array([r["bpc"] for r in rows]), np.array([r["degradation"] for r in rows])
rel = np.array([r["relative_degradation"] for r in rows])
lams = np.array([r["lambda"] for r in rows])
assert np.all(np.diff(bpc) > 0) and np.all(np.diff(deg) < 0)
assert bpc[-1] > 1.3 * bpc[0]
assert np.all(np.abs(rel[lams <= 0.02] - rel[0]) < 0.03 * rel[0])  # (c): flat to λ = 0.02 at equal relative noise
assert rel[-1] < 0.8 * rel[0]                                       # and lower only at the far end of the path
print("asserted on the saved numbers: at the paper's preset (both seeds) clean BPC rises by more than 6 %, "
      "no lambda lowers the degradation by 3 %, the coupling falls and the embeddings grow with lambda; "
      "at the CPU-tier settings the degradation falls only as the clean BPC rises by more than 30 %")

# %% [markdown]
# **What Table 1 looks like at full size.** On tiny Shakespeare, with the paper's model and optimiser and the
# exact penalty, the regularisation path does not reproduce Table 1's reading: there is no optimum near
# $\lambda_m=0.02$ with an 11 % robustness gain, the clean quality falls four times faster than Table 1's 3 %,
# and — as for the trained pair — the penalty is lowered by driving the coupling $\operatorname{tr}(\Sigma_tA)$
# negative and growing the embeddings, not by engaging the barrier. With the CPU tier's faster learning rate
# the degradation ratio does fall with $\lambda_m$, but only while the clean model gets much worse. The corpus
# differs from the paper's (WikiText-2), so this is a finding about the method on this corpus, recorded in
# the ledger (`book/ERRATA.md`, §7.4).
