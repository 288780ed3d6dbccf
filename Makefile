# One command to run the app, one to run the tests. Each sets itself up on a fresh machine.
PYTHON ?= python3
VENV   := .venv
PY     := $(VENV)/bin/python
# Reinstall whenever pyproject.toml or the pins change.
STAMP  := $(VENV)/.installed-$(shell cat pyproject.toml constraints.txt | sha1sum | cut -c1-12)

.PHONY: run test setup chromium lint format docs bench-upload constraints clean

# `make run PORT=9000 HOST=0.0.0.0` (or PORT/HOST in the environment or .env); default 127.0.0.1:8000.
run: $(STAMP)
	$(PY) -m app serve $(if $(HOST),--host $(HOST)) $(if $(PORT),--port $(PORT))

test: $(STAMP) chromium
	bash scripts/pytest.sh $(PYTEST_ARGS)

setup: $(STAMP)

# Pinned by constraints.txt (the tested set): a fresh machine gets the same versions, and pip
# never backtracks through s3fs's and moto's botocore ranges.
$(STAMP): pyproject.toml constraints.txt
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -c constraints.txt -e '.[dev]'
	rm -f $(VENV)/.installed-*
	touch $@

chromium:
	bash scripts/ensure-chromium.sh

lint: $(STAMP)
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .
	$(VENV)/bin/mypy app benchmarks

format: $(STAMP)
	$(VENV)/bin/ruff check --fix .
	$(VENV)/bin/ruff format .

# The documentation site (MkDocs) from docs/, into site/; --strict: a broken link fails.
docs: $(STAMP)
	$(VENV)/bin/mkdocs build --strict

bench-upload: $(STAMP)
	$(PY) -m benchmarks.bench_upload

# The pinned set the Docker image installs: regenerate after changing dependencies.
constraints: $(STAMP)
	bash scripts/freeze-constraints.sh > constraints.txt

clean:
	rm -rf $(VENV) var .pytest_cache .mypy_cache .ruff_cache
