//! The keys a table read as it is takes: its type's field names, as serde's derive lists them
//! for its reader (a field skipped when read is not one). What `[data]`'s reader tells one
//! kind's keys from another's by, and what the builder's tests hold the setters to.

use std::cell::Cell;

use serde::de::{self, DeserializeOwned, Visitor};

/// A deserializer that only records the field names of the struct asked of it.
struct Fields(Cell<&'static [&'static str]>);

impl<'de> de::Deserializer<'de> for &Fields {
    type Error = de::value::Error;

    fn deserialize_any<V: Visitor<'de>>(self, _: V) -> Result<V::Value, Self::Error> {
        Err(de::Error::custom("only a struct's fields are read"))
    }

    fn deserialize_struct<V: Visitor<'de>>(
        self,
        _: &'static str,
        fields: &'static [&'static str],
        visitor: V,
    ) -> Result<V::Value, Self::Error> {
        self.0.set(fields);
        self.deserialize_any(visitor)
    }

    serde::forward_to_deserialize_any! {
        bool i8 i16 i32 i64 i128 u8 u16 u32 u64 u128 f32 f64 char str string bytes byte_buf
        option unit unit_struct newtype_struct seq tuple tuple_struct map enum identifier
        ignored_any
    }
}

/// The keys of the table `T` reads: its fields' names (none where `T` is not a struct).
pub(crate) fn fields<T: DeserializeOwned>() -> &'static [&'static str] {
    let fields = Fields(Cell::new(&[]));
    let _ = T::deserialize(&fields);
    fields.0.get()
}
