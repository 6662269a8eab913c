//! [`Prepared`]: a statement of the extended protocol, planned once at Parse and run with
//! new parameters at each Execute. What it keeps depends on the statement: the fast
//! path's recognised shape, DataFusion's logical plan with its `$n` placeholders still in
//! it (optimized at Parse where it may be, else at each execution, and filled in and run at
//! each execution), or nothing but the statement,
//! whose `$n` are then replaced by literals at each run (pmdb's own DDL, UPDATE, DELETE,
//! COPY and transaction control). Plans are kept only while no DDL ran since: after that
//! the statement runs as if unprepared.

use std::ops::ControlFlow;
use std::sync::{Arc, OnceLock};

use datafusion::arrow::array::Array as _;
use datafusion::arrow::datatypes::{DataType, FieldRef, SchemaRef};
use datafusion::arrow::temporal_conversions::{date32_to_datetime, timestamp_us_to_datetime};
use datafusion::common::ScalarValue;
use datafusion::logical_expr::LogicalPlan;
use datafusion::sql::parser::Statement as DfStatement;
use datafusion::sql::sqlparser::ast::{
    Array, ArrayElemTypeDef, CastKind, DataType as SqlDataType, ExactNumberInfo, Expr,
    TimezoneInfo, Value, ValueWithSpan, VisitMut, VisitorMut, visit_expressions,
};

use crate::error::{Result, SqlError, state};
use crate::fast_path::Shape;
use crate::names::RelName;
use crate::statement_kind::StatementKind;
use crate::text_forms::bytea_text;

/// What a prepared statement keeps of its planning.
#[derive(Clone, Debug)]
pub(crate) enum Plan {
    Fast(Shape),
    /// DataFusion's plan, and the same optimized at Parse where that may be done
    /// ([`crate::optimized_plan`]).
    Logical {
        plan: LogicalPlan,
        optimized: Option<LogicalPlan>,
    },
    /// An INSERT from a query (see [`crate::insert`]): the query's plan, whose rows are
    /// inserted at each run.
    InsertQuery(LogicalPlan),
    /// Bound as literals and run like a statement of the simple protocol.
    Unplanned,
}

/// A statement planned once, run with parameters many times.
#[derive(Clone, Debug)]
pub struct Prepared {
    statement: DfStatement,
    kind: StatementKind,
    parameters: Vec<Option<FieldRef>>,
    columns: Option<SchemaRef>,
    /// The catalog generation `plan` was made at.
    pub(crate) generation: u64,
    /// The search path its names were resolved with.
    pub(crate) search_path: Arc<[String]>,
    pub(crate) plan: Plan,
    reads: Vec<RelName>,
    /// The statement's text, made when first asked for.
    text: OnceLock<String>,
}

impl Prepared {
    /// `parameters`: their types as planning found them, extended to the highest `$n`
    /// the statement names (a parameter of a clause pmdb plans apart, such as ON
    /// CONFLICT's DO UPDATE, has no type from the plan but counts all the same).
    pub(crate) fn new(
        statement: DfStatement,
        mut parameters: Vec<Option<FieldRef>>,
        columns: Option<SchemaRef>,
        generation: u64,
        plan: Plan,
    ) -> Prepared {
        let named = highest_placeholder(&statement);
        if parameters.len() < named {
            parameters.resize(named, None);
        }
        Prepared {
            kind: StatementKind::of(&statement),
            statement,
            parameters,
            columns,
            generation,
            search_path: Arc::from(Vec::new()),
            plan,
            reads: Vec::new(),
            text: OnceLock::new(),
        }
    }

    /// The statement, its names resolved with `search_path`.
    pub(crate) fn resolved_with(mut self, search_path: Arc<[String]>) -> Prepared {
        self.search_path = search_path;
        self
    }

    /// The statement, reading the tables `reads` names (its views expanded), whose
    /// locks each run takes first ([`crate::read_locks`]).
    pub(crate) fn reading(mut self, reads: Vec<RelName>) -> Prepared {
        self.reads = reads;
        self
    }

    /// The tables each run reads.
    pub(crate) fn reads(&self) -> &[RelName] {
        &self.reads
    }

    /// A statement run with no plan kept, whose columns the caller knows (a SHOW the
    /// server answers itself).
    pub fn unplanned(statement: DfStatement, columns: Option<SchemaRef>) -> Prepared {
        Prepared::new(statement, Vec::new(), columns, 0, Plan::Unplanned)
    }

    /// The statement, with its `$n` placeholders.
    pub fn statement(&self) -> &DfStatement {
        &self.statement
    }

    /// The statement as SQL text (what `pg_stat_activity` shows of each run), printed
    /// once.
    pub fn text(&self) -> &str {
        self.text.get_or_init(|| self.statement.to_string())
    }

    pub fn kind(&self) -> StatementKind {
        self.kind
    }

    /// Whether the fast path runs it, straight on the engine, with no DataFusion plan.
    pub fn on_fast_path(&self) -> bool {
        matches!(self.plan, Plan::Fast(_))
    }

    /// The types of the parameters, `$1` first, as fields (whose metadata tells a type
    /// Arrow holds as text); `None` where planning fixed none.
    pub fn parameters(&self) -> &[Option<FieldRef>] {
        &self.parameters
    }

    /// The Arrow types of the parameters, `$1` first (see [`Prepared::parameters`]).
    pub fn parameter_types(&self) -> Vec<Option<DataType>> {
        self.parameters
            .iter()
            .map(|f| f.as_ref().map(|f| f.data_type().clone()))
            .collect()
    }

    /// The columns of the rows it gives; `None` for a command.
    pub fn columns(&self) -> Option<&SchemaRef> {
        self.columns.as_ref()
    }

    /// `params`, checked against the parameters' count and each cast to its planned
    /// type.
    pub(crate) fn typed(&self, params: Vec<ScalarValue>) -> Result<Vec<ScalarValue>> {
        if params.len() < self.parameters.len() {
            return Err(SqlError::user(
                state::PROTOCOL_VIOLATION,
                format!(
                    "bind message supplies {} parameters, but the prepared statement requires {}",
                    params.len(),
                    self.parameters.len()
                ),
            ));
        }
        params
            .into_iter()
            .enumerate()
            .map(|(i, p)| {
                match self
                    .parameters
                    .get(i)
                    .and_then(|f| f.as_ref())
                    .map(|f| f.data_type().clone())
                {
                    // A type planning left open (NULL, or an array of NULL) takes the value's.
                    Some(ty) if p.data_type() != ty && !left_open(&ty) => {
                        if let Some(exact) = integer_as(&p, &ty) {
                            return Ok(exact);
                        }
                        crate::numeric_places::check(&p, &ty).map_err(|e| {
                            let message = format!("parameter ${}: {}", i + 1, e.message());
                            e.with_message(message)
                        })?;
                        p.cast_to(&ty).map_err(|e| {
                            // As PostgreSQL: text that does not read as the type, or a value
                            // outside it.
                            let code = match p.data_type() {
                                DataType::Utf8 => state::INVALID_TEXT_REPRESENTATION,
                                _ => state::NUMERIC_OUT_OF_RANGE,
                            };
                            SqlError::user(code, format!("parameter ${}: {e}", i + 1))
                        })
                    }
                    _ => Ok(p),
                }
            })
            .collect()
    }

    /// The statement with each `$n` replaced by the literal of `params[n - 1]`.
    pub fn bind(&self, params: &[ScalarValue]) -> Result<DfStatement> {
        let values = params.iter().map(literal).collect::<Result<Vec<_>>>()?;
        let mut bound = self.statement.clone();
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
}

/// `v` as SQL syntax: built as an expression, never spliced in as text, so a value can
/// never change what the statement says.
fn literal(v: &ScalarValue) -> Result<Expr> {
    let number = |n: String| Expr::value(Value::Number(n, false));
    let typed = |text: String, to: SqlDataType| Expr::Cast {
        kind: CastKind::Cast,
        expr: Box::new(Expr::value(Value::SingleQuotedString(text))),
        data_type: to,
        array: false,
        format: None,
    };
    if v.is_null() {
        return Ok(Expr::value(Value::Null));
    }
    Ok(match v {
        ScalarValue::Int8(Some(n)) => number(n.to_string()),
        ScalarValue::Int16(Some(n)) => number(n.to_string()),
        ScalarValue::Int32(Some(n)) => number(n.to_string()),
        ScalarValue::Int64(Some(n)) => number(n.to_string()),
        ScalarValue::UInt8(Some(n)) => number(n.to_string()),
        ScalarValue::UInt16(Some(n)) => number(n.to_string()),
        ScalarValue::UInt32(Some(n)) => number(n.to_string()),
        ScalarValue::UInt64(Some(n)) => number(n.to_string()),
        ScalarValue::Decimal128(Some(_), ..) => number(v.to_string()),
        ScalarValue::Float32(Some(f)) => float(f64::from(*f)),
        ScalarValue::Float64(Some(f)) => float(*f),
        ScalarValue::Boolean(Some(b)) => Expr::value(Value::Boolean(*b)),
        ScalarValue::Utf8(Some(s))
        | ScalarValue::LargeUtf8(Some(s))
        | ScalarValue::Utf8View(Some(s)) => Expr::value(Value::SingleQuotedString(s.clone())),
        ScalarValue::Date32(Some(days)) => match date32_to_datetime(*days) {
            Some(d) => typed(d.date().to_string(), SqlDataType::Date),
            None => return Err(out_of_range(v)),
        },
        ScalarValue::TimestampMicrosecond(Some(micros), None) => {
            match timestamp_us_to_datetime(*micros) {
                Some(t) => typed(
                    t.to_string(),
                    SqlDataType::Timestamp(None, TimezoneInfo::None),
                ),
                None => return Err(out_of_range(v)),
            }
        }
        ScalarValue::TimestampMicrosecond(Some(micros), Some(_)) => {
            match timestamp_us_to_datetime(*micros) {
                Some(t) => typed(
                    format!("{t}+00"),
                    SqlDataType::Timestamp(None, TimezoneInfo::WithTimeZone),
                ),
                None => return Err(out_of_range(v)),
            }
        }
        ScalarValue::Time64Microsecond(Some(micros)) => typed(
            crate::time_of_day::time_text(*micros),
            SqlDataType::Time(None, TimezoneInfo::None),
        ),
        ScalarValue::Binary(Some(b)) => typed(bytea_text(b), SqlDataType::Bytea),
        ScalarValue::IntervalMonthDayNano(Some(i)) => typed(
            crate::interval::Interval::from_nanos(i.months, i.days, i.nanoseconds).to_string(),
            SqlDataType::Interval {
                fields: None,
                precision: None,
            },
        ),
        ScalarValue::List(list) => {
            let values = list.value(0);
            let elements = (0..values.len())
                .map(|i| {
                    ScalarValue::try_from_array(&values, i)
                        .map_err(|e| SqlError::Query(e.to_string()))
                        .and_then(|e| literal(&e))
                })
                .collect::<Result<Vec<_>>>()?;
            let element_type =
                sql_type(values.data_type()).ok_or_else(|| unsupported_parameter(v))?;
            // `ARRAY[…]` would take its elements' types (and an empty one has none):
            // cast to the array type the value had.
            Expr::Cast {
                kind: CastKind::Cast,
                expr: Box::new(Expr::Array(Array {
                    elem: elements,
                    named: true,
                })),
                data_type: SqlDataType::Array(ArrayElemTypeDef::SquareBracket(
                    Box::new(element_type),
                    None,
                )),
                array: false,
                format: None,
            }
        }
        _ => return Err(unsupported_parameter(v)),
    })
}

fn unsupported_parameter(v: &ScalarValue) -> SqlError {
    SqlError::user(
        state::FEATURE_NOT_SUPPORTED,
        format!("parameters of type {} are not supported", v.data_type()),
    )
}

/// The SQL type DataFusion plans as `ty`, for the types parameters take (an array
/// parameter's elements, a parameter cast to the type its client declared).
pub(crate) fn sql_type(ty: &DataType) -> Option<SqlDataType> {
    Some(match ty {
        DataType::Boolean => SqlDataType::Boolean,
        DataType::Int16 => SqlDataType::SmallInt(None),
        DataType::Int32 => SqlDataType::Int(None),
        DataType::Int64 => SqlDataType::BigInt(None),
        DataType::UInt32 => SqlDataType::IntUnsigned(None),
        DataType::Float32 => SqlDataType::Real,
        DataType::Float64 => SqlDataType::DoublePrecision,
        DataType::Decimal128(p, s) => SqlDataType::Decimal(ExactNumberInfo::PrecisionAndScale(
            u64::from(*p),
            i64::from(*s),
        )),
        DataType::Utf8 => SqlDataType::Text,
        DataType::Date32 => SqlDataType::Date,
        DataType::Time64(_) => SqlDataType::Time(None, TimezoneInfo::None),
        DataType::Timestamp(_, None) => SqlDataType::Timestamp(None, TimezoneInfo::None),
        DataType::Timestamp(_, Some(_)) => SqlDataType::Timestamp(None, TimezoneInfo::WithTimeZone),
        DataType::Binary => SqlDataType::Bytea,
        DataType::Interval(_) => SqlDataType::Interval {
            fields: None,
            precision: None,
        },
        _ => return None,
    })
}

fn out_of_range(v: &ScalarValue) -> SqlError {
    SqlError::user(
        state::DATETIME_OUT_OF_RANGE,
        format!("parameter {v:?} is out of range"),
    )
}

/// A float as SQL: a double, never a decimal, whatever its digits.
fn float(v: f64) -> Expr {
    crate::numeric_literals::double(&format!("{v:?}"))
}

/// The highest `n` of the `$n` in `statement` (0 for none).
fn highest_placeholder(statement: &DfStatement) -> usize {
    let DfStatement::Statement(s) = statement else {
        return 0;
    };
    let mut highest = 0;
    let _ = visit_expressions(s, |e| {
        if let Expr::Value(ValueWithSpan {
            value: Value::Placeholder(p),
            ..
        }) = e
            && let Some(n) = p.strip_prefix('$').and_then(|n| n.parse::<usize>().ok())
        {
            highest = highest.max(n);
        }
        ControlFlow::<()>::Continue(())
    });
    highest
}

struct Substitute<'a> {
    values: &'a [Expr],
    error: Option<SqlError>,
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
                    self.error = Some(SqlError::user(
                        state::PROTOCOL_VIOLATION,
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

/// Whether planning left a parameter's type open: NULL, or an array of NULL.
fn left_open(ty: &DataType) -> bool {
    *ty == DataType::Null || crate::array_text::list_element(ty) == Some(&DataType::Null)
}

/// An integer parameter as the integer type `ty` when it fits, as Arrow's cast gives it
/// but without arrays for one value (drivers send a key as an int8 for an int4 column
/// at every statement); `None` leaves the value to the cast, which also says why not.
fn integer_as(p: &ScalarValue, ty: &DataType) -> Option<ScalarValue> {
    let v = match p {
        ScalarValue::Int16(Some(v)) => i64::from(*v),
        ScalarValue::Int32(Some(v)) => i64::from(*v),
        ScalarValue::Int64(Some(v)) => *v,
        _ => return None,
    };
    match ty {
        DataType::Int16 => i16::try_from(v).ok().map(|v| ScalarValue::Int16(Some(v))),
        DataType::Int32 => i32::try_from(v).ok().map(|v| ScalarValue::Int32(Some(v))),
        DataType::Int64 => Some(ScalarValue::Int64(Some(v))),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::Plan;
    use crate::engine::SqlEngine;
    use pmdb_engine::{Db, DbOptions};

    #[test]
    fn each_statement_keeps_the_plan_its_runs_reuse() {
        let dir = tempfile::tempdir().unwrap();
        let engine = SqlEngine::open(Db::open(dir.path(), DbOptions::small()).unwrap()).unwrap();
        engine
            .execute("CREATE TABLE t (id INT PRIMARY KEY, n BIGINT)")
            .unwrap();
        let mut session = engine.session();
        let mut kept = |sql: &str| {
            let statement = crate::session::parse(sql).unwrap().pop_front().unwrap();
            let rt = tokio::runtime::Runtime::new().unwrap();
            match rt.block_on(session.prepare(statement)).unwrap().plan {
                Plan::Fast(_) => "fast",
                Plan::Logical { .. } | Plan::InsertQuery(_) => "logical",
                Plan::Unplanned => "unplanned",
            }
        };
        assert_eq!(kept("SELECT n FROM t WHERE id = $1"), "fast");
        assert_eq!(kept("UPDATE t SET n = n + $1 WHERE id = $2"), "fast");
        assert_eq!(kept("INSERT INTO t VALUES ($1, $2)"), "fast");
        assert_eq!(kept("DELETE FROM t WHERE id = $1"), "fast");
        assert_eq!(kept("SELECT sum(n) FROM t WHERE id > $1"), "fast");
        assert_eq!(
            kept("SELECT n FROM t WHERE id BETWEEN $1 AND $2 ORDER BY n"),
            "fast"
        );
        assert_eq!(
            kept("SELECT n FROM t WHERE id > $1 ORDER BY id LIMIT 1 FOR UPDATE"),
            "fast"
        );
        assert_eq!(kept("SELECT sum(n + 1) FROM t WHERE id > $1"), "logical");
        assert_eq!(kept("INSERT INTO t SELECT id + $1, n FROM t"), "logical");
        assert_eq!(kept("UPDATE t SET n = $1 WHERE n > 0"), "unplanned");
        assert_eq!(kept("BEGIN"), "unplanned");
    }
}
