# Two commands do everything, each with its own set-up on a fresh machine:
#   make course   create .venv, install, open JupyterLab on notebooks/
#   make test     create .venv, install, run the whole test suite
#   make html     the offline HTML edition of the executed notebooks: English in html/, 中文版 in html/zh/
#   make slides   one offline reveal.js deck per notebook, in html/slides/ and html/zh/slides/ (SLIDES_ARGS=--fast)
#                 (EDITION_LANGUAGES="en" or "zh": one language only)
#
# torch is installed first and on its own, so that no open version range pulls a multi-GB CUDA build
# onto a CPU machine. Choose the build with TORCH_SPEC / TORCH_PIP_ARGS, e.g. on a laptop:
#   make course TORCH_PIP_ARGS="--index-url https://download.pytorch.org/whl/cpu"
# and for an NVIDIA GPU (CUDA 12.8 wheels):
#   make course TORCH_PIP_ARGS="--index-url https://download.pytorch.org/whl/cu128"

PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
TORCH_SPEC ?= torch==2.13.0
TORCH_PIP_ARGS ?=
PYTEST_ARGS ?=

.PHONY: install course test test-fast lint format benchmarks html slides clean

$(VENV)/.installed: pyproject.toml
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --upgrade pip
	$(BIN)/python -m pip install "$(TORCH_SPEC)" $(TORCH_PIP_ARGS)
	$(BIN)/python -m pip install -e ".[dev]"
	touch $@

install: $(VENV)/.installed

course: install
	$(BIN)/jupyter lab notebooks/

test: install lint
	TC_FAST=1 $(BIN)/python -m pytest $(PYTEST_ARGS)

# ruff (a [dev] dependency): lint everything, check that the package, tests and benchmarks are formatted.
lint: install
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .

format: install
	$(BIN)/ruff check --fix .
	$(BIN)/ruff format .

test-fast: install
	TC_FAST=1 $(BIN)/python -m pytest -m "not slow and not notebooks and not browser" $(PYTEST_ARGS)

benchmarks: install
	$(BIN)/python benchmarks/model_vs_nn_transformer.py
	$(BIN)/python benchmarks/decode_speed.py
	$(BIN)/python benchmarks/padding.py
	$(BIN)/python benchmarks/notebook_times.py

EDITION_LANGUAGES ?= en zh
html: install
	$(BIN)/python -m transformer_course.edition --check --languages $(EDITION_LANGUAGES)

SLIDES_ARGS ?=
slides: install
	$(BIN)/python -m transformer_course.edition --slides --check --languages $(EDITION_LANGUAGES) $(SLIDES_ARGS)

clean:
	rm -rf $(VENV) build *.egg-info .pytest_cache
