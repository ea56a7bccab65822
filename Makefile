# The two front-door commands. Each one installs what it needs (scripts/install_deps.sh, Debian packages)
# and configures/builds with CMake presets.
#   make demo   build and run `nnops demo` (every operator, all dtypes, verified and timed)
#   make test   build and run every test (CTest), then install the Python package and run its tests (pytest)
.PHONY: demo test build deps bench clean python python-test

PRESET ?= release
BUILD_DIR := build/$(PRESET)
# The interpreter scripts/install_deps.sh installs the Python packages for (the python3 first on PATH).
PYTHON ?= python3

deps:
	@scripts/install_deps.sh

build: deps
	@cmake --preset $(PRESET) >/dev/null
	@cmake --build --preset $(PRESET)

demo: build
	@$(BUILD_DIR)/nnops demo

test: build
	@ctest --preset $(PRESET)
	@$(MAKE) --no-print-directory python-test

# The Python package (pyproject.toml), built by scikit-build-core with the build tools install_deps.sh installed,
# 2 jobs. It links the library just built in $(BUILD_DIR) (NNOPS_PYTHON_LIBRARY; the wheel carries a copy), so
# the kernels are not compiled twice; its build folder build/python-$(PRESET) is kept, so a second install
# rebuilds only what changed. A plain `pip install .` builds the library into the extension (build/python).
python: build
	@echo "pip install . (nnops Python package, linked to $(BUILD_DIR)/libnnops.so)"
	@CMAKE_BUILD_PARALLEL_LEVEL=2 PIP_ROOT_USER_ACTION=ignore $(PYTHON) -m pip install --quiet \
	  --disable-pip-version-check --no-build-isolation -C build-dir=build/python-$(PRESET) \
	  -C cmake.define.NNOPS_PYTHON_LIBRARY=$(CURDIR)/$(BUILD_DIR)/libnnops.so .

# pytest's exit status is make's: a failure, or no test collected (5), fails the target.
python-test: python
	@$(PYTHON) -m pytest python/tests

bench: build
	@$(BUILD_DIR)/nnops bench

clean:
	rm -rf build
