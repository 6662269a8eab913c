//! `LIKE … ESCAPE 'c'` with any escape character, as PostgreSQL takes it. DataFusion's
//! LIKE knows only the backslash, so an analyzer rule rewrites the pattern into the
//! backslash's form: `c%` becomes `\%`, `cc` a literal `c`, a backslash of the pattern
//! `\\` (it escapes nothing there). A literal pattern is rewritten once; any other is
//! rewritten per row by `pmdb_like_pattern`. A pattern that ends in its escape character
//! is 22025, as in PostgreSQL.

use std::sync::Arc;

use datafusion::arrow::array::{AsArray, StringArray};
use datafusion::arrow::datatypes::DataType;
use datafusion::common::config::ConfigOptions;
use datafusion::common::tree_node::Transformed;
use datafusion::common::{Result as DfResult, ScalarValue};
use datafusion::logical_expr::expr::{Like, ScalarFunction};
use datafusion::logical_expr::{
    ColumnarValue, Expr, LogicalPlan, ScalarFunctionArgs, ScalarUDF, ScalarUDFImpl, Signature,
    Volatility,
};
use datafusion::optimizer::AnalyzerRule;
use datafusion::prelude::SessionContext;

use crate::error::{SqlError, external};
use crate::udf_result::shaped;

const INVALID_ESCAPE_SEQUENCE: &str = "22025";

/// Registers the analyzer rule in `ctx`.
pub(crate) fn register(ctx: &SessionContext) {
    ctx.add_analyzer_rule(Arc::new(LikeEscapes));
}

/// `pattern`, written with escape character `escape`, in the form whose escape
/// character is the backslash.
fn with_backslash(pattern: &str, escape: char) -> Result<String, SqlError> {
    let mut out = String::with_capacity(pattern.len() + 2);
    let mut chars = pattern.chars();
    while let Some(c) = chars.next() {
        let literal = if c == escape {
            chars.next().ok_or_else(|| {
                SqlError::user(
                    INVALID_ESCAPE_SEQUENCE,
                    "LIKE pattern must not end with escape character",
                )
            })?
        } else if c == '\\' {
            '\\'
        } else {
            out.push(c);
            continue;
        };
        if matches!(literal, '%' | '_' | '\\') {
            out.push('\\');
        }
        out.push(literal);
    }
    Ok(out)
}

#[derive(Debug)]
struct LikeEscapes;

impl AnalyzerRule for LikeEscapes {
    fn name(&self) -> &str {
        "pmdb_like_escapes"
    }

    fn analyze(&self, plan: LogicalPlan, _config: &ConfigOptions) -> DfResult<LogicalPlan> {
        crate::expr_rewrite::rewrite_expressions(plan, |e, _| {
            Ok(match e {
                Expr::Like(like) if let Some(escape) = like.escape_char.filter(|&c| c != '\\') => {
                    let pattern = match *like.pattern {
                        Expr::Literal(ScalarValue::Utf8(Some(p)), meta) => Expr::Literal(
                            ScalarValue::Utf8(Some(with_backslash(&p, escape).map_err(external)?)),
                            meta,
                        ),
                        other => Expr::ScalarFunction(ScalarFunction::new_udf(
                            Arc::new(ScalarUDF::from(LikePattern::new(escape))),
                            vec![other],
                        )),
                    };
                    Transformed::yes(Expr::Like(Like {
                        pattern: Box::new(pattern),
                        escape_char: None,
                        ..like
                    }))
                }
                other => Transformed::no(other),
            })
        })
    }
}

/// `pmdb_like_pattern(p)`: [`with_backslash`] per row.
#[derive(Debug, PartialEq, Eq, Hash)]
struct LikePattern {
    escape: char,
    signature: Signature,
}

impl LikePattern {
    fn new(escape: char) -> LikePattern {
        LikePattern {
            escape,
            signature: Signature::exact(vec![DataType::Utf8], Volatility::Immutable),
        }
    }
}

impl ScalarUDFImpl for LikePattern {
    fn name(&self) -> &str {
        "pmdb_like_pattern"
    }

    fn signature(&self) -> &Signature {
        &self.signature
    }

    fn return_type(&self, _args: &[DataType]) -> DfResult<DataType> {
        Ok(DataType::Utf8)
    }

    fn invoke_with_args(&self, args: ScalarFunctionArgs) -> DfResult<ColumnarValue> {
        let [arg] = args.args.as_slice() else {
            return Err(external(SqlError::Query(
                "pmdb_like_pattern takes one argument".into(),
            )));
        };
        let array = arg.to_array(args.number_rows)?;
        let out = array
            .as_string::<i32>()
            .iter()
            .map(|p| p.map(|p| with_backslash(p, self.escape)).transpose())
            .collect::<Result<StringArray, _>>()
            .map_err(external)?;
        shaped(matches!(arg, ColumnarValue::Scalar(_)), Arc::new(out))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn patterns_take_the_backslashs_form() {
        assert_eq!(with_backslash("a/%b", '/').unwrap(), "a\\%b");
        assert_eq!(with_backslash("//x/_", '/').unwrap(), "/x\\_");
        assert_eq!(with_backslash("50\\%", '#').unwrap(), "50\\\\%");
        assert_eq!(with_backslash("#\\", '#').unwrap(), "\\\\");
        let e = with_backslash("abc/", '/').unwrap_err();
        assert_eq!(e.sqlstate(), INVALID_ESCAPE_SEQUENCE);
    }
}
