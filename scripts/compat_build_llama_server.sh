#!/usr/bin/env bash
# Builds llama.cpp's C++ server, llama-server, for `make compat SERVER=llama-server`, from the llama.cpp
# source that the llama-cpp-python release installed in the compat environment vendors, so that both
# servers under test run the same llama.cpp.
#
#   scripts/compat_build_llama_server.sh COMPAT_PYTHON OUT_DIR [CMAKE_ARGS...]
#
# Downloads that release's sdist with pip (the index pip is configured for), unpacks it under
# OUT_DIR/src, configures vendor/llama.cpp with cmake (Release; the CMAKE_ARGS, e.g. the Makefile's
# portable AVX2 flags; no tests, examples, web UI, OpenSSL or curl), builds only the llama-server target
# and copies the binary to OUT_DIR/bin/llama-server. Progress goes to stdout; cmake's output to
# OUT_DIR/build.log.
set -euo pipefail

if [ "$#" -lt 2 ]; then
    echo "usage: $0 COMPAT_PYTHON OUT_DIR [CMAKE_ARGS...]" >&2
    exit 2
fi
python=$1
out=$2
shift 2

version=$("$python" -c 'import importlib.metadata as m; print(m.version("llama_cpp_python"))') || {
    echo "compat: llama-cpp-python is not installed in $python's environment; run make compat first" >&2
    exit 1
}
mkdir -p "$out/src" "$out/bin"
out=$(cd "$out" && pwd)
log=$out/build.log
source_dir=$out/src/llama_cpp_python-$version/vendor/llama.cpp

if [ ! -f "$source_dir/CMakeLists.txt" ]; then
    echo "compat: downloading the llama-cpp-python $version sdist (its vendored llama.cpp is the source)"
    "$python" -m pip download --quiet --no-deps --no-binary :all: "llama-cpp-python==$version" -d "$out/src" >"$log" 2>&1 || {
        tail -n 20 "$log"
        echo "compat: the sdist download failed; see $log" >&2
        exit 1
    }
    tar -xzf "$out/src/llama_cpp_python-$version.tar.gz" -C "$out/src"
fi

echo "compat: configuring llama.cpp (llama-cpp-python $version's vendored copy) with cmake"
cmake -S "$source_dir" -B "$out/build" -DCMAKE_BUILD_TYPE=Release "$@" \
    -DBUILD_SHARED_LIBS=OFF -DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_EXAMPLES=OFF -DLLAMA_BUILD_TOOLS=ON \
    -DLLAMA_BUILD_SERVER=ON -DLLAMA_BUILD_APP=OFF -DLLAMA_BUILD_UI=OFF -DLLAMA_USE_PREBUILT_UI=OFF \
    -DLLAMA_OPENSSL=OFF -DLLAMA_CURL=OFF >>"$log" 2>&1 || {
    tail -n 30 "$log"
    echo "compat: cmake could not configure llama.cpp; see $log" >&2
    exit 1
}

echo "compat: building llama-server on $(nproc) cores (log: $log)"
start=$(date +%s)
nice -n 19 cmake --build "$out/build" --target llama-server -j "$(nproc)" >>"$log" 2>&1 & pid=$!
while kill -0 "$pid" 2>/dev/null; do
    sleep 60
    kill -0 "$pid" 2>/dev/null && echo "compat: still building llama-server ($(( ($(date +%s) - start) / 60 )) min; $(grep -o '\[ *[0-9]*%\]' "$log" | tail -n 1))"
done
wait "$pid" || {
    tail -n 30 "$log"
    echo "compat: the llama-server build failed; see $log" >&2
    exit 1
}
cp "$out/build/bin/llama-server" "$out/bin/llama-server"
echo "$(( ($(date +%s) - start) / 60 )) min on $(nproc) cores ($(date -u +%Y-%m-%d); llama.cpp vendored in llama-cpp-python $version; cmake $*)" >"$out/build.txt"
echo "compat: built $out/bin/llama-server in $(cat "$out/build.txt")"
