//! A line of dialogues.jsonl (a `DialogueRecord`), read as `sage report`, `sage export`,
//! `--resume` and the aggregator read it. A record survives a JSON round trip; the aggregator's
//! reading of the same line agrees with it (ids, turns, infrastructure error); the summary, both
//! leaderboards (of the record twice, as two runs) and the training-data export's view of its
//! turns are computed against the bundled scenarios; the HTML report (with the bundled scenarios'
//! graphs) is folded from it and rendered, as `sage report --html` renders it.

use sage::actors::cluster::collector::Record;
use sage::protocol::{DialogueEnd, DialogueRecord};
use sage::scoring::{Bootstrap, leaderboard_markdown, leaderboard_text, summarize};

/// Feeds one input to what this target fuzzes (panics on what must not happen).
pub fn run(data: &[u8]) {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    // One line of the file: the store reads it line by line.
    let line = text.lines().next().unwrap_or("");
    let Ok(record) = serde_json::from_str::<DialogueRecord>(line) else {
        return;
    };
    super::json_roundtrip(&record);
    let read = Record::parse("sage", line.as_bytes())
        .expect("a line the store reads, the aggregator reads");
    assert_eq!(
        read.ids(),
        (record.job.run_id.as_str(), record.job.dialogue_id.as_str())
    );
    let (turns, infra_error) = read.counts();
    assert_eq!(turns, record.turns.len());
    assert_eq!(
        infra_error,
        record.end == DialogueEnd::InfraError
            || record.turns.iter().any(|t| t.infra_error.is_some())
    );
    let mut other = record.clone();
    other.job.run_id.push('2');
    let records = [record, other];
    let bootstrap = Bootstrap {
        resamples: 16,
        ..Bootstrap::default()
    };
    let summary = summarize(&records, &bootstrap);
    serde_json::to_string(&summary).expect("a summary encodes");
    let _ = (leaderboard_markdown(&summary), leaderboard_text(&summary));
    // The training-data export's view of every agent turn (its context as the agent saw it).
    for record in &records {
        let mut turns = 0;
        let walked = sage::store::export::example::walk(record, "system prompt", true, |view| {
            turns += 1;
            assert!(view.index < record.turns.len());
            Ok::<(), ()>(())
        });
        assert!(walked.is_ok() && turns <= record.turns.len());
    }
    // The HTML report, folded and rendered from the record (read back by its place).
    let mut page = sage::report::SageReport::new(
        sage::report::RunInfo {
            run_id: records[0].job.run_id.clone(),
            created_at: String::new(),
            sage_version: String::new(),
            config: sage::plan::RunConfig::default(),
            scenarios: Vec::new(),
            simulated_models: Vec::new(),
            jobs: 1,
        },
        super::sops().to_vec(),
    );
    page.add(&records[0], 0);
    let mut html = Vec::new();
    let mut spool = std::io::Cursor::new(Vec::new());
    page.write_page(
        &summary,
        &mut html,
        &mut vec![records[0].clone()],
        &mut spool,
        "sage show results/fuzz",
    )
    .expect("a page renders");
}
