#!/usr/bin/env bash
# Times what a C project pays to build nnmem through CMake: a cold
# `cmake --build` of a tiny consumer that does add_subdirectory(<nnmem>) and
# links nnmem::static, cargo building where nnmem's CMake puts it by default:
# a fresh <build>/nnmem/cargo-target (the cargo registry cache is not
# cleared: downloads are not timed).
#
#   scripts/downstream-build.sh [NNMEM_SOURCE_DIR]   (default: this checkout)
#
# Prints the wall time, the load average around it and the crates cargo
# compiled (BENCHMARKS.md, "Downstream build"). JOBS: parallelism (default 2).
set -euo pipefail

src=$(cd "${1:-$(dirname "${BASH_SOURCE[0]}")/..}" && pwd)
jobs=${JOBS:-2}
work=$(mktemp -d "${TMPDIR:-/tmp}/nnmem-downstream.XXXXXX")
trap 'rm -rf "$work"' EXIT

mkdir -p "$work/consumer"
cat >"$work/consumer/CMakeLists.txt" <<'CMAKE'
cmake_minimum_required(VERSION 3.22)
project(nnmem_consumer C)
add_subdirectory("${NNMEM_DIR}" nnmem)
add_executable(consumer main.c)
target_link_libraries(consumer PRIVATE nnmem::static)
CMAKE
cat >"$work/consumer/main.c" <<'C'
#include <stdio.h>
#include "nnmem.h"
int main(void) {
    printf("nnmem %s\n", nnm_version());
    return 0;
}
C

cmake -S "$work/consumer" -B "$work/build" -DCMAKE_BUILD_TYPE=Release -DNNMEM_DIR="$src" >/dev/null
load_before=$(cut -d' ' -f1-3 /proc/loadavg)
# Wall time, and the CPU time of the build and everything it ran (less
# sensitive to other load on the machine than the wall time).
TIMEFORMAT='%R %U %S'
times=$({ time cmake --build "$work/build" --parallel "$jobs" >"$work/build.log" 2>&1; } 2>&1) \
    || { cat "$work/build.log"; exit 1; }
read -r wall user sys <<<"$times"
"$work/build/consumer" >/dev/null
crates=$(sed -n 's/^ *Compiling \([^ ]*\) .*/\1/p' "$work/build.log" | sort | tr '\n' ' ')
printf '%s: cold cmake --build %.1f s wall, %.1f s CPU (load %s before, %s after); cargo compiled %d crates: %s\n' \
    "$src" "$wall" "$(echo "$user + $sys" | bc)" "$load_before" "$(cut -d' ' -f1-3 /proc/loadavg)" \
    "$(echo "$crates" | wc -w)" "$crates"
