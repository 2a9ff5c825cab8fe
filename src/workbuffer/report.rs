//! A laid-out model as text or JSON (what `nnm_exec_compiled_report`
//! prints): the two blobs and the mutable block, every operator with its
//! buffers and workbuffers, every buffer with its area, offset, size and
//! life.
//!
//! JSON integers are bytes and the keys keep a fixed order, so that two
//! reports of the same model compare byte for byte. Operators are listed
//! in execution order, buffers in the order the model declared them.

use std::fmt::Write as _;

use super::build::CompiledModel;
use super::layout::{Area, Layout, Place};
use super::model::{BufferId, ModelBuilder, OpIndex, Origin};
use crate::json::escape;
use crate::region::report::{plural, row, table};
use crate::report_format::ReportFormat;

impl CompiledModel {
    /// The model's memory as text or JSON: the blobs and the mutable block,
    /// every operator's buffers and workbuffers, every buffer's area,
    /// offset, size and life (see [`report`]).
    pub fn report(&self, format: ReportFormat) -> String {
        report(self.model(), self.layout(), format)
    }
}

/// `model` laid out as `layout`, as text or JSON. A layout of another
/// model is reported without panicking: what it lacks reads `?` (text) or
/// `null` (JSON).
pub fn report(model: &ModelBuilder, layout: &Layout, format: ReportFormat) -> String {
    match format {
        ReportFormat::Text => text(model, layout),
        ReportFormat::Json => json(model, layout),
    }
}

/// The name of a buffer's kind.
fn kind_name(origin: &Origin) -> &'static str {
    match origin {
        Origin::Constant { .. } => "constant",
        Origin::Produced { .. } => "tensor",
        Origin::Alias { .. } => "alias",
        Origin::ConcatParent { .. } => "concat-parent",
    }
}

fn area_name(area: Area) -> &'static str {
    match area {
        Area::Constants => "constants",
        Area::Immutable => "immutable",
        Area::Mutable => "mutable",
        Area::Dynamic => "dynamic",
    }
}

/// Per buffer (model order): the operator that outputs it, aliases
/// included (the reshape-like operator); `None` for constants and concat
/// parents, which no single operator outputs.
fn producers(model: &ModelBuilder) -> Vec<Option<OpIndex>> {
    let mut producer = vec![None; model.buffers().len()];
    for (k, op) in model.operators().iter().enumerate() {
        for out in &op.outputs {
            if let Some(i) = model.index_of(out.id) {
                producer[i] = Some(k);
            }
        }
    }
    producer
}

/// `ids` as `1,2,3`, `-` when empty.
fn id_list(ids: impl Iterator<Item = BufferId>) -> String {
    let list: Vec<String> = ids.map(|id| id.to_string()).collect();
    if list.is_empty() {
        "-".into()
    } else {
        list.join(",")
    }
}

/// Workbuffer places as `offset+size` each (`id@offset+size` where the
/// runtime gave ids), `-` when none.
fn places_text(places: Option<&Vec<Place>>, ids: &[BufferId]) -> String {
    match places {
        None => "?".into(),
        Some(p) if p.is_empty() => "-".into(),
        Some(p) => p
            .iter()
            .enumerate()
            .map(|(k, p)| match ids.get(k) {
                Some(id) => format!("{id}@{}+{}", p.offset, p.size),
                None => format!("{}+{}", p.offset, p.size),
            })
            .collect::<Vec<_>>()
            .join(" "),
    }
}

fn text(model: &ModelBuilder, layout: &Layout) -> String {
    let alignment = layout.alignment;
    let (ops, buffers) = (model.operators(), model.buffers());
    let mut out = String::new();
    let _ = writeln!(
        out,
        "{} operator{}, {} buffer{}, alignment {alignment} B",
        ops.len(),
        plural(ops.len()),
        buffers.len(),
        plural(buffers.len())
    );
    let _ = writeln!(
        out,
        "constants blob {} B, immutable blob {} B, mutable block {} B (lower bound {} B), algorithm {}{}",
        layout.constants_size,
        layout.immutable_size,
        layout.mutable_size,
        layout.mutable_lower_bound,
        layout.algorithm.name(),
        if layout.proven_optimal { " (optimal)" } else { "" }
    );

    let _ = writeln!(out, "\nbuffers:");
    let producer = producers(model);
    let mut rows = vec![row(&["id", "kind", "area", "offset", "size", "life", "notes"])];
    for (i, b) in buffers.iter().enumerate() {
        let place = layout.buffers.get(i);
        // Its own use, in steps: from the operator writing it (for a concat
        // parent, the first of its parts') to the last reading it.
        let first = producer[i].or_else(|| match &b.origin {
            Origin::ConcatParent { parts } => {
                parts.iter().filter_map(|&(part, _)| model.index_of(part).and_then(|p| producer[p])).min()
            }
            _ => None,
        });
        let life = match (&b.origin, first) {
            (Origin::Constant { .. }, _) => "all".to_string(),
            (_, Some(p)) => format!("{p}..{}", b.last_consumer.map_or(p, |c| c.max(p))),
            (_, None) => "-".to_string(),
        };
        let mut notes = Vec::new();
        if let Origin::Alias { of } = b.origin {
            notes.push(format!("alias of {of}"));
        }
        if let Some(parent) = model.parent_of(b.id) {
            if let Origin::ConcatParent { parts } = &parent.origin {
                if let Some(&(_, at)) = parts.iter().find(|&&(part, _)| part == b.id) {
                    notes.push(format!("in parent {} at +{at}", parent.id));
                }
            }
        }
        if b.pinned {
            notes.push("pinned".into());
        }
        rows.push(vec![
            b.id.to_string(),
            kind_name(&b.origin).into(),
            place.map_or("?", |p| area_name(p.area)).into(),
            place.map_or("?".into(), |p| p.offset.to_string()),
            format!("{} B", b.size),
            life,
            notes.join(", "),
        ]);
    }
    table(&mut out, &rows, &[true, false, false, true, true, false, false]);

    let _ = writeln!(out, "\noperators:");
    let mut rows = vec![row(&["index", "name", "inputs", "outputs", "immutable", "mutable"])];
    for (k, op) in ops.iter().enumerate() {
        rows.push(vec![
            k.to_string(),
            op.name.clone(),
            id_list(op.inputs.iter().map(|i| i.id)),
            id_list(op.outputs.iter().map(|o| o.id)),
            places_text(layout.immutable.get(k), &op.request.immutable_ids),
            places_text(layout.mutable.get(k), &op.request.mutable_ids),
        ]);
    }
    table(&mut out, &rows, &[true, false, false, false, false, false]);
    out
}

/// `Some(n)` as `n`, `None` as `null`.
fn opt<T: std::fmt::Display>(v: Option<T>) -> String {
    v.map_or_else(|| "null".to_string(), |v| v.to_string())
}

fn json(model: &ModelBuilder, layout: &Layout) -> String {
    let alignment = layout.alignment;
    let mut out = String::from("{\n");
    let _ = writeln!(out, "  \"constants_bytes\": {},", layout.constants_size);
    let _ = writeln!(out, "  \"immutable_bytes\": {},", layout.immutable_size);
    let _ = writeln!(out, "  \"mutable_bytes\": {},", layout.mutable_size);
    let _ = writeln!(out, "  \"mutable_lower_bound_bytes\": {},", layout.mutable_lower_bound);
    let _ = writeln!(out, "  \"algorithm\": \"{}\",", layout.algorithm.name());
    let _ = writeln!(out, "  \"proven_optimal\": {},", layout.proven_optimal);
    let _ = writeln!(out, "  \"alignment\": {alignment},");
    let items = |out: &mut String, key: &str, items: Vec<String>, last: bool| {
        let _ = write!(out, "  \"{key}\": [");
        for (i, item) in items.iter().enumerate() {
            let _ = write!(out, "{}\n    {item}", if i == 0 { "" } else { "," });
        }
        let _ = writeln!(out, "{}]{}", if items.is_empty() { "" } else { "\n  " }, if last { "" } else { "," });
    };
    let places = |places: Option<&Vec<Place>>, ids: &[BufferId]| match places {
        None => "null".to_string(),
        Some(p) => {
            let p: Vec<String> = p
                .iter()
                .enumerate()
                .map(|(k, p)| {
                    format!("{{\"id\": {}, \"offset\": {}, \"size_bytes\": {}}}", opt(ids.get(k)), p.offset, p.size)
                })
                .collect();
            format!("[{}]", p.join(", "))
        }
    };
    let ids = |ids: Vec<BufferId>| ids.iter().map(|id| id.to_string()).collect::<Vec<_>>().join(", ");
    let operators = model
        .operators()
        .iter()
        .enumerate()
        .map(|(k, op)| {
            format!(
                "{{\"index\": {k}, \"name\": \"{}\", \"inputs\": [{}], \"outputs\": [{}], \"immutable\": {}, \
                 \"mutable\": {}}}",
                escape(&op.name),
                ids(op.inputs.iter().map(|i| i.id).collect()),
                ids(op.outputs.iter().map(|o| o.id).collect()),
                places(layout.immutable.get(k), &op.request.immutable_ids),
                places(layout.mutable.get(k), &op.request.mutable_ids)
            )
        })
        .collect();
    items(&mut out, "operators", operators, false);
    let producer = producers(model);
    let buffers = model
        .buffers()
        .iter()
        .enumerate()
        .map(|(i, b)| {
            let place = layout.buffers.get(i);
            let alias_of = match b.origin {
                Origin::Alias { of } => Some(of),
                _ => None,
            };
            format!(
                "{{\"id\": {}, \"kind\": \"{}\", \"area\": {}, \"offset\": {}, \"size_bytes\": {}, \"producer\": {}, \
                 \"last_consumer\": {}, \"pinned\": {}, \"alias_of\": {}, \"parent\": {}}}",
                b.id,
                kind_name(&b.origin),
                opt(place.map(|p| format!("\"{}\"", area_name(p.area)))),
                opt(place.map(|p| p.offset)),
                b.size,
                opt(producer[i]),
                opt(b.last_consumer),
                b.pinned,
                opt(alias_of),
                opt(model.parent_of(b.id).map(|p| p.id))
            )
        })
        .collect();
    items(&mut out, "buffers", buffers, true);
    out.push_str("}\n");
    out
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::workbuffer::layout::{lay_out, LayoutOptions};
    use crate::workbuffer::model::OutputSpec;
    use crate::workbuffer::tests::op;

    /// Two constants, a pinned input and output, a concat parent of two
    /// tensors, a reshape alias of the parent, immutable and mutable
    /// workbuffers (one with an id), and a name that needs escaping in
    /// JSON.
    pub(crate) fn sample() -> (ModelBuilder, Layout) {
        let mut m = ModelBuilder::new();
        m.add_constant(1, 100, Some(vec![1; 100])).unwrap();
        m.add_constant(2, 300, None).unwrap();
        m.add_operator(op(&m, "input", &[], vec![OutputSpec::new(10, 256)], &[], &[128])).unwrap(); // 0
        m.pin(10).unwrap();
        m.add_operator(op(&m, "conv \"1\"", &[10, 1], vec![OutputSpec::new(11, 512)], &[64], &[256, 100])).unwrap();
        m.add_operator(op(&m, "conv2", &[10, 2], vec![OutputSpec::new(12, 256)], &[32], &[])).unwrap(); // 2
        m.add_concat_parent(20, 768, &[(11, 0), (12, 512)]).unwrap();
        m.add_operator(op(&m, "reshape", &[20], vec![OutputSpec::alias(21, 768, 20)], &[], &[])).unwrap(); // 3
        let mut fc = op(&m, "fc", &[21], vec![OutputSpec::new(13, 256)], &[], &[512]);
        fc.request.mutable_ids = vec![30];
        m.add_operator(fc).unwrap(); // 4
        m.pin(13).unwrap();
        let layout = lay_out(&m, &LayoutOptions::default()).unwrap();
        (m, layout)
    }

    /// The sample compiled on the host at `alignment`, and laid out apart.
    pub(crate) fn compiled(alignment: u64) -> (ModelBuilder, Layout, CompiledModel) {
        let (m, _) = sample();
        let options = LayoutOptions { alignment, ..LayoutOptions::default() };
        let c = CompiledModel::build(&m, &options, crate::pool::device::host(), &mut |_, _| Ok(())).unwrap();
        let l = lay_out(&m, &options).unwrap();
        (m, l, c)
    }

    /// The keys of a one-line JSON object, in the order written.
    fn keys(line: &str) -> Vec<String> {
        let parts: Vec<&str> = line.split('"').collect();
        parts.windows(2).filter(|w| w[1].starts_with(": ")).map(|w| w[0].to_string()).collect()
    }

    #[test]
    fn json_has_every_operator_and_buffer_with_the_layouts_places() {
        let (m, l) = sample();
        let text = report(&m, &l, ReportFormat::Json);
        let v: serde_json::Value = serde_json::from_str(&text).unwrap();
        // serde_json sorts keys: read their order from the text.
        let top: Vec<&str> =
            text.lines().filter(|l| l.starts_with("  \"")).map(|l| l.split('"').nth(1).unwrap()).collect();
        assert_eq!(
            top,
            [
                "constants_bytes",
                "immutable_bytes",
                "mutable_bytes",
                "mutable_lower_bound_bytes",
                "algorithm",
                "proven_optimal",
                "alignment",
                "operators",
                "buffers"
            ]
        );
        assert_eq!((v["constants_bytes"].as_u64(), v["immutable_bytes"].as_u64()), (Some(768), Some(512)));
        // Step 1: t10 + t13 (pinned) + the parent + two workbuffers.
        assert_eq!((v["mutable_bytes"].as_u64(), v["mutable_lower_bound_bytes"].as_u64()), (Some(1792), Some(1792)));
        assert_eq!((v["algorithm"].as_str(), v["proven_optimal"].as_bool()), (Some(l.algorithm.name()), Some(true)));
        assert_eq!(v["alignment"], 256);

        let ops = v["operators"].as_array().unwrap();
        assert_eq!(ops.len(), m.operators().len());
        let op_line = text.lines().find(|l| l.contains("\"index\": 1,")).unwrap();
        // Workbuffers nest their own keys.
        let wb = ["id", "offset", "size_bytes"];
        assert_eq!(
            keys(op_line),
            [&["index", "name", "inputs", "outputs", "immutable"][..], &wb, &["mutable"], &wb, &wb].concat()
        );
        for (k, o) in ops.iter().enumerate() {
            let spec = &m.operators()[k];
            assert_eq!(o["index"], k);
            assert_eq!(o["name"], spec.name.as_str());
            assert_eq!(o["inputs"], serde_json::json!(spec.inputs.iter().map(|i| i.id).collect::<Vec<_>>()));
            assert_eq!(o["outputs"], serde_json::json!(spec.outputs.iter().map(|o| o.id).collect::<Vec<_>>()));
            let lists = [
                ("immutable", &l.immutable[k], &spec.request.immutable_ids),
                ("mutable", &l.mutable[k], &spec.request.mutable_ids),
            ];
            for (key, places, ids) in lists {
                let want: Vec<_> = places
                    .iter()
                    .enumerate()
                    .map(|(w, p)| serde_json::json!({"id": ids.get(w), "offset": p.offset, "size_bytes": p.size}))
                    .collect();
                assert_eq!(o[key], serde_json::json!(want), "operator {k} {key}");
            }
        }
        assert_eq!(ops[1]["name"], "conv \"1\"");
        assert_eq!(ops[1]["mutable"].as_array().unwrap().len(), 2);
        assert_eq!((ops[4]["mutable"][0]["id"].as_u64(), ops[1]["mutable"][0]["id"].is_null()), (Some(30), true));

        let bufs = v["buffers"].as_array().unwrap();
        assert_eq!(bufs.len(), m.buffers().len());
        let line = text.lines().find(|l| l.contains("{\"id\": 21,")).unwrap();
        assert_eq!(
            keys(line),
            ["id", "kind", "area", "offset", "size_bytes", "producer", "last_consumer", "pinned", "alias_of", "parent"]
        );
        for (i, b) in bufs.iter().enumerate() {
            let (spec, place) = (&m.buffers()[i], l.buffers[i]);
            assert_eq!((b["id"].as_u64(), b["size_bytes"].as_u64()), (Some(spec.id), Some(spec.size)));
            assert_eq!((b["area"].as_str(), b["offset"].as_u64()), (Some(area_name(place.area)), Some(place.offset)));
        }
        let by_id = |id: u64| bufs.iter().find(|b| b["id"] == id).unwrap().clone();
        use serde_json::json;
        assert_eq!(
            by_id(1),
            json!({"id": 1, "kind": "constant", "area": "constants", "offset": 0, "size_bytes": 100, "producer": null,
                "last_consumer": 1, "pinned": false, "alias_of": null, "parent": null})
        );
        assert_eq!((by_id(2)["offset"].as_u64(), by_id(2)["last_consumer"].as_u64()), (Some(256), Some(2)));
        assert_eq!((by_id(10)["pinned"].as_bool(), by_id(10)["producer"].as_u64()), (Some(true), Some(0)));
        let parent = l.buffers[m.index_of(20).unwrap()].offset;
        assert_eq!(
            by_id(12),
            json!({"id": 12, "kind": "tensor", "area": "mutable", "offset": parent + 512, "size_bytes": 256,
                "producer": 2, "last_consumer": null, "pinned": false, "alias_of": null, "parent": 20})
        );
        assert_eq!((by_id(20)["kind"].as_str(), by_id(20)["producer"].is_null()), (Some("concat-parent"), true));
        assert_eq!(
            by_id(21),
            json!({"id": 21, "kind": "alias", "area": "mutable", "offset": parent, "size_bytes": 768, "producer": 3,
                "last_consumer": 4, "pinned": false, "alias_of": 20, "parent": null})
        );
        // The same model gives the same bytes.
        let (m2, l2) = sample();
        assert_eq!(text, report(&m2, &l2, ReportFormat::Json));
    }

    #[test]
    fn text_lists_the_blobs_every_buffer_and_every_operator() {
        let (m, l) = sample();
        let text = report(&m, &l, ReportFormat::Text);
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines[0], "5 operators, 8 buffers, alignment 256 B");
        assert_eq!(
            lines[1],
            format!(
                "constants blob 768 B, immutable blob 512 B, mutable block 1792 B (lower bound 1792 B), algorithm {} \
                 (optimal)",
                l.algorithm.name()
            )
        );
        assert_eq!(lines[3], "buffers:");
        assert_eq!(lines[4], "id  kind           area       offset   size  life  notes");
        let row = |id: u64| {
            lines[5..13].iter().find(|r| r.split_whitespace().next() == Some(&id.to_string())).copied().unwrap()
        };
        for b in m.buffers() {
            let place = l.buffers[m.index_of(b.id).unwrap()];
            let cells: Vec<&str> = row(b.id).split_whitespace().collect();
            assert_eq!((cells[2], cells[3]), (area_name(place.area), place.offset.to_string().as_str()), "{b:?}");
        }
        assert_eq!(row(1), " 1  constant       constants       0  100 B  all");
        let parent = l.buffers[m.index_of(20).unwrap()].offset;
        assert_eq!(row(10).split_whitespace().skip(6).collect::<Vec<_>>(), ["0..2", "pinned"]);
        assert!(row(12).ends_with(&format!("{}  256 B  2..2  in parent 20 at +512", parent + 512)), "{text}");
        assert!(row(20).ends_with("768 B  1..3"), "{text}");
        assert!(row(21).ends_with(&format!("{parent}  768 B  3..4  alias of 20")), "{text}");
        assert_eq!(lines[14], "operators:");
        assert_eq!(lines[15], "index  name      inputs  outputs  immutable  mutable");
        let wb = &l.mutable[1];
        assert_eq!(
            lines[17],
            format!("    1  conv \"1\"  10,1    11       0+64       {}+256 {}+100", wb[0].offset, wb[1].offset)
        );
        assert_eq!(lines[19], "    3  reshape   20      21       -          -");
        assert_eq!(
            lines[20],
            format!("    4  fc        21      13       -          30@{}+512", l.mutable[4][0].offset)
        );
        assert_eq!(lines.len(), 21);
    }

    #[test]
    fn a_compiled_model_reports_its_layout_under_its_alignment() {
        let (m, l, c) = compiled(64);
        for format in [ReportFormat::Text, ReportFormat::Json] {
            assert_eq!(c.report(format), report(&m, &l, format));
        }
        let v: serde_json::Value = serde_json::from_str(&c.report(ReportFormat::Json)).unwrap();
        // 100 and 300 B at 64 B: 128 + 320.
        assert_eq!((v["alignment"].as_u64(), v["constants_bytes"].as_u64()), (Some(64), Some(448)));
        assert!(c.report(ReportFormat::Text).starts_with("5 operators, 8 buffers, alignment 64 B\n"));
    }

    #[test]
    fn a_layout_of_another_model_is_reported_without_panicking() {
        let (m, _) = sample();
        let empty = lay_out(&ModelBuilder::new(), &LayoutOptions::default()).unwrap();
        let text = report(&m, &empty, ReportFormat::Text);
        assert!(
            text.lines().any(|l| l.starts_with("21  alias          ?          ?  768 B  3..4  alias of 20")),
            "{text}"
        );
        let v: serde_json::Value = serde_json::from_str(&report(&m, &empty, ReportFormat::Json)).unwrap();
        assert!(v["buffers"][0]["area"].is_null() && v["operators"][0]["mutable"].is_null());
        let v: serde_json::Value =
            serde_json::from_str(&report(&ModelBuilder::new(), &empty, ReportFormat::Json)).unwrap();
        assert!(v["operators"].as_array().unwrap().is_empty() && v["buffers"].as_array().unwrap().is_empty());
    }
}
