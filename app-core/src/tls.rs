//! HTTPS on the listener (the `tls` feature): one rustls `ServerConfig` for
//! both twins, from `--tls-cert` and `--tls-key` (PEM files), with ring as
//! the only crypto provider, TLS 1.2 and 1.3, and ALPN `http/1.1` only (the
//! twins serve HTTP/1 alone; neither offers `h2`).

/// Longest TLS handshake both twins give a new connection, in seconds,
/// before closing it: actix-tls's default, set on both (ntex-tls's default
/// is 5 s), so that a client that never finishes its handshake is dropped
/// by both twins alike.
pub const HANDSHAKE_TIMEOUT_SECS: u16 = 3;

/// The ALPN protocols offered: HTTP/1.1 only.
pub const ALPN: &[u8] = b"http/1.1";

#[cfg(feature = "tls")]
pub use rustls::ServerConfig;

/// The server's TLS configuration from a PEM certificate chain (leaf first)
/// and a PEM private key (PKCS#8, PKCS#1 or SEC1). Every failure is one
/// line naming the file: missing, unreadable, without a certificate or a
/// key, or a key that does not match the certificate.
#[cfg(feature = "tls")]
pub fn server_config(
    cert: &std::path::Path,
    key: &std::path::Path,
) -> anyhow::Result<ServerConfig> {
    use anyhow::{anyhow, Context};
    use rustls::pki_types::pem::{self, PemObject};
    use rustls::pki_types::{CertificateDer, PrivateKeyDer};

    let named = |what: &str, file: &std::path::Path, e: pem::Error| match e {
        pem::Error::NoItemsFound => anyhow!("TLS {what} {}: no {what} in it", file.display()),
        pem::Error::Io(e) => anyhow!("TLS {what} {}: {e}", file.display()),
        e => anyhow!("TLS {what} {}: {e}", file.display()),
    };
    let chain = CertificateDer::pem_file_iter(cert)
        .and_then(|certs| certs.collect::<Result<Vec<_>, _>>())
        .map_err(|e| named("certificate", cert, e))?;
    if chain.is_empty() {
        return Err(named("certificate", cert, pem::Error::NoItemsFound));
    }
    let private = PrivateKeyDer::from_pem_file(key).map_err(|e| named("key", key, e))?;
    // ring rather than rustls's default, aws-lc-rs (its build needs cmake),
    // as in loadgen; rustls deprecates it for its lack of post-quantum key
    // exchange, which changes nothing this server measures.
    #[allow(deprecated)]
    let provider = std::sync::Arc::new(rustls::crypto::ring::default_provider());
    let mut config = ServerConfig::builder_with_provider(provider)
        .with_protocol_versions(&[&rustls::version::TLS13, &rustls::version::TLS12])
        .context("TLS: the ring provider refused TLS 1.2 and 1.3")?
        .with_no_client_auth()
        .with_single_cert(chain, private)
        .map_err(|e| {
            anyhow!(
                "TLS certificate {} with key {}: {e}",
                cert.display(),
                key.display()
            )
        })?;
    config.alpn_protocols = vec![ALPN.to_vec()];
    Ok(config)
}

#[cfg(all(test, feature = "tls"))]
mod tests {
    use super::*;

    /// A self-signed certificate for `localhost` and its key, a key that
    /// does not match it, each in its PEM file; and the directory.
    fn files() -> (tempfile::TempDir, [std::path::PathBuf; 3]) {
        let key = rcgen::KeyPair::generate().unwrap();
        let cert = rcgen::CertificateParams::new(vec!["localhost".into()])
            .unwrap()
            .self_signed(&key)
            .unwrap();
        let other = rcgen::KeyPair::generate().unwrap();
        let dir = tempfile::tempdir().unwrap();
        let paths = ["cert.pem", "key.pem", "other-key.pem"].map(|f| dir.path().join(f));
        std::fs::write(&paths[0], cert.pem()).unwrap();
        std::fs::write(&paths[1], key.serialize_pem()).unwrap();
        std::fs::write(&paths[2], other.serialize_pem()).unwrap();
        (dir, paths)
    }

    #[test]
    fn a_matching_pair_loads_with_http1_only() {
        let (_dir, [cert, key, _]) = files();
        let config = server_config(&cert, &key).unwrap();
        assert_eq!(config.alpn_protocols, vec![b"http/1.1".to_vec()]);
    }

    #[test]
    fn each_bad_file_is_one_line_naming_it() {
        let (dir, [cert, key, other_key]) = files();
        let missing = dir.path().join("missing.pem");
        let garbage = dir.path().join("garbage.pem");
        std::fs::write(&garbage, "not a PEM file\n").unwrap();
        for (c, k, named, says) in [
            (&missing, &key, &missing, "No such file"),
            (&cert, &missing, &missing, "No such file"),
            (&garbage, &key, &garbage, "no certificate in it"),
            (&cert, &garbage, &garbage, "no key in it"),
            // A key where the certificate should be, and the other way round.
            (&key, &key, &key, "no certificate in it"),
            (&cert, &cert, &cert, "no key in it"),
            (&cert, &other_key, &other_key, "TLS certificate"),
        ] {
            let err = format!("{:#}", server_config(c, k).unwrap_err());
            assert!(err.contains(&named.display().to_string()), "{err}");
            assert!(err.contains(says), "{err}");
            assert_eq!(err.lines().count(), 1, "{err}");
        }
    }
}
