//! The server's TLS: a certificate authority made for each server (as `kubeadm init` makes
//! one per cluster) and a serving certificate it signs for every name a client may dial —
//! `127.0.0.1`, `localhost`, the `kubernetes` Service's cluster IP and its DNS names — so
//! kubectl, kube-rs, the Python client and in-cluster clients (which trust the `ca.crt` of
//! their projected ServiceAccount volume) verify the server as on a real cluster.

use std::net::{IpAddr, Ipv4Addr};
use std::sync::Arc;

use rcgen::{
    BasicConstraints, CertificateParams, DnType, ExtendedKeyUsagePurpose, IsCa, Issuer, KeyPair,
    KeyUsagePurpose, SanType,
};
use rustls::pki_types::{CertificateDer, PrivateKeyDer, PrivatePkcs8KeyDer};

/// The DNS names of the `kubernetes` Service a serving certificate carries.
pub const SERVICE_DNS_NAMES: [&str; 5] = [
    "localhost",
    "kubernetes",
    "kubernetes.default",
    "kubernetes.default.svc",
    "kubernetes.default.svc.cluster.local",
];

/// A server's CA and the rustls configuration serving with a certificate it signed.
pub struct ServerTls {
    ca_pem: String,
    ca_der: Vec<u8>,
    config: Arc<rustls::ServerConfig>,
}

/// Making the certificates failed (the system CSPRNG or the encoder failed).
#[derive(Debug, thiserror::Error)]
#[error("cannot make the API server's TLS certificates: {0}")]
pub struct TlsError(String);

fn err(e: impl std::fmt::Display) -> TlsError {
    TlsError(e.to_string())
}

impl ServerTls {
    /// A fresh CA and a serving certificate for `127.0.0.1`, `extra_ips` and
    /// [`SERVICE_DNS_NAMES`].
    pub fn generate(extra_ips: &[Ipv4Addr]) -> Result<Self, TlsError> {
        let ca_key = KeyPair::generate().map_err(err)?;
        let mut ca_params = CertificateParams::new(Vec::<String>::new()).map_err(err)?;
        ca_params
            .distinguished_name
            .push(DnType::CommonName, "rehearsal-embedded-ca");
        ca_params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
        ca_params.key_usages = vec![
            KeyUsagePurpose::KeyCertSign,
            KeyUsagePurpose::CrlSign,
            KeyUsagePurpose::DigitalSignature,
        ];
        let ca_cert = ca_params.self_signed(&ca_key).map_err(err)?;
        let issuer = Issuer::new(ca_params, ca_key);

        let serving_key = KeyPair::generate().map_err(err)?;
        let mut params = CertificateParams::new(Vec::<String>::new()).map_err(err)?;
        params
            .distinguished_name
            .push(DnType::CommonName, "kube-apiserver");
        let mut ips = vec![Ipv4Addr::LOCALHOST];
        ips.extend(extra_ips.iter().filter(|ip| **ip != Ipv4Addr::LOCALHOST));
        params.subject_alt_names = ips
            .into_iter()
            .map(|ip| SanType::IpAddress(IpAddr::V4(ip)))
            .collect();
        for name in SERVICE_DNS_NAMES {
            params
                .subject_alt_names
                .push(SanType::DnsName(name.try_into().map_err(err)?));
        }
        params.key_usages = vec![
            KeyUsagePurpose::DigitalSignature,
            KeyUsagePurpose::KeyEncipherment,
        ];
        params.extended_key_usages = vec![ExtendedKeyUsagePurpose::ServerAuth];
        params.use_authority_key_identifier_extension = true;
        let serving = params.signed_by(&serving_key, &issuer).map_err(err)?;

        let chain = vec![
            CertificateDer::from(serving.der().to_vec()),
            CertificateDer::from(ca_cert.der().to_vec()),
        ];
        let key = PrivateKeyDer::Pkcs8(PrivatePkcs8KeyDer::from(serving_key.serialize_der()));
        let mut config = rustls::ServerConfig::builder_with_provider(Arc::new(
            rustls::crypto::ring::default_provider(),
        ))
        .with_safe_default_protocol_versions()
        .map_err(err)?
        .with_no_client_auth()
        .with_single_cert(chain, key)
        .map_err(err)?;
        // HTTP/1.1 only: exec, attach and port-forward upgrade the connection to WebSocket.
        config.alpn_protocols = vec![b"http/1.1".to_vec()];
        Ok(ServerTls {
            ca_pem: ca_cert.pem(),
            ca_der: ca_cert.der().to_vec(),
            config: Arc::new(config),
        })
    }

    /// The CA certificate (PEM): what `certificate-authority-data` and a pod's `ca.crt` hold.
    pub fn ca_pem(&self) -> &str {
        &self.ca_pem
    }

    /// The CA certificate (DER), as `kube::Config::root_cert` takes it.
    pub fn ca_der(&self) -> &[u8] {
        &self.ca_der
    }

    pub fn acceptor(&self) -> tokio_rustls::TlsAcceptor {
        tokio_rustls::TlsAcceptor::from(self.config.clone())
    }
}
