//! What the fast path recognised in a statement ([`Shape`]): its table, and the row it
//! reads, changes, removes or the rows it adds, with each value written in the statement
//! or left to a parameter.

use std::sync::Arc;

use crate::row_locks::{LockMode, WaitPolicy};
use crate::sequence::Sequence;
use crate::table::Table;
use crate::types::{SqlType, Value};

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

/// A new value of an UPDATE: a value, or a sum (a column or a value, plus or minus a
/// value).
#[derive(Clone, Debug)]
pub(super) enum NewValue {
    Set(Operand),
    Add {
        base: Base,
        delta: Operand,
        negate: bool,
    },
}

/// What an UPDATE's sum adds to.
#[derive(Clone, Debug)]
pub(super) enum Base {
    /// The row's value of this column (of the target's type).
    Column(usize),
    Value(Operand),
}

/// The type of the delta an UPDATE adds to a column of type `ty`: a decimal's own, so
/// that the sum is exact at its scale; a BIGINT for the integers.
pub(super) fn delta_type(ty: SqlType) -> SqlType {
    match ty {
        SqlType::Decimal { .. } => ty,
        _ => SqlType::BigInt,
    }
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
    /// The rows of one key or of an IN list of keys.
    Select {
        keys: Vec<Vec<Operand>>,
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
