//! The identity DataFusion asks of a function that holds shared state (the catalog, a
//! session's sequence calls, the database's transaction ids): it compares functions
//! to tell whether two plans call the same one. Two such functions are the same when
//! they hold the same state, so [`Held`] compares and hashes its `Arc` by address and a
//! function's struct derives the rest. Such a function names the catalog's object it
//! reads by an id a rewrite wrote as a constant argument ([`constant_id`]).

use std::sync::Arc;

use datafusion::common::{Result as DfResult, ScalarValue};

use crate::error::{SqlError, external};

/// The id of a `what` ("type", "domain") a call of `function` gives as `arg`, a constant.
pub(crate) fn constant_id(function: &str, what: &str, arg: Option<&ScalarValue>) -> DfResult<u64> {
    match arg {
        Some(ScalarValue::Int64(Some(id))) => u64::try_from(*id)
            .map_err(|_| external(SqlError::Query(format!("{function}: {what} id {id}")))),
        _ => Err(external(SqlError::Query(format!(
            "{function} takes a {what} id given as a constant"
        )))),
    }
}

/// Shared state a function holds, the same as another's when it is the same object.
pub(crate) struct Held<T>(pub Arc<T>);

impl<T> std::ops::Deref for Held<T> {
    type Target = T;

    fn deref(&self) -> &T {
        &self.0
    }
}

impl<T> std::fmt::Debug for Held<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{}@{:p}",
            std::any::type_name::<T>(),
            Arc::as_ptr(&self.0)
        )
    }
}

impl<T> PartialEq for Held<T> {
    fn eq(&self, other: &Held<T>) -> bool {
        Arc::ptr_eq(&self.0, &other.0)
    }
}

impl<T> Eq for Held<T> {}

impl<T> std::hash::Hash for Held<T> {
    fn hash<H: std::hash::Hasher>(&self, state: &mut H) {
        Arc::as_ptr(&self.0).hash(state);
    }
}
