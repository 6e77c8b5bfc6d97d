//! What a fake cluster node says on the bus, for the tests that play one.

use streamd::cluster::bus::{self, Header, IpField, NodeName};
use streamd::cluster::nodes_conf::NodeFlags;
use streamd::cluster::slots::SlotBitmap;

/// The header of a fake primary: node `id` (40 hex characters) at client port `port` and
/// bus port `cport`, claiming `myslots`, at current and config epoch 0, seeing the cluster
/// ok.
pub fn fake_primary_header(id: &str, port: u16, cport: u16, myslots: SlotBitmap) -> Header {
    Header {
        port,
        current_epoch: 0,
        config_epoch: 0,
        offset: 0,
        sender: NodeName::from_id(id).expect("40 characters"),
        myslots,
        slaveof: None,
        myip: IpField::EMPTY,
        pport: 0,
        cport,
        flags: NodeFlags(NodeFlags::MASTER),
        state: bus::STATE_OK,
        mflags: [0; 3],
    }
}
