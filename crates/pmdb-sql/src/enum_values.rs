//! Text read as a value of an enum type: `'x'::mood`, `CAST(x AS mood)` and `mood 'x'`
//! become calls of `pmdb_enum_in(x, <type id>)` before DataFusion plans the statement
//! (it knows no user types); a cast to the hstore extension's type, a call of its input
//! function. The call checks each value is a label of the type (22P02
//! otherwise) and gives a field marked with the type, which the server describes with
//! the type's oid and [`crate::enum_order`] sorts by the type's order.

use std::sync::Arc;

use datafusion::arrow::array::AsArray;
use datafusion::arrow::datatypes::{DataType, Field, FieldRef};
use datafusion::common::Result as DfResult;
use datafusion::logical_expr::{
    ColumnarValue, ReturnFieldArgs, ScalarFunctionArgs, ScalarUDF, ScalarUDFImpl, Signature,
    Volatility,
};
use datafusion::prelude::SessionContext;
use datafusion::sql::sqlparser::ast::{
    ArrayElemTypeDef, DataType as SqlDataType, Expr as SqlExpr, Statement, Value as Literal,
};

use crate::arrow_conv::enum_metadata;
use crate::ast_build::take;
use crate::catalog::Catalog;
use crate::error::{Result, SqlError, external};
use crate::types::SqlType;
use crate::udf_identity::{Held, constant_id};

pub(crate) const ENUM_IN: &str = "pmdb_enum_in";

/// The user type (an enum type, hstore) `ty` names, if it names one of the catalog's.
fn user_type_of(catalog: &Catalog, ty: &SqlDataType) -> Option<SqlType> {
    match ty {
        SqlDataType::Custom(name, modifiers) if modifiers.is_empty() => {
            crate::type_ddl::named_type(catalog, name)
        }
        _ => None,
    }
}

/// Rewrites the casts to enum types in `statement` as calls of `pmdb_enum_in`, and those
/// to arrays of one as calls of [`crate::array_input`]'s function; the casts to hstore
/// as calls of its input function.
pub(crate) fn rewrite_casts(catalog: &Catalog, statement: &mut Statement) -> Result<()> {
    crate::ast_build::replace_with_calls(statement, |e| {
        let (ty, operand) = match e {
            SqlExpr::Cast {
                data_type: SqlDataType::Array(ArrayElemTypeDef::SquareBracket(element, _)),
                expr,
                ..
            } => {
                return match user_type_of(catalog, element)? {
                    SqlType::Enum(id) => crate::array_input::call(take(expr), SqlType::Enum(id)),
                    _ => Some(Err(SqlError::unsupported("arrays of hstore values"))),
                };
            }
            SqlExpr::Cast {
                data_type, expr, ..
            } => (user_type_of(catalog, data_type)?, take(expr)),
            SqlExpr::TypedString(typed) => (
                user_type_of(catalog, &typed.data_type)?,
                SqlExpr::Value(typed.value.clone()),
            ),
            _ => return None,
        };
        Some(match ty {
            SqlType::Enum(id) => crate::ast_build::call_with(
                ENUM_IN,
                vec![
                    operand,
                    SqlExpr::value(Literal::Number(id.to_string(), false)),
                ],
            ),
            _ => crate::ast_build::call(crate::hstore::HSTORE_IN, operand),
        })
    })
}

pub(crate) fn register(ctx: &SessionContext, catalog: &Arc<Catalog>) {
    ctx.register_udf(ScalarUDF::new_from_impl(EnumIn {
        catalog: Held(Arc::clone(catalog)),
        signature: Signature::exact(vec![DataType::Utf8, DataType::Int64], Volatility::Immutable),
    }));
}

/// `pmdb_enum_in(text, type id)`: the text, checked to be a label of the type.
#[derive(Debug, PartialEq, Eq, Hash)]
struct EnumIn {
    catalog: Held<Catalog>,
    signature: Signature,
}

impl ScalarUDFImpl for EnumIn {
    fn name(&self) -> &str {
        ENUM_IN
    }

    fn signature(&self) -> &Signature {
        &self.signature
    }

    fn return_type(&self, _args: &[DataType]) -> DfResult<DataType> {
        Ok(DataType::Utf8)
    }

    fn return_field_from_args(&self, args: ReturnFieldArgs) -> DfResult<FieldRef> {
        let id = constant_id(
            ENUM_IN,
            "type",
            args.scalar_arguments.get(1).copied().flatten(),
        )?;
        Ok(Arc::new(
            Field::new(ENUM_IN, DataType::Utf8, true).with_metadata(enum_metadata(id)),
        ))
    }

    fn invoke_with_args(&self, args: ScalarFunctionArgs) -> DfResult<ColumnarValue> {
        let [text, id] = args.args.as_slice() else {
            return Err(external(SqlError::Query(format!(
                "{ENUM_IN} takes two arguments"
            ))));
        };
        let id = match id {
            ColumnarValue::Scalar(s) => constant_id(ENUM_IN, "type", Some(s))?,
            ColumnarValue::Array(_) => constant_id(ENUM_IN, "type", None)?,
        };
        let array = text.to_array(args.number_rows)?;
        self.catalog
            .check_enum_labels(id, array.as_string::<i32>())
            .map_err(external)?;
        Ok(text.clone())
    }
}
