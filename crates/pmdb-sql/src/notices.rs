//! Notices: what a statement tells its client beside its outcome, at a severity below an
//! error's (PostgreSQL's DEBUG, LOG, INFO, NOTICE and WARNING): a `DROP … IF EXISTS`
//! that found nothing, a BEGIN inside a block, a DO block's RAISE. A session collects
//! them while its statement runs ([`Notices`]); the server sends them before the
//! statement's result, as far as the client's `client_min_messages` asks.

use parking_lot::Mutex;

/// How serious a notice is, least first, as `client_min_messages` ranks them (INFO
/// aside: PostgreSQL always sends it).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Severity {
    Debug,
    Log,
    Info,
    Notice,
    Warning,
}

impl Severity {
    /// The severity's name in a notice message.
    pub fn name(self) -> &'static str {
        match self {
            Severity::Debug => "DEBUG",
            Severity::Log => "LOG",
            Severity::Info => "INFO",
            Severity::Notice => "NOTICE",
            Severity::Warning => "WARNING",
        }
    }

    /// The severity a `client_min_messages` value names (`debug1` to `debug5` are all
    /// [`Severity::Debug`]); `None` for a value that names none (ERROR among them).
    pub fn of_setting(value: &str) -> Option<Severity> {
        Some(match value.to_ascii_lowercase().as_str() {
            "debug" | "debug1" | "debug2" | "debug3" | "debug4" | "debug5" => Severity::Debug,
            "log" => Severity::Log,
            "info" => Severity::Info,
            "notice" => Severity::Notice,
            "warning" => Severity::Warning,
            _ => return None,
        })
    }

    /// Whether a notice of this severity reaches a client whose `client_min_messages`
    /// is `least` (`None`: ERROR, which only INFO passes). LOG ranks below NOTICE for
    /// clients, and INFO always reaches them.
    pub fn reaches(self, least: Option<Severity>) -> bool {
        let rank = |s: Severity| match s {
            Severity::Debug => 0,
            Severity::Log => 1,
            Severity::Info | Severity::Notice => 2,
            Severity::Warning => 3,
        };
        self == Severity::Info || least.is_some_and(|least| rank(self) >= rank(least))
    }
}

/// One notice, in the fields of PostgreSQL's NoticeResponse.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Notice {
    pub severity: Severity,
    pub sqlstate: String,
    pub message: String,
    pub detail: Option<String>,
    pub hint: Option<String>,
    /// Where it was raised (PostgreSQL's CONTEXT: a DO block's line).
    pub context: Option<String>,
    /// PostgreSQL's name for what reported it, where drivers show it.
    pub routine: Option<&'static str>,
}

impl Notice {
    pub(crate) fn new(severity: Severity, sqlstate: &str, message: impl Into<String>) -> Notice {
        Notice {
            severity,
            sqlstate: sqlstate.to_owned(),
            message: message.into(),
            detail: None,
            hint: None,
            context: None,
            routine: None,
        }
    }

    /// What `IF EXISTS` says of a `kind` (`table`, `view`, …) called `name` that is not
    /// there.
    pub(crate) fn skipped_missing(kind: &str, name: &str) -> Notice {
        Notice::new(
            Severity::Notice,
            "00000",
            format!("{kind} \"{name}\" does not exist, skipping"),
        )
    }

    /// What `IF NOT EXISTS` says of a `kind` called `name` that is there already, with
    /// the SQLSTATE of the error it would otherwise be.
    pub(crate) fn skipped_existing(kind: &str, name: &str, sqlstate: &str) -> Notice {
        Notice::new(
            Severity::Notice,
            sqlstate,
            format!("{kind} \"{name}\" already exists, skipping"),
        )
    }
}

/// The notices of the statement a session is running, in the order they were raised.
#[derive(Default)]
pub(crate) struct Notices(Mutex<Vec<Notice>>);

impl Notices {
    pub fn push(&self, notice: Notice) {
        self.0.lock().push(notice);
    }

    /// The notices raised since the last call.
    pub fn take(&self) -> Vec<Notice> {
        std::mem::take(&mut *self.0.lock())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn client_min_messages_ranks_as_postgresql_does() {
        let notice = Severity::of_setting("NOTICE");
        assert!(Severity::Notice.reaches(notice) && Severity::Warning.reaches(notice));
        assert!(!Severity::Log.reaches(notice) && !Severity::Debug.reaches(notice));
        let warning = Severity::of_setting("warning");
        assert!(!Severity::Notice.reaches(warning));
        // INFO always reaches the client; LOG only a client asking for LOG or less.
        assert!(Severity::Info.reaches(None) && !Severity::Warning.reaches(None));
        assert!(Severity::Log.reaches(Severity::of_setting("log")));
        assert!(Severity::Debug.reaches(Severity::of_setting("debug3")));
        assert_eq!(Severity::of_setting("error"), None);
    }
}
