//! A model: its tensors, checked as they are added, in the order given.

use std::collections::HashMap;

use super::tensor::{Tensor, TensorKind};
use crate::plan::check_alignment;
use crate::status::{Error, Result, Status};

/// A tensor's index in its model, in the order added.
pub type TensorId = usize;

/// The tensors of one or more functions. Every failing [`Model::add`]
/// leaves the model exactly as it was.
#[derive(Clone, Debug, Default)]
pub struct Model {
    tensors: Vec<Tensor>,
    /// For each tensor, the first tensor of that name when it is a weight
    /// seen again in another function (it shares that one's place).
    shared_with: Vec<Option<TensorId>>,
    /// For each view, its origin's id (resolved once, when added).
    origins: Vec<Option<TensorId>>,
    /// For each tensor, its function's index in `functions`.
    function_index: Vec<usize>,
    /// (function, name) to id.
    by_function_name: HashMap<(String, String), TensorId>,
    /// Weights by name: the first of each name.
    weights_by_name: HashMap<String, TensorId>,
    /// Functions in the order first seen.
    functions: Vec<String>,
}

impl Model {
    /// An empty model.
    pub fn new() -> Self {
        Model::default()
    }

    /// Adds a tensor and returns its id.
    ///
    /// Errors, changing nothing: an empty name or function, a zero size, an
    /// alignment that is not a power of two, a tag with an empty or repeated
    /// key, a weight given a lifetime, `kind` view without an origin or an
    /// origin on another kind, a view whose origin is not in the model (same
    /// function, or a weight of any) or that reaches past its origin's end, a
    /// name already used in its function (`AlreadyExists`), a weight named
    /// like a weight of another function but with another kind or size.
    pub fn add(&mut self, tensor: Tensor) -> Result<TensorId> {
        self.check(&tensor)?;
        // Before this tensor is indexed: a view may share its origin's name.
        let origin = tensor.view.as_ref().and_then(|v| self.find(&tensor.function, &v.origin));
        let id = self.tensors.len();
        let mut shared = None;
        if tensor.kind.is_weight() {
            match self.weights_by_name.get(&tensor.name) {
                Some(&first) => shared = Some(first),
                None => {
                    self.weights_by_name.insert(tensor.name.clone(), id);
                }
            }
        }
        let function = match self.functions.iter().position(|f| *f == tensor.function) {
            Some(index) => index,
            None => {
                self.functions.push(tensor.function.clone());
                self.functions.len() - 1
            }
        };
        self.by_function_name.insert((tensor.function.clone(), tensor.name.clone()), id);
        self.shared_with.push(shared);
        self.origins.push(origin);
        self.function_index.push(function);
        self.tensors.push(tensor);
        Ok(id)
    }

    fn check(&self, t: &Tensor) -> Result<()> {
        if t.name.is_empty() {
            return Err(Error::invalid("tensor name is empty"));
        }
        if t.function.is_empty() {
            return Err(Error::invalid(format!("tensor '{}' has an empty function name", t.name)));
        }
        if t.size == 0 {
            return Err(Error::invalid(format!("tensor {} has size 0", t.describe())));
        }
        check_alignment(t.alignment)
            .map_err(|e| Error::invalid(format!("tensor {}: {}", t.describe(), e.message())))?;
        for (i, (key, _)) in t.tags.iter().enumerate() {
            if key.is_empty() {
                return Err(Error::invalid(format!("tensor {} has a tag with an empty key", t.describe())));
            }
            if t.tags[..i].iter().any(|(k, _)| k == key) {
                return Err(Error::invalid(format!("tensor {} has tag '{key}' twice", t.describe())));
            }
        }
        if t.kind.is_weight() && t.lifetime.is_some() {
            return Err(Error::invalid(format!(
                "tensor {} is a weight and takes no lifetime: weights live for the whole run",
                t.describe()
            )));
        }
        match (&t.view, t.kind) {
            (None, TensorKind::View) => {
                return Err(Error::invalid(format!("tensor {} is a view but names no origin", t.describe())))
            }
            (Some(_), kind) if kind != TensorKind::View => {
                return Err(Error::invalid(format!("tensor {} names an origin but is not a view", t.describe())))
            }
            (Some(view), _) => {
                let origin = self.find(&t.function, &view.origin).ok_or_else(|| {
                    Error::new(
                        Status::NotFound,
                        format!(
                            "view {} names origin '{}', which is not in function {} (nor a weight); add the origin first",
                            t.describe(),
                            view.origin,
                            t.function
                        ),
                    )
                })?;
                let origin = &self.tensors[origin];
                let end = view.offset.checked_add(t.size).ok_or_else(|| {
                    Error::overflow(format!(
                        "view {}: offset {} + size {} overflows",
                        t.describe(),
                        view.offset,
                        t.size
                    ))
                })?;
                if end > origin.size {
                    return Err(Error::invalid(format!(
                        "view {} reaches past the end of its origin '{}': offset {} + size {} = {end} B, origin is {} B",
                        t.describe(),
                        origin.name,
                        view.offset,
                        t.size,
                        origin.size
                    )));
                }
            }
            (None, _) => {}
        }
        if self.by_function_name.contains_key(&(t.function.clone(), t.name.clone())) {
            return Err(Error::new(
                Status::AlreadyExists,
                format!("function {} already has a tensor named '{}'", t.function, t.name),
            ));
        }
        if let Some(&first) = self.weights_by_name.get(&t.name).filter(|_| t.kind.is_weight()) {
            let first = &self.tensors[first];
            if t.kind != first.kind || t.size != first.size {
                return Err(Error::invalid(format!(
                    "weight {} of {} B shares its name with {} of {} B: a weight seen again by name must have the same kind and size",
                    t.describe(),
                    t.size,
                    first.describe(),
                    first.size
                )));
            }
        }
        Ok(())
    }

    /// The tensor named `name` in `function`, or the weight of that name.
    pub fn find(&self, function: &str, name: &str) -> Option<TensorId> {
        self.by_function_name
            .get(&(function.to_string(), name.to_string()))
            .copied()
            .or_else(|| self.weights_by_name.get(name).copied())
    }

    /// The tensors, in the order added.
    pub fn tensors(&self) -> &[Tensor] {
        &self.tensors
    }

    /// One tensor.
    pub fn tensor(&self, id: TensorId) -> Option<&Tensor> {
        self.tensors.get(id)
    }

    /// Number of tensors.
    pub fn len(&self) -> usize {
        self.tensors.len()
    }

    /// Whether the model has no tensors.
    pub fn is_empty(&self) -> bool {
        self.tensors.is_empty()
    }

    /// For a weight seen again by name in another function: the first
    /// tensor of that name, whose region and offset it shares.
    pub fn shared_with(&self, id: TensorId) -> Option<TensorId> {
        self.shared_with.get(id).copied().flatten()
    }

    /// For a view: its origin (a tensor of its function, or a weight of
    /// that name), resolved when the view was added.
    pub fn origin(&self, id: TensorId) -> Option<TensorId> {
        self.origins.get(id).copied().flatten()
    }

    /// The index in [`Model::functions`] of a tensor's function.
    pub fn function_index(&self, id: TensorId) -> Option<usize> {
        self.function_index.get(id).copied()
    }

    /// The functions, in the order first seen.
    pub fn functions(&self) -> &[String] {
        &self.functions
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::plan::Lifetime;

    fn lt(a: i64, b: i64) -> Option<Lifetime> {
        Some(Lifetime::half_open(a, b).unwrap())
    }

    #[test]
    fn bad_tensors_are_refused_and_change_nothing() {
        let mut m = Model::new();
        m.add(Tensor::activation("a", 64, Lifetime::half_open(0, 2).unwrap())).unwrap();
        let cases: Vec<(Tensor, Status)> = vec![
            (Tensor::new("", TensorKind::Constant, 4), Status::InvalidArgument),
            (Tensor::new("z", TensorKind::Constant, 0), Status::InvalidArgument),
            (Tensor::new("z", TensorKind::Constant, 4).with_alignment(3), Status::InvalidArgument),
            (Tensor::new("z", TensorKind::Constant, 4).with_tag("", "x"), Status::InvalidArgument),
            (Tensor { lifetime: lt(0, 1), ..Tensor::new("z", TensorKind::Constant, 4) }, Status::InvalidArgument),
            (Tensor::new("z", TensorKind::View, 4), Status::InvalidArgument),
            (Tensor::view("v", "missing", 0, 4, None), Status::NotFound),
            (Tensor::view("v", "a", 60, 8, None), Status::InvalidArgument),
            (Tensor::view("v", "a", u64::MAX, 8, None), Status::Overflow),
            (Tensor::activation("a", 8, Lifetime::half_open(0, 1).unwrap()), Status::AlreadyExists),
        ];
        for (t, status) in cases {
            let e = m.add(t.clone()).unwrap_err();
            assert_eq!(e.status(), status, "{t:?}: {}", e.message());
            assert_eq!(m.len(), 1);
        }
        let mut dup = Tensor::new("z", TensorKind::Constant, 4);
        dup.tags = vec![("k".into(), "1".into()), ("k".into(), "2".into())];
        assert!(m.add(dup).is_err());
        assert_eq!(m.len(), 1);
    }

    #[test]
    fn weights_are_shared_by_name_across_functions() {
        let mut m = Model::new();
        let w = m.add(Tensor::new("w", TensorKind::Constant, 16).in_function("f")).unwrap();
        let w2 = m.add(Tensor::new("w", TensorKind::Constant, 16).in_function("g")).unwrap();
        assert_eq!(m.shared_with(w), None);
        assert_eq!(m.shared_with(w2), Some(w));
        let e = m.add(Tensor::new("w", TensorKind::Constant, 32).in_function("h")).unwrap_err();
        assert!(e.message().contains("same kind and size"), "{}", e.message());
        assert_eq!(m.functions(), ["f", "g"]);
        let v = m.add(Tensor::view("wv", "w", 8, 8, None).in_function("h")).unwrap();
        assert_eq!(m.tensor(v).unwrap().view.as_ref().unwrap().origin, "w");
    }
}
