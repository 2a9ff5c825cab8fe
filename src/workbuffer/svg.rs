//! The mutable block of a laid-out model as an SVG picture (what
//! `nnm_exec_compiled_svg` returns), drawn by [`crate::plan::svg::render`]:
//! steps across, offsets up, one rectangle per planned buffer.
//!
//! What is drawn is what the planner placed: tensors and concat parents
//! (`t<id>`) and mutable workbuffers (`op<i>.wb<k>`, alive for their
//! operator's step only). Aliases and concat parts are no buffers of their
//! own; they lie inside their root's rectangle. Constants and immutable
//! workbuffers live in the shared blobs, not in the block; the title gives
//! their sizes.

use super::build::CompiledModel;
use super::layout::Layout;
use super::model::ModelBuilder;
use super::report::planned_lifetimes;
use crate::plan::units::binary;
use crate::plan::{align_up, svg::render, Buffer, Lifetime};

impl CompiledModel {
    /// The mutable block's plan as a standalone SVG document (see
    /// [`svg`]).
    pub fn svg(&self) -> String {
        svg(self.model(), self.layout(), self.options().alignment)
    }
}

/// `model`'s mutable block as laid out by `layout` under `alignment` (the
/// planner rounds sizes up to it, so the rectangles and the peak mark are
/// the bytes the block really holds), as a standalone SVG document.
pub fn svg(model: &ModelBuilder, layout: &Layout, alignment: u64) -> String {
    let drawn = planned(model, layout, alignment);
    let names: Vec<&str> = drawn.names.iter().map(String::as_str).collect();
    let title = format!(
        "{} operators: mutable block {} (lower bound {}, {}{}); constants {}, immutable workbuffers {}",
        model.operators().len(),
        binary(layout.mutable_size),
        binary(layout.mutable_lower_bound),
        layout.algorithm.name(),
        if layout.proven_optimal { ", optimal" } else { "" },
        binary(layout.constants_size),
        binary(layout.immutable_size)
    );
    render(&drawn.buffers, &drawn.offsets, Some(&names), layout.mutable_lower_bound, &title)
}

/// The buffers the picture draws, with their offsets and names.
pub(crate) struct Drawn {
    pub(crate) buffers: Vec<Buffer>,
    pub(crate) offsets: Vec<u64>,
    pub(crate) names: Vec<String>,
}

/// The planned buffers of the mutable block: the roots in model order,
/// then the mutable workbuffers in operator and request order. What the
/// layout has no place for (a layout of another model) is left out.
pub(crate) fn planned(model: &ModelBuilder, layout: &Layout, alignment: u64) -> Drawn {
    let aligned = |size: u64| align_up(size, alignment.max(1)).unwrap_or(size);
    let mut d = Drawn { buffers: Vec::new(), offsets: Vec::new(), names: Vec::new() };
    for ((b, life), place) in model.buffers().iter().zip(planned_lifetimes(model)).zip(&layout.buffers) {
        if let Some(lifetime) = life {
            d.buffers.push(Buffer { size: aligned(b.size), lifetime, fixed_offset: None });
            d.offsets.push(place.offset);
            d.names.push(format!("t{}", b.id));
        }
    }
    for (k, places) in layout.mutable.iter().enumerate().take(model.operators().len()) {
        for (w, place) in places.iter().enumerate() {
            let lifetime = Lifetime { start: k as i64, end: k as i64 + 1 };
            d.buffers.push(Buffer { size: aligned(place.size), lifetime, fixed_offset: None });
            d.offsets.push(place.offset);
            d.names.push(format!("op{k}.wb{w}"));
        }
    }
    d
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::plan::validate;
    use crate::workbuffer::layout::lay_out;
    use crate::workbuffer::report::tests::{compiled, sample};

    #[test]
    fn the_picture_draws_the_planned_buffers_where_the_layout_put_them() {
        let (m, l) = sample();
        let d = planned(&m, &l, 256);
        // Roots in model order (no constants, aliases or concat parts), then
        // the mutable workbuffers.
        assert_eq!(d.names, ["t10", "t20", "t13", "op0.wb0", "op1.wb0", "op1.wb1", "op4.wb0"]);
        let life = |name: &str| d.buffers[d.names.iter().position(|n| n == name).unwrap()].lifetime;
        // Pinned: the whole run; the parent from its first part's producer
        // to its alias's last consumer; a workbuffer: its step.
        assert_eq!(life("t10"), Lifetime { start: 0, end: 5 });
        assert_eq!(life("t20"), Lifetime { start: 1, end: 5 });
        assert_eq!(life("op1.wb1"), Lifetime { start: 1, end: 2 });
        assert_eq!(d.buffers[5].size, 256, "sizes are rounded up as the planner did");
        assert_eq!(d.offsets[1], l.buffers[m.index_of(20).unwrap()].offset);
        assert_eq!(d.offsets[6], l.mutable[4][0].offset);
        // No two live buffers overlap, and they need exactly the block.
        assert_eq!(validate(&d.buffers, &d.offsets), Ok(l.mutable_size));

        let svg = svg(&m, &l, 256);
        assert!(svg.starts_with("<svg "), "{svg}");
        assert!(svg.trim_end().ends_with("</svg>"));
        assert_eq!(svg.matches(r#"<rect class="buf""#).count(), 7);
        for name in &d.names {
            assert!(svg.contains(&format!("<title>{name}: size ")), "{name}");
        }
        assert!(!svg.contains("<title>t21:") && !svg.contains("<title>t11:"), "aliases and parts are not drawn");
        assert!(svg.contains(&format!(
            "<title>5 operators: mutable block 1.75 KiB (lower bound 1.75 KiB, {}, optimal); constants 768 B, \
             immutable workbuffers 512 B</title>",
            l.algorithm.name()
        )));
        assert!(svg.contains(">peak 1.75 KiB</text>"), "{svg}");
    }

    #[test]
    fn a_compiled_model_draws_its_block_under_its_alignment() {
        let (m, l, c) = compiled(64);
        assert_eq!(c.svg(), svg(&m, &l, 64));
        // At 64 B the 100 B workbuffer takes 128 B, not 256.
        let d = planned(c.model(), c.layout(), 64);
        assert_eq!(d.buffers[d.names.iter().position(|n| n == "op1.wb1").unwrap()].size, 128);
        assert_eq!(validate(&d.buffers, &d.offsets), Ok(c.layout().mutable_size));
    }

    #[test]
    fn a_model_without_operators_draws_an_empty_block() {
        let m = ModelBuilder::new();
        let l = lay_out(&m, &Default::default()).unwrap();
        let svg = svg(&m, &l, 256);
        assert!(svg.starts_with("<svg ") && svg.contains("0 operators") && !svg.contains(r#"class="buf""#));
    }
}
