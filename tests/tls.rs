//! TLS: the `tls-port` listener beside the plain port, `redis-cli --tls` and redis-rs
//! over TLS, client certificates (`tls-auth-clients yes|no|optional`), `port 0`, and bad
//! certificate files at start-up. Every certificate is made here with rcgen: a CA, a
//! server certificate for `localhost`/127.0.0.1 signed by it, and a client certificate.

mod common;

use common::{Server, free_port, start_server_with};
use redis::AsyncCommands;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// A CA, a server certificate and a client certificate, as PEM files in a temporary
/// directory.
struct Pki {
    dir: tempfile::TempDir,
}

impl Pki {
    fn new() -> Pki {
        use rcgen::{BasicConstraints, CertificateParams, DnType, IsCa, Issuer, KeyPair};
        let dir = tempfile::tempdir().expect("tempdir");
        let mut ca_params = CertificateParams::new(Vec::<String>::new()).expect("CA params");
        ca_params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
        // Distinct subject names: OpenSSL takes a leaf named like its issuer for a
        // self-signed certificate.
        ca_params
            .distinguished_name
            .push(DnType::CommonName, "streamd test CA");
        let ca_key = KeyPair::generate().expect("CA key");
        let ca = ca_params.self_signed(&ca_key).expect("CA certificate");
        let issuer = Issuer::new(ca_params, ca_key);
        let leaf = |names: Vec<String>| {
            let key = KeyPair::generate().expect("key");
            let mut params = CertificateParams::new(names.clone()).expect("params");
            params
                .distinguished_name
                .push(DnType::CommonName, names[0].as_str());
            let cert = params.signed_by(&key, &issuer).expect("signed certificate");
            (cert.pem(), key.serialize_pem())
        };
        let (server_cert, server_key) = leaf(vec!["localhost".into(), "127.0.0.1".into()]);
        let (client_cert, client_key) = leaf(vec!["client".into()]);
        let files = [
            ("ca.pem", ca.pem()),
            ("server.pem", server_cert),
            ("server.key", server_key),
            ("client.pem", client_cert),
            ("client.key", client_key),
        ];
        for (name, text) in files {
            std::fs::write(dir.path().join(name), text).expect("write PEM");
        }
        Pki { dir }
    }

    fn path(&self, name: &str) -> String {
        self.dir.path().join(name).display().to_string()
    }

    fn read(&self, name: &str) -> Vec<u8> {
        std::fs::read(self.dir.path().join(name)).expect("read PEM")
    }

    /// The server directives for a TLS port with `auth` as `tls-auth-clients`.
    fn server_args(&self, tls_port: u16, auth: &str) -> Vec<String> {
        [
            "--tls-port",
            &tls_port.to_string(),
            "--tls-cert-file",
            &self.path("server.pem"),
            "--tls-key-file",
            &self.path("server.key"),
            "--tls-ca-cert-file",
            &self.path("ca.pem"),
            "--tls-auth-clients",
            auth,
        ]
        .iter()
        .map(|s| s.to_string())
        .collect()
    }
}

/// A streamd with a plain port and a TLS port.
fn start_tls(pki: &Pki, auth: &str) -> (Server, u16) {
    let tls_port = free_port();
    let args = pki.server_args(tls_port, auth);
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    (start_server_with(&args), tls_port)
}

/// `redis-cli --tls` with `extra` options; its standard output, trimmed.
fn redis_cli_tls(port: u16, extra: &[&str], cmd: &[&str]) -> String {
    let out = Command::new("redis-cli")
        .args(["--tls", "-p", &port.to_string()])
        .args(extra)
        .args(cmd)
        .stdin(Stdio::null())
        .output()
        .expect("redis-cli is installed (apt-get install redis-tools)");
    let mut text = String::from_utf8_lossy(&out.stdout).into_owned();
    text.push_str(&String::from_utf8_lossy(&out.stderr));
    text.trim().to_string()
}

/// A redis-rs connection over TLS trusting our CA, with an optional client certificate.
async fn tls_client(
    pki: &Pki,
    port: u16,
    with_cert: bool,
) -> redis::RedisResult<redis::aio::MultiplexedConnection> {
    let certs = redis::TlsCertificates {
        client_tls: with_cert.then(|| redis::ClientTlsConfig {
            client_cert: pki.read("client.pem"),
            client_key: pki.read("client.key"),
        }),
        root_cert: Some(pki.read("ca.pem")),
    };
    let client = redis::Client::build_with_tls(format!("rediss://localhost:{port}/"), certs)?;
    let cfg = redis::AsyncConnectionConfig::new().set_response_timeout(None);
    let mut conn = client
        .get_multiplexed_async_connection_with_config(&cfg)
        .await?;
    // The handshake may only fail on the first request (TLS 1.3 client auth).
    let _: String = redis::cmd("PING").query_async(&mut conn).await?;
    Ok(conn)
}

#[test]
fn redis_cli_over_tls_and_plain_clients_share_one_dataset() {
    let pki = Pki::new();
    let (server, tls_port) = start_tls(&pki, "no");
    assert_eq!(redis_cli_tls(tls_port, &["--insecure"], &["PING"]), "PONG");
    assert_eq!(
        redis_cli_tls(tls_port, &["--insecure"], &["XADD", "s", "1-1", "f", "v"]),
        "1-1"
    );
    // Verifying the server against our CA works too.
    let ca = pki.path("ca.pem");
    assert_eq!(
        redis_cli_tls(tls_port, &["--cacert", &ca], &["XLEN", "s"]),
        "1"
    );
    // The plain port serves the same data.
    let mut raw = server.raw();
    assert_eq!(raw.cmd_str(&["XLEN", "s"]), b":1\r\n");
    // Plain bytes on the TLS port are no request.
    let mut plain_on_tls = common::Raw::connect(tls_port);
    plain_on_tls.send(b"*1\r\n$4\r\nPING\r\n");
    assert!(!plain_on_tls.read_to_close().starts_with(b"+PONG"));
    assert_eq!(raw.cmd_str(&["PING"]), b"+PONG\r\n");
}

#[tokio::test]
async fn redis_rs_over_tls_verifies_the_server_and_runs_stream_commands() {
    let pki = Pki::new();
    let (_server, tls_port) = start_tls(&pki, "no");
    let mut conn = tls_client(&pki, tls_port, false)
        .await
        .expect("TLS connect");
    let id: String = conn.xadd("s", "*", &[("f", "v")]).await.unwrap();
    let len: usize = conn.xlen("s").await.unwrap();
    assert_eq!(len, 1);
    let range: redis::streams::StreamRangeReply = conn.xrange_all("s").await.unwrap();
    assert_eq!(range.ids[0].id, id);
    // Large replies cross many TLS records intact.
    let big = "x".repeat(100_000);
    for _ in 0..20 {
        let _: String = conn.xadd("big", "*", &[("f", &big)]).await.unwrap();
    }
    let range: redis::streams::StreamRangeReply = conn.xrange_all("big").await.unwrap();
    assert_eq!(range.ids.len(), 20);
    assert!(
        range
            .ids
            .iter()
            .all(|e| e.get::<String>("f").as_deref() == Some(big.as_str()))
    );
}

#[tokio::test]
async fn client_certificates_are_required_by_default() {
    let pki = Pki::new();
    let (_server, tls_port) = start_tls(&pki, "yes");
    assert!(
        tls_client(&pki, tls_port, false).await.is_err(),
        "a client without a certificate was served"
    );
    let mut conn = tls_client(&pki, tls_port, true)
        .await
        .expect("a client with a certificate signed by the CA");
    let n: usize = conn.xlen("nothing").await.unwrap();
    assert_eq!(n, 0);
    let (cert, key, ca) = (
        pki.path("client.pem"),
        pki.path("client.key"),
        pki.path("ca.pem"),
    );
    assert_eq!(
        redis_cli_tls(
            tls_port,
            &["--cert", &cert, "--key", &key, "--cacert", &ca],
            &["PING"]
        ),
        "PONG"
    );
}

#[tokio::test]
async fn optional_client_certificates_are_checked_only_when_sent() {
    let pki = Pki::new();
    let (_server, tls_port) = start_tls(&pki, "optional");
    let mut anonymous = tls_client(&pki, tls_port, false).await.expect("no cert");
    let mut with_cert = tls_client(&pki, tls_port, true).await.expect("with cert");
    let a: usize = anonymous.xlen("k").await.unwrap();
    let b: usize = with_cert.xlen("k").await.unwrap();
    assert_eq!((a, b), (0, 0));
}

#[test]
fn a_stalled_tls_handshake_does_not_hold_up_other_clients() {
    let pki = Pki::new();
    let (server, tls_port) = start_tls(&pki, "no");
    // Connected, never says hello; another opens the handshake and stops half-way.
    let _silent = std::net::TcpStream::connect(("127.0.0.1", tls_port)).unwrap();
    let mut half = std::net::TcpStream::connect(("127.0.0.1", tls_port)).unwrap();
    half.write_all(&[0x16, 0x03, 0x01, 0x02, 0x00, 0x01])
        .unwrap();
    assert_eq!(redis_cli_tls(tls_port, &["--insecure"], &["PING"]), "PONG");
    assert_eq!(server.raw().cmd_str(&["PING"]), b"+PONG\r\n");
}

/// Spawns streamd with exactly `args` (no plain-port default) and returns the child.
fn spawn(args: &[String], dir: &Path) -> std::process::Child {
    Command::new(env!("CARGO_BIN_EXE_streamd"))
        .args(["--dir", &dir.display().to_string(), "--appendonly", "no"])
        .args(args)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn streamd")
}

/// Kills the child on drop.
struct Kill(std::process::Child);

impl Drop for Kill {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

#[test]
fn port_0_serves_only_the_tls_port() {
    let pki = Pki::new();
    let tls_port = free_port();
    let mut args = pki.server_args(tls_port, "no");
    args.extend(["--port".to_string(), "0".to_string()]);
    let data = tempfile::tempdir().unwrap();
    let _child = Kill(spawn(&args, data.path()));
    let deadline = Instant::now() + Duration::from_secs(10);
    while redis_cli_tls(tls_port, &["--insecure"], &["PING"]) != "PONG" {
        assert!(Instant::now() < deadline, "the TLS port never answered");
        std::thread::sleep(Duration::from_millis(50));
    }
    let info = redis_cli_tls(tls_port, &["--insecure"], &["INFO", "server"]);
    assert!(info.contains("tcp_port:0"), "{info}");
}

#[test]
fn unreadable_certificates_stop_the_server_at_start() {
    let pki = Pki::new();
    let data = tempfile::tempdir().unwrap();
    let bad: PathBuf = data.path().join("missing.pem");
    let args: Vec<String> = [
        "--port",
        &free_port().to_string(),
        "--tls-port",
        &free_port().to_string(),
        "--tls-cert-file",
        &bad.display().to_string(),
        "--tls-key-file",
        &pki.path("server.key"),
        "--tls-auth-clients",
        "no",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    let out = spawn(&args, data.path()).wait_with_output().unwrap();
    assert!(!out.status.success());
    let text =
        String::from_utf8_lossy(&out.stderr).into_owned() + &String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("missing.pem"), "{text}");
    // tls-auth-clients yes (the default) without a CA file is refused as well.
    let mut args = pki.server_args(free_port(), "yes");
    args.retain(|a| !a.ends_with("ca.pem") && a != "--tls-ca-cert-file");
    args.extend(["--port".to_string(), free_port().to_string()]);
    let out = spawn(&args, data.path()).wait_with_output().unwrap();
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("tls-ca-cert-file"));
}

/// TLS comes up, moves and changes its client-certificate rule at run time, as Redis's
/// `tls-port` and `tls-auth-clients` do under CONFIG SET.
#[test]
fn config_set_starts_and_reconfigures_the_tls_port() {
    let pki = Pki::new();
    let server = common::start_server();
    let mut r = server.raw();
    let ok = b"+OK\r\n".to_vec();
    for (k, v) in [
        ("tls-cert-file", pki.path("server.pem")),
        ("tls-key-file", pki.path("server.key")),
        ("tls-ca-cert-file", pki.path("ca.pem")),
    ] {
        assert_eq!(r.cmd_str(&["CONFIG", "SET", k, &v]), ok, "{k}");
    }
    let tls_port = common::listen_on_a_free_port(&mut r, "tls-port");
    let ca = pki.path("ca.pem");
    let (cert, key) = (pki.path("client.pem"), pki.path("client.key"));
    let with_cert = ["--cacert", &ca, "--cert", &cert, "--key", &key];
    assert_eq!(redis_cli_tls(tls_port, &with_cert, &["PING"]), "PONG");
    // Client certificates are required (the default): none is refused.
    assert_ne!(
        redis_cli_tls(tls_port, &["--cacert", &ca], &["PING"]),
        "PONG"
    );
    assert_eq!(r.cmd_str(&["CONFIG", "SET", "tls-auth-clients", "no"]), ok);
    assert_eq!(
        redis_cli_tls(tls_port, &["--cacert", &ca], &["PING"]),
        "PONG"
    );
    // A certificate that cannot be read: refused, the TLS port keeps serving.
    let refused = r.cmd_str(&["CONFIG", "SET", "tls-cert-file", "/nonexistent.pem"]);
    assert_eq!(
        String::from_utf8_lossy(&refused),
        "-ERR CONFIG SET failed (possibly related to argument 'tls-cert-file') - Unable to \
         update TLS configuration. Check server logs.\r\n"
    );
    assert_eq!(
        redis_cli_tls(tls_port, &["--cacert", &ca], &["PING"]),
        "PONG"
    );
    // Off again.
    assert_eq!(r.cmd_str(&["CONFIG", "SET", "tls-port", "0"]), ok);
    assert!(std::net::TcpStream::connect(("127.0.0.1", tls_port)).is_err());
    assert_eq!(r.cmd_str(&["PING"]), b"+PONG\r\n");
}
