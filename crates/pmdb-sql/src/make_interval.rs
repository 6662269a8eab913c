//! `make_interval(years, months, weeks, days, hours, mins, secs)`, PostgreSQL's, with
//! its arguments by position or by name (`make_interval(secs => 86404.0)`), each one
//! left out zero. DataFusion takes named arguments only without gaps before them, so a
//! call is rewritten in the syntax tree into `pmdb_make_interval` with all seven, by
//! position and cast to their types (`bigint`, and `double precision` for the seconds).

use std::ops::ControlFlow;
use std::sync::Arc;

use datafusion::arrow::array::{Array, AsArray, IntervalMonthDayNanoBuilder};
use datafusion::arrow::datatypes::{DataType, Float64Type, Int64Type, IntervalMonthDayNano};
use datafusion::common::Result as DfResult;
use datafusion::logical_expr::{
    ColumnarValue, ScalarFunctionArgs, ScalarUDF, ScalarUDFImpl, Signature, Volatility,
};
use datafusion::prelude::SessionContext;
use datafusion::sql::sqlparser::ast::{
    CastKind, DataType as SqlDataType, Expr, Function, FunctionArg, FunctionArgExpr,
    FunctionArgumentList, FunctionArguments, Ident, ObjectName, Statement, visit_expressions_mut,
};

use crate::error::{Result, SqlError, external, state};

const NAME: &str = "pmdb_make_interval";
const PARAMETERS: [&str; 7] = ["years", "months", "weeks", "days", "hours", "mins", "secs"];

pub(crate) fn register(ctx: &SessionContext) {
    ctx.register_udf(ScalarUDF::from(MakeInterval::new()));
}

/// Rewrites each `make_interval` call of `s` into [`NAME`] with its seven arguments.
pub(crate) fn positional(s: &mut Statement) -> Result<()> {
    let mut refused = None;
    let _ = visit_expressions_mut(s, |e| {
        if let Expr::Function(f) = e
            && is_make_interval(&f.name)
        {
            match arguments(f) {
                Ok(args) => *e = call(args),
                Err(err) => {
                    refused = Some(err);
                    return ControlFlow::Break(());
                }
            }
        }
        ControlFlow::Continue(())
    });
    refused.map_or(Ok(()), Err)
}

fn is_make_interval(name: &ObjectName) -> bool {
    let parts: Vec<String> = name
        .0
        .iter()
        .filter_map(|p| p.as_ident().map(|i| i.value.to_lowercase()))
        .collect();
    matches!(parts.as_slice(), [n] | [_, n] if n == "make_interval")
        && (parts.len() == 1 || parts[0] == "pg_catalog")
}

/// The seven arguments of a call, by position, a zero for each not given.
fn arguments(f: &Function) -> Result<Vec<Expr>> {
    let wrong = |what: String| SqlError::user(state::UNDEFINED_FUNCTION, what);
    let mut given: [Option<Expr>; 7] = Default::default();
    let list = match &f.args {
        FunctionArguments::List(FunctionArgumentList { args, .. }) => args.as_slice(),
        FunctionArguments::None => &[],
        FunctionArguments::Subquery(_) => {
            return Err(wrong(
                "function make_interval(subquery) does not exist".into(),
            ));
        }
    };
    for (i, a) in list.iter().enumerate() {
        let (at, arg) = match a {
            FunctionArg::Unnamed(FunctionArgExpr::Expr(e)) => (i, e),
            FunctionArg::Named {
                name,
                arg: FunctionArgExpr::Expr(e),
                ..
            }
            | FunctionArg::ExprNamed {
                name: Expr::Identifier(name),
                arg: FunctionArgExpr::Expr(e),
                ..
            } => {
                let named = name.value.to_lowercase();
                let at = PARAMETERS.iter().position(|p| *p == named).ok_or_else(|| {
                    wrong(format!(
                        "function make_interval({named} => …) does not exist"
                    ))
                })?;
                (at, e)
            }
            _ => return Err(wrong("function make_interval(…) does not exist".into())),
        };
        let slot = given
            .get_mut(at)
            .ok_or_else(|| wrong("function make_interval takes at most 7 arguments".into()))?;
        if slot.is_some() {
            return Err(wrong(format!(
                "argument \"{}\" of make_interval is given twice",
                PARAMETERS[at]
            )));
        }
        *slot = Some(arg.clone());
    }
    Ok(given
        .into_iter()
        .enumerate()
        .map(|(i, a)| {
            let seconds = i == 6;
            let a = a.unwrap_or_else(|| {
                Expr::value(datafusion::sql::sqlparser::ast::Value::Number(
                    "0".into(),
                    false,
                ))
            });
            Expr::Cast {
                kind: CastKind::Cast,
                expr: Box::new(a),
                data_type: if seconds {
                    SqlDataType::DoublePrecision
                } else {
                    SqlDataType::BigInt(None)
                },
                array: false,
                format: None,
            }
        })
        .collect())
}

fn call(args: Vec<Expr>) -> Expr {
    Expr::Function(Function {
        name: ObjectName::from(vec![Ident::new(NAME)]),
        uses_odbc_syntax: false,
        parameters: FunctionArguments::None,
        args: FunctionArguments::List(FunctionArgumentList {
            duplicate_treatment: None,
            args: args
                .into_iter()
                .map(|e| FunctionArg::Unnamed(FunctionArgExpr::Expr(e)))
                .collect(),
            clauses: vec![],
        }),
        filter: None,
        null_treatment: None,
        over: None,
        within_group: vec![],
    })
}

#[derive(Debug, PartialEq, Eq, Hash)]
struct MakeInterval {
    signature: Signature,
}

impl MakeInterval {
    fn new() -> MakeInterval {
        let mut types = vec![DataType::Int64; 6];
        types.push(DataType::Float64);
        MakeInterval {
            signature: Signature::exact(types, Volatility::Immutable),
        }
    }
}

/// The interval of one row's arguments; `None` when one is NULL or it does not fit.
fn interval(parts: [i64; 6], seconds: f64) -> Option<IntervalMonthDayNano> {
    let [years, months, weeks, days, hours, mins] = parts;
    let months = years.checked_mul(12)?.checked_add(months)?;
    let days = weeks.checked_mul(7)?.checked_add(days)?;
    let micros = (seconds * 1e6).round();
    if !micros.is_finite() || micros.abs() > 9.2e18 {
        return None;
    }
    let nanos = hours
        .checked_mul(3_600)?
        .checked_add(mins.checked_mul(60)?)?
        .checked_mul(1_000_000)?
        .checked_add(micros as i64)?
        .checked_mul(1_000)?;
    Some(IntervalMonthDayNano::new(
        i32::try_from(months).ok()?,
        i32::try_from(days).ok()?,
        nanos,
    ))
}

impl ScalarUDFImpl for MakeInterval {
    fn name(&self) -> &str {
        NAME
    }

    fn signature(&self) -> &Signature {
        &self.signature
    }

    fn return_type(&self, _: &[DataType]) -> DfResult<DataType> {
        Ok(crate::arrow_conv::arrow_type(
            crate::types::SqlType::Interval,
        ))
    }

    fn invoke_with_args(&self, args: ScalarFunctionArgs) -> DfResult<ColumnarValue> {
        let rows = args.number_rows;
        let arrays = ColumnarValue::values_to_arrays(&args.args)?;
        let mut out = IntervalMonthDayNanoBuilder::with_capacity(rows);
        for row in 0..rows {
            if arrays.iter().any(|a| a.is_null(row)) {
                out.append_null();
                continue;
            }
            let part = |i: usize| arrays[i].as_primitive::<Int64Type>().value(row);
            let seconds = arrays[6].as_primitive::<Float64Type>().value(row);
            let value = interval(
                [part(0), part(1), part(2), part(3), part(4), part(5)],
                seconds,
            )
            .ok_or_else(|| {
                external(SqlError::user(
                    state::DATETIME_OUT_OF_RANGE,
                    "interval out of range",
                ))
            })?;
            out.append_value(value);
        }
        Ok(ColumnarValue::Array(Arc::new(out.finish())))
    }
}
