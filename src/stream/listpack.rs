//! PLACEHOLDER: the listpack node encoding is being written. Only `Value` is final.

/// One element read out of a node: a byte string, or an integer stored compactly
/// (Redis's listpack stores integer-looking strings as integers; on the wire both are
/// bulk strings, the integer printed in decimal).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Value<'a> {
    /// A byte string.
    Str(&'a [u8]),
    /// An integer that was given as its canonical decimal text.
    Int(i64),
}

impl Value<'_> {
    /// The value as bytes (integers formatted in decimal).
    pub fn to_vec(&self) -> Vec<u8> {
        match self {
            Value::Str(s) => s.to_vec(),
            Value::Int(i) => itoa::Buffer::new().format(*i).as_bytes().to_vec(),
        }
    }
}
