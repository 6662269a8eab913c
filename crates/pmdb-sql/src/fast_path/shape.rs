//! What the fast path recognised in a statement ([`Shape`]): its table, and the row it
//! reads, changes, removes or the rows it adds, with each value written in the statement
//! or left to a parameter.

use std::sync::Arc;

use crate::row_locks::{LockMode, WaitPolicy};
use crate::sequence::Sequence;
use crate::table::Table;
use crate::types::Value;

/// A value a recognised statement names.
#[derive(Clone, Debug)]
pub(super) enum Operand {
    /// Written in the statement, already of the column's type.
    Value(Value),
    /// `$n`: parameter n - 1, given at each run.
    Param(usize),
    /// CURRENT_TIMESTAMP, read at each run.
    Now,
    /// `nextval('sequence')`, a serial column's default: taken at each run.
    NextVal(Arc<Sequence>),
}

/// A new value of an UPDATE: a value, or a column plus (or minus) an integer.
#[derive(Clone, Debug)]
pub(super) enum NewValue {
    Set(Operand),
    Add {
        column: usize,
        delta: Operand,
        negate: bool,
    },
}

/// The row lock a `SELECT … FOR …` of one row asks for.
#[derive(Clone, Copy, Debug)]
pub(crate) struct RowLock {
    pub mode: LockMode,
    pub policy: WaitPolicy,
}

/// What a statement does to its table, by its primary key (its columns' operands in key
/// order) or with rows of values.
#[derive(Clone, Debug)]
pub(super) enum Kind {
    Select {
        key: Vec<Operand>,
        projection: Vec<usize>,
        lock: Option<RowLock>,
    },
    Update {
        key: Vec<Operand>,
        changes: Vec<(usize, NewValue)>,
    },
    Delete {
        key: Vec<Operand>,
    },
    Insert {
        positions: Vec<usize>,
        rows: Vec<Vec<Operand>>,
    },
}

/// A statement the fast path serves, as recognised: its table and what it does there.
#[derive(Clone)]
pub(crate) struct Shape {
    pub(super) table: Arc<Table>,
    pub(super) kind: Kind,
}

impl std::fmt::Debug for Shape {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Shape")
            .field("table", &self.table.def().name)
            .field("kind", &self.kind)
            .finish()
    }
}
