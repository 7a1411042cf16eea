//! The explorer of both suites (SAGE dialogues, support-desk conversations): one engine, each
//! suite ([`Suite`]) supplying its rows, filters and transcripts.
//!
//! **The fold** ([`Explorer::add`]) keeps, per dialogue that can still be embedded, its row
//! (the filters' values: a few strings and numbers) and where its record starts in the results
//! file; nothing else. Up to [`Limits::dialogues`] dialogues every one is embedded; above it a
//! deterministic choice ([`Selection`]: the failing dialogues of every group first, worst first,
//! then a stratified sample of the others), so the fold's memory and the page's size are bounded
//! whatever the run's size.
//!
//! **The page** ([`Explorer::write`]): the chosen records are read back by their place in the
//! file ([`Records`]), in priority order, and their transcripts (one JSON line each) written
//! gzip-compressed in chunks of about [`CHUNK_BYTES`], base64 in
//! `<script type="application/gzip-base64">` elements (inert data), until
//! [`Limits::bytes`] of them are written; a chosen dialogue past that budget is listed without
//! its transcript. Then the rows, sorted by id, as one JSON block. The browser decompresses a
//! chunk (`DecompressionStream`) when one of its dialogues is opened (`js/explorer.js`, the
//! engine, and each suite's script).

use super::page::{PageHead, PageWriter, Section};
use base64::Engine as _;
use flate2::Compression;
use flate2::write::GzEncoder;
use maud::{Markup, html};
use std::collections::BTreeSet;
use std::fmt::Write as _;
use std::io::{Read, Seek, SeekFrom, Write};
use std::sync::Arc;

pub mod sage;
mod select;

pub use sage::{FLAG_FORMAT_ERROR, FLAG_INFRA_ERROR, SageExplorer, reached_label};
pub use select::{Counts, Selection, Standing, Stratified};

/// Uncompressed bytes of transcripts per chunk: a chunk decompresses in milliseconds.
pub const CHUNK_BYTES: usize = 1 << 20;

/// Dialogues the explorer embeds at most (see docs/report.md, "Memory and size"): every one of
/// a run up to this size; above it the choice of [`Selection`].
pub const MAX_DIALOGUES: usize = 10_000;

/// Bytes of compressed transcripts (base64) the page embeds at most: with the rows (at most
/// [`MAX_DIALOGUES`], about 200 bytes each) and the other sections, report.html stays under
/// 25 MB whatever the transcripts' length.
pub const MAX_TRANSCRIPT_BYTES: usize = 16_000_000;

/// How much the explorer embeds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    /// Dialogues listed at most.
    pub dialogues: usize,
    /// Bytes of compressed transcripts at most.
    pub bytes: usize,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            dialogues: MAX_DIALOGUES,
            bytes: MAX_TRANSCRIPT_BYTES,
        }
    }
}

/// The URL fragment that opens a dialogue in the explorer: `#dialogue=` and the id encoded as
/// JavaScript's `encodeURIComponent` does.
pub fn dialogue_anchor(id: &str) -> String {
    format!("#dialogue={}", encode_uri_component(id))
}

/// Percent-encodes `text` as JavaScript's `encodeURIComponent` (UTF-8; letters, digits and
/// `-_.!~*'()` kept).
pub fn encode_uri_component(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for b in text.bytes() {
        if b.is_ascii_alphanumeric() || b"-_.!~*'()".contains(&b) {
            out.push(b as char);
        } else {
            let _ = write!(out, "%{b:02X}");
        }
    }
    out
}

/// The URL fragment that opens the explorer with filters set: `#explore=` then `NAME:VALUE`
/// pairs joined by `;`, NAME a filter (`model`, `scenario`, `route`, `reached`, `adversarial`,
/// `persona`, `end`: VALUE the option's text; `min-score`, `max-score`: a number;
/// `format-error`, `infra-error`, `off-case`: `1`), `sort` (`worst`) or `dialogue` (an id to open), VALUE
/// encoded as `encodeURIComponent` does (so `;` and `:` in it are escaped).
pub fn explore_anchor(filters: &[(&str, &str)]) -> String {
    let parts: Vec<String> = filters
        .iter()
        .map(|(k, v)| format!("{k}:{}", encode_uri_component(v)))
        .collect();
    format!("#explore={}", parts.join(";"))
}

/// The URL fragment that opens the case `case` ([`case_id`]) across models: every model's
/// dialogue of that case side by side, turn by turn (`#case=` and the case id encoded as
/// `encodeURIComponent` does). Only a case whose dialogues the page embeds opens; the view says
/// which are not.
pub fn case_anchor(case: &str) -> String {
    format!("#case={}", encode_uri_component(case))
}

/// [`case_anchor`] opened from one of its dialogues (a transcript's link): the case view shows
/// that dialogue beside the case's best and worst (`#case=CASE;dialogue:ID`, both encoded).
pub fn case_anchor_from(case: &str, dialogue: &str) -> String {
    format!(
        "{};dialogue:{}",
        case_anchor(case),
        encode_uri_component(dialogue)
    )
}

/// The case of a dialogue: its id without the model part (`telecom_package/0007/sim-strong/r0`
/// is case `telecom_package/0007/r0`; a desk conversation `c12/agent/r1` is case `c12/r1`), the
/// same for every model's dialogue of that case and repeat. An id without `/MODEL/` is its own
/// case.
pub fn case_id(dialogue_id: &str, model: &str) -> String {
    let part = format!("/{model}/");
    match dialogue_id.rfind(&part) {
        Some(at) => format!("{}/{}", &dialogue_id[..at], &dialogue_id[at + part.len()..]),
        None => dialogue_id.to_string(),
    }
}

/// A shell word: `text` in single quotes (a `'` in it written `'\''`), as `sage show` takes it.
pub fn shell_quote(text: &str) -> String {
    format!("'{}'", text.replace('\'', r"'\''"))
}

/// Where the explorer reads back a record it embeds: by the place the fold was given (the byte
/// offset of its line in the results file).
pub trait Records<R> {
    /// The record at `at`.
    fn read(&mut self, at: u64) -> std::io::Result<R>;
}

/// Records held in memory, placed by their index (tests, small pages).
impl<R: Clone> Records<R> for Vec<R> {
    fn read(&mut self, at: u64) -> std::io::Result<R> {
        usize::try_from(at)
            .ok()
            .and_then(|i| self.get(i))
            .cloned()
            .ok_or_else(|| std::io::Error::other(format!("no record at {at}")))
    }
}

/// The element ids and words of a suite's explorer (docs/report.md, DOM contract).
#[derive(Debug, Clone, Copy)]
pub struct Names {
    /// The explorer's `div` (`explorer`, `desk-explorer`).
    pub root: &'static str,
    /// Its table.
    pub table: &'static str,
    /// The element that shows how many rows match.
    pub count: &'static str,
    /// The transcript's pane.
    pub view: &'static str,
    /// The JSON data block.
    pub data: &'static str,
    /// The fragment key and row attribute (`dialogue`, `conversation`).
    pub key: &'static str,
    /// One item (`dialogue`).
    pub noun: &'static str,
    /// Several (`dialogues`).
    pub nouns: &'static str,
}

/// A row's cells and the lookup tables they index, as the suite's script reads them.
#[derive(Debug, Default)]
pub struct Index {
    /// Lookup tables (a JSON object), e.g. the models' names.
    pub tables: serde_json::Value,
    /// Per row (in the order given), its suite cells: the JSON values separated by commas
    /// (an array's text without its brackets), kept as text so that 10,000 rows stay small.
    pub cells: Vec<String>,
}

impl Index {
    /// The names in lookup table `key` (empty when there is none).
    pub fn names(&self, key: &str) -> Vec<String> {
        self.tables[key]
            .as_array()
            .map(|a| {
                a.iter()
                    .map(|v| v.as_str().unwrap_or_default().to_string())
                    .collect()
            })
            .unwrap_or_default()
    }
}

/// A filter: `LABEL <select data-filter="KEY">` with the option "all" (value `""`), then the
/// `(value, text)` options.
pub fn select_filter(key: &str, label: &str, options: &[(String, String)]) -> Markup {
    html! {
        label { (label) " "
            select data-filter=(key) {
                option value="" { "all" }
                @for (value, text) in options {
                    option value=(value) { (text) }
                }
            }
        }
    }
}

/// The cells of a row as [`Index::cells`] holds them: `values` as JSON, comma-separated.
pub fn cells(values: &serde_json::Value) -> String {
    let text = values.to_string();
    match text.strip_prefix('[').and_then(|t| t.strip_suffix(']')) {
        Some(inner) => inner.to_string(),
        None => text,
    }
}

/// A suite's side of the explorer.
pub trait Suite {
    /// The record folded.
    type Record;
    /// What the fold keeps of a record for its row (small: it is kept per candidate).
    type Row;
    /// The page's names.
    const NAMES: Names;
    /// The row of a record and its standing in the choice.
    fn row(&mut self, record: &Self::Record) -> (Self::Row, Standing);
    /// A row's dialogue id.
    fn id(row: &Self::Row) -> &str;
    /// A row's case ([`case_id`]).
    fn case(row: &Self::Row) -> String;
    /// A record's transcript as one JSON object (no line break).
    fn transcript(&self, record: &Self::Record, out: &mut Vec<u8>) -> serde_json::Result<()>;
    /// The rows' cells (rows sorted by id) and their tables.
    fn index(&self, rows: &[&Self::Row]) -> Index;
    /// The filters, from the index of the listed rows.
    fn controls(&self, index: &Index) -> Markup;
    /// The table's head (`thead`).
    fn head(&self) -> Markup;
}

/// A page as a string (tests): `write` writes it to memory, its transcripts compressed into an
/// in-memory spool.
pub fn render_page(
    write: impl FnOnce(&mut Vec<u8>, &mut std::io::Cursor<Vec<u8>>) -> std::io::Result<Embedded>,
) -> std::io::Result<String> {
    let (mut out, mut spool) = (Vec::new(), std::io::Cursor::new(Vec::new()));
    write(&mut out, &mut spool)?;
    String::from_utf8(out).map_err(std::io::Error::other)
}

/// What a page's explorer embeds.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Embedded {
    /// The choice: dialogues folded, failing, listed, failing listed.
    pub counts: Counts,
    /// Transcripts embedded (the listed dialogues within the byte budget).
    pub transcripts: usize,
    /// Of which failing.
    pub failing_transcripts: usize,
}

impl Embedded {
    /// Whether the page leaves dialogues out (listed or transcripts).
    pub fn partial(&self) -> bool {
        self.transcripts < self.counts.total
    }

    /// One line saying what the page embeds (`sage run` and `sage report --html` print it when
    /// it is not every dialogue).
    pub fn line(&self, noun: &str) -> String {
        let c = &self.counts;
        format!(
            "the explorer embeds {} of the {} {noun}s with their transcript ({} of the {} failing); `sage show DIR ID` prints any other",
            self.transcripts, c.total, self.failing_transcripts, c.failing
        )
    }
}

/// A candidate: its row and its place in the results file.
struct Entry<R> {
    row: R,
    at: u64,
    failing: bool,
}

/// The explorer's fold of one suite.
pub struct Explorer<S: Suite> {
    suite: S,
    selection: Selection<Entry<S::Row>>,
    limits: Limits,
    chunk_bytes: usize,
}

impl<S: Suite> std::fmt::Debug for Explorer<S> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Explorer")
            .field("kept", &self.selection.kept())
            .field("limits", &self.limits)
            .finish()
    }
}

/// A writer that escapes `<` as `\u003c` (the same character inside a JSON string, where alone
/// it can occur): JSON written through it cannot close its `<script>` element.
struct JsonInScript<W>(W);

impl<W: Write> Write for JsonInScript<W> {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        let mut rest = buf;
        while let Some(at) = rest.iter().position(|b| *b == b'<') {
            self.0.write_all(&rest[..at])?;
            self.0.write_all(br"\u003c")?;
            rest = &rest[at + 1..];
        }
        self.0.write_all(rest)?;
        Ok(buf.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        self.0.flush()
    }
}

/// The transcripts being compressed into chunks, written to `out` as base64 script elements.
struct Chunks<'a, X: Write> {
    out: &'a mut X,
    root: &'static str,
    encoder: Option<GzEncoder<Vec<u8>>>,
    chunk: usize,
    in_chunk: usize,
    used: usize,
    written: usize,
    chunk_bytes: usize,
}

impl<X: Write> Chunks<'_, X> {
    /// Bytes written and pending, base64.
    fn size(&self) -> usize {
        self.written
            + self
                .encoder
                .as_ref()
                .map_or(0, |e| e.get_ref().len().div_ceil(3) * 4)
    }

    /// Adds a transcript line: its chunk and position.
    fn add(&mut self, line: &[u8]) -> std::io::Result<(usize, usize)> {
        let encoder = self
            .encoder
            .get_or_insert_with(|| GzEncoder::new(Vec::new(), Compression::new(6)));
        encoder.write_all(line)?;
        encoder.write_all(b"\n")?;
        let place = (self.chunk, self.in_chunk);
        self.in_chunk += 1;
        self.used += line.len() + 1;
        if self.used >= self.chunk_bytes {
            self.finish()?;
        }
        Ok(place)
    }

    /// Closes the open chunk into its script element.
    fn finish(&mut self) -> std::io::Result<()> {
        if let Some(encoder) = self.encoder.take() {
            let bytes = encoder.finish()?;
            let text = base64::engine::general_purpose::STANDARD.encode(bytes);
            write!(
                self.out,
                "<script type=\"application/gzip-base64\" data-explorer=\"{}\" data-chunk=\"{}\">",
                self.root, self.chunk
            )?;
            self.out.write_all(text.as_bytes())?;
            self.out.write_all(b"</script>")?;
            self.written += text.len();
            self.chunk += 1;
        }
        self.in_chunk = 0;
        self.used = 0;
        Ok(())
    }
}

impl<S: Suite> Explorer<S> {
    /// An empty explorer of `suite` embedding at most `limits`.
    pub fn new(suite: S, limits: Limits) -> Self {
        Explorer {
            suite,
            selection: Selection::new(limits.dialogues),
            limits,
            chunk_bytes: CHUNK_BYTES,
        }
    }

    /// The same with chunks of about `bytes` uncompressed bytes (tests).
    pub fn with_chunk_bytes(mut self, bytes: usize) -> Self {
        self.chunk_bytes = bytes.max(1);
        self
    }

    /// The suite.
    pub fn suite(&self) -> &S {
        &self.suite
    }

    /// The suite, to set what it shows (e.g. the models' order).
    pub fn suite_mut(&mut self) -> &mut S {
        &mut self.suite
    }

    /// Folds a record in, whose line starts at byte `at` of the results file (what
    /// [`Records::read`] is given to read it back).
    pub fn add(&mut self, record: &S::Record, at: u64) {
        let (row, standing) = self.suite.row(record);
        let id = S::id(&row).to_string();
        let failing = standing.failing;
        self.selection
            .push(&id, standing, Entry { row, at, failing });
    }

    /// Candidates held (for memory checks).
    pub fn kept(&self) -> usize {
        self.selection.kept()
    }

    /// What [`Explorer::write`] would list: the chosen dialogues' ids in priority order, and
    /// the counts.
    pub fn chosen(&self) -> (Vec<&str>, Counts) {
        let (chosen, counts) = self.selection.take();
        (chosen.iter().map(|e| S::id(&e.row)).collect(), counts)
    }

    /// Writes the explorer's section body to `out`: the note on what it embeds, the filters,
    /// the list and the transcript's pane, the compressed transcripts (read back from `records`
    /// and compressed into `spool` first, so that the note can count them), then the rows. `show`
    /// is the `sage show` command for the dialogues left out, without the id (e.g.
    /// `sage show results/RUN`). The fold is unchanged: records added later are in the next
    /// page.
    pub fn write<W: Write, X: Read + Write + Seek>(
        &self,
        out: &mut W,
        records: &mut dyn Records<S::Record>,
        spool: &mut X,
        show: &str,
    ) -> std::io::Result<Embedded> {
        let names = S::NAMES;
        let (chosen, counts) = self.selection.take();
        // The transcripts, in priority order, until the byte budget.
        spool.seek(SeekFrom::Start(0))?;
        let mut chunks = Chunks {
            out: spool,
            root: names.root,
            encoder: None,
            chunk: 0,
            in_chunk: 0,
            used: 0,
            written: 0,
            chunk_bytes: self.chunk_bytes,
        };
        let mut places: Vec<Option<(usize, usize)>> = Vec::with_capacity(chosen.len());
        let mut line = Vec::new();
        let mut embedded = Embedded {
            counts,
            ..Embedded::default()
        };
        for entry in &chosen {
            if chunks.size() >= self.limits.bytes {
                places.push(None);
                continue;
            }
            let record = records.read(entry.at)?;
            line.clear();
            self.suite
                .transcript(&record, &mut line)
                .map_err(std::io::Error::other)?;
            if line.contains(&b'\n') {
                return Err(std::io::Error::other("a transcript spans several lines"));
            }
            places.push(Some(chunks.add(&line)?));
            embedded.transcripts += 1;
            embedded.failing_transcripts += usize::from(entry.failing);
        }
        chunks.finish()?;
        let spooled = spool.stream_position()?;
        // The rows, by id.
        let mut order: Vec<usize> = (0..chosen.len()).collect();
        order.sort_by(|a, b| S::id(&chosen[*a].row).cmp(S::id(&chosen[*b].row)));
        let rows: Vec<&S::Row> = order.iter().map(|i| &chosen[*i].row).collect();
        let index = self.suite.index(&rows);
        let markup = self.frame(&embedded, &index, show);
        out.write_all(markup.into_string().as_bytes())?;
        spool.seek(SeekFrom::Start(0))?;
        std::io::copy(&mut (&mut *spool).take(spooled), out)?;
        // The rows: [id, chunk (-1: not embedded), position, case, ...cells].
        write!(
            out,
            "<script type=\"application/json\" id=\"{}\">",
            names.data
        )?;
        {
            let mut json = JsonInScript(&mut *out);
            json.write_all(b"{\"show\":")?;
            serde_json::to_writer(&mut json, show)?;
            json.write_all(b",\"tables\":")?;
            serde_json::to_writer(&mut json, &index.tables)?;
            json.write_all(b",\"rows\":[")?;
            for (n, (i, cells)) in order.iter().zip(&index.cells).enumerate() {
                if n > 0 {
                    json.write_all(b",")?;
                }
                let row = &chosen[*i].row;
                let (chunk, position) = places[*i].map_or((-1, 0), |(c, p)| (c as i64, p));
                json.write_all(b"[")?;
                serde_json::to_writer(&mut json, S::id(row))?;
                write!(json, ",{chunk},{position},")?;
                serde_json::to_writer(&mut json, &S::case(row))?;
                if !cells.is_empty() {
                    json.write_all(b",")?;
                    json.write_all(cells.as_bytes())?;
                }
                json.write_all(b"]")?;
            }
            json.write_all(b"]}")?;
        }
        out.write_all(b"</script>")?;
        Ok(embedded)
    }

    /// The explorer's visible part: what it embeds, the filters, the list, the pane.
    fn frame(&self, embedded: &Embedded, index: &Index, show: &str) -> Markup {
        let names = S::NAMES;
        let c = &embedded.counts;
        let (noun, nouns) = (names.noun, names.nouns);
        let listed_without = c.chosen - embedded.transcripts;
        html! {
            div.explorer id=(names.root) data-key=(names.key) {
                p.note.explorer-embeds data-total=(c.total) data-listed=(c.chosen)
                    data-embedded=(embedded.transcripts) data-failing=(c.failing)
                    data-failing-embedded=(embedded.failing_transcripts) {
                    @if !embedded.partial() {
                        "Every " (noun) " of the run (" (c.total) " in all), with its transcript. "
                    } @else {
                        b { "This page embeds " (embedded.transcripts) " of the run's " (c.total) " " (nouns) " with their transcript" }
                        " (" (embedded.failing_transcripts) " of the " (c.failing) " failing ones); "
                        @if c.chosen < c.total {
                            "above " (self.limits.dialogues) " " (nouns) " it lists the failing ones of each group first, worst first, then a sample of the others (docs/report.md). "
                        }
                        @if listed_without > 0 {
                            (listed_without) " listed " (nouns) " are past the page's "
                            (self.limits.bytes / 1_000_000) " MB budget for transcripts. "
                        }
                        "Any other " (noun) ": " code.show { (show) " ID" } " prints it. "
                    }
                    "Pick filters, click a row to open its transcript; "
                    code { "#" (names.key) "=ID" } " links open one directly. The transcripts are embedded compressed and need JavaScript."
                }
                noscript { p.bad { "JavaScript is off: the explorer cannot list or open " (nouns) "." } }
                (self.suite.controls(index))
                p.explorer-counter { span id=(names.count) { (c.chosen) } " " (nouns) " match." }
                div.explorer-panes {
                    div.explorer-list {
                        div.explorer-scroll {
                            table.data.explorer-table id=(names.table) {
                                (self.suite.head())
                                tbody {}
                            }
                        }
                    }
                    div.explorer-view id=(names.view) hidden {}
                }
            }
        }
    }
}

/// Everything of a page whose last section is an explorer, but the explorer's body.
pub struct PageParts {
    /// The document title.
    pub title: String,
    /// The style rules of the sections (the explorer's included).
    pub styles: Vec<String>,
    /// The scripts (the engine and the suite's included).
    pub scripts: Vec<&'static str>,
    /// The sections before the explorer.
    pub sections: Vec<Section>,
    /// The explorer's section: its id and title.
    pub explorer: (&'static str, &'static str),
}

impl<S: Suite> Explorer<S> {
    /// Writes the whole page to `out`: the head and table of contents, each section of `parts`,
    /// then the explorer's section ([`Explorer::write`]); what the explorer embeds.
    pub fn write_page<W: Write, X: Read + Write + Seek>(
        &self,
        parts: PageParts,
        out: W,
        records: &mut dyn Records<S::Record>,
        spool: &mut X,
        show: &str,
    ) -> std::io::Result<Embedded> {
        let (id, title) = parts.explorer;
        let head = PageHead {
            title: parts.title,
            styles: parts.styles,
            scripts: parts.scripts,
            toc: parts
                .sections
                .iter()
                .map(|s| (s.id.clone(), s.title.clone()))
                .chain([(id.to_string(), title.to_string())])
                .collect(),
        };
        let mut writer = PageWriter::start(out, &head)?;
        for section in parts.sections {
            writer.section(&section)?;
        }
        writer.open_section(id, title)?;
        let embedded = self.write(writer.out(), records, spool, show)?;
        writer.close_section()?;
        writer.finish()?;
        Ok(embedded)
    }
}

/// Strings shared between rows (models, scenarios, routes, personas): one allocation each.
#[derive(Debug, Default)]
pub struct Interner(BTreeSet<Arc<str>>);

impl Interner {
    /// The shared copy of `text`.
    pub fn get(&mut self, text: &str) -> Arc<str> {
        if let Some(s) = self.0.get(text) {
            return s.clone();
        }
        let s: Arc<str> = Arc::from(text);
        self.0.insert(s.clone());
        s
    }
}

/// The explorers' shared style: the filters, the list beside the transcript on wide screens
/// (each scrolling on its own), below it on narrow ones, long text cells cut with an ellipsis.
pub const CSS: &str = r#"
.explorer{scroll-margin-top:40px}
.explorer .filters{display:flex;flex-wrap:wrap;gap:6px 14px;align-items:center;margin:6px 0}
.explorer .filters select{max-width:240px}
.explorer .filters input[type=number]{width:70px}
.explorer-panes{display:grid;grid-template-columns:minmax(0,1fr);gap:14px;align-items:start}
.explorer-scroll{max-height:46vh;overflow:auto;border:1px solid var(--line)}
.explorer-scroll table.data{margin:0;width:100%}
.explorer-scroll table.data th{top:0}
.explorer-table tbody tr{cursor:pointer}
.explorer-table tbody tr:hover,.explorer-table tbody tr.open{background:var(--panel)}
.explorer-table td.cut{max-width:13em;overflow:hidden;text-overflow:ellipsis;white-space:nowrap}
.explorer-table td.id{max-width:19em}
.explorer-table .id-cell{display:flex;align-items:baseline;gap:4px;max-width:19em}
.explorer-table .id-cell a{overflow:hidden;text-overflow:ellipsis;white-space:nowrap;min-width:0}
.explorer-table .id-cell .tag{flex:none;white-space:nowrap}
.explorer-view{border-top:2px solid var(--accent);padding-top:8px;scroll-margin-top:40px;overflow-wrap:break-word}
.explorer-view .show{display:block;margin:6px 0}
@media (min-width:1200px){
.explorer:not(.case-open) .explorer-panes{grid-template-columns:minmax(0,5fr) minmax(0,6fr)}
.explorer:not(.case-open) .explorer-scroll{max-height:calc(100vh - 150px)}
.explorer:not(.case-open) .explorer-view{position:sticky;top:36px;max-height:calc(100vh - 46px);overflow:auto;border-top:0;border-left:2px solid var(--accent);padding:0 0 0 12px}
}
.explorer-view table.case-turns{table-layout:fixed;width:100%}
.explorer-view table.case-turns .turn-n{width:3.5em}
.explorer-view table.case-turns td{vertical-align:top}
.explorer-view pre{max-height:24em;overflow:auto}
"#;

/// The explorers' engine (filters, the URL fragment, lazily rendered rows, chunks decompressed
/// on demand, the transcript's pane, the case view); each suite's script mounts it.
pub const SCRIPT: &str = include_str!("../js/explorer.js");

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_case_is_the_dialogue_id_without_its_model() {
        assert_eq!(
            case_id("telecom_package/0007/sim-strong/r0", "sim-strong"),
            "telecom_package/0007/r0"
        );
        assert_eq!(case_id("c12/agent/x/r1", "agent/x"), "c12/r1");
        assert_eq!(case_id("odd", "m"), "odd");
    }

    #[test]
    fn json_in_a_script_cannot_close_it() {
        let mut out = JsonInScript(Vec::new());
        serde_json::to_writer(&mut out, "</script><b>").unwrap();
        let text = String::from_utf8(out.0).unwrap();
        assert_eq!(text, r#""\u003c/script>\u003cb>""#);
        assert_eq!(
            serde_json::from_str::<String>(&text).unwrap(),
            "</script><b>"
        );
    }

    #[test]
    fn shell_words_keep_quotes() {
        assert_eq!(shell_quote("a/b c"), "'a/b c'");
        assert_eq!(shell_quote("it's"), r"'it'\''s'");
    }
}
