//! The topic headers under include/nnmem/: which Rust modules feed each one,
//! and the ownership and thread-safety rules each opens with.
//!
//! An item (function, type, macro) goes to the topic of the module that
//! defines it: the first path component under `src/ffi/`, or under `src/`
//! for the core types cbindgen exports (`Status` in src/status.rs goes to
//! "status", hence to common.h). A new export lands in its module's topic
//! by regeneration alone; a module listed nowhere fails the header test.

/// One topic header.
pub struct Topic {
    /// File name under include/nnmem/.
    pub file: &'static str,
    /// What it declares, for its first line and the umbrella's list.
    pub title: &'static str,
    /// The modules (directly under src/ffi/ or src/) whose items it holds.
    pub modules: &'static [&'static str],
    /// Its opening comment after the title: ownership and thread safety.
    pub rules: &'static str,
    /// What the embedded build (`no_std`, no heap) holds of it.
    pub embedded: &'static str,
    /// Hand-written C placed after the includes (cbindgen cannot write it).
    pub code: &'static str,
}

/// In the umbrella's include order; each header includes what it uses.
pub const TOPICS: &[Topic] = &[
    Topic {
        file: "common.h",
        title: "status codes, errors, version, cancellation and text callbacks",
        modules: &["status", "error", "cancel", "text", "handle", "args", "report_format"],
        rules: "\
Ownership:
- Fallible functions return nnm_status; NNM_OK is 0. Out-parameters are
  written only on success.
- nnm_last_error() is the text of the last failure on the calling thread,
  valid until the next failing nnmem call on that thread; copy it to keep
  it. nnm_status_str() and nnm_version() return static strings, never
  freed.
- nnm_cancel_token comes from nnm_cancel_token_new and goes back through
  nnm_cancel_token_free, which accepts NULL and detects double frees.
  Every call looks the token up in nnmem's registry of live handles first,
  so a call on a freed one returns NNM_INVALID_ARGUMENT.
- The text an nnm_write_fn receives is valid only during the call.

Thread safety:
- nnm_last_error(): per thread. nnm_status_str() and nnm_version() are
  safe from any thread.
- nnm_cancel_token: thread-safe. nnm_cancel_token_cancel() may be called
  from any thread while another thread runs nnm_planner_plan() with the
  token (the search stops within about a millisecond with its best plan)
  or waits in nnm_exec_pool_acquire() with it (the wait ends).",
        embedded: "\
Embedded build (no_std, no heap; README.md, \"The embedded build\"):
  holds nnm_status, nnm_status_str(), nnm_version() and nnm_last_error()
  (one static buffer of NNM_BARE_ERROR_BYTES bytes shared by every caller,
  not one per thread; with the strip-messages feature, the failing status's
  name); leaves out the cancel token and text callbacks.",
        code: "",
    },
    Topic {
        file: "planner.h",
        title: "the offline memory planner (nnm_planner) and plan validation",
        modules: &["plan"],
        rules: "\
Ownership:
- nnm_planner comes from nnm_planner_new and goes back through
  nnm_planner_free, which accepts NULL and detects double frees. Every call
  looks the planner up in nnmem's registry of live handles first, so a call
  on a freed one returns NNM_INVALID_ARGUMENT.
- Offsets and results are copied into the caller's memory. A cancel token
  set on a planner may be freed first: freeing it detaches it from every
  planner it was set on.

Thread safety:
- nnm_planner: not thread-safe. Calls on one planner must not overlap;
  different planners may be used from different threads at once. Functions
  taking `const nnm_planner *` may run concurrently with each other.
- nnm_algorithm_name(), nnm_algorithm_from_name() and nnm_plan_validate()
  are safe from any thread.",
        embedded: "\
Embedded build: leaves out everything here but nnm_algorithm; its
  planner is <nnmem/scratch_planner.h>.",
        code: "\
/**
 * `first_use` and `last_use` of a buffer that is never used (TFLite
 * Micro's convention).
 */
#define NNM_UNUSED_STEP (-1)
",
    },
    Topic {
        file: "scratch_planner.h",
        title: "the planner in the caller's scratch memory (nnm_scratch_planner): no heap",
        modules: &["scratch_plan"],
        rules: "\
Ownership:
- nnm_scratch_planner lives inside the scratch memory the caller hands
  nnm_scratch_planner_init: NNM_SCRATCH_PLANNER_HEADER_BYTES, plus
  NNM_SCRATCH_PLANNER_BYTES_PER_BUFFER per buffer, plus up to 3 bytes to
  align the start (NNM_SCRATCH_PLANNER_BYTES(n) in all). nnmem allocates
  nothing and keeps nothing elsewhere, so there is nothing to free: the
  planner ends when the caller reuses its scratch.
- Offsets and results are copied into the caller's memory.

Thread safety:
- nnm_scratch_planner: not thread-safe, like TFLite Micro's planners.
  Calls on one planner must not overlap; planners in different scratch
  buffers may be used from different threads at once.",
        embedded: "\
Embedded build: holds all of it.",
        code: "\
/**
 * Bytes of scratch nnm_scratch_planner_init needs for `n` buffers, at any
 * address (3 bytes for aligning the start to 4 included).
 */
#define NNM_SCRATCH_PLANNER_BYTES(n) \\
    (NNM_SCRATCH_PLANNER_HEADER_BYTES + 3u + (size_t)(n) * NNM_SCRATCH_PLANNER_BYTES_PER_BUFFER)

/**
 * Whether the scratch planner runs `algorithm` (an nnm_algorithm value):
 * TFLM, LINEAR and SIZE_FIRST_FIT; the others need nnm_planner's heap.
 */
#define NNM_SCRATCH_PLANNER_RUNS(algorithm) \\
    ((nnm_algorithm)(algorithm) == NNM_ALGORITHM_TFLM || (nnm_algorithm)(algorithm) == NNM_ALGORITHM_LINEAR || \\
     (nnm_algorithm)(algorithm) == NNM_ALGORITHM_SIZE_FIRST_FIT)
",
    },
    Topic {
        file: "arena.h",
        title: "tensor arenas (nnm_arena)",
        modules: &["arena"],
        rules: "\
Ownership:
- nnm_arena comes from nnm_arena_new* or nnm_arena_init and goes back
  through nnm_arena_free, which accepts NULL and detects double frees. An
  arena over the caller's buffer (nnm_arena_new, nnm_arena_new_split,
  nnm_arena_init) needs that buffer until nnm_arena_free;
  nnm_arena_new_owned* allocate their own and free it with the arena;
  nnm_arena_new_dry_run has no memory.
- nnm_arena_init keeps the arena's records (and, in the embedded build, the
  arena itself) in a state the caller gives: NNM_ARENA_STATE_BYTES(t, p)
  bytes hold t temp allocations at once and p persistent ones. nnmem
  allocates nothing for its records; the state is the caller's again after
  nnm_arena_free.
- Stale handles: calls look the arena up in nnmem's registry of live
  handles first (a freed one gives NNM_INVALID_ARGUMENT), except the hot
  calls nnm_arena_alloc_persistent, nnm_arena_alloc_temp and
  nnm_arena_release_temp, which only check a type tag and are undefined on
  a freed arena. In the embedded build every call checks the tag in the
  arena's state (a freed arena gives NNM_INVALID_ARGUMENT while its state
  is unchanged).

Thread safety:
- nnm_arena: not thread-safe, like nnm_planner: calls on one arena must
  not overlap; functions taking `const nnm_arena *` (sizes, report, check,
  categories) may run concurrently with each other. Different arenas may
  be used from different threads at once.",
        embedded: "\
Embedded build: holds nnm_arena_init and every call on an arena (head,
  temp and tail, the size needed; guard mode and recording under the
  predefined categories with the cargo features arena-guard and
  arena-recording, without which asking for them is INVALID_ARGUMENT and
  every category reads 0); leaves out nnm_arena_new* (records on the heap,
  split buffers, owned memory, dry runs), named categories, committing an
  nnm_planner's plan (reserve the head for the scratch planner's size) and
  the reports.",
        code: "\
/** Bytes of one temp record in an nnm_arena_init state. */
#define NNM_ARENA_TEMP_RECORD_BYTES (4u * sizeof(size_t) + 8u)

/** Bytes of one persistent record in an nnm_arena_init state. */
#define NNM_ARENA_PERSISTENT_RECORD_BYTES (3u * sizeof(size_t) + 8u)

/** Bytes at the head of an nnm_arena_init state: the arena itself. */
#define NNM_ARENA_STATE_HEADER_BYTES (50u * sizeof(size_t) + 256u)

/**
 * Bytes of state nnm_arena_init needs, at any address (7 bytes for
 * aligning the start to 8 included), for `max_temps` temp allocations held
 * at once (room for as many released ones that guard mode watches
 * included) and `max_persistent` persistent allocations.
 */
#define NNM_ARENA_STATE_BYTES(max_temps, max_persistent)                                         \\
    (NNM_ARENA_STATE_HEADER_BYTES + 7u + 2u * (size_t)(max_temps) * NNM_ARENA_TEMP_RECORD_BYTES + \\
     (size_t)(max_persistent) * NNM_ARENA_PERSISTENT_RECORD_BYTES)
",
    },
    Topic {
        file: "net.h",
        title: "nets of tensors, parameters and layer caches on kernel-style lists (nnm_net)",
        modules: &["net"],
        rules: "\
Ownership:
- nnm_net comes from nnm_net_new and goes back through nnm_net_free, which
  accepts NULL, detects double frees, and frees every entry and every
  buffer nnmem allocated or adopted (never a view, a placeholder or
  borrowed memory).
  The attach calls, nnm_net_detach and nnm_net_get_report look the net up
  in nnmem's registry of live handles first (a freed one gives
  NNM_INVALID_ARGUMENT); nnm_net_from_list and nnm_net_attach_tensors find
  the net of a list head there without reading the pointer. nnm_net_*_get
  and nnm_cache_* only check a type tag and are undefined on a freed net.
- Its lists and entries (nnm_tensor, nnm_param, nnm_layer_data,
  nnm_cache) are public structs so that C code walks them with the macros
  of <nnmem/list.h>; they belong to the net (the nnm_ownership of an entry
  says whether its data is nnmem's, borrowed or adopted).
- An nnm_stack_cache lives in the caller's storage (NNM_STACK_CACHE_INIT).

Thread safety:
- nnm_net: not thread-safe. One net, its entries and its caches are used
  by one thread at a time (calls, and C code walking or reading the lists,
  must not overlap); different nets may be used from different threads.
  nnm_net_*_get and nnm_net_get_report may run concurrently with each
  other; nnm_net_from_list reads no net and is safe from any thread at any
  time. An nnm_stack_cache, attached to a net or not, is used by one
  thread at a time (an attached one with its net).",
        embedded: "\
Embedded build: leaves this header out (it needs the heap).",
        code: "\
/*
 * The kernel-style list node of nnm_net's lists (walk them with the macros of
 * <nnmem/list.h>). An application with its own layout-compatible
 * `struct list_head` includes its list.h first and defines
 * NNM_LIST_HEAD_DEFINED before including this header.
 */
#ifndef NNM_LIST_HEAD_DEFINED
#define NNM_LIST_HEAD_DEFINED 1
struct list_head {
  struct list_head *next, *prev;
};
#endif

/*
 * Initialiser of an empty nnm_stack_cache (a layer cache in the caller's
 * storage), like LIST_HEAD_INIT:
 *     nnm_stack_cache cache = NNM_STACK_CACHE_INIT;
 * Zero-filled storage (`static nnm_stack_cache c;`, `= {0}`) is an empty
 * cache as well.
 */
#define NNM_STACK_CACHE_INIT \\
  {0, NNM_STACK_CACHE_TAG, NULL, 0, NULL, {{NULL, 0, {0, 0, 0, 0, 0, 0, 0, 0}, 0, 0, 0, 0, 0}}}
",
    },
    Topic {
        file: "pool.h",
        title: "device allocators, memory pools, pool strategies and the device registry",
        modules: &["device", "pool"],
        rules: "\
Ownership:
- nnm_pool comes from nnm_pool_new* (or nnm_device_get_pool) and
  goes back through nnm_pool_free; the pool itself goes when its last
  handle is freed and no registry holds it. nnm_device_allocator comes
  from nnm_device_allocator_* and goes back through
  nnm_device_allocator_free. Both frees accept NULL and detect double
  frees. nnm_pool_alloc and nnm_pool_dealloc only check a type tag and are
  undefined on a freed pool.
- Pools, arenas and nets given an nnm_device_allocator keep it alive, so
  the allocator's handle may be freed before them.
- A registered strategy's `ctx` and callbacks must stay valid until the
  name is unregistered; nnm_device_ctx is valid only during a callback.

Thread safety:
- nnm_pool: thread-safe. Every nnm_pool_* call on one pool may come from
  any thread, concurrently with any other (each pool locks inside), except
  nnm_pool_free of a handle, which no other call on that handle may
  overlap. The registry (nnm_device_*) and nnm_pool_register_strategy /
  nnm_pool_unregister_strategy are safe from any thread at any time.
- nnm_strategy_vtable callbacks: called one at a time per pool (under its
  lock), from any thread.
- nnm_device_allocator: thread-safe. A handle may be used from any thread
  and given to any number of pools, arenas and nets (but not freed while
  another call on the handle runs). The functions of an
  nnm_device_allocator_vtable are called from any thread, concurrently:
  the caller makes them safe.",
        embedded: "\
Embedded build: leaves this header out (it needs the heap).",
        code: "",
    },
    Topic {
        file: "region.h",
        title: "memory regions: configurations, tensor models, rules and region tables",
        modules: &["region"],
        rules: "\
Ownership:
- nnm_region_config, nnm_region_model, nnm_region_rule and
  nnm_region_table each come from their nnm_region_*_new / _build /
  rule constructors and go back through their own nnm_region_*_free, which
  accepts NULL and detects double frees; every call looks the handle up in
  nnmem's registry of live handles first (a freed one gives
  NNM_INVALID_ARGUMENT).
- Strings and arrays a table hands out are owned by the table, valid until
  nnm_region_table_free. A table is independent of the model and
  configuration it was built from: they may be freed (or changed) first.

Thread safety:
- nnm_region_model, nnm_region_config: not thread-safe. One thread at a
  time (or external locking); functions taking a const pointer may run
  concurrently with each other while no thread changes the object.
- nnm_region_rule, nnm_region_table: immutable once made; any number of
  threads may read one at once. Only its free must not overlap other
  calls on it.
- nnm_tensor_kind_name() and nnm_tensor_kind_from_name() are safe from any
  thread.",
        embedded: "\
Embedded build: leaves this header out (it needs the heap).",
        code: "",
    },
    Topic {
        file: "workbuffer.h",
        title: "work buffers of compiled models: models, compiled layouts and execution pools",
        modules: &["workbuffer"],
        rules: "\
Ownership:
- nnm_exec_model comes from nnm_exec_model_new, nnm_exec_compiled from
  nnm_exec_compile, nnm_exec_pool from nnm_exec_pool_new; each goes back
  through its own _free, which accepts NULL and detects double frees.
  Every call looks its handles up in nnmem's registry of live handles
  first, except nnm_exec_pool_acquire and nnm_exec_pool_release, which
  only check a type tag and are undefined on a freed pool.
- A compiled model is independent of its model, and pools made from it
  keep working after it is freed.

Thread safety:
- nnm_exec_model: not thread-safe, like nnm_planner.
- nnm_exec_compiled: immutable once compiled; nnm_exec_compiled_* and
  nnm_exec_resolve may run on one from any number of threads at once (only
  its free must not overlap them). nnm_exec_init_fn runs on the thread
  calling nnm_exec_compile, one call at a time.
- nnm_exec_pool: thread-safe; acquire, release, shrink, get_info and
  partial_reason from any threads at once, except nnm_exec_pool_free,
  which no call (a waiting acquire included) may overlap.
  nnm_cancel_token_cancel() from any thread wakes every
  nnm_exec_pool_acquire waiting with that token.",
        embedded: "\
Embedded build: leaves this header out (it needs the heap).",
        code: "",
    },
];
