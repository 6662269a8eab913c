//! EXPLAIN in PostgreSQL's option-list form, `EXPLAIN (ANALYZE, VERBOSE, FORMAT JSON) …`.
//! Text output is DataFusion's physical plan, as `EXPLAIN [ANALYZE] [VERBOSE]` shows it
//! (the list's text form becomes that keyword form). JSON output is PostgreSQL's
//! document, built from the optimized logical plan: node types, relations, aliases,
//! filters, join conditions, sort and group keys, and with VERBOSE each node's output.
//! pmdb has no cost model, so no costs or row estimates are shown; ANALYZE runs the
//! statement as it would run anyway and gives the plan's top node the whole run's time
//! and rows (the per-node figures are in the text form's metrics). The options are read
//! by [`crate::explain_options`].

use std::time::{Duration, Instant};

use datafusion::arrow::array::{RecordBatch, StringArray};
use datafusion::arrow::datatypes::Schema;
use datafusion::common::JoinType;
use datafusion::logical_expr::{Expr, LogicalPlan, WriteOp};
use datafusion::sql::parser::Statement as DfStatement;
use datafusion::sql::sqlparser::ast::Statement;
use std::sync::Arc;

use crate::arrow_conv::arrow_field;
use crate::error::{Result, SqlError};
use crate::explain_options::JsonExplain;
use crate::output::Output;
use crate::read_point::ReadPoint;
use crate::session::Session;
use crate::statement_kind::StatementKind;
use crate::types::SqlType;

/// The single column PostgreSQL's EXPLAIN gives in JSON.
pub(crate) fn json_schema() -> Arc<Schema> {
    Arc::new(Schema::new(vec![arrow_field("QUERY PLAN", SqlType::Json)]))
}

/// Runs a JSON EXPLAIN at `read_point`: plans its statement (and with ANALYZE runs it,
/// as it would run on its own) and answers with PostgreSQL's document.
pub(crate) async fn run(
    session: &Session,
    read_point: ReadPoint,
    explain: JsonExplain,
) -> Result<Output> {
    let started = Instant::now();
    let mut inner = explain.inner.clone();
    crate::statement::rewrite(session, &mut inner)?;
    crate::view_expansion::expand(&session.catalog, session.viewer, &mut inner)?;
    let state = session.statement_state(read_point.clone());
    let planned =
        crate::select_names::plan_unnamed(&state, DfStatement::Statement(Box::new(inner.clone())))
            .await
            .and_then(|p| state.optimize(&p).map_err(crate::error::df_error));
    let mut top = match planned {
        Ok(plan) => node(&plan, explain.verbose),
        // pmdb runs what DataFusion does not plan (an upsert, RETURNING, UPDATE … FROM).
        Err(e) => statement_node(&inner).ok_or(e)?,
    };
    let planning = started.elapsed();
    let mut document = vec![];
    if explain.analyze {
        let kind = StatementKind::of(&DfStatement::Statement(Box::new(explain.inner.clone())));
        let ran = Instant::now();
        let out = Box::pin(crate::statement::run(
            session,
            read_point,
            kind,
            DfStatement::Statement(Box::new(explain.inner)),
        ))
        .await?;
        let took = ran.elapsed();
        let rows = match &out {
            Output::Rows { batches, .. } | Output::Returned { batches, .. } => {
                batches.iter().map(RecordBatch::num_rows).sum::<usize>() as u64
            }
            _ => 0,
        };
        if explain.timing {
            top.fields.push(("Actual Total Time", Json::Millis(took)));
        }
        top.fields.push(("Actual Rows", Json::Int(rows)));
        top.fields.push(("Actual Loops", Json::Int(1)));
        document.push(("Plan", Json::Node(top)));
        if explain.summary {
            document.push(("Planning Time", Json::Millis(planning)));
        }
        document.push(("Triggers", Json::List(Vec::new())));
        if explain.summary {
            document.push(("Execution Time", Json::Millis(took)));
        }
    } else {
        document.push(("Plan", Json::Node(top)));
        if explain.summary {
            document.push(("Planning Time", Json::Millis(planning)));
        }
    }
    let mut text = String::from("[\n");
    write_object(&document, 1, &mut text);
    text.push_str("\n]");
    let schema = json_schema();
    let batch = RecordBatch::try_new(
        Arc::clone(&schema),
        vec![Arc::new(StringArray::from(vec![text]))],
    )
    .map_err(|e| SqlError::Query(e.to_string()))?;
    Ok(Output::Rows {
        schema,
        batches: vec![batch],
    })
}

/// A value of PostgreSQL's EXPLAIN document.
enum Json {
    Text(String),
    Int(u64),
    Millis(Duration),
    List(Vec<String>),
    Node(Node),
    Nodes(Vec<Node>),
}

/// One plan node: its fields in PostgreSQL's order, its inputs under "Plans".
struct Node {
    fields: Vec<(&'static str, Json)>,
    /// The conditions of its "Filter".
    conditions: Vec<String>,
}

impl Node {
    fn new(node_type: &str) -> Node {
        Node {
            fields: vec![("Node Type", Json::Text(node_type.to_owned()))],
            conditions: Vec::new(),
        }
    }

    fn set(&mut self, key: &'static str, value: Json) {
        match self.fields.iter_mut().find(|(k, _)| *k == key) {
            Some((_, v)) => *v = value,
            None => self.fields.push((key, value)),
        }
    }

    fn text(&mut self, key: &'static str, value: impl Into<String>) {
        self.set(key, Json::Text(value.into()));
    }

    /// Adds `condition` to the node's filter, ANDed with those it has (a condition
    /// both pushed into a scan and kept above it is shown once).
    fn filter(&mut self, condition: String) {
        if !self.conditions.contains(&condition) {
            self.conditions.push(condition);
            let joined = self.conditions.join(" AND ");
            self.text("Filter", joined);
        }
    }

    fn with_inputs(mut self, inputs: Vec<Node>) -> Node {
        if !inputs.is_empty() {
            self.fields.push(("Plans", Json::Nodes(inputs)));
        }
        self
    }

    fn is_scan(&self) -> bool {
        matches!(self.fields.first(), Some((_, Json::Text(t))) if t == "Seq Scan")
    }
}

/// `e` as SQL, as PostgreSQL shows an expression.
fn sql(e: &Expr) -> String {
    match datafusion::sql::unparser::expr_to_sql(e) {
        Ok(sql) => sql.to_string(),
        Err(_) => e.human_display().to_string(),
    }
}

/// `e` in parentheses, as PostgreSQL shows a condition.
fn shown(e: &Expr) -> String {
    let text = sql(e);
    if wrapped(&text) {
        text
    } else {
        format!("({text})")
    }
}

/// Whether `text` is one parenthesized whole (quotes aside, which a condition's
/// literals rarely hold parentheses in: at worst it gets a second pair).
fn wrapped(text: &str) -> bool {
    let mut depth = 0usize;
    for (i, c) in text.char_indices() {
        match c {
            '(' => depth += 1,
            ')' => {
                depth = depth.saturating_sub(1);
                if depth == 0 && i + 1 < text.len() {
                    return false;
                }
            }
            _ if depth == 0 => return false,
            _ => {}
        }
    }
    text.starts_with('(')
}

fn list(exprs: &[Expr]) -> Json {
    Json::List(exprs.iter().map(sql).collect())
}

/// The node PostgreSQL would show for `plan`; projections and filters fold into the
/// node below them, as PostgreSQL's nodes carry their output and filter.
fn node(plan: &LogicalPlan, verbose: bool) -> Node {
    let inputs = |verbose| {
        plan.inputs()
            .into_iter()
            .map(|p| node(p, verbose))
            .collect::<Vec<_>>()
    };
    let mut n = match plan {
        LogicalPlan::Projection(p) => {
            let mut n = node(&p.input, verbose);
            if verbose {
                n.set("Output", list(&p.expr));
            }
            return n;
        }
        LogicalPlan::Filter(f) => {
            let mut n = node(&f.input, verbose);
            n.filter(shown(&f.predicate));
            return n;
        }
        LogicalPlan::SubqueryAlias(a) => {
            let mut n = node(&a.input, verbose);
            if n.is_scan() {
                n.text("Alias", a.alias.table());
                return n;
            }
            let mut s = Node::new("Subquery Scan");
            s.text("Alias", a.alias.table());
            s.with_inputs(vec![n])
        }
        LogicalPlan::Subquery(s) => return node(&s.subquery, verbose),
        LogicalPlan::Repartition(r) => return node(&r.input, verbose),
        LogicalPlan::TableScan(t) => {
            let mut n = Node::new("Seq Scan");
            n.text("Relation Name", t.table_name.table());
            if verbose {
                n.text("Schema", t.table_name.schema().unwrap_or("public"));
            }
            n.text("Alias", t.table_name.table());
            for f in &t.filters {
                n.filter(shown(f));
            }
            n
        }
        LogicalPlan::Join(j) => {
            let mut n = Node::new(if j.on.is_empty() {
                "Nested Loop"
            } else {
                "Hash Join"
            });
            n.text("Join Type", join_type(j.join_type));
            if !j.on.is_empty() {
                let on: Vec<String> =
                    j.on.iter()
                        .map(|(l, r)| format!("({} = {})", sql(l), sql(r)))
                        .collect();
                n.text("Hash Cond", on.join(" AND "));
            }
            if let Some(f) = &j.filter {
                n.text("Join Filter", shown(f));
            }
            let mut sides = inputs(verbose);
            for (side, relationship) in sides.iter_mut().zip(["Outer", "Inner"]) {
                side.fields
                    .insert(1, ("Parent Relationship", Json::Text(relationship.into())));
            }
            n.with_inputs(sides)
        }
        LogicalPlan::Aggregate(a) => {
            let mut n = Node::new("Aggregate");
            n.text(
                "Strategy",
                if a.group_expr.is_empty() {
                    "Plain"
                } else {
                    "Hashed"
                },
            );
            if !a.group_expr.is_empty() {
                n.set("Group Key", list(&a.group_expr));
            }
            n.with_inputs(inputs(verbose))
        }
        LogicalPlan::Distinct(_) => {
            let mut n = Node::new("Aggregate");
            n.text("Strategy", "Hashed");
            n.with_inputs(inputs(verbose))
        }
        LogicalPlan::Sort(s) => {
            let mut n = Node::new("Sort");
            let keys = s
                .expr
                .iter()
                .map(|k| {
                    let e = sql(&k.expr);
                    match (k.asc, k.nulls_first) {
                        (true, false) => e,
                        (true, true) => format!("{e} NULLS FIRST"),
                        (false, true) => format!("{e} DESC"),
                        (false, false) => format!("{e} DESC NULLS LAST"),
                    }
                })
                .collect();
            n.set("Sort Key", Json::List(keys));
            let n = n.with_inputs(inputs(verbose));
            match s.fetch {
                Some(_) => Node::new("Limit").with_inputs(vec![n]),
                None => n,
            }
        }
        LogicalPlan::Limit(_) => Node::new("Limit").with_inputs(inputs(verbose)),
        LogicalPlan::Union(_) => Node::new("Append").with_inputs(inputs(verbose)),
        LogicalPlan::Window(_) => Node::new("WindowAgg").with_inputs(inputs(verbose)),
        LogicalPlan::Values(_) => {
            let mut n = Node::new("Values Scan");
            n.text("Alias", "*VALUES*");
            n
        }
        LogicalPlan::Unnest(_) => Node::new("ProjectSet").with_inputs(inputs(verbose)),
        LogicalPlan::RecursiveQuery(_) => Node::new("Recursive Union").with_inputs(inputs(verbose)),
        LogicalPlan::Dml(d) => {
            let mut n = Node::new("ModifyTable");
            n.text(
                "Operation",
                match &d.op {
                    WriteOp::Insert(_) | WriteOp::Ctas => "Insert",
                    other => other.name(),
                },
            );
            n.text("Relation Name", d.table_name.table());
            n.text("Alias", d.table_name.table());
            n.with_inputs(inputs(verbose))
        }
        LogicalPlan::Extension(e) => Node::new(e.node.name()).with_inputs(inputs(verbose)),
        _ => Node::new("Result").with_inputs(inputs(verbose)),
    };
    if verbose && !n.fields.iter().any(|(k, _)| *k == "Output") {
        let columns = plan
            .schema()
            .columns()
            .iter()
            .map(|c| c.flat_name())
            .collect();
        n.set("Output", Json::List(columns));
    }
    n
}

fn join_type(t: JoinType) -> &'static str {
    match t {
        JoinType::Inner => "Inner",
        JoinType::Left => "Left",
        JoinType::Right => "Right",
        JoinType::Full => "Full",
        JoinType::LeftSemi | JoinType::RightSemi | JoinType::LeftMark | JoinType::RightMark => {
            "Semi"
        }
        JoinType::LeftAnti | JoinType::RightAnti => "Anti",
    }
}

/// The node of a statement pmdb runs without a DataFusion plan: the table it changes.
fn statement_node(s: &Statement) -> Option<Node> {
    let operation = match s {
        Statement::Insert(_) => "Insert",
        Statement::Update(_) => "Update",
        Statement::Delete(_) => "Delete",
        _ => return None,
    };
    let table = crate::view_expansion::changed_relation(s).ok()??;
    let mut n = Node::new("ModifyTable");
    n.text("Operation", operation);
    n.text("Relation Name", table.name.clone());
    n.text("Alias", table.name);
    Some(n)
}

fn indent(level: usize, out: &mut String) {
    out.extend(std::iter::repeat_n("  ", level));
}

/// Writes `fields` as a JSON object at `level`, as PostgreSQL lays its document out.
fn write_object(fields: &[(&'static str, Json)], level: usize, out: &mut String) {
    indent(level, out);
    out.push_str("{\n");
    for (i, (key, value)) in fields.iter().enumerate() {
        indent(level + 1, out);
        crate::json::quote(key, out);
        out.push_str(": ");
        write_value(value, level + 1, out);
        if i + 1 < fields.len() {
            out.push(',');
        }
        out.push('\n');
    }
    indent(level, out);
    out.push('}');
}

fn write_value(value: &Json, level: usize, out: &mut String) {
    match value {
        Json::Text(s) => crate::json::quote(s, out),
        Json::Int(n) => out.push_str(&n.to_string()),
        Json::Millis(d) => out.push_str(&format!("{:.3}", d.as_secs_f64() * 1000.0)),
        Json::List(items) => {
            out.push_str("[\n");
            for (i, item) in items.iter().enumerate() {
                indent(level + 1, out);
                crate::json::quote(item, out);
                if i + 1 < items.len() {
                    out.push(',');
                }
                out.push('\n');
            }
            indent(level, out);
            out.push(']');
        }
        Json::Node(n) => {
            let mut nested = String::new();
            write_object(&n.fields, level, &mut nested);
            out.push_str(nested.trim_start());
        }
        Json::Nodes(nodes) => {
            out.push_str("[\n");
            for (i, n) in nodes.iter().enumerate() {
                write_object(&n.fields, level + 1, out);
                if i + 1 < nodes.len() {
                    out.push(',');
                }
                out.push('\n');
            }
            indent(level, out);
            out.push(']');
        }
    }
}
