#!/usr/bin/env bash
# The C surface is exactly what the header says, and all of it is prefixed
# (docs/c-abi.md: everything public is nnm_/NNM_):
#   - the functions declared in nnmem.h are exactly the symbols libnnmem.so
#     exports, both ways;
#   - every macro the header defines is NNM_* (or the guard NNMEM_H);
#   - every struct/enum tag, typedef and enum constant is nnm_* / NNM_*,
#     except `struct list_head` (the kernel's list node; see below).
# Usage: header_surface.sh HEADER SHARED_LIBRARY CC
set -euo pipefail
header=$1 lib=$2 cc=$3
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
comm -13 "$tmp/base" "$tmp/all" | grep -vE '^(NNM_[A-Z0-9_]+|NNMEM_H)$' \
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

if [ $status -eq 0 ]; then
    echo "C surface OK: $(wc -l <"$tmp/declared") functions declared and exported, all names prefixed"
fi
exit $status
