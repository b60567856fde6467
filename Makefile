# nicsim build plumbing. Two commands do everything from a fresh clone:
#   make demo   set up (.venv, Python deps, the Rust core in release mode) and reproduce FlexPipe
#   make test   the same set-up, then `cargo test` and `pytest` (including a local Ray sweep)
# Also: make bench, make lint, make fuzz, make fuzz-xdp, make fuzz-config, make fuzz-props (not part of make test). Rust is built
# in release mode into $(CARGO_TARGET_DIR), for `make develop` and `make bench` profile-guided (an
# instrumented build first, see PGO below; `make demo` builds once, without). `make test` builds the extension, the wheel and `cargo test` with the profile
# test-release instead (Cargo.toml: release without link-time optimisation, whose pass per test
# binary took minutes), and without PGO.

SHELL := bash
.SHELLFLAGS := -eu -o pipefail -c
.DEFAULT_GOAL := demo
MAKEFLAGS += --no-print-directory

PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
PIP := $(PY) -m pip --disable-pip-version-check -q
CARGO ?= cargo
export CARGO_TARGET_DIR ?= $(CURDIR)/target
export VIRTUAL_ENV := $(CURDIR)/$(VENV)
# Ray: no usage-statistics prompt or upload from tests.
export RAY_USAGE_STATS_ENABLED := 0

# $(call need,COMMAND,APT_PACKAGE): make sure COMMAND exists. When it is missing, install
# APT_PACKAGE with apt if we are root, otherwise stop with a one-line message naming the package.
# Use in a recipe line:  @$(call need,tshark,tshark)
define need
command -v $(1) >/dev/null 2>&1 || { \
  if [ "$$(id -u)" -eq 0 ] && command -v apt-get >/dev/null 2>&1; then \
    echo "nicsim: installing $(2) (provides $(1))" >&2; \
    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $(2) >/dev/null; \
  else \
    echo "nicsim: '$(1)' is missing: install the package '$(2)' (apt-get install $(2)) and re-run" >&2; \
    exit 1; \
  fi; }
endef

# $(call need_file,FILE,APT_PACKAGE): the same for a file (a header).
define need_file
test -e $(1) || { \
  if [ "$$(id -u)" -eq 0 ] && command -v apt-get >/dev/null 2>&1; then \
    echo "nicsim: installing $(2) (provides $(1))" >&2; \
    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $(2) >/dev/null; \
  else \
    echo "nicsim: '$(1)' is missing: install the package '$(2)' (apt-get install $(2)) and re-run" >&2; \
    exit 1; \
  fi; }
endef

# Requirements of one or more sections of pyproject.toml, one per line:
# `build` (build-system), `deps` (project dependencies) or an optional-dependency extra.
define reqs
$(PY) -c 'import sys, tomllib; p = tomllib.load(open("pyproject.toml", "rb")); \
  s = {"build": p["build-system"]["requires"], "deps": p["project"]["dependencies"], **p["project"]["optional-dependencies"]}; \
  print("\n".join(r for k in sys.argv[1:] for r in s[k]))' $(1)
endef

.PHONY: demo test test-exec soundness profile-soundness system-tools test-tools bench lint develop tools xdp-tools xdp-suite veth-captures fuzz fuzz-tools fuzz-capture fuzz-xdp fuzz-config fuzz-props wheel

# The XDP program suite (python/nicsim/xdp/programs, which examples/xdp links to), compiled with
# clang for the BPF target into $(XDP_OUT) by python/nicsim/xdp/build.py, which an installed
# nicsim also uses: Count-Min once per stage count 1..20, QUIC-LB for IPv4 and IPv6, the RTP
# transcoder plain and optimised. The analyzer's test programs (tests/xdp, some refused on
# purpose) go to a folder of their own, $(XDP_TEST_OUT), so that `nicsim xdp sweep
# target/xdp/*.o` is the suite alone. An object is rebuilt when its source is newer.
XDP_OUT := $(CARGO_TARGET_DIR)/xdp
XDP_TEST_OUT := $(CARGO_TARGET_DIR)/xdp-tests
export NICSIM_XDP_OBJS := $(XDP_OUT)
export NICSIM_XDP_TEST_OBJS := $(XDP_TEST_OUT)

tools:
	@command -v $(PYTHON) >/dev/null 2>&1 || { echo "nicsim: '$(PYTHON)' is missing: install Python >= 3.11 (package python3)" >&2; exit 1; }
	@command -v $(CARGO) >/dev/null 2>&1 || { echo "nicsim: 'cargo' is missing: install Rust from https://rustup.rs" >&2; exit 1; }

$(PY): | tools
	$(PYTHON) -m venv $(VENV)
	$(PIP) install --upgrade pip

# Python dependencies, installed once; re-installed when pyproject.toml changes.
$(VENV)/.deps: pyproject.toml | $(PY)
	$(call reqs,build deps dev) > $(VENV)/requirements.txt
	$(PIP) install -r $(VENV)/requirements.txt
	@touch $@

# The optional Ray extra, for the test suite's distributed-sweep test.
$(VENV)/.deps-ray: pyproject.toml | $(VENV)/.deps
	$(call reqs,ray) > $(VENV)/requirements-ray.txt
	$(PIP) install -r $(VENV)/requirements-ray.txt
	@touch $@

# Profile-guided optimisation (PGO, BENCHMARKS.md "Profile-guided build"): the extension is
# first built instrumented (into $(PGO_DIR)/target), runs benches/pgo_train.py (a few seconds
# of datapath and router runs), and the counts it wrote ($(PROFDATA), merged without the
# functions that never ran, so that those are compiled as without PGO) steer the release build:
# about 10 % faster datapath runs. Redone when a Rust source changes. PGO=0 skips it; so does a
# toolchain whose llvm-profdata (rustup's llvm-tools component, added if missing) cannot be
# had, with a warning. Only where speed is the point (`make develop`, `make bench`): `make test`,
# `make wheel`, `make lint` and `make demo` (the default goal) build without it (BENCHMARKS.md
# "make test", "make demo": the second build cost the demo more than the faster runs gave back);
# `make test PGO=1` tests a profile-guided build (of the test-release profile), `make demo PGO=1`
# demonstrates one.
PGO ?= $(if $(filter-out test test-exec wheel lint demo,$(or $(MAKECMDGOALS),demo)),1,0)
# The CPU the release build targets: this machine's by default (`make develop` builds for the
# machine it runs on), without AVX-512, whose code for the SHA-3 offload's Keccak runs a third
# slower (BENCHMARKS.md "Target CPU"). CPU=x86-64 (or any rustc target CPU) for a portable
# build; the profile is kept per CPU.
CPU ?= native
CPU_RUSTFLAGS := $(if $(CPU),-Ctarget-cpu=$(CPU) $(if $(filter x86_64,$(shell uname -m)),-Ctarget-feature=-avx512f))
PGO_DIR := $(CARGO_TARGET_DIR)/pgo
PROFDATA := $(PGO_DIR)/nicsim-$(or $(CPU),default).profdata
RUST_SOURCES := $(wildcard crates/*/src/*.rs crates/*/src/*/*.rs crates/*/Cargo.toml) Cargo.toml Cargo.lock
# The release build's flags: the profile's once there is one (a shell expansion, as the
# profile is made during the run). Every release cargo and maturin call of this Makefile uses
# them, so that the tests reuse the extension's build.
RELEASE_RUSTFLAGS = $$(test -f $(PROFDATA) && echo "-Cprofile-use=$(PROFDATA) -Cllvm-args=-no-pgo-warn-mismatch")
# What the release build gets: the target CPU, and those flags unless PGO=0.
BUILD_RUSTFLAGS = $(CPU_RUSTFLAGS) $(if $(filter 1,$(PGO)),$(RELEASE_RUSTFLAGS))
LLVM_PROFDATA = $$(rustc --print sysroot)/lib/rustlib/$$(rustc -vV | sed -n 's/^host: //p')/bin/llvm-profdata

$(PROFDATA): $(RUST_SOURCES) benches/pgo_train.py | $(VENV)/.deps
	@rm -f $@
	@test -x "$(LLVM_PROFDATA)" || timeout 300 rustup component add llvm-tools >/dev/null 2>&1 || true
	@if ! test -x "$(LLVM_PROFDATA)"; then \
	  echo "nicsim: warning: no llvm-profdata (rustup component add llvm-tools): building without profile-guided optimisation" >&2; \
	else \
	  rm -rf $(PGO_DIR)/raw && \
	  echo "nicsim: profile-guided build, 1/2: instrumented" && \
	  RUSTFLAGS="$(CPU_RUSTFLAGS) -Cprofile-generate=$(PGO_DIR)/raw" CARGO_TARGET_DIR=$(PGO_DIR)/target $(VENV)/bin/maturin develop --release -q && \
	  $(PY) benches/pgo_train.py && \
	  "$(LLVM_PROFDATA)" merge --sparse -o $@ $(PGO_DIR)/raw && \
	  echo "nicsim: profile-guided build, 2/2: optimised with $@"; \
	fi

# The Cargo profile of the extension and the wheel: release (thin LTO) for users; `make test`
# builds them with test-release (Cargo.toml: release less LTO and debug information), the profile
# its `cargo test` uses, so that the dependencies are compiled once for both.
CARGO_PROFILE ?= release

# Build the Rust core (release) and install the package into .venv (editable Python sources).
develop: $(VENV)/.deps $(if $(filter 1,$(PGO)),$(PROFDATA))
	RUSTFLAGS="$(BUILD_RUSTFLAGS)" $(VENV)/bin/maturin develop --profile $(CARGO_PROFILE)

demo: develop
	$(VENV)/bin/nicsim reproduce flexpipe --out out/flexpipe

# Every Debian package that `make test` needs, as COMMAND-or-FILE:PACKAGE: when some are missing
# and we are root, one `apt-get update` and one `apt-get install` fetch them all (`make test` runs
# this beside the Rust build). The targets below still check their own with `need`, which names
# the package to install when we are not root.
SYSTEM_TOOLS := clang:clang llc:llvm /usr/include/bpf/bpf_helpers.h:libbpf-dev tshark:tshark tcpdump:tcpdump \
  /usr/share/gocode/src/github.com/google/gopacket/pcap/test_ethernet.pcap:golang-github-google-gopacket-dev \
  /usr/share/doc/python3-dpkt/examples/data/http.pcap:python3-dpkt
system-tools:
	@missing=""; for t in $(SYSTEM_TOOLS); do what=$${t%%:*}; \
	  case $$what in /*) test -e $$what ;; *) command -v $$what >/dev/null 2>&1 ;; esac || missing="$$missing $${t#*:}"; \
	done; \
	if [ -n "$$missing" ] && [ "$$(id -u)" -eq 0 ] && command -v apt-get >/dev/null 2>&1; then \
	  echo "nicsim: installing$$missing (apt-get)" >&2; \
	  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $$missing >/dev/null; \
	fi

# clang with the BPF target and libbpf's headers build the XDP suite; llc builds the test
# programs that are built as the XDP paper's objects were (clang -emit-llvm | llc). The uapi
# header and libbpf's bpf_helper_defs.h are also the helper lists the coverage test reads
# (crates/nicsim-xdp/tests/helper_coverage.rs).
xdp-tools:
	@$(call need,clang,clang)
	@$(call need,llc,llvm)
	@$(call need_file,/usr/include/bpf/bpf_helpers.h,libbpf-dev)
	@$(call need_file,/usr/include/linux/bpf.h,linux-libc-dev)

xdp-suite: xdp-tools
	$(PYTHON) python/nicsim/xdp/build.py $(XDP_OUT)
	$(PYTHON) python/nicsim/xdp/build.py --only $(XDP_TEST_OUT) tests/xdp

# tshark checks that the captures nicsim writes are ones Wireshark opens, and is the reference
# for flow reassembly on the real captures Debian ships with gopacket and dpkt.
test-tools:
	@$(call need,tshark,tshark)
	@$(call need_file,/usr/share/gocode/src/github.com/google/gopacket/pcap/test_ethernet.pcap,golang-github-google-gopacket-dev)
	@$(call need_file,/usr/share/doc/python3-dpkt/examples/data/http.pcap,python3-dpkt)

# Real TCP traffic with loss and reordering, recorded between two network namespaces over a
# veth pair with an XDP dropper (needs root); the reassembler's tshark test checks these too.
VETH_CAPTURES := $(CARGO_TARGET_DIR)/veth-captures
veth-captures: xdp-tools
	@$(call need,tcpdump,tcpdump)
	@if [ "$$(id -u)" -ne 0 ]; then echo "nicsim: not root: no veth captures (the tshark test uses the others)" >&2; \
	elif ! { rm -rf $(VETH_CAPTURES) && bash examples/flowmem/veth_capture.sh $(VETH_CAPTURES) 30 1000000 >/dev/null; }; then \
	  echo "nicsim: warning: could not record the veth captures (network namespaces?); the tshark test uses the others" >&2; \
	  rm -rf $(VETH_CAPTURES); fi

# The wheel users install (pip install nicsim-*.whl): the release extension of `make develop`,
# reused (same flags and target directory), packed with the Python sources, configs, targets
# and XDP program sources. tests/test_wheel.py installs it into a scratch venv.
WHEEL_DIR := $(CARGO_TARGET_DIR)/wheels
wheel: develop
	@rm -rf $(WHEEL_DIR)
	RUSTFLAGS="$(BUILD_RUSTFLAGS)" $(VENV)/bin/maturin build --profile $(CARGO_PROFILE) -q -o $(WHEEL_DIR)

# pytest runs on as many workers as the machine has cores (pytest-xdist); a module whose tests
# share an expensive fixture, a Ray head or a venv is kept on one worker (`xdist_group`).
PYTEST_WORKERS ?= auto
# The Rust build, the system packages' download and Ray's install go side by side (a sub-make with
# -j2), then the XDP programs' build, the veth captures and the wheel. The
# x86-jit calibration that pytest's XDP tests share (tests/calibration.py, about 50 s) starts in
# the background once the Rust tests are built, and pytest finds it in $(TEST_CALIBRATION).
# The Rust tests then run beside pytest (their output, in $(RUST_TEST_LOG), is shown after
# pytest's; either failing fails `make test`): each leaves time the other fills (a test binary
# whose tests run one at a time, a pytest worker waiting for Ray or a subprocess), about a minute
# on the 2-core machine (BENCHMARKS.md, "make test from a clean clone"). They run at a lower
# priority (nice 5), so that pytest's Ray cluster, slow to start on a busy machine, comes first.
TEST_CALIBRATION := $(CARGO_TARGET_DIR)/test-calibration
RUST_TEST_LOG := $(CARGO_TARGET_DIR)/cargo-test.log
# The libraries' unit tests and the integration tests (`--tests`: the targets with `test = true`):
# not the examples (profiling tools that no test runs, a quarter of the test build's time; `make
# lint` checks them with clippy), not doc-tests (there are none), and not the extension's crate,
# which has no test harness (`--lib` would build it as a test all the same: 27 s more in run AN).
RUST_TEST_TARGETS := --tests
test:
	$(MAKE) -j2 develop system-tools $(VENV)/.deps-ray PGO=$(PGO) CARGO_PROFILE=test-release
	$(MAKE) -j2 test-tools xdp-suite veth-captures wheel PGO=$(PGO) CARGO_PROFILE=test-release
	NICSIM_FLOW_CAPTURES=$(VETH_CAPTURES) RUSTFLAGS="$(BUILD_RUSTFLAGS)" \
	  $(CARGO) test --profile test-release --workspace $(RUST_TEST_TARGETS) --no-run
	rm -rf $(TEST_CALIBRATION) && $(PY) tests/calibration.py $(TEST_CALIBRATION)
	@echo "nicsim: cargo test runs beside pytest; its output follows pytest's (and is in $(RUST_TEST_LOG))"
	@NICSIM_FLOW_CAPTURES=$(VETH_CAPTURES) RUSTFLAGS="$(BUILD_RUSTFLAGS)" \
	  nice -n 5 $(CARGO) test --profile test-release --workspace $(RUST_TEST_TARGETS) >$(RUST_TEST_LOG) 2>&1 & rust=$$!; \
	py=0; NICSIM_TEST_CALIBRATION=$(TEST_CALIBRATION) NICSIM_WHEEL_DIR=$(WHEEL_DIR) \
	  $(VENV)/bin/pytest -q -n $(PYTEST_WORKERS) --dist loadgroup --durations=30 tests || py=$$?; \
	rs=0; wait $$rust || rs=$$?; \
	echo "nicsim: cargo test's output:"; cat $(RUST_TEST_LOG); \
	if [ $$rs -ne 0 ]; then echo "nicsim: cargo test failed (exit $$rs): see above or $(RUST_TEST_LOG)" >&2; fi; \
	if [ $$py -ne 0 ]; then echo "nicsim: pytest failed (exit $$py)" >&2; fi; \
	test $$rs -eq 0 -a $$py -eq 0

# The same pytest suite with every command in a real `python -m nicsim` process instead of a fork
# of the tests' fork server (tests/forkserver.py): slower, and a check that the two agree.
test-exec: develop $(VENV)/.deps-ray test-tools xdp-suite veth-captures wheel
	NICSIM_TEST_EXEC=1 NICSIM_WHEEL_DIR=$(WHEEL_DIR) \
	  $(VENV)/bin/pytest -q -n $(PYTEST_WORKERS) --dist loadgroup tests

bench: develop xdp-suite
	$(PY) benches/run.py

lint: $(VENV)/.deps
	$(CARGO) clippy --workspace --all-targets --release -- -D warnings
	$(CARGO) fmt --all --check
	RUSTDOCFLAGS="-D warnings" $(CARGO) doc --no-deps --workspace -q
	$(VENV)/bin/ruff check python tests benches

# Fuzz the XDP analyzer (crates/nicsim-xdp/fuzz, docs/xdp.md "Fuzzing"): each target runs for
# FUZZ_SECONDS, with debug assertions (overflow checks) and AddressSanitizer, in FUZZ_JOBS
# processes (libFuzzer's -fork when more than 1). The corpora live in
# crates/nicsim-xdp/fuzz/corpus (not committed), seeded from the XDP suite: the objects for
# elf_load (less the two that run into the analyzer's size limit, which take seconds by
# design), their programs' linked code for decode. A crash, or an input that takes more than
# FUZZ_TIMEOUT seconds, is saved in crates/nicsim-xdp/fuzz/artifacts and stops the run (with
# -fork, timeouts and out-of-memory are saved and the run goes on). Needs a nightly toolchain;
# cargo-fuzz is installed if missing. Not part of `make test`.
FUZZ_SECONDS ?= 60
FUZZ_JOBS ?= 1
FUZZ_TIMEOUT ?= 30
FUZZ_TARGETS ?= elf_load decode
FUZZ_DIR := crates/nicsim-xdp/fuzz

fuzz-tools: | tools
	@rustup run nightly rustc --version >/dev/null 2>&1 || { echo "nicsim: make fuzz needs a nightly Rust toolchain (rustup toolchain install nightly)" >&2; exit 1; }
	@command -v cargo-fuzz >/dev/null 2>&1 || $(CARGO) install --locked cargo-fuzz

fuzz: xdp-suite fuzz-tools
	@mkdir -p $(FUZZ_DIR)/corpus/elf_load $(FUZZ_DIR)/corpus/decode
	for f in $(XDP_OUT)/*.o $(XDP_TEST_OUT)/*.o; do case $$f in */call_fanout.o|*/loop_nested.o) ;; *) cp $$f $(FUZZ_DIR)/corpus/elf_load/ ;; esac; done
	$(CARGO) run --release -q -p nicsim-xdp --example fuzz_seeds -- $(FUZZ_DIR)/corpus/decode $(XDP_OUT)/*.o $(XDP_TEST_OUT)/*.o
	cd $(FUZZ_DIR) && for t in $(FUZZ_TARGETS); do \
	  $(CARGO) +nightly fuzz run --debug-assertions $$t corpus/$$t -- \
	    -max_total_time=$(FUZZ_SECONDS) -timeout=$(FUZZ_TIMEOUT) $(if $(filter-out 1,$(FUZZ_JOBS)),-fork=$(FUZZ_JOBS)) \
	    -print_final_stats=1 || exit 1; \
	done

# The XDP analyzer's differential soundness test (tests/test_xdp_differential.py, docs/xdp.md
# "Differential soundness test") in its long mode: FUZZ_XDP_CASES generated cases per program
# (`make test` runs 16), seeded by FUZZ_XDP_SEED (default: the time, printed first; the same seed
# gives the same cases), FUZZ_XDP_PROGRAMS a comma-separated subset (default: all). A failure is
# shrunk and reported with its packet, maps and unsat core. Not part of `make test`.
FUZZ_XDP_CASES ?= 500
FUZZ_XDP_PROGRAMS ?=
ifndef FUZZ_XDP_SEED
FUZZ_XDP_SEED := $(shell date +%s)
endif
fuzz-xdp: develop xdp-suite
	@echo "nicsim: fuzz-xdp: $(FUZZ_XDP_CASES) cases per program, seed $(FUZZ_XDP_SEED)"
	NICSIM_DIFF_ITERS=$(FUZZ_XDP_CASES) NICSIM_DIFF_SEED=$(FUZZ_XDP_SEED) NICSIM_DIFF_PROGRAMS=$(FUZZ_XDP_PROGRAMS) \
	  $(VENV)/bin/pytest -q -s tests/test_xdp_differential.py

# Fuzz the capture readers and the zero-copy reassembler (cargo-fuzz on nightly; not part of
# `make test`): FUZZ_CAPTURE_SECONDS of libFuzzer from the seeds in crates/nicsim-packet/fuzz/seeds
# (small pcap and pcapng captures); the corpus grows in $(CARGO_TARGET_DIR)/fuzz-capture-corpus,
# crashes land in crates/nicsim-packet/fuzz/artifacts.
FUZZ_CAPTURE_SECONDS ?= 600
fuzz-capture: | tools
	@command -v cargo-fuzz >/dev/null 2>&1 || $(CARGO) install cargo-fuzz
	@mkdir -p $(CARGO_TARGET_DIR)/fuzz-capture-corpus
	cd crates/nicsim-packet/fuzz && $(CARGO) +nightly fuzz run capture_reader \
	  $(CARGO_TARGET_DIR)/fuzz-capture-corpus seeds -- -max_total_time=$(FUZZ_CAPTURE_SECONDS) -max_len=65536

# Fuzz the configuration loaders (crates/nicsim-kernel/fuzz; cargo-fuzz on nightly; not part of
# `make test`): the datapath and router configurations as TOML and as JSON (what the Python front
# end sends the core), the flow-memory target TOML and the XDP target TOML, each target for
# FUZZ_CONFIG_SECONDS with debug assertions. An accepted configuration is built and run for a few
# nanoseconds, and libFuzzer's limits make an allocation of more than 512 MB, or 2 GB resident,
# a crash: validation must bound what the models allocate. Seeds are the shipped files (and JSON
# copies of the datapath and router ones); the corpora grow in
# $(CARGO_TARGET_DIR)/fuzz-config-corpus, crashes land in crates/nicsim-kernel/fuzz/artifacts.
# `cargo test` in that folder runs the same checks on the seeds without nightly.
FUZZ_CONFIG_SECONDS ?= 120
FUZZ_CONFIG_TARGETS ?= config_datapath config_router config_flowmem_target config_xdp_target
FUZZ_CONFIG_CORPUS := $(CARGO_TARGET_DIR)/fuzz-config-corpus
TOML_TO_JSON := import json, sys, tomllib; print(json.dumps(tomllib.load(open(sys.argv[1], "rb"))))
fuzz-config: fuzz-tools
	@mkdir -p $(addprefix $(FUZZ_CONFIG_CORPUS)/,$(FUZZ_CONFIG_TARGETS))
	cp configs/flexpipe_paper.toml $(FUZZ_CONFIG_CORPUS)/config_datapath/
	cp configs/router/*.toml $(FUZZ_CONFIG_CORPUS)/config_router/
	cp crates/nicsim-flowmem/targets/*.toml $(FUZZ_CONFIG_CORPUS)/config_flowmem_target/
	cp crates/nicsim-xdp/targets/*.toml $(FUZZ_CONFIG_CORPUS)/config_xdp_target/
	$(PYTHON) -c '$(TOML_TO_JSON)' configs/flexpipe_paper.toml > $(FUZZ_CONFIG_CORPUS)/config_datapath/flexpipe_paper.json
	for f in configs/router/*.toml; do \
	  $(PYTHON) -c '$(TOML_TO_JSON)' $$f > $(FUZZ_CONFIG_CORPUS)/config_router/$$(basename $$f .toml).json; \
	done
	cd crates/nicsim-kernel/fuzz && for t in $(FUZZ_CONFIG_TARGETS); do \
	  $(CARGO) +nightly fuzz run --debug-assertions $$t $(FUZZ_CONFIG_CORPUS)/$$t -- \
	    -max_total_time=$(FUZZ_CONFIG_SECONDS) -rss_limit_mb=2048 -malloc_limit_mb=512 -max_len=65536 \
	    -print_final_stats=1 || exit 1; \
	done

# The property-based tests (tests/test_properties.py, Hypothesis) in their long mode:
# FUZZ_PROPS_EXAMPLES generated datapath and router configurations, XDP and flow-memory targets
# and captures per test (`make test` runs a few dozen of each). Not part of `make test`.
FUZZ_PROPS_EXAMPLES ?= 1000
fuzz-props: develop xdp-suite
	NICSIM_PROPERTY_EXAMPLES=$(FUZZ_PROPS_EXAMPLES) $(VENV)/bin/pytest -q tests/test_properties.py

# The x86-jit soundness sweep over every test program of tests/xdp/ that nicsim analyses and the
# kernel loads, besides the suite (make test sweeps the suite and a subset): no path measured
# beyond the tolerance over its estimate (docs/xdp.md, "The soundness sweep"). Needs root.
soundness: develop xdp-suite
	NICSIM_SOUNDNESS_ALL=1 $(VENV)/bin/pytest -q -n $(PYTEST_WORKERS) --dist loadgroup \
	  tests/test_xdp_soundness.py -k soundness_sweep -rs

# `nicsim xdp profile` on every suite program x every capture of ../shared/pcap-world (and 1,000
# generated packets each), on nfp and x86-jit: no packet costlier than the program's guarantee
# (docs/xdp.md, "Profiling on real traffic"; make test profiles a chosen few). Needs root for x86-jit.
profile-soundness: develop xdp-suite
	NICSIM_PROFILE_ALL=1 $(VENV)/bin/pytest -q -n $(PYTEST_WORKERS) tests/test_xdp_profile.py \
	  -k no_packet_is_costlier -rs
