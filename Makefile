# SliceLab: `make demo` and `make test` do everything on a fresh Debian 12 machine with Swift 6.
SHELL := /bin/bash
SWIFT ?= swift
VENV := .venv
PYTHON := $(VENV)/bin/python
APT_PACKAGES := libdcmtk-dev dcmtk libpng-dev libhdf5-dev libdnnl-dev libopenjp2-7-dev pkg-config python3-venv
REQUIREMENTS := Tests/requirements.txt $(wildcard Notebooks/requirements.txt)
SUDO := $(shell [ "$$(id -u)" = 0 ] || echo sudo)

.PHONY: setup apt build release test demo bench clean corpus

## setup: install missing Debian packages and the Python virtual environment (idempotent)
setup: apt $(VENV)/.installed corpus

apt:
	@missing=""; for p in $(APT_PACKAGES); do \
	  dpkg-query -W -f='$${Status}' $$p 2>/dev/null | grep -q "install ok installed" || missing="$$missing $$p"; \
	done; \
	if [ -n "$$missing" ]; then \
	  echo "make setup: installing$$missing"; \
	  $(SUDO) apt-get update -qq && DEBIAN_FRONTEND=noninteractive $(SUDO) apt-get install -y -qq $$missing; \
	fi

$(VENV)/.installed: $(REQUIREMENTS)
	@[ -x $(PYTHON) ] || python3 -m venv $(VENV)
	$(PYTHON) -m pip install -q --upgrade pip
	$(PYTHON) -m pip install -q $(addprefix -r ,$(REQUIREMENTS))
	@touch $@

## build: debug build of every target
build: setup
	$(SWIFT) build

release: setup
	$(SWIFT) build -c release

## test: build and run every test
test: setup
	$(SWIFT) build --build-tests
	SLICELAB_PYTHON=$(abspath $(PYTHON)) $(SWIFT) test --skip-build

## demo: release build, then the main job on the bundled data
demo: release
	.build/release/slicelab demo

## bench: benchmarks against their peers (installs the peers into .venv)
bench: release
	$(PYTHON) -m pip install -q -r Benchmarks/requirements.txt
	$(PYTHON) Benchmarks/run.py

clean:
	rm -rf .build demo-output

## corpus: the DICOM conformance corpus (every file of the PyPI packages pydicom-data and pydicom), into
## Datasets/cache/dicom-corpus; idempotent (issue #3, Datasets/dicom/fetch_corpus.sh)
corpus:
	@bash Datasets/dicom/fetch_corpus.sh
