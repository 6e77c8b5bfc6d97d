//! Geohash arithmetic for the GEO commands: the 52-bit interleaved cell a position
//! falls in (a geo set's sorted-set score), the cell's area and centre, its eight
//! neighbours, the cells a radius or box search must walk, and great-circle
//! distances. The computations follow Redis's `geohash.c` and `geohash_helper.c`
//! operation for operation (same constants, same order of floating-point steps, the
//! same libm calls), so that every score, position and distance is the bit-identical
//! double Redis computes; a geo set written here reads the same in Redis (ZSCORE,
//! DUMP, RDB) and back.
//!
//! # The score
//!
//! A position is first scaled into the WGS84 box Redis indexes (longitude -180..180,
//! latitude -85.05112878..85.05112878, EPSG:900913's limits), each coordinate cut into
//! 2^26 steps, and the two 26-bit cell numbers are interleaved, latitude on the even
//! bits, longitude on the odd ones:
//!
//! ```text
//!  lat cell  = floor((lat - lat_min) / (lat_max - lat_min) * 2^26)      y25 .. y0
//!  lon cell  = floor((lon - lon_min) / (lon_max - lon_min) * 2^26)      x25 .. x0
//!
//!  bit  51  50  49  48  ...   3   2   1   0
//!      x25 y25 x24 y24  ...  x1  y1  x0  y0        score = this u64 as a double
//! ```
//!
//! A prefix of `2 * step` bits names a coarser cell ([`HashBits`] with `step < 26`);
//! all the scores inside it form one contiguous score range, which is what makes a
//! search a handful of sorted-set range scans ([`scores_of_box`]). A coordinate on the
//! upper edge (longitude 180, latitude 85.05112878) scales to cell 2^26, one past the
//! last: its bit lands on bit 52 or 53, exactly as in Redis (a point at 180,85.05… has
//! the score 13510798882111488).
//!
//! # Search
//!
//! [`areas_by_shape`] picks the step at which a cell is about as large as the search
//! radius, takes the centre's cell and its eight neighbours, steps once coarser when a
//! neighbour does not reach the edge of the search's bounding box, and drops the
//! neighbours the bounding box does not reach. The commands scan those cells' score
//! ranges and keep the points inside the shape ([`Shape::contains`]).
//!
//! Invariants: decoding a cell's bits gives an area that contains every position that
//! encodes to those bits (the `prop` tests check it); [`decode_score`] never fails for a
//! finite score (any `u64` decodes, the centre clamped to the WGS84 box), as in Redis.

use std::f64::consts::PI;

/// Most steps (bits per coordinate) of a cell: 26, so a score has 52 bits (Redis:
/// `GEO_STEP_MAX`).
pub const GEO_STEP_MAX: u8 = 26;
/// Southernmost latitude that can be indexed (Redis: `GEO_LAT_MIN`).
pub const GEO_LAT_MIN: f64 = -85.051_128_78;
/// Northernmost latitude that can be indexed (Redis: `GEO_LAT_MAX`).
pub const GEO_LAT_MAX: f64 = 85.051_128_78;
/// Westernmost longitude (Redis: `GEO_LONG_MIN`).
pub const GEO_LONG_MIN: f64 = -180.0;
/// Easternmost longitude (Redis: `GEO_LONG_MAX`).
pub const GEO_LONG_MAX: f64 = 180.0;

/// Degrees to radians, as Redis's `geohash_helper.c` computes it (`M_PI / 180.0`).
const D_R: f64 = PI / 180.0;
/// Earth's quadratic mean radius for WGS-84, in meters (Redis:
/// `EARTH_RADIUS_IN_METERS`).
pub const EARTH_RADIUS_IN_METERS: f64 = 6_372_797.560_856;
/// Half the Mercator projection's width, in meters (Redis: `MERCATOR_MAX`).
const MERCATOR_MAX: f64 = 20_037_726.37;

/// A cell: its `2 * step` most significant interleaved bits, right-aligned (Redis:
/// `GeoHashBits`). `bits == 0 && step == 0` is the "no cell" a dropped neighbour
/// becomes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct HashBits {
    /// The interleaved bits, `2 * step` of them (more only on the upper edge, see the
    /// module doc).
    pub bits: u64,
    /// Bits per coordinate, 1..=26 (0 for "no cell").
    pub step: u8,
}

impl HashBits {
    /// The "no cell" marker of a dropped neighbour (Redis: `HASHISZERO`).
    pub fn is_zero(&self) -> bool {
        self.bits == 0 && self.step == 0
    }
}

/// A closed interval of one coordinate (Redis: `GeoHashRange`).
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct CoordRange {
    /// Lower bound.
    pub min: f64,
    /// Upper bound.
    pub max: f64,
}

/// The longitudes Redis indexes.
pub const WGS84_LONG: CoordRange = CoordRange {
    min: GEO_LONG_MIN,
    max: GEO_LONG_MAX,
};
/// The latitudes Redis indexes.
pub const WGS84_LAT: CoordRange = CoordRange {
    min: GEO_LAT_MIN,
    max: GEO_LAT_MAX,
};
/// The latitudes of a standard geohash (GEOHASH re-encodes into these).
pub const STANDARD_LAT: CoordRange = CoordRange {
    min: -90.0,
    max: 90.0,
};

/// A cell with the coordinates it covers (Redis: `GeoHashArea`).
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct Area {
    /// The cell.
    pub hash: HashBits,
    /// Longitudes covered.
    pub longitude: CoordRange,
    /// Latitudes covered.
    pub latitude: CoordRange,
}

/// A cell's eight neighbours (Redis: `GeoHashNeighbors`); a dropped one is zero.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Neighbors {
    /// North.
    pub north: HashBits,
    /// East.
    pub east: HashBits,
    /// West.
    pub west: HashBits,
    /// South.
    pub south: HashBits,
    /// North-east.
    pub north_east: HashBits,
    /// South-east.
    pub south_east: HashBits,
    /// North-west.
    pub north_west: HashBits,
    /// South-west.
    pub south_west: HashBits,
}

/// Spreads the low 32 bits of `x` to the even bits and of `y` to the odd bits.
fn interleave64(xlo: u32, ylo: u32) -> u64 {
    const B: [u64; 5] = [
        0x5555_5555_5555_5555,
        0x3333_3333_3333_3333,
        0x0F0F_0F0F_0F0F_0F0F,
        0x00FF_00FF_00FF_00FF,
        0x0000_FFFF_0000_FFFF,
    ];
    const S: [u32; 5] = [1, 2, 4, 8, 16];
    let mut x = u64::from(xlo);
    let mut y = u64::from(ylo);
    for (b, s) in B.iter().zip(S).rev() {
        x = (x | (x << s)) & b;
        y = (y | (y << s)) & b;
    }
    x | (y << 1)
}

/// The inverse of [`interleave64`]: even bits to the low half, odd bits to the high.
fn deinterleave64(interleaved: u64) -> u64 {
    const B: [u64; 6] = [
        0x5555_5555_5555_5555,
        0x3333_3333_3333_3333,
        0x0F0F_0F0F_0F0F_0F0F,
        0x00FF_00FF_00FF_00FF,
        0x0000_FFFF_0000_FFFF,
        0x0000_0000_FFFF_FFFF,
    ];
    const S: [u32; 6] = [0, 1, 2, 4, 8, 16];
    let mut x = interleaved;
    let mut y = interleaved >> 1;
    for (b, s) in B.iter().zip(S) {
        x = (x | (x >> s)) & b;
        y = (y | (y >> s)) & b;
    }
    x | (y << 32)
}

/// The cell of `step` steps containing the position, in the given coordinate ranges
/// (Redis: `geohashEncode`). `None` outside the WGS84 box or the ranges, or for a step
/// outside 1..=32.
pub fn encode(
    long_range: CoordRange,
    lat_range: CoordRange,
    longitude: f64,
    latitude: f64,
    step: u8,
) -> Option<HashBits> {
    if step > 32 || step == 0 || is_zero_range(lat_range) || is_zero_range(long_range) {
        return None;
    }
    if !(GEO_LONG_MIN..=GEO_LONG_MAX).contains(&longitude)
        || !(GEO_LAT_MIN..=GEO_LAT_MAX).contains(&latitude)
    {
        return None;
    }
    if latitude < lat_range.min
        || latitude > lat_range.max
        || longitude < long_range.min
        || longitude > long_range.max
    {
        return None;
    }
    let scale = (1u64 << step) as f64;
    let lat_offset = (latitude - lat_range.min) / (lat_range.max - lat_range.min) * scale;
    let long_offset = (longitude - long_range.min) / (long_range.max - long_range.min) * scale;
    // C converts the offsets to uint32_t by truncation; both are in 0..=2^step here.
    Some(HashBits {
        bits: interleave64(lat_offset as u32, long_offset as u32),
        step,
    })
}

/// Redis's `RANGEISZERO`.
fn is_zero_range(r: CoordRange) -> bool {
    r.max == 0.0 && r.min == 0.0
}

/// The WGS84 cell of `step` steps containing the position (Redis:
/// `geohashEncodeWGS84`).
pub fn encode_wgs84(longitude: f64, latitude: f64, step: u8) -> Option<HashBits> {
    encode(WGS84_LONG, WGS84_LAT, longitude, latitude, step)
}

/// The area a cell covers (Redis: `geohashDecode`); `None` for the zero cell.
pub fn decode(long_range: CoordRange, lat_range: CoordRange, hash: HashBits) -> Option<Area> {
    if hash.is_zero() || is_zero_range(lat_range) || is_zero_range(long_range) {
        return None;
    }
    let sep = deinterleave64(hash.bits);
    let lat_scale = lat_range.max - lat_range.min;
    let long_scale = long_range.max - long_range.min;
    let ilato = sep as u32;
    let ilono = (sep >> 32) as u32;
    let div = (1u64 << hash.step) as f64;
    // `ilato + 1` is uint32_t arithmetic in C: it wraps at 2^32.
    Some(Area {
        hash,
        latitude: CoordRange {
            min: lat_range.min + (f64::from(ilato) / div) * lat_scale,
            max: lat_range.min + (f64::from(ilato.wrapping_add(1)) / div) * lat_scale,
        },
        longitude: CoordRange {
            min: long_range.min + (f64::from(ilono) / div) * long_scale,
            max: long_range.min + (f64::from(ilono.wrapping_add(1)) / div) * long_scale,
        },
    })
}

/// An area's centre `[longitude, latitude]`, clamped to the WGS84 box (Redis:
/// `geohashDecodeAreaToLongLat`).
pub fn area_center(area: &Area) -> [f64; 2] {
    let lon = ((area.longitude.min + area.longitude.max) / 2.0).clamp(GEO_LONG_MIN, GEO_LONG_MAX);
    let lat = ((area.latitude.min + area.latitude.max) / 2.0).clamp(GEO_LAT_MIN, GEO_LAT_MAX);
    [lon, lat]
}

/// C's `(uint64_t)` conversion of a double as gcc compiles it for x86-64 (Redis casts
/// a score to the hash bits so): values below 2^63 go through the signed conversion
/// (a negative score wraps, one out of range gives 2^63), values from 2^63 have 2^63
/// taken off first and put back (infinity and scores past 2^64 give 0).
pub fn score_to_bits(score: f64) -> u64 {
    const TWO63: f64 = 9_223_372_036_854_775_808.0;
    let signed = |v: f64| -> u64 {
        if v.is_nan() || !(-TWO63..TWO63).contains(&v) {
            1u64 << 63
        } else {
            (v as i64) as u64
        }
    };
    if score >= TWO63 {
        signed(score - TWO63) ^ (1u64 << 63)
    } else {
        signed(score)
    }
}

/// The position a geo-set score stands for: the centre of its 26-step cell (Redis:
/// `decodeGeohash`). Any score decodes (see the module doc).
pub fn decode_score(score: f64) -> [f64; 2] {
    let hash = HashBits {
        bits: score_to_bits(score),
        step: GEO_STEP_MAX,
    };
    match decode(WGS84_LONG, WGS84_LAT, hash) {
        Some(area) => area_center(&area),
        None => [0.0, 0.0],
    }
}

/// The score of a position (Redis: `geohashEncodeWGS84` at 26 steps, then
/// `geohashAlign52Bits`); `None` outside the WGS84 box.
pub fn score_of(longitude: f64, latitude: f64) -> Option<u64> {
    encode_wgs84(longitude, latitude, GEO_STEP_MAX).map(align52)
}

/// The standard 11-character geohash of a geo-set score (Redis's GEOHASH: the
/// position re-encoded with latitudes -90..90; the 11th character stands for bits a
/// 52-bit score does not have and is always `0`).
pub fn geohash_string(score: f64) -> [u8; 11] {
    const ALPHABET: &[u8; 32] = b"0123456789bcdefghjkmnpqrstuvwxyz";
    let [lon, lat] = decode_score(score);
    let bits = encode(WGS84_LONG, STANDARD_LAT, lon, lat, 26).map_or(0, |h| h.bits);
    let mut out = [b'0'; 11];
    for (i, c) in out.iter_mut().enumerate().take(10) {
        let idx = (bits >> (52 - (i + 1) * 5)) & 0x1f;
        *c = ALPHABET[idx as usize];
    }
    out
}

/// Moves a cell one column east (`d > 0`) or west (`d < 0`), wrapping around
/// (Redis: `geohash_move_x`).
fn move_x(hash: &mut HashBits, d: i8) {
    if d == 0 {
        return;
    }
    let mut x = hash.bits & 0xaaaa_aaaa_aaaa_aaaa;
    let y = hash.bits & 0x5555_5555_5555_5555;
    let shift = 64 - u32::from(hash.step) * 2;
    let zz = 0x5555_5555_5555_5555u64 >> shift;
    if d > 0 {
        x = x.wrapping_add(zz.wrapping_add(1));
    } else {
        x |= zz;
        x = x.wrapping_sub(zz.wrapping_add(1));
    }
    x &= 0xaaaa_aaaa_aaaa_aaaau64 >> shift;
    hash.bits = x | y;
}

/// Moves a cell one row north (`d > 0`) or south (`d < 0`), wrapping around (Redis:
/// `geohash_move_y`).
fn move_y(hash: &mut HashBits, d: i8) {
    if d == 0 {
        return;
    }
    let x = hash.bits & 0xaaaa_aaaa_aaaa_aaaa;
    let mut y = hash.bits & 0x5555_5555_5555_5555;
    let shift = 64 - u32::from(hash.step) * 2;
    let zz = 0xaaaa_aaaa_aaaa_aaaau64 >> shift;
    if d > 0 {
        y = y.wrapping_add(zz.wrapping_add(1));
    } else {
        y |= zz;
        y = y.wrapping_sub(zz.wrapping_add(1));
    }
    y &= 0x5555_5555_5555_5555u64 >> shift;
    hash.bits = x | y;
}

/// The eight neighbours of a cell of at least one step (Redis: `geohashNeighbors`).
pub fn neighbors(hash: &HashBits) -> Neighbors {
    let at = |dx: i8, dy: i8| {
        let mut h = *hash;
        move_x(&mut h, dx);
        move_y(&mut h, dy);
        h
    };
    Neighbors {
        east: at(1, 0),
        west: at(-1, 0),
        south: at(0, -1),
        north: at(0, 1),
        north_west: at(-1, 1),
        north_east: at(1, 1),
        south_east: at(1, -1),
        south_west: at(-1, -1),
    }
}

/// A cell's bits shifted to the top of 52 (Redis: `geohashAlign52Bits`).
pub fn align52(hash: HashBits) -> u64 {
    hash.bits << (52 - u32::from(hash.step) * 2)
}

/// The score range `min..max` (max excluded) holding every point of a cell (Redis:
/// `scoresOfGeoHashBox`).
pub fn scores_of_box(hash: HashBits) -> (u64, u64) {
    let min = align52(hash);
    let max = align52(HashBits {
        bits: hash.bits.wrapping_add(1),
        ..hash
    });
    (min, max)
}

fn deg_rad(ang: f64) -> f64 {
    ang * D_R
}

fn rad_deg(ang: f64) -> f64 {
    ang / D_R
}

/// The step at which a cell is about `range_meters` wide at `lat` (Redis:
/// `geohashEstimateStepsByRadius`).
pub fn estimate_steps_by_radius(mut range_meters: f64, lat: f64) -> u8 {
    if range_meters == 0.0 {
        return 26;
    }
    let mut step: i32 = 1;
    while range_meters < MERCATOR_MAX {
        range_meters *= 2.0;
        step += 1;
    }
    step -= 2;
    if !(-66.0..=66.0).contains(&lat) {
        step -= 1;
        if !(-80.0..=80.0).contains(&lat) {
            step -= 1;
        }
    }
    step.clamp(1, 26) as u8
}

/// Distance along a meridian between two latitudes, in meters (Redis:
/// `geohashGetLatDistance`).
pub fn lat_distance(lat1d: f64, lat2d: f64) -> f64 {
    EARTH_RADIUS_IN_METERS * (deg_rad(lat2d) - deg_rad(lat1d)).abs()
}

/// Great-circle (haversine) distance between two positions, in meters (Redis:
/// `geohashGetDistance`). May be NaN for nearly antipodal points, as in Redis.
pub fn distance(lon1d: f64, lat1d: f64, lon2d: f64, lat2d: f64) -> f64 {
    let lon1r = deg_rad(lon1d);
    let lon2r = deg_rad(lon2d);
    let v = ((lon2r - lon1r) / 2.0).sin();
    if v == 0.0 {
        return lat_distance(lat1d, lat2d);
    }
    let lat1r = deg_rad(lat1d);
    let lat2r = deg_rad(lat2d);
    let u = ((lat2r - lat1r) / 2.0).sin();
    let a = u * u + lat1r.cos() * lat2r.cos() * v * v;
    2.0 * EARTH_RADIUS_IN_METERS * a.sqrt().asin()
}

/// What a search covers (Redis: `GeoShape`): a circle or a box around a centre, in a
/// unit `conversion` meters long.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Shape {
    /// Centre `[longitude, latitude]`.
    pub xy: [f64; 2],
    /// Meters per unit (m 1, km 1000, ft 0.3048, mi 1609.34).
    pub conversion: f64,
    /// Circle or box, in units.
    pub kind: ShapeKind,
}

/// The two search shapes (Redis: `CIRCULAR_TYPE`, `RECTANGLE_TYPE`).
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum ShapeKind {
    /// BYRADIUS: points at most this far.
    Radius(f64),
    /// BYBOX: points within half the width east-west and half the height north-south.
    Box {
        /// East-west extent.
        width: f64,
        /// North-south extent.
        height: f64,
    },
}

impl Shape {
    /// The bounding box `[min_lon, min_lat, max_lon, max_lat]` (Redis:
    /// `geohashBoundingBox`).
    pub fn bounding_box(&self) -> [f64; 4] {
        let [longitude, latitude] = self.xy;
        let (h, w) = match self.kind {
            ShapeKind::Radius(r) => (r, r),
            ShapeKind::Box { width, height } => (height / 2.0, width / 2.0),
        };
        let height = self.conversion * h;
        let width = self.conversion * w;
        let lat_delta = rad_deg(height / EARTH_RADIUS_IN_METERS);
        let long_delta_top =
            rad_deg(width / EARTH_RADIUS_IN_METERS / deg_rad(latitude + lat_delta).cos());
        let long_delta_bottom =
            rad_deg(width / EARTH_RADIUS_IN_METERS / deg_rad(latitude - lat_delta).cos());
        let southern = latitude < 0.0;
        let delta = if southern {
            long_delta_bottom
        } else {
            long_delta_top
        };
        [
            longitude - delta,
            latitude - lat_delta,
            longitude + delta,
            latitude + lat_delta,
        ]
    }

    /// The radius used to pick the step, in meters: the circle's, or the box's
    /// half-diagonal.
    fn radius_meters(&self) -> f64 {
        let r = match self.kind {
            ShapeKind::Radius(r) => r,
            ShapeKind::Box { width, height } => {
                ((width / 2.0) * (width / 2.0) + (height / 2.0) * (height / 2.0)).sqrt()
            }
        };
        r * self.conversion
    }

    /// The distance in meters from the centre to a position if the position is inside
    /// the shape (Redis: `geoWithinShape`'s two tests). A NaN distance counts as
    /// inside, as in Redis.
    pub fn contains(&self, lon: f64, lat: f64) -> Option<f64> {
        let [x1, y1] = self.xy;
        match self.kind {
            ShapeKind::Radius(r) => {
                let d = distance(x1, y1, lon, lat);
                if d > r * self.conversion {
                    None
                } else {
                    Some(d)
                }
            }
            ShapeKind::Box { width, height } => {
                let (width_m, height_m) = (width * self.conversion, height * self.conversion);
                if lat_distance(lat, y1) > height_m / 2.0 {
                    return None;
                }
                if distance(lon, lat, x1, lat) > width_m / 2.0 {
                    return None;
                }
                Some(distance(x1, y1, lon, lat))
            }
        }
    }
}

/// The cells a search walks (Redis: `GeoHashRadius`): the centre's and its
/// neighbours, the ones the bounding box does not reach zeroed.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct SearchAreas {
    /// The centre's cell.
    pub hash: HashBits,
    /// Its area.
    pub area: Area,
    /// The neighbours.
    pub neighbors: Neighbors,
}

impl SearchAreas {
    /// The nine cells in Redis's walk order: centre, N, S, E, W, NE, NW, SE, SW.
    pub fn walk_order(&self) -> [HashBits; 9] {
        let n = &self.neighbors;
        [
            self.hash,
            n.north,
            n.south,
            n.east,
            n.west,
            n.north_east,
            n.north_west,
            n.south_east,
            n.south_west,
        ]
    }
}

/// The cells to scan for a search (Redis: `geohashCalculateAreasByShapeWGS84`).
pub fn areas_by_shape(shape: &Shape) -> SearchAreas {
    let [min_lon, min_lat, max_lon, max_lat] = shape.bounding_box();
    let [longitude, latitude] = shape.xy;
    let mut steps = estimate_steps_by_radius(shape.radius_meters(), latitude);
    let cell = |steps: u8| {
        let hash = encode(WGS84_LONG, WGS84_LAT, longitude, latitude, steps).unwrap_or(HashBits {
            bits: 0,
            step: steps,
        });
        let area = decode(WGS84_LONG, WGS84_LAT, hash).unwrap_or_default();
        (hash, neighbors(&hash), area)
    };
    let (mut hash, mut nb, mut area) = cell(steps);
    let edge = |h: HashBits| decode(WGS84_LONG, WGS84_LAT, h).unwrap_or_default();
    let (north, south, east, west) = (edge(nb.north), edge(nb.south), edge(nb.east), edge(nb.west));
    let decrease_step = north.latitude.max < max_lat
        || south.latitude.min > min_lat
        || east.longitude.max < max_lon
        || west.longitude.min > min_lon;
    if steps > 1 && decrease_step {
        steps -= 1;
        (hash, nb, area) = cell(steps);
    }
    if steps >= 2 {
        let zero = HashBits::default();
        if area.latitude.min < min_lat {
            nb.south = zero;
            nb.south_west = zero;
            nb.south_east = zero;
        }
        if area.latitude.max > max_lat {
            nb.north = zero;
            nb.north_east = zero;
            nb.north_west = zero;
        }
        if area.longitude.min < min_lon {
            nb.west = zero;
            nb.south_west = zero;
            nb.north_west = zero;
        }
        if area.longitude.max > max_lon {
            nb.east = zero;
            nb.south_east = zero;
            nb.north_east = zero;
        }
    }
    SearchAreas {
        hash,
        area,
        neighbors: nb,
    }
}

/// A distance as Redis replies it (`fixedpoint_d2string` with 4 digits: the value
/// times 10^4 rounded half-to-even by `llrint`, written with the point put back;
/// `0.0000` for zero).
pub fn distance_text(d: f64) -> String {
    if d == 0.0 {
        return "0.0000".to_string();
    }
    let svalue = ten_thousandths(d);
    let value = svalue.unsigned_abs();
    // Written by hand: `format!` with `{:04}` was a sixth of GEODIST's time.
    let mut whole = itoa::Buffer::new();
    let whole = whole.format(value / 10_000);
    let fraction = (value % 10_000) as u32;
    let mut text = String::with_capacity(1 + whole.len() + 5);
    if svalue < 0 {
        text.push('-');
    }
    text.push_str(whole);
    text.push('.');
    for place in [1000, 100, 10, 1] {
        text.push(char::from(b'0' + (fraction / place % 10) as u8));
    }
    text
}

/// `d` × 10^4 rounded half-to-even as `llrint` rounds it (a NaN or an out-of-range value
/// is LLONG_MIN on x86-64).
fn ten_thousandths(d: f64) -> i64 {
    let scaled = (d * 10_000.0).round_ties_even();
    if scaled.is_nan() || !(-9.223_372_036_854_776e18..9.223_372_036_854_776e18).contains(&scaled) {
        i64::MIN
    } else {
        scaled as i64
    }
}

/// A coordinate as Redis replies it (`addReplyHumanLongDouble`: `%.17Lf` of the
/// double, trailing zeros and a trailing point removed, `-0` written `0`).
pub fn coord_text(d: f64) -> String {
    if d.is_infinite() {
        return if d > 0.0 { "inf" } else { "-inf" }.to_string();
    }
    let s = match fixed17(d) {
        Some(scaled) => fixed17_text(d.is_sign_negative(), scaled),
        None => format!("{d:.17}"),
    };
    trim_fraction(s)
}

/// 10^17: one unit of the 17th decimal place.
const FIXED17_SCALE: u128 = 100_000_000_000_000_000;

/// `|d| * 10^17` rounded half to even, exactly (glibc's `%.17f` rounds the exact
/// binary value so), when it fits the integer arithmetic below: `|d|` below 2^53 and
/// at least 2^-75 (or zero); `None` for anything else (and NaN), which std's exact
/// formatting then writes. Every coordinate takes this path: std's exact mode falls
/// back to big-number arithmetic for most of them (17 decimals are more digits than
/// its fast path handles), and it was a quarter of GEOPOS's time.
fn fixed17(d: f64) -> Option<u128> {
    if !d.is_finite() {
        return None;
    }
    let bits = d.to_bits();
    let biased = ((bits >> 52) & 0x7ff) as i32;
    let fraction = bits & ((1 << 52) - 1);
    // value = mant * 2^-shift
    let (mant, shift) = match biased {
        0 => (fraction, 1074),
        _ => (fraction | (1 << 52), 1075 - biased),
    };
    if mant == 0 {
        return Some(0);
    }
    // mant < 2^53 and 10^17 < 2^57: the product fits in 110 bits.
    let product = u128::from(mant) * FIXED17_SCALE;
    match shift {
        0 => Some(product),
        1..=127 => {
            let q = product >> shift;
            let rem = product & ((1u128 << shift) - 1);
            let half = 1u128 << (shift - 1);
            Some(if rem > half || (rem == half && q & 1 == 1) {
                q + 1
            } else {
                q
            })
        }
        _ => None,
    }
}

/// The `%.17f` text of a value whose magnitude times 10^17 is `scaled`.
fn fixed17_text(negative: bool, scaled: u128) -> String {
    let sign = if negative { "-" } else { "" };
    format!(
        "{sign}{}.{:017}",
        scaled / FIXED17_SCALE,
        scaled % FIXED17_SCALE
    )
}

/// Redis's human-mode trimming: trailing zeros and a trailing point removed, `-0`
/// written `0`.
fn trim_fraction(mut s: String) -> String {
    if s.contains('.') {
        while s.ends_with('0') {
            s.pop();
        }
        if s.ends_with('.') {
            s.pop();
        }
    }
    if s == "-0" {
        s = "0".to_string();
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn scores_match_redis() {
        // Values read from Redis 7.0.15 (GEOADD then ZSCORE / GEOPOS / GEOHASH).
        assert_eq!(score_of(13.361389, 38.115556), Some(3_479_099_956_230_698));
        assert_eq!(score_of(-180.0, -85.051_128_78), Some(0));
        assert_eq!(score_of(180.0, 85.051_128_78), Some(13_510_798_882_111_488));
        assert_eq!(score_of(180.1, 0.0), None);
        assert_eq!(score_of(0.0, 85.06), None);
        let [lon, lat] = decode_score(3_479_099_956_230_698.0);
        assert_eq!(coord_text(lon), "13.36138933897018433");
        assert_eq!(coord_text(lat), "38.11555639549629859");
        let [lon, lat] = decode_score(0.0);
        assert_eq!(coord_text(lon), "-179.99999731779098511");
        assert_eq!(coord_text(lat), "-85.05112751263942528");
        let [lon, lat] = decode_score(13_510_798_882_111_488.0);
        assert_eq!(
            (coord_text(lon).as_str(), coord_text(lat).as_str()),
            ("180", "85.0511287799999991")
        );
        assert_eq!(&geohash_string(3_479_099_956_230_698.0), b"sqc8b49rny0");
        assert_eq!(&geohash_string(0.0), b"00bh0hbj200");
        assert_eq!(&geohash_string(13_510_798_882_111_488.0), b"bp05b5048p0");
    }

    #[test]
    fn casts_scores_as_gcc_does() {
        assert_eq!(score_to_bits(5.9), 5);
        assert_eq!(score_to_bits(-1.0), u64::MAX);
        assert_eq!(score_to_bits(f64::INFINITY), 0);
        assert_eq!(score_to_bits(f64::NEG_INFINITY), 1 << 63);
        assert_eq!(score_to_bits(1e19), 10_000_000_000_000_000_000);
        assert_eq!(score_to_bits(1e20), 0);
        assert_eq!(score_to_bits(-1e19), 1 << 63);
    }

    #[test]
    fn distances_are_written_as_redis_writes_them() {
        assert_eq!(distance_text(0.0), "0.0000");
        assert_eq!(distance_text(166_274.151_557_4), "166274.1516");
        assert_eq!(distance_text(0.000_05), "0.0000");
        assert_eq!(distance_text(1.234_56), "1.2346");
        assert_eq!(distance_text(0.5 / 10_000.0 * 5.0), "0.0002");
        assert_eq!(distance_text(0.7750), "0.7750");
        assert_eq!(distance_text(f64::NAN), "-922337203685477.5808");
        // Palermo - Catania, as Redis's GEODIST documentation shows it.
        let d = distance(13.361389, 38.115556, 15.087269, 37.502669);
        let (a, b) = (
            decode_score(score_of(13.361389, 38.115556).unwrap_or(0) as f64),
            decode_score(score_of(15.087269, 37.502669).unwrap_or(0) as f64),
        );
        assert!((d - 166_274.0).abs() < 1.0);
        assert_eq!(
            distance_text(distance(a[0], a[1], b[0], b[1])),
            "166274.1516"
        );
        assert_eq!(coord_text(-0.0), "0");
        assert_eq!(coord_text(1.5), "1.5");
        assert_eq!(coord_text(2.0), "2");
        assert_eq!(coord_text(-1e-20), "0");
        assert_eq!(coord_text(f64::MAX), format!("{:.0}", f64::MAX));
    }

    /// The exact decimal of `d` to 17 places, the slow way (std's exact formatting).
    fn slow17(d: f64) -> String {
        format!("{d:.17}")
    }

    #[test]
    fn fixed17_rounds_ties_to_even() {
        // j * 2^-18 for odd j is exactly j * 5^17 / 2 units of 10^-17: a tie, half of
        // them rounding down to even. Check them and their neighbours against std's
        // exact formatting.
        for j in (1..4_000u64).step_by(2) {
            let d = j as f64 * 2f64.powi(-18);
            for v in [
                d,
                -d,
                f64::from_bits(d.to_bits() + 1),
                f64::from_bits(d.to_bits() - 1),
            ] {
                let fast = fixed17(v).map(|n| fixed17_text(v.is_sign_negative(), n));
                assert_eq!(fast, Some(slow17(v)), "{v:e}");
            }
        }
    }

    /// `distance_text` as it was written with `format!` (the model of the hand-written
    /// digits; the rounding is shared).
    fn distance_text_model(d: f64) -> String {
        if d == 0.0 {
            return "0.0000".to_string();
        }
        let svalue = ten_thousandths(d);
        let value = svalue.unsigned_abs();
        let sign = if svalue < 0 { "-" } else { "" };
        format!("{sign}{}.{:04}", value / 10_000, value % 10_000)
    }

    proptest! {
        #[test]
        fn distances_are_written_as_the_model_writes_them(
            d in prop_oneof![
                any::<f64>(),
                -1e7f64..1e7,
                0.0f64..1.0,
                (0i64..100_000_000).prop_map(|v| v as f64 / 10_000.0),
                Just(-0.0),
                Just(f64::INFINITY),
                Just(f64::NEG_INFINITY),
                Just(9.3e18),
            ]
        ) {
            prop_assert_eq!(distance_text(d), distance_text_model(d));
        }
    }

    proptest! {
        #[test]
        fn fixed17_is_exact_for_coordinates(lon in -180.0f64..=180.0, lat in -90.0f64..=90.0) {
            for v in [lon, lat] {
                let fast = fixed17(v).map(|n| fixed17_text(v.is_sign_negative(), n));
                prop_assert_eq!(fast, Some(slow17(v)));
            }
        }

        #[test]
        fn fixed17_is_exact_wherever_it_answers(bits in any::<u64>()) {
            let v = f64::from_bits(bits);
            if let Some(n) = fixed17(v) {
                prop_assert_eq!(fixed17_text(v.is_sign_negative(), n), slow17(v));
            }
            prop_assert_eq!(fixed17(v).is_some(), v.is_finite() && (v == 0.0 || (v.abs() >= 2f64.powi(-75) && v.abs() < 2f64.powi(53))));
        }
    }

    #[test]
    fn neighbours_wrap_around() {
        let h = HashBits { bits: 0, step: 1 };
        let n = neighbors(&h);
        // Step 1: 2x2 cells; bits are x0 y0 (lon on bit 1, lat on bit 0).
        assert_eq!(n.east.bits, 0b10);
        assert_eq!(n.west.bits, 0b10);
        assert_eq!(n.north.bits, 0b01);
        assert_eq!(n.north_east.bits, 0b11);
        assert_eq!(
            scores_of_box(HashBits {
                bits: 0b101010,
                step: 3
            })
            .0,
            0b101010 << 46
        );
        assert_eq!(
            scores_of_box(HashBits {
                bits: 0b101010,
                step: 3
            })
            .1,
            0b101011 << 46
        );
    }

    #[test]
    fn steps_follow_the_radius() {
        assert_eq!(estimate_steps_by_radius(0.0, 0.0), 26);
        assert_eq!(estimate_steps_by_radius(1e9, 0.0), 1);
        // 200 km doubles 7 times to pass the Mercator half-width: 8 steps, less 2.
        assert_eq!(estimate_steps_by_radius(200_000.0, 0.0), 6);
        assert_eq!(estimate_steps_by_radius(200_000.0, 70.0), 5);
        assert_eq!(estimate_steps_by_radius(200_000.0, -81.0), 4);
        assert_eq!(estimate_steps_by_radius(0.001, 0.0), 26);
    }

    proptest! {
        #[test]
        fn a_position_decodes_inside_its_cell(
            lon in -180.0f64..=180.0,
            lat in GEO_LAT_MIN..=GEO_LAT_MAX,
            step in 1u8..=26,
        ) {
            let h = encode_wgs84(lon, lat, step);
            prop_assert!(h.is_some());
            let h = h.unwrap_or_default();
            let area = decode(WGS84_LONG, WGS84_LAT, h);
            prop_assert!(area.is_some());
            let area = area.unwrap_or_default();
            // The upper edge is cell 2^step, whose area starts at the edge itself.
            prop_assert!(area.longitude.min <= lon && (lon <= area.longitude.max || lon == 180.0));
            prop_assert!(area.latitude.min <= lat && (lat <= area.latitude.max || lat == GEO_LAT_MAX));
            let [clon, clat] = area_center(&area);
            prop_assert!((GEO_LONG_MIN..=GEO_LONG_MAX).contains(&clon));
            prop_assert!((GEO_LAT_MIN..=GEO_LAT_MAX).contains(&clat));
            // Re-encoding the centre lands in the same cell (away from the upper edge).
            if lon < 180.0 && lat < GEO_LAT_MAX {
                prop_assert_eq!(encode_wgs84(clon, clat, step), Some(h));
            }
            // The 52-bit score's cell lies inside the coarser one.
            let s = score_of(lon, lat).unwrap_or(0);
            let (lo, hi) = scores_of_box(h);
            prop_assert!(lo <= s && s < hi);
        }

        #[test]
        fn neighbours_are_adjacent(bits in any::<u64>(), step in 2u8..=26) {
            let h = HashBits { bits: bits & ((1u64 << (2 * u32::from(step))) - 1), step };
            let n = neighbors(&h);
            let a = decode(WGS84_LONG, WGS84_LAT, h).unwrap_or_default();
            let e = decode(WGS84_LONG, WGS84_LAT, n.east).unwrap_or_default();
            let no = decode(WGS84_LONG, WGS84_LAT, n.north).unwrap_or_default();
            if a.longitude.max < 180.0 {
                prop_assert_eq!(e.longitude.min, a.longitude.max);
            }
            if a.latitude.max < GEO_LAT_MAX {
                prop_assert_eq!(no.latitude.min, a.latitude.max);
            }
            prop_assert_eq!(e.latitude, a.latitude);
        }
    }
}
