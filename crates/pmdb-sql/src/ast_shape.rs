//! Shapes of syntax-tree nodes that several statements accept, each node taken apart
//! with every field named (a parser upgrade that adds one fails to build here until it
//! is judged): a plain table reference, and a query with no clause around its body.

use datafusion::sql::sqlparser::ast::{
    LockClause, ObjectName, Query, SetExpr, TableAlias, TableFactor,
};

/// The name and alias of a reference to a table with no other clause (no arguments,
/// hints, time travel, partitions, sample or ordinality).
pub(crate) fn plain_table(t: &TableFactor) -> Option<(&ObjectName, Option<&TableAlias>)> {
    let TableFactor::Table {
        name,
        alias,
        args: None,
        with_hints,
        version: None,
        with_ordinality: false,
        partitions,
        json_path: None,
        sample: None,
        index_hints,
    } = t
    else {
        return None;
    };
    (with_hints.is_empty() && partitions.is_empty() && index_hints.is_empty())
        .then_some((name, alias.as_ref()))
}

/// The body of a query with no WITH, ORDER BY, LIMIT, FETCH or other clause around it,
/// and its locking clauses.
pub(crate) fn bare_query(q: &Query) -> Option<(&SetExpr, &[LockClause])> {
    let Query {
        with: None,
        body,
        order_by: None,
        limit_clause: None,
        fetch: None,
        locks,
        for_clause: None,
        settings: None,
        format_clause: None,
        pipe_operators,
    } = q
    else {
        return None;
    };
    pipe_operators
        .is_empty()
        .then_some((body.as_ref(), locks.as_slice()))
}
