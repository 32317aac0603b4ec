# letterbox developer entry points. Everything goes through CMake; see README.md.
#
#   make deps          install the Debian packages in .ci/debian-packages.txt (apt-get)
#   make test-deps     install the packages only the tests need (.ci/debian-test-packages.txt:
#                      chromium, for the dashboard's browser test; postgresql-15, the server of the
#                      integration tests); make test runs it
#   make test          ASan+UBSan Debug build in build/asan: every test, `integration` included,
#                      against a PostgreSQL and a RabbitMQ that make test starts on 127.0.0.1 and
#                      always stops (tests/tools/postgres.sh, tests/tools/rabbitmq.sh,
#                      docs/testing-with-postgres.md, docs/testing-with-rabbitmq.md); and the
#                      ThreadSanitizer pass (make tsan)
#   make asan          only the ASan+UBSan part of make test (with its servers)
#   make tsan          ThreadSanitizer build in build/tsan: the tests labelled `threads` (with the servers)
#   make test-extended the extended tier: optimised build in build/extended; the pipeline and saga
#                      simulations over 100,000 seeds and the kill -9 campaigns with 100 iterations
#                      (LETTERBOX_EXTENDED=1; with the servers)
#   make demo          the main job: Release build in build/release, runs examples/demo (the enrollment
#                      incident, naive against letterbox, side by side); AMQP_URL=amqp://... runs it on
#                      RabbitMQ, DEMO_ARGS=--serve leaves the dashboard running
#   make examples      Release build, runs every numbered example in reading order (examples/README.md)
#   make bench         Release build with benchmarks, runs every bench_* and example 03, draws the plots
#   make format        clang-format -i;  make format-check: fail on unformatted files
#   make compile-time  what including letterbox costs: preprocessed lines and CPU seconds of the
#                      umbrellas and the getting-started program; COLD_TEST=1 adds a timed cold
#                      make test in a fresh clone (docs/testing.md, "Compile time")
#   make clean         remove build/
SHELL := /bin/bash
.SHELLFLAGS := -eu -o pipefail -c
.DEFAULT_GOAL := test
# No "Entering/Leaving directory" noise from the make that cmake --build runs.
MAKEFLAGS += --no-print-directory
# The steps of a goal run in order (deps first); each build parallelises itself with -j$(JOBS).
.NOTPARALLEL:

CMAKE ?= cmake
CTEST ?= ctest
JOBS ?= $(shell nproc 2>/dev/null || echo 2)
BUILD ?= build
PACKAGES_FILE := .ci/debian-packages.txt
TEST_PACKAGES_FILE := .ci/debian-test-packages.txt
# While `make deps` or `make test-deps` installs packages, policy-rc.d exits 101 ("action
# forbidden"): no postinst starts a service, in particular not rabbitmq-server's system broker,
# which would bind all interfaces, nor postgresql-15's system cluster (its postinst creates
# /var/lib/postgresql/15/main with pg_createcluster, which does not start it, then asks
# invoke-rc.d to start it, which policy-rc.d refuses). A policy-rc.d that already exists is left
# alone; one made here is removed after.
POLICY_RC_D := /usr/sbin/policy-rc.d
SUDO := $(shell [ "$$(id -u)" -eq 0 ] || echo sudo)

WARNINGS := -Wall -Wextra -Wpedantic -Werror
# UBSan without its `null` and `alignment` checks, except where every check is kept
# (FULL_CHECK_FLAGS: the code compiled once for all the tests, letterbox_test_src, and the fuzz
# replays, which read hostile input). At -O0 those two checks are put before nearly every pointer
# use: measured on 2 cores, example 04 took 79 s of CPU with them and 52 s without, its object
# file 32 MB instead of 13 MB, and ASan alone took 51 s. ASan still stops any access through a
# null pointer (SEGV, with its stack); x86-64 does not fault on a misaligned one, and the codec
# reads wire bytes with memcpy. docs/testing.md, "Compile time".
ASAN_FLAGS := $(WARNINGS) -fsanitize=address,undefined -fno-sanitize=null,alignment -fno-omit-frame-pointer -fno-sanitize-recover=undefined
FULL_CHECK_FLAGS := -fsanitize=null,alignment
# The examples that link the tests' letterbox_test_src compile their own code without the
# sanitizers: they show that each example builds and prints what it says, and the library code
# they run is letterbox_test_src's, instrumented (examples/CMakeLists.txt). Example 04 took 50 s
# of CPU with ASan and UBSan, 39 s without.
EXAMPLE_FLAGS := -fno-sanitize=all
# -Wno-tsan: g++ 12 warns that TSan does not model the std::atomic_thread_fence in Boost.Asio's
# std_fenced_block (and -Werror would stop the build); Asio's cross-thread queues use mutexes.
TSAN_FLAGS := $(WARNINGS) -Wno-tsan -fsanitize=thread
# Optimisation of the sanitizer builds. -O0 (CMake's Debug default): measured on 2 cores, the
# Catch2 main under ASan+UBSan takes 60 s at -O0, 79 s at -Og, 117 s at -O1, and g++ 12 -O1
# raises false -Wmaybe-uninitialized errors inside <regex>/<functional>.
# -g1: line tables only, which is what the sanitizers' reports (file:line of every frame) need.
# The variables' debug information of -g costs CPU and object size: example 01 under ASan+UBSan
# took 21.8 s (user+sys) with -g and 18.2 s with -g1 on its own, and across two cold builds the
# larger compiles took about 5% less (docs/testing.md). `make asan SANITIZER_DEBUG_FLAGS=-g` to
# debug with gdb.
# -gz: the debug sections compressed (zlib), in the objects and in the executables. A cold
# ASan+UBSan build took 9.2 GB of disk, and CI ran out of it at stop 43; -gz cuts the largest
# object (the separately compiled sources, 176 MB) to 139 MB and an example (117 MB) to 79 MB, for
# no measurable CPU. The sanitizers' symbolizer reads compressed sections (docs/testing.md).
SANITIZER_DEBUG_FLAGS := -g1 -gz
# The ASan+UBSan executables are linked -no-pie. ctest starts each test case in a process of its
# own, about 1,200 starts of executables of up to 1 GB, and a position-independent one spent half
# of its 0.3 s start applying 7 million relative relocations to its 190 MB of sanitizer data,
# copying every page it touched: the unit tests' executable started in 0.18 s instead of 0.32 s
# (docs/testing.md). The leak check at exit, which scans that data, is kept.
ASAN_LINK_FLAGS := -no-pie

export ASAN_OPTIONS ?= detect_leaks=1:abort_on_error=1
export UBSAN_OPTIONS ?= print_stacktrace=1:halt_on_error=1
export TSAN_OPTIONS ?= halt_on_error=1:second_deadlock_stack=1

# The broker of the `integration` tests: `$(WITH_BROKER) cmd` starts RabbitMQ on 127.0.0.1 (port
# 5672, or the first free one up to 5699; LETTERBOX_RABBITMQ_PORT forces one), state and logs in
# a mktemp directory, runs cmd with LETTERBOX_AMQP_URL exported, and stops the broker whatever cmd
# returns (on failure it keeps the directory and prints where the logs are).
WITH_BROKER := tests/tools/rabbitmq.sh run --
# The servers of the `integration` tests: `$(WITH_SERVICES) cmd` starts PostgreSQL
# (tests/tools/postgres.sh: a fresh cluster made by initdb, on 127.0.0.1, port 5432 or the first
# free one up to 5499; LETTERBOX_POSTGRES_PORT forces one; as root it runs as nobody), then the
# broker inside it, and runs cmd with LETTERBOX_POSTGRES_URL and LETTERBOX_AMQP_URL exported. Both
# stop whatever cmd returns, the broker first; on failure each keeps its directory and prints
# where its logs are. PostgreSQL is the outer one because it is up in about 2 s: if it cannot
# start, no time goes into starting the broker (5-30 s).
WITH_SERVICES := tests/tools/postgres.sh run -- $(WITH_BROKER)
# The amqp component is built once its headers exist: configuring with LETTERBOX_WITH_AMQP=ON
# before include/letterbox/amqp/ exists is a FATAL_ERROR (CMakeLists.txt), and the umbrella
# include/letterbox/amqp.hpp is needed by the umbrella checks. OFF (not just absent) otherwise, so
# that a build directory configured ON earlier follows.
AMQP_OPTION := -DLETTERBOX_WITH_AMQP=$(if $(and $(wildcard include/letterbox/amqp.hpp),$(wildcard include/letterbox/amqp/)),ON,OFF)

FORMAT_DIRS := include tests examples benchmarks tools
FORMAT_FILES = $(shell find $(FORMAT_DIRS) -type f \( -name '*.hpp' -o -name '*.cpp' -o -name '*.h' -o -name '*.ipp' \) 2>/dev/null | sort)

.PHONY: deps test-deps test test-extended asan tsan asan-build tsan-build release-configure demo examples bench format format-check compile-time clean

# $(call install_packages,FILE): apt-get installs the packages of FILE that are missing.
define install_packages
	@missing=(); \
	while read -r pkg; do \
	    status=$$(dpkg-query -W -f='$${Status}' "$$pkg" 2>/dev/null || true); \
	    [ "$$status" = "install ok installed" ] || missing+=("$$pkg"); \
	done < <(sed -e 's/#.*//' -e 's/[[:space:]]//g' -e '/^$$/d' $(1)); \
	if [ $${#missing[@]} -gt 0 ]; then \
	    echo "make deps: installing $${missing[*]}"; \
	    if [ ! -e $(POLICY_RC_D) ]; then \
	        trap '$(SUDO) rm -f $(POLICY_RC_D)' EXIT; \
	        printf '#!/bin/sh\n# make deps (letterbox): no service starts during apt-get install\nexit 101\n' \
	            | $(SUDO) tee $(POLICY_RC_D) >/dev/null; \
	        $(SUDO) chmod 755 $(POLICY_RC_D); \
	    fi; \
	    $(SUDO) apt-get update -qq; \
	    $(SUDO) env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "$${missing[@]}"; \
	fi
endef

deps:
	$(call install_packages,$(PACKAGES_FILE))

# Packages only the tests need (the browser of the dashboard test, the PostgreSQL server of the
# integration tests), kept out of `make demo`. Installed with the same policy-rc.d as `make deps`.
test-deps:
	$(call install_packages,$(TEST_PACKAGES_FILE))

# `make test`: both builds first; then the cluster test on a 3-node RabbitMQ cluster of its own,
# stopped before the rest starts; then one PostgreSQL and one broker for both test runs: the
# ThreadSanitizer build (only the sources with [threads] tests) runs the `threads` label, the
# ASan+UBSan build runs every test, `integration` included, with LETTERBOX_POSTGRES_URL and
# LETTERBOX_AMQP_URL naming the servers. The full ASan ctest run goes last, so its summary is the
# last line of the tests. The servers stop after them, also when a test fails or make is
# interrupted (postgres.sh run and rabbitmq.sh run trap EXIT, INT, TERM and HUP).
test: deps test-deps asan-build tsan-build
	$(WITH_CLUSTER) $(run_cluster_tests)
	$(WITH_SERVICES) $(SHELL) -c '$(run_tsan_tests) && $(run_asan_tests)'

# `make test-extended`: the extended tier (docs/testing.md, "Tiers"): an optimised build of the
# property and integration tests (sanitizers off, so that 200,000 simulated runs fit in minutes),
# then, with LETTERBOX_EXTENDED=1 and the servers: the pipeline and saga simulations over 100,000
# seeds each (each run twice), their self-tests, the kill -9 campaigns with 100 iterations each
# (SQLite and PostgreSQL), the PostgreSQL simulation over 2,000 seeds and the four-relay drain of
# 20,000 rows.
# test-deps: postgresql-15, the server.
EXTENDED_TESTS := pipeline simulation|saga simulation|self-test|kill9|postgres relays
# g++ 12 at -O2 reports false -Wmaybe-uninitialized (std::optional<field_table> in the AMQP codec
# tests) and -Wrestrict (GCC bug 105651) in inlined standard library code; the ASan build, which
# is -O0, keeps both warnings as errors.
EXTENDED_NO_FALSE_WARNINGS := -Wno-maybe-uninitialized -Wno-restrict
test-extended: deps test-deps
	$(CMAKE) -S . -B $(BUILD)/extended -DCMAKE_BUILD_TYPE=RelWithDebInfo \
	    -DLETTERBOX_BUILD_TESTS=ON -DLETTERBOX_BUILD_EXAMPLES=OFF -DLETTERBOX_VERIFY_HEADERS=OFF \
	    -DLETTERBOX_INSTALL=OFF -DLETTERBOX_WITH_SQLITE=ON -DLETTERBOX_WITH_POSTGRES=ON -DLETTERBOX_WITH_OPS=ON $(AMQP_OPTION) -DLETTERBOX_TEST_TIMEOUT=14400 \
	    "-DCMAKE_CXX_FLAGS=$(WARNINGS) $(EXTENDED_NO_FALSE_WARNINGS)"
	$(CMAKE) --build $(BUILD)/extended -j$(JOBS) --target letterbox_property_tests letterbox_integration_tests
	LETTERBOX_EXTENDED=1 $(WITH_SERVICES) $(CTEST) --test-dir $(BUILD)/extended --output-on-failure \
	    --no-tests=error -j$(JOBS) -R '$(EXTENDED_TESTS)'

asan: deps test-deps asan-build
	$(WITH_CLUSTER) $(run_cluster_tests)
	$(WITH_SERVICES) $(run_asan_tests)

# test-deps: postgresql-15, the server of the integration tests (the tsan run has the servers too).
tsan: deps test-deps tsan-build
	$(WITH_SERVICES) $(run_tsan_tests)

asan-build:
	$(CMAKE) -S . -B $(BUILD)/asan -DCMAKE_BUILD_TYPE=Debug \
	    -DLETTERBOX_BUILD_TESTS=ON -DLETTERBOX_BUILD_EXAMPLES=ON -DLETTERBOX_WITH_SQLITE=ON -DLETTERBOX_WITH_POSTGRES=ON -DLETTERBOX_WITH_OPS=ON $(AMQP_OPTION) \
	    "-DCMAKE_CXX_FLAGS=$(ASAN_FLAGS)" "-DCMAKE_CXX_FLAGS_DEBUG=$(SANITIZER_DEBUG_FLAGS)" \
	    "-DLETTERBOX_FULL_CHECK_FLAGS=$(FULL_CHECK_FLAGS)" "-DLETTERBOX_EXAMPLE_FLAGS=$(EXAMPLE_FLAGS)" \
	    "-DCMAKE_EXE_LINKER_FLAGS=$(ASAN_LINK_FLAGS)"
	$(CMAKE) --build $(BUILD)/asan -j$(JOBS)

# The ThreadSanitizer build compiles the 15 or so sources with [threads] tests, in batches of 5
# so that its two largest batches build side by side (10 unit test files were one batch of 164 s
# of CPU). It needs no command-line tool: no [threads] test runs it.
TSAN_BATCH_SIZE := 5
tsan-build:
	$(CMAKE) -S . -B $(BUILD)/tsan -DCMAKE_BUILD_TYPE=Debug \
	    -DLETTERBOX_BUILD_TESTS=ON -DLETTERBOX_TEST_THREADS_ONLY=ON -DLETTERBOX_VERIFY_HEADERS=OFF \
	    -DLETTERBOX_TEST_BATCH_SIZE=$(TSAN_BATCH_SIZE) -DLETTERBOX_BUILD_TOOLS=OFF \
	    -DLETTERBOX_BUILD_EXAMPLES=OFF -DLETTERBOX_INSTALL=OFF -DLETTERBOX_WITH_SQLITE=ON -DLETTERBOX_WITH_POSTGRES=ON -DLETTERBOX_WITH_OPS=ON $(AMQP_OPTION) \
	    "-DCMAKE_CXX_FLAGS=$(TSAN_FLAGS)" "-DCMAKE_CXX_FLAGS_DEBUG=$(SANITIZER_DEBUG_FLAGS)"
	$(CMAKE) --build $(BUILD)/tsan -j$(JOBS)

# The PR tier: LETTERBOX_EXTENDED (the extended tier's switch) is cleared for these runs.
# -LE cluster: the cluster test needs the three nodes of run_cluster_tests, not the one broker.
run_asan_tests = env -u LETTERBOX_EXTENDED $(CTEST) --test-dir $(BUILD)/asan --output-on-failure --no-tests=error -LE cluster -j$(JOBS)
# The test that kills the node leading a quorum queue (tests/integration/amqp_cluster.cpp), on a
# throwaway 3-node cluster of its own (tests/tools/rabbitmq_cluster.sh: about 30 s to start on
# 2 cores, 10 s of test). --no-tests=ignore: without the amqp component there is none.
run_cluster_tests = env -u LETTERBOX_EXTENDED $(CTEST) --test-dir $(BUILD)/asan --output-on-failure --no-tests=ignore -L cluster
WITH_CLUSTER := tests/tools/rabbitmq_cluster.sh run --
# --no-tests=ignore: no [threads] tests yet is not a failure.
run_tsan_tests = env -u LETTERBOX_EXTENDED $(CTEST) --test-dir $(BUILD)/tsan --output-on-failure --no-tests=ignore -L threads -j$(JOBS)

release-configure: deps
	$(CMAKE) -S . -B $(BUILD)/release -DCMAKE_BUILD_TYPE=Release \
	    -DLETTERBOX_BUILD_TESTS=OFF -DLETTERBOX_BUILD_EXAMPLES=ON -DLETTERBOX_WITH_SQLITE=ON -DLETTERBOX_WITH_POSTGRES=ON -DLETTERBOX_WITH_OPS=ON $(AMQP_OPTION) \
	    $(RELEASE_ARGS)

# The main job (examples/demo): the enrollment incident end to end, the naive dual write against
# letterbox, side by side; in memory, or on RabbitMQ with `make demo AMQP_URL=amqp://...`.
# Stray AMQP variables of the caller's shell are not inherited. `make demo DEMO_ARGS=--serve`
# leaves the dashboard running.
demo: deps
	$(MAKE) --no-print-directory release-configure RELEASE_ARGS=-DLETTERBOX_WITH_TESTING=ON
	$(CMAKE) --build $(BUILD)/release -j$(JOBS) --target example_demo
	env -u AMQP_URL -u LETTERBOX_AMQP_URL ./$(BUILD)/release/examples/example_demo \
	    $(if $(AMQP_URL),--amqp '$(AMQP_URL)') $(DEMO_ARGS)

# Every numbered example (examples/README.md), built in Release and run in reading order; those
# that need a broker use the in-memory model when LETTERBOX_AMQP_URL is not set.
examples: deps
	$(MAKE) --no-print-directory release-configure RELEASE_ARGS=-DLETTERBOX_WITH_TESTING=ON
	$(CMAKE) --build $(BUILD)/release -j$(JOBS)
	@for d in examples/[0-9][0-9]_*/; do \
	    name=$$(basename "$$d"); \
	    echo "== examples/$$name"; \
	    ./$(BUILD)/release/examples/example_$$name; \
	    echo; \
	done

# `make bench`: every benchmark, and example 03 (prefetch distribution), their output kept in
# $(BENCH_RESULTS); then benchmarks/plots/plot.sh draws docs/images/bench-*.svg from it (gnuplot,
# installed when missing). docs/benchmarks.md records the figures.
BENCH_RESULTS := $(BUILD)/release/bench-results
PREFETCH_EXAMPLE := $(BUILD)/release/examples/example_03_prefetch
bench: deps
	$(MAKE) --no-print-directory release-configure RELEASE_ARGS=-DLETTERBOX_BUILD_BENCHMARKS=ON
	$(CMAKE) --build $(BUILD)/release -j$(JOBS)
	@mkdir -p $(BENCH_RESULTS); rm -f $(BENCH_RESULTS)/*.txt; found=0; \
	for exe in $(BUILD)/release/benchmarks/bench_*; do \
	    [ -x "$$exe" ] && [ -f "$$exe" ] || continue; \
	    found=1; echo "== $$exe"; \
	    case "$$exe" in \
	        */bench_amqp) $(WITH_BROKER) "$$exe" ;; \
	        */bench_postgres) tests/tools/postgres.sh run -- "$$exe" ;; \
	        *) "$$exe" ;; \
	    esac | tee $(BENCH_RESULTS)/$$(basename "$$exe").txt; \
	done; \
	[ $$found -eq 1 ] || echo "make bench: no benchmarks yet (benchmarks/<name>.cpp or benchmarks/<name>/main.cpp)"; \
	if [ -x $(PREFETCH_EXAMPLE) ]; then \
	    echo "== $(PREFETCH_EXAMPLE)"; $(PREFETCH_EXAMPLE) | tee $(BENCH_RESULTS)/prefetch.txt; \
	fi
	benchmarks/plots/plot.sh $(BENCH_RESULTS) docs/images

format:
	clang-format -i $(FORMAT_FILES)

format-check:
	clang-format --dry-run -Werror $(FORMAT_FILES)

compile-time: deps
	bash tests/tools/compile_time.sh .

clean:
	rm -rf $(BUILD)
