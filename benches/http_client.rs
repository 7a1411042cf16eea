//! Client cost of one model call through [`Endpoint`] with the OpenAI backend, against a local
//! server that answers instantly over pooled keep-alive connections.
//!
//! Two measurements:
//! - criterion: wall time per call (client and server share the machine, so this includes the
//!   server's work and the loopback round trip);
//! - CPU time of the client alone over N sequential calls, from `getrusage(RUSAGE_THREAD)` on
//!   the thread running the client's single-threaded tokio runtime (reqwest's connection task
//!   runs there too), cross-checked with the process's CPU minus the server threads'.
//!   Goal: at most 115 µs of client CPU per call.
//!
//! Run: `cargo bench --bench http_client` (add `-- --quick` for a shorter criterion run).

use criterion::Criterion;
use sage::llm::{ChatMessage, ChatRequest, ChatRole, Endpoint, ModelConfig, Provider};
use std::hint::black_box;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// CPU time (user + system) of the calling thread, or of the process, in microseconds.
fn cpu_us(thread: bool) -> u64 {
    #[cfg(target_os = "linux")]
    let who = if thread {
        libc::RUSAGE_THREAD
    } else {
        libc::RUSAGE_SELF
    };
    #[cfg(not(target_os = "linux"))]
    let who = {
        let _ = thread;
        libc::RUSAGE_SELF
    };
    // SAFETY: getrusage writes into the zeroed struct we own.
    let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
    let rc = unsafe { libc::getrusage(who, &mut ru) };
    if rc != 0 {
        return 0;
    }
    let tv = |t: libc::timeval| t.tv_sec as u64 * 1_000_000 + t.tv_usec as u64;
    tv(ru.ru_utime) + tv(ru.ru_stime)
}

/// CPU used by the server's threads so far.
type ServerCpu = Arc<Mutex<Vec<Arc<AtomicU64>>>>;

fn server_cpu_us(cpu: &ServerCpu) -> u64 {
    cpu.lock()
        .map(|v| v.iter().map(|a| a.load(Ordering::Relaxed)).sum())
        .unwrap_or(0)
}

/// A blocking HTTP/1.1 keep-alive server on loopback answering every request at once with a
/// fixed chat completion; one thread per connection.
fn start_server() -> (SocketAddr, ServerCpu) {
    let listener = TcpListener::bind("127.0.0.1:0").expect("bind loopback");
    let addr = listener.local_addr().expect("addr");
    let cpu: ServerCpu = Arc::new(Mutex::new(Vec::new()));
    let cpu2 = cpu.clone();
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(stream) = stream else { continue };
            let slot = Arc::new(AtomicU64::new(0));
            if let Ok(mut v) = cpu2.lock() {
                v.push(slot.clone());
            }
            std::thread::spawn(move || serve(stream, &slot));
        }
    });
    (addr, cpu)
}

fn serve(stream: TcpStream, cpu: &AtomicU64) {
    let _ = stream.set_nodelay(true);
    let body = r#"{"id":"chatcmpl-bench","object":"chat.completion","created":1,"model":"bench","choices":[{"index":0,"message":{"role":"assistant","content":"{\"classification\": {\"intent\": \"billing\"}, \"cot\": \"The customer asks about the bill.\", \"now_path\": [\"start\", \"billing\"], \"finals\": {\"Action\": \"explain_bill\"}, \"chat\": \"Let me look at your bill.\"}"},"finish_reason":"stop"}],"usage":{"prompt_tokens":812,"completion_tokens":64,"total_tokens":876}}"#;
    let response = format!(
        "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: {}\r\n\r\n{}",
        body.len(),
        body
    );
    let Ok(mut writer) = stream.try_clone() else {
        return;
    };
    let mut reader = BufReader::new(stream);
    let mut line = String::new();
    let mut body_buf = Vec::new();
    loop {
        let mut len = 0usize;
        loop {
            line.clear();
            match reader.read_line(&mut line) {
                Ok(0) | Err(_) => return,
                Ok(_) => {}
            }
            if line == "\r\n" {
                break;
            }
            if let Some((k, v)) = line.split_once(':')
                && k.eq_ignore_ascii_case("content-length")
            {
                len = v.trim().parse().unwrap_or(0);
            }
        }
        body_buf.resize(len, 0);
        if reader.read_exact(&mut body_buf).is_err()
            || writer.write_all(response.as_bytes()).is_err()
        {
            return;
        }
        cpu.store(cpu_us(true), Ordering::Relaxed);
    }
}

/// A service-agent-like request: a long system prompt and a few turns.
fn request() -> ChatRequest {
    let system = "You are a customer-service agent for a telecom operator. Follow the SOP: \
                  classify the customer's intent, walk the stages, pick one action, and answer \
                  in JSON with classification, cot, now_path, finals and chat. "
        .repeat(8);
    ChatRequest {
        messages: vec![
            ChatMessage::new(ChatRole::System, system),
            ChatMessage::new(
                ChatRole::User,
                "Hi, my bill is higher than usual this month.",
            ),
            ChatMessage::new(
                ChatRole::Assistant,
                "{\"chat\": \"Sorry to hear that. May I have your number?\"}",
            ),
            ChatMessage::new(ChatRole::User, "Sure, it is 555-0100. Why did it go up?"),
        ],
        json: true,
        ..ChatRequest::default()
    }
}

fn endpoint(addr: SocketAddr) -> Endpoint {
    let mut config = ModelConfig::new("bench", Provider::Openai);
    config.base_url = Some(format!("http://{addr}/v1"));
    config.temperature = Some(0.0);
    config.max_tokens = Some(512);
    Endpoint::new(config, None).expect("endpoint")
}

fn main() {
    let _ = rustls::crypto::ring::default_provider().install_default();
    let bench_mode = std::env::args().any(|a| a == "--bench");
    let (addr, server_cpu) = start_server();
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime");
    let endpoint = endpoint(addr);
    let req = request();

    // Warm up: the pooled connection, allocator, lazy statics.
    for _ in 0..200 {
        let called = rt.block_on(endpoint.call(&req));
        assert!(called.result.is_ok(), "{:?}", called.result);
    }

    let n: u64 = if bench_mode { 20_000 } else { 200 };
    let (t0, thread0, proc0, srv0) = (
        Instant::now(),
        cpu_us(true),
        cpu_us(false),
        server_cpu_us(&server_cpu),
    );
    for _ in 0..n {
        let called = rt.block_on(endpoint.call(black_box(&req)));
        black_box(&called);
    }
    let wall = t0.elapsed();
    let thread = cpu_us(true) - thread0;
    let process = cpu_us(false) - proc0;
    let server = server_cpu_us(&server_cpu) - srv0;
    let per = |us: u64| us as f64 / n as f64;
    println!(
        "http_client: {n} sequential calls through Endpoint (OpenAI backend, keep-alive, loopback)"
    );
    println!(
        "  wall time per call:                     {:8.1} us",
        wall.as_secs_f64() * 1e6 / n as f64
    );
    println!(
        "  client CPU per call (client thread):    {:8.1} us  (goal <= 115 us)",
        per(thread)
    );
    println!(
        "  client CPU per call (process - server): {:8.1} us",
        per(process.saturating_sub(server))
    );
    println!(
        "  server CPU per call:                    {:8.1} us",
        per(server)
    );
    println!(
        "  connections opened: {} (1 means the pool kept it alive)",
        server_cpu.lock().map(|v| v.len()).unwrap_or(0)
    );

    let mut c = Criterion::default()
        .sample_size(50)
        .measurement_time(Duration::from_secs(5))
        .configure_from_args();
    c.bench_function("endpoint_call/openai_keepalive_loopback", |b| {
        b.iter(|| rt.block_on(endpoint.call(black_box(&req))))
    });
    c.final_summary();
}
