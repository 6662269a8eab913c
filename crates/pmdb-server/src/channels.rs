//! LISTEN, UNLISTEN and NOTIFY read into what each does to a connection's channels: the
//! handler does it at once, or keeps it until the block commits (PostgreSQL's rules:
//! a notification is sent at commit, and never after a rollback).

use datafusion::sql::sqlparser::ast::Statement;
use pmdb_sql::SqlError;
use pmdb_sql::names::ident_name;

use crate::activity::{Activity, Notification, Registration};

/// PostgreSQL's limit on a NOTIFY payload, in bytes (its page size less a header).
const PAYLOAD_MAX: usize = 8000;

/// What a LISTEN, UNLISTEN or NOTIFY does.
pub enum ChannelChange {
    Listen(String),
    /// `None`: every channel.
    Unlisten(Option<String>),
    Notify(Notification),
}

/// Whether `s` is a LISTEN, UNLISTEN or NOTIFY.
pub fn is_channel_command(s: &Statement) -> bool {
    matches!(
        s,
        Statement::LISTEN { .. } | Statement::UNLISTEN { .. } | Statement::NOTIFY { .. }
    )
}

/// The command tag and the change of `s` (one [`is_channel_command`] accepts), sent by
/// the connection of process id `pid`; `None` for another statement.
pub fn change_of(
    s: &Statement,
    pid: i32,
) -> Option<Result<(&'static str, ChannelChange), SqlError>> {
    Some(Ok(match s {
        Statement::LISTEN { channel } => ("LISTEN", ChannelChange::Listen(ident_name(channel))),
        Statement::UNLISTEN { channel } => {
            let one = channel.quote_style.is_some() || channel.value != "*";
            (
                "UNLISTEN",
                ChannelChange::Unlisten(one.then(|| ident_name(channel))),
            )
        }
        Statement::NOTIFY { channel, payload } => {
            let payload = payload.clone().unwrap_or_default();
            if payload.len() >= PAYLOAD_MAX {
                return Some(Err(SqlError::user("22023", "payload string too long")));
            }
            let n = Notification {
                pid,
                channel: ident_name(channel),
                payload,
            };
            ("NOTIFY", ChannelChange::Notify(n))
        }
        _ => return None,
    }))
}

impl ChannelChange {
    /// Does the change for the connection registered as `backend`.
    pub fn apply(self, backend: &Registration, activity: &Activity) {
        match self {
            ChannelChange::Listen(channel) => backend.listen(&channel),
            ChannelChange::Unlisten(channel) => backend.unlisten(channel.as_deref()),
            ChannelChange::Notify(n) => activity.notify(&n),
        }
    }
}
