//! A network as an inference runtime describes it to the workbuffer
//! planner: operators in execution order, the buffers they read and write,
//! constants, reshape-like aliases, concat parents, and each operator's
//! workbuffer request. Every failing call leaves the builder as it was.
//!
//! One id space serves constants, tensors, concat parents and workbuffers
//! (OpenVINO's plugin numbers them with one counter in execution order,
//! the workbuffers' ids coming from the call that takes their operator's
//! request). A workbuffer is also named by its operator and position, so
//! giving it an id is optional.
//!
//! A tensor or concat parent of size 0 is **dynamic**, as in OpenVINO's
//! plugin (its size is known only at run time): it gets no memory, its
//! pointer comes from the runtime, and inputs reading it may read any
//! size. So are the aliases and concat parts of a dynamic buffer.

use std::fmt;

use crate::pool::fast_hash::FastMap;
use crate::status::{Error, Result, Status};

/// A buffer's id, unique among constants, tensors and concat parents.
pub type BufferId = u64;

/// An operator's index: its position in execution order, from 0.
pub type OpIndex = usize;

/// What an operator asks for besides its inputs and outputs: byte sizes of
/// immutable workbuffers (whole-network life, initialised once at build)
/// and of mutable ones (alive for the operator's own step only), with
/// their ids when the runtime names them.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct WorkbufferRequest {
    /// Immutable workbuffer sizes, in the order the operator wants them.
    pub immutable: Vec<u64>,
    /// Mutable workbuffer sizes, in the order the operator wants them.
    pub mutable: Vec<u64>,
    /// The immutable workbuffers' ids, one per size, or empty: no ids.
    pub immutable_ids: Vec<BufferId>,
    /// The mutable workbuffers' ids, one per size, or empty: no ids.
    pub mutable_ids: Vec<BufferId>,
}

/// Which of an operator's two workbuffer lists.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub enum WorkbufferKind {
    /// Immutable: whole-network life, in the immutable blob.
    Immutable,
    /// Mutable: the operator's own step, in the mutable block.
    Mutable,
}

impl WorkbufferKind {
    /// "immutable" or "mutable".
    pub fn name(self) -> &'static str {
        match self {
            WorkbufferKind::Immutable => "immutable",
            WorkbufferKind::Mutable => "mutable",
        }
    }
}

/// A workbuffer by position: operator `op`'s `index`-th of `kind`.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct WorkbufferRef {
    /// Its operator.
    pub op: OpIndex,
    /// Its list.
    pub kind: WorkbufferKind,
    /// Its position in that list.
    pub index: usize,
}

/// An input an operator reads: the buffer's id and the bytes it reads,
/// which must be the buffer's size (a mismatch means the runtime and the
/// model disagree about a tensor, which would read past or short of it),
/// except for a dynamic buffer, whose size only the run knows.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct InputSpec {
    /// The buffer's id.
    pub id: BufferId,
    /// The bytes the operator reads.
    pub size: u64,
}

impl InputSpec {
    /// Reads `size` bytes of buffer `id`.
    pub fn new(id: BufferId, size: u64) -> Self {
        InputSpec { id, size }
    }
}

/// An output an operator produces: a new buffer of `size` bytes, or, for a
/// reshape-like operator, the buffer of one of its inputs under a new id.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct OutputSpec {
    /// The output's id.
    pub id: BufferId,
    /// Its size in bytes; 0: dynamic. An alias may be smaller than what it
    /// aliases, never larger (so 0 for an alias of a size-0 buffer), and 0
    /// only when what it aliases is dynamic.
    pub size: u64,
    /// For a reshape-like output: the input whose buffer it is.
    pub alias_of: Option<BufferId>,
}

impl OutputSpec {
    /// A new buffer.
    pub fn new(id: BufferId, size: u64) -> Self {
        OutputSpec { id, size, alias_of: None }
    }

    /// The buffer of input `of`, under id `id`.
    pub fn alias(id: BufferId, size: u64, of: BufferId) -> Self {
        OutputSpec { id, size, alias_of: Some(of) }
    }
}

/// One operator, in execution order.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct OperatorSpec {
    /// Its name, for reports and errors (may repeat).
    pub name: String,
    /// What it reads, in order: constants, tensors, concat parents.
    pub inputs: Vec<InputSpec>,
    /// What it writes, in order.
    pub outputs: Vec<OutputSpec>,
    /// Its workbuffers.
    pub request: WorkbufferRequest,
}

/// Where a buffer's bytes come from.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Origin {
    /// A constant, with its bytes when given (else zero-filled at build).
    Constant {
        /// The bytes (`size` of them), if the runtime handed them in.
        bytes: Option<Vec<u8>>,
    },
    /// Written by operator `producer`.
    Produced {
        /// The producing operator.
        producer: OpIndex,
    },
    /// The buffer of another id (reshape-like), resolved to a root when the
    /// model is built.
    Alias {
        /// The buffer it is.
        of: BufferId,
    },
    /// One parent buffer whose parts are other buffers placed inside it at
    /// byte offsets (an optimised concat: its producers write in place).
    ConcatParent {
        /// `(part, offset)`, in the order given.
        parts: Vec<(BufferId, u64)>,
    },
}

/// One buffer of the model.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BufferSpec {
    /// Its id.
    pub id: BufferId,
    /// Its size in bytes (0: dynamic).
    pub size: u64,
    /// Where its bytes come from.
    pub origin: Origin,
    /// The last operator reading it (`None`: nobody reads it).
    pub last_consumer: Option<OpIndex>,
    /// Pinned for the whole run (a graph input or output).
    pub pinned: bool,
}

/// The network being described.
#[derive(Clone, Debug, Default)]
pub struct ModelBuilder {
    buffers: Vec<BufferSpec>,
    by_id: FastMap<BufferId, usize>,
    operators: Vec<OperatorSpec>,
    /// For a buffer that is a part of a concat parent: that parent's index.
    part_of: FastMap<usize, usize>,
    /// The workbuffers given ids.
    workbuffers: FastMap<BufferId, WorkbufferRef>,
}

/// One operator's ids, each looked up in constant time, so that checking
/// an operator takes time linear in its outputs and workbuffers (a
/// runtime may give one operator tens of thousands).
struct OperatorIds {
    /// Each output id and where it is first listed.
    first_output: FastMap<BufferId, usize>,
    /// The input ids.
    inputs: FastMap<BufferId, ()>,
    /// How many times each workbuffer id is given, both kinds together.
    workbuffer_uses: FastMap<BufferId, usize>,
}

impl OperatorIds {
    fn of(op: &OperatorSpec) -> Self {
        let mut first_output = FastMap::default();
        for (k, out) in op.outputs.iter().enumerate() {
            first_output.entry(out.id).or_insert(k);
        }
        let inputs = op.inputs.iter().map(|i| (i.id, ())).collect();
        let mut workbuffer_uses = FastMap::default();
        for &id in op.request.immutable_ids.iter().chain(&op.request.mutable_ids) {
            *workbuffer_uses.entry(id).or_insert(0) += 1;
        }
        OperatorIds { first_output, inputs, workbuffer_uses }
    }
}

impl ModelBuilder {
    /// An empty model.
    pub fn new() -> Self {
        ModelBuilder::default()
    }

    /// Adds a constant of `size` bytes, with its bytes when given. Errors:
    /// a zero size (a constant cannot be dynamic), a taken id
    /// (`AlreadyExists`), bytes of another length.
    pub fn add_constant(&mut self, id: BufferId, size: u64, bytes: Option<Vec<u8>>) -> Result<()> {
        self.check_new(id, format_args!("constant"))?;
        if size == 0 {
            return Err(Error::invalid(format!(
                "constant {id} has size 0: a constant's bytes are fixed, so it cannot be dynamic"
            )));
        }
        if let Some(b) = &bytes {
            if b.len() as u64 != size {
                return Err(Error::invalid(format!("constant {id}: {} bytes given for a size of {size} B", b.len())));
            }
        }
        self.push(BufferSpec { id, size, origin: Origin::Constant { bytes }, last_consumer: None, pinned: false });
        Ok(())
    }

    /// Adds the next operator and returns its index. Errors, adding
    /// nothing: an input that is not a buffer yet, or a workbuffer; an input
    /// read at another size than its buffer's (any size reads a dynamic
    /// buffer); an output or workbuffer id taken or repeated; a zero
    /// workbuffer size; workbuffer ids not one per workbuffer; an alias of
    /// something that is not one of its inputs, larger than it, or of size 0
    /// when what it aliases is not dynamic; a constant or an alias of a
    /// constant as an output ("constants can never be outputs").
    pub fn add_operator(&mut self, op: OperatorSpec) -> Result<OpIndex> {
        let index = self.operators.len();
        let what = OperatorName(index, &op.name);
        for input in &op.inputs {
            let Some(&at) = self.by_id.get(&input.id) else {
                return Err(self.not_a_buffer(
                    input.id,
                    format_args!("{what}: input {}", input.id),
                    "is not a buffer yet",
                ));
            };
            let held = self.buffers[at].size;
            if input.size != held && !self.is_dynamic(input.id) {
                let how = if input.size < held { "smaller than" } else { "larger than" };
                return Err(Error::invalid(format!(
                    "{what}: input {} is read as {} B, {how} its buffer of {held} B",
                    input.id, input.size
                )));
            }
        }
        let ids = OperatorIds::of(&op);
        for (k, out) in op.outputs.iter().enumerate() {
            self.check_new(out.id, format_args!("{what}: output"))?;
            if ids.first_output.get(&out.id) != Some(&k) {
                return Err(Error::new(Status::AlreadyExists, format!("{what}: output {} is listed twice", out.id)));
            }
            if let Some(of) = out.alias_of {
                self.check_alias(&ids, out, of, &what)?;
            }
        }
        self.check_workbuffers(&op, &ids, &what)?;
        for input in &op.inputs {
            let at = self.by_id[&input.id];
            self.buffers[at].last_consumer = Some(index);
        }
        for out in &op.outputs {
            let origin = match out.alias_of {
                Some(of) => Origin::Alias { of },
                None => Origin::Produced { producer: index },
            };
            self.push(BufferSpec { id: out.id, size: out.size, origin, last_consumer: None, pinned: false });
        }
        for (kind, ids) in
            [(WorkbufferKind::Immutable, &op.request.immutable_ids), (WorkbufferKind::Mutable, &op.request.mutable_ids)]
        {
            for (k, &id) in ids.iter().enumerate() {
                self.workbuffers.insert(id, WorkbufferRef { op: index, kind, index: k });
            }
        }
        self.operators.push(op);
        Ok(index)
    }

    /// Checks output `out` of the operator whose ids are `ids`, an alias of
    /// `of`.
    fn check_alias(&self, ids: &OperatorIds, out: &OutputSpec, of: BufferId, what: &OperatorName<'_>) -> Result<()> {
        if ids.first_output.contains_key(&of) {
            return Err(Error::invalid(format!(
                "{what}: output {} aliases {of}, an output of the same operator: an alias cycle",
                out.id
            )));
        }
        if !ids.inputs.contains_key(&of) {
            return Err(Error::invalid(format!(
                "{what}: output {} aliases {of}, which is not one of its inputs",
                out.id
            )));
        }
        let source = &self.buffers[self.by_id[&of]];
        if matches!(self.root_origin(of), Origin::Constant { .. }) {
            return Err(Error::invalid(format!(
                "{what}: output {} would alias constant {of}: constants can never be outputs",
                out.id
            )));
        }
        if out.size > source.size {
            let dynamic = if source.size == 0 { " (an alias of a dynamic buffer is dynamic: size 0)" } else { "" };
            return Err(Error::invalid(format!(
                "{what}: output {} of {} B aliases {of} of {} B: an alias cannot be larger{dynamic}",
                out.id, out.size, source.size
            )));
        }
        if out.size == 0 && !self.is_dynamic(of) {
            return Err(Error::invalid(format!(
                "{what}: output {} of size 0 (dynamic) aliases {of}, which has its {} B of memory: an alias is the \
                 same memory, so it is dynamic only when what it aliases is",
                out.id, source.size
            )));
        }
        Ok(())
    }

    /// Checks `op`'s workbuffer sizes and ids (`ids`: the operator's).
    fn check_workbuffers(&self, op: &OperatorSpec, ids_of_op: &OperatorIds, what: &OperatorName<'_>) -> Result<()> {
        let r = &op.request;
        let lists = [("immutable", &r.immutable, &r.immutable_ids), ("mutable", &r.mutable, &r.mutable_ids)];
        for (kind, sizes, ids) in lists {
            if let Some(k) = sizes.iter().position(|&s| s == 0) {
                return Err(Error::invalid(format!(
                    "{what}: {kind} workbuffer {k} has size 0 (a workbuffer cannot be dynamic: its memory is \
                     provided before the run)"
                )));
            }
            if !ids.is_empty() && ids.len() != sizes.len() {
                return Err(Error::invalid(format!(
                    "{what}: {} {kind} workbuffer id(s) for {} {kind} workbuffer(s): give one id per workbuffer, or \
                     none",
                    ids.len(),
                    sizes.len()
                )));
            }
            for (k, &id) in ids.iter().enumerate() {
                self.check_new(id, format_args!("{what}: {kind} workbuffer {k} id"))?;
                let repeated = ids_of_op.first_output.contains_key(&id)
                    || ids_of_op.workbuffer_uses.get(&id).is_some_and(|&n| n > 1);
                if repeated {
                    return Err(Error::new(
                        Status::AlreadyExists,
                        format!("{what}: {kind} workbuffer {k}: id {id} is given twice in the operator"),
                    ));
                }
            }
        }
        Ok(())
    }

    /// Declares `parent` (`size` bytes; 0: dynamic) as one buffer holding
    /// `parts` at byte offsets: their producers write straight into it (an
    /// optimised concat). The parts must be produced tensors or other
    /// concat parents (a chain: offsets compose), each in at most one
    /// parent and not overlapping one another; inside a parent of fixed
    /// size they must have fixed sizes and end inside it. Errors change
    /// nothing.
    pub fn add_concat_parent(&mut self, parent: BufferId, size: u64, parts: &[(BufferId, u64)]) -> Result<()> {
        self.check_new(parent, format_args!("concat parent"))?;
        let what = format!("concat parent {parent}");
        if parts.is_empty() {
            return Err(Error::invalid(format!("{what} has no parts")));
        }
        let mut spans: Vec<(u64, u64, BufferId)> = Vec::with_capacity(parts.len());
        for &(part, offset) in parts {
            let Some(&at) = self.by_id.get(&part) else {
                return Err(self.not_a_buffer(part, format_args!("{what}: part {part}"), "is not a buffer"));
            };
            let b = &self.buffers[at];
            if !matches!(b.origin, Origin::Produced { .. } | Origin::ConcatParent { .. }) {
                return Err(Error::invalid(format!(
                    "{what}: part {part} is neither a tensor an operator produces nor a concat parent"
                )));
            }
            if self.part_of.contains_key(&at) || spans.iter().any(|s| s.2 == part) {
                return Err(Error::invalid(format!("{what}: part {part} is already inside a concat parent")));
            }
            if size > 0 && b.size == 0 {
                return Err(Error::invalid(format!(
                    "{what}: part {part} is dynamic (size 0), so it cannot sit at a fixed offset of a parent of \
                     {size} B: declare the parent with size 0 (dynamic)"
                )));
            }
            let end = offset.checked_add(b.size).filter(|&end| size == 0 || end <= size).ok_or_else(|| {
                let limit = if size == 0 { "2^64".to_string() } else { format!("the parent's {size} B") };
                Error::invalid(format!("{what}: part {part} at offset {offset} ({} B) reaches past {limit}", b.size))
            })?;
            // A dynamic part takes no fixed bytes, so it overlaps nothing.
            if b.size > 0 {
                spans.push((offset, end, part));
            }
        }
        spans.sort_unstable();
        if let Some(w) = spans.windows(2).find(|w| w[1].0 < w[0].1) {
            return Err(Error::invalid(format!(
                "{what}: parts {} [{}, {}) and {} [{}, {}) overlap",
                w[0].2, w[0].0, w[0].1, w[1].2, w[1].0, w[1].1
            )));
        }
        let parent_index = self.buffers.len();
        for &(part, _) in parts {
            self.part_of.insert(self.by_id[&part], parent_index);
        }
        self.push(BufferSpec {
            id: parent,
            size,
            origin: Origin::ConcatParent { parts: parts.to_vec() },
            last_consumer: None,
            pinned: false,
        });
        Ok(())
    }

    /// Pins a buffer for the whole run (a graph input or output; a dynamic
    /// one has no memory to keep, so pinning it changes nothing). Errors:
    /// an unknown id (`NotFound`), a constant, a workbuffer.
    pub fn pin(&mut self, id: BufferId) -> Result<()> {
        let Some(&at) = self.by_id.get(&id) else {
            return Err(self.not_a_buffer(id, format_args!("buffer {id}"), "is unknown"));
        };
        if matches!(self.buffers[at].origin, Origin::Constant { .. }) {
            return Err(Error::invalid(format!(
                "buffer {id} is a constant: it lives for the whole run in the constants blob already (pinning is for \
                 graph inputs and outputs)"
            )));
        }
        self.buffers[at].pinned = true;
        Ok(())
    }

    /// The same model without its constants' bytes (a compiled model keeps
    /// them in its blob, not twice).
    pub(crate) fn without_constant_bytes(&self) -> ModelBuilder {
        let buffers = self
            .buffers
            .iter()
            .map(|b| match &b.origin {
                Origin::Constant { bytes: Some(_) } => BufferSpec {
                    id: b.id,
                    size: b.size,
                    origin: Origin::Constant { bytes: None },
                    last_consumer: b.last_consumer,
                    pinned: b.pinned,
                },
                _ => b.clone(),
            })
            .collect();
        ModelBuilder {
            buffers,
            by_id: self.by_id.clone(),
            operators: self.operators.clone(),
            part_of: self.part_of.clone(),
            workbuffers: self.workbuffers.clone(),
        }
    }

    /// The operators, in execution order.
    pub fn operators(&self) -> &[OperatorSpec] {
        &self.operators
    }

    /// The buffers, in the order declared.
    pub fn buffers(&self) -> &[BufferSpec] {
        &self.buffers
    }

    /// The buffer with id `id`.
    pub fn buffer(&self, id: BufferId) -> Option<&BufferSpec> {
        self.by_id.get(&id).map(|&at| &self.buffers[at])
    }

    /// The index of buffer `id` in [`ModelBuilder::buffers`].
    pub fn index_of(&self, id: BufferId) -> Option<usize> {
        self.by_id.get(&id).copied()
    }

    /// The concat parent a buffer was placed in, if any.
    pub fn parent_of(&self, id: BufferId) -> Option<&BufferSpec> {
        let at = self.by_id.get(&id)?;
        self.part_of.get(at).map(|&p| &self.buffers[p])
    }

    /// The workbuffer with id `id`.
    pub fn workbuffer(&self, id: BufferId) -> Option<WorkbufferRef> {
        self.workbuffers.get(&id).copied()
    }

    /// Operator `op`'s workbuffer ids of `kind`, in request order (empty:
    /// none given).
    pub fn workbuffer_ids(&self, op: OpIndex, kind: WorkbufferKind) -> &[BufferId] {
        match (self.operators.get(op), kind) {
            (Some(o), WorkbufferKind::Immutable) => &o.request.immutable_ids,
            (Some(o), WorkbufferKind::Mutable) => &o.request.mutable_ids,
            (None, _) => &[],
        }
    }

    /// Whether buffer `id` is dynamic: it, or the buffer it is an alias of
    /// or a part of (through chains), has size 0. Such a buffer gets no
    /// memory. `false` for an unknown id.
    pub fn is_dynamic(&self, mut id: BufferId) -> bool {
        let Some(mut at) = self.by_id.get(&id).copied() else { return false };
        while let Origin::Alias { of } = self.buffers[at].origin {
            id = of;
            at = self.by_id[&id];
        }
        while let Some(&parent) = self.part_of.get(&at) {
            at = parent;
        }
        self.buffers[at].size == 0
    }

    /// The error for `id` used as a buffer while it is none: a workbuffer
    /// (`InvalidArgument`, naming it) or unknown (`NotFound`, "`what`
    /// `unknown`").
    fn not_a_buffer(&self, id: BufferId, what: fmt::Arguments<'_>, unknown: &str) -> Error {
        match self.workbuffers.get(&id) {
            Some(w) => Error::invalid(format!(
                "{what} is operator {} '{}''s {} workbuffer {}, not a buffer",
                w.op,
                self.operators[w.op].name,
                w.kind.name(),
                w.index
            )),
            None => Error::new(Status::NotFound, format!("{what} {unknown}")),
        }
    }

    /// Where `id`'s bytes finally come from, through aliases (which always
    /// point at earlier buffers, so the walk ends).
    fn root_origin(&self, mut id: BufferId) -> &Origin {
        loop {
            let b = &self.buffers[self.by_id[&id]];
            match b.origin {
                Origin::Alias { of } => id = of,
                ref origin => return origin,
            }
        }
    }

    /// Refuses an id already taken by a buffer or a workbuffer.
    fn check_new(&self, id: BufferId, what: fmt::Arguments<'_>) -> Result<()> {
        if self.by_id.contains_key(&id) {
            return Err(Error::new(Status::AlreadyExists, format!("{what} {id}: the id is already a buffer")));
        }
        if let Some(w) = self.workbuffers.get(&id) {
            return Err(Error::new(
                Status::AlreadyExists,
                format!("{what} {id}: the id is already operator {}'s {} workbuffer {}", w.op, w.kind.name(), w.index),
            ));
        }
        Ok(())
    }

    fn push(&mut self, b: BufferSpec) {
        self.by_id.insert(b.id, self.buffers.len());
        self.buffers.push(b);
    }
}

/// "operator 3 'conv'", written only when an error message needs it (an
/// operator is added far more often than it is refused).
struct OperatorName<'a>(OpIndex, &'a str);

impl fmt::Display for OperatorName<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "operator {} '{}'", self.0, self.1)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// An operator reading all of each buffer in `inputs` (unknown ids are
    /// read as 1 B, for the error cases).
    fn op(m: &ModelBuilder, name: &str, inputs: &[BufferId], outputs: Vec<OutputSpec>) -> OperatorSpec {
        let inputs = inputs.iter().map(|&id| InputSpec::new(id, m.buffer(id).map_or(1, |b| b.size))).collect();
        OperatorSpec { name: name.into(), inputs, outputs, request: WorkbufferRequest::default() }
    }

    #[test]
    fn operators_record_producers_and_last_consumers() {
        let mut m = ModelBuilder::new();
        m.add_constant(1, 16, Some(vec![7; 16])).unwrap();
        m.add_operator(op(&m, "in", &[], vec![OutputSpec::new(2, 64)])).unwrap();
        m.add_operator(op(&m, "conv", &[2, 1], vec![OutputSpec::new(3, 64)])).unwrap();
        m.add_operator(op(&m, "reshape", &[3], vec![OutputSpec::alias(4, 64, 3)])).unwrap();
        m.add_operator(op(&m, "relu", &[4, 2], vec![OutputSpec::new(5, 32)])).unwrap();
        m.pin(5).unwrap();
        assert_eq!(m.buffer(2).unwrap().last_consumer, Some(3));
        assert_eq!(m.buffer(3).unwrap().origin, Origin::Produced { producer: 1 });
        assert_eq!(m.buffer(4).unwrap().origin, Origin::Alias { of: 3 });
        assert!(m.buffer(5).unwrap().pinned);
        assert_eq!(m.operators().len(), 4);
    }

    #[test]
    fn bad_input_is_refused_and_changes_nothing() {
        let mut m = ModelBuilder::new();
        m.add_constant(1, 16, None).unwrap();
        m.add_operator(op(&m, "a", &[1], vec![OutputSpec::new(2, 64)])).unwrap();
        let before = (m.buffers().to_vec(), m.operators().len());
        let zero_wb = OperatorSpec {
            request: WorkbufferRequest { mutable: vec![8, 0], ..Default::default() },
            ..op(&m, "z", &[2], vec![OutputSpec::new(9, 8)])
        };
        let short_read = OperatorSpec { inputs: vec![InputSpec::new(2, 32)], ..op(&m, "s", &[], vec![]) };
        let long_read = OperatorSpec { inputs: vec![InputSpec::new(1, 17)], ..op(&m, "l", &[], vec![]) };
        let cases: Vec<(OperatorSpec, Status, &str)> = vec![
            (op(&m, "x", &[42], vec![]), Status::NotFound, "input 42 is not a buffer yet"),
            (op(&m, "x", &[2], vec![OutputSpec::new(1, 8)]), Status::AlreadyExists, "already a buffer"),
            (op(&m, "x", &[2], vec![OutputSpec::new(9, 8), OutputSpec::new(9, 8)]), Status::AlreadyExists, "twice"),
            (
                op(&m, "x", &[2], vec![OutputSpec::alias(9, 0, 2)]),
                Status::InvalidArgument,
                "dynamic only when what it aliases is",
            ),
            (op(&m, "x", &[2], vec![OutputSpec::alias(9, 8, 1)]), Status::InvalidArgument, "not one of its inputs"),
            (
                op(&m, "x", &[1], vec![OutputSpec::alias(9, 8, 1)]),
                Status::InvalidArgument,
                "constants can never be outputs",
            ),
            (op(&m, "x", &[2], vec![OutputSpec::alias(9, 128, 2)]), Status::InvalidArgument, "cannot be larger"),
            (zero_wb, Status::InvalidArgument, "mutable workbuffer 1 has size 0"),
            (short_read, Status::InvalidArgument, "input 2 is read as 32 B, smaller than its buffer of 64 B"),
            (long_read, Status::InvalidArgument, "input 1 is read as 17 B, larger than its buffer of 16 B"),
            (op(&m, "x", &[2], vec![OutputSpec::alias(9, 8, 9)]), Status::InvalidArgument, "an alias cycle"),
        ];
        for (spec, status, part) in cases {
            let e = m.add_operator(spec.clone()).unwrap_err();
            assert_eq!(e.status(), status, "{spec:?}: {}", e.message());
            assert!(e.message().contains(part), "{}", e.message());
            assert_eq!((m.buffers().to_vec(), m.operators().len()), before);
        }
        assert_eq!(m.add_constant(3, 4, Some(vec![0; 3])).unwrap_err().status(), Status::InvalidArgument);
        assert_eq!(m.pin(77).unwrap_err().status(), Status::NotFound);
        assert!(m.pin(1).unwrap_err().message().contains("is a constant"));
        assert_eq!((m.buffers().to_vec(), m.operators().len()), before);
    }

    #[test]
    fn concat_parents_hold_their_parts_without_overlap() {
        let mut m = ModelBuilder::new();
        m.add_operator(op(&m, "a", &[], vec![OutputSpec::new(1, 32)])).unwrap();
        m.add_operator(op(&m, "b", &[], vec![OutputSpec::new(2, 32)])).unwrap();
        m.add_constant(3, 8, None).unwrap();
        assert!(m.add_concat_parent(10, 64, &[]).is_err());
        assert!(m.add_concat_parent(10, 48, &[(1, 0), (2, 32)]).unwrap_err().message().contains("reaches past"));
        assert!(m.add_concat_parent(10, 64, &[(1, 0), (2, 16)]).unwrap_err().message().contains("overlap"));
        assert!(m.add_concat_parent(10, 64, &[(3, 0)]).unwrap_err().message().contains("neither a tensor"));
        assert_eq!(m.add_concat_parent(10, 64, &[(9, 0)]).unwrap_err().status(), Status::NotFound);
        assert!(m.buffer(10).is_none() && m.parent_of(1).is_none());
        m.add_concat_parent(10, 64, &[(2, 32), (1, 0)]).unwrap();
        assert_eq!(m.parent_of(1).unwrap().id, 10);
        assert!(m.add_concat_parent(11, 64, &[(1, 0)]).unwrap_err().message().contains("already inside"));
        m.add_operator(op(&m, "use", &[10], vec![OutputSpec::new(12, 64)])).unwrap();
        assert_eq!(m.buffer(10).unwrap().last_consumer, Some(2));
    }

    /// An operator with workbuffers `immutable` and `mutable`, named by
    /// `ids` (immutable first) when given.
    fn with_workbuffers(
        m: &ModelBuilder,
        out: BufferId,
        immutable: &[u64],
        mutable: &[u64],
        ids: &[BufferId],
    ) -> OperatorSpec {
        let (immutable_ids, mutable_ids) = if ids.is_empty() {
            (vec![], vec![])
        } else {
            (ids[..immutable.len()].to_vec(), ids[immutable.len()..].to_vec())
        };
        OperatorSpec {
            request: WorkbufferRequest {
                immutable: immutable.to_vec(),
                mutable: mutable.to_vec(),
                immutable_ids,
                mutable_ids,
            },
            ..op(m, "wb", &[], vec![OutputSpec::new(out, 8)])
        }
    }

    #[test]
    fn workbuffers_share_the_id_space() {
        let mut m = ModelBuilder::new();
        m.add_constant(1, 16, None).unwrap();
        m.add_operator(with_workbuffers(&m, 100, &[32], &[64, 8], &[20, 21, 22])).unwrap();
        assert_eq!(m.workbuffer(21), Some(WorkbufferRef { op: 0, kind: WorkbufferKind::Mutable, index: 0 }));
        assert_eq!(m.workbuffer(20).unwrap().kind, WorkbufferKind::Immutable);
        assert_eq!(m.workbuffer_ids(0, WorkbufferKind::Mutable), &[21, 22]);
        assert!(m.workbuffer(1).is_none() && m.buffer(21).is_none());
        let before = (m.buffers().to_vec(), m.operators().len());
        // Taken ids, either way, and ids repeated inside one operator.
        let taken = |m: &ModelBuilder, ids: &[BufferId]| with_workbuffers(m, 101, &[32], &[64], ids);
        let cases: Vec<(OperatorSpec, Status, &str)> = vec![
            (taken(&m, &[1, 30]), Status::AlreadyExists, "immutable workbuffer 0 id 1: the id is already a buffer"),
            (taken(&m, &[30, 22]), Status::AlreadyExists, "already operator 0's mutable workbuffer 1"),
            (taken(&m, &[30, 30]), Status::AlreadyExists, "id 30 is given twice"),
            (taken(&m, &[101, 30]), Status::AlreadyExists, "id 101 is given twice"),
            (
                with_workbuffers(&m, 101, &[32], &[64, 8], &[30, 31]),
                Status::InvalidArgument,
                "1 mutable workbuffer id(s) for 2 mutable workbuffer(s)",
            ),
            (
                OperatorSpec { outputs: vec![OutputSpec::new(21, 8)], ..op(&m, "o", &[], vec![]) },
                Status::AlreadyExists,
                "output 21: the id is already operator 0's mutable workbuffer 0",
            ),
            (op(&m, "r", &[22], vec![]), Status::InvalidArgument, "input 22 is operator 0 'wb''s mutable workbuffer 1"),
        ];
        for (spec, status, part) in cases {
            let e = m.add_operator(spec.clone()).unwrap_err();
            assert_eq!(e.status(), status, "{spec:?}: {}", e.message());
            assert!(e.message().contains(part), "{}", e.message());
            assert_eq!((m.buffers().to_vec(), m.operators().len()), before);
        }
        assert!(m.workbuffer(30).is_none());
        assert!(m.pin(20).unwrap_err().message().contains("immutable workbuffer 0, not a buffer"));
        assert_eq!(m.add_concat_parent(40, 64, &[(21, 0)]).unwrap_err().status(), Status::InvalidArgument);
        assert_eq!(m.add_constant(22, 8, None).unwrap_err().status(), Status::AlreadyExists);
        // Without ids, workbuffers are named by position only.
        m.add_operator(with_workbuffers(&m, 101, &[8], &[8], &[])).unwrap();
        assert!(m.workbuffer_ids(1, WorkbufferKind::Immutable).is_empty());
    }

    #[test]
    fn concat_parents_chain_into_other_concat_parents() {
        let mut m = ModelBuilder::new();
        for id in 1..=3 {
            m.add_operator(op(&m, "p", &[], vec![OutputSpec::new(id, 32)])).unwrap();
        }
        m.add_concat_parent(10, 64, &[(1, 0), (2, 32)]).unwrap();
        // The inner parent is a part of the outer one, as OpenVINO chains them.
        m.add_concat_parent(11, 128, &[(3, 0), (10, 64)]).unwrap();
        assert_eq!(m.parent_of(10).unwrap().id, 11);
        assert_eq!(m.parent_of(1).unwrap().id, 10);
        assert!(m.add_concat_parent(12, 128, &[(10, 0)]).unwrap_err().message().contains("already inside"));
        // The inner parent must fit inside the outer one.
        m.add_concat_parent(13, 64, &[(11, 0)]).unwrap_err();
        assert!(m.buffer(13).is_none());
    }

    #[test]
    fn size_0_buffers_are_dynamic() {
        let mut m = ModelBuilder::new();
        m.add_operator(op(&m, "dyn", &[], vec![OutputSpec::new(1, 0)])).unwrap();
        m.add_operator(op(&m, "static", &[], vec![OutputSpec::new(2, 32)])).unwrap();
        assert!(m.is_dynamic(1) && !m.is_dynamic(2));
        // Any read size of a dynamic buffer: its size is known at run time.
        let read = OperatorSpec { inputs: vec![InputSpec::new(1, 4096)], ..op(&m, "r", &[], vec![]) };
        m.add_operator(read).unwrap();
        // Its alias is dynamic, and must say so with size 0.
        m.add_operator(op(&m, "reshape", &[1], vec![OutputSpec::alias(3, 0, 1)])).unwrap();
        assert!(m.is_dynamic(3));
        let e = m.add_operator(op(&m, "reshape", &[1], vec![OutputSpec::alias(4, 8, 1)])).unwrap_err();
        assert!(e.message().contains("an alias of a dynamic buffer is dynamic"), "{}", e.message());
        // A dynamic part cannot sit in a parent of fixed size; a dynamic
        // parent takes static and dynamic parts, unbounded.
        let e = m.add_concat_parent(10, 64, &[(1, 0), (2, 32)]).unwrap_err();
        assert!(e.message().contains("part 1 is dynamic"), "{}", e.message());
        m.add_concat_parent(10, 0, &[(1, 0), (2, 4096)]).unwrap();
        assert!(m.is_dynamic(2) && m.is_dynamic(10));
        m.pin(10).unwrap();
        // Constants and workbuffers still need a size.
        assert!(m.add_constant(20, 0, None).unwrap_err().message().contains("cannot be dynamic"));
        let e = m.add_operator(with_workbuffers(&m, 100, &[], &[0], &[])).unwrap_err();
        assert!(e.message().contains("a workbuffer cannot be dynamic"), "{}", e.message());
    }
}
