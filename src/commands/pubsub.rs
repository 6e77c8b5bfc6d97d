//! Pub/Sub commands: SUBSCRIBE, UNSUBSCRIBE, PSUBSCRIBE, PUNSUBSCRIBE, PUBLISH, the PUBSUB
//! container, SSUBSCRIBE, SUNSUBSCRIBE and SPUBLISH (Redis 7.0's replies; the tables
//! are `crate::pubsub`, delivery is `core/pubsub.rs`).
//!
//! Subscription replies are `[subscribe, name, count]` frames: arrays in RESP2, pushes
//! in RESP3. A RESP2 client subscribed to anything may run only the subscribe family,
//! PING, QUIT and RESET (the dispatcher refuses the rest, `Core::execute`); PING then
//! answers `[pong, ""]`.

use super::{CommandSpec, Family, flags::*};
use crate::core::Ctx;
use crate::error::ReplyError;
use crate::pubsub::Kind;

/// The family of the Pub/Sub commands' rows.
const PUBSUB_ROWS: Family = Family::new("pubsub");

/// The `pubsub` command flag (the name `PUBSUB` is this file's category list).
const PUBSUB_FLAG: u32 = super::flags::PUBSUB;

/// Flags of the subscribe family (Redis: `PUBSUB NOSCRIPT LOADING STALE`).
const SUB: u32 = PUBSUB_FLAG | NOSCRIPT | LOADING | STALE;

/// This family's rows of the command table.
pub const COMMANDS: &[CommandSpec] = &[
    PUBSUB_ROWS.row(
        "subscribe",
        -2,
        SUB,
        "Listens for messages published to channels.",
        "2.0.0",
        subscribe,
    ),
    PUBSUB_ROWS.row(
        "unsubscribe",
        -1,
        SUB,
        "Stops listening to messages posted to channels.",
        "2.0.0",
        unsubscribe,
    ),
    PUBSUB_ROWS.row(
        "psubscribe",
        -2,
        SUB,
        "Listens for messages published to channels that match one or more patterns.",
        "2.0.0",
        psubscribe,
    ),
    PUBSUB_ROWS.row(
        "punsubscribe",
        -1,
        SUB,
        "Stops listening to messages published to channels that match one or more patterns.",
        "2.0.0",
        punsubscribe,
    ),
    PUBSUB_ROWS.row(
        "publish",
        3,
        PUBSUB_FLAG | LOADING | STALE | FAST,
        "Posts a message to a channel.",
        "2.0.0",
        publish,
    ),
    PUBSUB_ROWS.row(
        "ssubscribe",
        -2,
        SUB,
        "Listens for messages published to shard channels.",
        "7.0.0",
        ssubscribe,
    ),
    PUBSUB_ROWS.row(
        "sunsubscribe",
        -1,
        SUB,
        "Stops listening to messages posted to shard channels.",
        "7.0.0",
        sunsubscribe,
    ),
    PUBSUB_ROWS.row(
        "spublish",
        3,
        PUBSUB_FLAG | LOADING | STALE | FAST,
        "Post a message to a shard channel",
        "7.0.0",
        spublish,
    ),
    CommandSpec::container(
        "pubsub",
        "pubsub",
        "A container for Pub/Sub commands.",
        "2.8.0",
        PUBSUB_SUBCOMMANDS,
    ),
];

const PUBSUB_SUBCOMMANDS: &[CommandSpec] = &[
    PUBSUB_ROWS.row(
        "pubsub|channels",
        -2,
        PUBSUB_FLAG | LOADING | STALE,
        "Returns the active channels.",
        "2.8.0",
        pubsub_channels,
    ),
    PUBSUB_ROWS.row(
        "pubsub|numsub",
        -2,
        PUBSUB_FLAG | LOADING | STALE,
        "Returns a count of subscribers to channels.",
        "2.8.0",
        pubsub_numsub,
    ),
    PUBSUB_ROWS.row(
        "pubsub|numpat",
        2,
        PUBSUB_FLAG | LOADING | STALE,
        "Returns a count of unique pattern subscriptions.",
        "2.8.0",
        pubsub_numpat,
    ),
    PUBSUB_ROWS.row(
        "pubsub|shardchannels",
        -2,
        PUBSUB_FLAG | LOADING | STALE,
        "Returns the active shard channels.",
        "7.0.0",
        pubsub_shardchannels,
    ),
    PUBSUB_ROWS.row(
        "pubsub|shardnumsub",
        -2,
        PUBSUB_FLAG | LOADING | STALE,
        "Returns the count of subscribers of shard channels.",
        "7.0.0",
        pubsub_shardnumsub,
    ),
    CommandSpec::new(
        "pubsub|help",
        2,
        LOADING | STALE,
        "pubsub",
        "Returns helpful text about the different subcommands.",
        "6.2.0",
        pubsub_help,
    ),
];

fn subscribe_kind(ctx: &mut Ctx<'_>, kind: Kind) -> Result<(), ReplyError> {
    let names = &ctx.argv[1..];
    ctx.core.subscribe(ctx.client, kind, names, ctx.out);
    Ok(())
}

fn unsubscribe_kind(ctx: &mut Ctx<'_>, kind: Kind) -> Result<(), ReplyError> {
    let names = &ctx.argv[1..];
    ctx.core.unsubscribe(ctx.client, kind, names, ctx.out);
    Ok(())
}

fn subscribe(ctx: &mut Ctx<'_>) -> Result<(), ReplyError> {
    subscribe_kind(ctx, Kind::Channel)
}

fn unsubscribe(ctx: &mut Ctx<'_>) -> Result<(), ReplyError> {
    unsubscribe_kind(ctx, Kind::Channel)
}

fn psubscribe(ctx: &mut Ctx<'_>) -> Result<(), ReplyError> {
    subscribe_kind(ctx, Kind::Pattern)
}

fn punsubscribe(ctx: &mut Ctx<'_>) -> Result<(), ReplyError> {
    unsubscribe_kind(ctx, Kind::Pattern)
}

fn ssubscribe(ctx: &mut Ctx<'_>) -> Result<(), ReplyError> {
    subscribe_kind(ctx, Kind::Shard)
}

fn sunsubscribe(ctx: &mut Ctx<'_>) -> Result<(), ReplyError> {
    unsubscribe_kind(ctx, Kind::Shard)
}

/// PUBLISH. A subscriber publishing to itself reads its message first and then the count,
/// as Redis 7.0 writes it (and `../shared/checks/pubsub` compares against 7.0); inside
/// MULTI the message is in EXEC's reply where the PUBLISH ran. Keyspace events a client
/// raises itself follow the reply instead (see `core/pubsub.rs`).
fn publish(ctx: &mut Ctx<'_>) -> Result<(), ReplyError> {
    deliver(ctx, false)
}

/// SPUBLISH, with PUBLISH's order for a subscriber publishing to itself.
fn spublish(ctx: &mut Ctx<'_>) -> Result<(), ReplyError> {
    deliver(ctx, true)
}

/// PUBLISH (or, `shard`, SPUBLISH): local subscribers, the count, then the other nodes.
/// In a cluster every node (or my shard) gets it over the bus (clusterPropagatePublish);
/// otherwise subscribers on replicas get it through replication (Redis's PROPAGATE_REPL).
fn deliver(ctx: &mut Ctx<'_>, shard: bool) -> Result<(), ReplyError> {
    let (channel, message) = (&ctx.argv[1], &ctx.argv[2]);
    let n = if shard {
        ctx.core.spublish(channel, message)
    } else {
        ctx.core.publish(channel, message)
    };
    // A Sentinel's own hello (not one forwarded by our primary) is what
    // `sentinel-rejoin` reads.
    if !shard
        && channel.as_ref() == b"__sentinel__:hello"
        && ctx.client.repl == crate::core::client::ClientRepl::Normal
    {
        let now = ctx.now_ms;
        ctx.core.repl.note_sentinel_hello(message, now);
        ctx.client.sentinel_names_me_primary = ctx.core.hello_names_me(message, &ctx.client.laddr);
    }
    // A client's own message comes before the count at top level (Redis 7.0, which the
    // differential tests pin); inside EXEC or a script it waits for the whole reply, as
    // Redis 7.2+ sends it (7.0 wrote it into the middle of EXEC's array).
    if !ctx.client.in_exec && !ctx.client.in_script {
        ctx.core.flush_pushes(ctx.client.id, ctx.out);
    }
    ctx.out.integer(n as i64);
    if !to_cluster(ctx, shard) {
        let name: &[u8] = if shard { b"SPUBLISH" } else { b"PUBLISH" };
        let db = ctx.client.db;
        ctx.core
            .propagate_to_replicas(db, &[name, &ctx.argv[1], &ctx.argv[2]]);
    }
    Ok(())
}

/// Queues a PUBLISH (or, `shard`, a PUBLISHSHARD to my shard) for the cluster bus;
/// false when cluster mode is off.
fn to_cluster(ctx: &mut Ctx<'_>, shard: bool) -> bool {
    let (channel, message) = (ctx.argv[1].clone(), ctx.argv[2].clone());
    let Some(st) = ctx.core.cluster.as_deref_mut() else {
        return false;
    };
    st.requests.push(crate::core::cluster::BusRequest::Publish {
        shard,
        channel,
        message,
    });
    st.wake.notify_one();
    true
}

/// `ERR unknown subcommand or wrong number of arguments for '<sub>'. Try PUBSUB HELP.`
fn syntax(ctx: &Ctx<'_>) -> ReplyError {
    ReplyError::SubcommandSyntax {
        sub: crate::error::lossy(&ctx.argv[1]),
        container: "PUBSUB".into(),
    }
}

/// PUBSUB CHANNELS / SHARDCHANNELS `[pattern]`: the names with subscribers.
fn channel_list(ctx: &mut Ctx<'_>, kind: Kind) -> Result<(), ReplyError> {
    if ctx.argv.len() > 3 {
        return Err(syntax(ctx));
    }
    let pattern = ctx.argv.get(2).map(|p| p.as_ref());
    let d = ctx.out.defer_len();
    let mut n = 0;
    for name in ctx.core.pubsub.names(kind, pattern) {
        ctx.out.bulk(name);
        n += 1;
    }
    ctx.out.finish_array(d, n);
    Ok(())
}

/// PUBSUB NUMSUB / SHARDNUMSUB `[name ...]`: name, count pairs (a flat array, as Redis).
fn numsub(ctx: &mut Ctx<'_>, kind: Kind) -> Result<(), ReplyError> {
    let names = &ctx.argv[2..];
    ctx.out.array(names.len() * 2);
    for name in names {
        ctx.out.bulk(name);
        ctx.out.integer(ctx.core.pubsub.numsub(kind, name) as i64);
    }
    Ok(())
}

fn pubsub_channels(ctx: &mut Ctx<'_>) -> Result<(), ReplyError> {
    channel_list(ctx, Kind::Channel)
}

fn pubsub_shardchannels(ctx: &mut Ctx<'_>) -> Result<(), ReplyError> {
    channel_list(ctx, Kind::Shard)
}

fn pubsub_numsub(ctx: &mut Ctx<'_>) -> Result<(), ReplyError> {
    numsub(ctx, Kind::Channel)
}

fn pubsub_shardnumsub(ctx: &mut Ctx<'_>) -> Result<(), ReplyError> {
    numsub(ctx, Kind::Shard)
}

fn pubsub_numpat(ctx: &mut Ctx<'_>) -> Result<(), ReplyError> {
    ctx.out.integer(ctx.core.pubsub.len(Kind::Pattern) as i64);
    Ok(())
}

fn pubsub_help(ctx: &mut Ctx<'_>) -> Result<(), ReplyError> {
    super::reply_help(
        ctx,
        "PUBSUB",
        &[
            "CHANNELS [<pattern>]",
            "    Return the currently active channels matching a <pattern> (default: '*').",
            "NUMPAT",
            "    Return number of subscriptions to patterns.",
            "NUMSUB [<channel> ...]",
            "    Return the number of subscribers for the specified channels, excluding",
            "    pattern subscriptions(default: no channels).",
            "SHARDCHANNELS [<pattern>]",
            "    Return the currently active shard level channels matching a <pattern> (default: '*').",
            "SHARDNUMSUB [<shardchannel> ...]",
            "    Return the number of subscribers for the specified shard level channel(s)",
        ],
    );
    Ok(())
}
