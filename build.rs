//! Generates `include/nnmem.h` with cbindgen and checks the committed copy,
//! and gives the shared library its SONAME.
//!
//! - Default: when the generated header differs from `include/nnmem.h`, the
//!   build fails with the command that regenerates it.
//! - `NNMEM_UPDATE_HEADER=1`: rewrite `include/nnmem.h` instead.

use std::env;
use std::fs;
use std::path::PathBuf;

fn main() {
    let crate_dir = PathBuf::from(env::var("CARGO_MANIFEST_DIR").unwrap());
    println!("cargo:rerun-if-changed=src");
    println!("cargo:rerun-if-changed=cbindgen.toml");
    println!("cargo:rerun-if-changed=include/nnmem.h");
    println!("cargo:rerun-if-env-changed=NNMEM_UPDATE_HEADER");

    set_soname();

    let major = env::var("CARGO_PKG_VERSION_MAJOR").unwrap();
    let minor = env::var("CARGO_PKG_VERSION_MINOR").unwrap();
    let patch = env::var("CARGO_PKG_VERSION_PATCH").unwrap();
    let version = env::var("CARGO_PKG_VERSION").unwrap();
    let mut config = cbindgen::Config::from_file(crate_dir.join("cbindgen.toml")).expect("cbindgen.toml");
    // cbindgen.toml's own after_includes (struct list_head) follows the version.
    let from_toml = config.after_includes.take().unwrap_or_default();
    config.after_includes = Some(format!(
        "\n/* Version of this header, from Cargo.toml; nnm_version() gives the library's. */\n\
         #define NNM_VERSION_MAJOR {major}\n#define NNM_VERSION_MINOR {minor}\n#define NNM_VERSION_PATCH {patch}\n\
         #define NNM_VERSION_STRING \"{version}\"\n{from_toml}"
    ));
    let bindings = cbindgen::Builder::new()
        .with_crate(&crate_dir)
        .with_config(config)
        .generate()
        .expect("cbindgen failed to generate include/nnmem.h");
    let mut generated = Vec::new();
    bindings.write(&mut generated);
    let generated = short_status_names(String::from_utf8(generated).expect("cbindgen writes UTF-8")).into_bytes();

    let committed_path = crate_dir.join("include").join("nnmem.h");
    let committed = fs::read(&committed_path).unwrap_or_default();
    if committed == generated {
        return;
    }
    if env::var_os("NNMEM_UPDATE_HEADER").is_some_and(|v| v == "1") {
        fs::create_dir_all(committed_path.parent().unwrap()).unwrap();
        fs::write(&committed_path, &generated).expect("write include/nnmem.h");
        println!("cargo:warning=include/nnmem.h regenerated; commit it");
    } else {
        let fresh = PathBuf::from(env::var("OUT_DIR").unwrap()).join("nnmem.h");
        fs::write(&fresh, &generated).unwrap();
        panic!(
            "include/nnmem.h is out of date with the Rust sources (fresh copy: {}).\n\
             Regenerate it with:  NNMEM_UPDATE_HEADER=1 cargo build\n\
             and commit the result.",
            fresh.display()
        );
    }
}

/// `nnm_status`'s values are `NNM_OK`, `NNM_NULL_ARGUMENT`, ... (the names C
/// code has always used), but cbindgen can only prefix variants with the
/// enum's own name (`NNM_STATUS_OK`, from the `QualifiedScreamingSnakeCase`
/// rule) or leave them bare. So the `STATUS_` is dropped here, inside that
/// enum only.
fn short_status_names(header: String) -> String {
    const START: &str = "typedef enum nnm_status {";
    const END: &str = "} nnm_status;";
    let start = header.find(START).expect("the header defines enum nnm_status");
    let end = start + header[start..].find(END).expect("enum nnm_status ends");
    let body = header[start..end].replace("  NNM_STATUS_", "  NNM_");
    assert!(!body.contains("NNM_STATUS_"), "every nnm_status value was renamed");
    format!("{}{body}{}", &header[..start], &header[end..])
}

/// `libnnmem.so.0.<minor>` while 0.x (minor releases may break the ABI),
/// `libnnmem.so.<major>` from 1.0 on.
fn set_soname() {
    let target_os = env::var("CARGO_CFG_TARGET_OS").unwrap_or_default();
    if target_os != "linux" && target_os != "android" && !target_os.ends_with("bsd") {
        return;
    }
    let major = env::var("CARGO_PKG_VERSION_MAJOR").unwrap();
    let minor = env::var("CARGO_PKG_VERSION_MINOR").unwrap();
    let soname = if major == "0" { format!("libnnmem.so.0.{minor}") } else { format!("libnnmem.so.{major}") };
    println!("cargo:rustc-cdylib-link-arg=-Wl,-soname,{soname}");
}
