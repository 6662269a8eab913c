//! MOVE on a portal the protocol bound (Bind with a name), as PostgreSQL allows, since
//! its portals and SQL's cursors are one thing: asyncpg's `Cursor.forward` binds a
//! portal and then sends `MOVE FORWARD n portal`. The portal's rows are read once, as
//! Execute reads them, so a portal moves forward only (55000 otherwise, PostgreSQL's
//! answer for a cursor that cannot scroll). A cursor DECLAREd in SQL of the same name
//! is pmdb-sql's to move.

use std::collections::HashMap;
use std::sync::{Arc, Weak};

use datafusion::sql::parser::Statement as DfStatement;
use futures::StreamExt;
use pgwire::api::portal::{Portal, PortalExecutionState};
use pgwire::api::results::{Response, Tag};
use pmdb_sql::{Prepared, SqlError};

use super::{Client, Run};
use crate::params::values;

/// The portals bound with a name, by name: held weakly, so a portal is gone here once
/// the protocol's store dropped it (Close, or another Bind of its name).
#[derive(Default)]
pub(super) struct NamedPortals(HashMap<String, Weak<Portal<Arc<Prepared>>>>);

impl NamedPortals {
    pub(super) fn bound(&mut self, name: &str, portal: &Arc<Portal<Arc<Prepared>>>) {
        self.0.retain(|_, p| p.strong_count() > 0);
        self.0.insert(name.to_owned(), Arc::downgrade(portal));
    }

    fn get(&self, name: &str) -> Option<Arc<Portal<Arc<Prepared>>>> {
        self.0.get(name).and_then(Weak::upgrade)
    }
}

/// Runs `statement` if it is a MOVE of a portal the protocol bound; `None` otherwise.
pub(super) async fn move_portal(
    client: &mut Client,
    statement: &DfStatement,
) -> Option<Result<Response, SqlError>> {
    let (name, steps) = pmdb_sql::forward_move(statement)?;
    if client.sql.cursor_columns(&name).is_some() {
        return None;
    }
    let portal = client.portals.get(&name)?;
    Some(match steps {
        Ok(steps) => step(client, &portal, steps).await,
        Err(e) => Err(e),
    })
}

async fn step(
    client: &mut Client,
    portal: &Portal<Arc<Prepared>>,
    steps: Option<u64>,
) -> Result<Response, SqlError> {
    let wire = |e: pgwire::error::PgWireError| SqlError::user("08P01", e.to_string());
    let moved = |n: usize| Ok(Response::Execution(Tag::new("MOVE").with_rows(n)));
    // A portal no Execute has run yet runs now, as its first Execute would.
    let initial = matches!(*portal.state().lock().await, PortalExecutionState::Initial);
    if initial {
        let prepared = &portal.statement.statement;
        let params = values(portal, prepared.parameters()).map_err(wire)?;
        let run = Run::Prepared(prepared, params);
        match client.execute(run, &portal.result_column_format).await? {
            Response::Query(rows) => portal.start(rows).await,
            _ => return moved(0),
        }
    }
    // Zero rows to Execute means all of them.
    let limit = match steps {
        Some(0) => return moved(0),
        Some(n) => usize::try_from(n).unwrap_or(usize::MAX),
        None => 0,
    };
    let mut fetched = portal.fetch(limit).await.map_err(wire)?;
    let rows = fetched.response.data_rows();
    let mut n = 0;
    while let Some(row) = rows.next().await {
        row.map_err(wire)?;
        n += 1;
    }
    moved(n)
}
