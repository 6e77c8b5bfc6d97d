//! TLS for the `tls-port` listener: rustls (through tokio-rustls) with the `ring`
//! crypto provider.
//!
//! ```text
//!   tls-port ──accept──▶ TCP ──handshake (≤ TLS_HANDSHAKE_TIMEOUT)──▶ TlsStream
//!                                                                   │
//!                        connection::serve (the same code as the plain port)
//! ```
//!
//! The directives are Redis's: `tls-cert-file` and `tls-key-file` (PEM) are the server's
//! certificate chain and key; `tls-ca-cert-file` (PEM) holds the CAs client certificates
//! must chain to; `tls-auth-clients` is `yes` (a client certificate is required, the
//! default), `optional` (checked when sent) or `no` (never asked for). As in Redis, a CA
//! file is required unless `tls-auth-clients no`. Errors are found at start-up, so a bad
//! file stops the server with a message naming it.

use crate::config::Config;
use rustls::RootCertStore;
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer};
use rustls::server::WebPkiClientVerifier;
use std::sync::Arc;
use std::time::Duration;
use tokio_rustls::TlsAcceptor;

/// A client that has not finished its TLS handshake after this long is dropped, so
/// half-open handshakes cannot pile up.
pub const TLS_HANDSHAKE_TIMEOUT: Duration = Duration::from_secs(10);

/// A TLS configuration error, worded to name the directive and file at fault.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TlsError(pub String);

impl std::fmt::Display for TlsError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for TlsError {}

/// The acceptor for `tls-port`, or `None` when `tls-port` is 0.
pub fn acceptor(config: &Config) -> Result<Option<TlsAcceptor>, TlsError> {
    if config.get_i64("tls-port") == 0 {
        return Ok(None);
    }
    let file = |name: &str| config.get(name).unwrap_or("").to_string();
    let (cert_file, key_file, ca_file) = (
        file("tls-cert-file"),
        file("tls-key-file"),
        file("tls-ca-cert-file"),
    );
    if cert_file.is_empty() || key_file.is_empty() {
        return Err(TlsError(
            "Failed to configure TLS: tls-cert-file and tls-key-file must be set when tls-port is"
                .into(),
        ));
    }
    let certs = CertificateDer::pem_file_iter(&cert_file)
        .and_then(|it| it.collect::<Result<Vec<_>, _>>())
        .map_err(|e| TlsError(format!("Failed to load certificate: {cert_file}: {e}")))?;
    if certs.is_empty() {
        return Err(TlsError(format!(
            "Failed to load certificate: {cert_file}: no certificate found"
        )));
    }
    let key = PrivateKeyDer::from_pem_file(&key_file)
        .map_err(|e| TlsError(format!("Failed to load private key: {key_file}: {e}")))?;
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let builder = rustls::ServerConfig::builder_with_provider(provider.clone())
        .with_safe_default_protocol_versions()
        .map_err(|e| TlsError(format!("Failed to configure TLS: {e}")))?;
    let auth = config.get("tls-auth-clients").unwrap_or("yes");
    let builder = if auth == "no" {
        builder.with_no_client_auth()
    } else {
        if ca_file.is_empty() {
            return Err(TlsError(
                "Failed to configure TLS: tls-ca-cert-file must be specified when tls-auth-clients is enabled"
                    .into(),
            ));
        }
        let mut roots = RootCertStore::empty();
        let cas = CertificateDer::pem_file_iter(&ca_file)
            .and_then(|it| it.collect::<Result<Vec<_>, _>>())
            .map_err(|e| TlsError(format!("Failed to load CA certificate(s): {ca_file}: {e}")))?;
        let (added, _) = roots.add_parsable_certificates(cas);
        if added == 0 {
            return Err(TlsError(format!(
                "Failed to load CA certificate(s): {ca_file}: no usable certificate"
            )));
        }
        let verifier = WebPkiClientVerifier::builder_with_provider(Arc::new(roots), provider);
        let verifier = if auth == "optional" {
            verifier.allow_unauthenticated()
        } else {
            verifier
        };
        let verifier = verifier
            .build()
            .map_err(|e| TlsError(format!("Failed to configure TLS: {e}")))?;
        builder.with_client_cert_verifier(verifier)
    };
    let server = builder
        .with_single_cert(certs, key)
        .map_err(|e| TlsError(format!("Failed to configure TLS: {cert_file}: {e}")))?;
    Ok(Some(TlsAcceptor::from(Arc::new(server))))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn config(args: &[&str]) -> Config {
        let args: Vec<String> = args.iter().map(|s| s.to_string()).collect();
        Config::load(None, &args).unwrap()
    }

    /// The error of a configuration that must fail.
    fn error(config: &Config) -> TlsError {
        match acceptor(config) {
            Err(e) => e,
            Ok(_) => panic!("the TLS configuration was accepted"),
        }
    }

    #[test]
    fn no_tls_port_means_no_acceptor() {
        assert!(acceptor(&Config::default()).unwrap().is_none());
    }

    #[test]
    fn missing_files_are_reported_by_name() {
        let e = error(&config(&["--tls-port", "7000"]));
        assert!(e.0.contains("tls-cert-file"), "{e}");
        let e = error(&config(&[
            "--tls-port",
            "7000",
            "--tls-cert-file",
            "/nonexistent/cert.pem",
            "--tls-key-file",
            "/nonexistent/key.pem",
        ]));
        assert!(e.0.contains("/nonexistent/cert.pem"), "{e}");
    }

    #[test]
    fn client_authentication_needs_a_ca_file() {
        let dir = tempfile::tempdir().unwrap();
        let cert = rcgen::generate_simple_self_signed(vec!["localhost".to_string()]).unwrap();
        let (c, k) = (dir.path().join("c.pem"), dir.path().join("k.pem"));
        std::fs::write(&c, cert.cert.pem()).unwrap();
        std::fs::write(&k, cert.signing_key.serialize_pem()).unwrap();
        let (c, k) = (c.to_str().unwrap(), k.to_str().unwrap());
        let base = [
            "--tls-port",
            "7000",
            "--tls-cert-file",
            c,
            "--tls-key-file",
            k,
        ];
        let e = error(&config(&base));
        assert!(e.0.contains("tls-ca-cert-file"), "{e}");
        let with = |extra: &[&str]| config(&[&base[..], extra].concat());
        assert!(
            acceptor(&with(&["--tls-auth-clients", "no"]))
                .unwrap()
                .is_some()
        );
        assert!(
            acceptor(&with(&[
                "--tls-auth-clients",
                "optional",
                "--tls-ca-cert-file",
                c
            ]))
            .unwrap()
            .is_some()
        );
    }
}
