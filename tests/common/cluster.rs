//! Real processes for the distributed-mode tests: a `nats-server` with JetStream on a free port
//! and a temporary store (which a test can kill and start again), `sage` processes with their
//! logs in the test's folder, a Prometheus server scraping them, and a minimal HTTP GET for
//! their /metrics and Prometheus's API. Every process is killed when its handle drops.

use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// A temporary folder for a test's stores and logs; kept (and its path printed) when the
/// variable SAGE_KEEP_TEST_DIRS is set, to read the logs of a failed run.
pub fn test_dir() -> tempfile::TempDir {
    let mut dir = tempfile::tempdir().expect("temp dir");
    if std::env::var_os("SAGE_KEEP_TEST_DIRS").is_some() {
        dir.disable_cleanup(true);
        eprintln!("test folder kept: {}", dir.path().display());
    }
    dir
}

/// A port nothing listens on right now.
pub fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .expect("a free port")
}

fn wait_for_port(port: u16, within: Duration) -> bool {
    let started = Instant::now();
    while started.elapsed() < within {
        if TcpStream::connect(("127.0.0.1", port)).is_ok() {
            return true;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    false
}

/// A nats-server with JetStream.
pub struct Nats {
    /// Its client port.
    pub port: u16,
    extra: Vec<String>,
    store: PathBuf,
    log: PathBuf,
    child: Option<Child>,
}

impl Nats {
    /// Starts one on a free port, storing under `dir`.
    pub fn start(dir: &Path) -> Nats {
        Nats::start_with(dir, &[])
    }

    /// Starts one with extra command-line options (authentication, TLS).
    pub fn start_with(dir: &Path, extra: &[&str]) -> Nats {
        Nats::start_on(dir, free_port(), extra)
    }

    /// Starts one on `port` if it can (else on another free port), with extra options.
    pub fn start_on(dir: &Path, port: u16, extra: &[&str]) -> Nats {
        let mut nats = Nats {
            port,
            extra: extra.iter().map(|s| s.to_string()).collect(),
            store: dir.join("jetstream"),
            log: dir.join("nats-server.log"),
            child: None,
        };
        nats.spawn();
        nats
    }

    /// Starts the server and waits until it says it listens on its port. A port another
    /// process took meanwhile (a free port is only free when it was asked for) makes it exit:
    /// a first start then tries another port, a restart (same port) tries again a few times.
    /// Only its own "listening" line counts: something else on the port would answer a mere
    /// connection.
    fn spawn(&mut self) {
        let first = self.child.is_none() && !self.store.exists();
        for attempt in 0..5 {
            if attempt > 0 {
                if first {
                    self.port = free_port();
                } else {
                    std::thread::sleep(Duration::from_secs(1));
                }
            }
            if self.spawn_once() {
                return;
            }
        }
        panic!(
            "nats-server did not listen on {} (log: {})",
            self.port,
            self.log.display()
        );
    }

    /// One start: true once it listens, false when it exited first.
    fn spawn_once(&mut self) -> bool {
        let log = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(&self.log)
            .expect("nats log");
        let mut child = Command::new("nats-server")
            .args(["-js", "-a", "127.0.0.1", "-p"])
            .arg(self.port.to_string())
            .arg("-sd")
            .arg(&self.store)
            .args(&self.extra)
            .stdout(Stdio::null())
            .stderr(log)
            .spawn()
            .unwrap_or_else(|e| {
                panic!("cannot start nats-server ({e}): it must be on PATH (Debian: apt-get install nats-server)")
            });
        // `[PID] DATE TIME [INF] Listening for client connections on 127.0.0.1:PORT`
        let ours = format!("[{}] ", child.id());
        let listening = format!(
            "Listening for client connections on 127.0.0.1:{}",
            self.port
        );
        let started = Instant::now();
        while started.elapsed() < Duration::from_secs(15) {
            if let Ok(Some(_)) = child.try_wait() {
                return false;
            }
            let said = std::fs::read_to_string(&self.log).is_ok_and(|log| {
                log.lines()
                    .any(|l| l.starts_with(&ours) && l.ends_with(&listening))
            });
            if said && wait_for_port(self.port, Duration::from_secs(5)) {
                self.child = Some(child);
                return true;
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        let _ = child.kill();
        let _ = child.wait();
        false
    }

    /// Its process id, while it runs.
    pub fn pid(&self) -> Option<u32> {
        self.child.as_ref().map(|c| c.id())
    }

    /// Its URL.
    pub fn url(&self) -> String {
        format!("nats://127.0.0.1:{}", self.port)
    }

    /// Kills it (SIGKILL) and waits for it to go.
    pub fn kill(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }

    /// Kills it and starts it again on the same port with the same store.
    pub fn restart(&mut self) {
        self.kill();
        self.spawn();
    }
}

impl Drop for Nats {
    fn drop(&mut self) {
        self.kill();
    }
}

/// A `sage` process.
pub struct Sage {
    /// Its name in the test (and its log file's).
    pub name: String,
    /// Its log (standard error).
    pub log: PathBuf,
    child: Option<Child>,
}

impl Sage {
    /// Starts `sage ARGS` in the repository root, logging to `dir/NAME.log`.
    pub fn spawn(dir: &Path, name: &str, args: &[&str]) -> Sage {
        Sage::spawn_with_env(dir, name, args, &[])
    }

    /// `n` workers `worker-1`.. with every role, each playing at most `concurrency` dialogues,
    /// on `nats`, their metrics on a free port, with extra environment variables.
    pub fn workers(
        dir: &Path,
        nats: &str,
        n: usize,
        concurrency: usize,
        env: &[(&str, &str)],
    ) -> Vec<Sage> {
        let concurrency = concurrency.to_string();
        (1..=n)
            .map(|i| {
                let args = [
                    "worker",
                    "--nats",
                    nats,
                    "--metrics-addr",
                    "127.0.0.1:0",
                    "--concurrency",
                    &concurrency,
                ];
                Sage::spawn_with_env(dir, &format!("worker-{i}"), &args, env)
            })
            .collect()
    }

    /// [`Sage::spawn`] with extra environment variables.
    pub fn spawn_with_env(dir: &Path, name: &str, args: &[&str], env: &[(&str, &str)]) -> Sage {
        Sage::spawn_limited(dir, name, args, env, None)
    }

    /// [`Sage::spawn_with_env`], and with `file_size_limit` no file the process writes can grow
    /// past that many bytes (RLIMIT_FSIZE, SIGXFSZ ignored: a write there fails with EFBIG, as
    /// on a full disk).
    pub fn spawn_limited(
        dir: &Path,
        name: &str,
        args: &[&str],
        env: &[(&str, &str)],
        file_size_limit: Option<u64>,
    ) -> Sage {
        use std::os::unix::process::CommandExt;
        let log = dir.join(format!("{name}.log"));
        let file = std::fs::File::create(&log).expect("log file");
        let mut command = Command::new(env!("CARGO_BIN_EXE_sage"));
        command
            .args(args)
            .current_dir(env!("CARGO_MANIFEST_DIR"))
            .env("RUST_LOG", "info")
            .envs(env.iter().copied())
            .stdout(Stdio::null())
            .stderr(file);
        if let Some(limit) = file_size_limit {
            // Safety: only async-signal-safe calls between fork and exec.
            unsafe {
                command.pre_exec(move || {
                    let rlimit = libc::rlimit {
                        rlim_cur: limit,
                        rlim_max: limit,
                    };
                    if libc::setrlimit(libc::RLIMIT_FSIZE, &rlimit) != 0 {
                        return Err(std::io::Error::last_os_error());
                    }
                    libc::signal(libc::SIGXFSZ, libc::SIG_IGN);
                    Ok(())
                });
            }
        }
        let child = command.spawn().expect("sage starts");
        Sage {
            name: name.to_string(),
            log,
            child: Some(child),
        }
    }

    /// The roles split over two workers, every request through the broker (`--remote-roles`):
    /// `driver` plays the jobs and serves the agents under test (`dialogue,service`), `roles`
    /// answers the customer and the judges (`user,judge`). `args` go to both (at least
    /// `--nats URL`), `driver_args` to the driver alone.
    pub fn split_workers(dir: &Path, args: &[&str], driver_args: &[&str]) -> [Sage; 2] {
        let spawn = |name: &str, roles: &str, extra: &[&str]| {
            let mut all = vec!["worker", "--roles", roles, "--remote-roles"];
            all.extend_from_slice(extra);
            all.extend_from_slice(args);
            Sage::spawn(dir, name, &all)
        };
        [
            spawn("driver", "dialogue,service", driver_args),
            spawn("roles", "user,judge", &[]),
        ]
    }

    /// Starts `sage worker ARGS` (ARGS: at least `--nats URL`), logging to `dir/worker.log`.
    pub fn worker(dir: &Path, args: &[&str]) -> Sage {
        let mut all = vec!["worker"];
        all.extend(args);
        Sage::spawn(dir, "worker", &all)
    }

    /// Starts `sage aggregator --out OUT ARGS` (ARGS: at least `--nats URL`), logging to
    /// `dir/aggregator.log`.
    pub fn aggregator(dir: &Path, out: &Path, args: &[&str]) -> Sage {
        Sage::aggregator_with_env(dir, "aggregator", out, args, &[])
    }

    /// [`Sage::aggregator`] named `name` (its log `dir/NAME.log`) with extra environment
    /// variables.
    pub fn aggregator_with_env(
        dir: &Path,
        name: &str,
        out: &Path,
        args: &[&str],
        env: &[(&str, &str)],
    ) -> Sage {
        let out = out.display().to_string();
        let mut all = vec!["aggregator", "--out", out.as_str()];
        all.extend(args);
        Sage::spawn_with_env(dir, name, &all, env)
    }

    /// Its log so far.
    pub fn log_text(&self) -> String {
        std::fs::read_to_string(&self.log).unwrap_or_default()
    }

    /// The address of its /metrics, once it printed it.
    pub fn metrics_addr(&self) -> String {
        let started = Instant::now();
        while started.elapsed() < Duration::from_secs(30) {
            if let Some(line) = self
                .log_text()
                .lines()
                .find_map(|l| l.strip_prefix("metrics: http://"))
            {
                return line.trim_end_matches("/metrics").to_string();
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        panic!(
            "{} printed no metrics address:\n{}",
            self.name,
            self.log_text()
        );
    }

    /// Its process id, while it runs.
    pub fn pid(&self) -> Option<u32> {
        self.child.as_ref().map(|c| c.id())
    }

    /// Whether it still runs.
    pub fn running(&mut self) -> bool {
        matches!(self.child.as_mut().map(|c| c.try_wait()), Some(Ok(None)))
    }

    /// Kills it with SIGKILL.
    pub fn kill(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }

    /// Sends SIGTERM and waits up to `within` for it to exit; its exit code.
    pub fn terminate(&mut self, within: Duration) -> Option<i32> {
        unsafe {
            libc::kill(self.pid()? as i32, libc::SIGTERM);
        }
        self.wait(within)
    }

    /// Waits up to `within` for it to exit (killing it after that); its exit code.
    pub fn wait(&mut self, within: Duration) -> Option<i32> {
        let mut child = self.child.take()?;
        let started = Instant::now();
        while started.elapsed() < within {
            if let Ok(Some(status)) = child.try_wait() {
                return status.code();
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        let _ = child.kill();
        let _ = child.wait();
        None
    }
}

impl Drop for Sage {
    /// Kills the process; when the test is failing, prints the end of its log first (CI keeps
    /// no test folders, so this is what tells a hang from a crash).
    fn drop(&mut self) {
        self.kill();
        if std::thread::panicking() {
            let log = self.log_text();
            let lines: Vec<&str> = log.lines().collect();
            let tail = lines[lines.len().saturating_sub(40)..].join("\n");
            eprintln!(
                "--- the last lines of {} ({}):\n{tail}",
                self.name,
                self.log.display()
            );
        }
    }
}

/// `GET http://ADDR/PATH`: the status code and the body.
pub fn http_get(addr: &str, path: &str) -> (u16, String) {
    let mut stream = TcpStream::connect(addr).expect("connect");
    stream
        .set_read_timeout(Some(Duration::from_secs(10)))
        .expect("timeout");
    write!(
        stream,
        "GET {path} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n\r\n"
    )
    .expect("request");
    // Bytes first: a chunked body's framing may fall inside a character, so the body is
    // only text once it is joined again.
    let mut response = Vec::new();
    stream.read_to_end(&mut response).expect("response");
    let split = response
        .windows(4)
        .position(|w| w == b"\r\n\r\n")
        .map_or(response.len(), |i| i + 4);
    let head = String::from_utf8_lossy(&response[..split]).into_owned();
    let body = &response[split..];
    let status = head
        .split_whitespace()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .expect("a status line");
    let chunked = head
        .to_ascii_lowercase()
        .contains("transfer-encoding: chunked");
    let body = if chunked {
        dechunk(body)
    } else {
        body.to_vec()
    };
    (status, String::from_utf8(body).expect("a UTF-8 body"))
}

/// The body of a chunked HTTP/1.1 response (chunk sizes in hexadecimal, each on its line).
fn dechunk(mut body: &[u8]) -> Vec<u8> {
    let mut out = Vec::new();
    while let Some(end) = body.windows(2).position(|w| w == b"\r\n") {
        let size = std::str::from_utf8(&body[..end]).expect("a chunk size");
        let size = usize::from_str_radix(size.trim(), 16).expect("a chunk size");
        if size == 0 {
            break;
        }
        let rest = &body[end + 2..];
        out.extend_from_slice(&rest[..size]);
        body = rest[size..].strip_prefix(b"\r\n").unwrap_or(&rest[size..]);
    }
    out
}

/// Percent-encodes a URL query value.
pub fn url_encode(text: &str) -> String {
    text.bytes()
        .map(|b| match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' | b'~' => {
                (b as char).to_string()
            }
            _ => format!("%{b:02X}"),
        })
        .collect()
}

/// A Prometheus server (Debian package `prometheus`) on a free port, scraping every second and
/// evaluating its rules every second, with its storage and log under the test's folder.
pub struct Prometheus {
    /// Its address (`127.0.0.1:PORT`).
    pub addr: String,
    log: PathBuf,
    child: Option<Child>,
}

impl Prometheus {
    /// Starts one scraping the `/metrics` of each job's targets (`HOST:PORT`), loading the rule
    /// files `rules`; waits until it is ready.
    pub fn start(dir: &Path, jobs: &[(&str, Vec<String>)], rules: &[PathBuf]) -> Prometheus {
        let scrape: Vec<serde_json::Value> = jobs
            .iter()
            .map(|(job, targets)| {
                serde_json::json!({"job_name": job, "static_configs": [{"targets": targets}]})
            })
            .collect();
        // JSON is YAML.
        let config = serde_json::json!({
            "global": {"scrape_interval": "1s", "scrape_timeout": "1s", "evaluation_interval": "1s"},
            "rule_files": rules,
            "scrape_configs": scrape,
        });
        let config_file = dir.join("prometheus.yml");
        std::fs::write(&config_file, config.to_string()).expect("prometheus.yml");
        let port = free_port();
        let log = dir.join("prometheus.log");
        let child = Command::new("prometheus")
            .arg(format!("--config.file={}", config_file.display()))
            .arg(format!(
                "--storage.tsdb.path={}",
                dir.join("prometheus-data").display()
            ))
            .arg(format!("--web.listen-address=127.0.0.1:{port}"))
            .stdout(Stdio::null())
            .stderr(std::fs::File::create(&log).expect("prometheus log"))
            .spawn()
            .unwrap_or_else(|e| {
                panic!("cannot start prometheus ({e}): it must be on PATH (Debian: apt-get install prometheus)")
            });
        let prometheus = Prometheus {
            addr: format!("127.0.0.1:{port}"),
            log,
            child: Some(child),
        };
        let started = Instant::now();
        while !(wait_for_port(port, Duration::from_millis(100))
            && http_get(&prometheus.addr, "/-/ready").0 == 200)
        {
            assert!(
                started.elapsed() < Duration::from_secs(30),
                "prometheus not ready on {port}: {}",
                std::fs::read_to_string(&prometheus.log).unwrap_or_default()
            );
            std::thread::sleep(Duration::from_millis(100));
        }
        prometheus
    }

    /// Its URL.
    pub fn url(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// `GET /api/v1/PATH`: the answer's `data` (panics on an error answer).
    pub fn api(&self, path: &str) -> serde_json::Value {
        let (code, body) = http_get(&self.addr, &format!("/api/v1/{path}"));
        let answer: serde_json::Value = serde_json::from_str(&body)
            .unwrap_or_else(|e| panic!("GET /api/v1/{path}: {e}: {body}"));
        assert!(
            code == 200 && answer["status"] == "success",
            "GET /api/v1/{path}: {code} {answer}"
        );
        answer["data"].clone()
    }

    /// Polls the instant query `query` until its first sample's value satisfies `done` or
    /// `within` passes (panics then); that value.
    pub fn wait_for(&self, query: &str, within: Duration, done: impl Fn(f64) -> bool) -> f64 {
        let started = Instant::now();
        let mut last = None;
        while started.elapsed() < within {
            let data = self.api(&format!("query?query={}", url_encode(query)));
            last = data["result"][0]["value"][1]
                .as_str()
                .and_then(|v| v.parse().ok());
            if last.is_some_and(&done) {
                return last.expect("a value");
            }
            std::thread::sleep(Duration::from_millis(250));
        }
        panic!("{query} did not get there within {within:?}; last value: {last:?}");
    }
}

impl Drop for Prometheus {
    fn drop(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

/// Polls `sage status --json RUN` until `done` holds for the run's status or `within` passes.
pub fn wait_status(
    url: &str,
    run: &str,
    within: Duration,
    done: impl Fn(&serde_json::Value) -> bool,
) -> serde_json::Value {
    let started = Instant::now();
    let mut last = serde_json::Value::Null;
    while started.elapsed() < within {
        let out = Command::new(env!("CARGO_BIN_EXE_sage"))
            .args([
                "status",
                "--nats",
                url,
                "--json",
                "--nats-connect-secs",
                "1",
                run,
            ])
            .current_dir(env!("CARGO_MANIFEST_DIR"))
            .output()
            .expect("sage status runs");
        if out.status.success()
            && let Ok(v) = serde_json::from_slice::<serde_json::Value>(&out.stdout)
        {
            last = v[0].clone();
            if done(&last) {
                return last;
            }
        }
        std::thread::sleep(Duration::from_millis(200));
    }
    panic!("run {run} did not get there within {within:?}; last status: {last}");
}

/// Runs `promtool check metrics` on an exposition; panics with its findings if it objects.
pub fn promtool_check(exposition: &str) {
    let mut child = Command::new("promtool")
        .args(["check", "metrics"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap_or_else(|e| {
            panic!(
                "cannot run promtool ({e}): it must be on PATH (Debian: apt-get install prometheus)"
            )
        });
    child
        .stdin
        .take()
        .expect("stdin")
        .write_all(exposition.as_bytes())
        .expect("promtool input");
    let out = child.wait_with_output().expect("promtool output");
    assert!(
        out.status.success(),
        "promtool check metrics: {}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
}
