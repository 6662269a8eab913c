//! The options of an EXPLAIN, as PostgreSQL reads them: `EXPLAIN (ANALYZE, VERBOSE,
//! FORMAT JSON, …)` or the keyword form. A list asking for text becomes the keyword form
//! DataFusion plans; one asking for JSON is [`crate::explain`]'s. Options pmdb cannot
//! honour (BUFFERS, WAL, SETTINGS, GENERIC_PLAN, MEMORY; XML and YAML) are refused.

use datafusion::sql::sqlparser::ast::{
    AnalyzeFormat, AnalyzeFormatKind, Statement, UtilityOption, Value,
};

use crate::error::{Result, SqlError};

/// An EXPLAIN that asks for PostgreSQL's JSON document.
pub(crate) struct JsonExplain {
    pub(crate) analyze: bool,
    pub(crate) verbose: bool,
    /// Planning and execution times (PostgreSQL's default: on with ANALYZE).
    pub(crate) summary: bool,
    /// The actual time (PostgreSQL's default: on).
    pub(crate) timing: bool,
    pub(crate) inner: Statement,
}

/// The options of an EXPLAIN, as PostgreSQL reads them.
struct Options {
    analyze: bool,
    verbose: bool,
    json: bool,
    summary: Option<bool>,
    timing: bool,
}

fn refused(what: &str) -> SqlError {
    SqlError::unsupported(format!("EXPLAIN option {what} is not supported"))
}

/// A boolean option's value: none means true, as in PostgreSQL.
fn flag(option: &UtilityOption) -> Result<bool> {
    let name = option.name.value.to_lowercase();
    let Some(arg) = &option.arg else {
        return Ok(true);
    };
    let word = match arg {
        datafusion::sql::sqlparser::ast::Expr::Value(v) => match &v.value {
            Value::Boolean(b) => return Ok(*b),
            Value::Number(n, _) => n.clone(),
            Value::SingleQuotedString(s) => s.clone(),
            _ => String::new(),
        },
        datafusion::sql::sqlparser::ast::Expr::Identifier(i) => i.value.clone(),
        _ => String::new(),
    };
    match word.to_lowercase().as_str() {
        "true" | "on" | "1" | "yes" => Ok(true),
        "false" | "off" | "0" | "no" => Ok(false),
        _ => Err(SqlError::user(
            crate::error::state::INVALID_PARAMETER_VALUE,
            format!("{name} requires a Boolean value"),
        )),
    }
}

fn format_name(option: &UtilityOption) -> String {
    match &option.arg {
        Some(datafusion::sql::sqlparser::ast::Expr::Identifier(i)) => i.value.to_lowercase(),
        Some(datafusion::sql::sqlparser::ast::Expr::Value(v)) => match &v.value {
            Value::SingleQuotedString(s) => s.to_lowercase(),
            other => other.to_string().to_lowercase(),
        },
        Some(other) => other.to_string().to_lowercase(),
        None => String::new(),
    }
}

fn read_options(list: &[UtilityOption]) -> Result<Options> {
    let mut o = Options {
        analyze: false,
        verbose: false,
        json: false,
        summary: None,
        timing: true,
    };
    for option in list {
        match option.name.value.to_lowercase().as_str() {
            "analyze" => o.analyze = flag(option)?,
            "verbose" => o.verbose = flag(option)?,
            // pmdb shows no costs in either form.
            "costs" => {
                flag(option)?;
            }
            "summary" => o.summary = Some(flag(option)?),
            "timing" => o.timing = flag(option)?,
            what @ ("buffers" | "wal" | "settings" | "generic_plan" | "memory") => {
                if flag(option)? {
                    return Err(refused(&what.to_uppercase()));
                }
            }
            "format" => match format_name(option).as_str() {
                "text" => o.json = false,
                "json" => o.json = true,
                f @ ("xml" | "yaml") => {
                    return Err(refused(&format!("FORMAT {}", f.to_uppercase())));
                }
                other => {
                    return Err(SqlError::user(
                        crate::error::state::INVALID_PARAMETER_VALUE,
                        format!("unrecognized value for EXPLAIN option \"format\": \"{other}\""),
                    ));
                }
            },
            other => {
                return Err(SqlError::user(
                    crate::error::state::SYNTAX,
                    format!("unrecognized EXPLAIN option \"{other}\""),
                ));
            }
        }
    }
    if !o.analyze && !o.timing {
        // PostgreSQL's own rule.
        return Err(SqlError::user(
            crate::error::state::INVALID_PARAMETER_VALUE,
            "EXPLAIN option TIMING requires ANALYZE",
        ));
    }
    Ok(o)
}

/// The JSON EXPLAIN that `s` is, its options checked; `None` for any other statement.
pub(crate) fn json_request(s: &Statement) -> Result<Option<JsonExplain>> {
    let Statement::Explain {
        options,
        statement,
        format,
        ..
    } = s
    else {
        return Ok(None);
    };
    let keyword_json = matches!(
        format,
        Some(
            AnalyzeFormatKind::Keyword(AnalyzeFormat::JSON)
                | AnalyzeFormatKind::Assignment(AnalyzeFormat::JSON)
        )
    );
    let o = match options {
        Some(list) => read_options(list)?,
        None if keyword_json => Options {
            analyze: matches!(s, Statement::Explain { analyze: true, .. }),
            verbose: matches!(s, Statement::Explain { verbose: true, .. }),
            json: true,
            summary: None,
            timing: true,
        },
        None => return Ok(None),
    };
    if !o.json {
        return Ok(None);
    }
    Ok(Some(JsonExplain {
        analyze: o.analyze,
        verbose: o.verbose,
        summary: o.summary.unwrap_or(o.analyze),
        timing: o.timing,
        inner: statement.as_ref().clone(),
    }))
}

/// An EXPLAIN in the option-list form asking for text becomes the keyword form
/// DataFusion plans, its options checked; one in the JSON form is left alone
/// ([`json_request`] takes it).
pub(crate) fn as_keywords(s: &mut Statement) -> Result<()> {
    let Statement::Explain {
        analyze,
        verbose,
        options,
        format,
        ..
    } = s
    else {
        return Ok(());
    };
    if let Some(f) = format {
        let f = match f {
            AnalyzeFormatKind::Keyword(f) | AnalyzeFormatKind::Assignment(f) => f,
        };
        match f {
            AnalyzeFormat::TEXT => *format = None,
            AnalyzeFormat::JSON => {}
            other => return Err(refused(&format!("FORMAT {other}"))),
        }
    }
    let Some(list) = options else {
        return Ok(());
    };
    let o = read_options(list)?;
    if o.json {
        return Ok(());
    }
    *analyze = o.analyze;
    *verbose = o.verbose;
    *options = None;
    Ok(())
}

/// Whether `s` is an EXPLAIN that runs its statement (ANALYZE, in either form).
pub(crate) fn analyzes(s: &Statement) -> bool {
    if !matches!(s, Statement::Explain { .. }) {
        return false;
    }
    match json_request(s) {
        Ok(Some(j)) => j.analyze,
        _ => {
            let mut keyword = s.clone();
            as_keywords(&mut keyword).is_ok()
                && matches!(keyword, Statement::Explain { analyze: true, .. })
        }
    }
}
