//! ggml's graph allocator beside nnmem's: `ggml_gallocr_reserve_n_size` and
//! `ggml_gallocr_alloc_graph` on the real-dimension Llama graphs of
//! `c-tests/ggml/llama_graphs.c`, through ggml's own allocator and nnmem's
//! `ggml-alloc.c`, both in `libnnmem_ggml_bench.so` (built from ggml's
//! sources by `scripts/ggml-check.sh`; see `c-tests/ggml/bench_shim.c`).
//!
//! Run: `scripts/ggml-bench.sh` (it builds the library, sets
//! `NNMEM_GGML_BENCH` to its path and writes BENCHMARKS.md's section
//! "ggml's graph allocator"). Without `NNMEM_GGML_BENCH` there is nothing to
//! load, and the benchmark says so and measures nothing.

use std::ffi::{c_char, c_int, CStr, CString};
use std::hint::black_box;
use std::time::Duration;

use criterion::{criterion_group, criterion_main, BatchSize, Criterion};

/// The shim's functions, looked up in the loaded library.
struct Shim {
    graphs: unsafe extern "C" fn() -> c_int,
    name: unsafe extern "C" fn(c_int) -> *const c_char,
    reserve: unsafe extern "C" fn(c_int, c_int) -> usize,
    unplace: unsafe extern "C" fn(c_int, c_int),
    alloc: unsafe extern "C" fn(c_int, c_int) -> usize,
}

impl Shim {
    /// Loads the library at `path` (kept loaded for the process).
    fn load(path: &str) -> Shim {
        let c_path = CString::new(path).expect("a path without NUL");
        // SAFETY: dlopen with a valid C string; the handle is never closed,
        // so the functions looked up below stay valid.
        let handle = unsafe { libc::dlopen(c_path.as_ptr(), libc::RTLD_NOW | libc::RTLD_LOCAL) };
        assert!(!handle.is_null(), "cannot load {path} (NNMEM_GGML_BENCH)");
        let symbol = |name: &str| {
            let c_name = CString::new(name).expect("a name without NUL");
            // SAFETY: a valid handle and C string.
            let f = unsafe { libc::dlsym(handle, c_name.as_ptr()) };
            assert!(!f.is_null(), "{path} has no {name}");
            f
        };
        // SAFETY: each symbol is the shim's function of exactly this
        // signature (c-tests/ggml/bench_shim.c).
        unsafe {
            Shim {
                graphs: std::mem::transmute::<*mut libc::c_void, unsafe extern "C" fn() -> c_int>(symbol(
                    "nnm_ggml_bench_graphs",
                )),
                name: std::mem::transmute::<*mut libc::c_void, unsafe extern "C" fn(c_int) -> *const c_char>(symbol(
                    "nnm_ggml_bench_name",
                )),
                reserve: std::mem::transmute::<*mut libc::c_void, unsafe extern "C" fn(c_int, c_int) -> usize>(symbol(
                    "nnm_ggml_bench_reserve",
                )),
                unplace: std::mem::transmute::<*mut libc::c_void, unsafe extern "C" fn(c_int, c_int)>(symbol(
                    "nnm_ggml_bench_unplace",
                )),
                alloc: std::mem::transmute::<*mut libc::c_void, unsafe extern "C" fn(c_int, c_int) -> usize>(symbol(
                    "nnm_ggml_bench_alloc",
                )),
            }
        }
    }
}

const ALLOCATORS: [(&str, c_int); 2] = [("ggml", 0), ("nnmem", 1)];

fn bench_ggml(c: &mut Criterion) {
    let Ok(path) = std::env::var("NNMEM_GGML_BENCH") else {
        eprintln!("benches/ggml: NNMEM_GGML_BENCH is not set; scripts/ggml-bench.sh builds the library and runs this");
        return;
    };
    let shim = Shim::load(&path);
    // SAFETY: the shim's functions, called with graph indices in range and
    // allocator 0 or 1, as bench_shim.c requires.
    let graphs = unsafe { (shim.graphs)() };
    for g in 0..graphs {
        // SAFETY: as above; the name is a static C string.
        let name = unsafe { CStr::from_ptr((shim.name)(g)) }.to_string_lossy().into_owned();
        let mut group = c.benchmark_group(format!("ggml/{name}"));
        group.sample_size(30).warm_up_time(Duration::from_millis(300)).measurement_time(Duration::from_secs(1));
        for (allocator, which) in ALLOCATORS {
            // SAFETY: as above.
            group.bench_function(format!("reserve/{allocator}"), |b| {
                b.iter(|| unsafe { (shim.reserve)(black_box(g), which) })
            });
            group.bench_function(format!("alloc_graph/{allocator}"), |b| {
                b.iter_batched(
                    // SAFETY: as above.
                    || unsafe { (shim.unplace)(g, which) },
                    |()| unsafe { (shim.alloc)(black_box(g), which) },
                    BatchSize::PerIteration,
                )
            });
        }
        group.finish();
    }
}

criterion_group!(benches, bench_ggml);
criterion_main!(benches);
