# Thin wrapper around CMake (docs/building.md). Every target installs what it is missing first
# through scripts/install-deps.sh: `make run` only the run's packages, the test targets the
# suite's too. A new build folder uses Ninja (CMAKE_GENERATOR); an existing one keeps its own.
BUILD ?= build
JOBS ?= $(shell nproc)
export CMAKE_GENERATOR ?= Ninja

.PHONY: all deps configure build run test check vmtest clean

all: build

deps:
	@bash scripts/install-deps.sh test

configure:
	@cmake -S . -B $(BUILD) -DQN_TESTS=ON >/dev/null

build: configure
	@cmake --build $(BUILD) -j $(JOBS)

# The command and the BPF objects only (no test binary), then the default experiment; the
# three times printed (docs/building.md "How long make run takes").
run:
	@set -e; t0=$$(date +%s); bash scripts/install-deps.sh run; t1=$$(date +%s); \
	cmake -S . -B $(BUILD) -DQN_TESTS=OFF >/dev/null; cmake --build $(BUILD) -j $(JOBS) --target quench; \
	t2=$$(date +%s); \
	echo "== dependencies $$((t1 - t0)) s, build $$((t2 - t1)) s"; \
	bash scripts/run-default.sh $(BUILD)

# The whole suite: tiers fast, netns and vm (docs/testing.md).
test: deps
	@$(MAKE) --no-print-directory build
	@cd $(BUILD) && ctest --output-on-failure --timeout 900

# The fast tier: unit, BPF tables, verifier gates, build checks (at most 3 minutes).
check: deps
	@$(MAKE) --no-print-directory build
	@cd $(BUILD) && ctest --output-on-failure --timeout 900 -L fast

# All kernels of scripts/vm/kernels.conf (or KERNEL=name), the whole guest suite in each.
vmtest: deps
	@$(MAKE) --no-print-directory build
	@bash scripts/vmtest.sh --build $(BUILD) $(KERNEL)

clean:
	@rm -rf $(BUILD)
