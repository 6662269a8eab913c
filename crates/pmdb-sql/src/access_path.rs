//! Which keys a scan of a table reads ([`Access`]) and how many rows that is: the
//! primary key or the index whose leading columns the filters narrow furthest, or the
//! whole table; the rows a narrowed scan reads, counted up to a bound, so that the
//! optimizer sizes a join's sides by what they read (a key range of a few hundred order
//! lines against a warehouse's hundred thousand stock rows) rather than by the table.
//! Filters a join learns at run time (DataFusion's dynamic filters: the build side's
//! keys as an IN list) narrow the same way, from their physical form.

use std::sync::Arc;

use datafusion::arrow::datatypes::SchemaRef;
use datafusion::common::Column;
use datafusion::functions::core::expr_fn::r#struct;
use datafusion::logical_expr::{Expr, Operator, binary_expr};
use datafusion::physical_expr::expressions::{self as physical, InListExpr};
use datafusion::physical_expr::{PhysicalExpr, ScalarFunctionExpr};
use pmdb_prefetch::Prefetcher;

use crate::error::Result;
use crate::pushdown::{KeyRange, Narrowing, key_ranges, stored_keys};
use crate::read_point::ReadPoint;
use crate::table::Table;

/// Which keys a scan reads.
#[derive(Clone, Debug)]
pub enum Access {
    /// Ranges of the rows subtable, in order.
    Rows(Vec<KeyRange>),
    /// Ranges of index `index` (its position in the table), each entry's row read by key.
    Index { index: usize, ranges: Vec<KeyRange> },
    /// The whole table, cut into disjoint key ranges read in parallel, one a partition.
    Split(Vec<KeyRange>),
    /// The whole table from its columnar segments, a partition per key range of the
    /// chunks' first rows, with the helper threads that prefetch the chunks ahead.
    Columns {
        ranges: Vec<KeyRange>,
        prefetcher: Option<Arc<Prefetcher>>,
    },
}

impl Access {
    /// Whether it reads every row.
    pub fn is_whole(&self) -> bool {
        match self {
            Access::Rows(r) => r.len() == 1 && r[0] == KeyRange::all(),
            Access::Split(_) | Access::Columns { .. } => true,
            Access::Index { .. } => false,
        }
    }
}

/// How to read the rows `filters` ask for from `table` (whose DataFusion schema is
/// `schema`): by the primary key or the index whose leading columns they narrow
/// furthest (with no statistics of values, the number of columns narrowed is the
/// measure). An index is taken only where they pin its columns to points, and only when
/// it reaches further than the primary key, or as far with all its columns pinned, since
/// each of its entries costs a second read. Else everything.
pub(crate) fn chosen(table: &Table, schema: &SchemaRef, filters: &[Expr]) -> Access {
    let def = table.def();
    if let Some(key) = schema.fields().get(def.columns.len())
        && let Some(points) = stored_keys(key.name(), filters)
    {
        return Access::Rows(points);
    }
    let names: Vec<String> = def.columns.iter().map(|c| c.name.clone()).collect();
    let narrow = |positions: &[u16]| {
        let cols: Vec<_> = positions
            .iter()
            .map(|&c| (usize::from(c), def.columns[usize::from(c)].ty))
            .collect();
        key_ranges(&cols, &names, filters)
    };
    let by_key = if def.primary_key.is_empty() {
        None
    } else {
        narrow(&def.primary_key)
    };
    let reach = by_key.as_ref().map_or(0, |n| n.columns);
    if by_key.is_none() || reach < def.primary_key.len() {
        // Further first; at equal reach, an index pinned whole (its values name
        // few rows, as a key's do) over a key pinned in part.
        let rank = |n: &Narrowing, whole: bool| (n.columns, whole);
        let mut best: Option<(usize, Narrowing, bool)> = None;
        for (i, ix) in table.indexes().iter().enumerate() {
            if let Some(n) = narrow(&ix.def.columns)
                && n.pinned
            {
                let whole = n.columns == ix.def.columns.len();
                let to_beat = best
                    .as_ref()
                    .map_or((reach, false), |(_, b, w)| rank(b, *w));
                if rank(&n, whole) > to_beat {
                    best = Some((i, n, whole));
                }
            }
        }
        if let Some((index, n, _)) = best {
            return Access::Index {
                index,
                ranges: n.ranges,
            };
        }
    }
    Access::Rows(by_key.map_or_else(|| vec![KeyRange::all()], |n| n.ranges))
}

/// Most rows a narrowed scan's estimate counts, and most ranges it counts them in.
const COUNTED_ROWS: usize = 1024;
const COUNTED_RANGES: usize = 64;

/// How many rows `access` reads of `table` at `read_point`, if it narrows to at most
/// [`COUNTED_ROWS`] of them in at most [`COUNTED_RANGES`] ranges: `None` for a scan of
/// everything or one that reads more (the caller estimates it otherwise).
pub(crate) fn counted_rows(
    table: &Table,
    read_point: &ReadPoint,
    access: &Access,
) -> Result<Option<usize>> {
    let (sub, ranges) = match access {
        Access::Rows(r) if !access.is_whole() => (table.rows(), r),
        Access::Index { index, ranges } => (&table.indexes()[*index].subtable, ranges),
        _ => return Ok(None),
    };
    if ranges.len() > COUNTED_RANGES {
        return Ok(None);
    }
    let mut rows = 0;
    for r in ranges {
        let mut scan = read_point.scan(sub, (r.start.clone(), r.end.clone()))?;
        while let Some(entry) = scan.next_ref() {
            entry?;
            rows += 1;
            if rows > COUNTED_ROWS {
                return Ok(None);
            }
        }
    }
    Ok(Some(rows))
}

/// The least number of rows a narrowed scan that [`counted_rows`] could not count is
/// taken to read.
pub(crate) const MORE_THAN_COUNTED: usize = COUNTED_ROWS + 1;

/// The IN lists among the conjuncts of physical filter `expr` (of rows too: `struct(a,
/// b) IN (…)`), in logical form (columns by name): the keys a hash join's build side
/// holds. Its bounds are left out: a range between the least and the greatest key of
/// the build side may span most of the table, and reading that in key order by one
/// partition is slower than the scan it would replace.
pub(crate) fn key_lists(expr: &Arc<dyn PhysicalExpr>) -> Vec<Expr> {
    let mut parts = Vec::new();
    conjuncts(expr, &mut parts);
    parts.retain(|e| matches!(e, Expr::InList(_)));
    parts
}

fn conjuncts(expr: &Arc<dyn PhysicalExpr>, out: &mut Vec<Expr>) {
    if let Some(b) = expr.downcast_ref::<physical::BinaryExpr>()
        && *b.op() == Operator::And
    {
        conjuncts(b.left(), out);
        conjuncts(b.right(), out);
        return;
    }
    out.extend(logical(expr));
}

/// The logical expression of `expr`, where it has one of the forms key narrowing reads.
fn logical(expr: &Arc<dyn PhysicalExpr>) -> Option<Expr> {
    if let Some(c) = expr.downcast_ref::<physical::Column>() {
        return Some(Expr::Column(Column::from_name(c.name())));
    }
    if let Some(l) = expr.downcast_ref::<physical::Literal>() {
        return Some(Expr::Literal(l.value().clone(), None));
    }
    if let Some(b) = expr.downcast_ref::<physical::BinaryExpr>() {
        let op = *b.op();
        if !matches!(
            op,
            Operator::And
                | Operator::Or
                | Operator::Eq
                | Operator::Lt
                | Operator::LtEq
                | Operator::Gt
                | Operator::GtEq
        ) {
            return None;
        }
        return Some(binary_expr(logical(b.left())?, op, logical(b.right())?));
    }
    if let Some(f) = expr.downcast_ref::<ScalarFunctionExpr>()
        && f.name() == "struct"
    {
        // A join on several columns hands over its keys as `struct(a, b) IN (…)`.
        let fields = f.args().iter().map(logical).collect::<Option<Vec<_>>>()?;
        return Some(r#struct(fields));
    }
    if let Some(i) = expr.downcast_ref::<InListExpr>() {
        if i.negated() {
            return None;
        }
        let list = i.list().iter().map(logical).collect::<Option<Vec<_>>>()?;
        return Some(logical(i.expr())?.in_list(list, false));
    }
    None
}
