# nextword — two commands do everything on a fresh machine with Python >= 3.10 and make:
#   make book   create the environment, execute every chapter, render the HTML book (_build/html, Sphinx)
#   make test   create the environment, run the library tests and pytest --nbval on every notebook
PYTHON ?= python3
VENV   ?= .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.nextword-installed
# The extras installed: CI (.ci/run passes EXTRAS=all,instructor, and so does a run with CI set) adds the
# instructor extra, so the otter-grader/nbgrader end-to-end test runs; elsewhere it is skipped with a message.
EXTRAS ?= $(if $(CI),all$(comma)instructor,all)
comma  := ,
JOBS   ?= 2
# The notebook passes run one worker more than JOBS: a notebook's kernel spends part of its life starting,
# waiting on the pytest worker and stopping, and a third notebook fills those gaps (measured on 2 cores:
# each pass 3-14 % shorter with 3 workers than with 2 in four alternating pairs; whole make test runs half
# an hour apart drift by more than that).
NBJOBS ?= $(shell expr $(JOBS) + 1)
# nbval needs matplotlib's inline backend (Agg drops the figure's text output) and the default run.
# NEXTWORD_WARM_KERNELS=1: on Linux each notebook's new kernel is forked from a parent that has imported
# torch, matplotlib, sympy and scipy once, instead of importing them again (nextword/booktools/warm_kernel.py;
# a quarter of the passes' time); elsewhere kernels start as usual.
NBENV  := env -u MPLBACKEND FULL=0 NEXTWORD_WARM_KERNELS=1
# -p no:hypothesispytest: the notebook passes use no hypothesis, and its pytest plugin imports all of it
# (3 s in every pytest process: the main one and each worker, in both passes).
NBVAL  := --nbval --nbval-current-env --nbval-sanitize-with book/nbval_sanitize.cfg -p no:cacheprovider \
	-p no:hypothesispytest
# The portability pass (make test-notebooks-kernels): the same notebooks with other CPU kernels selected (OpenBLAS's Sandybridge
# kernels, torch's non-vectorised ATen kernels, numpy without AVX2/FMA/AVX-512 loops), two BLAS/OpenMP
# threads instead of one (conftest.py reads NEXTWORD_THREADS), and every training run perturbed:
# NEXTWORD_PERTURB=1 makes each training entry point of the library multiply its initial weights by
# 1 + 1e-3 u (u uniform in [-1, 1], a fixed pattern; nextword/perturbation.py). A stored output that
# changes under it was produced, not exact: print it through nextword.booktools.display.produced and
# assert its claim (README, "Adding or editing a notebook"). Stored outputs must survive both passes.
# Whether they do is a property of the committed pages, the same on every machine (like the seeds reruns):
# outside make test's 15-minute budget on 2 cores, .ci/run runs it right after make test on every change.
# OMP_WAIT_POLICY=PASSIVE: three notebooks of two threads each share two cores, so an idle OpenMP thread
# sleeps instead of spinning on the core another notebook needs (a scheduling choice; no number changes).
# OPENBLAS_THREAD_TIMEOUT=4 does the same for numpy's OpenBLAS threads (they spin 2^4 cycles, not 2^28,
# before sleeping): without it, 4.6's cell of many small LAPACK calls (its log-determinants) took 38 s in this
# pass against 2 s in the first, its two BLAS threads spinning for cores the other notebook held.
KERNELS := OPENBLAS_CORETYPE=Sandybridge ATEN_CPU_CAPABILITY=default \
	NPY_DISABLE_CPU_FEATURES="AVX512F AVX512CD AVX512_SKX AVX512_CLX AVX512_CNL AVX512_ICL AVX2 FMA3" \
	NEXTWORD_THREADS=2 NEXTWORD_PERTURB=1 OMP_WAIT_POLICY=PASSIVE OPENBLAS_THREAD_TIMEOUT=4

.PHONY: help env lint test test-lib test-browser test-seeds test-exercises test-notebooks test-notebooks-kernels book book-html render lab sync exercises bench results gpu-check test-instructor clean

help:
	@echo "make book   - set up, execute every notebook in book/, render _build/html/index.html"
	@echo "make book-html - render the committed executed notebooks to _build/html (no execution; incremental)"
	@echo "make test   - set up, lint, render the book, library tests + doctests, pytest --nbval on book/ and solutions/"
	@echo "make test-notebooks-kernels - the notebooks again with other CPU kernels, 2 threads and perturbed training (CI runs it)"
	@echo "make test-browser - open the rendered book in headless Chromium (axe-core after make axe; CI runs it)"
	@echo "make test-exercises - execute every generated exercise until its first stub (CI runs it)"
	@echo "make test-seeds - rerun the pages that train with seeds 1 and 2 and perturbation patterns 2 and 3 (their asserted claims must hold; CI runs it)"
	@echo "make lint   - ruff check and the import-linter contracts (.importlinter)"
	@echo "make lab    - open JupyterLab on book/ (to work on the exercises: nextword exercises copy DIR)"
	@echo "make sync   - regenerate every .ipynb from its .py (jupytext pairing, keeps outputs)"
	@echo "make exercises - regenerate exercises/ from solutions/"
	@echo "make bench  - run the benchmarks in benchmarks/ and print their goals, met or not (ratios measured in the run)"
	@echo "make results - train (resumably) and save the runs under book/results/ that are not current (long)"
	@echo "make gpu-check - on a CUDA GPU (at most about 8 min, its --budget): CUDA vs CPU, bf16 AMP, steps/s, the §7 pair (nextword gpu-check)"

# The environment is rebuilt only when pyproject.toml changes (the stamp is older than it).
$(STAMP): pyproject.toml
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --disable-pip-version-check -e '.[$(EXTRAS)]'
	$(BIN)/python -m nextword check-env
	touch $@

env: $(STAMP)

# The book is rendered once (book-html); the tests of its HTML files in tests/booktools reuse _build/html
# (NEXTWORD_BOOK_HTML_FRESH=1, for test's prerequisites: their fixture skips its own incremental Sphinx
# build, 12 s of a worker that make test has just spent; test-lib on its own still brings the HTML up to date).
test: export NEXTWORD_BOOK_HTML_FRESH := 1
test: $(STAMP) lint book-html test-lib test-notebooks

# the rules of the house: ruff's lint rules (pyproject.toml) and the import contracts (.importlinter)
lint: $(STAMP)
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/lint-imports

test-lib: $(STAMP)
	$(BIN)/python -m pytest -n $(JOBS) --doctest-modules nextword tests \
		-m "not instructor and not seeds and not exercises and not browser"

# The rendered book opened in headless Chromium (tests marked browser, tests/booktools/conftest.py):
# what the committed book looks like to a reader, not your machine's numbers; a few minutes of CPU
# with the browser's. Outside make test's time budget, run by .ci/run (with make axe) after it.
test-browser: $(STAMP)
	$(BIN)/python -m pytest -p no:cacheprovider -n $(JOBS) -m browser tests/booktools

# The pages that train rerun as scripts with seeds 1 and 2, and every page that shows produced numbers with
# NEXTWORD_PERTURB=2 and =3 (tests/test_notebook_seeds.py): every claim they assert must hold for other seeds
# and other trajectories too. Minutes of CPU, a property of the pages rather than of your
# machine: outside make test's time budget, run by .ci/run after it on every change.
test-seeds: $(STAMP)
	$(BIN)/python -m pytest -p no:cacheprovider -n $(JOBS) -m seeds tests/test_notebook_seeds.py

# Every generated student notebook (exercises/) executed until its first stub (tests/booktools/
# test_exercise_builder.py; make test executes one): a property of the generator and the committed files,
# the same on every machine; before its first stub each runs its solution's cells (a test in make test
# checks that, word for word), which make test checks under nbval. Thirty kernels, about a minute of
# CPU: outside make test's time budget, run by .ci/run.
test-exercises: $(STAMP)
	$(BIN)/python -m pytest -p no:cacheprovider -n $(JOBS) -m exercises tests/booktools/test_exercise_builder.py

# The instructors' export graded end to end by otter-grader and nbgrader (the `instructor` extra; minutes):
# outside make test's time budget, run by .ci/run after it.
test-instructor: $(STAMP)
	PATH="$(abspath $(BIN)):$$PATH" $(BIN)/python -m pytest -p no:cacheprovider -m instructor tests/booktools/test_exercise_export.py \
		tests/booktools/test_instructor_commands.py

test-notebooks: $(STAMP)
	$(NBENV) $(BIN)/python -m pytest -n $(NBJOBS) --dist loadfile $(NBVAL) book solutions

test-notebooks-kernels: $(STAMP)
	$(NBENV) $(KERNELS) $(BIN)/python -m pytest -n $(NBJOBS) --dist loadfile $(NBVAL) book solutions

book: $(STAMP)
	$(NBENV) $(BIN)/nextword book build -j $(JOBS) book/*/*.py
	$(MAKE) book-html

# Sphinx + MyST-NB (book/conf.py) renders the committed, executed .ipynb files: what nbval checks.
book-html: $(STAMP)
	$(BIN)/nextword book render -j $(JOBS)
	@echo "open _build/html/index.html"

render: book-html

lab: $(STAMP)
	$(BIN)/jupyter lab book/

sync: $(STAMP)
	$(BIN)/nextword book sync --all

exercises: $(STAMP)
	$(BIN)/nextword exercises build

# Each benchmark appends its goals' rows to one file; benchmarks/targets.py prints them as a table
# (ratios measured in this run; NO = goal not met). The margin step is also timed on a CUDA GPU if
# there is one.
bench: $(STAMP)
	@t=$$(mktemp) && trap 'rm -f $$t' EXIT && \
	for b in benchmarks/bench_*.py; do echo "== $$b"; $(BIN)/python $$b --targets $$t || exit 1; done && \
	if $(BIN)/python -c "import sys, torch; sys.exit(not torch.cuda.is_available())" 2>/dev/null; then \
	  echo "== benchmarks/bench_margin.py --device cuda"; \
	  $(BIN)/python benchmarks/bench_margin.py --device cuda --no-memory --targets $$t || exit 1; fi && \
	$(BIN)/python benchmarks/targets.py $$t

# Not part of `make test`: hours of CPU. Resumable (runs/ keeps checkpoints); skips saved results
# whose configuration and code commit are current. One torch thread per run, niced.
results: $(STAMP)
	nice -n 10 $(BIN)/nextword results run --threads 1

# Not part of `make test`: needs one CUDA GPU (without one it says so and exits 2); results in runs/gpu-check/.
# `nextword gpu-check --dry-run` rehearses it on the CPU in seconds (tests/torch/runs/test_gpu_check.py).
gpu-check: $(STAMP)
	$(BIN)/nextword gpu-check

clean:
	rm -rf _build .pytest_cache .hypothesis

# --- accessibility and the PDF edition (issue #31) ---------------------------------------------------------
# axe-core (npm, MPL-2.0) for the browser test's accessibility check, into _build/axe (read by
# tests/booktools/test_book_browser.py in make test-browser; without it that check skips, except in CI).
AXE := _build/axe/node_modules/axe-core/axe.min.js
TEX_PACKAGES := latexmk texlive-xetex texlive-latex-recommended texlive-latex-extra texlive-fonts-recommended \
	fonts-freefont-otf fonts-dejavu-core tex-gyre texlive-lang-greek lmodern poppler-utils
.PHONY: axe pdf tex test-pdf

axe: $(AXE)
$(AXE):
	@command -v npm >/dev/null || { echo "no npm: install Node.js to run the accessibility check"; exit 1; }
	npm install --no-save --no-audit --no-fund --prefix _build/axe axe-core@4.14

# TeX from Debian when it is missing (as root, e.g. in CI); elsewhere the command to run is printed. The print
# preamble (book/conf.py) takes the glyphs FreeFont lacks (⊤, ᵀ, ⪰) from DejaVu Sans, so that font counts too.
tex:
	@command -v latexmk >/dev/null && command -v xelatex >/dev/null && fc-list 2>/dev/null | grep -q "DejaVu Sans" && exit 0; \
	if [ "$$(id -u)" -eq 0 ] && command -v apt-get >/dev/null; then \
	  apt-get update -q && DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends $(TEX_PACKAGES); \
	else echo "TeX or its fonts (DejaVu Sans) are missing: sudo apt-get install $(TEX_PACKAGES)"; exit 1; fi

# The whole book as one PDF (_build/nextword.pdf): Sphinx's LaTeX builder on the executed notebooks, xelatex.
# Slow (minutes): not part of `make test`; .ci/run builds it once and runs its test (test-pdf).
pdf: $(STAMP) tex
	$(BIN)/nextword book pdf

test-pdf: $(STAMP)
	NEXTWORD_PDF_REQUIRED=1 $(BIN)/python -m pytest -p no:cacheprovider tests/booktools/test_book_pdf.py
