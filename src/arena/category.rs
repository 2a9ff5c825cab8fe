//! Allocation categories and their statistics: what the recording API
//! reports per kind of allocation.
//!
//! The first categories are predefined: TFLite Micro's seven
//! (`RecordingMicroAllocator` names them the same way, so reports read
//! alike), plus nnmem's own for uncategorised data, committed plans and temp
//! scratch. Users register further named categories; ids are dense, so a
//! statistic update is one bounds-checked index.

use crate::names::c_enum;
use crate::status::{Error, Result, Status};

/// The predefined categories, in id order (`nnm_arena_category`).
// repr(C): cbindgen gives a sized repr a `typedef uint32_t` that clashes
// with the enum tag in C++ (-Wc++-compat); no C signature takes this type.
#[repr(C)]
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub enum Category {
    /// Anything not covered below.
    Other = 0,
    /// TFLite Micro: `TfLiteEvalTensor` structs.
    EvalTensorData = 1,
    /// TFLite Micro: persistent `TfLiteTensor` structs.
    PersistentTensorData = 2,
    /// TFLite Micro: quantization parameters of persistent tensors.
    PersistentQuantizationData = 3,
    /// TFLite Micro: buffers from `AllocatePersistentBuffer`.
    PersistentBufferData = 4,
    /// TFLite Micro: variable tensors' buffers.
    VariableBufferData = 5,
    /// TFLite Micro: the node and registration array.
    NodeAndRegistration = 6,
    /// TFLite Micro: operators' runtime data (`OpData`).
    OpData = 7,
    /// Buffers placed in the head by a committed plan.
    PlannedTensorData = 8,
    /// Temp scratch allocations.
    TempScratch = 9,
}

c_enum! {
    Category, "arena category",
    value_error(value) => format!("arena category {value} is not an nnm_arena_category (0..={})", Category::ALL.len() - 1),
    {
        Other = "Other data",
        EvalTensorData = "TfLiteEvalTensor data",
        PersistentTensorData = "Persistent TfLiteTensor data",
        PersistentQuantizationData = "Persistent TfLiteTensor quantization data",
        PersistentBufferData = "Persistent buffer data",
        VariableBufferData = "TfLiteTensor variable buffer data",
        NodeAndRegistration = "NodeAndRegistration struct",
        OpData = "Operator runtime data",
        PlannedTensorData = "Planned tensor data",
        TempScratch = "Temp scratch data",
    }
}

impl Category {
    /// Its id.
    pub const fn id(self) -> u32 {
        self as u32
    }
}

/// Longest category name accepted, in bytes.
pub const MAX_CATEGORY_NAME: usize = 64;

/// What the arena recorded for one category.
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq)]
pub struct CategoryStats {
    /// Bytes asked for.
    pub requested: u64,
    /// Bytes taken, alignment padding and guard canaries included.
    pub used: u64,
    /// Allocations made.
    pub count: u64,
}

/// The predefined categories' count.
const PREDEFINED: usize = Category::ALL.len();

/// The categories of one arena: names and statistics, indexed by id. The
/// embedded build has the predefined ones only (no heap for more names).
#[derive(Clone, Debug)]
pub struct Categories {
    #[cfg(feature = "std")]
    names: Vec<String>,
    #[cfg(feature = "std")]
    stats: Vec<CategoryStats>,
    /// Empty in an embedded build without recording: nothing is counted.
    #[cfg(not(feature = "std"))]
    stats: [CategoryStats; STORED],
}

/// The categories whose statistics the embedded build stores.
#[cfg(not(feature = "std"))]
const STORED: usize = if super::arena::RECORDING_BUILT { PREDEFINED } else { 0 };

impl Default for Categories {
    fn default() -> Self {
        Categories::new()
    }
}

impl Categories {
    /// The predefined categories, all at zero.
    pub fn new() -> Self {
        Categories {
            #[cfg(feature = "std")]
            names: Category::ALL.iter().map(|c| c.name().to_string()).collect(),
            #[cfg(feature = "std")]
            stats: vec![CategoryStats::default(); PREDEFINED],
            #[cfg(not(feature = "std"))]
            stats: [CategoryStats { requested: 0, used: 0, count: 0 }; STORED],
        }
    }

    /// Registers a named category and returns its id. Names are unique,
    /// non-empty, at most [`MAX_CATEGORY_NAME`] bytes and free of control
    /// characters (they appear in the text and JSON reports).
    #[cfg(feature = "std")]
    pub fn register(&mut self, name: &str) -> Result<u32> {
        if name.is_empty() {
            return Err(Error::invalid("category name is empty"));
        }
        if name.len() > MAX_CATEGORY_NAME {
            return Err(Error::invalid(format!(
                "category name is {} bytes long, the limit is {MAX_CATEGORY_NAME}",
                name.len()
            )));
        }
        if name.chars().any(char::is_control) {
            return Err(Error::invalid(format!("category name {name:?} contains a control character")));
        }
        if let Some(id) = self.names.iter().position(|n| n == name) {
            return Err(Error::new(Status::AlreadyExists, format!("category {name:?} already exists with id {id}")));
        }
        let id = u32::try_from(self.names.len()).map_err(|_| Error::overflow("too many categories"))?;
        self.names.push(name.to_string());
        self.stats.push(CategoryStats::default());
        Ok(id)
    }

    /// Fails unless `id` names a category.
    #[inline]
    pub fn check(&self, id: u32) -> Result<()> {
        if (id as usize) < self.len() {
            Ok(())
        } else {
            Err(self.unknown(id))
        }
    }

    #[cfg_attr(not(nnmem_stripped), cold, inline(never))]
    #[cfg_attr(nnmem_stripped, inline(always))]
    fn unknown(&self, id: u32) -> Error {
        let last = self.len() - 1;
        Error::with(Status::InvalidArgument, |t| {
            t.put("unknown category ");
            t.number(id as usize);
            t.put(" (known: 0 to ");
            t.number(last);
            t.put(")");
        })
    }

    /// Adds one allocation to category `id` (already checked).
    #[inline]
    pub fn record(&mut self, id: u32, requested: usize, used: usize) {
        self.record_many(id, 1, requested as u64, used as u64);
    }

    /// Adds `count` allocations at once (a committed plan). Out of line:
    /// every allocation call shares it, and it stays off their path while
    /// recording is off.
    #[inline(never)]
    pub fn record_many(&mut self, id: u32, count: u64, requested: u64, used: u64) {
        if let Some(s) = self.stats.get_mut(id as usize) {
            // Saturating: a dry run may account more than 2^64 B in total.
            s.requested = s.requested.saturating_add(requested);
            s.used = s.used.saturating_add(used);
            s.count = s.count.saturating_add(count);
        }
    }

    /// The number of categories, predefined ones included.
    pub fn len(&self) -> usize {
        #[cfg(feature = "std")]
        return self.stats.len();
        #[cfg(not(feature = "std"))]
        return PREDEFINED;
    }

    /// Always false: the predefined categories exist from the start.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The name of category `id`.
    pub fn name(&self, id: u32) -> Result<&str> {
        self.check(id)?;
        #[cfg(feature = "std")]
        return Ok(self.names.get(id as usize).map_or("", |n| n.as_str()));
        #[cfg(not(feature = "std"))]
        return Ok(Category::ALL.get(id as usize).map_or("", |c| c.name()));
    }

    /// The statistics of category `id`.
    pub fn stats(&self, id: u32) -> Result<CategoryStats> {
        self.check(id)?;
        Ok(self.stats.get(id as usize).copied().unwrap_or_default())
    }

    /// Every category with its id, name and statistics, in id order.
    pub fn iter(&self) -> impl Iterator<Item = (u32, &str, CategoryStats)> {
        (0..self.len() as u32).map(|id| (id, self.name(id).unwrap_or(""), self.stats(id).unwrap_or_default()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn predefined_ids_are_dense_and_named() {
        let c = Categories::new();
        for (i, p) in Category::ALL.iter().enumerate() {
            assert_eq!(p.id() as usize, i);
            assert_eq!(c.name(p.id()).unwrap(), p.name());
        }
    }

    #[test]
    fn register_checks_names() {
        let mut c = Categories::new();
        let id = c.register("conv weights cache").unwrap();
        assert_eq!(id as usize, Category::ALL.len());
        assert_eq!(c.register("conv weights cache").unwrap_err().status(), Status::AlreadyExists);
        assert_eq!(c.register("").unwrap_err().status(), Status::InvalidArgument);
        assert_eq!(c.register("a\nb").unwrap_err().status(), Status::InvalidArgument);
        let long = "x".repeat(MAX_CATEGORY_NAME + 1);
        let e = c.register(&long).unwrap_err();
        assert!(e.message().contains("65 bytes long, the limit is 64"), "{}", e.message());
        assert!(c.register(&long[..MAX_CATEGORY_NAME]).is_ok());
    }

    #[test]
    fn record_accumulates_and_unknown_ids_fail() {
        let mut c = Categories::new();
        c.check(Category::OpData.id()).unwrap();
        c.record(Category::OpData.id(), 10, 16);
        c.record(Category::OpData.id(), 3, 16);
        assert_eq!(c.stats(Category::OpData.id()).unwrap(), CategoryStats { requested: 13, used: 32, count: 2 });
        let e = c.check(99).unwrap_err();
        assert_eq!(e.message(), "unknown category 99 (known: 0 to 9)");
    }
}
