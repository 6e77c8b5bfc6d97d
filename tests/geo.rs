//! The geo family against the real binary: every GEO command's replies and errors
//! compared byte for byte with Redis 7.0 in RESP2 and RESP3 (the poles' limits, the
//! antimeridian, zero and huge radiuses, boxes, COUNT with and without ANY, every
//! option conflict), random searches over thousands of points (clusters and
//! duplicate positions, so ties in distance are compared too), keyspace events as
//! Redis sends them, GEOADD logged as the ZADD Redis rewrites it into, and geo sets
//! surviving a restart.

mod common;

use common::differential::*;
use common::*;

fn strs(v: &[String]) -> Vec<&str> {
    v.iter().map(String::as_str).collect()
}

/// A GEOADD of the places Redis's documentation and test suite use, plus the edges of
/// the indexable box.
const PLACES: &[&str] = &[
    "GEOADD",
    "g",
    "13.361389",
    "38.115556",
    "Palermo",
    "15.087269",
    "37.502669",
    "Catania",
    "-73.9454966",
    "40.747533",
    "lic market",
    "-73.9733487",
    "40.7648057",
    "central park n/q/r",
    "-73.9903085",
    "40.7362513",
    "union square",
    "-74.0131604",
    "40.7126674",
    "wtc one",
    "-73.7858139",
    "40.6428986",
    "jfk",
    "-73.9375699",
    "40.7498929",
    "q4",
    "-73.9564142",
    "40.7480973",
    "4545",
    "-180",
    "-85.05112878",
    "sw corner",
    "180",
    "85.05112878",
    "ne corner",
    "180",
    "-85.05112878",
    "se corner",
    "-180",
    "85.05112878",
    "nw corner",
    "179.9999",
    "0",
    "east edge",
    "-179.9999",
    "0",
    "west edge",
    "0",
    "0",
    "null island",
    "0",
    "0",
    "null island twin",
    "0",
    "85",
    "north",
    "0",
    "-85",
    "south",
];

#[test]
fn geo_replies_and_errors_match_redis_in_both_protocols() {
    let (s, r) = (start_server(), redis_server());
    for proto in [2, 3] {
        let cases = exact(&[
            &["FLUSHALL"],
            PLACES,
            &["ZRANGE", "g", "0", "-1", "WITHSCORES"],
            &[
                "GEOPOS",
                "g",
                "Palermo",
                "sw corner",
                "ne corner",
                "se corner",
                "nw corner",
                "east edge",
                "null island",
                "nope",
            ],
            &["GEOPOS", "g"],
            &["GEOPOS", "missing", "a", "b"],
            &[
                "GEOHASH",
                "g",
                "Palermo",
                "Catania",
                "sw corner",
                "ne corner",
                "north",
                "south",
                "nope",
            ],
            &["GEOHASH", "missing", "a"],
            &["GEOHASH", "g"],
            &["GEODIST", "g", "Palermo", "Catania"],
            &["GEODIST", "g", "Palermo", "Catania", "km"],
            &["GEODIST", "g", "Palermo", "Catania", "KM"],
            &["GEODIST", "g", "Palermo", "Catania", "ft"],
            &["GEODIST", "g", "Palermo", "Catania", "Mi"],
            &["GEODIST", "g", "Palermo", "Catania", "m"],
            &["GEODIST", "g", "Palermo", "Catania", "yd"],
            &["GEODIST", "g", "Palermo", "Catania", "km", "x"],
            &["GEODIST", "g", "Palermo", "nope"],
            &["GEODIST", "missing", "a", "b"],
            &["GEODIST", "g", "sw corner", "ne corner"],
            &["GEODIST", "g", "east edge", "west edge", "km"],
            &["GEODIST", "g", "null island", "null island twin"],
            &["GEODIST", "g", "north", "south", "mi"],
            // Searches.
            &["GEORADIUS", "g", "15", "37", "200", "km"],
            &["GEORADIUS", "g", "15", "37", "200", "km", "ASC"],
            &[
                "GEORADIUS",
                "g",
                "15",
                "37",
                "200",
                "km",
                "DESC",
                "WITHDIST",
                "WITHCOORD",
                "WITHHASH",
            ],
            &[
                "GEORADIUS",
                "g",
                "15",
                "37",
                "200",
                "km",
                "WITHHASH",
                "WITHDIST",
            ],
            &["GEORADIUS", "g", "15", "37", "200", "km", "COUNT", "1"],
            &[
                "GEORADIUS",
                "g",
                "15",
                "37",
                "200",
                "km",
                "COUNT",
                "1",
                "DESC",
            ],
            &[
                "GEORADIUS",
                "g",
                "15",
                "37",
                "200",
                "km",
                "COUNT",
                "1",
                "ANY",
            ],
            &[
                "GEORADIUS",
                "g",
                "15",
                "37",
                "200",
                "km",
                "COUNT",
                "1",
                "ANY",
                "ASC",
            ],
            &["GEORADIUS", "g", "15", "37", "0", "km"],
            &[
                "GEORADIUS",
                "g",
                "13.361389",
                "38.115556",
                "0",
                "m",
                "WITHDIST",
            ],
            &["GEORADIUS", "g", "0", "0", "0", "m", "WITHCOORD"],
            &["GEORADIUS", "g", "0", "0", "30000", "km"],
            &["GEORADIUS", "g", "0", "0", "30000", "km", "ASC", "WITHDIST"],
            &["GEORADIUS", "g", "0", "0", "1e300", "km", "DESC"],
            &["GEORADIUS", "g", "180", "0", "500", "km", "WITHDIST"],
            &["GEORADIUS", "g", "-180", "0", "500", "km", "WITHDIST"],
            &[
                "GEORADIUS",
                "g",
                "180",
                "85.05112878",
                "100",
                "km",
                "WITHCOORD",
            ],
            &[
                "GEORADIUS",
                "g",
                "-180",
                "-85.05112878",
                "5000",
                "km",
                "WITHDIST",
                "COUNT",
                "3",
            ],
            &[
                "GEORADIUS",
                "g",
                "-73.9798091",
                "40.7598464",
                "3",
                "km",
                "ASC",
                "WITHDIST",
            ],
            &[
                "GEORADIUS",
                "g",
                "-73.9798091",
                "40.7598464",
                "10",
                "mi",
                "DESC",
                "COUNT",
                "3",
                "WITHHASH",
            ],
            &[
                "GEORADIUS_RO",
                "g",
                "-73.9798091",
                "40.7598464",
                "3",
                "km",
                "ASC",
            ],
            &["GEORADIUSBYMEMBER", "g", "wtc one", "7", "km", "WITHDIST"],
            &[
                "GEORADIUSBYMEMBER",
                "g",
                "wtc one",
                "7",
                "km",
                "ASC",
                "WITHCOORD",
                "COUNT",
                "2",
            ],
            &[
                "GEORADIUSBYMEMBER_RO",
                "g",
                "Palermo",
                "300",
                "km",
                "DESC",
                "WITHDIST",
            ],
            &["GEORADIUSBYMEMBER", "g", "nope", "7", "km"],
            &["GEORADIUSBYMEMBER", "g", "nope", "x", "km"],
            &["GEORADIUSBYMEMBER", "missing", "nope", "x", "km"],
            &[
                "GEORADIUSBYMEMBER",
                "missing",
                "nope",
                "7",
                "km",
                "STORE",
                "dst",
            ],
            &[
                "GEOSEARCH",
                "g",
                "FROMLONLAT",
                "15",
                "37",
                "BYRADIUS",
                "200",
                "KM",
                "ASC",
            ],
            &[
                "GEOSEARCH",
                "g",
                "FROMMEMBER",
                "Palermo",
                "BYBOX",
                "400",
                "400",
                "km",
                "ASC",
                "WITHDIST",
            ],
            &[
                "GEOSEARCH",
                "g",
                "FROMMEMBER",
                "Palermo",
                "BYBOX",
                "400",
                "100",
                "km",
                "DESC",
                "WITHDIST",
            ],
            &[
                "GEOSEARCH",
                "g",
                "FROMLONLAT",
                "-73.9798091",
                "40.7598464",
                "BYBOX",
                "6",
                "6",
                "km",
                "ASC",
                "WITHCOORD",
                "WITHDIST",
                "WITHHASH",
            ],
            &[
                "GEOSEARCH",
                "g",
                "FROMLONLAT",
                "180",
                "0",
                "BYBOX",
                "100",
                "100",
                "km",
            ],
            &[
                "GEOSEARCH",
                "g",
                "FROMLONLAT",
                "0",
                "0",
                "BYBOX",
                "0",
                "0",
                "m",
                "WITHDIST",
            ],
            &[
                "GEOSEARCH",
                "g",
                "FROMLONLAT",
                "0",
                "0",
                "BYBOX",
                "40000",
                "20000",
                "km",
                "COUNT",
                "4",
            ],
            &[
                "GEOSEARCH",
                "g",
                "FROMLONLAT",
                "0",
                "0",
                "BYBOX",
                "40000",
                "20000",
                "km",
                "COUNT",
                "4",
                "ANY",
            ],
            &[
                "GEOSEARCH",
                "g",
                "FROMLONLAT",
                "0",
                "0",
                "BYRADIUS",
                "20000",
                "km",
                "COUNT",
                "2",
                "DESC",
            ],
            &[
                "GEOSEARCH",
                "g",
                "FROMMEMBER",
                "nope",
                "BYRADIUS",
                "1",
                "km",
            ],
            &[
                "GEOSEARCH",
                "missing",
                "FROMMEMBER",
                "nope",
                "BYRADIUS",
                "1",
                "km",
            ],
            &[
                "GEOSEARCH",
                "missing",
                "FROMLONLAT",
                "1",
                "1",
                "BYRADIUS",
                "1",
                "km",
            ],
            // Errors and option conflicts.
            &[
                "GEOSEARCH",
                "g",
                "FROMLONLAT",
                "1",
                "1",
                "FROMMEMBER",
                "Palermo",
                "BYRADIUS",
                "1",
                "km",
            ],
            &[
                "GEOSEARCH",
                "g",
                "FROMMEMBER",
                "Palermo",
                "FROMLONLAT",
                "1",
                "1",
                "BYRADIUS",
                "1",
                "km",
            ],
            &[
                "GEOSEARCH",
                "g",
                "BYRADIUS",
                "1",
                "km",
                "BYBOX",
                "1",
                "1",
                "km",
            ],
            &["geosearch", "g", "BYRADIUS", "1", "km", "ASC"],
            &[
                "GeoSearch",
                "g",
                "FROMLONLAT",
                "1",
                "1",
                "ASC",
                "COUNT",
                "2",
            ],
            &[
                "GEOSEARCH",
                "g",
                "FROMLONLAT",
                "1",
                "1",
                "BYRADIUS",
                "1",
                "km",
                "ANY",
            ],
            &[
                "GEOSEARCH",
                "g",
                "FROMLONLAT",
                "1",
                "1",
                "BYRADIUS",
                "1",
                "km",
                "COUNT",
            ],
            &[
                "GEOSEARCH",
                "g",
                "FROMLONLAT",
                "1",
                "1",
                "BYRADIUS",
                "1",
                "km",
                "COUNT",
                "0",
            ],
            &[
                "GEOSEARCH",
                "g",
                "FROMLONLAT",
                "1",
                "1",
                "BYRADIUS",
                "1",
                "km",
                "COUNT",
                "-3",
            ],
            &[
                "GEOSEARCH",
                "g",
                "FROMLONLAT",
                "1",
                "1",
                "BYRADIUS",
                "1",
                "km",
                "COUNT",
                "x",
            ],
            &[
                "GEOSEARCH",
                "g",
                "FROMLONLAT",
                "1",
                "1",
                "BYRADIUS",
                "1",
                "km",
                "STORE",
                "d",
            ],
            &[
                "GEOSEARCH",
                "g",
                "FROMLONLAT",
                "1",
                "1",
                "BYRADIUS",
                "1",
                "km",
                "STOREDIST",
            ],
            &[
                "GEOSEARCH",
                "g",
                "FROMLONLAT",
                "200",
                "1",
                "BYRADIUS",
                "1",
                "km",
            ],
            &[
                "GEOSEARCH",
                "g",
                "FROMLONLAT",
                "1",
                "86",
                "BYRADIUS",
                "1",
                "km",
            ],
            &[
                "GEOSEARCH",
                "g",
                "FROMLONLAT",
                "x",
                "1",
                "BYRADIUS",
                "1",
                "km",
            ],
            &[
                "GEOSEARCH",
                "g",
                "FROMLONLAT",
                "1",
                "1",
                "BYRADIUS",
                "-1",
                "km",
            ],
            &[
                "GEOSEARCH",
                "g",
                "FROMLONLAT",
                "1",
                "1",
                "BYRADIUS",
                "r",
                "km",
            ],
            &[
                "GEOSEARCH",
                "g",
                "FROMLONLAT",
                "1",
                "1",
                "BYRADIUS",
                "1",
                "parsec",
            ],
            &[
                "GEOSEARCH",
                "g",
                "FROMLONLAT",
                "1",
                "1",
                "BYBOX",
                "w",
                "1",
                "km",
            ],
            &[
                "GEOSEARCH",
                "g",
                "FROMLONLAT",
                "1",
                "1",
                "BYBOX",
                "1",
                "h",
                "km",
            ],
            &[
                "GEOSEARCH",
                "g",
                "FROMLONLAT",
                "1",
                "1",
                "BYBOX",
                "1",
                "-1",
                "km",
            ],
            &[
                "GEOSEARCH",
                "g",
                "FROMLONLAT",
                "1",
                "1",
                "BYBOX",
                "1",
                "1",
                "yd",
            ],
            &["GEOSEARCH", "g", "FROMLONLAT", "1", "1", "BYBOX", "1", "1"],
            &[
                "GEOSEARCH",
                "g",
                "FROMLONLAT",
                "1",
                "1",
                "BYRADIUS",
                "1",
                "km",
                "bogus",
            ],
            &[
                "GEOSEARCHSTORE",
                "d",
                "g",
                "FROMLONLAT",
                "1",
                "1",
                "BYRADIUS",
                "1",
                "km",
                "WITHDIST",
            ],
            &[
                "GEOSEARCHSTORE",
                "d",
                "g",
                "FROMLONLAT",
                "1",
                "1",
                "BYRADIUS",
                "1",
                "km",
                "STORE",
                "x",
            ],
            &[
                "GEORADIUS",
                "g",
                "1",
                "1",
                "1",
                "km",
                "STORE",
                "d",
                "WITHCOORD",
            ],
            &[
                "GEORADIUSBYMEMBER",
                "g",
                "Palermo",
                "1",
                "km",
                "STOREDIST",
                "d",
                "WITHHASH",
            ],
            &["GEORADIUS_RO", "g", "1", "1", "1", "km", "STORE", "d"],
            &[
                "GEORADIUS",
                "g",
                "1",
                "1",
                "1",
                "km",
                "FROMMEMBER",
                "Palermo",
            ],
            &["GEORADIUS", "g", "1", "1", "1", "km", "STORE"],
            &["GEORADIUS", "g", "200", "1", "1", "km"],
            &["GEORADIUS", "g", "1", "1", "1", "lightyears"],
            &["GEORADIUS", "g", "1", "1", "1", "km", "ANY"],
            &["GEORADIUS", "g"],
            &["GEOSEARCH", "g", "FROMLONLAT"],
            // Stores.
            &["GEORADIUS", "g", "15", "37", "200", "km", "STORE", "d1"],
            &["ZRANGE", "d1", "0", "-1", "WITHSCORES"],
            &["GEORADIUS", "g", "15", "37", "200", "km", "STOREDIST", "d2"],
            &["ZRANGE", "d2", "0", "-1", "WITHSCORES"],
            &[
                "GEORADIUS",
                "g",
                "15",
                "37",
                "200",
                "km",
                "STORE",
                "d3",
                "STOREDIST",
                "d4",
            ],
            &["EXISTS", "d3", "d4"],
            &[
                "GEORADIUS",
                "g",
                "15",
                "37",
                "200",
                "km",
                "STOREDIST",
                "d2",
                "COUNT",
                "1",
                "DESC",
            ],
            &["ZRANGE", "d2", "0", "-1", "WITHSCORES"],
            &[
                "GEORADIUSBYMEMBER",
                "g",
                "Palermo",
                "500",
                "km",
                "STOREDIST",
                "d5",
                "ASC",
            ],
            &["ZRANGE", "d5", "0", "-1", "WITHSCORES"],
            &[
                "GEOSEARCHSTORE",
                "d6",
                "g",
                "FROMMEMBER",
                "wtc one",
                "BYBOX",
                "20",
                "20",
                "km",
            ],
            &["ZRANGE", "d6", "0", "-1", "WITHSCORES"],
            &[
                "GEOSEARCHSTORE",
                "d6",
                "g",
                "FROMMEMBER",
                "wtc one",
                "BYBOX",
                "20",
                "20",
                "km",
                "STOREDIST",
                "COUNT",
                "2",
            ],
            &["ZRANGE", "d6", "0", "-1", "WITHSCORES"],
            &["OBJECT", "ENCODING", "d6"],
            &[
                "GEOSEARCHSTORE",
                "d6",
                "g",
                "FROMLONLAT",
                "100",
                "10",
                "BYRADIUS",
                "1",
                "m",
            ],
            &["EXISTS", "d6"],
            &[
                "GEOSEARCHSTORE",
                "d6",
                "g",
                "FROMLONLAT",
                "100",
                "10",
                "BYRADIUS",
                "1",
                "m",
            ],
            &["SET", "d7", "x"],
            &[
                "GEOSEARCHSTORE",
                "d7",
                "missing",
                "FROMLONLAT",
                "100",
                "10",
                "BYRADIUS",
                "1",
                "m",
            ],
            &["EXISTS", "d7"],
            &[
                "GEOSEARCHSTORE",
                "d7",
                "missing",
                "FROMLONLAT",
                "100",
                "10",
                "BYRADIUS",
                "1",
                "m",
            ],
            &["GEORADIUS", "missing", "1", "1", "1", "km", "STORE", "d1"],
            &["EXISTS", "d1"],
            &["GEORADIUS", "missing", "1", "1", "1", "km"],
            // GEOADD options and errors.
            &["GEOADD", "a", "1", "1", "x", "2", "2", "y"],
            &["GEOADD", "a", "1", "1", "x", "3", "3", "z"],
            &["GEOADD", "a", "CH", "1", "1", "x", "4", "4", "y"],
            &["GEOADD", "a", "NX", "5", "5", "x", "6", "6", "w"],
            &["GEOADD", "a", "XX", "CH", "7", "7", "x", "8", "8", "v"],
            &["GEOADD", "a", "xx", "nx", "1", "1", "x"],
            &["GEOADD", "a", "GT", "1", "1", "x"],
            &["GEOADD", "a", "CH", "NX", "1", "1"],
            &["GEOADD", "a", "nx", "ch", "xx"],
            &["GEOADD", "a", "1", "1", "x", "2", "2"],
            &["GEOADD", "a", "181", "1", "x"],
            &["GEOADD", "a", "1", "-85.06", "x"],
            &["GEOADD", "a", "-180.0000001", "0", "x"],
            &["GEOADD", "a", "1", "1", "x", "1e400", "1", "y"],
            &["GEOADD", "a", "nan", "1", "x"],
            &["GEOADD", "a", "1", "inf", "x"],
            &["GEOADD", "a", "0x10", "1", "hex"],
            &["GEOADD", "a", "1", "1", "x", "1", "1", "x"],
            &["GEOADD", "a", "2", "2", "dup", "3", "3", "dup"],
            &["GEOPOS", "a", "x", "y", "z", "w", "v", "hex", "dup"],
            &["ZRANGE", "a", "0", "-1", "WITHSCORES"],
            &["GEOADD", "xx-only", "XX", "1", "1", "x"],
            &["EXISTS", "xx-only"],
            // A plain sorted set read as a geo set (any score decodes).
            &[
                "ZADD",
                "z",
                "-1",
                "neg",
                "0",
                "zero",
                "1e300",
                "huge",
                "inf",
                "inf",
                "4503599627370496",
                "bit52",
                "3.5",
                "frac",
            ],
            &["GEOPOS", "z", "neg", "zero", "huge", "inf", "bit52", "frac"],
            &[
                "GEOHASH", "z", "neg", "zero", "huge", "inf", "bit52", "frac",
            ],
            &["GEODIST", "z", "neg", "huge"],
            &[
                "GEOSEARCH",
                "z",
                "FROMMEMBER",
                "zero",
                "BYRADIUS",
                "100",
                "km",
                "WITHHASH",
                "WITHCOORD",
            ],
            &[
                "GEOSEARCH",
                "z",
                "FROMMEMBER",
                "neg",
                "BYRADIUS",
                "100",
                "km",
                "WITHHASH",
                "WITHCOORD",
            ],
            // Wrong types.
            &["SET", "str", "x"],
            &["GEOADD", "str", "1", "1", "x"],
            &["GEOADD", "str", "200", "1", "x"],
            &["GEOPOS", "str", "x"],
            &["GEOHASH", "str", "x"],
            &["GEODIST", "str", "a", "b"],
            &["GEODIST", "str", "a", "b", "yd"],
            &["GEORADIUS", "str", "1", "1", "1", "km"],
            &["GEORADIUS", "str", "200", "1", "1", "km"],
            &["GEORADIUSBYMEMBER", "str", "x", "1", "km"],
            &[
                "GEOSEARCH",
                "str",
                "FROMLONLAT",
                "1",
                "1",
                "BYRADIUS",
                "1",
                "km",
            ],
            &[
                "GEOSEARCHSTORE",
                "d",
                "str",
                "FROMLONLAT",
                "1",
                "1",
                "BYRADIUS",
                "1",
                "km",
            ],
            &[
                "GEOSEARCHSTORE",
                "str",
                "g",
                "FROMLONLAT",
                "15",
                "37",
                "BYRADIUS",
                "200",
                "km",
            ],
            &["TYPE", "str"],
            &[
                "COMMAND",
                "GETKEYS",
                "GEORADIUS",
                "g",
                "1",
                "1",
                "1",
                "km",
                "STORE",
                "a",
                "STOREDIST",
                "b",
            ],
            &[
                "COMMAND",
                "GETKEYS",
                "GEORADIUSBYMEMBER",
                "g",
                "m",
                "1",
                "km",
                "STORE",
                "a",
            ],
            &[
                "COMMAND",
                "GETKEYS",
                "GEOSEARCHSTORE",
                "d",
                "s",
                "FROMLONLAT",
                "1",
                "1",
                "BYRADIUS",
                "1",
                "km",
            ],
            &["COMMAND", "GETKEYS", "GEORADIUS", "g", "1", "1", "1", "km"],
            // ACL key permissions read the same keys and flags as Redis's key specs.
            &[
                "ACL",
                "SETUSER",
                "geo-reader",
                "on",
                "nopass",
                "%R~g*",
                "+@all",
            ],
            &[
                "ACL",
                "DRYRUN",
                "geo-reader",
                "GEORADIUS",
                "g",
                "1",
                "1",
                "1",
                "km",
            ],
            &[
                "ACL",
                "DRYRUN",
                "geo-reader",
                "GEORADIUS",
                "g",
                "1",
                "1",
                "1",
                "km",
                "STORE",
                "dst",
            ],
            &[
                "ACL",
                "DRYRUN",
                "geo-reader",
                "GEORADIUS",
                "g",
                "1",
                "1",
                "1",
                "km",
                "STOREDIST",
                "g2",
            ],
            &[
                "ACL",
                "DRYRUN",
                "geo-reader",
                "GEOSEARCHSTORE",
                "g2",
                "g",
                "FROMLONLAT",
                "1",
                "1",
                "BYRADIUS",
                "1",
                "km",
            ],
            &["ACL", "DRYRUN", "geo-reader", "GEOADD", "g", "1", "1", "m"],
            &["ACL", "DRYRUN", "geo-reader", "GEOPOS", "g", "m"],
            &[
                "COMMAND",
                "GETKEYS",
                "GEORADIUS",
                "g",
                "1",
                "1",
                "1",
                "km",
                "STOREDIST",
                "b",
                "STORE",
                "a",
                "STORE",
                "c",
            ],
            &[
                "COMMAND",
                "GETKEYS",
                "GEORADIUS",
                "g",
                "1",
                "1",
                "1",
                "km",
                "COUNT",
                "1",
                "STORE",
            ],
            &[
                "COMMAND",
                "GETKEYS",
                "GEORADIUSBYMEMBER",
                "g",
                "m",
                "1",
                "STORE",
                "x",
            ],
        ]);
        let bad = differential(s.port, r.port, proto, &cases);
        assert!(bad.is_empty(), "{}", bad.join("\n"));
    }
}

/// Random points: spread over the globe, clustered around a few centres (so that
/// searches find many), on the box's edges, and repeated at the same positions (equal
/// distances: the order of ties is Redis's sorts' order).
fn random_points(rng: &mut Rng, n: usize) -> Vec<String> {
    let mut cmd = vec!["GEOADD".to_string(), "pts".to_string()];
    let centres = [
        (0.0, 0.0),
        (179.5, 10.0),
        (-179.5, -10.0),
        (12.5, 84.9),
        (-70.0, -84.9),
    ];
    let coord = |rng: &mut Rng, span: f64| (rng.below(2_000_001) as f64 / 1_000_000.0 - 1.0) * span;
    for i in 0..n {
        let (lon, lat) = match rng.below(10) {
            0..=3 => (coord(rng, 180.0), coord(rng, 85.0)),
            4..=7 => {
                let (clon, clat) = centres[rng.below(centres.len())];
                let lon: f64 = clon + coord(rng, 3.0);
                let lat: f64 = clat + coord(rng, 3.0);
                (
                    lon.clamp(-180.0, 180.0),
                    lat.clamp(-85.05112878, 85.05112878),
                )
            }
            8 => (
                [-180.0, 180.0, 0.0][rng.below(3)],
                [-85.05112878, 85.05112878, 0.0][rng.below(3)],
            ),
            _ => ((i % 7) as f64, (i % 5) as f64),
        };
        cmd.push(format!("{lon}"));
        cmd.push(format!("{lat}"));
        cmd.push(format!("p{i}"));
    }
    cmd
}

fn random_search(rng: &mut Rng) -> Vec<String> {
    let mut q: Vec<String> = Vec::new();
    let from_member = rng.chance(30);
    let radius = ["0", "1", "50", "200", "1000", "5000", "20000", "25000"][rng.below(8)];
    let unit = ["m", "km", "ft", "mi", "KM"][rng.below(5)];
    let lon = format!("{}", (rng.below(360_001) as f64 / 1000.0) - 180.0);
    let lat = format!("{}", (rng.below(170_001) as f64 / 1000.0) - 85.0);
    let member = format!("p{}", rng.below(3000));
    let unit_scale = match unit {
        "m" | "ft" => 1000,
        _ => 1,
    };
    let radius_u = (radius.parse::<u64>().unwrap_or(1) * unit_scale).to_string();
    match rng.below(5) {
        0 => q.extend(["GEORADIUS", "pts", &lon, &lat, &radius_u, unit].map(String::from)),
        1 => q.extend(["GEORADIUSBYMEMBER_RO", "pts", &member, &radius_u, unit].map(String::from)),
        _ => {
            q.extend(["GEOSEARCH", "pts"].map(String::from));
            if from_member {
                q.extend(["FROMMEMBER", &member].map(String::from));
            } else {
                q.extend(["FROMLONLAT", &lon, &lat].map(String::from));
            }
            if rng.chance(50) {
                q.extend(["BYRADIUS", &radius_u, unit].map(String::from));
            } else {
                let h = (radius.parse::<u64>().unwrap_or(1) * unit_scale / 2 + 1).to_string();
                q.extend(["BYBOX", &radius_u, &h, unit].map(String::from));
            }
        }
    }
    match rng.below(4) {
        0 => q.push("ASC".into()),
        1 => q.push("DESC".into()),
        _ => {}
    }
    if rng.chance(50) {
        q.push("COUNT".into());
        q.push((1 + rng.below(40)).to_string());
        if rng.chance(30) {
            q.push("ANY".into());
        }
    }
    for w in ["WITHDIST", "WITHHASH", "WITHCOORD"] {
        if rng.chance(40) {
            q.push(w.into());
        }
    }
    q
}

#[test]
fn random_searches_match_redis() {
    let (s, r) = (start_server(), redis_server());
    let mut rng = Rng(0x9e0_5ea5c4);
    let add = random_points(&mut rng, 3000);
    let queries: Vec<Vec<String>> = (0..400).map(|_| random_search(&mut rng)).collect();
    for proto in [2, 3] {
        let mut cases = exact(&[&["FLUSHALL"], &strs(&add), &["ZCARD", "pts"]]);
        for q in &queries {
            cases.push((Mode::Exact, strs(q)));
        }
        cases.push((
            Mode::Exact,
            vec![
                "GEOSEARCHSTORE",
                "dst",
                "pts",
                "FROMLONLAT",
                "0",
                "0",
                "BYRADIUS",
                "400",
                "km",
                "STOREDIST",
            ],
        ));
        cases.push((Mode::Exact, vec!["ZRANGE", "dst", "0", "-1", "WITHSCORES"]));
        cases.push((Mode::Exact, vec!["OBJECT", "ENCODING", "dst"]));
        let bad = differential(s.port, r.port, proto, &cases);
        assert!(
            bad.is_empty(),
            "{} differ:\n{}",
            bad.len(),
            bad.iter().take(5).cloned().collect::<Vec<_>>().join("\n")
        );
    }
}

#[test]
fn keyspace_events_match_redis() {
    let (s, r) = (start_server(), redis_server());
    let cmds: &[&[&str]] = &[
        &["GEOADD", "g", "1", "1", "a", "2", "2", "b"],
        &["GEOADD", "g", "1", "1", "a"],
        &["GEOADD", "g", "XX", "3", "3", "a"],
        &["GEOADD", "g", "NX", "3", "3", "a"],
        &["GEORADIUS", "g", "1", "1", "500", "km", "STORE", "d1"],
        &["GEORADIUS", "g", "1", "1", "500", "km", "STOREDIST", "d1"],
        &[
            "GEOSEARCHSTORE",
            "d2",
            "g",
            "FROMMEMBER",
            "a",
            "BYRADIUS",
            "500",
            "km",
        ],
        &[
            "GEOSEARCHSTORE",
            "d2",
            "g",
            "FROMLONLAT",
            "100",
            "1",
            "BYRADIUS",
            "1",
            "km",
        ],
        &["GEORADIUSBYMEMBER", "g", "a", "1", "m", "STORE", "d1"],
        &["GEORADIUS", "missing", "1", "1", "500", "km", "STORE", "g"],
        &[
            "GEOSEARCH",
            "missing",
            "FROMLONLAT",
            "1",
            "1",
            "BYRADIUS",
            "1",
            "km",
        ],
    ];
    assert_eq!(
        keyevents(s.port, "KEA", cmds),
        keyevents(r.port, "KEA", cmds)
    );
}

#[test]
fn geoadd_is_logged_as_zadd_and_geo_sets_survive_a_restart() {
    let dir = tempfile::tempdir().expect("tempdir");
    let want;
    {
        let node = Node::start(dir.path(), &["--appendonly", "yes", "--save", ""]);
        let mut c = node.raw();
        c.cmd_str(PLACES);
        c.cmd_str(&[
            "GEOADD", "g", "NX", "CH", "1", "1", "new", "2", "2", "Palermo",
        ]);
        c.cmd_str(&["GEOADD", "g", "XX", "13.361389", "38.115556", "Palermo"]);
        c.cmd_str(&[
            "GEOSEARCHSTORE",
            "d",
            "g",
            "FROMMEMBER",
            "Palermo",
            "BYRADIUS",
            "300",
            "km",
            "STOREDIST",
        ]);
        c.cmd_str(&["GEORADIUS", "g", "15", "37", "200", "km", "STORE", "d2"]);
        want = [
            c.cmd_str(&["ZRANGE", "g", "0", "-1", "WITHSCORES"]),
            c.cmd_str(&["ZRANGE", "d", "0", "-1", "WITHSCORES"]),
            c.cmd_str(&["ZRANGE", "d2", "0", "-1", "WITHSCORES"]),
            c.cmd_str(&["GEOPOS", "g", "Palermo", "new", "ne corner"]),
        ];
        node.stop();
        let bytes = dir_bytes(dir.path());
        assert_eq!(
            count(&bytes, b"GEOADD"),
            0,
            "GEOADD is logged as the ZADD it became"
        );
        assert_eq!(
            count(&bytes, b"$4\r\nzadd\r\n"),
            2,
            "the XX re-add changed nothing"
        );
        assert_eq!(
            count(&bytes, b"$4\r\nzadd\r\n$1\r\ng\r\n$2\r\nNX\r\n$2\r\nCH\r\n"),
            1
        );
        assert_eq!(
            count(&bytes, b"$16\r\n3479099956230698\r\n$7\r\nPalermo\r\n"),
            1
        );
        assert_eq!(count(&bytes, b"GEOSEARCHSTORE"), 1);
    }
    let node = Node::start(dir.path(), &["--appendonly", "yes", "--save", ""]);
    let mut c = node.raw();
    let got = [
        c.cmd_str(&["ZRANGE", "g", "0", "-1", "WITHSCORES"]),
        c.cmd_str(&["ZRANGE", "d", "0", "-1", "WITHSCORES"]),
        c.cmd_str(&["ZRANGE", "d2", "0", "-1", "WITHSCORES"]),
        c.cmd_str(&["GEOPOS", "g", "Palermo", "new", "ne corner"]),
    ];
    assert_eq!(got, want);
    node.stop();
}

#[test]
fn geo_sets_move_both_ways_with_dump_and_restore() {
    let (s, r) = (start_server(), redis_server());
    let (mut ours, mut theirs) = (s.raw(), r.raw());
    ours.cmd_str(PLACES);
    theirs.cmd_str(PLACES);
    let bulk = |reply: Vec<u8>| match parse(&reply, 0).0 {
        V::Bulk(Some(b)) => b,
        other => panic!("DUMP answered {other:?}"),
    };
    let from_redis = bulk(theirs.cmd_str(&["DUMP", "g"]));
    let from_streamd = bulk(ours.cmd_str(&["DUMP", "g"]));
    assert_eq!(
        ours.cmd(&[b"RESTORE", b"g2", b"0", &from_redis]),
        b"+OK\r\n"
    );
    assert_eq!(
        theirs.cmd(&[b"RESTORE", b"g2", b"0", &from_streamd]),
        b"+OK\r\n"
    );
    for cmd in [
        &["ZRANGE", "g2", "0", "-1", "WITHSCORES"][..],
        &["GEOPOS", "g2", "Palermo", "ne corner", "sw corner"],
        &[
            "GEOSEARCH",
            "g2",
            "FROMMEMBER",
            "Palermo",
            "BYRADIUS",
            "300",
            "km",
            "WITHDIST",
        ],
    ] {
        assert_eq!(ours.cmd_str(cmd), theirs.cmd_str(cmd), "{cmd:?}");
    }
    let (a, b) = (
        ours.cmd_str(&["ZRANGE", "g", "0", "-1", "WITHSCORES"]),
        ours.cmd_str(&["ZRANGE", "g2", "0", "-1", "WITHSCORES"]),
    );
    assert_eq!(a, b);
}
