//! `CREATE SEQUENCE` with its options in any order, as PostgreSQL takes them: the SQL
//! parser takes `INCREMENT`, `MINVALUE`, `MAXVALUE`, `START`, `CACHE` and `CYCLE` only in
//! that order, where pg_dump writes `AS type START WITH … INCREMENT BY … NO MINVALUE NO
//! MAXVALUE CACHE 1` for every sequence. [`parse`] reads the options in the order given
//! into the same statement the parser makes; the DDL checks each as it always does.

use datafusion::sql::sqlparser::ast::{ObjectName, SequenceOptions, Statement};
use datafusion::sql::sqlparser::dialect::PostgreSqlDialect;
use datafusion::sql::sqlparser::keywords::Keyword;
use datafusion::sql::sqlparser::parser::{Parser, ParserError};
use datafusion::sql::sqlparser::tokenizer::Token;

/// `sql` as one CREATE SEQUENCE statement, if it is one; `None` for anything else (or a
/// CREATE SEQUENCE that is not well formed in any order, which the parser's own error
/// reports).
pub(crate) fn parse(sql: &str) -> Option<Vec<Statement>> {
    let dialect = PostgreSqlDialect {};
    let mut p = Parser::new(&dialect).try_with_sql(sql).ok()?;
    if !p.parse_keyword(Keyword::CREATE) {
        return None;
    }
    let temporary = p
        .parse_one_of_keywords(&[Keyword::TEMP, Keyword::TEMPORARY])
        .is_some();
    if !p.parse_keyword(Keyword::SEQUENCE) {
        return None;
    }
    let statement = create_sequence(&mut p, temporary).ok()?;
    let _ = p.consume_token(&Token::SemiColon);
    (p.peek_token().token == Token::EOF).then(|| vec![statement])
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
        } else if p.parse_keyword(Keyword::INCREMENT) {
            once("INCREMENT")?;
            let by = p.parse_keyword(Keyword::BY);
            options.push(SequenceOptions::IncrementBy(p.parse_number()?, by));
        } else if p.parse_keyword(Keyword::MINVALUE) {
            once("MINVALUE")?;
            options.push(SequenceOptions::MinValue(Some(p.parse_number()?)));
        } else if p.parse_keywords(&[Keyword::NO, Keyword::MINVALUE]) {
            once("MINVALUE")?;
            options.push(SequenceOptions::MinValue(None));
        } else if p.parse_keyword(Keyword::MAXVALUE) {
            once("MAXVALUE")?;
            options.push(SequenceOptions::MaxValue(Some(p.parse_number()?)));
        } else if p.parse_keywords(&[Keyword::NO, Keyword::MAXVALUE]) {
            once("MAXVALUE")?;
            options.push(SequenceOptions::MaxValue(None));
        } else if p.parse_keyword(Keyword::START) {
            once("START")?;
            let with = p.parse_keyword(Keyword::WITH);
            options.push(SequenceOptions::StartWith(p.parse_number()?, with));
        } else if p.parse_keyword(Keyword::CACHE) {
            once("CACHE")?;
            options.push(SequenceOptions::Cache(p.parse_number()?));
        } else if p.parse_keywords(&[Keyword::NO, Keyword::CYCLE]) {
            once("CYCLE")?;
            // As the parser marks it: `true` for NO CYCLE.
            options.push(SequenceOptions::Cycle(true));
        } else if p.parse_keyword(Keyword::CYCLE) {
            once("CYCLE")?;
            options.push(SequenceOptions::Cycle(false));
        } else if p.parse_keywords(&[Keyword::OWNED, Keyword::BY]) {
            once("OWNED BY")?;
            owned_by = Some(p.parse_object_name(false)?);
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

#[cfg(test)]
mod tests {
    use super::*;

    fn parsed(sql: &str) -> Statement {
        let mut all = parse(sql).unwrap_or_else(|| panic!("{sql}: not read"));
        assert_eq!(all.len(), 1);
        all.remove(0)
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
    fn other_statements_and_repeats_are_left_to_the_parser() {
        assert!(parse("CREATE TABLE s (x INT)").is_none());
        assert!(parse("CREATE SEQUENCE s START 1 START 2").is_none());
        assert!(parse("CREATE SEQUENCE s START 1 garbage").is_none());
    }
}
