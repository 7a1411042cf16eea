//! The HTML report: one self-contained file (`report.html`) that people open from disk, read,
//! drill into, compare and share. Pure: it folds records handed to it and writes the page to the
//! `std::io::Write` it is given, section by section ([`page::PageWriter`]); reading the results
//! folder and giving it the file is the store's and the CLI's job.
//!
//! The page is made of [`Section`]s written one after the other. Every section works without
//! JavaScript except the dialogue explorers; the page fetches nothing (its Content Security
//! Policy forbids every network request). docs/report.md describes the report and the DOM
//! contract that the browser test (tests/report_browser.rs) checks.
//!
//! * [`sage`]: the SAGE suite's fold ([`SageReport`]) and its sections.
//! * [`explorer`]: the explorer of both suites (rows, the bounded choice, compressed
//!   transcripts, [`dialogue_anchor`], [`explorer::case_anchor`]).
//! * [`graph`]: the SOP graph's layered layout as SVG.
//! * [`charts`]: SVG bar and line charts.
//! * [`stats`]: exact means and Cohen's kappa.
//! * [`desk`]: the support-desk suite's fold and its sections.
//! * [`compare`]: two runs compared (`sage report A --compare B`).
//! * [`draft`]: the review page of a drafted scenario (`sage scenario draft`).
//! * [`label`]: the page where people label a sample of a run's turns (`labels.html`).
//! * [`transcript`]: one dialogue's transcript for the terminal (`sage show`).

pub mod charts;
pub mod compare;
pub mod desk;
pub mod draft;
pub mod explorer;
pub mod graph;
pub mod label;
pub mod limits;
pub mod page;
pub mod resample;
pub mod sage;
pub mod side_by_side;
pub mod stats;
pub mod tau2;
pub mod text;
pub mod transcript;

pub use explorer::{dialogue_anchor, encode_uri_component};
pub use page::{Page, Section};
pub use sage::{RunInfo, SageReport};
