//! Builds the one C file of the crate: `src/scripting/number2str.c`, the fast path of
//! Lua's number-to-string conversion (its header says why it is C and how it is linked).

fn main() {
    println!("cargo:rerun-if-changed=src/scripting/number2str.c");
    cc::Build::new()
        .file("src/scripting/number2str.c")
        .opt_level(2)
        .warnings(true)
        .compile("streamd_number2str");
}
