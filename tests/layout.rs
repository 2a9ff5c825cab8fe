//! C and Rust agree on the ABI of `include/nnmem.h` (bindgen follows it into the topic headers it includes).
//!
//! Three views are compared:
//! - **bindgen** (libclang) reads the header: struct fields in order, their
//!   offsets, sizes and alignments; enum constants; version macros.
//! - **cc** compiles a small C program generated from bindgen's field list
//!   that prints `sizeof`, `_Alignof` and `offsetof` as the C compiler sees
//!   them.
//! - **Rust**: `size_of`, `align_of` and `offset_of!` of the `#[repr(C)]`
//!   types in `nnmem::ffi`, and the field names of their `Debug` output
//!   (the declaration order, derived by the compiler).
//!
//! libclang and a C compiler are required: without them these tests fail
//! (they never skip), naming what is missing.

use std::collections::BTreeMap;
use std::ffi::CStr;
use std::mem::{align_of, offset_of, size_of};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;

use nnmem::arena::{Category, ReportFormat};
use nnmem::ffi::arena::{nnm_arena_category_stats, nnm_arena_sizes};
use nnmem::ffi::device::nnm_device_allocator_vtable;
use nnmem::ffi::net::{
    list_head, nnm_cache, nnm_layer_data, nnm_net, nnm_net_bytes, nnm_net_report, nnm_param, nnm_tensor, NNM_MAX_DIMS,
    NNM_NAME_MAX,
};
use nnmem::ffi::net::{nnm_elem_stack, nnm_stack_cache, NNM_STACK_CACHE_INLINE, NNM_STACK_CACHE_TAG};
use nnmem::ffi::plan::{nnm_plan_buffer, nnm_plan_result, nnm_validation, NNM_UNUSED_STEP, NNM_VALIDATE_TRUST_FIXED};
use nnmem::ffi::pool::options::{nnm_pool_options, nnm_pool_stats};
use nnmem::ffi::pool::strategy_vtable::nnm_strategy_vtable;
use nnmem::ffi::region::{
    nnm_region_desc, nnm_region_info, nnm_region_spill, nnm_region_tensor_desc, nnm_tensor_placement,
    LifetimeConvention, NNM_REGION_FIXED_BASE, NNM_REGION_MIX_CONSTANTS, NNM_REGION_NO_REUSE, NNM_REGION_PER_TENSOR,
};
use nnmem::ffi::scratch_plan::nnm_scratch_buffer;
use nnmem::ffi::workbuffer::{
    nnm_exec_area, nnm_exec_block, nnm_exec_info, nnm_exec_op_shape, nnm_exec_operator_desc, nnm_exec_options,
    nnm_exec_output, nnm_exec_place, nnm_exec_pool_info, nnm_exec_tensor, NNM_EXEC_NO_ALIAS,
};
use nnmem::net::{Dtype, MemKind, Ownership};
use nnmem::plan::Algorithm;
use nnmem::pool::{DeviceType, StrategyKind};
use nnmem::region::TensorKind;
use nnmem::status::Status;

fn header() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("include").join("nnmem.h")
}

// --- bindgen's view ------------------------------------------------------------------

/// What bindgen generated, parsed.
#[derive(Debug, Default)]
struct Bindgen {
    text: String,
    /// Struct name -> field names in declaration order.
    fields: BTreeMap<String, Vec<String>>,
    /// Struct name -> (size, align) from bindgen's layout assertions.
    layout: BTreeMap<String, (usize, usize)>,
    /// (struct, field) -> offset from bindgen's layout assertions.
    offsets: BTreeMap<(String, String), usize>,
    /// `pub const NAME: TYPE = VALUE;` -> (TYPE, VALUE as written).
    consts: BTreeMap<String, (String, String)>,
}

impl Bindgen {
    /// Constants of the C enum `name` (bindgen's default style:
    /// `pub const <enum>_<VARIANT>: <enum> = <value>;`), by variant.
    fn enum_values(&self, name: &str) -> BTreeMap<String, i64> {
        self.consts
            .iter()
            .filter(|(_, (ty, _))| ty == name)
            .filter_map(|(k, (_, v))| Some((k.strip_prefix(&format!("{name}_"))?.to_string(), v.parse().ok()?)))
            .collect()
    }
}

fn bindgen() -> &'static Bindgen {
    static B: OnceLock<Bindgen> = OnceLock::new();
    B.get_or_init(|| {
        let header = header();
        let generated = std::panic::catch_unwind(|| {
            bindgen::Builder::default()
                .header(header.to_str().expect("UTF-8 path"))
                .allowlist_type("nnm_.*")
                .allowlist_var("NNM_.*")
                .generate_comments(false)
                // The layout assertions are where bindgen writes clang's
                // sizes, alignments and offsets; they are parsed, not compiled.
                .layout_tests(true)
                .generate()
        });
        let bindings = match generated {
            Ok(Ok(b)) => b,
            Ok(Err(e)) => panic!("bindgen could not read {}: {e}", header.display()),
            Err(panic) => {
                let why = panic
                    .downcast_ref::<String>()
                    .map(String::as_str)
                    .or_else(|| panic.downcast_ref::<&str>().copied())
                    .unwrap_or("unknown panic");
                panic!(
                    "bindgen failed ({why}). This test needs libclang: install it (Debian/Ubuntu: \
                     apt-get install libclang-dev) or point LIBCLANG_PATH at the folder holding \
                     libclang.so. It fails instead of skipping so that a missing libclang is never \
                     mistaken for a passing ABI check."
                )
            }
        };
        parse_bindgen(bindings.to_string())
    })
}

fn parse_bindgen(text: String) -> Bindgen {
    let mut b = Bindgen::default();
    let mut current: Option<String> = None;
    // Layout assertions may wrap over two lines; join them by statement.
    for line in text.lines().map(str::trim) {
        if let Some(rest) = line.strip_prefix("pub struct ") {
            let name = rest.split([' ', '{']).next().unwrap().to_string();
            if rest.trim_end().ends_with('{') {
                b.fields.insert(name.clone(), Vec::new());
                current = Some(name);
            }
            continue;
        }
        if let Some(name) = &current {
            if line.starts_with('}') {
                current = None;
            } else if let Some(field) = line.strip_prefix("pub ").and_then(|f| f.split(':').next()) {
                b.fields.get_mut(name).unwrap().push(field.trim().to_string());
            }
            continue;
        }
    }
    // pub const NAME: TYPE = VALUE; (rustfmt wraps long ones: join lines
    // up to the one ending in ';', as a type like [u8; 6] has one inside).
    let mut lines = text.lines().map(str::trim);
    while let Some(line) = lines.next() {
        let Some(first) = line.strip_prefix("pub const ") else { continue };
        let mut statement = first.to_string();
        while !statement.ends_with(';') {
            match lines.next() {
                Some(more) => statement = format!("{statement} {more}"),
                None => break,
            }
        }
        if let Some((name, rest)) = statement.split_once(':') {
            if let Some((ty, value)) = rest.split_once('=') {
                b.consts.insert(
                    name.trim().to_string(),
                    (ty.trim().to_string(), value.trim().trim_end_matches(';').trim().to_string()),
                );
            }
        }
    }
    // ["Size of T"][::std::mem::size_of::<T>() - 40usize];
    // ["Offset of field: T::f"][::std::mem::offset_of!(T, f) - 8usize];
    let statements: Vec<String> = text.split(';').map(|s| s.split_whitespace().collect::<Vec<_>>().join(" ")).collect();
    for s in &statements {
        let number = || -> Option<usize> { s.rsplit_once(" - ")?.1.split("usize").next()?.parse().ok() };
        let quoted = || -> Option<&str> { s.split("[\"").nth(1)?.split("\"]").next() };
        let (Some(label), Some(n)) = (quoted(), number()) else { continue };
        if let Some(t) = label.strip_prefix("Size of ") {
            b.layout.entry(t.to_string()).or_insert((0, 0)).0 = n;
        } else if let Some(t) = label.strip_prefix("Alignment of ") {
            b.layout.entry(t.to_string()).or_insert((0, 0)).1 = n;
        } else if let Some((t, f)) = label.strip_prefix("Offset of field: ").and_then(|x| x.split_once("::")) {
            b.offsets.insert((t.to_string(), f.to_string()), n);
        }
    }
    b.text = text;
    b
}

// --- the C compiler's view -------------------------------------------------------------

/// Lines printed by the generated C program, e.g. `size nnm_plan_result 40`.
fn c_view() -> &'static BTreeMap<String, u64> {
    static C: OnceLock<BTreeMap<String, u64>> = OnceLock::new();
    C.get_or_init(|| {
        let b = bindgen();
        let mut src =
            String::from("#include <stddef.h>\n#include <stdio.h>\n#include \"nnmem.h\"\n\nint main(void) {\n");
        let mut line = |fmt: &str, args: &str| src.push_str(&format!("    printf(\"{fmt}\\n\", {args});\n"));
        for (name, fields) in &b.fields {
            if fields.is_empty() {
                continue; // opaque handles: `_unused: [u8; 0]` is not a public field
            }
            line(&format!("size {name} %zu"), &format!("sizeof(struct {name})"));
            line(&format!("align {name} %zu"), &format!("_Alignof(struct {name})"));
            for f in fields {
                line(&format!("offset {name}.{f} %zu"), &format!("offsetof(struct {name}, {f})"));
                line(&format!("fieldsize {name}.{f} %zu"), &format!("sizeof(((struct {name} *)0)->{f})"));
            }
        }
        for e in [
            "nnm_status",
            "nnm_algorithm",
            "nnm_arena_category",
            "nnm_report_format",
            "nnm_dtype",
            "nnm_mem_kind",
            "nnm_ownership",
            "nnm_strategy",
            "nnm_device_type",
            "nnm_tensor_kind",
            "nnm_lifetime_convention",
            "nnm_exec_area",
        ] {
            if b.consts.values().any(|(ty, _)| ty == e) {
                line(&format!("size {e} %zu"), &format!("sizeof(enum {e})"));
                line(&format!("align {e} %zu"), &format!("_Alignof(enum {e})"));
            }
        }
        for m in ["NNM_VERSION_MAJOR", "NNM_VERSION_MINOR", "NNM_VERSION_PATCH"] {
            line(&format!("macro {m} %lld"), &format!("(long long)({m})"));
        }
        line("macro NNM_UNUSED_STEP %lld", "(long long)(NNM_UNUSED_STEP)");
        line("macro NNM_VALIDATE_TRUST_FIXED %lld", "(long long)(NNM_VALIDATE_TRUST_FIXED)");
        line("macro NNM_MAX_DIMS %lld", "(long long)(NNM_MAX_DIMS)");
        line("macro NNM_NAME_MAX %lld", "(long long)(NNM_NAME_MAX)");
        line("macro NNM_STACK_CACHE_INLINE %lld", "(long long)(NNM_STACK_CACHE_INLINE)");
        line("macro NNM_STACK_CACHE_TAG %lld", "(long long)(NNM_STACK_CACHE_TAG)");
        line("macro NNM_SCRATCH_PLANNER_BYTES(10) %lld", "(long long)(NNM_SCRATCH_PLANNER_BYTES(10))");
        line("macro NNM_ARENA_TEMP_RECORD_BYTES %lld", "(long long)(NNM_ARENA_TEMP_RECORD_BYTES)");
        line("macro NNM_ARENA_PERSISTENT_RECORD_BYTES %lld", "(long long)(NNM_ARENA_PERSISTENT_RECORD_BYTES)");
        line("macro NNM_ARENA_STATE_HEADER_BYTES %lld", "(long long)(NNM_ARENA_STATE_HEADER_BYTES)");
        line("macro NNM_ARENA_STATE_BYTES(3,5) %lld", "(long long)(NNM_ARENA_STATE_BYTES(3, 5))");
        line("macro NNM_SCRATCH_PLANNER_RUNS(TFLM) %lld", "(long long)(NNM_SCRATCH_PLANNER_RUNS(NNM_ALGORITHM_TFLM))");
        line("macro NNM_SCRATCH_PLANNER_RUNS(AUTO) %lld", "(long long)(NNM_SCRATCH_PLANNER_RUNS(NNM_ALGORITHM_AUTO))");
        for m in [
            "NNM_REGION_NO_REUSE",
            "NNM_REGION_PER_TENSOR",
            "NNM_REGION_FIXED_BASE",
            "NNM_REGION_MIX_CONSTANTS",
            "NNM_EXEC_NO_ALIAS",
        ] {
            line(&format!("macro {m} %lld"), &format!("(long long)({m})"));
        }
        // The initialiser, field by field (pointers as 0/1: NULL or not).
        for f in ["count", "tag", "spill_capacity"] {
            line(
                &format!("init nnm_stack_cache.{f} %lld"),
                &format!("(long long)((nnm_stack_cache)NNM_STACK_CACHE_INIT).{f}"),
            );
        }
        for f in ["spill", "spill_owner"] {
            line(
                &format!("init nnm_stack_cache.{f} %lld"),
                &format!("(long long)(((nnm_stack_cache)NNM_STACK_CACHE_INIT).{f} != NULL)"),
            );
        }
        src.push_str("    return 0;\n}\n");

        let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join(format!("layout-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let c_file = dir.join("layout.c");
        let exe = dir.join("layout");
        std::fs::write(&c_file, &src).unwrap();
        let cc = std::env::var("CC").unwrap_or_else(|_| "cc".to_string());
        let include = header().parent().unwrap().to_path_buf();
        let out = Command::new(&cc)
            .args(["-std=c11", "-Wall", "-Wextra", "-Werror", "-o"])
            .arg(&exe)
            .arg("-I")
            .arg(&include)
            .arg(&c_file)
            .output()
            .unwrap_or_else(|e| {
                panic!("cannot run the C compiler '{cc}' ({e}); this test needs one (set CC to choose it)")
            });
        assert!(
            out.status.success(),
            "{cc} failed on {}:\n{}\n--- source ---\n{src}",
            c_file.display(),
            String::from_utf8_lossy(&out.stderr)
        );
        let run = Command::new(&exe).output().expect("run the compiled layout program");
        assert!(run.status.success(), "{} failed", exe.display());
        let _ = std::fs::remove_dir_all(&dir);
        String::from_utf8(run.stdout)
            .unwrap()
            .lines()
            .map(|l| {
                let (key, value) = l.rsplit_once(' ').unwrap();
                (key.to_string(), value.parse::<i64>().unwrap() as u64)
            })
            .collect()
    })
}

// --- Rust's view -------------------------------------------------------------------------

struct RustStruct {
    name: &'static str,
    size: usize,
    align: usize,
    /// (field, offset, size), as listed in `rust_struct!` (each one proven
    /// to exist by `offset_of!`).
    fields: Vec<(&'static str, usize, usize)>,
    /// Field names in declaration order, from the derived `Debug` output.
    declared: Vec<String>,
}

fn size_of_field<T, F>(_: fn(&T) -> &F) -> usize {
    size_of::<F>()
}

/// The field names of a `#[derive(Debug)]` struct, in declaration order
/// (fields that are structs or arrays themselves are skipped over whole).
fn debug_fields<T: std::fmt::Debug + Default>() -> Vec<String> {
    let text = format!("{:?}", T::default());
    let inner = text.split_once('{').map(|x| x.1).unwrap_or("").trim_end().trim_end_matches('}');
    let mut fields = Vec::new();
    let (mut depth, mut start) = (0i32, 0usize);
    for (i, ch) in inner.char_indices().chain([(inner.len(), ',')]) {
        match ch {
            '{' | '[' | '(' => depth += 1,
            '}' | ']' | ')' => depth -= 1,
            ',' if depth == 0 => {
                if let Some((name, _)) = inner[start..i].split_once(':') {
                    fields.push(name.trim().to_string());
                }
                start = i + 1;
            }
            _ => {}
        }
    }
    fields
}

macro_rules! rust_struct {
    ($t:ident { $($f:ident),* $(,)? }) => {
        RustStruct {
            name: stringify!($t),
            size: size_of::<$t>(),
            align: align_of::<$t>(),
            fields: vec![$((stringify!($f), offset_of!($t, $f), size_of_field::<$t, _>(|s| &s.$f))),*],
            declared: debug_fields::<$t>(),
        }
    };
}

fn rust_structs() -> Vec<RustStruct> {
    vec![
        rust_struct!(nnm_plan_result {
            peak_bytes,
            lower_bound_bytes,
            buffer_count,
            best_lower_bound_bytes,
            plan_time_ns,
            search_nodes,
            algorithm,
            proven_optimal,
            fits,
            time_limit_cut,
            fixed_overlap_count,
            fixed_overlap_first,
            fixed_overlap_second,
            fixed_overlap_step
        }),
        rust_struct!(nnm_plan_buffer { size, first_use, last_use, offset }),
        rust_struct!(nnm_validation {
            peak_bytes,
            first,
            second,
            step,
            valid,
            fixed_overlap_count,
            fixed_overlap_first,
            fixed_overlap_second,
            fixed_overlap_step
        }),
        rust_struct!(nnm_scratch_buffer { size, first_use, last_use, fixed, offset }),
        rust_struct!(nnm_arena_sizes {
            capacity_bytes,
            alignment_lost_bytes,
            head_bytes,
            temp_bytes,
            temp_peak_bytes,
            tail_bytes,
            used_bytes,
            available_bytes,
            available_persistent_bytes,
            required_bytes,
            required_nonpersistent_bytes,
            required_persistent_bytes,
            temp_count,
            persistent_count,
            plan_count,
            largest_alignment_bytes
        }),
        rust_struct!(nnm_arena_category_stats { requested_bytes, used_bytes, count }),
        rust_struct!(nnm_pool_options {
            limit_bytes,
            page_size,
            max_split,
            small_size,
            small_segment,
            large_round,
            min_block,
            replay_work_limit,
            replay_algorithm,
            shards,
            trace,
            reserved
        }),
        rust_struct!(nnm_pool_stats {
            requested_bytes,
            requested_peak,
            allocated_bytes,
            allocated_peak,
            reserved_bytes,
            reserved_peak,
            active_blocks,
            active_peak,
            cached_blocks,
            cached_bytes,
            largest_free_block,
            allocs,
            frees,
            device_allocs,
            device_frees,
            oom_retries,
            limit_refusals,
            served_from_plan,
            plan_departures,
            plan_bytes,
            plan_lower_bound,
            limit
        }),
        rust_struct!(nnm_device_allocator_vtable { name, ctx, alloc, free, mem_info, release, flags }),
        rust_struct!(nnm_strategy_vtable {
            name,
            ctx,
            create,
            destroy,
            alloc,
            dealloc,
            release_cached,
            release_all,
            streams_synchronized,
            end_iteration
        }),
        rust_struct!(list_head { next, prev }),
        rust_struct!(nnm_tensor { data, bytes, dims, ndims, dtype, elem_size, mem_kind, ownership }),
        rust_struct!(nnm_param { node, name, data, diff, user }),
        rust_struct!(nnm_layer_data { node, name, data, diff, user }),
        rust_struct!(nnm_cache { node, name, tensors, count, stack, user }),
        rust_struct!(nnm_net { params, outputs, inputs, caches, max_batch }),
        rust_struct!(nnm_stack_cache { count, tag, spill, spill_capacity, spill_owner, tensors }),
        rust_struct!(nnm_elem_stack { count, tag, spill, spill_capacity, spill_owner }),
        rust_struct!(nnm_net_bytes { entries, tensors, owned_bytes, referenced_bytes }),
        rust_struct!(nnm_net_report {
            params,
            outputs,
            inputs,
            caches,
            total_owned_bytes,
            total_referenced_bytes,
            max_batch
        }),
        rust_struct!(nnm_region_tensor_desc {
            name,
            kind,
            lifetime,
            size,
            alignment,
            start,
            end,
            dtype,
            function,
            tags,
            view_of,
            view_offset
        }),
        rust_struct!(nnm_region_desc {
            id,
            algorithm,
            name,
            flags,
            alignment,
            base_address,
            capacity,
            level,
            reserved_front,
            reserved_back,
            spill_to
        }),
        rust_struct!(nnm_region_info {
            name,
            level,
            description_id,
            level_rank,
            base_address,
            size_bytes,
            peak_bytes,
            lower_bound_bytes,
            algorithm,
            proven_optimal,
            fixed_base,
            tensor_count,
            attribute_count
        }),
        rust_struct!(nnm_tensor_placement { region, offset, address, size_bytes, spilled }),
        rust_struct!(nnm_region_spill { tensor, from, to, via_count, reason }),
        rust_struct!(nnm_exec_tensor { id, size }),
        rust_struct!(nnm_exec_output { id, size, alias_of }),
        rust_struct!(nnm_exec_operator_desc {
            name,
            inputs,
            input_count,
            outputs,
            output_count,
            immutable_sizes,
            immutable_count,
            mutable_sizes,
            mutable_count,
            immutable_ids,
            mutable_ids
        }),
        rust_struct!(nnm_exec_options { algorithm, alignment, work_limit }),
        rust_struct!(nnm_exec_info {
            constants_bytes,
            immutable_bytes,
            mutable_bytes,
            mutable_lower_bound,
            block_bytes,
            algorithm,
            proven_optimal,
            operator_count,
            buffer_count
        }),
        rust_struct!(nnm_exec_op_shape { input_count, output_count, immutable_count, mutable_count }),
        rust_struct!(nnm_exec_place { area, offset, size }),
        rust_struct!(nnm_exec_block { base, size, slot, generation }),
        rust_struct!(nnm_exec_pool_info {
            requested,
            blocks,
            target,
            free_blocks,
            out_blocks,
            waiters,
            block_bytes,
            acquires,
            waits,
            timeouts,
            cancellations,
            partial
        }),
    ]
}

// --- the checks --------------------------------------------------------------------------

#[test]
fn structs_have_the_same_fields_size_and_alignment_in_c_and_rust() {
    let b = bindgen();
    let c = c_view();
    let mut problems = Vec::new();
    for r in rust_structs() {
        let Some(c_fields) = b.fields.get(r.name) else {
            problems.push(format!("struct {} is missing from include/nnmem.h", r.name));
            continue;
        };
        // bindgen's field names, in order, are the Rust struct's.
        if *c_fields != r.declared {
            problems.push(format!("{}: C fields {c_fields:?}, Rust fields {:?}", r.name, r.declared));
        }
        let listed: Vec<&str> = r.fields.iter().map(|f| f.0).collect();
        assert_eq!(
            listed, r.declared,
            "tests/layout.rs lists the fields of {} out of date: update rust_structs()",
            r.name
        );
        let (b_size, b_align) = b.layout.get(r.name).copied().unwrap_or_default();
        let c_size = c[&format!("size {}", r.name)] as usize;
        let c_align = c[&format!("align {}", r.name)] as usize;
        if (r.size, r.align) != (c_size, c_align) || (r.size, r.align) != (b_size, b_align) {
            problems.push(format!(
                "{}: size/align Rust {}/{}, cc {c_size}/{c_align}, bindgen (clang) {b_size}/{b_align}",
                r.name, r.size, r.align
            ));
        }
        for &(field, offset, size) in &r.fields {
            let key = format!("{}.{field}", r.name);
            let c_offset = c.get(&format!("offset {key}")).map(|&v| v as usize);
            let c_size = c.get(&format!("fieldsize {key}")).map(|&v| v as usize);
            let b_offset = b.offsets.get(&(r.name.to_string(), field.to_string())).copied();
            if c_offset != Some(offset) || b_offset != Some(offset) || c_size != Some(size) {
                problems.push(format!(
                    "{key}: offset Rust {offset}, cc {c_offset:?}, bindgen {b_offset:?}; size Rust {size}, cc {c_size:?}"
                ));
            }
        }
    }
    assert!(problems.is_empty(), "C and Rust disagree:\n  {}", problems.join("\n  "));
}

/// The arena state's macros are the library's formulas (which compile-time
/// checks hold to the records' and the arena's sizes on every target).
#[test]
fn the_arena_state_macros_are_the_library_figures() {
    use nnmem::ffi::arena::{PERSISTENT_RECORD_BYTES, STATE_ALIGNMENT, STATE_HEADER_BYTES, TEMP_RECORD_BYTES};
    let c = c_view();
    assert_eq!(c["macro NNM_ARENA_TEMP_RECORD_BYTES"] as usize, TEMP_RECORD_BYTES);
    assert_eq!(c["macro NNM_ARENA_PERSISTENT_RECORD_BYTES"] as usize, PERSISTENT_RECORD_BYTES);
    assert_eq!(c["macro NNM_ARENA_STATE_HEADER_BYTES"] as usize, STATE_HEADER_BYTES);
    assert_eq!(
        c["macro NNM_ARENA_STATE_BYTES(3,5)"] as usize,
        STATE_HEADER_BYTES + (STATE_ALIGNMENT - 1) + 2 * 3 * TEMP_RECORD_BYTES + 5 * PERSISTENT_RECORD_BYTES
    );
}

#[test]
fn the_scratch_planner_macros_give_what_the_library_needs() {
    use nnmem::ffi::scratch_plan::{
        nnm_scratch_planner_buffer_count, nnm_scratch_planner_init, NNM_SCRATCH_PLANNER_BYTES_PER_BUFFER,
        NNM_SCRATCH_PLANNER_HEADER_BYTES,
    };
    let c = c_view();
    let bytes = c["macro NNM_SCRATCH_PLANNER_BYTES(10)"] as usize;
    assert_eq!(bytes, NNM_SCRATCH_PLANNER_HEADER_BYTES + 3 + 10 * NNM_SCRATCH_PLANNER_BYTES_PER_BUFFER);
    assert_eq!((c["macro NNM_SCRATCH_PLANNER_RUNS(TFLM)"], c["macro NNM_SCRATCH_PLANNER_RUNS(AUTO)"]), (1, 0));
    // That many bytes hold 10 buffers at every start address.
    let mut scratch = vec![0u8; bytes + 4];
    for skew in 0..4 {
        let (mut planner, mut capacity) = (std::ptr::null_mut(), 0usize);
        let tflm = nnmem::plan::Algorithm::Tflm as u32;
        // SAFETY: `bytes` bytes from `skew` lie inside `scratch`, which
        // nothing else uses; the out-parameters are locals.
        unsafe {
            let start = scratch.as_mut_ptr().add(skew).cast();
            assert_eq!(nnm_scratch_planner_init(start, bytes, tflm, &mut planner), Status::Ok);
            assert_eq!(nnm_scratch_planner_buffer_count(planner, std::ptr::null_mut(), &mut capacity), Status::Ok);
        }
        assert!(capacity >= 10, "skew {skew}: {capacity}");
    }
}

#[test]
fn every_struct_in_the_header_is_checked() {
    let checked: Vec<&str> = rust_structs().iter().map(|r| r.name).collect();
    // Opaque handles (`nnm_planner`) have no public fields.
    let in_header: Vec<&String> = bindgen().fields.iter().filter(|(_, f)| !f.is_empty()).map(|(n, _)| n).collect();
    assert!(!in_header.is_empty(), "bindgen found no struct in include/nnmem.h:\n{}", bindgen().text);
    for name in in_header {
        assert!(
            checked.contains(&name.as_str()),
            "include/nnmem.h has struct {name} that tests/layout.rs does not check: add it to rust_structs()"
        );
    }
}

#[test]
fn nnm_status_matches_in_c_and_rust() {
    let b = bindgen();
    let c_values = b.enum_values("nnm_status");
    let rust_values: BTreeMap<String, i64> = Status::ALL.iter().map(|&s| (s.c_identifier(), s as i64)).collect();
    assert_eq!(c_values, rust_values, "enum nnm_status: C (left) and Rust (right) differ");
    let c = c_view();
    assert_eq!(
        (c["size nnm_status"] as usize, c["align nnm_status"] as usize),
        (size_of::<Status>(), align_of::<Status>()),
        "enum nnm_status: size/align in C (left) and Rust (right)"
    );
}

#[test]
fn nnm_algorithm_matches_in_c_and_rust() {
    let b = bindgen();
    let c_values = b.enum_values("nnm_algorithm");
    assert!(
        !c_values.is_empty(),
        "enum nnm_algorithm is missing from include/nnmem.h: C callers have no NNM_ALGORITHM_* constants \
         (cbindgen exports a type only when a function uses it or cbindgen.toml's [export] include lists it)"
    );
    let rust_values: BTreeMap<String, i64> = Algorithm::all()
        .iter()
        .map(|&a| (format!("NNM_ALGORITHM_{}", a.name().to_ascii_uppercase().replace('-', "_")), a as i64))
        .collect();
    assert_eq!(c_values, rust_values, "enum nnm_algorithm: C (left) and Rust (right) differ");
    let c = c_view();
    assert_eq!(
        (c["size nnm_algorithm"] as usize, c["align nnm_algorithm"] as usize),
        (size_of::<Algorithm>(), align_of::<Algorithm>()),
        "enum nnm_algorithm: size/align in C (left) and Rust (right)"
    );
}

#[test]
fn arena_enums_match_in_c_and_rust() {
    let b = bindgen();
    let c = c_view();
    let categories = b.enum_values("nnm_arena_category");
    assert_eq!(categories.len(), 10, "nnm_arena_category in include/nnmem.h: {categories:?}");
    for (name, value) in [
        ("NNM_ARENA_CATEGORY_OTHER", Category::Other),
        ("NNM_ARENA_CATEGORY_EVAL_TENSOR_DATA", Category::EvalTensorData),
        ("NNM_ARENA_CATEGORY_PERSISTENT_TENSOR_DATA", Category::PersistentTensorData),
        ("NNM_ARENA_CATEGORY_PERSISTENT_QUANTIZATION_DATA", Category::PersistentQuantizationData),
        ("NNM_ARENA_CATEGORY_PERSISTENT_BUFFER_DATA", Category::PersistentBufferData),
        ("NNM_ARENA_CATEGORY_VARIABLE_BUFFER_DATA", Category::VariableBufferData),
        ("NNM_ARENA_CATEGORY_NODE_AND_REGISTRATION", Category::NodeAndRegistration),
        ("NNM_ARENA_CATEGORY_OP_DATA", Category::OpData),
        ("NNM_ARENA_CATEGORY_PLANNED_TENSOR_DATA", Category::PlannedTensorData),
        ("NNM_ARENA_CATEGORY_TEMP_SCRATCH", Category::TempScratch),
    ] {
        assert_eq!(categories.get(name), Some(&(value as i64)), "{name}");
    }
    let formats = b.enum_values("nnm_report_format");
    assert_eq!(formats.get("NNM_REPORT_FORMAT_TEXT"), Some(&(ReportFormat::Text as i64)));
    assert_eq!(formats.get("NNM_REPORT_FORMAT_JSON"), Some(&(ReportFormat::Json as i64)));
    for (e, size) in [("nnm_arena_category", size_of::<Category>()), ("nnm_report_format", size_of::<ReportFormat>())] {
        assert_eq!(c[&format!("size {e}")] as usize, size, "enum {e}: size in C and Rust");
    }
}

#[test]
fn version_macros_match_cargo_and_nnm_version() {
    let b = bindgen();
    let c = c_view();
    let cargo = [
        ("NNM_VERSION_MAJOR", env!("CARGO_PKG_VERSION_MAJOR")),
        ("NNM_VERSION_MINOR", env!("CARGO_PKG_VERSION_MINOR")),
        ("NNM_VERSION_PATCH", env!("CARGO_PKG_VERSION_PATCH")),
    ];
    for (macro_name, value) in cargo {
        let expected: u64 = value.parse().unwrap();
        let from_bindgen = b.consts.get(macro_name).map(|(_, v)| v.parse::<u64>().unwrap());
        assert_eq!(from_bindgen, Some(expected), "{macro_name} (bindgen) vs Cargo.toml");
        assert_eq!(c.get(&format!("macro {macro_name}")), Some(&expected), "{macro_name} (cc) vs Cargo.toml");
    }
    let string = b.consts.get("NNM_VERSION_STRING").map(|(_, v)| v.as_str());
    assert_eq!(string, Some(format!("b\"{}\\0\"", env!("CARGO_PKG_VERSION")).as_str()), "NNM_VERSION_STRING");
    let runtime = unsafe { CStr::from_ptr(nnmem::ffi::nnm_version()) }.to_str().unwrap();
    assert_eq!(runtime, env!("CARGO_PKG_VERSION"), "nnm_version() vs Cargo.toml");
    assert_eq!(runtime, nnmem::VERSION);
    assert_eq!(c["macro NNM_UNUSED_STEP"] as i64, NNM_UNUSED_STEP, "NNM_UNUSED_STEP in C and Rust");
    assert_eq!(
        c["macro NNM_VALIDATE_TRUST_FIXED"],
        u64::from(NNM_VALIDATE_TRUST_FIXED),
        "NNM_VALIDATE_TRUST_FIXED in C and Rust"
    );
}

#[test]
fn net_enums_and_constants_match_in_c_and_rust() {
    let b = bindgen();
    let c = c_view();
    let dtypes: BTreeMap<String, i64> = Dtype::all()
        .iter()
        .map(|&d| (format!("NNM_DTYPE_{}", format!("{d:?}").to_ascii_uppercase()), d as i64))
        .collect();
    assert_eq!(b.enum_values("nnm_dtype"), dtypes, "enum nnm_dtype: C (left) and Rust (right)");
    let kinds: BTreeMap<String, i64> = [MemKind::Host, MemKind::Device, MemKind::Placeholder]
        .iter()
        .map(|&k| (format!("NNM_MEM_KIND_{}", format!("{k:?}").to_ascii_uppercase()), k as i64))
        .collect();
    assert_eq!(b.enum_values("nnm_mem_kind"), kinds, "enum nnm_mem_kind");
    let owners: BTreeMap<String, i64> = [Ownership::Owned, Ownership::View, Ownership::Borrowed]
        .iter()
        .map(|&o| (format!("NNM_OWNERSHIP_{}", format!("{o:?}").to_ascii_uppercase()), o as i64))
        .collect();
    assert_eq!(b.enum_values("nnm_ownership"), owners, "enum nnm_ownership");
    for (e, size, align) in [
        ("nnm_dtype", size_of::<Dtype>(), align_of::<Dtype>()),
        ("nnm_mem_kind", size_of::<MemKind>(), align_of::<MemKind>()),
        ("nnm_ownership", size_of::<Ownership>(), align_of::<Ownership>()),
    ] {
        assert_eq!((c[&format!("size {e}")] as usize, c[&format!("align {e}")] as usize), (size, align), "enum {e}");
    }
    assert_eq!(c["macro NNM_MAX_DIMS"], u64::from(NNM_MAX_DIMS));
    assert_eq!(c["macro NNM_NAME_MAX"], u64::from(NNM_NAME_MAX));
    assert_eq!(c["macro NNM_STACK_CACHE_INLINE"], u64::from(NNM_STACK_CACHE_INLINE));
    assert_eq!(c["macro NNM_STACK_CACHE_TAG"], NNM_STACK_CACHE_TAG);
    // NNM_STACK_CACHE_INIT (C) is nnm_stack_cache::default() (what nnm_stack_cache_init writes).
    let d = nnm_stack_cache::default();
    let init = |f: &str| c[&format!("init nnm_stack_cache.{f}")];
    assert_eq!(
        (init("count"), init("tag"), init("spill_capacity"), init("spill"), init("spill_owner")),
        (
            d.count as u64,
            d.tag,
            d.spill_capacity as u64,
            u64::from(!d.spill.is_null()),
            u64::from(!d.spill_owner.is_null())
        ),
        "NNM_STACK_CACHE_INIT (left) and nnm_stack_cache_init (right)"
    );
}

#[test]
fn pool_enums_match_in_c_and_rust() {
    let b = bindgen();
    let c = c_view();
    let strategies: BTreeMap<String, i64> = StrategyKind::ALL
        .iter()
        .map(|&k| (format!("NNM_STRATEGY_{}", k.name().to_ascii_uppercase().replace('-', "_")), k as i64))
        .collect();
    assert_eq!(b.enum_values("nnm_strategy"), strategies, "enum nnm_strategy: C (left) and Rust (right)");
    let devices: BTreeMap<String, i64> = DeviceType::ALL
        .iter()
        .map(|&d| (format!("NNM_DEVICE_TYPE_{}", d.name().to_ascii_uppercase()), d as i64))
        .collect();
    assert_eq!(b.enum_values("nnm_device_type"), devices, "enum nnm_device_type: C (left) and Rust (right)");
    for (e, size, align) in [
        ("nnm_strategy", size_of::<StrategyKind>(), align_of::<StrategyKind>()),
        ("nnm_device_type", size_of::<DeviceType>(), align_of::<DeviceType>()),
    ] {
        assert_eq!((c[&format!("size {e}")] as usize, c[&format!("align {e}")] as usize), (size, align), "enum {e}");
    }
}

#[test]
fn region_enums_and_flags_match_in_c_and_rust() {
    let b = bindgen();
    let c = c_view();
    let kinds: BTreeMap<String, i64> = TensorKind::ALL
        .iter()
        .map(|&k| (format!("NNM_TENSOR_KIND_{}", k.name().to_ascii_uppercase().replace('-', "_")), k as i64))
        .collect();
    assert_eq!(b.enum_values("nnm_tensor_kind"), kinds, "enum nnm_tensor_kind: C (left) and Rust (right)");
    let conventions = b.enum_values("nnm_lifetime_convention");
    let rust: BTreeMap<String, i64> = LifetimeConvention::ALL
        .iter()
        .map(|&l| (format!("NNM_LIFETIME_{}", l.name().to_ascii_uppercase().replace('-', "_")), l as i64))
        .collect();
    assert_eq!(conventions, rust, "enum nnm_lifetime_convention: C (left) and Rust (right)");
    for (e, size, align) in [
        ("nnm_tensor_kind", size_of::<TensorKind>(), align_of::<TensorKind>()),
        ("nnm_lifetime_convention", size_of::<LifetimeConvention>(), align_of::<LifetimeConvention>()),
    ] {
        assert_eq!((c[&format!("size {e}")] as usize, c[&format!("align {e}")] as usize), (size, align), "enum {e}");
    }
    for (m, value) in [
        ("NNM_REGION_NO_REUSE", NNM_REGION_NO_REUSE),
        ("NNM_REGION_PER_TENSOR", NNM_REGION_PER_TENSOR),
        ("NNM_REGION_FIXED_BASE", NNM_REGION_FIXED_BASE),
        ("NNM_REGION_MIX_CONSTANTS", NNM_REGION_MIX_CONSTANTS),
    ] {
        assert_eq!(c[&format!("macro {m}")], u64::from(value), "{m} in C and Rust");
    }
}

#[test]
fn exec_enums_and_constants_match_in_c_and_rust() {
    let (b, c) = (bindgen(), c_view());
    assert_eq!(c["macro NNM_EXEC_NO_ALIAS"], NNM_EXEC_NO_ALIAS, "NNM_EXEC_NO_ALIAS in C and Rust");
    let areas: BTreeMap<String, i64> = [
        ("NNM_EXEC_AREA_CONSTANTS", nnm_exec_area::Constants),
        ("NNM_EXEC_AREA_IMMUTABLE", nnm_exec_area::Immutable),
        ("NNM_EXEC_AREA_MUTABLE", nnm_exec_area::Mutable),
        ("NNM_EXEC_AREA_DYNAMIC", nnm_exec_area::Dynamic),
    ]
    .into_iter()
    .map(|(n, a)| (n.to_string(), a as i64))
    .collect();
    assert_eq!(b.enum_values("nnm_exec_area"), areas, "enum nnm_exec_area: C (left) and Rust (right)");
    let size = (c["size nnm_exec_area"] as usize, c["align nnm_exec_area"] as usize);
    assert_eq!(size, (size_of::<nnm_exec_area>(), align_of::<nnm_exec_area>()), "enum nnm_exec_area");
}
