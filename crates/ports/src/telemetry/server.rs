//! The HTTP endpoints every process serves: `GET /metrics` (Prometheus text format),
//! `GET /healthz` (200 while the process lives) and `GET /readyz` (200 when [`Health`] says the
//! process can take work, 503 otherwise).

use super::metrics::metrics;
use bytes::Bytes;
use http_body_util::Full;
use hyper::body::Incoming;
use hyper::service::service_fn;
use hyper::{Method, Request, Response, StatusCode};
use hyper_util::rt::TokioIo;
use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

/// Whether the process is ready to take work: its main loop says so, and its dependency check
/// (the broker connection) passes.
#[derive(Debug)]
pub struct Health {
    ready: AtomicBool,
    connected: AtomicBool,
    /// False once the process can never work again (its broker client is gone): /healthz
    /// answers 503, so that an orchestrator restarts it.
    live: AtomicBool,
}

impl Health {
    /// A process that is not ready yet.
    pub fn new() -> Arc<Health> {
        Arc::new(Health {
            ready: AtomicBool::new(false),
            connected: AtomicBool::new(true),
            live: AtomicBool::new(true),
        })
    }

    /// Checks `connected` twice a second for as long as the process runs (on a tokio task).
    pub fn watch(self: &Arc<Self>, connected: impl Fn() -> bool + Send + 'static) {
        let health = Arc::downgrade(self);
        tokio::spawn(async move {
            while let Some(h) = health.upgrade() {
                h.connected.store(connected(), Ordering::Relaxed);
                drop(h);
                tokio::time::sleep(std::time::Duration::from_millis(500)).await;
            }
        });
    }

    /// Marks the process not ready from the moment `stop` turns true (shutdown has begun).
    pub fn unready_on(self: &Arc<Self>, mut stop: tokio::sync::watch::Receiver<bool>) {
        let health = self.clone();
        tokio::spawn(async move {
            let _ = stop.wait_for(|s| *s).await;
            health.set_ready(false);
        });
    }

    /// Marks the process ready or not.
    pub fn set_ready(&self, ready: bool) {
        self.ready.store(ready, Ordering::Relaxed);
    }

    /// Whether it is ready.
    pub fn is_ready(&self) -> bool {
        self.ready.load(Ordering::Relaxed)
            && self.connected.load(Ordering::Relaxed)
            && self.is_live()
    }

    /// Marks the process as never able to work again (/healthz and /readyz answer 503).
    pub fn set_dead(&self) {
        self.live.store(false, Ordering::Relaxed);
    }

    /// Whether the process can still work.
    pub fn is_live(&self) -> bool {
        self.live.load(Ordering::Relaxed)
    }
}

fn respond(status: StatusCode, content_type: &str, body: String) -> Response<Full<Bytes>> {
    let mut response = Response::new(Full::new(Bytes::from(body)));
    *response.status_mut() = status;
    if let Ok(v) = content_type.parse() {
        response
            .headers_mut()
            .insert(hyper::header::CONTENT_TYPE, v);
    }
    response
}

fn route(request: &Request<Incoming>, health: &Health) -> Response<Full<Bytes>> {
    const TEXT: &str = "text/plain; charset=utf-8";
    if request.method() != Method::GET {
        return respond(StatusCode::METHOD_NOT_ALLOWED, TEXT, "GET only\n".into());
    }
    match request.uri().path() {
        "/metrics" => respond(
            StatusCode::OK,
            "text/plain; version=0.0.4; charset=utf-8",
            metrics().render(),
        ),
        "/healthz" if health.is_live() => respond(StatusCode::OK, TEXT, "ok\n".into()),
        "/healthz" => respond(
            StatusCode::SERVICE_UNAVAILABLE,
            TEXT,
            "dead: the NATS client is gone; restart the process\n".into(),
        ),
        "/readyz" if health.is_ready() => respond(StatusCode::OK, TEXT, "ready\n".into()),
        "/readyz" => respond(StatusCode::SERVICE_UNAVAILABLE, TEXT, "not ready\n".into()),
        _ => respond(
            StatusCode::NOT_FOUND,
            TEXT,
            "not found: /metrics, /healthz, /readyz\n".into(),
        ),
    }
}

/// Binds `addr` and serves the endpoints on a background task; returns the bound address (so
/// port 0 picks a free one).
pub async fn serve(addr: SocketAddr, health: Arc<Health>) -> std::io::Result<SocketAddr> {
    let listener = tokio::net::TcpListener::bind(addr).await?;
    let bound = listener.local_addr()?;
    tokio::spawn(async move {
        loop {
            let Ok((stream, _)) = listener.accept().await else {
                continue;
            };
            let health = health.clone();
            tokio::spawn(async move {
                let service = service_fn(move |request: Request<Incoming>| {
                    let response = route(&request, &health);
                    async move { Ok::<_, std::convert::Infallible>(response) }
                });
                let _ = hyper::server::conn::http1::Builder::new()
                    .serve_connection(TokioIo::new(stream), service)
                    .await;
            });
        }
    });
    Ok(bound)
}
