//! C API of region configurations (`nnm_region_config_*`): memory levels,
//! the ordered first-match list of region descriptions (`nnm_region_desc`
//! plus a rule), their attributes, Glow's defaults and the TOML file.

use std::ffi::c_char;
use std::path::Path;

use super::rule::{nnm_region_rule, rule_ref};
use crate::ffi::args::{handle_query, handle_update, opt_str, out_param, read_str, slice_in};
use crate::ffi::error::{guard, guard_void};
use crate::ffi::handle::{free_handle, into_handle, value_ref, HandleType};
use crate::ffi::text::copy_text;
use crate::plan::Algorithm;
use crate::region::{MemoryLevel, RegionConfig, RegionDescription, RegionProperties, Rule, DEFAULT_LEVEL};
use crate::status::{Error, Result, Status};

/// Flag of `nnm_region_desc`: tensors never share bytes, even when their
/// lifetimes do not overlap (Glow's weights).
pub const NNM_REGION_NO_REUSE: u32 = 1;
/// Flag of `nnm_region_desc`: one region per matching tensor (named
/// "<description>/<tensor>") instead of one shared by all.
pub const NNM_REGION_PER_TENSOR: u32 = 2;
/// Flag of `nnm_region_desc`: `base_address` is the region's fixed start
/// address in its level (0 is a valid base).
pub const NNM_REGION_FIXED_BASE: u32 = 4;
/// Flag of `nnm_region_desc`: a region instance may hold constants together
/// with per-run tensors (every other kind); without it such an instance,
/// brought together by the rule or by a spill, fails
/// `nnm_region_table_build` (Glow: a region does not mix symbols of
/// different semantics).
pub const NNM_REGION_MIX_CONSTANTS: u32 = 8;

/// Every flag `nnm_region_desc::flags` may hold.
const KNOWN_REGION_FLAGS: u32 =
    NNM_REGION_NO_REUSE | NNM_REGION_PER_TENSOR | NNM_REGION_FIXED_BASE | NNM_REGION_MIX_CONSTANTS;

/// The properties of one region description, for
/// `nnm_region_config_append` and `nnm_region_config_prepend`, which copy
/// what they need: the struct and its strings may be reused or freed
/// afterwards. All zero (`= {0}`) but the name gives the defaults: planner
/// AUTO, reuse, one region shared by its tensors, alignment 64, no fixed
/// base, unlimited capacity, level "memory", nothing reserved, no spill
/// region.
#[repr(C)]
#[derive(Copy, Clone, Debug)]
pub struct nnm_region_desc {
    /// Its id, unique in the configuration.
    pub id: u32,
    /// Its planner: an `nnm_algorithm` (NNM_ALGORITHM_SEQUENTIAL is Glow's
    /// "preserve allocation order").
    pub algorithm: u32,
    /// Its name (required, NUL-terminated, UTF-8), unique in the
    /// configuration.
    pub name: *const c_char,
    /// NNM_REGION_NO_REUSE, NNM_REGION_PER_TENSOR, NNM_REGION_FIXED_BASE,
    /// NNM_REGION_MIX_CONSTANTS, or'ed; 0: none.
    pub flags: u32,
    /// Alignment of every offset and size in the region and of its base
    /// address: a power of two; 0: 64.
    pub alignment: u64,
    /// Its start address in its level, with NNM_REGION_FIXED_BASE (a
    /// multiple of the alignment); must be 0 without it.
    pub base_address: u64,
    /// The most bytes it may take, reserved bytes included; 0: unlimited.
    /// Checked against its size (see `nnm_region_info::size_bytes`): the
    /// reserved front bytes rounded up to the alignment, plus the reserved
    /// back bytes, that sum rounded up to the alignment, must fit even with
    /// no tensor (59 B reserved in 64 B at alignment 256 take 256 B:
    /// refused, as no tensor could ever go in).
    pub capacity: u64,
    /// Its memory level (added with `nnm_region_config_add_level`, or
    /// "memory"); NULL: "memory".
    pub level: *const c_char,
    /// Bytes kept free at the front, before its first tensor (rounded up to
    /// the alignment of the region's base address, so its tensors stay
    /// aligned).
    pub reserved_front: u64,
    /// Bytes kept free at the back, after its last tensor.
    pub reserved_back: u64,
    /// The description (by name) its tensors move to, largest lifetime
    /// pressure first, when it exceeds its capacity; NULL: none (the build
    /// then fails with DOES_NOT_FIT). Checked when the table is built, so it
    /// may be added later.
    pub spill_to: *const c_char,
}

impl Default for nnm_region_desc {
    /// Every field NULL or 0 (what a C `= {0}` gives).
    fn default() -> Self {
        nnm_region_desc {
            id: 0,
            algorithm: 0,
            name: std::ptr::null(),
            flags: 0,
            alignment: 0,
            base_address: 0,
            capacity: 0,
            level: std::ptr::null(),
            reserved_front: 0,
            reserved_back: 0,
            spill_to: std::ptr::null(),
        }
    }
}

/// A configuration: memory levels and the ordered list of region
/// descriptions, of which the first whose rule matches a tensor takes it.
/// Not thread-safe: one thread at a time, or external locking; calls taking
/// `const nnm_region_config *` may run concurrently with each other when no
/// thread changes it. A table built from it does not refer to it: it may be
/// freed (or changed) while the table lives.
pub struct nnm_region_config {
    pub(crate) config: RegionConfig,
}

// SAFETY: no other handle type is named "nnm_region_config".
unsafe impl HandleType for nnm_region_config {
    const NAME: &'static str = "nnm_region_config";
}

/// Hands `config` out through `out_config` once it is made.
///
/// # Safety
/// `out_config` must be NULL or valid for writing one pointer.
unsafe fn make(out_config: *mut *mut nnm_region_config, config: impl FnOnce() -> Result<RegionConfig>) -> Status {
    guard(|| {
        // SAFETY: the caller promises `out_config` is NULL or writable.
        let out = unsafe { out_param(out_config, "out_config") }?;
        out.write(into_handle(nnm_region_config { config: config()? }));
        Ok(())
    })
}

/// Creates an empty configuration: no descriptions, and only the level
/// "memory" (rank 0). Free it with `nnm_region_config_free`.
///
/// Errors: NULL_ARGUMENT.
///
/// # Safety
/// `out_config` must be NULL or valid for writing one pointer.
#[no_mangle]
pub unsafe extern "C" fn nnm_region_config_new(out_config: *mut *mut nnm_region_config) -> Status {
    // SAFETY: the caller's promise is `make`'s.
    unsafe { make(out_config, || Ok(RegionConfig::new())) }
}

/// Creates a configuration of Glow's five standard descriptions, ids 0 to 4,
/// in the level "memory": "constant-weights" (constants),
/// "mutable-weights" (mutable placeholders), "mutable-input-weights"
/// (inputs), "mutable-output-weights" (outputs and input-outputs), all
/// SEQUENTIAL without reuse, and "activations" (AUTO, with reuse); laid out
/// in that order. Prepend descriptions to override what they take.
///
/// Errors: NULL_ARGUMENT.
///
/// # Safety
/// `out_config` must be NULL or valid for writing one pointer.
#[no_mangle]
pub unsafe extern "C" fn nnm_region_config_new_default(out_config: *mut *mut nnm_region_config) -> Status {
    // SAFETY: the caller's promise is `make`'s.
    unsafe { make(out_config, || Ok(RegionConfig::glow_defaults())) }
}

/// Reads a configuration from TOML text (the format is in
/// examples/regions.toml). A text that describes no region (empty, or
/// levels only) gives Glow's five defaults, as `nnm_region_config_new_default`
/// does, unless it says `defaults = false`: then no description is added,
/// and a table build fails on the first tensor ("matches no region").
///
/// Errors: NULL_ARGUMENT; INVALID_ARGUMENT for text that is not UTF-8 or
/// not a valid configuration, with the line and column ("line 12, column
/// 9: unknown tensor kind 'weights' (known: ...)"); ALREADY_EXISTS,
/// NOT_FOUND as `nnm_region_config_append` (duplicate ids or names, unknown
/// levels), with the line.
///
/// # Safety
/// `text` must be NULL or a NUL-terminated string; `out_config` must be
/// NULL or valid for writing one pointer.
#[no_mangle]
pub unsafe extern "C" fn nnm_region_config_from_toml(
    text: *const c_char,
    out_config: *mut *mut nnm_region_config,
) -> Status {
    // SAFETY: the caller promises `text` is NULL or NUL-terminated, and
    // `out_config` as `make` needs.
    unsafe { make(out_config, || RegionConfig::from_toml_str(read_str(text, "text")?)) }
}

/// Reads a configuration from the TOML file at `path`.
///
/// Errors: as `nnm_region_config_from_toml`, the message starting with the
/// path ("regions.toml: line 4, column 17: ..."); NOT_FOUND when there is
/// no such file, INVALID_ARGUMENT when it cannot be read otherwise
/// ("<path>: cannot read the region configuration: ...").
///
/// # Safety
/// `path` must be NULL or a NUL-terminated string; `out_config` must be
/// NULL or valid for writing one pointer.
#[no_mangle]
pub unsafe extern "C" fn nnm_region_config_from_toml_file(
    path: *const c_char,
    out_config: *mut *mut nnm_region_config,
) -> Status {
    // SAFETY: as in `nnm_region_config_from_toml`.
    unsafe { make(out_config, || RegionConfig::from_toml_path(Path::new(read_str(path, "path")?))) }
}

/// Frees a configuration. NULL is a no-op; a double free is detected and
/// reported through `nnm_last_error()`. Tables built from it stay valid.
///
/// # Safety
/// `config` may be any pointer value: only a live configuration is freed,
/// others are reported. No other call may use it meanwhile.
#[no_mangle]
pub unsafe extern "C" fn nnm_region_config_free(config: *mut nnm_region_config) {
    // SAFETY: `free_handle` frees only what the registry holds as a live
    // configuration; the caller promises nobody else is using it.
    guard_void(|| unsafe { free_handle(config) })
}

/// Adds the memory level `name` with `rank` (lower is closer to the
/// compute: SRAM 0 before DDR 1; reports list levels by rank). The level
/// "memory" (rank 0) exists without being added; adding it once gives it
/// another rank. Regions of one level share its address space.
///
/// Errors: NULL_ARGUMENT; INVALID_ARGUMENT (empty name, not UTF-8);
/// ALREADY_EXISTS ("memory level 'sram' is defined twice").
///
/// # Safety
/// `config` must be NULL or a configuration from `nnm_region_config_new*`
/// (a freed one is refused unread), used by no other call meanwhile. `name`
/// must be NULL or a NUL-terminated string.
#[no_mangle]
pub unsafe extern "C" fn nnm_region_config_add_level(
    config: *mut nnm_region_config,
    name: *const c_char,
    rank: u32,
) -> Status {
    // SAFETY: the caller's promises are `handle_update`'s, and `name` is
    // NULL or NUL-terminated.
    unsafe {
        handle_update(config, "config", |c| {
            c.config.add_level(MemoryLevel { name: read_str(name, "name")?.to_string(), rank })
        })
    }
}

/// The description `desc` and a copy of `rule` say.
///
/// # Safety
/// The strings of `desc` must be NULL or NUL-terminated.
unsafe fn description_of(desc: &nnm_region_desc, rule: &Rule) -> Result<RegionDescription> {
    // SAFETY: the caller promises each string is NULL or NUL-terminated.
    let (name, level, spill_to) = unsafe {
        (
            read_str(desc.name, "desc->name")?,
            opt_str(desc.level, "desc->level")?,
            opt_str(desc.spill_to, "desc->spill_to")?,
        )
    };
    let what = || format!("region '{name}' (id {})", desc.id);
    let unknown = desc.flags & !KNOWN_REGION_FLAGS;
    if unknown != 0 {
        return Err(Error::invalid(format!(
            "{}: unknown flags {unknown:#x} (known: NNM_REGION_NO_REUSE {NNM_REGION_NO_REUSE:#x}, \
             NNM_REGION_PER_TENSOR {NNM_REGION_PER_TENSOR:#x}, NNM_REGION_FIXED_BASE {NNM_REGION_FIXED_BASE:#x}, \
             NNM_REGION_MIX_CONSTANTS {NNM_REGION_MIX_CONSTANTS:#x})",
            what()
        )));
    }
    let fixed = desc.flags & NNM_REGION_FIXED_BASE != 0;
    if !fixed && desc.base_address != 0 {
        return Err(Error::invalid(format!(
            "{}: base_address {:#x} without NNM_REGION_FIXED_BASE (set the flag to fix the base)",
            what(),
            desc.base_address
        )));
    }
    if spill_to == Some("") {
        return Err(Error::invalid(format!("{}: spill_to is empty (NULL: no spill region)", what())));
    }
    let algorithm = Algorithm::from_value(desc.algorithm)
        .map_err(|e| Error::new(e.status(), format!("{}: {}", what(), e.message())))?;
    let properties = RegionProperties {
        algorithm,
        reuse: desc.flags & NNM_REGION_NO_REUSE == 0,
        per_tensor: desc.flags & NNM_REGION_PER_TENSOR != 0,
        alignment: if desc.alignment == 0 { RegionProperties::default().alignment } else { desc.alignment },
        base_address: fixed.then_some(desc.base_address),
        capacity: (desc.capacity != 0).then_some(desc.capacity),
        level: level.unwrap_or(DEFAULT_LEVEL).to_string(),
        reserved_front: desc.reserved_front,
        reserved_back: desc.reserved_back,
        spill_to: spill_to.map(str::to_string),
        mix_constants: desc.flags & NNM_REGION_MIX_CONSTANTS != 0,
    };
    Ok(RegionDescription::new(desc.id, name, rule.clone()).with_properties(properties))
}

/// Appends or prepends (`front`) the description `desc` with a copy of
/// `rule`.
///
/// # Safety
/// As `nnm_region_config_append`.
unsafe fn add(
    config: *mut nnm_region_config,
    desc: *const nnm_region_desc,
    rule: *const nnm_region_rule,
    front: bool,
) -> Status {
    // SAFETY: the caller's promises are `handle_update`'s, `slice_in`'s,
    // `rule_ref`'s and `description_of`'s.
    unsafe {
        handle_update(config, "config", |c| {
            let (desc, rule) = (&slice_in(desc, 1, "desc")?[0], rule_ref(rule, "rule")?);
            let description = description_of(desc, rule)?;
            if front {
                c.config.prepend(description)
            } else {
                c.config.append(description)
            }
        })
    }
}

/// Adds a description at the end of the list (matched after every other):
/// the properties of `desc` and a copy of `rule` (the caller still frees
/// it). Every failure leaves the configuration as it was.
///
/// Errors:
/// - NULL_ARGUMENT: `config`, `desc`, `desc->name` or `rule` is NULL.
/// - INVALID_ARGUMENT: an empty name; unknown flag bits ("region 'sram'
///   (id 3): unknown flags 0x8 (known: ...)"); an unknown algorithm; an
///   alignment that is not a power of two; `base_address` without
///   NNM_REGION_FIXED_BASE, or not a multiple of the alignment; reserved
///   bytes that, rounded as the region's size is (the front ones up to the
///   alignment, then front plus back up to it), exceed the capacity
///   ("region 'a' (id 1): reserved bytes (59 B front, 0 B back; 256 B
///   rounded to its alignment 256, ...) exceed its capacity 64 B");
///   `spill_to` empty or naming the description itself; a rule that is
///   not live; a string that is not UTF-8.
/// - ALREADY_EXISTS: the id or the name is already used ("region 'x' (id
///   0): id 0 is already used by region 'constant-weights'").
/// - NOT_FOUND: an unknown level ("region 'fast' (id 9): unknown memory
///   level 'sram' (known: memory)").
/// - OVERFLOW: `reserved_front` + `reserved_back` overflows, or, with a
///   capacity, passes 64 bits once rounded up to the alignment.
///
/// # Safety
/// `config` must be NULL or a configuration from `nnm_region_config_new*`
/// (a freed one is refused unread), used by no other call meanwhile. `desc`
/// must be NULL or point to a readable `nnm_region_desc` whose strings are
/// NULL or NUL-terminated. `rule` must be NULL or a rule from
/// `nnm_region_rule_*` (a freed one is refused unread).
#[no_mangle]
pub unsafe extern "C" fn nnm_region_config_append(
    config: *mut nnm_region_config,
    desc: *const nnm_region_desc,
    rule: *const nnm_region_rule,
) -> Status {
    // SAFETY: the caller's promises are `add`'s.
    unsafe { add(config, desc, rule, false) }
}

/// Adds a description at the front of the list (matched before every
/// other): overrides what later descriptions would take. As
/// `nnm_region_config_append` otherwise.
///
/// Errors: as `nnm_region_config_append`.
///
/// # Safety
/// As `nnm_region_config_append`.
#[no_mangle]
pub unsafe extern "C" fn nnm_region_config_prepend(
    config: *mut nnm_region_config,
    desc: *const nnm_region_desc,
    rule: *const nnm_region_rule,
) -> Status {
    // SAFETY: the caller's promises are `add`'s.
    unsafe { add(config, desc, rule, true) }
}

/// Sets (or replaces) the string attribute `key` of the description named
/// `region` to `value`: free-form data for the backend's own use (Glow's
/// region attributes), which nnmem keeps but never reads.
///
/// Errors: NULL_ARGUMENT; INVALID_ARGUMENT (empty key, not UTF-8);
/// NOT_FOUND ("no region description named 'x' (known: a, b)").
///
/// # Safety
/// `config` must be NULL or a configuration from `nnm_region_config_new*`
/// (a freed one is refused unread), used by no other call meanwhile.
/// `region`, `key` and `value` must be NULL or NUL-terminated strings.
#[no_mangle]
pub unsafe extern "C" fn nnm_region_config_set_attribute(
    config: *mut nnm_region_config,
    region: *const c_char,
    key: *const c_char,
    value: *const c_char,
) -> Status {
    // SAFETY: the caller's promises are `handle_update`'s, and the strings
    // are NULL or NUL-terminated.
    unsafe {
        handle_update(config, "config", |c| {
            let (region, key, value) = (read_str(region, "region")?, read_str(key, "key")?, read_str(value, "value")?);
            c.config.set_attribute(region, key, value)
        })
    }
}

/// Writes the value of attribute `key` of the description named `region`,
/// NUL-terminated, into `buf` (`len` bytes) and the bytes written (NUL
/// included) to `out_len`. With `buf` NULL and `len` 0 it writes only the
/// size needed.
///
/// Errors: NULL_ARGUMENT; INVALID_ARGUMENT (not UTF-8); NOT_FOUND (no such
/// description; "region 'x' has no attribute 'k' (attributes: bank)");
/// BUFFER_TOO_SMALL (nothing is written; "attribute 'k' needs 5 B (NUL
/// included), buffer has 2 B").
///
/// # Safety
/// `config` must be NULL or a configuration from `nnm_region_config_new*`
/// (a freed one is refused unread), changed by no call meanwhile. `region`
/// and `key` must be NULL or NUL-terminated strings. `buf` must be NULL or
/// valid for writing `len` bytes; `out_len` must be NULL or valid for
/// writing one value.
#[no_mangle]
pub unsafe extern "C" fn nnm_region_config_get_attribute(
    config: *const nnm_region_config,
    region: *const c_char,
    key: *const c_char,
    buf: *mut c_char,
    len: usize,
    out_len: *mut usize,
) -> Status {
    guard(|| {
        // SAFETY: the caller promises `config` is NULL, freed (refused
        // unread) or a configuration nobody changes, the strings NULL or
        // NUL-terminated, and `buf`/`out_len` as `copy_text` needs.
        unsafe {
            let c = value_ref(config, "config")?;
            let key = read_str(key, "key")?;
            let value = c.config.attribute(read_str(region, "region")?, key)?;
            copy_text(value, buf, len, out_len, &format!("attribute '{key}'"))
        }
    })
}

/// Writes the number of descriptions.
///
/// Errors: NULL_ARGUMENT.
///
/// # Safety
/// `config` must be NULL or a configuration from `nnm_region_config_new*`
/// (a freed one is refused unread), changed by no call meanwhile.
/// `out_count` must be NULL or valid for writing one value.
#[no_mangle]
pub unsafe extern "C" fn nnm_region_config_description_count(
    config: *const nnm_region_config,
    out_count: *mut usize,
) -> Status {
    // SAFETY: the caller's promises are `handle_query`'s.
    unsafe { handle_query(config, "config", out_count, "out_count", |c| Ok(c.config.descriptions().len())) }
}
