//! Connecting to a NATS server that wants credentials or TLS, from flags or the environment:
//! user and password, token, TLS with a private CA. Wrong or missing credentials fail with a
//! message, and no secret appears in what the process prints.

mod common;

use common::cluster::Nats;
use std::path::Path;
use std::process::{Command, Output};

/// `sage status --json` against `url` with extra flags and environment: lists the runs (none).
fn status(url: &str, flags: &[&str], env: &[(&str, &str)]) -> Output {
    let mut c = Command::new(env!("CARGO_BIN_EXE_sage"));
    c.args([
        "status",
        "--json",
        "--nats-connect-secs",
        "0",
        "--nats",
        url,
    ])
    .args(flags)
    .env_remove("SAGE_NATS_URL");
    for (k, v) in env {
        c.env(k, v);
    }
    c.output().expect("sage runs")
}

fn ok(out: &Output) {
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(String::from_utf8_lossy(&out.stdout).trim(), "[]");
}

fn refused(out: &Output, secret: &str) -> String {
    assert!(!out.status.success(), "connected without valid credentials");
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(text.contains("cannot connect to NATS"), "{text}");
    assert!(!text.contains(secret), "a secret was printed: {text}");
    text
}

#[test]
fn user_and_password_from_flags_or_the_environment() {
    let dir = tempfile::tempdir().expect("dir");
    let nats = Nats::start_with(dir.path(), &["--user", "sage", "--pass", "FAKE-pw"]);
    let url = nats.url();
    ok(&status(
        &url,
        &["--nats-user", "sage", "--nats-password", "FAKE-pw"],
        &[],
    ));
    ok(&status(
        &url,
        &[],
        &[
            ("SAGE_NATS_USER", "sage"),
            ("SAGE_NATS_PASSWORD", "FAKE-pw"),
        ],
    ));
    refused(
        &status(
            &url,
            &["--nats-user", "sage", "--nats-password", "wrong-pw"],
            &[],
        ),
        "wrong-pw",
    );
    // No credentials: refused (and the password it was not given cannot be printed, so the
    // secret checked here is a wrong one from the environment).
    refused(&status(&url, &[], &[]), "FAKE-pw");
    refused(
        &status(
            &url,
            &[],
            &[
                ("SAGE_NATS_USER", "sage"),
                ("SAGE_NATS_PASSWORD", "wrong-env-pw"),
            ],
        ),
        "wrong-env-pw",
    );
    // A password in the URL is not printed either.
    refused(
        &status(
            &format!("nats://sage:wrong-url-pw@127.0.0.1:{}", nats.port),
            &[],
            &[],
        ),
        "wrong-url-pw",
    );
    // Half a credential is a configuration error, said as such.
    let out = status(&url, &["--nats-user", "sage"], &[]);
    assert!(!out.status.success());
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("needs a password"),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

#[test]
fn token() {
    let dir = tempfile::tempdir().expect("dir");
    let nats = Nats::start_with(dir.path(), &["--auth", "FAKE-token-0123456789"]);
    ok(&status(
        &nats.url(),
        &["--nats-token", "FAKE-token-0123456789"],
        &[],
    ));
    ok(&status(
        &nats.url(),
        &[],
        &[("SAGE_NATS_TOKEN", "FAKE-token-0123456789")],
    ));
    refused(
        &status(&nats.url(), &["--nats-token", "tok-wrong"], &[]),
        "tok-wrong",
    );
}

fn openssl(dir: &Path, args: &[&str]) {
    let out = Command::new("openssl")
        .args(args)
        .current_dir(dir)
        .output()
        .unwrap_or_else(|e| panic!("cannot run openssl ({e}): Debian package openssl"));
    assert!(
        out.status.success(),
        "openssl {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

#[test]
fn tls_with_a_private_ca() {
    let dir = tempfile::tempdir().expect("dir");
    let d = dir.path();
    openssl(
        d,
        &[
            "req",
            "-x509",
            "-newkey",
            "rsa:2048",
            "-nodes",
            "-keyout",
            "ca.key",
            "-out",
            "ca.pem",
            "-days",
            "1",
            "-subj",
            "/CN=sage-test-ca",
        ],
    );
    openssl(
        d,
        &[
            "req",
            "-newkey",
            "rsa:2048",
            "-nodes",
            "-keyout",
            "server.key",
            "-out",
            "server.csr",
            "-subj",
            "/CN=127.0.0.1",
        ],
    );
    std::fs::write(d.join("ext.cnf"), "subjectAltName=IP:127.0.0.1\n").expect("ext");
    openssl(
        d,
        &[
            "x509",
            "-req",
            "-in",
            "server.csr",
            "-CA",
            "ca.pem",
            "-CAkey",
            "ca.key",
            "-CAcreateserial",
            "-out",
            "server.pem",
            "-days",
            "1",
            "-extfile",
            "ext.cnf",
        ],
    );
    let cert = d.join("server.pem").display().to_string();
    let key = d.join("server.key").display().to_string();
    let nats = Nats::start_with(d, &["--tls", "--tlscert", &cert, "--tlskey", &key]);
    let url = format!("tls://127.0.0.1:{}", nats.port);
    let ca = d.join("ca.pem").display().to_string();
    ok(&status(
        &url,
        &["--nats-tls-ca", &ca, "--nats-tls-required"],
        &[],
    ));
    ok(&status(&url, &[], &[("SAGE_NATS_TLS_CA", &ca)]));
    // Without the CA the server's certificate is not trusted.
    refused(&status(&url, &[], &[]), "BEGIN PRIVATE KEY");
}
