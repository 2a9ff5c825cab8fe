//! The MiniMalloc CSV interchange format, used by MiniMalloc and idealloc:
//! a header `id,lower,upper,size` and an optional `offset` column, one buffer
//! per row, half-open non-empty lifetimes `[lower, upper)` with `lower >= 0`,
//! ids unique opaque tokens. An empty `offset` cell means "plan it"; a
//! number fixes the offset.
//!
//! Output adds (or fills) the `offset` column: `id,lower,upper,size,offset`.

use std::collections::HashMap;
use std::fmt::Write as _;

use super::problem::{Lifetime, Problem};
use crate::status::{Error, Result};

/// One row of a trace.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Row {
    /// Opaque id token, unique in the trace.
    pub id: String,
    /// First live step.
    pub lower: i64,
    /// First step no longer live.
    pub upper: i64,
    /// Bytes.
    pub size: u64,
    /// A fixed offset, if given.
    pub offset: Option<u64>,
    /// The row's line in the input (1-based; the header is line 1, blank
    /// lines count).
    pub line: usize,
}

impl Row {
    /// How errors name the row: its id and line, e.g. `conv1 (line 7)`.
    pub fn describe(&self) -> String {
        format!("{} (line {})", self.id, self.line)
    }
}

/// Parses a trace given as bytes: as [`parse`], and input that is not UTF-8
/// is an error naming the line and column of the first bad byte.
pub fn parse_bytes(bytes: &[u8]) -> Result<Vec<Row>> {
    match std::str::from_utf8(bytes) {
        Ok(text) => parse(text),
        Err(e) => {
            let good = &bytes[..e.valid_up_to()];
            let line = 1 + good.iter().filter(|&&b| b == b'\n').count();
            let column = 1 + good.len() - good.iter().rposition(|&b| b == b'\n').map_or(0, |p| p + 1);
            Err(Error::invalid(format!("line {line}: invalid UTF-8 at column {column} (byte {})", e.valid_up_to())))
        }
    }
}

/// One cell as a 64-bit integer; errors say whether it is too large, too
/// small, negative where it may not be, or not a number at all.
fn integer<T>(cell: &str, what: &str, line: usize) -> Result<T>
where
    T: std::str::FromStr<Err = std::num::ParseIntError> + std::fmt::Display + Bounded,
{
    use std::num::IntErrorKind;
    let digits = |s: &str| !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit());
    cell.parse::<T>().map_err(|e| {
        let why = match e.kind() {
            IntErrorKind::Empty => format!("{what} is empty"),
            IntErrorKind::PosOverflow => format!("{what} {cell} is too large for 64 bits (the largest is {})", T::MAX),
            IntErrorKind::NegOverflow => format!("{what} {cell} is too small for 64 bits (the smallest is {})", T::MIN),
            // Only an unsigned cell fails on a minus sign before digits.
            _ if cell.strip_prefix('-').is_some_and(digits) => format!("{what} {cell} is negative"),
            _ => format!("{what} '{cell}' is not an integer"),
        };
        Error::invalid(format!("line {line}: {why}"))
    })
}

/// The range of a cell's integer type, for error messages.
trait Bounded {
    const MIN: Self;
    const MAX: Self;
}

impl Bounded for i64 {
    const MIN: i64 = i64::MIN;
    const MAX: i64 = i64::MAX;
}

impl Bounded for u64 {
    const MIN: u64 = u64::MIN;
    const MAX: u64 = u64::MAX;
}

/// A cell as a signed 64-bit integer; `what` names the column in errors
/// (`line 3: size 'four' is not an integer`). Also for the region model CSV
/// of `nnmem regions`, which extends this format.
pub fn parse_i64(cell: &str, what: &str, line: usize) -> Result<i64> {
    integer(cell, what, line)
}

/// A cell as an unsigned 64-bit integer, as [`parse_i64`].
pub fn parse_u64(cell: &str, what: &str, line: usize) -> Result<u64> {
    integer(cell, what, line)
}

/// Checks the lifetime `[lower, upper)` of the row on `line`: `lower` not
/// negative, `upper` above it (an empty lifetime is refused: half-open
/// `[5, 6)` is the buffer live at step 5 only).
pub fn check_lifetime(lower: i64, upper: i64, line: usize) -> Result<()> {
    if lower < 0 {
        return Err(Error::invalid(format!("line {line}: lower {lower} is negative (steps start at 0)")));
    }
    if upper < lower {
        return Err(Error::invalid(format!("line {line}: upper {upper} is below lower {lower}")));
    }
    if upper == lower {
        return Err(Error::invalid(format!(
            "line {line}: empty lifetime: upper equals lower ({lower}); upper is exclusive, a buffer live at step {lower} only has upper {}",
            lower.saturating_add(1)
        )));
    }
    Ok(())
}

/// Parses a trace. Errors name the line (1-based, header is line 1) and the
/// reason: a malformed header or row, a number that is not an integer or
/// does not fit 64 bits, a negative size, offset or `lower`, an `upper` not
/// above `lower` (an empty lifetime is refused: half-open `[5, 6)` is the
/// buffer live at step 5 only), or an id already used (both lines named).
pub fn parse(text: &str) -> Result<Vec<Row>> {
    let mut lines = text.lines().enumerate().filter(|(_, l)| !l.trim().is_empty());
    let (_, header) =
        lines.next().ok_or_else(|| Error::invalid("line 1: empty input, expected header id,lower,upper,size"))?;
    let columns: Vec<String> =
        header.split(',').map(|c| c.trim().trim_start_matches('\u{feff}').to_ascii_lowercase()).collect();
    let find = |name: &str| columns.iter().position(|c| c == name);
    let (id, lower, upper, size) = match (find("id"), find("lower"), find("upper"), find("size")) {
        (Some(a), Some(b), Some(c), Some(d)) => (a, b, c, d),
        _ => {
            return Err(Error::invalid(format!(
                "line 1: header must name id,lower,upper,size (optionally offset), got '{}'",
                header.trim()
            )))
        }
    };
    let offset = find("offset");
    let mut rows = Vec::new();
    let mut seen: HashMap<String, usize> = HashMap::new();
    for (n, line) in lines {
        let line_no = n + 1;
        let cells: Vec<&str> = line.split(',').map(str::trim).collect();
        if cells.len() != columns.len() {
            return Err(Error::invalid(format!(
                "line {line_no}: expected {} fields, found {}",
                columns.len(),
                cells.len()
            )));
        }
        if cells[id].is_empty() {
            return Err(Error::invalid(format!("line {line_no}: empty id")));
        }
        let row = Row {
            id: cells[id].to_string(),
            lower: integer(cells[lower], "lower", line_no)?,
            upper: integer(cells[upper], "upper", line_no)?,
            size: integer(cells[size], "size", line_no)?,
            offset: match offset {
                Some(col) if !cells[col].is_empty() => Some(integer(cells[col], "offset", line_no)?),
                _ => None,
            },
            line: line_no,
        };
        check_lifetime(row.lower, row.upper, line_no)?;
        if let Some(first) = seen.insert(row.id.clone(), line_no) {
            return Err(Error::invalid(format!("line {line_no}: id '{}' is already used on line {first}", row.id)));
        }
        rows.push(row);
    }
    Ok(rows)
}

/// Builds a problem from rows. Errors name the row's id and line.
pub fn to_problem(rows: &[Row], alignment: u64) -> Result<Problem> {
    let mut p = Problem::new(alignment)?;
    for r in rows {
        p.push(r.size, Lifetime::half_open(r.lower, r.upper)?, r.offset)
            .map_err(|e| Error::new(e.status(), format!("{}: {}", r.describe(), e.message())))?;
    }
    Ok(p)
}

/// Writes `id,lower,upper,size,offset` rows in input order.
pub fn write(rows: &[Row], offsets: &[u64]) -> String {
    let mut out = String::with_capacity(rows.len() * 32 + 32);
    out.push_str("id,lower,upper,size,offset\n");
    for (r, o) in rows.iter().zip(offsets) {
        let _ = writeln!(out, "{},{},{},{},{}", r.id, r.lower, r.upper, r.size, o);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_with_and_without_offsets() {
        let rows = parse("id,lower,upper,size\nb1,0,3,4\n\nb2,3,9,4\n").unwrap();
        assert_eq!(rows.len(), 2);
        assert_eq!(rows[1], Row { id: "b2".into(), lower: 3, upper: 9, size: 4, offset: None, line: 4 });
        assert_eq!(rows[1].describe(), "b2 (line 4)");
        let rows = parse("id,lower,upper,size,offset\nx,0,1,8,\ny,0,1,8,16\n").unwrap();
        assert_eq!((rows[0].offset, rows[1].offset), (None, Some(16)));
    }

    #[test]
    fn errors_name_the_line() {
        let e = parse("id,lower,upper,size\na,0,1,4\nb,0,x,4\n").unwrap_err();
        assert_eq!(e.message(), "line 3: upper 'x' is not an integer");
        let e = parse("id,lower,upper,size\na,5,1,4\n").unwrap_err();
        assert_eq!(e.message(), "line 2: upper 1 is below lower 5");
        let e = parse("id,lower,upper,size\na,0,1\n").unwrap_err();
        assert_eq!(e.message(), "line 2: expected 4 fields, found 3");
        let e = parse("a,b,c\n").unwrap_err();
        assert!(e.message().starts_with("line 1: header"));
        let e = parse("id,lower,upper,size\na,0,1,-4\n").unwrap_err();
        assert_eq!(e.message(), "line 2: size -4 is negative");
        let e = parse("id,lower,upper,size\na,0,1,\n").unwrap_err();
        assert_eq!(e.message(), "line 2: size is empty");
        let rows = parse("id,lower,upper,size,offset\na,0,1,8,3\n").unwrap();
        let e = to_problem(&rows, 4).unwrap_err();
        assert!(e.message().starts_with("a (line 2): fixed offset 3"), "{}", e.message());
    }

    #[test]
    fn numbers_past_64_bits_are_too_large_not_malformed() {
        let e = parse("id,lower,upper,size\na,0,1,18446744073709551616\n").unwrap_err();
        assert_eq!(
            e.message(),
            "line 2: size 18446744073709551616 is too large for 64 bits (the largest is 18446744073709551615)"
        );
        let e = parse("id,lower,upper,size\na,0,9223372036854775808,1\n").unwrap_err();
        assert_eq!(
            e.message(),
            "line 2: upper 9223372036854775808 is too large for 64 bits (the largest is 9223372036854775807)"
        );
        let e = parse("id,lower,upper,size\na,-9223372036854775809,1,1\n").unwrap_err();
        assert!(
            e.message().starts_with("line 2: lower -9223372036854775809 is too small for 64 bits"),
            "{}",
            e.message()
        );
        // The largest values themselves are read.
        let rows = parse("id,lower,upper,size,offset\na,0,9223372036854775807,18446744073709551615,0\n").unwrap();
        assert_eq!((rows[0].upper, rows[0].size), (i64::MAX, u64::MAX));
    }

    #[test]
    fn negative_lower_empty_lifetime_and_duplicate_ids_are_refused() {
        let e = parse("id,lower,upper,size\na,0,2,4\nb,-3,2,4\n").unwrap_err();
        assert_eq!(e.message(), "line 3: lower -3 is negative (steps start at 0)");
        let e = parse("id,lower,upper,size\na,5,5,4\n").unwrap_err();
        assert!(e.message().starts_with("line 2: empty lifetime: upper equals lower (5)"), "{}", e.message());
        assert!(e.message().ends_with("a buffer live at step 5 only has upper 6"), "{}", e.message());
        let e = parse("id,lower,upper,size\nx,0,2,4\ny,0,2,4\n\nx,1,3,8\n").unwrap_err();
        assert_eq!(e.message(), "line 5: id 'x' is already used on line 2");
    }

    #[test]
    fn invalid_utf8_names_line_and_column() {
        let e = parse_bytes(b"id,lower,upper,size\na,0,1,4\nb\xff,0,1,4\n").unwrap_err();
        assert_eq!(e.message(), "line 3: invalid UTF-8 at column 2 (byte 29)");
        let e = parse_bytes(b"\xfe").unwrap_err();
        assert_eq!(e.message(), "line 1: invalid UTF-8 at column 1 (byte 0)");
        assert_eq!(parse_bytes(b"id,lower,upper,size\na,0,1,4\n").unwrap().len(), 1);
    }

    #[test]
    fn writes_in_input_order() {
        let rows = parse("id,lower,upper,size\nb,0,1,4\na,0,1,4\n").unwrap();
        assert_eq!(write(&rows, &[4, 0]), "id,lower,upper,size,offset\nb,0,1,4,4\na,0,1,4,0\n");
    }
}
