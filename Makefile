# make run  — install missing packages, build (Release), start a local cluster (master + 3 nodes)
# make test — install missing packages, build, run every test through ctest
BUILD ?= build
CONFIG ?=

DURATION ?= 1800

.PHONY: all deps build run test asan bench chaos clean

all: build

deps:
	@scripts/install-deps.sh

build: deps
	@cmake -S . -B $(BUILD) -G Ninja -DCMAKE_BUILD_TYPE=Release > /dev/null
	@cmake --build $(BUILD)

run: build
	@$(BUILD)/bin/wattdb-master --manage-nodes $(if $(CONFIG),--config $(CONFIG))

test: build
	@cd $(BUILD) && ctest --output-on-failure -j2

# Unit, SQL and integration tests under AddressSanitizer + UndefinedBehaviorSanitizer.
asan: deps
	@cmake -S . -B build-asan -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DWATTDB_SANITIZE=ON > /dev/null
	@cmake --build build-asan
	@cd build-asan && ASAN_OPTIONS=detect_leaks=1 ctest --output-on-failure -j2 -E '_smoke'

# Chaos run (kills, freezes, moves under bank transfers and inserts) for DURATION seconds.
chaos: build
	@WATTDB_CHAOS_SECONDS=$(DURATION) $(BUILD)/bin/cluster_test --gtest_filter='Chaos.*'

bench: build
	@$(BUILD)/bin/wattdb-bench

clean:
	rm -rf $(BUILD) build-asan run
