//! The PyTorch pair from Rust, on a CUDA device whose allocator is the host
//! one (registered, so that no GPU is needed); c-tests/torch_alloc_test.c
//! calls it as PyTorch does, through dlopen, against stand-in CUDA libraries.

use std::ffi::{CStr, OsString};
use std::os::unix::ffi::OsStringExt;
use std::ptr::null_mut;

use super::*;
use crate::ffi::device::{nnm_device_allocator_free, nnm_device_allocator_host};
use crate::ffi::nnm_last_error;
use crate::ffi::pool::registry::nnm_device_register_allocator;

fn last_error() -> String {
    // SAFETY: nnm_last_error returns a NUL-terminated thread-local string.
    unsafe { CStr::from_ptr(nnm_last_error()) }.to_str().unwrap().to_string()
}

#[test]
fn the_variable_names_a_strategy_or_says_why_not() {
    assert_eq!(named(Err(VarError::NotPresent)).unwrap(), "caching");
    assert_eq!(named(Ok(String::new())).unwrap(), "caching");
    for name in ["caching", "page-unit", "no-pool", "replay", "page_unit_pool"] {
        assert_eq!(named(Ok(name.to_owned())).unwrap(), name);
    }
    let e = named(Ok("cachng".to_owned())).unwrap_err();
    assert!(e.starts_with("NNMEM_TORCH_STRATEGY=\"cachng\": unknown pool strategy 'cachng' (built in: "), "{e}");
    let e = named(Err(VarError::NotUnicode(OsString::from_vec(vec![0xff])))).unwrap_err();
    assert!(e.contains("is not UTF-8"), "{e}");
    let e = refused("why");
    assert_eq!(e.status(), Status::NotFound);
    assert!(e.message().starts_with("why; nnmem refuses every allocation"), "{}", e.message());
}

/// cuda:91 gets the host allocator; the pair allocates, frees, refuses bad
/// input with a message, and never crashes on a pointer it did not hand out.
#[test]
fn the_pair_serves_a_registered_cuda_device_and_refuses_bad_input() {
    const DEVICE: c_int = 91;
    let mut host = null_mut();
    // SAFETY: writable out-parameter; the handle is freed below, once.
    unsafe {
        assert_eq!(nnm_device_allocator_host(&mut host), Status::Ok);
        assert_eq!(nnm_device_register_allocator(DeviceType::Cuda as u32, DEVICE as u32, host), Status::Ok);
        nnm_device_allocator_free(host);
    }
    assert_eq!(nnm_torch_init(DEVICE), Status::Ok);
    let pool = registry().get(DeviceKey::new(DeviceType::Cuda, DEVICE as u32)).unwrap();
    assert_eq!(pool.strategy_name(), strategy().unwrap(), "the pair made the pool with the variable's strategy");

    let stream = 0x1000 as *mut c_void;
    // SAFETY: the stream is only compared by the host allocator.
    let blocks: Vec<_> =
        [1isize, 100, 4096, 1 << 20].iter().map(|&n| (unsafe { nnm_torch_alloc(n, DEVICE, stream) }, n)).collect();
    for &(p, n) in &blocks {
        assert!(!p.is_null(), "{}", last_error());
        assert_eq!(p as usize % 256, 0);
        // SAFETY: host memory of n bytes, handed out just now.
        unsafe { std::ptr::write_bytes(p.cast::<u8>(), 0x5a, n as usize) };
    }
    assert_eq!(pool.live_blocks(), 4);
    for &(p, n) in &blocks {
        // SAFETY: handed out above, freed once.
        unsafe { nnm_torch_free(p, n, DEVICE, stream) };
    }
    assert_eq!(pool.live_blocks(), 0);
    assert_eq!(nnm_torch_end_iteration(DEVICE), Status::Ok);

    // SAFETY: bad arguments are refused before anything is read.
    unsafe {
        assert!(nnm_torch_alloc(0, DEVICE, null_mut()).is_null(), "size 0: NULL");
        assert!(nnm_torch_alloc(-1, DEVICE, null_mut()).is_null());
        assert_eq!(last_error(), "PyTorch asked for -1 B: a size is 0 or more");
        assert!(nnm_torch_alloc(8, -2, null_mut()).is_null());
        assert_eq!(last_error(), "CUDA device -2: a device index is 0 or more");
        nnm_torch_free(null_mut(), 0, DEVICE, null_mut());
        nnm_torch_free(0x12345 as *mut c_void, 8, DEVICE, null_mut());
        assert!(last_error().contains("no pool of this device, current or retired, handed it out"), "{}", last_error());
        nnm_torch_free(0x12345 as *mut c_void, 8, -1, null_mut());
        assert_eq!(last_error(), "CUDA device -1: a device index is 0 or more");
    }
    assert_eq!(nnm_torch_init(-1), Status::InvalidArgument);
    assert_eq!(pool.live_blocks(), 0, "nothing changed");
}

/// Where the machine has no CUDA, the pair says what was tried.
#[test]
fn without_cuda_the_pair_names_every_library_tried() {
    if crate::pool::device::cuda::load_cuda().is_ok() {
        return; // CUDA is here: covered by the C tests' stand-ins instead.
    }
    // SAFETY: a plain call; the stream is never read.
    assert!(unsafe { nnm_torch_alloc(64, 0, null_mut()) }.is_null());
    let m = last_error();
    assert!(m.starts_with("no CUDA: the runtime (libcudart) not found (tried libcudart.so, "), "{m}");
    assert!(m.contains("the driver (libcuda) not found (tried libcuda.so.1, libcuda.so: "), "{m}");
    assert_eq!(nnm_torch_init(0), Status::NotFound);
}
