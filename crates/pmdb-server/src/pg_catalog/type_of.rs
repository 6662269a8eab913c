//! `pg_typeof(x)`: the name of the PostgreSQL type of its argument, as a client would
//! be told of it (`integer`, `numeric`, `character varying`, an enum type's name). The
//! type is the argument's, not its value's, so it is read from the argument's field.

use std::sync::Arc;

use datafusion::arrow::datatypes::DataType;
use datafusion::common::{Result as DfResult, ScalarValue};
use datafusion::logical_expr::{
    ColumnarValue, ScalarFunctionArgs, ScalarUDFImpl, Signature, Volatility,
};
use pmdb_sql::catalog::Viewer;

use super::oids;
use super::source::Origin;

pub struct TypeOf {
    signature: Signature,
    origin: Arc<Origin>,
}

impl TypeOf {
    pub fn new(origin: &Arc<Origin>) -> TypeOf {
        TypeOf {
            signature: Signature::any(1, Volatility::Stable),
            origin: Arc::clone(origin),
        }
    }
}

impl std::fmt::Debug for TypeOf {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("pg_catalog.pg_typeof")
    }
}

impl PartialEq for TypeOf {
    fn eq(&self, _: &TypeOf) -> bool {
        true
    }
}

impl Eq for TypeOf {}

impl std::hash::Hash for TypeOf {
    fn hash<H: std::hash::Hasher>(&self, state: &mut H) {
        "pg_typeof".hash(state);
    }
}

impl ScalarUDFImpl for TypeOf {
    fn name(&self) -> &str {
        "pg_typeof"
    }

    fn signature(&self) -> &Signature {
        &self.signature
    }

    fn return_type(&self, _args: &[DataType]) -> DfResult<DataType> {
        Ok(DataType::Utf8)
    }

    fn invoke_with_args(&self, args: ScalarFunctionArgs) -> DfResult<ColumnarValue> {
        let ty = args
            .arg_fields
            .first()
            .map(|f| crate::encode::pg_type_of(f));
        let name = ty.and_then(|ty| {
            let oid = i64::from(ty.oid());
            oids::format_type(oid, None).or_else(|| {
                let viewer = args.config_options.extensions.get::<Viewer>().copied();
                oids::user_type_name(self.origin.read(viewer).catalog(), oid)
            })
        });
        Ok(ColumnarValue::Scalar(ScalarValue::Utf8(name)))
    }
}
