//! A value cast to a domain: `x::d`, `CAST(x AS d)` and `d 'x'` become
//! `pmdb_domain_in(CAST(x AS <base type>), <domain id>)` before DataFusion plans the
//! statement (it knows no domains). The call checks each value against the domain's
//! rules ([`crate::domain_rules`]) and gives it unchanged, in a field marked with the
//! domain, by which a parameter read as the domain is described with its oid.

use std::sync::Arc;

use datafusion::arrow::datatypes::{DataType, FieldRef};
use datafusion::common::Result as DfResult;
use datafusion::logical_expr::{
    ColumnarValue, ReturnFieldArgs, ScalarFunctionArgs, ScalarUDF, ScalarUDFImpl, Signature,
    Volatility,
};
use datafusion::prelude::SessionContext;
use datafusion::sql::sqlparser::ast::{
    ArrayElemTypeDef, DataType as SqlDataType, Expr as SqlExpr, Ident, ObjectName, Statement,
    Value as Literal,
};
use datafusion::sql::sqlparser::dialect::PostgreSqlDialect;
use datafusion::sql::sqlparser::parser::Parser;

use crate::arrow_conv::with_domain;
use crate::catalog::Catalog;
use crate::domain_rules::Domain;
use crate::error::{Result, SqlError, external};
use crate::types::SqlType;
use crate::udf_identity::{Held, constant_id};

pub(crate) const DOMAIN_IN: &str = "pmdb_domain_in";

/// The domain `ty` names, if it names one of the catalog's.
fn domain_of(catalog: &Catalog, ty: &SqlDataType) -> Option<Arc<Domain>> {
    match ty {
        SqlDataType::Custom(name, modifiers) if modifiers.is_empty() => {
            crate::type_ddl::named_domain(catalog, name)
        }
        _ => None,
    }
}

/// The type a cast to `ty` is written as: pmdb's name of it, which reads back as `ty`
/// ([`crate::ddl::sql_type`]), or an enum type's qualified name.
fn written(catalog: &Catalog, ty: SqlType) -> Result<SqlDataType> {
    if let SqlType::Enum(id) = ty {
        let def = catalog.enum_by_id(id).ok_or_else(|| {
            SqlError::Query(format!("the enum type #{id} a domain is over is gone"))
        })?;
        let name = ObjectName::from(vec![
            Ident::new(def.schema.clone()),
            Ident::new(def.name.clone()),
        ]);
        return Ok(SqlDataType::Custom(name, Vec::new()));
    }
    Parser::new(&PostgreSqlDialect {})
        .try_with_sql(&ty.to_string())
        .and_then(|mut p| p.parse_data_type())
        .map_err(|e| SqlError::Query(format!("type {ty} does not read back: {e}")))
}

/// Rewrites the casts to domains in `statement` as calls of `pmdb_domain_in`; a cast to
/// an array of a domain is refused (0A000).
pub(crate) fn rewrite_casts(catalog: &Catalog, statement: &mut Statement) -> Result<()> {
    if catalog.domain_types().is_empty() {
        return Ok(());
    }
    crate::ast_build::replace_with_calls(statement, |e| {
        let (domain, operand) = match e {
            SqlExpr::Cast {
                data_type: SqlDataType::Array(ArrayElemTypeDef::SquareBracket(element, _)),
                ..
            } => {
                return domain_of(catalog, element).map(|d| {
                    Err(SqlError::unsupported(format!(
                        "arrays of domain {} (pmdb casts to a domain one value at a time)",
                        d.def.name
                    )))
                });
            }
            SqlExpr::Cast {
                data_type, expr, ..
            } => (domain_of(catalog, data_type)?, crate::ast_build::take(expr)),
            SqlExpr::TypedString(typed) => (
                domain_of(catalog, &typed.data_type)?,
                SqlExpr::Value(typed.value.clone()),
            ),
            _ => return None,
        };
        Some(written(catalog, domain.def.base).and_then(|base| {
            let cast = SqlExpr::Cast {
                kind: datafusion::sql::sqlparser::ast::CastKind::DoubleColon,
                expr: Box::new(operand),
                data_type: base,
                array: false,
                format: None,
            };
            let id = SqlExpr::value(Literal::Number(domain.def.id.to_string(), false));
            crate::ast_build::call_with(DOMAIN_IN, vec![cast, id])
        }))
    })
}

pub(crate) fn register(ctx: &SessionContext, catalog: &Arc<Catalog>) {
    ctx.register_udf(ScalarUDF::new_from_impl(DomainIn {
        catalog: Held(Arc::clone(catalog)),
        signature: Signature::any(2, Volatility::Immutable),
    }));
}

/// `pmdb_domain_in(value, domain id)`: the value, checked against the domain's rules.
#[derive(Debug, PartialEq, Eq, Hash)]
struct DomainIn {
    catalog: Held<Catalog>,
    signature: Signature,
}

impl ScalarUDFImpl for DomainIn {
    fn name(&self) -> &str {
        DOMAIN_IN
    }

    fn signature(&self) -> &Signature {
        &self.signature
    }

    fn return_type(&self, args: &[DataType]) -> DfResult<DataType> {
        args.first()
            .cloned()
            .ok_or_else(|| external(SqlError::Query(format!("{DOMAIN_IN} takes two arguments"))))
    }

    fn return_field_from_args(&self, args: ReturnFieldArgs) -> DfResult<FieldRef> {
        let id = constant_id(
            DOMAIN_IN,
            "domain",
            args.scalar_arguments.get(1).copied().flatten(),
        )?;
        let value = args
            .arg_fields
            .first()
            .ok_or_else(|| external(SqlError::Query(format!("{DOMAIN_IN} takes two arguments"))))?;
        Ok(Arc::new(with_domain(value, id).with_name(DOMAIN_IN)))
    }

    fn invoke_with_args(&self, args: ScalarFunctionArgs) -> DfResult<ColumnarValue> {
        let [value, id] = args.args.as_slice() else {
            return Err(external(SqlError::Query(format!(
                "{DOMAIN_IN} takes two arguments"
            ))));
        };
        let id = match id {
            ColumnarValue::Scalar(s) => constant_id(DOMAIN_IN, "domain", Some(s))?,
            ColumnarValue::Array(_) => constant_id(DOMAIN_IN, "domain", None)?,
        };
        let domain = self.catalog.domain_by_id(id).ok_or_else(|| {
            external(SqlError::user(
                crate::error::state::UNDEFINED_OBJECT,
                format!("domain #{id} no longer exists"),
            ))
        })?;
        domain
            .rules
            .check(&value.to_array(args.number_rows)?)
            .map_err(external)?;
        Ok(value.clone())
    }
}
