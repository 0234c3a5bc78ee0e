# %% [markdown]
# # 5.1 Spherical geometry: why a transformer's states live on a sphere, and how to move on one
#
# **The question.** A transformer keeps rescaling its token states to one fixed length: RMSNorm
# divides each state by its root mean square. Wherever it does, the states lie on a sphere. How do you
# take a step on a sphere without falling off it, and what does a "bell curve" on a sphere look like?
#
# Part 5 reads a whole transformer as a flow: a state that moves a little at every layer, pushed by
# the layer's output. Liao calls it a {term}`score-based variational flow <SVFlow>` (SVFlow), a flow
# whose velocity is an average of "pulls" towards several components ([the overview](00_overview.ipynb)
# tells the story; [5.2](02_svflow_properties.ipynb) defines it). On a flat space a step is just "add the
# update". On a sphere, adding an update takes the state off the sphere, and something must bring it
# back. This page shows that the residual addition followed by RMSNorm is exactly such a rule — a
# *retraction* — and compares it with the ideal rule, the *exponential map*, that walks along the
# sphere. It also introduces the von Mises–Fisher distribution, the sphere's version of a Gaussian,
# which [5.3 Attention as a vMF posterior](03_attention_as_vmf_posterior.ipynb) and the pages after it
# use to read attention as probability.
#
# Where the normalisation sits matters. In a {term}`post-norm` block (the original transformer) every
# residual sum is normalised, so the residual stream itself lies on a sphere: that is the paper's picture.
# In the {term}`pre-norm` block of [6.6](../part1_chapter6/6_6_context_representation.ipynb), which most
# modern models and this book's own models use, the stream is not normalised; each sub-layer reads a
# normalised copy. The picture then holds for the *direction* of the stream, with steps that shrink as
# the stream grows ([below](#pre-norm-blocks-the-same-step-for-the-direction)).
#
# ```{admonition} Learning goals
# :class: tip
# After this page you can
# - explain why RMSNorm puts a state on a sphere of radius $\sqrt d$, and compute it by hand for a 2-d
#   state;
# - compute, for one step on a circle, where the exponential map and the retraction land, and predict
#   their gap ($\tfrac13r^3$ for a tangent step of small length $r$);
# - explain why "residual + RMSNorm" is exactly the retraction of the update's tangent part *rescaled*, and
#   to first order that of the tangent part itself (Eq. 17) — for the state
#   in a post-norm block, for its direction in a pre-norm block;
# - describe the von Mises–Fisher density in words (mean direction, concentration) and recognise its
#   Euclidean score $\kappa\mu$.
# ```
#
# **Builds on:** [6.6 Context representation](../part1_chapter6/6_6_context_representation.ipynb)
# (the decoder block: residual additions and a normalisation layer around each sub-layer) · vectors,
# dot products and lengths; sine, cosine and a Taylor series; a probability density.
# **Reading time:** about 40 minutes.
#
# ```{admonition} Symbols on this page
# :class: note
# | symbol | meaning | shape |
# |---|---|---|
# | $d$ | width of a state; the unit sphere in $\mathbb R^d$ is $\mathbb S^{d-1}$ | integer |
# | $x$, $x^\ell$ | a state (from the second section on, a point of the unit sphere); $x^\ell$: the state that enters layer $\ell$, whose sub-layer $f_\ell$ turns it into $x^{\ell+1}$ (Eq. 8); as in the paper, layers are counted from 0, so $x^\ell$ has passed $\ell$ layers ($x^0$ the input), as in 5.3 and 5.6 | $(d,)$ |
# | $\tilde x$, $\tilde x^\ell$ | the unnormalised residual stream of a pre-norm block (pre-norm section only; the tilde marks "not on the sphere") | $(d,)$ |
# | $f_\ell$ | the sub-layer (attention or feed-forward) of layer $\ell$ | a map |
# | $\hat x$ | the direction $\tilde x/\lVert\tilde x\rVert$ of a pre-norm stream $\tilde x$: a point of the unit sphere | $(d,)$ |
# | $y$ | an update added to the state (not necessarily tangent) | $(d,)$ |
# | $w$ | a tangent vector at $x$ ($x^\top w=0$; all of them form the tangent space $\mathrm T_x\mathbb S^{d-1}$): a step along the sphere, or the tangent part of an update | $(d,)$ |
# | $a$ | the part of an update along $x$: $y=a\,x+w$ | scalar |
# | $r$ | the length $\lVert w\rVert$ of a step | scalar |
# | $w_2$ | the tangent part of an update when $x=e_1$ and the update lies in the plane of $e_1,e_2$: $w=w_2e_2$ | scalar |
# | $e_1,e_2$ | the first two unit coordinate vectors | $(d,)$ |
# | $\varepsilon$ | a small scale factor in a series expansion | scalar |
# | $R$ | the retraction $R_x(w)$ of a step $w$ at $x$ (the exponential map is written $\exp_x(w)$) | $(d,)$ |
# | $\mu$ | the mean direction of a von Mises–Fisher distribution | $(d,)$, unit |
# | $\kappa$ | its concentration | scalar $\ge0$ |
# | $C_d(\kappa)$, $I_\nu$, $\nu$ | its normaliser; in it, $I_\nu$ is the modified Bessel function of order $\nu$ (always with its order; a bare $I$, as in $I-xx^\top$, is the identity matrix) | scalar |
# | $A_d(\kappa)$ | mean resultant length $I_{d/2}(\kappa)/I_{d/2-1}(\kappa)$ | scalar in $[0,1)$ |
# | $c$ | the cosine $\mu^\top x$ of a sample $x$ to the mean direction | scalar in $[-1,1]$ |
# | $\theta,\phi$ | angles on the sphere (polar, around) | scalars |
# | $\omega$, $\nabla_{\mathbb S}$ | area on the sphere ($d\omega$ its element); the gradient along the sphere (Riemannian gradient), the tangent part $(I-xx^\top)\nabla$ of the Euclidean gradient $\nabla$ (§4.3 check) | —; like $x$ |
# | $\lvert\mathbb S^{k}\rvert$ | the area of the unit sphere $\mathbb S^{k}$ (in $\mathbb R^{k+1}$), $2\pi^{(k+1)/2}/\Gamma\big(\tfrac{k+1}2\big)$ with $\Gamma$ the gamma function: $\lvert\mathbb S^{d-1}\rvert$ is the whole sphere's, $\lvert\mathbb S^{d-2}\rvert$ (Figure 5.1.5) that of one dimension lower | scalar |
# | $z$, $p(x\mid z)$ | a component of a mixture, and its density | index, scalar |
# | $s$ | time along a flow | scalar |
# | $\varphi_s$, $\dot\varphi_s$, $D\varphi_s$, $u_s$, $p_s$, $x_s$ | at time $s$: the flow map, its time derivative and Jacobian, the velocity field, the density of the moved states, the moved state $x_s=\varphi_s(x_0)$; $s'$ a time between 0 and $s$ | maps; $(d,)$ |
# | $B$ | a square matrix (Jacobi's formula) | $(2,2)$ or $(3,3)$ |
# ```
#
# ```{admonition} In the paper's notation
# :class: seealso
# The paper writes $v$ for a tangent step (Eqs. 2–3) and also for the update of Eq. (17), $\mathcal T_x\mathbb S^{d-1}$
# for the tangent space, $t$ for the time of a flow and $v_t$ for its velocity field (§2.1). Here they are $w$, $y$,
# $\mathrm T_x\mathbb S^{d-1}$, $s$ and $u_s$: the book keeps $v[j]$
# for a value vector and $t$ for a position in a sequence (Chapter 6,
# [Appendix A](../partA_appendix/A_notation_and_environment.ipynb)), and $u$ for a flow's velocity on every
# page of Part 5. The paper's equations are quoted in these letters, with their numbers.
# ```
#
# *Source: Liao, Transformer as an Euler Discretization of Score-based Variational Flow, §2.1–2.3
# (Eqs. 1–3, 7–8), §4.1 (Eqs. 17–18), §4.3 (the zero-mean property) and App. C.2.3.*

# %%
import matplotlib.pyplot as plt
import numpy as np
import sympy as sp
from IPython.display import Math, display
from scipy.integrate import quad
from scipy.linalg import expm

from nextword.booktools.display import produced
from nextword.booktools.plotting import use_book_style
from nextword.booktools.schematics.sphere import (draw_retraction_vs_exp, draw_rmsnorm_projection,
                                                   draw_tangent_plane, draw_vmf_on_circle)
from nextword.decoder import rms_norm
from nextword.numerics import central_difference
from nextword.theory.svflow import (
    exp_map, retraction, rk4_flow_with_divergence, sphere_log_area, tangent_projection,
    vmf_log_density, vmf_log_normalizer, vmf_log_normalizer_naive, vmf_mean_resultant_length,
    vmf_sample, vmf_score,
)

use_book_style()
rng = np.random.default_rng(0)

# %% [markdown]
# ## A tiny example by hand
#
# Take states of width $d=2$, so that the sphere is a circle and everything can be drawn on paper.
#
# **RMSNorm.** RMSNorm divides a state by its root mean square, $\sqrt{(x_1^2+\dots+x_d^2)/d}$.
# For the state $(3,4)$: the mean of the squares is $(9+16)/2=12.5$, its root is $3.536$, and
# $(3,4)/3.536=(0.849, 1.131)$, a vector of length $\sqrt2=1.414$. The state $(0.3, 0.4)$, ten times
# shorter, gives the *same* result: only the direction survives. Dividing by $\sqrt d$ once more puts
# the state on the circle of radius 1: $(0.6, 0.8)$.

# %%
for state in ([3.0, 4.0], [0.3, 0.4], [-1.0, 2.0]):
    state = np.array(state)
    mean_of_squares = np.mean(state**2)
    root_mean_square = np.sqrt(mean_of_squares)
    normalised = state / root_mean_square
    on_unit_circle = normalised / np.sqrt(2)
    print(f"state {state}: mean of squares {mean_of_squares:g}, rms {root_mean_square:.3f} "
          f"-> {np.round(normalised, 3)}, "
          f"length {np.linalg.norm(normalised):.3f}; "
          f"on the unit circle {np.round(on_unit_circle, 3)}")
    assert np.allclose(normalised, rms_norm(state, eps=0.0), atol=1e-12)  # the library's RMSNorm

# %% [markdown]
# **One step on the circle.** Stand at $x=(0.6, 0.8)$ on the unit circle. The direction that runs
# *along* the circle there is $(-0.8, 0.6)$ (its dot product with $x$ is $0.6\cdot(-0.8)+0.8\cdot0.6=0$). Take a step
# of length $r=0.5$ in that direction: $w=(-0.4, 0.3)$. Two ways to land back on the circle:
#
# - *retraction*: add, then rescale to length 1. $x+w=(0.2, 1.1)$ has length $\sqrt{1.25}=1.118$, so
#   we land at $(0.179, 0.984)$;
# - *exponential map*: walk $0.5$ along the circle itself, i.e. turn by the angle $0.5$ radians:
#   $\cos(0.5)\,x+\sin(0.5)\,(-0.8, 0.6)=(0.143, 0.990)$.
#
# The retraction turned by $\arctan(0.5)=0.464$ radians instead of $0.5$: it falls a little short.

# %%
x = np.array([0.6, 0.8])
along = np.array([-0.8, 0.6])  # unit vector along the circle at x
w = 0.5 * along  # the tangent step
by_retraction = (x + w) / np.linalg.norm(x + w)
by_exp_map = np.cos(0.5) * x + np.sin(0.5) * along
angle = lambda point: np.arccos(np.clip(point @ x, -1, 1))  # noqa: E731  (angle turned from x)
print(f"direction along the circle {along}; x . w = 0 (w is tangent): {abs(x @ w) < 1e-15}")
print(f"x + w = {x + w}, squared length {np.sum((x + w) ** 2):.2f}, "
      f"length {np.linalg.norm(x + w):.3f}")
print(f"retraction:      {np.round(by_retraction, 3)}, "
      f"turned by {angle(by_retraction):.3f} = arctan(0.5)")
print(f"exponential map: {np.round(by_exp_map, 3)}, turned by {angle(by_exp_map):.3f}")
gap = np.linalg.norm(by_retraction - by_exp_map)
print(f"gap between the two landing points: {gap:.4f};  0.5**3 / 3 = {0.5**3 / 3:.4f}")
assert np.allclose(by_retraction, retraction(x, w), atol=1e-12)
assert np.allclose(by_exp_map, exp_map(x, w), atol=1e-12)
assert abs(angle(by_retraction) - np.arctan(0.5)) < 1e-12

# %% [markdown]
# Since $\arctan r=r-r^3/3+\dots$, the retraction misses the exponential map's angle by about $r^3/3$
# for a step of length $r$: $0.042$ for $r=0.5$, the same size as the measured gap $0.036$ (the
# higher terms of the series account for the rest). The rest of the page makes these two
# observations general and checks the paper's statements about them.
#
# ## Why a transformer's state lives on a sphere
#
# A transformer adds the output of each sub-layer to its input (the {term}`residual stream`), and
# normalises. Modern models normalise with {term}`RMSNorm` (root-mean-square normalisation):
#
# $$\mathrm{RMSNorm}(x)=\frac{x}{\sqrt{\tfrac1d\sum_i x_i^2}}=\sqrt d\,\frac{x}{\lVert x\rVert}
# \qquad\text{(Eq. 7, without the learned gain)},$$
#
# and the paper writes one layer as $x^{\ell+1}=\mathrm{RMSNorm}\big(x^\ell+f_\ell(x^\ell)\big)$ (Eq. 8), with
# $f_\ell$ the attention or feed-forward sub-layer of layer $\ell$: the post-norm layout, in which the
# norm comes after the residual addition. Whatever the length of the sum,
# its image has length $\sqrt d$: every state after the norm lies on the sphere of radius $\sqrt d$.
# Dividing every state by $\sqrt d$ changes nothing else, so the paper (and this page) works on the
# {term}`unit sphere` $\mathbb S^{d-1}=\{x\in\mathbb R^d:\lVert x\rVert=1\}$ (the "$d-1$" counts the
# directions one can move in on it: a circle in the plane is $\mathbb S^1$). The learned gain of a
# real RMSNorm and the mean subtraction of LayerNorm bend this picture a little (an ellipsoid, a
# sphere inside a subspace); the paper, and Part 5, leave them aside.

# %%
token_states = np.array([[3.0, 4.0], [0.3, 0.4], [-1.0, 2.0], [-0.6, -0.2], [1.5, -2.5]])
fig, ax = plt.subplots(figsize=(5, 5))
images = draw_rmsnorm_projection(ax, token_states)
ax.set_title("RMSNorm keeps each state's direction and sets its length to $\\sqrt{d}$")
plt.show()
assert np.allclose(np.linalg.norm(images, axis=1), np.sqrt(2), atol=1e-12)

# %% [markdown]
# **Figure 5.1.1.** Five 2-d token states (faint arrows, of very different lengths) and their
# RMSNorm images (dots with a black rim): each is moved along its own direction (dotted) onto the
# circle of radius $\sqrt d=\sqrt2$. The states $(3,4)$ and $(0.3,0.4)$ land on the same point. After
# the norm, a state is nothing but a direction — a point of a sphere.

# %% [markdown]
# ## Moving on a sphere: tangent plane, exponential map and retraction
#
# At a point $x$ of the sphere, the directions in which one can move *along* the sphere are those
# perpendicular to $x$. Together they form the {term}`tangent space`
# $\mathrm T_x\mathbb S^{d-1}=\{w:x^\top w=0\}$, a flat plane that touches the sphere at $x$ (Figure 5.1.2). Any vector $y$ splits into a
# part along $x$ and a tangent part, $(I-xx^\top)y$ (the library's `tangent_projection`). (Like the
# paper, Part 5 writes vectors as columns: $x^\top w$ is the dot product of $x$ and $w$, and $xx^\top$
# is a $d\times d$ matrix. Chapter 6 writes vectors as rows, where the same two read $xw^\top$ and
# $x^\top x$, and the projection $y(I-x^\top x)$.)
#
# A step $w$ in the tangent plane leaves the sphere: $x+w$ is longer than 1. Two rules bring it back:
#
# - the {term}`exponential map` walks the distance $\lVert w\rVert$ along the {term}`great circle`
#   that leaves $x$ in the direction of $w$ (the sphere's straight line, like a meridian on a globe);
# - a {term}`retraction` takes a cheaper route with the same first-order effect; the one the paper
#   uses adds the step and rescales, i.e. it pulls $x+w$ back to the sphere along the ray from the
#   centre.

# %%
fig = plt.figure(figsize=(6, 5))
ax3d = fig.add_subplot(projection="3d")
landing = draw_tangent_plane(ax3d, step_length=1.0)
ax3d.set_box_aspect((1, 1, 1), zoom=1.1)  # a little smaller, so that the plane's label fits in the figure
plt.show()
assert abs(landing["x"] @ landing["v"]) == 0.0
assert np.linalg.norm(landing["retraction"] - landing["exp_map"]) > 0.1  # length-1 step: far apart

# %% [markdown]
# **Figure 5.1.2.** The unit sphere (grey mesh), the tangent plane at the point $x$ at its top
# (shaded), and a tangent step $w$ of length 1 (black arrow) ending at $x+w$, off the sphere. The
# retraction (blue) follows the dashed ray from the centre through $x+w$ back to the sphere; the
# exponential map (vermilion) walks an arc of length 1 along the great circle in the direction of $w$.
# The two landing points are different, and the retraction lands short.
#
# In the plane that holds $x$ and $w$ the sphere is a circle (a great circle), and the comparison can be
# read off exactly (Figure 5.1.3): the retraction turns by $\arctan\lVert w\rVert$, the exponential map by
# $\lVert w\rVert$. In formulas (Eqs. 2 and 3 of the paper), for a tangent $w\ne0$,
#
# $$\exp_x(w)=\cos(\lVert w\rVert)\,x+\sin(\lVert w\rVert)\,\frac{w}{\lVert w\rVert},\qquad
# R_x(w)=\frac{x+w}{\lVert x+w\rVert}.$$

# %%
fig, ax = plt.subplots(figsize=(6, 5))
in_plane = draw_retraction_vs_exp(ax, step_length=1.0)
ax.set_title("one tangent step of length 1, in the plane of x and w")
plt.show()
turned_by_retraction = np.arctan2(in_plane["retraction"][0], in_plane["retraction"][1])
assert abs(turned_by_retraction - np.arctan(1.0)) < 1e-12

# %% [markdown]
# **Figure 5.1.3.** The same step in the plane of $x$ and $w$: the circle is a great circle of the
# sphere and the dash-dotted line is the tangent line at $x$. The retraction (blue) lands at the angle
# $\arctan 1=45°$ from $x$, the exponential map (vermilion) at the angle of 1 radian, about $57°$. For a
# small step the two angles $\arctan r$ and $r$ agree to within $r^3/3$.
#
# Sympy expands the difference of the two landing points in powers of the step length $r$ (by
# symmetry, $x=e_1$ and $w=r\,e_2$ show every case):

# %%
r = sp.symbols("r", positive=True)  # the step length ||w||
exp_point = sp.Matrix([sp.cos(r), sp.sin(r)])
retraction_point = sp.Matrix([1, r]) / sp.sqrt(1 + r**2)
difference_series = (retraction_point - exp_point).applyfunc(
    lambda entry: sp.simplify(sp.series(entry, r, 0, 6).removeO()))
gap_series = sp.series(sp.sqrt(sum(c**2 for c in (retraction_point - exp_point))), r, 0, 5)
display(Math(r"R_x(w)-\exp_x(w)=" + sp.latex(difference_series.T)))
display(Math(r"\lVert R_x(w)-\exp_x(w)\rVert=" + sp.latex(gap_series)))
assert sp.simplify(gap_series.removeO() - r**3 / 3) == 0

# %% [markdown]
# The terms of order $r$ and $r^2$ cancel: both rules leave $x$ in the same direction and at the same
# speed, and the retraction even curves the same way to second order. They part only at third
# order, by $\tfrac13\lVert w\rVert^3$ (along $w$). A retraction with this property is called
# *second-order*; the paper states the weaker $\mathcal O(\lVert w\rVert^2)$, which is true (measured in
# [Checking the paper](#checking-the-paper), below).
#
# ## What residual + RMSNorm does: a relaxed retraction (Eq. 17)
#
# A transformer layer does not project its update onto the tangent plane: it adds the whole update
# $y=f_\ell(x)$ and normalises, $\mathrm{RMSNorm}(x+y)$ — on the unit sphere, $R_x(y)$ with a
# non-tangent $y$. The paper calls this a *relaxed retraction* and states (Eq. 17)
#
# $$\mathrm{RMSNorm}(x+y)=R_x\big((I-xx^\top)y\big)+\mathcal O(\lVert y\rVert^2).$$
#
# By hand, with $x=(0.6, 0.8)$ and $y=(0.2, 0.6)$: the part along $x$ is $a=x^\top y=0.6\cdot0.2+0.8\cdot0.6=0.6$
# and the tangent part is $y-0.6\,x=(-0.16, 0.12)$. The normalised sum is
# $(0.8,1.4)/1.612=(0.496, 0.868)$; the retraction of the tangent part alone is $(0.44, 0.92)/1.020=(0.431, 0.902)$. They
# differ because the part along $x$ only makes $x+y$ longer — the norm then shrinks the *whole* sum,
# tangent part included, by the factor $1/(1+a)$. Indeed
# $R_x\big((-0.16, 0.12)/1.6\big)=(0.496, 0.868)$ exactly.

# %%
x = np.array([0.6, 0.8])
update = np.array([0.2, 0.6])
along_x = x @ update
tangent_part = tangent_projection(x, update)
after_norm = rms_norm(x + update, eps=0.0, unit=True)  # unit-sphere RMSNorm of the residual sum
print(f"a = x . y = {along_x:.3f}; tangent part {np.round(tangent_part, 3)}")
for name, total in (("x + y", x + update), ("x + tangent part", x + tangent_part)):
    print(f"{name:17s} = {np.round(total, 3)}, length {np.linalg.norm(total):.3f}")
print(f"RMSNorm(x + y)                    = {np.round(after_norm, 3)}")
print(f"R_x(tangent part)                 = {np.round(retraction(x, tangent_part), 3)}")
rescaled_step = tangent_part / (1 + along_x)
print(f"R_x(tangent part / (1 + a))       = {np.round(retraction(x, rescaled_step), 3)}")
assert np.allclose(after_norm, retraction(x, tangent_part / (1 + along_x)), atol=1e-12)

# %% [markdown]
# In general: write $y=a\,x+w$ with $a=x^\top y$ and $w\perp x$. Then $x+y=(1+a)x+w$, and rescaling
# gives $R_x\big(w/(1+a)\big)$ *exactly*. The relaxed retraction is the retraction of a rescaled
# tangent step. Since $1/(1+a)=1-a+\dots$ differs from 1 at first order, the gap to $R_x(w)$ is of
# second order; sympy finds it (with $x=e_1$, $y=a\,e_1+w_2\,e_2$, both scaled by a small $\varepsilon$):

# %%
a, w2 = sp.symbols("a w_2", real=True)
relaxed = sp.Matrix([1 + a, w2]) / sp.sqrt((1 + a) ** 2 + w2**2)  # x = e1, y = a e1 + w2 e2
projected = sp.Matrix([1, w2]) / sp.sqrt(1 + w2**2)
eps = sp.symbols("varepsilon", positive=True)
gap = (relaxed - projected).subs({a: eps * a, w2: eps * w2})
gap_to_second_order = gap.applyfunc(
    lambda entry: sp.simplify(sp.series(entry, eps, 0, 3).removeO()))
display(Math(r"\mathrm{RMSNorm}(x+y)-R_x\big((I-xx^\top)y\big)=" + sp.latex(gap_to_second_order.T)))
assert sp.simplify(gap_to_second_order[1] + a * w2 * eps**2) == 0

# %% [markdown]
# The tangent component of the gap is $-a\,w_2\,\varepsilon^2$: the product of the update's part along $x$ and its
# tangent part. It vanishes when the update is tangent ($a=0$), the case of Eq. (3). And the
# library's unit-sphere RMSNorm of a residual sum *is* the retraction formula applied to the raw
# update, both on the unit sphere and on the radius-$\sqrt d$ sphere of Eq. (7) after rescaling:

# %%
d = 16
states = rng.standard_normal((4, d))
states /= np.linalg.norm(states, axis=1, keepdims=True)
updates = rng.standard_normal((4, d))
gap_unit = np.max(np.abs(rms_norm(states + updates, eps=0.0, unit=True)
                         - retraction(states, updates)))
gap_radius = np.max(np.abs(rms_norm(np.sqrt(d) * states + updates, eps=0.0) / np.sqrt(d)
                           - retraction(states, updates / np.sqrt(d))))
print("max |RMSNorm_unit(x + y) - R_x(y)| < 1e-14:", gap_unit < 1e-14)
print("radius-sqrt(d) RMSNorm (Eq. 7), state rescaled, same bound:", gap_radius < 1e-14)
assert gap_unit < 1e-14
assert gap_radius < 1e-14

# %% [markdown]
# So a transformer layer takes a Euclidean step and lets the norm retract it: the step's tangent
# part moves the state along the sphere, its part along the state only rescales that move, by $1/(1+a)$:
# shorter when the update points outwards ($a>0$), longer when it points inwards ($-1<a<0$).
# [5.3](03_attention_as_vmf_posterior.ipynb)
# shows that the attention update $f_\ell$ is a flow's velocity; this page's result is what turns
# "velocity plus norm" into one step of that flow on the sphere.
#
# ## Pre-norm blocks: the same step, for the direction
#
# In a pre-norm block ([6.6](../part1_chapter6/6_6_context_representation.ipynb)) the stream itself is
# never normalised: a sub-layer adds $y=f_\ell\big(\mathrm{RMSNorm}(\tilde x^\ell)\big)$ to it,
# $\tilde x^{\ell+1}=\tilde x^\ell+y$ (a tilde: the stream is not on the sphere), and the stream's length changes from layer to layer (it usually grows). What
# lies on the sphere is what each sub-layer *reads*: the direction $\tilde x^\ell/\lVert\tilde x^\ell\rVert$ (times
# $\sqrt d$). Write the stream as its length times its direction, $\tilde x=\lVert\tilde x\rVert\,\hat x$. Then
# $\tilde x+y=\lVert\tilde x\rVert\big(\hat x+y/\lVert\tilde x\rVert\big)$, and the direction the next sub-layer reads is
#
# $$\hat x^{\ell+1}=R_{\hat x^\ell}\big(y/\lVert\tilde x^\ell\rVert\big):$$
#
# the same relaxed retraction as above, applied to the direction, with the update divided by the
# stream's length. The step rules of the two sections above hold for the direction of a pre-norm stream, and the longer
# the stream, the shorter its steps on the sphere. By hand: the stream $\tilde x=(3,4)$ has length 5 and
# direction $(0.6, 0.8)$; the update $y=(1,3)$ is five times the update of the example above. The new
# stream $(4,7)$ has direction $(0.496, 0.868)$ — the point that the update $y/5=(0.2, 0.6)$ reached above.

# %%
stream, update = np.array([3.0, 4.0]), np.array([1.0, 3.0])
new_direction = (stream + update) / np.linalg.norm(stream + update)
direction = stream / np.linalg.norm(stream)
print(f"direction of stream + y = {np.round(new_direction, 3)};  "
      f"R_(stream/|stream|)(y/|stream|) = {np.round(retraction(direction, update / np.linalg.norm(stream)), 3)}")
assert np.allclose(new_direction, retraction(direction, update / np.linalg.norm(stream)), atol=1e-12)
streams = rng.standard_normal((4, d)) * np.array([[1.0], [4.0], [16.0], [64.0]])  # four lengths, d = 16
one_update = rng.standard_normal(d)
turned = []
for stream_row in streams:
    length = np.linalg.norm(stream_row)
    read_before = rms_norm(stream_row, eps=0.0, unit=True)  # what the sub-layer reads, on the unit sphere
    read_after = rms_norm(stream_row + one_update, eps=0.0, unit=True)  # what the next one reads
    assert np.allclose(read_after, retraction(read_before, one_update / length), atol=1e-12)
    turned.append(np.degrees(np.arccos(np.clip(read_before @ read_after, -1, 1))))
    print(f"stream length {length:6.2f}: the direction read by the next sub-layer turns by {turned[-1]:5.2f} degrees")
assert np.all(np.diff([np.linalg.norm(r) for r in streams]) > 0) and np.all(np.diff(turned) < 0)

# %% [markdown]
# The same update turns a long stream's direction less: in a pre-norm model the steps on the sphere
# are the updates divided by the stream's length. (The paper's Eq. 8 is the post-norm layout; the
# pre-norm reading above is this book's. The models of [5.5](05_prefix_shuffling.ipynb) are pre-norm, and
# the probe there takes each head's normalised input as the state on the sphere.)
#
# ## The von Mises–Fisher distribution: a bell curve on the sphere
#
# To read attention as probability ([5.3](03_attention_as_vmf_posterior.ipynb)) the paper needs a
# probability distribution *on the
# sphere*. A Gaussian lives on flat space; on the sphere its natural replacement is the
# {term}`von Mises–Fisher distribution` (vMF). It has a *mean direction* $\mu$ (a point of the sphere,
# where the density is largest) and a {term}`concentration` $\kappa\ge0$: at $\kappa=0$ the density is
# the same everywhere (uniform); as $\kappa$ grows the mass gathers into a bump around $\mu$ that
# narrows like a Gaussian of variance $1/\kappa$. Figure 5.1.4 draws it on the circle.

# %%
fig, ax = plt.subplots(figsize=(5.5, 5.5))
densities_on_circle = draw_vmf_on_circle(ax, concentrations=(0.0, 1.0, 4.0, 16.0))
ax.set_title("von Mises–Fisher density on the circle (d = 2)")
plt.show()
mass_on_circle = densities_on_circle[:, :-1].sum(axis=1) * np.radians(1.0)
assert np.allclose(mass_on_circle, 1.0, atol=1e-10)

# %% [markdown]
# **Figure 5.1.4.** The vMF density on the unit circle (grey), drawn as a curve at height
# proportional to the density above the circle, for concentrations $\kappa=0,1,4,16$ around the mean
# direction $\mu$ (vermilion arrow, 60°). At $\kappa=0$ the curve is a circle (uniform density); larger
# $\kappa$ gives a taller, narrower bump around $\mu$. Each density integrates to 1 over the circle
# (checked).
#
# The density is an exponential of the dot product with the mean direction (Eq. 18):
#
# $$p_{\mathrm{vMF}}(x;\mu,\kappa)=C_d(\kappa)\,\exp(\kappa\,\mu^\top x),\qquad
# C_d(\kappa)=\frac{\kappa^{d/2-1}}{(2\pi)^{d/2}\,I_{d/2-1}(\kappa)},$$
#
# where $\mu^\top x$ is the cosine of the angle between $x$ and $\mu$ and $C_d(\kappa)$ is the
# number that makes the density integrate to 1 over the sphere ($I_\nu$ is a modified Bessel
# function, a special function that scipy evaluates). For $d=3$ sympy does the integral over the
# sphere (area element $\sin\theta\,d\theta\,d\phi$) and confirms the paper's constant:

# %%
kappa, theta = sp.symbols("kappa theta", positive=True)
integral_d3 = sp.simplify(2 * sp.pi * sp.integrate(sp.exp(kappa * sp.cos(theta)) * sp.sin(theta),
                                                   (theta, 0, sp.pi)))
display(Math(r"\int_{\mathbb S^2}e^{\kappa\mu^\top x}\,d\omega(x)=" + sp.latex(integral_d3)))
paper_c3 = kappa ** sp.Rational(1, 2) / ((2 * sp.pi) ** sp.Rational(3, 2)
                                         * sp.besseli(sp.Rational(1, 2), kappa))
product = sp.simplify((paper_c3 * integral_d3).rewrite(sp.sinh))
display(Math(r"C_3(\kappa)\cdot\int_{\mathbb S^2}e^{\kappa\mu^\top x}\,d\omega="
             + sp.latex(product)))
assert product == 1

# %% [markdown]
# The {term}`score function` of a density is the gradient of its logarithm: the direction in which
# the density grows fastest. Extended off the sphere to all of $\mathbb R^d$,
# $\log p_{\mathrm{vMF}}(x)=\log C_d(\kappa)+\kappa\mu^\top x$ is linear in $x$, so its score is
# the constant vector $\kappa\mu$ — the same at every point. That is what
# [5.3](03_attention_as_vmf_posterior.ipynb) needs: the value
# vectors of attention are constant in the query, exactly like this score. (On the sphere itself the
# score is the tangent part $(I-xx^\top)\kappa\mu$.) A finite-difference check at a random point:

# %%
dim_small, kappa_small = 5, 6.0
mu = rng.standard_normal(dim_small)
mu /= np.linalg.norm(mu)
point = rng.standard_normal(dim_small)


def extended_log_density(z):
    """log C_d(kappa) + kappa mu . z for any z in R^d: the vMF log-density, off the sphere too."""
    return vmf_log_normalizer(kappa_small, dim_small) + kappa_small * z @ mu


numerical_score = central_difference(extended_log_density, point, h=1e-6)  # (d,)
print("finite-difference score matches kappa mu to 1e-6:",
      bool(np.allclose(numerical_score, vmf_score(mu, kappa_small), atol=1e-6)))
assert np.allclose(numerical_score, vmf_score(mu, kappa_small), atol=1e-6)

# %% [markdown]
# Samples make the density concrete. Wood's sampler (the library's `vmf_sample`) draws the cosine
# $c=\mu^\top x$ from its density $\propto e^{\kappa c}(1-c^2)^{(d-3)/2}$ and then a uniform direction
# for the rest. Two checks: the average sample is $A_d(\kappa)\,\mu$ with
# $A_d=I_{d/2}/I_{d/2-1}$ (the {term}`mean resultant length`, between 0 and 1: how far the average
# of the samples is from the centre), and the density integrates to 1 (by averaging it over uniform
# points of the sphere and multiplying by the sphere's area).

# %%
samples = vmf_sample(mu, kappa_small, 50_000, rng)  # (50000, 5), unit rows
sample_mean = samples.mean(axis=0)
mean_length = vmf_mean_resultant_length(kappa_small, dim_small)
print(f"|mean of the samples| = {produced(np.linalg.norm(sample_mean), '.4f')}, "
      f"A_d(kappa) = {mean_length:.4f}")
assert np.allclose(sample_mean, mean_length * mu, atol=0.01)
uniform_points = rng.standard_normal((200_000, dim_small))
uniform_points /= np.linalg.norm(uniform_points, axis=1, keepdims=True)
total_mass = np.mean(np.exp(vmf_log_density(uniform_points, mu, kappa_small)
                            + sphere_log_area(dim_small)))
print(f"integral of p_vMF over the sphere (Monte Carlo) = {produced(total_mass, '.3f')}")
assert abs(total_mass - 1) < 0.03

# %%
cosines = np.linspace(-1, 1, 400)
log_density_of_cosine = (vmf_log_normalizer(kappa_small, dim_small) + sphere_log_area(dim_small - 1)
                         + kappa_small * cosines
                         + 0.5 * (dim_small - 3) * np.log(np.clip(1 - cosines**2, 1e-300, None)))
fig, ax = plt.subplots()
ax.hist(samples @ mu, bins=60, density=True, alpha=0.5, label="Wood sampler")
ax.plot(cosines, np.exp(log_density_of_cosine), "k", lw=1.5,
        label=r"$C_d(\kappa)|\mathbb{S}^{d-2}|e^{\kappa c}(1-c^2)^{(d-3)/2}$")
ax.set_xlabel(r"$c=\mu^\top x$ (cosine to the mean direction)")
ax.set_ylabel("density")
ax.set_title(fr"vMF on $\mathbb{{S}}^{{{dim_small - 1}}}$, $\kappa={kappa_small:g}$")
ax.legend(fontsize=8)
plt.show()
histogram, edges = np.histogram(samples @ mu, bins=40, range=(-1, 1), density=True)
centres = (edges[:-1] + edges[1:]) / 2
curve_at_centres = np.exp(np.interp(centres, cosines, log_density_of_cosine))
above_half = np.mean(samples @ mu > 0.5)
print(f"largest gap between histogram and curve (40 bins): {produced(np.max(np.abs(histogram - curve_at_centres)), '.3f')}; "
      f"share of samples with c > 0.5: {produced(above_half, '.3f')}")
assert np.max(np.abs(histogram - curve_at_centres)) < 0.1
assert above_half > 0.5

# %% [markdown]
# **Figure 5.1.5.** The cosine $c=\mu^\top x$ of 50 000 vMF samples ($d=5$, $\kappa=6$) against the
# density that Eq. (18) implies for it (the points with cosine $c$ form a sphere $\mathbb S^{d-2}$ of radius
# $\sqrt{1-c^2}$, of area $\lvert\mathbb S^{d-2}\rvert(1-c^2)^{(d-2)/2}$, and a band of cosines $dc$ wide is
# $dc/\sqrt{1-c^2}$ wide along the sphere, whence the factors $\lvert\mathbb S^{d-2}\rvert$ and
# $(1-c^2)^{(d-3)/2}$ in the legend): the histogram follows the curve (the largest gap printed above is
# measured on a coarser 40-bin histogram of the same samples, not on the bars drawn), so $C_d$ normalises
# the density. Most samples sit at cosines above 0.5, within 60° of $\mu$.
#
# ## Key takeaways
#
# - RMSNorm rescales a state to length $\sqrt d$, so only its direction carries information: in a
#   post-norm block the state after each layer, in a pre-norm block the input of each sub-layer, is a
#   point of a sphere.
# - On a sphere one moves along the tangent plane and comes back: the exponential map walks the great
#   circle, the retraction $R_x(w)=(x+w)/\lVert x+w\rVert$ rescales; they agree to within
#   $\tfrac13\lVert w\rVert^3$ (sharper than the paper's $\mathcal O(\lVert w\rVert^2)$).
# - Residual + RMSNorm is the retraction of the update's tangent part scaled by $1/(1+a)$, where $a$
#   is the update's part along the state (shorter for $a>0$, longer for $-1<a<0$) — a relaxed retraction, accurate to first order (Eq. 17). In a
#   pre-norm block the stream's direction moves by the same rule, with the update divided by the
#   stream's length.
# - The von Mises–Fisher density $C_d(\kappa)e^{\kappa\mu^\top x}$ is a bump around the mean direction
#   $\mu$, narrower for larger concentration $\kappa$; its Euclidean score is the constant $\kappa\mu$.
# - Its normaliser $C_d(\kappa)$ overflows when computed directly at the sizes of real models; computed
#   in log space it is finite for every $\kappa$ and $d$ ([checked below](#checking-the-paper)).
#
# ## Check your understanding
#
# 1. A state $x=(0, 1)$ on the unit circle receives the tangent update $w=(1, 0)$. By how many
#    degrees does the state turn under the retraction, and under the exponential map?
#
#    ```{dropdown} Answer
#    The retraction lands at $(1,1)/\sqrt2$: it turns by $\arctan 1=45°$. The exponential map walks an
#    arc of length 1, i.e. turns by 1 radian, about $57°$ (Figure 5.1.3). The retraction always turns by
#    $\arctan\lVert w\rVert<\lVert w\rVert$: it falls short, and can never turn by a right angle or more.
#    ```
#
# 2. An update points exactly along the state, $y=a\,x$ with $a>-1$. What does residual + RMSNorm do
#    to the state, and what does that say about the part of an update along the state?
#
#    ```{dropdown} Answer
#    $x+y=(1+a)x$, and the norm gives back $x$: the state does not move. The part of an update along
#    the state is invisible after the norm except through its effect on the tangent part, which it
#    shrinks by $1/(1+a)$ (or stretches, for $a<0$).
#    ```
#
# 3. In a pre-norm model the residual stream has length 20 at some layer, and a sub-layer adds an
#    update of length 0.5 perpendicular to it. By how many degrees does the direction that the next
#    sub-layer reads turn?
#
#    ```{dropdown} Answer
#    The direction moves by the retraction of $y/\lVert\tilde x\rVert$, a tangent step of length
#    $0.5/20=0.025$, so it turns by $\arctan0.025\approx1.43°$. The same update would turn a stream of
#    length 1 by $\arctan0.5\approx26.6°$.
#    ```
#
# 4. Why is the zero-mean property $\mathbb E_{p(x\mid z)}[\nabla_x\log p(x\mid z)]=0$ true for a
#    Gaussian on $\mathbb R^d$ but not for a vMF on the sphere?
#
#    ```{dropdown} Answer
#    On $\mathbb R^d$ the mean score is $\int\nabla p\,dx$, which is zero because $p$ vanishes at
#    infinity. The vMF's Euclidean score is the constant $\kappa\mu$, whose mean is $\kappa\mu\ne0$;
#    and on the sphere, which has no "infinity" for the mass to escape to, the divergence theorem adds
#    a curvature term, giving the mean $(d-1)A_d(\kappa)\mu$ for the tangent (Riemannian) score
#    $\nabla_{\mathbb S}\log p=(I-xx^\top)\kappa\mu$ ([Checking the paper](#checking-the-paper), below).
#    ```

# %% tags=["hide-cell"]
# the numbers of the answers above
x_q1, w_q1 = np.array([0.0, 1.0]), np.array([1.0, 0.0])
turn = lambda new_point, old_point: np.degrees(np.arccos(np.clip(new_point @ old_point, -1, 1)))  # noqa: E731
print(f"1. retraction turns by {turn(retraction(x_q1, w_q1), x_q1):.1f} degrees, "
      f"exponential map by {turn(exp_map(x_q1, w_q1), x_q1):.1f} degrees")
assert abs(turn(retraction(x_q1, w_q1), x_q1) - 45) < 1e-9 and abs(turn(exp_map(x_q1, w_q1), x_q1) - 57.3) < 0.05
stream_q3 = 20 * x_q1
for length, stream_now in ((20, stream_q3), (1, x_q1)):
    after = (stream_now + 0.5 * w_q1) / np.linalg.norm(stream_now + 0.5 * w_q1)
    print(f"3. stream of length {length}: tangent step 0.5 / {length} = {0.5 / length:.3f}; the direction "
          f"turns by {turn(after, x_q1):.2f} degrees (arctan(0.5 / {length}) = {np.degrees(np.arctan(0.5 / length)):.2f})")
    assert abs(turn(after, x_q1) - np.degrees(np.arctan(0.5 / length))) < 1e-9

# %% [markdown]
# ## Checking the paper
#
# The ideas above are what the rest of Part 5 uses. This section holds the line-by-line checks of
# the paper's statements behind them: the orders of the two approximations (Eqs. 2–3, 17), the vMF
# normaliser at the sizes of real models (App. C.2.3), the zero-mean property of §4.3, and the
# change of variables of §2.1.
#
# ### Retraction versus exponential map (Eqs. 2–3) and the relaxed retraction (Eq. 17), measured
#
# In $d=16$, with a random point, a random tangent direction and a random (non-tangent) update
# direction, the two errors are measured over step lengths from $10^{-3}$ to $0.3$ and their slopes
# on log–log axes fitted. ([Exercise 01](../../exercises/part5_svflow/ex01_retraction_order.ipynb)
# asks you to build both maps and measure this slope yourself; try it before reading on.)

# %% tags=["hide-cell"]
point = rng.standard_normal(d)
point /= np.linalg.norm(point)
tangent_direction = tangent_projection(point, rng.standard_normal(d))
tangent_direction /= np.linalg.norm(tangent_direction)
update_direction = rng.standard_normal(d)
update_direction /= np.linalg.norm(update_direction)  # a generic, non-tangent update for Eq. (17)
step_lengths = np.logspace(-3, -0.5, 12)
error_retraction = np.array([np.linalg.norm(retraction(point, r * tangent_direction)
                                            - exp_map(point, r * tangent_direction))
                             for r in step_lengths])
error_relaxed = np.array([
    np.linalg.norm(rms_norm(point + r * update_direction, eps=0.0, unit=True)
                   - retraction(point, tangent_projection(point, r * update_direction)))
    for r in step_lengths])

# %% tags=["hide-cell"]
small = step_lengths < 0.05
slope_retraction = np.polyfit(np.log(step_lengths[small]), np.log(error_retraction[small]), 1)[0]
slope_relaxed = np.polyfit(np.log(step_lengths[small]), np.log(error_relaxed[small]), 1)[0]
print(f"fitted slope, ||R_x(w) - exp_x(w)||              : {slope_retraction:.3f}")
print(f"fitted slope, ||RMSNorm(x+y) - R_x((I-xx^T)y)||   : {slope_relaxed:.3f}")
print(f"error / ||w||^3 at ||w|| = 1e-3                   : "
      f"{error_retraction[0] / step_lengths[0]**3:.6f}  (sympy: 1/3)")
assert abs(slope_retraction - 3.0) < 0.02  # Figure 5.1.6: slope 3, sharper than the stated order 2
assert abs(error_retraction[0] / step_lengths[0] ** 3 - 1 / 3) < 1e-3
assert abs(slope_relaxed - 2.0) < 0.02  # Figure 5.1.6: the relaxed retraction has slope 2

# %% tags=["hide-cell"]
fig, ax = plt.subplots()
ax.loglog(step_lengths, error_retraction, "o-", label=r"$\|R_x(w)-\exp_x(w)\|$ (Eq. 3 vs 2)")
ax.loglog(step_lengths, error_relaxed, "s-",
          label=r"$\|\mathrm{RMSNorm}(x+y)-R_x((I-xx^\top)y)\|$ (Eq. 17)")
ax.loglog(step_lengths, step_lengths**2, "k--", lw=1, label=r"$\|w\|^2$ (slope of the paper's order, $\mathcal{O}(\|w\|^2)$)")
ax.loglog(step_lengths, step_lengths**3 / 3, "k:", lw=1, label=r"$\|w\|^3/3$")
ax.set_xlabel(r"step length $\|w\|$ (or $\|y\|$)")
ax.set_ylabel("error")
ax.set_title(f"slopes: retraction {slope_retraction:.2f}, relaxed retraction {slope_relaxed:.2f}")
ax.legend(fontsize=8)
plt.show()

# %% [markdown]
# **Figure 5.1.6.** Error of the retraction (Eq. 3) against the exponential map (Eq. 2), and of
# residual + unit-sphere RMSNorm against the retraction of the projected update (Eq. 17), on log–log
# axes. The retraction error has slope 3 (a second-order retraction, sharper than the stated
# $\mathcal O(\lVert w\rVert^2)$); the relaxed retraction has slope 2, as Eq. (17) states. The black lines
# are references: dashed, $\lVert w\rVert^2$ (the slope of the order the paper states for Eq. 3); dotted,
# $\tfrac13\lVert w\rVert^3$ (sympy's gap), which the retraction's curve covers. The paper's
# bound for Eq. (3) holds with one order to spare — not an erratum.
#
# ### App. C.2.3: the vMF normaliser in log space
#
# In float64, $I_\nu(\kappa)$ exceeds the largest double near $\kappa\approx714$ for the orders of small widths, later
# for larger orders (printed below, with Figure 5.1.7; scipy's `iv` returns $\infty$ from that point or up to 4 units
# of $\kappa$ before it), and $(2\pi)^{d/2}$ overflows for
# $d\gtrsim770$ — so for the widths of the paper's models ($d=896$–$2048$) the direct formula for
# $C_d$ fails at *every* $\kappa$, not only at the large $\kappa$ App. C.2.3 mentions — if the vMF lives in
# the model's width, as §4.2's formulas put it. Computed per attention head ($d=64$ or $128$), it fails
# from $\kappa=656$ ($d=64$) or $600$ ($d=128$) instead ([Part 5's checking page](checking_the_paper.ipynb)); the paper does not
# say which width its code uses. In log space,
# $\log C_d=(d/2-1)\log\kappa-\tfrac d2\log 2\pi-\log I_{d/2-1}(\kappa)$ with
# $\log I_\nu(\kappa)=\log\mathrm{ive}_\nu(\kappa)+\kappa$ (scipy's exponentially scaled Bessel
# function) and, where even `ive` underflows (order in the thousands, small $\kappa$), the Debye
# uniform expansion or the power series. ([Exercise 02](../../exercises/part5_svflow/ex02_vmf_normaliser.ipynb)
# asks you to write such a normaliser yourself.) First the checks against closed forms:

# %% tags=["hide-cell"]
for kappa_value in (0.5, 5.0, 50.0, 5000.0):
    # d = 3: log(kappa / (4 pi sinh kappa)), written so that it does not overflow
    log_c3 = (np.log(kappa_value) - np.log(2 * np.pi)
              - (kappa_value + np.log1p(-np.exp(-2 * kappa_value))))
    assert abs(vmf_log_normalizer(kappa_value, 3) - log_c3) < 1e-10 * max(1, abs(log_c3))
    # d = 2: 1/C_2 = integral of exp(kappa cos theta) over the circle, by quadrature
    angles = np.linspace(0, 2 * np.pi, 40001)
    scaled_integrand = np.exp(kappa_value * (np.cos(angles) - 1))  # exp(kappa cos) / exp(kappa)
    log_integral = kappa_value + np.log(np.trapezoid(scaled_integrand, angles))
    assert (abs(-vmf_log_normalizer(kappa_value, 2) - log_integral)
            < 1e-8 * max(1, abs(log_integral)))
print("log C_d matches the closed form (d=3) and quadrature (d=2) for kappa in {0.5, 5, 50, 5000}")

# %% tags=["hide-cell"]
kappas = np.array([1.0, 100.0, 700.0, 720.0, 1e3, 1e4, 1e5])
print(f"{'kappa':>8} | {'naive d=3':>12} | {'log-space d=3':>14} | {'naive d=1024':>12} | "
      f"{'log-space d=1024':>16}")
for kappa_value in kappas:
    print(f"{kappa_value:8.0f} | {vmf_log_normalizer_naive(kappa_value, 3):12.4f} | "
          f"{vmf_log_normalizer(kappa_value, 3):14.4f} | "
          f"{vmf_log_normalizer_naive(kappa_value, 1024):12.4f} | "
          f"{vmf_log_normalizer(kappa_value, 1024):16.4f}")
assert np.all(np.isfinite(vmf_log_normalizer(kappas, 1024)))
assert not np.isfinite(vmf_log_normalizer_naive(1e3, 3))

# %% [markdown]
# For $\kappa\to\infty$ the vMF approaches a Gaussian of variance $1/\kappa$ on the tangent plane, so
# $\log C_d(\kappa)=\tfrac{d-1}{2}\log\tfrac{\kappa}{2\pi}-\kappa+\mathcal O(1/\kappa)$. This gives an
# independent check of the log-space value deep in the overflow region; below the check the
# normaliser is plotted for several widths.

# %% tags=["hide-cell"]
for width in (3, 64, 1024):
    large_kappas = np.array([1e6, 1e7])
    asymptote = 0.5 * (width - 1) * np.log(large_kappas / (2 * np.pi)) - large_kappas
    relative_gap = np.abs(vmf_log_normalizer(large_kappas, width) - asymptote) / np.abs(asymptote)
    print(f"d={width:5d}: relative gap to the large-kappa asymptote at kappa=1e6, 1e7: "
          f"{relative_gap[0]:.1e}, {relative_gap[1]:.1e}")
    assert np.all(relative_gap < 1e-3)

# %% tags=["hide-cell"]
import warnings  # noqa: E402  (the direct formula overflows on purpose below)

import mpmath  # noqa: E402  (the Bessel function beyond double precision)
from scipy.special import iv  # noqa: E402  (the Bessel function alone, for its overflow point)

fig, ax = plt.subplots()
kappa_grid = np.logspace(-2, 5, 200)
peak_per_dimension, direct_finite_up_to = {}, {}
for width, colour in zip((3, 64, 896, 2048), ("#0072B2", "#D55E00", "#009E73", "#E69F00")):
    # log of (density at the mean direction / uniform density), per dimension: log space, then the direct formula
    peak = (vmf_log_normalizer(kappa_grid, width) + kappa_grid + sphere_log_area(width)) / width
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        direct = np.array([(vmf_log_normalizer_naive(k, width) + k + sphere_log_area(width)) / width
                           for k in kappa_grid])
    finite = np.isfinite(direct)
    peak_per_dimension[width] = peak
    direct_finite_up_to[width] = kappa_grid[finite].max() if finite.any() else None
    ax.semilogx(kappa_grid, peak, color=colour, lw=2.5, alpha=0.6, label=f"d = {width}, log space")
    ax.semilogx(kappa_grid[finite], direct[finite], "--", color=colour, lw=1.2,
                label=f"d = {width}, direct formula" if finite.any() else None)
ax.set_xlabel(r"concentration $\kappa$")
ax.set_ylabel(r"$\log(C_d(\kappa)\,e^{\kappa}\,|\mathbb{S}^{d-1}|)\,/\,d$ (nats per dimension)")
ax.set_title("how far the vMF density at its mean exceeds the uniform density")
ax.legend(fontsize=7)
plt.show()
for width, up_to in direct_finite_up_to.items():
    print(f"d = {width:4d}: the direct formula is finite "
          + (f"up to kappa = {up_to:.0f}" if up_to is not None else "nowhere on the grid")
          + f"; the log-space value is finite everywhere: {bool(np.all(np.isfinite(peak_per_dimension[width])))}")
    # Figure 5.1.7: finite everywhere, and the density at the mean exceeds uniform more and more (rises with kappa)
    assert np.all(np.isfinite(peak_per_dimension[width])) and np.all(np.diff(peak_per_dimension[width]) > 0)
    assert peak_per_dimension[width][0] < 0.01  # kappa = 0.01: nearly uniform
assert direct_finite_up_to[896] is None and direct_finite_up_to[2048] is None
assert 500 < direct_finite_up_to[3] < 713
at_100 = [peak_per_dimension[w][np.searchsorted(kappa_grid, 100.0)] for w in (3, 64, 896, 2048)]
assert np.all(np.diff(at_100) < 0)  # per dimension, at the same kappa the wider sphere's curve lies lower
# ... except at the largest kappa drawn, where the d = 64 curve crosses above the d = 3 curve
overtakes = kappa_grid[peak_per_dimension[64] > peak_per_dimension[3]]
print(f"the d = 64 curve lies above the d = 3 curve from kappa = {overtakes.min():.0f} on (grid); "
      f"d = 64, 896, 2048 keep their order on the whole grid: "
      f"{bool(np.all(peak_per_dimension[64] > peak_per_dimension[896]) and np.all(peak_per_dimension[896] > peak_per_dimension[2048]))}")
assert 1e4 < overtakes.min() < 1e5 and np.all(peak_per_dimension[64][kappa_grid >= overtakes.min()] > peak_per_dimension[3][kappa_grid >= overtakes.min()])
assert np.all(peak_per_dimension[64] > peak_per_dimension[896]) and np.all(peak_per_dimension[896] > peak_per_dimension[2048])
with warnings.catch_warnings():
    warnings.simplefilter("ignore", RuntimeWarning)
    fine_kappas = np.arange(500.0, 1500.0, 1.0)
    bessel_overflow = {w: fine_kappas[~np.isfinite(iv(w / 2 - 1, fine_kappas))].min()
                       for w in (3, 64, 128, 896, 1024, 2048)}  # head widths and the three model widths
print("scipy's iv, the Bessel function I_(d/2-1) alone, returns inf from kappa = "
      + ", ".join(f"{k:.0f} (d = {w})" for w, k in bessel_overflow.items()))
assert all(710 <= bessel_overflow[w] <= 716 for w in (3, 64, 128)) and bessel_overflow[2048] > 1000
# the value itself (mpmath, arbitrary precision): the first kappa of the grid where it exceeds the largest double
largest_log = np.log(np.finfo(float).max)
value_overflow = {}
for w, k in bessel_overflow.items():
    k_value = k - 10.0
    while float(mpmath.log(mpmath.besseli(w / 2 - 1, k_value))) <= largest_log:
        k_value += 1.0
    value_overflow[w] = k_value
print("the value I_(d/2-1)(kappa) itself exceeds the largest double from kappa = "
      + ", ".join(f"{k:.0f} (d = {w})" for w, k in value_overflow.items()))
assert all(0 <= value_overflow[w] - bessel_overflow[w] <= 4 for w in value_overflow)  # scipy gives up at most 4 early
assert all(a < b for a, b in zip(list(value_overflow.values()), list(value_overflow.values())[1:]))  # later for wider
# the curves are per dimension, so they do not say which vMF is flatter: the whole log-ratio (d times the
# curve) grows with d at every kappa drawn, and the mean resultant length A_d(kappa) falls with d at every kappa
whole_log_ratio = {w: w * peak_per_dimension[w] for w in peak_per_dimension}
mean_length_per_width = {w: vmf_mean_resultant_length(kappa_grid, w) for w in peak_per_dimension}
at_kappa_100 = np.searchsorted(kappa_grid, 100.0)
print(f"at kappa = {kappa_grid[at_kappa_100]:.0f}: whole log-ratio "
      + ", ".join(f"{whole_log_ratio[w][at_kappa_100]:.1f}" for w in whole_log_ratio)
      + "; mean resultant length A_d " + ", ".join(f"{mean_length_per_width[w][at_kappa_100]:.3f}" for w in whole_log_ratio)
      + " (d = 3, 64, 896, 2048)")
widths_drawn = sorted(whole_log_ratio)
assert all(np.all(whole_log_ratio[a][kappa_grid >= 1] < whole_log_ratio[b][kappa_grid >= 1])
           for a, b in zip(widths_drawn, widths_drawn[1:]))  # the wider sphere's peak exceeds uniform by more
assert all(np.all(mean_length_per_width[a] > mean_length_per_width[b])
           for a, b in zip(widths_drawn, widths_drawn[1:]))  # ... but its mass lies further from mu in angle

# %% [markdown]
# **Figure 5.1.7.** The vMF normaliser at work: the logarithm of how many times the density at the
# mean direction exceeds the uniform density, per dimension, computed in log space (wide, pale lines) and
# with the direct formula (dashed, same colour). Each curve starts at 0 (at small $\kappa$ the vMF is
# nearly uniform) and rises once $\kappa$ is comparable with the width $d$. At the same $\kappa$ the wider
# sphere's curve lies lower, except at the right edge, where the $d=64$ curve crosses above the $d=3$ curve
# (from the $\kappa$ printed above: at large $\kappa$ the curve grows like $\tfrac{d-1}{2d}\log\kappa$, faster for
# the wider sphere). Being per dimension, the curves do not rank the vMFs by flatness: the whole ratio ($d$
# times the curve) is larger for the wider sphere at every $\kappa\ge1$ drawn, while in angle the wider
# sphere's vMF is the more spread one at every $\kappa$, crossing or not (its mean resultant length
# $A_d(\kappa)$ is smaller; both printed above at $\kappa\approx100$). The direct formula follows its curve until its denominator
# $(2\pi)^{d/2}I_{d/2-1}(\kappa)$ overflows (printed above, on the grid; for $d=64$ this product overflows
# from $\kappa=656$, as [Part 5's checking page](checking_the_paper.ipynb) finds on a finer grid, before the Bessel function
# itself does, at $\kappa=714$–$717$ for these small widths; the printed points where scipy's `iv` returns $\infty$
# come up to 4 units of $\kappa$ before those where the value exceeds the largest double, which is why $d=128$'s
# lies below $d=64$'s) and, for the widths of the paper's models ($d=896$, $2048$), gives no finite value at
# all; the overflow App. C.2.3 reports is a property of the formula, not of the metric.
#
# ### §4.3: the zero-mean property of conditional scores — on $\mathbb R^d$ and on the sphere
#
# §4.3 says that in a strict SVFlow the conditional scores have mean zero,
# $\mathbb E_{p(x\mid z)}[\nabla_x\log p(x\mid z)]=0$ "under mild regularity conditions", and that the
# experts of a {term}`mixture-of-experts <mixture of experts>` (MoE) layer — several feed-forward networks
# whose outputs a gate mixes, token by token ([5.3](03_attention_as_vmf_posterior.ipynb)) — do not
# enforce it and so make a relaxed SVFlow. On $\mathbb R^d$ this is
# $\int\nabla p\,dx=0$ for a density that vanishes at infinity. On the sphere — where §4.1–4.2 place
# the attention components — the divergence theorem gives instead
# $\int_{\mathbb S^{d-1}}\nabla_{\mathbb S}p\,d\omega=(d-1)\int x\,p\,d\omega$, where
# $\nabla_{\mathbb S}p=(I-xx^\top)\nabla p$ is the gradient *along* the sphere (the tangent part of the
# Euclidean gradient). So the Riemannian score $\nabla_{\mathbb S}\log p$ of a vMF component, the tangent
# part $(I-xx^\top)\kappa\mu$ of its Euclidean score, has mean $(d-1)A_d(\kappa)\mu$, and its Euclidean score
# $\kappa\mu$ is constant. We check the Gaussian case exactly (sympy) and by Monte Carlo, and the vMF case by Monte
# Carlo and quadrature.

# %% tags=["hide-cell"]
x_1d, mean_1d = sp.symbols("x m", real=True)
sd_1d = sp.symbols("s", positive=True)
gaussian = sp.exp(-(x_1d - mean_1d) ** 2 / (2 * sd_1d**2)) / sp.sqrt(2 * sp.pi * sd_1d**2)
mean_score = sp.simplify(sp.integrate(sp.diff(sp.log(gaussian), x_1d) * gaussian,
                                      (x_1d, -sp.oo, sp.oo)))
display(Math(r"\text{Gaussian, } d=1:\quad \mathbb E\Big[\tfrac{d}{dx}\log p(x\mid z)\Big]="
             + sp.latex(mean_score)))
assert mean_score == 0

# %% tags=["hide-cell"]
dim_z, kappa_z, n_samples = 5, 6.0, 200_000
rng_zero_mean = np.random.default_rng(11)
gaussian_mean = rng_zero_mean.standard_normal(dim_z)
gaussian_samples = gaussian_mean + rng_zero_mean.standard_normal((n_samples, dim_z))
gaussian_scores = -(gaussian_samples - gaussian_mean)  # grad log N(x; m, I)
z_scores = gaussian_scores.mean(axis=0) / (gaussian_scores.std(axis=0) / np.sqrt(n_samples))
print(f"Gaussian, d = {dim_z}: Monte Carlo mean score within 4 standard errors of 0: "
      f"{np.all(np.abs(z_scores) < 4)}")
assert np.all(np.abs(z_scores) < 4)

# %% tags=["hide-cell"]
mu_z = rng_zero_mean.standard_normal(dim_z)
mu_z /= np.linalg.norm(mu_z)
vmf_samples = vmf_sample(mu_z, kappa_z, n_samples, rng_zero_mean)  # (n, d) on the sphere
# the Riemannian score (I - x x^T) kappa mu of every sample, (n, d)
riemannian_scores = kappa_z * (mu_z - (vmf_samples @ mu_z)[:, None] * vmf_samples)
mean_riemannian = riemannian_scores.mean(axis=0)
predicted = (dim_z - 1) * vmf_mean_resultant_length(kappa_z, dim_z) * mu_z
standard_errors = riemannian_scores.std(axis=0) / np.sqrt(n_samples)
print(f"vMF on S^{dim_z - 1}, kappa = {kappa_z:g}: |E[Riemannian score]| = "
      f"{produced(np.linalg.norm(mean_riemannian), '.2f')}, "
      f"(d-1) A_d(kappa) = {np.linalg.norm(predicted):.2f};"
      f"  Euclidean score kappa mu has norm {kappa_z:g}")
assert np.all(np.abs(mean_riemannian - predicted) < 4 * standard_errors)
assert np.linalg.norm(predicted) > 1.0

# %% tags=["hide-cell"]
# the circle (d = 2) by quadrature: E[kappa sin^2 theta] = E[cos theta] = A_2(kappa) != 0
circle_normaliser = quad(lambda th: np.exp(kappa_z * np.cos(th)), -np.pi, np.pi)[0]
mean_sin2 = quad(lambda th: kappa_z * np.sin(th) ** 2 * np.exp(kappa_z * np.cos(th)),
                 -np.pi, np.pi)[0] / circle_normaliser
print(f"circle: E[kappa sin^2 theta] = {mean_sin2:.6f}, "
      f"A_2(kappa) = {float(vmf_mean_resultant_length(kappa_z, 2)):.6f}")
assert abs(mean_sin2 - float(vmf_mean_resultant_length(kappa_z, 2))) < 1e-8

# %% [markdown]
# So the zero-mean property holds for components on $\mathbb R^d$ (the Gaussian SVFlow of §3.3) but
# not for the vMF components of the attention reading: neither the Euclidean score $\kappa\mu$ nor
# its tangent part averages to zero under the component ($|\mathbb E|=(d-1)A_d(\kappa)$, printed
# above). On the sphere the "strict" SVFlow is therefore not zero-mean either, and MoE experts are not
# relaxed relative to attention in this respect. Recorded in [the errata](../ERRATA.md) (row "SVFlow —
# Liao | §4.3, Relaxed Implementation").
#
# ### §2.1: the instantaneous change of variables along a flow
#
# §2.1 (Eq. 1) moves samples by $\dot\varphi_s=u_s(\varphi_s)$ and tracks $\log p_s(x_s)$ along the
# path with the instantaneous change of variables, $\frac{d}{ds}\log p_s(x_s)=-\nabla\!\cdot u_s(x_s)$,
# i.e. $\log|\det D\varphi_s(x_0)|=\int_0^s\nabla\!\cdot u_{s'}(x_{s'})\,ds'$ (the flow stretches volume at
# the rate of the field's divergence, so density falls at that rate). Sympy checks the linear case
# (Jacobi's formula $\det e^{Bs}=e^{s\,\mathrm{tr}B}$):

# %% tags=["hide-cell"]
time, a11, a12, a22 = sp.symbols("s a11 a12 a22", real=True)
A_linear = sp.Matrix([[a11, a12], [0, a22]])  # triangular: a closed-form matrix exponential
jacobi = sp.simplify((A_linear * time).exp().det() - sp.exp(time * A_linear.trace()))
display(Math(r"\det e^{Bs}-e^{s\,\mathrm{tr}B}=" + sp.latex(jacobi)
             + r"\quad(B\text{ upper triangular})"))
assert jacobi == 0
A_random = np.random.default_rng(3).normal(size=(3, 3))  # a general matrix, numerically
exact_det = np.exp(1.7 * np.trace(A_random))
assert abs(np.linalg.det(expm(1.7 * A_random)) - exact_det) < 1e-10 * exact_det
print("det expm(1.7 B) = exp(1.7 tr B) for a random 3x3 B (relative error < 1e-10): True")

# %% [markdown]
# Numerically, a nonlinear 2-d field is integrated with the classical Runge–Kutta method (the
# library's `rk4_flow_with_divergence`, which carries the divergence integral along with the state),
# and the integral is compared with the log-determinant of the flow map's Jacobian, obtained by
# finite differences of whole trajectories.

# %% tags=["hide-cell"]
def field(x):
    """A nonlinear field on R^2, x (..., 2) -> (..., 2)."""
    return np.stack([np.sin(x[..., 1]) + 0.3 * x[..., 0] - 0.1 * x[..., 0] ** 3,
                     x[..., 0] - 0.2 * x[..., 1] + 0.1 * np.sin(x[..., 1])], axis=-1)


def field_divergence(x):
    """d u1 / d x1 + d u2 / d x2 of `field` (the velocity u), x (..., 2) -> (...)."""
    return 0.3 - 0.3 * x[..., 0] ** 2 - 0.2 + 0.1 * np.cos(x[..., 1])


def flow_map(x):
    """The end point of the flow from x after time 1.5 (300 RK4 steps)."""
    return rk4_flow_with_divergence(x, field, field_divergence, t_end=1.5, n_steps=300)[0]


# %% tags=["hide-cell"]
x_start = np.array([1.6, 0.5])
_, divergence_integral = rk4_flow_with_divergence(x_start, field, field_divergence,
                                                  t_end=1.5, n_steps=300)
flow_jacobian = central_difference(flow_map, x_start, h=1e-5)  # (2, 2)
log_det_flow = np.linalg.slogdet(flow_jacobian)[1]
print(f"log|det D phi_s| (finite differences) = {produced(log_det_flow, '.5f')};  "
      f"integral of div u = {produced(float(divergence_integral), '.5f')}")
assert abs(log_det_flow - float(divergence_integral)) < 1e-6

# %% [markdown]
# The divergence of this field varies along the path, and its integral matches the finite-difference
# log-determinant of the flow map to $10^{-6}$:
# $\log p_s(x_s)=\log p_0(x_0)-\int_0^s\nabla\!\cdot u$. The score-flow claim of §2.1 (with
# $u_s=\nabla\log p_s$ the flow ascends $\log p_s$) is checked in [5.2](02_svflow_properties.ipynb) (Corollary
# 3.4) for one time slice of the Gaussian-mixture SVFlow: there the mixture $p$ is held fixed while the
# states move, so what 5.2 shows is the ascent of that fixed $\log p$.

# %% [markdown]
# ## Reproducibility
#
# Everything on this page is computed from closed forms, sympy, quadrature, mpmath (the Bessel function
# beyond double precision, for its overflow points) and seeded random numbers (seeds 0, 3 and 11); there is no training and no saved run. Library: `nextword.theory.svflow`
# (sphere geometry, vMF, `rk4_flow_with_divergence`), `nextword.decoder.rms_norm`,
# `nextword.numerics.central_difference`; Figures 5.1.1–5.1.4 from
# `nextword.booktools.schematics.sphere`.

# %% tags=["hide-cell", "nbval-ignore-output"]
# nbval-ignore-output: package versions
import scipy  # noqa: E402

print(f"numpy {np.__version__}, scipy {scipy.__version__}, sympy {sp.__version__}")
