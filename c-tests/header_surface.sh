#!/usr/bin/env bash
# The C surface is exactly what the header says, and all of it is prefixed
# (docs/c-abi.md, "Names": everything public is nnm_/NNM_):
#   - the functions declared in nnmem.h are exactly the symbols libnnmem.so
#     exports, both ways;
#   - every macro the header defines is NNM_* (or a guard: NNMEM_H, and
#     NNMEM_<TOPIC>_H of the topic headers it includes);
#   - every struct/enum tag, typedef and enum constant is nnm_* / NNM_*,
#     except `struct list_head` (the kernel's list node; see below).
# And the header keeps the language levels its preamble states:
#   - it compiles, with <nnmem/list.h> after it, as C99, C11, C17 and C23
#     (where CC knows them) with -Wall -Wextra -Werror -pedantic
#     -Wc++-compat, and as C++11, C++17 and C++20 with CXX;
#   - as C89 it stops at its own #error, naming the level it needs;
#   - its comments (and those of the topic headers) carry no Rust paths or rustdoc links (`crate::`,
#     [`Item`], Self), and negative macros are parenthesised.
# Usage: header_surface.sh HEADER SHARED_LIBRARY CC CXX
set -euo pipefail
header=$1 lib=$2 cc=$3 cxx=$4
status=0
fail() { echo "FAIL: $*" >&2; status=1; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# Functions: declared (comments and macros gone) vs exported.
"$cc" -E -P -x c "$header" | grep -oE '\b[A-Za-z_][A-Za-z0-9_]*[[:space:]]*\(' | tr -d '( \t' \
    | grep -E '^nnm_' | sort -u >"$tmp/declared"
nm -D --defined-only "$lib" | awk '$2 ~ /^[TtWi]$/ {print $3}' | sed 's/@.*//' | sort -u >"$tmp/exported"
if ! diff -u --label declared-in-header "$tmp/declared" --label exported-by-library "$tmp/exported"; then
    fail "declared functions and exported symbols differ (diff above)"
fi
grep -vE '^nnm_' "$tmp/exported" | sed 's/^/unprefixed exported symbol: /' | grep . >&2 && status=1

# Macros: those of the header minus those of its own includes.
printf '#include <stddef.h>\n#include <stdint.h>\n' | "$cc" -dM -E -x c - | awk '{print $2}' \
    | sed 's/(.*//' | sort -u >"$tmp/base"
"$cc" -dM -E -x c "$header" | awk '{print $2}' | sed 's/(.*//' | sort -u >"$tmp/all"
comm -13 "$tmp/base" "$tmp/all" | grep -vE '^(NNM_[A-Z0-9_]+|NNMEM_H|NNMEM_[A-Z_]+_H)$' \
    | sed 's/^/unprefixed macro: /' | grep . >&2 && status=1

# Types and enum constants, from the header with comments stripped.
"$cc" -fpreprocessed -dD -E -P -x c "$header" >"$tmp/code" 2>/dev/null
{
    grep -oE '\b(struct|enum)[[:space:]]+[A-Za-z_][A-Za-z0-9_]*' "$tmp/code" | awk '{print $2}'
    grep -oE '\}[[:space:]]*[A-Za-z_][A-Za-z0-9_]*[[:space:]]*;' "$tmp/code" | tr -d '}; \t'
    grep -oE '^typedef[^;(]*[[:space:]][A-Za-z_][A-Za-z0-9_]*;' "$tmp/code" | sed 's/.*[[:space:]]//; s/;//'
} | sort -u | grep -vE '^nnm_' \
    | grep -vx 'list_head' \
    | sed 's/^/unprefixed type name: /' | grep . >&2 && status=1
# The one exception above: `struct list_head`, the Linux kernel's list node
# that nnm_net's lists are made of, so that legacy C code walks them with its
# own (or nnmem/list.h's) list_for_each_entry. It is defined under the guard
# NNM_LIST_HEAD_DEFINED and has no typedef.
grep -oE '^[[:space:]]+[A-Za-z_][A-Za-z0-9_]*[[:space:]]*=' "$tmp/code" | tr -d ' \t=' \
    | grep -vE '^NNM_' | sed 's/^/unprefixed enum constant: /' | grep . >&2 && status=1

# Language levels. A mode the compiler does not know is reported, not failed:
# C23 is the only one that may be missing (older GCC and Clang call it c2x).
include_dir=$(dirname "$header")
printf '#include "nnmem.h"\n#include "nnmem/list.h"\n#include "nnmem.h"\nint main(void) { return nnm_version() == NULL; }\n' \
    >"$tmp/levels.c"
cp "$tmp/levels.c" "$tmp/levels.cpp"
levels=0
compiles() { # compiles COMPILER STD SOURCE EXTRA_FLAGS...
    local compiler=$1 std=$2 src=$3
    shift 3
    "$compiler" -std="$std" -Wall -Wextra -Werror -pedantic "$@" -I"$include_dir" -fsyntax-only "$src" \
        >"$tmp/out" 2>&1
}
for std in c99 c11 c17 c23; do
    if [ $std = c23 ] && ! echo 'int x;' | "$cc" -std=c23 -fsyntax-only -x c - 2>/dev/null; then
        std=c2x
        if ! echo 'int x;' | "$cc" -std=c2x -fsyntax-only -x c - 2>/dev/null; then
            echo "note: $cc knows neither -std=c23 nor -std=c2x; C23 not checked"
            continue
        fi
    fi
    if compiles "$cc" $std "$tmp/levels.c" -Wc++-compat; then
        levels=$((levels + 1))
    else
        cat "$tmp/out" >&2
        fail "nnmem.h does not compile cleanly as $std (-Wc++-compat)"
    fi
done
for std in c++11 c++17 c++20; do
    if compiles "$cxx" $std "$tmp/levels.cpp"; then
        levels=$((levels + 1))
    else
        cat "$tmp/out" >&2
        fail "nnmem.h does not compile cleanly as $std"
    fi
done
if compiles "$cc" c89 "$tmp/levels.c" -pedantic-errors; then
    fail "nnmem.h compiles as C89, but its preamble says it needs C99"
elif ! grep -q "error.*nnmem's headers need C99 or later" "$tmp/out"; then
    cat "$tmp/out" >&2
    fail "nnmem.h as C89 fails without its #error naming C99 (compiler output above)"
fi

# Comments are C documentation: no Rust paths or rustdoc link syntax.
# (A C++ name of another project, like TFLite Micro's, may use `::`.)
# nnmem.h and the topic headers it includes.
headers=("$header")
while read -r topic; do headers+=("$include_dir/$topic"); done \
    < <(sed -n 's/^#include "\(nnmem\/[a-z_]*\.h\)"$/\1/p' "$header")
grep -nE 'crate::|super::|self::|\bSelf\b|\[`|`\]|\]\(' "${headers[@]}" \
    | sed 's/^/Rust path or rustdoc link: /' | grep . >&2 && status=1
# Negative macros parenthesised: `#define NAME -1` expands wrongly next to
# another operator (`x NAME` or `sizeof NAME`).
grep -nE '^[[:space:]]*#[[:space:]]*define[[:space:]]+[A-Za-z_][A-Za-z0-9_]*[[:space:]]+[-~]' "${headers[@]}" \
    | sed 's/^/negative macro without parentheses: /' | grep . >&2 && status=1

if [ $status -eq 0 ]; then
    echo "language levels OK: $levels modes compile cleanly, C89 stops at the #error"
    echo "C surface OK: $(wc -l <"$tmp/declared") functions declared and exported, all names prefixed"
fi
exit $status
