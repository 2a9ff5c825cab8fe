/*
 * nnmem/compat/utils/list.h: a drop-in for the `utils/list.h` of awnn-style
 * legacy C nets, on top of <nnmem/list.h>. Legacy sources keep their
 * unchanged `#include "utils/list.h"` and get this file through the include
 * path alone:
 *
 *     cc -I<prefix>/include -I<prefix>/include/nnmem/compat ...
 *     (CMake: link nnmem::compat; pkg-config: --variable=compatincludedir)
 *
 * It supplies everything awnn's utils/list.h supplied:
 *
 * - `typeof`, which awnn's headers use bare (`list_entry(p, typeof(*c),
 *   list)`): defined as `__typeof__` where the language mode has no
 *   `typeof` keyword (strict -std=c99/c11/c17 and -std=c++NN with GCC,
 *   Clang and compatible compilers); left alone where it is a keyword (C23,
 *   GNU C and GNU C++ modes) or already a macro. Other C++ compilers get a
 *   decltype-based `typeof(expr)` (expressions only, not type names; also
 *   chosen by defining NNM_COMPAT_TYPEOF_DECLTYPE). Other pre-C23 C
 *   compilers get no `typeof`.
 * - `struct list_head` (layout-compatible: next, then prev), `offsetof`
 *   (from <stddef.h>), `container_of`, `list_entry`.
 * - `init_list_head`, `list_add`, `list_add_tail`, `list_del`,
 *   `list_empty`, and awnn's internal helpers `_list_add(node, prev, next)`
 *   and `_list_del(prev, next)`.
 * - `list_for_each`, `list_for_each_safe`, `list_for_each_entry`, and
 *   awnn's `list_for_each_entry_pairwise(pos1, head1, pos2, head2, member)`
 *   (two lists walked in step, as long as the first).
 *
 * plus the rest of <nnmem/list.h> (LIST_HEAD_INIT, list_move, list_splice,
 * list_for_each_entry_safe, ...). `list_del` keeps awnn's semantics: it
 * unlinks the node and leaves the node's own pointers as they were (nnmem's
 * kernel-style list_del sets them to NULL), so legacy loops that step past a
 * node they just deleted keep working. The net's own lists are read-only for
 * C either way.
 */
#ifndef NNM_COMPAT_UTILS_LIST_H
#define NNM_COMPAT_UTILS_LIST_H

#include <stddef.h>

#ifdef NNM_LIST_NO_KERNEL_NAMES
#error "nnmem/compat/utils/list.h supplies the kernel names; do not define NNM_LIST_NO_KERNEL_NAMES with it"
#endif

/* ---- typeof ---- */
#ifndef typeof
#if defined(__cplusplus)
#if defined(NNM_COMPAT_TYPEOF_DECLTYPE) || !(defined(__GNUC__) || defined(__clang__))
#include <type_traits>
/* The type of an expression, references removed: what GNU typeof gives. */
#define typeof(...) std::remove_reference<decltype(__VA_ARGS__)>::type
#elif defined(__STRICT_ANSI__)
#define typeof __typeof__
#endif /* GNU C++ modes: typeof is a keyword */
#elif !defined(__STDC_VERSION__) || __STDC_VERSION__ < 202311L
#if (defined(__GNUC__) || defined(__clang__) || defined(__TINYC__) || defined(__INTEL_COMPILER)) && \
    defined(__STRICT_ANSI__)
#define typeof __typeof__
#endif /* GNU C modes: typeof is a keyword */
#endif /* C23: typeof is a keyword */
#endif

/* ---- the lists ---- */

/* Relative to this file, so the compat directory alone finds nnmem's list.h. */
#include "../../list.h"

/* awnn's list_del unlinks only; nnmem's (the kernel's) also clears the node. */
static inline void nnm_compat_list_del_(struct list_head *entry) {
    nnm_list_unlink_(entry->prev, entry->next);
}
#undef list_del
#define list_del(entry) nnm_compat_list_del_(entry)

#ifndef _list_add
/* awnn's helper: links `node` between the consecutive `prev` and `next`. */
#define _list_add(node, prev, next) nnm_list_link_(node, prev, next)
#endif
#ifndef _list_del
/* awnn's helper: unlinks whatever lies between `prev` and `next`. */
#define _list_del(prev, next) nnm_list_unlink_(prev, next)
#endif

#ifndef list_for_each_entry_pairwise
/* Walks two lists in step: `pos1` over `head1`'s entries and `pos2` over
 * `head2`'s, both linked by `member`; stops at the end of the first (the
 * second must be at least as long). */
#define list_for_each_entry_pairwise(pos1, head1, pos2, head2, member)                      \
    for (NNM_LIST_PRIME_(pos1, head1), NNM_LIST_PRIME_(pos2, head2),                        \
         (pos1) = NNM_LIST_ENTRY_AT_(pos1, (head1)->next, member),                          \
         (pos2) = NNM_LIST_ENTRY_AT_(pos2, (head2)->next, member);                          \
         &(pos1)->member != (head1);                                                        \
         (pos1) = NNM_LIST_ENTRY_AT_(pos1, (pos1)->member.next, member),                    \
         (pos2) = NNM_LIST_ENTRY_AT_(pos2, (pos2)->member.next, member))
#endif

#endif /* NNM_COMPAT_UTILS_LIST_H */
