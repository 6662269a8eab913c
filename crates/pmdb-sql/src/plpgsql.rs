//! PL/pgSQL as a DO block writes it, read into a [`Block`]: the part of the language
//! that needs no variables. A block is `BEGIN … [EXCEPTION WHEN … THEN …] END`, its
//! statements RAISE, PERFORM, EXECUTE of a command's text, IF/ELSIF/ELSE, ASSERT,
//! NULL, RETURN, nested blocks and SQL statements. What needs variables (DECLARE,
//! assignment, SELECT … INTO, loops over rows) and the rest of the language (loops,
//! CASE, GET DIAGNOSTICS, cursors, labels) is refused with 0A000 when the block is
//! read, before any of it runs. The expressions stay SQL text, which
//! [`crate::do_block`] evaluates.

use datafusion::sql::sqlparser::tokenizer::Token;

use crate::error::{Result, SqlError, state};
use crate::notices::Severity;
use crate::tokens::{Located, located};

/// `BEGIN statements [EXCEPTION handlers] END`.
#[derive(Debug, PartialEq)]
pub(crate) struct Block {
    pub body: Vec<Stmt>,
    pub handlers: Vec<Handler>,
}

/// `WHEN condition [OR condition …] THEN statements`.
#[derive(Debug, PartialEq)]
pub(crate) struct Handler {
    pub conditions: Vec<Condition>,
    pub body: Vec<Stmt>,
}

/// What an exception handler catches.
#[derive(Debug, PartialEq)]
pub(crate) enum Condition {
    /// Every error but a cancel and a failed ASSERT, as PostgreSQL's `OTHERS`.
    Others,
    /// A SQLSTATE; one ending in `000` names its whole class.
    Code(String),
}

impl Condition {
    pub fn catches(&self, sqlstate: &str) -> bool {
        match self {
            Condition::Others => !matches!(sqlstate, "57014" | "P0004"),
            Condition::Code(code) => match code.strip_suffix("000") {
                Some(class) => sqlstate.starts_with(class),
                None => code == sqlstate,
            },
        }
    }
}

/// One statement, with its line in the block's text (from 1, as PostgreSQL counts).
#[derive(Debug, PartialEq)]
pub(crate) struct Stmt {
    pub line: u64,
    pub kind: StmtKind,
}

#[derive(Debug, PartialEq)]
pub(crate) enum StmtKind {
    Raise(Raise),
    /// PERFORM's query, its select list after the keyword.
    Perform(String),
    /// EXECUTE's expression, which gives the command to run.
    Execute(String),
    /// A SQL statement's text.
    Sql(String),
    If {
        /// Each condition with the statements it guards, IF's then the ELSIFs'.
        branches: Vec<(String, Vec<Stmt>)>,
        otherwise: Vec<Stmt>,
    },
    Assert {
        condition: String,
        message: Option<String>,
    },
    Null,
    Return,
    Block(Block),
}

impl StmtKind {
    /// The statement's name in PostgreSQL's CONTEXT line ("at RAISE").
    pub fn name(&self) -> &'static str {
        match self {
            StmtKind::Raise(_) => "RAISE",
            StmtKind::Perform(_) => "PERFORM",
            StmtKind::Execute(_) => "EXECUTE",
            StmtKind::Sql(_) => "SQL statement",
            StmtKind::If { .. } => "IF",
            StmtKind::Assert { .. } => "ASSERT",
            StmtKind::Null => "NULL",
            StmtKind::Return => "RETURN",
            StmtKind::Block(_) => "statement block",
        }
    }
}

/// RAISE's level: a notice's severity, or an error.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Level {
    Notice(Severity),
    Exception,
}

/// `RAISE [level] ['format' [, expr …] | condition | SQLSTATE 'code'] [USING option =
/// expr, …]`; a bare `RAISE` raises again the error its handler caught.
#[derive(Debug, PartialEq)]
pub(crate) struct Raise {
    pub level: Level,
    /// The format, and its arguments' expressions.
    pub format: Option<(String, Vec<String>)>,
    /// The SQLSTATE a condition name or `SQLSTATE 'code'` gave, and how it was
    /// written (the message of a RAISE that has no other).
    pub condition: Option<(String, String)>,
    pub options: Vec<(RaiseOption, String)>,
}

impl Raise {
    /// Whether this is a bare `RAISE`.
    pub fn again(&self) -> bool {
        self.format.is_none() && self.condition.is_none() && self.options.is_empty()
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum RaiseOption {
    Message,
    Detail,
    Hint,
    Errcode,
}

/// The block a DO statement's body holds.
pub(crate) fn parse(body: &str) -> Result<Block> {
    let tokens = located(body)
        .ok_or_else(|| SqlError::user(state::SYNTAX, "a DO block's body that does not tokenize"))?;
    let mut reader = Reader {
        text: body,
        tokens,
        at: 0,
    };
    let block = reader.block()?;
    if reader.peek_token() == Some(&Token::SemiColon) {
        reader.at += 1;
    }
    match reader.tokens.get(reader.at) {
        None => Ok(block),
        Some(t) => Err(reader.syntax_at(t.line, "after the block's END")),
    }
}

/// The SQLSTATE a condition name or a code written as one names.
pub(crate) fn sqlstate_of(written: &str) -> Result<String> {
    let code = written.to_ascii_uppercase();
    if code.len() == 5
        && code
            .bytes()
            .all(|b| b.is_ascii_digit() || b.is_ascii_uppercase())
    {
        return Ok(code);
    }
    let name = written.to_ascii_lowercase();
    CONDITIONS
        .iter()
        .find(|(n, _)| *n == name)
        .map(|(_, code)| (*code).to_owned())
        .ok_or_else(|| {
            SqlError::user(
                state::UNDEFINED_OBJECT,
                format!("unrecognized exception condition \"{name}\""),
            )
        })
}

/// PostgreSQL's condition names (its errcodes table) for the errors pmdb raises and
/// those DO blocks commonly catch or raise.
const CONDITIONS: &[(&str, &str)] = &[
    ("successful_completion", "00000"),
    ("warning", "01000"),
    ("no_data", "02000"),
    ("feature_not_supported", "0A000"),
    ("cardinality_violation", "21000"),
    ("data_exception", "22000"),
    ("string_data_right_truncation", "22001"),
    ("numeric_value_out_of_range", "22003"),
    ("null_value_not_allowed", "22004"),
    ("invalid_datetime_format", "22007"),
    ("datetime_field_overflow", "22008"),
    ("division_by_zero", "22012"),
    ("invalid_parameter_value", "22023"),
    ("invalid_character_value_for_cast", "22018"),
    ("invalid_text_representation", "22P02"),
    ("integrity_constraint_violation", "23000"),
    ("restrict_violation", "23001"),
    ("not_null_violation", "23502"),
    ("foreign_key_violation", "23503"),
    ("unique_violation", "23505"),
    ("check_violation", "23514"),
    ("invalid_transaction_state", "25000"),
    ("active_sql_transaction", "25001"),
    ("read_only_sql_transaction", "25006"),
    ("no_active_sql_transaction", "25P01"),
    ("in_failed_sql_transaction", "25P02"),
    ("invalid_sql_statement_name", "26000"),
    ("invalid_schema_name", "3F000"),
    ("transaction_rollback", "40000"),
    ("serialization_failure", "40001"),
    ("deadlock_detected", "40P01"),
    ("syntax_error_or_access_rule_violation", "42000"),
    ("syntax_error", "42601"),
    ("insufficient_privilege", "42501"),
    ("undefined_column", "42703"),
    ("undefined_function", "42883"),
    ("undefined_table", "42P01"),
    ("undefined_object", "42704"),
    ("duplicate_column", "42701"),
    ("duplicate_object", "42710"),
    ("duplicate_table", "42P07"),
    ("duplicate_schema", "42P06"),
    ("duplicate_prepared_statement", "42P05"),
    ("duplicate_function", "42723"),
    ("invalid_table_definition", "42P16"),
    ("wrong_object_type", "42809"),
    ("object_not_in_prerequisite_state", "55000"),
    ("lock_not_available", "55P03"),
    ("query_canceled", "57014"),
    ("program_limit_exceeded", "54000"),
    ("internal_error", "XX000"),
    ("plpgsql_error", "P0000"),
    ("raise_exception", "P0001"),
    ("no_data_found", "P0002"),
    ("too_many_rows", "P0003"),
    ("assert_failure", "P0004"),
];

struct Reader<'a> {
    text: &'a str,
    tokens: Vec<Located>,
    at: usize,
}

/// PL/pgSQL's statements pmdb does not run, by their first word.
const REFUSED: &[&str] = &[
    "LOOP",
    "WHILE",
    "FOR",
    "FOREACH",
    "EXIT",
    "CONTINUE",
    "CASE",
    "GET",
    "OPEN",
    "FETCH",
    "MOVE",
    "CLOSE",
    "CALL",
    "COMMIT",
    "ROLLBACK",
    "SAVEPOINT",
    "RELEASE",
    "START",
    "ABORT",
];

impl Reader<'_> {
    fn peek_token(&self) -> Option<&Token> {
        self.tokens.get(self.at).map(|t| &t.token)
    }

    /// The unquoted word at `at`, in capitals.
    fn word_at(&self, at: usize) -> Option<String> {
        match self.tokens.get(at).map(|t| &t.token) {
            Some(Token::Word(w)) if w.quote_style.is_none() => Some(w.value.to_ascii_uppercase()),
            _ => None,
        }
    }

    fn word(&self) -> Option<String> {
        self.word_at(self.at)
    }

    fn line(&self) -> u64 {
        self.tokens
            .get(self.at)
            .or(self.tokens.last())
            .map_or(1, |t| t.line)
    }

    fn syntax_at(&self, line: u64, what: &str) -> SqlError {
        SqlError::user(
            state::SYNTAX,
            format!("syntax error in the DO block at line {line}: {what}"),
        )
    }

    fn expect_word(&mut self, word: &str) -> Result<()> {
        if self.word().as_deref() != Some(word) {
            return Err(self.syntax_at(self.line(), &format!("{word} expected")));
        }
        self.at += 1;
        Ok(())
    }

    fn expect_semicolon(&mut self) -> Result<()> {
        if self.peek_token() != Some(&Token::SemiColon) {
            return Err(self.syntax_at(self.line(), "a semicolon expected"));
        }
        self.at += 1;
        Ok(())
    }

    fn refused(&self, what: &str) -> SqlError {
        SqlError::unsupported(format!(
            "{what} in a DO block (pmdb runs PL/pgSQL without variables: RAISE, PERFORM, \
             EXECUTE, IF, ASSERT, NULL, RETURN, nested blocks with exception handlers and \
             SQL statements)"
        ))
    }

    /// `[DECLARE] BEGIN … [EXCEPTION …] END [label]`, without a closing semicolon.
    fn block(&mut self) -> Result<Block> {
        match self.word().as_deref() {
            Some("DECLARE") => {
                // DECLARE with nothing declared is allowed; a declaration is a variable.
                self.at += 1;
                if self.word().as_deref() != Some("BEGIN") {
                    return Err(self.refused("DECLARE"));
                }
            }
            _ if self.peek_token() == Some(&Token::ShiftLeft) => {
                return Err(self.refused("a label"));
            }
            _ => {}
        }
        self.expect_word("BEGIN")?;
        let body = self.statements(&["END", "EXCEPTION"])?;
        let mut handlers = Vec::new();
        if self.word().as_deref() == Some("EXCEPTION") {
            self.at += 1;
            while self.word().as_deref() == Some("WHEN") {
                self.at += 1;
                let mut conditions = vec![self.condition()?];
                while self.word().as_deref() == Some("OR") {
                    self.at += 1;
                    conditions.push(self.condition()?);
                }
                self.expect_word("THEN")?;
                let body = self.statements(&["WHEN", "END"])?;
                handlers.push(Handler { conditions, body });
            }
            if handlers.is_empty() {
                return Err(self.syntax_at(self.line(), "WHEN expected after EXCEPTION"));
            }
        }
        self.expect_word("END")?;
        // END's optional label names a block's label, which pmdb refuses anyway.
        Ok(Block { body, handlers })
    }

    fn condition(&mut self) -> Result<Condition> {
        let word = self
            .word()
            .ok_or_else(|| self.syntax_at(self.line(), "a condition expected"))?;
        self.at += 1;
        match word.as_str() {
            "OTHERS" => Ok(Condition::Others),
            "SQLSTATE" => {
                let code = self.string()?;
                self.at += 1;
                sqlstate_of(&code).map(Condition::Code)
            }
            name => sqlstate_of(name).map(Condition::Code),
        }
    }

    /// The string literal at the reader, not consumed.
    fn string(&self) -> Result<String> {
        match self.peek_token() {
            Some(
                Token::SingleQuotedString(s)
                | Token::EscapedStringLiteral(s)
                | Token::NationalStringLiteral(s),
            ) => Ok(s.clone()),
            Some(Token::DollarQuotedString(s)) => Ok(s.value.clone()),
            _ => Err(self.syntax_at(self.line(), "a string literal expected")),
        }
    }

    /// Statements up to one of the words in `stop` (not consumed).
    fn statements(&mut self, stop: &[&str]) -> Result<Vec<Stmt>> {
        let mut out = Vec::new();
        loop {
            let Some(word) = self.word() else {
                match self.peek_token() {
                    None => return Err(self.syntax_at(self.line(), "END expected")),
                    Some(Token::ShiftLeft) => return Err(self.refused("a label")),
                    // A statement that starts with a parenthesis: SQL.
                    Some(_) => {
                        let line = self.line();
                        let text = self.until_semicolon()?;
                        out.push(Stmt {
                            line,
                            kind: sql(text)?,
                        });
                        continue;
                    }
                }
            };
            if stop.contains(&word.as_str()) {
                return Ok(out);
            }
            out.push(self.statement(&word)?);
        }
    }

    fn statement(&mut self, word: &str) -> Result<Stmt> {
        let line = self.line();
        let kind = match word {
            "DECLARE" | "BEGIN" => {
                let block = self.block()?;
                self.expect_semicolon()?;
                StmtKind::Block(block)
            }
            "RAISE" => {
                self.at += 1;
                StmtKind::Raise(self.raise()?)
            }
            "PERFORM" => {
                self.at += 1;
                StmtKind::Perform(self.until_semicolon()?)
            }
            "EXECUTE" => {
                self.at += 1;
                let text = self.until_semicolon()?;
                if has_word(&text, &["INTO", "USING"]) {
                    return Err(self.refused("EXECUTE … INTO or USING"));
                }
                StmtKind::Execute(text)
            }
            "NULL" => {
                self.at += 1;
                self.expect_semicolon()?;
                StmtKind::Null
            }
            "RETURN" => {
                self.at += 1;
                self.expect_semicolon()?;
                StmtKind::Return
            }
            "IF" => self.if_statement()?,
            "ASSERT" => {
                self.at += 1;
                let text = self.until_semicolon()?;
                let mut parts = split_commas(&text).into_iter();
                let condition = parts.next().unwrap_or_default();
                let message = parts.next();
                if parts.next().is_some() {
                    return Err(self.syntax_at(line, "ASSERT takes a condition and a message"));
                }
                StmtKind::Assert { condition, message }
            }
            w if REFUSED.contains(&w) => return Err(self.refused(w)),
            _ => {
                // An assignment (`x := …`, `x = …`) is a variable's.
                if matches!(
                    self.tokens.get(self.at + 1).map(|t| &t.token),
                    Some(Token::Assignment | Token::Eq | Token::Period)
                ) && !matches!(word, "SELECT" | "WITH" | "VALUES")
                {
                    return Err(self.refused("an assignment"));
                }
                sql(self.until_semicolon()?)?
            }
        };
        Ok(Stmt { line, kind })
    }

    /// `IF cond THEN … [ELSIF cond THEN …]… [ELSE …] END IF;`
    fn if_statement(&mut self) -> Result<StmtKind> {
        let mut branches = Vec::new();
        let mut otherwise = Vec::new();
        loop {
            // At IF or ELSIF (ELSEIF too, as PostgreSQL reads it).
            self.at += 1;
            let condition = self.until_word("THEN")?;
            let body = self.statements(&["ELSIF", "ELSEIF", "ELSE", "END"])?;
            branches.push((condition, body));
            match self.word().as_deref() {
                Some("ELSIF" | "ELSEIF") => continue,
                Some("ELSE") => {
                    self.at += 1;
                    otherwise = self.statements(&["END"])?;
                    break;
                }
                _ => break,
            }
        }
        self.expect_word("END")?;
        self.expect_word("IF")?;
        self.expect_semicolon()?;
        Ok(StmtKind::If {
            branches,
            otherwise,
        })
    }

    /// RAISE after its keyword, to its semicolon.
    fn raise(&mut self) -> Result<Raise> {
        let line = self.line();
        let named = match self.word().as_deref() {
            Some("DEBUG") => Some(Level::Notice(Severity::Debug)),
            Some("LOG") => Some(Level::Notice(Severity::Log)),
            Some("INFO") => Some(Level::Notice(Severity::Info)),
            Some("NOTICE") => Some(Level::Notice(Severity::Notice)),
            Some("WARNING") => Some(Level::Notice(Severity::Warning)),
            Some("EXCEPTION") => Some(Level::Exception),
            _ => None,
        };
        if named.is_some() {
            self.at += 1;
        }
        let level = named.unwrap_or(Level::Exception);
        let mut raise = Raise {
            level,
            format: None,
            condition: None,
            options: Vec::new(),
        };
        let text = self.until_semicolon()?;
        let (head, using) = split_using(&text);
        let head = head.trim();
        if !head.is_empty() {
            let tokens = located(head).unwrap_or_default();
            match tokens.first().map(|t| &t.token) {
                Some(
                    Token::SingleQuotedString(format)
                    | Token::EscapedStringLiteral(format)
                    | Token::NationalStringLiteral(format),
                ) => {
                    let format = format.clone();
                    let rest = tokens.get(1).map_or("", |t| &head[t.bytes.start..]);
                    let args = match rest.trim().strip_prefix(',') {
                        Some(args) => split_commas(args),
                        None if rest.trim().is_empty() => Vec::new(),
                        None => return Err(self.syntax_at(line, "a comma expected in RAISE")),
                    };
                    raise.format = Some((format, args));
                }
                Some(Token::DollarQuotedString(format)) if tokens.len() == 1 => {
                    raise.format = Some((format.value.clone(), Vec::new()));
                }
                Some(Token::Word(w)) if w.value.eq_ignore_ascii_case("SQLSTATE") => {
                    let Some(Token::SingleQuotedString(code)) = tokens.get(1).map(|t| &t.token)
                    else {
                        return Err(self.syntax_at(line, "SQLSTATE takes a string"));
                    };
                    raise.condition = Some((sqlstate_of(code)?, code.clone()));
                }
                Some(Token::Word(w)) if tokens.len() == 1 => {
                    raise.condition = Some((sqlstate_of(&w.value)?, w.value.to_lowercase()));
                }
                _ => return Err(self.syntax_at(line, "RAISE's format or condition")),
            }
        }
        if let Some(using) = using {
            for option in split_commas(&using) {
                let (name, value) = option
                    .split_once(":=")
                    .or_else(|| option.split_once('='))
                    .ok_or_else(|| self.syntax_at(line, "USING option = expression"))?;
                let option = match name.trim().to_ascii_uppercase().as_str() {
                    "MESSAGE" => RaiseOption::Message,
                    "DETAIL" => RaiseOption::Detail,
                    "HINT" => RaiseOption::Hint,
                    "ERRCODE" => RaiseOption::Errcode,
                    other @ ("COLUMN" | "CONSTRAINT" | "DATATYPE" | "TABLE" | "SCHEMA") => {
                        return Err(self.refused(&format!("RAISE … USING {other}")));
                    }
                    other => {
                        return Err(SqlError::user(
                            state::SYNTAX,
                            format!("unrecognized RAISE statement option \"{other}\""),
                        ));
                    }
                };
                if raise.options.iter().any(|(o, _)| *o == option)
                    || (option == RaiseOption::Message && raise.format.is_some())
                    || (option == RaiseOption::Errcode && raise.condition.is_some())
                {
                    return Err(SqlError::user(
                        state::SYNTAX,
                        format!(
                            "RAISE option already specified: {}",
                            name.trim().to_uppercase()
                        ),
                    ));
                }
                raise.options.push((option, value.trim().to_owned()));
            }
        }
        Ok(raise)
    }

    /// The text from the reader to the next semicolon outside parentheses, the
    /// semicolon consumed.
    fn until_semicolon(&mut self) -> Result<String> {
        self.until(|t| *t == Token::SemiColon, "a semicolon")
            .inspect(|_| self.at += 1)
    }

    /// The text from the reader to `word` outside parentheses and CASE, the word
    /// consumed.
    fn until_word(&mut self, word: &str) -> Result<String> {
        let mut cases = 0usize;
        let text = self.until(
            |t| {
                let is = |k: &str| matches!(t, Token::Word(w) if w.quote_style.is_none() && w.value.eq_ignore_ascii_case(k));
                if is("CASE") {
                    cases += 1;
                } else if is("END") && cases > 0 {
                    cases -= 1;
                    return false;
                }
                cases == 0 && is(word)
            },
            word,
        )?;
        self.at += 1;
        Ok(text)
    }

    /// The text from the reader up to the first token outside parentheses that
    /// `end` accepts, that token left at the reader.
    fn until(&mut self, mut end: impl FnMut(&Token) -> bool, what: &str) -> Result<String> {
        let start = self.at;
        let mut depth = 0usize;
        while let Some(t) = self.tokens.get(self.at) {
            match &t.token {
                Token::LParen | Token::LBracket => depth += 1,
                Token::RParen | Token::RBracket => depth = depth.saturating_sub(1),
                token if depth == 0 && end(token) => {
                    let from = self
                        .tokens
                        .get(start)
                        .map_or(t.bytes.start, |s| s.bytes.start);
                    return Ok(self.text[from..t.bytes.start].trim().to_owned());
                }
                _ => {}
            }
            self.at += 1;
        }
        Err(self.syntax_at(self.line(), &format!("{what} expected")))
    }
}

/// A SQL statement of a block: refused where PL/pgSQL would give it a variable.
fn sql(text: String) -> Result<StmtKind> {
    // INSERT INTO and MERGE INTO name a table; any other INTO a variable.
    let first = text.split_whitespace().next().unwrap_or_default();
    let tables = usize::from(
        ["INSERT", "MERGE"]
            .iter()
            .any(|k| first.eq_ignore_ascii_case(k)),
    );
    if count_word(&text, "INTO") > tables {
        return Err(SqlError::unsupported(
            "SELECT … INTO or RETURNING … INTO in a DO block (PL/pgSQL variables)",
        ));
    }
    Ok(StmtKind::Sql(text))
}

/// How many times `word` stands as a word (outside strings) in `text`.
fn count_word(text: &str, word: &str) -> usize {
    located(text).map_or(0, |tokens| {
        tokens
            .iter()
            .filter(|t| matches!(&t.token, Token::Word(w) if w.quote_style.is_none() && w.value.eq_ignore_ascii_case(word)))
            .count()
    })
}

fn has_word(text: &str, words: &[&str]) -> bool {
    words.iter().any(|w| count_word(text, w) > 0)
}

/// `text` split at its commas outside parentheses and strings.
fn split_commas(text: &str) -> Vec<String> {
    split_at(text, |t| *t == Token::Comma)
        .into_iter()
        .map(|(part, _)| part)
        .collect()
}

/// RAISE's text before USING, and the options after it.
fn split_using(text: &str) -> (String, Option<String>) {
    let using = |t: &Token| matches!(t, Token::Word(w) if w.quote_style.is_none() && w.value.eq_ignore_ascii_case("USING"));
    let mut parts = split_at(text, using).into_iter();
    let head = parts.next().map(|(p, _)| p).unwrap_or_default();
    let rest: Vec<String> = parts.map(|(p, _)| p).collect();
    (head, (!rest.is_empty()).then(|| rest.join(" USING ")))
}

/// `text` split at the tokens outside parentheses that `at` accepts, each part with
/// its byte offset.
fn split_at(text: &str, at: impl Fn(&Token) -> bool) -> Vec<(String, usize)> {
    let Some(tokens) = located(text) else {
        return vec![(text.trim().to_owned(), 0)];
    };
    let mut parts = Vec::new();
    let mut from = 0;
    let mut depth = 0usize;
    for t in &tokens {
        match &t.token {
            Token::LParen | Token::LBracket => depth += 1,
            Token::RParen | Token::RBracket => depth = depth.saturating_sub(1),
            token if depth == 0 && at(token) => {
                parts.push((text[from..t.bytes.start].trim().to_owned(), from));
                from = t.bytes.end;
            }
            _ => {}
        }
    }
    parts.push((text[from..].trim().to_owned(), from));
    parts
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_block_reads_into_its_statements_with_their_lines() {
        let block = parse(
            "\n BEGIN\n  RAISE NOTICE 'a % b', 1 + 1, 'x';\n  PERFORM pg_sleep(0);\n  \
             IF (SELECT count(*) FROM t) > 0 THEN INSERT INTO t VALUES (1); \
             ELSIF true THEN NULL; ELSE RETURN; END IF;\n\
             EXCEPTION WHEN unique_violation OR SQLSTATE '22012' THEN NULL;\n  \
             WHEN others THEN RAISE;\nEND;",
        )
        .unwrap();
        assert_eq!(block.body.len(), 3);
        assert_eq!(block.body[0].line, 3);
        let StmtKind::Raise(raise) = &block.body[0].kind else {
            panic!("{:?}", block.body[0]);
        };
        assert_eq!(raise.level, Level::Notice(Severity::Notice));
        assert_eq!(
            raise.format,
            Some(("a % b".into(), vec!["1 + 1".into(), "'x'".into()]))
        );
        assert_eq!(block.body[1].kind, StmtKind::Perform("pg_sleep(0)".into()));
        let StmtKind::If {
            branches,
            otherwise,
        } = &block.body[2].kind
        else {
            panic!("{:?}", block.body[2]);
        };
        assert_eq!(branches[0].0, "(SELECT count(*) FROM t) > 0");
        assert_eq!(
            branches[0].1[0].kind,
            StmtKind::Sql("INSERT INTO t VALUES (1)".into())
        );
        assert_eq!(otherwise[0].kind, StmtKind::Return);
        assert_eq!(block.handlers.len(), 2);
        assert!(block.handlers[0].conditions[0].catches("23505"));
        assert!(block.handlers[0].conditions[1].catches("22012"));
        assert!(block.handlers[1].conditions[0].catches("42P01"));
        assert!(!block.handlers[1].conditions[0].catches("57014"));
    }

    #[test]
    fn raise_takes_a_condition_or_options() {
        let raise = |body: &str| match parse(body).unwrap().body.remove(0).kind {
            StmtKind::Raise(r) => r,
            other => panic!("{other:?}"),
        };
        let r = raise("BEGIN RAISE 'x' USING ERRCODE = '42P05', HINT = 'h' || 'i'; END");
        assert_eq!(r.level, Level::Exception);
        assert_eq!(
            r.options,
            vec![
                (RaiseOption::Errcode, "'42P05'".into()),
                (RaiseOption::Hint, "'h' || 'i'".into())
            ]
        );
        let r = raise("BEGIN RAISE WARNING division_by_zero; END");
        assert_eq!(
            r.condition,
            Some(("22012".into(), "division_by_zero".into()))
        );
        let r = raise("BEGIN RAISE SQLSTATE 'P0002' USING MESSAGE = 'none'; END");
        assert_eq!(r.condition, Some(("P0002".into(), "P0002".into())));
        assert!(raise("BEGIN RAISE; END").again());
        assert_eq!(
            parse("BEGIN RAISE 'a' USING MESSAGE = 'b'; END")
                .unwrap_err()
                .sqlstate(),
            "42601"
        );
        assert_eq!(
            parse("BEGIN RAISE no_such_condition; END")
                .unwrap_err()
                .sqlstate(),
            "42704"
        );
    }

    #[test]
    fn what_needs_variables_or_more_of_the_language_is_refused() {
        for body in [
            "DECLARE x int; BEGIN NULL; END",
            "BEGIN x := 1; END",
            "BEGIN SELECT 1 INTO x; END",
            "BEGIN LOOP EXIT; END LOOP; END",
            "BEGIN FOR r IN SELECT 1 LOOP NULL; END LOOP; END",
            "BEGIN COMMIT; END",
            "<<outer>> BEGIN NULL; END",
            "BEGIN EXECUTE 'SELECT 1' INTO x; END",
        ] {
            assert_eq!(parse(body).unwrap_err().sqlstate(), "0A000", "{body}");
        }
        // INSERT … INTO is SQL, not a variable's.
        assert!(parse("BEGIN INSERT INTO t VALUES (1); END").is_ok());
        assert_eq!(
            parse("BEGIN NULL; END extra").unwrap_err().sqlstate(),
            "42601"
        );
        assert_eq!(parse("BEGIN NULL;").unwrap_err().sqlstate(), "42601");
    }
}
