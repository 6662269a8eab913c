//! What each connection is doing, as `pg_stat_activity` shows it: who it is (process id,
//! user, database, application, client address), when it connected, the statement it
//! runs or ran last, when that began, whether it is in a transaction block and since
//! when. A connection registers once its client is known and leaves when it closes.
//! The channels it listens to (LISTEN) are kept with it: NOTIFY sends each of their
//! listeners a notification, which its socket delivers while it waits, outside a block.

use std::collections::{BTreeMap, BTreeSet};
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::{SystemTime, UNIX_EPOCH};

use parking_lot::Mutex;
use pgwire::api::ConnectionHandle;
use pmdb_sql::TxnStatus;

/// Microseconds since the Unix epoch, now.
fn now() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| i64::try_from(d.as_micros()).unwrap_or(i64::MAX))
}

/// One connection's row.
#[derive(Clone, Debug)]
pub struct Backend {
    pub pid: i32,
    pub user: String,
    pub database: String,
    pub application_name: String,
    /// `None` for a Unix-domain socket.
    pub client: Option<SocketAddr>,
    pub backend_start: i64,
    pub xact_start: Option<i64>,
    pub query_start: Option<i64>,
    pub state_change: i64,
    pub state: &'static str,
    pub query: String,
    /// What stops the connection's statement or ends the connection.
    pub control: Control,
    /// The channels it listens to.
    pub listening: BTreeSet<String>,
}

/// A NOTIFY, as the listening connections' clients receive it.
#[derive(Clone, Debug)]
pub struct Notification {
    /// The process id of the session that sent it.
    pub pid: i32,
    pub channel: String,
    pub payload: String,
}

/// What another session may do to a connection: cancel its running statement
/// (`pg_cancel_backend`), or end it (`pg_terminate_backend`).
#[derive(Clone, Debug)]
pub struct Control {
    pub cancel: Option<Arc<ConnectionHandle>>,
    /// Woken to end the connection; the socket's message loop waits on it.
    pub terminate: Arc<tokio::sync::Notify>,
    /// Where the notifications of the channels it listens to go.
    pub inbox: tokio::sync::mpsc::UnboundedSender<Notification>,
}

impl Control {
    fn cancel(&self) {
        if let Some(handle) = self.cancel.clone()
            && let Ok(runtime) = tokio::runtime::Handle::try_current()
        {
            runtime.spawn(async move { handle.cancel().await });
        }
    }
}

/// The server's connections, by process id.
#[derive(Default)]
pub struct Activity {
    backends: Mutex<BTreeMap<i32, Backend>>,
}

impl Activity {
    /// Registers a connection, idle; it leaves when the registration is dropped.
    pub fn register(
        self: &Arc<Self>,
        pid: i32,
        user: &str,
        database: &str,
        application_name: &str,
        client: Option<SocketAddr>,
        control: Control,
    ) -> Registration {
        let at = now();
        self.backends.lock().insert(
            pid,
            Backend {
                pid,
                user: user.to_owned(),
                database: database.to_owned(),
                application_name: application_name.to_owned(),
                client,
                backend_start: at,
                xact_start: None,
                query_start: None,
                state_change: at,
                state: "idle",
                query: String::new(),
                control,
                listening: BTreeSet::new(),
            },
        );
        Registration {
            activity: Arc::clone(self),
            pid,
        }
    }

    /// Every connection's row, by process id.
    pub fn backends(&self) -> Vec<Backend> {
        self.backends.lock().values().cloned().collect()
    }

    /// Asks the connection of process id `pid` to stop its running statement, as a
    /// cancel request does; whether there is such a connection.
    pub fn cancel(&self, pid: i32) -> bool {
        self.control(pid).map(|c| c.cancel()).is_some()
    }

    /// Ends the connection of process id `pid` (its running statement is cancelled
    /// first; its block rolls back as the session goes); whether there is one.
    pub fn terminate(&self, pid: i32) -> bool {
        self.control(pid)
            .map(|c| {
                c.cancel();
                // A permit: the connection sees it once its statement has stopped.
                c.terminate.notify_one();
            })
            .is_some()
    }

    /// Sends `notification` to every connection listening to its channel; a connection
    /// that is closing misses it.
    pub fn notify(&self, notification: &Notification) {
        for b in self.backends.lock().values() {
            if b.listening.contains(&notification.channel) {
                let _ = b.control.inbox.send(notification.clone());
            }
        }
    }

    fn control(&self, pid: i32) -> Option<Control> {
        self.backends.lock().get(&pid).map(|b| b.control.clone())
    }
}

/// A connection's place in [`Activity`].
pub struct Registration {
    activity: Arc<Activity>,
    pid: i32,
}

impl Registration {
    fn update(&self, f: impl FnOnce(&mut Backend)) {
        if let Some(b) = self.activity.backends.lock().get_mut(&self.pid) {
            f(b);
        }
    }

    /// The connection's process id, which its notifications carry.
    pub fn pid(&self) -> i32 {
        self.pid
    }

    /// The connection listens to `channel` from now on.
    pub fn listen(&self, channel: &str) {
        self.update(|b| {
            b.listening.insert(channel.to_owned());
        });
    }

    /// The connection stops listening to `channel` (`None`: to every channel).
    pub fn unlisten(&self, channel: Option<&str>) {
        self.update(|b| match channel {
            Some(c) => {
                b.listening.remove(c);
            }
            None => b.listening.clear(),
        });
    }

    /// The connection begins to run `query`.
    pub fn started(&self, query: &str) {
        let at = now();
        self.update(|b| {
            b.state = "active";
            b.state_change = at;
            b.query_start = Some(at);
            b.xact_start.get_or_insert(at);
            b.query.clear();
            b.query.push_str(query);
        });
    }

    /// The connection waits for its client, in `status`.
    pub fn waiting(&self, status: TxnStatus) {
        let state = match status {
            TxnStatus::Idle => "idle",
            TxnStatus::InBlock => "idle in transaction",
            TxnStatus::Failed => "idle in transaction (aborted)",
        };
        self.update(|b| {
            if b.state != state {
                b.state = state;
                b.state_change = now();
            }
            if status == TxnStatus::Idle {
                b.xact_start = None;
            }
        });
    }
}

impl Drop for Registration {
    fn drop(&mut self) {
        self.activity.backends.lock().remove(&self.pid);
    }
}
