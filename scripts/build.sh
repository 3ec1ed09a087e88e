#!/usr/bin/env bash
# Configures and builds uroce into a build directory.
#   scripts/build.sh [BUILD_DIR] [CMAKE_BUILD_TYPE]   (defaults: build RelWithDebInfo)
set -euo pipefail
src=$(cd "$(dirname "$0")/.." && pwd)
dir=${1:-$src/build}
type=${2:-RelWithDebInfo}
cmake -S "$src" -B "$dir" -DCMAKE_BUILD_TYPE="$type" -DUROCE_WERROR=ON >/dev/null
cmake --build "$dir" -j"$(nproc)"
