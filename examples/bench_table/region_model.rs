//! The synthetic workload of the region benchmarks (`bench_table`'s "Memory
//! regions" section and `benches/region.rs`): a deterministic model of any
//! number of tensors, shaped like a compiled network, and a configuration of
//! 20 region descriptions over 3 memory levels.
//!
//! The model: a few placeholders (8 inputs, outputs, KV-cache state and other
//! mutable weights), then layers in two functions (`main`, and
//! `postprocess` for every tenth layer). A layer is a conv (60 %), fully
//! connected (20 %), attention (10 %) or elementwise (10 %) op: its constant
//! weight and bias (tagged `op=` and `layer=`, dtype i8, f16 or f32), its
//! output activation live until the next layer reads it, and, depending on
//! the op, a scratch buffer, attention intermediates, a skip connection live
//! for up to 24 layers, a view of the output (every 25th layer, sometimes a
//! view of that view) or a view inside a weight. `postprocess` shares some
//! of `main`'s weights by name. Sizes and choices come from a fixed-seed
//! generator, so every run and every machine builds the same model.

use nnmem::plan::{Algorithm, Lifetime};
use nnmem::region::{MemoryLevel, Model, RegionConfig, RegionDescription, RegionProperties, Rule, Tensor, TensorKind};

/// splitmix64: small, fast, and the same sequence everywhere.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    /// Uniform in `lo..=hi`.
    fn range(&mut self, lo: u64, hi: u64) -> u64 {
        lo + self.next() % (hi - lo + 1)
    }

    /// True with probability `percent` / 100.
    fn chance(&mut self, percent: u64) -> bool {
        self.next() % 100 < percent
    }

    /// A size in `lo..=hi` bytes, log-uniform (many small tensors, few
    /// large ones, as in real networks), rounded up to 16 B.
    fn size(&mut self, lo: u64, hi: u64) -> u64 {
        let (lo_bits, hi_bits) = (63 - lo.leading_zeros() as u64, 63 - hi.leading_zeros() as u64);
        let bits = self.range(lo_bits, hi_bits);
        let size = (1u64 << bits) + self.range(0, (1u64 << bits) - 1);
        size.clamp(lo, hi).next_multiple_of(16)
    }
}

const DTYPES: [&str; 3] = ["i8", "f16", "f32"];
/// Every `POSTPROCESS_EVERY`th layer belongs to `postprocess`.
const POSTPROCESS_EVERY: u64 = 10;
const INPUTS: u64 = 8;

/// Adds `t`, which the generator built valid.
fn add(model: &mut Model, t: Tensor) {
    let name = t.name.clone();
    model.add(t).unwrap_or_else(|e| panic!("synthetic tensor {name}: {}", e.message()));
}

/// A model of exactly `tensors` tensors (at least 32).
pub fn synthetic_model(tensors: usize) -> Model {
    assert!(tensors >= 32, "the synthetic model starts with 30 placeholders");
    let mut rng = Rng(0x6e6e_6d65_6d31_3500 ^ tensors as u64);
    let mut m = Model::new();
    for i in 0..INPUTS {
        add(&mut m, Tensor::new(format!("input{i}"), TensorKind::Input, rng.size(4 << 10, 600 << 10)));
    }
    for i in 0..4 {
        add(&mut m, Tensor::new(format!("output{i}"), TensorKind::Output, rng.size(64, 64 << 10)));
    }
    for i in 0..2 {
        add(&mut m, Tensor::new(format!("state{i}"), TensorKind::InputOutput, rng.size(1 << 10, 32 << 10)));
    }
    for i in 0..12 {
        let kv = Tensor::new(format!("kv{i}"), TensorKind::Mutable, rng.size(16 << 10, 1 << 20));
        add(&mut m, kv.with_tag("state", "kv").with_dtype("f16"));
    }
    for i in 0..4 {
        add(&mut m, Tensor::new(format!("running_mean{i}"), TensorKind::Mutable, rng.size(256, 4 << 10)));
    }

    // Weights of `main` that `postprocess` may use again: (name, size, op).
    let mut shareable: Vec<(String, u64, &str)> = Vec::new();
    // Per function: the layer index inside it (its step) and the previous
    // layer's output.
    let mut steps = [0i64; 2];
    let mut layer = 0u64;
    while m.len() < tensors {
        let post = layer % POSTPROCESS_EVERY == POSTPROCESS_EVERY - 1;
        let (function, f) = if post { ("postprocess", 1) } else { ("main", 0) };
        let step = steps[f];
        steps[f] += 1;
        let dtype = DTYPES[rng.range(0, 2) as usize];
        let roll = rng.range(0, 99);
        let op = match roll {
            0..=59 => "conv",
            60..=79 => "fc",
            80..=89 => "attn",
            _ => "add",
        };
        let prefix = format!("{op}{layer}");
        let tagged = |t: Tensor| t.in_function(function).with_tag("op", op).with_tag("layer", layer.to_string());
        let mut batch: Vec<Tensor> = Vec::new();

        // Weights.
        if post && !shareable.is_empty() && rng.chance(30) {
            // Each shared weight once: a function holds a name once.
            let (name, size, op) = shareable.swap_remove(rng.range(0, shareable.len() as u64 - 1) as usize);
            let shared = Tensor::new(name, TensorKind::Constant, size).in_function(function).with_tag("op", op);
            batch.push(shared);
        } else if op != "add" {
            let size = match op {
                "conv" => rng.size(256, 512 << 10),
                "fc" => rng.size(4 << 10, 4 << 20),
                _ => rng.size(16 << 10, 2 << 20),
            };
            let name = format!("{prefix}.weight");
            let weight = tagged(Tensor::new(name.clone(), TensorKind::Constant, size)).with_dtype(dtype);
            batch.push(weight.with_alignment(64));
            if !post && rng.chance(20) {
                shareable.push((name.clone(), size, op));
            }
            batch.push(
                tagged(Tensor::new(format!("{prefix}.bias"), TensorKind::Constant, rng.size(64, 4 << 10)))
                    .with_dtype("f32"),
            );
            if layer % 97 == 0 {
                // A slice of the weight (a per-channel group), placed inside it.
                batch.push(
                    Tensor::view(format!("{prefix}.weight.group0"), name, 0, size / 2, None).in_function(function),
                );
            }
        }

        // Activations.
        let out_size = match op {
            "fc" => rng.size(64, 64 << 10),
            _ => rng.size(1 << 10, 2 << 20),
        };
        let out = format!("{prefix}.out");
        let next = |span: i64| Lifetime::half_open(step, step + span).expect("non-empty");
        batch.push(tagged(Tensor::activation(out.clone(), out_size, next(2))).with_dtype(dtype));
        match op {
            "conv" if rng.chance(40) => {
                let scratch = Tensor::activation(format!("{prefix}.im2col"), rng.size(1 << 10, 1 << 20), next(1));
                batch.push(tagged(scratch).with_tag("scratch", "1"));
            }
            "attn" => {
                for part in ["q", "k", "v", "scores"] {
                    let t = Tensor::activation(format!("attn.{layer}.{part}"), rng.size(4 << 10, 512 << 10), next(1));
                    batch.push(tagged(t).with_dtype("f16"));
                }
            }
            _ => {}
        }
        if rng.chance(10) {
            let span = rng.range(3, 24) as i64;
            let skip = Tensor::activation(format!("{prefix}.skip"), rng.size(1 << 10, 1 << 20), next(span));
            batch.push(tagged(skip).with_tag("skip", "1").with_dtype(dtype));
        }
        if layer % 25 == 0 {
            let half = out_size / 2;
            let view = format!("{prefix}.out.hi");
            batch.push(Tensor::view(view.clone(), out.clone(), out_size - half, half, None).in_function(function));
            if layer % 50 == 0 && half >= 2 {
                let quarter = half / 2;
                let lifetime = Some(next(1));
                batch.push(
                    Tensor::view(format!("{prefix}.out.hi.lo"), view, 0, quarter, lifetime).in_function(function),
                );
            }
        }

        for t in batch {
            if m.len() == tensors {
                break;
            }
            add(&mut m, t);
        }
        layer += 1;
    }
    m
}

/// 20 region descriptions over the levels `sram` (rank 0), `ddr` (1) and
/// `flash` (2): per-tensor inputs, placeholders by direction, fully
/// connected weights in SRAM up to a capacity with spill to DDR, weights
/// by op, dtype, name and function, activations by tag, size, name, dtype
/// and function, and a catch-all for each kind. Rules use every field and
/// every combinator; the planners vary by region.
pub fn twenty_rule_config() -> RegionConfig {
    let mut c = RegionConfig::new();
    for (name, rank) in [("sram", 0), ("ddr", 1), ("flash", 2)] {
        c.add_level(MemoryLevel { name: name.into(), rank }).expect("distinct levels");
    }
    let kind = Rule::Kind;
    let tag = |k: &str, v: &str| Rule::Tag { key: k.into(), value: Some(v.into()) };
    let has = |k: &str| Rule::Tag { key: k.into(), value: None };
    let upto = |max: u64| Rule::Size { min: 0, max: Some(max) };
    let props = |level: &str, algorithm: Algorithm, reuse: bool| RegionProperties {
        level: level.into(),
        algorithm,
        reuse,
        ..RegionProperties::default()
    };
    let weights = |level: &str| props(level, Algorithm::Sequential, false);
    let constant = || kind(TensorKind::Constant);
    let activation = || kind(TensorKind::Activation);
    let descriptions: Vec<(&str, Rule, RegionProperties)> = vec![
        ("inputs", kind(TensorKind::Input), RegionProperties { per_tensor: true, ..weights("sram") }),
        ("outputs", kind(TensorKind::Output).or(kind(TensorKind::InputOutput)), weights("ddr")),
        ("kv-cache", kind(TensorKind::Mutable).and(tag("state", "kv")), weights("ddr")),
        ("mutable-weights", kind(TensorKind::Mutable), weights("ddr")),
        ("biases", constant().and(Rule::NameGlob("*.bias".into())), weights("sram")),
        (
            "post-weights",
            constant().and(Rule::Function("postprocess".into())).and(tag("op", "fc").negate()),
            weights("ddr"),
        ),
        (
            "fc-weights-sram",
            constant().and(tag("op", "fc")).and(upto(16 << 10)),
            RegionProperties {
                capacity: Some(4 << 20),
                spill_to: Some("fc-weights-ddr".into()),
                reserved_front: 256,
                ..weights("sram")
            },
        ),
        ("fc-weights-ddr", constant().and(tag("op", "fc")), weights("ddr")),
        ("attn-weights", constant().and(tag("op", "attn")), weights("ddr")),
        (
            "conv-weights-i8",
            constant().and(tag("op", "conv")).and(Rule::Dtype("i8".into())).and(upto(16 << 10)),
            weights("sram"),
        ),
        ("conv-weights", constant().and(tag("op", "conv")), weights("flash")),
        ("constants", constant(), weights("flash")),
        (
            "scratch",
            activation().and(has("scratch")),
            RegionProperties { base_address: Some(0), ..props("sram", Algorithm::SizeBestFit, true) },
        ),
        (
            "attn-activations",
            activation().and(Rule::NamePrefix("attn.".into())),
            props("ddr", Algorithm::LiveStep, true),
        ),
        ("skip-connections", activation().and(has("skip")), props("ddr", Algorithm::LiveStep, true)),
        (
            "small-activations",
            activation().and(upto(8 << 10)).and(has("skip").negate()),
            props("sram", Algorithm::FloorFirst, true),
        ),
        (
            "post-activations",
            activation().and(Rule::Function("postprocess".into())),
            props("ddr", Algorithm::Auto, true),
        ),
        ("i8-activations", activation().and(Rule::Dtype("i8".into())), props("sram", Algorithm::SizeFirstFit, true)),
        (
            "f16-outputs",
            activation().and(Rule::Dtype("f16".into()).or(Rule::NameGlob("*.out".into()).negate())),
            props("ddr", Algorithm::LifetimeFirstFit, true),
        ),
        ("activations", activation(), props("ddr", Algorithm::Auto, true)),
    ];
    for (id, (name, rule, properties)) in descriptions.into_iter().enumerate() {
        let d = RegionDescription::new(id as u32, name, rule).with_properties(properties);
        c.append(d).expect("distinct, valid descriptions");
    }
    c.validate().expect("spill targets exist");
    c
}
