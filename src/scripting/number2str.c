/*
 * Lua 5.1's number-to-string conversion, made fast for whole numbers.
 *
 * Lua turns a number into a string (`'f' .. i`, `tostring(n)`, a number argument of
 * `string.rep`, ...) with `lua_number2str`, which luaconf.h defines as
 *
 *     sprintf(s, "%.14g", n)
 *
 * glibc's `%g` goes through its multi-precision float printer for every number, whole or
 * not: ~150 ns, a fifth of a script that builds twenty field names that way (Redis 7.0,
 * on the same Lua, pays the same). We build stock Lua from the `lua-src` crate, which
 * offers no way to change luaconf.h, so this file defines `sprintf` itself: the
 * executable's definition is the one every object linked into it calls (Lua's among them;
 * the C library's own code calls its internal names). It answers the one call Lua makes
 * (format exactly "%.14g") for whole numbers below 10^14 by writing their digits, which
 * is what `%.14g` prints for them, and hands every other call to `vsprintf` unchanged.
 *
 * The Rust side calls `streamd_number2str_linked` whenever it makes a VM (scripting/vm.rs),
 * which makes the linker take this object; tests compare it with the C library's
 * `snprintf`.
 */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

/* What "%.14g" prints for `d`, written to `buf`, when `d` is a whole number whose
 * magnitude is below 10^14 (up to 14 digits, so no exponent), and not -0 (printed
 * "-0"): its length; -1 for every other number. */
int streamd_format_whole_g14(char *buf, double d) {
    if (!(d > -1e14 && d < 1e14)) return -1; /* also NaN */
    long long v = (long long)d;
    if ((double)v != d) return -1;
    if (v == 0 && signbit(d)) return -1;
    char digits[20];
    int n = 0;
    unsigned long long u = v < 0 ? (unsigned long long)(-v) : (unsigned long long)v;
    do {
        digits[n++] = (char)('0' + u % 10);
        u /= 10;
    } while (u != 0);
    int len = 0;
    if (v < 0) buf[len++] = '-';
    while (n > 0) buf[len++] = digits[--n];
    buf[len] = '\0';
    return len;
}

int sprintf(char *restrict buf, const char *restrict fmt, ...) {
    va_list ap;
    int n;
    if (strcmp(fmt, "%.14g") == 0) {
        va_start(ap, fmt);
        double d = va_arg(ap, double);
        va_end(ap);
        n = streamd_format_whole_g14(buf, d);
        if (n >= 0) return n;
    }
    va_start(ap, fmt);
    n = vsprintf(buf, fmt, ap);
    va_end(ap);
    return n;
}

/* Referenced from Rust so that this object is linked (and its `sprintf` with it). */
int streamd_number2str_linked(void) { return 1; }
