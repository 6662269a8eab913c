//! `pmdb sql`: SQL on a pmdb database. `-c` runs statements and `-f` runs a file;
//! with neither, an interactive shell with line editing, history, statements over
//! several lines, `\d`, `\d TABLE` and `\timing`. Results print as psql prints them.

use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::Instant;

use clap::Args;
use pmdb_engine::Db;
use pmdb_sql::{Output, SqlEngine};
use rustyline::DefaultEditor;
use rustyline::error::ReadlineError;

use crate::damage_args::DamageArgs;
use crate::paths::default_pool_dir;
use crate::sql_table::{describe_table, list_tables, render};

#[derive(Args)]
pub struct SqlArgs {
    /// Database directory [default: /dev/shm/pmdb on tmpfs, else ./pmdb-data]
    #[arg(long)]
    path: Option<PathBuf>,
    #[command(flatten)]
    damage: DamageArgs,
    /// Run these statements and exit (may be given more than once)
    #[arg(short = 'c', long = "command", value_name = "SQL")]
    commands: Vec<String>,
    /// Run the statements in this file and exit (may be given more than once)
    #[arg(short = 'f', long = "file", value_name = "FILE")]
    files: Vec<PathBuf>,
}

/// Runs `pmdb sql` on a thread with the stack a server's connection has, so a statement
/// runs here as deep as it would there.
pub fn run(args: SqlArgs) -> Result<ExitCode, Box<dyn std::error::Error>> {
    let shell = std::thread::Builder::new()
        .name("pmdb-sql-shell".into())
        .stack_size(pmdb_sql::STATEMENT_STACK)
        .spawn(move || run_here(args).map_err(|e| e.to_string()))?;
    match shell.join() {
        Ok(result) => Ok(result?),
        Err(_) => Err("the shell's thread panicked".into()),
    }
}

fn run_here(args: SqlArgs) -> Result<ExitCode, Box<dyn std::error::Error>> {
    let dir = args.path.unwrap_or_else(default_pool_dir);
    let db = Db::open(&dir, args.damage.options(true))?;
    let engine = SqlEngine::open(db)?;
    let mut shell = Shell {
        engine: &engine,
        timing: false,
    };
    if args.commands.is_empty() && args.files.is_empty() {
        return shell.interactive(&dir);
    }
    for c in &args.commands {
        if !shell.run_text(c) {
            return Ok(ExitCode::from(1));
        }
    }
    for f in &args.files {
        let text =
            std::fs::read_to_string(f).map_err(|e| format!("cannot read {}: {e}", f.display()))?;
        if !shell.run_text(&text) {
            return Ok(ExitCode::from(1));
        }
    }
    Ok(ExitCode::SUCCESS)
}

struct Shell<'e> {
    engine: &'e SqlEngine,
    timing: bool,
}

impl Shell<'_> {
    /// Runs the statements and backslash commands of `text` in order, printing each
    /// result; `false` after the first error (which is printed).
    fn run_text(&mut self, text: &str) -> bool {
        for piece in split_input(text) {
            let ok = match piece {
                Piece::Meta(line) => self.meta(&line),
                Piece::Sql(sql) => self.sql(&sql),
            };
            if !ok {
                return false;
            }
        }
        true
    }

    fn sql(&mut self, sql: &str) -> bool {
        let statements = match pmdb_sql::parse(sql) {
            Ok(s) => s,
            Err(e) => {
                eprintln!("ERROR:  {e}");
                return false;
            }
        };
        for statement in statements {
            let started = Instant::now();
            let result = self.engine.run(statement);
            let took = started.elapsed();
            match result {
                Ok(Output::Rows { schema, batches }) => match render(&schema, &batches) {
                    Ok(text) => print!("{text}"),
                    Err(e) => {
                        eprintln!("ERROR:  {e}");
                        return false;
                    }
                },
                Ok(Output::Command(tag)) => println!("{tag}"),
                Ok(Output::CopyOut {
                    schema,
                    batches,
                    format,
                }) => match pmdb_server::copy_bytes(&schema, &batches, &format) {
                    Ok(bytes) => {
                        use std::io::Write;
                        let mut out = std::io::stdout().lock();
                        let rows: usize = batches.iter().map(|b| b.num_rows()).sum();
                        if out.write_all(&bytes).and_then(|()| out.flush()).is_err() {
                            return false;
                        }
                        println!("{}", pmdb_sql::CommandTag::copy(rows as u64));
                    }
                    Err(e) => {
                        eprintln!("ERROR:  {e}");
                        return false;
                    }
                },
                Ok(Output::Returned {
                    tag,
                    schema,
                    batches,
                }) => match render(&schema, &batches) {
                    Ok(text) => println!("{text}{tag}"),
                    Err(e) => {
                        eprintln!("ERROR:  {e}");
                        return false;
                    }
                },
                Err(e) => {
                    eprintln!("ERROR:  {e}");
                    return false;
                }
            }
            if self.timing {
                println!("Time: {:.3} ms", took.as_secs_f64() * 1e3);
            }
        }
        true
    }

    /// A backslash command; `false` if it failed.
    fn meta(&mut self, line: &str) -> bool {
        let mut words = line.split_whitespace();
        let command = words.next().unwrap_or_default();
        let arg = words.next();
        match (command, arg) {
            ("\\d", None) => {
                print!("{}", list_tables(self.engine.catalog()));
                true
            }
            ("\\d", Some(name)) => match describe_table(self.engine.catalog(), name) {
                Some(text) => {
                    print!("{text}");
                    true
                }
                None => {
                    eprintln!("Did not find any relation named \"{name}\".");
                    false
                }
            },
            ("\\timing", arg) => {
                self.timing = match arg {
                    Some("on") => true,
                    Some("off") => false,
                    None => !self.timing,
                    Some(other) => {
                        eprintln!("\\timing: unrecognized value \"{other}\": on or off");
                        return false;
                    }
                };
                println!("Timing is {}.", if self.timing { "on" } else { "off" });
                true
            }
            ("\\?" | "\\h" | "\\help", _) => {
                print!("{HELP}");
                true
            }
            (other, _) => {
                eprintln!("invalid command {other}; \\? lists them");
                false
            }
        }
    }

    fn interactive(&mut self, dir: &Path) -> Result<ExitCode, Box<dyn std::error::Error>> {
        let mut editor = DefaultEditor::new()?;
        let history = std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".pmdb_history"));
        if let Some(h) = &history {
            // No history yet is not an error.
            let _ = editor.load_history(h);
        }
        println!(
            "pmdb {} SQL on {}; \\? for help, \\q to quit.",
            env!("CARGO_PKG_VERSION"),
            dir.display()
        );
        let mut buffer = String::new();
        loop {
            let prompt = if buffer.is_empty() {
                "pmdb=> "
            } else {
                "pmdb-> "
            };
            match editor.readline(prompt) {
                Ok(line) => {
                    if buffer.is_empty() && matches!(line.trim(), "\\q" | "quit" | "exit") {
                        break;
                    }
                    buffer.push_str(&line);
                    buffer.push('\n');
                    if is_complete(&buffer) {
                        let entry = buffer.trim().to_string();
                        let _ = editor.add_history_entry(entry.as_str());
                        self.run_text(&entry);
                        buffer.clear();
                    }
                }
                // Ctrl-C drops the statement being typed, as in psql.
                Err(ReadlineError::Interrupted) => buffer.clear(),
                Err(ReadlineError::Eof) => break,
                Err(e) => return Err(e.into()),
            }
        }
        if let Some(h) = &history {
            editor.save_history(h)?;
        }
        Ok(ExitCode::SUCCESS)
    }
}

const HELP: &str = "\
  \\d             list tables
  \\d TABLE       describe a table: columns, primary key, indexes
  \\timing [on|off]  show each statement's time
  \\q             quit
  Statements end with a semicolon and may span lines.
";

enum Piece {
    Sql(String),
    Meta(String),
}

/// Splits input into SQL text and backslash commands (a backslash command takes the
/// rest of its line, when it starts one outside a statement).
fn split_input(text: &str) -> Vec<Piece> {
    let mut pieces = Vec::new();
    let mut sql = String::new();
    for line in text.lines() {
        if line.trim_start().starts_with('\\') && sql.trim().is_empty() {
            pieces.push(Piece::Meta(line.trim().to_string()));
            sql.clear();
        } else {
            sql.push_str(line);
            sql.push('\n');
            if is_complete(&sql) {
                pieces.push(Piece::Sql(std::mem::take(&mut sql)));
            }
        }
    }
    if !sql.trim().is_empty() {
        pieces.push(Piece::Sql(sql));
    }
    pieces
}

/// Whether `text` is a backslash command or ends with a `;` that is not inside a
/// string, a quoted name or a comment.
fn is_complete(text: &str) -> bool {
    let trimmed = text.trim();
    if trimmed.starts_with('\\') {
        return true;
    }
    let mut last_significant = None;
    let mut chars = text.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '\'' | '"' => {
                let mut closed = false;
                while let Some(d) = chars.next() {
                    if d == c {
                        if chars.peek() == Some(&c) {
                            chars.next();
                        } else {
                            closed = true;
                            break;
                        }
                    }
                }
                if !closed {
                    return false;
                }
                last_significant = Some(c);
            }
            '-' if chars.peek() == Some(&'-') => {
                for d in chars.by_ref() {
                    if d == '\n' {
                        break;
                    }
                }
            }
            '/' if chars.peek() == Some(&'*') => {
                chars.next();
                let mut prev = ' ';
                let mut closed = false;
                for d in chars.by_ref() {
                    if prev == '*' && d == '/' {
                        closed = true;
                        break;
                    }
                    prev = d;
                }
                if !closed {
                    return false;
                }
            }
            c if c.is_whitespace() => {}
            c => last_significant = Some(c),
        }
    }
    last_significant == Some(';')
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn statements_end_at_a_semicolon_outside_strings_and_comments() {
        assert!(is_complete("select 1;"));
        assert!(is_complete("select 1;  -- done\n"));
        assert!(!is_complete("select ';"));
        assert!(!is_complete("select 1 -- ;\n"));
        assert!(!is_complete("select /* ; */ 1"));
        assert!(is_complete("select 'it''s';"));
        assert!(is_complete("\\d"));
        assert!(!is_complete("select\n 1"));
    }

    #[test]
    fn input_splits_into_statements_and_backslash_commands() {
        let pieces = split_input("\\timing\nselect 1;\nselect\n2;\n\\d t\nselect 3");
        let kinds: Vec<String> = pieces
            .iter()
            .map(|p| match p {
                Piece::Sql(s) => {
                    format!("sql:{}", s.split_whitespace().collect::<Vec<_>>().join(" "))
                }
                Piece::Meta(m) => format!("meta:{m}"),
            })
            .collect();
        assert_eq!(
            kinds,
            [
                "meta:\\timing",
                "sql:select 1;",
                "sql:select 2;",
                "meta:\\d t",
                "sql:select 3"
            ]
        );
    }
}
