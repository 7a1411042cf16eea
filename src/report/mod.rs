//! The HTML report: one self-contained file (`report.html`) that people open from disk, read,
//! drill into, compare and share. Pure: it folds records handed to it and renders a `String`;
//! reading the results folder and writing the file is the store's and the CLI's job.
//!
//! The page is made of [`Section`]s assembled by [`Page::render`]. Every section works without
//! JavaScript except the dialogue explorers; the page fetches nothing (its Content Security
//! Policy forbids every network request). docs/report.md describes the report and the DOM
//! contract that the browser test (tests/browser.rs) checks.
//!
//! * [`compare`]: two runs compared (`sage report A --compare B`).
//! * [`transcript`]: one dialogue's transcript for the terminal (`sage show`).

pub mod compare;
pub mod desk;
pub mod page;
pub mod transcript;

pub use page::{Page, Section, escape};
