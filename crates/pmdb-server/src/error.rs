//! The server's error type: what keeps it from starting.

#[derive(Debug, thiserror::Error)]
pub enum ServerError {
    #[error("{what}: {source}")]
    Io {
        what: String,
        source: std::io::Error,
    },
    #[error("TLS: {0}")]
    Tls(String),
    #[error("users: {0}")]
    Users(String),
    #[error("invalid option: {0}")]
    Options(String),
    #[error("cannot set up pg_catalog: {0}")]
    Catalog(String),
}
