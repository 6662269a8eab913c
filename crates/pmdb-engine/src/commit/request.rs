//! What a commit group is made of: each writer's request, with the outcome the pipeline
//! gives it.

use std::sync::atomic::{AtomicBool, Ordering};
use std::task::Waker;

use super::conflicts::Validation;
use crate::batch::WriteBatch;
use crate::error::Result;
use parking_lot::Mutex;

/// One writer's batch (with what to validate first, for a transaction) and, once the
/// pipeline is done with it, its outcome.
pub(crate) struct Request {
    pub batch: WriteBatch,
    pub sync: bool,
    pub validation: Option<Validation>,
    done: AtomicBool,
    /// The outcome, and the task to wake when it is set (an async writer's).
    slot: Mutex<(Option<Result<()>>, Option<Waker>)>,
}

impl Request {
    pub fn new(batch: WriteBatch, sync: bool, validation: Option<Validation>) -> Request {
        Request {
            batch,
            sync,
            validation,
            done: AtomicBool::new(false),
            slot: Mutex::new((None, None)),
        }
    }

    /// Whether the request has its outcome (read without taking it).
    pub fn is_done(&self) -> bool {
        self.done.load(Ordering::Acquire)
    }

    pub fn finish(&self, outcome: Result<()>) {
        let waker = {
            let mut slot = self.slot.lock();
            slot.0 = Some(outcome);
            self.done.store(true, Ordering::Release);
            slot.1.take()
        };
        if let Some(w) = waker {
            w.wake();
        }
    }

    pub fn take(&self) -> Option<Result<()>> {
        if self.done.load(Ordering::Acquire) {
            self.slot.lock().0.take()
        } else {
            None
        }
    }

    /// Takes the outcome if it is there, else leaves `waker` to be woken when it is.
    pub fn take_or_wake(&self, waker: &Waker) -> Option<Result<()>> {
        let mut slot = self.slot.lock();
        if self.done.load(Ordering::Acquire) {
            return slot.0.take();
        }
        match &slot.1 {
            Some(w) if w.will_wake(waker) => {}
            _ => slot.1 = Some(waker.clone()),
        }
        None
    }
}
