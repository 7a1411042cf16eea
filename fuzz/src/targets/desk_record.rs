//! A line of desk.jsonl (a `DeskRecord`), read as `sage report` and the aggregator read it. A
//! record survives a JSON round trip; the aggregator's reading of the same line agrees with it;
//! the desk summary and its table are computed as `sage report` computes them, and its HTML
//! report is folded and rendered as `sage report --html` renders it.

use sage::actors::cluster::collector::Record;
use sage::protocol::desk::DeskRecord;

/// Feeds one input to what this target fuzzes (panics on what must not happen).
pub fn run(data: &[u8]) {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let line = text.lines().next().unwrap_or("");
    let Ok(record) = serde_json::from_str::<DeskRecord>(line) else {
        return;
    };
    super::json_roundtrip(&record);
    let read = Record::parse("support-desk", line.as_bytes())
        .expect("a line the store reads, the aggregator reads");
    assert_eq!(read.ids().1, record.job.dialogue_id);
    assert_eq!(
        read.counts(),
        (record.turns as usize, record.infra_error.is_some())
    );
    let runs = [
        (
            record.job.model.as_str(),
            record.job.repeat,
            &record.run,
            record.cost_usd,
        ),
        (
            record.job.model.as_str(),
            record.job.repeat.wrapping_add(1),
            &record.run,
            record.cost_usd,
        ),
    ];
    let rows = sage::scoring::desk::summarize(runs);
    serde_json::to_string(&rows).expect("a summary encodes");
    let _ = sage::scoring::desk::table(&rows);
    // The HTML report, folded and rendered from the record (read back by its place).
    let mut page = sage::report::desk::DeskReportFold::new(Default::default());
    page.add(&record, 0);
    let mut html = Vec::new();
    let mut spool = std::io::Cursor::new(Vec::new());
    page.write_page(
        &mut html,
        &mut vec![record.clone()],
        &mut spool,
        "sage show results/fuzz",
    )
    .expect("a page renders");
}
