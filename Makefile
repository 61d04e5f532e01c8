# Two commands for a fresh clone: `make run` and `make test`.
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed
QUESTION ?= How does Python's garbage collector handle reference cycles?

$(STAMP): pyproject.toml
	python3 -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	$(PY) -m pip install -q -e ".[test]"
	touch $(STAMP)

install: $(STAMP)

# The report's HTML and the web page are tested in real headless Chromium
# (Debian's package, driven by the pinned playwright; never a browser download).
browser:
	@command -v chromium >/dev/null 2>&1 || { \
	  if [ "$$(id -u)" = 0 ]; then apt-get update -qq && apt-get install -y -qq chromium >/dev/null; \
	  else echo "chromium is not installed: the browser tests will be skipped"; fi; }

run: $(STAMP)
	$(VENV)/bin/searchlake research "$(QUESTION)"

# The layers of the code (pyproject's [tool.importlinter]) are checked first. The tests
# run in two processes (pytest-xdist), each test file whole in one of them, so that a
# module's shared fixtures (a server, a research run) are made once.
test: $(STAMP) browser
	$(VENV)/bin/lint-imports --no-cache
	$(PY) -m pytest -q -n 2 --dist loadfile

# The manual (docs/, mkdocs.yml): docs-gen rewrites its pages generated from the code
# (tests/test_docs.py fails when they drift); docs builds the site into site/.
docs-gen: $(STAMP)
	$(PY) -m flows.cli.reference

docs: $(STAMP)
	NO_MKDOCS_2_WARNING=1 $(VENV)/bin/mkdocs build --strict --site-dir site

# The web page's screenshots in the manual (docs/page-*.png): one research run in a
# temporary home, then `searchlake serve` photographed in headless Chromium.
docs-screenshots: $(STAMP) browser
	$(PY) docs/screenshots.py

.PHONY: install browser run test docs-gen docs docs-screenshots
