//! The parsed TOML document walked into the file's structures by hand, with
//! the messages, spans and order of errors that the serde derive this
//! replaces gave (the reader without serde keeps the library small): keys
//! in the table's (sorted) order, the first error wins, a missing required
//! key is reported after the table's keys, in declaration order.

use std::ops::Range;

use toml::de::{DeTable, DeValue};
use toml::Spanned;

/// An error of reading and, once known, where: the innermost value an
/// error is found in locates it.
pub(super) struct ReadError {
    pub(super) message: String,
    pub(super) span: Option<Range<usize>>,
}

pub(super) type Read<T> = std::result::Result<T, ReadError>;

pub(super) fn fail<T>(message: String) -> Read<T> {
    Err(ReadError { message, span: None })
}

/// `read(value)`, its error located at `value` unless located already.
pub(super) fn located<'v, 'i, T>(
    value: &'v Spanned<DeValue<'i>>,
    read: impl FnOnce(&'v DeValue<'i>) -> Read<T>,
) -> Read<T> {
    read(value.get_ref()).map_err(|mut e| {
        e.span.get_or_insert_with(|| value.span());
        e
    })
}

/// `read`'s result with the value's span.
pub(super) fn spanned<'v, 'i, T>(
    value: &'v Spanned<DeValue<'i>>,
    read: impl FnOnce(&'v DeValue<'i>) -> Read<T>,
) -> Read<Spanned<T>> {
    located(value, read).map(|v| Spanned::new(value.span(), v))
}

/// An integer as the reader hands it over: the first of these types that
/// holds it.
enum Integer {
    Signed(i64),
    Unsigned(u64),
    Signed128(i128),
    Unsigned128(u128),
}

fn integer(v: &toml::de::DeInteger<'_>) -> Read<Integer> {
    let (text, radix) = (v.as_str(), v.radix());
    if let Ok(i) = i64::from_str_radix(text, radix) {
        Ok(Integer::Signed(i))
    } else if let Ok(u) = u64::from_str_radix(text, radix) {
        Ok(Integer::Unsigned(u))
    } else if let Ok(i) = i128::from_str_radix(text, radix) {
        Ok(Integer::Signed128(i))
    } else if let Ok(u) = u128::from_str_radix(text, radix) {
        Ok(Integer::Unsigned128(u))
    } else {
        fail("integer number overflowed".to_string())
    }
}

fn float(v: &toml::de::DeFloat<'_>) -> Read<f64> {
    match v.as_str().parse::<f64>() {
        Ok(f) if !f.is_infinite() || v.as_str().contains("inf") => Ok(f),
        _ => fail("floating-point number overflowed".to_string()),
    }
}

/// What a value is, as the error on a value of the wrong type names it.
fn unexpected(v: &DeValue<'_>) -> Read<String> {
    Ok(match v {
        DeValue::String(s) => format!("string {:?}", s.as_ref()),
        DeValue::Integer(i) => match integer(i)? {
            Integer::Signed(i) => format!("integer `{i}`"),
            Integer::Unsigned(u) => format!("integer `{u}`"),
            Integer::Signed128(i) => format!("integer `{i}` as i128"),
            Integer::Unsigned128(u) => format!("integer `{u}` as u128"),
        },
        DeValue::Float(f) => {
            let f = float(f)?;
            let mut text = f.to_string();
            if f.is_finite() && !text.contains('.') {
                text.push_str(".0");
            }
            format!("floating point `{text}`")
        }
        DeValue::Boolean(b) => format!("boolean `{b}`"),
        DeValue::Datetime(_) | DeValue::Table(_) => "map".to_string(),
        DeValue::Array(_) => "sequence".to_string(),
    })
}

pub(super) fn invalid_type<T>(v: &DeValue<'_>, expected: &str) -> Read<T> {
    fail(format!("invalid type: {}, expected {expected}", unexpected(v)?))
}

pub(super) fn boolean(v: &DeValue<'_>) -> Read<bool> {
    match v {
        DeValue::Boolean(b) => Ok(*b),
        _ => invalid_type(v, "a boolean"),
    }
}

pub(super) fn string(v: &DeValue<'_>) -> Read<String> {
    match v {
        DeValue::String(s) => Ok(s.to_string()),
        _ => invalid_type(v, "a string"),
    }
}

pub(super) fn unsigned32(v: &DeValue<'_>) -> Read<u32> {
    let out_of_range = |shown: String| fail(format!("invalid value: integer `{shown}`, expected u32"));
    match v {
        DeValue::Integer(i) => match integer(i)? {
            Integer::Signed(i) => u32::try_from(i).or_else(|_| out_of_range(i.to_string())),
            Integer::Unsigned(u) => u32::try_from(u).or_else(|_| out_of_range(u.to_string())),
            Integer::Signed128(_) | Integer::Unsigned128(_) => invalid_type(v, "u32"),
        },
        _ => invalid_type(v, "u32"),
    }
}

/// A TOML array, each element read by `element`.
pub(super) fn array<'v, 'i, T>(
    v: &'v DeValue<'i>,
    mut element: impl FnMut(&'v Spanned<DeValue<'i>>) -> Read<T>,
) -> Read<Vec<T>> {
    match v {
        DeValue::Array(items) => items.iter().map(&mut element).collect(),
        _ => invalid_type(v, "a sequence"),
    }
}

/// A structure's keys, for reading a table into it.
pub(super) struct Shape {
    /// For errors: `struct <name>`.
    pub(super) name: &'static str,
    pub(super) fields: &'static [&'static str],
    /// Fields that must be there (neither optional nor defaulted).
    pub(super) required: &'static [&'static str],
}

/// The key the reader gives a date-time, as the derive saw it.
const DATETIME_KEY: &str = "$__toml_private_datetime";

fn unknown_field<T>(key: &str, fields: &[&str]) -> Read<T> {
    let quoted: Vec<String> = fields.iter().map(|f| format!("`{f}`")).collect();
    fail(match quoted.as_slice() {
        [] => format!("unknown field `{key}`, there are no fields"),
        [one] => format!("unknown field `{key}`, expected {one}"),
        [a, b] => format!("unknown field `{key}`, expected {a} or {b}"),
        _ => format!("unknown field `{key}`, expected one of {}", quoted.join(", ")),
    })
}

/// Reads a table (or, as the derive allowed, an array holding the fields in
/// declaration order) into a structure: `set(field, value)` for each field
/// written.
pub(super) fn structure<'v, 'i>(
    v: &'v DeValue<'i>,
    shape: &Shape,
    set: &mut dyn FnMut(usize, &'v Spanned<DeValue<'i>>) -> Read<()>,
) -> Read<()> {
    match v {
        DeValue::Table(table) => table_fields(table, shape, set),
        DeValue::Array(items) => {
            for (k, _) in shape.fields.iter().enumerate() {
                let Some(item) = items.get(k) else {
                    return fail(format!(
                        "invalid length {k}, expected struct {} with {} elements",
                        shape.name,
                        shape.fields.len()
                    ));
                };
                located(item, |_| set(k, item))?;
            }
            Ok(())
        }
        DeValue::Datetime(_) => unknown_field(DATETIME_KEY, shape.fields),
        _ => invalid_type(v, &format!("struct {}", shape.name)),
    }
}

pub(super) fn table_fields<'v, 'i>(
    table: &'v DeTable<'i>,
    shape: &Shape,
    set: &mut dyn FnMut(usize, &'v Spanned<DeValue<'i>>) -> Read<()>,
) -> Read<()> {
    let mut seen = vec![false; shape.fields.len()];
    for (key, value) in table.iter() {
        let Some(k) = shape.fields.iter().position(|f| *f == key.get_ref().as_ref()) else {
            return unknown_field(key.get_ref(), shape.fields).map_err(|e| ReadError { span: Some(key.span()), ..e });
        };
        seen[k] = true;
        located(value, |_| set(k, value))?;
    }
    match shape.required.iter().find(|r| !shape.fields.iter().zip(&seen).any(|(f, &s)| s && f == *r)) {
        Some(missing) => fail(format!("missing field `{missing}`")),
        None => Ok(()),
    }
}

/// `[region.attributes]`: string values, in file order (the reader hands
/// tables over sorted by key; the keys' positions give the order back).
pub(super) fn attributes(v: &DeValue<'_>) -> Read<Vec<(String, String)>> {
    match v {
        DeValue::Table(table) => {
            let mut entries: Vec<(usize, String, String)> = Vec::new();
            for (key, value) in table.iter() {
                entries.push((key.span().start, key.get_ref().to_string(), located(value, string)?));
            }
            entries.sort_by_key(|&(start, _, _)| start);
            Ok(entries.into_iter().map(|(_, key, value)| (key, value)).collect())
        }
        DeValue::Datetime(_) => fail(format!("invalid type: string {DATETIME_KEY:?}, expected a spanned value")),
        _ => invalid_type(v, "a table of string attributes"),
    }
}
