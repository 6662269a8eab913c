//! Parameters of the extended protocol: each bound value, decoded from the text or
//! binary format of its PostgreSQL type, becomes a literal in place of its `$n` in the
//! statement, which then runs like any other. The literals are built as syntax, not
//! spliced in as text, so a value can never change what the statement says.

use chrono::{DateTime, FixedOffset, NaiveDate, NaiveDateTime};
use datafusion::arrow::datatypes::DataType;
use datafusion::sql::parser::Statement as DfStatement;
use datafusion::sql::sqlparser::ast::{
    CastKind, DataType as SqlDataType, ExactNumberInfo, Expr, TimezoneInfo, Value, ValueWithSpan,
    VisitMut, VisitorMut,
};
use pgwire::api::Type;
use pgwire::api::portal::Portal;
use pgwire::error::{ErrorInfo, PgWireError, PgWireResult};
use rust_decimal::Decimal;
use std::ops::ControlFlow;

use crate::encode::pg_type;

fn user_error(code: &str, message: String) -> PgWireError {
    PgWireError::UserError(Box::new(ErrorInfo::new(
        "ERROR".into(),
        code.into(),
        message,
    )))
}

/// The type of parameter `i`: the client's, else the one planning found, else text.
pub fn param_type(given: &[Option<Type>], planned: &[Option<DataType>], i: usize) -> Type {
    given
        .get(i)
        .cloned()
        .flatten()
        .filter(|t| *t != Type::UNKNOWN)
        .or_else(|| planned.get(i).cloned().flatten().map(|t| pg_type(&t)))
        .unwrap_or(Type::TEXT)
}

/// The literal of parameter `i` of `portal`, of type `ty`.
fn literal<S: Clone>(portal: &Portal<S>, i: usize, ty: &Type) -> PgWireResult<Expr> {
    macro_rules! number {
        ($t:ty) => {
            portal
                .parameter::<$t>(i, ty)?
                .map(|v| Expr::value(Value::Number(v.to_string(), false)))
        };
    }
    let typed = |text: String, to: SqlDataType| Expr::Cast {
        kind: CastKind::Cast,
        expr: Box::new(Expr::value(Value::SingleQuotedString(text))),
        data_type: to,
        array: false,
        format: None,
    };
    let expr = match ty {
        &Type::INT2 => number!(i16),
        &Type::INT4 => number!(i32),
        &Type::INT8 => number!(i64),
        &Type::OID => number!(u32),
        &Type::NUMERIC => number!(Decimal),
        &Type::FLOAT4 => portal.parameter::<f32>(i, ty)?.map(|v| float(f64::from(v))),
        &Type::FLOAT8 => portal.parameter::<f64>(i, ty)?.map(float),
        &Type::BOOL => portal
            .parameter::<bool>(i, ty)?
            .map(|v| Expr::value(Value::Boolean(v))),
        &Type::DATE => portal
            .parameter::<NaiveDate>(i, ty)?
            .map(|d| typed(d.to_string(), SqlDataType::Date)),
        &Type::TIMESTAMP => portal.parameter::<NaiveDateTime>(i, ty)?.map(|t| {
            typed(
                t.to_string(),
                SqlDataType::Timestamp(None, TimezoneInfo::None),
            )
        }),
        &Type::TIMESTAMPTZ => portal.parameter::<DateTime<FixedOffset>>(i, ty)?.map(|t| {
            typed(
                t.naive_utc().to_string(),
                SqlDataType::Timestamp(None, TimezoneInfo::None),
            )
        }),
        &Type::TEXT | &Type::VARCHAR | &Type::BPCHAR | &Type::NAME | &Type::UNKNOWN => portal
            .parameter::<String>(i, ty)?
            .map(|s| Expr::value(Value::SingleQuotedString(s))),
        other => {
            return Err(user_error(
                "0A000",
                format!("parameters of type {other} are not supported"),
            ));
        }
    };
    Ok(expr.unwrap_or_else(|| Expr::value(Value::Null)))
}

/// A float as SQL: digits when finite, else a cast of 'NaN' or '±Infinity'.
fn float(v: f64) -> Expr {
    if v.is_finite() {
        Expr::value(Value::Number(format!("{v:?}"), false))
    } else {
        Expr::Cast {
            kind: CastKind::Cast,
            expr: Box::new(Expr::value(Value::SingleQuotedString(v.to_string()))),
            data_type: SqlDataType::Double(ExactNumberInfo::None),
            array: false,
            format: None,
        }
    }
}

struct Substitute<'a> {
    values: &'a [Expr],
    error: Option<PgWireError>,
}

impl VisitorMut for Substitute<'_> {
    type Break = ();

    fn post_visit_expr(&mut self, expr: &mut Expr) -> ControlFlow<()> {
        if let Expr::Value(ValueWithSpan {
            value: Value::Placeholder(p),
            ..
        }) = expr
        {
            let n = p.strip_prefix('$').and_then(|n| n.parse::<usize>().ok());
            match n
                .and_then(|n| n.checked_sub(1))
                .and_then(|i| self.values.get(i))
            {
                Some(v) => *expr = v.clone(),
                None => {
                    self.error = Some(user_error(
                        "08P01",
                        format!(
                            "there is no parameter {p} ({} were bound)",
                            self.values.len()
                        ),
                    ));
                    return ControlFlow::Break(());
                }
            }
        }
        ControlFlow::Continue(())
    }
}

/// `statement` with every `$n` replaced by the bound value of parameter n.
pub fn bind<S: Clone>(
    statement: &DfStatement,
    portal: &Portal<S>,
    planned: &[Option<DataType>],
) -> PgWireResult<DfStatement> {
    let values = (0..portal.parameter_len())
        .map(|i| {
            let ty = param_type(&portal.statement.parameter_types, planned, i);
            literal(portal, i, &ty)
        })
        .collect::<PgWireResult<Vec<_>>>()?;
    let mut bound = statement.clone();
    if let DfStatement::Statement(s) = &mut bound {
        let mut visitor = Substitute {
            values: &values,
            error: None,
        };
        let _ = s.visit(&mut visitor);
        if let Some(e) = visitor.error {
            return Err(e);
        }
    }
    Ok(bound)
}
