//! Rules: predicates over a tensor's fields, combined with AND, OR and NOT.
//! A region description's rule says which tensors it takes.

use std::fmt;

use super::tensor::{Tensor, TensorKind};
use crate::status::{Error, Result};

/// How deep rules may nest (see [`Rule::validate`]); the TOML reader stops
/// nesting earlier.
const MAX_RULE_DEPTH: usize = 100;

/// A predicate over a tensor.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Rule {
    /// Every tensor.
    Any,
    /// Tensors of this kind.
    Kind(TensorKind),
    /// The name is exactly this.
    Name(String),
    /// The name starts with this.
    NamePrefix(String),
    /// The name matches this glob: `*` any run of characters, `?` one
    /// character, everything else itself.
    NameGlob(String),
    /// The size, in bytes, is within `min..=max` (`max` `None`: no upper
    /// end).
    Size {
        /// Smallest size that matches.
        min: u64,
        /// Largest size that matches, if any.
        max: Option<u64>,
    },
    /// The dtype is exactly this.
    Dtype(String),
    /// The tensor has tag `key`, with value `value` when one is given.
    Tag {
        /// The tag's key.
        key: String,
        /// The value it must have (`None`: any value).
        value: Option<String>,
    },
    /// The tensor belongs to this function.
    Function(String),
    /// The tensor is a view. Views are placed inside their origin and never
    /// matched against region rules themselves; inside a rule, this is for
    /// tools that evaluate rules on their own.
    IsView,
    /// All of these (at least one).
    And(Vec<Rule>),
    /// Any of these (at least one).
    Or(Vec<Rule>),
    /// Not this.
    Not(Box<Rule>),
}

impl Rule {
    /// Whether `tensor` matches.
    pub fn matches(&self, tensor: &Tensor) -> bool {
        match self {
            Rule::Any => true,
            Rule::Kind(kind) => tensor.kind == *kind,
            Rule::Name(name) => *tensor.name == **name,
            Rule::NamePrefix(prefix) => tensor.name.starts_with(prefix.as_str()),
            Rule::NameGlob(glob) => glob_matches(glob, &tensor.name),
            Rule::Size { min, max } => tensor.size >= *min && max.is_none_or(|max| tensor.size <= max),
            Rule::Dtype(dtype) => tensor.dtype == *dtype,
            Rule::Tag { key, value } => match (tensor.tag(key), value) {
                (Some(have), Some(want)) => have == want,
                (Some(_), None) => true,
                (None, _) => false,
            },
            Rule::Function(function) => *tensor.function == **function,
            Rule::IsView => tensor.kind == TensorKind::View,
            Rule::And(rules) => rules.iter().all(|r| r.matches(tensor)),
            Rule::Or(rules) => rules.iter().any(|r| r.matches(tensor)),
            Rule::Not(rule) => !rule.matches(tensor),
        }
    }

    /// Checks the rule is well formed: it nests at most 100 levels deep
    /// (matching, checking and printing recurse, and a stack overflow
    /// cannot be caught), AND and OR have at least one rule, names,
    /// prefixes, globs, dtypes, tag keys and functions are not empty, size
    /// ranges are not reversed. The error names the part.
    pub fn validate(&self) -> Result<()> {
        if self.nests_deeper_than(MAX_RULE_DEPTH) {
            return Err(Error::invalid(format!("rule nests deeper than {MAX_RULE_DEPTH} levels")));
        }
        self.validate_parts()
    }

    /// Whether some path from this rule down passes more than `limit`
    /// rules: without recursion, so that any depth can be asked.
    fn nests_deeper_than(&self, limit: usize) -> bool {
        let mut stack = vec![(self, 1usize)];
        while let Some((rule, depth)) = stack.pop() {
            if depth > limit {
                return true;
            }
            match rule {
                Rule::And(rules) | Rule::Or(rules) => stack.extend(rules.iter().map(|r| (r, depth + 1))),
                Rule::Not(rule) => stack.push((rule, depth + 1)),
                _ => {}
            }
        }
        false
    }

    fn validate_parts(&self) -> Result<()> {
        let empty = |what: &str| Err(Error::invalid(format!("rule {self}: empty {what}")));
        match self {
            Rule::Any | Rule::Kind(_) | Rule::IsView => Ok(()),
            Rule::Name(s) if s.is_empty() => empty("name"),
            Rule::NamePrefix(s) if s.is_empty() => empty("name prefix"),
            Rule::NameGlob(s) if s.is_empty() => empty("name glob"),
            Rule::Dtype(s) if s.is_empty() => empty("dtype"),
            Rule::Function(s) if s.is_empty() => empty("function"),
            Rule::Tag { key, .. } if key.is_empty() => empty("tag key"),
            Rule::Name(_) | Rule::NamePrefix(_) | Rule::NameGlob(_) | Rule::Dtype(_) | Rule::Function(_) => Ok(()),
            Rule::Tag { .. } => Ok(()),
            Rule::Size { min, max: Some(max) } if max < min => {
                Err(Error::invalid(format!("rule {self}: size range is reversed ({min} B > {max} B)")))
            }
            Rule::Size { .. } => Ok(()),
            Rule::And(rules) | Rule::Or(rules) if rules.is_empty() => Err(Error::invalid(format!(
                "rule {self}: an {} needs at least one rule",
                if matches!(self, Rule::And(_)) { "AND" } else { "OR" }
            ))),
            Rule::And(rules) | Rule::Or(rules) => rules.iter().try_for_each(Rule::validate_parts),
            Rule::Not(rule) => rule.validate_parts(),
        }
    }

    /// `a AND b`, flattening nested ANDs.
    pub fn and(self, other: Rule) -> Rule {
        match self {
            Rule::And(mut rules) => {
                rules.push(other);
                Rule::And(rules)
            }
            first => Rule::And(vec![first, other]),
        }
    }

    /// `a OR b`, flattening nested ORs.
    pub fn or(self, other: Rule) -> Rule {
        match self {
            Rule::Or(mut rules) => {
                rules.push(other);
                Rule::Or(rules)
            }
            first => Rule::Or(vec![first, other]),
        }
    }

    /// `NOT a`.
    pub fn negate(self) -> Rule {
        Rule::Not(Box::new(self))
    }
}

/// Written the way messages and reports show it:
/// `(kind = constant AND tag op = fc)`.
impl fmt::Display for Rule {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let join = |f: &mut fmt::Formatter<'_>, rules: &[Rule], op: &str| -> fmt::Result {
            if rules.is_empty() {
                return write!(f, "({op} of nothing)");
            }
            write!(f, "(")?;
            for (i, r) in rules.iter().enumerate() {
                if i > 0 {
                    write!(f, " {op} ")?;
                }
                write!(f, "{r}")?;
            }
            write!(f, ")")
        };
        match self {
            Rule::Any => write!(f, "any"),
            Rule::Kind(kind) => write!(f, "kind = {}", kind.name()),
            Rule::Name(s) => write!(f, "name = '{s}'"),
            Rule::NamePrefix(s) => write!(f, "name starts with '{s}'"),
            Rule::NameGlob(s) => write!(f, "name like '{s}'"),
            Rule::Size { min, max: Some(max) } => write!(f, "size in {min}..={max} B"),
            Rule::Size { min, max: None } => write!(f, "size >= {min} B"),
            Rule::Dtype(s) => write!(f, "dtype = '{s}'"),
            Rule::Tag { key, value: Some(v) } => write!(f, "tag {key} = '{v}'"),
            Rule::Tag { key, value: None } => write!(f, "has tag {key}"),
            Rule::Function(s) => write!(f, "function = '{s}'"),
            Rule::IsView => write!(f, "is view"),
            Rule::And(rules) => join(f, rules, "AND"),
            Rule::Or(rules) => join(f, rules, "OR"),
            Rule::Not(rule) => write!(f, "NOT {rule}"),
        }
    }
}

/// Glob matching with `*` and `?` over characters (UTF-8 scalar values,
/// so `?` takes `é` whole), iterative with one backtrack point (linear in
/// practice, never exponential). Positions are byte indices, always on
/// character boundaries.
fn glob_matches(pattern: &str, text: &str) -> bool {
    let next = |s: &str, at: usize| s[at..].chars().next().map(|c| (c, c.len_utf8()));
    let (mut p, mut t) = (0, 0);
    // After the last `*` seen: where the pattern goes on, and where in the
    // text that `*`'s run ends so far.
    let mut star: Option<(usize, usize)> = None;
    while let Some((tc, tlen)) = next(text, t) {
        match next(pattern, p) {
            Some(('*', plen)) => {
                star = Some((p + plen, t));
                p += plen;
            }
            Some((pc, plen)) if pc == '?' || pc == tc => {
                p += plen;
                t += tlen;
            }
            _ => match star {
                // The `*` takes one more character; retry after it.
                Some((after, end)) => {
                    let end = end + next(text, end).map_or(0, |(_, len)| len);
                    star = Some((after, end));
                    p = after;
                    t = end;
                }
                None => return false,
            },
        }
    }
    pattern[p..].chars().all(|c| c == '*')
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn globs() {
        for (p, t, want) in [
            ("fc*.weight", "fc1.weight", true),
            ("fc*.weight", "fc1.bias", false),
            ("*", "", true),
            ("?", "", false),
            ("a?c", "abc", true),
            ("*a*b", "xaxxb", true),
            ("*a*b", "xaxxbc", false),
            ("conv", "conv", true),
            ("conv", "conv1", false),
            // `?` is one character, however many bytes it takes in UTF-8.
            ("?2", "é2", true),
            ("?", "é", true),
            ("??", "é", false),
            ("a?c", "a\u{1F600}c", true),
            ("*é", "xxé", true),
            ("*?", "日本", true),
            ("?*?", "日", false),
            ("é*", "e", false),
        ] {
            assert_eq!(glob_matches(p, t), want, "{p} ~ {t}");
        }
    }

    #[test]
    fn combinators_and_fields() {
        let t = Tensor::new("fc1.weight", TensorKind::Constant, 4096).with_tag("op", "fc").with_dtype("i8");
        let fc = Rule::Kind(TensorKind::Constant).and(Rule::Tag { key: "op".into(), value: Some("fc".into()) });
        assert!(fc.matches(&t));
        assert!(!fc.clone().negate().matches(&t));
        assert!(Rule::Dtype("f32".into()).or(Rule::NamePrefix("fc".into())).matches(&t));
        assert!(Rule::Size { min: 4096, max: Some(4096) }.matches(&t));
        assert!(!Rule::Size { min: 0, max: Some(4095) }.matches(&t));
        assert!(Rule::Tag { key: "op".into(), value: None }.matches(&t));
        assert!(!Rule::IsView.matches(&t));
        assert!(Rule::Function("main".into()).matches(&t));
        assert_eq!(fc.to_string(), "(kind = constant AND tag op = 'fc')");
    }

    #[test]
    fn malformed_rules_are_named() {
        assert!(Rule::And(vec![]).validate().unwrap_err().message().contains("AND needs at least one rule"));
        assert!(Rule::Not(Box::new(Rule::Or(vec![]))).validate().is_err());
        assert!(Rule::Name(String::new()).validate().is_err());
        assert!(Rule::Size { min: 8, max: Some(4) }.validate().is_err());
        assert!(Rule::Any.and(Rule::IsView.negate()).validate().is_ok());
        let deep = |levels: usize| (1..levels).fold(Rule::Any, |r, _| r.negate());
        assert!(deep(MAX_RULE_DEPTH).validate().is_ok());
        let e = deep(MAX_RULE_DEPTH + 1).validate().unwrap_err();
        assert_eq!(e.message(), "rule nests deeper than 100 levels");
    }
}
