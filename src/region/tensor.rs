//! Tensors as a model hands them in: what kind, how large, when live, and
//! the fields rules match on.

use std::sync::Arc;

use crate::names::c_enum;
use crate::plan::Lifetime;

/// What a tensor is, in Glow's vocabulary (C: `nnm_tensor_kind`).
#[repr(C)]
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub enum TensorKind {
    /// A constant weight, initialised before the run and never written.
    Constant = 0,
    /// A mutable weight (a placeholder that is neither input nor output).
    Mutable = 1,
    /// An input placeholder: written by the caller before the run.
    Input = 2,
    /// An output placeholder: read by the caller after the run.
    Output = 3,
    /// A placeholder that is both input and output.
    InputOutput = 4,
    /// An activation: allocated and freed inside the run.
    Activation = 5,
    /// A view: bytes inside another tensor (its origin), never placed on
    /// its own.
    View = 6,
}

c_enum! {
    TensorKind, "tensor kind",
    value_error(value) => format!("unknown tensor kind {value} (0 to {})", TensorKind::ALL.len() - 1),
    {
        Constant = "constant",
        Mutable = "mutable",
        Input = "input",
        Output = "output",
        InputOutput = "input-output",
        Activation = "activation",
        View = "view",
    }
}

impl TensorKind {
    /// Whether the tensor lives for the whole run of every function (weights
    /// and placeholders): Glow's module-level storage.
    pub const fn is_weight(self) -> bool {
        matches!(
            self,
            TensorKind::Constant
                | TensorKind::Mutable
                | TensorKind::Input
                | TensorKind::Output
                | TensorKind::InputOutput
        )
    }
}

/// Where a view lives: inside its origin, at a byte offset.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ViewOf {
    /// The origin, by name, in the same function (or a weight of any
    /// function).
    pub origin: String,
    /// Byte offset of the view inside its origin.
    pub offset: u64,
}

/// One tensor of a model.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Tensor {
    /// Its name: unique within its function; weights (constants and
    /// placeholders) are shared by name across functions. Reference-counted,
    /// like `function`: a table built from the model shares the text.
    pub name: Arc<str>,
    /// What it is.
    pub kind: TensorKind,
    /// Bytes (not zero).
    pub size: u64,
    /// The alignment it needs, a power of two (1: only its region's).
    pub alignment: u64,
    /// When it is live, half-open, in its function's steps; `None`: the
    /// whole run of its function (weights: of every function, always).
    pub lifetime: Option<Lifetime>,
    /// Its element type, free-form ("f32", "i8"); empty when unknown.
    pub dtype: String,
    /// The function it belongs to.
    pub function: Arc<str>,
    /// Free-form `key=value` tags, keys unique, in the order given.
    pub tags: Vec<(String, String)>,
    /// For a view: its origin and offset (`kind` is [`TensorKind::View`]
    /// exactly when this is set).
    pub view: Option<ViewOf>,
}

/// The function a tensor belongs to when none is named.
pub const DEFAULT_FUNCTION: &str = "main";

impl Tensor {
    /// A tensor with the given name, kind and size; alignment 1, whole-run
    /// lifetime, no dtype, function [`DEFAULT_FUNCTION`], no tags, not a view.
    pub fn new(name: impl Into<Arc<str>>, kind: TensorKind, size: u64) -> Self {
        Tensor {
            name: name.into(),
            kind,
            size,
            alignment: 1,
            lifetime: None,
            dtype: String::new(),
            function: Arc::from(DEFAULT_FUNCTION),
            tags: Vec::new(),
            view: None,
        }
    }

    /// An activation live over `lifetime`.
    pub fn activation(name: impl Into<Arc<str>>, size: u64, lifetime: Lifetime) -> Self {
        Tensor { lifetime: Some(lifetime), ..Tensor::new(name, TensorKind::Activation, size) }
    }

    /// A view of `origin` at `offset`, live over `lifetime` (`None`: as
    /// long as its origin).
    pub fn view(
        name: impl Into<Arc<str>>,
        origin: impl Into<String>,
        offset: u64,
        size: u64,
        lifetime: Option<Lifetime>,
    ) -> Self {
        Tensor {
            lifetime,
            view: Some(ViewOf { origin: origin.into(), offset }),
            ..Tensor::new(name, TensorKind::View, size)
        }
    }

    /// The value of tag `key`, if it has one.
    pub fn tag(&self, key: &str) -> Option<&str> {
        self.tags.iter().find(|(k, _)| k == key).map(|(_, v)| v.as_str())
    }

    /// Builder: sets the function.
    pub fn in_function(mut self, function: impl Into<Arc<str>>) -> Self {
        self.function = function.into();
        self
    }

    /// Builder: sets the dtype.
    pub fn with_dtype(mut self, dtype: impl Into<String>) -> Self {
        self.dtype = dtype.into();
        self
    }

    /// Builder: sets the alignment.
    pub fn with_alignment(mut self, alignment: u64) -> Self {
        self.alignment = alignment;
        self
    }

    /// Builder: adds (or replaces) a tag.
    pub fn with_tag(mut self, key: impl Into<String>, value: impl Into<String>) -> Self {
        let (key, value) = (key.into(), value.into());
        match self.tags.iter_mut().find(|(k, _)| *k == key) {
            Some(slot) => slot.1 = value,
            None => self.tags.push((key, value)),
        }
        self
    }

    /// How errors name it: `'conv1' (activation, function main)`.
    pub fn describe(&self) -> String {
        format!("'{}' ({}, function {})", self.name, self.kind.name(), self.function)
    }
}

/// Parses tags written `key=value;key=value` (spaces around keys and values
/// trimmed; an empty string is no tags). Errors on a pair without `=`, an
/// empty key or a repeated key.
pub fn parse_tags(text: &str) -> crate::status::Result<Vec<(String, String)>> {
    use crate::status::Error;
    let mut tags: Vec<(String, String)> = Vec::new();
    for pair in text.split(';').map(str::trim).filter(|p| !p.is_empty()) {
        let (key, value) = pair
            .split_once('=')
            .ok_or_else(|| Error::invalid(format!("tag '{pair}' is not key=value (in '{text}')")))?;
        let (key, value) = (key.trim(), value.trim());
        if key.is_empty() {
            return Err(Error::invalid(format!("tag '{pair}' has an empty key (in '{text}')")));
        }
        if tags.iter().any(|(k, _)| k == key) {
            return Err(Error::invalid(format!("tag '{key}' is given twice (in '{text}')")));
        }
        tags.push((key.to_string(), value.to_string()));
    }
    Ok(tags)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tags_parse_and_refuse_malformed_pairs() {
        assert_eq!(
            parse_tags(" op = fc ; layer=3;").unwrap(),
            vec![("op".to_string(), "fc".to_string()), ("layer".to_string(), "3".to_string())]
        );
        assert!(parse_tags("").unwrap().is_empty());
        assert!(parse_tags("op").is_err());
        assert!(parse_tags("=x").is_err());
        assert!(parse_tags("a=1;a=2").is_err());
    }
}
