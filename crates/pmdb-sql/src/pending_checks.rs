//! What a transaction block knows of its deferred foreign keys: which keys are deferred
//! now (each key's INITIALLY, changed by `SET CONSTRAINTS`), and the checks they put off
//! until the commit (or until `SET CONSTRAINTS … IMMEDIATE`): rows written that must find
//! their parent, and parent keys that went while rows may still reference them. Each
//! check reads the rows again when it runs, so a row changed or rolled back since is
//! checked as it is then. [`crate::deferred_checks`] runs them.

use std::collections::{HashMap, HashSet};

use crate::schema::{Deferral, ForeignKeyDef};
use crate::types::Value;

/// A referencing row written under `key` of table `table`, whose foreign key `fk` must
/// find its parent.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub(crate) struct ChildCheck {
    pub table: u64,
    pub fk: String,
    pub key: Vec<u8>,
}

/// A row of `parent` holding `values` in the parent columns of `child`'s foreign key
/// `fk` was deleted or changed: unless a row holds them again, no row of `child` may
/// reference them.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct ParentCheck {
    pub parent: u64,
    pub child: u64,
    pub fk: String,
    pub values: Vec<Value>,
}

#[derive(Default)]
pub(crate) struct PendingChecks {
    /// `SET CONSTRAINTS ALL`: every deferrable key deferred or not.
    all: Option<bool>,
    /// `SET CONSTRAINTS name`, since the last `ALL`.
    named: HashMap<String, bool>,
    children: HashSet<ChildCheck>,
    parents: Vec<ParentCheck>,
}

impl PendingChecks {
    /// Whether `fk`'s checks are put off until the commit.
    pub(crate) fn defers(&self, fk: &ForeignKeyDef) -> bool {
        defers(self.all, &self.named, &fk.name, fk.deferral)
    }

    /// `SET CONSTRAINTS {ALL | names} {DEFERRED | IMMEDIATE}` (`None`: ALL).
    pub(crate) fn set(&mut self, names: Option<&[String]>, deferred: bool) {
        match names {
            None => {
                self.all = Some(deferred);
                self.named.clear();
            }
            Some(names) => {
                for n in names {
                    self.named.insert(n.clone(), deferred);
                }
            }
        }
    }

    pub(crate) fn child(&mut self, check: ChildCheck) {
        self.children.insert(check);
    }

    pub(crate) fn parent(&mut self, check: ParentCheck) {
        if !self.parents.contains(&check) {
            self.parents.push(check);
        }
    }

    /// The checks of the keys no longer deferred (all of them when `all`), taken out;
    /// `deferral` gives a key's (of its table and name), `None` for one dropped since.
    pub(crate) fn take_due(
        &mut self,
        all: bool,
        deferral: impl Fn(u64, &str) -> Option<Deferral>,
    ) -> (Vec<ChildCheck>, Vec<ParentCheck>) {
        let (mode, named) = (self.all, &self.named);
        let due = |table: u64, fk: &str| {
            all || deferral(table, fk).is_none_or(|d| !defers(mode, named, fk, d))
        };
        let due_child = |c: &ChildCheck| due(c.table, &c.fk);
        let due_parent = |c: &ParentCheck| due(c.child, &c.fk);
        let (children, kept): (Vec<ChildCheck>, Vec<ChildCheck>) =
            self.children.drain().partition(due_child);
        self.children = kept.into_iter().collect();
        let (parents, kept): (Vec<ParentCheck>, Vec<ParentCheck>) =
            self.parents.drain(..).partition(due_parent);
        self.parents = kept;
        (children, parents)
    }
}

/// Whether a key named `name` with `deferral` is deferred under `SET CONSTRAINTS ALL`
/// `all` and the `named` settings since.
fn defers(
    all: Option<bool>,
    named: &HashMap<String, bool>,
    name: &str,
    deferral: Deferral,
) -> bool {
    match deferral {
        Deferral::NotDeferrable => false,
        initially => named
            .get(name)
            .copied()
            .or(all)
            .unwrap_or(initially == Deferral::InitiallyDeferred),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::schema::Action;

    fn fk(name: &str, deferral: Deferral) -> ForeignKeyDef {
        ForeignKeyDef {
            name: name.into(),
            columns: vec![1],
            parent: 1,
            parent_columns: vec![0],
            on_delete: Action::NoAction,
            on_update: Action::NoAction,
            deferral,
        }
    }

    #[test]
    fn set_constraints_overrides_initially_for_deferrable_keys_only() {
        let mut p = PendingChecks::default();
        let never = fk("never", Deferral::NotDeferrable);
        let later = fk("later", Deferral::InitiallyDeferred);
        let now = fk("now", Deferral::InitiallyImmediate);
        assert!(!p.defers(&never) && p.defers(&later) && !p.defers(&now));
        p.set(None, true);
        assert!(!p.defers(&never) && p.defers(&later) && p.defers(&now));
        p.set(Some(&["later".into()]), false);
        assert!(!p.defers(&later) && p.defers(&now));
        p.set(None, false);
        assert!(!p.defers(&later) && !p.defers(&now));
    }

    #[test]
    fn due_checks_are_taken_once() {
        let mut p = PendingChecks::default();
        let check = |fk: &str| ChildCheck {
            table: 7,
            fk: fk.into(),
            key: vec![1],
        };
        p.child(check("a"));
        p.child(check("a"));
        p.child(check("b"));
        let deferral = |_: u64, fk: &str| {
            Some(if fk == "b" {
                Deferral::InitiallyDeferred
            } else {
                Deferral::NotDeferrable
            })
        };
        let (due, _) = p.take_due(false, deferral);
        assert_eq!(due, [check("a")]);
        let (due, _) = p.take_due(true, deferral);
        assert_eq!(due, [check("b")]);
        assert!(p.take_due(true, deferral).0.is_empty());
    }
}
