//! `COMMAND DOCS` entries of the sorted-set commands, in the grammar of the parent
//! module's doc. One entry per command or subcommand, keyed by full name.

use super::Doc;

/// The sorted-set group's entries.
pub const DOCS: &[Doc] = &[
    Doc::new("bzmpop", "O(K) + O(M*log(N)) where K is the number of provided keys, N being the number of elements in the sorted set, and M being the number of elements popped.")
        .args(
            r"timeout:double numkeys:integer key:key@0... where(MIN | MAX) [COUNT count:integer]",
        ),
    Doc::new("bzpopmax", "O(log(N)) with N being the number of elements in the sorted set.")
        .history(&[
            ("6.0.0", "`timeout` is interpreted as a double instead of an integer."),
        ])
        .args(
            r"key:key@0... timeout:double",
        ),
    Doc::new("bzpopmin", "O(log(N)) with N being the number of elements in the sorted set.")
        .history(&[
            ("6.0.0", "`timeout` is interpreted as a double instead of an integer."),
        ])
        .args(
            r"key:key@0... timeout:double",
        ),
    Doc::new("zadd", "O(log(N)) for each item added, where N is the number of elements in the sorted set.")
        .history(&[
            ("2.4.0", "Accepts multiple elements."),
            ("3.0.2", "Added the `XX`, `NX`, `CH` and `INCR` options."),
            ("6.2.0", "Added the `GT` and `LT` options."),
        ])
        .args(
            r"key:key@0 [condition(NX | XX)]<since 3.0.2>
             [comparison(GT | LT)]<since 6.2.0>
             [change=CH]<since 3.0.2> [increment=INCR]<since 3.0.2>
             data{score:double member:string}...",
        ),
    Doc::new("zcard", "O(1)")
        .args(
            r"key:key@0",
        ),
    Doc::new("zcount", "O(log(N)) with N being the number of elements in the sorted set.")
        .args(
            r"key:key@0 min:double max:double",
        ),
    Doc::new("zdiff", "O(L + (N-K)log(N)) worst case where L is the total number of elements in all the sets, N is the size of the first set, and K is the size of the result set.")
        .args(
            r"numkeys:integer key:key@0... [WITHSCORES]",
        ),
    Doc::new("zdiffstore", "O(L + (N-K)log(N)) worst case where L is the total number of elements in all the sets, N is the size of the first set, and K is the size of the result set.")
        .args(
            r"destination:key@0 numkeys:integer key:key@1...",
        ),
    Doc::new("zincrby", "O(log(N)) where N is the number of elements in the sorted set.")
        .args(
            r"key:key@0 increment:integer member:string",
        ),
    Doc::new("zinter", "O(N*K)+O(M*log(M)) worst case with N being the smallest input sorted set, K being the number of input sorted sets and M being the number of elements in the resulting sorted set.")
        .history(&[
            ("8.8.0", "Added the `COUNT` aggregate."),
        ])
        .args(
            r"numkeys:integer key:key@0... [WEIGHTS weight:integer]...
             [AGGREGATE aggregate(SUM | MIN | MAX | COUNT<since 8.8.0>)] [WITHSCORES]",
        ),
    Doc::new("zintercard", "O(N*K) worst case with N being the smallest input sorted set, K being the number of input sorted sets.")
        .args(
            r"numkeys:integer key:key@0... [LIMIT limit:integer]",
        ),
    Doc::new("zinterstore", "O(N*K)+O(M*log(M)) worst case with N being the smallest input sorted set, K being the number of input sorted sets and M being the number of elements in the resulting sorted set.")
        .history(&[
            ("8.8.0", "Added the `COUNT` aggregate."),
        ])
        .args(
            r"destination:key@0 numkeys:integer key:key@1... [WEIGHTS weight:integer]...
             [AGGREGATE aggregate(SUM | MIN | MAX | COUNT<since 8.8.0>)]",
        ),
    Doc::new("zlexcount", "O(log(N)) with N being the number of elements in the sorted set.")
        .args(
            r"key:key@0 min:string max:string",
        ),
    Doc::new("zmpop", "O(K) + O(M*log(N)) where K is the number of provided keys, N being the number of elements in the sorted set, and M being the number of elements popped.")
        .args(
            r"numkeys:integer key:key@0... where(MIN | MAX) [COUNT count:integer]",
        ),
    Doc::new("zmscore", "O(N) where N is the number of members being requested.")
        .args(
            r"key:key@0 member:string...",
        ),
    Doc::new("zpopmax", "O(log(N)*M) with N being the number of elements in the sorted set, and M being the number of elements popped.")
        .args(
            r"key:key@0 [count:integer]",
        ),
    Doc::new("zpopmin", "O(log(N)*M) with N being the number of elements in the sorted set, and M being the number of elements popped.")
        .args(
            r"key:key@0 [count:integer]",
        ),
    Doc::new("zrandmember", "O(N) where N is the number of members returned")
        .args(
            r"key:key@0 [options{count:integer [WITHSCORES]}]",
        ),
    Doc::new("zrange", "O(log(N)+M) with N being the number of elements in the sorted set and M the number of elements returned.")
        .history(&[
            ("6.2.0", "Added the `REV`, `BYSCORE`, `BYLEX` and `LIMIT` options."),
        ])
        .args(
            r"key:key@0 start:string stop:string
             [sortby(BYSCORE | BYLEX)]<since 6.2.0> [REV]<since 6.2.0>
             [LIMIT limit{offset:integer count:integer}]<since 6.2.0> [WITHSCORES]",
        ),
    Doc::new("zrangebylex", "O(log(N)+M) with N being the number of elements in the sorted set and M the number of elements being returned. If M is constant (e.g. always asking for the first 10 elements with LIMIT), you can consider it O(log(N)).")
        .deprecated("6.2.0", "`ZRANGE` with the `BYLEX` argument")
        .args(
            r"key:key@0 min:string max:string [LIMIT limit{offset:integer count:integer}]",
        ),
    Doc::new("zrangebyscore", "O(log(N)+M) with N being the number of elements in the sorted set and M the number of elements being returned. If M is constant (e.g. always asking for the first 10 elements with LIMIT), you can consider it O(log(N)).")
        .deprecated("6.2.0", "`ZRANGE` with the `BYSCORE` argument")
        .history(&[
            ("2.0.0", "Added the `WITHSCORES` modifier."),
        ])
        .args(
            r"key:key@0 min:double max:double [WITHSCORES]<since 2.0.0>
             [LIMIT limit{offset:integer count:integer}]",
        ),
    Doc::new("zrangestore", "O(log(N)+M) with N being the number of elements in the sorted set and M the number of elements stored into the destination key.")
        .args(
            r"dst:key@0 src:key@1 min:string max:string [sortby(BYSCORE | BYLEX)] [REV]
             [LIMIT limit{offset:integer count:integer}]",
        ),
    Doc::new("zrank", "O(log(N))")
        .history(&[
            ("7.2.0", "Added the optional `WITHSCORE` argument."),
        ])
        .args(
            r"key:key@0 member:string [WITHSCORE]",
        ),
    Doc::new("zrem", "O(M*log(N)) with N being the number of elements in the sorted set and M the number of elements to be removed.")
        .history(&[
            ("2.4.0", "Accepts multiple elements."),
        ])
        .args(
            r"key:key@0 member:string...",
        ),
    Doc::new("zremrangebylex", "O(log(N)+M) with N being the number of elements in the sorted set and M the number of elements removed by the operation.")
        .args(
            r"key:key@0 min:string max:string",
        ),
    Doc::new("zremrangebyrank", "O(log(N)+M) with N being the number of elements in the sorted set and M the number of elements removed by the operation.")
        .args(
            r"key:key@0 start:integer stop:integer",
        ),
    Doc::new("zremrangebyscore", "O(log(N)+M) with N being the number of elements in the sorted set and M the number of elements removed by the operation.")
        .args(
            r"key:key@0 min:double max:double",
        ),
    Doc::new("zrevrange", "O(log(N)+M) with N being the number of elements in the sorted set and M the number of elements returned.")
        .deprecated("6.2.0", "`ZRANGE` with the `REV` argument")
        .args(
            r"key:key@0 start:integer stop:integer [WITHSCORES]",
        ),
    Doc::new("zrevrangebylex", "O(log(N)+M) with N being the number of elements in the sorted set and M the number of elements being returned. If M is constant (e.g. always asking for the first 10 elements with LIMIT), you can consider it O(log(N)).")
        .deprecated("6.2.0", "`ZRANGE` with the `REV` and `BYLEX` arguments")
        .args(
            r"key:key@0 max:string min:string [LIMIT limit{offset:integer count:integer}]",
        ),
    Doc::new("zrevrangebyscore", "O(log(N)+M) with N being the number of elements in the sorted set and M the number of elements being returned. If M is constant (e.g. always asking for the first 10 elements with LIMIT), you can consider it O(log(N)).")
        .deprecated("6.2.0", "`ZRANGE` with the `REV` and `BYSCORE` arguments")
        .history(&[
            ("2.1.6", "`min` and `max` can be exclusive."),
        ])
        .args(
            r"key:key@0 max:double min:double [WITHSCORES]
             [LIMIT limit{offset:integer count:integer}]",
        ),
    Doc::new("zrevrank", "O(log(N))")
        .history(&[
            ("7.2.0", "Added the optional `WITHSCORE` argument."),
        ])
        .args(
            r"key:key@0 member:string [WITHSCORE]",
        ),
    Doc::new("zscan", "O(1) for every call. O(N) for a complete iteration, including enough command calls for the cursor to return back to 0. N is the number of elements inside the collection.")
        .args(
            r"key:key@0 cursor:integer [MATCH pattern:pattern] [COUNT count:integer]",
        ),
    Doc::new("zscore", "O(1)")
        .args(
            r"key:key@0 member:string",
        ),
    Doc::new("zunion", "O(N)+O(M*log(M)) with N being the sum of the sizes of the input sorted sets, and M being the number of elements in the resulting sorted set.")
        .history(&[
            ("8.8.0", "Added the `COUNT` aggregate."),
        ])
        .args(
            r"numkeys:integer key:key@0... [WEIGHTS weight:integer]...
             [AGGREGATE aggregate(SUM | MIN | MAX | COUNT<since 8.8.0>)] [WITHSCORES]",
        ),
    Doc::new("zunionstore", "O(N)+O(M log(M)) with N being the sum of the sizes of the input sorted sets, and M being the number of elements in the resulting sorted set.")
        .history(&[
            ("8.8.0", "Added the `COUNT` aggregate."),
        ])
        .args(
            r"destination:key@0 numkeys:integer key:key@1... [WEIGHTS weight:integer]...
             [AGGREGATE aggregate(SUM | MIN | MAX | COUNT<since 8.8.0>)]",
        ),
];
