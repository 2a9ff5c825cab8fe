//! C API of region tables (`nnm_region_table_*`): built from a
//! configuration and a model, then read: regions, placements, spills, the
//! report and the picture. The table keeps the C strings it hands out.

use std::ffi::{c_char, CString};

use super::config::nnm_region_config;
use super::model::nnm_region_model;
use crate::arena::ReportFormat;
use crate::ffi::args::{handle_query, out_param, read_str, slice_out};
use crate::ffi::error::{guard, guard_void};
use crate::ffi::handle::{free_handle, into_handle, value_ref, HandleType};
use crate::ffi::text::copy_text;
use crate::region::{RegionInstance, RegionTable};
use crate::status::{Error, Result, Status};

/// One region of a built table, from `nnm_region_table_region`.
#[repr(C)]
#[derive(Copy, Clone, Debug)]
pub struct nnm_region_info {
    /// Its name: the description's, or "<description>/<tensor>" for a
    /// per-tensor region ("<description>/<function>/<tensor>" for a tensor
    /// of another function than the first). Owned by the table: valid until
    /// `nnm_region_table_free`.
    pub name: *const c_char,
    /// Its memory level's name. Owned by the table, like `name`.
    pub level: *const c_char,
    /// Its description's id.
    pub description_id: u32,
    /// Its level's rank.
    pub level_rank: u32,
    /// Where it starts in its level.
    pub base_address: u64,
    /// Bytes it takes: reserved front (rounded up to the base address's
    /// alignment), the plan's peak and reserved back, rounded up to its
    /// description's alignment. A tensor's own alignment places the tensor
    /// and aligns the base address; it does not round sizes.
    pub size_bytes: u64,
    /// The plan's peak: the highest end of its tensors, each size rounded
    /// up to the description's alignment.
    pub peak_bytes: u64,
    /// A lower bound on the peak of any plan of its tensors, their own
    /// alignments counted: no plan can be smaller.
    pub lower_bound_bytes: u64,
    /// The `nnm_algorithm` that produced its plan (for AUTO, the winner; with
    /// tensors aligned above the region, which are planned first, the one
    /// that placed the most tensors).
    pub algorithm: u32,
    /// 1 when no plan of its tensors can be smaller (the peak meets the
    /// lower bound, or the planner proved it), else 0.
    pub proven_optimal: u8,
    /// 1 when its description fixes its base address, else 0 (laid out
    /// after its level's other regions).
    pub fixed_base: u8,
    /// Its tensors, views included (ids from
    /// `nnm_region_table_region_tensors`).
    pub tensor_count: usize,
    /// Its description's attributes (from
    /// `nnm_region_table_region_attribute` and
    /// `nnm_region_table_find_attribute`), kept by the table.
    pub attribute_count: usize,
}

/// Where one tensor went, from `nnm_region_table_placement`.
#[repr(C)]
#[derive(Copy, Clone, Debug, Default)]
pub struct nnm_tensor_placement {
    /// Its region, as an index for `nnm_region_table_region`.
    pub region: usize,
    /// Its offset inside the region (reserved front bytes included).
    pub offset: u64,
    /// Its address in its level: the region's base address plus `offset`.
    pub address: u64,
    /// Its size.
    pub size_bytes: u64,
    /// 1 when it was moved out of the region its rule chose (which exceeded
    /// its capacity), or is a view of such a tensor; else 0.
    pub spilled: u8,
}

/// One tensor moved out of the region its rule chose, from
/// `nnm_region_table_spill`: one record per tensor, however many spill
/// regions it passed through.
#[repr(C)]
#[derive(Copy, Clone, Debug)]
pub struct nnm_region_spill {
    /// The tensor moved (its id in the model).
    pub tensor: usize,
    /// The region its rule chose (an index for `nnm_region_table_region`).
    pub from: usize,
    /// The region it ended in (an index).
    pub to: usize,
    /// The spill regions it passed through between `from` and `to` (0 when
    /// it moved once; their indices from `nnm_region_table_spill_via`).
    pub via_count: usize,
    /// Why, with figures (the region's need and capacity, the tensor's
    /// lifetime pressure), one reason per move joined by "; then " (each
    /// naming the region it left). Owned by the table: valid until
    /// `nnm_region_table_free`.
    pub reason: *const c_char,
}

impl Default for nnm_region_info {
    /// Every field NULL or 0.
    fn default() -> Self {
        nnm_region_info {
            name: std::ptr::null(),
            level: std::ptr::null(),
            description_id: 0,
            level_rank: 0,
            base_address: 0,
            size_bytes: 0,
            peak_bytes: 0,
            lower_bound_bytes: 0,
            algorithm: 0,
            proven_optimal: 0,
            fixed_base: 0,
            tensor_count: 0,
            attribute_count: 0,
        }
    }
}

impl Default for nnm_region_spill {
    /// Every field NULL or 0.
    fn default() -> Self {
        nnm_region_spill { tensor: 0, from: 0, to: 0, via_count: 0, reason: std::ptr::null() }
    }
}

/// A built region table: every tensor of the model in exactly one region,
/// with its offset and address. Immutable, so any number of threads may
/// read one table at once; only `nnm_region_table_free` must not overlap
/// other calls on it. Independent of the model and configuration it was
/// built from (they may be freed first). Every call checks that the table
/// is live (a freed one gives INVALID_ARGUMENT).
pub struct nnm_region_table {
    pub(crate) table: RegionTable,
    /// The regions' names, in region order, NUL-terminated for C.
    names: Vec<CString>,
    /// The regions' level names, in region order.
    levels: Vec<CString>,
    /// The spills' reasons, in spill order.
    reasons: Vec<CString>,
    /// Each region's attributes (key, value), in region order.
    attributes: Vec<Vec<(CString, CString)>>,
}

// SAFETY: no other handle type is named "nnm_region_table".
unsafe impl HandleType for nnm_region_table {
    const NAME: &'static str = "nnm_region_table";
}

impl nnm_region_table {
    /// The table with its C strings. Errors on text holding a NUL byte,
    /// which C could not see whole.
    fn new(table: RegionTable) -> Result<Self> {
        let c = |text: &str, what: &str| {
            CString::new(text)
                .map_err(|_| Error::invalid(format!("{what} '{}' holds a NUL byte", text.escape_default())))
        };
        let names = table.regions.iter().map(|r| c(&r.name, "region name")).collect::<Result<_>>()?;
        let levels = table.regions.iter().map(|r| c(&r.level, "level name")).collect::<Result<_>>()?;
        let reasons = table.spills.iter().map(|s| c(&s.reason, "spill reason")).collect::<Result<_>>()?;
        let attributes = table
            .regions
            .iter()
            .map(|r| r.attributes.iter().map(|(k, v)| Ok((c(k, "attribute key")?, c(v, "attribute value")?))).collect())
            .collect::<Result<_>>()?;
        Ok(nnm_region_table { table, names, levels, reasons, attributes })
    }

    /// Region `index`, or INVALID_ARGUMENT naming the count.
    fn region(&self, index: usize) -> Result<&RegionInstance> {
        item(&self.table.regions, index, "region index", "regions")
    }
}

/// `items[index]`, or INVALID_ARGUMENT: "<what> 7 is out of range (the
/// table has 5 <plural>)".
fn item<'a, T>(items: &'a [T], index: usize, what: &str, plural: &str) -> Result<&'a T> {
    items.get(index).ok_or_else(|| {
        Error::invalid(format!("{what} {index} is out of range (the table has {} {plural})", items.len()))
    })
}

/// Borrows the table behind a handle (NULL, liveness and type checked).
///
/// # Safety
/// `table` must be NULL, a freed table, or a live table.
unsafe fn table_ref<'a>(table: *const nnm_region_table) -> Result<&'a nnm_region_table> {
    // SAFETY: the caller's promise is `value_ref`'s; tables are never
    // mutated after they are built.
    unsafe { value_ref(table, "table") }
}

/// Builds the region table of `model` under `config` and writes it to
/// `out_table`. Free it with `nnm_region_table_free`. Each region is
/// planned once, by its description's algorithm.
///
/// Errors (building nothing):
/// - NULL_ARGUMENT: an argument is NULL.
/// - INVALID_ARGUMENT: a tensor no rule matches ("'x' (activation,
///   function main) matches no region; tried: constant-weights: kind =
///   constant; ..."); fixed bases that overlap in one level ("regions 'x'
///   [0x0, 0x100) and 'z' [0xc0, 0x100) overlap in memory level 'sram'"); a
///   spill target that is per-tensor, or spill
///   targets that form a cycle; a freed model or configuration.
/// - NOT_FOUND: a spill target that is not a description.
/// - DOES_NOT_FIT: a region over its capacity without a spill region, or
///   whose spill chain runs out ("region 'sram' needs X B (peak P B +
///   reserved R B), capacity C B: M B missing").
/// - OVERFLOW: the functions' steps, one after another, overflow 64-bit
///   steps; a tensor's size rounded up to its region's alignment overflows
///   64 bits (the message names the tensor: "region 'activations': tensor
///   'x' (activation, function main): size ... overflows 64 bits"); a
///   region's size or its end address overflows 64 bits.
/// - INVALID_ARGUMENT also: a fixed base address that is not a multiple of
///   the largest alignment of its region and tensors; two regions that
///   would share a name (a per-tensor `<description>/<function>/<tensor>`
///   equal to another region's name); a region that would hold a constant
///   and a per-run tensor (any other kind), by its rule or by a spill,
///   without NNM_REGION_MIX_CONSTANTS ("region 'ddr' would hold both
///   constant 'w0' (constant, spilled from 'k') and per-run 'in' (input):
///   ...").
///
/// # Safety
/// `config` and `model` must be NULL or live handles from
/// `nnm_region_config_new*` and `nnm_region_model_new` (freed ones are
/// refused unread) that no call changes meanwhile. `out_table` must be NULL
/// or valid for writing one pointer.
#[no_mangle]
pub unsafe extern "C" fn nnm_region_table_build(
    config: *const nnm_region_config,
    model: *const nnm_region_model,
    out_table: *mut *mut nnm_region_table,
) -> Status {
    guard(|| {
        // SAFETY: the caller promises both handles are NULL, freed (refused
        // unread) or live and unchanged, and `out_table` NULL or writable.
        let (c, m, out) =
            unsafe { (value_ref(config, "config")?, value_ref(model, "model")?, out_param(out_table, "out_table")?) };
        let table = nnm_region_table::new(RegionTable::build(&m.model, &c.config)?)?;
        out.write(into_handle(table));
        Ok(())
    })
}

/// Frees a table and the strings it handed out. NULL is a no-op; a double
/// free is detected and reported through `nnm_last_error()`.
///
/// # Safety
/// `table` may be any pointer value: only a live table is freed, others are
/// reported. No other call may use the table meanwhile.
#[no_mangle]
pub unsafe extern "C" fn nnm_region_table_free(table: *mut nnm_region_table) {
    // SAFETY: `free_handle` frees only what the registry holds as a live
    // table; the caller promises nobody else is using it.
    guard_void(|| unsafe { free_handle(table) })
}

/// Writes the number of regions (instances: a per-tensor description gives
/// one per tensor). Regions are indexed 0 to count - 1, by level rank, then
/// level name, then layout order.
///
/// Errors: NULL_ARGUMENT; INVALID_ARGUMENT (not a live table).
///
/// # Safety
/// `table` must be NULL or a table from `nnm_region_table_build` (a freed
/// one is refused unread). `out_count` must be NULL or valid for writing
/// one value.
#[no_mangle]
pub unsafe extern "C" fn nnm_region_table_region_count(
    table: *const nnm_region_table,
    out_count: *mut usize,
) -> Status {
    // SAFETY: the caller's promises are `handle_query`'s.
    unsafe { handle_query(table, "table", out_count, "out_count", |t| Ok(t.table.regions.len())) }
}

/// Writes region `index` into `out_info` (its strings are the table's,
/// valid until `nnm_region_table_free`).
///
/// Errors: NULL_ARGUMENT; INVALID_ARGUMENT (not a live table; "region index
/// 7 is out of range (the table has 5 regions)").
///
/// # Safety
/// `table` must be NULL or a table from `nnm_region_table_build` (a freed
/// one is refused unread). `out_info` must be NULL or valid for writing one
/// `nnm_region_info`.
#[no_mangle]
pub unsafe extern "C" fn nnm_region_table_region(
    table: *const nnm_region_table,
    index: usize,
    out_info: *mut nnm_region_info,
) -> Status {
    // SAFETY: the caller's promises are `handle_query`'s.
    unsafe {
        handle_query(table, "table", out_info, "out_info", |t| {
            let r = t.region(index)?;
            Ok(nnm_region_info {
                name: t.names[index].as_ptr(),
                level: t.levels[index].as_ptr(),
                description_id: r.description_id,
                level_rank: r.level_rank,
                base_address: r.base_address,
                size_bytes: r.size,
                peak_bytes: r.peak,
                lower_bound_bytes: r.lower_bound,
                algorithm: r.algorithm as u32,
                proven_optimal: u8::from(r.proven_optimal),
                fixed_base: u8::from(r.fixed_base),
                tensor_count: r.tensors.len(),
                attribute_count: r.attributes.len(),
            })
        })
    }
}

/// Writes attribute `attribute` (0 to the region's `attribute_count` - 1,
/// in the order the description gave them) of region `index`: its key to
/// `out_key` and its value to `out_value`, NUL-terminated strings owned by
/// the table (valid until `nnm_region_table_free`; the configuration may be
/// gone).
///
/// Errors: NULL_ARGUMENT; INVALID_ARGUMENT (not a live table; "region index
/// 7 is out of range (the table has 5 regions)"; "attribute index 2 is out
/// of range (region 'fc-weights' has 2 attributes)").
///
/// # Safety
/// `table` must be NULL or a table from `nnm_region_table_build` (a freed
/// one is refused unread). `out_key` and `out_value` must be NULL or valid
/// for writing one pointer each.
#[no_mangle]
pub unsafe extern "C" fn nnm_region_table_region_attribute(
    table: *const nnm_region_table,
    index: usize,
    attribute: usize,
    out_key: *mut *const c_char,
    out_value: *mut *const c_char,
) -> Status {
    guard(|| {
        // SAFETY: the caller promises `table` is NULL, freed (refused
        // unread) or live, and both out-pointers NULL or writable.
        let (t, key, value) =
            unsafe { (table_ref(table)?, out_param(out_key, "out_key")?, out_param(out_value, "out_value")?) };
        let region = t.region(index)?;
        let (k, v) = t.attributes[index].get(attribute).ok_or_else(|| {
            Error::invalid(format!(
                "attribute index {attribute} is out of range (region '{}' has {} attributes)",
                region.name,
                region.attributes.len()
            ))
        })?;
        key.write(k.as_ptr());
        value.write(v.as_ptr());
        Ok(())
    })
}

/// Writes the value of attribute `key` of region `index` to `out_value`, a
/// NUL-terminated string owned by the table (valid until
/// `nnm_region_table_free`; the configuration may be gone).
///
/// Errors: NULL_ARGUMENT; INVALID_ARGUMENT (not a live table, index out of
/// range, `key` not UTF-8); NOT_FOUND ("region 'fc-weights' has no
/// attribute 'k' (attributes: bank, dma)").
///
/// # Safety
/// `table` must be NULL or a table from `nnm_region_table_build` (a freed
/// one is refused unread). `key` must be NULL or a NUL-terminated string;
/// `out_value` must be NULL or valid for writing one pointer.
#[no_mangle]
pub unsafe extern "C" fn nnm_region_table_find_attribute(
    table: *const nnm_region_table,
    index: usize,
    key: *const c_char,
    out_value: *mut *const c_char,
) -> Status {
    // SAFETY: the caller's promises are `handle_query`'s, and `key` is NULL
    // or NUL-terminated.
    unsafe {
        handle_query(table, "table", out_value, "out_value", |t| {
            let region = t.region(index)?;
            let key = read_str(key, "key")?;
            match region.attributes.iter().position(|(k, _)| k == key) {
                Some(at) => Ok(t.attributes[index][at].1.as_ptr()),
                None => {
                    let keys: Vec<&str> = region.attributes.iter().map(|(k, _)| k.as_str()).collect();
                    Err(Error::new(
                        Status::NotFound,
                        format!("region '{}' has no attribute '{key}' (attributes: {})", region.name, keys.join(", ")),
                    ))
                }
            }
        })
    }
}

/// Writes the ids of the tensors of region `index` (views included, in
/// model order) into `ids` (`capacity` entries) and their number to
/// `out_count`. With `ids` NULL and `capacity` 0 it writes only the number.
///
/// Errors: NULL_ARGUMENT (`ids` NULL with `capacity` > 0 too);
/// INVALID_ARGUMENT (not a live table, index out of range);
/// BUFFER_TOO_SMALL (nothing is written; "region 'activations' has 12
/// tensors, ids has room for 4"); OVERFLOW (a `capacity` whose array
/// exceeds the address space).
///
/// # Safety
/// `table` must be NULL or a table from `nnm_region_table_build` (a freed
/// one is refused unread). `ids` must be NULL or valid for writing
/// `capacity` values; `out_count` must be NULL or valid for writing one
/// value.
#[no_mangle]
pub unsafe extern "C" fn nnm_region_table_region_tensors(
    table: *const nnm_region_table,
    index: usize,
    ids: *mut usize,
    capacity: usize,
    out_count: *mut usize,
) -> Status {
    guard(|| {
        // SAFETY: the caller promises `table` is NULL, freed (refused
        // unread) or live, and `out_count` NULL or writable.
        let (t, out) = unsafe { (table_ref(table)?, out_param(out_count, "out_count")?) };
        let region = t.region(index)?;
        let count = region.tensors.len();
        if ids.is_null() && capacity == 0 {
            out.write(count);
            return Ok(());
        }
        // SAFETY: the caller promises `ids` is NULL (refused) or writable
        // for `capacity` values.
        let ids = unsafe { slice_out(ids, capacity, "ids") }?;
        if capacity < count {
            return Err(Error::new(
                Status::BufferTooSmall,
                format!("region '{}' has {count} tensors, ids has room for {capacity}", region.name),
            ));
        }
        ids[..count].copy_from_slice(&region.tensors);
        out.write(count);
        Ok(())
    })
}

/// Writes the index of the region named `name` to `out_index`.
///
/// Errors: NULL_ARGUMENT; INVALID_ARGUMENT (not a live table, not UTF-8);
/// NOT_FOUND ("no region named 'x' in the table (regions: a, b, ...)").
///
/// # Safety
/// `table` must be NULL or a table from `nnm_region_table_build` (a freed
/// one is refused unread). `name` must be NULL or a NUL-terminated string;
/// `out_index` must be NULL or valid for writing one value.
#[no_mangle]
pub unsafe extern "C" fn nnm_region_table_find_region(
    table: *const nnm_region_table,
    name: *const c_char,
    out_index: *mut usize,
) -> Status {
    // SAFETY: the caller's promises are `handle_query`'s, and `name` is NULL
    // or NUL-terminated.
    unsafe {
        handle_query(table, "table", out_index, "out_index", |t| {
            let name = read_str(name, "name")?;
            t.table.find_region(name).ok_or_else(|| {
                const SHOWN: usize = 8;
                let regions = &t.table.regions;
                let mut known: Vec<&str> = regions.iter().take(SHOWN).map(|r| r.name.as_str()).collect();
                let more = format!("{} more", regions.len().saturating_sub(SHOWN));
                if regions.len() > SHOWN {
                    known.push(&more);
                }
                Error::new(
                    Status::NotFound,
                    format!("no region named '{name}' in the table (regions: {})", known.join(", ")),
                )
            })
        })
    }
}

/// Writes the number of tensors (the model's, views included): tensor ids
/// run from 0 to count - 1.
///
/// Errors: NULL_ARGUMENT; INVALID_ARGUMENT (not a live table).
///
/// # Safety
/// `table` must be NULL or a table from `nnm_region_table_build` (a freed
/// one is refused unread). `out_count` must be NULL or valid for writing
/// one value.
#[no_mangle]
pub unsafe extern "C" fn nnm_region_table_tensor_count(
    table: *const nnm_region_table,
    out_count: *mut usize,
) -> Status {
    // SAFETY: the caller's promises are `handle_query`'s.
    unsafe { handle_query(table, "table", out_count, "out_count", |t| Ok(t.table.placements.len())) }
}

/// Writes where tensor `tensor_id` (its id in the model) went.
///
/// Errors: NULL_ARGUMENT; INVALID_ARGUMENT (not a live table; "tensor id 9
/// is out of range (the table has 5 tensors)").
///
/// # Safety
/// `table` must be NULL or a table from `nnm_region_table_build` (a freed
/// one is refused unread). `out_placement` must be NULL or valid for
/// writing one `nnm_tensor_placement`.
#[no_mangle]
pub unsafe extern "C" fn nnm_region_table_placement(
    table: *const nnm_region_table,
    tensor_id: usize,
    out_placement: *mut nnm_tensor_placement,
) -> Status {
    // SAFETY: the caller's promises are `handle_query`'s.
    unsafe {
        handle_query(table, "table", out_placement, "out_placement", |t| {
            let p = item(&t.table.placements, tensor_id, "tensor id", "tensors")?;
            Ok(nnm_tensor_placement {
                region: p.region,
                offset: p.offset,
                address: p.address,
                size_bytes: p.size,
                spilled: u8::from(p.spilled),
            })
        })
    }
}

/// Writes the number of tensors moved out of the region their rule chose
/// (one spill record each, however many spill regions a tensor passed
/// through).
///
/// Errors: NULL_ARGUMENT; INVALID_ARGUMENT (not a live table).
///
/// # Safety
/// `table` must be NULL or a table from `nnm_region_table_build` (a freed
/// one is refused unread). `out_count` must be NULL or valid for writing
/// one value.
#[no_mangle]
pub unsafe extern "C" fn nnm_region_table_spill_count(table: *const nnm_region_table, out_count: *mut usize) -> Status {
    // SAFETY: the caller's promises are `handle_query`'s.
    unsafe { handle_query(table, "table", out_count, "out_count", |t| Ok(t.table.spills.len())) }
}

/// Writes spill `index` (in the order the tensors first moved) into
/// `out_spill` (its reason is the table's, valid until
/// `nnm_region_table_free`).
///
/// Errors: NULL_ARGUMENT; INVALID_ARGUMENT (not a live table; "spill index
/// 2 is out of range (the table has 1 spills)").
///
/// # Safety
/// `table` must be NULL or a table from `nnm_region_table_build` (a freed
/// one is refused unread). `out_spill` must be NULL or valid for writing
/// one `nnm_region_spill`.
#[no_mangle]
pub unsafe extern "C" fn nnm_region_table_spill(
    table: *const nnm_region_table,
    index: usize,
    out_spill: *mut nnm_region_spill,
) -> Status {
    // SAFETY: the caller's promises are `handle_query`'s.
    unsafe {
        handle_query(table, "table", out_spill, "out_spill", |t| {
            let s = item(&t.table.spills, index, "spill index", "spills")?;
            Ok(nnm_region_spill {
                tensor: s.tensor,
                from: s.from,
                to: s.to,
                via_count: s.via.len(),
                reason: t.reasons[index].as_ptr(),
            })
        })
    }
}

/// Writes the indices of the spill regions spill `index` passed through
/// between its `from` and its `to`, in order, into `regions` (`capacity`
/// entries) and their number to `out_count`. With `regions` NULL and
/// `capacity` 0 it writes only the number.
///
/// Errors: NULL_ARGUMENT (`regions` NULL with `capacity` > 0 too);
/// INVALID_ARGUMENT (not a live table, index out of range);
/// BUFFER_TOO_SMALL (nothing is written; "spill 0 passed through 2
/// regions, regions has room for 1"); OVERFLOW (a `capacity` whose array
/// exceeds the address space).
///
/// # Safety
/// `table` must be NULL or a table from `nnm_region_table_build` (a freed
/// one is refused unread). `regions` must be NULL or valid for writing
/// `capacity` values; `out_count` must be NULL or valid for writing one
/// value.
#[no_mangle]
pub unsafe extern "C" fn nnm_region_table_spill_via(
    table: *const nnm_region_table,
    index: usize,
    regions: *mut usize,
    capacity: usize,
    out_count: *mut usize,
) -> Status {
    guard(|| {
        // SAFETY: the caller promises `table` is NULL, freed (refused
        // unread) or live, and `out_count` NULL or writable.
        let (t, out) = unsafe { (table_ref(table)?, out_param(out_count, "out_count")?) };
        let via = &item(&t.table.spills, index, "spill index", "spills")?.via;
        if regions.is_null() && capacity == 0 {
            out.write(via.len());
            return Ok(());
        }
        // SAFETY: the caller promises `regions` is NULL (refused) or
        // writable for `capacity` values.
        let regions = unsafe { slice_out(regions, capacity, "regions") }?;
        if capacity < via.len() {
            return Err(Error::new(
                Status::BufferTooSmall,
                format!("spill {index} passed through {} regions, regions has room for {capacity}", via.len()),
            ));
        }
        regions[..via.len()].copy_from_slice(via);
        out.write(via.len());
        Ok(())
    })
}

/// Writes the report (`format`: an `nnm_report_format`; the JSON keys are
/// levels, regions, tensors and spills), NUL-terminated, into `buf` (`len`
/// bytes) and the bytes written (NUL included) to `out_len`. With `buf`
/// NULL and `len` 0 it writes only the size needed.
///
/// Errors: NULL_ARGUMENT; INVALID_ARGUMENT (not a live table; format);
/// BUFFER_TOO_SMALL (nothing is written; "report needs 812 B (NUL
/// included), buffer has 64 B").
///
/// # Safety
/// `table` must be NULL or a table from `nnm_region_table_build` (a freed
/// one is refused unread). `buf` must be NULL or valid for writing `len`
/// bytes; `out_len` must be NULL or valid for writing one value.
#[no_mangle]
pub unsafe extern "C" fn nnm_region_table_report(
    table: *const nnm_region_table,
    format: u32,
    buf: *mut c_char,
    len: usize,
    out_len: *mut usize,
) -> Status {
    guard(|| {
        // SAFETY: the caller promises `table` is NULL, freed (refused
        // unread) or live.
        let t = unsafe { table_ref(table) }?;
        let text = t.table.report(ReportFormat::from_value(format)?);
        // SAFETY: the caller promises `buf` and `out_len` as `copy_text`
        // needs.
        unsafe { copy_text(&text, buf, len, out_len, "report") }
    })
}

/// Writes the table as a standalone SVG picture, NUL-terminated, into `buf`
/// (`len` bytes) and the bytes written (NUL included) to `out_len`. With
/// `buf` NULL and `len` 0 it writes only the size needed. The picture: one
/// lane per memory level, regions as bands along its addresses (the
/// fixed-base ones marked), each tensor a box over its bytes (across) and
/// its live steps (down), on a 1600-pixel-wide canvas whose height depends
/// on the level count only. Beyond 2000 tensors in a level, its 2000
/// largest boxes are drawn and the others merged into 4-pixel cells, so the
/// picture stays bounded (about 0.2 MB at 60,000 tensors).
///
/// Errors: NULL_ARGUMENT; INVALID_ARGUMENT (not a live table);
/// BUFFER_TOO_SMALL (nothing is written; "picture needs 5120 B (NUL
/// included), buffer has 64 B").
///
/// # Safety
/// As `nnm_region_table_report`.
#[no_mangle]
pub unsafe extern "C" fn nnm_region_table_svg(
    table: *const nnm_region_table,
    buf: *mut c_char,
    len: usize,
    out_len: *mut usize,
) -> Status {
    guard(|| {
        // SAFETY: the caller promises `table` is NULL, freed (refused
        // unread) or live.
        let t = unsafe { table_ref(table) }?;
        // SAFETY: the caller promises `buf` and `out_len` as `copy_text`
        // needs.
        unsafe { copy_text(&t.table.svg(), buf, len, out_len, "picture") }
    })
}
