//! Checking one engine's answer against another's: rows as text, numbers equal within
//! a cent (decimal averages differ in their last digits between engines), in the
//! query's order, or as a multiset when only rows with equal sort keys differ in order.

use datafusion::arrow::array::RecordBatch;
use datafusion::arrow::error::ArrowError;
use datafusion::arrow::util::display::{ArrayFormatter, FormatOptions};

/// The rows of `batches`, each a list of cells as text (NULL as an empty cell).
pub fn rows_of(batches: &[RecordBatch]) -> Result<Vec<Vec<String>>, ArrowError> {
    rows_with(batches, &FormatOptions::default().with_null(""))
}

/// The rows of `batches` as text, each cell formatted with `options`.
pub fn rows_with(
    batches: &[RecordBatch],
    options: &FormatOptions<'_>,
) -> Result<Vec<Vec<String>>, ArrowError> {
    let mut rows = Vec::new();
    for b in batches {
        let formatters = b
            .columns()
            .iter()
            .map(|c| ArrayFormatter::try_new(c.as_ref(), options))
            .collect::<Result<Vec<_>, _>>()?;
        for r in 0..b.num_rows() {
            rows.push(formatters.iter().map(|f| f.value(r).to_string()).collect());
        }
    }
    Ok(rows)
}

fn same_cell(a: &str, b: &str) -> bool {
    if a == b {
        return true;
    }
    match (a.trim().parse::<f64>(), b.trim().parse::<f64>()) {
        (Ok(x), Ok(y)) => (x - y).abs() <= 0.005 + 1e-9 * x.abs().max(y.abs()),
        _ => a.trim_end() == b.trim_end(),
    }
}

fn same_row(a: &[String], b: &[String]) -> bool {
    a.len() == b.len() && a.iter().zip(b).all(|(x, y)| same_cell(x, y))
}

/// `Ok` when `got` holds the rows of `expected`; else what differs first.
pub fn compare(got: &[Vec<String>], expected: &[Vec<String>]) -> Result<(), String> {
    if got.len() != expected.len() {
        return Err(format!(
            "{} rows where {} were expected",
            got.len(),
            expected.len()
        ));
    }
    if got.iter().zip(expected).all(|(a, b)| same_row(a, b)) {
        return Ok(());
    }
    let mut g: Vec<&Vec<String>> = got.iter().collect();
    let mut e: Vec<&Vec<String>> = expected.iter().collect();
    g.sort();
    e.sort();
    match g.iter().zip(&e).position(|(a, b)| !same_row(a, b)) {
        None => Ok(()),
        Some(i) => Err(format!("row {:?} where {:?} was expected", g[i], e[i])),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rows(r: &[&[&str]]) -> Vec<Vec<String>> {
        r.iter()
            .map(|r| r.iter().map(|c| c.to_string()).collect())
            .collect()
    }

    #[test]
    fn numbers_match_within_a_cent_and_order_ties_are_forgiven() {
        let a = rows(&[&["x", "1.50"], &["y", "2.333333"]]);
        assert!(compare(&a, &rows(&[&["x", "1.5"], &["y", "2.3333333333"]])).is_ok());
        assert!(compare(&a, &rows(&[&["y", "2.333333"], &["x", "1.50"]])).is_ok());
        assert!(compare(&a, &rows(&[&["x", "1.52"], &["y", "2.333333"]])).is_err());
        assert!(compare(&a, &rows(&[&["x", "1.50"]])).is_err());
        assert!(compare(&a, &rows(&[&["x", "1.50"], &["z", "2.333333"]])).is_err());
    }
}
