#!/usr/bin/env bash
# Packs the build dependencies that the GPU machine lacks (nlohmann-json, CLI11 headers + CMake configs,
# zlib headers + static library) from this machine's Debian packages into the ignored folder .deps/, to be
# sent with the device tool's `carry: [".deps"]`. run_all.sh passes it as CMAKE_PREFIX_PATH.
#   bash bench/gpu/make_deps.sh
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
deps="$root/.deps"
rm -rf "$deps"
mkdir -p "$deps/include" "$deps/share/cmake" "$deps/lib"
cp -r /usr/include/nlohmann "$deps/include/"
cp -r /usr/share/cmake/nlohmann_json "$deps/share/cmake/"
cp -r /usr/include/CLI "$deps/include/"
cp -r /usr/share/cmake/CLI11 "$deps/share/cmake/"
cp /usr/include/zlib.h /usr/include/zconf.h "$deps/include/"
cp /usr/lib/x86_64-linux-gnu/libz.a "$deps/lib/"
du -sh "$deps"
