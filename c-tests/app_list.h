/*
 * An application's own list.h, the way legacy C nets (awnn) carry one: its
 * own layout-compatible struct list_head, some operations as inline
 * functions and some as macros. list_test.c includes it before nnmem/list.h
 * and nnmem.h (built as list_app_c11 and list_app_cxx17) to check that they
 * coexist with it.
 */
#ifndef APP_LIST_H
#define APP_LIST_H

#include <stddef.h>

struct list_head {
    struct list_head *next;
    struct list_head *prev;
};

#define container_of(ptr, type, member) ((type *)(void *)((char *)(ptr) - offsetof(type, member)))
#define list_entry(ptr, type, member) container_of(ptr, type, member)
#define list_for_each(pos, head) for (pos = (head)->next; pos != (head); pos = pos->next)

static inline void init_list_head(struct list_head *list) {
    list->next = list;
    list->prev = list;
}

static inline void list_add_tail(struct list_head *node, struct list_head *head) {
    node->prev = head->prev;
    node->next = head;
    head->prev->next = node;
    head->prev = node;
}

static inline int list_empty(const struct list_head *head) { return head->next == head; }

#endif /* APP_LIST_H */
