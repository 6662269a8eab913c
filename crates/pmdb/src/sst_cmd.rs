//! `pmdb sst dump FILE`, in the spirit of RocksDB's sst_dump: what one SST file holds —
//! footer, properties, filter and index, then optionally its entries and a check of
//! every block. The file is opened read-only through `pmdb_engine::SstFile`, with no
//! database or manifest; a damaged or foreign file is an error naming it.

use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Args, Subcommand};
use pmdb_bench::limits::fmt_bytes;
use pmdb_engine::{Kind, SstEntry, SstFile, SstKey};

use crate::input::whole;

/// Most entries `--limit` asks for: more than any file holds.
const MAX_LIMIT: u64 = 1 << 40;
/// Bytes of each value printed.
const VALUE_PREFIX: usize = 32;

#[derive(Subcommand)]
pub enum SstCommand {
    /// Show what an SST file holds: footer, properties, filter and index; optionally its
    /// entries and a check of every block (read-only).
    Dump(DumpArgs),
}

#[derive(Args)]
pub struct DumpArgs {
    /// The SST file
    file: PathBuf,
    /// Print every entry: user key, sequence number, kind, value length and the value's
    /// first bytes
    #[arg(long)]
    entries: bool,
    /// Print at most N entries (implies --entries)
    #[arg(long, value_name = "N", value_parser = whole(1..=MAX_LIMIT))]
    limit: Option<u64>,
    /// Start at the first entry whose user key is KEY or after it (implies --entries);
    /// \xNN and the other escapes dump prints are accepted
    #[arg(long, value_name = "KEY", value_parser = parse_key)]
    from: Option<UserKey>,
    /// Read every data block and check checksums, key order, filter and properties
    #[arg(long)]
    verify: bool,
}

/// A user key given on the command line.
#[derive(Clone)]
pub struct UserKey(Vec<u8>);

pub fn run(cmd: SstCommand) -> Result<ExitCode, Box<dyn std::error::Error>> {
    match cmd {
        SstCommand::Dump(args) => dump(&args),
    }
}

fn dump(args: &DumpArgs) -> Result<ExitCode, Box<dyn std::error::Error>> {
    let file = SstFile::open(&args.file)?;
    let row = |k: &str, v: String| println!("{k:<12}{v}");
    row("file", file.name().to_string());
    row("size", bytes(file.len()));
    let f = file.footer();
    let filter = f.filter.map_or("no filter block".to_string(), |b| {
        format!("filter block at {} ({} B)", b.offset, b.size)
    });
    row(
        "footer",
        format!(
            "format {}; index block at {} ({} B); {filter}; properties block at {} ({} B)",
            f.format_version, f.index.offset, f.index.size, f.properties.offset, f.properties.size
        ),
    );
    let p = file.properties();
    row(
        "written as",
        p.place
            .as_ref()
            .map_or("not recorded (properties version 1)".into(), |at| {
                format!(
                    "SST {} of subtable {}, database {}",
                    at.number, at.subtable, at.database
                )
            }),
    );
    row(
        "entries",
        format!(
            "{} ({} tombstones); seqs {} to {}",
            p.entries, p.tombstones, p.min_seq, p.max_seq
        ),
    );
    row(
        "raw bytes",
        format!("keys {} B, values {} B", p.raw_key_bytes, p.raw_value_bytes),
    );
    row(
        "data blocks",
        format!("{}, compression {}", p.data_blocks, p.compression),
    );
    for (name, key) in [("smallest", &p.smallest), ("largest", &p.largest)] {
        row(name, key.as_ref().map_or("none".into(), version));
    }
    row(
        "filter",
        match file.filter() {
            Some(s) => format!("bloom, {} hashes, {} bits", s.hashes, s.bits),
            None => "none".into(),
        },
    );
    let index = file.index()?;
    row(
        "index",
        format!(
            "{} entries; data blocks of {} to {} B, {} B in all",
            index.entries, index.smallest_block, index.largest_block, index.data_bytes
        ),
    );
    if args.entries || args.limit.is_some() || args.from.is_some() {
        let entries = match &args.from {
            Some(UserKey(key)) => file.entries_from(key),
            None => file.entries(),
        };
        let limit = args.limit.unwrap_or(u64::MAX);
        for entry in entries.take(usize::try_from(limit).unwrap_or(usize::MAX)) {
            println!("{}", entry_line(&entry?));
        }
    }
    if args.verify {
        let entries = file.verify()?;
        row(
            "verified",
            format!(
                "{entries} entries in {} data blocks: checksums, key order, filter and properties hold",
                p.data_blocks
            ),
        );
    }
    Ok(ExitCode::SUCCESS)
}

fn bytes(n: u64) -> String {
    format!("{n} B ({})", fmt_bytes(n))
}

/// Bytes as a quoted string: printable ASCII as it is, the rest escaped (`\xNN`).
fn quoted(b: &[u8]) -> String {
    format!("\"{}\"", b.escape_ascii())
}

/// A key and its version: `"key" @seq kind`.
fn version(k: &SstKey) -> String {
    format!("{} @{} {}", quoted(&k.user_key), k.seq, k.kind.name())
}

fn entry_line(e: &SstEntry) -> String {
    match e.key.kind {
        Kind::Delete => version(&e.key),
        Kind::Put => {
            let shown = &e.value[..e.value.len().min(VALUE_PREFIX)];
            let more = if shown.len() < e.value.len() {
                "…"
            } else {
                ""
            };
            format!(
                "{}, {} B: {}{more}",
                version(&e.key),
                e.value.len(),
                quoted(shown)
            )
        }
    }
}

/// The inverse of [`quoted`]'s escaping (without the quotes): `\xNN`, `\\`, `\"`, `\'`,
/// `\n`, `\r`, `\t`.
fn parse_key(s: &str) -> Result<UserKey, String> {
    let bad = || "must be a key, with \\xNN escapes as dump prints them".to_string();
    let mut out = Vec::with_capacity(s.len());
    let mut rest = s.as_bytes();
    while let Some((&c, tail)) = rest.split_first() {
        rest = tail;
        if c != b'\\' {
            out.push(c);
            continue;
        }
        let (&e, tail) = rest.split_first().ok_or_else(bad)?;
        rest = tail;
        out.push(match e {
            b'\\' | b'"' | b'\'' => e,
            b'n' => b'\n',
            b'r' => b'\r',
            b't' => b'\t',
            b'x' => {
                let hex = rest
                    .get(..2)
                    .filter(|h| h.iter().all(u8::is_ascii_hexdigit))
                    .ok_or_else(bad)?;
                rest = &rest[2..];
                std::str::from_utf8(hex)
                    .ok()
                    .and_then(|h| u8::from_str_radix(h, 16).ok())
                    .ok_or_else(bad)?
            }
            _ => return Err(bad()),
        });
    }
    Ok(UserKey(out))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_print_escaped_and_parse_back() {
        for key in [&b"plain"[..], b"a\"b\\c", b"\x00\xff\n\t\r'", b""] {
            let printed = quoted(key);
            let inner = &printed[1..printed.len() - 1];
            assert_eq!(parse_key(inner).unwrap().0, key, "{printed}");
        }
        assert_eq!(quoted(b"k\x01"), "\"k\\x01\"");
        for bad in ["\\", "\\x4", "\\xzz", "\\x+1", "\\q", "\\x\u{e9}a"] {
            assert!(parse_key(bad).is_err(), "{bad}");
        }
    }
}
