# The two front-door commands. Each one installs what it needs (scripts/install_deps.sh, Debian packages)
# and configures/builds with CMake presets.
#   make demo   build and run `nnops demo` (both operators, all dtypes, verified and timed)
#   make test   build and run every test (CTest)
.PHONY: demo test build deps bench clean

PRESET ?= release
BUILD_DIR := build/$(PRESET)

deps:
	@scripts/install_deps.sh

build: deps
	@cmake --preset $(PRESET) >/dev/null
	@cmake --build --preset $(PRESET)

demo: build
	@$(BUILD_DIR)/nnops demo

test: build
	@ctest --preset $(PRESET)

bench: build
	@$(BUILD_DIR)/nnops bench

clean:
	rm -rf build
