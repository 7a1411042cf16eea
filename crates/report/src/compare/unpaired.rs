//! The unpaired test of a model's groups: every dialogue of the model in both runs, its cases
//! resampled independently in each run within strata ([`sage_core::scoring::unpaired`]), one
//! stratum at a time. The strata of `all`, of a scenario and of a route are the (scenario,
//! target route) of the cases, a route whose cases number fewer than two in a run pooled with
//! the scenario's other such routes (a stratum of one case would not vary); those of an
//! adversarial level its scenarios. A stratum held by one run only is left out and counted.

use super::{Change, Changes, GroupKey, LEVELS};
use indexmap::IndexSet;
use sage_core::scoring::stats::Bootstrap;
use sage_core::scoring::unpaired::{CaseSums, StratifiedDifference, StratifiedFold, StratumDraws};

/// A dialogue of one run kept for the unpaired test (or, after [`cases`], a case: its
/// repeats together).
#[derive(Debug, Clone)]
pub(super) struct Entry {
    /// Of the current run (else the baseline).
    pub current: bool,
    /// Its model's index.
    pub model: u32,
    /// Its case key (the dialogue id without its repeat), hashed: the resampling unit.
    pub case: u64,
    /// Its scenario's index.
    pub scenario: u32,
    /// Its target route's index.
    pub route: u32,
    /// Its adversarial level's index in [`LEVELS`].
    pub level: u8,
    /// Dialogues (repeats) it holds.
    pub dialogues: usize,
    /// Its Overall, Logic and Chat sums over the counted turns.
    pub sums: CaseSums<3>,
}

/// The dialogues merged into cases, by model, run and case.
pub(super) fn cases(mut entries: Vec<Entry>) -> Vec<Entry> {
    entries.sort_by_key(|e| (e.model, e.current, e.case));
    entries.dedup_by(|later, first| {
        let same =
            (later.model, later.current, later.case) == (first.model, first.current, first.case);
        if same {
            first.sums.plus(&later.sums);
            first.dialogues += later.dialogues;
        }
        same
    });
    entries
}

/// The names of the scenarios and routes, and each one's rank among them (strata are visited in
/// the order of their names, whatever the order the records came in).
pub(super) struct Names<'a> {
    scenarios: &'a IndexSet<String>,
    routes: &'a IndexSet<String>,
    scenario_rank: Vec<usize>,
    route_rank: Vec<usize>,
}

impl<'a> Names<'a> {
    /// The names of `scenarios` and `routes`, ranked.
    pub fn new(scenarios: &'a IndexSet<String>, routes: &'a IndexSet<String>) -> Names<'a> {
        Names {
            scenarios,
            routes,
            scenario_rank: ranks(scenarios),
            route_rank: ranks(routes),
        }
    }
}

/// Each name's rank in sorted order.
fn ranks(names: &IndexSet<String>) -> Vec<usize> {
    let mut order: Vec<usize> = (0..names.len()).collect();
    order.sort_by_key(|&i| &names[i]);
    let mut rank = vec![0; names.len()];
    for (r, i) in order.into_iter().enumerate() {
        rank[i] = r;
    }
    rank
}

/// A stratum's cases in each run: `[baseline, current]`.
fn sides(cases: &[&Entry]) -> [Vec<CaseSums<3>>; 2] {
    let mut out: [Vec<CaseSums<3>>; 2] = Default::default();
    for e in cases {
        out[usize::from(e.current)].push(e.sums);
    }
    out
}

/// Both runs' draws of a stratum, each run's from a stream named by the run, the model and
/// `stratum`.
fn draw(
    sides: &[Vec<CaseSums<3>>; 2],
    model: &str,
    stratum: &str,
    bootstrap: &Bootstrap,
) -> [StratumDraws<3>; 2] {
    [("baseline", &sides[0]), ("current", &sides[1])].map(|(run, cases)| {
        StratumDraws::draw(cases, bootstrap, &format!("{run}/{model}/{stratum}"))
    })
}

/// A group's changes from its fold; `None` when no stratum was in both runs.
fn changes(fold: &StratifiedFold<3>, bootstrap: &Bootstrap) -> Option<Changes> {
    let StratifiedDifference { metrics, .. } = fold.finish(bootstrap)?;
    let change = |m: usize| Change {
        current: metrics[m].current,
        baseline: metrics[m].baseline,
        difference: metrics[m].difference,
    };
    Some(Changes {
        overall: change(0),
        logic: Some(change(1)),
        chat: Some(change(2)),
        p: metrics[0].p,
    })
}

/// The unpaired rows of one model's cases (both runs', from [`cases`]): per group its key and
/// changes; and the strata of `all` held by one run only, left out, with their dialogues.
/// Memory: the draws of one stratum, and the folds of `all`, one scenario and one level open
/// at a time.
pub(super) fn model_rows(
    model: &str,
    cases: &[Entry],
    names: &Names<'_>,
    bootstrap: &Bootstrap,
) -> (Vec<(GroupKey, Changes)>, (usize, usize)) {
    let b = bootstrap.resamples;
    let mut rows = Vec::new();
    let mut left_out = (0, 0);
    let mut order: Vec<&Entry> = cases.iter().collect();
    order.sort_by_key(|e| {
        let (s, r) = (e.scenario as usize, e.route as usize);
        (
            names.scenario_rank[s],
            names.route_rank[r],
            e.current,
            e.case,
        )
    });
    let mut all = StratifiedFold::new(b);
    for scenario in order.chunk_by(|a, b| a.scenario == b.scenario) {
        let s = scenario[0].scenario;
        let s_name = &names.scenarios[s as usize];
        let mut fold = StratifiedFold::new(b);
        let mut pool: [Vec<CaseSums<3>>; 2] = Default::default();
        for route in scenario.chunk_by(|a, b| a.route == b.route) {
            let r = route[0].route;
            let split = sides(route);
            if split.iter().any(Vec::is_empty) {
                left_out.0 += 1;
                left_out.1 += route.iter().map(|e| e.dialogues).sum::<usize>();
                continue;
            }
            let stratum = format!("{s_name}/{}", names.routes[r as usize]);
            let [base, cur] = draw(&split, model, &stratum, bootstrap);
            let mut own = StratifiedFold::new(b);
            own.add(&cur, &base);
            rows.extend(changes(&own, bootstrap).map(|c| ((3, s, r), c)));
            if split.iter().all(|cases| cases.len() >= 2) {
                fold.add(&cur, &base);
                all.add(&cur, &base);
            } else {
                for (pooled, cases) in pool.iter_mut().zip(split) {
                    pooled.extend(cases);
                }
            }
        }
        if pool.iter().all(|cases| !cases.is_empty()) {
            let stratum = format!("{s_name}/(routes of a single case in a run)");
            let [base, cur] = draw(&pool, model, &stratum, bootstrap);
            fold.add(&cur, &base);
            all.add(&cur, &base);
        }
        rows.extend(changes(&fold, bootstrap).map(|c| ((1, s, 0), c)));
    }
    rows.extend(changes(&all, bootstrap).map(|c| ((0, 0, 0), c)));
    // The adversarial levels, post-stratified by scenario.
    order.sort_by_key(|e| {
        (
            e.level,
            names.scenario_rank[e.scenario as usize],
            e.current,
            e.case,
        )
    });
    for level in order.chunk_by(|a, b| a.level == b.level) {
        let l = level[0].level;
        let mut fold = StratifiedFold::new(b);
        for scenario in level.chunk_by(|a, b| a.scenario == b.scenario) {
            let stratum = format!(
                "adversarial {}/{}",
                LEVELS[l as usize], names.scenarios[scenario[0].scenario as usize]
            );
            let [base, cur] = draw(&sides(scenario), model, &stratum, bootstrap);
            fold.add(&cur, &base);
        }
        rows.extend(changes(&fold, bootstrap).map(|c| ((2, u32::from(l), 0), c)));
    }
    (rows, left_out)
}
