//! The cluster bus message format of Redis 7.0 (cluster.h `clusterMsg`), with typed
//! encode and decode.
//!
//! Nodes talk over a separate TCP port (the client port + 10000 unless `cluster-port` says
//! otherwise). Every message is one frame: a fixed 2256-byte header followed by a body that
//! depends on the type. All integers are big-endian (Redis converts with `htons`, `htonl`
//! and `htonu64`), except the MODULE message's module id, which Redis copies as it is.
//!
//! # Header (`clusterMsg` up to `data`; its size is `CLUSTERMSG_MIN_LEN`)
//!
//! ```text
//!  offset  size  field         meaning
//!       0     4  sig           "RCmb" (Redis Cluster message bus)
//!       4     4  totlen        u32: length of the whole frame, header included
//!       8     2  ver           u16: protocol version, 1 (CLUSTER_PROTO_VER)
//!      10     2  port          u16: sender's client port
//!      12     2  type          u16: message type, see MessageType
//!      14     2  count         u16: number of gossip entries (PING/PONG/MEET), else 0
//!      16     8  currentEpoch  u64: sender's current epoch
//!      24     8  configEpoch   u64: sender's config epoch, or its primary's for a replica
//!      32     8  offset        u64: replication offset (primary: master_repl_offset)
//!      40    40  sender        sender's node name (40 hex characters, no NUL)
//!      80  2048  myslots       slot bitmap of the sender, or of its primary for a replica
//!    2128    40  slaveof       primary's name; 40 NUL bytes when the sender is a primary
//!    2168    46  myip          announced IP, NUL-terminated; all NUL = "use the peer address"
//!    2214     2  extensions    u16: number of ping extensions after the gossip entries
//!    2216    30  notused1      reserved, zero
//!    2246     2  pport         u16: plaintext client port when `port` is the TLS one, else 0
//!    2248     2  cport         u16: sender's cluster bus port
//!    2250     2  flags         u16: sender's node flags (CLUSTER_NODE_*)
//!    2252     1  state         0 = cluster ok, 1 = fail, from the sender's point of view
//!    2253     3  mflags        mflags[0]: 1 PAUSED, 2 FORCEACK, 4 EXT_DATA; [1], [2] unused
//!    2256        data          the body
//! ```
//!
//! # Bodies
//!
//! ```text
//! PING, PONG, MEET   count x gossip entry, then `extensions` x extension (if EXT_DATA)
//!
//!   gossip entry (clusterMsgDataGossip, 104 bytes)
//!       0    40  nodename      the node gossiped about
//!      40     4  ping_sent     u32: seconds (ms / 1000) of the pending PING to it, 0 if none
//!      44     4  pong_received u32: seconds of the last PONG from it
//!      48    46  ip            its IP, NUL-terminated
//!      94     2  port          u16: client port
//!      96     2  cport         u16: cluster bus port
//!      98     2  flags         u16: its flags as the sender sees them
//!     100     2  pport         u16: plaintext client port (TLS clusters)
//!     102     2  notused1      zero
//!
//!   extension (clusterMsgPingExt)
//!       0     4  length        u32: whole extension, this 8-byte header included; a
//!                              multiple of 8
//!       4     2  type          u16: 0 = HOSTNAME (the only type 7.0 defines)
//!       6     2  unused        zero
//!       8        data          HOSTNAME: the name, a NUL, zero padding to a multiple of 8
//!
//! FAIL (40 bytes)              0  40  nodename of the node now in FAIL state
//!
//! PUBLISH, PUBLISHSHARD        0   4  channel_len   u32
//!                              4   4  message_len   u32
//!                              8      channel bytes, then message bytes (no padding)
//!
//! UPDATE (2096 bytes)          0   8  configEpoch   u64: of the node below
//!                              8  40  nodename      the slots' owner
//!                             48 2048 slots         its slot bitmap
//!
//! MODULE                       0   8  module_id     the sending module's id, not converted
//!                              8   4  len           u32: payload length
//!                             12   1  type          module-defined message type
//!                             13      payload
//!
//! FAILOVER_AUTH_REQUEST, FAILOVER_AUTH_ACK, MFSTART: no body, everything is in the header.
//! ```
//!
//! The receiver checks a frame as cluster.c does (`clusterReadHandler` for the first 8
//! bytes, `clusterProcessPacket` for the rest): signature, `totlen >= 2256`, version 1, and
//! `totlen` exactly equal to the length the type implies. Redis silently drops a frame that
//! fails the later checks; [`Message::decode`] says which check failed.

use bytes::Bytes;

use super::nodes_conf::NodeFlags;
use super::slots::{SLOT_BITMAP_BYTES, SlotBitmap};

/// The four bytes every frame starts with.
pub const SIGNATURE: [u8; 4] = *b"RCmb";
/// The only protocol version (cluster.h `CLUSTER_PROTO_VER`).
pub const CLUSTER_PROTO_VER: u16 = 1;
/// Size of the header, the smallest frame (cluster.h `CLUSTERMSG_MIN_LEN`).
pub const HEADER_LEN: usize = 2256;
/// Length of a node name (cluster.h `CLUSTER_NAMELEN`).
pub const NAME_LEN: usize = 40;
/// Size of an IP field (`NET_IP_STR_LEN`: an IPv6 address in text and its NUL).
pub const IP_LEN: usize = 46;
/// Size of one gossip entry (`sizeof(clusterMsgDataGossip)`).
pub const GOSSIP_LEN: usize = 104;
/// Size of a ping extension's own header (`sizeof(clusterMsgPingExt)`).
pub const EXT_HEADER_LEN: usize = 8;
/// Size of the FAIL body.
pub const FAIL_BODY_LEN: usize = NAME_LEN;
/// Size of the UPDATE body.
pub const UPDATE_BODY_LEN: usize = 8 + NAME_LEN + SLOT_BITMAP_BYTES;
/// Size of the PUBLISH body before the channel and message bytes.
pub const PUBLISH_FIXED_LEN: usize = 8;
/// Size of the MODULE body before the payload.
pub const MODULE_FIXED_LEN: usize = 13;

/// `mflags[0]`: the primary is paused for a manual failover (`CLUSTERMSG_FLAG0_PAUSED`).
pub const MFLAG0_PAUSED: u8 = 1;
/// `mflags[0]`: vote even though the primary is up (`CLUSTERMSG_FLAG0_FORCEACK`).
pub const MFLAG0_FORCEACK: u8 = 2;
/// `mflags[0]`: ping extensions follow the gossip entries (`CLUSTERMSG_FLAG0_EXT_DATA`).
pub const MFLAG0_EXT_DATA: u8 = 4;

/// The HOSTNAME ping extension type (`CLUSTERMSG_EXT_TYPE_HOSTNAME`).
pub const EXT_TYPE_HOSTNAME: u16 = 0;

/// Header `state` value: the sender sees the cluster as ok (cluster.h `CLUSTER_OK`).
pub const STATE_OK: u8 = 0;
/// Header `state` value: the sender sees the cluster as failed (`CLUSTER_FAIL`).
pub const STATE_FAIL: u8 = 1;

/// Offsets of the header fields, as in the table of the module doc.
mod offset {
    pub const TOTLEN: usize = 4;
    pub const VER: usize = 8;
}

/// A message type (cluster.h `CLUSTERMSG_TYPE_*`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum MessageType {
    /// 0: heartbeat with gossip.
    Ping,
    /// 1: reply to PING or MEET, same shape.
    Pong,
    /// 2: a PING that makes the receiver add the sender to its nodes.
    Meet,
    /// 3: a node is in FAIL state.
    Fail,
    /// 4: PUBLISH propagated to the whole cluster.
    Publish,
    /// 5: a replica asks primaries for their vote.
    FailoverAuthRequest,
    /// 6: a primary's vote.
    FailoverAuthAck,
    /// 7: another node's slots configuration.
    Update,
    /// 8: a replica asks its primary to pause for a manual failover.
    MfStart,
    /// 9: module cluster API message.
    Module,
    /// 10: SPUBLISH propagated to the nodes of the slot's shard.
    PublishShard,
}

impl MessageType {
    /// The wire value.
    pub fn code(self) -> u16 {
        match self {
            Self::Ping => 0,
            Self::Pong => 1,
            Self::Meet => 2,
            Self::Fail => 3,
            Self::Publish => 4,
            Self::FailoverAuthRequest => 5,
            Self::FailoverAuthAck => 6,
            Self::Update => 7,
            Self::MfStart => 8,
            Self::Module => 9,
            Self::PublishShard => 10,
        }
    }

    /// The type for a wire value, `None` for values 7.0 does not define.
    pub fn from_code(code: u16) -> Option<Self> {
        Some(match code {
            0 => Self::Ping,
            1 => Self::Pong,
            2 => Self::Meet,
            3 => Self::Fail,
            4 => Self::Publish,
            5 => Self::FailoverAuthRequest,
            6 => Self::FailoverAuthAck,
            7 => Self::Update,
            8 => Self::MfStart,
            9 => Self::Module,
            10 => Self::PublishShard,
            _ => return None,
        })
    }
}

/// A 40-byte node name as it travels on the bus. Redis names are 40 lowercase hex
/// characters, but the bus does not check that, so neither does decoding.
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
pub struct NodeName(pub [u8; NAME_LEN]);

impl NodeName {
    /// The name for a 40-character id; `None` for any other length.
    pub fn from_id(id: &str) -> Option<Self> {
        id.as_bytes().try_into().ok().map(Self)
    }

    /// The name as text (lossy for non-UTF-8 names, which Redis never sends).
    pub fn to_id(&self) -> String {
        String::from_utf8_lossy(&self.0).into_owned()
    }
}

impl std::fmt::Debug for NodeName {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "NodeName({})", self.to_id())
    }
}

/// A 46-byte IP field: text up to the first NUL. Kept as the raw bytes so that a frame
/// re-encodes exactly even if the sender left bytes after the NUL.
#[derive(Clone, Copy, PartialEq, Eq)]
pub struct IpField(pub [u8; IP_LEN]);

impl IpField {
    /// The all-NUL field (in the header: "receiver, use my socket address").
    pub const EMPTY: IpField = IpField([0; IP_LEN]);

    /// The field holding `ip`; `None` if `ip` has 46 or more bytes or a NUL.
    pub fn from_text(ip: &str) -> Option<Self> {
        if ip.len() >= IP_LEN || ip.as_bytes().contains(&0) {
            return None;
        }
        let mut field = [0; IP_LEN];
        field[..ip.len()].copy_from_slice(ip.as_bytes());
        Some(Self(field))
    }

    /// The bytes before the first NUL.
    pub fn text(&self) -> &[u8] {
        let end = self.0.iter().position(|&b| b == 0).unwrap_or(IP_LEN);
        &self.0[..end]
    }
}

impl std::fmt::Debug for IpField {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "IpField({:?})", String::from_utf8_lossy(self.text()))
    }
}

/// The header fields that are not derived from the body (`sig`, `totlen`, `ver`, `type`,
/// `count` and `extensions` are written by [`Message::encode`]).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Header {
    /// Sender's client port.
    pub port: u16,
    /// Sender's current epoch.
    pub current_epoch: u64,
    /// Sender's config epoch (its primary's if it is a replica).
    pub config_epoch: u64,
    /// Sender's replication offset.
    pub offset: u64,
    /// Sender's name.
    pub sender: NodeName,
    /// Slots the sender (or its primary) serves.
    pub myslots: SlotBitmap,
    /// The sender's primary, `None` (40 NUL bytes) for a primary.
    pub slaveof: Option<NodeName>,
    /// Announced IP, [`IpField::EMPTY`] to let the receiver use the peer address.
    pub myip: IpField,
    /// Plaintext client port when `port` is a TLS port, else 0.
    pub pport: u16,
    /// Sender's cluster bus port.
    pub cport: u16,
    /// Sender's node flags.
    pub flags: NodeFlags,
    /// [`STATE_OK`] or [`STATE_FAIL`].
    pub state: u8,
    /// Message flags as sent; encoding adds [`MFLAG0_EXT_DATA`] when there are extensions.
    pub mflags: [u8; 3],
}

/// One gossip entry: what the sender knows about another node.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Gossip {
    /// The node gossiped about.
    pub node: NodeName,
    /// Seconds (unix) of the sender's pending PING to it, 0 if none.
    pub ping_sent: u32,
    /// Seconds (unix) of the last PONG the sender got from it.
    pub pong_received: u32,
    /// Its IP.
    pub ip: IpField,
    /// Its client port.
    pub port: u16,
    /// Its cluster bus port.
    pub cport: u16,
    /// Its flags as the sender sees them (PFAIL/FAIL here are failure reports).
    pub flags: NodeFlags,
    /// Its plaintext client port (TLS clusters), else 0.
    pub pport: u16,
}

/// A ping extension (`clusterMsgPingExt`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum PingExt {
    /// The sender's announced hostname (without its NUL and padding).
    Hostname(Bytes),
    /// A type 7.0 does not know; Redis logs it and skips it. `data` is everything after
    /// the 8-byte extension header.
    Unknown {
        /// The extension type.
        ext_type: u16,
        /// The bytes after the extension header, padding included.
        data: Bytes,
    },
}

/// The gossip and extensions of a PING, PONG or MEET.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct PingBody {
    /// Gossip entries (`count` of them).
    pub gossip: Vec<Gossip>,
    /// Ping extensions (`extensions` of them).
    pub extensions: Vec<PingExt>,
}

/// A message body, one variant per type.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Body {
    /// PING.
    Ping(PingBody),
    /// PONG.
    Pong(PingBody),
    /// MEET.
    Meet(PingBody),
    /// FAIL: `node` is failing.
    Fail {
        /// The failing node.
        node: NodeName,
    },
    /// PUBLISH.
    Publish {
        /// Channel name.
        channel: Bytes,
        /// Message.
        message: Bytes,
    },
    /// PUBLISHSHARD (SPUBLISH).
    PublishShard {
        /// Shard channel name.
        channel: Bytes,
        /// Message.
        message: Bytes,
    },
    /// FAILOVER_AUTH_REQUEST (the claim is in the header: epochs, myslots, mflags FORCEACK).
    FailoverAuthRequest,
    /// FAILOVER_AUTH_ACK.
    FailoverAuthAck,
    /// UPDATE: `node`'s slots are `slots` at `config_epoch`.
    Update {
        /// Config epoch of `node`.
        config_epoch: u64,
        /// The slots' owner.
        node: NodeName,
        /// Its slots (boxed: 2048 bytes would make every `Body` that large).
        slots: Box<SlotBitmap>,
    },
    /// MFSTART.
    MfStart,
    /// MODULE.
    Module {
        /// The module id bytes as sent (Redis does not convert them).
        module_id: [u8; 8],
        /// Module-defined type.
        module_type: u8,
        /// Payload.
        payload: Bytes,
    },
}

impl Body {
    /// The message type of this body.
    pub fn message_type(&self) -> MessageType {
        match self {
            Self::Ping(_) => MessageType::Ping,
            Self::Pong(_) => MessageType::Pong,
            Self::Meet(_) => MessageType::Meet,
            Self::Fail { .. } => MessageType::Fail,
            Self::Publish { .. } => MessageType::Publish,
            Self::PublishShard { .. } => MessageType::PublishShard,
            Self::FailoverAuthRequest => MessageType::FailoverAuthRequest,
            Self::FailoverAuthAck => MessageType::FailoverAuthAck,
            Self::Update { .. } => MessageType::Update,
            Self::MfStart => MessageType::MfStart,
            Self::Module { .. } => MessageType::Module,
        }
    }
}

/// One bus message: header and body.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Message {
    /// The header's own fields.
    pub header: Header,
    /// The body.
    pub body: Body,
}

/// Why a frame could not be decoded (or a message encoded).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum BusError {
    /// Fewer bytes than the frame needs.
    Truncated {
        /// Bytes needed.
        needed: usize,
        /// Bytes available.
        available: usize,
    },
    /// The frame does not start with "RCmb".
    BadSignature([u8; 4]),
    /// `totlen` is below the header size (Redis closes the link).
    TotalLengthTooSmall(u32),
    /// The buffer holds more bytes than `totlen` says.
    TrailingBytes {
        /// `totlen`.
        totlen: u32,
        /// Bytes given.
        available: usize,
    },
    /// A protocol version other than 1.
    BadVersion(u16),
    /// A message type 7.0 does not define.
    UnknownType(u16),
    /// `totlen` differs from what the type, `count` and the length fields imply.
    LengthMismatch {
        /// The message type code.
        message_type: u16,
        /// `totlen`.
        totlen: u32,
        /// The length the body implies.
        expected: u64,
    },
    /// A ping extension whose length is not a multiple of 8 or below its header size.
    BadExtensionLength(u32),
    /// `extensions` is non-zero but `mflags[0]` lacks EXT_DATA.
    ExtensionsWithoutFlag(u16),
    /// A field is too large for its wire width (encoding only).
    TooLarge(&'static str),
}

impl std::fmt::Display for BusError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Truncated { needed, available } => {
                write!(
                    f,
                    "truncated cluster bus frame: need {needed} bytes, have {available}"
                )
            }
            Self::BadSignature(sig) => write!(f, "bad cluster bus signature {sig:?}"),
            Self::TotalLengthTooSmall(len) => write!(f, "cluster bus totlen {len} below header"),
            Self::TrailingBytes { totlen, available } => {
                write!(f, "{available} bytes given for a frame of totlen {totlen}")
            }
            Self::BadVersion(ver) => write!(f, "cluster bus protocol version {ver}, expected 1"),
            Self::UnknownType(code) => write!(f, "unknown cluster bus message type {code}"),
            Self::LengthMismatch {
                message_type,
                totlen,
                expected,
            } => write!(
                f,
                "cluster bus message type {message_type} of length {totlen} but expected length {expected}"
            ),
            Self::BadExtensionLength(len) => write!(f, "ping extension of bad length {len}"),
            Self::ExtensionsWithoutFlag(n) => {
                write!(f, "{n} ping extensions announced without the EXT_DATA flag")
            }
            Self::TooLarge(what) => write!(f, "{what} too large for the cluster bus"),
        }
    }
}

impl std::error::Error for BusError {}

/// The frame length announced by the first 8 bytes of `prefix`, after the checks
/// `clusterReadHandler` makes on them (signature, `totlen >= HEADER_LEN`). `Ok(None)`
/// while fewer than 8 bytes have arrived.
pub fn frame_length(prefix: &[u8]) -> Result<Option<usize>, BusError> {
    let Some(first8) = prefix.get(..8) else {
        return Ok(None);
    };
    let mut reader = Reader::new(first8);
    let signature = reader.array::<4>()?;
    if signature != SIGNATURE {
        return Err(BusError::BadSignature(signature));
    }
    let totlen = reader.u32()?;
    if (totlen as usize) < HEADER_LEN {
        return Err(BusError::TotalLengthTooSmall(totlen));
    }
    Ok(Some(totlen as usize))
}

/// Bounds-checked big-endian reader over a frame.
struct Reader<'a> {
    bytes: &'a [u8],
    position: usize,
}

impl<'a> Reader<'a> {
    fn new(bytes: &'a [u8]) -> Self {
        Self { bytes, position: 0 }
    }

    fn take(&mut self, len: usize) -> Result<&'a [u8], BusError> {
        let end = self.position.saturating_add(len);
        let slice = self
            .bytes
            .get(self.position..end)
            .ok_or(BusError::Truncated {
                needed: end,
                available: self.bytes.len(),
            })?;
        self.position = end;
        Ok(slice)
    }

    fn array<const N: usize>(&mut self) -> Result<[u8; N], BusError> {
        let slice = self.take(N)?;
        let mut out = [0; N];
        out.copy_from_slice(slice);
        Ok(out)
    }

    fn u8(&mut self) -> Result<u8, BusError> {
        Ok(self.array::<1>()?[0])
    }

    fn u16(&mut self) -> Result<u16, BusError> {
        Ok(u16::from_be_bytes(self.array()?))
    }

    fn u32(&mut self) -> Result<u32, BusError> {
        Ok(u32::from_be_bytes(self.array()?))
    }

    fn u64(&mut self) -> Result<u64, BusError> {
        Ok(u64::from_be_bytes(self.array()?))
    }

    fn name(&mut self) -> Result<NodeName, BusError> {
        Ok(NodeName(self.array()?))
    }

    fn remaining(&self) -> usize {
        self.bytes.len() - self.position
    }
}

impl Gossip {
    fn decode(reader: &mut Reader<'_>) -> Result<Self, BusError> {
        let node = reader.name()?;
        let ping_sent = reader.u32()?;
        let pong_received = reader.u32()?;
        let ip = IpField(reader.array()?);
        let port = reader.u16()?;
        let cport = reader.u16()?;
        let flags = NodeFlags(reader.u16()?);
        let pport = reader.u16()?;
        reader.take(2)?; // notused1
        Ok(Gossip {
            node,
            ping_sent,
            pong_received,
            ip,
            port,
            cport,
            flags,
            pport,
        })
    }

    fn encode(&self, out: &mut Vec<u8>) {
        out.extend_from_slice(&self.node.0);
        out.extend_from_slice(&self.ping_sent.to_be_bytes());
        out.extend_from_slice(&self.pong_received.to_be_bytes());
        out.extend_from_slice(&self.ip.0);
        out.extend_from_slice(&self.port.to_be_bytes());
        out.extend_from_slice(&self.cport.to_be_bytes());
        out.extend_from_slice(&self.flags.0.to_be_bytes());
        out.extend_from_slice(&self.pport.to_be_bytes());
        out.extend_from_slice(&[0, 0]);
    }
}

/// `size` rounded up to a multiple of 8 (cluster.h `EIGHT_BYTE_ALIGN`).
fn eight_byte_align(size: usize) -> usize {
    size.div_ceil(8) * 8
}

impl PingExt {
    /// Encoded size, extension header included.
    fn encoded_len(&self) -> usize {
        EXT_HEADER_LEN
            + match self {
                Self::Hostname(name) => eight_byte_align(name.len() + 1),
                Self::Unknown { data, .. } => data.len(),
            }
    }

    fn decode(reader: &mut Reader<'_>) -> Result<Self, BusError> {
        let length = reader.u32()?;
        let ext_type = reader.u16()?;
        reader.take(2)?; // unused
        if !length.is_multiple_of(8) || (length as usize) < EXT_HEADER_LEN {
            return Err(BusError::BadExtensionLength(length));
        }
        let data = reader.take(length as usize - EXT_HEADER_LEN)?;
        Ok(match ext_type {
            EXT_TYPE_HOSTNAME => {
                let end = data.iter().position(|&b| b == 0).unwrap_or(data.len());
                PingExt::Hostname(Bytes::copy_from_slice(&data[..end]))
            }
            _ => PingExt::Unknown {
                ext_type,
                data: Bytes::copy_from_slice(data),
            },
        })
    }

    fn encode(&self, out: &mut Vec<u8>) -> Result<(), BusError> {
        let length =
            u32::try_from(self.encoded_len()).map_err(|_| BusError::TooLarge("ping extension"))?;
        if !length.is_multiple_of(8) {
            return Err(BusError::BadExtensionLength(length));
        }
        out.extend_from_slice(&length.to_be_bytes());
        match self {
            Self::Hostname(name) => {
                out.extend_from_slice(&EXT_TYPE_HOSTNAME.to_be_bytes());
                out.extend_from_slice(&[0, 0]);
                out.extend_from_slice(name);
                let padding = eight_byte_align(name.len() + 1) - name.len();
                out.resize(out.len() + padding, 0);
            }
            Self::Unknown { ext_type, data } => {
                out.extend_from_slice(&ext_type.to_be_bytes());
                out.extend_from_slice(&[0, 0]);
                out.extend_from_slice(data);
            }
        }
        Ok(())
    }
}

impl Message {
    /// Decodes one whole frame (exactly `totlen` bytes), checking it as `clusterReadHandler`
    /// and `clusterProcessPacket` do.
    pub fn decode(frame: &[u8]) -> Result<Message, BusError> {
        let totlen = frame_length(frame)?.ok_or(BusError::Truncated {
            needed: 8,
            available: frame.len(),
        })?;
        match frame.len().cmp(&totlen) {
            std::cmp::Ordering::Less => {
                return Err(BusError::Truncated {
                    needed: totlen,
                    available: frame.len(),
                });
            }
            std::cmp::Ordering::Greater => {
                return Err(BusError::TrailingBytes {
                    totlen: totlen as u32,
                    available: frame.len(),
                });
            }
            std::cmp::Ordering::Equal => {}
        }
        let mut reader = Reader::new(frame);
        reader.take(offset::VER)?; // signature and totlen, checked above
        let version = reader.u16()?;
        if version != CLUSTER_PROTO_VER {
            return Err(BusError::BadVersion(version));
        }
        let port = reader.u16()?;
        let type_code = reader.u16()?;
        let message_type =
            MessageType::from_code(type_code).ok_or(BusError::UnknownType(type_code))?;
        let count = reader.u16()?;
        let current_epoch = reader.u64()?;
        let config_epoch = reader.u64()?;
        let replication_offset = reader.u64()?;
        let sender = reader.name()?;
        let myslots = SlotBitmap::from_bytes(reader.array()?);
        let slaveof = reader.name()?;
        let myip = IpField(reader.array()?);
        let extensions = reader.u16()?;
        reader.take(30)?; // notused1
        let pport = reader.u16()?;
        let cport = reader.u16()?;
        let flags = NodeFlags(reader.u16()?);
        let state = reader.u8()?;
        let mflags = reader.array::<3>()?;
        let header = Header {
            port,
            current_epoch,
            config_epoch,
            offset: replication_offset,
            sender,
            myslots,
            slaveof: (slaveof.0 != [0; NAME_LEN]).then_some(slaveof),
            myip,
            pport,
            cport,
            flags,
            state,
            mflags,
        };
        let mismatch = |expected: u64| BusError::LengthMismatch {
            message_type: type_code,
            totlen: totlen as u32,
            expected,
        };
        let body_len = reader.remaining() as u64;
        let fixed_body = |expected: usize| {
            if body_len == expected as u64 {
                Ok(())
            } else {
                Err(mismatch((HEADER_LEN + expected) as u64))
            }
        };
        let body = match message_type {
            MessageType::Ping | MessageType::Pong | MessageType::Meet => {
                let gossip_len = u64::from(count) * GOSSIP_LEN as u64;
                if body_len < gossip_len {
                    return Err(mismatch(HEADER_LEN as u64 + gossip_len));
                }
                let gossip = (0..count)
                    .map(|_| Gossip::decode(&mut reader))
                    .collect::<Result<Vec<_>, _>>()?;
                let mut ping = PingBody {
                    gossip,
                    extensions: Vec::new(),
                };
                if mflags[0] & MFLAG0_EXT_DATA != 0 {
                    for _ in 0..extensions {
                        ping.extensions.push(PingExt::decode(&mut reader)?);
                    }
                } else if extensions != 0 {
                    return Err(BusError::ExtensionsWithoutFlag(extensions));
                }
                if reader.remaining() != 0 {
                    return Err(mismatch((totlen - reader.remaining()) as u64));
                }
                match message_type {
                    MessageType::Ping => Body::Ping(ping),
                    MessageType::Pong => Body::Pong(ping),
                    _ => Body::Meet(ping),
                }
            }
            MessageType::Fail => {
                fixed_body(FAIL_BODY_LEN)?;
                Body::Fail {
                    node: reader.name()?,
                }
            }
            MessageType::Publish | MessageType::PublishShard => {
                if body_len < PUBLISH_FIXED_LEN as u64 {
                    return Err(mismatch((HEADER_LEN + PUBLISH_FIXED_LEN) as u64));
                }
                let channel_len = reader.u32()?;
                let message_len = reader.u32()?;
                let expected = (HEADER_LEN + PUBLISH_FIXED_LEN) as u64
                    + u64::from(channel_len)
                    + u64::from(message_len);
                if expected != totlen as u64 {
                    return Err(mismatch(expected));
                }
                let channel = Bytes::copy_from_slice(reader.take(channel_len as usize)?);
                let message = Bytes::copy_from_slice(reader.take(message_len as usize)?);
                if message_type == MessageType::Publish {
                    Body::Publish { channel, message }
                } else {
                    Body::PublishShard { channel, message }
                }
            }
            MessageType::FailoverAuthRequest => {
                fixed_body(0)?;
                Body::FailoverAuthRequest
            }
            MessageType::FailoverAuthAck => {
                fixed_body(0)?;
                Body::FailoverAuthAck
            }
            MessageType::MfStart => {
                fixed_body(0)?;
                Body::MfStart
            }
            MessageType::Update => {
                fixed_body(UPDATE_BODY_LEN)?;
                Body::Update {
                    config_epoch: reader.u64()?,
                    node: reader.name()?,
                    slots: Box::new(SlotBitmap::from_bytes(reader.array()?)),
                }
            }
            MessageType::Module => {
                if body_len < MODULE_FIXED_LEN as u64 {
                    return Err(mismatch((HEADER_LEN + MODULE_FIXED_LEN) as u64));
                }
                let module_id = reader.array::<8>()?;
                let len = reader.u32()?;
                let module_type = reader.u8()?;
                let expected = (HEADER_LEN + MODULE_FIXED_LEN) as u64 + u64::from(len);
                if expected != totlen as u64 {
                    return Err(mismatch(expected));
                }
                Body::Module {
                    module_id,
                    module_type,
                    payload: Bytes::copy_from_slice(reader.take(len as usize)?),
                }
            }
        };
        Ok(Message { header, body })
    }

    /// The frame for this message, laid out as `clusterBuildMessageHdr` and the
    /// `clusterSend*` functions of cluster.c lay it out: `count`, `extensions` and `totlen`
    /// come from the body, reserved bytes are zero, and `mflags[0]` gets EXT_DATA when there
    /// are extensions.
    pub fn encode(&self) -> Result<Vec<u8>, BusError> {
        let header = &self.header;
        let (count, extensions, mut mflags) = match &self.body {
            Body::Ping(ping) | Body::Pong(ping) | Body::Meet(ping) => {
                let count = u16::try_from(ping.gossip.len())
                    .map_err(|_| BusError::TooLarge("gossip count"))?;
                let extensions = u16::try_from(ping.extensions.len())
                    .map_err(|_| BusError::TooLarge("extension count"))?;
                (count, extensions, header.mflags)
            }
            _ => (0, 0, header.mflags),
        };
        if extensions > 0 {
            mflags[0] |= MFLAG0_EXT_DATA;
        }
        let mut out = Vec::with_capacity(HEADER_LEN);
        out.extend_from_slice(&SIGNATURE);
        out.extend_from_slice(&[0; 4]); // totlen, patched below
        out.extend_from_slice(&CLUSTER_PROTO_VER.to_be_bytes());
        out.extend_from_slice(&header.port.to_be_bytes());
        out.extend_from_slice(&self.body.message_type().code().to_be_bytes());
        out.extend_from_slice(&count.to_be_bytes());
        out.extend_from_slice(&header.current_epoch.to_be_bytes());
        out.extend_from_slice(&header.config_epoch.to_be_bytes());
        out.extend_from_slice(&header.offset.to_be_bytes());
        out.extend_from_slice(&header.sender.0);
        out.extend_from_slice(header.myslots.as_bytes());
        out.extend_from_slice(&header.slaveof.map_or([0; NAME_LEN], |name| name.0));
        out.extend_from_slice(&header.myip.0);
        out.extend_from_slice(&extensions.to_be_bytes());
        out.extend_from_slice(&[0; 30]);
        out.extend_from_slice(&header.pport.to_be_bytes());
        out.extend_from_slice(&header.cport.to_be_bytes());
        out.extend_from_slice(&header.flags.0.to_be_bytes());
        out.push(header.state);
        out.extend_from_slice(&mflags);
        debug_assert_eq!(out.len(), HEADER_LEN);
        match &self.body {
            Body::Ping(ping) | Body::Pong(ping) | Body::Meet(ping) => {
                for gossip in &ping.gossip {
                    gossip.encode(&mut out);
                }
                for extension in &ping.extensions {
                    extension.encode(&mut out)?;
                }
            }
            Body::Fail { node } => out.extend_from_slice(&node.0),
            Body::Publish { channel, message } | Body::PublishShard { channel, message } => {
                let too_large = || BusError::TooLarge("publish channel or message");
                let channel_len = u32::try_from(channel.len()).map_err(|_| too_large())?;
                let message_len = u32::try_from(message.len()).map_err(|_| too_large())?;
                out.extend_from_slice(&channel_len.to_be_bytes());
                out.extend_from_slice(&message_len.to_be_bytes());
                out.extend_from_slice(channel);
                out.extend_from_slice(message);
            }
            Body::FailoverAuthRequest | Body::FailoverAuthAck | Body::MfStart => {}
            Body::Update {
                config_epoch,
                node,
                slots,
            } => {
                out.extend_from_slice(&config_epoch.to_be_bytes());
                out.extend_from_slice(&node.0);
                out.extend_from_slice(slots.as_bytes());
            }
            Body::Module {
                module_id,
                module_type,
                payload,
            } => {
                let len = u32::try_from(payload.len())
                    .map_err(|_| BusError::TooLarge("module payload"))?;
                out.extend_from_slice(module_id);
                out.extend_from_slice(&len.to_be_bytes());
                out.push(*module_type);
                out.extend_from_slice(payload);
            }
        }
        let totlen = u32::try_from(out.len()).map_err(|_| BusError::TooLarge("frame"))?;
        out[offset::TOTLEN..offset::TOTLEN + 4].copy_from_slice(&totlen.to_be_bytes());
        Ok(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn name(fill: u8) -> NodeName {
        NodeName([fill; NAME_LEN])
    }

    fn header() -> Header {
        let mut myslots = SlotBitmap::new();
        myslots.set_range(0, 5460);
        Header {
            port: 7000,
            current_epoch: 0x0102_0304_0506_0708,
            config_epoch: 3,
            offset: 1234,
            sender: name(b'a'),
            myslots,
            slaveof: None,
            myip: IpField::from_text("127.0.0.1").expect("ip fits"),
            pport: 0,
            cport: 17000,
            flags: NodeFlags(NodeFlags::MASTER),
            state: STATE_OK,
            mflags: [0; 3],
        }
    }

    fn gossip() -> Gossip {
        Gossip {
            node: name(b'b'),
            ping_sent: 1_700_000_000,
            pong_received: 1_700_000_001,
            ip: IpField::from_text("10.0.0.2").expect("ip fits"),
            port: 7001,
            cport: 17001,
            flags: NodeFlags(NodeFlags::SLAVE | NodeFlags::PFAIL),
            pport: 0,
        }
    }

    fn all_bodies() -> Vec<Body> {
        let mut slots = SlotBitmap::new();
        slots.set(16383);
        let ping = PingBody {
            gossip: vec![gossip(), gossip()],
            extensions: vec![
                PingExt::Hostname(Bytes::from_static(b"node-a.example")),
                PingExt::Unknown {
                    ext_type: 77,
                    data: Bytes::from_static(&[1, 2, 3, 4, 5, 6, 7, 8]),
                },
            ],
        };
        vec![
            Body::Ping(ping.clone()),
            Body::Pong(PingBody::default()),
            Body::Meet(ping),
            Body::Fail { node: name(b'c') },
            Body::Publish {
                channel: Bytes::from_static(b"news"),
                message: Bytes::from_static(b"hello"),
            },
            Body::PublishShard {
                channel: Bytes::from_static(b"{s}x"),
                message: Bytes::new(),
            },
            Body::FailoverAuthRequest,
            Body::FailoverAuthAck,
            Body::Update {
                config_epoch: 9,
                node: name(b'd'),
                slots: Box::new(slots),
            },
            Body::MfStart,
            Body::Module {
                module_id: *b"modid\0\0\x01",
                module_type: 5,
                payload: Bytes::from_static(b"xyz"),
            },
        ]
    }

    #[test]
    fn every_message_type_round_trips() {
        for body in all_bodies() {
            let mut message = Message {
                header: header(),
                body,
            };
            if let Body::Ping(ping) | Body::Meet(ping) = &message.body
                && !ping.extensions.is_empty()
            {
                message.header.mflags[0] |= MFLAG0_EXT_DATA;
            }
            let frame = message.encode().expect("encodes");
            assert_eq!(Message::decode(&frame), Ok(message.clone()), "{message:?}");
            assert_eq!(frame_length(&frame), Ok(Some(frame.len())));
        }
    }

    #[test]
    fn header_fields_sit_at_redis_offsets_in_network_byte_order() {
        let message = Message {
            header: header(),
            body: Body::Ping(PingBody {
                gossip: vec![gossip()],
                extensions: vec![PingExt::Hostname(Bytes::from_static(b"abc"))],
            }),
        };
        let frame = message.encode().expect("encodes");
        assert_eq!(&frame[0..4], b"RCmb");
        assert_eq!(frame.len(), HEADER_LEN + GOSSIP_LEN + 16);
        assert_eq!(&frame[4..8], &(frame.len() as u32).to_be_bytes());
        assert_eq!(&frame[8..10], &[0, 1]);
        assert_eq!(&frame[10..12], &7000u16.to_be_bytes());
        assert_eq!(&frame[12..14], &[0, 0]);
        assert_eq!(&frame[14..16], &[0, 1]);
        assert_eq!(&frame[16..24], &[1, 2, 3, 4, 5, 6, 7, 8]);
        assert_eq!(&frame[40..80], &[b'a'; 40]);
        assert_eq!(frame[80], 0xFF); // slots 0..=7
        assert_eq!(frame[80 + 682], 0x1F); // slots 5456..=5460
        assert_eq!(&frame[2128..2168], &[0; 40]);
        assert_eq!(&frame[2168..2177], b"127.0.0.1");
        assert_eq!(&frame[2214..2216], &[0, 1]);
        assert_eq!(&frame[2248..2250], &17000u16.to_be_bytes());
        assert_eq!(&frame[2250..2252], &[0, 1]);
        assert_eq!(frame[2253], MFLAG0_EXT_DATA);
        let gossip_at = HEADER_LEN;
        assert_eq!(&frame[gossip_at..gossip_at + 40], &[b'b'; 40]);
        assert_eq!(
            &frame[gossip_at + 94..gossip_at + 96],
            &7001u16.to_be_bytes()
        );
        let ext_at = HEADER_LEN + GOSSIP_LEN;
        assert_eq!(&frame[ext_at..ext_at + 8], &[0, 0, 0, 16, 0, 0, 0, 0]);
        assert_eq!(&frame[ext_at + 8..], b"abc\0\0\0\0\0");
    }

    #[test]
    fn fixed_bodies_have_redis_lengths() {
        let len_of = |body: Body| {
            Message {
                header: header(),
                body,
            }
            .encode()
            .expect("encodes")
            .len()
        };
        assert_eq!(len_of(Body::FailoverAuthAck), 2256);
        assert_eq!(len_of(Body::Fail { node: name(b'x') }), 2296);
        let update = Body::Update {
            config_epoch: 1,
            node: name(b'x'),
            slots: Box::default(),
        };
        assert_eq!(len_of(update), 4352);
        let publish = Body::Publish {
            channel: Bytes::from_static(b"ch"),
            message: Bytes::from_static(b"msg"),
        };
        assert_eq!(len_of(publish), 2256 + 8 + 5);
    }

    fn sample_frame() -> Vec<u8> {
        Message {
            header: header(),
            body: Body::Ping(PingBody {
                gossip: vec![gossip()],
                extensions: vec![PingExt::Hostname(Bytes::from_static(b"abc"))],
            }),
        }
        .encode()
        .expect("encodes")
    }

    #[test]
    fn malformed_frames_are_rejected_with_the_reason() {
        let frame = sample_frame();
        let mut bad_sig = frame.clone();
        bad_sig[0] = b'X';
        assert_eq!(
            Message::decode(&bad_sig),
            Err(BusError::BadSignature(*b"XCmb"))
        );
        let mut bad_version = frame.clone();
        bad_version[9] = 2;
        assert_eq!(Message::decode(&bad_version), Err(BusError::BadVersion(2)));
        let mut bad_type = frame.clone();
        bad_type[13] = 11;
        assert_eq!(Message::decode(&bad_type), Err(BusError::UnknownType(11)));
        let mut short_totlen = frame.clone();
        short_totlen[4..8].copy_from_slice(&100u32.to_be_bytes());
        assert_eq!(
            Message::decode(&short_totlen),
            Err(BusError::TotalLengthTooSmall(100))
        );
        assert_eq!(
            Message::decode(&frame[..frame.len() - 1]),
            Err(BusError::Truncated {
                needed: frame.len(),
                available: frame.len() - 1
            })
        );
        assert!(matches!(
            Message::decode(&frame[..5]),
            Err(BusError::Truncated { .. })
        ));
        let mut trailing = frame.clone();
        trailing.push(0);
        assert!(matches!(
            Message::decode(&trailing),
            Err(BusError::TrailingBytes { .. })
        ));
        let mut too_many_gossip = frame.clone();
        too_many_gossip[15] = 2;
        assert!(matches!(
            Message::decode(&too_many_gossip),
            Err(BusError::LengthMismatch { .. }) | Err(BusError::Truncated { .. })
        ));
        let ext_at = HEADER_LEN + GOSSIP_LEN;
        let mut unpadded = frame.clone();
        unpadded[ext_at + 3] = 12;
        assert_eq!(
            Message::decode(&unpadded),
            Err(BusError::BadExtensionLength(12))
        );
        let mut overrun = frame.clone();
        overrun[ext_at + 3] = 24;
        assert!(matches!(
            Message::decode(&overrun),
            Err(BusError::Truncated { .. })
        ));
        let mut no_flag = frame.clone();
        no_flag[2253] = 0;
        assert_eq!(
            Message::decode(&no_flag),
            Err(BusError::ExtensionsWithoutFlag(1))
        );
        let mut fail = Message {
            header: header(),
            body: Body::Fail { node: name(b'z') },
        }
        .encode()
        .expect("encodes");
        fail.push(0);
        fail[4..8].copy_from_slice(&2297u32.to_be_bytes());
        assert_eq!(
            Message::decode(&fail),
            Err(BusError::LengthMismatch {
                message_type: 3,
                totlen: 2297,
                expected: 2296
            })
        );
        let mut publish = Message {
            header: header(),
            body: Body::Publish {
                channel: Bytes::from_static(b"c"),
                message: Bytes::from_static(b"m"),
            },
        }
        .encode()
        .expect("encodes");
        publish[HEADER_LEN..HEADER_LEN + 4].copy_from_slice(&u32::MAX.to_be_bytes());
        assert!(matches!(
            Message::decode(&publish),
            Err(BusError::LengthMismatch { .. })
        ));
    }

    #[test]
    fn frame_length_waits_for_eight_bytes() {
        let frame = sample_frame();
        assert_eq!(frame_length(&frame[..7]), Ok(None));
        assert_eq!(frame_length(&frame[..8]), Ok(Some(frame.len())));
    }

    /// Every prefix and every single-byte corruption of a frame decodes or errors, never
    /// panics.
    #[test]
    fn decoding_never_panics_on_damaged_frames() {
        let frame = sample_frame();
        for len in 0..frame.len() {
            let _ = Message::decode(&frame[..len]);
        }
        for position in (0..frame.len()).step_by(7) {
            for value in [0u8, 1, 0x7F, 0xFF] {
                let mut damaged = frame.clone();
                damaged[position] = value;
                let _ = Message::decode(&damaged);
            }
        }
    }

    mod prop {
        use super::*;
        use proptest::prelude::*;

        proptest! {
            /// A valid header of any type followed by arbitrary bytes, with `totlen` and
            /// `count` set to anything: decoding returns, and what decodes re-encodes to a
            /// frame that decodes to the same message.
            #[test]
            fn arbitrary_bodies_decode_or_fail_cleanly(
                type_code in 0u16..12,
                count in 0u16..4,
                extensions in 0u16..3,
                mflags0 in any::<u8>(),
                body in proptest::collection::vec(any::<u8>(), 0..600),
                totlen_delta in -3i64..3,
            ) {
                let mut frame = Message { header: header(), body: Body::MfStart }
                    .encode()
                    .expect("encodes");
                frame[12..14].copy_from_slice(&type_code.to_be_bytes());
                frame[14..16].copy_from_slice(&count.to_be_bytes());
                frame[2214..2216].copy_from_slice(&extensions.to_be_bytes());
                frame[2253] = mflags0;
                frame.extend_from_slice(&body);
                let totlen = (frame.len() as i64 + totlen_delta).max(0) as u32;
                frame[4..8].copy_from_slice(&totlen.to_be_bytes());
                if let Ok(message) = Message::decode(&frame) {
                    let again = message.encode().expect("a decoded message encodes");
                    prop_assert_eq!(Message::decode(&again), Ok(message));
                }
            }
        }
    }

    #[test]
    fn names_and_ips_convert_from_text() {
        let id = "0123456789abcdef0123456789abcdef01234567";
        assert_eq!(
            NodeName::from_id(id).map(|n| n.to_id()),
            Some(id.to_string())
        );
        assert_eq!(NodeName::from_id("short"), None);
        assert_eq!(IpField::EMPTY.text(), b"");
        assert_eq!(IpField::from_text(&"1".repeat(46)), None);
        let ip = IpField::from_text("::1").expect("fits");
        assert_eq!(ip.text(), b"::1");
    }
}
