//! The geo family: `geo/<variant>`, pipelined 32 deep on one connection, over points
//! spread at random across a 40° × 25° box (about Europe: longitudes -10..30,
//! latitudes 35..60), so that a 50 km search finds some sixty of them.
//!
//! ```text
//! variant            load             measured phase (sizes at --scale 1)
//! geoadd-p32         -                GEOADD geo lon lat m:<i>, 1M commands: the memory
//!                                     column is then bytes per point
//! geosearch-p32      500k points      GEOSEARCH geo FROMLONLAT .. BYRADIUS 50 km ASC COUNT 10
//! georadius-p32      500k points      GEORADIUS geo lon lat 50 km WITHDIST
//! geodist-p32        500k points      GEODIST geo m:<a> m:<b> km
//! geopos-p32         500k points      GEOPOS geo m:<a> m:<b> m:<c>
//! ```

use std::io;

use super::Ctx;
use crate::client::Conn;
use crate::driver::{Stop, closed_loop};
use crate::measure::{Rng, Sample};

/// What a `geo/*` variant measures.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum GeoOp {
    /// GEOADD of new points (throughput and memory per point).
    Add,
    /// GEOSEARCH BYRADIUS 50 km, the 10 nearest.
    Search,
    /// GEORADIUS 50 km WITHDIST, every point found.
    Radius,
    /// GEODIST between two random points.
    Dist,
    /// GEOPOS of three random points.
    Pos,
}

impl GeoOp {
    /// Every variant, with its name.
    pub const ALL: &[(&str, GeoOp)] = &[
        ("geoadd-p32", GeoOp::Add),
        ("geosearch-p32", GeoOp::Search),
        ("georadius-p32", GeoOp::Radius),
        ("geodist-p32", GeoOp::Dist),
        ("geopos-p32", GeoOp::Pos),
    ];
}

/// A random position in the box, as GEOADD's two arguments.
fn position(rng: &mut Rng) -> (String, String) {
    let lon = -10.0 + rng.below(40_000_000) as f64 / 1e6;
    let lat = 35.0 + rng.below(25_000_000) as f64 / 1e6;
    (format!("{lon:.6}"), format!("{lat:.6}"))
}

/// Loads `n` points `m:0..m:n` into `geo`, 1,000 commands of 10 points at a time.
async fn load(conn: &mut Conn, n: u64) -> io::Result<()> {
    let mut rng = Rng::new(7);
    let mut pending = 0;
    let mut i = 0;
    while i < n {
        let mut args = vec!["GEOADD".to_string(), "geo".to_string()];
        for _ in 0..10.min(n - i) {
            let (lon, lat) = position(&mut rng);
            args.extend([lon, lat, format!("m:{i}")]);
            i += 1;
        }
        conn.push(&args);
        pending += 1;
        if pending == 1000 {
            conn.flush().await?;
            conn.skip(pending).await?;
            pending = 0;
        }
    }
    conn.flush().await?;
    conn.skip(pending).await
}

/// Runs one `geo/*` variant.
pub async fn run(ctx: &Ctx, op: GeoOp) -> io::Result<Sample> {
    let mut ctl = ctx.fresh().await?;
    let conns = ctx.conns(1).await?;
    if op == GeoOp::Add {
        let n = ctx.n(1_000_000, 1000);
        let phase = ctx.begin(&mut ctl).await?;
        let done = closed_loop(conns, 32, Stop::Count(n), |_, seq, rng, conn| {
            let (lon, lat) = position(rng);
            conn.push(&["GEOADD", "geo", &lon, &lat, &format!("m:{seq}")]);
        })
        .await?;
        let m = phase.end(&mut ctl).await?;
        return Ok(Sample::new(m, done.ops, done.ops, done.lat_ns));
    }
    let n = ctx.n(500_000, 1000);
    load(&mut ctl, n).await?;
    let phase = ctx.begin(&mut ctl).await?;
    let done = closed_loop(conns, 32, Stop::For(ctx.timed()), move |_, _, rng, conn| {
        let mut member = || format!("m:{}", rng.below(n));
        match op {
            GeoOp::Dist => {
                let (a, b) = (member(), member());
                conn.push(&["GEODIST", "geo", &a, &b, "km"]);
            }
            GeoOp::Pos => {
                let (a, b, c) = (member(), member(), member());
                conn.push(&["GEOPOS", "geo", &a, &b, &c]);
            }
            GeoOp::Search => {
                let (lon, lat) = position(rng);
                conn.push(&[
                    "GEOSEARCH",
                    "geo",
                    "FROMLONLAT",
                    &lon,
                    &lat,
                    "BYRADIUS",
                    "50",
                    "km",
                    "ASC",
                    "COUNT",
                    "10",
                ]);
            }
            GeoOp::Radius | GeoOp::Add => {
                let (lon, lat) = position(rng);
                conn.push(&["GEORADIUS", "geo", &lon, &lat, "50", "km", "WITHDIST"]);
            }
        }
    })
    .await?;
    let m = phase.end(&mut ctl).await?;
    Ok(Sample::new(m, done.ops, done.ops, done.lat_ns))
}
