//! The summary rendered: leaderboard.md (the paper's Table 1 and smaller tables) and a plain-text
//! main table for the terminal. Numbers are rounded here, never in the summary.

use super::stats::Metric;
use super::summary::{
    GroupStats, ModelSummary, RELEASED_BOTH, RELEASED_DROP_FORMAT_ERRORS, RELEASED_PREFIX_PATH,
    Summary, TURN_DEPTHS,
};
use std::collections::BTreeMap;
use std::fmt::Write;
use std::sync::OnceLock;

/// The paper's scenarios in its Table 1 column order (ER, TP, PS, LD, AR, OE): the leaderboards
/// put their columns first, in this order (the order only; headings and names come from the
/// scenarios, see [`scenario_columns`]).
const PAPER_COLUMN_ORDER: [&str; 6] = [
    "ecommerce_refund",
    "telecom_package",
    "property_service",
    "logistics_delivery",
    "airline_refund",
    "online_education",
];

/// Headings of the main table besides the scenario columns: a scenario is never headed by one.
const FIXED_HEADINGS: [&str; 6] = [
    "Model",
    "OA",
    "Logic",
    "Chat",
    "Format Error (%)",
    "Chat Length",
];

/// A scenario column of the leaderboards.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ScenarioColumn {
    /// The scenario id (summary.json's `by_scenario` key).
    pub id: String,
    /// The column's heading: the initials of the id's words (`ecommerce_refund` -> `ER`), or the
    /// id itself when it has one word or its initials would head another column too.
    pub abbreviation: String,
    /// The scenario's full name: its `name` when it is a bundled scenario
    /// (`E-commerce Refund`), else its id.
    pub name: String,
}

impl ScenarioColumn {
    /// The legend's words for the column: `E-commerce Refund (ecommerce_refund)`, or the id
    /// alone when it is the name.
    pub fn spelled_out(&self) -> String {
        if self.name == self.id {
            self.id.clone()
        } else {
            format!("{} ({})", self.name, self.id)
        }
    }
}

/// The scenario columns of `summary`'s leaderboards (each scenario any model has turns in), in
/// column order: the paper's six in its Table 1 order, then the others by id. Each column's
/// abbreviation and full name are derived from the scenario (see [`ScenarioColumn`]); the
/// terminal table, leaderboard.md and the HTML report head and spell out their scenario
/// columns with it.
pub fn scenario_columns(summary: &Summary) -> Vec<ScenarioColumn> {
    let models: Vec<&ModelSummary> = summary.models.iter().collect();
    columns_of(&models)
}

fn columns_of(models: &[&ModelSummary]) -> Vec<ScenarioColumn> {
    let mut ids: Vec<&String> = models.iter().flat_map(|m| m.by_scenario.keys()).collect();
    let rank = |id: &str| {
        PAPER_COLUMN_ORDER
            .iter()
            .position(|sc| *sc == id)
            .unwrap_or(PAPER_COLUMN_ORDER.len())
    };
    ids.sort_by(|a, b| rank(a).cmp(&rank(b)).then_with(|| a.cmp(b)));
    ids.dedup();
    let initials: Vec<Option<String>> = ids.iter().map(|id| initials(id)).collect();
    let taken = |abbr: &str, i: usize| {
        FIXED_HEADINGS.contains(&abbr)
            || initials
                .iter()
                .enumerate()
                .any(|(j, other)| j != i && other.as_deref() == Some(abbr))
            || ids.iter().any(|id| id.as_str() == abbr)
    };
    ids.iter()
        .zip(&initials)
        .enumerate()
        .map(|(i, (id, abbr))| ScenarioColumn {
            id: id.to_string(),
            abbreviation: match abbr {
                Some(abbr) if !taken(abbr, i) => abbr.clone(),
                _ => id.to_string(),
            },
            name: bundled_names()
                .get(id.as_str())
                .cloned()
                .unwrap_or_else(|| id.to_string()),
        })
        .collect()
}

/// The initials of an id of two words or more (`ecommerce_refund` -> `ER`); `None` for one
/// word.
fn initials(id: &str) -> Option<String> {
    let words: Vec<&str> = id
        .split(|c: char| c == '_' || c == '-' || c.is_whitespace())
        .filter(|w| !w.is_empty())
        .collect();
    (words.len() > 1).then(|| {
        words
            .iter()
            .filter_map(|w| w.chars().next())
            .flat_map(char::to_uppercase)
            .collect()
    })
}

/// The bundled scenarios' names by id, read once from their YAML.
fn bundled_names() -> &'static BTreeMap<String, String> {
    static NAMES: OnceLock<BTreeMap<String, String>> = OnceLock::new();
    NAMES.get_or_init(|| {
        crate::scenario::bundled::BUNDLED
            .iter()
            .filter_map(|(file, text)| crate::scenario::Scenario::from_yaml(text, file).ok())
            .map(|sc| (sc.id, sc.name))
            .collect()
    })
}

/// Which turns the judges scored, in words: `paper: turns 1, 5, 10, 15 and each dialogue's
/// final turn`, `every turn`, `turns 2, 4`, or that the dialogues differ.
pub fn judged_turns(summary: &Summary) -> String {
    match &summary.judged_turns {
        Some(turns) => turns.describe(),
        None if summary.dialogues == 0 => "none".into(),
        None => "not the same in every dialogue (see each job's judge_turns)".into(),
    }
}

/// The whole leaderboard as Markdown: the main table in the shape of the paper's Table 1, then
/// the execution gap, chat sub-dimensions, turn depth, adversarial level, judge agreement,
/// released-code variants, dialogues, repeats (when any), tokens and cost, route coverage.
pub fn leaderboard_markdown(summary: &Summary) -> String {
    let models = ranked(summary);
    let b = &summary.bootstrap;
    let mut out = String::from("# SAGE-RS leaderboard\n\n");
    let _ = writeln!(
        out,
        "Scores are 0-100 means over the scored turns ({SCORED_TURNS}). \
         Judged turns: {}. \
         `±` is half the {:.0}% interval of a cluster bootstrap over dialogues (B = {}, seed {}). \
         Scenario columns give OA. {} dialogues. Every abbreviation is spelled out in the \
         legend at the end.\n",
        judged_turns(summary),
        b.confidence * 100.0,
        b.resamples,
        b.seed,
        summary.dialogues
    );
    if let Some(simulator) = &summary.simulator {
        let _ = writeln!(
            out,
            "Customer simulator: {} (summary.json `simulator`): the scores depend on it; compare runs only under the same one.\n",
            simulator.line()
        );
    }
    if let Some(line) = sensitivity_line(summary) {
        let _ = writeln!(out, "{line}\n");
    }
    if let Some(line) = excluded_line(summary) {
        let _ = writeln!(out, "{line}\n");
    }
    let columns = columns_of(&models);
    out.push_str(&main_table(&models, &columns, summary.adaptive.as_ref()).markdown());
    if models.iter().any(|m| m.simulated) {
        out.push_str("\n(simulated): a built-in simulated backend, not a real language model.\n");
    }
    if models.iter().any(|m| m.structured_output.is_some()) {
        out.push_str(STRUCTURED_NOTE);
    }
    if let Some(b) = summary
        .budget
        .as_ref()
        .filter(|b| b.kept_some_from_starting())
    {
        let _ = writeln!(
            out,
            "\nCost budget reached (summary.json `budget`): {} dialogues not started, {} played; spent ${:.4}.",
            b.not_started, summary.dialogues, b.spent_usd
        );
    }
    if let Some(a) = &summary.adaptive {
        let (inside, outside) = a.decided();
        let saved: usize = a.models.iter().map(|m| m.not_played).sum();
        let _ = writeln!(
            out,
            "\nAdaptive run (summary.json `adaptive`): {inside} models surely in the top {}, {outside} surely out of it, {} undecided; {saved} dialogues of the full run not played.",
            a.top,
            a.models.len() - inside - outside
        );
    }
    let sections = [
        (
            "Execution gap (Acc_cls - Acc_action, per scenario)",
            gap_table(&models),
        ),
        ("Chat sub-dimensions", dimensions_table(&models)),
        ("Turn depth (OA)", depth_table(&models, summary)),
        ("Adversarial intensity", adversarial_table(&models)),
        ("Judge agreement", agreement_table(summary)),
        (
            "Customer fidelity (per customer model and adversarial level)",
            fidelity_table(&summary.customer_fidelity.by_customer, "Level"),
        ),
        (
            "Customer fidelity (per model under test)",
            fidelity_table(&summary.customer_fidelity.by_agent, "Agent"),
        ),
        (
            "Customer simulators (OA under each; the leaderboard ranks under the first)",
            sensitivity_table(summary),
        ),
        ("Released-code variants", released_table(&models)),
        ("Dialogues", dialogues_table(&models)),
        (
            "Per case, across repeats (each case's median over its repeats)",
            repeats_table(&models),
        ),
        (
            "pass^k (cases passing all k of k repeats, %)",
            pass_k_table(&models),
        ),
        ("Tokens and cost", cost_table(&models)),
        (
            "Route coverage (dialogues per target route)",
            coverage_table(summary),
        ),
    ];
    let mut shown = vec![main_table(&models, &columns, summary.adaptive.as_ref())];
    for (title, table) in sections {
        if !table.rows.is_empty() {
            let _ = write!(out, "\n## {title}\n\n{}", table.markdown());
            shown.push(table);
        }
    }
    let _ = write!(
        out,
        "\n## Legend\n\n{}",
        legend(&shown, &columns, summary).markdown()
    );
    out
}

/// The width of the terminal leaderboard: every line [`leaderboard_text`] prints is at most this
/// many characters, whatever the number of models and scenarios.
pub const TERMINAL_WIDTH: usize = 120;

/// The leaderboard for the terminal, every line at most [`TERMINAL_WIDTH`] characters: the main
/// table (models ranked by OA, best first) without the scenario columns, then OA per scenario
/// in a table of its own, pass^k (with repeats) and the legend of every abbreviation shown.
/// Model names too long for the width are cut in the middle with `…` (each still unique;
/// leaderboard.md has them whole), and a table still too wide is split into several, each
/// repeating the model column.
pub fn leaderboard_text(summary: &Summary) -> String {
    let models = ranked(summary);
    let columns = columns_of(&models);
    let main = main_table(&models, &[], summary.adaptive.as_ref());
    let mut out = main.text_within(TERMINAL_WIDTH);
    let mut notes = format!(
        "Means over the scored turns; judged turns: {}.",
        judged_turns(summary)
    );
    if models.iter().any(|m| m.structured_output.is_some()) {
        notes.push(' ');
        notes.push_str(STRUCTURED_NOTE.trim());
    }
    if let Some(simulator) = &summary.simulator {
        let _ = write!(notes, " Customer simulator: {}.", simulator.line());
    }
    if let Some(line) = sensitivity_line(summary) {
        let _ = write!(notes, " {line}");
    }
    if let Some(line) = excluded_line(summary) {
        let _ = write!(notes, " {line}");
    }
    let mut shown = vec![main];
    let scenarios = scenario_table(&models, &columns);
    if !columns.is_empty() {
        let _ = write!(
            out,
            "{}\nOA per scenario:\n{}",
            wrap("", &notes, TERMINAL_WIDTH, ""),
            scenarios.text_within(TERMINAL_WIDTH)
        );
        shown.push(scenarios);
    } else {
        out.push_str(&wrap("", &notes, TERMINAL_WIDTH, ""));
    }
    let pass = pass_k_table(&models);
    if !pass.rows.is_empty() {
        let _ = write!(out, "\n{}", pass.text_within(TERMINAL_WIDTH));
        shown.push(pass);
    }
    if shown.iter().any(|t| t.cut_within(TERMINAL_WIDTH)) {
        out.push_str(&wrap(
            "",
            &format!(
                "Model names cut with … to fit {TERMINAL_WIDTH} columns: leaderboard.md and report.html have them whole."
            ),
            TERMINAL_WIDTH,
            "",
        ));
    }
    let _ = write!(
        out,
        "\nLegend:\n{}",
        legend(&shown, &columns, summary).text_within(TERMINAL_WIDTH)
    );
    out
}

/// OA per scenario, one column per scenario, the models in the order given.
fn scenario_table(models: &[&ModelSummary], columns: &[ScenarioColumn]) -> Table {
    let mut headers = vec!["Model".to_string()];
    headers.extend(columns.iter().map(|c| c.abbreviation.clone()));
    let mut table = Table::new(headers);
    for m in models {
        let mut row = vec![model_name(m)];
        row.extend(
            columns
                .iter()
                .map(|c| metric(m.by_scenario.get(&c.id).and_then(|g| g.overall.as_ref()))),
        );
        table.rows.push(row);
    }
    table
}

/// `text` on a line after `label` (indented by two), its further lines indented under the
/// first; every line ends with a line break.
pub fn said(out: &mut String, label: &str, text: &str) {
    let pad = " ".repeat(label.chars().count() + 2);
    let mut lines = text.lines();
    out.push_str(&format!("  {label}{}\n", lines.next().unwrap_or("")));
    for line in lines {
        out.push_str(&format!("{pad}{line}\n"));
    }
}

/// `text` after `prefix`, wrapped at spaces into lines of at most `width` characters (a word
/// longer than the width stands alone), each line after the first starting with `indent`;
/// every line ends with a line break.
pub fn wrap(prefix: &str, text: &str, width: usize, indent: &str) -> String {
    let mut out = String::new();
    let mut line = prefix.to_string();
    let mut fresh = true;
    for word in text.split(' ').filter(|w| !w.is_empty()) {
        let len = line.chars().count();
        if !fresh && len + 1 + word.chars().count() > width {
            out.push_str(line.trim_end());
            out.push('\n');
            line = indent.to_string();
            fresh = true;
        }
        if !fresh {
            line.push(' ');
        }
        line.push_str(word);
        fresh = false;
    }
    out.push_str(line.trim_end());
    out.push('\n');
    out
}

/// `names` cut to at most `width` characters each, in the middle with `…` (a name that fits is
/// kept whole; tags at its end such as ` (simulated)` are kept, the name before them cut), so
/// that no two are the same: where cutting would make two the same, the cut moves; names no cut
/// tells apart are kept whole.
pub fn cut_names(names: &[String], width: usize) -> Vec<String> {
    // (the name before its tags, its tags)
    let split: Vec<(Vec<char>, &str)> = names
        .iter()
        .map(|n| {
            let mut base = n.as_str();
            while base.ends_with(')')
                && let Some(at) = base.rfind(" (")
            {
                base = &base[..at];
            }
            (base.chars().collect(), &n[base.len()..])
        })
        .collect();
    let cut = |(base, tags): &(Vec<char>, &str), tail: usize| -> String {
        let room = width.saturating_sub(tags.chars().count());
        if base.len() + tags.chars().count() <= width || room < 3 {
            return base.iter().collect::<String>() + tags;
        }
        let tail = tail.min(room - 2);
        let head = room - 1 - tail;
        let mut s: String = base[..head].iter().collect();
        s.push('…');
        s.extend(&base[base.len() - tail..]);
        s + tags
    };
    // The end of a model name (its size, version, date) tells models apart most often: the
    // cut keeps half of the room for it, then more or less until every name is unique.
    let half = |n: &(Vec<char>, &str)| width.saturating_sub(n.1.chars().count() + 1) / 2;
    let cut_all = |shift: isize| -> Vec<String> {
        split
            .iter()
            .map(|n| cut(n, half(n).saturating_add_signed(shift).max(1)))
            .collect()
    };
    let shifts = (0..width as isize).chain((1..width as isize).map(|s| -s));
    for shift in shifts {
        let out = cut_all(shift);
        if unique(&out) {
            return out;
        }
    }
    // No single cut keeps them apart: the names that clash stay whole.
    let first = cut_all(0);
    first
        .iter()
        .zip(names)
        .map(|(cut, whole)| {
            if first.iter().filter(|o| *o == cut).count() > 1 {
                whole.clone()
            } else {
                cut.clone()
            }
        })
        .collect()
}

/// Whether no two of `names` are the same.
fn unique(names: &[String]) -> bool {
    let mut seen: Vec<&String> = names.iter().collect();
    seen.sort();
    seen.windows(2).all(|w| w[0] != w[1])
}

/// What a scored turn is, in the leaderboards' words.
const SCORED_TURNS: &str = "valid answers the judges scored, and format errors on judged turns, \
    counted with Logic 0; turns not judged are not scored";

/// The legend of the tables `shown`: every heading that abbreviates or names a measure, with
/// its meaning, in the order the tables show them (each once).
fn legend(shown: &[Table], columns: &[ScenarioColumn], summary: &Summary) -> Legend {
    let confidence = summary.bootstrap.confidence * 100.0;
    let mut entries: BTreeMap<String, String> = [
        ("OA", "Overall = 0.8 Logic + 0.2 Chat (paper eq. 9), 0-100, mean over the scored turns".to_string()),
        ("Logic", "100 × (0.4 Acc_cls + 0.4 Sim_path + 0.2 Acc_action): the answer's classification, SOP path and action against the reference".into()),
        ("Chat", "the judges' chat quality, five dimensions weighted 20/25/25/15/15, 0-100".into()),
        ("Format Error (%)", "% of the agent's answers that did not parse (no JSON, a missing key, a value outside the options), judged turns or not".into()),
        ("Chat Length", "characters of the agent's chat reply, mean over the scored valid answers".into()),
        ("Scored turns", format!("the turns the means are over: {SCORED_TURNS} (summary.json `turns`, each mean's `n`)")),
        ("±", format!("half the {confidence:.0}% cluster-bootstrap interval over dialogues")),
        ("Acc_cls", "classification accuracy: share of the fields classified as the judges' consensus (paper eq. 5)".into()),
        ("Sim_path", "path similarity: share of the reference path's stages the answer's path holds (eq. 6)".into()),
        ("Acc_action", "action correctness: the answer's action (and outputs) is the reference's (eq. 7)".into()),
        ("Gap", "execution gap: Acc_cls - Acc_action, in points".into()),
        ("Ling.", "linguistic quality (chat dimension, weight 20%)".into()),
        ("Anth.", "anthropomorphism and emotion (chat dimension, weight 25%)".into()),
        ("Cont.", "content utility (chat dimension, weight 25%)".into()),
        ("Satis.", "user satisfaction (chat dimension, weight 15%)".into()),
        ("Instr.", "instruction compliance (chat dimension, weight 15%)".into()),
        ("T1", "OA at turn 1 (T5, T10, T15: at turns 5, 10, 15; Final: each dialogue's last scored turn)".into()),
        ("Turn-level (1/5/10/15/final)", "OA over turns 1, 5, 10, 15 and each dialogue's final turn, each counted once".into()),
        ("Format-error turns", "every answer that did not parse, judged or not (the Format Error numerator); those on judged turns are scored turns".into()),
        ("Infra-error turns", "turns not scored for an infrastructure reason: the agent unreachable, or no judge (or rule engine) answered".into()),
        ("Not judged (valid answers)", "valid answers on turns the judges were not asked about (judge_turns): in Format Error only".into()),
        ("OA per case (mean)", "a case is one customer served by one model; its score is the median over its repeats of each dialogue's mean over its scored turns; the column is the mean over cases. OA weighs every scored turn alike, this every case".into()),
        ("OA per case (median)", "the same per-case scores, their median over cases".into()),
        ("Off-intent (%)", "% of the judged turns whose panel consensus differs from the case's true fields on some field: the customer model left the case's intent (or the judges misread it); a high figure makes the agents' Logic there the customer's doing as much as theirs".into()),
        ("Ended early (%)", "% of the dialogues the customer ended before the agent took the target action".into()),
        ("Repeated lines (%)", "% of the customer's lines that say the same words as an earlier one of the dialogue".into()),
        ("Customer", "the customer (user-simulator) model".into()),
        ("Off-case lines", "customer lines that assert what the case does not hold (another intent's words, implying another value of a field the case fixes), and the dialogues holding one".into()),
        ("Failures after off-case (%)", "% of the agent's failed turns (Logic below 100) at or after an off-case customer line: possibly the simulator's doing; `sage report DIR --exclude-off-case` leaves those dialogues out".into()),
        ("Δ OA", "the model's OA under this customer simulator minus under the first, paired over the same cases (same seed), with its 95% bootstrap interval".into()),
        ("Noise floor", "half the interval a rerun of the same design could move the model's OA by, under the first simulator".into()),
        ("Moved", "the Δ OA's interval leaves out 0 and the Δ is larger than the noise floor: the result depends on the simulator".into()),
        ("Effective judges", "how many independent votes the panel is worth on the field: Kish's judges / (1 + (judges - 1) r), r the mean correlation of the judges' errors (against the case's truth, or the consensus where the case does not fix the field); (!) a panel of 3 or more worth fewer than 1.5".into()),
        ("Re-asked turns", "customer turns `customer_guard` asked again (a line flagged off-script: empty, repeated or in the agent's words)".into()),
        ("Adaptive", "an adaptive run's decision (summary.json `adaptive`): `top K @n`, surely in the top K after n dialogues, and `out @n`, surely out of it (either way it got no more cases); `undecided`, played to the full run's size. Each model's OA carries a 95% anytime-valid confidence sequence".into()),
        ("pass^1", "the share of cases, %, whose k repeats drawn from the case's n all reach the target action (mean over cases of C(c,k)/C(n,k), c passes); pass^1 is the pass rate".into()),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_string(), v))
    .collect();
    for c in columns {
        entries.insert(
            c.abbreviation.clone(),
            format!("OA in scenario {}", c.spelled_out()),
        );
    }
    let mut legend = Legend::default();
    for heading in shown.iter().flat_map(|t| &t.headers) {
        // The adversarial table's `OA zero`, `Format Error (%) strong`: the measure's term.
        let heading = [" zero", " weak", " strong"]
            .iter()
            .find_map(|level| heading.strip_suffix(level))
            .unwrap_or(heading);
        let key = match heading {
            h if h.starts_with("pass^") => "pass^1",
            h if h.contains(" per case ") => {
                if h.ends_with("(median)") {
                    "OA per case (median)"
                } else {
                    "OA per case (mean)"
                }
            }
            "T5" | "T10" | "T15" | "Final" => "T1",
            h => h,
        };
        if let Some(meaning) = entries.remove(key) {
            let term = match key {
                "pass^1" => "pass^k",
                "T1" => "T1, T5, T10, T15, Final",
                "OA per case (mean)" => "OA/Logic/Chat per case (mean)",
                "OA per case (median)" => "OA/Logic/Chat per case (median)",
                k => k,
            };
            legend.0.push((term.to_string(), meaning));
        }
    }
    if let Some(meaning) = entries.remove("±") {
        legend.0.push(("±".into(), meaning));
    }
    legend
}

/// Terms and their meanings, rendered as a Markdown list or aligned text.
#[derive(Debug, Default)]
struct Legend(Vec<(String, String)>);

impl Legend {
    fn markdown(&self) -> String {
        self.0
            .iter()
            .map(|(term, meaning)| format!("- **{term}**: {meaning}\n"))
            .collect()
    }

    /// As aligned text, the meanings wrapped so that no line is longer than `width`
    /// characters (continued under the meaning's first character).
    fn text_within(&self, width: usize) -> String {
        let term_width = self
            .0
            .iter()
            .map(|(t, _)| t.chars().count())
            .max()
            .unwrap_or(0);
        let indent = " ".repeat(term_width + 4);
        self.0
            .iter()
            .map(|(term, meaning)| {
                let pad = " ".repeat(term_width - term.chars().count());
                wrap(&format!("  {term}{pad}  "), meaning, width, &indent)
            })
            .collect()
    }
}

/// Models by OA, best first (models without a score last, then by name).
pub fn ranked(summary: &Summary) -> Vec<&ModelSummary> {
    let mut models: Vec<&ModelSummary> = summary.models.iter().collect();
    let oa = |m: &ModelSummary| m.all.overall.map_or(f64::NEG_INFINITY, |x| x.mean);
    models.sort_by(|a, b| oa(b).total_cmp(&oa(a)).then_with(|| a.model.cmp(&b.model)));
    models
}

/// The leaderboards' footnote on the "(structured)" label.
const STRUCTURED_NOTE: &str = "\n(structured): the agent was asked with a JSON Schema of its answer (structured_output), so its format errors are not comparable with unconstrained agents.\n";

fn model_name(m: &ModelSummary) -> String {
    model_label(&m.model, m.simulated, m.structured_output.is_some())
}

/// A model's name as the leaderboards show it: ` (simulated)` after a built-in simulated
/// model's, ` (structured)` after one asked with a JSON Schema of its answer.
pub fn model_label(model: &str, simulated: bool, structured: bool) -> String {
    let mut name = model.to_string();
    if simulated {
        name.push_str(" (simulated)");
    }
    if structured {
        name.push_str(" (structured)");
    }
    name
}

/// `71.56 ±1.2`, or `-` when there is no value.
fn metric(m: Option<&Metric>) -> String {
    m.map_or_else(
        || "-".into(),
        |m| format!("{:.2} ±{:.1}", m.mean, m.half_width()),
    )
}

fn opt(x: Option<f64>) -> String {
    x.map_or_else(|| "-".into(), |x| format!("{x:.2}"))
}

/// The main table; an adaptive run's has a column of each model's decision.
fn main_table(
    models: &[&ModelSummary],
    columns: &[ScenarioColumn],
    adaptive: Option<&crate::scoring::adaptive::AdaptiveSummary>,
) -> Table {
    let mut headers = vec![
        "Model".to_string(),
        "OA".into(),
        "Logic".into(),
        "Chat".into(),
    ];
    headers.extend(columns.iter().map(|c| c.abbreviation.clone()));
    headers.extend([
        "Format Error (%)".to_string(),
        "Chat Length".into(),
        "Scored turns".into(),
    ]);
    if adaptive.is_some() {
        headers.push("Adaptive".into());
    }
    let mut table = Table::new(headers);
    for m in models {
        let a = &m.all;
        let mut row = vec![
            model_name(m),
            metric(a.overall.as_ref()),
            metric(a.logic.as_ref()),
            metric(a.chat.as_ref()),
        ];
        row.extend(
            columns
                .iter()
                .map(|c| metric(m.by_scenario.get(&c.id).and_then(|g| g.overall.as_ref()))),
        );
        row.push(metric(a.format_error_rate.as_ref()));
        row.push(metric(a.chat_length.as_ref()));
        row.push(a.turns.to_string());
        if let Some(adaptive) = adaptive {
            row.push(adaptive.mark(&m.model));
        }
        table.rows.push(row);
    }
    table
}

fn gap_table(models: &[&ModelSummary]) -> Table {
    let mut table = Table::with(&[
        "Model",
        "Scenario",
        "Acc_cls",
        "Sim_path",
        "Acc_action",
        "Gap",
    ])
    .labels(2);
    for m in models {
        let groups = m.by_scenario.iter().map(|(sc, g)| (sc.as_str(), g));
        for (sc, g) in groups.chain([("all", &m.all)]) {
            table.rows.push(vec![
                model_name(m),
                sc.to_string(),
                metric(g.acc_cls.as_ref()),
                metric(g.sim_path.as_ref()),
                metric(g.acc_action.as_ref()),
                metric(g.execution_gap.as_ref()),
            ]);
        }
    }
    table
}

fn dimensions_table(models: &[&ModelSummary]) -> Table {
    let mut table = Table::with(&["Model", "Ling.", "Anth.", "Cont.", "Satis.", "Instr."]);
    for m in models {
        let d = &m.all.chat_dimensions;
        table.rows.push(vec![
            model_name(m),
            metric(d.linguistic_quality.as_ref()),
            metric(d.anthropomorphism_emotion.as_ref()),
            metric(d.content_utility.as_ref()),
            metric(d.user_satisfaction.as_ref()),
            metric(d.instruction_compliance.as_ref()),
        ]);
    }
    table
}

/// OA per turn depth, then over the turn-level turns and over all scored turns; under
/// `judge_turns: paper` the judged turns are the turn-level ones, so the two would be the same
/// column and "All turns" is left out.
fn depth_table(models: &[&ModelSummary], summary: &Summary) -> Table {
    let all_turns = summary.judged_turns != Some(crate::protocol::JudgeTurns::Paper);
    let keys: Vec<String> = TURN_DEPTHS
        .iter()
        .map(|k| format!("t{k}"))
        .chain(["final".to_string()])
        .collect();
    let mut headers = vec!["Model".to_string()];
    headers.extend(
        keys.iter()
            .map(|k| k.to_uppercase().replace("FINAL", "Final")),
    );
    headers.push("Turn-level (1/5/10/15/final)".to_string());
    if all_turns {
        headers.push("All turns".into());
    }
    let mut table = Table::new(headers);
    for m in models {
        let mut row = vec![model_name(m)];
        row.extend(
            keys.iter()
                .map(|k| metric(m.by_turn.get(k).and_then(|g| g.overall.as_ref()))),
        );
        row.push(metric(m.turn_level.overall.as_ref()));
        if all_turns {
            row.push(metric(m.all.overall.as_ref()));
        }
        table.rows.push(row);
    }
    table
}

/// Reads one metric of a group.
type Getter = fn(&GroupStats) -> Option<&Metric>;

fn adversarial_table(models: &[&ModelSummary]) -> Table {
    const LEVELS: [&str; 3] = ["zero", "weak", "strong"];
    // Chat beside Logic shows empathy resilience: politeness holding while logic falls.
    let columns: [(&str, Getter); 4] = [
        ("OA", |g| g.overall.as_ref()),
        ("Logic", |g| g.logic.as_ref()),
        ("Chat", |g| g.chat.as_ref()),
        ("Format Error (%)", |g| g.format_error_rate.as_ref()),
    ];
    let mut headers = vec!["Model".to_string()];
    for (name, _) in &columns {
        headers.extend(LEVELS.iter().map(|l| format!("{name} {l}")));
    }
    let mut table = Table::new(headers);
    for m in models {
        let mut row = vec![model_name(m)];
        for (_, get) in &columns {
            row.extend(
                LEVELS
                    .iter()
                    .map(|l| metric(m.by_adversarial.get(*l).and_then(get))),
            );
        }
        table.rows.push(row);
    }
    table
}

fn agreement_table(summary: &Summary) -> Table {
    let mut table = Table::with(&[
        "Scenario",
        "Field",
        "Turns",
        "Judges unanimous (%)",
        "Consensus = ground truth (%)",
        "Effective judges",
    ])
    .labels(2);
    for (sc, a) in &summary.judge_agreement {
        for (field, f) in &a.fields {
            table.rows.push(vec![
                sc.clone(),
                field.clone(),
                a.turns.to_string(),
                format!("{:.2}", f.unanimous),
                opt(f.matches_truth),
                effective(f.effective_judges, a.judges),
            ]);
        }
        table.rows.push(vec![
            sc.clone(),
            "(all fields)".into(),
            a.turns.to_string(),
            format!("{:.2}", a.unanimous_all_fields),
            opt(a.truth_all_fields),
            "".into(),
        ]);
    }
    table
}

/// A panel's effective number of judges on a field, `1.2 of 3 (!)` when a panel of 3 or more
/// votes like fewer than [`FEW_EFFECTIVE_JUDGES`](super::summary::FEW_EFFECTIVE_JUDGES).
fn effective(n: Option<f64>, judges: usize) -> String {
    match n {
        None => "-".into(),
        Some(n) if judges >= 3 && n < super::summary::FEW_EFFECTIVE_JUDGES => {
            format!("{n:.1} of {judges} (!)")
        }
        Some(n) => format!("{n:.1} of {judges}"),
    }
}

/// What `sage report --exclude-off-case` left out, in one sentence.
fn excluded_line(summary: &Summary) -> Option<String> {
    summary.off_case_excluded.map(|n| {
        format!(
            "Left out (--exclude-off-case): {n} dialogues in which the customer went off-case; every figure here is without them (`sage report DIR` counts them back)."
        )
    })
}

/// A run with several customer simulators in one sentence: who they were, that the ranking
/// is under the first, and which models moved beyond the noise under another.
fn sensitivity_line(summary: &Summary) -> Option<String> {
    let first = summary.simulator_sensitivity.first()?;
    let names: Vec<&str> = (first.simulators.iter())
        .map(|s| s.user_model.as_str())
        .collect();
    let moved: Vec<&str> = (summary.simulator_sensitivity.iter())
        .filter(|m| m.moved())
        .map(|m| m.model.as_str())
        .collect();
    let moved = match moved.len() {
        0 => "no model's OA moved beyond its noise under another".to_string(),
        n => format!(
            "{n} of {} models moved beyond their noise under another: {}",
            summary.simulator_sensitivity.len(),
            moved.join(", ")
        ),
    };
    Some(format!(
        "Every case was played under {} customer simulators ({}); ranked under the first, {} (summary.json `simulator_sensitivity`); {moved}.",
        names.len(),
        names.join(", "),
        names[0]
    ))
}

/// Each model's OA under each customer simulator, its difference from the first and whether
/// it moved beyond the noise (no rows with one simulator).
fn sensitivity_table(summary: &Summary) -> Table {
    let mut table = Table::with(&[
        "Model",
        "Customer",
        "Dialogues",
        "OA",
        "Δ OA",
        "Noise floor",
        "Moved",
    ])
    .labels(2);
    for m in &summary.simulator_sensitivity {
        for s in &m.simulators {
            let delta = s.difference.map_or_else(
                || "(ranked under)".into(),
                |d| format!("{:+.2} [{:+.2}, {:+.2}]", d.delta, d.ci_low, d.ci_high),
            );
            table.rows.push(vec![
                m.model.clone(),
                s.user_model.clone(),
                s.dialogues.to_string(),
                metric(s.oa.as_ref()),
                delta,
                opt(m.noise_floor),
                if s.moved { "moved" } else { "-" }.into(),
            ]);
        }
    }
    table
}

/// Customer-fidelity rows, the second column `by`: the adversarial level or the agent.
fn fidelity_table(rows: &[crate::scoring::summary::CustomerFidelity], by: &str) -> Table {
    let guarded = rows.iter().any(|f| f.retried > 0);
    let mut headers = vec![
        "Customer",
        by,
        "Dialogues",
        "Judged turns",
        "Off-intent (%)",
        "Ended early (%)",
        "Repeated lines (%)",
        "Off-case lines",
        "Failures after off-case (%)",
    ];
    if guarded {
        headers.push("Re-asked turns");
    }
    let mut table = Table::with(&headers).labels(2);
    for f in rows {
        let group = match (&f.adversarial, &f.service_model) {
            (Some(level), _) => level.to_string(),
            (None, Some(agent)) => agent.clone(),
            (None, None) => String::new(),
        };
        table.rows.push(vec![
            f.customer_model.clone(),
            group,
            f.dialogues.to_string(),
            f.judged_turns.to_string(),
            opt(f.off_intent),
            format!("{:.2}", f.ended_early),
            opt(f.repeated),
            format!("{} in {} dialogues", f.off_case_lines, f.off_case_dialogues),
            match f.possibly_simulator {
                Some(p) => format!("{p:.2} ({} of {})", f.failures_after_off_case, f.failures),
                None => "-".into(),
            },
        ]);
        if guarded {
            table
                .rows
                .last_mut()
                .expect("pushed")
                .push(f.retried.to_string());
        }
    }
    table
}

fn released_table(models: &[&ModelSummary]) -> Table {
    let mut table = Table::with(&[
        "Model",
        "Variant",
        "OA",
        "Logic",
        "Chat",
        "Sim_path",
        "Scored turns",
    ])
    .labels(2);
    for m in models {
        let variants = [
            ("paper", Some(&m.all)),
            (
                "drop format errors",
                m.released.get(RELEASED_DROP_FORMAT_ERRORS),
            ),
            ("prefix path", m.released.get(RELEASED_PREFIX_PATH)),
            ("both", m.released.get(RELEASED_BOTH)),
        ];
        for (name, g) in variants {
            let Some(g) = g else { continue };
            table.rows.push(vec![
                model_name(m),
                name.into(),
                metric(g.overall.as_ref()),
                metric(g.logic.as_ref()),
                metric(g.chat.as_ref()),
                metric(g.sim_path.as_ref()),
                g.turns.to_string(),
            ]);
        }
    }
    table
}

fn dialogues_table(models: &[&ModelSummary]) -> Table {
    let mut headers = vec![
        "Model".to_string(),
        "Dialogues".into(),
        "Scored turns".into(),
        "Format-error turns".into(),
        "Infra-error turns".into(),
    ];
    // Valid answers on turns the judges were not asked about (`judge_turns`), when any.
    let unjudged = models.iter().any(|m| m.all.unjudged_turns > 0);
    if unjudged {
        headers.push("Not judged (valid answers)".into());
    }
    let reasons: Vec<&String> = models
        .first()
        .map(|m| m.end_reasons.keys().collect())
        .unwrap_or_default();
    headers.extend(reasons.iter().map(|r| format!("End: {r}")));
    let mut table = Table::new(headers);
    for m in models {
        let mut row = vec![
            model_name(m),
            m.dialogues.to_string(),
            m.all.turns.to_string(),
            m.all.format_error_turns.to_string(),
            m.all.infra_error_turns.to_string(),
        ];
        if unjudged {
            row.push(m.all.unjudged_turns.to_string());
        }
        row.extend(
            reasons
                .iter()
                .map(|r| m.end_reasons.get(*r).copied().unwrap_or(0).to_string()),
        );
        table.rows.push(row);
    }
    table
}

fn repeats_table(models: &[&ModelSummary]) -> Table {
    let mut table = Table::with(&[
        "Model",
        "Cases",
        "Max repeats",
        "OA per case (mean)",
        "OA per case (median)",
        "Logic per case (mean)",
        "Logic per case (median)",
        "Chat per case (mean)",
        "Chat per case (median)",
    ]);
    for m in models {
        let Some(r) = &m.repeats else { continue };
        let mut row = vec![
            model_name(m),
            r.cases.to_string(),
            r.max_repeats.to_string(),
        ];
        for s in [r.overall, r.logic, r.chat] {
            row.extend([format!("{:.2}", s.mean), format!("{:.2}", s.median)]);
        }
        table.rows.push(row);
    }
    table
}

/// pass^k per model (the k columns of the model that ran the most repeats; `-` where a model
/// has no such k); no rows without repeats.
fn pass_k_table(models: &[&ModelSummary]) -> Table {
    let most = models
        .iter()
        .flat_map(|m| m.pass_k.iter().map(|p| p.k))
        .max()
        .unwrap_or(0);
    let mut headers = vec!["Model".to_string(), "Cases".into()];
    headers.extend((1..=most).map(|k| format!("pass^{k}")));
    let mut table = Table::new(headers);
    for m in models.iter().filter(|m| !m.pass_k.is_empty()) {
        let mut row = vec![model_name(m), m.pass_k[0].cases.to_string()];
        row.extend((1..=most).map(|k| {
            let p = m.pass_k.iter().find(|p| p.k == k);
            opt(p.map(|p| p.pass))
        }));
        table.rows.push(row);
    }
    table
}

fn cost_table(models: &[&ModelSummary]) -> Table {
    let mut table = Table::with(&[
        "Model",
        "Service calls",
        "Service tokens in",
        "Service tokens out",
        "Service cost ($)",
        "User cost ($)",
        "Judge cost ($)",
        "All tokens",
        "All cost ($)",
        "Tokens / scored turn",
        "Cost / scored turn ($)",
    ]);
    for m in models {
        let role = |r: &str| m.calls.by_role.get(r).copied().unwrap_or_default();
        let (service, t) = (role("service"), &m.calls.total);
        let per_turn = m.calls.per_scored_turn.get("all");
        table.rows.push(vec![
            model_name(m),
            service.calls.to_string(),
            service.input_tokens.to_string(),
            service.output_tokens.to_string(),
            format!("{:.4}", service.cost_usd),
            format!("{:.4}", role("user").cost_usd),
            format!("{:.4}", role("judge").cost_usd),
            (t.input_tokens + t.output_tokens).to_string(),
            format!("{:.4}", t.cost_usd),
            per_turn.map_or("-".into(), |p| {
                format!("{:.0}", p.input_tokens + p.output_tokens)
            }),
            per_turn.map_or("-".into(), |p| format!("{:.6}", p.cost_usd)),
        ]);
    }
    table
}

fn coverage_table(summary: &Summary) -> Table {
    let mut table = Table::with(&["Scenario", "Target route", "Dialogues"]).labels(2);
    for (sc, routes) in &summary.coverage {
        for (route, n) in routes {
            table
                .rows
                .push(vec![sc.clone(), route.clone(), n.to_string()]);
        }
    }
    table
}

/// A table of text cells: the first `labels` columns are labels (left-aligned), the others
/// numbers (right-aligned), rendered as Markdown or aligned plain text.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Table {
    /// The column headers.
    pub headers: Vec<String>,
    /// The rows of cells.
    pub rows: Vec<Vec<String>>,
    labels: usize,
}

impl Table {
    /// A table with these headers, no rows, the first column a label.
    pub fn new(headers: Vec<String>) -> Table {
        Table {
            headers,
            rows: Vec::new(),
            labels: 1,
        }
    }

    /// The first `n` columns are labels.
    pub fn labels(mut self, n: usize) -> Table {
        self.labels = n;
        self
    }

    /// A table with these headers.
    pub fn with(headers: &[&str]) -> Table {
        Table::new(headers.iter().map(|h| h.to_string()).collect())
    }

    /// As a Markdown table.
    pub fn markdown(&self) -> String {
        let line = |cells: &[String]| format!("| {} |\n", cells.join(" | "));
        let mut out = line(&self.headers);
        let rule: Vec<String> = (0..self.headers.len())
            .map(|i| if i < self.labels { "---" } else { "---:" }.to_string())
            .collect();
        out.push_str(&line(&rule));
        for row in &self.rows {
            out.push_str(&line(row));
        }
        out
    }

    /// The widest cell of each column, in characters.
    fn widths(&self) -> Vec<usize> {
        (0..self.headers.len())
            .map(|i| {
                std::iter::once(&self.headers)
                    .chain(&self.rows)
                    .filter_map(|r| r.get(i))
                    .map(|c| c.chars().count())
                    .max()
                    .unwrap_or(0)
            })
            .collect()
    }

    /// The width [`Table::text_within`] gives the first column, and the groups of the other
    /// columns (indexes) it prints as one table each.
    fn layout_within(&self, width: usize) -> (usize, Vec<Vec<usize>>) {
        // Below this, a name says too little: the other columns go to another table instead.
        const LEAST_LABEL: usize = 24;
        let widths = self.widths();
        let label = widths.first().copied().unwrap_or(0);
        let room = width.saturating_sub(label.min(LEAST_LABEL));
        let mut groups: Vec<Vec<usize>> = Vec::new();
        let mut used = 0;
        for (i, &w) in widths.iter().enumerate().skip(1) {
            match groups.last_mut() {
                Some(group) if used + 2 + w <= room => group.push(i),
                _ => {
                    groups.push(vec![i]);
                    used = 0;
                }
            }
            used += 2 + w;
        }
        let widest = groups
            .iter()
            .map(|g| g.iter().map(|&i| 2 + widths[i]).sum::<usize>())
            .max()
            .unwrap_or(0);
        (label.min(width.saturating_sub(widest)).max(1), groups)
    }

    /// Whether [`Table::text_within`] cuts a cell of the first column at `width`.
    pub fn cut_within(&self, width: usize) -> bool {
        let (label, _) = self.layout_within(width);
        self.rows
            .iter()
            .any(|r| r.first().is_some_and(|c| c.chars().count() > label))
    }

    /// As plain text (see [`Table::text`]) whose lines are at most `width` characters: the first
    /// column's cells (names) cut with [`cut_names`] to leave room for the others, and, when the
    /// others do not fit beside a name of 24 characters, the columns split into several tables
    /// one after another (a blank line between them), each repeating the first column.
    pub fn text_within(&self, width: usize) -> String {
        let (label, groups) = self.layout_within(width);
        let names: Vec<String> = self
            .rows
            .iter()
            .map(|r| r.first().cloned().unwrap_or_default())
            .collect();
        let names = cut_names(&names, label);
        let parts: Vec<String> = groups
            .iter()
            .map(|group| {
                let pick = |cells: &[String], first: &str| -> Vec<String> {
                    std::iter::once(first.to_string())
                        .chain(
                            group
                                .iter()
                                .map(|&i| cells.get(i).cloned().unwrap_or_default()),
                        )
                        .collect()
                };
                let mut part = Table::new(pick(&self.headers, &self.headers[0]));
                part.rows = self
                    .rows
                    .iter()
                    .zip(&names)
                    .map(|(row, name)| pick(row, name))
                    .collect();
                part.text()
            })
            .collect();
        if parts.is_empty() {
            return Table::new(self.headers.clone()).text();
        }
        parts.join("\n")
    }

    /// As plain text, columns padded to their widest cell (labels left-aligned, numbers
    /// right-aligned).
    pub fn text(&self) -> String {
        let widths = self.widths();
        let line = |cells: &[String]| {
            let padded: Vec<String> = cells
                .iter()
                .zip(&widths)
                .enumerate()
                .map(|(i, (c, &w))| {
                    let pad = " ".repeat(w.saturating_sub(c.chars().count()));
                    if i < self.labels.max(1) {
                        format!("{c}{pad}")
                    } else {
                        format!("{pad}{c}")
                    }
                })
                .collect();
            format!("{}\n", padded.join("  ").trim_end())
        };
        let mut out = line(&self.headers);
        let rule: Vec<String> = widths.iter().map(|&w| "-".repeat(w)).collect();
        out.push_str(&line(&rule));
        for row in &self.rows {
            out.push_str(&line(row));
        }
        out
    }
}
