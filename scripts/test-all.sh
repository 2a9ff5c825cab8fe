#!/usr/bin/env bash
# Every test of nnmem, the way CI runs them (.ci/run calls this script):
#
#   0. scripts/install-deps.sh             apt-get installs what is missing
#                                          (cmake, clang, libclang-dev,
#                                          valgrind, pkg-config, a C/C++
#                                          toolchain); nothing when all are
#                                          there; sudo when not root
#   1. cargo test --release --locked --workspace --no-fail-fast
#                                          all Rust tests: library, CLI
#                                          (cli/), header (the bindgen layout
#                                          test needs libclang)
#   2. CMake build + ctest                 C/C++ tests and examples against
#                                          libnnmem.a and libnnmem.so, header
#                                          checks, the installed package
#                                          (find_package, add_subdirectory,
#                                          FetchContent, pkg-config, the
#                                          README's build lines, CMake 3.18
#                                          and 3.17 from PyPI) and the
#                                          valgrind leg
#   3. CMake build with NNMEM_SANITIZE=ON  the C tests under ASan + UBSan
#   3b. scripts/ggml-check.sh              nnmem as ggml's graph allocator:
#                                          ggml from PyPI's llama-cpp-python
#                                          sdist (fetched once into the build
#                                          folder), built with nnmem's
#                                          ggml-alloc.c; ggml's own
#                                          test-alloc and llama-style graphs
#                                          against ggml's allocator
#   4. scripts/board-test.sh               the embedded build (no std, no
#                                          heap) for Cortex-M4F and M0+, its
#                                          C and C++ tests under QEMU on three
#                                          emulated boards, the same plans as
#                                          the host's, nothing called out
#                                          beyond mem*, no panic code linked
#   5. header check and lean library      include/nnmem.h matches the Rust
#                                          sources (tests/header.rs, run in 1), the
#                                          library's graph is nnmem, libc and
#                                          the TOML reader (toml), and
#                                          THIRD-PARTY-NOTICES lists each of
#                                          its crates at its version
#   6. lint gates                          cargo fmt --check (rustfmt.toml) and
#                                          cargo clippy --all-targets with
#                                          -D warnings (src/ffi also denies
#                                          unsafe_op_in_unsafe_fn and
#                                          undocumented unsafe blocks), also
#                                          on the embedded build
#
# What is compiled, and how often: every cargo command here shares one
# CARGO_TARGET_DIR (default: target/) and one profile (release), and each
# asks for what an earlier one built where it can, so cargo finds it fresh:
#   - step 1 builds the workspace with its tests (features unified over
#     the library, the CLI and their dev-dependencies);
#   - both CMake builds (NNMEM_CARGO_TARGET_DIR=$CARGO_TARGET_DIR) build the
#     library as shipped (-p nnmem --lib: the library's features alone, so
#     toml and nnmem once more), the second finds it fresh, as do
#     the install tests that build nnmem again through add_subdirectory
#     and CMake 3.18; consumer_fetchcontent alone compiles it into its own
#     build folder, to show that a default build writes nothing into
#     nnmem's source folder;
#   - step 4 builds the embedded library for two targets (profile
#     embedded, no default features: its own build) and finds the host
#     library fresh;
#   - step 5 reads the header test's result from step 1's output instead
#     of running `cargo test` again (see there why that would compile);
#   - clippy (step 6) type-checks the workspace and its dependencies
#     (check builds: no code generated), sharing step 1's build scripts and
#     proc macros.
# CMake build trees go to build/test-all and build/test-all-sanitize
# (NNMEM_BUILD_ROOT overrides build/). JOBS sets the parallelism (default:
# nproc). Each leg's summary line gives its wall and CPU (user + sys) time.
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/.."
root=$PWD
[ -x "$HOME/.cargo/bin/cargo" ] && export PATH="$HOME/.cargo/bin:$PATH"
./scripts/install-deps.sh # exits non-zero unless everything, valgrind included, is there
jobs=${JOBS:-$(nproc 2>/dev/null || echo 2)}
build_root=${NNMEM_BUILD_ROOT:-$root/build}
export CARGO_TARGET_DIR=${CARGO_TARGET_DIR:-$root/target}
# The header is checked here, never rewritten.
unset NNMEM_UPDATE_HEADER

started=$SECONDS
summary=()
failed=0 # every leg runs even when an earlier one failed; the exit status says
log=$(mktemp)
rust_log=$(mktemp) # step 1's output, read again by step 5

banner() { printf '\n==> %s\n' "$*"; }
# leg_start, then leg_end sets $leg to "W s, CPU C s" since leg_start (CPU:
# user + sys of the commands this shell waited for, from the `times`
# builtin; so these run in this shell, never in a $(...) subshell).
cpu_file=$(mktemp)
trap 'rm -f "$log" "$rust_log" "$cpu_file"' EXIT
children_cpu() {
    times >"$cpu_file"
    cpu=$(tail -n 1 "$cpu_file" | awk '{ t = 0; for (i = 1; i <= 2; i++) { split($i, a, /[ms]/); t += a[1] * 60 + a[2] } printf "%.0f", t }')
}
leg_start() { leg_wall=$SECONDS; children_cpu; leg_cpu=$cpu; }
leg_end() { children_cpu; leg="$((SECONDS - leg_wall)) s, CPU $((cpu - leg_cpu)) s"; }

# --- 1. Rust -------------------------------------------------------------------
banner "cargo test --release --locked --workspace --no-fail-fast"
leg_start
# --no-fail-fast: every test binary runs even after one fails (step 5 reads
# tests/header.rs's result from this output).
if cargo test --release --locked --workspace --no-fail-fast 2>&1 | tee "$rust_log"; then
    rust_passed=$(sed -n 's/^test result: ok\. \([0-9]*\) passed.*/\1/p' "$rust_log" | awk '{n += $1} END {print n + 0}')
    leg_end
    summary+=("cargo test: $rust_passed passed ($leg)")
else
    leg_end
    summary+=("cargo test: FAILED ($leg)")
    failed=1
fi

# --- 2 and 3. CMake + ctest -------------------------------------------------------
# cmake_leg NAME BUILD_DIR [cmake args...]
cmake_leg() {
    local name=$1 dir=$2
    shift 2
    banner "CMake ($name): configure, build, ctest in ${dir#"$root"/}"
    leg_start
    if ! cmake -S "$root" -B "$dir" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DNNMEM_BUILD_TESTS=ON \
        -DNNMEM_CARGO_TARGET_DIR="$CARGO_TARGET_DIR" "$@" \
        || ! cmake --build "$dir" --parallel "$jobs"; then
        summary+=("ctest ($name): FAILED to configure or build")
        failed=1
        return
    fi
    local verdict=""
    ctest --test-dir "$dir" --output-on-failure --parallel "$jobs" 2>&1 | tee "$log" \
        || { verdict="FAILED: "; failed=1; }
    local result
    result=$(grep -E '^[0-9]+% tests passed' "$log" | tail -n 1)
    leg_end
    summary+=("ctest ($name): $verdict${result:-no tests ran} ($leg)")
}
cmake_leg default "$build_root/test-all" -DNNMEM_SANITIZE=OFF
cmake_leg "ASan+UBSan" "$build_root/test-all-sanitize" -DNNMEM_SANITIZE=ON

# --- 3b. ggml with nnmem's ggml-alloc.c ---------------------------------------------
banner "ggml with nnmem's ggml-alloc.c (scripts/ggml-check.sh)"
leg_start
if scripts/ggml-check.sh "$build_root/test-all" "$build_root/ggml-check" 2>&1 | tee "$log" &&
    grep -q '^llama_graphs: all passed' "$log" && grep -q '^ggml_shared_buffer: all passed' "$log" && grep -q '^alloc_edges: all passed' "$log" &&
    grep -q '^ggml-check: valgrind clean' "$log"; then
    leg_end
    summary+=("ggml: test-alloc, llama-style graphs, examples/ggml_shared_buffer and alloc_edges passed, valgrind clean ($leg)")
else
    leg_end
    summary+=("ggml: FAILED ($leg)")
    failed=1
fi

# --- 4. the embedded build on emulated boards ----------------------------------------
banner "the embedded build on emulated Cortex-M boards (scripts/board-test.sh)"
leg_start
if scripts/board-test.sh "$build_root/board" 2>&1 | tee "$log"; then
    result=$(grep -E '^board: [0-9]+ passed' "$log" | tail -n 1)
    leg_end
    summary+=("${result:-board: no result} ($leg)")
else
    result=$(grep -E '^board: [0-9]+ passed' "$log" | tail -n 1)
    leg_end
    summary+=("board: FAILED ${result:+(${result#board: }) }($leg)")
    failed=1
fi

# --- 5. header, lean library ------------------------------------------------------
# tests/header.rs compares fresh cbindgen headers with include/nnmem.h and
# the topic headers under include/nnmem/, and
# fails with "Regenerate it with: NNMEM_UPDATE_HEADER=1 cargo test --release
# --test header". Step 1 ran it; its result is read from step 1's output, not
# run again: the CMake builds in between wrote their -p nnmem --lib build
# over step 1's (cargo names a path package's cdylib and staticlib outputs
# without a hash, so the two feature sets share deps/libnnmem.*), and
# another `cargo test` would compile nnmem once more.
banner "include/nnmem.h up to date (tests/header.rs, in step 1)"
header_result=$(awk '/^ *Running tests\/header\.rs / { on = 1; next } on && /^test result: / { print; exit }' "$rust_log")
case $header_result in
    "test result: ok. "[1-9]*" passed; 0 failed"*)
        echo "$header_result"
        summary+=("include/nnmem.h and the topic headers: up to date") ;;
    *)
        echo "tests/header.rs did not pass in step 1: ${header_result:-it did not run}"
        summary+=("include/nnmem.h: FAILED (out of date, or the test failed to build or run; see step 1)")
        failed=1 ;;
esac
# What CMake builds (-p nnmem --lib) must need nothing but libc and the
# region configuration file's TOML reader (toml with parsing only, and the
# crates it is made of) at build and run time: no binding generator, no
# derive macro, no CLI or benchmark dependency.
# Exactly these crates, so that a new one is a choice.
banner "library dependencies: nnmem, libc, toml"
lib_deps=$(cargo tree --locked -e normal,build -p nnmem --prefix none --format '{p}' | awk '{print $1}' | sort -u | tr '\n' ' ')
lib_expected="libc nnmem serde_spanned toml toml_datetime toml_parser winnow "
if [ "$lib_deps" = "$lib_expected" ]; then
    summary+=("library dependencies: nnmem, libc, toml")
else
    echo "the library's graph holds: $lib_deps(expected: $lib_expected)"
    summary+=("library dependencies: FAILED ($lib_deps)")
    failed=1
fi
# The notices name every crate of that graph at the version Cargo.lock pins
# (a table row: name, version, licence); a new crate or version is a new row.
banner "THIRD-PARTY-NOTICES lists the library's crates"
missing=""
while read -r name version; do
    [ "$name" = nnmem ] && continue
    awk -v n="$name" -v v="$version" '$1 == n && $2 == v { found = 1 } END { exit !found }' THIRD-PARTY-NOTICES \
        || missing+="$name $version, "
done < <(cargo tree --locked -e normal,build -p nnmem --prefix none --format '{p}' | awk '{sub(/^v/, "", $2); print $1, $2}' | sort -u)
if [ -z "$missing" ]; then
    summary+=("THIRD-PARTY-NOTICES: lists every crate of the library")
else
    echo "THIRD-PARTY-NOTICES has no row for: ${missing%, }"
    summary+=("THIRD-PARTY-NOTICES: FAILED (missing ${missing%, })")
    failed=1
fi

# --- 6. lint gates ---------------------------------------------------------------
banner "cargo fmt --check"
if cargo fmt --all --check; then
    summary+=("cargo fmt --check: clean")
else
    summary+=("cargo fmt --check: FAILED (run cargo fmt --all)")
    failed=1
fi
banner "cargo clippy --all-targets -- -D warnings (and on the embedded build)"
leg_start
if cargo clippy --release --locked --workspace --all-targets -- -D warnings \
    && cargo clippy --locked -p nnmem --lib --no-default-features --target thumbv7em-none-eabihf \
        --profile embedded -- -D warnings \
    && cargo clippy --locked -p nnmem --lib --no-default-features --target thumbv7em-none-eabihf \
        --features strip-messages,arena-guard,arena-recording --profile embedded -- -D warnings; then
    leg_end
    summary+=("cargo clippy: clean ($leg)")
else
    leg_end
    summary+=("cargo clippy: FAILED ($leg)")
    failed=1
fi

banner "summary"
printf '  %s\n' "${summary[@]}"
children_cpu
if [ $failed -ne 0 ]; then
    echo "test-all: FAILED after $((SECONDS - started)) s (CPU $cpu s)"
    exit 1
fi
echo "test-all: ALL PASSED in $((SECONDS - started)) s (CPU $cpu s)"
