//! Plans of the simple protocol's statements, kept by their text with the literals taken
//! out ([`crate::literal_template`]): a statement sent as text with other values each
//! time (pgbench's and sysbench's, an ORM's that binds on its side) is parsed and
//! planned once, then run as a prepared statement with its literals for parameters.
//!
//! Only plans the fast path runs are used this way: there a parameter converts to a
//! column's type just where the literal would, so the run means what the text says.
//! Any other statement, and one whose values the fast path declines, goes the way of
//! every statement (parsed, rewritten, planned) — so does a text seen once only, which
//! costs no planning of its template. Plans are kept as [`SqlSession::plan_is_current`]
//! keeps them: made again after DDL or under another search path.

use std::sync::Arc;

use quick_cache::unsync::Cache;

use super::SqlSession;
use crate::error::Result;
use crate::literal_template::{self, Literal};
use crate::output::Output;
use crate::prepared::Prepared;
use crate::session::parse;
use crate::statement;

/// Templates kept per connection: an application's statements, and more than the few
/// dozen a benchmark or an ORM sends in a loop.
const CAPACITY: usize = 256;

/// What names in a template resolved to: the catalog's generation and the search path.
#[derive(Clone, PartialEq)]
struct Epoch {
    generation: u64,
    search_path: Arc<[String]>,
}

#[derive(Clone)]
enum Kept {
    /// Seen once: planned if seen again in the same epoch.
    Seen(Epoch),
    Planned(Arc<Prepared>),
    /// Its template does not parse or plan (its literals were where a parameter cannot
    /// be).
    Refused(Epoch),
}

pub(super) struct Shapes {
    kept: Cache<String, Kept>,
}

impl Default for Shapes {
    fn default() -> Shapes {
        Shapes {
            kept: Cache::new(CAPACITY),
        }
    }
}

impl SqlSession {
    /// Runs `sql`, one statement of the simple protocol, by the plan kept for its
    /// template if the fast path runs that plan with its literals; `None` (nothing
    /// done) otherwise, for the caller to run it as every statement runs.
    pub async fn run_by_shape(&mut self, sql: &str) -> Option<Result<Output>> {
        let template = literal_template::split(sql)?;
        let prepared = self.shape_plan(template.text).await?;
        let params = template
            .literals
            .iter()
            .map(Literal::value)
            .collect::<Option<Vec<_>>>()?;
        self.shared.notices.take();
        let read_point = match self.enter(prepared.kind()) {
            Ok(r) => r,
            Err(e) => return Some(Err(e)),
        };
        let out = statement::run_fast(&self.shared, read_point, &prepared, &params).await;
        self.leave(out.as_ref().is_none_or(Result::is_ok));
        out
    }

    /// Forgets the plans kept by template (DISCARD PLANS, DISCARD ALL).
    pub fn forget_shapes(&mut self) {
        self.shapes.kept.clear();
    }

    /// The fast path's plan of the statement `text`, a template, planned now if it was
    /// seen before in this epoch.
    async fn shape_plan(&mut self, text: String) -> Option<Arc<Prepared>> {
        let epoch = Epoch {
            generation: self.shared.catalog.generation(),
            search_path: self.shared.search_path.schemas(),
        };
        match self.shapes.kept.get(&text) {
            Some(Kept::Planned(p)) if self.plan_is_current(p) => {
                return p.on_fast_path().then(|| Arc::clone(p));
            }
            Some(Kept::Refused(e)) if *e == epoch => return None,
            Some(Kept::Seen(e)) if *e == epoch => {}
            // Planned before the last DDL: at once again.
            Some(Kept::Planned(_)) => {}
            _ => {
                self.shapes.kept.insert(text, Kept::Seen(epoch));
                return None;
            }
        }
        match self.plan_template(&text).await {
            Some(p) => {
                self.shapes.kept.insert(text, Kept::Planned(Arc::clone(&p)));
                p.on_fast_path().then_some(p)
            }
            None => {
                self.shapes.kept.insert(text, Kept::Refused(epoch));
                None
            }
        }
    }

    /// `text` parsed and planned as Parse plans a statement, the open block left as it
    /// was whatever happens.
    async fn plan_template(&self, text: &str) -> Option<Arc<Prepared>> {
        let mut statements = parse(text).ok()?;
        let (Some(mut statement), None) = (statements.pop_front(), statements.pop_front()) else {
            return None;
        };
        if let Some(adapt) = &self.adapt {
            adapt(&mut statement);
        }
        self.plan(statement).await.ok().map(Arc::new)
    }
}
