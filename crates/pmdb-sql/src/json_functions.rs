//! The json and jsonb operators and functions in queries: `->`, `->>`, `#>`, `#>>`,
//! `@>`, `<@`, `?`, `?|`, `?&` (planned by an expression planner when the left operand
//! is json, jsonb or a string literal), `json[b]_typeof`, `json[b]_array_length`,
//! `json[b]_extract_path[_text]`, `json[b]_build_object` and `to_json[b]`. A function
//! that gives json gives the type of its json operand (or the one its name says),
//! carried in the result's field metadata. The values' semantics are [`crate::json`]'s.

use std::sync::Arc;

use datafusion::arrow::array::{Array, ArrayRef, AsArray, BooleanArray, Int32Array, StringArray};
use datafusion::arrow::datatypes::{DataType, Field, FieldRef};
use datafusion::common::{DFSchema, Result as DfResult, ScalarValue};
use datafusion::execution::FunctionRegistry;
use datafusion::logical_expr::planner::{ExprPlanner, PlannerResult, RawBinaryExpr};
use datafusion::logical_expr::{
    ColumnarValue, Expr, ExprSchemable, ReturnFieldArgs, ScalarFunctionArgs, ScalarUDF,
    ScalarUDFImpl, Signature, Volatility,
};
use datafusion::prelude::SessionContext;
use datafusion::sql::sqlparser::ast::BinaryOperator;

use crate::arrow_conv::{arrow_field, text_type};
use crate::error::{SqlError, external, state};
use crate::json::{self, Json, Kind};
use crate::types::SqlType;
use crate::udf_result::shaped;

/// What one of the functions computes.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
enum Op {
    /// `->`: a member by key, or an element by index.
    Get,
    /// `->>`: the same as text.
    GetText,
    /// `#>`: the part at a path.
    Path,
    /// `#>>`: the same as text.
    PathText,
    /// `@>`
    Contains,
    /// `<@`
    ContainedIn,
    /// `?`
    HasKey,
    /// `?|`
    HasAny,
    /// `?&`
    HasAll,
    /// jsonb's `=`.
    Equal,
    TypeOf,
    ArrayLength,
    /// `json[b]_extract_path(json, VARIADIC keys)`.
    ExtractPath,
    ExtractPathText,
    /// `json[b]_build_object(k, v, …)` of the type given.
    BuildObject(SqlType),
    /// `to_json[b](value)`.
    To(SqlType),
}

/// The functions behind the operators, and the named ones.
const NAMED: &[(&str, Op)] = &[
    ("pmdb_json_get", Op::Get),
    ("pmdb_json_get_text", Op::GetText),
    ("pmdb_json_path", Op::Path),
    ("pmdb_json_path_text", Op::PathText),
    ("pmdb_json_contains", Op::Contains),
    ("pmdb_json_contained_in", Op::ContainedIn),
    ("pmdb_json_has_key", Op::HasKey),
    ("pmdb_json_has_any", Op::HasAny),
    ("pmdb_json_has_all", Op::HasAll),
    ("pmdb_jsonb_equal", Op::Equal),
    ("jsonb_typeof", Op::TypeOf),
    ("json_typeof", Op::TypeOf),
    ("jsonb_array_length", Op::ArrayLength),
    ("json_array_length", Op::ArrayLength),
    ("jsonb_extract_path", Op::ExtractPath),
    ("json_extract_path", Op::ExtractPath),
    ("jsonb_extract_path_text", Op::ExtractPathText),
    ("json_extract_path_text", Op::ExtractPathText),
    ("jsonb_build_object", Op::BuildObject(SqlType::Jsonb)),
    ("json_build_object", Op::BuildObject(SqlType::Json)),
    ("to_jsonb", Op::To(SqlType::Jsonb)),
    ("to_json", Op::To(SqlType::Json)),
];

/// Registers the functions and the operators' planner in `ctx`.
pub(crate) fn register(ctx: &mut SessionContext) -> datafusion::error::Result<()> {
    for (name, op) in NAMED {
        SessionContext::register_udf(ctx, ScalarUDF::from(JsonFn::new(name, *op)));
    }
    ctx.register_expr_planner(Arc::new(JsonOperators))
}

/// jsonb's `=` as a function of two jsonb values.
pub(crate) fn equality() -> Arc<ScalarUDF> {
    Arc::new(ScalarUDF::from(JsonFn::new("pmdb_jsonb_equal", Op::Equal)))
}

#[derive(Debug)]
struct JsonOperators;

impl ExprPlanner for JsonOperators {
    fn plan_binary_op(
        &self,
        expr: RawBinaryExpr,
        schema: &DFSchema,
    ) -> DfResult<PlannerResult<RawBinaryExpr>> {
        let name = match expr.op {
            BinaryOperator::Arrow => "pmdb_json_get",
            BinaryOperator::LongArrow => "pmdb_json_get_text",
            BinaryOperator::HashArrow => "pmdb_json_path",
            BinaryOperator::HashLongArrow => "pmdb_json_path_text",
            BinaryOperator::AtArrow => "pmdb_json_contains",
            BinaryOperator::ArrowAt => "pmdb_json_contained_in",
            BinaryOperator::Question => "pmdb_json_has_key",
            BinaryOperator::QuestionPipe => "pmdb_json_has_any",
            BinaryOperator::QuestionAnd => "pmdb_json_has_all",
            _ => return Ok(PlannerResult::Original(expr)),
        };
        let json_like = |e: &Expr| {
            matches!(e, Expr::Literal(ScalarValue::Utf8(_), _))
                || e.to_field(schema).is_ok_and(|(_, f)| {
                    matches!(text_type(&f), Some(SqlType::Json | SqlType::Jsonb))
                })
        };
        if !json_like(&expr.left) {
            return Ok(PlannerResult::Original(expr));
        }
        let op = NAMED.iter().find(|(n, _)| *n == name).map(|(_, op)| *op);
        let Some(op) = op else {
            return Ok(PlannerResult::Original(expr));
        };
        Ok(PlannerResult::Planned(Expr::ScalarFunction(
            datafusion::logical_expr::expr::ScalarFunction::new_udf(
                Arc::new(ScalarUDF::from(JsonFn::new(name, op))),
                vec![expr.left, expr.right],
            ),
        )))
    }
}

#[derive(Debug, PartialEq, Eq, Hash)]
struct JsonFn {
    name: &'static str,
    op: Op,
    signature: Signature,
}

impl JsonFn {
    fn new(name: &'static str, op: Op) -> JsonFn {
        JsonFn {
            name,
            op,
            signature: Signature::variadic_any(Volatility::Immutable),
        }
    }

    /// The json type of the result: the first argument's (jsonb for a string literal,
    /// as PostgreSQL resolves an unknown literal against jsonb's operators first).
    fn result_type(&self, first: Option<&FieldRef>) -> SqlType {
        match self.op {
            Op::BuildObject(ty) | Op::To(ty) => ty,
            _ => match first.and_then(|f| text_type(f)) {
                Some(SqlType::Json) => SqlType::Json,
                _ => SqlType::Jsonb,
            },
        }
    }
}

fn wrong(message: String) -> datafusion::error::DataFusionError {
    external(SqlError::user(state::DATATYPE_MISMATCH, message))
}

impl ScalarUDFImpl for JsonFn {
    fn name(&self) -> &str {
        self.name
    }

    fn signature(&self) -> &Signature {
        &self.signature
    }

    fn return_type(&self, _args: &[DataType]) -> DfResult<DataType> {
        Ok(match self.op {
            Op::Contains | Op::ContainedIn | Op::HasKey | Op::HasAny | Op::HasAll | Op::Equal => {
                DataType::Boolean
            }
            Op::ArrayLength => DataType::Int32,
            _ => DataType::Utf8,
        })
    }

    fn return_field_from_args(&self, args: ReturnFieldArgs) -> DfResult<FieldRef> {
        let expected = match self.op {
            Op::TypeOf | Op::ArrayLength | Op::To(_) => Some(1),
            Op::Get | Op::GetText | Op::Path | Op::PathText => Some(2),
            Op::Contains | Op::ContainedIn | Op::HasKey | Op::HasAny | Op::HasAll | Op::Equal => {
                Some(2)
            }
            Op::ExtractPath | Op::ExtractPathText | Op::BuildObject(_) => None,
        };
        if let Some(n) = expected
            && args.arg_fields.len() != n
        {
            return Err(wrong(format!("{} takes {n} argument(s)", self.name)));
        }
        if matches!(self.op, Op::BuildObject(_)) && !args.arg_fields.len().is_multiple_of(2) {
            return Err(external(SqlError::user(
                state::INVALID_PARAMETER_VALUE,
                "argument list must have even number of elements",
            )));
        }
        Ok(Arc::new(match self.op {
            Op::Get | Op::Path | Op::ExtractPath | Op::BuildObject(_) | Op::To(_) => {
                arrow_field(self.name, self.result_type(args.arg_fields.first()))
            }
            _ => Field::new(self.name, self.return_type(&[])?, true),
        }))
    }

    fn invoke_with_args(&self, args: ScalarFunctionArgs) -> DfResult<ColumnarValue> {
        let crate::udf_result::Arguments {
            arrays,
            scalar: all_scalar,
            rows: n,
        } = crate::udf_result::arguments(&args)?;
        let jsonb = self.result_type(args.arg_fields.first()) == SqlType::Jsonb;
        let out: ArrayRef = match self.op {
            Op::Contains | Op::ContainedIn | Op::HasKey | Op::HasAny | Op::HasAll | Op::Equal => {
                Arc::new(
                    (0..n)
                        .map(|r| self.test(&arrays, r))
                        .collect::<Result<BooleanArray, SqlError>>()
                        .map_err(external)?,
                )
            }
            Op::ArrayLength => Arc::new(
                (0..n)
                    .map(|r| array_length(&arrays[0], r))
                    .collect::<Result<Int32Array, SqlError>>()
                    .map_err(external)?,
            ),
            Op::BuildObject(_) | Op::To(_) => Arc::new(
                (0..n)
                    .map(|r| self.build(&arrays, &args.arg_fields, r, jsonb))
                    .collect::<Result<StringArray, SqlError>>()
                    .map_err(external)?,
            ),
            _ => Arc::new(
                (0..n)
                    .map(|r| self.extract(&arrays, r, jsonb))
                    .collect::<Result<StringArray, SqlError>>()
                    .map_err(external)?,
            ),
        };
        shaped(all_scalar, out)
    }
}

/// Value `r` of `a` as text (`None` for NULL).
pub(crate) fn text_at(a: &ArrayRef, r: usize) -> Result<Option<String>, SqlError> {
    // An array of type NULL (a bare NULL argument) marks no nulls.
    if a.is_null(r) || a.data_type() == &DataType::Null {
        return Ok(None);
    }
    let v = ScalarValue::try_from_array(a, r).map_err(|e| SqlError::Query(e.to_string()))?;
    Ok(match v {
        ScalarValue::Utf8(s) | ScalarValue::LargeUtf8(s) | ScalarValue::Utf8View(s) => s,
        other => Some(other.to_string()),
    })
}

/// The keys of a path or key list operand at row `r`: a text array, or a `{a,b}`
/// literal.
pub(crate) fn keys_at(a: &ArrayRef, r: usize) -> Result<Option<Vec<String>>, SqlError> {
    if a.is_null(r) {
        return Ok(None);
    }
    match a.data_type() {
        DataType::List(_) => {
            let list = a.as_list::<i32>().value(r);
            (0..list.len())
                .map(|i| Ok(text_at(&list, i)?.unwrap_or_default()))
                .collect::<Result<Vec<_>, _>>()
                .map(Some)
        }
        _ => match text_at(a, r)? {
            Some(t) => json::text_array(&t).map(Some),
            None => Ok(None),
        },
    }
}

impl JsonFn {
    /// The json (or text) result of row `r`.
    fn extract(
        &self,
        arrays: &[ArrayRef],
        r: usize,
        jsonb: bool,
    ) -> Result<Option<String>, SqlError> {
        let Some(text) = text_at(&arrays[0], r)? else {
            return Ok(None);
        };
        let v = json::parse(&text)?;
        let path: Vec<String> = match self.op {
            Op::TypeOf => return Ok(Some(v.type_name().to_owned())),
            Op::Get | Op::GetText => {
                let part = match &arrays[1] {
                    a if a.is_null(r) => None,
                    a if a.data_type().is_integer() => {
                        let i = text_at(a, r)?.and_then(|t| t.parse::<i64>().ok());
                        i.and_then(|i| v.element(i))
                    }
                    a => text_at(a, r)?.and_then(|k| v.member(&k)),
                };
                return Ok(part.and_then(|p| self.shown(&text, p, jsonb)));
            }
            Op::Path | Op::PathText => match keys_at(&arrays[1], r)? {
                Some(p) => p,
                None => return Ok(None),
            },
            _ => {
                let mut path = Vec::with_capacity(arrays.len() - 1);
                for a in &arrays[1..] {
                    match text_at(a, r)? {
                        Some(k) => path.push(k),
                        None => return Ok(None),
                    }
                }
                path
            }
        };
        Ok(v.at_path(&path).and_then(|p| self.shown(&text, p, jsonb)))
    }

    /// A part as the function gives it: json, or text for the `_text` forms.
    fn shown(&self, text: &str, part: &Json, jsonb: bool) -> Option<String> {
        match self.op {
            Op::GetText | Op::PathText | Op::ExtractPathText => {
                json::part_as_text(text, part, jsonb)
            }
            _ => Some(json::part_text(text, part, jsonb)),
        }
    }

    /// The boolean of a containment or key test at row `r`.
    fn test(&self, arrays: &[ArrayRef], r: usize) -> Result<Option<bool>, SqlError> {
        let Some(left) = text_at(&arrays[0], r)? else {
            return Ok(None);
        };
        let left = json::parse(&left)?;
        Ok(Some(match self.op {
            Op::Contains | Op::ContainedIn | Op::Equal => {
                let Some(right) = text_at(&arrays[1], r)? else {
                    return Ok(None);
                };
                let right = json::parse(&right)?;
                match self.op {
                    Op::Contains => left.contains(&right),
                    Op::ContainedIn => right.contains(&left),
                    _ => left.equals(&right),
                }
            }
            Op::HasKey => match text_at(&arrays[1], r)? {
                Some(k) => left.has_key(&k),
                None => return Ok(None),
            },
            _ => {
                let Some(keys) = keys_at(&arrays[1], r)? else {
                    return Ok(None);
                };
                if self.op == Op::HasAny {
                    keys.iter().any(|k| left.has_key(k))
                } else {
                    keys.iter().all(|k| left.has_key(k))
                }
            }
        }))
    }

    /// `json[b]_build_object` or `to_json[b]` at row `r`.
    fn build(
        &self,
        arrays: &[ArrayRef],
        fields: &[FieldRef],
        r: usize,
        jsonb: bool,
    ) -> Result<Option<String>, SqlError> {
        let mut out = String::new();
        if let Op::To(_) = self.op {
            if arrays[0].is_null(r) {
                return Ok(None);
            }
            value_json(&arrays[0], &fields[0], r, &mut out)?;
        } else {
            out.push('{');
            for (i, pair) in arrays.chunks(2).enumerate() {
                if i > 0 {
                    out.push_str(", ");
                }
                let key = text_at(&pair[0], r)?.ok_or_else(|| {
                    SqlError::user(
                        state::INVALID_PARAMETER_VALUE,
                        "null value not allowed for object key",
                    )
                })?;
                json::quote(&key, &mut out);
                out.push_str(" : ");
                value_json(&pair[1], &fields[2 * i + 1], r, &mut out)?;
            }
            out.push('}');
        }
        Ok(Some(if jsonb {
            json::canonical(&json::parse(&out)?)
        } else {
            out
        }))
    }
}

/// Value `r` of `a` (of field `f`) as JSON: json as it is, numbers and booleans bare,
/// anything else a string of its text.
fn value_json(a: &ArrayRef, f: &FieldRef, r: usize, out: &mut String) -> Result<(), SqlError> {
    let Some(text) = text_at(a, r)? else {
        out.push_str("null");
        return Ok(());
    };
    match a.data_type() {
        _ if matches!(text_type(f), Some(SqlType::Json | SqlType::Jsonb)) => out.push_str(&text),
        DataType::Boolean => out.push_str(&text),
        t if t.is_numeric() => match text.parse::<f64>() {
            Ok(x) if x.is_finite() => out.push_str(&text),
            _ => json::quote(&text, out),
        },
        _ => json::quote(&text, out),
    }
    Ok(())
}

/// `json[b]_array_length` at row `r`: 22023 for a value that is not an array.
fn array_length(a: &ArrayRef, r: usize) -> Result<Option<i32>, SqlError> {
    let Some(text) = text_at(a, r)? else {
        return Ok(None);
    };
    match json::parse(&text)?.kind {
        Kind::Array(items) => Ok(Some(items.len() as i32)),
        Kind::Object(_) => Err(SqlError::user(
            state::INVALID_PARAMETER_VALUE,
            "cannot get array length of a non-array",
        )),
        _ => Err(SqlError::user(
            state::INVALID_PARAMETER_VALUE,
            "cannot get array length of a scalar",
        )),
    }
}
