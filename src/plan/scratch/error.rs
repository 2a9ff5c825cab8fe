//! What the scratch planner refuses, with the figures, described through
//! [`crate::message::Text`] so the embedded build needs neither a heap nor
//! `core::fmt` to say it.

use crate::message::Text;
use crate::plan::algorithm::Algorithm;
use crate::status::Status;

/// A refused call of the scratch planner; the call changed nothing.
///
/// A word-sized tag: the figures are words, so the error (and the C
/// boundary's failure around it) is then words without padding, which
/// moves as a few word copies instead of byte by byte.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
#[repr(u32)]
pub enum ScratchError {
    /// The algorithm needs the heap planner.
    NotInScratch {
        /// The algorithm asked for.
        algorithm: Algorithm,
    },
    /// An algorithm value that is no `nnm_algorithm`.
    UnknownAlgorithm {
        /// The value.
        value: u32,
    },
    /// The scratch cannot hold the planner's header.
    ScratchTooSmall {
        /// Bytes given.
        bytes: usize,
        /// Bytes needed at that address.
        needed: usize,
    },
    /// The scratch holds no more buffers.
    Full {
        /// Buffers it holds.
        capacity: usize,
        /// Bytes it was given.
        bytes: usize,
        /// Bytes it needs, at its address, for one buffer more.
        needed: usize,
    },
    /// The words are not a planner `init` made (never initialised, or
    /// overwritten since).
    NotAPlanner,
    /// A lifetime TFLite Micro's steps cannot state.
    BadLifetime {
        /// First use.
        first_use: i32,
        /// Last use.
        last_use: i32,
    },
    /// An alignment that is not a power of two.
    BadAlignment {
        /// The alignment.
        alignment: u32,
    },
    /// The alignment changes only before buffers are added.
    AlignmentAfterAdd {
        /// Buffers added.
        count: usize,
    },
    /// A fixed offset not a multiple of the alignment (or 2^32 - 1).
    BadOffset {
        /// The offset.
        offset: u32,
        /// The alignment.
        alignment: u32,
    },
    /// A size that passes 2^32 - 1 bytes when rounded up to the alignment.
    SizeOverflow {
        /// The size.
        size: u32,
        /// The alignment.
        alignment: u32,
    },
    /// Sizes plus the highest fixed end pass 2^32 - 1 bytes.
    Overflow {
        /// The index the buffer would have had.
        index: usize,
        /// Its size.
        size: u32,
    },
    /// A plan to adopt with a number of offsets other than the buffers'.
    PlanLength {
        /// Offsets given.
        given: usize,
        /// Buffers added.
        count: usize,
    },
    /// A plan to adopt that moves a fixed buffer.
    FixedMoved {
        /// The buffer.
        index: usize,
        /// Its fixed offset.
        fixed: u32,
        /// The offset the plan gives it.
        given: u32,
    },
    /// No buffer at that index.
    Index {
        /// The index asked for.
        index: usize,
        /// Buffers added.
        count: usize,
    },
}

impl ScratchError {
    /// The status the C API returns for it.
    pub fn status(&self) -> Status {
        match self {
            ScratchError::ScratchTooSmall { .. } | ScratchError::Full { .. } => Status::DoesNotFit,
            ScratchError::Overflow { .. } | ScratchError::SizeOverflow { .. } => Status::Overflow,
            ScratchError::AlignmentAfterAdd { .. } => Status::WrongState,
            _ => Status::InvalidArgument,
        }
    }

    /// Writes what was wrong, with the figures, into `out`.
    pub fn describe(&self, out: &mut impl Text) {
        match *self {
            ScratchError::NotInScratch { algorithm } => {
                out.put("algorithm ");
                out.put(algorithm.name());
                out.put(
                    " needs the heap planner (nnm_planner); the scratch planner runs tflm, linear and size-first-fit",
                );
            }
            ScratchError::UnknownAlgorithm { value } => {
                out.put("unknown algorithm value ");
                out.number(value as usize);
            }
            ScratchError::ScratchTooSmall { bytes, needed } => {
                out.put("scratch of ");
                out.number(bytes);
                out.put(" B is too small for the planner: it needs ");
                out.number(needed);
                out.put(" B (");
                out.number(needed - bytes.min(needed));
                out.put(" B missing)");
            }
            ScratchError::Full { capacity, bytes, needed } => {
                out.put("scratch of ");
                out.number(bytes);
                out.put(" B holds ");
                out.number(capacity);
                out.put(" buffers; one more needs ");
                out.number(needed);
                out.put(" B (");
                out.number(needed - bytes.min(needed));
                out.put(" B missing)");
            }
            ScratchError::NotAPlanner => {
                out.put("not a scratch planner (never initialised with nnm_scratch_planner_init, or its scratch was overwritten)");
            }
            ScratchError::BadLifetime { first_use, last_use } => {
                out.put("lifetime first_use ");
                out.signed(first_use);
                out.put(", last_use ");
                out.signed(last_use);
                out.put(" is not allowed: last_use must be 0 to 2^31 - 2 and not before first_use, first_use -1 or more (-1, -1: never used)");
            }
            ScratchError::BadAlignment { alignment } => {
                out.put("alignment ");
                out.number(alignment as usize);
                out.put(" is not a power of two");
            }
            ScratchError::AlignmentAfterAdd { count } => {
                out.put("alignment can only change before buffers are added (");
                out.number(count);
                out.put(" added; reset first)");
            }
            ScratchError::BadOffset { offset, alignment } => {
                out.put("fixed offset ");
                out.number(offset as usize);
                out.put(" is not a multiple of the alignment ");
                out.number(alignment as usize);
                out.put(" (or is 2^32 - 1)");
            }
            ScratchError::SizeOverflow { size, alignment } => {
                out.put("size ");
                out.number(size as usize);
                out.put(" B rounded up to the alignment ");
                out.number(alignment as usize);
                out.put(" passes 2^32 - 1 B");
            }
            ScratchError::Overflow { index, size } => {
                out.put("buffer ");
                out.number(index);
                out.put(" of ");
                out.number(size as usize);
                out.put(" B: the sizes of the buffers up to it plus the highest fixed end pass 2^32 - 1 B");
            }
            ScratchError::PlanLength { given, count } => {
                out.put("a plan of ");
                out.number(given);
                out.put(" offsets for ");
                out.number(count);
                out.put(" buffers");
            }
            ScratchError::FixedMoved { index, fixed, given } => {
                out.put("the plan moves fixed buffer ");
                out.number(index);
                out.put(" from ");
                out.number(fixed as usize);
                out.put(" to ");
                out.number(given as usize);
            }
            ScratchError::Index { index, count } => {
                out.put("buffer index ");
                out.number(index);
                out.put(" is out of range (");
                out.number(count);
                out.put(" buffers added)");
            }
        }
    }
}

#[cfg(feature = "std")]
impl From<ScratchError> for crate::status::Error {
    fn from(e: ScratchError) -> Self {
        let mut message = String::new();
        e.describe(&mut message);
        crate::status::Error::new(e.status(), message)
    }
}
