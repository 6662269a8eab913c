//! The sequence functions as SQL sees them — `nextval`, `currval`, `setval`, `lastval`
//! and `pg_get_serial_sequence` — and what a session remembers of its own calls
//! ([`SequenceCalls`]: `currval` and `lastval` answer for the session that called
//! `nextval`, as in PostgreSQL). Each client session registers its own instances in its
//! DataFusion context.

use std::collections::HashMap;
use std::sync::Arc;

use datafusion::arrow::array::{ArrayRef, Int64Array, StringArray};
use datafusion::arrow::datatypes::DataType;
use datafusion::common::{Result as DfResult, ScalarValue};
use datafusion::logical_expr::{
    ColumnarValue, ScalarFunctionArgs, ScalarUDF, ScalarUDFImpl, Signature, TypeSignature,
    Volatility,
};
use datafusion::prelude::SessionContext;
use parking_lot::Mutex;

use crate::catalog::Catalog;
use crate::error::{Result, SqlError, external, state};
use crate::names::RelName;
use crate::search_path::{SearchPath, relation_named as relation};
use crate::sequence::Sequence;
use crate::udf_identity::Held;

/// What one session's `nextval` and `setval` calls gave, per sequence id, and the
/// sequence of its latest `nextval`.
#[derive(Default)]
pub(crate) struct SequenceCalls {
    calls: Mutex<Calls>,
}

#[derive(Default)]
struct Calls {
    values: HashMap<u64, i64>,
    latest: Option<(u64, RelName)>,
}

impl SequenceCalls {
    /// Forgets every value handed out (DISCARD SEQUENCES): `currval` and `lastval` fail
    /// until the next `nextval`.
    pub(crate) fn forget(&self) {
        *self.calls.lock() = Calls::default();
    }

    /// `nextval` of `seq`, remembered for `currval` and `lastval`.
    pub(crate) fn next(&self, seq: &Sequence) -> Result<i64> {
        let v = seq.next_value()?;
        let mut calls = self.calls.lock();
        calls.values.insert(seq.def().id, v);
        calls.latest = Some((seq.def().id, seq.def().rel_name()));
        Ok(v)
    }

    fn current(&self, seq: &Sequence) -> Result<i64> {
        self.calls
            .lock()
            .values
            .get(&seq.def().id)
            .copied()
            .ok_or_else(|| {
                SqlError::user(
                    state::OBJECT_NOT_IN_PREREQUISITE_STATE,
                    format!(
                        "currval of sequence \"{}\" is not yet defined in this session",
                        seq.def().name
                    ),
                )
            })
    }

    fn set(&self, seq: &Sequence, value: i64, called: bool) -> Result<i64> {
        seq.set(value, called)?;
        if called {
            self.calls.lock().values.insert(seq.def().id, value);
        }
        Ok(value)
    }

    fn last(&self, catalog: &Catalog) -> Result<i64> {
        let calls = self.calls.lock();
        let undefined = || {
            SqlError::user(
                state::OBJECT_NOT_IN_PREREQUISITE_STATE,
                "lastval is not yet defined in this session",
            )
        };
        let (id, name) = calls.latest.as_ref().ok_or_else(undefined)?;
        // A sequence dropped since has no last value.
        match catalog.sequence(name) {
            Some(seq) if seq.def().id == *id => calls.values.get(id).copied().ok_or_else(undefined),
            _ => Err(undefined()),
        }
    }
}

/// The sequence a function's text argument names, as PostgreSQL reads `'name'::regclass`:
/// unquoted parts fold to lower case, an optional schema (else the first of the
/// caller's search path, `schemas`, that has a relation of that name).
pub(crate) fn named_sequence(
    catalog: &Catalog,
    schemas: &[String],
    text: &str,
) -> Result<Arc<Sequence>> {
    let name = relation(schemas, text, |n| catalog.names_a_relation(n))?;
    match catalog.sequence(&name) {
        Some(seq) => Ok(seq),
        None if catalog.table(&name).is_some() => Err(SqlError::user(
            state::WRONG_OBJECT_TYPE,
            format!("{name:?} is not a sequence"),
        )),
        None => catalog.sequence_or_error(&name),
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
enum Function {
    NextVal,
    CurrVal,
    SetVal,
    LastVal,
    SerialSequence,
}

#[derive(Debug, PartialEq, Eq, Hash)]
struct SequenceFunction {
    function: Function,
    catalog: Held<Catalog>,
    calls: Held<SequenceCalls>,
    signature: Signature,
}

impl SequenceFunction {
    fn name_of(function: Function) -> &'static str {
        match function {
            Function::NextVal => "nextval",
            Function::CurrVal => "currval",
            Function::SetVal => "setval",
            Function::LastVal => "lastval",
            Function::SerialSequence => "pg_get_serial_sequence",
        }
    }

    /// The function's value for one row's arguments.
    /// The function's value for one row's `args`, for a caller with search path
    /// `schemas`.
    fn one(&self, schemas: &[String], args: &[ScalarValue]) -> Result<ScalarValue> {
        let text = |i: usize| match args.get(i) {
            Some(ScalarValue::Utf8(Some(s)) | ScalarValue::LargeUtf8(Some(s))) => Some(s.clone()),
            _ => None,
        };
        let int = |v: Result<i64>| v.map(|v| ScalarValue::Int64(Some(v)));
        // A NULL argument gives NULL, as these functions are strict in PostgreSQL.
        if args.iter().any(ScalarValue::is_null) {
            return Ok(match self.function {
                Function::SerialSequence => ScalarValue::Utf8(None),
                _ => ScalarValue::Int64(None),
            });
        }
        match self.function {
            Function::NextVal => {
                let seq = named_sequence(&self.catalog, schemas, &text(0).unwrap_or_default())?;
                int(self.calls.next(&seq))
            }
            Function::CurrVal => {
                let seq = named_sequence(&self.catalog, schemas, &text(0).unwrap_or_default())?;
                int(self.calls.current(&seq))
            }
            Function::SetVal => {
                let seq = named_sequence(&self.catalog, schemas, &text(0).unwrap_or_default())?;
                let value = match args.get(1) {
                    Some(v) => match v.cast_to(&DataType::Int64) {
                        Ok(ScalarValue::Int64(Some(v))) => v,
                        _ => {
                            return Err(SqlError::user(
                                state::DATA_EXCEPTION,
                                format!("setval takes a bigint, not {v}"),
                            ));
                        }
                    },
                    None => return Err(SqlError::user(state::SYNTAX, "setval needs a value")),
                };
                let called = !matches!(args.get(2), Some(ScalarValue::Boolean(Some(false))));
                int(self.calls.set(&seq, value, called))
            }
            Function::LastVal => int(self.calls.last(&self.catalog)),
            Function::SerialSequence => {
                let name = relation(schemas, &text(0).unwrap_or_default(), |n| {
                    self.catalog.names_a_relation(n)
                })?;
                let column = text(1).unwrap_or_default();
                let table = match self.catalog.table(&name) {
                    Some(t) => t,
                    // An index, a view or a sequence owns no sequence.
                    None if self.catalog.names_a_relation(&name) => {
                        return Ok(ScalarValue::Utf8(None));
                    }
                    None => self.catalog.table_or_error(&name)?,
                };
                let position = table.def().column(&column).ok_or_else(|| {
                    SqlError::user(
                        state::UNDEFINED_COLUMN,
                        format!(
                            "column \"{column}\" of relation \"{}\" does not exist",
                            table.def().name
                        ),
                    )
                })?;
                let owned = self
                    .catalog
                    .sequences()
                    .into_iter()
                    .find(|s| s.def().owned_by == Some((table.def().id, position as u16)));
                Ok(ScalarValue::Utf8(owned.map(|s| {
                    let ident = crate::quote_functions::ident;
                    format!("{}.{}", ident(&s.def().schema), ident(&s.def().name))
                })))
            }
        }
    }
}

impl ScalarUDFImpl for SequenceFunction {
    fn name(&self) -> &str {
        Self::name_of(self.function)
    }

    fn signature(&self) -> &Signature {
        &self.signature
    }

    fn return_type(&self, _args: &[DataType]) -> DfResult<DataType> {
        Ok(match self.function {
            Function::SerialSequence => DataType::Utf8,
            _ => DataType::Int64,
        })
    }

    fn invoke_with_args(&self, args: ScalarFunctionArgs) -> DfResult<ColumnarValue> {
        // Volatile: a value for every row, even when the arguments are constants.
        let rows = args.number_rows;
        let arrays = ColumnarValue::values_to_arrays(&args.args)?;
        let mut out = Vec::with_capacity(rows);
        let search_path = args.config_options.extensions.get::<SearchPath>();
        let schemas = search_path.map_or_else(|| SearchPath::default().schemas(), |p| p.schemas());
        for row in 0..rows {
            let values = arrays
                .iter()
                .map(|a| ScalarValue::try_from_array(a, if a.len() == 1 { 0 } else { row }))
                .collect::<DfResult<Vec<_>>>()?;
            out.push(self.one(&schemas, &values).map_err(external)?);
        }
        let array: ArrayRef = match self.function {
            Function::SerialSequence => Arc::new(
                out.into_iter()
                    .map(|v| match v {
                        ScalarValue::Utf8(s) => s,
                        _ => None,
                    })
                    .collect::<StringArray>(),
            ),
            _ => Arc::new(
                out.into_iter()
                    .map(|v| match v {
                        ScalarValue::Int64(v) => v,
                        _ => None,
                    })
                    .collect::<Int64Array>(),
            ),
        };
        Ok(ColumnarValue::Array(array))
    }
}

/// Registers the sequence functions in `ctx`, for the session whose calls `calls`
/// remembers.
pub(crate) fn register(ctx: &SessionContext, catalog: &Arc<Catalog>, calls: &Arc<SequenceCalls>) {
    let text = DataType::Utf8;
    let signatures = [
        (
            Function::NextVal,
            TypeSignature::Exact(vec![text.clone()]),
            Volatility::Volatile,
        ),
        (
            Function::CurrVal,
            TypeSignature::Exact(vec![text.clone()]),
            Volatility::Volatile,
        ),
        (
            Function::SetVal,
            TypeSignature::OneOf(vec![
                TypeSignature::Exact(vec![text.clone(), DataType::Int64]),
                TypeSignature::Exact(vec![text.clone(), DataType::Int64, DataType::Boolean]),
            ]),
            Volatility::Volatile,
        ),
        (
            Function::LastVal,
            TypeSignature::Nullary,
            Volatility::Volatile,
        ),
        (
            Function::SerialSequence,
            TypeSignature::Exact(vec![text.clone(), text]),
            Volatility::Stable,
        ),
    ];
    for (function, signature, volatility) in signatures {
        ctx.register_udf(ScalarUDF::new_from_impl(SequenceFunction {
            function,
            catalog: Held(Arc::clone(catalog)),
            calls: Held(Arc::clone(calls)),
            signature: Signature::new(signature, volatility),
        }));
    }
}
