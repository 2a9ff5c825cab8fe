//! `dlopen`/`dlsym` for the CUDA loaders: the first of several library names
//! that loads, and entry points cast to their C types, with `dlerror`'s text
//! in every failure.

use std::ffi::{c_void, CStr};

/// The text `dlerror` holds for the last failed `dl*` call, if any.
pub(super) fn dl_error() -> String {
    // SAFETY: dlerror takes no arguments and returns NULL or a
    // NUL-terminated string valid until the next dl* call on this thread,
    // copied at once.
    let text = unsafe { libc::dlerror() };
    if text.is_null() {
        return "unknown error".to_owned();
    }
    // SAFETY: non-NULL: a NUL-terminated string, as above.
    unsafe { CStr::from_ptr(text) }.to_string_lossy().into_owned()
}

/// A loaded library: never closed (device memory and contexts may outlive
/// every allocator, and CUDA libraries are not safe to unload).
#[derive(Copy, Clone)]
pub(super) struct Library {
    pub handle: *mut c_void,
    pub name: &'static str,
}

/// The first of `names` that loads, or each name's `dlerror` text.
pub(super) fn open_first(names: &[&'static CStr]) -> std::result::Result<Library, Vec<String>> {
    let mut errors = Vec::new();
    for name in names {
        // SAFETY: `name` is NUL-terminated; loading a CUDA library runs only
        // its own initialisers.
        let handle = unsafe { libc::dlopen(name.as_ptr(), libc::RTLD_NOW | libc::RTLD_LOCAL) };
        if handle.is_null() {
            errors.push(dl_error());
            continue;
        }
        return Ok(Library { handle, name: name.to_str().expect("the names are ASCII") });
    }
    Err(errors)
}

impl Library {
    /// The address of `name`, or an error naming the library and the symbol.
    pub fn symbol(&self, name: &CStr) -> std::result::Result<*mut c_void, String> {
        // SAFETY: `handle` is a live dlopen handle (never closed); `name` is
        // NUL-terminated.
        let p = unsafe { libc::dlsym(self.handle, name.as_ptr()) };
        if p.is_null() {
            return Err(format!("{} has no {} ({})", self.name, name.to_string_lossy(), dl_error()));
        }
        Ok(p)
    }
}

/// Casts the address of `$name` in `$lib` to the function type `$t` it has
/// in the CUDA API (`?` on a missing symbol).
macro_rules! entry {
    ($lib:expr, $name:literal, $t:ty) => {{
        let p = $lib.symbol($name)?;
        // SAFETY: CUDA exports `$name` with exactly the C signature `$t`
        // (cuda_runtime_api.h, cuda.h); a function address and a data
        // pointer have the same size on every platform dlopen exists on.
        unsafe { std::mem::transmute::<*mut std::ffi::c_void, $t>(p) }
    }};
}

/// As [`entry!`] for an optional entry point: `None` when it is missing.
macro_rules! optional_entry {
    ($lib:expr, $name:literal, $t:ty) => {{
        $lib.symbol($name).ok().map(|p| {
            // SAFETY: as in `entry!`.
            unsafe { std::mem::transmute::<*mut std::ffi::c_void, $t>(p) }
        })
    }};
}

pub(super) use {entry, optional_entry};
