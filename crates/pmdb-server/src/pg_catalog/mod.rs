//! PostgreSQL's system catalog as clients read it: the `pg_catalog` schema built from
//! pmdb's catalog ([`tables`]), the functions catalog queries call ([`functions`]),
//! the oids they join on ([`oids`]), and the adapter that turns psql's and drivers'
//! catalog SQL into SQL DataFusion plans ([`rewrite`]). Enough for psql's `\d`, `\dt`,
//! `\d TABLE`, `\di`, `\dn`, `\l` and `\du`.

mod functions;
pub(crate) mod oids;
mod relation;
mod rewrite;
mod rows;
mod source;
mod tables;
mod type_of;

use std::sync::Arc;

use datafusion::common::Result as DfResult;
use datafusion::logical_expr::ScalarUDF;
use pmdb_sql::Sessions;

use crate::activity::Activity;

pub use rewrite::adapt;
pub use source::DatabaseNames;

use source::Origin;

/// Adds `pg_catalog` and its functions to the SQL engine `sessions` belong to; `users`
/// are the roles the server knows besides its owner, `activity` its connections,
/// `databases` the names of the databases CREATE DATABASE made.
pub fn install(
    sessions: &Sessions,
    users: Vec<String>,
    activity: Arc<Activity>,
    databases: DatabaseNames,
) -> DfResult<()> {
    let origin = Arc::new(Origin::new(
        Arc::clone(sessions.catalog()),
        users,
        activity,
        databases,
    ));
    let ctx = sessions.context();
    for f in functions::all(&origin) {
        ctx.register_udf(f);
    }
    ctx.register_udf(ScalarUDF::from(type_of::TypeOf::new(&origin)));
    sessions.register_schema("pg_catalog", tables::schema(&origin)?)
}
