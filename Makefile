# The two set-up commands: `make demo` and `make test`. Both create/refresh .venv first.
PYTHON ?= python3
VENV   := .venv
PY     := $(VENV)/bin/python
MEMPIPE := $(VENV)/bin/mempipe
DEMO_DB := sqlite:///var/mempipe.db

.PHONY: venv browser test demo bench schema clean

$(VENV)/.installed: pyproject.toml setup.py
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	$(PY) -m pip install -q -e '.[test]'
	touch $@

venv: $(VENV)/.installed

# The status page's browser test drives Debian's chromium. Installed when missing and possible
# (root with apt); a failure here does not stop `make test`: the test then skips and says why
# (under CI=true it fails instead).
browser:
	-@command -v chromium >/dev/null 2>&1 || (apt-get install -y -q chromium >/dev/null 2>&1 || \
	  (apt-get update -q >/dev/null 2>&1 && apt-get install -y -q chromium >/dev/null 2>&1)) || \
	  echo "chromium could not be installed: the browser test will skip (or fail under CI=true)"

test: venv browser
	$(PY) -m pytest

demo: venv
	mkdir -p var
	$(MEMPIPE) --db $(DEMO_DB) db upgrade
	$(MEMPIPE) --db $(DEMO_DB) import samples/community.jsonl
	$(MEMPIPE) --db $(DEMO_DB) replay --from 2026-11-01 --to 2026-11-04
	$(MEMPIPE) --db $(DEMO_DB) contexts
	@echo "== facts extracted about Cy (user 1160000000000000003)"
	$(MEMPIPE) --db $(DEMO_DB) facts show --user 1160000000000000003
	@echo "== Cy's profile in guild 1150000000000000001"
	$(MEMPIPE) --db $(DEMO_DB) profile --scope guild:1150000000000000001 --user 1160000000000000003
	$(MEMPIPE) --db $(DEMO_DB) runs

bench: venv
	$(PY) -m bench

# Regenerate sql/schema.<dialect>.sql from the migrations (needs the PostgreSQL server the tests use;
# MEMPIPE_TEST_PG_URL picks another). `$(PY) -m pipeline.db.schema --check` only compares.
schema: venv
	$(PY) -m pipeline.db.schema

clean:
	rm -rf var .pytest_cache
