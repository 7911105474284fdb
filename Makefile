# Thin wrapper around CMake (docs/building.md). `make run` and `make test` install missing
# dependencies first through scripts/install-deps.sh.
BUILD ?= build
JOBS ?= $(shell nproc)

.PHONY: all deps configure build run test vmtest clean

all: build

deps:
	@bash scripts/install-deps.sh

configure:
	@cmake -S . -B $(BUILD) >/dev/null

build: configure
	@cmake --build $(BUILD) -j $(JOBS)

run:
	@t0=$$(date +%s); bash scripts/install-deps.sh; t1=$$(date +%s); \
	$(MAKE) --no-print-directory build; t2=$$(date +%s); \
	echo "== dependencies $$((t1 - t0)) s, build $$((t2 - t1)) s"; \
	bash scripts/run-default.sh $(BUILD)

test: deps
	@$(MAKE) --no-print-directory build
	@cd $(BUILD) && ctest --output-on-failure --timeout 900

# All kernels of scripts/vm/kernels.conf (or KERNEL=name), the VM part of the suite in each.
vmtest: deps
	@$(MAKE) --no-print-directory build
	@bash scripts/vmtest.sh --build $(BUILD) $(KERNEL)

clean:
	@rm -rf $(BUILD)
