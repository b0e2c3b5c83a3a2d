# SPDX-License-Identifier: GPL-2.0
# erofs_rs: `make run` (the demo) and `make test` (all tests) set everything up from nothing.
# Kbuild entry for the module is ./Kbuild; this Makefile drives scripts/, cargo and kbuild.

SHELL := /bin/bash
ENV := . scripts/env &&

.PHONY: all setup setup-debug modules modules-debug tools check test test-guest test-debug test-full test-tools stress fuzz fuzz-campaign fuzz-core run shell shell-debug bench bench-quick bench-icount bench-parallel bench-tools clean

all: modules

# Install packages, tools and build the guest kernel (cached in $$EROFS_RS_CACHE).
setup:
	scripts/setup

# The debug kernel too (KASAN, lockdep, PREEMPT, kmemleak, UBSAN; clang-built; about 7 minutes,
# cached like the other): `scripts/vm-run --kernel debug`.
setup-debug:
	scripts/setup --debug

# The module, against the cached kernel build (about 2 s), with the kernel's clippy lints.
modules: setup
	$(ENV) $(MAKE) -C "$$KDIR" M="$$EROFS_RS_TOP" CLIPPY=1 modules

# The same modules built for the debug kernel, in a copy of their sources in build/kmod-debug
# (kbuild builds an external module out of its tree only from a clean one, and this one holds
# the normal kernel's objects).
KMOD_SRC := Kbuild fs include tests/accel
# bindings_generated.rs too: the normal kernel's bindings have its constants (SLAB_*, ...), and a
# copy newer than its inputs would be kept by the debug build.
KMOD_OBJS := --exclude='*.o' --exclude='*.ko' --exclude='*.mod' --exclude='*.mod.c' --exclude='.*.cmd' \
	--exclude='*.rmeta' --exclude=modules.order --exclude=Module.symvers --exclude=bindings_generated.rs
modules-debug: setup-debug
	$(ENV) mkdir -p "$$EROFS_RS_MO_DEBUG" && rsync -aR --delete $(KMOD_OBJS) $(KMOD_SRC) "$$EROFS_RS_MO_DEBUG/" && \
	$(MAKE) -C "$$KDIR_DEBUG" M="$$EROFS_RS_MO_DEBUG" LLVM="$$EROFS_RS_LLVM" \
		LIBCLANG_PATH="$$EROFS_RS_LIBCLANG_DEBUG" CLIPPY=1 modules

# The user-space fsck and extractor (target/release/erofs-rs), on the same format core.
tools:
	cargo build --release -p erofs-rs

# User-space checks of the format core: unit tests plus image tests made by mkfs.erofs, clippy,
# and rustfmt with the kernel's .rustfmt.toml over the module and the core.
check: setup
	$(ENV) cargo test --workspace 2>&1
	$(ENV) cargo clippy --workspace --all-targets -- -D warnings
	$(ENV) find fs/erofs_rs -name '*.rs' ! -name bindings_generated.rs -print0 | \
		xargs -0 rustfmt --check --edition 2021 --config-path "$$EROFS_RS_KSRC/.rustfmt.toml"

# Everything CI runs: the guest tests on the normal kernel, and the concurrency and corruption
# checks on the debug kernel. On a fresh machine the debug kernel (about 15 minutes of
# compiling) builds while the fuzzing and the normal kernel's guest tests run, whose guest
# leaves a CPU idle much of the time (its log is build/modules-debug.log); as soon as it is
# built, the debug suite starts beside the normal one, in its own work directory
# (build/tests-debug; its output is build/tests-debug.log, printed at the end). A failure of
# either suite still lets the other run, and fails `make test`.
test: check modules
	@mkdir -p build; rm -f build/tests-debug.log; \
	( if $(MAKE) --no-print-directory modules-debug >build/modules-debug.log 2>&1; then \
		grep -a '^\[build-kernel\|^\[setup\] ready' build/modules-debug.log; \
		EROFS_RS_WORK="$$PWD/build/tests-debug" tests/run --debug >build/tests-debug.log 2>&1; \
	else tail -n 40 build/modules-debug.log; echo "make test: modules-debug failed (build/modules-debug.log)"; exit 2; fi ) & dbg=$$!; \
	rc=0; tests/fuzz-core 60 && tests/run || rc=1; \
	wait $$dbg; drc=$$?; \
	if [ -f build/tests-debug.log ]; then echo "==== debug-kernel suite (build/tests-debug.log)"; cat build/tests-debug.log; fi; \
	[ $$drc = 0 ] || rc=1; exit $$rc

# Only the guest tests (after `make modules`).
test-guest:
	tests/run

# Only the debug-kernel guest tests (after `make modules-debug`).
test-debug:
	tests/run --debug

# Only the host-side tests of erofs-rs, on the images an earlier tests/run made.
test-tools: tools
	tests/tools

# The guest tests with every compressed variant on every tree (about twice as long).
test-full: check modules
	tests/run --full

# Stress on the debug kernel: erofs-stress workers for STRESS_SECS (default 600) under memory
# pressure and CPU hotplug, then mount/umount and rmmod/insmod loops with reads in flight.
STRESS_SECS ?= 600
stress: modules-debug
	tests/run --stress $(STRESS_SECS)

# Robustness: random corruptions of 11 kinds of images, each mounted and read whole; fails on
# any oops, WARNING or leak (FUZZ_N corruptions per kind, default 40).
fuzz: modules
	tests/fuzz $(FUZZ_N)

# The hostile-image campaign (tests/hostile-campaign): HOSTILE_N images (default 10000) that
# tests/hostile.py derives from seeds SEED0.. (default 1) with structure-aware mutations of 17
# small base layouts, each mounted (file-backed or loop), walked and read whole through read(2)
# and mmap by erofs_rs in debug-kernel guests, HOSTILE_JOBS (default 2) at once on disjoint
# seed ranges; counts per outcome and mutation class; fails on any oops, KASAN/lockdep/UBSAN
# report, hang, crash, stuck mount or leak. Each guest has HOSTILE_CPUS (default 1) vCPUs: on
# this 2-core host two 1-vCPU debug guests read 1.06 images/s together, two 2-vCPU ones 0.79
# (their four vCPU threads preempt each other's lock holders), so about 2.6 hours for the
# default 10000; `tests/hostile-campaign --kernel normal N` about 5 images/s. HOSTILE_RESUME=1
# goes on with a killed run of the same HOSTILE_N and SEED0 (on the same module).
HOSTILE_N ?= 10000
HOSTILE_JOBS ?= 2
HOSTILE_CPUS ?= 1
SEED0 ?= 1
fuzz-campaign: modules-debug
	tests/hostile-campaign --kernel debug --jobs $(HOSTILE_JOBS) --cpus $(HOSTILE_CPUS) $(if $(HOSTILE_RESUME),--resume) --seed0 $(SEED0) $(HOSTILE_N)

# Coverage-guided fuzzing of the format core and of erofs-rs fsck in user space (libFuzzer on
# the stable toolchain, seeds from mkfs.erofs): FUZZ_SECS per target (default 600); executions,
# coverage and findings in the summary, corpus and findings in build/fuzz-core.
fuzz-core: setup
	tests/fuzz-core $(FUZZ_SECS)

# The main job: boot a guest, mount an image of a real tree with erofs_rs, list it, verify it.
run: modules
	scripts/demo

# Benchmarks: decompression latency, then fio, C driver vs erofs_rs in one guest per image group;
# summary.md and charts in build/bench (`make bench-quick`: a few cells).
bench: modules
	bench/latency
	bench/run

# bench-quick: the deterministic benchmark's few cells (bench/run --icount --quick: guest time
# counts instructions, so its ratios hold from run to run), with the latency benchmark's, also
# in guest time.
bench-quick: modules
	bench/latency --icount --quick
	bench/run --icount --quick

# The deterministic benchmark's whole matrix (every algorithm at 4-256 KiB pclusters; hours).
bench-icount: modules
	bench/run --icount

# One large read on several CPUs: multi-threaded TCG, 2 vCPUs, wall-clock and per-vCPU
# instructions, C vs erofs_rs (bench/parallel; hours, on an idle host).
bench-parallel: modules
	bench/parallel

# erofs-rs extract (1 and N workers) against fsck.erofs --extract on a 225 MB real tree, LZ4HC,
# LZMA, DEFLATE, Zstandard at 4-64 KiB pclusters; tools.md and tools.csv in build/bench.
bench-tools: tools
	bench/tools

# An interactive guest with erofs_rs loaded (leave with `poweroff -f` or Ctrl-a x).
shell: modules
	scripts/vm-run --interactive -- modprobe erofs_rs

shell-debug: modules-debug
	scripts/vm-run --kernel debug --interactive -- modprobe erofs_rs

clean:
	$(ENV) $(MAKE) -C "$$KDIR" M="$$EROFS_RS_TOP" clean || true
	$(ENV) rm -rf "$$EROFS_RS_MO_DEBUG"
	cargo clean
