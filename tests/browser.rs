//! Self-tests of the headless-Chromium harness (tests/common/browser.rs) on small pages written
//! to a temporary folder: what it reports (console errors, requests) is what the page did, and
//! its controls (eval, click, wait_for, scripts off, screenshots) really act on the page.

mod common;

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use common::browser::{Browser, CdpError};
use serde_json::json;

/// Writes `body` as an HTML page named `name` in `dir` and returns its path.
fn page(dir: &Path, name: &str, head: &str, body: &str) -> PathBuf {
    let path = dir.join(name);
    std::fs::write(
        &path,
        format!(
            "<!doctype html><html><head><meta charset=\"utf-8\"><title>static</title>{head}</head>\
             <body>{body}</body></html>"
        ),
    )
    .unwrap();
    path
}

/// The `file://` URL Chromium reports for a path.
fn file_url(p: &Path) -> String {
    format!("file://{}", p.canonicalize().unwrap().display())
}

#[test]
fn a_clean_page_has_no_console_errors_and_requests_only_itself() {
    let dir = tempfile::tempdir().unwrap();
    let p = page(
        dir.path(),
        "clean.html",
        "<style>body{font:14px sans-serif}</style>",
        "<p id=p>hi</p><script>document.getElementById('p').textContent = 'set by script';\
         console.log('just a log'); console.warn('just a warning');</script>",
    );
    let browser = Browser::launch();
    let tab = browser.open(&p, true).unwrap();
    assert_eq!(tab.console_errors().unwrap(), Vec::<String>::new());
    assert_eq!(tab.requests().unwrap(), vec![file_url(&p)]);
    assert_eq!(tab.failed_requests().unwrap(), vec![]);
    assert_eq!(
        tab.eval("document.getElementById('p').textContent")
            .unwrap(),
        json!("set by script")
    );
}

#[test]
fn console_errors_and_uncaught_exceptions_are_reported() {
    let dir = tempfile::tempdir().unwrap();
    let p = page(
        dir.path(),
        "errors.html",
        "",
        "<script>console.error('boom', 42); console.assert(1 === 2, 'asserted');</script>\
         <script>throw new Error('kaput');</script>\
         <script>setTimeout(() => { null.x }, 10);</script>",
    );
    let browser = Browser::launch();
    let tab = browser.open(&p, true).unwrap();
    // The timer's TypeError comes after load: wait for it, then see all of them in order.
    let started = Instant::now();
    while tab.console_errors().unwrap().len() < 4 && started.elapsed() < Duration::from_secs(5) {
        std::thread::sleep(Duration::from_millis(20));
    }
    let errors = tab.console_errors().unwrap();
    assert_eq!(errors.len(), 4, "{errors:#?}");
    assert_eq!(errors[0], "console.error: boom 42");
    assert_eq!(errors[1], "console.assert: asserted");
    assert!(
        errors[2].starts_with("uncaught: Error: kaput"),
        "{errors:#?}"
    );
    assert!(
        errors[3].starts_with("uncaught: TypeError: Cannot read properties of null"),
        "{errors:#?}"
    );
    // An exception in the test's own eval is its Err, not a console error of the page.
    match tab.eval("throw new Error('from eval')") {
        Err(CdpError::Js(text)) => assert!(text.starts_with("Error: from eval"), "{text}"),
        other => panic!("expected a JS error, got {other:?}"),
    }
    assert_eq!(tab.console_errors().unwrap().len(), 4);
}

#[test]
fn a_request_beyond_the_file_is_seen_and_its_failure_recorded() {
    let dir = tempfile::tempdir().unwrap();
    let p = page(
        dir.path(),
        "fetches.html",
        "",
        "<img src=\"http://127.0.0.1:9/x.png\" alt=\"\">",
    );
    let browser = Browser::launch();
    let tab = browser.open(&p, true).unwrap();
    assert_eq!(
        tab.requests().unwrap(),
        vec![file_url(&p), "http://127.0.0.1:9/x.png".to_owned()]
    );
    let failed = tab.failed_requests().unwrap();
    assert_eq!(failed.len(), 1, "{failed:?}");
    assert_eq!(failed[0].0, "http://127.0.0.1:9/x.png");
    assert!(failed[0].1.starts_with("net::ERR_"), "{failed:?}");
    let errors = tab.console_errors().unwrap();
    assert_eq!(errors.len(), 1, "{errors:#?}");
    assert!(
        errors[0].starts_with("log.network: Failed to load resource")
            && errors[0].ends_with("(http://127.0.0.1:9/x.png)"),
        "{errors:#?}"
    );
}

#[test]
fn eval_click_and_wait_for_act_on_the_page() {
    let dir = tempfile::tempdir().unwrap();
    let p = page(
        dir.path(),
        "controls.html",
        "",
        "<div style=\"height:3000px\">tall</div>\
         <button id=b onclick=\"setTimeout(() => document.body.dataset.clicked = 'yes', 150)\">go</button>",
    );
    let browser = Browser::launch();
    let tab = browser.open(&p, true).unwrap();
    assert_eq!(tab.eval("6 * 7").unwrap(), json!(42));
    assert_eq!(
        tab.eval("({a: [1, 'b', null]})").unwrap(),
        json!({"a": [1, "b", null]})
    );
    assert_eq!(tab.eval("undefined").unwrap(), json!(null));
    assert_eq!(
        tab.eval("new Promise(r => setTimeout(() => r('later'), 50))")
            .unwrap(),
        json!("later")
    );
    // Below the fold: click scrolls it into view first.
    tab.click("#b").unwrap();
    assert_eq!(
        tab.eval("document.body.dataset.clicked ?? 'not yet'")
            .unwrap(),
        json!("not yet")
    );
    tab.wait_for(
        "document.body.dataset.clicked === 'yes'",
        Duration::from_secs(5),
    )
    .unwrap();
    match tab.click("#nothing") {
        Err(CdpError::Js(t)) => assert_eq!(t, "click: no element matches #nothing"),
        other => panic!("{other:?}"),
    }
    let started = Instant::now();
    match tab.wait_for("window.never === 1", Duration::from_millis(300)) {
        Err(CdpError::Timeout(t)) => assert!(t.contains("last value false"), "{t}"),
        other => panic!("{other:?}"),
    }
    let waited = started.elapsed();
    assert!(
        waited >= Duration::from_millis(300) && waited < Duration::from_secs(2),
        "{waited:?}"
    );
    // A second navigation starts a fresh record.
    let other = page(
        dir.path(),
        "second.html",
        "",
        "<script>console.error('x')</script>",
    );
    tab.navigate(&other).unwrap();
    assert_eq!(tab.requests().unwrap(), vec![file_url(&other)]);
    assert_eq!(
        tab.console_errors().unwrap(),
        vec!["console.error: x".to_owned()]
    );
}

#[test]
fn scripts_disabled_really_do_not_run() {
    let dir = tempfile::tempdir().unwrap();
    let p = page(
        dir.path(),
        "nojs.html",
        "",
        "<script>document.title = 'ran'; console.error('script ran')</script>\
         <noscript><p id=ns>no scripts</p></noscript>\
         <details id=d><summary id=s>more</summary>inside</details>\
         <a id=a href=\"#there\">link</a>",
    );
    let browser = Browser::launch();
    let off = browser.open(&p, false).unwrap();
    assert_eq!(off.eval("document.title").unwrap(), json!("static"));
    assert_eq!(
        off.eval("document.getElementById('ns')?.textContent")
            .unwrap(),
        json!("no scripts")
    );
    assert_eq!(off.console_errors().unwrap(), Vec::<String>::new());
    // Clicks are real mouse events: they work without scripts.
    off.click("#s").unwrap();
    off.wait_for("document.getElementById('d').open", Duration::from_secs(5))
        .unwrap();
    off.click("#a").unwrap();
    off.wait_for("location.hash === '#there'", Duration::from_secs(5))
        .unwrap();

    let on = browser.open(&p, true).unwrap();
    assert_eq!(on.eval("document.title").unwrap(), json!("ran"));
    assert_eq!(
        on.eval("document.getElementById('ns')").unwrap(),
        json!(null)
    );
    assert_eq!(
        on.console_errors().unwrap(),
        vec!["console.error: script ran".to_owned()]
    );
}

/// Width and height from a PNG's IHDR chunk, after checking its signature.
fn png_size(bytes: &[u8]) -> (u32, u32) {
    assert!(bytes.len() > 33, "{} bytes", bytes.len());
    assert_eq!(&bytes[..8], b"\x89PNG\r\n\x1a\n", "PNG signature");
    assert_eq!(&bytes[12..16], b"IHDR");
    let be = |i: usize| u32::from_be_bytes(bytes[i..i + 4].try_into().unwrap());
    (be(16), be(20))
}

#[test]
fn screenshots_are_pngs_of_the_page_or_an_element() {
    let dir = tempfile::tempdir().unwrap();
    let p = page(
        dir.path(),
        "shot.html",
        "<style>body{margin:0} #box{margin:40px;width:200px;height:100px;background:#c62828}</style>",
        "<div id=box></div><div style=\"height:1500px\"></div>",
    );
    let browser = Browser::launch();
    let tab = browser.open(&p, true).unwrap();
    tab.set_viewport(800, 600).unwrap();
    assert_eq!(tab.eval("innerWidth").unwrap(), json!(800));

    let full = dir.path().join("shots/full.png");
    tab.screenshot(&full, None).unwrap();
    // The whole page, beyond the 600 px viewport: 40 + 100 + 40 (collapsed margin) + 1500.
    assert_eq!(png_size(&std::fs::read(&full).unwrap()), (800, 1680));

    let boxed = dir.path().join("shots/box.png");
    tab.screenshot(&boxed, Some("#box")).unwrap();
    let bytes = std::fs::read(&boxed).unwrap();
    assert_eq!(png_size(&bytes), (200, 100));

    match tab.screenshot(&dir.path().join("none.png"), Some("#missing")) {
        Err(CdpError::Js(t)) => assert_eq!(t, "screenshot: no element matches #missing"),
        other => panic!("{other:?}"),
    }
    assert!(!dir.path().join("none.png").exists());
}

/// Whether any process of the group `pgid` is alive.
fn group_alive(pgid: u32) -> bool {
    // SAFETY: signal 0 only checks for existence.
    unsafe { libc::kill(-(pgid as libc::pid_t), 0) == 0 }
}

#[test]
fn the_browser_dies_and_its_folder_goes_on_drop_and_on_panic() {
    let browser = Browser::launch();
    let (pid, dir) = (browser.pid(), browser.temp_dir().to_owned());
    assert!(dir.join("profile/DevToolsActivePort").exists());
    drop(browser);
    assert!(!group_alive(pid), "chromium's process group {pid} survived");
    assert!(!dir.exists(), "{} left behind", dir.display());

    let seen = std::sync::Mutex::new(None);
    let result = std::panic::catch_unwind(|| {
        let browser = Browser::launch();
        *seen.lock().unwrap() = Some((browser.pid(), browser.temp_dir().to_owned()));
        panic!("a failing test");
    });
    assert!(result.is_err());
    let (pid, dir) = seen.lock().unwrap().take().unwrap();
    assert!(
        !group_alive(pid),
        "chromium's process group {pid} survived a panic"
    );
    assert!(!dir.exists(), "{} left behind after a panic", dir.display());
}

#[test]
fn a_missing_chromium_fails_loudly() {
    let err = std::panic::catch_unwind(|| Browser::launch_with("/nonexistent/chromium"))
        .err()
        .expect("launch must fail");
    let msg = err.downcast_ref::<String>().cloned().unwrap_or_default();
    assert!(
        msg.starts_with(
            "headless Chromium is needed by the browser tests (Debian package `chromium`"
        ) && msg.contains("cannot start `/nonexistent/chromium`"),
        "{msg}"
    );
}

/// The report's policy (crates/report/src/page.rs): a blocked load or connection must still be seen.
#[test]
fn loads_blocked_by_the_content_security_policy_are_seen_and_data_urls_listed() {
    let dir = tempfile::tempdir().unwrap();
    let png = "data:image/png;base64,iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg==";
    let p = page(
        dir.path(),
        "csp.html",
        &format!(
            "<meta http-equiv=\"Content-Security-Policy\" content=\"{}\">",
            sage::report::page::csp(&["fetch('http://127.0.0.1:9/z').catch(() => 0)"], &[])
        ),
        &format!(
            "<img src=\"{png}\" alt=\"\"><img src=\"http://127.0.0.1:9/y.png\" alt=\"\">\
             <script>fetch('http://127.0.0.1:9/z').catch(() => 0)</script>"
        ),
    );
    let browser = Browser::launch();
    let tab = browser.open(&p, true).unwrap();
    // The blocked image is a request that failed; the blocked fetch never becomes a request,
    // only console errors: "nothing fetched" is requests() ⊆ {the file, data:} AND no errors.
    assert_eq!(
        tab.requests().unwrap(),
        vec![
            file_url(&p),
            png.to_owned(),
            "http://127.0.0.1:9/y.png".to_owned()
        ]
    );
    assert_eq!(
        tab.failed_requests().unwrap(),
        vec![(
            "http://127.0.0.1:9/y.png".to_owned(),
            "blocked: csp".to_owned()
        )]
    );
    let errors = tab.console_errors().unwrap();
    assert_eq!(errors.len(), 3, "{errors:#?}");
    assert!(
        errors[0]
            .starts_with("log.security: Loading the image 'http://127.0.0.1:9/y.png' violates")
    );
    assert!(errors[1].starts_with("log.security: Connecting to 'http://127.0.0.1:9/z' violates"));
    assert!(errors[2].starts_with("log.javascript: Fetch API cannot load http://127.0.0.1:9/z."));
}
