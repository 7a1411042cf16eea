//! The `fork` section of a fork's report (`sage fork DIR --out NEW`): what the fork asked and
//! where, each model's replies at the fork turns (how many, their mean Logic, the share with
//! Logic 100), and with `--at deviation --continue` per parent model the share of its failed
//! dialogues that fixing one turn flips, each flipped dialogue beside its parent
//! ([`crate::side_by_side`]) with links to both transcripts. Folded with the report, one record
//! at a time: counts per model and a bounded list of flipped fixes (the smallest ids).

use crate::explorer::dialogue_anchor;
use crate::page::Section;
use crate::side_by_side::side_by_side;
use maud::{Markup, html};
use sage_core::fork::{At, ForkFile, ForkFold, Forked};
use sage_core::protocol::{DialogueRecord, FixSource};
use sage_core::scoring::summary::reached_target;
use std::collections::{BTreeMap, HashMap};

/// Flipped dialogues shown beside their parents (the count covers them all).
pub const MAX_FLIPPED: usize = 40;

/// The style of the section (the side-by-side tables bring theirs).
pub const CSS: &str = "\
#fork details.flip{border-bottom:1px solid var(--line)}\
#fork details.flip>summary{cursor:pointer;padding:4px 2px}\
#fork details.flip[open]>summary{background:var(--panel)}";

/// Where the forked run's report is, for links to the parents' transcripts.
#[derive(Debug, Clone, PartialEq)]
pub struct ForkSource {
    /// fork.json of the fork.
    pub file: ForkFile,
    /// The forked run's report.html, relative to the fork's (`None` when it is not there).
    pub report_href: Option<String>,
}

/// The fork section's fold.
#[derive(Debug, Default)]
pub struct ForkSection {
    fold: ForkFold,
    branches: usize,
    /// Flipped fixes by id, the [`MAX_FLIPPED`] smallest.
    flipped: BTreeMap<String, DialogueRecord>,
    flipped_total: usize,
    source: Option<ForkSource>,
    parents: HashMap<String, DialogueRecord>,
}

impl ForkSection {
    /// Folds a record in: a branch (one with a fork link) counts, the others are left out.
    pub fn add(&mut self, record: &DialogueRecord) {
        let Some(fork) = &record.fork else {
            return;
        };
        self.branches += 1;
        self.fold.add(record);
        if fork.fix.is_some() && reached_target(record) {
            self.flipped_total += 1;
            self.flipped
                .insert(record.job.dialogue_id.clone(), record.clone());
            if self.flipped.len() > MAX_FLIPPED {
                self.flipped.pop_last();
            }
        }
    }

    /// Whether a branch was folded (a fork's report has the section, a run's does not).
    pub fn any(&self) -> bool {
        self.branches > 0
    }

    /// Says what the fork was (its fork.json) and where its parents' report is.
    pub fn set_source(&mut self, source: ForkSource) {
        self.source = Some(source);
    }

    /// The parent dialogue ids whose records the section shows beside their flipped fix.
    pub fn wanted_parents(&self) -> impl Iterator<Item = &str> {
        self.flipped
            .values()
            .filter_map(|r| r.fork.as_ref().map(|f| f.parent.as_str()))
    }

    /// Hands over a parent record (read from the forked run) to show beside its fix.
    pub fn add_parent(&mut self, record: DialogueRecord) {
        self.parents.insert(record.job.dialogue_id.clone(), record);
    }

    /// The section, models ordered by their mean Logic at the fork turns (best first).
    pub fn section(&self) -> Section {
        let done: Forked = ForkFold::finish(self.fold.clone(), 0);
        let source = self.source.as_ref();
        let fixes =
            source.is_some_and(|s| s.file.config.fixes()) || !done.fixes_by_model.is_empty();
        let mut models: Vec<_> = done.replies_by_model.iter().collect();
        models.sort_by(|a, b| {
            let key = |m: &sage_core::fork::Replies| m.mean_logic.unwrap_or(-1.0);
            key(b.1).total_cmp(&key(a.1)).then_with(|| a.0.cmp(b.0))
        });
        let mut by_parent_model: Vec<_> = done.fixes_by_model.iter().collect();
        by_parent_model.sort_by(|a, b| {
            let share = |c: &sage_core::fork::FixCount| c.flipped as f64 / c.failed.max(1) as f64;
            share(b.1).total_cmp(&share(a.1)).then_with(|| a.0.cmp(b.0))
        });
        let html = html! {
            p #fork-summary {
                @if let Some(s) = source {
                    "A fork of run "
                    @match &s.report_href {
                        Some(href) => a href=(href) { code { (s.file.from_run_id) } },
                        None => code { (s.file.from_run_id) },
                    }
                    (format!(
                        " {} (--at {}), {} sample{} per model and point{}{}. ",
                        match s.file.config.at {
                            At::Judged => "at every judged turn".to_string(),
                            At::Deviation => "at each dialogue's first deviation from the reference".to_string(),
                            At::Turn(n) => format!("at turn {n}"),
                        },
                        s.file.config.at,
                        s.file.config.samples,
                        if s.file.config.samples == 1 { "" } else { "s" },
                        if s.file.config.continue_on { ", each branch played on to its end" } else { "" },
                        if s.file.config.judge { ", the judges asked for Chat" } else { "" },
                    ))
                }
                (format!(
                    "{} branches of {} dialogues at {} fork points; {} replies with Logic 100. \
                     Each reply is scored against its parent turn's reference (the judges' \
                     consensus there and the rule engine's route for it).",
                    done.branches, done.parents, done.points, done.logic_100
                ))
            }
            h3 { "Replies at the fork turns" }
            (model_table(
                "fork-replies",
                &["Replies", "Scored", "Logic 100", "Share Logic 100", "Mean Logic"],
                models.iter().map(|(model, r)| (model.as_str(), vec![
                    r.replies.to_string(),
                    r.scored.to_string(),
                    r.logic_100.to_string(),
                    r.share_100().map_or("-".into(), |s| format!("{:.1}%", 100.0 * s)),
                    r.mean_logic.map_or("-".into(), |l| format!("{l:.2}")),
                ])),
            ))
            @if fixes {
                h3 { "Which turn broke it" }
                p {
                    "Each failed dialogue (its target action not reached) was given its fix: at the \
                     first turn where its agent left the reference, a reply that follows the reference \
                     (a sample that did, else one written from the reference), played on to the end \
                     by the same model. A flipped dialogue reaches its target action then: that one \
                     turn broke it."
                }
                @if by_parent_model.is_empty() {
                    p.muted { "No failed dialogue was forked." }
                } @else {
                    (model_table(
                        "fork-fixes",
                        &["Failed dialogues", "Flipped by one turn", "Share"],
                        by_parent_model.iter().map(|(model, c)| (model.as_str(), vec![
                            c.failed.to_string(),
                            c.flipped.to_string(),
                            format!("{:.1}%", 100.0 * c.flipped as f64 / c.failed.max(1) as f64),
                        ])),
                    ))
                }
                @if self.flipped_total > 0 {
                    h4 {
                        (format!("Flipped dialogues ({}", self.flipped_total))
                        @if self.flipped_total > self.flipped.len() {
                            (format!(", the first {} by id", self.flipped.len()))
                        }
                        ")"
                    }
                    @for fix in self.flipped.values() {
                        (self.flipped_html(fix))
                    }
                }
            }
        };
        Section::new("fork", "Fork", html)
    }

    /// One flipped fix: its parent and turn, where its reply came from, links to both
    /// transcripts, and both side by side when the parent was read.
    fn flipped_html(&self, fix: &DialogueRecord) -> Markup {
        let Some(link) = &fix.fork else {
            return html! {};
        };
        let from = match &link.fix {
            Some(FixSource::Sample { model, sample }) => {
                format!("the reply of {model}, sample {sample}")
            }
            _ => "a reply written from the reference".to_string(),
        };
        let href = self.source.as_ref().and_then(|s| s.report_href.as_ref());
        let parent = self.parents.get(&link.parent);
        html! {
            details.flip data-parent=(link.parent) data-dialogue=(fix.job.dialogue_id) {
                summary {
                    code { (link.parent) } (format!(" ({}) fixed at turn {} with {from} · ", link.parent_model, link.turn))
                    @match href {
                        Some(h) => a.parent href=(format!("{h}{}", dialogue_anchor(&link.parent))) { "parent" },
                        None => span.muted { "parent" },
                    }
                    " · "
                    a.branch href=(dialogue_anchor(&fix.job.dialogue_id)) { "fixed" }
                }
                @match parent {
                    Some(p) => (side_by_side(p, fix, [("Parent", &link.parent), ("Fixed", &fix.job.dialogue_id)])),
                    None => p.muted { "The parent's record was not found beside this fork (its run folder moved)." },
                }
            }
        }
    }
}

/// `div.table-box > table.data#ID`: a row per model (`tr[data-model]`), its name then the
/// numbers under `headings`.
fn model_table<'a>(
    id: &str,
    headings: &[&str],
    rows: impl Iterator<Item = (&'a str, Vec<String>)>,
) -> Markup {
    html! {
        div.table-box {
            table.data id=(id) {
                thead { tr {
                    th { "Model" }
                    @for h in headings { th.num { (h) } }
                } }
                tbody {
                    @for (model, cells) in rows {
                        tr data-model=(model) {
                            td { (model) }
                            @for c in cells { td.num { (c) } }
                        }
                    }
                }
            }
        }
    }
}
