//! Authentication at startup: SCRAM-SHA-256 against the configured users (a salted
//! password per user, made once when the server starts), or trust when asked for; and
//! the connection limit, checked before either.

use std::collections::HashMap;
use std::fmt::Debug;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use async_trait::async_trait;
use futures::Sink;
use pgwire::api::auth::sasl::SASLAuthStartupHandler;
use pgwire::api::auth::sasl::scram::{ScramAuth, gen_salted_password};
use pgwire::api::auth::{
    AuthSource, DefaultServerParameterProvider, LoginInfo, Password, StartupHandler,
    finish_authentication, protocol_negotiation, save_startup_parameters_to_metadata,
};
use pgwire::api::{
    ClientInfo, ConnectionGuard, ConnectionHandle, ConnectionManager, PgWireConnectionState,
    PidSecretKeyGenerator, RandomPidSecretKeyGenerator,
};
use pgwire::error::{ErrorInfo, PgWireError, PgWireResult};
use pgwire::messages::startup::PasswordMessageFamily;
use pgwire::messages::{PgWireBackendMessage, PgWireFrontendMessage};
use rand::RngCore;

use crate::compat::SERVER_VERSION;
use crate::options::{Auth, Users};

/// PBKDF2 iterations of the salted passwords (PostgreSQL's default).
const ITERATIONS: usize = 4096;

/// Each user's salt and salted password.
#[derive(Debug)]
struct Passwords {
    users: HashMap<String, (Vec<u8>, Vec<u8>)>,
    /// What an unknown user is checked against, so that a wrong name fails at the same
    /// step, with the same message, as a wrong password.
    decoy: (Vec<u8>, Vec<u8>),
}

fn salted(password: &str) -> (Vec<u8>, Vec<u8>) {
    let mut salt = vec![0u8; 16];
    rand::rng().fill_bytes(&mut salt);
    let hash = gen_salted_password(password, &salt, ITERATIONS);
    (salt, hash)
}

#[async_trait]
impl AuthSource for Passwords {
    async fn get_password(&self, login: &LoginInfo) -> PgWireResult<Password> {
        let (salt, hash) = login
            .user()
            .and_then(|u| self.users.get(u))
            .unwrap_or(&self.decoy);
        Ok(Password::new(Some(salt.clone()), hash.clone()))
    }
}

/// The parameters a client is told at startup: pgwire's, with the server version pmdb
/// answers to (`SHOW server_version` and `version()` say the same).
fn server_parameters() -> DefaultServerParameterProvider {
    let mut parameters = DefaultServerParameterProvider::default();
    parameters.server_version = SERVER_VERSION.to_owned();
    parameters
}

/// Lets anyone in.
pub struct Trust {
    manager: Arc<ConnectionManager>,
    keys: RandomPidSecretKeyGenerator,
}

#[async_trait]
impl StartupHandler for Trust {
    async fn on_startup<C>(
        &self,
        client: &mut C,
        message: PgWireFrontendMessage,
    ) -> PgWireResult<()>
    where
        C: ClientInfo + Sink<PgWireBackendMessage> + Unpin + Send,
        C::Error: Debug,
        PgWireError: From<<C as Sink<PgWireBackendMessage>>::Error>,
    {
        let PgWireFrontendMessage::Startup(startup) = &message else {
            return Ok(());
        };
        protocol_negotiation(client, startup).await?;
        save_startup_parameters_to_metadata(client, startup);
        let (pid, secret_key) = self.keys.generate(client);
        client.set_pid_and_secret_key(pid, secret_key.clone());
        // Where cancel requests find the connection.
        let (handle, guard) = self.manager.register(pid, secret_key);
        client
            .session_extensions()
            .insert::<Arc<ConnectionHandle>>(handle);
        client.session_extensions().insert::<ConnectionGuard>(guard);
        finish_authentication(client, &server_parameters()).await?;
        client.set_state(PgWireConnectionState::ReadyForQuery);
        Ok(())
    }
}

/// The startup handler the server was configured with.
pub enum Authenticator {
    Trust(Trust),
    Scram(SASLAuthStartupHandler<DefaultServerParameterProvider>),
}

impl Authenticator {
    /// `certificate`: the TLS leaf certificate, for SCRAM's channel binding.
    pub fn new(
        auth: &Auth,
        manager: Arc<ConnectionManager>,
        certificate: Option<&[u8]>,
    ) -> Result<Authenticator, crate::error::ServerError> {
        Ok(match auth {
            Auth::Trust => Authenticator::Trust(Trust {
                manager,
                keys: RandomPidSecretKeyGenerator::default(),
            }),
            Auth::Scram(users) => Authenticator::Scram(scram(users, manager, certificate)?),
        })
    }
}

fn scram(
    users: &Users,
    manager: Arc<ConnectionManager>,
    certificate: Option<&[u8]>,
) -> Result<SASLAuthStartupHandler<DefaultServerParameterProvider>, crate::error::ServerError> {
    let passwords = Passwords {
        users: users
            .iter()
            .map(|(n, p)| (n.to_owned(), salted(p)))
            .collect(),
        decoy: salted(&format!("{:x}", rand::random::<u128>())),
    };
    let mut scram = ScramAuth::new(Arc::new(passwords));
    scram.set_iterations(ITERATIONS);
    if let Some(cert) = certificate {
        scram
            .configure_certificate(cert)
            .map_err(|e| crate::error::ServerError::Tls(format!("channel binding: {e}")))?;
    }
    // The same parameters as trust sends, so clients see one server.
    Ok(SASLAuthStartupHandler::new(Arc::new(server_parameters()))
        .with_scram(scram)
        .with_connection_manager(manager))
}

/// One connection's startup: refused at once when the server is full, else
/// authenticated.
pub struct Gate {
    pub authenticator: Arc<Authenticator>,
    pub full: bool,
    /// Whether the client's SASLInitialResponse came: the password messages after it
    /// are SASLResponses.
    pub sasl_begun: AtomicBool,
}

impl Gate {
    pub fn new(authenticator: Arc<Authenticator>, full: bool) -> Gate {
        Gate {
            authenticator,
            full,
            sasl_begun: AtomicBool::new(false),
        }
    }
}

/// Whether `body` is a well-formed SASLInitialResponse: a mechanism's name ending in a
/// NUL, then the length of the data that follows (-1: none) and exactly that much data.
/// pgwire's decoder trusts the length and panics on one that lies.
fn sasl_initial_response_ok(body: &[u8]) -> bool {
    let Some(nul) = body.iter().position(|&b| b == 0) else {
        return false;
    };
    let rest = &body[nul + 1..];
    let Some((len, data)) = rest.split_first_chunk::<4>() else {
        return false;
    };
    match i32::from_be_bytes(*len) {
        -1 => data.is_empty(),
        n => usize::try_from(n).is_ok_and(|n| n == data.len()),
    }
}

#[async_trait]
impl StartupHandler for Gate {
    async fn on_startup<C>(
        &self,
        client: &mut C,
        message: PgWireFrontendMessage,
    ) -> PgWireResult<()>
    where
        C: ClientInfo + Sink<PgWireBackendMessage> + Unpin + Send + Sync,
        C::Error: Debug,
        PgWireError: From<<C as Sink<PgWireBackendMessage>>::Error>,
    {
        if self.full {
            return Err(PgWireError::UserError(Box::new(ErrorInfo::new(
                "FATAL".into(),
                "53300".into(),
                "sorry, too many clients already".into(),
            ))));
        }
        match self.authenticator.as_ref() {
            Authenticator::Trust(t) => t.on_startup(client, message).await,
            Authenticator::Scram(s) => {
                if let PgWireFrontendMessage::PasswordMessageFamily(PasswordMessageFamily::Raw(
                    body,
                )) = &message
                    && !self.sasl_begun.swap(true, Ordering::Relaxed)
                    && !sasl_initial_response_ok(body)
                {
                    return Err(PgWireError::UserError(Box::new(ErrorInfo::new(
                        "FATAL".into(),
                        "08P01".into(),
                        "malformed SASL message".into(),
                    ))));
                }
                s.on_startup(client, message).await
            }
        }
    }
}
