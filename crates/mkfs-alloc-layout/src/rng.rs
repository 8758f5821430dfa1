//! SplitMix64, the one copy of the workspace: the bit mixer behind serials,
//! GUIDs and disk signatures derived from a seed, and a tiny generator.

/// SplitMix64's output function: a well-known bit mixer (Steele, Lea, Flood
/// 2014).
pub fn splitmix64(x: u64) -> u64 {
    let mut z = x.wrapping_add(0x9E37_79B9_7F4A_7C15);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}
