/*
 * nnmem/list.h alone: every operation and iterator, with the kernel's
 * semantics, in each language mode we promise (c-tests/CMakeLists.txt
 * builds this file as C99, C11, gnu11, C11 with the portable iterators
 * (NNM_LIST_NO_TYPEOF), C++11, C++17 and gnu++17, warnings as errors).
 * With NNM_LIST_TEST_APP_LIST_H it first defines an application's own
 * layout-compatible list.h, the way legacy code does, and checks that
 * nnmem/list.h and nnmem.h coexist with it.
 */
#include <stdio.h>

#ifdef NNM_LIST_TEST_APP_LIST_H
#include <stddef.h>

#include "app_list.h" /* an application's own list.h, included first... */
#define NNM_LIST_HEAD_DEFINED 1 /* ...and then, as nnmem.h and nnmem/list.h document */
#endif

#include <stddef.h>

#include "nnmem/list.h"
#include "nnmem/list.h" /* guarded */
#include "nnmem.h"      /* its struct list_head is the same one */

static int failures;
#define EXPECT(cond)                                                  \
    do {                                                              \
        if (!(cond)) {                                                \
            fprintf(stderr, "%s:%d: FAILED: %s\n", __FILE__, __LINE__, #cond); \
            ++failures;                                               \
        }                                                             \
    } while (0)

struct item {
    int value;
    struct list_head node;
    double pad; /* the node is not the first member */
};

/* The values of `head`'s items, front to back, into `out`; returns how many. */
static int values(const struct list_head *head, int *out) {
    int n = 0;
    const struct item *it;
    list_for_each_entry(it, head, node) out[n++] = it->value;
    return n;
}

static int same(const struct list_head *head, const int *want, int n) {
    int got[16];
    int i;
    if (values(head, got) != n || (int)list_count(head) != n) return 0;
    for (i = 0; i < n; ++i)
        if (got[i] != want[i]) return 0;
    return 1;
}

int main(void) {
    struct item items[6];
    int i;
    LIST_HEAD(a);
    struct list_head b = LIST_HEAD_INIT(b);
    struct list_head c;
    INIT_LIST_HEAD(&c);
    init_list_head(&c);

    for (i = 0; i < 6; ++i) {
        items[i].value = i;
        items[i].pad = 0.0;
    }
    EXPECT(list_empty(&a) && list_empty(&b) && list_empty(&c));
    EXPECT(list_count(&a) == 0 && !list_is_singular(&a));

    list_add_tail(&items[0].node, &a);
    EXPECT(list_is_singular(&a) && !list_empty(&a));
    list_add_tail(&items[1].node, &a);
    list_add(&items[2].node, &a); /* front */
    {
        const int want[] = {2, 0, 1};
        EXPECT(same(&a, want, 3));
    }
    EXPECT(list_first_entry(&a, struct item, node)->value == 2);
    EXPECT(list_last_entry(&a, struct item, node)->value == 1);
    EXPECT(list_entry(a.next->next, struct item, node) == &items[0]);
    EXPECT(container_of(&items[4].node, struct item, node) == &items[4]);

    /* reverse */
    {
        int got[3], n = 0;
        struct item *it;
        list_for_each_entry_reverse(it, &a, node) got[n++] = it->value;
        EXPECT(n == 3 && got[0] == 1 && got[1] == 0 && got[2] == 2);
    }
    /* node iteration */
    {
        struct list_head *pos, *tmp;
        int n = 0;
        list_for_each(pos, &a) ++n;
        EXPECT(n == 3);
        /* safe: remove every node while walking */
        list_for_each_safe(pos, tmp, &b) EXPECT(0); /* empty list: no iteration */
        list_add_tail(&items[3].node, &b);
        list_add_tail(&items[4].node, &b);
        n = 0;
        list_for_each_safe(pos, tmp, &b) {
            list_del(pos);
            EXPECT(pos->next == NULL && pos->prev == NULL);
            ++n;
        }
        EXPECT(n == 2 && list_empty(&b));
    }
    /* entry_safe: remove odd values while walking */
    {
        struct item *it, *next;
        list_add_tail(&items[3].node, &a);
        list_add_tail(&items[4].node, &a);
        list_for_each_entry_safe(it, next, &a, node) {
            if (it->value % 2) list_del_init(&it->node);
        }
        {
            const int want[] = {2, 0, 4};
            EXPECT(same(&a, want, 3));
        }
        EXPECT(list_empty(&items[1].node) && list_empty(&items[3].node)); /* del_init */
    }
    /* move, move_tail */
    list_move(&items[4].node, &a); /* to the front of a */
    {
        const int want[] = {4, 2, 0};
        EXPECT(same(&a, want, 3));
    }
    list_move_tail(&items[2].node, &c);
    list_add_tail(&items[5].node, &c);
    {
        const int want_a[] = {4, 0};
        const int want_c[] = {2, 5};
        EXPECT(same(&a, want_a, 2));
        EXPECT(same(&c, want_c, 2));
    }
    /* splice_init: c's nodes join the front of a; c is empty again */
    list_splice_init(&c, &a);
    {
        const int want[] = {2, 5, 4, 0};
        EXPECT(same(&a, want, 4));
        EXPECT(list_empty(&c));
    }
    /* splice of an empty list changes nothing; splice keeps the source's stale head */
    list_splice(&c, &a);
    list_add_tail(&items[1].node, &b);
    list_splice(&b, &a);
    INIT_LIST_HEAD(&b);
    {
        const int want[] = {1, 2, 5, 4, 0};
        EXPECT(same(&a, want, 5));
    }

    /* nnmem.h's entry types walk the same way (no net needed to compile this). */
    {
        struct list_head anchor;
        nnm_param *p;
        int n = 0;
        INIT_LIST_HEAD(&anchor);
        list_for_each_entry(p, &anchor, node) ++n;
        EXPECT(n == 0);
    }

    if (failures == 0) printf("list.h: all checks passed\n");
    return failures == 0 ? 0 : 1;
}
