#!/usr/bin/env bash
# nnmem as a downstream user meets it: installed, vendored, or via pkg-config. Registered with ctest
# by c-tests/CMakeLists.txt; each mode is one test.
#
#   install_test.sh install      BUILD_DIR WORK_DIR LIBDIR MAX_SO_BYTES DOCDIR
#       cmake --install BUILD_DIR into a staging prefix, then move it to
#       WORK_DIR/prefix (so everything below also proves the package is
#       relocatable) and check the file layout; the libraries carry no
#       debug info, libnnmem.so is at most MAX_SO_BYTES, the `debug`
#       component adds the debug file that the .so's debuglink names, and
#       LICENSE and THIRD-PARTY-NOTICES are in the docdir.
#   install_test.sh find_package WORK_DIR CONSUMER_SRC VERSION LIBDIR [cmake args...]
#       configure, build and run c-tests/consumer with find_package(nnmem),
#       static and shared, BUILD_SHARED_LIBS off and on.
#   install_test.sh old_cmake    WORK_DIR CONSUMER_SRC NNMEM_SRC VERSION LIBDIR TOOLS_DIR MIN_CMAKE [cmake args...]
#       with the oldest supported CMake (the newest MIN_CMAKE.x release):
#       find_package, static and shared, nnmem built and installed on its
#       own, and built by add_subdirectory and by FetchContent; the release
#       series before it must stop at a
#       clear message for both find_package and add_subdirectory. Both
#       come from PyPI (pip in a venv under TOOLS_DIR, kept for the next run).
#   install_test.sh add_subdirectory WORK_DIR CONSUMER_SRC NNMEM_SRC SONAME [cmake args...]
#       the same consumer with add_subdirectory(NNMEM_SRC): same target names.
#   install_test.sh fetchcontent WORK_DIR CONSUMER_SRC NNMEM_SRC SONAME [cmake args...]
#       the same consumer with FetchContent_MakeAvailable(nnmem), its source
#       given by FETCHCONTENT_SOURCE_DIR_NNMEM (no download) pointing at a
#       copy of NNMEM_SRC; cargo builds where nnmem's CMake puts it by
#       default, and the copy must be unchanged afterwards.
#   install_test.sh pkg_config   WORK_DIR CONSUMER_SRC VERSION LIBDIR CC
#       build c-tests/consumer/main.c with `pkg-config --cflags --libs nnmem`
#       (shared) and `pkg-config --static` (static), and run both.
#   install_test.sh examples     WORK_DIR NNMEM_SRC LIBDIR CC CXX
#       the README's and the examples' build lines against the installed
#       prefix, as written but for the prefix; each program runs.
#   install_test.sh soname       LIBRARY SONAME
#       the shared library carries the expected SONAME.
set -euo pipefail

fail() { echo "FAIL: $*" >&2; exit 1; }

# needed <binary>: its DT_NEEDED entries, one per line.
needed() { readelf -d "$1" | sed -n 's/.*(NEEDED).*\[\(.*\)\]/\1/p'; }

# check_linkage <binary> static|shared <soname>
check_linkage() {
    local deps
    deps=$(needed "$1")
    case $2 in
        shared) grep -qx "$3" <<<"$deps" || fail "$1 does not need $3 (needs: $(echo $deps))" ;;
        static) ! grep -q 'libnnmem' <<<"$deps" || fail "$1 should not need libnnmem (needs: $(echo $deps))" ;;
    esac
}

soname_of() { readelf -d "$1" | sed -n 's/.*(SONAME).*\[\(.*\)\]/\1/p'; }

# build_consumer BUILD_DIR CONSUMER_SRC SONAME BUILD_SHARED_LIBS [cmake args...]:
# configure, build and run c-tests/consumer; check how each program links.
build_consumer() {
    local b=$1 src=$2 soname=$3 shared=$4
    shift 4
    rm -rf "$b"
    cmake -S "$src" -B "$b" -DBUILD_SHARED_LIBS="$shared" -DNNMEM_CONSUMER_SELF_TEST=ON "$@"
    cmake --build "$b"
    for kind in static shared nnmem topic compat compat_cxx; do
        echo "--- consumer_$kind (BUILD_SHARED_LIBS=$shared)"
        "$b/consumer_$kind"
    done
    check_linkage "$b/consumer_static" static "$soname"
    check_linkage "$b/consumer_shared" shared "$soname"
    if [ "$shared" = ON ]; then
        check_linkage "$b/consumer_nnmem" shared "$soname"
    else
        check_linkage "$b/consumer_nnmem" static "$soname"
    fi
}

# debug_sections FILE: the .debug_* sections of FILE (of every member of an archive), space-separated.
debug_sections() { readelf -S --wide "$1" | { grep -o '\.debug_[a-z_.]*' || true; } | sort -u | tr '\n' ' '; }

# pip_cmake DIR SPEC: a venv at DIR with `pip install cmake==SPEC`, unless DIR already has one.
pip_cmake() {
    local dir=$1 spec=$2
    # The stamp is written last, so an interrupted run's half-made venv is redone.
    [ -f "$dir/installed" ] && return
    rm -rf "$dir"
    python3 -m venv "$dir"
    "$dir/bin/pip" install --disable-pip-version-check --quiet "cmake==$spec"
    echo "cmake==$spec" >"$dir/installed"
}

mode=$1
shift
case $mode in
install)
    build=$1 work=$2 libdir=$3 max_so=$4 docdir=$5
    rm -rf "$work"
    mkdir -p "$work"
    cmake --install "$build" --prefix "$work/staging"
    s=$work/staging
    so=$(readlink -f "$s/$libdir/libnnmem.so")
    for f in "$so" "$s/$libdir/libnnmem.a"; do
        dbg=$(debug_sections "$f")
        [ -z "$dbg" ] || fail "installed $(basename "$f") carries debug info: $dbg"
    done
    # The loader needs the dynamic symbols only; the full table is in the debug file.
    ! readelf -S --wide "$so" | grep -qw '\.symtab' || fail "installed $(basename "$so") keeps its .symtab"
    so_bytes=$(stat -c %s "$so")
    [ "$so_bytes" -le "$max_so" ] || fail "installed $(basename "$so") is $so_bytes B, more than $max_so B"
    echo "installed $(basename "$so"): $so_bytes B (at most $max_so B), libnnmem.a: $(stat -c %s "$s/$libdir/libnnmem.a") B; no .debug_* sections"
    # Only the debug component installs the debug file; the .so's debuglink
    # names it and carries its CRC-32, which is what gdb checks.
    link_name=$(basename "$so").debug
    [ ! -e "$s/$libdir/.debug/$link_name" ] || fail "the default install has $libdir/.debug/$link_name"
    cmake --install "$build" --prefix "$s" --component debug
    dbg_file=$s/$libdir/.debug/$link_name
    [ -f "$dbg_file" ] || fail "not installed by --component debug: $libdir/.debug/$link_name"
    grep -qw '\.debug_info' <<<"$(debug_sections "$dbg_file")" || fail "$dbg_file has no .debug_info"
    readelf -S --wide "$dbg_file" | grep -qw '\.symtab' || fail "$dbg_file has no .symtab"
    objcopy --dump-section .gnu_debuglink="$work/debuglink" "$so" "$work/so-copy" \
        || fail "$(basename "$so") has no .gnu_debuglink"
    python3 - "$work/debuglink" "$dbg_file" <<'EOF'
import struct, sys, zlib
link = open(sys.argv[1], "rb").read()
name = link[: link.index(b"\0")].decode()
(crc,) = struct.unpack("<I", link[-4:])
want_name = sys.argv[2].rsplit("/", 1)[1]
want_crc = zlib.crc32(open(sys.argv[2], "rb").read())
if (name, crc) != (want_name, want_crc):
    sys.exit(f"FAIL: debuglink names {name} (CRC {crc:#010x}); the debug file is {want_name} (CRC {want_crc:#010x})")
print(f"debuglink: {name}, CRC {crc:#010x} matches")
EOF
    rm -f "$work/debuglink" "$work/so-copy"
    mv "$s" "$work/prefix"
    p=$work/prefix
    for f in include/nnmem.h "$libdir/libnnmem.a" "$libdir/cmake/nnmem/nnmemConfig.cmake" \
             "$libdir/cmake/nnmem/nnmemConfigVersion.cmake" "$libdir/pkgconfig/nnmem.pc"; do
        [ -f "$p/$f" ] || fail "not installed: $f"
    done
    src_dir=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
    # The licence and the third-party notices, as in the source tree, where
    # GNUInstallDirs puts documentation (share/doc/nnmem).
    for f in LICENSE THIRD-PARTY-NOTICES; do
        [ -f "$p/$docdir/$f" ] || fail "not installed: $docdir/$f"
        cmp -s "$src_dir/$f" "$p/$docdir/$f" || fail "installed $docdir/$f differs from the source tree's $f"
    done
    # include/nnmem/: the topic headers and the hand-written ones, every one of them.
    for h in "$src_dir"/include/nnmem/*.h; do
        [ -f "$p/include/nnmem/$(basename "$h")" ] || fail "not installed: include/nnmem/$(basename "$h")"
    done
    # The compat headers: legacy C (utils/list.h) and the originals' C++
    # interfaces (.h and .hpp).
    for h in $(cd "$src_dir/include" && find nnmem/compat -name '*.h' -o -name '*.hpp'); do
        [ -f "$p/include/$h" ] || fail "not installed: include/$h"
    done
    # libnnmem.so -> libnnmem.so.<soversion> -> libnnmem.so.<version> (the file)
    [ -L "$p/$libdir/libnnmem.so" ] || fail "$libdir/libnnmem.so is not a symlink"
    soname=$(soname_of "$p/$libdir/libnnmem.so")
    [ -n "$soname" ] || fail "libnnmem.so has no SONAME"
    [ -L "$p/$libdir/$soname" ] || fail "$libdir/$soname (the SONAME) is not a symlink"
    real=$(readlink -f "$p/$libdir/libnnmem.so")
    [ -f "$real" ] && [ ! -L "$real" ] || fail "libnnmem.so does not resolve to a file"
    [ "$(readlink -f "$p/$libdir/$soname")" = "$real" ] || fail "$soname and libnnmem.so differ"
    # Relocatable: no file may mention the staging prefix.
    if grep -rlF "$work/staging" "$p" >/dev/null; then
        fail "installed files hard-code the install prefix: $(grep -rlF "$work/staging" "$p")"
    fi
    echo "installed and relocated to $p:"
    (cd "$p" && find . \( -type f -o -type l \) | sort)
    ;;
find_package)
    work=$1 src=$2 version=$3 libdir=$4
    shift 4
    p=$work/prefix
    soname=$(soname_of "$p/$libdir/libnnmem.so")
    for shared in OFF ON; do
        build_consumer "$work/consumer-$shared" "$src" "$soname" "$shared" "$@" \
            -DCMAKE_PREFIX_PATH="$p" -DNNMEM_CONSUMER_EXPECT_VERSION="$version"
    done
    ;;
old_cmake)
    work=$1 src=$2 nnmem_src=$3 version=$4 libdir=$5 tools=$6 min=$7
    shift 7
    p=$work/prefix
    soname=$(soname_of "$p/$libdir/libnnmem.so")
    [[ $min =~ ^([0-9]+)\.([0-9]+)$ ]] || fail "MIN_CMAKE '$min' is not X.Y"
    too_old=${BASH_REMATCH[1]}.$((BASH_REMATCH[2] - 1))
    pip_cmake "$tools/cmake-$min" "$min.*"
    pip_cmake "$tools/cmake-$too_old" "$too_old.*"

    got=$(PATH=$tools/cmake-$min/bin:$PATH cmake --version | head -n 1)
    [[ $got == "cmake version $min."* ]] || fail "$tools/cmake-$min has $got"
    got_version=${got#cmake version }
    echo "--- find_package with $got"
    for shared in OFF ON; do
        PATH=$tools/cmake-$min/bin:$PATH build_consumer "$work/old-cmake-$shared" "$src" "$soname" "$shared" \
            "$@" -DCMAKE_PREFIX_PATH="$p" -DNNMEM_CONSUMER_EXPECT_VERSION="$version"
    done
    echo "--- nnmem configured, built and installed with $got"
    b=$work/old-cmake-nnmem
    rm -rf "$b" "$work/old-cmake-prefix"
    PATH=$tools/cmake-$min/bin:$PATH cmake -S "$nnmem_src" -B "$b" "$@"
    PATH=$tools/cmake-$min/bin:$PATH cmake --build "$b"
    PATH=$tools/cmake-$min/bin:$PATH cmake --install "$b" --prefix "$work/old-cmake-prefix"
    for f in include/nnmem.h "$libdir/libnnmem.a" "$libdir/libnnmem.so" "$libdir/$soname" \
             "$libdir/cmake/nnmem/nnmemConfig.cmake" "$libdir/pkgconfig/nnmem.pc"; do
        [ -e "$work/old-cmake-prefix/$f" ] || fail "cmake $min did not install $f"
    done
    echo "--- add_subdirectory and FetchContent with $got"
    PATH=$tools/cmake-$min/bin:$PATH build_consumer "$work/old-cmake-subdirectory" "$src" "$soname" OFF "$@" \
        -DNNMEM_CONSUMER_SOURCE_DIR="$nnmem_src"
    PATH=$tools/cmake-$min/bin:$PATH build_consumer "$work/old-cmake-fetchcontent" "$src" "$soname" ON "$@" \
        -DNNMEM_CONSUMER_FETCHCONTENT=ON -DFETCHCONTENT_SOURCE_DIR_NNMEM="$nnmem_src"

    old_cmake=$tools/cmake-$too_old/bin/cmake
    old_version=$("$old_cmake" --version | sed -n 's/^cmake version //p')
    [[ $old_version == "$too_old."* ]] || fail "$old_cmake is $old_version"
    # refuses CMAKE HOW SOURCE_DIR WANT [cmake args...]: CMAKE fails to configure SOURCE_DIR, saying WANT.
    refuses() {
        local cmake=$1 how=$2 dir=$3 want=$4 b=$work/refused-$2 log=$work/refused-$2.log
        shift 4
        echo "--- $how must refuse"
        rm -rf "$b"
        if "$cmake" -S "$dir" -B "$b" "$@" >"$log" 2>&1; then
            cat "$log"
            fail "$how: configured"
        fi
        # CMake wraps long messages; compare with the lines joined.
        if ! tr -s ' \n' ' ' <"$log" | grep -qF "$want"; then
            cat "$log"
            fail "$how: failed without \"$want\""
        fi
        echo "$how: \"$want\""
    }
    refuses "$old_cmake" "find_package with cmake $old_version" "$src" \
        "nnmem needs CMake $min or newer; this is $old_version" "$@" -DCMAKE_PREFIX_PATH="$p"
    refuses "$old_cmake" "add_subdirectory with cmake $old_version" "$src" \
        "CMake $min or higher is required. You are running version $old_version" "$@" \
        -DNNMEM_CONSUMER_SOURCE_DIR="$nnmem_src"
    # The C tests need more than the library; asking for them says how much.
    refuses "$tools/cmake-$min/bin/cmake" "NNMEM_BUILD_TESTS=ON with cmake $got_version" "$nnmem_src" \
        "nnmem's C tests (NNMEM_BUILD_TESTS) need CMake 3.22 or newer; this is $got_version" "$@" \
        -DNNMEM_BUILD_TESTS=ON
    ;;
add_subdirectory)
    work=$1 src=$2 nnmem_src=$3 soname=$4
    shift 4
    for shared in OFF ON; do
        build_consumer "$work/subdirectory-$shared" "$src" "$soname" "$shared" "$@" \
            -DNNMEM_CONSUMER_SOURCE_DIR="$nnmem_src"
    done
    ;;
fetchcontent)
    # On a copy of nnmem's source, with the default NNMEM_CARGO_TARGET_DIR
    # (so cargo compiles the library once more, into the consumer's build
    # folder): the build must leave the copy as it was, no target/ in it.
    work=$1 src=$2 nnmem_src=$3 soname=$4
    shift 4
    rm -rf "$work"
    copy=$work/nnmem-src
    mkdir -p "$copy"
    if git -C "$nnmem_src" rev-parse --is-inside-work-tree >/dev/null 2>&1; then
        # Tracked files and new ones not ignored: the checkout as a user has it, without build outputs.
        (cd "$nnmem_src" && git ls-files -z --cached --others --exclude-standard \
            | xargs -0 cp --parents --no-dereference -t "$copy") || true
    else
        tar -C "$nnmem_src" --exclude=./target --exclude=./build -cf - . | tar -C "$copy" -xf -
    fi
    [ -f "$copy/CMakeLists.txt" ] && [ -f "$copy/Cargo.toml" ] || fail "could not copy $nnmem_src to $copy"
    snapshot() { (cd "$copy" && find . -printf '%p %y %s %T@\n' | sort); }
    snapshot >"$work/before"
    build_consumer "$work/fetchcontent" "$src" "$soname" ON "$@" \
        -DNNMEM_CONSUMER_FETCHCONTENT=ON -DFETCHCONTENT_SOURCE_DIR_NNMEM="$copy"
    snapshot >"$work/after"
    if ! diff "$work/before" "$work/after" >"$work/changes"; then
        cat "$work/changes"
        fail "the FetchContent build changed nnmem's source folder ($copy); see the lines above"
    fi
    cargo_dir=$work/fetchcontent/_deps/nnmem-build/cargo-target
    [ -f "$cargo_dir/release/libnnmem.a" ] || fail "cargo did not build into $cargo_dir"
    echo "nnmem's source folder unchanged; cargo built in ${cargo_dir#"$work"/}"
    # The compilation is 100s of MB that nothing else uses.
    rm -rf "$cargo_dir"
    ;;
pkg_config)
    work=$1 src=$2 version=$3 libdir=$4 cc=$5
    p=$work/prefix
    export PKG_CONFIG_PATH=$p/$libdir/pkgconfig
    [ "$(pkg-config --modversion nnmem)" = "$version" ] || fail "pkg-config --modversion: $(pkg-config --modversion nnmem)"
    pc_libdir=$(pkg-config --variable=libdir nnmem)
    soname=$(soname_of "$pc_libdir/libnnmem.so")
    b=$work/pkg-config
    rm -rf "$b"
    mkdir -p "$b"
    flags=(-std=c11 -Wall -Wextra -Werror -pedantic)

    read -ra cflags <<<"$(pkg-config --cflags nnmem)"
    read -ra libs <<<"$(pkg-config --libs nnmem)"
    echo "shared: $cc main.c ${cflags[*]} ${libs[*]}"
    "$cc" "${flags[@]}" "$src/main.c" "${cflags[@]}" "${libs[@]}" -Wl,-rpath,"$pc_libdir" -o "$b/consumer_shared"
    "$b/consumer_shared"
    check_linkage "$b/consumer_shared" shared "$soname"

    # The README's one-liner as written there, and its LD_LIBRARY_PATH
    # alternative; without either the loader must not find libnnmem.so
    # (so the test shows that it is the rpath or LD_LIBRARY_PATH that works).
    (cd "$b" && CC=$cc sh -c '"$CC" "$0" $(pkg-config --cflags --libs nnmem) -Wl,-rpath,$(pkg-config --variable=libdir nnmem) -o app_rpath' "$src/main.c")
    env -u LD_LIBRARY_PATH "$b/app_rpath" >/dev/null || fail "the README's rpath one-liner built a program that does not run"
    (cd "$b" && CC=$cc sh -c '"$CC" "$0" $(pkg-config --cflags --libs nnmem) -o app_plain' "$src/main.c")
    ! env -u LD_LIBRARY_PATH "$b/app_plain" >/dev/null 2>&1 || fail "app_plain found libnnmem.so without rpath or LD_LIBRARY_PATH"
    LD_LIBRARY_PATH=$(pkg-config --variable=libdir nnmem) "$b/app_plain" >/dev/null \
        || fail "app_plain does not run with LD_LIBRARY_PATH=\$(pkg-config --variable=libdir nnmem)"
    echo "rpath one-liner and LD_LIBRARY_PATH: both run"

    compat=$(pkg-config --variable=compatincludedir nnmem)
    [ -f "$compat/utils/list.h" ] || fail "pkg-config compatincludedir $compat has no utils/list.h"
    echo "compat: $cc compat.c ${cflags[*]} -I$compat ${libs[*]}"
    "$cc" "${flags[@]}" "$src/compat.c" "${cflags[@]}" "-I$compat" "${libs[@]}" -Wl,-rpath,"$pc_libdir" -o "$b/consumer_compat"
    "$b/consumer_compat"

    # The originals' C++ interfaces through the same flags, as C++11.
    cxx=${CXX:-c++}
    standin="$src/../compat/tflm"
    echo "compat C++: $cxx compat_cxx.cpp ${cflags[*]} ${libs[*]}"
    "$cxx" -std=c++11 -Wall -Wextra -Werror -pedantic -I"$standin" "$src/compat_cxx.cpp" "$standin/micro_log.cpp" \
        "${cflags[@]}" "${libs[@]}" -Wl,-rpath,"$pc_libdir" -o "$b/consumer_compat_cxx"
    "$b/consumer_compat_cxx"

    # With both libnnmem.a and libnnmem.so in libdir, -lnnmem picks the .so;
    # a static link names the archive (-l:libnnmem.a) and keeps the rest of
    # `pkg-config --static --libs` (Libs.private: what Rust's std needs).
    read -ra libs <<<"$(pkg-config --static --libs nnmem)"
    libs=("${libs[@]/#-lnnmem/-l:libnnmem.a}")
    echo "static: $cc main.c ${cflags[*]} ${libs[*]}"
    "$cc" "${flags[@]}" "$src/main.c" "${cflags[@]}" "${libs[@]}" -o "$b/consumer_static"
    "$b/consumer_static"
    check_linkage "$b/consumer_static" static "$soname"
    ;;
examples)
    # The build lines users copy, run as written but for the prefix: the
    # README's (from the source folder: `cc ... examples/pool.c ...`) and
    # the ones in each example's opening comment (from the examples
    # folder). /opt/nnmem becomes the test's prefix, /opt/nnmem/lib its
    # LIBDIR, and a leading cc or c++ the compilers CMake uses. Every
    # program built runs; none of its output is checked here (the
    # example_* tests do that).
    work=$(realpath -m "$1") nnmem_src=$2 libdir=$3 cc=$4 cxx=$5
    p=$work/prefix
    b=$work/examples
    rm -rf "$b"
    mkdir -p "$b/examples"
    cp "$nnmem_src"/examples/*.c "$nnmem_src"/examples/*.cpp "$b/examples/"
    # run_lines DIR WHAT: the lines on stdin, one shell, in DIR; each cc or c++ line makes ./a.out, which runs.
    run_lines() {
        local dir=$1 what=$2 script="" line n=0
        while IFS= read -r line; do
            line=${line//\/opt\/nnmem\/lib/$p/$libdir}
            line=${line//\/opt\/nnmem/$p}
            case $line in
                "cc "*) n=$((n + 1)); script+="rm -f a.out; \"\$NNMEM_TEST_CC\" ${line#cc } && ./a.out >/dev/null"$'\n' ;;
                "c++ "*) n=$((n + 1)); script+="rm -f a.out; \"\$NNMEM_TEST_CXX\" ${line#c++ } && ./a.out >/dev/null"$'\n' ;;
                ./a.out) ;;
                *) script+="$line"$'\n' ;;
            esac
        done
        [ "$n" -gt 0 ] || fail "$what: no build line found"
        echo "--- $what ($n build lines)"
        printf '%s' "$script"
        (cd "$dir" && env -u LD_LIBRARY_PATH -u PKG_CONFIG_PATH NNMEM_TEST_CC="$cc" NNMEM_TEST_CXX="$cxx" \
            sh -e -c "$script") || fail "$what: a build line failed, or its program did"
    }
    grep -E '^(export PKG_CONFIG_PATH=/opt/nnmem|cc [^ ]* ?examples/)' "$nnmem_src/README.md" \
        | run_lines "$b" "README.md"
    for f in "$b"/examples/*.c "$b"/examples/*.cpp; do
        # compat_tflm.cpp builds inside a TFLite Micro build only; it has no such line.
        grep -qE '^( \*|//)   (cc|c\+\+) ' "$f" || continue
        sed -nE 's@^( \*|//)   ((export PKG_CONFIG_PATH=|cc |c\+\+ ).*)@\2@p' "$f" \
            | run_lines "$b/examples" "examples/$(basename "$f")"
    done
    for f in pool.c region.c workbuffer.c compat_openvino.cpp compat_glow.cpp; do
        grep -qE '^( \*|//)   (cc|c\+\+) ' "$b/examples/$f" || fail "examples/$f has no build line"
    done
    ;;
soname)
    lib=$1 want=$2
    got=$(soname_of "$lib")
    [ "$got" = "$want" ] || fail "$lib has SONAME '$got', expected '$want'"
    echo "$lib: SONAME $got"
    ;;
*)
    fail "unknown mode $mode"
    ;;
esac
