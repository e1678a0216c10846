#!/usr/bin/env bash
# Installs rlock from BUILD_DIR into a temporary prefix, then builds and runs a consumer with
# find_package(rlock) and with pkg-config.
set -euo pipefail
build_dir=$1
source_dir=$(cd "$(dirname "$0")" && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cmake --install "$build_dir" --prefix "$work/prefix" >/dev/null
cmake -S "$source_dir/consumer" -B "$work/build" -DCMAKE_PREFIX_PATH="$work/prefix" >/dev/null
cmake --build "$work/build" >/dev/null
"$work/build/consumer"
PKG_CONFIG_PATH="$work/prefix/lib/pkgconfig:$work/prefix/lib/x86_64-linux-gnu/pkgconfig" \
  g++ -std=c++20 "$source_dir/consumer/main.cpp" -o "$work/pc_consumer" \
  $(PKG_CONFIG_PATH="$work/prefix/lib/pkgconfig:$work/prefix/lib/x86_64-linux-gnu/pkgconfig" \
    pkg-config --cflags --libs --static rlock)
"$work/pc_consumer"
echo "install test passed"
