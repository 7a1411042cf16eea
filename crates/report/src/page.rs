//! The page frame: document head, the Content Security Policy that keeps the file offline and
//! lets only the report's own scripts run, the shared style sheet, the table of contents and
//! the sections.
//!
//! Every page is built with [`maud`], which escapes every value it is handed: a section's body is
//! [`Markup`], so text from a record cannot become markup unless a renderer wraps it in
//! `PreEscaped` on purpose. The scripts are the `.js` files of `crates/report/src/js/`, inlined and
//! listed by their SHA-256 in the policy (`script-src 'sha256-…'`, no `'unsafe-inline'`): a
//! script that is not one of them does not run, whatever a record holds. The style sheet is
//! allowed the same way (`style-src 'sha256-…'`): the report uses no `style` attribute (colours
//! are classes or SVG attributes; scripts set styles through the CSSOM).
//!
//! DOM contract (checked through a real browser, see docs/report.md): every section is a
//! `<section id="ID" data-section="ID">` whose first child is its `<h2>`; the table of contents
//! is `<nav id="toc">` with one link per section; data tables are `<table class="data">` whose
//! numeric cells carry the raw number in `data-value`.

use base64::Engine;
use maud::{DOCTYPE, Markup, PreEscaped, html};
use sha2::{Digest, Sha256};
use std::io::Write;

/// One part of the page, listed in the table of contents.
#[derive(Debug, Clone)]
pub struct Section {
    /// The element id, also the URL fragment that links to it: ASCII letters, digits and `-`.
    pub id: String,
    /// The heading (plain text, escaped when rendered).
    pub title: String,
    /// The body.
    pub html: Markup,
}

impl Section {
    /// A section with `id`, `title` and a body.
    pub fn new(id: impl Into<String>, title: impl Into<String>, html: Markup) -> Self {
        Section {
            id: id.into(),
            title: title.into(),
            html,
        }
    }
}

/// A whole report page.
#[derive(Debug, Clone, Default)]
pub struct Page {
    /// The document title (plain text).
    pub title: String,
    /// The sections, in order.
    pub sections: Vec<Section>,
    /// Extra style rules for the sections (the shared ones are [`BASE_CSS`]).
    pub styles: Vec<String>,
    /// The page's scripts (the `.js` files of `crates/report/src/js/`), run at the end of the body in
    /// this order; each is allowed by its hash in the page's Content Security Policy.
    pub scripts: Vec<&'static str>,
}

/// The `'sha256-…'` source expression of an inline script or style element's exact text.
pub fn csp_hash(text: &str) -> String {
    let digest = Sha256::digest(text.as_bytes());
    format!(
        "'sha256-{}'",
        base64::engine::general_purpose::STANDARD.encode(digest)
    )
}

/// The Content Security Policy of a page whose only scripts are `scripts` and whose only style
/// sheets are the `<style>` elements `styles`: nothing may be fetched (no network, no file, no
/// `data:` fetch), only those scripts run and only those style sheets apply (each by its hash,
/// never `'unsafe-inline'`: no inline event handler, `style` attribute or injected element
/// takes effect), `data:` images are allowed.
pub fn csp(scripts: &[&str], styles: &[&str]) -> String {
    let sources = |texts: &[&str]| -> String {
        if texts.is_empty() {
            "'none'".into()
        } else {
            texts
                .iter()
                .map(|t| csp_hash(t))
                .collect::<Vec<_>>()
                .join(" ")
        }
    };
    format!(
        "default-src 'none'; style-src {}; script-src {}; img-src data:; base-uri 'none'; form-action 'none'",
        sources(styles),
        sources(scripts)
    )
}

/// The style sheet shared by every section: a readable page in light and dark mode, data tables,
/// numeric cells, good/bad highlights, charts.
pub const BASE_CSS: &str = r#"
:root{color-scheme:light dark;--fg:#1d2330;--muted:#5d6677;--bg:#fff;--panel:#f5f7fa;--line:#d9dee7;--good:#1a7f37;--bad:#c62828;--warn:#b26a00;--accent:#2557c7}
@media (prefers-color-scheme:dark){:root{--fg:#e6e9ef;--muted:#9aa3b2;--bg:#14171c;--panel:#1d2128;--line:#333a45;--good:#4cc26a;--bad:#ff6b6b;--warn:#f0a83a;--accent:#7aa2ff}}
*{box-sizing:border-box}
body{margin:0;font:14px/1.45 system-ui,-apple-system,"Segoe UI",Roboto,sans-serif;color:var(--fg);background:var(--bg)}
header.page{padding:16px 24px;border-bottom:1px solid var(--line)}
header.page h1{margin:0;font-size:20px}
nav#toc{position:sticky;top:0;z-index:5;background:var(--bg);border-bottom:1px solid var(--line);padding:6px 24px;display:flex;flex-wrap:wrap;gap:4px 14px}
nav#toc a{color:var(--accent);text-decoration:none;font-size:13px}
main{padding:0 24px 48px;max-width:1400px}
section{margin-top:28px}
section>h2{font-size:17px;border-bottom:1px solid var(--line);padding-bottom:4px}
h3{font-size:15px;margin:18px 0 6px}
p.note,.muted{color:var(--muted)}
table.data{border-collapse:collapse;margin:8px 0;font-size:13px}
table.data th,table.data td{border-bottom:1px solid var(--line);padding:3px 8px;text-align:left;vertical-align:top}
table.data th{background:var(--panel);position:sticky;top:var(--sticky-top,32px)}
table.data td.num,table.data th.num{text-align:right;font-variant-numeric:tabular-nums}
div.table-box{max-width:100%;max-height:80vh;overflow:auto;margin:8px 0;border:1px solid var(--line)}
div.table-box table.data{margin:0}
div.table-box table.data th{top:0;z-index:2}
div.table-box table.data tr>:first-child{position:sticky;left:0;z-index:1;background:var(--bg);box-shadow:inset -1px 0 var(--line)}
div.table-box table.data th:first-child{z-index:3;background:var(--panel)}
table.data th.rotated{vertical-align:bottom;white-space:nowrap;padding:6px 3px}
table.data th.rotated span{writing-mode:vertical-rl;transform:rotate(180deg);font-weight:600}
code.route{overflow-wrap:normal}
.good{color:var(--good)}.bad{color:var(--bad)}.warn{color:var(--warn)}
.ci{color:var(--muted);font-size:11px}
.tag{display:inline-block;padding:0 6px;border-radius:8px;background:var(--panel);border:1px solid var(--line);font-size:11px}
.tag.off-case{display:block;width:fit-content;margin:2px 0;border-color:#c98a2b;color:#7a4a00}
svg.chart{max-width:100%;height:auto;font-size:11px}
svg.chart text{fill:var(--fg)}
svg.chart .axis{stroke:var(--line)}
code,pre{font-family:ui-monospace,SFMono-Regular,Menlo,Consolas,monospace;font-size:12px}
pre{white-space:pre-wrap;background:var(--panel);padding:8px;border-radius:4px}
"#;

/// What a page says before its sections: its title, style rules, scripts and table of contents.
#[derive(Debug, Clone, Default)]
pub struct PageHead {
    /// The document title (plain text).
    pub title: String,
    /// Extra style rules for the sections (the shared ones are [`BASE_CSS`]).
    pub styles: Vec<String>,
    /// The page's scripts, run at the end of the body in this order; each is allowed by its
    /// hash in the page's Content Security Policy.
    pub scripts: Vec<&'static str>,
    /// The sections' `(id, title)`, in order: the table of contents.
    pub toc: Vec<(String, String)>,
}

/// A page being written to `W` as it is rendered: the head and the table of contents first,
/// then each section (a [`Section`] rendered whole, or a body streamed by its caller between
/// [`PageWriter::open_section`] and [`PageWriter::close_section`]), then the scripts
/// ([`PageWriter::finish`]). The whole page is never held in memory.
pub struct PageWriter<W: Write> {
    out: W,
    scripts: Vec<&'static str>,
}

impl<W: Write> PageWriter<W> {
    /// Writes the document's head, its header and its table of contents.
    pub fn start(mut out: W, head: &PageHead) -> std::io::Result<PageWriter<W>> {
        let styles: String = std::iter::once(BASE_CSS)
            .chain(head.styles.iter().map(String::as_str))
            .collect();
        let top = html! {
            (DOCTYPE)
            head {
                meta charset="utf-8";
                meta http-equiv="Content-Security-Policy" content=(csp(&head.scripts, &[&styles]));
                meta name="viewport" content="width=device-width, initial-scale=1";
                title { (head.title) }
                // The style sheet is this crate's constants, not a record's text.
                style { (PreEscaped(styles)) }
            }
        };
        let header = html! {
            header.page { h1 { (head.title) } }
            nav #toc {
                @for (id, title) in &head.toc {
                    a href={ "#" (id) } { (title) }
                }
            }
        };
        // The opening tags are constants: maud writes only whole elements.
        let top = top.into_string();
        let (doctype, rest) = top.split_at(top.find("<head>").unwrap_or(0));
        out.write_all(doctype.as_bytes())?;
        out.write_all(b"<html lang=\"en\">")?;
        out.write_all(rest.as_bytes())?;
        out.write_all(b"<body>")?;
        out.write_all(header.into_string().as_bytes())?;
        out.write_all(b"<main>")?;
        Ok(PageWriter {
            out,
            scripts: head.scripts.clone(),
        })
    }

    /// Writes a section whole.
    pub fn section(&mut self, section: &Section) -> std::io::Result<()> {
        self.open_section(&section.id, &section.title)?;
        self.out.write_all(section.html.0.as_bytes())?;
        self.close_section()
    }

    /// Opens a section (its element and heading) whose body the caller writes next, through
    /// [`PageWriter::out`].
    pub fn open_section(&mut self, id: &str, title: &str) -> std::io::Result<()> {
        let head = html! { h2 { (title) } };
        let id = html! { (id) }.into_string();
        write!(
            self.out,
            "<section id=\"{id}\" data-section=\"{id}\">{}",
            head.into_string()
        )
    }

    /// Where an open section's body goes.
    pub fn out(&mut self) -> &mut W {
        &mut self.out
    }

    /// Closes the section opened last.
    pub fn close_section(&mut self) -> std::io::Result<()> {
        self.out.write_all(b"</section>")
    }

    /// Writes the scripts and closes the document; the writer, flushed.
    ///
    /// # Panics
    ///
    /// Never on record data; a script file that holds `</script` is a programming error
    /// (checked by a unit test for every script of the report).
    pub fn finish(mut self) -> std::io::Result<W> {
        self.out.write_all(b"</main>")?;
        for script in &self.scripts {
            // The scripts are this crate's `.js` files (none holds `</script`, a unit test
            // checks it), allowed by their hashes in the policy.
            let script = html! { script { (PreEscaped(*script)) } };
            self.out.write_all(script.into_string().as_bytes())?;
        }
        self.out.write_all(b"</body></html>\n")?;
        self.out.flush()?;
        Ok(self.out)
    }
}

impl Page {
    /// The page's head: title, styles, scripts and the table of contents of its sections.
    pub fn head(&self) -> PageHead {
        PageHead {
            title: self.title.clone(),
            styles: self.styles.clone(),
            scripts: self.scripts.clone(),
            toc: self
                .sections
                .iter()
                .map(|s| (s.id.clone(), s.title.clone()))
                .collect(),
        }
    }

    /// Writes the whole document to `out` through a [`PageWriter`].
    pub fn write_to<W: Write>(&self, out: W) -> std::io::Result<W> {
        let mut writer = PageWriter::start(out, &self.head())?;
        for section in &self.sections {
            writer.section(section)?;
        }
        writer.finish()
    }

    /// The whole document as a string (small pages and tests; reports write theirs with a
    /// [`PageWriter`]).
    pub fn render(&self) -> String {
        // Writing into a Vec cannot fail, and the page is UTF-8 (maud writes strings).
        let bytes = self.write_to(Vec::new()).unwrap_or_default();
        String::from_utf8(bytes).unwrap_or_default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_page_lists_its_sections_escapes_text_and_allows_only_its_scripts() {
        let page = Page {
            title: "Run <1>".into(),
            sections: vec![Section::new(
                "leaderboard",
                "Leaderboard",
                html! { p { "x" (r#"</p><script>alert(1)</script>"#) } },
            )],
            styles: vec![],
            scripts: vec!["let s = 1;"],
        };
        let html = page.render();
        assert!(html.contains("<title>Run &lt;1&gt;</title>"));
        assert!(html.contains("default-src 'none'"));
        let directive = |name: &str| {
            html.split(['"', ';'])
                .map(str::trim)
                .find(|d| d.starts_with(name))
                .unwrap()
                .to_string()
        };
        assert_eq!(
            directive("script-src"),
            format!("script-src {}", csp_hash("let s = 1;"))
        );
        // The one style element, by the hash of its exact text.
        let css = &html[html.find("<style>").unwrap() + 7..html.find("</style>").unwrap()];
        assert_eq!(
            directive("style-src"),
            format!("style-src {}", csp_hash(css))
        );
        assert!(!html.contains("unsafe-inline"));
        assert!(html.contains("<a href=\"#leaderboard\">Leaderboard</a>"));
        assert!(html.contains("<section id=\"leaderboard\" data-section=\"leaderboard\"><h2>Leaderboard</h2><p>x&lt;/p&gt;&lt;script&gt;alert(1)&lt;/script&gt;</p></section>"));
        assert!(html.contains("<script>let s = 1;</script>"));
        assert_eq!(html.matches("<script>").count(), 1);
    }

    #[test]
    fn a_hash_is_the_base64_sha256_of_the_exact_text() {
        // `echo -n 'alert(1)' | openssl dgst -sha256 -binary | base64`
        assert_eq!(
            csp_hash("alert(1)"),
            "'sha256-bhHHL3z2vDgxUt0W3dWQOrprscmda2Y5pLsLg4GF+pI='"
        );
    }

    #[test]
    fn no_script_of_the_report_closes_its_element() {
        for script in [
            crate::sage::SORT_SCRIPT,
            crate::charts::SCRIPT,
            crate::graph::SCRIPT,
            crate::explorer::SCRIPT,
            crate::explorer::sage::SCRIPT,
            crate::desk::DESK_JS,
            crate::tau2::TAU2_JS,
        ] {
            assert!(!script.to_ascii_lowercase().contains("</script"));
            assert!(!script.contains("<!--"));
        }
    }
}
