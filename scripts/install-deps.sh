#!/usr/bin/env bash
# Installs what the test suite needs and a fresh Debian/Ubuntu machine lacks:
# a C/C++ toolchain, cmake, clang + libclang-dev (bindgen layout test),
# valgrind, pkg-config, python3 with venv (the oldest-CMake install test
# pip-installs old CMake releases from PyPI), and for the board tests
# (scripts/board-test.sh) the Arm cross toolchain with newlib and its C++
# library, QEMU's Arm system emulator, and the Rust targets
# thumbv7em-none-eabihf and thumbv6m-none-eabi (rustup). Installs only what
# is missing (apt-get, with sudo when not root); does nothing when
# everything is present.
set -euo pipefail

have_pkg() { dpkg-query -W -f='${Status}' "$1" 2>/dev/null | grep -q 'install ok installed'; }

need=()
command -v cc >/dev/null && command -v c++ >/dev/null && command -v make >/dev/null \
    && command -v readelf >/dev/null && command -v objcopy >/dev/null || need+=(build-essential)
command -v cmake >/dev/null || need+=(cmake)
command -v clang >/dev/null || need+=(clang)
command -v valgrind >/dev/null || need+=(valgrind)
command -v pkg-config >/dev/null || need+=(pkg-config)
have_pkg libclang-dev || need+=(libclang-dev)
# Debian's python3 lacks venv's ensurepip until python3-venv is installed.
python3 -c 'import ensurepip, venv' 2>/dev/null || need+=(python3-venv)
command -v arm-none-eabi-gcc >/dev/null || need+=(gcc-arm-none-eabi)
have_pkg libnewlib-arm-none-eabi || need+=(libnewlib-arm-none-eabi)
have_pkg libstdc++-arm-none-eabi-newlib || need+=(libstdc++-arm-none-eabi-newlib)
command -v qemu-system-arm >/dev/null || need+=(qemu-system-arm)

if [ ${#need[@]} -gt 0 ]; then
    sudo=()
    [ "$(id -u)" -eq 0 ] || sudo=(sudo)
    echo "install-deps: installing ${need[*]}"
    "${sudo[@]}" apt-get update
    "${sudo[@]}" env DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends "${need[@]}"
fi

[ -x "$HOME/.cargo/bin/cargo" ] && export PATH="$HOME/.cargo/bin:$PATH"
if ! command -v cargo >/dev/null; then
    echo "install-deps: cargo not found; install a Rust toolchain (rustup) first" >&2
    exit 1
fi
# The board tests cross-compile the embedded build for these targets.
for target in thumbv7em-none-eabihf thumbv6m-none-eabi; do
    if ! rustc --print sysroot >/dev/null 2>&1 || [ ! -d "$(rustc --print sysroot)/lib/rustlib/$target" ]; then
        if command -v rustup >/dev/null; then
            echo "install-deps: adding the Rust target $target"
            rustup target add "$target"
        else
            echo "install-deps: the Rust target $target is needed (no rustup to add it)" >&2
            exit 1
        fi
    fi
done
# The lint gates of test-all.sh need clippy and rustfmt; rustup's minimal
# profile leaves them out.
if ! cargo clippy --version >/dev/null 2>&1 || ! cargo fmt --version >/dev/null 2>&1; then
    if command -v rustup >/dev/null; then
        echo "install-deps: adding the clippy and rustfmt components"
        rustup component add clippy rustfmt
    else
        echo "install-deps: cargo clippy and cargo fmt are needed (no rustup to add them)" >&2
        exit 1
    fi
fi
