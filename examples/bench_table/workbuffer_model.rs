//! Workbuffer models for the benchmarks (`bench_table`'s "Workbuffers"
//! section, `benches/workbuffer.rs`, `tests/workbuffer_solver.rs`):
//!
//! - [`model_from_spans`]: any set of buffers with lifetimes (a trace under
//!   `benches/data`, OpenVINO's test boxes) as a `ModelBuilder` model whose
//!   mutable block holds exactly those buffers: a buffer alive for one
//!   step is a mutable workbuffer of that step's operator, a longer one a
//!   tensor its first step's operator writes and its last step's operator
//!   reads.
//! - [`resnet_like`]: a deterministic ResNet-like network of any number of
//!   operators: a chain of residual blocks (skip connections every 2-3
//!   operators, projections where a stage halves the resolution), a
//!   constant weight and bias per conv, immutable workbuffers (every
//!   fourth conv) and mutable ones (one or two per conv, every other conv),
//!   reshapes (aliases) and inception-like concats (two branches written
//!   into one parent), the graph input and output pinned. Besides the
//!   model it keeps every mutable-block buffer's lifetime, in the order
//!   `lay_out` hands them to the planner, so that the planner can be timed
//!   alone and OpenVINO's solver can be given the same buffers.

use nnmem::workbuffer::{BufferId, InputSpec, ModelBuilder, OperatorSpec, OutputSpec, WorkbufferRequest};

/// A buffer of the mutable block: `size` bytes alive from step `start` to
/// step `last`, inclusive.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct Span {
    pub start: i64,
    pub last: i64,
    pub size: u64,
}

/// Which model item a [`Span`] of [`Synthetic::spans`] is.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum Owner {
    /// The buffer at this index of `ModelBuilder::buffers`.
    Buffer(usize),
    /// Operator `.0`'s mutable workbuffer `.1`.
    Workbuffer(usize, usize),
}

/// The model of `spans` (steps shifted so that the first is 0; sizes must
/// not be 0). Steps with nothing starting or ending get an empty operator.
pub fn model_from_spans(spans: &[Span]) -> ModelBuilder {
    let first = spans.iter().map(|s| s.start).min().unwrap_or(0);
    let steps = spans.iter().map(|s| s.last - first + 1).max().unwrap_or(0).max(0) as usize;
    let mut ops: Vec<OperatorSpec> = vec![OperatorSpec::default(); steps];
    for (k, s) in spans.iter().enumerate() {
        let (start, last) = ((s.start - first) as usize, (s.last - first) as usize);
        if start == last {
            ops[start].request.mutable.push(s.size);
        } else {
            let id = k as BufferId;
            ops[start].outputs.push(OutputSpec::new(id, s.size));
            ops[last].inputs.push(InputSpec::new(id, s.size));
        }
    }
    let mut model = ModelBuilder::new();
    for (k, mut op) in ops.into_iter().enumerate() {
        op.name = format!("step{k}");
        model.add_operator(op).unwrap_or_else(|e| panic!("step {k}: {}", e.message()));
    }
    model
}

/// One call a runtime makes to describe its network.
#[derive(Clone, Debug)]
pub enum Call {
    Constant(BufferId, u64),
    Operator(OperatorSpec),
    Concat(BufferId, u64, Vec<(BufferId, u64)>),
    Pin(BufferId),
}

/// Describes a network again from its calls: what a runtime pays to hand
/// nnmem its network (the generator's own bookkeeping left out).
pub fn replay(calls: Vec<Call>) -> ModelBuilder {
    let mut model = ModelBuilder::new();
    for call in calls {
        let done = match call {
            Call::Constant(id, size) => model.add_constant(id, size, None),
            Call::Operator(op) => model.add_operator(op).map(drop),
            Call::Concat(parent, size, parts) => model.add_concat_parent(parent, size, &parts),
            Call::Pin(id) => model.pin(id),
        };
        done.unwrap_or_else(|e| panic!("replaying a valid network: {}", e.message()));
    }
    model
}

/// A synthetic network and its mutable block's buffers.
pub struct Synthetic {
    pub model: ModelBuilder,
    /// The calls that described it, in order (see [`replay`]).
    pub calls: Vec<Call>,
    /// Every buffer of the mutable block with its lifetime: the roots
    /// (tensors, concat parents) in declaration order, then the mutable
    /// workbuffers in operator and request order.
    pub spans: Vec<Span>,
    /// What each span is.
    pub owners: Vec<Owner>,
}

/// How the generator tracks a buffer (indexed like the model's buffers:
/// ids are handed out from 0 in declaration order).
#[derive(Copy, Clone)]
enum Entry {
    Constant,
    /// A buffer of the mutable block: its lifetime so far.
    Root {
        start: usize,
        last: usize,
        size: u64,
        pinned: bool,
    },
    /// An alias or a concat part: lives in this root.
    In(usize),
}

struct Gen {
    model: ModelBuilder,
    calls: Vec<Call>,
    entries: Vec<Entry>,
}

impl Gen {
    fn root(&self, id: BufferId) -> usize {
        match self.entries[id as usize] {
            Entry::In(r) => r,
            _ => id as usize,
        }
    }

    fn size(&self, id: BufferId) -> u64 {
        self.model.buffer(id).expect("generated ids exist").size
    }

    fn next_id(&self) -> BufferId {
        self.entries.len() as BufferId
    }

    fn constant(&mut self, size: u64) -> BufferId {
        let id = self.next_id();
        self.model.add_constant(id, size, None).expect("a fresh id, a size above 0");
        self.calls.push(Call::Constant(id, size));
        self.entries.push(Entry::Constant);
        id
    }

    /// Adds an operator reading `inputs` and writing new tensors of
    /// `outputs` bytes (or, for `alias`, the alias of its first input);
    /// returns the outputs' ids.
    fn op(
        &mut self,
        name: &str,
        inputs: &[BufferId],
        outputs: &[u64],
        alias: bool,
        request: WorkbufferRequest,
    ) -> Vec<BufferId> {
        let step = self.model.operators().len();
        let first = self.next_id();
        let ids: Vec<BufferId> = (0..outputs.len() as u64).map(|k| first + k).collect();
        let spec = OperatorSpec {
            name: format!("{name}{step}"),
            inputs: inputs.iter().map(|&id| InputSpec::new(id, self.size(id))).collect(),
            outputs: ids
                .iter()
                .zip(outputs)
                .map(
                    |(&id, &size)| {
                        if alias {
                            OutputSpec::alias(id, size, inputs[0])
                        } else {
                            OutputSpec::new(id, size)
                        }
                    },
                )
                .collect(),
            request,
        };
        self.calls.push(Call::Operator(spec.clone()));
        self.model.add_operator(spec).unwrap_or_else(|e| panic!("synthetic operator {step}: {}", e.message()));
        for &id in inputs {
            let r = self.root(id);
            if let Entry::Root { last, .. } = &mut self.entries[r] {
                *last = (*last).max(step);
            }
        }
        for &size in outputs {
            let entry = if alias {
                Entry::In(self.root(inputs[0]))
            } else {
                Entry::Root { start: step, last: step, size, pinned: false }
            };
            self.entries.push(entry);
        }
        ids
    }

    /// A 3x3 conv, depthwise-sized constants (weight `channels * 9` B, bias
    /// `channels * 4` B), `x` to a tensor of `out` bytes; the `k`th conv
    /// asks for immutable and mutable workbuffers by turns.
    fn conv(&mut self, x: BufferId, out: u64, channels: u64, k: usize) -> BufferId {
        let weight = self.constant(channels * 9);
        let bias = self.constant(channels * 4);
        let mut request = WorkbufferRequest::default();
        if k % 4 == 0 {
            // Weights reordered for the kernel, once at build.
            request.immutable.push(channels * 9 + 256);
        }
        // Multiples of 256 B, like every mutable size here, so that
        // OpenVINO's solver (which does not align) sees the same bytes.
        let part = |d: u64| (out / d).next_multiple_of(256);
        match k % 6 {
            0 => request.mutable.push(part(4)),
            2 => request.mutable.extend([part(8), 4096]),
            4 => request.mutable.push(part(2)),
            _ => {}
        }
        self.op("conv", &[x, weight, bias], &[out], false, request)[0]
    }

    fn pin(&mut self, id: BufferId) {
        self.model.pin(id).expect("generated ids exist");
        self.calls.push(Call::Pin(id));
        let r = self.root(id);
        if let Entry::Root { pinned, .. } = &mut self.entries[r] {
            *pinned = true;
        }
    }

    /// `parts` (produced, not yet read) become one parent buffer.
    fn concat(&mut self, parts: &[BufferId]) -> BufferId {
        let parent = self.next_id();
        let mut offset = 0;
        let mut placed = Vec::with_capacity(parts.len());
        let (mut start, mut last) = (usize::MAX, 0);
        for &p in parts {
            placed.push((p, offset));
            offset += self.size(p);
            if let Entry::Root { start: s, last: l, .. } = self.entries[p as usize] {
                (start, last) = (start.min(s), last.max(l));
            }
            self.entries[p as usize] = Entry::In(parent as usize);
        }
        self.model.add_concat_parent(parent, offset, &placed).expect("parts are fresh tensors");
        self.calls.push(Call::Concat(parent, offset, placed));
        self.entries.push(Entry::Root { start, last, size: offset, pinned: false });
        parent
    }
}

/// (channels, bytes of one activation) per stage: 56x56 down to 7x7, f32.
const STAGES: [(u64, u64); 4] =
    [(64, 64 * 56 * 56 * 4), (128, 128 * 28 * 28 * 4), (256, 256 * 14 * 14 * 4), (512, 512 * 7 * 7 * 4)];
/// The most operators one block adds.
const LONGEST_BLOCK: usize = 5;

/// A ResNet-like network of exactly `operators` operators (at least 8).
pub fn resnet_like(operators: usize) -> Synthetic {
    assert!(operators >= 8, "the network needs at least 8 operators");
    let mut g = Gen { model: ModelBuilder::new(), calls: Vec::new(), entries: Vec::new() };
    let mut x = g.op("input", &[], &[3 * 224 * 224 * 4], false, WorkbufferRequest::default())[0];
    g.pin(x);
    let mut convs = 0;
    let mut stage = usize::MAX;
    let mut block = 0usize;
    while g.model.operators().len() + LONGEST_BLOCK + 1 < operators {
        let s = (g.model.operators().len() * STAGES.len() / operators).min(STAGES.len() - 1);
        let (c, size) = STAGES[s];
        let mut conv = |g: &mut Gen, x: BufferId, out: u64| {
            convs += 1;
            g.conv(x, out, c, convs)
        };
        if s != stage {
            // A new stage: strided conv, projected skip (4 operators).
            stage = s;
            let y = conv(&mut g, x, size);
            let skip = conv(&mut g, x, size);
            let y = conv(&mut g, y, size);
            x = g.op("add", &[y, skip], &[size], false, WorkbufferRequest::default())[0];
        } else if block % 7 == 3 {
            // Inception-like: two branches written into one parent, a conv
            // over it, the skip added (4 operators).
            let a = conv(&mut g, x, size / 2);
            let b = conv(&mut g, x, size / 2);
            let parent = g.concat(&[a, b]);
            let y = conv(&mut g, parent, size);
            x = g.op("add", &[y, x], &[size], false, WorkbufferRequest::default())[0];
        } else {
            // A residual block of 2 convs, or a bottleneck of 3, through a reshape every
            // fifth block (3 to 5 operators).
            let mut y = x;
            if block % 5 == 2 {
                y = g.op("reshape", &[y], &[size], true, WorkbufferRequest::default())[0];
            }
            if block % 2 == 1 {
                // A bottleneck: reduce to a quarter, 3x3, expand back.
                for out in [size / 4, size / 4, size] {
                    y = conv(&mut g, y, out);
                }
            } else {
                for _ in 0..2 {
                    y = conv(&mut g, y, size);
                }
            }
            x = g.op("add", &[y, x], &[size], false, WorkbufferRequest::default())[0];
        }
        block += 1;
    }
    while g.model.operators().len() + 1 < operators {
        let size = g.size(x);
        x = g.op("relu", &[x], &[size], false, WorkbufferRequest::default())[0];
    }
    let out = g.op("head", &[x], &[4096], false, WorkbufferRequest { mutable: vec![8192], ..Default::default() })[0];
    g.pin(out);

    let steps = g.model.operators().len() as i64;
    let mut spans = Vec::new();
    let mut owners = Vec::new();
    for (i, e) in g.entries.iter().enumerate() {
        if let Entry::Root { start, last, size, pinned } = *e {
            let (start, last) = if pinned { (0, steps - 1) } else { (start as i64, last as i64) };
            spans.push(Span { start, last, size });
            owners.push(Owner::Buffer(i));
        }
    }
    for (k, op) in g.model.operators().iter().enumerate() {
        for (w, &size) in op.request.mutable.iter().enumerate() {
            spans.push(Span { start: k as i64, last: k as i64, size });
            owners.push(Owner::Workbuffer(k, w));
        }
    }
    Synthetic { model: g.model, calls: g.calls, spans, owners }
}
