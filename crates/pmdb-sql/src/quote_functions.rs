//! PostgreSQL's quoting functions: `quote_literal(text)` (a string literal that reads
//! back as the value: quotes doubled, and with a backslash the `E'…'` form with
//! backslashes doubled; NULL for NULL), `quote_nullable(text)` (the same, `NULL` for
//! NULL) and `quote_ident(text)` (an identifier, in double quotes unless it is a plain
//! lower-case name that is no reserved word).

use std::sync::Arc;

use datafusion::arrow::array::{Array, AsArray, StringArray};
use datafusion::arrow::datatypes::DataType;
use datafusion::common::Result as DfResult;
use datafusion::logical_expr::{
    ColumnarValue, ScalarFunctionArgs, ScalarUDF, ScalarUDFImpl, Signature, Volatility,
};
use datafusion::prelude::SessionContext;

use crate::udf_result::shaped;

pub(crate) fn register(ctx: &SessionContext) {
    for kind in [Quote::Literal, Quote::Nullable, Quote::Ident] {
        ctx.register_udf(ScalarUDF::from(QuoteFunction::new(kind)));
    }
}

#[derive(Debug, PartialEq, Eq, Hash, Clone, Copy)]
enum Quote {
    Literal,
    Nullable,
    Ident,
}

/// `value` as a literal.
pub(crate) fn literal(value: &str) -> String {
    let mut out = String::with_capacity(value.len() + 3);
    if value.contains('\\') {
        out.push('E');
    }
    out.push('\'');
    for c in value.chars() {
        if c == '\'' || c == '\\' {
            out.push(c);
        }
        out.push(c);
    }
    out.push('\'');
    out
}

/// PostgreSQL's reserved key words, which an identifier is quoted to be.
const RESERVED: &[&str] = &[
    "all",
    "analyse",
    "analyze",
    "and",
    "any",
    "array",
    "as",
    "asc",
    "asymmetric",
    "authorization",
    "binary",
    "both",
    "case",
    "cast",
    "check",
    "collate",
    "collation",
    "column",
    "concurrently",
    "constraint",
    "create",
    "cross",
    "current_catalog",
    "current_date",
    "current_role",
    "current_schema",
    "current_time",
    "current_timestamp",
    "current_user",
    "default",
    "deferrable",
    "desc",
    "distinct",
    "do",
    "else",
    "end",
    "except",
    "false",
    "fetch",
    "for",
    "foreign",
    "freeze",
    "from",
    "full",
    "grant",
    "group",
    "having",
    "ilike",
    "in",
    "initially",
    "inner",
    "intersect",
    "into",
    "is",
    "isnull",
    "join",
    "lateral",
    "leading",
    "left",
    "like",
    "limit",
    "localtime",
    "localtimestamp",
    "natural",
    "not",
    "notnull",
    "null",
    "offset",
    "on",
    "only",
    "or",
    "order",
    "outer",
    "overlaps",
    "placing",
    "primary",
    "references",
    "returning",
    "right",
    "select",
    "session_user",
    "similar",
    "some",
    "symmetric",
    "table",
    "tablesample",
    "then",
    "to",
    "trailing",
    "true",
    "union",
    "unique",
    "user",
    "using",
    "variadic",
    "verbose",
    "when",
    "where",
    "window",
    "with",
];

/// `name` as an identifier: as it is when it reads back so (lower-case letters, digits
/// and underscores, not starting with a digit, not a reserved word), else in double
/// quotes.
pub fn ident(name: &str) -> String {
    let plain = name
        .chars()
        .next()
        .is_some_and(|c| c.is_ascii_lowercase() || c == '_')
        && name
            .chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_')
        && !RESERVED.contains(&name);
    if plain {
        return name.to_owned();
    }
    format!("\"{}\"", name.replace('"', "\"\""))
}

#[derive(Debug, PartialEq, Eq, Hash)]
struct QuoteFunction {
    kind: Quote,
    signature: Signature,
}

impl QuoteFunction {
    fn new(kind: Quote) -> QuoteFunction {
        QuoteFunction {
            kind,
            signature: Signature::exact(vec![DataType::Utf8], Volatility::Immutable),
        }
    }
}

impl ScalarUDFImpl for QuoteFunction {
    fn name(&self) -> &str {
        match self.kind {
            Quote::Literal => "quote_literal",
            Quote::Nullable => "quote_nullable",
            Quote::Ident => "quote_ident",
        }
    }

    fn signature(&self) -> &Signature {
        &self.signature
    }

    fn return_type(&self, _args: &[DataType]) -> DfResult<DataType> {
        Ok(DataType::Utf8)
    }

    fn invoke_with_args(&self, args: ScalarFunctionArgs) -> DfResult<ColumnarValue> {
        let arrays = ColumnarValue::values_to_arrays(&args.args)?;
        let values = arrays[0].as_string::<i32>();
        let out: StringArray = (0..values.len())
            .map(|i| match (values.is_valid(i), self.kind) {
                (false, Quote::Nullable) => Some("NULL".to_owned()),
                (false, _) => None,
                (true, Quote::Ident) => Some(ident(values.value(i))),
                (true, _) => Some(literal(values.value(i))),
            })
            .collect();
        let scalar = matches!(args.args[0], ColumnarValue::Scalar(_));
        shaped(scalar, Arc::new(out))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quoted_as_postgresql_quotes() {
        assert_eq!(literal("it's"), "'it''s'");
        assert_eq!(literal(r"a\b"), r"E'a\\b'");
        assert_eq!(ident("abc_1"), "abc_1");
        assert_eq!(ident("Abc"), "\"Abc\"");
        assert_eq!(ident("a\"b"), "\"a\"\"b\"");
        assert_eq!(ident("1a"), "\"1a\"");
        assert_eq!(ident("select"), "\"select\"");
        assert_eq!(ident(""), "\"\"");
    }
}
