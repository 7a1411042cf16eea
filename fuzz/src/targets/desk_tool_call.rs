//! A tool call of the agent under test against the Northline fixture: the arguments are the
//! model's text, read as the service role reads them (JSON, or null when they do not parse).
//! The first byte picks the tool. A call is deterministic, and it is `ok` only with a known
//! order (or for the tools that need none).

use sage_core::scenario::desk::Tool;

/// Feeds one input to what this target fuzzes (panics on what must not happen).
pub fn run(data: &[u8]) {
    let (which, rest) = super::split_first(data);
    let tool = Tool::ALL[usize::from(which) % Tool::ALL.len()];
    let arguments = String::from_utf8_lossy(rest);
    let args: serde_json::Value =
        serde_json::from_str(&arguments).unwrap_or(serde_json::Value::Null);
    let desk = super::northline();
    let result = desk.call(tool, &args);
    assert_eq!(
        result,
        desk.call(tool, &args),
        "a tool call is deterministic"
    );
    if result.ok && !matches!(tool, Tool::HandoverToHuman | Tool::CloseTicket) {
        let number = args["order_number"]
            .as_str()
            .expect("an ok call names its order");
        assert!(desk.order(number).is_some());
    }
    let _ = result.output.to_string();
}
