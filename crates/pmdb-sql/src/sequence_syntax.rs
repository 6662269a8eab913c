//! Sequence statements the SQL parser does not read as PostgreSQL writes them.
//!
//! - `CREATE SEQUENCE` with its options in any order: the parser takes `INCREMENT`,
//!   `MINVALUE`, `MAXVALUE`, `START`, `CACHE` and `CYCLE` only in that order, where
//!   pg_dump writes `AS type START WITH … INCREMENT BY … NO MINVALUE NO MAXVALUE CACHE 1`
//!   for every sequence. [`parse`] reads the options in the order given into the same
//!   statement the parser makes; the DDL checks each as it always does.
//! - `ALTER SEQUENCE [IF EXISTS] s …`, which the parser knows nothing of (pg_dump writes
//!   `OWNED BY t.c` for every serial column). `OWNER TO role` is read as `ALTER TABLE s
//!   OWNER TO role`, which PostgreSQL takes for a sequence too. `OWNED BY t.c | NONE` is
//!   read into a statement the parser knows and pmdb otherwise never makes, Snowflake's
//!   `ALTER EXTERNAL TABLE s SWAP WITH t.c`, which [`alter_of`] recognises; any other
//!   clause into the same statement with no operation, refused when it runs (0A000).

use datafusion::sql::sqlparser::ast::helpers::attached_token::AttachedToken;
use datafusion::sql::sqlparser::ast::{
    AlterTable, AlterTableOperation, AlterTableType, ObjectName, Owner, SequenceOptions, Statement,
};
use datafusion::sql::sqlparser::dialect::PostgreSqlDialect;
use datafusion::sql::sqlparser::keywords::Keyword;
use datafusion::sql::sqlparser::parser::{Parser, ParserError};
use datafusion::sql::sqlparser::tokenizer::Token;

/// `sql` as one CREATE SEQUENCE or ALTER SEQUENCE statement, if it is one; `None` for
/// anything else (or one that is not well formed, which the parser's own error reports).
pub(crate) fn parse(sql: &str) -> Option<Vec<Statement>> {
    let dialect = PostgreSqlDialect {};
    let mut p = Parser::new(&dialect).try_with_sql(sql).ok()?;
    let statement = if p.parse_keyword(Keyword::CREATE) {
        let temporary = p
            .parse_one_of_keywords(&[Keyword::TEMP, Keyword::TEMPORARY])
            .is_some();
        if !p.parse_keyword(Keyword::SEQUENCE) {
            return None;
        }
        create_sequence(&mut p, temporary).ok()?
    } else if p.parse_keywords(&[Keyword::ALTER, Keyword::SEQUENCE]) {
        alter_sequence(&mut p).ok()?
    } else {
        return None;
    };
    let _ = p.consume_token(&Token::SemiColon);
    (p.peek_token().token == Token::EOF).then(|| vec![statement])
}

/// What an ALTER SEQUENCE read by [`parse`] asks for.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum AlterSequence {
    /// `OWNED BY t.c` (`Some`) or `OWNED BY NONE`.
    OwnedBy(Option<ObjectName>),
    /// A clause pmdb does not take (RESTART, INCREMENT, RENAME, …).
    Other,
}

/// The ALTER SEQUENCE `alter` stands for, if [`parse`] made it.
pub(crate) fn alter_of(alter: &AlterTable) -> Option<AlterSequence> {
    if alter.table_type != Some(AlterTableType::External) {
        return None;
    }
    Some(match alter.operations.as_slice() {
        [AlterTableOperation::SwapWith { table_name }] => {
            let none = matches!(table_name.0.as_slice(), [p]
                if p.as_ident().is_some_and(|i| i.quote_style.is_none()
                    && i.value.eq_ignore_ascii_case("none")));
            AlterSequence::OwnedBy((!none).then(|| table_name.clone()))
        }
        _ => AlterSequence::Other,
    })
}

/// The rest of an ALTER SEQUENCE after its keywords.
fn alter_sequence(p: &mut Parser) -> Result<Statement, ParserError> {
    let if_exists = p.parse_keywords(&[Keyword::IF, Keyword::EXISTS]);
    let name = p.parse_object_name(false)?;
    let (table_type, operations) = if p.parse_keywords(&[Keyword::OWNER, Keyword::TO]) {
        let role = p.parse_identifier()?;
        (
            None,
            vec![AlterTableOperation::OwnerTo {
                new_owner: Owner::Ident(role),
            }],
        )
    } else if p.parse_keywords(&[Keyword::OWNED, Keyword::BY]) {
        let table_name = p.parse_object_name(false)?;
        (
            Some(AlterTableType::External),
            vec![AlterTableOperation::SwapWith { table_name }],
        )
    } else {
        // Any other clause: read to the end, refused when it runs.
        while !matches!(p.peek_token().token, Token::EOF | Token::SemiColon) {
            p.next_token();
        }
        (Some(AlterTableType::External), Vec::new())
    };
    Ok(Statement::AlterTable(AlterTable {
        name,
        if_exists,
        only: false,
        operations,
        location: None,
        on_cluster: None,
        table_type,
        end_token: AttachedToken::empty(),
    }))
}

/// The rest of a CREATE SEQUENCE after its keywords: a name, then `AS type`, the
/// options and `OWNED BY`, each at most once, in any order.
fn create_sequence(p: &mut Parser, temporary: bool) -> Result<Statement, ParserError> {
    let if_not_exists = p.parse_keywords(&[Keyword::IF, Keyword::NOT, Keyword::EXISTS]);
    let name = p.parse_object_name(false)?;
    let mut data_type = None;
    let mut owned_by: Option<ObjectName> = None;
    let mut options: Vec<SequenceOptions> = Vec::new();
    let mut seen: Vec<&'static str> = Vec::new();
    let mut once = |what: &'static str| {
        if seen.contains(&what) {
            return Err(ParserError::ParserError(format!(
                "conflicting or redundant options: {what}"
            )));
        }
        seen.push(what);
        Ok(())
    };
    loop {
        if p.parse_keyword(Keyword::AS) {
            once("AS")?;
            data_type = Some(p.parse_data_type()?);
        } else if p.parse_keywords(&[Keyword::OWNED, Keyword::BY]) {
            once("OWNED BY")?;
            owned_by = Some(p.parse_object_name(false)?);
        } else if let Some((what, option)) = sequence_option(p)? {
            once(what)?;
            options.push(option);
        } else {
            break;
        }
    }
    Ok(Statement::CreateSequence {
        temporary,
        if_not_exists,
        name,
        data_type,
        sequence_options: options,
        owned_by,
    })
}

/// One option of a sequence (INCREMENT, MINVALUE, MAXVALUE, START, CACHE, CYCLE, each
/// with its NO form), named for the check that none is given twice; `None` if the next
/// tokens are no such option.
fn sequence_option(p: &mut Parser) -> Result<Option<(&'static str, SequenceOptions)>, ParserError> {
    Ok(Some(if p.parse_keyword(Keyword::INCREMENT) {
        let by = p.parse_keyword(Keyword::BY);
        (
            "INCREMENT",
            SequenceOptions::IncrementBy(p.parse_number()?, by),
        )
    } else if p.parse_keyword(Keyword::MINVALUE) {
        (
            "MINVALUE",
            SequenceOptions::MinValue(Some(p.parse_number()?)),
        )
    } else if p.parse_keywords(&[Keyword::NO, Keyword::MINVALUE]) {
        ("MINVALUE", SequenceOptions::MinValue(None))
    } else if p.parse_keyword(Keyword::MAXVALUE) {
        (
            "MAXVALUE",
            SequenceOptions::MaxValue(Some(p.parse_number()?)),
        )
    } else if p.parse_keywords(&[Keyword::NO, Keyword::MAXVALUE]) {
        ("MAXVALUE", SequenceOptions::MaxValue(None))
    } else if p.parse_keyword(Keyword::START) {
        let with = p.parse_keyword(Keyword::WITH);
        ("START", SequenceOptions::StartWith(p.parse_number()?, with))
    } else if p.parse_keyword(Keyword::CACHE) {
        ("CACHE", SequenceOptions::Cache(p.parse_number()?))
    } else if p.parse_keywords(&[Keyword::NO, Keyword::CYCLE]) {
        // As the parser marks it: `true` for NO CYCLE.
        ("CYCLE", SequenceOptions::Cycle(true))
    } else if p.parse_keyword(Keyword::CYCLE) {
        ("CYCLE", SequenceOptions::Cycle(false))
    } else {
        return Ok(None);
    }))
}

/// Where an option stands in the order the parser reads a sequence's options in.
fn parser_order(option: &SequenceOptions) -> u8 {
    match option {
        SequenceOptions::IncrementBy(..) => 0,
        SequenceOptions::MinValue(_) => 1,
        SequenceOptions::MaxValue(_) => 2,
        SequenceOptions::StartWith(..) => 3,
        SequenceOptions::Cache(_) => 4,
        SequenceOptions::Cycle(_) => 5,
    }
}

/// The statements of `sql` with each identity column's sequence options
/// (`GENERATED … AS IDENTITY (START WITH 42 NO MINVALUE)`, as SQLAlchemy and pg_dump
/// write them) in the order the parser reads them; `None` if `sql` has no such list,
/// or still does not parse.
pub(crate) fn identity_options_in_order(sql: &str) -> Option<Vec<Statement>> {
    let tokens = crate::tokens::located(sql)?;
    let mut text = String::with_capacity(sql.len());
    let mut copied = 0;
    for (i, t) in tokens.iter().enumerate() {
        let opens = matches!(&t.token, Token::Word(w) if w.keyword == Keyword::IDENTITY)
            && tokens.get(i + 1).is_some_and(|n| n.token == Token::LParen);
        if !opens {
            continue;
        }
        let Some(close) = tokens[i + 2..]
            .iter()
            .position(|t| t.token == Token::RParen)
        else {
            continue;
        };
        let (from, to) = (tokens[i + 1].bytes.end, tokens[i + 2 + close].bytes.start);
        let dialect = PostgreSqlDialect {};
        let mut p = Parser::new(&dialect).try_with_sql(&sql[from..to]).ok()?;
        let mut options = Vec::new();
        while let Some((_, option)) = sequence_option(&mut p).ok()? {
            options.push(option);
        }
        if p.peek_token().token != Token::EOF {
            return None;
        }
        options.sort_by_key(parser_order);
        text.push_str(&sql[copied..from]);
        for o in &options {
            text.push_str(&o.to_string());
        }
        text.push(' ');
        copied = to;
    }
    if copied == 0 {
        return None;
    }
    text.push_str(&sql[copied..]);
    Parser::parse_sql(&PostgreSqlDialect {}, &text).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parsed(sql: &str) -> Statement {
        let mut all = parse(sql).unwrap_or_else(|| panic!("{sql}: not read"));
        assert_eq!(all.len(), 1);
        all.remove(0)
    }

    #[test]
    fn identity_options_in_any_order_read_as_in_the_parsers_order() {
        let given = identity_options_in_order(
            "CREATE TABLE t (id INT GENERATED ALWAYS AS IDENTITY \
             (START WITH 42 NO MINVALUE NO MAXVALUE CACHE 4 INCREMENT BY 3 CYCLE), v INT)",
        )
        .unwrap();
        let ordered = Parser::parse_sql(
            &PostgreSqlDialect {},
            "CREATE TABLE t (id INT GENERATED ALWAYS AS IDENTITY \
             (INCREMENT BY 3 NO MINVALUE NO MAXVALUE START WITH 42 CACHE 4 CYCLE), v INT)",
        )
        .unwrap();
        assert_eq!(given, ordered);
        assert!(identity_options_in_order("CREATE TABLE t (id INT)").is_none());
        assert!(
            identity_options_in_order(
                "CREATE TABLE t (id INT GENERATED ALWAYS AS IDENTITY (COLOUR 3))"
            )
            .is_none()
        );
    }

    #[test]
    fn options_in_any_order_read_as_in_the_parsers_order() {
        let pg_dump = parsed(
            "CREATE SEQUENCE public.s AS integer START WITH 5 INCREMENT BY -2 \
             NO MINVALUE MAXVALUE 100 CACHE 1 NO CYCLE OWNED BY public.t.id;",
        );
        let ordered = Parser::parse_sql(
            &PostgreSqlDialect {},
            "CREATE SEQUENCE public.s AS integer INCREMENT BY -2 NO MINVALUE MAXVALUE 100 \
             START WITH 5 CACHE 1 NO CYCLE OWNED BY public.t.id",
        )
        .unwrap()
        .remove(0);
        let options = |s: &Statement| match s {
            Statement::CreateSequence {
                sequence_options, ..
            } => {
                let mut o: Vec<String> = sequence_options.iter().map(|o| o.to_string()).collect();
                o.sort();
                o
            }
            _ => panic!("not CREATE SEQUENCE"),
        };
        assert_eq!(options(&pg_dump), options(&ordered));
        assert_eq!(pg_dump.to_string().len(), ordered.to_string().len());
    }

    #[test]
    fn alter_sequence_reads_as_the_statement_of_its_meaning() {
        let alter = |sql: &str| match parsed(sql) {
            Statement::AlterTable(a) => a,
            other => panic!("{other}"),
        };
        let owned = alter("ALTER SEQUENCE public.t_id_seq OWNED BY public.t.id;");
        assert_eq!(owned.name.to_string(), "public.t_id_seq");
        assert_eq!(
            alter_of(&owned),
            Some(AlterSequence::OwnedBy(Some(ObjectName::from(vec![
                datafusion::sql::sqlparser::ast::Ident::new("public"),
                datafusion::sql::sqlparser::ast::Ident::new("t"),
                datafusion::sql::sqlparser::ast::Ident::new("id"),
            ]))))
        );
        let none = alter("ALTER SEQUENCE IF EXISTS s OWNED BY NONE");
        assert!(none.if_exists);
        assert_eq!(alter_of(&none), Some(AlterSequence::OwnedBy(None)));
        let owner = alter("ALTER SEQUENCE s OWNER TO pmdb");
        assert_eq!(alter_of(&owner), None);
        assert!(matches!(
            owner.operations.as_slice(),
            [AlterTableOperation::OwnerTo { .. }]
        ));
        let restart = alter("ALTER SEQUENCE s RESTART WITH 5");
        assert_eq!(alter_of(&restart), Some(AlterSequence::Other));
    }

    #[test]
    fn other_statements_and_repeats_are_left_to_the_parser() {
        assert!(parse("CREATE TABLE s (x INT)").is_none());
        assert!(parse("CREATE SEQUENCE s START 1 START 2").is_none());
        assert!(parse("CREATE SEQUENCE s START 1 garbage").is_none());
    }
}
