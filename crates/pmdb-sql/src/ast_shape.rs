//! Shapes of syntax-tree nodes that several statements accept, each node taken apart
//! with every field named (a parser upgrade that adds one fails to build here until it
//! is judged): a plain table reference, a query with no clause around its body (or only
//! ORDER BY and LIMIT), a plain function call, and the conjuncts of a condition.

use datafusion::sql::sqlparser::ast::{
    BinaryOperator, DuplicateTreatment, Expr, Function, FunctionArg, FunctionArgExpr,
    FunctionArgumentList, FunctionArguments, Ident, LimitClause, LockClause, ObjectName, OrderBy,
    Query, SetExpr, TableAlias, TableFactor,
};

/// The conjuncts of `e`: the operands of its ANDs, parentheses taken off, in the order
/// written.
pub(crate) fn conjuncts(e: &Expr) -> Vec<&Expr> {
    let mut found = Vec::new();
    let mut left = vec![e];
    while let Some(e) = left.pop() {
        match e {
            Expr::Nested(e) => left.push(e),
            Expr::BinaryOp {
                left: l,
                op: BinaryOperator::And,
                right: r,
            } => {
                left.push(r);
                left.push(l);
            }
            e => found.push(e),
        }
    }
    found
}

/// The two sides of each conjunct of `e`, if each is an equality (`a = b AND c = d`).
pub(crate) fn equalities(e: &Expr) -> Option<Vec<(&Expr, &Expr)>> {
    conjuncts(e)
        .into_iter()
        .map(|e| match e {
            Expr::BinaryOp {
                left,
                op: BinaryOperator::Eq,
                right,
            } => Some((left.as_ref(), right.as_ref())),
            _ => None,
        })
        .collect()
}

/// A call `name(arg, …)` of a function named by one identifier, with arguments written
/// by position and no clause of any kind (no DISTINCT, FILTER, OVER, ORDER BY or WITHIN
/// GROUP): its name and arguments.
pub(crate) fn plain_call(e: &Expr) -> Option<(&Ident, Vec<&FunctionArgExpr>)> {
    match aggregate_call(e)? {
        (name, args, false) => Some((name, args)),
        (_, _, true) => None,
    }
}

/// A call as [`plain_call`] takes it, or with DISTINCT before its arguments (ALL is
/// what a call does without it): its name, arguments, and whether it has DISTINCT.
pub(crate) fn aggregate_call(e: &Expr) -> Option<(&Ident, Vec<&FunctionArgExpr>, bool)> {
    let Expr::Function(Function {
        name: ObjectName(name),
        uses_odbc_syntax: false,
        parameters: FunctionArguments::None,
        args:
            FunctionArguments::List(FunctionArgumentList {
                duplicate_treatment,
                args,
                clauses,
            }),
        filter: None,
        null_treatment: None,
        over: None,
        within_group,
    }) = e
    else {
        return None;
    };
    let [part] = name.as_slice() else {
        return None;
    };
    if !clauses.is_empty() || !within_group.is_empty() {
        return None;
    }
    let distinct = match duplicate_treatment {
        None => false,
        Some(DuplicateTreatment::Distinct) => true,
        Some(DuplicateTreatment::All) => return None,
    };
    let args = args
        .iter()
        .map(|a| match a {
            FunctionArg::Unnamed(arg) => Some(arg),
            _ => None,
        })
        .collect::<Option<Vec<_>>>()?;
    Some((part.as_ident()?, args, distinct))
}

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
    match ordered_query(q)? {
        OrderedQuery {
            body,
            order_by: None,
            limit: None,
            locks,
        } => Some((body, locks)),
        _ => None,
    }
}

/// A query's body with the clauses [`ordered_query`] allows around it.
pub(crate) struct OrderedQuery<'a> {
    pub body: &'a SetExpr,
    pub order_by: Option<&'a OrderBy>,
    pub limit: Option<&'a LimitClause>,
    pub locks: &'a [LockClause],
}

/// The body of a query with no WITH, FETCH or other clause around it but ORDER BY,
/// LIMIT and locking clauses.
pub(crate) fn ordered_query(q: &Query) -> Option<OrderedQuery<'_>> {
    let Query {
        with: None,
        body,
        order_by,
        limit_clause,
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
    pipe_operators.is_empty().then_some(OrderedQuery {
        body: body.as_ref(),
        order_by: order_by.as_ref(),
        limit: limit_clause.as_ref(),
        locks: locks.as_slice(),
    })
}
