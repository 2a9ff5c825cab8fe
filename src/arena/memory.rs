//! The arena's view of the bytes it manages.
//!
//! The arena core does address arithmetic on plain integers and never holds
//! a pointer. The only time it touches the bytes is in guard mode (writing
//! and checking canaries, poisoning released temp memory); it does so
//! through [`Memory`], which the C layer implements over the caller's
//! buffers and which a dry run implements as no memory at all.

/// Byte access to the arena's buffers, by address.
///
/// Every address range passed in lies inside the buffers the arena was
/// created over (the arena checks that before calling).
pub trait Memory {
    /// Whether there are bytes behind the addresses. A dry run has none:
    /// guard writes are skipped and checks find nothing.
    fn is_backed(&self) -> bool;
    /// Writes `bytes` at `addr`.
    fn write(&mut self, addr: usize, bytes: &[u8]);
    /// Sets `len` bytes at `addr` to `byte`.
    fn fill(&mut self, addr: usize, len: usize, byte: u8);
    /// Reads `out.len()` bytes at `addr`.
    fn read(&self, addr: usize, out: &mut [u8]);
}

/// No bytes: the memory of a dry run.
#[derive(Copy, Clone, Debug, Default)]
pub struct NoMemory;

impl Memory for NoMemory {
    fn is_backed(&self) -> bool {
        false
    }
    fn write(&mut self, _: usize, _: &[u8]) {}
    fn fill(&mut self, _: usize, _: usize, _: u8) {}
    fn read(&self, _: usize, _: &mut [u8]) {}
}

/// Bytes in a `Vec`, at a chosen base address: the arena's own tests use
/// it, and a Rust program can use it to run an arena over owned memory by
/// offset.
#[cfg(feature = "std")]
#[derive(Clone, Debug)]
pub struct VecMemory {
    /// The address of `bytes[0]`.
    pub base: usize,
    /// The bytes.
    pub bytes: Vec<u8>,
}

#[cfg(feature = "std")]
impl VecMemory {
    /// `len` zero bytes at address `base`.
    pub fn new(base: usize, len: usize) -> Self {
        VecMemory { base, bytes: vec![0; len] }
    }

    fn range(&self, addr: usize, len: usize) -> std::ops::Range<usize> {
        let start = addr - self.base;
        start..start + len
    }
}

#[cfg(feature = "std")]
impl Memory for VecMemory {
    fn is_backed(&self) -> bool {
        true
    }
    fn write(&mut self, addr: usize, bytes: &[u8]) {
        let r = self.range(addr, bytes.len());
        self.bytes[r].copy_from_slice(bytes);
    }
    fn fill(&mut self, addr: usize, len: usize, byte: u8) {
        let r = self.range(addr, len);
        self.bytes[r].fill(byte);
    }
    fn read(&self, addr: usize, out: &mut [u8]) {
        let r = self.range(addr, out.len());
        out.copy_from_slice(&self.bytes[r]);
    }
}
