//! Writing a benchmark's report: JSON with everything, Markdown for people.

use std::io;
use std::path::{Path, PathBuf};

use serde::Serialize;

/// Writes `<dir>/<name>.json` and `<dir>/<name>.md`; returns their paths.
pub fn write_report<T: Serialize>(
    dir: &Path,
    name: &str,
    data: &T,
    markdown: &str,
) -> io::Result<(PathBuf, PathBuf)> {
    std::fs::create_dir_all(dir)?;
    let json = dir.join(format!("{name}.json"));
    let md = dir.join(format!("{name}.md"));
    std::fs::write(
        &json,
        serde_json::to_string_pretty(data).map_err(io::Error::other)?,
    )?;
    std::fs::write(&md, markdown)?;
    Ok((json, md))
}

/// The command line that started this process, for the record: the program by its
/// name, not by where this machine keeps it.
pub fn command_line() -> String {
    let mut args = std::env::args();
    let program = args
        .next()
        .map(|p| {
            Path::new(&p)
                .file_name()
                .map_or(p.clone(), |n| n.to_string_lossy().into_owned())
        })
        .unwrap_or_default();
    std::iter::once(program)
        .chain(args)
        .collect::<Vec<_>>()
        .join(" ")
}
