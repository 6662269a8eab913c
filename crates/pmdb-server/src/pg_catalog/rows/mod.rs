//! The rows of the `pg_catalog` relations that have any, built from pmdb's catalog and
//! the server's state: each relation declared with the type of its rows beside the
//! function that builds them ([`super::relation::catalog_relation!`]), by area.

mod listings;
mod objects;
mod server;
mod shown;
mod standard;
mod types;

pub use listings::{PgIndexes, PgMatviews, PgTables, PgViews};
pub use objects::{
    PgAm, PgAttrdef, PgAttribute, PgClass, PgConstraint, PgDescription, PgIndex, PgNamespace,
    PgSequence, PgTablespace, descriptions,
};
pub use server::{PgDatabase, PgPreparedStatements, PgRoles, PgStatActivity};
pub use shown::{column_list, index_definition, materialized_query};
pub use standard::{StandardColumn, StandardSequence, StandardTable, StandardView};
pub use types::{PgEnum, PgExtension, PgType};
