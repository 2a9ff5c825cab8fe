/*
 * awnn's list idioms, unchanged, through `#include "utils/list.h"` resolved
 * by the include path alone to nnmem/compat/utils/list.h (c-tests/
 * CMakeLists.txt builds this file with nnmem::compat's include path, as C99,
 * C11, gnu11, C23, C11 with the portable iterators, C++11, C++17, gnu++17
 * and C++17 with the decltype-based typeof; warnings as errors).
 *
 * The idioms are those of awnn's net.h and layer code: bare `typeof` in
 * list_entry, init_list_head + list_add_tail, list_for_each_safe with
 * list_del and free, list_for_each_entry lookups by name, and
 * list_for_each_entry_pairwise over params and their velocities.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "utils/list.h"
#include "nnm_check.h" /* and nnmem.h after it: the same struct list_head */

#ifndef NNM_COMPAT_UTILS_LIST_H
#error "utils/list.h did not resolve to nnmem/compat/utils/list.h"
#endif

#define NAME_LEN 32

/* awnn's lcache_t and param_t, reduced: the node is not the first member. */
typedef struct {
    unsigned count;
    char name[NAME_LEN];
    struct list_head list;
} lcache_t;

typedef struct param {
    char name[NAME_LEN];
    double value;
    struct list_head list;
} param_t;

static void net_attach_cache(struct list_head *l_cache, const char *name) {
    lcache_t *p_cache = (lcache_t *)malloc(sizeof(lcache_t));
    if (p_cache == NULL) abort();
    strncpy(p_cache->name, name, NAME_LEN - 1);
    p_cache->name[NAME_LEN - 1] = '\0';
    p_cache->count = 0;
    init_list_head(&p_cache->list);
    list_add_tail(&p_cache->list, l_cache);
}

/* awnn's net_free_cache: the entry type spelled with a bare typeof. */
static int net_free_cache(struct list_head *l_cache) {
    struct list_head *p_node, *tmp;
    int freed = 0;
    list_for_each_safe(p_node, tmp, l_cache) {
        list_del(p_node);
        lcache_t *p_cache = list_entry(p_node, typeof(*p_cache), list);
        free(p_cache);
        ++freed;
    }
    return freed;
}

static lcache_t *net_get_cache(struct list_head const *l_cache, char const *name) {
    lcache_t *p_cache;
    list_for_each_entry(p_cache, l_cache, list) {
        if (strcmp(name, p_cache->name) == 0) return p_cache;
    }
    return NULL;
}

int main(void) {
    static const char *const names[] = {"fc1", "relu1", "drop1", "fc2"};
    struct list_head caches;
    struct list_head params, velocities;
    param_t p[3], v[3];
    struct list_head a, b, c, *pos;
    lcache_t *found;
    param_t *pp, *pv;
    int i, n;

    /* Caches attached, found, freed: awnn's net.h. */
    init_list_head(&caches);
    CHECK(list_empty(&caches));
    for (i = 0; i < 4; ++i) net_attach_cache(&caches, names[i]);
    found = net_get_cache(&caches, "drop1");
    CHECK(found != NULL && strcmp(found->name, "drop1") == 0);
    CHECK(net_get_cache(&caches, "fc3") == NULL);
    n = 0;
    list_for_each(pos, &caches) {
        lcache_t *entry = list_entry(pos, lcache_t, list);
        CHECK(strcmp(entry->name, names[n]) == 0);
        ++n;
    }
    CHECK(n == 4);
    CHECK(net_free_cache(&caches) == 4);
    CHECK(list_empty(&caches));

    /* Params and velocities walked pairwise, in step. */
    init_list_head(&params);
    init_list_head(&velocities);
    for (i = 0; i < 3; ++i) {
        snprintf(p[i].name, NAME_LEN, "W%d", i);
        snprintf(v[i].name, NAME_LEN, "W%d.velocity", i);
        p[i].value = 1.0 + i;
        v[i].value = 0.5;
        list_add_tail(&p[i].list, &params);
        list_add_tail(&v[i].list, &velocities);
    }
    n = 0;
    list_for_each_entry_pairwise(pp, &params, pv, &velocities, list) {
        CHECK(strncmp(pv->name, pp->name, strlen(pp->name)) == 0);
        pp->value -= pv->value;
        ++n;
    }
    CHECK(n == 3 && p[0].value == 0.5 && p[2].value == 2.5);

    /* container_of with a bare typeof type, as awnn's headers write it. */
    {
        param_t *last = container_of(params.prev, typeof(*last), list);
        CHECK(last == &p[2]);
    }

    /* awnn's list_del unlinks and leaves the node's own pointers as they
     * were, so a plain list_for_each can delete the node it stands on. */
    list_for_each(pos, &params) {
        if (list_entry(pos, param_t, list) == &p[1]) list_del(pos);
    }
    CHECK(params.next == &p[0].list && p[0].list.next == &p[2].list && p[2].list.prev == &p[0].list);
    CHECK(p[1].list.next == &p[2].list && p[1].list.prev == &p[0].list);

    /* The helpers awnn's list.h exposed: _list_add, _list_del. */
    init_list_head(&a);
    _list_add(&b, &a, &a);      /* a <-> b */
    _list_add(&c, &b, &a);      /* a <-> b <-> c */
    CHECK(a.next == &b && b.next == &c && c.next == &a && a.prev == &c);
    _list_del(&a, &c);          /* drops b */
    CHECK(a.next == &c && c.prev == &a && list_count(&a) == 1);
    list_add(&b, &a);           /* front */
    CHECK(a.next == &b && list_count(&a) == 2);

    return nnm_check_report();
}
