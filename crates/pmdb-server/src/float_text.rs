//! REAL and DOUBLE PRECISION on the wire: in text as PostgreSQL writes them
//! ([`pmdb_sql::text_forms::double_text`]), where Rust's own forms (`8.0`, `1e20`)
//! differ; in binary their IEEE bits.

use bytes::{BufMut, BytesMut};
use pgwire::api::Type;
use pgwire::types::ToSqlText;
use pmdb_sql::text_forms::{double_text, real_text};
use postgres_types::{IsNull, ToSql};

type BoxError = Box<dyn std::error::Error + Sync + Send>;

/// A DOUBLE PRECISION value on the wire.
#[derive(Debug, Clone, Copy)]
pub struct Float8(pub f64);

/// A REAL value on the wire.
#[derive(Debug, Clone, Copy)]
pub struct Float4(pub f32);

macro_rules! on_the_wire {
    ($wrapper:ty, $ty:expr) => {
        impl ToSqlText for $wrapper {
            fn to_sql_text(
                &self,
                _ty: &Type,
                out: &mut BytesMut,
                _options: &pgwire::types::format::FormatOptions,
            ) -> Result<IsNull, BoxError> {
                out.put_slice(self.text().as_bytes());
                Ok(IsNull::No)
            }
        }

        impl ToSql for $wrapper {
            fn to_sql(&self, ty: &Type, out: &mut BytesMut) -> Result<IsNull, BoxError> {
                self.0.to_sql(ty, out)
            }

            fn accepts(ty: &Type) -> bool {
                *ty == $ty
            }

            postgres_types::to_sql_checked!();
        }
    };
}

impl Float8 {
    fn text(self) -> String {
        double_text(self.0)
    }
}

impl Float4 {
    fn text(self) -> String {
        real_text(self.0)
    }
}

on_the_wire!(Float8, Type::FLOAT8);
on_the_wire!(Float4, Type::FLOAT4);
