//! Explicit casts to `VARCHAR(n)` and `CHAR(n)`: PostgreSQL cuts the text to `n`
//! characters (an explicit cast never fails for length, where storing into a column
//! does, 22001) and describes the result as `varchar(n)` or `bpchar(n)`. DataFusion
//! drops the length, so the syntax tree's cast becomes a call of `pmdb_varchar(CAST(x AS
//! TEXT), n)` (`pmdb_bpchar`, which also drops trailing blanks as pmdb holds CHAR
//! values) before planning. A parameter cast so is described as the type too.

use std::sync::Arc;

use datafusion::arrow::array::{Array, AsArray, StringArray};
use datafusion::arrow::datatypes::{DataType, FieldRef};
use datafusion::common::{Result as DfResult, ScalarValue};
use datafusion::logical_expr::{
    ColumnarValue, ReturnFieldArgs, ScalarFunctionArgs, ScalarUDF, ScalarUDFImpl, Signature,
    Volatility,
};
use datafusion::prelude::SessionContext;
use datafusion::sql::sqlparser::ast::{
    CastKind, CharacterLength, DataType as SqlDataType, Expr as SqlExpr, Statement,
    Value as Literal,
};

use crate::arrow_conv::{arrow_field, without_trailing_blanks};
use crate::error::{Result, SqlError, external};
use crate::types::SqlType;
use crate::udf_result::shaped;

pub(crate) const VARCHAR_IN: &str = "pmdb_varchar";
pub(crate) const BPCHAR_IN: &str = "pmdb_bpchar";

/// The type and length a cast to `ty` asks for, if it is a CHAR(n) or a VARCHAR(n)
/// (`CHAR` alone is CHAR(1), `VARCHAR` alone has no length: text).
fn of_type(ty: &SqlDataType) -> Option<(&'static str, u64)> {
    let length = |l: &Option<CharacterLength>| match l {
        Some(CharacterLength::IntegerLength { length, .. }) => Some(*length),
        _ => None,
    };
    match ty {
        SqlDataType::Varchar(l)
        | SqlDataType::CharacterVarying(l)
        | SqlDataType::CharVarying(l) => Some((VARCHAR_IN, length(l)?)),
        SqlDataType::Char(l) | SqlDataType::Character(l) => match l {
            None => Some((BPCHAR_IN, 1)),
            l => Some((BPCHAR_IN, length(l)?)),
        },
        _ => None,
    }
}

/// Rewrites the explicit casts to CHAR(n) and VARCHAR(n) in `statement` as calls that
/// cut the text to `n` characters.
pub(crate) fn rewrite(statement: &mut Statement) -> Result<()> {
    crate::ast_build::replace_with_calls(statement, |e| {
        let SqlExpr::Cast {
            kind: CastKind::Cast | CastKind::DoubleColon,
            data_type,
            expr,
            ..
        } = e
        else {
            return None;
        };
        let (function, n) = of_type(data_type)?;
        let as_text = SqlExpr::Cast {
            kind: CastKind::Cast,
            expr: Box::new(crate::ast_build::take(expr)),
            data_type: SqlDataType::Text,
            array: false,
            format: None,
        };
        let length = SqlExpr::value(Literal::Number(n.to_string(), false));
        Some(crate::ast_build::call_with(function, vec![as_text, length]))
    })
}

pub(crate) fn register(ctx: &SessionContext) {
    for name in [VARCHAR_IN, BPCHAR_IN] {
        ctx.register_udf(ScalarUDF::new_from_impl(LengthCast {
            name,
            signature: Signature::exact(
                vec![DataType::Utf8, DataType::Int64],
                Volatility::Immutable,
            ),
        }));
    }
}

/// `pmdb_varchar(text, n)` and `pmdb_bpchar(text, n)`.
#[derive(Debug, PartialEq, Eq, Hash)]
struct LengthCast {
    name: &'static str,
    signature: Signature,
}

impl LengthCast {
    fn ty(&self, n: u32) -> SqlType {
        if self.name == BPCHAR_IN {
            SqlType::Char(n)
        } else {
            SqlType::Varchar(n)
        }
    }
}

/// The length a call gives: its second argument, a constant from 1 to 10 MiB (as a
/// column's).
fn length_of(value: Option<&ScalarValue>) -> DfResult<u32> {
    match value {
        Some(ScalarValue::Int64(Some(n))) => u32::try_from(*n)
            .ok()
            .filter(|&n| n > 0 && n <= 10 << 20)
            .ok_or_else(|| {
                external(SqlError::user(
                    crate::error::state::INVALID_PARAMETER_VALUE,
                    format!(
                        "length for type varchar must be at least 1, and at most 10485760: {n}"
                    ),
                ))
            }),
        _ => Err(external(SqlError::Query(
            "a length cast's length is a constant".into(),
        ))),
    }
}

impl ScalarUDFImpl for LengthCast {
    fn name(&self) -> &str {
        self.name
    }

    fn signature(&self) -> &Signature {
        &self.signature
    }

    fn return_type(&self, _args: &[DataType]) -> DfResult<DataType> {
        Ok(DataType::Utf8)
    }

    fn return_field_from_args(&self, args: ReturnFieldArgs) -> DfResult<FieldRef> {
        let n = length_of(args.scalar_arguments.get(1).copied().flatten())?;
        Ok(Arc::new(arrow_field(self.name, self.ty(n))))
    }

    fn invoke_with_args(&self, args: ScalarFunctionArgs) -> DfResult<ColumnarValue> {
        let [text, length] = args.args.as_slice() else {
            return Err(external(SqlError::Query(format!(
                "{} takes text and a length",
                self.name
            ))));
        };
        let n = match length {
            ColumnarValue::Scalar(v) => length_of(Some(v))?,
            ColumnarValue::Array(_) => length_of(None)?,
        } as usize;
        let strings = text.to_array(args.number_rows)?;
        let strings = strings.as_string::<i32>();
        let cut = |s: &str| -> String {
            let s = match s.char_indices().nth(n) {
                Some((at, _)) => &s[..at],
                None => s,
            };
            if self.name == BPCHAR_IN {
                without_trailing_blanks(s).to_owned()
            } else {
                s.to_owned()
            }
        };
        let out: StringArray = (0..strings.len())
            .map(|i| strings.is_valid(i).then(|| cut(strings.value(i))))
            .collect();
        shaped(matches!(text, ColumnarValue::Scalar(_)), Arc::new(out))
    }
}
