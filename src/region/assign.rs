//! Which tensors are planned, and which description takes each.
//!
//! Only *roots* are planned and matched against rules: a view lives inside
//! its origin (resolved through views of views), and a weight seen again
//! by name in another function shares the first one's place. Every other
//! tensor follows its root, at the root's offset plus the views' offsets.

use std::fmt::Write;

use super::config::RegionConfig;
use super::model::{Model, TensorId};
use super::rule::Rule;
use super::tensor::TensorKind;
use crate::status::{Error, Result};

/// For each tensor of a model: the root it lives in and its byte offset
/// inside that root (0 for a root itself).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Roots {
    /// `(root, offset)` per tensor, in model order.
    pub of: Vec<(TensorId, u64)>,
}

impl Roots {
    /// Resolves every tensor in one pass: an origin is always added before
    /// its views, so it is resolved first.
    pub fn resolve(model: &Model) -> Roots {
        let mut of: Vec<(TensorId, u64)> = Vec::with_capacity(model.len());
        for (id, tensor) in model.tensors().iter().enumerate() {
            let root = match (model.origin(id), &tensor.view) {
                (Some(origin), Some(view)) => {
                    let (root, offset) = of[origin];
                    (root, offset + view.offset)
                }
                _ => (model.shared_with(id).unwrap_or(id), 0),
            };
            of.push(root);
        }
        Roots { of }
    }

    /// Whether `id` is planned itself.
    pub fn is_root(&self, id: TensorId) -> bool {
        self.of[id].0 == id
    }
}

/// The index (in match order) of the description that takes each root;
/// `None` for tensors that follow a root. Errors on a root no rule matches,
/// naming it and every rule tried.
pub fn assign(model: &Model, config: &RegionConfig, roots: &Roots) -> Result<Vec<Option<usize>>> {
    let descriptions = config.descriptions();
    // Most rules name a kind: a tensor skips, without walking them, the
    // rules that cannot match its kind.
    let kinds: Vec<u8> = descriptions.iter().map(|d| possible_kinds(&d.rule)).collect();
    let mut chosen = Vec::with_capacity(model.len());
    for (id, tensor) in model.tensors().iter().enumerate() {
        if !roots.is_root(id) {
            chosen.push(None);
            continue;
        }
        let bit = 1u8 << tensor.kind as u8;
        let first = (0..descriptions.len()).find(|&d| kinds[d] & bit != 0 && descriptions[d].rule.matches(tensor));
        match first {
            Some(d) => chosen.push(Some(d)),
            None => {
                let mut message = format!("{} matches no region; tried: ", tensor.describe());
                if config.descriptions().is_empty() {
                    message.push_str("no regions (the configuration is empty)");
                }
                for (i, d) in config.descriptions().iter().enumerate() {
                    let sep = if i == 0 { "" } else { "; " };
                    let _ = write!(message, "{sep}{}: {}", d.name, d.rule);
                }
                return Err(Error::invalid(message));
            }
        }
    }
    Ok(chosen)
}

/// The kinds a tensor matching `rule` may have, one bit per
/// [`TensorKind`] value: exact for kinds, AND, OR and views; every kind
/// under NOT and for the other fields.
fn possible_kinds(rule: &Rule) -> u8 {
    const EVERY: u8 = (1 << TensorKind::ALL.len()) - 1;
    match rule {
        Rule::Kind(kind) => 1 << *kind as u8,
        Rule::IsView => 1 << TensorKind::View as u8,
        Rule::And(rules) => rules.iter().fold(EVERY, |k, r| k & possible_kinds(r)),
        Rule::Or(rules) => rules.iter().fold(0, |k, r| k | possible_kinds(r)),
        _ => EVERY,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::plan::Lifetime;
    use crate::region::tensor::Tensor;

    #[test]
    fn views_of_views_and_shared_weights_resolve_to_their_root() {
        let mut m = Model::new();
        let lt = Some(Lifetime::half_open(0, 2).unwrap());
        m.add(Tensor::activation("a", 256, Lifetime::half_open(0, 3).unwrap())).unwrap();
        m.add(Tensor::view("v", "a", 64, 128, lt)).unwrap();
        m.add(Tensor::view("vv", "v", 32, 16, lt)).unwrap();
        m.add(Tensor::new("w", TensorKind::Constant, 8)).unwrap();
        m.add(Tensor::new("w", TensorKind::Constant, 8).in_function("f2")).unwrap();
        m.add(Tensor::view("wv", "w", 4, 4, None).in_function("f2")).unwrap();
        let r = Roots::resolve(&m);
        assert_eq!(r.of, vec![(0, 0), (0, 64), (0, 96), (3, 0), (3, 0), (3, 4)]);
        assert_eq!((0..6).filter(|&i| r.is_root(i)).collect::<Vec<_>>(), vec![0, 3]);
    }

    #[test]
    fn rules_say_which_kinds_they_may_match() {
        let k = |kind: TensorKind| Rule::Kind(kind);
        let bit = |kind: TensorKind| 1u8 << kind as u8;
        let weights_or_views = k(TensorKind::Constant).or(k(TensorKind::Input)).or(Rule::IsView);
        assert_eq!(
            possible_kinds(&weights_or_views),
            bit(TensorKind::Constant) | bit(TensorKind::Input) | bit(TensorKind::View)
        );
        let fc = k(TensorKind::Constant).and(Rule::NamePrefix("fc".into()));
        assert_eq!(possible_kinds(&fc), bit(TensorKind::Constant));
        assert_eq!(possible_kinds(&k(TensorKind::Constant).and(k(TensorKind::Input))), 0);
        assert_eq!(possible_kinds(&k(TensorKind::Constant).negate()), 0x7f);
        assert_eq!(possible_kinds(&Rule::Any), 0x7f);
        // The filter changes no assignment: it only skips rules that fail.
        let mut m = Model::new();
        m.add(Tensor::new("fc1", TensorKind::Constant, 4)).unwrap();
        m.add(Tensor::new("fc2", TensorKind::Input, 4)).unwrap();
        m.add(Tensor::new("x", TensorKind::Activation, 4)).unwrap();
        let mut c = RegionConfig::new();
        for (i, rule) in
            [fc, k(TensorKind::Constant).negate().and(Rule::NamePrefix("fc".into())), Rule::Any].into_iter().enumerate()
        {
            c.append(crate::region::RegionDescription::new(i as u32, format!("r{i}"), rule)).unwrap();
        }
        let roots = Roots::resolve(&m);
        assert_eq!(assign(&m, &c, &roots).unwrap(), vec![Some(0), Some(1), Some(2)]);
        for (id, t) in m.tensors().iter().enumerate() {
            assert_eq!(assign(&m, &c, &roots).unwrap()[id], c.first_match(t));
        }
    }

    #[test]
    fn an_unmatched_tensor_names_every_rule_tried() {
        let mut m = Model::new();
        m.add(Tensor::activation("x", 4, Lifetime::half_open(0, 1).unwrap())).unwrap();
        let c = RegionConfig::glow_defaults();
        let mut only_weights = RegionConfig::new();
        for d in c.descriptions().iter().take(4) {
            only_weights.append(d.clone()).unwrap();
        }
        let e = assign(&m, &only_weights, &Roots::resolve(&m)).unwrap_err();
        assert_eq!(e.status(), crate::status::Status::InvalidArgument);
        assert_eq!(
            e.message(),
            "'x' (activation, function main) matches no region; tried: constant-weights: kind = constant; \
             mutable-weights: kind = mutable; mutable-input-weights: kind = input; \
             mutable-output-weights: (kind = output OR kind = input-output)"
        );
        let e = assign(&m, &RegionConfig::new(), &Roots::resolve(&m)).unwrap_err();
        assert!(e.message().ends_with("tried: no regions (the configuration is empty)"), "{}", e.message());
        c.validate().unwrap();
        assert_eq!(assign(&m, &c, &Roots::resolve(&m)).unwrap(), vec![Some(4)]);
    }
}
