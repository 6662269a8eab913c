//! What the fast path recognised in a statement ([`Shape`]): its table, and the row it
//! reads, changes, removes or the rows it adds, with each value written in the statement
//! or left to a parameter.

use std::sync::Arc;

use datafusion::arrow::datatypes::{DataType, Schema};
use datafusion::common::ScalarValue;

use crate::arrow_conv::arrow_type;
use crate::pushdown::value_of;
use crate::row_locks::{LockMode, WaitPolicy};
use crate::sequence::Sequence;
use crate::sequence_functions::SequenceCalls;
use crate::table::Table;
use crate::types::{SqlType, Value, fits_precision};

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
    /// `v ± n` (Stock-Level's `$4 - 20`): the value of the operand plus `n` units of
    /// the column's type (a decimal's at its scale), if the sum fits the type.
    Offset(Box<Operand>, i128),
}

/// The value of `op` in a column of type `ty`, if it converts exactly (a sequence's
/// value taken for a session, whose `currval` it becomes).
pub(super) fn resolve(
    op: &Operand,
    ty: SqlType,
    params: &[ScalarValue],
    calls: &SequenceCalls,
) -> Option<Value> {
    match op {
        Operand::NextVal(seq) => value_of(&ScalarValue::Int64(Some(calls.next(seq).ok()?)), ty),
        Operand::Value(v) => Some(v.clone()),
        Operand::Param(i) => match params.get(*i)? {
            p if p.is_null() => Some(Value::Null),
            p => value_of(p, ty),
        },
        Operand::Now => {
            let now = std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .ok()?;
            Some(Value::Timestamp(i64::try_from(now.as_micros()).ok()?))
        }
        Operand::Offset(base, n) => match resolve(base, ty, params, calls)? {
            Value::Null => Some(Value::Null),
            base => of_units(ty, units(&base)?.checked_add(*n)?),
        },
    }
}

/// A summable value in its type's own units (a decimal's at its scale).
pub(super) fn units(v: &Value) -> Option<i128> {
    match v {
        Value::SmallInt(n) => Some(i128::from(*n)),
        Value::Int(n) => Some(i128::from(*n)),
        Value::BigInt(n) => Some(i128::from(*n)),
        Value::Decimal(n) => Some(*n),
        _ => None,
    }
}

/// `n` units as a value of type `ty`, if it fits.
pub(super) fn of_units(ty: SqlType, n: i128) -> Option<Value> {
    Some(match ty {
        SqlType::SmallInt => Value::SmallInt(n.try_into().ok()?),
        SqlType::Int => Value::Int(n.try_into().ok()?),
        SqlType::BigInt => Value::BigInt(n.try_into().ok()?),
        SqlType::Decimal { precision, .. } if fits_precision(precision, n) => Value::Decimal(n),
        _ => return None,
    })
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
    /// The rows of one key or of an IN list of keys: the table columns read, and the
    /// places among them of those shown.
    Select {
        keys: Vec<Vec<Operand>>,
        columns: Vec<usize>,
        shown: Vec<usize>,
        lock: Option<RowLock>,
    },
    /// The rows of one key or of an IN list of keys, changed alike.
    Update {
        keys: Vec<Vec<Operand>>,
        changes: Vec<(usize, NewValue)>,
    },
    Delete {
        keys: Vec<Vec<Operand>>,
    },
    Insert {
        positions: Vec<usize>,
        rows: Vec<Vec<Operand>>,
    },
    /// The rows of a range of keys.
    Range(Box<RangeRead>),
    /// The rows of several tables read by their keys, joined.
    Join(Box<KeyJoin>),
}

/// A join of rows read by their keys: the first table's (the driver's) by a range of
/// its primary key, each other's by its whole key, in the order of `tables`; every
/// comparison of the WHERE clause is checked on the rows so read.
#[derive(Clone)]
pub(super) struct KeyJoin {
    /// Each table in the order read, with its key: the driver's range, or the operands
    /// of each column of the whole key.
    pub tables: Vec<(Arc<Table>, JoinKey)>,
    /// The comparisons checked once the row of the table at the same place is read.
    pub filters: Vec<Vec<Filter>>,
    /// The columns the result is made of, each as a table's place and its column.
    pub columns: Vec<(usize, usize)>,
    pub output: JoinOutput,
}

/// How a table of a join is read.
#[derive(Clone, Debug)]
pub(super) enum JoinKey {
    /// The driver: a range of its primary key ([`RangeKeys::Bounded`]).
    Range(RangeKeys),
    /// A row by its whole key, each column's value given or that of a column of a table
    /// read before.
    Whole(Vec<KeyPart>),
}

/// The value of a key column of a table a join reads by its whole key.
#[derive(Clone, Debug)]
pub(super) enum KeyPart {
    Given(Operand),
    /// A table's place and its column, of the key column's type.
    Column(usize, usize),
}

/// A comparison a join checks on the rows it reads: a column (a table's place and its
/// column) with a value, or with a column of the same type.
#[derive(Clone, Debug)]
pub(super) struct Filter {
    pub column: (usize, usize),
    pub op: Comparison,
    pub with: Compared,
}

/// What a join's comparison compares a column with.
#[derive(Clone, Debug)]
pub(super) enum Compared {
    Value(Operand),
    Column(usize, usize),
}

/// A comparison of two values of one type.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Comparison {
    Eq,
    NotEq,
    Lt,
    LtEq,
    Gt,
    GtEq,
}

impl Comparison {
    /// Whether `ordering` (of the column against what it is compared with) passes.
    pub fn passes(self, ordering: std::cmp::Ordering) -> bool {
        use std::cmp::Ordering::{Equal, Greater, Less};
        match self {
            Comparison::Eq => ordering == Equal,
            Comparison::NotEq => ordering != Equal,
            Comparison::Lt => ordering == Less,
            Comparison::LtEq => ordering != Greater,
            Comparison::Gt => ordering == Greater,
            Comparison::GtEq => ordering != Less,
        }
    }

    /// `a op b` as `b op' a`.
    pub fn swapped(self) -> Comparison {
        match self {
            Comparison::Lt => Comparison::Gt,
            Comparison::LtEq => Comparison::GtEq,
            Comparison::Gt => Comparison::Lt,
            Comparison::GtEq => Comparison::LtEq,
            same => same,
        }
    }
}

/// What a join returns: rows of columns (places among its columns, each with its
/// name), or one row of aggregates over them.
#[derive(Clone, Debug)]
pub(super) enum JoinOutput {
    Rows(Vec<(usize, String)>),
    Aggregates(Vec<GroupItem>),
}

impl std::fmt::Debug for KeyJoin {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let tables: Vec<_> = self
            .tables
            .iter()
            .map(|(t, key)| (&t.def().name, key))
            .collect();
        f.debug_struct("KeyJoin")
            .field("tables", &tables)
            .field("filters", &self.filters)
            .field("columns", &self.columns)
            .field("output", &self.output)
            .finish()
    }
}

/// A read of the rows of some ranges of a key: the primary key's, or that of the index
/// at `index` (its place in the table), whose entries name the rows.
#[derive(Clone, Debug)]
pub(super) struct RangeRead {
    pub index: Option<usize>,
    pub keys: RangeKeys,
    /// The table columns read: those shown first, then those only sorted by.
    pub columns: Vec<usize>,
    pub output: RangeOutput,
    pub order: RowOrder,
    /// LIMIT n, applied after the order.
    pub limit: Option<Operand>,
    /// Taken on each row returned; only with rows in key order.
    pub lock: Option<RowLock>,
}

/// The ranges of a key a range read reads.
#[derive(Clone, Debug)]
pub(super) enum RangeKeys {
    /// The keys that begin with `prefix` and whose next column lies between `low` and
    /// `high` (each with whether it is included; a missing one leaves that side open).
    Bounded {
        prefix: Vec<Operand>,
        low: Option<(Operand, bool)>,
        high: Option<(Operand, bool)>,
    },
    /// The keys that begin with one of these prefixes (each of the key's leading
    /// columns, as many for each).
    Prefixes(Vec<Vec<Operand>>),
}

impl RangeKeys {
    /// How many of the key's leading columns hold one value in every row read.
    pub fn fixed(&self) -> usize {
        match self {
            RangeKeys::Bounded { prefix, .. } => prefix.len(),
            RangeKeys::Prefixes(_) => 0,
        }
    }
}

/// What a range read returns.
#[derive(Clone, Debug)]
pub(super) enum RangeOutput {
    /// These of the columns read (places among them), one row per row.
    Rows { shown: Vec<usize> },
    /// Rows of `items` over the rows read: one for each group of rows equal in the
    /// columns `by` (places among the columns read), or, with no `by`, one in all.
    Aggregates {
        by: Vec<usize>,
        items: Vec<GroupItem>,
    },
}

/// A column of an aggregating range read, with its name: a column it groups by (its
/// place among the columns read), or an aggregate.
#[derive(Clone, Debug)]
pub(super) enum GroupItem {
    Column(usize, String),
    Aggregate(Aggregate, String),
}

/// An aggregate of a range read, over a position in its columns.
#[derive(Clone, Copy, Debug)]
pub(super) enum Aggregate {
    CountRows,
    Count(usize),
    CountDistinct(usize),
    Sum(usize),
    Min(usize),
    Max(usize),
}

/// The order of a range read's rows.
#[derive(Clone, Debug)]
pub(super) enum RowOrder {
    /// The key's, ascending or descending.
    Key { descending: bool },
    /// Sorted by positions in its columns; with `distinct`, rows that repeat the shown
    /// columns are dropped.
    Sorted { by: Vec<SortKey>, distinct: bool },
}

/// One ORDER BY item of a sorted range read.
#[derive(Clone, Copy, Debug)]
pub(super) struct SortKey {
    pub column: usize,
    pub descending: bool,
    pub nulls_first: bool,
}

/// A statement the fast path serves, as recognised: its table and what it does there.
#[derive(Clone)]
pub(crate) struct Shape {
    pub(super) table: Arc<Table>,
    pub(super) kind: Kind,
}

/// The type of the sum of a column of Arrow type `ty`, as the general path gives it:
/// BIGINT for the smaller integers, NUMERIC for BIGINT (see crate::integer_overflow),
/// ten more digits (at most 38) for a NUMERIC.
pub(super) fn sum_type(ty: &DataType) -> DataType {
    match ty {
        DataType::Decimal128(precision, scale) => {
            DataType::Decimal128(precision.saturating_add(10).min(MAX_PRECISION), *scale)
        }
        DataType::Int64 => crate::integer_overflow::BIGINT_SUM,
        _ => DataType::Int64,
    }
}

/// Most digits of a NUMERIC.
const MAX_PRECISION: u8 = 38;

impl Shape {
    /// Whether the columns a statement was described with at Parse (`None`: no rows)
    /// are the ones the fast path gives it, by name and type.
    pub(crate) fn gives(&self, described: Option<&Schema>) -> bool {
        let names = |columns: &[usize]| -> Vec<(String, DataType)> {
            columns
                .iter()
                .map(|&c| {
                    let column = &self.table.def().columns[c];
                    (column.name.clone(), arrow_type(column.ty))
                })
                .collect()
        };
        let shown = |columns: &[usize], shown: &[usize]| {
            names(&shown.iter().map(|&at| columns[at]).collect::<Vec<_>>())
        };
        let given = match &self.kind {
            Kind::Select {
                columns, shown: s, ..
            } => shown(columns, s),
            Kind::Range(read) => match &read.output {
                RangeOutput::Rows { shown: s } => shown(&read.columns, s),
                RangeOutput::Aggregates { items, .. } => {
                    let of = |at: usize| arrow_type(self.table.types()[read.columns[at]]);
                    items.iter().map(|item| item_type(item, of)).collect()
                }
            },
            Kind::Join(join) => {
                let of = |at: usize| {
                    let (t, c) = join.columns[at];
                    arrow_type(join.tables[t].0.types()[c])
                };
                match &join.output {
                    JoinOutput::Rows(shown) => shown
                        .iter()
                        .map(|(at, name)| (name.clone(), of(*at)))
                        .collect(),
                    JoinOutput::Aggregates(items) => {
                        items.iter().map(|item| item_type(item, of)).collect()
                    }
                }
            }
            Kind::Update { .. } | Kind::Delete { .. } | Kind::Insert { .. } => {
                return described.is_none();
            }
        };
        described.is_some_and(|d| {
            d.fields().len() == given.len()
                && d.fields()
                    .iter()
                    .zip(&given)
                    .all(|(f, (name, ty))| f.name() == name && f.data_type() == ty)
        })
    }
}

/// The name and type of a column of aggregated rows, given the types of the columns
/// they are made of (by place).
fn item_type(item: &GroupItem, of: impl Fn(usize) -> DataType) -> (String, DataType) {
    match item {
        GroupItem::Column(at, name) => (name.clone(), of(*at)),
        GroupItem::Aggregate(aggregate, name) => {
            let ty = match *aggregate {
                Aggregate::CountRows | Aggregate::Count(_) | Aggregate::CountDistinct(_) => {
                    DataType::Int64
                }
                Aggregate::Sum(at) => sum_type(&of(at)),
                Aggregate::Min(at) | Aggregate::Max(at) => of(at),
            };
            (name.clone(), ty)
        }
    }
}

impl std::fmt::Debug for Shape {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Shape")
            .field("table", &self.table.def().name)
            .field("kind", &self.kind)
            .finish()
    }
}
