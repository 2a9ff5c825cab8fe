//! What a work unit of `auto` costs: the CPU time of a plan at the default
//! budget over the units it counted, per instance and per family. The
//! budget buys the same search everywhere only if a unit takes about the
//! same time on MiniMalloc's small hard instances, the long idealloc
//! traces, the Glow models and random instances whose buffers each live
//! with a hundred or a thousand others (conflict lists of many entries,
//! free space in many pieces). CPU time of the planning thread, not wall
//! time, so other load on the machine costs less accuracy; the instances
//! take turns, three rounds, and the median counts.

use std::fmt::Write as _;
use std::time::Duration;

use nnmem::plan::{Lifetime, Planner, DEFAULT_WORK_LIMIT};

use nnmem::plan::csv::Row;

use super::Instance;

/// The random families: buffers live for 1 to 2 x `live` steps, starting
/// anywhere among as many steps as buffers, so about `live` are live at a
/// step; sizes 1 to 4096 B.
const RANDOM_LIVE: [u64; 2] = [100, 1000];
const RANDOM_BUFFERS: [u64; 4] = [1_000, 3_000, 10_000, 30_000];

/// xorshift64: the same instances on every machine.
struct Rng(u64);

impl Rng {
    fn below(&mut self, n: u64) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0 % n
    }
}

fn random_family(live: u64) -> &'static str {
    match live {
        100 => "random, ~100 live",
        _ => "random, ~1000 live",
    }
}

/// One random instance of `n` buffers, about `live` live at a step.
fn random_instance(n: u64, live: u64) -> Instance {
    let mut rng = Rng(n.wrapping_mul(0x9E37_79B9_7F4A_7C15) ^ live | 1);
    let rows = (0..n)
        .map(|i| {
            let lower = rng.below(n) as i64;
            let upper = lower + 1 + rng.below(2 * live) as i64;
            let size = 1 + rng.below(4096);
            Row { id: i.to_string(), lower, upper, size, offset: None, line: i as usize + 2 }
        })
        .collect();
    Instance { set: "random".into(), name: format!("live{live}/n{n}"), rows }
}

/// Rounds over all instances (each instance once per round).
const ROUNDS: usize = 3;

/// Plans spending less than this share of the default budget are left
/// out of a family's range: there the budget was not what stopped them,
/// and the charges fixed in advance (the heuristic stage's estimates, made
/// on the long traces, adding the buffers) weigh more than the search.
const MIN_SHARE: u64 = 6;

/// One instance's cost per unit.
pub struct UnitCost {
    family: &'static str,
    instance: String,
    buffers: usize,
    work: u64,
    cpu: Duration,
}

impl UnitCost {
    fn ns_per_unit(&self) -> f64 {
        self.cpu.as_nanos() as f64 / self.work.max(1) as f64
    }
}

/// The CPU time this thread has used.
fn thread_cpu() -> Duration {
    let mut ts = libc::timespec { tv_sec: 0, tv_nsec: 0 };
    // SAFETY: `ts` is a valid, writable timespec; the clock id is a
    // constant every Linux kernel knows.
    let rc = unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut ts) };
    assert_eq!(rc, 0, "clock_gettime(CLOCK_THREAD_CPUTIME_ID) failed");
    Duration::new(ts.tv_sec as u64, ts.tv_nsec as u32)
}

/// `auto` at the default budget: (work units, CPU time).
fn plan(instance: &Instance) -> (u64, Duration) {
    let started = thread_cpu();
    let mut planner = Planner::new();
    for r in &instance.rows {
        let lifetime = Lifetime::half_open(r.lower, r.upper).expect("valid lifetime");
        planner.add_buffer(r.size, lifetime, r.offset).expect("valid buffer");
    }
    let work = planner.plan().expect("auto plans every shipped instance").work;
    (work, thread_cpu() - started)
}

fn family(instance: &Instance) -> Option<&'static str> {
    match instance.set.as_str() {
        "minimalloc" if instance.name.starts_with("challenging/") => Some("MiniMalloc challenging"),
        "idealloc" => Some("idealloc traces"),
        "glow" => Some("Glow models"),
        "random" if instance.name.starts_with("live100/") => Some(random_family(100)),
        "random" => Some(random_family(1000)),
        _ => None,
    }
}

fn families() -> [&'static str; 5] {
    ["MiniMalloc challenging", "idealloc traces", "Glow models", random_family(100), random_family(1000)]
}

/// Every challenging, idealloc and Glow instance and the random ones, at
/// the default budget.
pub fn measure(instances: &[&Instance]) -> Vec<UnitCost> {
    let random: Vec<Instance> =
        RANDOM_LIVE.iter().flat_map(|&l| RANDOM_BUFFERS.iter().map(move |&n| random_instance(n, l))).collect();
    let chosen: Vec<(&Instance, &'static str)> =
        instances.iter().copied().chain(&random).filter_map(|i| family(i).map(|f| (i, f))).collect();
    let mut samples: Vec<Vec<(u64, Duration)>> = vec![Vec::new(); chosen.len()];
    for round in 0..ROUNDS {
        eprint!("bench_table: work unit cost, round {} of {ROUNDS}:", round + 1);
        for (k, (instance, _)) in chosen.iter().enumerate() {
            let (work, cpu) = plan(instance);
            if let Some(&(first, _)) = samples[k].first() {
                assert_eq!(first, work, "auto's work is not deterministic on {}", instance.name);
            }
            samples[k].push((work, cpu));
            eprint!(" {}", instance.name);
        }
        eprintln!();
    }
    chosen
        .iter()
        .zip(samples)
        .map(|((instance, family), mut runs)| {
            runs.sort_by_key(|&(_, cpu)| cpu);
            let (work, cpu) = runs[runs.len() / 2];
            UnitCost {
                family,
                instance: format!("{}/{}", instance.set, instance.name),
                buffers: instance.rows.len(),
                work,
                cpu,
            }
        })
        .collect()
}

/// The section: per family the range of ns a unit and the longest plan,
/// then every instance.
pub fn render(rows: &[UnitCost]) -> String {
    let mut o = String::new();
    let w = &mut o;
    let _ = writeln!(w, "\n## What a work unit costs\n");
    let _ = writeln!(
        w,
        "`auto` at the default budget ({DEFAULT_WORK_LIMIT} units), CPU time of the planning thread \
         (adding the buffers included) over the units counted; median of {ROUNDS} interleaved rounds. \
         The ranges are over the plans spending at least a {MIN_SHARE}th of the budget, where the search \
         is most of the time: plans that stop far below the budget (the lower bound reached early) spend \
         less time a unit, since the heuristic stage's charges are estimates made on the long traces.\n"
    );
    for family in families() {
        let longest = rows.iter().filter(|r| r.family == family).map(|r| r.cpu).max().unwrap_or_default();
        let costs: Vec<f64> = rows
            .iter()
            .filter(|r| r.family == family && r.work >= DEFAULT_WORK_LIMIT / MIN_SHARE)
            .map(UnitCost::ns_per_unit)
            .collect();
        let range = match costs
            .iter()
            .fold(None, |r: Option<(f64, f64)>, &c| Some(r.map_or((c, c), |(lo, hi)| (lo.min(c), hi.max(c)))))
        {
            Some((lo, hi)) => format!("{lo:.2} to {hi:.2} ns a unit ({} instances)", costs.len()),
            None => "no plan spends a 6th of the budget".into(),
        };
        let _ = writeln!(w, "- {family}: {range}; the longest plan {:.0} ms", longest.as_secs_f64() * 1e3);
    }
    let _ = writeln!(
        w,
        "\nThe random instances (`bench_table/work_unit.rs`): n buffers, each live for 1 to 2L steps from a \
         step drawn among n, so about L live at a step, sizes 1 to 4096 B. Whatever the budget, `auto` runs \
         `size-first-fit` twice (and floor-first first): on the densest ones that alone counts past the \
         budget. The other heuristics are held to their charges as they go and given up there, so those \
         plans take about as long as the search's elsewhere."
    );
    let _ =
        writeln!(w, "\n| family | instance | buffers | work units | CPU ms | ns/unit |\n|---|---|---:|---:|---:|---:|");
    for r in rows {
        let _ = writeln!(
            w,
            "| {} | {} | {} | {} | {:.1} | {:.2} |",
            r.family,
            r.instance,
            r.buffers,
            r.work,
            r.cpu.as_secs_f64() * 1e3,
            r.ns_per_unit()
        );
    }
    o
}
