//! Result sets and table descriptions as psql's aligned format prints them: a centred
//! header, numbers right-aligned, text left-aligned, and a row count.

use std::sync::Arc;

use datafusion::arrow::array::{Array, ArrayRef, RecordBatch, RecordBatchOptions, StringArray};
use datafusion::arrow::datatypes::{DataType, Field, IntervalUnit, Schema, SchemaRef};
use datafusion::arrow::error::ArrowError;
use datafusion::arrow::util::display::FormatOptions;
use pmdb_bench::tpch::verify::rows_with;
use pmdb_sql::catalog::Catalog;

/// The aligned table of a result set, with its "(N rows)" line.
pub fn render(schema: &SchemaRef, batches: &[RecordBatch]) -> Result<String, ArrowError> {
    let options = FormatOptions::default()
        .with_null("")
        .with_timestamp_format(Some("%Y-%m-%d %H:%M:%S%.f"));
    let padded: Vec<RecordBatch> = batches
        .iter()
        .map(|b| intervals_as_text(&pmdb_sql::padded_chars(b)))
        .collect::<Result<_, _>>()?;
    let rows = rows_with(&padded, &options)?;
    let header: Vec<String> = schema.fields().iter().map(|f| f.name().clone()).collect();
    let right: Vec<bool> = schema
        .fields()
        .iter()
        .map(|f| f.data_type().is_numeric())
        .collect();
    Ok(aligned(&header, &rows, &right))
}

/// `batch` with its interval columns as PostgreSQL writes intervals (Arrow's own text
/// is another).
fn intervals_as_text(batch: &RecordBatch) -> Result<RecordBatch, ArrowError> {
    let columns: Vec<ArrayRef> = batch
        .columns()
        .iter()
        .map(|c| match c.data_type() {
            DataType::Interval(IntervalUnit::MonthDayNano) => Arc::new(
                (0..c.len())
                    .map(|i| {
                        c.is_valid(i)
                            .then(|| pmdb_sql::interval_at(c, i).to_string())
                    })
                    .collect::<StringArray>(),
            ) as ArrayRef,
            _ => Arc::clone(c),
        })
        .collect();
    let fields: Vec<Field> = batch
        .schema()
        .fields()
        .iter()
        .zip(&columns)
        .map(|(f, c)| f.as_ref().clone().with_data_type(c.data_type().clone()))
        .collect();
    // A select list of no column still has its rows.
    let rows = RecordBatchOptions::new().with_row_count(Some(batch.num_rows()));
    RecordBatch::try_new_with_options(Arc::new(Schema::new(fields)), columns, &rows)
}

fn width(s: &str) -> usize {
    s.chars().count()
}

/// `header` and `rows` aligned in columns; `right[i]` right-aligns column i.
fn aligned(header: &[String], rows: &[Vec<String>], right: &[bool]) -> String {
    let mut widths: Vec<usize> = header.iter().map(|h| width(h)).collect();
    for r in rows {
        for (w, c) in widths.iter_mut().zip(r) {
            *w = (*w).max(width(c));
        }
    }
    let mut out = String::new();
    if header.is_empty() {
        // Rows of no column: psql shows a rule and how many there are.
        out.push_str("--\n");
    } else {
        out.push_str(&header_and_rows(header, rows, right, &widths));
    }
    out.push_str(&match rows.len() {
        1 => "(1 row)\n\n".to_string(),
        n => format!("({n} rows)\n\n"),
    });
    out
}

fn header_and_rows(
    header: &[String],
    rows: &[Vec<String>],
    right: &[bool],
    widths: &[usize],
) -> String {
    let mut out = String::new();
    let cells: Vec<String> = header
        .iter()
        .zip(widths)
        .map(|(h, &w)| {
            let pad = w - width(h);
            format!(" {}{h}{} ", " ".repeat(pad / 2), " ".repeat(pad - pad / 2))
        })
        .collect();
    out.push_str(cells.join("|").trim_end());
    out.push('\n');
    let rule: Vec<String> = widths.iter().map(|&w| "-".repeat(w + 2)).collect();
    out.push_str(&rule.join("+"));
    out.push('\n');
    for r in rows {
        let cells: Vec<String> = r
            .iter()
            .zip(widths)
            .zip(right)
            .map(|((c, &w), &right)| {
                let pad = " ".repeat(w - width(c));
                if right {
                    format!(" {pad}{c} ")
                } else {
                    format!(" {c}{pad} ")
                }
            })
            .collect();
        out.push_str(cells.join("|").trim_end());
        out.push('\n');
    }
    out
}

/// `\d`: every table with its row count.
pub fn list_tables(catalog: &Catalog) -> String {
    let rows: Vec<Vec<String>> = catalog
        .tables()
        .iter()
        .map(|t| {
            vec![
                t.def().schema.clone(),
                t.def().name.clone(),
                "table".into(),
                t.row_count().to_string(),
            ]
        })
        .collect();
    if rows.is_empty() {
        return "Did not find any relations.\n".into();
    }
    let header = ["Schema", "Name", "Type", "Rows"].map(String::from);
    format!(
        "List of relations\n{}",
        aligned(&header, &rows, &[false, false, false, true])
    )
}

/// `\d NAME`: the columns of table `name` (`schema.name` outside `public`), its primary
/// key and indexes; `None` if there is no such table.
pub fn describe_table(catalog: &Catalog, name: &str) -> Option<String> {
    let table = catalog.table(&pmdb_sql::names::relation_named(name).ok()?)?;
    let def = table.def();
    let rows: Vec<Vec<String>> = def
        .columns
        .iter()
        .map(|c| {
            vec![
                c.name.clone(),
                c.ty.to_string().to_lowercase(),
                if c.not_null {
                    "not null".into()
                } else {
                    String::new()
                },
            ]
        })
        .collect();
    let header = ["Column", "Type", "Nullable"].map(String::from);
    let mut out = format!("Table \"{}.{}\"\n", def.schema, def.name);
    let table_text = aligned(&header, &rows, &[false, false, false]);
    // The row count line is for result sets, not descriptions.
    out.push_str(table_text.rsplit_once("(").map_or(&table_text, |(t, _)| t));
    let names = |cols: &[u16]| {
        cols.iter()
            .map(|&c| def.columns[c as usize].name.as_str())
            .collect::<Vec<_>>()
            .join(", ")
    };
    if !def.primary_key.is_empty() || !def.indexes.is_empty() {
        out.push_str("Indexes:\n");
    }
    if !def.primary_key.is_empty() {
        out.push_str(&format!(
            "    \"{}\" PRIMARY KEY ({})\n",
            def.primary_key_constraint(),
            names(&def.primary_key)
        ));
    }
    for ix in &def.indexes {
        out.push_str(&format!("    \"{}\" ({})\n", ix.name, names(&ix.columns)));
    }
    out.push('\n');
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tables_align_like_psql() {
        let header = ["id", "owner"].map(String::from);
        let rows = vec![
            vec!["1".to_string(), "ada".to_string()],
            vec!["10".to_string(), "grace".to_string()],
        ];
        assert_eq!(
            aligned(&header, &rows, &[true, false]),
            " id | owner\n----+-------\n  1 | ada\n 10 | grace\n(2 rows)\n\n"
        );
        assert_eq!(
            aligned(&["n".to_string()], &[], &[true]),
            " n\n---\n(0 rows)\n\n"
        );
        assert_eq!(aligned(&[], &[vec![], vec![]], &[]), "--\n(2 rows)\n\n");
    }
}
