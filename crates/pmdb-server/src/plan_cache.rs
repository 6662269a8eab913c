//! One connection's plans by the text of their statements (and the parameter types
//! their client declared), so that the same text sent to Parse again is not parsed and
//! planned again. Drivers send the same statements
//! unnamed over and over: psycopg sends a statement unnamed until it has run it a few
//! times and forgets what it prepared at each ROLLBACK (SQLAlchemy's pool rolls back at
//! every check-in), node-postgres and JDBC do much the same, and planning costs pmdb
//! more than running a point read does.
//!
//! A plan found here is the one Parse would make now, as a named statement's is: made
//! at the catalog's present generation (no DDL since, a rolled-back block's included).
//! A plan made under another search path is made again. Other settings do not enter
//! plans: pmdb takes TimeZone as UTC only, and `current_setting` reads its values as it
//! runs. DEALLOCATE does not clear the
//! cache (it forgets names, not plans); DISCARD ALL and DISCARD PLANS do.

use std::fmt::Write as _;
use std::sync::Arc;

use datafusion::arrow::datatypes::DataType;
use pmdb_sql::{Prepared, SqlSession, StatementKind};
use quick_cache::unsync::Cache;

/// Plans kept per connection: an application's statements, and more than the few
/// dozen an ORM sends in a loop.
const CAPACITY: usize = 256;

/// What a plan is kept by: the statement's text, and the parameter types its client
/// declared (the same text declared otherwise plans otherwise).
pub fn key(sql: &str, declared: &[Option<DataType>]) -> String {
    let mut key = sql.to_owned();
    if declared.iter().any(Option::is_some) {
        key.push('\0');
        for d in declared {
            let _ = write!(key, "{d:?};");
        }
    }
    key
}

pub struct PlanCache {
    plans: Cache<String, Arc<Prepared>>,
}

impl Default for PlanCache {
    fn default() -> PlanCache {
        PlanCache {
            plans: Cache::new(CAPACITY),
        }
    }
}

impl PlanCache {
    /// The plan kept for `sql`, if it is still the one planning would give.
    pub fn get(&mut self, sql: &str, session: &SqlSession) -> Option<Arc<Prepared>> {
        let prepared = self.plans.get(sql)?;
        if session.plan_is_current(prepared) {
            return Some(Arc::clone(prepared));
        }
        self.plans.remove(sql);
        None
    }

    /// Keeps the plan of `sql`, if it is worth keeping: statements that Parse plans
    /// (transaction control, DDL and COPY cost nothing to prepare, and FETCH's columns
    /// are its cursor's of the moment).
    pub fn keep(&mut self, key: String, prepared: &Arc<Prepared>) {
        use StatementKind as K;
        let planned = matches!(
            prepared.kind(),
            K::Query | K::LockingQuery | K::Insert | K::Update | K::Delete
        );
        if planned {
            self.plans.insert(key, Arc::clone(prepared));
        }
    }

    pub fn clear(&mut self) {
        self.plans.clear();
    }
}
