//! Progress bars for long benchmark phases (hidden automatically when not on a terminal).

use indicatif::{ProgressBar, ProgressStyle};

/// A bar of `len` steps labelled `what`.
pub fn progress(what: &str, len: u64) -> ProgressBar {
    let bar = ProgressBar::new(len);
    bar.set_style(
        ProgressStyle::with_template("{msg:36} {bar:40} {pos}/{len} {per_sec} eta {eta}")
            .expect("valid template"),
    );
    bar.set_message(what.to_string());
    bar
}

/// Advances `bar` every 4,096 steps, so hot loops pay for it rarely.
pub fn tick(bar: &ProgressBar, i: u64) {
    if i % 4096 == 4095 {
        bar.inc(4096);
    }
}
