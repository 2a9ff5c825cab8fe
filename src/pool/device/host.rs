//! The host allocator: aligned system allocation (`posix_memalign` and
//! `free`), the default device of every pool, owned arena and net.

use super::{DeviceAllocator, DevicePtr, Stream};
use crate::status::{Error, Result, Status};

/// The smallest alignment asked of the system: `posix_memalign` wants a
/// multiple of `sizeof(void *)`, and 16 matches what `malloc` gives.
const MIN_ALIGNMENT: u64 = 16;

/// Host RAM through the C library's allocator. Stateless: every instance is
/// the same allocator, and memory one hands out another can free.
#[derive(Copy, Clone, Debug, Default)]
pub struct HostAllocator;

impl DeviceAllocator for HostAllocator {
    fn name(&self) -> &str {
        "host"
    }

    fn alloc(&self, size: u64, alignment: u64, _stream: Stream) -> Result<DevicePtr> {
        let oom =
            || Error::new(Status::OutOfMemory, format!("host: cannot allocate {size} B (alignment {alignment} B)"));
        if size == 0 || !alignment.is_power_of_two() {
            return Err(Error::invalid(format!(
                "host: size {size} B with alignment {alignment} B (size > 0 and a power-of-two alignment needed)"
            )));
        }
        let size = usize::try_from(size).map_err(|_| oom())?;
        let alignment = usize::try_from(alignment.max(MIN_ALIGNMENT)).map_err(|_| oom())?;
        let mut out: *mut libc::c_void = std::ptr::null_mut();
        // SAFETY: `out` is a valid place for the result; `alignment` is a
        // power of two and a multiple of sizeof(void *) (at least 16).
        let rc = unsafe { libc::posix_memalign(&mut out, alignment, size) };
        if rc != 0 {
            return Err(oom());
        }
        DevicePtr::new(out.cast()).ok_or_else(oom)
    }

    fn free(&self, ptr: DevicePtr, _size: u64, _stream: Stream) {
        // SAFETY: `ptr` came from `posix_memalign` in `alloc` (the trait's
        // contract: only pointers this allocator handed out, each once).
        unsafe { libc::free(ptr.as_ptr().cast()) }
    }

    fn host_accessible(&self) -> bool {
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn allocates_aligned_memory_and_frees_it() {
        let host = HostAllocator;
        for &(size, alignment) in &[(11u64, 128u64), (19, 512), (2019, 1024), (1_024_124, 4096), (1, 1)] {
            let p = host.alloc(size, alignment, Stream::DEFAULT).unwrap();
            assert_eq!(p.addr() % alignment as usize, 0, "{size} B at alignment {alignment}");
            host.free(p, size, Stream::DEFAULT);
        }
    }

    #[test]
    fn refuses_bad_requests_and_impossible_sizes() {
        let host = HostAllocator;
        assert_eq!(host.alloc(0, 8, Stream::DEFAULT).unwrap_err().status(), Status::InvalidArgument);
        assert_eq!(host.alloc(8, 3, Stream::DEFAULT).unwrap_err().status(), Status::InvalidArgument);
        let e = host.alloc(u64::MAX / 2, 8, Stream::DEFAULT).unwrap_err();
        assert_eq!(e.status(), Status::OutOfMemory);
        assert!(e.message().contains(&format!("{} B", u64::MAX / 2)), "{}", e.message());
    }
}
