//! One timeline for the whole run: each function's steps are its own, and
//! functions run one after another in [`Model::functions`] order, so
//! function k's steps are shifted past functions 0..k-1 (activations of
//! different functions may then share bytes).
//!
//! A function spans from the first step to the end of the last lifetime
//! given in it (at least one step). A non-weight without a lifetime lives
//! over its whole function; a weight over the whole run; a view without a
//! lifetime as long as its origin. A root's planned lifetime is extended
//! to cover its views' lifetimes.

use super::assign::Roots;
use super::model::Model;
use crate::plan::Lifetime;
use crate::status::{Error, Result};

/// Each function's place on the run's timeline.
#[derive(Clone, Debug, PartialEq, Eq)]
struct Spans {
    /// Per function: its first local step.
    first: Vec<i64>,
    /// Per function: where its first step lands on the run's timeline.
    base: Vec<i64>,
    /// Per function: its number of steps.
    len: Vec<i64>,
    /// Steps of the whole run.
    total: i64,
}

fn spans(model: &Model) -> Result<Spans> {
    let n = model.functions().len();
    let (mut lo, mut hi) = (vec![i64::MAX; n], vec![i64::MIN; n]);
    for (id, t) in model.tensors().iter().enumerate() {
        if let Some(lt) = t.lifetime {
            let f = model.function_index(id).expect("every tensor has a function");
            lo[f] = lo[f].min(lt.start);
            hi[f] = hi[f].max(lt.end);
        }
    }
    let too_long = || Error::overflow("the functions' steps, one after another, overflow 64-bit steps");
    let mut spans = Spans { first: Vec::with_capacity(n), base: Vec::with_capacity(n), len: Vec::new(), total: 0 };
    for f in 0..n {
        let (first, len) = if lo[f] <= hi[f] { (lo[f], (hi[f] as i128 - lo[f] as i128).max(1)) } else { (0, 1) };
        let len = i64::try_from(len).map_err(|_| too_long())?;
        spans.first.push(first);
        spans.base.push(spans.total);
        spans.len.push(len);
        spans.total = spans.total.checked_add(len).ok_or_else(too_long)?;
    }
    Ok(spans)
}

/// Every tensor's lifetime on the run's timeline; a root's covers its
/// views'.
pub fn lifetimes(model: &Model, roots: &Roots) -> Result<Vec<Lifetime>> {
    let spans = spans(model)?;
    let whole_run = Lifetime { start: 0, end: spans.total };
    let mut out: Vec<Lifetime> = Vec::with_capacity(model.len());
    for (id, t) in model.tensors().iter().enumerate() {
        let f = model.function_index(id).expect("every tensor has a function");
        let lifetime = match (t.lifetime, t.kind.is_weight()) {
            (_, true) => whole_run,
            // A step's distance from its function's first step is at most
            // the function's length, and base plus that at most the run's,
            // both checked to fit (`base - first` alone may not: a first
            // step near i64::MIN).
            (Some(lt), false) => {
                let at = |step: i64| spans.base[f] + (step - spans.first[f]);
                Lifetime { start: at(lt.start), end: at(lt.end) }
            }
            (None, false) if t.view.is_some() => out[model.origin(id).unwrap_or(roots.of[id].0)],
            (None, false) => Lifetime { start: spans.base[f], end: spans.base[f] + spans.len[f] },
        };
        out.push(lifetime);
        let root = roots.of[id].0;
        if root != id && !lifetime.is_empty() {
            let r = &mut out[root];
            *r = if r.is_empty() {
                lifetime
            } else {
                Lifetime { start: r.start.min(lifetime.start), end: r.end.max(lifetime.end) }
            };
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::region::tensor::{Tensor, TensorKind};

    fn lt(a: i64, b: i64) -> Lifetime {
        Lifetime::half_open(a, b).unwrap()
    }

    #[test]
    fn functions_follow_one_another_and_views_extend_their_origin() {
        let mut m = Model::new();
        m.add(Tensor::new("w", TensorKind::Constant, 8)).unwrap();
        m.add(Tensor::activation("a", 16, lt(0, 2))).unwrap();
        m.add(Tensor::view("v", "a", 0, 8, Some(lt(1, 4)))).unwrap();
        m.add(Tensor::new("whole", TensorKind::Activation, 4)).unwrap();
        m.add(Tensor::activation("b", 16, lt(5, 7)).in_function("g")).unwrap();
        m.add(Tensor::new("gw", TensorKind::Input, 4).in_function("g")).unwrap();
        m.add(Tensor::view("bv", "b", 0, 4, None).in_function("g")).unwrap();
        let l = lifetimes(&m, &Roots::resolve(&m)).unwrap();
        // main spans 0..4 (the view's end), g spans 5..7 shifted to 4..6.
        assert_eq!(l, vec![lt(0, 6), lt(0, 4), lt(1, 4), lt(0, 4), lt(4, 6), lt(0, 6), lt(4, 6)]);
    }

    #[test]
    fn a_function_without_lifetimes_takes_one_step() {
        let mut m = Model::new();
        m.add(Tensor::new("x", TensorKind::Activation, 8)).unwrap();
        m.add(Tensor::new("y", TensorKind::Activation, 8).in_function("g")).unwrap();
        assert_eq!(lifetimes(&m, &Roots::resolve(&m)).unwrap(), vec![lt(0, 1), lt(1, 2)]);
    }

    #[test]
    fn a_run_too_long_for_64_bit_steps_is_an_overflow() {
        let mut m = Model::new();
        m.add(Tensor::activation("x", 8, lt(i64::MIN, i64::MAX))).unwrap();
        m.add(Tensor::activation("y", 8, lt(0, 1)).in_function("g")).unwrap();
        let e = lifetimes(&m, &Roots::resolve(&m)).unwrap_err();
        assert_eq!(e.status(), crate::status::Status::Overflow);
    }
}
