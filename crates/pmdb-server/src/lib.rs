//! pmdb-server: the PostgreSQL wire protocol over pmdb-sql, so `psql`, drivers and
//! `pgbench` connect to pmdb. It owns the network side: the accept loop with its
//! connection limit and graceful shutdown ([`Server`]), authentication (SCRAM-SHA-256
//! with users from a file or options, or trust when asked for) and TLS, the simple and
//! extended query protocols with prepared statements, portals and cancel requests, the
//! mapping of Arrow results and parameters to PostgreSQL types in the text and binary
//! formats, the session settings clients expect (`SET`, `SHOW`), and enough of
//! `pg_catalog` for psql's `\d` and drivers' start-up queries, and the databases
//! CREATE DATABASE makes beside the server's own. Each connection is a
//! [`pmdb_sql::SqlSession`], so BEGIN / COMMIT map onto engine transactions.

#![forbid(unsafe_code)]

mod activity;
mod auth;
mod channels;
mod compat;
mod copy;
mod copy_binary;
mod copy_csv;
mod databases;
mod encode;
mod error;
mod float_text;
mod handler;
mod numeric;
mod options;
mod params;
mod pg_array;
mod pg_catalog;
mod pg_record;
mod plan_cache;
mod server;
mod session_statements;
mod socket;
mod sync_flush;
mod timeouts;
mod tls;

pub use databases::DatabaseStore;
pub use encode::copy_bytes;
pub use error::ServerError;
pub use options::{Auth, ServerOptions, TlsFiles, Users};
pub use server::{RunningServer, Server};
