//! OpenVINO's memory solver (reimplemented in
//! `examples/bench_table/ov_solver.rs` for the benchmarks) against its own
//! published test figures, and nnmem's mutable block against it: on the
//! case OpenVINO's tests call "unefficiency" (its solver needs 6, the
//! optimum is 5) and on a synthetic ResNet-like network, whose buffers the
//! benchmark generator lists the way `lay_out` hands them to the planner.

#[path = "../examples/bench_table/ov_solver.rs"]
mod ov_solver;
#[path = "../examples/bench_table/workbuffer_model.rs"]
mod workbuffer_model;

use nnmem::plan::{Lifetime, Planner};
use nnmem::workbuffer::layout::{lay_out, Area, LayoutOptions};
use ov_solver::{OvBox, OvSolver};
use workbuffer_model::{model_from_spans, replay, resnet_like, Owner, Span};

fn boxes(list: &[(i64, i64, i64)]) -> Vec<OvBox> {
    list.iter().map(|&(start, finish, size)| OvBox { start, finish, size }).collect()
}

/// (solve, max_depth, max_top_depth) of OpenVINO's solver.
fn solved(list: &[(i64, i64, i64)]) -> (i64, i64, usize) {
    let mut s = OvSolver::new(&boxes(list));
    (s.solve(), s.max_depth(), s.max_top_depth())
}

/// No two boxes sharing a step overlap in bytes.
fn assert_no_overlap(list: &[(i64, i64, i64)], s: &OvSolver) {
    for i in 0..list.len() {
        for j in i + 1..list.len() {
            let ((s1, f1, z1), (s2, f2, z2)) = (list[i], list[j]);
            let (o1, o2) = (s.offset(i).unwrap(), s.offset(j).unwrap());
            let apart = f1 < s2 || f2 < s1 || o1 + z1 <= o2 || o2 + z2 <= o1;
            assert!(apart, "boxes {i} at {o1} and {j} at {o2} overlap");
        }
    }
}

const UNEFFICIENCY: [(i64, i64, i64); 4] = [(6, 7, 3), (2, 5, 2), (5, 8, 2), (2, 3, 2)];

#[test]
fn the_solver_reproduces_openvinos_published_figures() {
    // (solve, max_depth, max_top_depth) as OpenVINO's MemSolverTest states
    // them.
    assert_eq!(solved(&[(0, 1, 2), (1, 2, 2), (2, 3, 2)]), (4, 4, 2), "LinearAndEven");
    assert_eq!(solved(&[(0, 1, 2), (1, 2, 2), (2, 3, 3)]), (5, 5, 2), "LinearAndNotEven");
    assert_eq!(solved(&[(2, 4, 2), (4, 6, 2), (6, 8, 3)]), (5, 5, 2), "LinearWithEmptyExecIndexes");
    assert_eq!(solved(&[(6, 7, 4), (2, 5, 3), (5, 8, 2), (2, 3, 2)]), (6, 6, 2), "OverlappingBoxes");
    assert_eq!(solved(&[(0, 1, 2), (1, 2, 2), (3, 3, 2), (3, 5, 2), (3, 4, 2)]), (6, 6, 3), "EndOnSeveralBegins");
    assert_eq!(solved(&[(0, 1, 2), (1, -1, 2), (3, 3, 2), (3, -1, 2), (3, 4, 2)]), (8, 8, 4), "ToEndBoxes");
    assert_eq!(solved(&[(0, 1, 2), (6, -1, 2), (3, 3, 2), (3, 5, 2), (3, 4, 2)]), (6, 6, 3), "LastAndToEndBox");
    // "Unefficiency" (disabled upstream: "currently we have answer 6"):
    // the optimum is 5.
    assert_eq!(solved(&UNEFFICIENCY), (6, 5, 2), "Unefficiency");

    let best = [(2, 3, 1), (3, 4, 1), (4, 6, 2), (6, 7, 3)];
    let mut s = OvSolver::new(&boxes(&best));
    assert_eq!(s.solve(), 5, "BestSolution1");
    assert_no_overlap(&best, &s);

    // NoOverlapping: upstream checks only that nothing overlaps (its
    // solver misses the optimum of 5 here too).
    let no_overlap = [(4, 8, 1), (6, 7, 3), (2, 3, 3), (2, 4, 2)];
    let mut s = OvSolver::new(&boxes(&no_overlap));
    assert_eq!((s.solve(), s.max_depth()), (6, 5));
    assert_no_overlap(&no_overlap, &s);

    // get_offset: a chain of 2-byte boxes alternates between 0 and 2.
    let chain = [(0, 1, 2), (1, 2, 2), (2, 3, 2), (3, 4, 2)];
    let mut s = OvSolver::new(&boxes(&chain));
    s.solve();
    for k in 0..3 {
        assert_eq!(s.offset(k).unwrap() + s.offset(k + 1).unwrap(), 2, "get_offset {k}");
    }
    assert_eq!(s.offset(100), None);

    // OptimalAlexnet: a linear chain reaches its depth.
    let shapes: [i64; 22] = [
        3 * 227 * 227,
        96 * 55 * 55,
        96 * 55 * 55,
        96 * 55 * 55,
        96 * 27 * 27,
        256 * 27 * 27,
        256 * 27 * 27,
        256 * 27 * 27,
        256 * 13 * 13,
        384 * 13 * 13,
        384 * 13 * 13,
        384 * 13 * 13,
        384 * 13 * 13,
        256 * 13 * 13,
        256 * 13 * 13,
        256 * 6 * 6,
        4069,
        4069,
        4069,
        4069,
        1000,
        1000,
    ];
    let alexnet: Vec<(i64, i64, i64)> = shapes.iter().enumerate().map(|(n, &z)| (n as i64, n as i64 + 1, z)).collect();
    let (solve, depth, top) = solved(&alexnet);
    assert_eq!((solve, top), (depth, 2), "OptimalAlexnet");
}

#[test]
fn the_mutable_block_reaches_the_optimum_where_the_solver_misses_it() {
    let spans: Vec<Span> =
        UNEFFICIENCY.iter().map(|&(start, last, size)| Span { start, last, size: size as u64 }).collect();
    let model = model_from_spans(&spans);
    // Steps 2..=8 become operators 0..=6; one-step boxes are none here.
    assert_eq!(model.operators().len(), 7);
    let layout = lay_out(&model, &LayoutOptions { alignment: 1, ..LayoutOptions::default() }).unwrap();
    assert_eq!((layout.mutable_size, layout.mutable_lower_bound, layout.proven_optimal), (5, 5, true));
    assert_eq!(solved(&UNEFFICIENCY).0, 6);

    // One-step boxes become mutable workbuffers: the same figures.
    let mut with_workbuffer = spans.clone();
    with_workbuffer.push(Span { start: 8, last: 8, size: 3 });
    let model = model_from_spans(&with_workbuffer);
    assert_eq!(model.operators()[6].request.mutable, vec![3]);
    let layout = lay_out(&model, &LayoutOptions { alignment: 1, ..LayoutOptions::default() }).unwrap();
    assert_eq!((layout.mutable_size, layout.mutable_lower_bound), (5, 5));
}

#[test]
fn the_synthetic_network_lists_its_mutable_block_as_lay_out_plans_it() {
    let s = resnet_like(240);
    assert_eq!(s.model.operators().len(), 240);
    let options = LayoutOptions::default();
    let layout = lay_out(&s.model, &options).unwrap();
    // The planner alone, on the generator's list, gives the layout's plan.
    let mut planner = Planner::new();
    planner.set_algorithm(options.algorithm);
    planner.set_alignment(options.alignment).unwrap();
    planner.set_work_limit(Some(options.work_limit));
    for sp in &s.spans {
        planner.add_buffer(sp.size, Lifetime::half_open(sp.start, sp.last + 1).unwrap(), None).unwrap();
    }
    let outcome = planner.plan().unwrap().clone();
    // The recorded calls describe the same network.
    assert_eq!(lay_out(&replay(s.calls.clone()), &options).unwrap(), layout);
    assert_eq!((outcome.peak, outcome.lower_bound), (layout.mutable_size, layout.mutable_lower_bound));
    for (n, owner) in s.owners.iter().enumerate() {
        let place = match *owner {
            Owner::Buffer(i) => layout.buffers[i],
            Owner::Workbuffer(k, w) => layout.mutable[k][w],
        };
        assert_eq!((place.area, place.offset), (Area::Mutable, outcome.offsets[n]), "{owner:?}");
    }
    // Every kind of item is there.
    let ops = s.model.operators();
    assert!(ops.iter().any(|o| o.outputs.iter().any(|x| x.alias_of.is_some())), "a reshape");
    assert!(ops.iter().any(|o| !o.request.immutable.is_empty()), "an immutable workbuffer");
    assert!(ops.iter().any(|o| o.request.mutable.len() == 2), "two mutable workbuffers");
    assert!(layout.constants_size > 0 && layout.immutable_size > 0);
    assert!(s.model.buffers().iter().any(|b| matches!(b.origin, nnmem::workbuffer::Origin::ConcatParent { .. })));

    // OpenVINO's solver on the same buffers (sizes are multiples of the
    // alignment, so nothing is rounded): the same lower bound, and nnmem's
    // block no larger.
    let boxes: Vec<OvBox> =
        s.spans.iter().map(|sp| OvBox { start: sp.start, finish: sp.last, size: sp.size as i64 }).collect();
    assert!(s.spans.iter().all(|sp| sp.size % options.alignment == 0));
    let mut solver = OvSolver::new(&boxes);
    let ov = solver.solve();
    assert_eq!(solver.max_depth() as u64, layout.mutable_lower_bound);
    assert!(layout.mutable_size <= ov as u64, "nnmem {} > OpenVINO {ov}", layout.mutable_size);
}

/// OpenVINO's placement as its source states it: from offset 0, lift the
/// box above every placed box it overlaps (sharing a step and a byte),
/// again until a whole pass lifts nothing.
fn lifted(list: &[(i64, i64, i64)]) -> Vec<i64> {
    let mut order: Vec<usize> = (0..list.len()).collect();
    order.sort_by_key(|&i| (list[i].0, list[i].1));
    order.sort_by_key(|&i| std::cmp::Reverse(list[i].2));
    let mut offsets = vec![0; list.len()];
    let mut placed: Vec<usize> = Vec::new();
    for i in order {
        let (start, finish, size) = list[i];
        let mut offset = 0;
        loop {
            let mut popped = false;
            for &p in &placed {
                let (ps, pf, pz) = list[p];
                if ps <= finish && start <= pf && offset + size > offsets[p] && offsets[p] + pz > offset {
                    offset = offsets[p] + pz;
                    popped = true;
                }
            }
            if !popped {
                break;
            }
        }
        offsets[i] = offset;
        placed.push(i);
    }
    offsets
}

#[test]
fn the_solver_places_every_box_where_openvinos_lifting_ends() {
    // A fixed-seed LCG: the same 300 instances on every run.
    let mut state = 0x5eed_u64;
    let mut next = |n: u64| {
        state = state.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1_442_695_040_888_963_407);
        (state >> 33) % n
    };
    for instance in 0..300 {
        let count = 1 + next(40) as usize;
        let list: Vec<(i64, i64, i64)> = (0..count)
            .map(|_| {
                let start = next(30) as i64;
                // Zero sizes too: OpenVINO's overlap test has its own
                // answer for them.
                (start, start + next(8) as i64, next(6) as i64 * (1 + next(50) as i64))
            })
            .collect();
        let mut s = OvSolver::new(&boxes(&list));
        let need = s.solve();
        let expected = lifted(&list);
        for (i, &e) in expected.iter().enumerate() {
            assert_eq!(s.offset(i), Some(e), "instance {instance}, box {i}");
        }
        assert_eq!(need, list.iter().zip(&expected).map(|(b, o)| o + b.2).max().unwrap_or(0));
    }
}

/// Issue 25: `auto` with a tiny work budget skipped size-first-fit and
/// ended above OpenVINO's solver: 18 B against 14 on four boxes, and above
/// it on a 325-operator network (where the solver's tie order, earlier
/// start first, reaches the bound and TFLM's does not) for every budget
/// tried. It runs size-first-fit in both tie orders at any budget now.
#[test]
fn the_mutable_block_is_never_larger_than_the_solver_at_any_work_limit() {
    let four = [(2, 3, 9), (3, 4, 5), (4, 7, 8), (5, 9, 5)];
    let spans: Vec<Span> = four.iter().map(|&(start, last, size)| Span { start, last, size: size as u64 }).collect();
    let model = model_from_spans(&spans);
    assert_eq!(solved(&four).0, 14);
    for work_limit in [1, 2, 1_000] {
        let options = LayoutOptions { alignment: 1, work_limit, ..LayoutOptions::default() };
        let layout = lay_out(&model, &options).unwrap();
        assert_eq!((layout.mutable_size, layout.mutable_lower_bound), (14, 14), "work limit {work_limit}");
    }

    let s = resnet_like(325);
    let boxes: Vec<OvBox> =
        s.spans.iter().map(|sp| OvBox { start: sp.start, finish: sp.last, size: sp.size as i64 }).collect();
    let ov = OvSolver::new(&boxes).solve() as u64;
    for work_limit in [1, 10, 1_000, 30_000, 300_000] {
        let options = LayoutOptions { work_limit, ..LayoutOptions::default() };
        assert!(s.spans.iter().all(|sp| sp.size % options.alignment == 0));
        let layout = lay_out(&s.model, &options).unwrap();
        assert!(layout.mutable_size <= ov, "work limit {work_limit}: nnmem {} > OpenVINO {ov}", layout.mutable_size);
    }
}
