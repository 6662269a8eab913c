//! Who a session is: `current_user`, `session_user` and `current_role` (bare keywords in
//! SQL, as PostgreSQL writes them), `current_database()` and `pg_backend_pid()`, each a
//! constant of the session. A server names the user and the database a client connected
//! as, and the process id its cancel key carries; an embedded session is the owner,
//! `pmdb`, on database `pmdb`, in the process that embeds it.

use datafusion::arrow::datatypes::DataType;
use datafusion::common::{Result as DfResult, ScalarValue};
use datafusion::logical_expr::{
    ColumnarValue, ScalarFunctionArgs, ScalarUDF, ScalarUDFImpl, Signature, Volatility,
};
use datafusion::prelude::SessionContext;
use datafusion::sql::sqlparser::ast::{Expr as SqlExpr, Ident};

/// The keywords that name the session's user.
const USER_KEYWORDS: [&str; 3] = ["current_user", "session_user", "current_role"];

/// The name of the owner and of the database when nothing else names them.
pub const OWNER: &str = "pmdb";

/// Registers the functions in `ctx`, for `user` on `database`, served by the backend
/// whose process id is `pid`.
pub(crate) fn register(ctx: &SessionContext, user: &str, database: &str, pid: i32) {
    let text = |s: &str| ScalarValue::Utf8(Some(s.to_owned()));
    for name in USER_KEYWORDS {
        ctx.register_udf(ScalarUDF::from(Constant::new(name, text(user))));
    }
    ctx.register_udf(ScalarUDF::from(Constant::new(
        "current_database",
        text(database),
    )));
    ctx.register_udf(ScalarUDF::from(Constant::new(
        "pg_backend_pid",
        ScalarValue::Int32(Some(pid)),
    )));
}

/// The call `current_user` stands for, if `id` is one of the keywords (unquoted).
pub(crate) fn keyword_call(id: &Ident) -> Option<SqlExpr> {
    let name = id.value.to_ascii_lowercase();
    if id.quote_style.is_some() || !USER_KEYWORDS.contains(&name.as_str()) {
        return None;
    }
    datafusion::sql::sqlparser::parser::Parser::new(
        &datafusion::sql::sqlparser::dialect::PostgreSqlDialect {},
    )
    .try_with_sql(&format!("{name}()"))
    .and_then(|mut p| p.parse_expr())
    .ok()
}

#[derive(Debug, PartialEq, Eq, Hash)]
struct Constant {
    name: &'static str,
    value: ScalarValue,
    signature: Signature,
}

impl Constant {
    fn new(name: &'static str, value: ScalarValue) -> Constant {
        Constant {
            name,
            value,
            signature: Signature::nullary(Volatility::Stable),
        }
    }
}

impl ScalarUDFImpl for Constant {
    fn name(&self) -> &str {
        self.name
    }

    fn signature(&self) -> &Signature {
        &self.signature
    }

    fn return_type(&self, _args: &[DataType]) -> DfResult<DataType> {
        Ok(self.value.data_type())
    }

    fn invoke_with_args(&self, _args: ScalarFunctionArgs) -> DfResult<ColumnarValue> {
        Ok(ColumnarValue::Scalar(self.value.clone()))
    }
}
