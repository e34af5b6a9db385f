//! HTTPS: the client side of TLS for `https://` targets, through rustls
//! (ring as its crypto provider). ALPN offers `http/1.1` only, SNI names the
//! URL's host, and the server's certificate is verified against the
//! system's roots, or the CAs of `--ca-file`; `--insecure` accepts any
//! certificate (a self-signed one on a test host), and only when given.

use std::path::Path;
use std::sync::Arc;

use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::crypto::{verify_tls12_signature, verify_tls13_signature, CryptoProvider};
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, ServerName, UnixTime};
use rustls::{ClientConfig, DigitallySignedStruct, RootCertStore, SignatureScheme};

use crate::exit::UsageError;

/// How every connection of a run speaks TLS: the name the server must
/// prove, and the configuration all connections share.
#[derive(Debug, Clone)]
pub struct Tls {
    pub name: ServerName<'static>,
    pub config: Arc<ClientConfig>,
}

/// Whose certificates are trusted.
#[derive(Debug, Clone, Default)]
pub struct Trust<'a> {
    /// PEM file of the CAs to trust instead of the system's.
    pub ca_file: Option<&'a Path>,
    /// Accept any certificate (its signature over the handshake is still
    /// checked).
    pub insecure: bool,
}

impl Tls {
    /// The client for `host` (the URL's, without brackets).
    pub fn client(host: &str, trust: &Trust) -> Result<Tls, UsageError> {
        // ring rather than rustls's default, aws-lc-rs, whose build needs
        // cmake and a C++ toolchain; its lack of post-quantum key exchange
        // (the reason rustls deprecates it) does not change what is measured.
        #[allow(deprecated)]
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let builder = ClientConfig::builder_with_provider(Arc::clone(&provider))
            .with_safe_default_protocol_versions()
            .map_err(|e| UsageError(format!("TLS: {e}")))?;
        let mut config = if trust.insecure {
            builder
                .dangerous()
                .with_custom_certificate_verifier(Arc::new(AnyCertificate(provider)))
                .with_no_client_auth()
        } else {
            builder
                .with_root_certificates(roots(trust.ca_file)?)
                .with_no_client_auth()
        };
        config.alpn_protocols = vec![b"http/1.1".to_vec()];
        let name = ServerName::try_from(host.to_string())
            .map_err(|e| UsageError(format!("TLS: {host:?} is no server name: {e}")))?;
        Ok(Tls {
            name,
            config: Arc::new(config),
        })
    }
}

/// The CAs of `ca_file`, or the system's.
fn roots(ca_file: Option<&Path>) -> Result<RootCertStore, UsageError> {
    let mut roots = RootCertStore::empty();
    match ca_file {
        Some(path) => {
            let certs: Vec<CertificateDer> = CertificateDer::pem_file_iter(path)
                .and_then(|i| i.collect::<Result<_, _>>())
                .map_err(|e| UsageError(format!("--ca-file {}: {e}", path.display())))?;
            let (added, _) = roots.add_parsable_certificates(certs);
            if added == 0 {
                return Err(UsageError(format!(
                    "--ca-file {}: no certificate in it",
                    path.display()
                )));
            }
        }
        None => {
            let found = rustls_native_certs::load_native_certs();
            roots.add_parsable_certificates(found.certs);
            if roots.is_empty() {
                return Err(UsageError(
                    "https: the system has no CA certificates: give --ca-file, or --insecure"
                        .into(),
                ));
            }
        }
    }
    Ok(roots)
}

/// `--insecure`: any certificate, any name; the server must still sign the
/// handshake with the key of the certificate it sent.
#[derive(Debug)]
struct AnyCertificate(Arc<CryptoProvider>);

impl ServerCertVerifier for AnyCertificate {
    fn verify_server_cert(
        &self,
        _end_entity: &CertificateDer<'_>,
        _intermediates: &[CertificateDer<'_>],
        _server_name: &ServerName<'_>,
        _ocsp_response: &[u8],
        _now: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        Ok(ServerCertVerified::assertion())
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        verify_tls12_signature(
            message,
            cert,
            dss,
            &self.0.signature_verification_algorithms,
        )
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        verify_tls13_signature(
            message,
            cert,
            dss,
            &self.0.signature_verification_algorithms,
        )
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.0.signature_verification_algorithms.supported_schemes()
    }
}
