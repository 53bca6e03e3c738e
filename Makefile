# Benchmarks (see benchmarks/README.md). The tests have their own commands in README.md.
PYTHON ?= python
# make bench runs against the source tree, built in place; tox -e bench against a built wheel.
export PYTHONPATH := $(CURDIR)

.PHONY: build bench bench-compare bench-baseline bench-tox

build:
	$(PYTHON) setup.py build_ext --inplace

bench: build
	$(PYTHON) benchmarks/run.py

bench-compare: build
	$(PYTHON) benchmarks/run.py --compare

bench-baseline: build
	$(PYTHON) benchmarks/run.py --save-baseline

bench-tox:
	tox -e bench
