//! A `tls = true` row's certificates, made when its stack starts: a CA of
//! the stack's own and a certificate it signs for the front's address (ECDSA
//! P-256, rcgen's default, for nginx and the twins alike). The front (nginx,
//! or the twin) gets the certificate and key in its private directory; each
//! load host gets the CA, which loadgen trusts (`--ca-file`) and so does the
//! runner's own verification. Nothing is trusted beyond the stack it was
//! made for.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};
use std::path::Path;

use anyhow::Context;
use rcgen::{BasicConstraints, CertificateParams, DnType, IsCa, KeyPair, KeyUsagePurpose};

use crate::place::host::{Host, HostDir};

/// The PEM files of one stack's TLS.
pub struct Material {
    pub ca: String,
    pub cert: String,
    pub key: String,
}

impl Material {
    /// A CA, and a certificate it signs for `front` (and the loopback
    /// names, so that a front on loopback answers to any of them).
    pub fn make(front: IpAddr) -> anyhow::Result<Material> {
        let ca_key = KeyPair::generate().context("TLS: making the CA's key")?;
        let mut ca = CertificateParams::new(Vec::<String>::new())?;
        ca.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
        ca.key_usages = vec![KeyUsagePurpose::KeyCertSign, KeyUsagePurpose::CrlSign];
        ca.distinguished_name
            .push(DnType::CommonName, "shootout run CA");
        let ca_cert = ca.self_signed(&ca_key).context("TLS: signing the CA")?;
        let mut names = vec![front.to_string()];
        for more in [
            IpAddr::V4(Ipv4Addr::LOCALHOST).to_string(),
            IpAddr::V6(Ipv6Addr::LOCALHOST).to_string(),
            "localhost".to_string(),
        ] {
            if !names.contains(&more) {
                names.push(more);
            }
        }
        let key = KeyPair::generate().context("TLS: making the front's key")?;
        let mut leaf = CertificateParams::new(names)?;
        leaf.distinguished_name
            .push(DnType::CommonName, format!("shootout front {front}"));
        let cert = leaf
            .signed_by(&key, &ca_cert, &ca_key)
            .context("TLS: signing the front's certificate")?;
        Ok(Material {
            ca: ca_cert.pem(),
            cert: cert.pem(),
            key: key.serialize_pem(),
        })
    }

    /// Writes the certificate and key into the directory `dir` on `host`;
    /// their paths there (certificate, key).
    pub fn place_front(&self, host: &Host, dir: &str) -> anyhow::Result<(String, String)> {
        let cert = format!("{dir}/tls-cert.pem");
        let key = format!("{dir}/tls-key.pem");
        host.write_file(&cert, self.cert.as_bytes())?;
        host.write_file(&key, self.key.as_bytes())?;
        Ok((cert, key))
    }
}

/// What the client side of a TLS stack keeps: the CA's file on each load
/// host, and the configuration the runner's own requests use.
pub struct Clients {
    /// (host, the CA's path there).
    ca_files: Vec<(Host, String)>,
    pub tls: loadgen::tls::Tls,
    _dirs: Vec<HostDir>,
}

impl Clients {
    /// Writes `material`'s CA onto every host of `clients` (in private
    /// directories under `local` here), for a front at `front`.
    pub fn place(
        material: &Material,
        clients: &[Host],
        local: &Path,
        front: IpAddr,
    ) -> anyhow::Result<Clients> {
        let mut ca_files = Vec::new();
        let mut dirs = Vec::new();
        // This machine's copy, which the runner's own requests trust.
        std::fs::create_dir_all(local).with_context(|| format!("creating {}", local.display()))?;
        let here = local.join("tls-ca.pem");
        std::fs::write(&here, &material.ca)
            .with_context(|| format!("writing {}", here.display()))?;
        for host in clients {
            let dir = host.private_dir(local)?;
            let path = format!("{}/tls-ca.pem", dir.path);
            host.write_file(&path, material.ca.as_bytes())?;
            ca_files.push((host.clone(), path));
            dirs.push(dir);
        }
        let trust = loadgen::tls::Trust {
            ca_file: Some(&here),
            insecure: false,
        };
        let tls = loadgen::tls::Tls::client(&front.to_string(), &trust)
            .map_err(|e| anyhow::anyhow!("{}", e.0))?;
        Ok(Clients {
            ca_files,
            tls,
            _dirs: dirs,
        })
    }

    /// The CA's path on `host` (a load host of the stack).
    pub fn ca_file(&self, host: &Host) -> Option<&str> {
        self.ca_files
            .iter()
            .find(|(h, _)| h.same(host))
            .map(|(_, p)| p.as_str())
    }
}
