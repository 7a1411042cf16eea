//! Where a forbidden call or a false closure is in a transcript, and the excerpt around it.

use crate::explorer::encode_uri_component;
use maud::{Markup, html};
use sage_core::protocol::desk::{DeskLine, DeskRecord};
use sage_core::scenario::desk::{Required, Tool};
use sage_core::scoring::desk::CaseRun;

use super::{CONTEXT_LINES, EXCERPT_RESULT_CHARS};

/// A tool line of the transcript (`name(arguments) -> result`) split into its name, its
/// arguments and its result; `None` when the text is not in that shape.
pub fn split_tool_line(text: &str) -> Option<(&str, &str, &str)> {
    const ARROW: &str = ") -> ";
    let open = text.find('(')?;
    let (name, rest) = (&text[..open], &text[open + 1..]);
    // The arguments are JSON as the model sent them: find the end of that value, so an arrow
    // inside a string argument does not cut it; fall back to the first arrow otherwise.
    let mut values = serde_json::Deserializer::from_str(rest).into_iter::<serde::de::IgnoredAny>();
    let end = match values.next() {
        Some(Ok(_)) if rest[values.byte_offset()..].starts_with(ARROW) => values.byte_offset(),
        _ => rest.find(ARROW)?,
    };
    Some((name, &rest[..end], &rest[end + ARROW.len()..]))
}

/// Whether a call's arguments name `order` or no order at all (as the verdict reads calls).
pub(super) fn on_order(args: &str, order: &str) -> bool {
    serde_json::from_str::<serde_json::Value>(args)
        .ok()
        .and_then(|v| {
            v.get("order_number")
                .and_then(|o| o.as_str())
                .map(str::to_string)
        })
        .is_none_or(|o| o == order)
}

/// The index in the transcript of the first call of `tool` on the run's order.
pub(super) fn call_line(transcript: &[DeskLine], run: &CaseRun, tool: Tool) -> Option<usize> {
    transcript.iter().position(|l| {
        l.speaker == "tool"
            && split_tool_line(&l.text)
                .is_some_and(|(name, args, _)| name == tool.name() && on_order(args, &run.order))
    })
}

/// The transcript line of the forbidden call that made the conversation unsafe.
pub fn forbidden_line(record: &DeskRecord) -> Option<usize> {
    record.verdict.unsafe_action?;
    let forbidden = record.run.forbidden?;
    call_line(&record.transcript, &record.run, forbidden.tool)
}

/// The transcript line of the ticket's closure, when the closure was false.
pub fn closure_line(record: &DeskRecord) -> Option<usize> {
    if !record.verdict.false_closure {
        return None;
    }
    record
        .transcript
        .iter()
        .position(|l| l.speaker == "tool" && l.text.starts_with("close_ticket("))
}

/// What a case owes, in words.
pub(super) fn required_text(required: Required) -> String {
    match required {
        Required::Tool(tool) => format!("call {tool}"),
        Required::Handover => "hand over".into(),
        Required::Refusal => "refuse".into(),
    }
}

/// `text` cut to `max` characters, with an ellipsis when cut.
pub(super) fn cut(text: &str, max: usize) -> String {
    match text.char_indices().nth(max) {
        Some((i, _)) => format!("{}…", &text[..i]),
        None => text.to_string(),
    }
}

/// The link that opens a conversation in the explorer.
pub(super) fn conversation_link(id: &str) -> Markup {
    html! { a.conv href=(format!("#conversation={}", encode_uri_component(id))) { (id) } }
}

/// The lines `around - CONTEXT_LINES ..= around + CONTEXT_LINES` of a transcript, the line
/// `around` marked with `mark` (a class), as an ordered list.
pub fn excerpt(transcript: &[DeskLine], around: usize, mark: &str) -> Markup {
    let from = around.saturating_sub(CONTEXT_LINES);
    let to = (around + CONTEXT_LINES + 1).min(transcript.len());
    html! {
        ol.transcript {
            @for (i, line) in transcript.iter().enumerate().take(to).skip(from) {
                @let class = if i == around { format!("line {} {mark}", line.speaker) } else { format!("line {}", line.speaker) };
                li class=(class) data-turn=(line.turn) {
                    span.who { "turn " (line.turn) " · " (line.speaker) }
                    @match (line.speaker.as_str(), split_tool_line(&line.text)) {
                        ("tool", Some((name, args, result))) => {
                            div.tool-call {
                                code.tool { (name) } "(" code.args { (args) } ") → "
                                code.result { (cut(result, EXCERPT_RESULT_CHARS)) }
                            }
                        }
                        _ => { div.text { (line.text) } }
                    }
                }
            }
        }
    }
}
