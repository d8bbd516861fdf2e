# The front door. CMake is the real build; these targets drive it.
BUILD    ?= build
ASAN_BUILD ?= build-asan
TSAN_BUILD ?= build-tsan
JOBS     ?= $(shell nproc)
PREFIX   ?= /usr/local
PYTHON   ?= /usr/bin/python3
GEN      := $(shell command -v ninja >/dev/null 2>&1 && echo "-G Ninja")

.PHONY: all deps build lib run test test-build test-libonly test-aarch64 test-one test-layers test-abi abi-baseline test-unit test-python test-python-clang test-python-cl test-bindings test-install fuzz fuzz-files asan tsan bench bench-cuda install clean

all: build

deps:
	@sh scripts/deps.sh

$(BUILD)/CMakeCache.txt:
	cmake -S . -B $(BUILD) $(GEN) -DCMAKE_BUILD_TYPE=Release

# everything the installed packages allow: the library and the C examples always, the tests and benchmarks when their
# packages are there (CMakeLists.txt: TG_BUILD_TESTS, TG_BUILD_BENCH, TG_WITH_LLVM). Installs nothing.
# VIZ's graph layout library comes from npm when npm is there (scripts/viz_deps.sh); without it the viewer draws no graphs
VIZ_DEPS = @command -v npm >/dev/null 2>&1 && sh scripts/viz_deps.sh $(BUILD)/viz || echo "VIZ: npm not found, the viewer will draw no graphs"
build: $(BUILD)/CMakeCache.txt
	$(VIZ_DEPS)
	cmake --build $(BUILD) -j $(JOBS)

# the library (shared and static) and the C examples: cmake and a C++20 compiler are all it needs
LIB_TARGETS := tinygrad tinygrad_static example_hello example_mlp example_mlp_sgd example_train_fashion_mnist example_train_cnn example_classify \
               example_export_fashion_mnist example_onnx_run example_onnx_classify example_llm
lib: $(BUILD)/CMakeCache.txt
	$(VIZ_DEPS)
	cmake --build $(BUILD) -j $(JOBS) --target $(LIB_TARGETS)

# the main job: build the library, then train a classifier on Fashion-MNIST from C (examples/c/train_fashion_mnist.c),
# evaluate it on the 10,000 test images and save fashion_mnist.safetensors (examples/c/classify.c classifies with it).
# Then export it as C (examples/c/export_fashion_mnist.c, docs/export.md), build that with the system C compiler alone
# into a program that needs no library (examples/c/fashion_exported.c), show its size, and run it on the test images:
# it prints both accuracies and fails if any prediction differs from the library's.
# clang when there is one (the library's own C compiler): GCC builds the exported code too, and runs these kernels
# several times slower (docs/export.md)
EXPORT_DIR := $(BUILD)/fashion_export
EXPORT_CC ?= $(shell command -v clang >/dev/null 2>&1 && echo clang || echo cc)
run:
	@sh scripts/deps.sh run
	@$(MAKE) --no-print-directory lib
	$(BUILD)/example_train_fashion_mnist $(STEPS)
	$(BUILD)/example_export_fashion_mnist fashion_mnist.safetensors $(EXPORT_DIR)
	$(EXPORT_CC) -O2 -std=c99 -march=native -I$(EXPORT_DIR) examples/c/fashion_exported.c $(EXPORT_DIR)/fashion.c $(EXPORT_DIR)/fashion_weights.c \
	  -lm -o $(BUILD)/fashion_exported
	@echo "the exported program, $(BUILD)/fashion_exported (bytes):" && size $(BUILD)/fashion_exported
	$(BUILD)/fashion_exported $(EXPORT_DIR)

# what every test needs, installed; then the build with its tests and benchmarks required, not just found
test-build:
	@sh scripts/deps.sh
	@sh scripts/ort.sh $(BUILD)/ort
	@sh scripts/llama_deps.sh $(BUILD)/llama
	@sh scripts/viz_deps.sh $(BUILD)/viz
	cmake -S . -B $(BUILD) $(if $(wildcard $(BUILD)/CMakeCache.txt),,$(GEN)) -DCMAKE_BUILD_TYPE=Release -DTG_BUILD_TESTS=ON -DTG_BUILD_BENCH=ON
	cmake --build $(BUILD) -j $(JOBS)

# Every run starts cold: the kernel disk cache lives in a new empty directory for the whole run and is removed after,
# so a pass never depends on what an earlier run left on disk.
test:
	@$(MAKE) --no-print-directory test-build
	@d=$$(mktemp -d) && trap 'rm -rf "$$d"' EXIT && XDG_CACHE_HOME="$$d" $(MAKE) --no-print-directory test-layers test-libonly test-aarch64 test-abi test-unit test-python test-python-clang test-python-cl test-bindings test-install tsan

# one test, cold: T is a GoogleTest filter (make test-one T='Opt.*') or a pytest node (T=tests/python/test_ops.py::test_add)
test-one: test-build
	@d=$$(mktemp -d) && trap 'rm -rf "$$d"' EXIT && case "$(T)" in \
	  "") echo "usage: make test-one T=Suite.Name (GoogleTest filter) or T=tests/python/file.py[::test]" >&2; exit 2;; \
	  *.py*) XDG_CACHE_HOME="$$d" TINYGRAD_LIB=$(abspath $(BUILD))/libtinygrad.so $(PYTHON) -m pytest -q "$(T)";; \
	  *) XDG_CACHE_HOME="$$d" TG_TEST_SRC=$(CURDIR) $(BUILD)/tg_tests --gtest_filter='$(T)';; esac

# folders include only the folders below them in the pipeline (docs/layers.md)
test-layers:
	$(PYTHON) scripts/check_layers.py

# the library as a user with nothing but cmake and a C++20 compiler builds it: no LLVM, no tests or benchmarks, in a
# fresh build directory of its own. It must need nothing at load time but the C and C++ runtimes (SQLite, zlib, OpenCL
# and the GPU drivers are dlopen'ed when used) and train mlp_sgd.c to the losses the full build gives on CPU:CLANG,
# its kernels compiled by the C compiler (scripts/check_libonly.sh)
LIBONLY_BUILD ?= $(BUILD)/libonly
test-libonly:
	@rm -rf $(LIBONLY_BUILD)
	cmake -S . -B $(LIBONLY_BUILD) $(GEN) -DCMAKE_BUILD_TYPE=Release -DTG_WITH_LLVM=OFF -DTG_BUILD_TESTS=OFF -DTG_BUILD_BENCH=OFF >/dev/null
	cmake --build $(LIBONLY_BUILD) -j $(JOBS) --target tinygrad example_mlp_sgd
	sh scripts/check_libonly.sh $(LIBONLY_BUILD) $(BUILD)

# the library cross-built for aarch64 (cmake/aarch64-linux-gnu.cmake: no LLVM, no tests; -O1, which halves the cross
# build's time and checks the same code), its C examples run under
# qemu-aarch64 with kernels compiled by the cross compiler, their outputs compared with the host's (scripts/check_aarch64.sh)
AARCH64_BUILD ?= $(BUILD)/aarch64
test-aarch64:
	cmake -S . -B $(AARCH64_BUILD) $(GEN) -DCMAKE_TOOLCHAIN_FILE=cmake/aarch64-linux-gnu.cmake -DCMAKE_BUILD_TYPE=Release -DTG_WITH_LLVM=OFF \
	  -DTG_BUILD_TESTS=OFF -DTG_BUILD_BENCH=OFF -DCMAKE_CXX_FLAGS_RELEASE="-O1 -DNDEBUG" >/dev/null
	cmake --build $(AARCH64_BUILD) -j $(JOBS) --target tinygrad example_hello example_mlp example_mlp_sgd
	sh scripts/check_aarch64.sh $(AARCH64_BUILD) $(BUILD)

# the exported ABI (every tg_ function with its parameter and result types, the header's enums and structs) against the
# committed abi/libtinygrad.abi: a removed function or a changed type, enum value or struct layout fails, a new function
# passes (scripts/abi.sh). Only the shared library is built for it. make abi-baseline rewrites the baseline, for an ABI
# change made on purpose (a new major version, or to record added functions).
test-abi: $(BUILD)/CMakeCache.txt
	cmake --build $(BUILD) -j $(JOBS) --target tinygrad
	sh scripts/abi.sh check $(BUILD)/libtinygrad.so

abi-baseline: $(BUILD)/CMakeCache.txt
	cmake --build $(BUILD) -j $(JOBS) --target tinygrad
	sh scripts/abi.sh baseline $(BUILD)/libtinygrad.so

test-unit:
	cd $(BUILD) && ctest --output-on-failure -j $(JOBS)

# pytest workers (pytest-xdist), one per core
test-python:
	TINYGRAD_LIB=$(abspath $(BUILD))/libtinygrad.so TG_ORT_DIR=$(abspath $(BUILD))/ort/node_modules $(PYTHON) -m pytest -q -n $(JOBS) tests/python bindings/python

# the op suites again on the C renderer (DEV=CPU:CLANG: kernels compiled by the system C compiler); the suites that
# compose those ops (autograd, nn, optimizers) ran on the CPU device already and add no new renderer paths
CLANG_SUITES := tests/python/test_ops.py tests/python/test_capi_more_ops.py tests/python/test_core.py tests/python/test_jit.py \
                tests/python/test_devices.py tests/python/test_indexing_capi.py
test-python-clang:
	DEV=CPU:CLANG TINYGRAD_LIB=$(abspath $(BUILD))/libtinygrad.so $(PYTHON) -m pytest -q -n $(JOBS) $(CLANG_SUITES)

# the op suites again on OpenCL (DEV=CL: PoCL's CPU device in CI, any OpenCL GPU elsewhere), and the op, autograd and
# nn suites on CUDA when a GPU is present; each device absent is reported and skipped
CL_SUITES := tests/python/test_ops.py tests/python/test_capi_more_ops.py tests/python/test_jit.py tests/python/test_devices.py
CUDA_SUITES := $(CL_SUITES) tests/python/test_grad_ops.py tests/python/test_nn.py tests/python/test_nn_index_ops.py tests/python/test_optim.py
test-python-cl:
	@for dev in CL CUDA; do \
	  if TINYGRAD_LIB=$(abspath $(BUILD))/libtinygrad.so $(PYTHON) -c "import sys; sys.path.insert(0, 'bindings/python'); import tinygrad_c as t; t.Device.open('$$dev')" 2>/tmp/tg_dev_$$$$; then \
	    echo "== the suites on $$dev"; DEV=$$dev TINYGRAD_LIB=$(abspath $(BUILD))/libtinygrad.so $(PYTHON) -m pytest -q -n $(JOBS) $$([ $$dev = CL ] && echo $(CL_SUITES) || echo $(CUDA_SUITES)) || exit 1; \
	  else echo "== $$dev is not on this machine, its suites are skipped: $$(tail -1 /tmp/tg_dev_$$$$)"; fi; rm -f /tmp/tg_dev_$$$$; \
	done

# each language binding's own suite (bindings/<language>/test.sh: cargo test, go test, the C# runner; the C++ header's
# GoogleTest suite runs in test-unit, the Python binding's in test-python), then the same program in every language,
# compared line by line with the C one (tests/bindings/compare_mlp.sh)
BINDING_SUITES := rust go csharp
test-bindings:
	@for b in $(BINDING_SUITES); do echo "== bindings/$$b"; TINYGRAD_BUILD=$(abspath $(BUILD)) sh bindings/$$b/test.sh || exit 1; done
	TINYGRAD_BUILD=$(abspath $(BUILD)) sh tests/bindings/compare_mlp.sh
	TINYGRAD_BUILD=$(abspath $(BUILD)) PYTHON=$(PYTHON) sh tests/bindings/compare_llm.sh

test-install:
	sh tests/install/test_install.sh $(BUILD)

# the C API fuzzer alone (tests/test_fuzz_capi.cpp), for much longer than make test runs it: 2M calls by default
# (TG_FUZZ_CALLS=N to change, TG_FUZZ_SEED=S for another sequence, TG_FUZZ_TRACE=1 to log every call)
# then the libFuzzer targets for the file readers (fuzz/fuzz_*.cpp), built with clang and ASan+UBSan in $(FUZZ_BUILD)
# over the library's static archive, each run single-process for FUZZ_RUNS inputs (default 10^6; the language-model
# target, which builds models and runs them, FUZZ_RUNS_LLM, default 10^5) from a copy of its seed corpus in
# fuzz/corpus/; a crashing input is left in $(FUZZ_BUILD) (keep it in fuzz/regressions/ once fixed)
FUZZ_BUILD ?= build-fuzz
ONNX_NODE_DIR ?= /usr/share/libonnx-testdata/data/node
FUZZ_RUNS ?= 1000000
FUZZ_RUNS_LLM ?= 100000
FUZZ_TARGETS := safetensors gguf onnx llm
FUZZ_FLAGS := -std=c++20 -O1 -g -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=undefined -Iinclude -Isrc
FUZZ_LIBS := -L/usr/lib/llvm-19/lib -Wl,-rpath,/usr/lib/llvm-19/lib -lLLVM-19 -lpthread -ldl
fuzz: test-build
	@d=$$(mktemp -d) && trap 'rm -rf "$$d"' EXIT && XDG_CACHE_HOME="$$d" TG_FUZZ_CALLS=$${TG_FUZZ_CALLS:-2000000} \
	  $(BUILD)/tg_tests --gtest_filter='FuzzCApi.*'
	$(MAKE) --no-print-directory fuzz-files

fuzz-files: test-build
	@mkdir -p $(FUZZ_BUILD)
	for t in $(FUZZ_TARGETS); do \
	  clang++ $(FUZZ_FLAGS) fuzz/fuzz_$$t.cpp src/nn/state.cpp src/nn/gguf.cpp src/onnx/proto.cpp src/onnx/onnx.cpp src/nn/llm.cpp src/nn/tokenizer.cpp \
	    $(BUILD)/libtinygrad.a $(FUZZ_LIBS) \
	    -o $(FUZZ_BUILD)/fuzz_$$t || exit 1; \
	done
	@# the ONNX seeds: the conformance suite's models (Debian's libonnx-testdata), every tenth one
	@mkdir -p $(FUZZ_BUILD)/corpus_onnx && ls -d $(ONNX_NODE_DIR)/test_* | awk 'NR % 10 == 1' | while read t; do \
	  cp $$t/model.onnx $(FUZZ_BUILD)/corpus_onnx/seed_$$(basename $$t).onnx; done
	@d=$$(mktemp -d) && trap 'rm -rf "$$d"' EXIT && for t in $(FUZZ_TARGETS); do \
	  runs=$(FUZZ_RUNS) && { [ $$t != llm ] || runs=$(FUZZ_RUNS_LLM); } && \
	  mkdir -p $(FUZZ_BUILD)/corpus_$$t && { [ ! -d fuzz/corpus/$$t ] || cp fuzz/corpus/$$t/* $(FUZZ_BUILD)/corpus_$$t/; } && \
	  (cd $(FUZZ_BUILD) && XDG_CACHE_HOME="$$d" ASAN_OPTIONS=allocator_may_return_null=1 ./fuzz_$$t -runs=$$runs -jobs=1 -workers=1 \
	    -rss_limit_mb=4096 -malloc_limit_mb=512 -timeout=20 -print_final_stats=1 corpus_$$t) || exit 1; \
	done

asan:
	@sh scripts/deps.sh
	cmake -S . -B $(ASAN_BUILD) $(GEN) -DCMAKE_BUILD_TYPE=Debug -DTG_SANITIZE=ON -DTG_BUILD_BENCH=OFF
	cmake --build $(ASAN_BUILD) -j $(JOBS)
	@d=$$(mktemp -d) && trap 'rm -rf "$$d"' EXIT && cd $(ASAN_BUILD) && \
	  XDG_CACHE_HOME="$$d" ASAN_OPTIONS=detect_leaks=1:allocator_may_return_null=1 UBSAN_OPTIONS=print_stacktrace=1 \
	  LSAN_OPTIONS=suppressions=$(CURDIR)/scripts/lsan.supp ctest --output-on-failure -j $(JOBS)
	# the DLPack exchange with numpy and PyTorch through the sanitized library (the interpreter's own leaks aside;
	# libstdc++ preloaded with the runtime so C++ exceptions thrown inside torch reach ASan's interceptor)
	@d=$$(mktemp -d) && trap 'rm -rf "$$d"' EXIT && XDG_CACHE_HOME="$$d" TINYGRAD_LIB=$(abspath $(ASAN_BUILD))/libtinygrad.so \
	  LD_PRELOAD="$$(gcc -print-file-name=libasan.so) $$(gcc -print-file-name=libstdc++.so.6)" ASAN_OPTIONS=detect_leaks=0:allocator_may_return_null=1 \
	  $(PYTHON) -m pytest -q -p no:xdist -p no:cacheprovider tests/python/test_dlpack.py

# The thread contract (include/tinygrad.h, "Thread safety") under ThreadSanitizer: the library and tg_tests built with
# -fsanitize=thread -O1 in $(TSAN_BUILD), then the concurrency tests (tests/test_threads.cpp, the JIT hostile cases, the
# older thread tests); any report fails the run (halt_on_error). Kernels run as uninstrumented JIT code (LLVM) or clang
# objects, so TSan sees the library's own threads, locks and state; OpenCL (PoCL) is not used here.
TSAN_TESTS := Threads.*:HostileJit.*:Viz.ThreadsRecordWhileTheViewerReads:VizHttp.StopIsIdempotentAndRefuses:Jit.CallsFromSeveralThreadsAreSerialized:CApi.ErrorStateIsPerThreadAndStartsOk:UOp.MultithreadedInterningGivesOneNode
tsan:
	@sh scripts/deps.sh
	cmake -S . -B $(TSAN_BUILD) $(GEN) -DCMAKE_BUILD_TYPE=RelWithDebInfo -DTG_TSAN=ON -DTG_BUILD_BENCH=OFF
	cmake --build $(TSAN_BUILD) -j $(JOBS) --target tg_tests
	@d=$$(mktemp -d) && trap 'rm -rf "$$d"' EXIT && XDG_CACHE_HOME="$$d" TG_TEST_SRC=$(CURDIR) TSAN_OPTIONS=halt_on_error=1:second_deadlock_stack=1 \
	  $(TSAN_BUILD)/tg_tests --gtest_brief=1 --gtest_filter='$(TSAN_TESTS)'

# bench_ops sets the OpenBLAS core type and thread count of each reference itself (each in its own child process)
bench: test-build
	$(BUILD)/bench_uop --benchmark_min_time=0.2
	TG_BENCH_PYTHON=$(PYTHON) TG_BENCH_DIR=$(CURDIR)/bench $(BUILD)/bench_ops $(BUILD)/bench_ops.json
	$(PYTHON) bench/merge_rows.py bench/results.json $(BUILD)/bench_ops.json
	TINYGRAD_LIB=$(abspath $(BUILD))/libtinygrad.so TG_ORT_DIR=$(abspath $(BUILD))/ort/node_modules $(PYTHON) bench/bench_onnx.py bench/results.json
	TINYGRAD_LIB=$(abspath $(BUILD))/libtinygrad.so TG_LLAMA_DIR=$(abspath $(BUILD))/llama/node_modules/@node-llama-cpp/linux-x64/bins/linux-x64 $(PYTHON) bench/bench_llm.py bench/results.json
	TINYGRAD_LIB=$(abspath $(BUILD))/libtinygrad.so $(PYTHON) bench/bench_mpi.py bench/results.json
	TINYGRAD_LIB=$(abspath $(BUILD))/libtinygrad.so $(PYTHON) bench/bench_cl.py bench/results.json
	$(MAKE) --no-print-directory bench-cuda

# the CUDA rows (bench/bench_cuda.py, against cuBLAS and a device copy through PyTorch's CUDA build) where a GPU is;
# they are added to bench/results.json (BENCH_PYTHON: a Python with numpy and a CUDA PyTorch)
BENCH_PYTHON ?= $(PYTHON)
bench-cuda: test-build
	@if TINYGRAD_LIB=$(abspath $(BUILD))/libtinygrad.so $(BENCH_PYTHON) -c "import sys; sys.path.insert(0, 'bindings/python'); import tinygrad_c as t; t.Device.open('CUDA')" 2>/dev/null; then \
	  TINYGRAD_LIB=$(abspath $(BUILD))/libtinygrad.so $(BENCH_PYTHON) bench/bench_cuda.py bench/results_cuda.json && \
	  $(PYTHON) bench/merge_rows.py bench/results.json bench/results_cuda.json; \
	else echo "bench-cuda: no CUDA device here, the cuda rows are skipped"; fi

install: build
	cmake --install $(BUILD) --prefix $(PREFIX)

clean:
	rm -rf $(BUILD) $(ASAN_BUILD) $(TSAN_BUILD)
