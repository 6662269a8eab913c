//! [`Output`]: what a statement gives back, and [`CommandTag`], the tag PostgreSQL
//! reports for a command, built here for every command pmdb runs.

use std::fmt;

use datafusion::arrow::array::RecordBatch;
use datafusion::arrow::datatypes::SchemaRef;

/// What a statement gives back.
#[derive(Debug)]
pub enum Output {
    /// A result set (possibly empty).
    Rows {
        schema: SchemaRef,
        batches: Vec<RecordBatch>,
    },
    /// A command's tag.
    Command(CommandTag),
    /// The rows an INSERT, UPDATE or DELETE … RETURNING gives, and its tag.
    Returned {
        tag: CommandTag,
        schema: SchemaRef,
        batches: Vec<RecordBatch>,
    },
    /// The rows a COPY … TO STDOUT writes, and how.
    CopyOut {
        schema: SchemaRef,
        batches: Vec<RecordBatch>,
        format: CopyOutFormat,
    },
}

/// How COPY TO writes its rows.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CopyEncoding {
    Text,
    Csv,
    /// PostgreSQL's binary COPY format.
    Binary,
}

/// What a COPY … TO says of the data it writes, its defaults applied.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CopyOutFormat {
    pub encoding: CopyEncoding,
    pub delimiter: u8,
    /// How NULL is written (text and CSV).
    pub null: String,
    /// A first line of column names (CSV).
    pub header: bool,
    /// CSV's quote and escape characters.
    pub quote: u8,
    pub escape: u8,
    /// Per column: CSV quotes its values even where they need no quotes.
    pub force_quote: Vec<bool>,
}

/// A command's tag as PostgreSQL reports it: the command, and for those that count rows,
/// how many ("INSERT 0 3", "UPDATE 2", "CREATE TABLE").
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CommandTag {
    command: &'static str,
    rows: Option<u64>,
}

impl CommandTag {
    /// The tag of a command that counts no rows.
    pub const fn of(command: &'static str) -> CommandTag {
        CommandTag {
            command,
            rows: None,
        }
    }

    pub const fn insert(rows: u64) -> CommandTag {
        CommandTag::counted("INSERT", rows)
    }

    pub const fn update(rows: u64) -> CommandTag {
        CommandTag::counted("UPDATE", rows)
    }

    pub const fn delete(rows: u64) -> CommandTag {
        CommandTag::counted("DELETE", rows)
    }

    pub const fn copy(rows: u64) -> CommandTag {
        CommandTag::counted("COPY", rows)
    }

    pub const fn fetch(rows: u64) -> CommandTag {
        CommandTag::counted("FETCH", rows)
    }

    pub const fn moved(rows: u64) -> CommandTag {
        CommandTag::counted("MOVE", rows)
    }

    /// CREATE TABLE … AS's tag, as PostgreSQL gives it.
    pub const fn select(rows: u64) -> CommandTag {
        CommandTag::counted("SELECT", rows)
    }

    const fn counted(command: &'static str, rows: u64) -> CommandTag {
        CommandTag {
            command,
            rows: Some(rows),
        }
    }

    /// The command's words ("INSERT", "CREATE TABLE").
    pub fn command(&self) -> &'static str {
        self.command
    }

    /// The rows the command counted, for those that count them.
    pub fn rows(&self) -> Option<u64> {
        self.rows
    }

    /// Whether the tag carries an oid before its count (INSERT's, always 0 since
    /// tables have no oids).
    pub fn has_oid(&self) -> bool {
        self.command == "INSERT"
    }
}

impl fmt::Display for CommandTag {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.command)?;
        if self.has_oid() {
            f.write_str(" 0")?;
        }
        match self.rows {
            Some(n) => write!(f, " {n}"),
            None => Ok(()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tags_read_as_postgresql_writes_them() {
        assert_eq!(CommandTag::insert(3).to_string(), "INSERT 0 3");
        assert_eq!(CommandTag::update(0).to_string(), "UPDATE 0");
        assert_eq!(CommandTag::of("CREATE TABLE").to_string(), "CREATE TABLE");
        assert!(CommandTag::insert(1).has_oid() && !CommandTag::copy(1).has_oid());
    }
}
