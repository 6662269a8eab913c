//! The hstore extension's operators and functions in queries: `->` (of a key or a text
//! array of keys), `?`, `?|`, `?&`, `@>`, `<@`, `||`, `-` (of a key, keys or pairs) and
//! `=`/`<>` against text read as hstore, planned by an expression planner when an
//! operand is an hstore; `akeys`, `avals`, `hstore(…)`, `hstore_to_json[b]`, `exist`,
//! `defined`, `delete`, `slice` and `fetchval` by name. The values' semantics are
//! [`crate::hstore`]'s; an operand that is text is read as hstore input.

use std::sync::Arc;

use datafusion::arrow::array::{
    Array, ArrayRef, BooleanArray, ListBuilder, StringArray, StringBuilder,
};
use datafusion::arrow::datatypes::{DataType, Field, FieldRef};
use datafusion::common::{DFSchema, Result as DfResult};
use datafusion::execution::FunctionRegistry;
use datafusion::logical_expr::expr::ScalarFunction;
use datafusion::logical_expr::planner::{ExprPlanner, PlannerResult, RawBinaryExpr};
use datafusion::logical_expr::{
    BinaryExpr, ColumnarValue, Expr, ExprSchemable, Operator, ReturnFieldArgs, ScalarFunctionArgs,
    ScalarUDF, ScalarUDFImpl, Signature, Volatility,
};
use datafusion::prelude::SessionContext;
use datafusion::sql::sqlparser::ast::BinaryOperator;

use crate::arrow_conv::{arrow_field, text_type};
use crate::error::{SqlError, external, state};
use crate::hstore::Hstore;
use crate::json_functions::{keys_at, text_at};
use crate::types::SqlType;
use crate::udf_result::shaped;

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
enum Op {
    /// `h -> key`, `fetchval(h, key)`; `h -> keys` gives a text array.
    Get,
    /// `h ? key`, `exist(h, key)`
    Has,
    /// `h ?| keys`
    HasAny,
    /// `h ?& keys`
    HasAll,
    /// `defined(h, key)`
    Defined,
    /// `a @> b`
    Contains,
    /// `a <@ b`
    ContainedIn,
    /// `a || b`
    Concat,
    /// `h - key`, `h - keys`, `h - pairs`, `delete(…)`
    Delete,
    /// `slice(h, keys)`
    Slice,
    /// `akeys(h)`
    Keys,
    /// `avals(h)`
    Values,
    /// `hstore(key, value)`, `hstore(keys, values)`, `hstore(keys and values)`
    Build,
    /// `hstore_to_json(h)` and (`true`) `hstore_to_jsonb(h)`
    ToJson(bool),
}

const NAMED: &[(&str, Op)] = &[
    ("pmdb_hstore_get", Op::Get),
    ("fetchval", Op::Get),
    ("pmdb_hstore_has", Op::Has),
    ("exist", Op::Has),
    ("isexists", Op::Has),
    ("pmdb_hstore_has_any", Op::HasAny),
    ("exists_any", Op::HasAny),
    ("pmdb_hstore_has_all", Op::HasAll),
    ("exists_all", Op::HasAll),
    ("defined", Op::Defined),
    ("isdefined", Op::Defined),
    ("pmdb_hstore_contains", Op::Contains),
    ("hs_contains", Op::Contains),
    ("pmdb_hstore_contained_in", Op::ContainedIn),
    ("hs_contained", Op::ContainedIn),
    ("pmdb_hstore_concat", Op::Concat),
    ("hs_concat", Op::Concat),
    ("pmdb_hstore_delete", Op::Delete),
    ("delete", Op::Delete),
    ("slice", Op::Slice),
    ("akeys", Op::Keys),
    ("avals", Op::Values),
    ("hstore", Op::Build),
    ("hstore_to_json", Op::ToJson(false)),
    ("hstore_to_jsonb", Op::ToJson(true)),
];

/// Registers the functions and the operators' planner in `ctx`, the planner before
/// json's, which takes a text literal on the left as json.
pub(crate) fn register(ctx: &mut SessionContext) -> datafusion::error::Result<()> {
    for (name, op) in NAMED {
        SessionContext::register_udf(ctx, ScalarUDF::from(HstoreFn::new(name, *op)));
    }
    ctx.register_expr_planner(Arc::new(HstoreOperators))
}

fn call(name: &'static str, args: Vec<Expr>) -> Expr {
    let op = NAMED
        .iter()
        .find(|(n, _)| *n == name)
        .map(|(_, op)| *op)
        .expect("a function of the table above");
    Expr::ScalarFunction(ScalarFunction::new_udf(
        Arc::new(ScalarUDF::from(HstoreFn::new(name, op))),
        args,
    ))
}

/// `e` read as hstore input (`pmdb_hstore(e)`), unless it is an hstore already.
fn as_hstore(e: Expr, schema: &DFSchema) -> Expr {
    if is_hstore(&e, schema) {
        return e;
    }
    Expr::ScalarFunction(ScalarFunction::new_udf(
        Arc::new(crate::type_input::hstore_input()),
        vec![e],
    ))
}

/// Whether `e` is an hstore. An operator's result never is (hstore's own operators are
/// planned as calls), and working out the field of a long chain of operators at each of
/// its links would take time cubic in its length.
fn is_hstore(e: &Expr, schema: &DFSchema) -> bool {
    !matches!(e, Expr::BinaryExpr(_))
        && e.to_field(schema)
            .is_ok_and(|(_, f)| text_type(&f) == Some(SqlType::Hstore))
}

#[derive(Debug)]
struct HstoreOperators;

impl ExprPlanner for HstoreOperators {
    fn plan_binary_op(
        &self,
        expr: RawBinaryExpr,
        schema: &DFSchema,
    ) -> DfResult<PlannerResult<RawBinaryExpr>> {
        if !matches!(
            expr.op,
            BinaryOperator::Arrow
                | BinaryOperator::Question
                | BinaryOperator::QuestionPipe
                | BinaryOperator::QuestionAnd
                | BinaryOperator::Minus
                | BinaryOperator::AtArrow
                | BinaryOperator::ArrowAt
                | BinaryOperator::StringConcat
                | BinaryOperator::Eq
                | BinaryOperator::NotEq
                | BinaryOperator::Lt
                | BinaryOperator::LtEq
                | BinaryOperator::Gt
                | BinaryOperator::GtEq
        ) {
            return Ok(PlannerResult::Original(expr));
        }
        let (left, right) = (
            is_hstore(&expr.left, schema),
            is_hstore(&expr.right, schema),
        );
        if !left && !right {
            return Ok(PlannerResult::Original(expr));
        }
        let RawBinaryExpr {
            op,
            left: l,
            right: r,
        } = expr;
        let planned = match op {
            BinaryOperator::Arrow if left => call("pmdb_hstore_get", vec![l, r]),
            BinaryOperator::Question if left => call("pmdb_hstore_has", vec![l, r]),
            BinaryOperator::QuestionPipe if left => call("pmdb_hstore_has_any", vec![l, r]),
            BinaryOperator::QuestionAnd if left => call("pmdb_hstore_has_all", vec![l, r]),
            BinaryOperator::Minus if left => call("pmdb_hstore_delete", vec![l, r]),
            BinaryOperator::AtArrow => call("pmdb_hstore_contains", vec![l, r]),
            BinaryOperator::ArrowAt => call("pmdb_hstore_contained_in", vec![l, r]),
            BinaryOperator::StringConcat => call("pmdb_hstore_concat", vec![l, r]),
            // Equal values have equal canonical text: text compared with an hstore is
            // read as one first.
            BinaryOperator::Eq | BinaryOperator::NotEq => Expr::BinaryExpr(BinaryExpr::new(
                Box::new(as_hstore(l, schema)),
                if op == BinaryOperator::Eq {
                    Operator::Eq
                } else {
                    Operator::NotEq
                },
                Box::new(as_hstore(r, schema)),
            )),
            BinaryOperator::Lt
            | BinaryOperator::LtEq
            | BinaryOperator::Gt
            | BinaryOperator::GtEq => {
                return Err(external(SqlError::user(
                    state::UNDEFINED_FUNCTION,
                    format!("operator does not exist: hstore {op} hstore"),
                )));
            }
            op => {
                return Ok(PlannerResult::Original(RawBinaryExpr {
                    op,
                    left: l,
                    right: r,
                }));
            }
        };
        Ok(PlannerResult::Planned(planned))
    }
}

#[derive(Debug, PartialEq, Eq, Hash)]
struct HstoreFn {
    name: &'static str,
    op: Op,
    signature: Signature,
}

impl HstoreFn {
    fn new(name: &'static str, op: Op) -> HstoreFn {
        HstoreFn {
            name,
            op,
            signature: Signature::variadic_any(Volatility::Immutable),
        }
    }

    fn arity(&self) -> &'static [usize] {
        match self.op {
            Op::Keys | Op::Values | Op::ToJson(_) => &[1],
            Op::Build => &[1, 2],
            _ => &[2],
        }
    }
}

fn is_list(f: &FieldRef) -> bool {
    matches!(f.data_type(), DataType::List(_))
}

fn text_list_field() -> DataType {
    DataType::List(Arc::new(Field::new_list_field(DataType::Utf8, true)))
}

/// The hstore at row `r` of `a`: its canonical text read back, or text read as input.
fn hstore_at(a: &ArrayRef, r: usize) -> Result<Option<Hstore>, SqlError> {
    text_at(a, r)?.map(|t| Hstore::parse(&t)).transpose()
}

fn bad_array(message: &str) -> SqlError {
    SqlError::user("2202E", message.to_owned())
}

impl ScalarUDFImpl for HstoreFn {
    fn name(&self) -> &str {
        self.name
    }

    fn signature(&self) -> &Signature {
        &self.signature
    }

    fn return_type(&self, _args: &[DataType]) -> DfResult<DataType> {
        Ok(match self.op {
            Op::Has | Op::HasAny | Op::HasAll | Op::Defined | Op::Contains | Op::ContainedIn => {
                DataType::Boolean
            }
            Op::Keys | Op::Values => text_list_field(),
            _ => DataType::Utf8,
        })
    }

    fn return_field_from_args(&self, args: ReturnFieldArgs) -> DfResult<FieldRef> {
        let n = args.arg_fields.len();
        if !self.arity().contains(&n) {
            return Err(external(SqlError::user(
                state::UNDEFINED_FUNCTION,
                format!(
                    "function {}() with {n} argument(s) does not exist",
                    self.name
                ),
            )));
        }
        Ok(Arc::new(match self.op {
            Op::Concat | Op::Delete | Op::Slice | Op::Build => {
                arrow_field(self.name, SqlType::Hstore)
            }
            Op::ToJson(binary) => arrow_field(
                self.name,
                if binary {
                    SqlType::Jsonb
                } else {
                    SqlType::Json
                },
            ),
            Op::Get if is_list(&args.arg_fields[1]) => {
                Field::new(self.name, text_list_field(), true)
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
        let fields = &args.arg_fields;
        let out: ArrayRef = match self.op {
            Op::Has | Op::HasAny | Op::HasAll | Op::Defined | Op::Contains | Op::ContainedIn => {
                Arc::new(
                    (0..n)
                        .map(|r| self.test(&arrays, r))
                        .collect::<Result<BooleanArray, SqlError>>()
                        .map_err(external)?,
                )
            }
            Op::Keys | Op::Values => {
                let mut b = ListBuilder::new(StringBuilder::new());
                for r in 0..n {
                    match hstore_at(&arrays[0], r).map_err(external)? {
                        Some(h) => {
                            for (k, v) in h.pairs() {
                                match self.op {
                                    Op::Keys => b.values().append_value(k),
                                    _ => b.values().append_option(v.as_deref()),
                                }
                            }
                            b.append(true);
                        }
                        None => b.append(false),
                    }
                }
                Arc::new(b.finish())
            }
            Op::Get if is_list(&fields[1]) => {
                let mut b = ListBuilder::new(StringBuilder::new());
                for r in 0..n {
                    let h = hstore_at(&arrays[0], r).map_err(external)?;
                    let keys = keys_at(&arrays[1], r).map_err(external)?;
                    match (h, keys) {
                        (Some(h), Some(keys)) => {
                            for k in &keys {
                                b.values().append_option(h.get(k));
                            }
                            b.append(true);
                        }
                        _ => b.append(false),
                    }
                }
                Arc::new(b.finish())
            }
            _ => Arc::new(
                (0..n)
                    .map(|r| self.text(&arrays, fields, r))
                    .collect::<Result<StringArray, SqlError>>()
                    .map_err(external)?,
            ),
        };
        shaped(all_scalar, out)
    }
}

impl HstoreFn {
    fn test(&self, arrays: &[ArrayRef], r: usize) -> Result<Option<bool>, SqlError> {
        let Some(h) = hstore_at(&arrays[0], r)? else {
            return Ok(None);
        };
        Ok(Some(match self.op {
            Op::Has | Op::Defined => {
                let Some(key) = text_at(&arrays[1], r)? else {
                    return Ok(None);
                };
                if self.op == Op::Has {
                    h.has(&key)
                } else {
                    h.defines(&key)
                }
            }
            Op::HasAny | Op::HasAll => {
                let Some(keys) = keys_at(&arrays[1], r)? else {
                    return Ok(None);
                };
                if self.op == Op::HasAny {
                    keys.iter().any(|k| h.has(k))
                } else {
                    keys.iter().all(|k| h.has(k))
                }
            }
            _ => {
                let Some(other) = hstore_at(&arrays[1], r)? else {
                    return Ok(None);
                };
                if self.op == Op::Contains {
                    h.contains(&other)
                } else {
                    other.contains(&h)
                }
            }
        }))
    }

    /// The text (a value, or an hstore's or json's text) of row `r`.
    fn text(
        &self,
        arrays: &[ArrayRef],
        fields: &[FieldRef],
        r: usize,
    ) -> Result<Option<String>, SqlError> {
        if self.op == Op::Build {
            return build(arrays, fields, r);
        }
        let Some(h) = hstore_at(&arrays[0], r)? else {
            return Ok(None);
        };
        Ok(match self.op {
            Op::Get => text_at(&arrays[1], r)?.and_then(|k| h.get(&k).map(str::to_owned)),
            Op::ToJson(binary) => {
                let json = h.to_json();
                Some(if binary {
                    crate::json::input(&json, true)?
                } else {
                    json
                })
            }
            Op::Concat => hstore_at(&arrays[1], r)?.map(|other| h.concat(&other).to_text()),
            Op::Slice => keys_at(&arrays[1], r)?
                .map(|keys| h.slice(keys.iter().map(String::as_str)).to_text()),
            _ if is_list(&fields[1]) => keys_at(&arrays[1], r)?
                .map(|keys| h.without_keys(keys.iter().map(String::as_str)).to_text()),
            _ if text_type(&fields[1]) == Some(SqlType::Hstore) => {
                hstore_at(&arrays[1], r)?.map(|other| h.without_pairs(&other).to_text())
            }
            _ => text_at(&arrays[1], r)?.map(|k| h.without_keys([k.as_str()]).to_text()),
        })
    }
}

/// `hstore(key, value)`, `hstore(keys, values)` or `hstore(keys and values)` at row `r`.
fn build(arrays: &[ArrayRef], fields: &[FieldRef], r: usize) -> Result<Option<String>, SqlError> {
    // An array of type NULL (a bare NULL argument) marks no nulls.
    let null_at = |i: usize| arrays[i].is_null(r) || arrays[i].data_type() == &DataType::Null;
    let list_at = |i: usize| -> Result<Option<Vec<Option<String>>>, SqlError> {
        let a = &arrays[i];
        if null_at(i) {
            return Ok(None);
        }
        if !is_list(&fields[i]) {
            return Err(SqlError::user(
                state::UNDEFINED_FUNCTION,
                "function hstore() takes a key and a value, two text arrays or one",
            ));
        }
        let list = datafusion::arrow::array::AsArray::as_list::<i32>(a.as_ref()).value(r);
        (0..list.len())
            .map(|j| text_at(&list, j))
            .collect::<Result<_, _>>()
            .map(Some)
    };
    let key = |k: Option<String>| {
        k.ok_or_else(|| {
            SqlError::user(
                state::NULL_VALUE_NOT_ALLOWED,
                "null value not allowed for hstore key",
            )
        })
    };
    let pairs: Vec<(String, Option<String>)> = match arrays.len() {
        1 => {
            let Some(items) = list_at(0)? else {
                return Ok(None);
            };
            if !items.len().is_multiple_of(2) {
                return Err(bad_array("array must have even number of elements"));
            }
            items
                .chunks(2)
                .map(|kv| Ok((key(kv[0].clone())?, kv[1].clone())))
                .collect::<Result<_, SqlError>>()?
        }
        _ if !is_list(&fields[0]) => {
            let Some(k) = text_at(&arrays[0], r)? else {
                return Ok(None);
            };
            vec![(k, text_at(&arrays[1], r)?)]
        }
        _ => {
            let Some(keys) = list_at(0)? else {
                return Ok(None);
            };
            let values = match null_at(1) {
                true => vec![None; keys.len()],
                false => list_at(1)?.unwrap_or_default(),
            };
            if values.len() != keys.len() {
                return Err(bad_array("arrays must have same bounds"));
            }
            keys.into_iter()
                .zip(values)
                .map(|(k, v)| Ok((key(k)?, v)))
                .collect::<Result<_, SqlError>>()?
        }
    };
    Ok(Some(Hstore::from_pairs(pairs).to_text()))
}
