//! Window frame offsets given as parameters (`ROWS BETWEEN $1 PRECEDING AND CURRENT
//! ROW`, `RANGE BETWEEN $1 PRECEDING …` over a date with an interval), as SQLAlchemy
//! sends them. DataFusion plans a frame's offset only as a literal, so such a statement
//! is planned, when prepared, with a literal of the parameter's type in each offset's
//! place (for its other parameters' and its columns' types) and planned again at each
//! run with the values bound in. A bound value, and a literal interval (which pmdb
//! otherwise reads with its own interval input), is written as the literal a frame takes:
//! a number as it is, an interval as `INTERVAL '…'` in units DataFusion reads.
//!
//! An offset written as a cast string (`'1 week'::interval PRECEDING`), which the
//! parser takes only in parentheses, is put in them before parsing
//! ([`parenthesize_cast_offsets`]).

use std::ops::ControlFlow;

use datafusion::arrow::datatypes::{DataType, IntervalUnit};
use datafusion::sql::sqlparser::ast::{
    DataType as SqlDataType, Expr, FunctionArg, FunctionArgExpr, FunctionArguments, Interval,
    Statement, Value, WindowFrameBound, WindowType, visit_expressions_mut,
};
use datafusion::sql::sqlparser::dialect::PostgreSqlDialect;
use datafusion::sql::sqlparser::keywords::Keyword;
use datafusion::sql::sqlparser::parser::Parser;
use datafusion::sql::sqlparser::tokenizer::{Token, Tokenizer};

/// A parameter standing for a frame offset: its number (from 1) and the type it was
/// cast to, if it was.
pub(crate) struct OffsetParameter {
    pub number: usize,
    pub ty: DataType,
}

/// Applies `f` to each frame offset of the windows of `s`'s function calls.
fn each_offset(s: &mut Statement, mut f: impl FnMut(&mut Expr)) {
    let _ = visit_expressions_mut(s, |e| {
        if let Expr::Function(call) = e
            && let Some(WindowType::WindowSpec(spec)) = &mut call.over
            && let Some(frame) = &mut spec.window_frame
        {
            for bound in std::iter::once(&mut frame.start_bound).chain(frame.end_bound.as_mut()) {
                if let WindowFrameBound::Preceding(Some(offset))
                | WindowFrameBound::Following(Some(offset)) = bound
                {
                    f(offset);
                }
            }
        }
        ControlFlow::<()>::Continue(())
    });
}

/// What a frame offset is under its casts: the innermost expression, and the type it
/// was cast to last (an interval also when read by the interval input function casts
/// to INTERVAL become).
fn uncast(e: &Expr) -> (&Expr, Option<DataType>) {
    match e {
        Expr::Cast {
            expr, data_type, ..
        } => {
            let (inner, _) = uncast(expr);
            (inner, arrow_type(data_type))
        }
        Expr::Function(f) if f.name.to_string() == crate::type_input::INTERVAL_IN => {
            let FunctionArguments::List(list) = &f.args else {
                return (e, None);
            };
            match list.args.as_slice() {
                [FunctionArg::Unnamed(FunctionArgExpr::Expr(arg))] => (
                    uncast(arg).0,
                    Some(DataType::Interval(IntervalUnit::MonthDayNano)),
                ),
                _ => (e, None),
            }
        }
        Expr::Nested(inner) => uncast(inner),
        other => (other, None),
    }
}

/// The type of a frame offset cast to `ty`.
fn arrow_type(ty: &SqlDataType) -> Option<DataType> {
    Some(match ty {
        SqlDataType::Interval { .. } => DataType::Interval(IntervalUnit::MonthDayNano),
        SqlDataType::Double(_)
        | SqlDataType::DoublePrecision
        | SqlDataType::Float8
        | SqlDataType::Float(_) => DataType::Float64,
        SqlDataType::Real | SqlDataType::Float4 => DataType::Float32,
        SqlDataType::Numeric(_) | SqlDataType::Decimal(_) | SqlDataType::Dec(_) => {
            crate::arrow_conv::arrow_type(crate::types::SqlType::UNCONSTRAINED_NUMERIC)
        }
        _ => DataType::Int64,
    })
}

fn is_interval(ty: &Option<DataType>) -> bool {
    matches!(ty, Some(DataType::Interval(_)))
}

/// The parameters that stand for frame offsets in `s`.
pub(crate) fn offset_parameters(s: &mut Statement) -> Vec<OffsetParameter> {
    let mut found = Vec::new();
    each_offset(s, |offset| {
        let (inner, ty) = uncast(offset);
        if let Expr::Value(v) = inner
            && let Value::Placeholder(name) = &v.value
            && let Some(number) = name.strip_prefix('$').and_then(|n| n.parse().ok())
        {
            found.push(OffsetParameter {
                number,
                ty: ty.unwrap_or(DataType::Int64),
            });
        }
    });
    found
}

/// `s` with each frame offset that is a parameter replaced by a literal of its type,
/// for planning its other parts.
pub(crate) fn with_literal_offsets(s: &Statement) -> Statement {
    let mut planned = s.clone();
    each_offset(&mut planned, |offset| {
        let (inner, ty) = uncast(offset);
        if matches!(inner, Expr::Value(v) if matches!(v.value, Value::Placeholder(_))) {
            *offset = match is_interval(&ty) {
                true => interval_literal("1 day".into()),
                false => Expr::value(Value::Number("1".into(), false)),
            };
        }
    });
    planned
}

/// Writes each frame offset that is a bound value cast (a number, or a text cast to
/// INTERVAL) as the literal DataFusion plans in a frame.
pub(crate) fn as_literals(s: &mut Statement) {
    each_offset(s, |offset| {
        let (inner, ty) = uncast(offset);
        let interval = is_interval(&ty);
        let literal = match inner {
            Expr::Value(v) => match &v.value {
                // In units DataFusion reads, whatever form PostgreSQL's input took.
                Value::SingleQuotedString(text) if interval => match crate::interval::parse(text) {
                    Ok(i) => interval_literal(format!(
                        "{} months {} days {} microseconds",
                        i.months, i.days, i.micros
                    )),
                    Err(_) => return,
                },
                Value::Number(..) => inner.clone(),
                // A float bound as the text of a double.
                Value::SingleQuotedString(text)
                    if matches!(ty, Some(DataType::Float64 | DataType::Float32))
                        && text.parse::<f64>().is_ok_and(f64::is_finite) =>
                {
                    Expr::value(Value::Number(text.clone(), false))
                }
                _ => return,
            },
            _ => return,
        };
        *offset = literal;
    });
}

fn interval_literal(text: String) -> Expr {
    Expr::Interval(Interval {
        value: Box::new(Expr::value(Value::SingleQuotedString(text))),
        leading_field: None,
        leading_precision: None,
        last_field: None,
        fractional_seconds_precision: None,
    })
}

/// `sql` parsed with each frame offset of the form `'text'::type PRECEDING` (or
/// FOLLOWING) in parentheses; `None` when it has none or still does not parse.
pub(crate) fn parenthesize_cast_offsets(sql: &str) -> Option<Vec<Statement>> {
    let tokens = Tokenizer::new(&PostgreSqlDialect {}, sql).tokenize().ok()?;
    let significant: Vec<usize> = (0..tokens.len())
        .filter(|&i| !matches!(tokens[i], Token::Whitespace(_)))
        .collect();
    let keyword = |i: usize| match &tokens[i] {
        Token::Word(w) => Some(w.keyword),
        _ => None,
    };
    // Where an opening and a closing parenthesis go, before the token at each.
    let mut opens = Vec::new();
    let mut closes = Vec::new();
    for (k, &at) in significant.iter().enumerate() {
        let starts_bound = k > 0
            && matches!(
                keyword(significant[k - 1]),
                Some(
                    Keyword::BETWEEN
                        | Keyword::AND
                        | Keyword::ROWS
                        | Keyword::RANGE
                        | Keyword::GROUPS
                )
            );
        if !starts_bound
            || !matches!(tokens[at], Token::SingleQuotedString(_))
            || significant.get(k + 1).map(|&i| &tokens[i]) != Some(&Token::DoubleColon)
        {
            continue;
        }
        let end = significant[k + 2..].iter().find(|&&i| {
            matches!(keyword(i), Some(Keyword::PRECEDING | Keyword::FOLLOWING))
                || !matches!(
                    tokens[i],
                    Token::Word(_) | Token::LParen | Token::RParen | Token::Number(..)
                )
        });
        if let Some(&end) = end
            && matches!(keyword(end), Some(Keyword::PRECEDING | Keyword::FOLLOWING))
        {
            opens.push(at);
            closes.push(end);
        }
    }
    if opens.is_empty() {
        return None;
    }
    let mut text = String::with_capacity(sql.len() + 2 * opens.len());
    for (i, token) in tokens.iter().enumerate() {
        if opens.contains(&i) {
            text.push('(');
        }
        if closes.contains(&i) {
            text.push_str(") ");
        }
        text.push_str(&token.to_string());
    }
    Parser::parse_sql(&PostgreSqlDialect {}, &text).ok()
}
