# make run  — install missing packages, build (Release), start a local cluster (master node + 2 nodes)
# make test — install missing packages, build, run every test through ctest
BUILD ?= build
CONFIG ?=
POLICY ?=

DURATION ?= 1800
FUZZ_SECONDS ?= 60
FUZZ_TARGETS = fuzz_sql_parser fuzz_pg_wire fuzz_cluster_message fuzz_config

.PHONY: all deps build run test asan sanitize tidy bench chaos fuzz clean format format-check

all: build

deps:
	@scripts/install-deps.sh

build: deps
	@cmake -S . -B $(BUILD) -G Ninja -DCMAKE_BUILD_TYPE=Release > /dev/null
	@cmake --build $(BUILD)

run: build
	@$(BUILD)/bin/wattdb-master --manage-nodes $(if $(CONFIG),--config $(CONFIG)) $(if $(POLICY),--policy $(POLICY))

test: build
	@cd $(BUILD) && ctest --output-on-failure -j2

# Unit, SQL and integration tests under AddressSanitizer + UndefinedBehaviorSanitizer.
asan: deps
	@cmake -S . -B build-asan -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DWATTDB_SANITIZE=ON > /dev/null
	@cmake --build build-asan
	@cd build-asan && ASAN_OPTIONS=detect_leaks=1 ctest --output-on-failure -j2 -E '_smoke'

# Clang 14 with AddressSanitizer and UndefinedBehaviorSanitizer and the thread-safety analysis
# (-Wthread-safety -Werror): builds everything, runs the unit, SQL, fuzz and lint tests. CI runs
# it after `make test`. SltRsParallel (every SQL file at once, each in its own database) is left
# to `make test`: the same files run one by one here, and all at once it takes ~370 s under ASan.
sanitize: deps
	@CC=clang CXX=clang++ cmake -S . -B build-clang -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DWATTDB_SANITIZE=ON > /dev/null
	@cmake --build build-clang
	@cd build-clang && ASAN_OPTIONS=detect_leaks=1 ctest --output-on-failure -j2 -LE 'integration|experiment' -E SltRsParallel

# clang-tidy with .clang-tidy's profile over every source of src/ (CI checks the sources each
# commit touches: scripts/tidy.sh build-clang --changed).
tidy: build
	@scripts/tidy.sh $(BUILD)

# Chaos runs (kills, freezes, moves, lost hosts under bank transfers, inserts and registers;
# the replicated one checks linearizability with tests/lincheck) for DURATION seconds each.
chaos: build
	@WATTDB_CHAOS_SECONDS=$(DURATION) $(BUILD)/bin/cluster_test --gtest_filter='Chaos*'

# Coverage-guided fuzzing (clang, libFuzzer, ASan + UBSan): each target runs FUZZ_SECONDS,
# starting from the checked-in seeds (fuzz/corpus/); new inputs go to build-fuzz/corpus/.
fuzz: deps
	@command -v clang++ >/dev/null && dpkg -s libclang-rt-14-dev >/dev/null 2>&1 || \
	  (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends clang libclang-rt-14-dev)
	@CC=clang CXX=clang++ cmake -S . -B build-fuzz -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DWATTDB_FUZZ=ON \
	  -DWATTDB_SANITIZE=ON -DCMAKE_CXX_FLAGS="-fsanitize=fuzzer-no-link" > /dev/null
	@cmake --build build-fuzz --target $(FUZZ_TARGETS)
	@for t in $(FUZZ_TARGETS); do mkdir -p build-fuzz/corpus/$$t build-fuzz/crashes; \
	  echo "== $$t ($(FUZZ_SECONDS) s)"; \
	  build-fuzz/bin/$$t -max_total_time=$(FUZZ_SECONDS) -max_len=65536 -print_final_stats=1 \
	    -artifact_prefix=build-fuzz/crashes/$$t- build-fuzz/corpus/$$t fuzz/corpus/$$t > build-fuzz/$$t.log 2>&1; \
	  rc=$$?; grep -E "stat::number_of_executed_units|SUMMARY|Test unit written" build-fuzz/$$t.log; \
	  if [ $$rc -ne 0 ]; then echo "$$t failed: see build-fuzz/$$t.log"; exit 1; fi; done

# Formats every C and C++ file as .clang-format says; format-check (a test in `make test` too)
# lists those that are not.
format:
	@git ls-files '*.cc' '*.h' '*.c' | xargs clang-format -i

format-check:
	@scripts/check_format.sh

bench: build
	@$(BUILD)/bin/wattdb-bench

clean:
	rm -rf $(BUILD) build-asan build-clang build-fuzz run
