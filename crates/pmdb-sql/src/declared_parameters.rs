//! Parameters whose type the client declared (in Parse, as psycopg declares a Decimal
//! numeric), typed as declared where the plan would type them otherwise and lose their
//! values. PostgreSQL types a declared parameter by its declaration; DataFusion types it
//! by where it stands, so `SELECT $1 + 1` with `$1` a numeric 15.7563 ran as an integer
//! sum and answered 16, and `SELECT $1` described text. Such a parameter is written
//! `CAST($n AS type)` in the statement, which is then planned again. A declared type the
//! plan agrees with, or one it narrows without loss, changes nothing, so the statements
//! the fast path knows keep their shape.

use std::ops::ControlFlow;

use datafusion::arrow::datatypes::{DataType, FieldRef};
use datafusion::sql::parser::Statement as DfStatement;
use datafusion::sql::sqlparser::ast::{CastKind, Expr as SqlExpr, Value, visit_expressions_mut};

use crate::prepared::sql_type;

/// The parameters (`$1` at 0) to be given their declared type: those the plan types as
/// `planned` says where the client declared `declared`.
pub(crate) fn retyped(
    planned: &[Option<FieldRef>],
    declared: &[Option<DataType>],
) -> Vec<(usize, DataType)> {
    declared
        .iter()
        .enumerate()
        .filter_map(|(i, d)| {
            let d = d.as_ref()?;
            let lossy = match planned
                .get(i)
                .and_then(Option::as_ref)
                .map(|f| f.data_type())
            {
                None => true,
                // An interval is no value of any other type (`timestamp - $1`, which
                // the plan types as the timestamp's).
                Some(p) => {
                    (p.is_integer()
                        && matches!(
                            d,
                            DataType::Decimal128(..) | DataType::Float32 | DataType::Float64
                        ))
                        || (matches!(d, DataType::Interval(_))
                            && !matches!(p, DataType::Interval(_)))
                }
            };
            (lossy && sql_type(d).is_some()).then(|| (i, d.clone()))
        })
        .collect()
}

/// `statement` with each parameter of `casts` cast to its type.
pub(crate) fn cast(statement: &mut DfStatement, casts: &[(usize, DataType)]) {
    let DfStatement::Statement(s) = statement else {
        return;
    };
    let _ = visit_expressions_mut(s.as_mut(), |e| {
        if let SqlExpr::Value(v) = e
            && let Value::Placeholder(name) = &v.value
            && let Some(n) = name.strip_prefix('$').and_then(|n| n.parse::<usize>().ok())
            && let Some((_, ty)) = casts.iter().find(|(i, _)| i + 1 == n)
            && let Some(data_type) = sql_type(ty)
        {
            *e = SqlExpr::Cast {
                kind: CastKind::Cast,
                expr: Box::new(e.clone()),
                data_type,
                array: false,
                format: None,
            };
        }
        ControlFlow::<()>::Continue(())
    });
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_parameters_the_plan_would_lose_are_retyped() {
        let numeric = DataType::Decimal128(38, 10);
        let planned = [
            Some(DataType::Int64),
            Some(DataType::Int32),
            None,
            Some(DataType::Decimal128(12, 2)),
            None,
        ];
        let declared = [
            Some(numeric.clone()),
            Some(DataType::Int64),
            Some(DataType::Int16),
            Some(numeric.clone()),
            None,
        ];
        let planned: Vec<Option<FieldRef>> = planned
            .into_iter()
            .map(|t| {
                t.map(|t| {
                    std::sync::Arc::new(datafusion::arrow::datatypes::Field::new("", t, true))
                })
            })
            .collect();
        assert_eq!(
            retyped(&planned, &declared),
            [(0, numeric), (2, DataType::Int16)]
        );
    }

    #[test]
    fn parameters_are_cast_where_they_stand() {
        let mut s = crate::parse("SELECT $1 + 1, $2, $1 FROM t WHERE a = $2")
            .unwrap()
            .pop_front()
            .unwrap();
        cast(&mut s, &[(0, DataType::Float64)]);
        assert_eq!(
            s.to_string(),
            "SELECT CAST($1 AS DOUBLE PRECISION) + 1, $2, CAST($1 AS DOUBLE PRECISION) FROM t \
             WHERE a = $2"
        );
    }
}
