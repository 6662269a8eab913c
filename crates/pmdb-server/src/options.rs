//! What a server starts with: where it listens (TCP, and a Unix-domain socket), who may connect and how, TLS, the
//! connection limit and how long a shutdown waits for clients.

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::time::Duration;

use crate::databases::DatabaseStore;
use crate::error::ServerError;

#[derive(Clone, Debug)]
pub struct ServerOptions {
    pub listen: SocketAddr,
    /// A directory to listen in as well, on the Unix-domain socket `.s.PGSQL.<port>`
    /// (the TCP port), where local clients connect by default (`psql -h DIR`).
    pub socket_dir: Option<PathBuf>,
    pub auth: Auth,
    pub tls: Option<TlsFiles>,
    /// Connections served at once; one more is refused with SQLSTATE 53300.
    pub max_connections: usize,
    /// How long a shutdown waits for connected clients before it closes them (their open
    /// transaction blocks are then discarded; what was committed stays).
    pub shutdown_grace: Duration,
    /// Where CREATE DATABASE makes databases (`None`: it is refused, and the server
    /// serves its one database).
    pub databases: Option<DatabaseStore>,
}

impl Default for ServerOptions {
    fn default() -> ServerOptions {
        ServerOptions {
            listen: SocketAddr::from(([127, 0, 0, 1], 5432)),
            socket_dir: None,
            auth: Auth::Trust,
            tls: None,
            max_connections: 100,
            shutdown_grace: Duration::from_secs(5),
            databases: None,
        }
    }
}

/// How clients prove who they are.
#[derive(Clone, Debug)]
pub enum Auth {
    /// Anyone may connect as anyone.
    Trust,
    /// SCRAM-SHA-256 against these users' passwords.
    Scram(Users),
}

/// User names and their passwords.
#[derive(Clone, Debug, Default)]
pub struct Users(BTreeMap<String, String>);

impl Users {
    /// Adds `name:password`.
    pub fn add(&mut self, spec: &str) -> Result<(), ServerError> {
        let (name, password) = spec
            .split_once(':')
            .ok_or_else(|| ServerError::Users(format!("{spec:?} is not NAME:PASSWORD")))?;
        if name.is_empty() || password.is_empty() {
            return Err(ServerError::Users(
                "a user needs a name and a password".into(),
            ));
        }
        self.0.insert(name.to_owned(), password.to_owned());
        Ok(())
    }

    /// Reads a file of `NAME:PASSWORD` lines (blank lines and lines starting with `#`
    /// are skipped). It holds passwords: keep it readable by the server's user alone.
    pub fn from_file(path: &Path) -> Result<Users, ServerError> {
        let text = std::fs::read_to_string(path).map_err(|source| ServerError::Io {
            what: format!("cannot read the users file {}", path.display()),
            source,
        })?;
        let mut users = Users::default();
        for (n, line) in text.lines().enumerate() {
            let line = line.trim();
            if line.is_empty() || line.starts_with('#') {
                continue;
            }
            users.add(line).map_err(|e| {
                ServerError::Users(format!("{} line {}: {e}", path.display(), n + 1))
            })?;
        }
        if users.is_empty() {
            return Err(ServerError::Users(format!(
                "{} names no user",
                path.display()
            )));
        }
        Ok(users)
    }

    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    pub fn names(&self) -> impl Iterator<Item = &str> {
        self.0.keys().map(String::as_str)
    }

    pub(crate) fn iter(&self) -> impl Iterator<Item = (&str, &str)> {
        self.0.iter().map(|(n, p)| (n.as_str(), p.as_str()))
    }
}

/// A PEM certificate chain and its PEM private key.
#[derive(Clone, Debug)]
pub struct TlsFiles {
    pub cert: PathBuf,
    pub key: PathBuf,
}
