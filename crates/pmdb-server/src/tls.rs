//! TLS: a rustls acceptor (ring) from a PEM certificate chain and key.

use std::sync::Arc;

use pgwire::tokio::TlsAcceptor;
use pgwire::tokio::tokio_rustls::rustls::ServerConfig;
use pgwire::tokio::tokio_rustls::rustls::pki_types::pem::PemObject;
use pgwire::tokio::tokio_rustls::rustls::pki_types::{CertificateDer, PrivateKeyDer};

use crate::error::ServerError;
use crate::options::TlsFiles;

/// The acceptor, and the leaf certificate (DER) SCRAM's channel binding needs.
pub fn acceptor(files: &TlsFiles) -> Result<(TlsAcceptor, Vec<u8>), ServerError> {
    let certs: Vec<CertificateDer<'static>> = CertificateDer::pem_file_iter(&files.cert)
        .and_then(|i| i.collect())
        .map_err(|e| ServerError::Tls(format!("{}: {e}", files.cert.display())))?;
    let leaf = certs
        .first()
        .ok_or_else(|| ServerError::Tls(format!("{} holds no certificate", files.cert.display())))?
        .to_vec();
    let key = PrivateKeyDer::from_pem_file(&files.key)
        .map_err(|e| ServerError::Tls(format!("{}: {e}", files.key.display())))?;
    let provider = Arc::new(pgwire::tokio::tokio_rustls::rustls::crypto::ring::default_provider());
    let config = ServerConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .map_err(|e| ServerError::Tls(e.to_string()))?
        .with_no_client_auth()
        .with_single_cert(certs, key)
        .map_err(|e| ServerError::Tls(e.to_string()))?;
    Ok((TlsAcceptor::from(Arc::new(config)), leaf))
}
