//! `COMMAND DOCS` entries of the list commands, in the grammar of the parent
//! module's doc. One entry per command or subcommand, keyed by full name.

use super::Doc;

/// The list group's entries.
pub const DOCS: &[Doc] = &[
    Doc::new("blmove", "O(1)")
        .args(
            r"source:key@0 destination:key@1 wherefrom(LEFT | RIGHT)
             whereto(LEFT | RIGHT) timeout:double",
        ),
    Doc::new("blmpop", "O(N+M) where N is the number of provided keys and M is the number of elements returned.")
        .args(
            r"timeout:double numkeys:integer key:key@0... where(LEFT | RIGHT) [COUNT count:integer]",
        ),
    Doc::new("blpop", "O(N) where N is the number of provided keys.")
        .history(&[
            ("6.0.0", "`timeout` is interpreted as a double instead of an integer."),
        ])
        .args(
            r"key:key@0... timeout:double",
        ),
    Doc::new("brpop", "O(N) where N is the number of provided keys.")
        .history(&[
            ("6.0.0", "`timeout` is interpreted as a double instead of an integer."),
        ])
        .args(
            r"key:key@0... timeout:double",
        ),
    Doc::new("brpoplpush", "O(1)")
        .deprecated("6.2.0", "`BLMOVE` with the `RIGHT` and `LEFT` arguments")
        .history(&[
            ("6.0.0", "`timeout` is interpreted as a double instead of an integer."),
        ])
        .args(
            r"source:key@0 destination:key@1 timeout:double",
        ),
    Doc::new("lindex", "O(N) where N is the number of elements to traverse to get to the element at index. This makes asking for the first or the last element of the list O(1).")
        .args(
            r"key:key@0 index:integer",
        ),
    Doc::new("linsert", "O(N) where N is the number of elements to traverse before seeing the value pivot. This means that inserting somewhere on the left end on the list (head) can be considered O(1) and inserting somewhere on the right end (tail) is O(N).")
        .args(
            r"key:key@0 where(BEFORE | AFTER) pivot:string element:string",
        ),
    Doc::new("llen", "O(1)")
        .args(
            r"key:key@0",
        ),
    Doc::new("lmove", "O(1)")
        .args(
            r"source:key@0 destination:key@1 wherefrom(LEFT | RIGHT) whereto(LEFT | RIGHT)",
        ),
    Doc::new("lmpop", "O(N+M) where N is the number of provided keys and M is the number of elements returned.")
        .args(
            r"numkeys:integer key:key@0... where(LEFT | RIGHT) [COUNT count:integer]",
        ),
    Doc::new("lpop", "O(N) where N is the number of elements returned")
        .history(&[
            ("6.2.0", "Added the `count` argument."),
        ])
        .args(
            r"key:key@0 [count:integer]<since 6.2.0>",
        ),
    Doc::new("lpos", "O(N) where N is the number of elements in the list, for the average case. When searching for elements near the head or the tail of the list, or when the MAXLEN option is provided, the command may run in constant time.")
        .args(
            r"key:key@0 element:string [RANK rank:integer] [COUNT num-matches:integer]
             [MAXLEN len:integer]",
        ),
    Doc::new("lpush", "O(1) for each element added, so O(N) to add N elements when the command is called with multiple arguments.")
        .history(&[
            ("2.4.0", "Accepts multiple `element` arguments."),
        ])
        .args(
            r"key:key@0 element:string...",
        ),
    Doc::new("lpushx", "O(1) for each element added, so O(N) to add N elements when the command is called with multiple arguments.")
        .history(&[
            ("4.0.0", "Accepts multiple `element` arguments."),
        ])
        .args(
            r"key:key@0 element:string...",
        ),
    Doc::new("lrange", "O(S+N) where S is the distance of start offset from HEAD for small lists, from nearest end (HEAD or TAIL) for large lists; and N is the number of elements in the specified range.")
        .args(
            r"key:key@0 start:integer stop:integer",
        ),
    Doc::new("lrem", "O(N+M) where N is the length of the list and M is the number of elements removed.")
        .args(
            r"key:key@0 count:integer element:string",
        ),
    Doc::new("lset", "O(N) where N is the length of the list. Setting either the first or the last element of the list is O(1).")
        .args(
            r"key:key@0 index:integer element:string",
        ),
    Doc::new("ltrim", "O(N) where N is the number of elements to be removed by the operation.")
        .args(
            r"key:key@0 start:integer stop:integer",
        ),
    Doc::new("rpop", "O(N) where N is the number of elements returned")
        .history(&[
            ("6.2.0", "Added the `count` argument."),
        ])
        .args(
            r"key:key@0 [count:integer]<since 6.2.0>",
        ),
    Doc::new("rpoplpush", "O(1)")
        .deprecated("6.2.0", "`LMOVE` with the `RIGHT` and `LEFT` arguments")
        .args(
            r"source:key@0 destination:key@1",
        ),
    Doc::new("rpush", "O(1) for each element added, so O(N) to add N elements when the command is called with multiple arguments.")
        .history(&[
            ("2.4.0", "Accepts multiple `element` arguments."),
        ])
        .args(
            r"key:key@0 element:string...",
        ),
    Doc::new("rpushx", "O(1) for each element added, so O(N) to add N elements when the command is called with multiple arguments.")
        .history(&[
            ("4.0.0", "Accepts multiple `element` arguments."),
        ])
        .args(
            r"key:key@0 element:string...",
        ),
    Doc::new("lmovem", "O(N) where N is the number of elements moved.")
        .args(
            r"source:key@0 destination:key@1 wherefrom(LEFT | RIGHT)
             whereto(LEFT | RIGHT)
             [how-many{selector(COUNT count:integer | EXACTLY exactly:integer)
             ordering(OBO | BULK)}]",
        ),
    Doc::new("blmovem", "O(N) where N is the number of elements moved.")
        .args(
            r"source:key@0 destination:key@1 wherefrom(LEFT | RIGHT)
             whereto(LEFT | RIGHT) timeout:double
             [how-many{selector(COUNT count:integer | EXACTLY exactly:integer)
             ordering(OBO | BULK)}]",
        ),
];
