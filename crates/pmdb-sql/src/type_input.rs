//! BYTEA, UUID, JSON, JSONB and INTERVAL values written in queries, read as PostgreSQL
//! reads them. DataFusion cannot plan `CAST(… AS UUID)` (nor JSON, JSONB) and reads
//! interval text by its own rules, so the syntax tree's casts to them (and `INTERVAL
//! '…'`) become calls of `pmdb_uuid` (`pmdb_json`, `pmdb_jsonb`, `pmdb_interval`). An
//! analyzer rule reads text cast to binary as bytea input (`\x…`) instead of taking its
//! bytes as they are, text DataFusion made an interval by PostgreSQL's input rules and
//! an interval made text in PostgreSQL's output style; it writes a string compared with
//! a uuid column in the uuid's canonical form (the form the column holds), sorts
//! intervals by span and refuses what pmdb cannot do over json and interval values as
//! PostgreSQL does. `gen_random_uuid()` gives a uuid-typed result.

use std::ops::ControlFlow;
use std::sync::Arc;

use datafusion::arrow::array::{Array, AsArray};
use datafusion::arrow::datatypes::{DataType, FieldRef, TimeUnit};
use datafusion::common::config::ConfigOptions;
use datafusion::common::tree_node::{Transformed, TreeNode};
use datafusion::common::{DFSchema, Result as DfResult, ScalarValue};
use datafusion::logical_expr::expr::{Cast, InList, ScalarFunction};
use datafusion::logical_expr::expr_rewriter::NamePreserver;
use datafusion::logical_expr::{
    BinaryExpr, ColumnarValue, Expr, ExprSchemable, LogicalPlan, Operator, ReturnFieldArgs,
    ScalarFunctionArgs, ScalarUDF, ScalarUDFImpl, Signature, Volatility,
};
use datafusion::optimizer::AnalyzerRule;
use datafusion::prelude::SessionContext;
use datafusion::sql::sqlparser::ast::{
    ArrayElemTypeDef, DataType as SqlDataType, ExactNumberInfo, Expr as SqlExpr, FunctionArg,
    FunctionArgExpr, FunctionArguments, Statement, Value, visit_expressions_mut,
};

use crate::array_text::{array_from_text, list_element};
use crate::arrow_conv::{arrow_field, text_input, text_type, without_trailing_blanks};
use crate::comparison::compares;
use crate::error::{Result, SqlError, external};
use crate::hstore::HSTORE_IN;
use crate::interval_ops::{is_interval, span_of};
use crate::text_forms::{parse_bytea, parse_uuid, uuid_text};
use crate::types::SqlType;
use crate::udf_result::shaped;

const UUID_IN: &str = "pmdb_uuid";
const BYTEA_IN: &str = "pmdb_bytea";
const JSON_IN: &str = "pmdb_json";
const JSONB_IN: &str = "pmdb_jsonb";
pub(crate) const INTERVAL_IN: &str = "pmdb_interval";
const TIME_IN: &str = "pmdb_time";

/// Whether `function` is one a cast to a type Arrow holds as text becomes (uuid, json,
/// jsonb, an enum type): its argument is text read as that type.
pub(crate) fn reads_text_as_its_type(function: &str) -> bool {
    matches!(function, UUID_IN | JSON_IN | JSONB_IN | HSTORE_IN)
        || function == crate::enum_values::ENUM_IN
        || function == crate::array_input::ARRAY_IN
}

/// Whether `function` is one a cast to a type of its own becomes, a domain's, a
/// VARCHAR(n)'s or CHAR(n)'s, or one [`reads_text_as_its_type`]: a parameter it reads is
/// described as that type.
pub(crate) fn reads_as_its_type(function: &str) -> bool {
    reads_text_as_its_type(function)
        || function == crate::domain_input::DOMAIN_IN
        || function == crate::length_casts::VARCHAR_IN
        || function == crate::length_casts::BPCHAR_IN
}

/// Registers the functions and the analyzer rule in `ctx`.
pub(crate) fn register(ctx: &SessionContext) {
    ctx.register_udf(ScalarUDF::from(TextIn::new(SqlType::Uuid)));
    ctx.register_udf(ScalarUDF::from(TextIn::new(SqlType::Bytea)));
    ctx.register_udf(ScalarUDF::from(TextIn::new(SqlType::Json)));
    ctx.register_udf(ScalarUDF::from(TextIn::new(SqlType::Jsonb)));
    ctx.register_udf(ScalarUDF::from(TextIn::new(SqlType::Interval)));
    ctx.register_udf(ScalarUDF::from(TextIn::new(SqlType::Time)));
    ctx.register_udf(ScalarUDF::from(TextIn::new(SqlType::Hstore)));
    ctx.register_udf(ScalarUDF::from(GenRandomUuid::new()));
    ctx.add_analyzer_rule(Arc::new(TextInput));
}

/// The function that reads text as an hstore.
pub(crate) fn hstore_input() -> ScalarUDF {
    ScalarUDF::from(TextIn::new(SqlType::Hstore))
}

/// The function that reads text as a value of `ty`, for the types DataFusion cannot
/// cast to.
fn input_function(ty: &SqlDataType) -> Option<&'static str> {
    match ty {
        SqlDataType::Uuid => Some(UUID_IN),
        SqlDataType::JSON => Some(JSON_IN),
        SqlDataType::JSONB => Some(JSONB_IN),
        SqlDataType::Interval {
            fields: None,
            precision: None,
        } => Some(INTERVAL_IN),
        _ => None,
    }
}

/// Rewrites `CAST(x AS UUID)`, `x::uuid` and `UUID 'x'` in `statement` as calls of
/// `pmdb_uuid`, and the same for JSON and JSONB.
/// `nextval('s'::regclass)` (and `currval`, `setval`), as pg_dump and PostgreSQL's own
/// serial columns write a sequence's default: the name's text, which these functions
/// take.
fn sequence_named_by_regclass(e: &mut SqlExpr) {
    let SqlExpr::Function(f) = e else {
        return;
    };
    let name = f.name.to_string().to_lowercase();
    let name = name.strip_prefix("pg_catalog.").unwrap_or(&name);
    if !matches!(name, "nextval" | "currval" | "setval") {
        return;
    }
    let FunctionArguments::List(list) = &mut f.args else {
        return;
    };
    if let Some(FunctionArg::Unnamed(FunctionArgExpr::Expr(arg))) = list.args.first_mut()
        && let SqlExpr::Cast {
            data_type, expr, ..
        } = arg
        && match data_type {
            SqlDataType::Regclass => true,
            SqlDataType::Custom(ty, _) => {
                ty.to_string()
                    .to_lowercase()
                    .trim_start_matches("pg_catalog.")
                    == "regclass"
            }
            _ => false,
        }
        && matches!(
            expr.as_ref(),
            SqlExpr::Value(v) if matches!(v.value, Value::SingleQuotedString(_))
        )
    {
        *arg = expr.as_ref().clone();
    }
}

pub(crate) fn rewrite_casts(statement: &mut Statement) -> Result<()> {
    let flow = visit_expressions_mut(statement, |e| {
        if let SqlExpr::Identifier(id) = e
            && let Some(call) = crate::identity::keyword_call(id)
        {
            *e = call;
            return ControlFlow::Continue(());
        }
        if let Some(call) = crate::time_of_day::local_clock_call(e) {
            *e = call;
            return ControlFlow::Continue(());
        }
        sequence_named_by_regclass(e);
        // FLOAT is PostgreSQL's double, FLOAT(p) a real up to 24 bits of precision;
        // DataFusion makes both a real.
        if let SqlExpr::Cast { data_type, .. } = e
            && let SqlDataType::Float(precision) = data_type
            && !matches!(precision, ExactNumberInfo::Precision(p) if *p <= 24)
        {
            *data_type = SqlDataType::DoublePrecision;
        }
        // An array of uuids or json values: their text, each read as the type.
        if let SqlExpr::Cast {
            data_type: SqlDataType::Array(ArrayElemTypeDef::SquareBracket(element, _)),
            expr,
            ..
        } = e
        {
            let element = match element.as_ref() {
                SqlDataType::Uuid => SqlType::Uuid,
                SqlDataType::JSON => SqlType::Json,
                SqlDataType::JSONB => SqlType::Jsonb,
                _ => return ControlFlow::Continue(()),
            };
            let operand = std::mem::replace(expr.as_mut(), SqlExpr::value(Value::Null));
            return match crate::array_input::call(operand, element) {
                Some(Ok(call)) => {
                    *e = call;
                    ControlFlow::Continue(())
                }
                Some(Err(err)) => ControlFlow::Break(err),
                None => ControlFlow::Continue(()),
            };
        }
        let (function, operand) = match e {
            // A parameter cast to an interval is an interval parameter, bound as one.
            SqlExpr::Cast {
                data_type: SqlDataType::Interval { .. },
                expr,
                ..
            } if matches!(
                expr.as_ref(),
                SqlExpr::Value(v) if matches!(v.value, datafusion::sql::sqlparser::ast::Value::Placeholder(_))
            ) =>
            {
                return ControlFlow::Continue(());
            }
            SqlExpr::Cast {
                data_type, expr, ..
            } if input_function(data_type).is_some() => (
                input_function(data_type),
                std::mem::replace(
                    expr.as_mut(),
                    SqlExpr::value(datafusion::sql::sqlparser::ast::Value::Null),
                ),
            ),
            SqlExpr::TypedString(typed) if input_function(&typed.data_type).is_some() => (
                input_function(&typed.data_type),
                SqlExpr::Value(typed.value.clone()),
            ),
            // `INTERVAL '1 day 02:00'`, read by PostgreSQL's rules (one with fields,
            // `INTERVAL '2' HOUR`, stays DataFusion's).
            SqlExpr::Interval(i)
                if i.leading_field.is_none()
                    && i.last_field.is_none()
                    && matches!(i.value.as_ref(), SqlExpr::Value(_)) =>
            {
                (Some(INTERVAL_IN), i.value.as_ref().clone())
            }
            _ => return ControlFlow::Continue(()),
        };
        let Some(function) = function else {
            return ControlFlow::Continue(());
        };
        match crate::ast_build::call(function, operand) {
            Ok(call) => {
                *e = call;
                ControlFlow::Continue(())
            }
            Err(err) => ControlFlow::Break(err),
        }
    });
    match flow {
        ControlFlow::Break(e) => Err(e),
        ControlFlow::Continue(()) => Ok(()),
    }
}

/// Text read as a value of `ty` (UUID or BYTEA) by PostgreSQL's input rules.
#[derive(Debug, PartialEq, Eq, Hash)]
struct TextIn {
    ty: SqlType,
    signature: Signature,
}

impl TextIn {
    fn new(ty: SqlType) -> TextIn {
        TextIn {
            ty,
            signature: Signature::uniform(1, vec![DataType::Utf8], Volatility::Immutable),
        }
    }
}

impl ScalarUDFImpl for TextIn {
    fn name(&self) -> &str {
        match self.ty {
            SqlType::Uuid => UUID_IN,
            SqlType::Json => JSON_IN,
            SqlType::Jsonb => JSONB_IN,
            SqlType::Interval => INTERVAL_IN,
            SqlType::Time => TIME_IN,
            SqlType::Hstore => HSTORE_IN,
            _ => BYTEA_IN,
        }
    }

    fn signature(&self) -> &Signature {
        &self.signature
    }

    fn return_type(&self, _args: &[DataType]) -> DfResult<DataType> {
        Ok(crate::arrow_conv::arrow_type(self.ty))
    }

    fn return_field_from_args(&self, _args: ReturnFieldArgs) -> DfResult<FieldRef> {
        Ok(Arc::new(arrow_field(self.name(), self.ty)))
    }

    fn invoke_with_args(&self, args: ScalarFunctionArgs) -> DfResult<ColumnarValue> {
        let [arg] = args.args.as_slice() else {
            return Err(external(SqlError::Query(format!(
                "{} takes one argument",
                self.name()
            ))));
        };
        let array = arg.to_array(args.number_rows)?;
        let out = text_input(&array, self.ty)
            .ok_or_else(|| {
                external(SqlError::Query(format!(
                    "{} takes text, not {}",
                    self.name(),
                    array.data_type()
                )))
            })?
            .map_err(external)?;
        shaped(matches!(arg, ColumnarValue::Scalar(_)), out)
    }
}

/// `gen_random_uuid()`: DataFusion's `uuid()` (a version 4 uuid in canonical text),
/// described as a uuid.
#[derive(Debug, PartialEq, Eq, Hash)]
struct GenRandomUuid {
    inner: Arc<ScalarUDF>,
}

impl GenRandomUuid {
    fn new() -> GenRandomUuid {
        GenRandomUuid {
            inner: datafusion::functions::string::uuid(),
        }
    }
}

impl ScalarUDFImpl for GenRandomUuid {
    fn name(&self) -> &str {
        "gen_random_uuid"
    }

    fn signature(&self) -> &Signature {
        self.inner.signature()
    }

    fn return_type(&self, _args: &[DataType]) -> DfResult<DataType> {
        Ok(DataType::Utf8)
    }

    fn return_field_from_args(&self, _args: ReturnFieldArgs) -> DfResult<FieldRef> {
        Ok(Arc::new(arrow_field(self.name(), SqlType::Uuid)))
    }

    fn invoke_with_args(&self, args: ScalarFunctionArgs) -> DfResult<ColumnarValue> {
        self.inner.invoke_with_args(args)
    }
}

/// `length(bytea)`: the bytes a value has.
#[derive(Debug, PartialEq, Eq, Hash)]
struct ByteaLength {
    signature: Signature,
}

impl ByteaLength {
    fn new() -> ByteaLength {
        ByteaLength {
            signature: Signature::exact(vec![DataType::Binary], Volatility::Immutable),
        }
    }
}

impl ScalarUDFImpl for ByteaLength {
    fn name(&self) -> &str {
        "pmdb_bytea_length"
    }

    fn signature(&self) -> &Signature {
        &self.signature
    }

    fn return_type(&self, _args: &[DataType]) -> DfResult<DataType> {
        Ok(DataType::Int32)
    }

    fn invoke_with_args(&self, args: ScalarFunctionArgs) -> DfResult<ColumnarValue> {
        let [arg] = args.args.as_slice() else {
            return Err(external(SqlError::Query(
                "length(bytea) takes one argument".into(),
            )));
        };
        let lengths = datafusion::arrow::compute::kernels::length::length(
            arg.to_array(args.number_rows)?.as_ref(),
        )?;
        shaped(matches!(arg, ColumnarValue::Scalar(_)), lengths)
    }
}

/// The analyzer rule: text cast to binary read as bytea input, strings compared with
/// uuids in canonical form.
#[derive(Debug)]
struct TextInput;

impl AnalyzerRule for TextInput {
    fn name(&self) -> &str {
        "pmdb_text_input"
    }

    fn analyze(&self, plan: LogicalPlan, _config: &ConfigOptions) -> DfResult<LogicalPlan> {
        plan.transform_up_with_subqueries(|node| {
            let mut schema = DFSchema::empty();
            for input in node.inputs() {
                schema.merge(input.schema());
            }
            let ordered_or_grouped = match &node {
                LogicalPlan::Sort(sort) => sort.expr.iter().any(|s| is_json(&s.expr, &schema)),
                LogicalPlan::Aggregate(a) => a.group_expr.iter().any(|e| is_json(e, &schema)),
                LogicalPlan::Distinct(_) => node.schema().fields().iter().any(|f| {
                    text_type(f).is_some_and(|t| matches!(t, SqlType::Json | SqlType::Jsonb))
                }),
                _ => false,
            };
            if ordered_or_grouped {
                return Err(external(SqlError::unsupported(
                    "ORDER BY, GROUP BY or DISTINCT over json or jsonb values (pmdb has no jsonb \
                     order, and groups by equal text)",
                )));
            }
            if let LogicalPlan::Aggregate(a) = &node
                && let Some(name) = crate::interval_ops::unhonoured_aggregate(&a.aggr_expr, &schema)
            {
                return Err(external(SqlError::unsupported(format!(
                    "{name}() of interval values (PostgreSQL compares them by span, \
                     '1 mon' with '30 days'; pmdb would not)"
                ))));
            }
            let grouped_intervals = match &node {
                LogicalPlan::Aggregate(a) => a.group_expr.iter().any(|e| is_interval(e, &schema)),
                LogicalPlan::Distinct(_) => node
                    .schema()
                    .fields()
                    .iter()
                    .any(|f| matches!(f.data_type(), DataType::Interval(_))),
                _ => false,
            };
            if grouped_intervals {
                return Err(external(SqlError::unsupported(
                    "GROUP BY or DISTINCT over interval values (PostgreSQL groups equal spans, \
                     '1 mon' with '30 days'; pmdb would not)",
                )));
            }
            let node = match node {
                LogicalPlan::Sort(mut sort) => {
                    for s in &mut sort.expr {
                        if is_interval(&s.expr, &schema) {
                            s.expr = span_of(s.expr.clone())?;
                        }
                    }
                    LogicalPlan::Sort(sort)
                }
                other => other,
            };
            // Output columns keep the names the unrewritten expressions gave them.
            let names = NamePreserver::new(&node);
            let rewritten = node.map_expressions(|e| {
                let name = names.save(&e);
                Ok(e.transform_up(|e| rewrite(e, &schema))?
                    .update_data(|e| name.restore(e)))
            })?;
            // A rewritten expression may have another type (json made text).
            match rewritten.transformed {
                true => rewritten.map_data(LogicalPlan::recompute_schema),
                false => Ok(rewritten),
            }
        })
        .map(|t| t.data)
    }
}

/// Whether `e` gives json or jsonb values.
fn is_json(e: &Expr, schema: &DFSchema) -> bool {
    e.to_field(schema)
        .is_ok_and(|(_, f)| matches!(text_type(&f), Some(SqlType::Json | SqlType::Jsonb)))
}

fn rewrite(e: Expr, schema: &DFSchema) -> DfResult<Transformed<Expr>> {
    let text = |e: &Expr| e.get_type(schema).is_ok_and(|t| t == DataType::Utf8);
    // Uuids and CHAR(n) strings, whose literals are read in the form the column keeps.
    let kept_as = |e: &Expr| {
        e.to_field(schema)
            .ok()
            .and_then(|(_, f)| text_type(&f))
            .filter(|t| matches!(t, SqlType::Uuid | SqlType::Char(_)))
    };
    let jsonb = |e: &Expr| {
        e.to_field(schema)
            .is_ok_and(|(_, f)| text_type(&f) == Some(SqlType::Jsonb))
    };
    Ok(match e {
        Expr::Cast(Cast { expr, field })
            if *field.data_type() == DataType::Binary && text(&expr) =>
        {
            Transformed::yes(match *expr {
                Expr::Literal(ScalarValue::Utf8(s), _) => Expr::Literal(
                    ScalarValue::Binary(
                        s.as_deref()
                            .map(parse_bytea)
                            .transpose()
                            .map_err(external)?,
                    ),
                    None,
                ),
                other => bytea_in(other),
            })
        }
        Expr::Cast(Cast { expr, field })
            if let Some(numeric) = expr.get_type(schema).ok().and_then(|from| {
                crate::float_numeric::numeric_cast(&expr, &from, field.data_type())
            }) =>
        {
            Transformed::yes(numeric)
        }
        Expr::Cast(Cast { expr, field })
            if let Some(rounding) = expr.get_type(schema).ok().and_then(|from| {
                crate::integer_casts::rounding_cast(&expr, &from, field.data_type())
            }) =>
        {
            Transformed::yes(rounding)
        }
        // Text made an array: read in PostgreSQL's array form, not as one element.
        Expr::Cast(Cast { expr, field })
            if list_element(field.data_type()).is_some() && text(&expr) =>
        {
            let element = list_element(field.data_type()).cloned().expect("checked");
            Transformed::yes(match *expr {
                Expr::Literal(ScalarValue::Utf8(Some(s)), _) => {
                    Expr::Literal(array_from_text(&s, &element).map_err(external)?, None)
                }
                other => Expr::ScalarFunction(ScalarFunction::new_udf(
                    Arc::new(ScalarUDF::from(ArrayIn::new(field.data_type().clone()))),
                    vec![other],
                )),
            })
        }
        Expr::Cast(Cast { expr, field })
            if *field.data_type() == DataType::Utf8
                && expr
                    .get_type(schema)
                    .is_ok_and(|t| crate::text_cast::needs_pg_text(&t)) =>
        {
            Transformed::yes(crate::text_cast::pg_text(*expr))
        }
        // A json, jsonb, uuid or enum value made text is text: DataFusion would keep the
        // type its field's metadata names through a cast to the same Arrow type (so
        // `data::text = 'x'` compared json values).
        Expr::Cast(Cast { expr, field })
            if *field.data_type() == DataType::Utf8
                && field.name().is_empty()
                && field.metadata().is_empty()
                && expr
                    .to_field(schema)
                    .is_ok_and(|(_, f)| text_type(&f).is_some_and(|t| t != SqlType::Text)) =>
        {
            Transformed::yes(Expr::Cast(Cast {
                expr,
                field: Arc::new(datafusion::arrow::datatypes::Field::new(
                    "text",
                    DataType::Utf8,
                    true,
                )),
            }))
        }
        // Text made an interval, where DataFusion coerced it (a VALUES list, an INSERT):
        // read by PostgreSQL's rules.
        Expr::Cast(Cast { expr, field })
            if matches!(field.data_type(), DataType::Interval(_)) && text(&expr) =>
        {
            Transformed::yes(Expr::ScalarFunction(ScalarFunction::new_udf(
                Arc::new(ScalarUDF::from(TextIn::new(SqlType::Interval))),
                vec![*expr],
            )))
        }
        // Text made a time: read by PostgreSQL's rules (`24:00:00`, `4:05 PM`).
        Expr::Cast(Cast { expr, field })
            if matches!(field.data_type(), DataType::Time64(_)) && text(&expr) =>
        {
            let micros = Expr::ScalarFunction(ScalarFunction::new_udf(
                Arc::new(ScalarUDF::from(TextIn::new(SqlType::Time))),
                vec![*expr],
            ));
            Transformed::yes(match field.data_type() {
                DataType::Time64(TimeUnit::Microsecond) => micros,
                to => micros.cast_to(to, schema)?,
            })
        }
        Expr::BinaryExpr(BinaryExpr { left, op, right })
            if compares(op) && (is_json(&left, schema) || is_json(&right, schema)) =>
        {
            if !matches!(op, Operator::Eq | Operator::NotEq) || !(jsonb(&left) || jsonb(&right)) {
                return Err(external(SqlError::unsupported(format!(
                    "operator {op} on json values (pmdb compares jsonb values with = and <> \
                     only)"
                ))));
            }
            let equal = Expr::ScalarFunction(ScalarFunction::new_udf(
                crate::json_functions::equality(),
                vec![*left, *right],
            ));
            Transformed::yes(match op {
                Operator::Eq => equal,
                _ => Expr::Not(Box::new(equal)),
            })
        }
        Expr::BinaryExpr(BinaryExpr { left, op, right }) if compares(op) => {
            match (kept_as(&left), kept_as(&right)) {
                (Some(ty), None) => Transformed::yes(Expr::BinaryExpr(BinaryExpr {
                    right: Box::new(literal_as(ty, *right)?),
                    left,
                    op,
                })),
                (None, Some(ty)) => Transformed::yes(Expr::BinaryExpr(BinaryExpr {
                    left: Box::new(literal_as(ty, *left)?),
                    op,
                    right,
                })),
                _ => Transformed::no(Expr::BinaryExpr(BinaryExpr { left, op, right })),
            }
        }
        // PostgreSQL's length(bytea) counts bytes; DataFusion's reads them as text (type
        // coercion has cast them to it).
        Expr::ScalarFunction(f) if f.name() == "character_length" => {
            match bytes_as_text(&f.args, schema) {
                Some(bytes) => Transformed::yes(Expr::ScalarFunction(ScalarFunction::new_udf(
                    Arc::new(ScalarUDF::from(ByteaLength::new())),
                    vec![bytes],
                ))),
                None => Transformed::no(Expr::ScalarFunction(f)),
            }
        }
        Expr::InList(InList {
            expr,
            list,
            negated,
        }) if kept_as(&expr).is_some() => {
            let ty = kept_as(&expr).expect("checked");
            Transformed::yes(Expr::InList(InList {
                expr,
                list: list
                    .into_iter()
                    .map(|e| literal_as(ty, e))
                    .collect::<DfResult<_>>()?,
                negated,
            }))
        }
        e => Transformed::no(e),
    })
}

/// Text read as an array of the type it was cast to, row by row.
#[derive(Debug, PartialEq, Eq, Hash)]
struct ArrayIn {
    signature: Signature,
    to: DataType,
}

impl ArrayIn {
    fn new(to: DataType) -> ArrayIn {
        ArrayIn {
            signature: Signature::exact(vec![DataType::Utf8], Volatility::Immutable),
            to,
        }
    }
}

impl ScalarUDFImpl for ArrayIn {
    fn name(&self) -> &str {
        "pmdb_array_in"
    }

    fn signature(&self) -> &Signature {
        &self.signature
    }

    fn return_type(&self, _args: &[DataType]) -> DfResult<DataType> {
        Ok(self.to.clone())
    }

    fn invoke_with_args(&self, args: ScalarFunctionArgs) -> DfResult<ColumnarValue> {
        let element = list_element(&self.to).unwrap_or(&self.to);
        let texts = ColumnarValue::values_to_arrays(&args.args)?;
        let texts = texts[0].as_string::<i32>();
        let values = (0..args.number_rows)
            .map(|i| match texts.is_valid(i) {
                true => array_from_text(texts.value(i), element).map_err(external),
                false => ScalarValue::try_from(&self.to),
            })
            .collect::<DfResult<Vec<_>>>()?;
        Ok(ColumnarValue::Array(ScalarValue::iter_to_array(values)?))
    }
}

/// The binary expression that `args`, one cast of binary to text, casts.
fn bytes_as_text(args: &[Expr], schema: &DFSchema) -> Option<Expr> {
    match args {
        [Expr::Cast(Cast { expr, .. })]
            if expr.get_type(schema).is_ok_and(|t| t == DataType::Binary) =>
        {
            Some(expr.as_ref().clone())
        }
        _ => None,
    }
}

fn bytea_in(e: Expr) -> Expr {
    Expr::ScalarFunction(ScalarFunction::new_udf(
        Arc::new(ScalarUDF::from(TextIn::new(SqlType::Bytea))),
        vec![e],
    ))
}

/// A string literal compared with a column of type `ty` as the column keeps values: a
/// uuid in its canonical form (PostgreSQL reads it as a uuid: an invalid one is an
/// error), a CHAR(n) string without trailing blanks; anything else as it is.
fn literal_as(ty: SqlType, e: Expr) -> DfResult<Expr> {
    Ok(match e {
        Expr::Literal(ScalarValue::Utf8(Some(s)), meta) => Expr::Literal(
            ScalarValue::Utf8(Some(match ty {
                SqlType::Uuid => uuid_text(parse_uuid(&s).map_err(external)?),
                _ => without_trailing_blanks(&s).to_owned(),
            })),
            meta,
        ),
        e => e,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::arrow_conv::is_uuid;

    #[test]
    fn uuid_casts_become_calls() {
        let mut s = crate::session::parse(
            "SELECT 'A0EEBC99-9C0B-4EF8-BB6D-6BB9BD380A11'::uuid, CAST(x AS UUID), UUID 'abc'",
        )
        .unwrap()
        .pop_front()
        .unwrap();
        let datafusion::sql::parser::Statement::Statement(s) = &mut s else {
            panic!("a statement");
        };
        rewrite_casts(s).unwrap();
        let text = s.to_string();
        assert_eq!(text.matches("pmdb_uuid(").count(), 3, "{text}");
        assert!(!text.to_lowercase().contains("uuid '"), "{text}");
    }

    #[test]
    fn a_field_of_uuid_type_is_marked() {
        let f = arrow_field("u", SqlType::Uuid);
        assert!(is_uuid(&f));
        assert!(!is_uuid(&arrow_field("t", SqlType::Text)));
    }
}
