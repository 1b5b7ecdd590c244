# Two commands: `make run` (install what is missing, build, describe and predict the
# default scenario) and `make test` (build, run every test and the validation registries).
BUILD ?= build
JOBS ?= $(shell nproc)
SCENARIO ?= scenarios/dsv3-gb200.json
DEB_PACKAGES := cmake g++ make libboost-graph-dev libeigen3-dev nlohmann-json3-dev \
                libfmt-dev libcli11-dev catch2 pybind11-dev python3-dev libjs-vega \
                dpkg-dev python3-venv python3-jsonschema libyaml-cpp-dev lintian \
                clang-format
SUDO := $(shell [ "$$(id -u)" -eq 0 ] || echo sudo)

.PHONY: all deps configure build run test bench clean asan practice fuzz

all: build

deps:
	@missing=""; for p in $(DEB_PACKAGES); do \
	  dpkg-query -W -f='$${Status}' $$p 2>/dev/null | grep -q "ok installed" || missing="$$missing $$p"; \
	done; \
	if [ -n "$$missing" ]; then \
	  echo "installing Debian packages:$$missing"; \
	  $(SUDO) apt-get update -qq && \
	  DEBIAN_FRONTEND=noninteractive $(SUDO) apt-get install -y -qq --no-install-recommends $$missing; \
	fi

# The generated Makefile, not CMakeCache.txt, marks a finished configure: a configure that
# failed (say, before the packages were installed) leaves a cache behind and no Makefile.
$(BUILD)/Makefile: | deps
	cmake -S . -B $(BUILD) -DCMAKE_BUILD_TYPE=Release

configure: $(BUILD)/Makefile

build: deps configure
	cmake --build $(BUILD) -j $(JOBS)

run: build
	$(BUILD)/moesim describe $(SCENARIO)
	$(BUILD)/moesim run $(SCENARIO)

test: build
	cd $(BUILD) && ctest --output-on-failure -j $(JOBS)

# docs/PRACTICE.md made again with this build: every corpus run planned (about 80 minutes
# on 2 cores); `make test`'s practice-table test says when the binary has left it behind.
practice: build
	python3 docs/practice/practice_table.py --rerun --moesim $(BUILD)/moesim --jobs $(JOBS)

# Speed targets (docs/ARCHITECTURE.md): reported, not asserted in timed tests.
bench: build
	$(BUILD)/moesim bench --repeat 5 $(SCENARIO)
	$(BUILD)/moesim bench --repeat 3 scenarios/h800/dsv3-production.json
	$(BUILD)/moesim bench --repeat 3 scenarios/measured/a10-qwen3-235b-h100.json
	$(BUILD)/moesim bench --repeat 3 scenarios/scale/dsv3-h800-131072.json
	$(BUILD)/moesim bench --sweep scenarios/sweeps/bench-1000.json
	$(BUILD)/moesim plan $(SCENARIO) --gpus 1024 --top 5 -o $(BUILD)/plan-bench.csv

# The end-to-end fuzz targets at issue #46's size: 1,000 scenarios, sweep files and launch
# scripts each through the binary (`make test` runs fewer; FUZZ_SEED changes the draws).
FUZZ_CASES ?= 1000
FUZZ_SEED ?= 15
fuzz: build
	for kind in scenario sweep shell; do \
	  MOESIM_FUZZ_CASES=$(FUZZ_CASES) MOESIM_FUZZ_SEED=$(FUZZ_SEED) MOESIM_FUZZ_JOBS=$(JOBS) \
	    $(BUILD)/tests/moesim_fuzz $$kind $(BUILD)/moesim . || exit 1; \
	done

# Sanitizer build of everything but the Python module (slower; used by hand and for the
# loader fuzz test). A sanitized extension would need the sanitizer runtime preloaded into
# the interpreter. UBSan's findings fail the test that meets them (halt_on_error); the fuzz
# targets' moesim runs inherit that.
asan: deps
	cmake -S . -B build-asan -DCMAKE_BUILD_TYPE=RelWithDebInfo -DMOESIM_SANITIZE=ON -DMOESIM_PYTHON=OFF
	cmake --build build-asan -j $(JOBS)
	cd build-asan && UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1 ctest --output-on-failure -j $(JOBS)

clean:
	rm -rf $(BUILD) build-asan
