//! `COMMAND DOCS` entries of the geo commands, in the grammar of the parent module's
//! doc. One entry per command, keyed by name.

use super::Doc;

/// The complexity Redis gives every GEORADIUS form.
const RADIUS_COMPLEXITY: &str = "O(N+log(M)) where N is the number of elements inside the bounding box of the circular area delimited by center and radius and M is the number of items inside the index.";
/// The complexity Redis gives both GEOSEARCH forms.
const SEARCH_COMPLEXITY: &str = "O(N+log(M)) where N is the number of elements in the grid-aligned bounding box area around the shape provided as the filter and M is the number of items inside the shape";

/// The geo group's entries.
pub const DOCS: &[Doc] = &[
    Doc::new("geoadd", "O(log(N)) for each item added, where N is the number of elements in the sorted set.")
        .history(&[("6.2.0", "Added the `CH`, `NX` and `XX` options.")])
        .args(
            r"key:key@0 [condition(NX | XX)]<since 6.2.0> [change=CH]<since 6.2.0>
             longitude_latitude_member{longitude:double latitude:double member:string}...",
        ),
    Doc::new("geodist", "O(log(N))")
        .args(r"key:key@0 member1:string member2:string [unit(M | KM | FT | MI)]"),
    Doc::new("geohash", "O(log(N)) for each member requested, where N is the number of elements in the sorted set.")
        .args(r"key:key@0 member:string..."),
    Doc::new("geopos", "O(N) where N is the number of members requested.")
        .args(r"key:key@0 member:string..."),
    Doc::new("georadius", RADIUS_COMPLEXITY)
        .deprecated("6.2.0", "`GEOSEARCH` and `GEOSEARCHSTORE` with the `BYRADIUS` argument")
        .history(&[
            ("6.2.0", "Added the `ANY` option for `COUNT`."),
            ("7.0.0", "Added support for uppercase unit names."),
        ])
        .args(
            r"key:key@0 longitude:double latitude:double radius:double unit(M | KM | FT | MI)
             [WITHCOORD] [WITHDIST] [WITHHASH] [count{COUNT count:integer [ANY]<since 6.2.0>}]
             [order(ASC | DESC)] [STORE key:key@1] [STOREDIST key:key@2]",
        ),
    Doc::new("georadius_ro", RADIUS_COMPLEXITY)
        .deprecated("6.2.0", "`GEOSEARCH` with the `BYRADIUS` argument")
        .history(&[("6.2.0", "Added the `ANY` option for `COUNT`.")])
        .args(
            r"key:key@0 longitude:double latitude:double radius:double unit(M | KM | FT | MI)
             [WITHCOORD] [WITHDIST] [WITHHASH] [count{COUNT count:integer [ANY]<since 6.2.0>}]
             [order(ASC | DESC)]",
        ),
    Doc::new("georadiusbymember", RADIUS_COMPLEXITY)
        .deprecated("6.2.0", "`GEOSEARCH` and `GEOSEARCHSTORE` with the `BYRADIUS` and `FROMMEMBER` arguments")
        .history(&[("7.0.0", "Added support for uppercase unit names.")])
        .args(
            r"key:key@0 member:string radius:double unit(M | KM | FT | MI)
             [WITHCOORD] [WITHDIST] [WITHHASH] [count{COUNT count:integer [ANY]}]
             [order(ASC | DESC)] [STORE key:key@1] [STOREDIST key:key@2]",
        ),
    Doc::new("georadiusbymember_ro", RADIUS_COMPLEXITY)
        .deprecated("6.2.0", "`GEOSEARCH` with the `BYRADIUS` and `FROMMEMBER` arguments")
        .args(
            r"key:key@0 member:string radius:double unit(M | KM | FT | MI)
             [WITHCOORD] [WITHDIST] [WITHHASH] [count{COUNT count:integer [ANY]}]
             [order(ASC | DESC)]",
        ),
    Doc::new("geosearch", SEARCH_COMPLEXITY)
        .history(&[("7.0.0", "Added support for uppercase unit names.")])
        .args(
            r"key:key@0
             from(FROMMEMBER member:string | FROMLONLAT longitude_latitude{longitude:double latitude:double})
             by(circle{BYRADIUS radius:double unit(M | KM | FT | MI)} |
                box{BYBOX width:double height:double unit(M | KM | FT | MI)})
             [order(ASC | DESC)] [count{COUNT count:integer [ANY]}]
             [WITHCOORD] [WITHDIST] [WITHHASH]",
        ),
    Doc::new("geosearchstore", SEARCH_COMPLEXITY)
        .history(&[("7.0.0", "Added support for uppercase unit names.")])
        .args(
            r"destination:key@0 source:key@1
             from(FROMMEMBER member:string | FROMLONLAT longitude_latitude{longitude:double latitude:double})
             by(circle{BYRADIUS radius:double unit(M | KM | FT | MI)} |
                box{BYBOX width:double height:double unit(M | KM | FT | MI)})
             [order(ASC | DESC)] [count{COUNT count:integer [ANY]}] [STOREDIST]",
        ),
];
