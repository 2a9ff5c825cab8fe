/*
 * nnmem/list.h: the Linux kernel's intrusive, circular, doubly linked list
 * (include/linux/list.h) for C99/C11/C23 and C++, as inline functions and
 * macros with the kernel's names and argument order (node first, then head).
 * Written for nnmem; header-only, needs nothing from the library. The lists
 * of an nnm_net (nnmem.h) are walked with it:
 *
 *     #include <nnmem.h>
 *     #include <nnmem/list.h>
 *     nnm_param *p;
 *     list_for_each_entry(p, &net->params, node) printf("%s\n", p->name);
 *
 * Coexisting with an application's own list.h
 * -------------------------------------------
 * `struct list_head` is defined only when NNM_LIST_HEAD_DEFINED is not
 * defined, and defining it defines NNM_LIST_HEAD_DEFINED (nnmem.h does the
 * same). An application that has its own layout-compatible list.h
 * (`struct list_head { struct list_head *next, *prev; }`) includes it first
 * and then `#define NNM_LIST_HEAD_DEFINED` before nnmem.h / this header.
 * Every kernel name below is a macro defined only when no macro of that name
 * exists yet: the application's own macros win, and its own inline functions
 * (list_add, ...) are shadowed by these, which have the kernel's semantics.
 * The operations themselves are `nnm_list_*` inline functions, so they never
 * clash with an application's functions of the kernel's names, as long as
 * its list.h comes first. Define NNM_LIST_NO_KERNEL_NAMES to get only the
 * `nnm_list_*` functions and no kernel-named macro at all.
 *
 * Entry macros (list_for_each_entry, ...) deduce the entry type from the
 * cursor: with decltype in C++, typeof in C23, __typeof__ with GCC, Clang
 * and compatible compilers (also in strict -std=c99/c11 modes). Other C
 * compilers (or NNM_LIST_NO_TYPEOF) use a portable form that computes the
 * member offset from the cursor itself; it needs entries whose alignment is
 * at most that of a pointer.
 *
 * Differences from the kernel: list_del() sets the removed node's pointers
 * to NULL (the kernel uses poison values); there is no RCU, no hlist; and
 * list_count() is added (the number of nodes, O(n)).
 */
#ifndef NNM_LIST_H
#define NNM_LIST_H

#include <stddef.h>

#ifndef NNM_LIST_HEAD_DEFINED
#define NNM_LIST_HEAD_DEFINED 1
/** A node of a circular doubly linked list, and the head (anchor) of one. */
struct list_head {
    struct list_head *next, *prev;
};
#endif

/* ---- operations (nnm_list_*; the kernel names are macros further down) ---- */

/** Makes `list` an empty list (both pointers to itself). */
static inline void nnm_list_init(struct list_head *list) {
    list->next = list;
    list->prev = list;
}

/* Links `node` between two consecutive nodes. */
static inline void nnm_list_link_(struct list_head *node, struct list_head *prev,
                                  struct list_head *next) {
    next->prev = node;
    node->next = next;
    node->prev = prev;
    prev->next = node;
}

/** Inserts `node` right after `head` (at the front: stacks). */
static inline void nnm_list_add(struct list_head *node, struct list_head *head) {
    nnm_list_link_(node, head, head->next);
}

/** Inserts `node` right before `head` (at the back: queues). */
static inline void nnm_list_add_tail(struct list_head *node, struct list_head *head) {
    nnm_list_link_(node, head->prev, head);
}

/* Unlinks whatever lies between `prev` and `next`. */
static inline void nnm_list_unlink_(struct list_head *prev, struct list_head *next) {
    next->prev = prev;
    prev->next = next;
}

/** Removes `entry` from its list; its pointers become NULL (it is in no list). */
static inline void nnm_list_del(struct list_head *entry) {
    nnm_list_unlink_(entry->prev, entry->next);
    entry->next = NULL;
    entry->prev = NULL;
}

/** Removes `entry` from its list and makes it an empty list of its own. */
static inline void nnm_list_del_init(struct list_head *entry) {
    nnm_list_unlink_(entry->prev, entry->next);
    nnm_list_init(entry);
}

/** Nonzero when the list has no node besides its head. */
static inline int nnm_list_empty(const struct list_head *head) {
    return head->next == head;
}

/** Nonzero when the list has exactly one node. */
static inline int nnm_list_is_singular(const struct list_head *head) {
    return head->next != head && head->next == head->prev;
}

/** Moves `node` from its list to the front of `head`'s. */
static inline void nnm_list_move(struct list_head *node, struct list_head *head) {
    nnm_list_unlink_(node->prev, node->next);
    nnm_list_add(node, head);
}

/** Moves `node` from its list to the back of `head`'s. */
static inline void nnm_list_move_tail(struct list_head *node, struct list_head *head) {
    nnm_list_unlink_(node->prev, node->next);
    nnm_list_add_tail(node, head);
}

/* Puts the nodes of the non-empty `list` between `prev` and `next`. */
static inline void nnm_list_splice_between_(const struct list_head *list, struct list_head *prev,
                                            struct list_head *next) {
    struct list_head *first = list->next;
    struct list_head *last = list->prev;
    first->prev = prev;
    prev->next = first;
    last->next = next;
    next->prev = last;
}

/**
 * Joins the nodes of `list` at the front of `head`'s list. `list`'s own head
 * is left pointing at nodes it no longer owns: reinitialise it before use
 * (or use list_splice_init).
 */
static inline void nnm_list_splice(const struct list_head *list, struct list_head *head) {
    if (!nnm_list_empty(list)) nnm_list_splice_between_(list, head, head->next);
}

/** As nnm_list_splice, then makes `list` empty. */
static inline void nnm_list_splice_init(struct list_head *list, struct list_head *head) {
    if (!nnm_list_empty(list)) {
        nnm_list_splice_between_(list, head, head->next);
        nnm_list_init(list);
    }
}

/** The number of nodes in the list (its head not counted). O(n). */
static inline size_t nnm_list_count(const struct list_head *head) {
    size_t n = 0;
    const struct list_head *pos;
    for (pos = head->next; pos != head; pos = pos->next) ++n;
    return n;
}

/* ---- entry type deduction for the *_entry iterators ---- */

#if defined(__cplusplus)
/* The type a pointer points to: decltype(&*(pos)) is `T *` for a cursor `T *pos`. */
template <typename T>
struct nnm_list_pointee_ {};
template <typename T>
struct nnm_list_pointee_<T *> {
    typedef T type;
};
#define NNM_LIST_ENTRY_AT_(pos, ptr, member)                                                    \
    ((decltype(&*(pos)))(void *)((char *)(ptr) -                                                \
                                 offsetof(nnm_list_pointee_<decltype(&*(pos))>::type, member)))
#define NNM_LIST_PRIME_(pos, head) ((void)0)
#elif !defined(NNM_LIST_NO_TYPEOF) && defined(__STDC_VERSION__) && __STDC_VERSION__ >= 202311L
#define NNM_LIST_ENTRY_AT_(pos, ptr, member) \
    ((typeof(*(pos)) *)(void *)((char *)(ptr) - offsetof(typeof(*(pos)), member)))
#define NNM_LIST_PRIME_(pos, head) ((void)0)
#elif !defined(NNM_LIST_NO_TYPEOF) && \
    (defined(__GNUC__) || defined(__clang__) || defined(__TINYC__) || defined(__INTEL_COMPILER))
#define NNM_LIST_ENTRY_AT_(pos, ptr, member) \
    ((__typeof__(*(pos)) *)(void *)((char *)(ptr) - offsetof(__typeof__(*(pos)), member)))
#define NNM_LIST_PRIME_(pos, head) ((void)0)
#else
/* Portable C: the member's offset is measured on the cursor itself, which is
 * first given a value (the head) so that nothing indeterminate is read. */
#define NNM_LIST_ENTRY_AT_(pos, ptr, member) \
    ((void *)((char *)(ptr) - ((char *)&(pos)->member - (char *)(pos))))
#define NNM_LIST_PRIME_(pos, head) ((pos) = (void *)(head))
#endif

/* ---- the kernel's names ---- */

#ifndef NNM_LIST_NO_KERNEL_NAMES

#ifndef LIST_HEAD_INIT
/** Static initialiser of an empty list: `struct list_head l = LIST_HEAD_INIT(l);` */
#define LIST_HEAD_INIT(name) {&(name), &(name)}
#endif
#ifndef LIST_HEAD
/** Defines an empty list named `name`. */
#define LIST_HEAD(name) struct list_head name = LIST_HEAD_INIT(name)
#endif
#ifndef INIT_LIST_HEAD
#define INIT_LIST_HEAD(list) nnm_list_init(list)
#endif
#ifndef init_list_head
/** awnn's spelling of INIT_LIST_HEAD. */
#define init_list_head(list) nnm_list_init(list)
#endif
#ifndef list_add
#define list_add(node, head) nnm_list_add(node, head)
#endif
#ifndef list_add_tail
#define list_add_tail(node, head) nnm_list_add_tail(node, head)
#endif
#ifndef list_del
#define list_del(entry) nnm_list_del(entry)
#endif
#ifndef list_del_init
#define list_del_init(entry) nnm_list_del_init(entry)
#endif
#ifndef list_empty
#define list_empty(head) nnm_list_empty(head)
#endif
#ifndef list_is_singular
#define list_is_singular(head) nnm_list_is_singular(head)
#endif
#ifndef list_move
#define list_move(node, head) nnm_list_move(node, head)
#endif
#ifndef list_move_tail
#define list_move_tail(node, head) nnm_list_move_tail(node, head)
#endif
#ifndef list_splice
#define list_splice(list, head) nnm_list_splice(list, head)
#endif
#ifndef list_splice_init
#define list_splice_init(list, head) nnm_list_splice_init(list, head)
#endif
#ifndef list_count
#define list_count(head) nnm_list_count(head)
#endif

#ifndef container_of
/** The struct of type `type` whose member `member` is at `ptr`. */
#define container_of(ptr, type, member) \
    ((type *)(void *)((char *)(ptr) - offsetof(type, member)))
#endif
#ifndef list_entry
/** The entry (of type `type`) embedding the node `ptr` as `member`. */
#define list_entry(ptr, type, member) container_of(ptr, type, member)
#endif
#ifndef list_first_entry
/** The first entry of a list that must not be empty. */
#define list_first_entry(ptr, type, member) list_entry((ptr)->next, type, member)
#endif
#ifndef list_last_entry
/** The last entry of a list that must not be empty. */
#define list_last_entry(ptr, type, member) list_entry((ptr)->prev, type, member)
#endif

#ifndef list_for_each
/** Iterates the nodes: `pos` is a `struct list_head *`. Do not remove `pos`. */
#define list_for_each(pos, head) for ((pos) = (head)->next; (pos) != (head); (pos) = (pos)->next)
#endif
#ifndef list_for_each_safe
/** Iterates the nodes; `pos` may be removed (`n` holds the next). */
#define list_for_each_safe(pos, n, head)                                 \
    for ((pos) = (head)->next, (n) = (pos)->next; (pos) != (head); \
         (pos) = (n), (n) = (pos)->next)
#endif
#ifndef list_for_each_entry
/** Iterates the entries: `pos` is a pointer to the entry type, `member` its node. */
#define list_for_each_entry(pos, head, member)                                  \
    for (NNM_LIST_PRIME_(pos, head), (pos) = NNM_LIST_ENTRY_AT_(pos, (head)->next, member); \
         &(pos)->member != (head);                                              \
         (pos) = NNM_LIST_ENTRY_AT_(pos, (pos)->member.next, member))
#endif
#ifndef list_for_each_entry_reverse
/** Iterates the entries from last to first. */
#define list_for_each_entry_reverse(pos, head, member)                          \
    for (NNM_LIST_PRIME_(pos, head), (pos) = NNM_LIST_ENTRY_AT_(pos, (head)->prev, member); \
         &(pos)->member != (head);                                              \
         (pos) = NNM_LIST_ENTRY_AT_(pos, (pos)->member.prev, member))
#endif
#ifndef list_for_each_entry_safe
/** Iterates the entries; `pos` may be removed (`n`, of the same type, holds the next). */
#define list_for_each_entry_safe(pos, n, head, member)                          \
    for (NNM_LIST_PRIME_(pos, head), (pos) = NNM_LIST_ENTRY_AT_(pos, (head)->next, member), \
         (n) = NNM_LIST_ENTRY_AT_(pos, (pos)->member.next, member);             \
         &(pos)->member != (head);                                              \
         (pos) = (n), (n) = NNM_LIST_ENTRY_AT_(n, (n)->member.next, member))
#endif

#endif /* NNM_LIST_NO_KERNEL_NAMES */

#endif /* NNM_LIST_H */
