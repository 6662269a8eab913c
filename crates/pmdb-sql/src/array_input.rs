//! Arrays of the types Arrow holds as text (uuid, json, jsonb, an enum type):
//! `x::json[]`, `CAST(x AS mood[])`. DataFusion knows none of them, so the cast becomes
//! `pmdb_array_in(CAST(x AS TEXT[]), 'json')`, which reads each element as the type
//! (a label of the enum type, else 22P02) and marks the list's elements with it, so the
//! server describes the array as PostgreSQL does (`json[]`, `_mood`) and a parameter
//! cast so is encoded by its driver as one.

use std::sync::Arc;

use datafusion::arrow::array::{Array, ArrayRef, AsArray, ListArray};
use datafusion::arrow::datatypes::{DataType, Field, FieldRef};
use datafusion::common::{Result as DfResult, ScalarValue};
use datafusion::logical_expr::{
    ColumnarValue, ReturnFieldArgs, ScalarFunctionArgs, ScalarUDF, ScalarUDFImpl, Signature,
    Volatility,
};
use datafusion::prelude::SessionContext;
use datafusion::sql::sqlparser::ast::{
    ArrayElemTypeDef, CastKind, DataType as SqlDataType, Expr as SqlExpr, Value,
};

use crate::arrow_conv::{arrow_field, text_input};
use crate::catalog::Catalog;
use crate::error::{Result, SqlError, external};
use crate::types::SqlType;
use crate::udf_identity::Held;

pub(crate) const ARRAY_IN: &str = "pmdb_array_in";

/// How a call names the element type: as the field metadata of such a value names it
/// (`uuid`, `json`, `jsonb`, `enum(<id>)`).
fn type_name(ty: SqlType) -> Option<String> {
    Some(match ty {
        SqlType::Uuid => "uuid".into(),
        SqlType::Json => "json".into(),
        SqlType::Jsonb => "jsonb".into(),
        SqlType::Enum(id) => format!("enum({id})"),
        _ => return None,
    })
}

fn element_type(name: &str) -> Option<SqlType> {
    match name {
        "uuid" => Some(SqlType::Uuid),
        "json" => Some(SqlType::Json),
        "jsonb" => Some(SqlType::Jsonb),
        _ => name
            .strip_prefix("enum(")?
            .strip_suffix(')')?
            .parse()
            .ok()
            .map(SqlType::Enum),
    }
}

/// `operand` cast to an array of `element`, as a call of `pmdb_array_in`; `None` when
/// `element` is no type Arrow holds as text.
pub(crate) fn call(operand: SqlExpr, element: SqlType) -> Option<Result<SqlExpr>> {
    let name = type_name(element)?;
    let text_array = SqlExpr::Cast {
        kind: CastKind::Cast,
        expr: Box::new(operand),
        data_type: SqlDataType::Array(ArrayElemTypeDef::SquareBracket(
            Box::new(SqlDataType::Text),
            None,
        )),
        array: false,
        format: None,
    };
    Some(crate::ast_build::call_with(
        ARRAY_IN,
        vec![text_array, SqlExpr::value(Value::SingleQuotedString(name))],
    ))
}

pub(crate) fn register(ctx: &SessionContext, catalog: &Arc<Catalog>) {
    ctx.register_udf(ScalarUDF::new_from_impl(ArrayIn {
        catalog: Held(Arc::clone(catalog)),
        signature: Signature::any(2, Volatility::Immutable),
    }));
}

/// `pmdb_array_in(text[], element type)`: the array, each element read as the type.
#[derive(Debug, PartialEq, Eq, Hash)]
struct ArrayIn {
    catalog: Held<Catalog>,
    signature: Signature,
}

fn misused() -> datafusion::error::DataFusionError {
    external(SqlError::Query(format!(
        "{ARRAY_IN} takes a text array and an element type given as a constant"
    )))
}

/// The element type a call names in its second argument (a literal the rewrite wrote).
fn named(arg: Option<&ScalarValue>) -> DfResult<SqlType> {
    match arg {
        Some(ScalarValue::Utf8(Some(name))) => element_type(name).ok_or_else(misused),
        _ => Err(misused()),
    }
}

/// The list type whose elements are values of `element`.
fn list_of(element: SqlType) -> DataType {
    DataType::List(Arc::new(arrow_field("item", element)))
}

impl ScalarUDFImpl for ArrayIn {
    fn name(&self) -> &str {
        ARRAY_IN
    }

    fn signature(&self) -> &Signature {
        &self.signature
    }

    fn return_type(&self, _args: &[DataType]) -> DfResult<DataType> {
        Err(misused())
    }

    fn return_field_from_args(&self, args: ReturnFieldArgs) -> DfResult<FieldRef> {
        let element = named(args.scalar_arguments.get(1).copied().flatten())?;
        Ok(Arc::new(Field::new(ARRAY_IN, list_of(element), true)))
    }

    fn invoke_with_args(&self, args: ScalarFunctionArgs) -> DfResult<ColumnarValue> {
        let [list, name] = args.args.as_slice() else {
            return Err(misused());
        };
        let element = match name {
            ColumnarValue::Scalar(s) => named(Some(s))?,
            ColumnarValue::Array(_) => return Err(misused()),
        };
        let array = list.to_array(args.number_rows)?;
        let Some(lists) = array.as_list_opt::<i32>() else {
            return Err(misused());
        };
        let values = read_elements(&self.catalog, lists.values(), element).map_err(external)?;
        let out = ListArray::try_new(
            Arc::new(arrow_field("item", element)),
            lists.offsets().clone(),
            values,
            lists.nulls().cloned(),
        )?;
        // A constant stays one, its elements' field kept (DataFusion's scalar of a list
        // row would drop the field's metadata).
        Ok(match list {
            ColumnarValue::Scalar(_) => {
                ColumnarValue::Scalar(ScalarValue::List(Arc::new(out.slice(0, 1))))
            }
            ColumnarValue::Array(_) => ColumnarValue::Array(Arc::new(out)),
        })
    }
}

/// The text elements `values` read as values of `element`.
fn read_elements(catalog: &Catalog, values: &ArrayRef, element: SqlType) -> Result<ArrayRef> {
    if let SqlType::Enum(id) = element {
        let strings = values
            .as_string_opt::<i32>()
            .ok_or_else(|| SqlError::Query(format!("{ARRAY_IN} takes text elements")))?;
        catalog.check_enum_labels(id, strings)?;
        return Ok(Arc::clone(values));
    }
    text_input(values, element)
        .unwrap_or_else(|| Err(SqlError::Query(format!("{ARRAY_IN} takes text elements"))))
}
