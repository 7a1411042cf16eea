//! The page frame: document head, the Content Security Policy that keeps the file offline, the
//! shared style sheet, the table of contents and the sections.
//!
//! DOM contract (checked through a real browser, see docs/report.md): every section is a
//! `<section id="ID" data-section="ID">` whose first child is its `<h2>`; the table of contents
//! is `<nav id="toc">` with one link per section; data tables are `<table class="data">` whose
//! numeric cells carry the raw number in `data-value`.

use std::fmt::Write;

/// One part of the page, listed in the table of contents.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Section {
    /// The element id, also the URL fragment that links to it: ASCII letters, digits and `-`.
    pub id: String,
    /// The heading (plain text, escaped when rendered).
    pub title: String,
    /// The body: trusted HTML built by this module's renderers (every value from a record
    /// went through [`escape`]).
    pub html: String,
}

impl Section {
    /// A section with `id`, `title` and an HTML body.
    pub fn new(id: impl Into<String>, title: impl Into<String>, html: impl Into<String>) -> Self {
        Section {
            id: id.into(),
            title: title.into(),
            html: html.into(),
        }
    }
}

/// A whole report page.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Page {
    /// The document title (plain text).
    pub title: String,
    /// The sections, in order.
    pub sections: Vec<Section>,
    /// Extra style rules for the sections (the shared ones are [`BASE_CSS`]).
    pub styles: Vec<String>,
    /// Inline scripts, run at the end of the body in this order.
    pub scripts: Vec<String>,
}

/// The Content Security Policy: nothing may be fetched (no network, no file, no data: fetch);
/// inline styles, inline scripts and `data:` images are allowed.
pub const CSP: &str = "default-src 'none'; style-src 'unsafe-inline'; script-src 'unsafe-inline'; img-src data:; base-uri 'none'; form-action 'none'";

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
table.data th{background:var(--panel);position:sticky;top:32px}
table.data td.num,table.data th.num{text-align:right;font-variant-numeric:tabular-nums}
.good{color:var(--good)}.bad{color:var(--bad)}.warn{color:var(--warn)}
.ci{color:var(--muted);font-size:11px}
.tag{display:inline-block;padding:0 6px;border-radius:8px;background:var(--panel);border:1px solid var(--line);font-size:11px}
svg.chart{max-width:100%;height:auto;font-size:11px}
svg.chart text{fill:var(--fg)}
svg.chart .axis{stroke:var(--line)}
code,pre{font-family:ui-monospace,SFMono-Regular,Menlo,Consolas,monospace;font-size:12px}
pre{white-space:pre-wrap;background:var(--panel);padding:8px;border-radius:4px}
"#;

/// HTML-escapes `text` for element content and quoted attribute values.
pub fn escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            _ => out.push(c),
        }
    }
    out
}

impl Page {
    /// The whole document.
    pub fn render(&self) -> String {
        let size: usize = self.sections.iter().map(|s| s.html.len()).sum::<usize>()
            + self.scripts.iter().map(String::len).sum::<usize>();
        let mut out = String::with_capacity(size + BASE_CSS.len() + 4096);
        let title = escape(&self.title);
        let _ = write!(
            out,
            "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\
             <meta http-equiv=\"Content-Security-Policy\" content=\"{CSP}\">\
             <meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\
             <title>{title}</title><style>{BASE_CSS}"
        );
        for style in &self.styles {
            out.push_str(style);
        }
        let _ = write!(
            out,
            "</style></head><body><header class=\"page\"><h1>{title}</h1></header><nav id=\"toc\">"
        );
        for section in &self.sections {
            let _ = write!(
                out,
                "<a href=\"#{}\">{}</a>",
                escape(&section.id),
                escape(&section.title)
            );
        }
        out.push_str("</nav><main>");
        for section in &self.sections {
            let id = escape(&section.id);
            let _ = write!(
                out,
                "<section id=\"{id}\" data-section=\"{id}\"><h2>{}</h2>{}</section>",
                escape(&section.title),
                section.html
            );
        }
        out.push_str("</main>");
        for script in &self.scripts {
            // A script body must not close its own element early.
            let _ = write!(
                out,
                "<script>{}</script>",
                script.replace("</script", "<\\/script")
            );
        }
        out.push_str("</body></html>\n");
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn escape_covers_markup_and_quotes() {
        assert_eq!(
            escape(r#"<a href="x">'&'</a>"#),
            "&lt;a href=&quot;x&quot;&gt;&#39;&amp;&#39;&lt;/a&gt;"
        );
    }

    #[test]
    fn a_page_lists_its_sections_and_forbids_fetching() {
        let page = Page {
            title: "Run <1>".into(),
            sections: vec![Section::new("leaderboard", "Leaderboard", "<p>x</p>")],
            styles: vec![],
            scripts: vec!["let s = '</script>';".into()],
        };
        let html = page.render();
        assert!(html.contains("<title>Run &lt;1&gt;</title>"));
        assert!(html.contains("default-src 'none'"));
        assert!(html.contains("<a href=\"#leaderboard\">Leaderboard</a>"));
        assert!(html.contains("<section id=\"leaderboard\" data-section=\"leaderboard\"><h2>Leaderboard</h2><p>x</p></section>"));
        assert!(html.contains("let s = '<\\/script>';"));
        assert_eq!(html.matches("</script>").count(), 1);
    }
}
