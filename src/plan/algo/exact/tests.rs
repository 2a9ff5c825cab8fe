use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Instant;

use super::super::tests::Rng;
use super::super::{peak_of, Algorithm, CheckHook, SearchLimits};
use crate::plan::bound::lower_bound;
use crate::plan::problem::{Buffer, Lifetime, Problem};
use crate::plan::validate::validate;

fn problem(alignment: u64, spec: &[(u64, i64, i64, Option<u64>)]) -> Problem {
    Problem::from_buffers(
        alignment,
        spec.iter().map(|&(size, a, b, fixed)| Buffer {
            size,
            lifetime: Lifetime::half_open(a, b).unwrap(),
            fixed_offset: fixed,
        }),
    )
    .unwrap()
}

/// The true optimum by brute force, independent of the search: first fit
/// (lowest offset clear of everything placed, gaps included) over every
/// order of the free buffers. Some order reproduces any optimal plan once
/// its buffers are dropped as low as they go, so the minimum is optimal.
fn brute_force_optimum(p: &Problem) -> u64 {
    let buffers = p.buffers();
    let fixed: Vec<(usize, u64)> = buffers
        .iter()
        .enumerate()
        .filter_map(|(i, b)| b.fixed_offset.map(|o| (i, o)))
        .filter(|&(i, _)| buffers[i].occupies())
        .collect();
    let mut free: Vec<usize> =
        (0..buffers.len()).filter(|&i| buffers[i].occupies() && buffers[i].fixed_offset.is_none()).collect();
    let base = fixed.iter().map(|&(i, o)| o + buffers[i].size).max().unwrap_or(0);
    let mut best = u64::MAX;
    permute(&mut free, 0, &mut |order| {
        let mut placed = fixed.clone();
        let mut peak = base;
        for &i in order {
            let b = &buffers[i];
            let mut offset = 0;
            loop {
                let clash = placed.iter().find(|&&(j, o)| {
                    buffers[j].lifetime.overlaps(&b.lifetime) && o < offset + b.size && offset < o + buffers[j].size
                });
                match clash {
                    Some(&(j, o)) => offset = (o + buffers[j].size).div_ceil(p.alignment()) * p.alignment(),
                    None => break,
                }
            }
            placed.push((i, offset));
            peak = peak.max(offset + b.size);
        }
        best = best.min(peak);
    });
    best
}

fn permute(items: &mut Vec<usize>, k: usize, visit: &mut dyn FnMut(&[usize])) {
    if k == items.len() {
        visit(items);
        return;
    }
    for i in k..items.len() {
        items.swap(k, i);
        permute(items, k + 1, visit);
        items.swap(k, i);
    }
}

/// Small random instances, tight enough that greedy often misses: few
/// steps, sizes with common factors.
fn random_small(rng: &mut Rng, n: usize, with_fixed: bool) -> Problem {
    let alignment = [1u64, 1, 4][rng.below(3) as usize];
    let mut spec = Vec::new();
    for i in 0..n {
        let a = rng.below(8) as i64;
        let b = a + 1 + rng.below(5) as i64;
        let size = [3, 4, 5, 6, 7, 9, 10, 12][rng.below(8) as usize];
        let fixed = (with_fixed && i == 0).then(|| rng.below(3) * 8);
        spec.push((size, a, b, fixed));
    }
    problem(alignment, &spec)
}

/// Like [`random_small`] over more steps and any sizes, so that parts
/// fall apart into components.
fn random_wide(rng: &mut Rng, n: usize) -> Problem {
    let spec: Vec<(u64, i64, i64, Option<u64>)> = (0..n)
        .map(|_| {
            let a = rng.below(12) as i64;
            (1 + rng.below(9), a, a + 1 + rng.below(6) as i64, None)
        })
        .collect();
    problem(1, &spec)
}

fn exact(p: &Problem, limits: &SearchLimits) -> super::Placement {
    Algorithm::Exact.implementation().place(p, limits)
}

#[test]
fn finds_the_true_optimum_on_every_small_instance() {
    let mut rng = Rng::new(0x5EED_0003);
    let mut beat_heuristics = 0;
    for round in 0..400 {
        let n = 6 + (round % 3);
        let p = random_small(&mut rng, n, round % 5 == 0);
        let lb = lower_bound(p.buffers()).bytes;
        let placement = exact(&p, &SearchLimits::unlimited(lb));
        let peak = validate(p.buffers(), &placement.offsets).expect("valid plan");
        let optimum = brute_force_optimum(&p);
        assert_eq!(peak, optimum, "round {round}: {:?}", p.buffers());
        assert!(placement.proven_optimal, "round {round}: an unlimited search must prove its optimum");
        assert!(placement.lower_bound <= optimum);
        // Floor-first (the search's own first dive) finds most of these
        // optima, so the search is also run from greedy by size's plan.
        let greedy = Algorithm::SizeFirstFit.implementation().place(&p, &SearchLimits::unlimited(lb));
        let greedy_peak = peak_of(&p, &greedy.offsets);
        let improved = super::improve(&p, greedy, &SearchLimits::unlimited(lb));
        assert_eq!(
            validate(p.buffers(), &improved.offsets).expect("valid plan"),
            optimum,
            "round {round}, from greedy"
        );
        assert!(improved.proven_optimal, "round {round}");
        if greedy_peak > optimum {
            beat_heuristics += 1;
        }
    }
    // The instances must be hard enough to matter.
    assert!(beat_heuristics >= 40, "only {beat_heuristics} instances where greedy by size missed the optimum");
}

#[test]
fn with_a_capacity_it_answers_the_decision_problem() {
    let mut rng = Rng::new(0xCAFE);
    for round in 0..150 {
        let p = random_small(&mut rng, 7, false);
        let optimum = brute_force_optimum(&p);
        let lb = lower_bound(p.buffers()).bytes;
        let fits = exact(&p, &SearchLimits { capacity: Some(optimum), ..SearchLimits::unlimited(lb) });
        assert!(peak_of(&p, &fits.offsets) <= optimum, "round {round}");
        if optimum > lb {
            let below = exact(&p, &SearchLimits { capacity: Some(optimum - 1), ..SearchLimits::unlimited(lb) });
            assert!(peak_of(&p, &below.offsets) >= optimum, "round {round}: nothing fits below the optimum");
            assert_eq!(below.lower_bound, optimum, "round {round}: infeasibility proves the bound");
        }
    }
}

/// An instance the search cannot finish in a few milliseconds when asked
/// to minimise: MiniMalloc's challenging instance B (170 buffers, lower
/// bound 1048576, a perfect packing; about 2 M nodes, a second or so).
fn hard_instance() -> Problem {
    let text = include_str!("../../../../benches/data/minimalloc/challenging/B.1048576.csv");
    let rows = crate::plan::csv::parse(text).unwrap();
    crate::plan::csv::to_problem(&rows, 1).unwrap()
}

/// Every preorder on its own, with all of the search's bounds and rules,
/// must find a plan at the true optimum and prove there is none below it:
/// no rule may cut off the last optimal plan. Instances with more steps
/// than `random_small`'s, so that parts fall apart into components.
#[test]
fn every_preorder_alone_is_exact() {
    use super::instance::split;
    use super::order::PREORDERS;
    use super::search::{Search, Verdict};
    let mut rng = Rng::new(0xB0B);
    let (mut behind, mut kills, mut found_behind) = (0, 0, 0);
    for round in 0..300 {
        let n = 5 + (round % 4);
        let p = if round % 2 == 0 { random_small(&mut rng, n, round % 6 == 0) } else { random_wide(&mut rng, n) };
        let optimum = brute_force_optimum(&p);
        let parts = split(&p).unwrap();
        for order in PREORDERS {
            for part in &parts {
                let mut search = Search::new(part, order);
                match search.run(optimum, u64::MAX, u64::MAX, &mut || false) {
                    Verdict::Found(offsets) => assert!(part.peak_of(&offsets) <= optimum),
                    other => panic!("round {round}, {order:?}: {other:?} at the optimum {optimum}: {:?}", p.buffers()),
                }
                found_behind += u64::from(search.behind_nodes > 0);
                behind += search.behind_nodes;
                kills += search.behind_kills;
            }
            // Below the optimum, some part (or a fixed buffer) must not fit.
            let fixed_top = p.buffers().iter().filter_map(|b| b.fixed_offset.map(|o| o + b.size)).max().unwrap_or(0);
            if optimum > fixed_top {
                let all_fit = parts.iter().all(|part| {
                    let mut search = Search::new(part, order);
                    let fits = matches!(search.run(optimum - 1, u64::MAX, u64::MAX, &mut || false), Verdict::Found(_));
                    behind += search.behind_nodes;
                    kills += search.behind_kills;
                    fits
                });
                assert!(!all_fit, "round {round}, {order:?}: a plan below the optimum {optimum}");
            }
        }
    }
    println!("behind nodes {behind}, cut off {kills}, feasible searches through them {found_behind}");
}

/// A perfect packing of a `steps` × `height` block cut into `n` pieces
/// by random guillotine cuts (across time or across memory), then with
/// `bumps` random pieces grown by a little so it may no longer fit: the
/// kind of instance (MiniMalloc's challenging set is made alike) where
/// the search must dig.
fn guillotine(rng: &mut Rng, n: usize, steps: i64, height: u64, bumps: usize) -> Problem {
    let mut pieces = vec![(0i64, steps, 0u64, height)];
    while pieces.len() < n {
        let k = rng.below(pieces.len() as u64) as usize;
        let (t0, t1, y0, y1) = pieces[k];
        if rng.below(2) == 0 && t1 - t0 >= 2 {
            let t = t0 + 1 + rng.below((t1 - t0 - 1) as u64) as i64;
            pieces[k] = (t0, t, y0, y1);
            pieces.push((t, t1, y0, y1));
        } else if y1 - y0 >= 2 {
            let y = y0 + 1 + rng.below(y1 - y0 - 1);
            pieces[k] = (t0, t1, y0, y);
            pieces.push((t0, t1, y, y1));
        }
    }
    let mut spec: Vec<(u64, i64, i64, Option<u64>)> =
        pieces.iter().map(|&(t0, t1, y0, y1)| (y1 - y0, t0, t1, None)).collect();
    for _ in 0..bumps {
        let k = rng.below(spec.len() as u64) as usize;
        spec[k].0 += 1 + rng.below(3);
    }
    problem(1, &spec)
}

/// The effective floors of buffers behind the key must never change an
/// answer: on instances too big for brute force but small enough to
/// search completely, the search with them and without them agree at
/// every target from the section bound up to the optimum (found without
/// them), under every preorder. The rule must also have cut something
/// off, or this tests nothing.
#[test]
fn effective_floors_never_change_the_answer() {
    use super::instance::split;
    use super::order::PREORDERS;
    use super::search::{Search, Verdict};
    let mut rng = Rng::new(0xE1F);
    let mut kills = 0;
    for round in 0..200 {
        let p = guillotine(&mut rng, 16 + round % 17, 24, 256, round % 3);
        for part in &split(&p).unwrap() {
            for order in PREORDERS {
                let run = |target: u64, skip: bool, kills: &mut u64| {
                    let mut search = Search::new(part, order);
                    search.skip_behind = skip;
                    let verdict = search.run(target, 200_000, u64::MAX, &mut || false);
                    *kills += search.behind_kills;
                    verdict
                };
                let mut target = part.live.iter().copied().max().unwrap_or(0);
                loop {
                    let without = run(target, true, &mut 0);
                    let with = run(target, false, &mut kills);
                    if without == Verdict::Stopped || with == Verdict::Stopped {
                        break; // too hard to settle here
                    }
                    let found = matches!(without, Verdict::Found(_));
                    assert_eq!(found, matches!(with, Verdict::Found(_)), "round {round}, {order:?}, target {target}");
                    if found {
                        break;
                    }
                    assert_eq!(with, Verdict::Infeasible);
                    target += 1;
                }
            }
        }
    }
    println!("cut off {kills}");
    assert!(kills > 100, "the rule cut off only {kills} nodes");
}

/// The effective-floor rule checked against plans rather than answers
/// (see `Search::audit`): exhaustive searches without the rule list every
/// plan they reach, and each must end every buffer behind a node's key at
/// or above the effective floor the rule gave it there, and pass through
/// no node the rule judged dead. Small tight instances, each at its
/// optimum and one byte above, where plans often meet a claim exactly:
/// then any stronger rule (a larger lift, a stricter bound) is refuted,
/// which comparing answers alone rarely shows, since another plan usually
/// survives.
#[test]
fn effective_floors_hold_in_every_plan() {
    use super::instance::split;
    use super::order::PREORDERS;
    use super::search::{Search, Verdict};
    let mut rng = Rng::new(0xF1005);
    let (mut plans, mut judged, mut checked, mut exact, mut detours, mut kills) = (0, 0, 0, 0, 0, 0);
    let mut violations = Vec::new();
    for round in 0..120 {
        let p = match round % 3 {
            0 => random_small(&mut rng, 8 + round % 4, false),
            1 => random_wide(&mut rng, 8 + round % 6),
            _ => guillotine(&mut rng, 8 + round % 7, 8, 24, 0),
        };
        for part in &split(&p).unwrap() {
            for order in PREORDERS {
                let mut target = part.live.iter().copied().max().unwrap_or(0);
                let mut above = None;
                while above.is_none_or(|a| target <= a) {
                    let mut search = Search::new(part, order);
                    search.audit = true;
                    let verdict = search.run(target, 100_000, u64::MAX, &mut || false);
                    kills += search.behind_kills;
                    let audited = search.audited;
                    (plans, judged) = (plans + audited.plans, judged + audited.judged);
                    (checked, exact, detours) =
                        (checked + audited.checked, exact + audited.exact, detours + audited.detours);
                    violations.extend(
                        audited
                            .violations
                            .into_iter()
                            .map(|v| format!("round {round}, {order:?}, target {target}: {v}")),
                    );
                    match verdict {
                        Verdict::Found(_) if above.is_none() => above = Some(target + 1),
                        Verdict::Stopped => break,
                        _ => {}
                    }
                    target += 1;
                }
            }
        }
    }
    println!("plans {plans}, nodes on their paths judged {judged}, effective floors {checked}, met exactly {exact}, detours {detours}; nodes judged dead {kills}");
    assert!(
        violations.is_empty(),
        "{} refuted claims, the first: {:?}",
        violations.len(),
        &violations[..violations.len().min(5)]
    );
    // The check must have had something to bite on.
    assert!(exact > 1000 && kills > 1000, "only {exact} effective floors met exactly, {kills} nodes judged dead");
}

#[test]
fn plans_are_valid_and_deterministic_under_a_node_limit() {
    let p = hard_instance();
    let lb = lower_bound(p.buffers()).bytes;
    let limits = SearchLimits { node_limit: Some(20_000), ..SearchLimits::unlimited(lb) };
    let first = exact(&p, &limits);
    let second = exact(&p, &limits);
    validate(p.buffers(), &first.offsets).expect("valid plan");
    assert_eq!(first, second, "same input and limits, same plan");
    assert!(first.nodes > 0 && first.nodes <= 20_000 + 4, "nodes {}", first.nodes);
    let heuristic = super::super::portfolio::best_heuristic(&p, &limits);
    assert!(peak_of(&p, &first.offsets) <= peak_of(&p, &heuristic.offsets));
}

/// Counts the search's clock checks; at check `at` (when given) it runs
/// `act` before the search goes on.
fn counting_hook(at: Option<u64>, act: impl Fn() + Send + Sync + 'static) -> (CheckHook, Arc<AtomicU64>) {
    let checks = Arc::new(AtomicU64::new(0));
    let seen = checks.clone();
    let hook = CheckHook(Arc::new(move || {
        let n = seen.fetch_add(1, Ordering::SeqCst) + 1;
        if Some(n) == at {
            act();
        }
    }));
    (hook, checks)
}

#[test]
fn the_time_limit_is_respected() {
    // A deadline already past when the search starts: the heuristic stage
    // stops after its first plan and the search at its first clock check,
    // before any node, whatever the machine's speed.
    let p = hard_instance();
    let lb = lower_bound(p.buffers()).bytes;
    let (hook, checks) = counting_hook(None, || {});
    let limits = SearchLimits { deadline: Some(Instant::now()), on_check: Some(hook), ..SearchLimits::unlimited(lb) };
    let placement = exact(&p, &limits);
    validate(p.buffers(), &placement.offsets).expect("valid plan");
    assert!(placement.time_limit_cut && !placement.proven_optimal, "{placement:?}");
    assert_eq!(placement.nodes, 0, "no node after the deadline");
    assert!(checks.load(Ordering::SeqCst) > 0);
}

#[test]
fn cancellation_from_another_thread_stops_the_search() {
    // The search thread, at its 20th clock check (past the heuristic
    // stage's few, inside the search, long before B is solved), hands over
    // to a second thread, which sets the flag; the search must stop at that
    // very check. A rendezvous, not a sleep: the same on any machine.
    const AT: u64 = 20;
    let p = hard_instance();
    let lb = lower_bound(p.buffers()).bytes;
    let flag = Arc::new(AtomicBool::new(false));
    let (to_setter, setter_rx) = std::sync::mpsc::channel::<()>();
    let (to_search, search_rx) = std::sync::mpsc::channel::<()>();
    let search_rx = std::sync::Mutex::new(search_rx);
    let (hook, checks) = counting_hook(Some(AT), move || {
        to_setter.send(()).unwrap();
        search_rx.lock().unwrap().recv().unwrap();
    });
    let setter = {
        let flag = flag.clone();
        std::thread::spawn(move || {
            setter_rx.recv().unwrap();
            flag.store(true, Ordering::Relaxed);
            to_search.send(()).unwrap();
        })
    };
    let limits = SearchLimits { cancel: Some(flag.clone()), on_check: Some(hook), ..SearchLimits::unlimited(lb) };
    let placement = exact(&p, &limits);
    setter.join().unwrap();
    validate(p.buffers(), &placement.offsets).expect("valid plan");
    assert!(flag.load(Ordering::Relaxed), "the search ended before it was cancelled");
    assert!(!placement.proven_optimal && !placement.time_limit_cut, "{placement:?}");
    assert!(placement.nodes > 0, "cancelled inside the search");
    // The node loop stops at the check that saw the flag; the round loop
    // checks once more on its way out, and nothing runs after that.
    assert_eq!(checks.load(Ordering::SeqCst), AT + 1, "stopped at the check that saw the flag");
}

#[test]
fn fixed_buffers_are_obstacles() {
    // A fixed buffer in the middle of the block: the free ones must fit
    // around it, and the optimum goes through a gap below it.
    let p = problem(1, &[(4, 0, 4, Some(4)), (4, 0, 2, None), (4, 2, 4, None), (8, 4, 6, None)]);
    let placement = exact(&p, &SearchLimits::unlimited(lower_bound(p.buffers()).bytes));
    assert_eq!(validate(p.buffers(), &placement.offsets).unwrap(), 8);
    assert_eq!(placement.offsets[0], 4);
}
