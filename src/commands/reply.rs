//! Replies shaped by the stream data model: stream IDs and listpack values as bulk
//! strings.
//!
//! The wire layer (`resp/`) knows bytes, integers and aggregates only; what a stream
//! ID or a stored value looks like on the wire is decided here, beside the commands
//! that own the data. Each new data type adds its own shapes the same way.

use crate::resp::writer::RespWriter;
use crate::stream::StreamId;
use crate::stream::listpack::Value;

/// Reply shapes of the stream types, as methods on the writer.
pub trait StreamReply {
    /// A stream ID as a bulk string (`ms-seq`).
    fn bulk_id(&mut self, id: StreamId);
    /// A listpack value (string or integer) as a bulk string.
    fn bulk_value(&mut self, v: &Value<'_>);
}

impl StreamReply for RespWriter {
    #[inline]
    fn bulk_id(&mut self, id: StreamId) {
        let (buf, n) = id.format();
        self.bulk(&buf[..n]);
    }

    #[inline]
    fn bulk_value(&mut self, v: &Value<'_>) {
        match v {
            Value::Str(s) => self.bulk(s),
            Value::Int(i) => self.bulk_int(*i),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::resp::writer::Protocol;

    #[test]
    fn ids_and_values_are_bulk_strings() {
        let mut a = RespWriter::new(Protocol::Resp3);
        a.bulk_id(StreamId::new(5, 1));
        a.bulk_value(&Value::Int(-12));
        a.bulk_value(&Value::Str(b"x"));
        assert_eq!(a.buf, b"$3\r\n5-1\r\n$3\r\n-12\r\n$1\r\nx\r\n");
    }
}
