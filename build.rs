//! Gives the shared library its SONAME, and names the embedded build
//! stripped of messages (`cfg(nnmem_stripped)`). Nothing else: the headers
//! are generated and checked by `tests/header.rs`, so that a build of the
//! library compiles no code generator.

use std::env;

/// `libnnmem.so.0.<minor>` while 0.x (minor releases may break the ABI),
/// `libnnmem.so.<major>` from 1.0 on.
fn main() {
    println!("cargo:rerun-if-changed=build.rs");
    // The embedded build without messages: an error is then only a status,
    // and the functions that make one are inlined instead of kept apart as
    // cold code (src/status.rs).
    println!("cargo:rustc-check-cfg=cfg(nnmem_stripped)");
    if env::var_os("CARGO_FEATURE_STRIP_MESSAGES").is_some() && env::var_os("CARGO_FEATURE_STD").is_none() {
        println!("cargo:rustc-cfg=nnmem_stripped");
    }
    let target_os = env::var("CARGO_CFG_TARGET_OS").unwrap_or_default();
    if target_os != "linux" && target_os != "android" && !target_os.ends_with("bsd") {
        return;
    }
    let major = env::var("CARGO_PKG_VERSION_MAJOR").unwrap();
    let minor = env::var("CARGO_PKG_VERSION_MINOR").unwrap();
    let soname = if major == "0" { format!("libnnmem.so.0.{minor}") } else { format!("libnnmem.so.{major}") };
    println!("cargo:rustc-cdylib-link-arg=-Wl,-soname,{soname}");
}
