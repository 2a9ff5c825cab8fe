//! `nnmem regions`: puts every tensor of a model CSV into a region (the
//! regions of a TOML configuration, or Glow's five defaults) and prints the
//! region table.
//!
//! The model CSV extends the planner's `id,lower,upper,size` with optional
//! columns: `kind` (activation when missing or empty; view when empty and
//! `view_of` is given), `name` (the id when missing or empty), `function`
//! (`main`), `dtype`, `alignment` (1), `tags` (`key=value;key=value`),
//! `view_of` (the origin's name) and `view_offset` (0). Weights (every kind
//! but activation and view) live for the whole run: their `lower` and
//! `upper` are ignored and may be empty; a view without them lives as long
//! as its origin. Read with the `csv` crate, so names and tags may be
//! quoted and hold commas.

use std::collections::HashMap;

use nnmem::plan::csv::{check_lifetime, parse_i64, parse_u64};
use nnmem::plan::Lifetime;
use nnmem::region::{parse_tags, Model, Tensor, TensorKind, ViewOf, DEFAULT_FUNCTION};
use nnmem::{Error, Result};

/// The columns a model CSV may have; `id` and `size` are required.
const COLUMNS: [&str; 12] = [
    "id",
    "lower",
    "upper",
    "size",
    "kind",
    "name",
    "function",
    "dtype",
    "alignment",
    "tags",
    "view_of",
    "view_offset",
];

/// Where each known column is in the file.
struct Columns {
    index: [Option<usize>; COLUMNS.len()],
}

impl Columns {
    fn read(header: &csv::StringRecord) -> Result<Columns> {
        if header.iter().all(str::is_empty) {
            return Err(Error::invalid(format!(
                "line 1: empty input, expected a header with id and size (known columns: {})",
                COLUMNS.join(", ")
            )));
        }
        let mut index = [None; COLUMNS.len()];
        for (i, cell) in header.iter().enumerate() {
            let name = cell.trim_start_matches('\u{feff}').to_ascii_lowercase();
            let Some(known) = COLUMNS.iter().position(|c| *c == name) else {
                return Err(Error::invalid(format!("line 1: unknown column '{cell}' (known: {})", COLUMNS.join(", "))));
            };
            if index[known].is_some() {
                return Err(Error::invalid(format!("line 1: column '{name}' is given twice")));
            }
            index[known] = Some(i);
        }
        for required in ["id", "size"] {
            if index[column(required)].is_none() {
                return Err(Error::invalid(format!(
                    "line 1: the header has no '{required}' column (a model CSV needs id and size; known columns: {})",
                    COLUMNS.join(", ")
                )));
            }
        }
        Ok(Columns { index })
    }

    /// The (trimmed) cell of column `name` in `record`; "" when the file
    /// has no such column.
    fn cell<'r>(&self, record: &'r csv::StringRecord, name: &str) -> &'r str {
        self.index[column(name)].and_then(|i| record.get(i)).unwrap_or("")
    }
}

fn column(name: &str) -> usize {
    COLUMNS.iter().position(|c| *c == name).expect("a known column")
}

/// One row, parsed, with its line for errors.
struct Row {
    tensor: Tensor,
    line: u64,
}

/// A model read from a CSV, with the line each tensor came from.
#[derive(Debug)]
pub struct ModelFile {
    pub model: Model,
    /// The line of each tensor, by tensor id.
    pub lines: Vec<u64>,
}

impl ModelFile {
    /// The line of the tensor that `message` (an error of the region
    /// table's build) is about: the library names a tensor as
    /// `tensor 'name' (kind, function f)`, which is unique in a model.
    pub fn line_named_in(&self, message: &str) -> Option<u64> {
        self.model
            .tensors()
            .iter()
            .zip(&self.lines)
            .find(|(t, _)| message.contains(&format!("tensor {}", t.describe())))
            .map(|(_, &line)| line)
    }
}

/// Reads a model CSV into a model: non-views in file order, then the views
/// (each after its origin). Tensor ids are that order. Errors name the line
/// and the column.
pub fn read_model(bytes: &[u8]) -> Result<ModelFile> {
    let mut reader = csv::ReaderBuilder::new().trim(csv::Trim::All).from_reader(bytes);
    let columns = Columns::read(reader.headers().map_err(csv_error)?)?;
    let mut rows: Vec<Row> = Vec::new();
    let mut ids: HashMap<String, u64> = HashMap::new();
    for record in reader.records() {
        let record = record.map_err(csv_error)?;
        let line = record.position().map_or(0, |p| p.line());
        let tensor = parse_row(&columns, &record, line)?;
        let id = columns.cell(&record, "id");
        if let Some(first) = ids.insert(id.to_string(), line) {
            return Err(Error::invalid(format!("line {line}: id '{id}' is already used on line {first}")));
        }
        rows.push(Row { tensor, line });
    }
    let mut model = Model::new();
    let mut lines = Vec::with_capacity(rows.len());
    let mut add = |model: &mut Model, row: &Row| {
        lines.push(row.line);
        model.add(row.tensor.clone()).map_err(|e| Error::new(e.status(), format!("line {}: {}", row.line, e.message())))
    };
    let (views, others): (Vec<Row>, Vec<Row>) = rows.into_iter().partition(|r| r.tensor.view.is_some());
    for row in &others {
        add(&mut model, row)?;
    }
    // Views of views: each pass adds the views whose origin is in by now;
    // a pass that adds none leaves views whose origin is missing, and the
    // model's error for the first of them says so.
    let mut pending: Vec<&Row> = views.iter().collect();
    while !pending.is_empty() {
        let before = pending.len();
        let mut left = Vec::new();
        for row in pending {
            let view = row.tensor.view.as_ref().expect("a view");
            if model.find(&row.tensor.function, &view.origin).is_some() {
                add(&mut model, row)?;
            } else {
                left.push(row);
            }
        }
        if left.len() == before {
            add(&mut model, left[0])?;
        }
        pending = left;
    }
    Ok(ModelFile { model, lines })
}

fn parse_row(columns: &Columns, record: &csv::StringRecord, line: u64) -> Result<Tensor> {
    let cell = |name: &str| columns.cell(record, name);
    let line_no = line as usize;
    let field_error =
        |column: &str, e: Error| Error::new(e.status(), format!("line {line}, column {column}: {}", e.message()));
    let id = cell("id");
    if id.is_empty() {
        return Err(Error::invalid(format!("line {line}, column id: empty id")));
    }
    let view_of = cell("view_of");
    let kind = match cell("kind") {
        "" if !view_of.is_empty() => TensorKind::View,
        "" => TensorKind::Activation,
        name => TensorKind::from_name(name).map_err(|e| field_error("kind", e))?,
    };
    let size = parse_u64(cell("size"), "size", line_no)?;
    let name = match cell("name") {
        "" => id,
        name => name,
    };
    let mut tensor = Tensor::new(name, kind, size);
    tensor.function = match cell("function") {
        "" => DEFAULT_FUNCTION.into(),
        function => function.into(),
    };
    tensor.dtype = cell("dtype").to_string();
    if !cell("alignment").is_empty() {
        tensor.alignment = parse_u64(cell("alignment"), "alignment", line_no)?;
    }
    tensor.tags = parse_tags(cell("tags")).map_err(|e| field_error("tags", e))?;
    let view_offset = match cell("view_offset") {
        "" => None,
        offset => Some(parse_u64(offset, "view_offset", line_no)?),
    };
    match (kind, view_of) {
        (TensorKind::View, "") => {
            return Err(Error::invalid(format!("line {line}, column view_of: a view names its origin in view_of")))
        }
        (TensorKind::View, origin) => {
            tensor.view = Some(ViewOf { origin: origin.to_string(), offset: view_offset.unwrap_or(0) })
        }
        (_, "") if view_offset.is_none() => {}
        (kind, _) => {
            let column = if view_of.is_empty() { "view_offset" } else { "view_of" };
            return Err(Error::invalid(format!(
                "line {line}, column {column}: only a view has an origin, and this is a {} tensor",
                kind.name()
            )));
        }
    }
    let (lower, upper) = (cell("lower"), cell("upper"));
    tensor.lifetime = match kind {
        // Weights live for the whole run, whatever the row says.
        k if k.is_weight() => None,
        TensorKind::View if lower.is_empty() && upper.is_empty() => None,
        _ => {
            if lower.is_empty() || upper.is_empty() {
                let missing = if lower.is_empty() { "lower" } else { "upper" };
                return Err(Error::invalid(format!(
                    "line {line}, column {missing}: {} needs lower and upper (live over [lower, upper))",
                    tensor.describe()
                )));
            }
            let (lower, upper) = (parse_i64(lower, "lower", line_no)?, parse_i64(upper, "upper", line_no)?);
            check_lifetime(lower, upper, line_no)?;
            Some(Lifetime::half_open(lower, upper)?)
        }
    };
    Ok(tensor)
}

/// A CSV reader's error, naming the line.
fn csv_error(e: csv::Error) -> Error {
    let line = e.position().map(|p| p.line());
    let why = match e.kind() {
        csv::ErrorKind::UnequalLengths { expected_len, len, .. } => {
            format!("expected {expected_len} fields, found {len}")
        }
        csv::ErrorKind::Utf8 { err, .. } => format!("field {} is not valid UTF-8", err.field() + 1),
        csv::ErrorKind::Io(err) => err.to_string(),
        _ => e.to_string(),
    };
    match line {
        Some(line) => Error::invalid(format!("line {line}: {why}")),
        None => Error::invalid(why),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn model(text: &str) -> Model {
        read_model(text.as_bytes()).unwrap_or_else(|e| panic!("{}", e.message())).model
    }

    fn error(text: &str) -> String {
        read_model(text.as_bytes()).map(|m| m.model.len()).expect_err("an error").message().to_string()
    }

    #[test]
    fn reads_every_column_with_defaults() {
        let m = model(
            "id,lower,upper,size,kind,name,function,dtype,alignment,tags,view_of,view_offset\n\
             w,,,64,constant,fc1.weight,,f32,16,\"op=fc;layer=1\",,\n\
             v,1,2,8,,,,,,,a,8\n\
             a,0,3,32,,,,,,,,\n\
             in,9,9,16,input,,g,,,,,\n",
        );
        let t = m.tensors();
        assert_eq!(t.len(), 4);
        // Views after every non-view.
        assert_eq!(t.iter().map(|t| &*t.name).collect::<Vec<_>>(), ["fc1.weight", "a", "in", "v"]);
        assert_eq!(
            (t[0].kind, t[0].lifetime, t[0].alignment, t[0].dtype.as_str()),
            (TensorKind::Constant, None, 16, "f32")
        );
        assert_eq!(t[0].tag("layer"), Some("1"));
        assert_eq!(
            (t[1].kind, t[1].lifetime, t[1].function.as_ref()),
            (TensorKind::Activation, Some(Lifetime::half_open(0, 3).unwrap()), "main")
        );
        assert_eq!((t[2].kind, t[2].function.as_ref(), t[2].lifetime), (TensorKind::Input, "g", None));
        assert_eq!(t[3].kind, TensorKind::View);
        assert_eq!(t[3].view, Some(ViewOf { origin: "a".into(), offset: 8 }));
    }

    #[test]
    fn only_id_and_size_are_required_and_views_of_views_follow_their_origin() {
        let m = model("size,id,view_of,kind\n4,vv,v,\n8,v,a,\n16,a,,constant\n");
        let names: Vec<&str> = m.tensors().iter().map(|t| &*t.name).collect();
        assert_eq!(names, ["a", "v", "vv"]);
        // No lower/upper columns: an activation cannot be read.
        assert!(error("id,size\na,4\n")
            .contains("line 2, column lower: 'a' (activation, function main) needs lower and upper"));
    }

    #[test]
    fn errors_name_the_line_and_the_column() {
        let h = "id,lower,upper,size,kind,view_of,view_offset,tags\n";
        let cases = [
            (format!("{h}a,0,1,4,,,,\nb,0,1,4,weird,,,\n"), "line 3, column kind: unknown tensor kind 'weird' (known: constant, mutable, input, output, input-output, activation, view)"),
            (format!("{h}a,0,1,four,,,,\n"), "line 2: size 'four' is not an integer"),
            (format!("{h}a,3,1,4,,,,\n"), "line 2: upper 1 is below lower 3"),
            (format!("{h}a,0,1,4,,,,\na,0,1,4,,,,\n"), "line 3: id 'a' is already used on line 2"),
            (format!("{h}a,0,1,4,view,,,\n"), "line 2, column view_of: a view names its origin in view_of"),
            (format!("{h}a,0,1,4,constant,x,,\n"), "line 2, column view_of: only a view has an origin, and this is a constant tensor"),
            (format!("{h}a,0,1,4,,,,op\n"), "line 2, column tags: tag 'op' is not key=value (in 'op')"),
            (format!("{h}a,0,1,4,,,,\nv,0,1,4,,missing,,\n"), "line 3: view 'v' (view, function main) names origin 'missing'"),
            (format!("{h}a,0,1,4,,,,\nv,0,1,4,,a,2,\n"), "line 3: view 'v' (view, function main) reaches past the end of its origin 'a'"),
            (format!("{h}a,0,1,0,,,,\n"), "line 2: tensor 'a' (activation, function main) has size 0"),
            (format!("{h}a,0,1,4\n"), "line 2: expected 8 fields, found 4"),
            ("id,size,offset\na,1,2\n".to_string(), "line 1: unknown column 'offset' (known: id, lower, upper, size, kind"),
            ("id,lower,upper\na,1,2\n".to_string(), "line 1: the header has no 'size' column"),
            ("id,size,size\na,1,2\n".to_string(), "line 1: column 'size' is given twice"),
            (String::new(), "line 1: empty input, expected a header with id and size (known columns: id, lower, "),
            ("\n\n".to_string(), "line 1: empty input, expected a header with id and size"),
        ];
        for (text, want) in cases {
            let got = error(&text);
            assert!(got.starts_with(want), "{text}\n  got: {got}\n want: {want}");
        }
        let bad_utf8 = b"id,size\n\xff,4\n";
        assert_eq!(read_model(bad_utf8).unwrap_err().message(), "line 2: field 1 is not valid UTF-8");
    }

    #[test]
    fn quoted_names_and_tags_keep_their_commas() {
        let m = model("id,lower,upper,size,name,tags\na,0,1,4,\"x, y\",\"k=a,b\"\n");
        assert_eq!(&*m.tensors()[0].name, "x, y");
        assert_eq!(m.tensors()[0].tag("k"), Some("a,b"));
    }

    #[test]
    fn each_tensor_keeps_its_line() {
        // Views come after the others in the model; their lines stay theirs.
        let file = read_model(b"id,lower,upper,size,view_of\nv,0,1,4,a\na,0,2,8,\nb,1,2,8,\n").unwrap();
        let names: Vec<&str> = file.model.tensors().iter().map(|t| &*t.name).collect();
        assert_eq!((names, file.lines.clone()), (vec!["a", "b", "v"], vec![3, 4, 2]));
        let message = "region 'activations': tensor 'b' (activation, function main): size 1 overflows";
        assert_eq!(file.line_named_in(message), Some(4));
        assert_eq!(file.line_named_in("region 'activations': reserved 1 B overflow"), None);
    }
}
