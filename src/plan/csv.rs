//! The MiniMalloc CSV interchange format, used by MiniMalloc and idealloc:
//! a header `id,lower,upper,size` and an optional `offset` column, one buffer
//! per row, half-open lifetimes `[lower, upper)`, ids opaque tokens. An
//! empty `offset` cell means "plan it"; a number fixes the offset.
//!
//! Output adds (or fills) the `offset` column: `id,lower,upper,size,offset`.

use std::fmt::Write as _;

use super::problem::{Lifetime, Problem};
use crate::status::{Error, Result};

/// One row of a trace.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Row {
    /// Opaque id token.
    pub id: String,
    /// First live step.
    pub lower: i64,
    /// First step no longer live.
    pub upper: i64,
    /// Bytes.
    pub size: u64,
    /// A fixed offset, if given.
    pub offset: Option<u64>,
}

/// Parses a trace. Errors name the line (1-based, header is line 1) and the
/// reason.
pub fn parse(text: &str) -> Result<Vec<Row>> {
    let mut lines = text.lines().enumerate().filter(|(_, l)| !l.trim().is_empty());
    let (_, header) = lines.next().ok_or_else(|| Error::invalid("line 1: empty input, expected header id,lower,upper,size"))?;
    let columns: Vec<String> = header.split(',').map(|c| c.trim().trim_start_matches('\u{feff}').to_ascii_lowercase()).collect();
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
        let int = |col: usize, what: &str| -> Result<i64> {
            cells[col].parse::<i64>().map_err(|_| {
                Error::invalid(format!("line {line_no}: {what} '{}' is not an integer", cells[col]))
            })
        };
        let uint = |col: usize, what: &str| -> Result<u64> {
            cells[col].parse::<u64>().map_err(|_| {
                Error::invalid(format!("line {line_no}: {what} '{}' is not a non-negative integer", cells[col]))
            })
        };
        if cells[id].is_empty() {
            return Err(Error::invalid(format!("line {line_no}: empty id")));
        }
        let row = Row {
            id: cells[id].to_string(),
            lower: int(lower, "lower")?,
            upper: int(upper, "upper")?,
            size: uint(size, "size")?,
            offset: match offset {
                Some(col) if !cells[col].is_empty() => Some(uint(col, "offset")?),
                _ => None,
            },
        };
        if row.upper < row.lower {
            return Err(Error::invalid(format!(
                "line {line_no}: upper {} is below lower {}",
                row.upper, row.lower
            )));
        }
        rows.push(row);
    }
    Ok(rows)
}

/// Builds a problem from rows. Errors name the row's line.
pub fn to_problem(rows: &[Row], alignment: u64) -> Result<Problem> {
    let mut p = Problem::new(alignment)?;
    for (i, r) in rows.iter().enumerate() {
        p.push(r.size, Lifetime::half_open(r.lower, r.upper)?, r.offset)
            .map_err(|e| Error::new(e.status(), format!("line {} (id {}): {}", i + 2, r.id, e.message())))?;
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
        assert_eq!(rows[1], Row { id: "b2".into(), lower: 3, upper: 9, size: 4, offset: None });
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
        assert!(e.message().contains("not a non-negative integer"));
        let rows = parse("id,lower,upper,size,offset\na,0,1,8,3\n").unwrap();
        let e = to_problem(&rows, 4).unwrap_err();
        assert!(e.message().starts_with("line 2 (id a): fixed offset 3"), "{}", e.message());
    }

    #[test]
    fn writes_in_input_order() {
        let rows = parse("id,lower,upper,size\nb,0,1,4\na,0,1,4\n").unwrap();
        assert_eq!(write(&rows, &[4, 0]), "id,lower,upper,size,offset\nb,0,1,4,4\na,0,1,4,0\n");
    }
}
