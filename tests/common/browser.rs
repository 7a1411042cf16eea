//! A headless Chromium driven over the Chrome DevTools Protocol, for tests that check a page
//! (report.html) through a real browser instead of grepping its text: console errors, every
//! network request, the DOM after scripts ran, clicks, screenshots.
//!
//! A small synchronous client: one WebSocket (tungstenite) to the browser, one flattened session
//! per tab. Every wait is bounded by a timeout; events that arrive while a command waits for its
//! reply are queued per session and folded into the tab's record when the tab next looks.
//!
//! ```ignore
//! let browser = Browser::launch();                 // panics clearly when chromium is missing
//! let tab = browser.open(&report_html, true)?;     // JS on; navigated and loaded
//! assert_eq!(tab.console_errors()?, Vec::<String>::new());
//! tab.click("th[data-sort=\"mean\"]")?;
//! tab.wait_for("document.querySelector('tr').dataset.model === 'a'", Duration::from_secs(5))?;
//! tab.screenshot(&docs.join("leaderboard.png"), Some("#leaderboard"))?;
//! ```
//!
//! The binary is `chromium` on PATH (Debian package `chromium`) or the one named by the
//! environment variable SAGE_CHROMIUM.

use std::cell::RefCell;
use std::collections::{HashMap, VecDeque};
use std::fmt;
use std::fs::File;
use std::io::ErrorKind;
use std::net::TcpStream;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use base64::Engine;
use serde_json::{Value, json};
use tungstenite::protocol::WebSocketConfig;
use tungstenite::{Message, WebSocket};

/// How long one protocol command may take to answer.
pub const COMMAND_TIMEOUT: Duration = Duration::from_secs(20);
/// How long Chromium may take to start, and a page to load.
pub const LOAD_TIMEOUT: Duration = Duration::from_secs(30);

/// What went wrong talking to the browser or in the page.
pub enum CdpError {
    /// The page's JavaScript threw: the exception's text (`Error: message` and its stack).
    Js(String),
    /// A wait ran out of time: what was awaited.
    Timeout(String),
    /// The browser answered a command with an error, or navigation failed.
    Protocol(String),
    /// The connection or a file failed.
    Io(String),
}

impl fmt::Display for CdpError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            CdpError::Js(t) => write!(f, "JavaScript exception: {t}"),
            CdpError::Timeout(t) => write!(f, "timed out: {t}"),
            CdpError::Protocol(t) => write!(f, "DevTools protocol: {t}"),
            CdpError::Io(t) => write!(f, "browser I/O: {t}"),
        }
    }
}

// `unwrap()` shows Debug: make it the readable message.
impl fmt::Debug for CdpError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(self, f)
    }
}

impl std::error::Error for CdpError {}

/// A result of the browser harness.
pub type CdpResult<T> = Result<T, CdpError>;

/// The WebSocket to the browser: replies by command id, events queued by session id.
struct Conn {
    ws: WebSocket<TcpStream>,
    next_id: u64,
    replies: HashMap<u64, Value>,
    events: HashMap<String, VecDeque<Value>>,
}

impl Conn {
    /// Sends a command (to the browser, or to a tab's session) and waits for its reply, queueing
    /// the events that arrive meanwhile.
    fn call(
        &mut self,
        session: Option<&str>,
        method: &str,
        params: Value,
        timeout: Duration,
    ) -> CdpResult<Value> {
        self.next_id += 1;
        let id = self.next_id;
        let mut msg = json!({ "id": id, "method": method, "params": params });
        if let Some(s) = session {
            msg["sessionId"] = json!(s);
        }
        self.ws
            .send(Message::text(msg.to_string()))
            .map_err(|e| CdpError::Io(format!("sending {method}: {e}")))?;
        let deadline = Instant::now() + timeout;
        loop {
            if let Some(mut reply) = self.replies.remove(&id) {
                if let Some(err) = reply.get("error") {
                    return Err(CdpError::Protocol(format!("{method}: {err}")));
                }
                return Ok(reply["result"].take());
            }
            self.read_one(deadline)
                .map_err(|e| with_context(e, &format!("waiting for the reply to {method}")))?;
        }
    }

    /// Reads one message (waiting at most until `deadline`) and files it.
    fn read_one(&mut self, deadline: Instant) -> CdpResult<()> {
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                return Err(CdpError::Timeout("no message from the browser".into()));
            }
            self.ws
                .get_mut()
                .set_read_timeout(Some(left))
                .map_err(|e| CdpError::Io(e.to_string()))?;
            match self.ws.read() {
                Ok(Message::Text(text)) => {
                    let v: Value = serde_json::from_str(text.as_str())
                        .map_err(|e| CdpError::Protocol(format!("bad JSON from browser: {e}")))?;
                    if let Some(id) = v.get("id").and_then(Value::as_u64) {
                        self.replies.insert(id, v);
                    } else if let Some(s) = v.get("sessionId").and_then(Value::as_str) {
                        self.events.entry(s.to_owned()).or_default().push_back(v);
                    } // browser-level events (Target.attachedToTarget, ...): not needed
                    return Ok(());
                }
                Ok(_) => continue, // ping/pong/binary: nothing for us
                Err(tungstenite::Error::Io(e))
                    if matches!(e.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut) =>
                {
                    continue; // the loop re-checks the deadline
                }
                Err(e) => return Err(CdpError::Io(format!("reading from the browser: {e}"))),
            }
        }
    }
}

fn with_context(e: CdpError, what: &str) -> CdpError {
    match e {
        CdpError::Timeout(t) => CdpError::Timeout(format!("{what}: {t}")),
        CdpError::Io(t) => CdpError::Io(format!("{what}: {t}")),
        other => other,
    }
}

/// A headless Chromium with a temporary profile; killed (its whole process group) and the
/// profile removed when dropped, also when a test panics.
pub struct Browser {
    child: Child,
    conn: RefCell<Conn>,
    dir: Option<tempfile::TempDir>,
}

impl Browser {
    /// Starts headless Chromium (`chromium`, or the binary in SAGE_CHROMIUM) and connects to it.
    ///
    /// # Panics
    /// With a message that says what to install when Chromium is missing or does not start: the
    /// browser tests never skip silently.
    pub fn launch() -> Browser {
        let bin = std::env::var("SAGE_CHROMIUM").unwrap_or_else(|_| "chromium".into());
        Self::launch_with(&bin)
    }

    /// Starts the given Chromium binary headless and connects to it.
    ///
    /// # Panics
    /// As [`Browser::launch`].
    pub fn launch_with(bin: &str) -> Browser {
        Self::try_launch(bin).unwrap_or_else(|e| {
            panic!(
                "headless Chromium is needed by the browser tests (Debian package `chromium`, \
                 or set SAGE_CHROMIUM to the binary): {e}"
            )
        })
    }

    fn try_launch(bin: &str) -> Result<Browser, String> {
        let dir = tempfile::Builder::new()
            .prefix("sage-chromium-")
            .tempdir()
            .map_err(|e| format!("temp dir: {e}"))?;
        let profile = dir.path().join("profile");
        let log_path = dir.path().join("chromium.log");
        let log = File::create(&log_path).map_err(|e| format!("{}: {e}", log_path.display()))?;
        let child = Command::new(bin)
            .args([
                "--headless",
                "--no-sandbox",
                "--disable-gpu",
                "--disable-background-networking",
                "--disable-component-update",
                "--disable-default-apps",
                "--disable-sync",
                "--no-first-run",
                "--remote-debugging-port=0",
            ])
            .arg(format!("--user-data-dir={}", profile.display()))
            .arg("about:blank")
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(log)
            .process_group(0) // its renderers and zygote die with it on Drop
            .spawn()
            .map_err(|e| format!("cannot start `{bin}`: {e}"))?;
        // From here on, Drop cleans up whatever fails.
        let mut guard = Launching { child: Some(child) };
        let port_file = profile.join("DevToolsActivePort");
        let deadline = Instant::now() + LOAD_TIMEOUT;
        let (port, path) = loop {
            if let Ok(text) = std::fs::read_to_string(&port_file) {
                let mut lines = text.lines();
                if let (Some(port), Some(path)) = (lines.next(), lines.next()) {
                    break (port.trim().to_owned(), path.trim().to_owned());
                }
            }
            let log_tail = || {
                let log = std::fs::read_to_string(&log_path).unwrap_or_default();
                let lines: Vec<&str> = log.lines().collect();
                lines[lines.len().saturating_sub(15)..].join("\n")
            };
            if let Ok(Some(status)) = guard.child.as_mut().expect("child").try_wait() {
                return Err(format!(
                    "`{bin}` exited ({status}) before listening:\n{}",
                    log_tail()
                ));
            }
            if Instant::now() > deadline {
                return Err(format!(
                    "`{bin}` wrote no {} within {LOAD_TIMEOUT:?}:\n{}",
                    port_file.display(),
                    log_tail()
                ));
            }
            std::thread::sleep(Duration::from_millis(20));
        };
        let stream = TcpStream::connect(format!("127.0.0.1:{port}"))
            .map_err(|e| format!("connecting to DevTools on port {port}: {e}"))?;
        stream.set_nodelay(true).ok();
        stream
            .set_read_timeout(Some(COMMAND_TIMEOUT))
            .map_err(|e| e.to_string())?;
        stream
            .set_write_timeout(Some(COMMAND_TIMEOUT))
            .map_err(|e| e.to_string())?;
        // Full-page screenshots of a long report are large base64 strings.
        let config = WebSocketConfig::default()
            .max_message_size(Some(512 << 20))
            .max_frame_size(None);
        let url = format!("ws://127.0.0.1:{port}{path}");
        let (ws, _) = tungstenite::client::client_with_config(url.as_str(), stream, Some(config))
            .map_err(|e| format!("WebSocket handshake with {url}: {e}"))?;
        Ok(Browser {
            child: guard.child.take().expect("child"),
            conn: RefCell::new(Conn {
                ws,
                next_id: 0,
                replies: HashMap::new(),
                events: HashMap::new(),
            }),
            dir: Some(dir),
        })
    }

    /// Opens a new tab on a file path (made absolute, as a `file://` URL) or a URL (anything
    /// with `://`, `about:`, `data:`), with JavaScript enabled or disabled
    /// (Emulation.setScriptExecutionDisabled before navigating), and waits for its load event.
    /// The tab records console errors and requests from the navigation on.
    pub fn open(&self, path_or_url: impl AsRef<Path>, js_enabled: bool) -> CdpResult<Tab<'_>> {
        let url = to_url(path_or_url.as_ref())?;
        let target = self.call(None, "Target.createTarget", json!({ "url": "about:blank" }))?;
        let target_id = target["targetId"].as_str().unwrap_or_default().to_owned();
        let attached = self.call(
            None,
            "Target.attachToTarget",
            json!({ "targetId": target_id, "flatten": true }),
        )?;
        let session = attached["sessionId"]
            .as_str()
            .ok_or_else(|| {
                CdpError::Protocol(format!("attachToTarget gave no session: {attached}"))
            })?
            .to_owned();
        let tab = Tab {
            browser: self,
            session,
            target_id,
            record: RefCell::new(Record::default()),
        };
        for domain in ["Runtime", "Log", "Network", "Page"] {
            tab.call(&format!("{domain}.enable"), json!({}))?;
        }
        tab.call("Page.setLifecycleEventsEnabled", json!({ "enabled": true }))?;
        // Screenshots show the page, not a scroll bar eating 15 px of its width.
        tab.call("Emulation.setScrollbarsHidden", json!({ "hidden": true }))?;
        if !js_enabled {
            tab.call(
                "Emulation.setScriptExecutionDisabled",
                json!({ "value": true }),
            )?;
        }
        tab.navigate(&url)?;
        Ok(tab)
    }

    /// The process id of Chromium (the leader of its process group).
    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// The temporary folder holding Chromium's profile and its stderr (`chromium.log`).
    pub fn temp_dir(&self) -> &Path {
        self.dir.as_ref().expect("present until drop").path()
    }

    fn call(&self, session: Option<&str>, method: &str, params: Value) -> CdpResult<Value> {
        self.conn
            .borrow_mut()
            .call(session, method, params, COMMAND_TIMEOUT)
    }
}

/// Kills a Chromium that failed to start properly.
struct Launching {
    child: Option<Child>,
}

impl Drop for Launching {
    fn drop(&mut self) {
        if let Some(child) = &mut self.child {
            kill_group(child);
        }
    }
}

/// Kills Chromium's whole process group and waits (up to 5 s) until none of it is left, so
/// nothing writes into the profile while it is removed.
fn kill_group(child: &mut Child) {
    let group = -(child.id() as libc::pid_t);
    // SAFETY: kill(2) on the process group this harness created for the child (process_group(0)).
    unsafe { libc::kill(group, libc::SIGKILL) };
    let _ = child.kill();
    let _ = child.wait();
    let deadline = Instant::now() + Duration::from_secs(5);
    // SAFETY: signal 0 only asks whether a process of the group still exists.
    while unsafe { libc::kill(group, 0) } == 0 && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(10));
    }
}

impl Drop for Browser {
    fn drop(&mut self) {
        kill_group(&mut self.child);
        if let Some(dir) = self.dir.take() {
            let _ = dir.close();
        }
    }
}

fn to_url(p: &Path) -> CdpResult<String> {
    let s = p.to_string_lossy();
    if s.contains("://") || s.starts_with("about:") || s.starts_with("data:") {
        return Ok(s.into_owned());
    }
    let abs =
        std::fs::canonicalize(p).map_err(|e| CdpError::Io(format!("{}: {e}", p.display())))?;
    let mut url = String::from("file://");
    for b in abs.to_string_lossy().bytes() {
        if b.is_ascii_alphanumeric() || b"/-_.~".contains(&b) {
            url.push(b as char);
        } else {
            url.push_str(&format!("%{b:02X}"));
        }
    }
    Ok(url)
}

/// What a tab saw since its navigation.
#[derive(Default)]
struct Record {
    console_errors: Vec<String>,
    requests: Vec<String>,
    /// requestId → URL, to name failed requests.
    request_urls: HashMap<String, String>,
    failed: Vec<(String, String)>,
    /// Loader ids whose `load` lifecycle event fired.
    loaded: Vec<String>,
}

/// One page in the browser. Closed when dropped.
pub struct Tab<'b> {
    browser: &'b Browser,
    session: String,
    target_id: String,
    record: RefCell<Record>,
}

impl Tab<'_> {
    fn call(&self, method: &str, params: Value) -> CdpResult<Value> {
        let r = self.browser.call(Some(&self.session), method, params);
        self.fold_events();
        r
    }

    /// Moves this tab's queued events into its record.
    fn fold_events(&self) {
        let queued: Vec<Value> = {
            let mut conn = self.browser.conn.borrow_mut();
            match conn.events.get_mut(&self.session) {
                Some(q) => q.drain(..).collect(),
                None => return,
            }
        };
        let mut rec = self.record.borrow_mut();
        for ev in queued {
            let p = &ev["params"];
            match ev["method"].as_str().unwrap_or_default() {
                "Runtime.consoleAPICalled" => {
                    let kind = p["type"].as_str().unwrap_or_default();
                    if kind == "error" || kind == "assert" {
                        let args: Vec<String> = p["args"]
                            .as_array()
                            .map(|a| a.iter().map(remote_object_text).collect())
                            .unwrap_or_default();
                        rec.console_errors
                            .push(format!("console.{kind}: {}", args.join(" ")));
                    }
                }
                "Runtime.exceptionThrown" => {
                    let d = &p["exceptionDetails"];
                    let text = d["exception"]["description"]
                        .as_str()
                        .or(d["text"].as_str())
                        .unwrap_or("?");
                    rec.console_errors.push(format!("uncaught: {text}"));
                }
                "Log.entryAdded" => {
                    let e = &p["entry"];
                    if e["level"] == "error" {
                        let mut text = format!(
                            "log.{}: {}",
                            e["source"].as_str().unwrap_or("?"),
                            e["text"].as_str().unwrap_or("?")
                        );
                        if let Some(url) = e["url"].as_str() {
                            text.push_str(&format!(" ({url})"));
                        }
                        rec.console_errors.push(text);
                    }
                }
                "Network.requestWillBeSent" => {
                    let url = p["request"]["url"].as_str().unwrap_or_default().to_owned();
                    if let Some(id) = p["requestId"].as_str() {
                        rec.request_urls.insert(id.to_owned(), url.clone());
                    }
                    rec.requests.push(url);
                }
                "Network.loadingFailed" => {
                    let id = p["requestId"].as_str().unwrap_or_default();
                    let url = rec.request_urls.get(id).cloned().unwrap_or_default();
                    let mut why: Vec<String> = p["errorText"]
                        .as_str()
                        .filter(|t| !t.is_empty())
                        .map(str::to_owned)
                        .into_iter()
                        .collect();
                    if let Some(blocked) = p["blockedReason"].as_str() {
                        why.push(format!("blocked: {blocked}"));
                    }
                    let why = why.join(", ");
                    rec.failed.push((url, why));
                }
                "Page.lifecycleEvent" if p["name"] == "load" => {
                    rec.loaded
                        .push(p["loaderId"].as_str().unwrap_or_default().to_owned());
                }
                _ => {}
            }
        }
    }

    /// Waits (bounded) until `done` holds on the record, reading events meanwhile.
    fn wait_record(
        &self,
        what: &str,
        timeout: Duration,
        done: impl Fn(&Record) -> bool,
    ) -> CdpResult<()> {
        let deadline = Instant::now() + timeout;
        loop {
            self.fold_events();
            if done(&self.record.borrow()) {
                return Ok(());
            }
            self.browser
                .conn
                .borrow_mut()
                .read_one(deadline)
                .map_err(|e| with_context(e, what))?;
        }
    }

    /// Navigates this tab to a path or URL and waits for its load event; the record (console
    /// errors, requests) starts afresh.
    pub fn navigate(&self, path_or_url: impl AsRef<Path>) -> CdpResult<()> {
        let url = to_url(path_or_url.as_ref())?;
        *self.record.borrow_mut() = Record::default();
        let nav = self.call("Page.navigate", json!({ "url": url }))?;
        if let Some(err) = nav["errorText"].as_str().filter(|e| !e.is_empty()) {
            return Err(CdpError::Protocol(format!("navigating to {url}: {err}")));
        }
        match nav["loaderId"].as_str() {
            Some(loader) => {
                let loader = loader.to_owned();
                self.wait_record(&format!("loading {url}"), LOAD_TIMEOUT, |r| {
                    r.loaded.contains(&loader)
                })
            }
            // A same-document navigation (only the fragment changed): nothing to load.
            None => Ok(()),
        }
    }

    /// Evaluates a JavaScript expression in the page (promises awaited) and returns its value as
    /// JSON (`undefined` → null; DOM nodes → `{}`). Runs even when the page's own scripts are
    /// disabled. A thrown exception is `Err(CdpError::Js(text))`.
    pub fn eval(&self, js: &str) -> CdpResult<Value> {
        let mut r = self.call(
            "Runtime.evaluate",
            json!({
                "expression": js,
                "awaitPromise": true,
                "returnByValue": true,
                "userGesture": true,
            }),
        )?;
        if let Some(d) = r.get("exceptionDetails") {
            let text = d["exception"]["description"]
                .as_str()
                .or(d["exception"]["value"].as_str())
                .or(d["text"].as_str())
                .unwrap_or("exception")
                .to_owned();
            return Err(CdpError::Js(text));
        }
        Ok(r["result"]["value"].take())
    }

    /// Polls `js_condition` every 50 ms until it is truthy; Err(Timeout) with its last value or
    /// exception when `timeout` runs out.
    pub fn wait_for(&self, js_condition: &str, timeout: Duration) -> CdpResult<()> {
        let deadline = Instant::now() + timeout;
        loop {
            let last = match self.eval(js_condition) {
                Ok(v) if truthy(&v) => return Ok(()),
                Ok(v) => format!("last value {v}"),
                Err(CdpError::Js(t)) => format!("last exception {t}"),
                Err(e) => return Err(e),
            };
            if Instant::now() >= deadline {
                return Err(CdpError::Timeout(format!(
                    "`{js_condition}` not true within {timeout:?} ({last})"
                )));
            }
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    /// Clicks the first element matching a CSS selector as a user would: scrolled into view,
    /// mouse pressed and released at its centre (so it also follows links and toggles
    /// `<details>` with scripts disabled). Err when nothing matches or it has no size.
    pub fn click(&self, selector: &str) -> CdpResult<()> {
        let sel = serde_json::to_string(selector).expect("a string serializes");
        let rect = self.eval(&format!(
            "(() => {{ const e = document.querySelector({sel}); if (!e) return null; \
             e.scrollIntoView({{block: 'center', inline: 'center'}}); \
             const r = e.getBoundingClientRect(); \
             return {{x: r.left + r.width / 2, y: r.top + r.height / 2, w: r.width, h: r.height}}; }})()"
        ))?;
        if rect.is_null() {
            return Err(CdpError::Js(format!(
                "click: no element matches {selector}"
            )));
        }
        if rect["w"].as_f64() == Some(0.0) || rect["h"].as_f64() == Some(0.0) {
            return Err(CdpError::Js(format!(
                "click: {selector} has no size (hidden?)"
            )));
        }
        let (x, y) = (rect["x"].clone(), rect["y"].clone());
        for kind in ["mousePressed", "mouseReleased"] {
            self.call(
                "Input.dispatchMouseEvent",
                json!({ "type": kind, "x": x, "y": y, "button": "left", "clickCount": 1 }),
            )?;
        }
        Ok(())
    }

    /// Every console error so far: `console.error: …`, `console.assert: …`,
    /// `uncaught: <exception>`, `log.<source>: <text> (<url>)` (failed loads, CSP violations).
    /// A round trip to the page first, so whatever it reported before this call is included.
    pub fn console_errors(&self) -> CdpResult<Vec<String>> {
        self.sync()?;
        Ok(self.record.borrow().console_errors.clone())
    }

    /// The URL of every request the page made since navigation, in order, the document itself
    /// first (Network.requestWillBeSent).
    pub fn requests(&self) -> CdpResult<Vec<String>> {
        self.sync()?;
        Ok(self.record.borrow().requests.clone())
    }

    /// The requests that failed (Network.loadingFailed): (URL, why) where why is the error text
    /// (`net::ERR_CONNECTION_REFUSED`) and/or `blocked: <reason>` (`blocked: csp`), joined by
    /// ", ".
    pub fn failed_requests(&self) -> CdpResult<Vec<(String, String)>> {
        self.sync()?;
        Ok(self.record.borrow().failed.clone())
    }

    /// A round trip in this session: the events sent before its reply are then queued.
    fn sync(&self) -> CdpResult<()> {
        self.call("Runtime.evaluate", json!({ "expression": "0" }))
            .map(drop)
    }

    /// Writes a PNG of the whole page (`None`) or of the element a selector matches, clipped to
    /// its bounding box; parent folders are created.
    pub fn screenshot(&self, path: &Path, selector: Option<&str>) -> CdpResult<()> {
        // A tab in the background paints no frame, and Chromium would wait for one.
        self.call("Page.bringToFront", json!({}))?;
        let clip = match selector {
            Some(sel) => {
                let s = serde_json::to_string(sel).expect("a string serializes");
                self.eval(&format!(
                    "(() => {{ const e = document.querySelector({s}); if (!e) return null; \
                     const r = e.getBoundingClientRect(); \
                     return {{x: r.left + scrollX, y: r.top + scrollY, width: r.width, height: r.height}}; }})()"
                ))?
            }
            None => {
                let m = self.call("Page.getLayoutMetrics", json!({}))?;
                let size = &m["cssContentSize"];
                json!({ "x": 0, "y": 0, "width": size["width"], "height": size["height"] })
            }
        };
        if clip.is_null() {
            return Err(CdpError::Js(format!(
                "screenshot: no element matches {}",
                selector.unwrap_or_default()
            )));
        }
        let mut clip = clip;
        clip["scale"] = json!(1);
        let shot = self.call(
            "Page.captureScreenshot",
            json!({ "format": "png", "clip": clip, "captureBeyondViewport": true }),
        )?;
        let png = base64::engine::general_purpose::STANDARD
            .decode(shot["data"].as_str().unwrap_or_default())
            .map_err(|e| CdpError::Protocol(format!("screenshot data: {e}")))?;
        if let Some(parent) = path.parent().filter(|p| !p.as_os_str().is_empty()) {
            std::fs::create_dir_all(parent)
                .map_err(|e| CdpError::Io(format!("{}: {e}", parent.display())))?;
        }
        std::fs::write(path, png).map_err(|e| CdpError::Io(format!("{}: {e}", path.display())))
    }

    /// A PNG of what the window shows now (the viewport at its scroll position, sticky
    /// elements where a reader sees them), written to `path`.
    pub fn screenshot_viewport(&self, path: &Path) -> CdpResult<()> {
        self.call("Page.bringToFront", json!({}))?;
        let shot = self.call(
            "Page.captureScreenshot",
            json!({ "format": "png", "captureBeyondViewport": false }),
        )?;
        let png = base64::engine::general_purpose::STANDARD
            .decode(shot["data"].as_str().unwrap_or_default())
            .map_err(|e| CdpError::Protocol(format!("screenshot data: {e}")))?;
        if let Some(parent) = path.parent().filter(|p| !p.as_os_str().is_empty()) {
            std::fs::create_dir_all(parent)
                .map_err(|e| CdpError::Io(format!("{}: {e}", parent.display())))?;
        }
        std::fs::write(path, png).map_err(|e| CdpError::Io(format!("{}: {e}", path.display())))
    }

    /// Sets the viewport to `width` × `height` CSS pixels (device scale 1, not mobile).
    pub fn set_viewport(&self, width: u32, height: u32) -> CdpResult<()> {
        self.call(
            "Emulation.setDeviceMetricsOverride",
            json!({ "width": width, "height": height, "deviceScaleFactor": 1, "mobile": false }),
        )
        .map(drop)
    }
}

impl Drop for Tab<'_> {
    fn drop(&mut self) {
        let _ = self.browser.call(
            None,
            "Target.closeTarget",
            json!({ "targetId": self.target_id }),
        );
        self.browser.conn.borrow_mut().events.remove(&self.session);
    }
}

/// JavaScript truthiness of a JSON value.
fn truthy(v: &Value) -> bool {
    match v {
        Value::Null => false,
        Value::Bool(b) => *b,
        Value::Number(n) => n.as_f64().is_some_and(|f| f != 0.0 && !f.is_nan()),
        Value::String(s) => !s.is_empty(),
        Value::Array(_) | Value::Object(_) => true,
    }
}

/// A console argument as text: its value, or its description (objects, errors).
fn remote_object_text(o: &Value) -> String {
    match (&o["value"], o["description"].as_str()) {
        (Value::String(s), _) => s.clone(),
        (Value::Null, Some(d)) => d.to_owned(),
        (Value::Null, None) => o["type"].as_str().unwrap_or("undefined").to_owned(),
        (v, _) => v.to_string(),
    }
}

/// Where the browser tests write their screenshots: SAGE_SCREENSHOTS, else
/// `target/browser-screenshots`.
pub fn screenshot_dir() -> PathBuf {
    std::env::var_os("SAGE_SCREENSHOTS")
        .map(PathBuf::from)
        .unwrap_or_else(|| Path::new(env!("CARGO_MANIFEST_DIR")).join("target/browser-screenshots"))
}

/// The page did nothing it should not: no console error, no request beyond the file itself
/// (data: URLs are decoded in place, not fetched).
pub fn assert_offline(tab: &Tab<'_>, file: &Path) {
    let errors = tab.console_errors().expect("console");
    assert!(errors.is_empty(), "console errors: {errors:?}");
    let own = format!("file://{}", file.canonicalize().expect("file").display());
    let requests = tab.requests().expect("requests");
    let foreign: Vec<&String> = requests
        .iter()
        .filter(|u| !u.starts_with(&own) && !u.starts_with("data:"))
        .collect();
    assert!(foreign.is_empty(), "requests beyond the file: {foreign:?}");
    assert!(
        requests.iter().any(|u| u.starts_with(&own)),
        "the file itself was not loaded: {requests:?}"
    );
}

/// The page's width against the window's, and what sticks out (the outermost elements wider
/// than the window whose parent is not), with every `details` opened.
const PAGE_WIDTH: &str = r#"
(() => {
  document.querySelectorAll('details').forEach(d => d.open = true);
  const W = innerWidth, out = [];
  for (const e of document.querySelectorAll('body *')) {
    const r = e.getBoundingClientRect(), p = e.parentElement.getBoundingClientRect();
    if (r.right > W + 1 && p.right <= W + 1) out.push(e.tagName + '.' + e.className + ' ' + Math.round(r.right));
  }
  return {page: document.documentElement.scrollWidth, window: W, out: out.slice(0, 8)};
})()
"#;

/// Asserts that the page is no wider than the window, every `details` opened (`when`: what is
/// open); names what sticks out when it is.
pub fn assert_fits(tab: &Tab<'_>, when: &str) {
    let w = tab.eval(PAGE_WIDTH).expect("width");
    assert!(
        w["page"].as_f64() <= w["window"].as_f64(),
        "{when}: the page is wider than the window: {w}"
    );
}

/// Opens a report page at `width` x 900, scripts on, once its explorer (`div#ROOT`) is ready.
pub fn open_report<'b>(browser: &'b Browser, page: &Path, width: u32, root: &str) -> Tab<'b> {
    let tab = browser.open(page, true).expect("open");
    tab.set_viewport(width, 900).expect("viewport");
    tab.wait_for(
        &format!("document.querySelector('div#{root}')?.dataset.ready !== undefined"),
        Duration::from_secs(30),
    )
    .expect("the explorer is ready");
    tab
}
