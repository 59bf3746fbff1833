# Two commands do everything, each with its own set-up on a fresh machine:
#   make course   create .venv, install what a learner needs ([notebooks]), open JupyterLab on notebooks/
#                 (as root too: --allow-root is added only when the user is root; LAB_ARGS="--no-browser …" adds flags)
#   make test     create .venv, install the maintainers' tools too ([dev]), run the whole test suite (CI runs it)
#   make test-fast  the unit tests only (no notebooks, browser or training processes): about a minute
#   make html     the offline HTML edition of the executed notebooks: English in html/, 中文版 in html/zh/
#   make slides   one offline reveal.js deck per notebook, in html/slides/ and html/zh/slides/ (SLIDES_ARGS=--fast)
#                 (EDITION_LANGUAGES="en" or "zh": one language only)
#
# torch is installed first and on its own, so that no open version range pulls a multi-GB CUDA build
# onto a CPU machine. Choose the build with TORCH_SPEC / TORCH_PIP_ARGS, e.g. on a laptop:
#   make course TORCH_PIP_ARGS="--index-url https://download.pytorch.org/whl/cpu"
# and for an NVIDIA GPU (CUDA 12.8 wheels):
#   make course TORCH_PIP_ARGS="--index-url https://download.pytorch.org/whl/cu128"
# Behind a slow international link (README § 中文版), torch from a wheel mirror and the rest from a PyPI mirror.
# The spec pins the CPU wheel's local version (+cpu): PyPI's Linux torch is the CUDA build, and a plain
# torch==2.13.0 could be taken from the PyPI mirror instead of the -f page. macOS wheels have no +cpu (they are
# CPU/MPS already): there, PIP_INDEX_URL alone.
#   make course PIP_INDEX_URL=https://pypi.tuna.tsinghua.edu.cn/simple TORCH_SPEC="torch==2.13.0+cpu" TORCH_PIP_ARGS="-f https://mirrors.aliyun.com/pytorch-wheels/cpu/"

PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
TORCH_SPEC ?= torch==2.13.0
TORCH_PIP_ARGS ?=
PYTEST_ARGS ?=
LAB_ARGS ?=
# A PyPI mirror for every pip command of the recipes (pip reads PIP_INDEX_URL): exported when it is given on the
# make line or in the environment, left alone (pip's own configuration) when it is not.
ifdef PIP_INDEX_URL
export PIP_INDEX_URL
endif
# JupyterLab refuses to start as root without --allow-root (containers and cloud notebooks often run as root).
ALLOW_ROOT := $(shell [ "$$(id -u 2>/dev/null)" = 0 ] && echo --allow-root)

.PHONY: install install-course course test test-fast lint format benchmarks html slides clean

# One stamp per extra: a learner's .venv holds [notebooks]; `make test` (or install) adds [dev] to it.
$(VENV)/.installed-notebooks: pyproject.toml
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --upgrade pip
	$(BIN)/python -m pip install "$(TORCH_SPEC)" $(TORCH_PIP_ARGS)
	$(BIN)/python -m pip install -e ".[notebooks]"
	touch $@

$(VENV)/.installed: $(VENV)/.installed-notebooks
	$(BIN)/python -m pip install -e ".[dev]"
	touch $@

install-course: $(VENV)/.installed-notebooks

install: $(VENV)/.installed

course: install-course
	$(BIN)/jupyter lab $(ALLOW_ROOT) $(LAB_ARGS) notebooks/

# Every test, spread over the cores by pytest-xdist, one test file per worker at a time (tests/conftest.py);
# TEST_WORKERS=0 runs it in one process. The 25 slowest tests are listed at the end, so that a slower CI says why.
TEST_WORKERS ?= auto
test: install lint
	TC_FAST=1 $(BIN)/python -m pytest -n $(TEST_WORKERS) --dist loadgroup --durations=25 $(PYTEST_ARGS)

# ruff (a [dev] dependency): lint everything, check that the package, tests and benchmarks are formatted.
lint: install
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .

format: install
	$(BIN)/ruff check --fix .
	$(BIN)/ruff format .

# The contributor's loop: every test not marked slow, notebooks or browser (markers: pyproject.toml), spread
# over the machine's cores by pytest-xdist (a [dev] tool; FAST_WORKERS=0 runs it in one process). The five
# slowest are listed at the end: a hint at tests that belong in the slow tier (CONTRIBUTING.md).
FAST_WORKERS ?= auto
test-fast: install
	TC_FAST=1 $(BIN)/python -m pytest -m "not slow and not notebooks and not browser" -n $(FAST_WORKERS) --durations=5 $(PYTEST_ARGS)

benchmarks: install
	$(BIN)/python benchmarks/model_vs_nn_transformer.py
	$(BIN)/python benchmarks/decode_speed.py
	$(BIN)/python benchmarks/padding.py
	$(BIN)/python benchmarks/notebook_times.py

EDITION_LANGUAGES ?= en zh
html: install
	$(BIN)/python -m course_tools.edition --check --languages $(EDITION_LANGUAGES)

SLIDES_ARGS ?=
slides: install
	$(BIN)/python -m course_tools.edition --slides --check --languages $(EDITION_LANGUAGES) $(SLIDES_ARGS)

clean:
	rm -rf $(VENV) build *.egg-info .pytest_cache
