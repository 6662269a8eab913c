//! Turns what PostgreSQL clients write against the catalog into SQL DataFusion plans:
//! `OPERATOR(pg_catalog.~)` into `~`, `COLLATE` dropped (pmdb compares bytes), casts to
//! `regclass`, `regtype`, `oid`, `pg_catalog.text`, … into conversions or plain types,
//! `pg_catalog.`-qualified function names unqualified and catalog relations qualified;
//! `information_schema.tables`, `.views` and `.columns` read from pmdb's catalog, with
//! PostgreSQL's type names.
//! A query block that reads one of the relations pmdb never has a row in (policies,
//! publications, inheritance, …) through an inner join has no rows either: it is
//! replaced by an empty one, and a subquery that became empty by its value (NULL, an
//! empty array, false), so that the constructs such blocks use and DataFusion lacks
//! (`ARRAY(SELECT …)`, set-returning functions over arrays) are never planned.

use std::ops::ControlFlow;

use datafusion::sql::parser::Statement as DfStatement;
use datafusion::sql::sqlparser::ast::{
    ArrayElemTypeDef, BinaryOperator, CastKind, DataType, ExactNumberInfo, Expr, Function,
    FunctionArg, FunctionArgExpr, FunctionArgumentList, FunctionArguments, GroupByExpr, Ident,
    JoinOperator, ObjectName, ObjectNamePart, Query, Select, SelectItem, SetExpr, Statement,
    TableAlias, TableFactor, TableWithJoins, TimezoneInfo, Value, VisitMut, VisitorMut,
};

use pmdb_sql::select_list_series::outside_subqueries;

use super::tables::{always_empty, is_relation};

/// Adapts a query of a PostgreSQL client in place; other statements are left alone. The
/// query's columns keep the names PostgreSQL gives them as the client wrote them.
pub fn adapt(statement: &mut DfStatement) {
    if let DfStatement::Statement(s) = statement {
        adapt_statement(s);
    }
}

/// Adapts `s`, or the query an EXPLAIN shows or a cursor reads.
fn adapt_statement(s: &mut Box<Statement>) {
    if let Statement::Explain { statement, .. } = s.as_mut() {
        return adapt_statement(statement);
    }
    if let Statement::Declare { stmts } = s.as_mut() {
        for declare in stmts {
            if let Some(q) = declare.for_query.take() {
                let mut query = Box::new(Statement::Query(q));
                adapt_statement(&mut query);
                if let Statement::Query(q) = *query {
                    declare.for_query = Some(q);
                }
            }
        }
        return;
    }
    if let Statement::Query(_) = s.as_ref() {
        let before = unaliased_names(s);
        let _ = s.visit(&mut Adapter);
        if let Statement::Query(q) = s.as_mut()
            && let SetExpr::Select(select) = q.body.as_mut()
        {
            for (item, name) in select.projection.iter_mut().zip(before) {
                if let (SelectItem::UnnamedExpr(e), Some(name)) = (&*item, name)
                    && pmdb_sql::column_name(e) != name
                {
                    *item = SelectItem::ExprWithAlias {
                        expr: e.clone(),
                        alias: Ident::with_quote('"', name),
                    };
                }
            }
        }
    }
}

/// The name of each item of the outermost select list that has no alias.
fn unaliased_names(s: &Statement) -> Vec<Option<String>> {
    match s {
        Statement::Query(q) => match q.body.as_ref() {
            SetExpr::Select(select) => select
                .projection
                .iter()
                .map(|item| match item {
                    SelectItem::UnnamedExpr(e) => Some(pmdb_sql::column_name(e)),
                    _ => None,
                })
                .collect(),
            _ => Vec::new(),
        },
        _ => Vec::new(),
    }
}

struct Adapter;

/// The `information_schema` relations pmdb answers as PostgreSQL does, and the
/// `pg_catalog` relations that hold their rows (DataFusion's own describe Arrow types).
const STANDARD_RELATIONS: &[(&str, &str)] = &[
    ("columns", "pmdb_standard_columns"),
    ("sequences", "pmdb_standard_sequences"),
    ("tables", "pmdb_standard_tables"),
    ("views", "pmdb_standard_views"),
];

impl VisitorMut for Adapter {
    type Break = ();

    fn post_visit_relation(&mut self, name: &mut ObjectName) -> ControlFlow<()> {
        if let [ObjectNamePart::Identifier(id)] = name.0.as_slice()
            && id.quote_style.is_none()
            && is_relation(&id.value.to_lowercase())
        {
            let id = id.clone();
            name.0 = vec![
                ObjectNamePart::Identifier(Ident::new("pg_catalog")),
                ObjectNamePart::Identifier(id),
            ];
        }
        ControlFlow::Continue(())
    }

    fn post_visit_table_factor(&mut self, factor: &mut TableFactor) -> ControlFlow<()> {
        if let TableFactor::Table { name, alias, .. } = factor
            && let [schema, relation] = name.0.as_slice()
            && ident_is(schema, "information_schema")
            && let Some(&(standard, ours)) = STANDARD_RELATIONS
                .iter()
                .find(|(standard, _)| ident_is(relation, standard))
        {
            name.0 = vec![
                ObjectNamePart::Identifier(Ident::new("pg_catalog")),
                ObjectNamePart::Identifier(Ident::new(ours)),
            ];
            // Still known by its own name to the rest of the query.
            alias.get_or_insert_with(|| TableAlias {
                explicit: false,
                name: Ident::new(standard),
                columns: Vec::new(),
                at: None,
            });
        }
        ControlFlow::Continue(())
    }

    fn post_visit_query(&mut self, query: &mut Query) -> ControlFlow<()> {
        if let SetExpr::Select(s) = query.body.as_mut() {
            outside_subqueries(&mut s.projection, |e| {
                exists_as_count(e);
                outer_conditions_out(e);
            });
        }
        if prune(&mut query.body) {
            // The ORDER BY of an empty result may name what is gone.
            query.order_by = None;
        }
        ControlFlow::Continue(())
    }

    fn post_visit_expr(&mut self, expr: &mut Expr) -> ControlFlow<()> {
        if let Some(new) = replacement(expr) {
            *expr = new;
        }
        ControlFlow::Continue(())
    }
}

/// DataFusion plans EXISTS in a WHERE clause but not in a select list, where psql puts
/// some: there `EXISTS (SELECT … FROM … WHERE …)` becomes
/// `(SELECT count(*) > 0 FROM … WHERE …)`, which it plans as a scalar subquery.
fn exists_as_count(expr: &mut Expr) {
    if let Expr::Exists { subquery, negated } = expr
        && let SetExpr::Select(s) = subquery.body.as_mut()
        && s.group_by == GroupByExpr::Expressions(Vec::new(), Vec::new())
        && s.having.is_none()
    {
        let count = Expr::BinaryOp {
            left: Box::new(count_star()),
            op: if *negated {
                BinaryOperator::Eq
            } else {
                BinaryOperator::Gt
            },
            right: Box::new(literal(Value::Number("0".into(), false))),
        };
        s.projection = vec![SelectItem::UnnamedExpr(count)];
        s.distinct = None;
        subquery.order_by = None;
        subquery.limit_clause = None;
        *expr = Expr::Subquery(subquery.clone());
    }
}

/// DataFusion turns a correlated scalar subquery into a join only when its correlation
/// is by equality; PostgreSQL's catalog queries put ones in select lists that find one
/// row by its key (a column's default in `pg_attrdef`, by relation and column number)
/// with a condition on the outer row alone as well (`AND a.atthasdef`), which would
/// leave them to run once per outer row. That condition moves out: `CASE WHEN cond THEN
/// (subquery) END`, the same value (NULL when the condition does not hold), as long as
/// the subquery does not aggregate (`count(*)` gives 0 for no row, not NULL).
fn outer_conditions_out(expr: &mut Expr) {
    let Expr::Subquery(subquery) = expr else {
        return;
    };
    if subquery.with.is_some() || subquery.order_by.is_some() || subquery.limit_clause.is_some() {
        // Picks its row itself: pmdb runs it per outer row as it is.
        return;
    }
    let SetExpr::Select(s) = subquery.body.as_mut() else {
        return;
    };
    if s.group_by != GroupByExpr::Expressions(Vec::new(), Vec::new())
        || s.having.is_some()
        || has_aggregate(s)
    {
        return;
    }
    let [SelectItem::UnnamedExpr(_) | SelectItem::ExprWithAlias { .. }] = s.projection.as_slice()
    else {
        return;
    };
    let inner: Vec<String> = s.from.iter().flat_map(relation_names).collect();
    let Some(filter) = s.selection.take() else {
        return;
    };
    let (outer, own): (Vec<Expr>, Vec<Expr>) = conjuncts(filter)
        .into_iter()
        .partition(|c| outer_only(c, &inner));
    s.selection = and_all(own);
    if let Some(condition) = and_all(outer) {
        *expr = Expr::Case {
            case_token:
                datafusion::sql::sqlparser::ast::helpers::attached_token::AttachedToken::empty(),
            end_token:
                datafusion::sql::sqlparser::ast::helpers::attached_token::AttachedToken::empty(),
            operand: None,
            conditions: vec![datafusion::sql::sqlparser::ast::CaseWhen {
                condition,
                result: expr.clone(),
            }],
            else_result: None,
        };
    }
}

/// The names a FROM item's relations go by (their aliases, else their last names).
fn relation_names(item: &TableWithJoins) -> Vec<String> {
    std::iter::once(&item.relation)
        .chain(item.joins.iter().map(|j| &j.relation))
        .filter_map(|factor| match factor {
            TableFactor::Table { alias: Some(a), .. } => Some(a.name.value.to_lowercase()),
            TableFactor::Table { name, .. } => Some(last_name(name).to_lowercase()),
            _ => None,
        })
        .collect()
}

fn conjuncts(e: Expr) -> Vec<Expr> {
    match e {
        Expr::BinaryOp {
            left,
            op: BinaryOperator::And,
            right,
        } => {
            let mut out = conjuncts(*left);
            out.extend(conjuncts(*right));
            out
        }
        Expr::Nested(inner) => conjuncts(*inner),
        e => vec![e],
    }
}

fn and_all(list: Vec<Expr>) -> Option<Expr> {
    list.into_iter().reduce(|left, right| Expr::BinaryOp {
        left: Box::new(left),
        op: BinaryOperator::And,
        right: Box::new(right),
    })
}

/// Whether `e` names columns only by qualifiers none of `inner`, and some.
fn outer_only(e: &Expr, inner: &[String]) -> bool {
    let mut qualified = 0;
    let mut own = false;
    let _ = datafusion::sql::sqlparser::ast::visit_expressions(e, |e| {
        match e {
            Expr::CompoundIdentifier(parts) if parts.len() >= 2 => {
                let q = parts[parts.len() - 2].value.to_lowercase();
                if inner.contains(&q) {
                    own = true;
                } else {
                    qualified += 1;
                }
            }
            Expr::Identifier(_) | Expr::Subquery(_) | Expr::Exists { .. } => own = true,
            _ => {}
        }
        ControlFlow::<()>::Continue(())
    });
    qualified > 0 && !own
}

fn count_star() -> Expr {
    call_with("count", FunctionArgExpr::Wildcard)
}

fn ident_is(part: &ObjectNamePart, name: &str) -> bool {
    matches!(part, ObjectNamePart::Identifier(id) if id.value.eq_ignore_ascii_case(name))
}

/// `pg_catalog.x` → `x`, or None for any other name.
fn unqualified(name: &ObjectName) -> Option<&str> {
    match name.0.as_slice() {
        [schema, ObjectNamePart::Identifier(id)] if ident_is(schema, "pg_catalog") => {
            Some(&id.value)
        }
        _ => None,
    }
}

fn last_name(name: &ObjectName) -> String {
    match name.0.last() {
        Some(ObjectNamePart::Identifier(id)) => id.value.to_lowercase(),
        _ => String::new(),
    }
}

fn call(name: &str, arg: Expr) -> Expr {
    call_with(name, FunctionArgExpr::Expr(arg))
}

fn call_with(name: &str, arg: FunctionArgExpr) -> Expr {
    Expr::Function(Function {
        name: ObjectName::from(vec![Ident::new(name)]),
        uses_odbc_syntax: false,
        parameters: FunctionArguments::None,
        args: FunctionArguments::List(FunctionArgumentList {
            duplicate_treatment: None,
            args: vec![FunctionArg::Unnamed(arg)],
            clauses: Vec::new(),
        }),
        filter: None,
        null_treatment: None,
        over: None,
        within_group: Vec::new(),
    })
}

fn literal(value: Value) -> Expr {
    Expr::Value(value.into())
}

/// The type DataFusion knows that a catalog type name stands for (`_int4`, the name
/// of an array type, stands for `int4[]`), as drivers write them qualified
/// (`$1::"pg_catalog"."_int4"`).
fn plain_type(name: &str) -> Option<DataType> {
    if let Some(element) = name.strip_prefix('_') {
        return Some(DataType::Array(ArrayElemTypeDef::SquareBracket(
            Box::new(plain_type(element)?),
            None,
        )));
    }
    Some(match name {
        "regproc" | "regprocedure" | "regrole" | "regoper" | "regconfig" | "text" | "name"
        | "char" | "bpchar" => DataType::Text,
        // PostgreSQL's one unsigned type: an `oid[]` stays one (drivers decode it).
        "oid" => DataType::IntUnsigned(None),
        "int8" | "xid" => DataType::BigInt(None),
        "int4" => DataType::Int(None),
        "int2" => DataType::SmallInt(None),
        "bool" => DataType::Boolean,
        "float4" => DataType::Real,
        "float8" => DataType::DoublePrecision,
        "varchar" => DataType::Varchar(None),
        "numeric" => DataType::Numeric(ExactNumberInfo::None),
        "date" => DataType::Date,
        "time" => DataType::Time(None, TimezoneInfo::None),
        "timestamp" => DataType::Timestamp(None, TimezoneInfo::None),
        "timestamptz" => DataType::Timestamp(None, TimezoneInfo::WithTimeZone),
        "interval" => DataType::Interval {
            fields: None,
            precision: None,
        },
        "bytea" => DataType::Bytea,
        "uuid" => DataType::Uuid,
        "json" => DataType::JSON,
        "jsonb" => DataType::JSONB,
        _ => return None,
    })
}

fn replacement(expr: &Expr) -> Option<Expr> {
    match expr {
        // `x = ANY (ARRAY[a, b])`, as SQLAlchemy's reflection asks which relation kinds
        // to list: DataFusion plans no array literal here, and it is `x IN (a, b)`.
        Expr::AnyOp {
            left,
            compare_op: BinaryOperator::Eq,
            right,
            is_some: _,
        } => match right.as_ref() {
            Expr::Array(array) if !array.elem.is_empty() => Some(Expr::InList {
                expr: left.clone(),
                list: array.elem.clone(),
                negated: false,
            }),
            _ => None,
        },
        Expr::BinaryOp {
            left,
            op: BinaryOperator::PGCustomBinaryOperator(parts),
            right,
        } => {
            let op = match parts.last().map(String::as_str) {
                Some("~") => BinaryOperator::PGRegexMatch,
                Some("~*") => BinaryOperator::PGRegexIMatch,
                Some("!~") => BinaryOperator::PGRegexNotMatch,
                Some("!~*") => BinaryOperator::PGRegexNotIMatch,
                Some("=") => BinaryOperator::Eq,
                Some("<>") => BinaryOperator::NotEq,
                Some("<") => BinaryOperator::Lt,
                Some(">") => BinaryOperator::Gt,
                Some("<=") => BinaryOperator::LtEq,
                Some(">=") => BinaryOperator::GtEq,
                _ => return None,
            };
            Some(Expr::BinaryOp {
                left: left.clone(),
                op,
                right: right.clone(),
            })
        }
        Expr::Collate { expr, .. } => Some(expr.as_ref().clone()),
        Expr::Cast {
            expr,
            data_type: DataType::Regclass,
            ..
        } => Some(call("regclass", expr.as_ref().clone())),
        Expr::Cast {
            kind,
            expr,
            data_type,
            ..
        } => {
            let inner = expr.as_ref().clone();
            let to = match data_type {
                DataType::Custom(name, _) => match last_name(name).as_str() {
                    "regclass" => return Some(call("regclass", inner)),
                    "regtype" => return Some(call("regtype", inner)),
                    "regnamespace" => return Some(call("regnamespace", inner)),
                    other => plain_type(other)?,
                },
                // `$1::oid[]`: an array of the plain type.
                DataType::Array(ArrayElemTypeDef::SquareBracket(element, size)) => {
                    let DataType::Custom(name, _) = element.as_ref() else {
                        return None;
                    };
                    DataType::Array(ArrayElemTypeDef::SquareBracket(
                        Box::new(plain_type(&last_name(name))?),
                        *size,
                    ))
                }
                _ => return None,
            };
            Some(Expr::Cast {
                kind: kind.clone(),
                expr: Box::new(inner),
                data_type: to,
                array: false,
                format: None,
            })
        }
        Expr::Function(f) => {
            if last_name(&f.name) == "array"
                && let FunctionArguments::Subquery(q) = &f.args
                && is_empty(q)
            {
                return Some(literal(Value::SingleQuotedString("{}".into())));
            }
            let name = unqualified(&f.name)?;
            let mut f = f.clone();
            f.name = ObjectName::from(vec![Ident::new(name)]);
            Some(Expr::Function(f))
        }
        Expr::Subquery(q) if is_empty(q) => Some(literal(Value::Null)),
        Expr::Exists { subquery, negated } if is_empty(subquery) => {
            Some(literal(Value::Boolean(*negated)))
        }
        Expr::InSubquery {
            subquery, negated, ..
        } if is_empty(subquery) => Some(literal(Value::Boolean(*negated))),
        _ => None,
    }
}

/// Whether every block of `query` is one [`prune`] emptied.
fn is_empty(query: &Query) -> bool {
    fn empty(body: &SetExpr) -> bool {
        match body {
            SetExpr::Select(s) => {
                s.from.is_empty()
                    && matches!(&s.selection, Some(Expr::Value(v)) if v.value == Value::Boolean(false))
            }
            SetExpr::SetOperation { left, right, .. } => empty(left) && empty(right),
            SetExpr::Query(q) => is_empty(q),
            _ => false,
        }
    }
    empty(&query.body)
}

/// Empties each block of `body` that reads an always-empty relation through an inner
/// join; returns whether all of it is empty now.
fn prune(body: &mut SetExpr) -> bool {
    match body {
        SetExpr::Select(s) => {
            let empty = reads_nothing(s);
            if empty {
                empty_select(s);
            }
            empty
        }
        SetExpr::SetOperation { left, right, .. } => {
            let l = prune(left);
            let r = prune(right);
            l && r
        }
        SetExpr::Query(q) => {
            let all = prune(&mut q.body);
            if all {
                q.order_by = None;
            }
            all
        }
        _ => false,
    }
}

/// The catalog's array columns that hold values (column numbers); the others are null.
const FILLED_ARRAYS: &[&str] = &["conkey", "confkey", "indkey"];

/// Whether `expr` names a column that is always null: an array column of the catalog
/// other than [`FILLED_ARRAYS`] (pmdb's tables have no array columns).
fn is_null_array_column(expr: &Expr) -> bool {
    let name = match expr {
        Expr::Identifier(id) => &id.value,
        Expr::CompoundIdentifier(parts) => match parts.last() {
            Some(id) => &id.value,
            None => return false,
        },
        _ => return false,
    };
    !FILLED_ARRAYS.contains(&name.to_lowercase().as_str())
}

/// An always-empty catalog relation, or `unnest` of an always-null array column.
fn is_always_empty(factor: &TableFactor) -> bool {
    match factor {
        TableFactor::Table {
            name, args: None, ..
        } => unqualified(name).is_some_and(|n| always_empty(&n.to_lowercase())),
        TableFactor::Table {
            name,
            args: Some(args),
            ..
        } => {
            last_name(name) == "unnest"
                && args.args.iter().all(|a| {
                    matches!(a, FunctionArg::Unnamed(FunctionArgExpr::Expr(e))
                        if is_null_array_column(e))
                })
        }
        TableFactor::UNNEST { array_exprs, .. } => array_exprs.iter().all(is_null_array_column),
        _ => false,
    }
}

/// Aggregates give a row even over no rows.
const AGGREGATES: &[&str] = &[
    "count",
    "sum",
    "min",
    "max",
    "avg",
    "string_agg",
    "array_agg",
    "bool_and",
    "bool_or",
    "every",
];

fn has_aggregate(select: &mut Select) -> bool {
    let mut found = false;
    outside_subqueries(&mut select.projection, |expr| {
        if let Expr::Function(f) = expr {
            found |= AGGREGATES.contains(&last_name(&f.name).as_str());
        }
    });
    found
}

fn reads_nothing(select: &mut Select) -> bool {
    (select.from.iter().any(chain_is_empty) || lists_partition_ancestors(select))
        && matches!(&select.group_by, GroupByExpr::Expressions(e, _) if e.is_empty())
        && !has_aggregate(select)
}

/// `SELECT pg_partition_ancestors(rel)`, which psql's `\d` unions with the relation
/// itself to find the foreign keys that reference it: the function gives no rows for
/// a relation that is no partition, and pmdb has none.
fn lists_partition_ancestors(select: &mut Select) -> bool {
    let mut found = false;
    outside_subqueries(&mut select.projection, |expr| {
        if let Expr::Function(f) = expr {
            found |= last_name(&f.name) == "pg_partition_ancestors";
        }
    });
    found && select.from.is_empty()
}

/// Whether a FROM item has no rows: its first relation is always empty and no later
/// join keeps the rows of the right side, or an inner join's relation is.
fn chain_is_empty(item: &TableWithJoins) -> bool {
    let keeps_right = |op: &JoinOperator| {
        matches!(
            op,
            JoinOperator::Right(_) | JoinOperator::RightOuter(_) | JoinOperator::FullOuter(_)
        )
    };
    let inner = |op: &JoinOperator| {
        matches!(
            op,
            JoinOperator::Join(_) | JoinOperator::Inner(_) | JoinOperator::CrossJoin(_)
        )
    };
    (is_always_empty(&item.relation) && !item.joins.iter().any(|j| keeps_right(&j.join_operator)))
        || item
            .joins
            .iter()
            .any(|j| inner(&j.join_operator) && is_always_empty(&j.relation))
}

/// The name a projected column has (PostgreSQL's, for an expression: `?column?`).
fn output_name(item: &SelectItem) -> String {
    match item {
        SelectItem::ExprWithAlias { alias, .. } => alias.value.clone(),
        SelectItem::UnnamedExpr(Expr::Identifier(id)) => id.value.clone(),
        SelectItem::UnnamedExpr(Expr::CompoundIdentifier(ids)) => {
            ids.last().map_or_else(String::new, |id| id.value.clone())
        }
        SelectItem::UnnamedExpr(Expr::Function(f)) => last_name(&f.name),
        _ => "?column?".into(),
    }
}

/// `SELECT NULL AS name, … WHERE false`: the block's columns, no rows.
fn empty_select(select: &mut Select) {
    let mut seen = std::collections::HashSet::new();
    select.projection = select
        .projection
        .iter()
        .map(|item| {
            let mut name = output_name(item);
            // DataFusion refuses two columns of one name in a projection.
            while !seen.insert(name.clone()) {
                name.push('_');
            }
            SelectItem::ExprWithAlias {
                expr: Expr::Cast {
                    kind: CastKind::Cast,
                    expr: Box::new(literal(Value::Null)),
                    data_type: DataType::Text,
                    array: false,
                    format: None,
                },
                alias: Ident::with_quote('"', name),
            }
        })
        .collect();
    select.from.clear();
    select.selection = Some(literal(Value::Boolean(false)));
    select.having = None;
    select.distinct = None;
}

#[cfg(test)]
mod tests {
    use super::*;

    fn adapted(sql: &str) -> String {
        let mut statements = pmdb_sql::parse(sql).unwrap();
        let mut s = statements.pop_front().unwrap();
        adapt(&mut s);
        s.to_string()
    }

    #[test]
    fn operators_collations_casts_and_names_become_datafusion_sql() {
        assert_eq!(
            adapted(
                "SELECT c.oid FROM pg_catalog.pg_class c WHERE c.relname OPERATOR(pg_catalog.~) '^(t)$' COLLATE pg_catalog.default AND pg_catalog.pg_table_is_visible(c.oid)"
            ),
            "SELECT c.oid FROM pg_catalog.pg_class c WHERE c.relname ~ '^(t)$' AND pg_table_is_visible(c.oid)"
        );
        assert_eq!(
            adapted(
                "SELECT x::pg_catalog.regtype::pg_catalog.text, 't'::regclass, y::oid, z::oid[] FROM pg_type"
            ),
            "SELECT regtype(x)::TEXT AS \"x\", regclass('t'), y::INT UNSIGNED, z::INT UNSIGNED[] FROM pg_catalog.pg_type"
        );
        assert_eq!(
            adapted(
                r#"SELECT $1::"pg_catalog"."_int4", $2::"pg_catalog"."timestamp", $3::pg_catalog.numeric"#
            ),
            "SELECT $1::INT[] AS \"_int4\", $2::TIMESTAMP, $3::NUMERIC"
        );
    }

    #[test]
    fn blocks_over_always_empty_relations_are_emptied() {
        assert_eq!(
            adapted(
                "SELECT pol.polname, pol.polpermissive FROM pg_catalog.pg_policy pol WHERE pol.polrelid = '1' ORDER BY 1"
            ),
            "SELECT CAST(NULL AS TEXT) AS \"polname\", CAST(NULL AS TEXT) AS \"polpermissive\" WHERE false"
        );
        // A LEFT JOIN to one keeps the rows; a count over one is still a row.
        let kept = "SELECT c.relname FROM pg_catalog.pg_class c LEFT JOIN pg_catalog.pg_inherits i ON i.inhrelid = c.oid";
        assert_eq!(adapted(kept), kept);
        let count = "SELECT count(*) FROM pg_catalog.pg_policy";
        assert_eq!(adapted(count), count);
        assert_eq!(
            adapted(
                "SELECT a.attname, (SELECT d.adbin FROM pg_catalog.pg_attrdef d WHERE d.adrelid = a.attrelid), ARRAY(SELECT b.rolname FROM pg_catalog.pg_auth_members m JOIN pg_catalog.pg_roles b ON m.roleid = b.oid) FROM pg_catalog.pg_attribute a"
            ),
            "SELECT a.attname, (SELECT d.adbin FROM pg_catalog.pg_attrdef d WHERE d.adrelid = a.attrelid), '{}' AS \"array\" FROM pg_catalog.pg_attribute a"
        );
    }

    #[test]
    fn equality_with_any_of_an_array_literal_becomes_in() {
        assert_eq!(
            adapted(
                "SELECT c.relname FROM pg_catalog.pg_class c WHERE c.relkind = ANY (ARRAY['r', 'p', 'f', 'v', 'm'])"
            ),
            "SELECT c.relname FROM pg_catalog.pg_class c WHERE c.relkind IN ('r', 'p', 'f', 'v', 'm')"
        );
    }

    #[test]
    fn a_plain_scalar_subquery_has_its_outer_conditions_moved_out() {
        assert_eq!(
            adapted(
                "SELECT a.attname, (SELECT pg_catalog.pg_get_expr(d.adbin, d.adrelid, true) AS e FROM pg_catalog.pg_attrdef d WHERE d.adrelid = a.attrelid AND d.adnum = a.attnum AND a.atthasdef) FROM pg_catalog.pg_attribute a"
            ),
            "SELECT a.attname, CASE WHEN a.atthasdef THEN (SELECT pg_get_expr(d.adbin, d.adrelid, true) AS e FROM pg_catalog.pg_attrdef d WHERE d.adrelid = a.attrelid AND d.adnum = a.attnum) END AS \"e\" FROM pg_catalog.pg_attribute a"
        );
        // An aggregate gives a row for no row: its conditions stay.
        let count = "SELECT (SELECT count(*) FROM pg_catalog.pg_attrdef d WHERE d.adrelid = a.attrelid AND a.atthasdef) AS n FROM pg_catalog.pg_attribute a";
        assert_eq!(adapted(count), count);
    }

    #[test]
    fn exists_in_a_select_list_becomes_a_count_and_unnest_of_a_column_is_empty() {
        assert_eq!(
            adapted(
                "SELECT i.indisunique, EXISTS (SELECT 1 FROM pg_catalog.pg_constraint WHERE conindid = i.indexrelid) AS d FROM pg_catalog.pg_index i WHERE EXISTS (SELECT 1 FROM pg_catalog.pg_class c WHERE c.oid = i.indrelid)"
            ),
            "SELECT i.indisunique, (SELECT count(*) > 0 FROM pg_catalog.pg_constraint WHERE conindid = i.indexrelid) AS d FROM pg_catalog.pg_index i WHERE EXISTS (SELECT 1 FROM pg_catalog.pg_class c WHERE c.oid = i.indrelid)"
        );
        assert_eq!(
            adapted(
                "SELECT array_to_string(c.reloptions || array(select 'toast.' || x from pg_catalog.unnest(tc.reloptions) x), ', ') FROM pg_catalog.pg_class c LEFT JOIN pg_catalog.pg_class tc ON c.reltoastrelid = tc.oid"
            ),
            "SELECT array_to_string(c.reloptions || '{}', ', ') FROM pg_catalog.pg_class c LEFT JOIN pg_catalog.pg_class tc ON c.reltoastrelid = tc.oid"
        );
    }
}
