//! The parameter types of an UPDATE … FROM or a DELETE … USING, which DataFusion does
//! not plan (pmdb runs both itself, [`crate::dml`]): the statement as a query over the
//! same tables with the same WHERE clause, whose select list compares each new value
//! with its column, so `SET c = $1` gives `$1` the type of `c` as a plain UPDATE's
//! planning does.

use datafusion::sql::sqlparser::ast::{
    AssignmentTarget, BinaryOperator, Expr, FromTable, Query, SelectItem, SetExpr, Statement,
    TableWithJoins, UpdateTableFromKind, Value,
};

use crate::ast_build;
use crate::error::Result;

/// The query that types the parameters of `statement`, an UPDATE with FROM or a DELETE
/// with USING; `None` for any other statement.
pub(crate) fn parameter_query(statement: &Statement) -> Option<Result<Query>> {
    let (target, others, selection, new_values) = match statement {
        Statement::Update(u) => {
            let from = match &u.from {
                Some(UpdateTableFromKind::AfterSet(f) | UpdateTableFromKind::BeforeSet(f)) => f,
                None => return None,
            };
            let qualifier = match &u.table.relation {
                datafusion::sql::sqlparser::ast::TableFactor::Table { name, alias, .. } => {
                    alias.as_ref().map_or_else(
                        || {
                            name.0
                                .iter()
                                .filter_map(|p| p.as_ident().cloned())
                                .collect()
                        },
                        |a| vec![a.name.clone()],
                    )
                }
                _ => return None,
            };
            let compared = u
                .assignments
                .iter()
                .filter_map(|a| match &a.target {
                    AssignmentTarget::ColumnName(column) => {
                        let mut parts = qualifier.clone();
                        parts.push(column.0.last()?.as_ident()?.clone());
                        Some(Expr::BinaryOp {
                            left: Box::new(Expr::CompoundIdentifier(parts)),
                            op: BinaryOperator::Eq,
                            right: Box::new(Expr::Nested(Box::new(a.value.clone()))),
                        })
                    }
                    AssignmentTarget::Tuple(_) => None,
                })
                .collect();
            (&u.table, from.as_slice(), &u.selection, compared)
        }
        Statement::Delete(d) => {
            let using = d.using.as_deref()?;
            let [target] = (match &d.from {
                FromTable::WithFromKeyword(t) | FromTable::WithoutKeyword(t) => t.as_slice(),
            }) else {
                return None;
            };
            (target, using, &d.selection, Vec::new())
        }
        _ => return None,
    };
    Some(query(target, others, selection.as_ref(), new_values))
}

fn query(
    target: &TableWithJoins,
    others: &[TableWithJoins],
    selection: Option<&Expr>,
    new_values: Vec<Expr>,
) -> Result<Query> {
    let mut projection: Vec<SelectItem> = new_values
        .into_iter()
        .map(SelectItem::UnnamedExpr)
        .collect();
    if projection.is_empty() {
        projection.push(SelectItem::UnnamedExpr(Expr::value(Value::Number(
            "1".into(),
            false,
        ))));
    }
    let mut tables = vec![target.clone()];
    tables.extend_from_slice(others);
    let mut query = ast_build::select(projection, tables)?;
    if let SetExpr::Select(select) = query.body.as_mut() {
        select.selection = selection.cloned();
    }
    Ok(query)
}

#[cfg(test)]
mod tests {
    use super::*;
    use datafusion::sql::sqlparser::dialect::PostgreSqlDialect;
    use datafusion::sql::sqlparser::parser::Parser;

    fn described(sql: &str) -> Option<String> {
        let statement = Parser::parse_sql(&PostgreSqlDialect {}, sql)
            .unwrap()
            .remove(0);
        parameter_query(&statement).map(|q| q.unwrap().to_string())
    }

    #[test]
    fn statements_with_other_tables_become_queries() {
        assert_eq!(
            described("UPDATE a SET v = $1, w = w + $2 FROM b WHERE a.id = b.id AND b.x > $3")
                .as_deref(),
            Some("SELECT a.v = ($1), a.w = (w + $2) FROM a, b WHERE a.id = b.id AND b.x > $3")
        );
        assert_eq!(
            described("UPDATE s.a AS t SET v = $1 FROM b").as_deref(),
            Some("SELECT t.v = ($1) FROM s.a AS t, b")
        );
        assert_eq!(
            described("DELETE FROM a USING b WHERE a.id = b.id AND b.x = $1").as_deref(),
            Some("SELECT 1 FROM a, b WHERE a.id = b.id AND b.x = $1")
        );
        assert_eq!(described("UPDATE a SET v = $1 WHERE id = $2"), None);
        assert_eq!(described("DELETE FROM a WHERE id = $1"), None);
    }
}
