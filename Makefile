# SliceLab: `make demo` and `make test` do everything on a fresh Debian 12 machine with Swift 6.
SHELL := /bin/bash
SWIFT ?= swift
VENV := .venv
PYTHON := $(VENV)/bin/python
APT_PACKAGES := libdcmtk-dev dcmtk libpng-dev libhdf5-dev libdnnl-dev libopenjp2-7-dev libnifti2-dev zlib1g-dev \
	libdeflate-dev libonnx-dev libprotobuf-dev dicom3tools orthanc orthanc-dicomweb iproute2 openssl libcurl4-openssl-dev pkg-config python3-venv chromium slurm-wlm munge \
	libopenmpi-dev openmpi-bin
REQUIREMENTS := Tests/requirements.txt $(wildcard Notebooks/requirements.txt)
SUDO := $(shell [ "$$(id -u)" = 0 ] || echo sudo)

.PHONY: setup apt build release test lint format docs test-torchvision test-nnunet test-pacs notebooks demo bench clean corpus fuzz cluster-test

## setup: install missing Debian packages and the Python virtual environment (idempotent)
setup: apt $(VENV)/.installed corpus

apt:
	@missing=""; for p in $(APT_PACKAGES); do \
	  dpkg-query -W -f='$${Status}' $$p 2>/dev/null | grep -q "install ok installed" || missing="$$missing $$p"; \
	done; \
	if [ -n "$$missing" ]; then \
	  echo "make setup: installing$$missing"; \
	  $(SUDO) apt-get update -qq && DEBIAN_FRONTEND=noninteractive $(SUDO) apt-get install -y -qq $$missing; \
	  case "$$missing" in *orthanc*) \
	    echo "make setup: Debian starts Orthanc as a service on every interface; the tests start their own: stopping it"; \
	    ($(SUDO) systemctl disable --now orthanc 2>/dev/null || $(SUDO) service orthanc stop 2>/dev/null || true);; \
	  esac; \
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

## test: build and run every test, then execute the notebooks
test: setup lint
	$(SWIFT) build --build-tests
	SLICELAB_PYTHON=$(abspath $(PYTHON)) $(SWIFT) test --skip-build
	$(MAKE) --no-print-directory notebooks
	$(MAKE) --no-print-directory docs

## docs: the DocC reference (Sources/<Target>/<Target>.docc) as static HTML in .build/docs; a broken link fails
docs: setup
	Scripts/docs.sh

## lint: `swift format lint` with the repository's .swift-format (the formatter ships with the toolchain)
lint:
	$(SWIFT) format lint --strict --recursive --parallel Sources Tests Package.swift

## format: rewrite the sources as .swift-format says
format:
	$(SWIFT) format format --in-place --recursive --parallel Sources Tests Package.swift

## cluster-test: a one-node Slurm on localhost (started and stopped by Cluster/cluster-test.sh) runs a sharded
## compare as a job array and the dependent merge; the merged file must equal one process's (issue #20)
cluster-test: setup
	$(SWIFT) build --product slicelab
	Cluster/cluster-test.sh $(abspath .build/debug/slicelab) $(abspath $(PYTHON))

## test-torchvision: the torchvision export loaded by torchvision's own constructors (PyTorch in .venv-torch,
## Datasets/goldens/requirements-deeplab.txt; `make test` skips this check and says so)
test-torchvision: setup
	@[ -x .venv-torch/bin/python ] || python3 -m venv .venv-torch
	.venv-torch/bin/python -m pip install -q --no-cache-dir -r Datasets/goldens/requirements-deeplab.txt
	$(SWIFT) build --build-tests
	SLICELAB_PYTHON=$(abspath $(PYTHON)) SLICELAB_TORCH_PYTHON=$(abspath .venv-torch/bin/python) \
	  $(SWIFT) test --skip-build --filter TorchvisionExportTests

## test-nnunet: nnU-Net's own verify_dataset_integrity on a `slicelab dataset export`, and its folds against
## SliceLab's (nnunetv2 in .venv-nnunet, Tests/nnunet/requirements.txt; `make test` checks the layout rules only)
test-nnunet: setup
	@[ -x .venv-nnunet/bin/python ] || python3 -m venv .venv-nnunet
	.venv-nnunet/bin/python -m pip install -q --no-cache-dir -r Tests/nnunet/requirements.txt
	$(SWIFT) build
	.venv-nnunet/bin/python Tests/nnunet/verify_export.py $(abspath .build/debug/slicelab)

## test-pacs: the DICOM node against Debian's Orthanc, inside a private network namespace (Tests/PACS/pacs_test.py)
test-pacs: setup
	$(SWIFT) build --product slicelab
	$(PYTHON) Tests/PACS/pacs_test.py $(abspath .build/debug/slicelab)

## notebooks: execute every notebook headless against the debug build (figures in Notebooks/output/)
notebooks: setup
	$(SWIFT) build --product slicelab
	SLICELAB_BINARY=$${SLICELAB_BINARY:-$(abspath .build/debug/slicelab)} $(PYTHON) Notebooks/run_notebooks.py --require-all

## demo: release build, then the main job on the bundled data
demo: release
	.build/release/slicelab demo

## bench: benchmarks against their peers (installs the peers into .venv)
bench: release
	$(PYTHON) -m pip install -q -r Benchmarks/requirements.txt
	$(PYTHON) Benchmarks/run.py

clean:
	rm -rf .build demo-output Tests/Fuzz/.build

## fuzz: libFuzzer + AddressSanitizer on every reader of outside files (Tests/Fuzz/, issue #10), FUZZ_SECONDS each
## (default 60; FUZZ_TARGETS picks runs). Any crash, leak, timeout (> 2 s) or allocation (> 2 GB) fails.
## swiftc keeps only the last -sanitize= it is given, so the fuzzer and address sanitizers go in one flag.
FUZZ_SECONDS ?= 60
fuzz: setup
	cd Tests/Fuzz && $(SWIFT) build -c release --sanitize=fuzzer --sanitize=address -Xswiftc -sanitize=fuzzer,address
	$(PYTHON) Tests/Fuzz/make_seeds.py . Tests/Fuzz/work/seeds
	@mkdir -p Tests/Fuzz/work/seeds/checkpoint
	SLICELAB_FUZZ_WRITE_SEED=Tests/Fuzz/work/seeds/checkpoint/mobilenet-tiny.h5 Tests/Fuzz/.build/release/fuzz-checkpoint
	FUZZ_SECONDS=$(FUZZ_SECONDS) Tests/Fuzz/run.sh $(FUZZ_TARGETS)

## corpus: the DICOM conformance corpus (every file of the PyPI packages pydicom-data and pydicom), into
## Datasets/cache/dicom-corpus; idempotent (issue #3, Datasets/dicom/fetch_corpus.sh)
corpus:
	@bash Datasets/dicom/fetch_corpus.sh

# --- datasets: labeled sets (Datasets/README.md) built by Python scripts into Datasets/cache/ -----------
DATASETS_VENV := .venv-datasets
DATASETS_PYTHON := $(DATASETS_VENV)/bin/python
.PHONY: datasets

## datasets: build mni-brain, brain-lesion and mni-brain-3d (nnU-Net v2) into Datasets/cache/ (downloads only the
## pinned nilearn wheel); the builders' own tests run first
datasets: apt $(DATASETS_VENV)/.installed
	$(DATASETS_PYTHON) -m unittest discover -s Datasets -p 'test_*.py'
	$(DATASETS_PYTHON) Datasets/build_mni_brain.py --out Datasets/cache/mni-brain
	$(DATASETS_PYTHON) Datasets/build_brain_lesion.py --out Datasets/cache/brain-lesion
	$(DATASETS_PYTHON) Datasets/build_mni_brain_3d.py --out Datasets/cache/mni-brain-3d
	$(DATASETS_PYTHON) Datasets/check_labeled_set.py Datasets/cache/mni-brain Datasets/cache/brain-lesion \
	    Datasets/cache/mni-brain-3d

$(DATASETS_VENV)/.installed: Datasets/requirements-datasets.txt
	@[ -x $(DATASETS_PYTHON) ] || python3 -m venv $(DATASETS_VENV)
	$(DATASETS_PYTHON) -m pip install -q -r Datasets/requirements-datasets.txt
	@touch $@
# --- end datasets ------------------------------------------------------------------------------------------
