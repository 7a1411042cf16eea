//! The labelling page: the sticky bar (labeller, counter, download), then each sampled turn:
//! its scenario, the conversation up to the agent's reply at that turn, and the form (a control
//! per classification field, the five chat dimensions). Built with maud like every page of the
//! report: record text is escaped, the one script is allowed by its hash.
//!
//! DOM contract (tests/label_browser.rs, docs/report.md): `div#label-bar[data-run][data-total]`
//! with `input#labeller`, `#label-count[data-labelled]`, `button#label-download`,
//! `a#label-file` (the file once built); one `article.label-item[data-dialogue][data-turn]` per
//! turn, its controls `select[data-field][data-type]` (`input[type=number][data-field]` for an
//! integer field) and `input[type=radio][data-dim][value=3|6|9]`, `button.label-clear`, its
//! state `[data-labelled]` on the article.

use super::SCRIPT;
use crate::page::{Page, Section};
use maud::{Markup, html};
use sage_core::protocol::rubric::DIMENSIONS;
use sage_core::protocol::{DialogueRecord, ServiceOutcome, TurnRecord};
use sage_core::scenario::{Key, KeyKind};
use sage_core::sop::Sop;
use std::sync::Arc;

/// One sampled turn with its record.
pub(super) struct Item {
    pub record: DialogueRecord,
    pub turn: u32,
    pub sop: Option<Arc<Sop>>,
}

/// What the agent's reply at a turn showed the customer (and the judges).
fn reply(t: &TurnRecord) -> Option<&str> {
    match &t.outcome {
        ServiceOutcome::Valid { turn } => Some(&turn.chat),
        ServiceOutcome::FormatError { chat, .. } => Some(chat),
        ServiceOutcome::InfraError { .. } => None,
    }
}

fn lines(t: &TurnRecord) -> Markup {
    html! {
        div.msg.customer { span.who { "Customer · turn " (t.turn) } (t.user_message) }
        @match reply(t) {
            Some(text) => div.msg.agent { span.who { "Agent" } (text) },
            None => div.msg.agent.none { span.who { "Agent" } "(no reply: the agent could not be reached)" },
        }
    }
}

/// The control of one classification field.
fn field(key: &Key, item: usize) -> Markup {
    let id = format!("i{item}-f-{}", key.name);
    html! {
        div.field {
            label.name for=(id) { (key.name) }
            @match &key.kind {
                KeyKind::Integer { min, max, .. } => {
                    input id=(id) type="number" step="1" min=[*min] max=[*max] data-field=(key.name)
                        data-type="int" placeholder="not labelled";
                }
                kind => {
                    @let kind_name = if matches!(kind, KeyKind::Boolean) { "bool" } else { "str" };
                    select id=(id) data-field=(key.name) data-type=(kind_name) {
                        option value="" { "— not labelled —" }
                        @for o in key.options() { option value=(o) { (o) } }
                    }
                }
            }
            @if !key.description.trim().is_empty() {
                span.desc { (key.description) }
            }
        }
    }
}

fn item_html(i: usize, total: usize, item: &Item) -> Markup {
    let job = &item.record.job;
    let turns = &item.record.turns;
    let at = turns.iter().position(|t| t.turn == item.turn);
    let (earlier, current) = match at {
        Some(p) => (&turns[..p], Some(&turns[p])),
        None => (&turns[..], None),
    };
    let sop = item.sop.as_deref();
    let name = sop.map_or(job.scenario.as_str(), |s| s.scenario().name.as_str());
    let info = sop.map(|s| sage_core::prompts::agent::system_information(s, job));
    html! {
        article.label-item id={ "item-" (i) } data-item=(i) data-dialogue=(job.dialogue_id)
            data-turn=(item.turn) data-scenario=(job.scenario) {
            h3 {
                span.item-n { (i) " / " (total) }
                " " (name) " "
                span.muted.turn-n { "turn " (item.turn) }
                " " span.tag.label-state { "not labelled" }
            }
            div.label-panes {
                div.conversation {
                    @if let Some(info) = info.as_ref().filter(|i| !i.is_empty()) {
                        details.sysinfo {
                            summary { "System information (what the agent and the judges see)" }
                            table.data {
                                @for (k, v) in info { tr { th { (k) } td { (v.to_string()) } } }
                            }
                        }
                    }
                    @if !earlier.is_empty() {
                        div.history aria-label="Earlier turns" {
                            @for t in earlier {
                                div.past-turn data-turn=(t.turn) { (lines(t)) }
                            }
                        }
                    }
                    @if let Some(t) = current {
                        div.current {
                            p.current-title { "Turn " (t.turn) ": the reply to label" }
                            (lines(t))
                        }
                    }
                }
                div.label-form {
                    fieldset.fields {
                        legend { "Classification" }
                        p.note { "What the customer wants, from the conversation up to this reply." }
                        @match sop {
                            Some(sop) => { @for key in sop.scenario().fields() { (field(key, i)) } }
                            None => p.warn { "The scenario's YAML was not available when this page was written: its fields cannot be listed." }
                        }
                    }
                    fieldset.chat {
                        legend { "Chat quality of the agent's reply" }
                        @for d in &DIMENSIONS {
                            div.dim role="radiogroup" aria-label=(d.name) data-dim=(d.key) {
                                div.dim-name { (d.name) " " span.muted { (d.weight) "%" } }
                                @for (points, meaning) in [9u8, 6, 3].iter().zip(d.rubric) {
                                    label.score {
                                        input type="radio" name={ "i" (i) "-" (d.key) } value=(points) data-dim=(d.key);
                                        b { (points) } " " span { (meaning) }
                                    }
                                }
                            }
                        }
                    }
                    button.label-clear type="button" { "Clear this turn" }
                }
            }
        }
    }
}

/// Writes the labelling page of run `run_id` with `items` to `out`.
pub(super) fn write<W: std::io::Write>(out: W, run_id: &str, items: &[Item]) -> std::io::Result<W> {
    let total = items.len();
    let how = html! {
        p {
            "A sample of " (total) " judged turns of run " code { (run_id) } ", chosen when the "
            "page was written: every model under test and every scenario, the turns the judges "
            "disagreed on first. For each turn, read the conversation up to the agent's reply and "
            "set what you can judge yourself: each classification field (what the customer wants) "
            "and the reply's five chat-quality scores (3, 6 or 9), as the judges were asked to. "
            "Leave a field unset when you cannot tell. The judges' verdicts, the true values and "
            "the scores are not shown."
        }
        p.note {
            "Nothing is sent anywhere: your labels stay in this browser (saved as you go, so you "
            "can close the page and come back) until you download " code { "labels.jsonl" }
            ", one line per labelled turn. Label from the top: the first turns already cover "
            "every model and scenario."
        }
        noscript { p.warn { "This page needs JavaScript to keep and download labels." } }
    };
    let body = html! {
        div #label-bar .label-bar data-run=(run_id) data-total=(total) {
            label.labeller { "Labeller " input #labeller type="text" autocomplete="name" placeholder="your name" size="16"; }
            span #label-count data-labelled="0" { "0 of " (total) " " span.wide { "turns " } "labelled" }
            button #label-next type="button" { "Next" span.wide { " unlabelled" } }
            button #label-download type="button" { "Download" span.wide { " labels.jsonl" } }
            a #label-file download="labels.jsonl" hidden { "labels.jsonl" }
            span #label-status role="status" {}
        }
        @if items.is_empty() {
            p.warn { "The run has no judged turn to label." }
        }
        @for (i, item) in items.iter().enumerate() {
            (item_html(i + 1, total, item))
        }
    };
    let page = Page {
        title: format!("Label turns of SAGE run {run_id}"),
        sections: vec![
            Section::new("how", "How to label", how),
            Section::new("turns", "Turns to label", body),
        ],
        styles: vec![CSS.to_string()],
        scripts: vec![SCRIPT],
    };
    page.write_to(out)
}

/// The page's style rules (beside the report's shared ones): the sticky bar, each turn a card,
/// the conversation beside the form from 1,000 px, one above the other below.
pub const CSS: &str = r#"
#how p{max-width:80ch}
.label-bar{position:sticky;top:var(--bar-top,33px);z-index:4;background:var(--bg);border-bottom:1px solid var(--line);padding:8px 0;display:flex;flex-wrap:wrap;gap:8px 16px;align-items:center}
.label-bar input,.label-bar button,.label-item select,.label-item input,.label-item button{font:inherit}
.label-bar button{padding:3px 10px;cursor:pointer}
#label-download{font-weight:600}
#label-count{font-variant-numeric:tabular-nums}
#label-count.done{color:var(--good);font-weight:600}
#label-status{color:var(--muted);font-size:13px}
#label-status.bad{color:var(--bad)}
.label-item{border:1px solid var(--line);border-radius:6px;padding:8px 12px;margin:14px 0;scroll-margin-top:110px}
.label-item[data-labelled]{border-left:4px solid var(--good)}
.label-item h3{margin:0 0 8px;display:flex;flex-wrap:wrap;gap:4px 8px;align-items:baseline}
.label-item .item-n{color:var(--muted);font-variant-numeric:tabular-nums}
.label-item[data-labelled] .label-state{color:var(--good)}
.label-panes{display:grid;grid-template-columns:minmax(0,1fr);gap:12px 20px}
@media (min-width:1000px){.label-panes{grid-template-columns:minmax(0,1fr) minmax(360px,0.9fr)}.label-form{position:sticky;top:110px}}
.conversation{overflow-wrap:break-word;min-width:0}
.conversation .history{max-height:min(50vh,420px);overflow:auto;border-bottom:1px dashed var(--line);padding-right:4px}
.conversation .msg{white-space:pre-wrap;padding:6px 8px;border-radius:6px;margin:4px 0}
.conversation .msg.customer{background:var(--panel)}
.conversation .msg.agent{border:1px solid var(--line)}
.conversation .msg.none{color:var(--muted)}
.conversation .who{display:block;font-size:11px;font-weight:600;color:var(--muted);text-transform:uppercase;letter-spacing:.04em}
.conversation .current{border-left:3px solid var(--accent);padding-left:8px;margin-top:8px}
.conversation .current-title{margin:4px 0;font-weight:600;color:var(--accent)}
.conversation details.sysinfo{margin:0 0 6px;font-size:13px}
.conversation details.sysinfo summary{cursor:pointer;color:var(--muted)}
.conversation details.sysinfo table.data th{position:static}
.label-form fieldset{border:1px solid var(--line);border-radius:6px;margin:0 0 10px;padding:6px 10px 8px;min-width:0}
.label-form legend{font-weight:600;padding:0 4px}
.label-form p.note{margin:0 0 6px;font-size:12px}
.label-form .field{display:grid;grid-template-columns:minmax(0,11em) minmax(0,1fr);gap:2px 10px;align-items:center;margin:5px 0}
.label-form .field .name{font-weight:600;overflow-wrap:anywhere}
.label-form .field select,.label-form .field input{width:100%;max-width:20em}
.label-form .field .desc{grid-column:2;font-size:12px;color:var(--muted)}
.label-form .dim{margin:6px 0 8px}
.label-form .dim-name{font-weight:600}
.label-form label.score{display:flex;gap:6px;align-items:baseline;font-size:13px;padding:1px 0;cursor:pointer}
.label-form label.score input{margin:0;flex:none;align-self:center}
.label-form label.score b{flex:none;width:1em;text-align:right}
.label-form .label-clear{padding:2px 10px;cursor:pointer}
@media (max-width:560px){main{padding:0 12px 40px}header.page{padding:12px}nav#toc{padding:6px 12px}.label-bar{gap:6px 10px;padding:6px 0}.label-bar .labeller{flex:1 0 100%;display:flex;gap:6px;align-items:center}.label-bar .labeller input{flex:1;min-width:0}.label-bar .wide{display:none}.label-form .field{grid-template-columns:minmax(0,1fr)}.label-form .field .desc{grid-column:1}.label-item{padding:8px}}
"#;
